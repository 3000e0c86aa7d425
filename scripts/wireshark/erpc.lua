-- erpc.lua: Wireshark / tshark dissector for this engine's RPC packets
-- (docs/wire.md; the code is engine/src/wire/rpc.rs): the 28-byte RPC header
-- that follows the UDP header, and the 20-byte session-management body that
-- follows it when pkt_type = SessionMgmt.
--
--   tshark -X lua_script:scripts/wireshark/erpc.lua -r run.pcap -Y erpc
--   wireshark -X lua_script:scripts/wireshark/erpc.lua run.pcap
--
-- (or copy it into ~/.local/lib/wireshark/plugins/). Registered twice: on the
-- apps' default UDP ports (31851-31858: udp_port = 31851 in configs/*.toml,
-- plus one port per worker; change under Preferences > Protocols > ERPC), and
-- as a heuristic UDP dissector that takes any UDP payload starting with magic
-- 0xE7 and version 2, whatever the ports.
--
-- Filter fields: erpc.magic, erpc.version, erpc.pkt_type, erpc.req_type,
-- erpc.msg_size, erpc.dest_session, erpc.pkt_num, erpc.grant, erpc.req_num, erpc.token,
-- erpc.payload; erpc.sm.type, erpc.sm.status, erpc.sm.client_session,
-- erpc.sm.server_session, erpc.sm.credits, erpc.sm.mtu, erpc.sm.req_window,
-- erpc.sm.server_token.

local RPC_MAGIC = 0xE7
local RPC_VERSION = 2
local RPC_HEADER_LEN = 28
local SM_BODY_LEN = 20
local PKT_SESSION_MGMT = 4
local SESSION_NONE = 0xFFFF
local DEFAULT_PORTS = "31851-31858"

local erpc = Proto("erpc", "eRPC-style RPC")

-- wire::PktType, wire::SmType, wire::SmStatus
local pkt_types = {
    [0] = "Request",
    [1] = "Response",
    [2] = "CreditReturn",
    [3] = "ReqForResp",
    [4] = "SessionMgmt",
    [5] = "ErrorResponse",
    [6] = "Sack",
    [7] = "Pause",
    [8] = "Cnp",
    [9] = "Nak",
}
local sm_types = {
    [1] = "ConnectReq",
    [2] = "ConnectResp",
    [3] = "DisconnectReq",
    [4] = "DisconnectResp",
    [5] = "KeepAlive",
}
local sm_statuses = {
    [0] = "Ok",
    [1] = "NoRingSpace",
    [2] = "TooManySessions",
    [3] = "BadCredits",
    [4] = "UnknownSession",
    [5] = "BadMtu",
    [6] = "BadWindow",
    [7] = "PeerLimit",
    [8] = "Retry",
}

local f = erpc.fields
f.magic = ProtoField.uint8("erpc.magic", "Magic", base.HEX)
f.version = ProtoField.uint8("erpc.version", "Version", base.DEC)
f.pkt_type = ProtoField.uint8("erpc.pkt_type", "Packet type", base.DEC, pkt_types)
f.req_type = ProtoField.uint8("erpc.req_type", "Request type", base.DEC)
f.msg_size = ProtoField.uint32("erpc.msg_size", "Message size", base.DEC)
f.dest_session = ProtoField.uint16("erpc.dest_session", "Destination session", base.DEC)
f.pkt_num = ProtoField.uint16("erpc.pkt_num", "Packet number", base.DEC)
f.grant = ProtoField.uint16("erpc.grant", "Response credits granted", base.DEC)
f.req_num = ProtoField.uint64("erpc.req_num", "Request number (48 bits)", base.DEC)
f.token = ProtoField.uint64("erpc.token", "Token", base.HEX)
f.payload = ProtoField.bytes("erpc.payload", "Payload")
f.sm_type = ProtoField.uint8("erpc.sm.type", "SM type", base.DEC, sm_types)
f.sm_status = ProtoField.uint8("erpc.sm.status", "SM status", base.DEC, sm_statuses)
f.sm_client_session = ProtoField.uint16("erpc.sm.client_session", "Client session", base.DEC)
f.sm_server_session = ProtoField.uint16("erpc.sm.server_session", "Server session", base.DEC)
f.sm_credits = ProtoField.uint16("erpc.sm.credits", "Credits", base.DEC)
f.sm_mtu = ProtoField.uint16("erpc.sm.mtu", "MTU", base.DEC)
f.sm_req_window = ProtoField.uint16("erpc.sm.req_window", "Request window", base.DEC)
f.sm_server_token = ProtoField.uint64("erpc.sm.server_token", "Server token or cookie", base.HEX)

local ef_short_sm = ProtoExpert.new("erpc.sm.truncated", "SessionMgmt body shorter than " .. SM_BODY_LEN .. " bytes",
    expert.group.MALFORMED, expert.severity.ERROR)
erpc.experts = { ef_short_sm }

erpc.prefs.ports = Pref.range("UDP ports", DEFAULT_PORTS, "UDP ports decoded as eRPC", 65535)

local function is_erpc(tvb)
    return tvb:len() >= RPC_HEADER_LEN
        and tvb(0, 1):uint() == RPC_MAGIC
        and tvb(1, 1):uint() == RPC_VERSION
end

local function session_str(s)
    if s == SESSION_NONE then
        return "none"
    end
    return tostring(s)
end

local function dissect_sm(body, pinfo, tree)
    local t = tree:add(body(0, math.min(body:len(), SM_BODY_LEN)), "Session management")
    if body:len() < SM_BODY_LEN then
        t:add_proto_expert_info(ef_short_sm)
        return
    end
    local sm_type = body(0, 1):uint()
    local status = body(1, 1):uint()
    local client_session = body(2, 2):uint()
    local server_session = body(4, 2):uint()
    t:add(f.sm_type, body(0, 1))
    t:add(f.sm_status, body(1, 1))
    t:add(f.sm_client_session, body(2, 2))
    t:add(f.sm_server_session, body(4, 2)):append_text(server_session == SESSION_NONE and " (none)" or "")
    t:add(f.sm_credits, body(6, 2))
    t:add(f.sm_mtu, body(8, 2))
    t:add(f.sm_req_window, body(10, 2))
    t:add(f.sm_server_token, body(12, 8))
    local name = sm_types[sm_type] or ("SM(" .. sm_type .. ")")
    t:append_text(": " .. name)
    pinfo.cols.info:set(string.format("%s client_session=%d server_session=%s credits=%d mtu=%d status=%s",
        name, client_session, session_str(server_session), body(6, 2):uint(), body(8, 2):uint(),
        sm_statuses[status] or tostring(status)))
end

function erpc.dissector(tvb, pinfo, tree)
    if not is_erpc(tvb) then
        return 0
    end
    pinfo.cols.protocol = "eRPC"
    local pkt_type = tvb(2, 1):uint()
    local req_type = tvb(3, 1):uint()
    local msg_size = tvb(4, 4):uint()
    local dest_session = tvb(8, 2):uint()
    local pkt_num = tvb(10, 2):uint()
    local req_num = tvb(14, 6):uint64()

    local t = tree:add(erpc, tvb())
    t:add(f.magic, tvb(0, 1))
    t:add(f.version, tvb(1, 1))
    t:add(f.pkt_type, tvb(2, 1))
    t:add(f.req_type, tvb(3, 1))
    t:add(f.msg_size, tvb(4, 4))
    t:add(f.dest_session, tvb(8, 2)):append_text(dest_session == SESSION_NONE and " (none)" or "")
    t:add(f.pkt_num, tvb(10, 2))
    t:add(f.grant, tvb(12, 2))
    t:add(f.req_num, tvb(14, 6))
    t:add(f.token, tvb(20, 8))
    local name = pkt_types[pkt_type] or ("Unknown(" .. pkt_type .. ")")
    t:append_text(string.format(", %s, dest_session %s", name, session_str(dest_session)))

    local rest = tvb:len() - RPC_HEADER_LEN
    if pkt_type == PKT_SESSION_MGMT then
        dissect_sm(tvb(RPC_HEADER_LEN):tvb(), pinfo, t)
    else
        if rest > 0 then
            t:add(f.payload, tvb(RPC_HEADER_LEN))
        end
        pinfo.cols.info:set(string.format("%s req_type=%d req_num=%s pkt_num=%d msg_size=%d dest_session=%s len=%d",
            name, req_type, tostring(req_num), pkt_num, msg_size, session_str(dest_session), rest))
    end
    return tvb:len()
end

local function heuristic(tvb, pinfo, tree)
    if not is_erpc(tvb) then
        return false
    end
    erpc.dissector(tvb, pinfo, tree)
    return true
end
erpc:register_heuristic("udp", heuristic)

local udp_ports = DissectorTable.get("udp.port")
local registered = DEFAULT_PORTS
udp_ports:add(registered, erpc)

function erpc.prefs_changed()
    if erpc.prefs.ports ~= registered then
        udp_ports:remove(registered, erpc)
        registered = erpc.prefs.ports
        udp_ports:add(registered, erpc)
    end
end
