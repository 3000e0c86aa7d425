//! The engine's own headers: the 28-byte RPC header at the start of every UDP
//! payload, and the 20-byte session-management (SM) body that follows it in
//! `SessionMgmt` packets. Parsing the RPC header checks only magic and
//! version; packet and SM types this build does not know decode as
//! `Unknown(..)` and are left for `proto` to count and drop. Field meanings
//! and which side sends what are in `docs/wire.md`.

use super::{get_u16, get_u32, get_u64, set_u16, set_u32, set_u64, Error};
use super::{RPC_HEADER_LEN, SM_BODY_LEN};

/// First byte of every RPC header; anything else is not ours.
pub const RPC_MAGIC: u8 = 0xE7;
/// The only RPC header version this build speaks.
pub const RPC_VERSION: u8 = 2;
/// `dest_session` / session-number value meaning "no session yet" (ConnectReq).
pub const SESSION_NONE: u16 = 0xFFFF;
/// Largest request number the header carries (48 bits: at 10 M requests/s
/// a session needs almost a year to reach it). `emit` keeps the low 48 bits.
pub const REQ_NUM_MAX: u64 = (1 << 48) - 1;

wire_enum! {
    /// What an RPC packet carries.
    pub enum PktType(u8) {
        /// Client -> server: a request packet (one of possibly many).
        Request = 0,
        /// Server -> client: a response packet.
        Response = 1,
        /// Server -> client: credit return for a non-last request packet.
        CreditReturn = 2,
        /// Client -> server: request for the next response packet.
        ReqForResp = 3,
        /// Either direction: session management; an SM body follows.
        SessionMgmt = 4,
        /// Server -> client: the request failed at the server (in place of
        /// Response(0)); the payload is one [`ErrorCode`] byte.
        ErrorResponse = 5,
        /// Server -> client, selective retransmission: request packet
        /// `pkt_num` arrived out of order and is kept; every request packet
        /// below the cumulative ack (carried in the `grant` field) arrived
        /// too. The packets between are the holes the client resends.
        Sack = 6,
        /// Receiver -> peer, reactive pause: stop sending to me for
        /// `msg_size` microseconds (0: resume now, an XON). Not bound to a
        /// session: `dest_session` is `SESSION_NONE`, token 0, and the peer
        /// is named by the frame's source address.
        Pause = 7,
        /// Server -> client, DCQCN: a request packet of this session
        /// arrived with ECN Congestion Experienced; cut the session's rate.
        Cnp = 8,
        /// Server -> client, go-back-N with NAKs: a request packet of
        /// `req_num` arrived out of order; `pkt_num` is the first request
        /// packet missing (every one below it arrived). Sent once per gap;
        /// the client goes back to `pkt_num` at once (RoCE's sequence-error
        /// NAK).
        Nak = 9,
        /// Server -> client: request packet `pkt_num` arrived trimmed; resend it (docs/wire.md).
        TrimNak = 10,
    }
}

wire_enum! {
    /// Why a server answered a request with an `ErrorResponse`.
    pub enum ErrorCode(u8) {
        /// No handler is registered for the request's type.
        NoHandler = 1,
        /// The server gave the request up: it stayed incomplete, with no
        /// new bytes, for the server's `reassembly_timeout`.
        ReassemblyTimeout = 2,
        /// The response did not fit the server's memory budget for this
        /// client (or for all clients) and was not kept.
        OverBudget = 3,
        /// The stored response was freed: nobody asked for it for the
        /// server's `reassembly_timeout`.
        ResponseExpired = 4,
    }
}

wire_enum! {
    /// The session-management message type.
    pub enum SmType(u8) {
        /// Client -> server: open a session.
        ConnectReq = 1,
        /// Server -> client: answer to a ConnectReq.
        ConnectResp = 2,
        /// Client -> server: close a session.
        DisconnectReq = 3,
        /// Server -> client: answer to a DisconnectReq.
        DisconnectResp = 4,
        /// Client -> server: "still here" from an idle session, so the
        /// server does not reclaim it. Not answered.
        KeepAlive = 5,
    }
}

wire_enum! {
    /// Outcome carried in SM responses (0 in requests).
    pub enum SmStatus(u8) {
        /// Success (and the value in every request).
        Ok = 0,
        /// The server's receive ring has no room left for the session's credits.
        NoRingSpace = 1,
        /// The server's session table is full.
        TooManySessions = 2,
        /// The client asked for zero credits.
        BadCredits = 3,
        /// The server has no such session (or the token does not match).
        UnknownSession = 4,
        /// The client's MTU differs from the server's.
        BadMtu = 5,
        /// The client's request window differs from the server's.
        BadWindow = 6,
        /// The client's address has `max_sessions_per_peer` sessions already.
        PeerLimit = 7,
        /// ConnectResp only: the server asks for its cookie before it
        /// creates anything (its session table is filling up); the cookie
        /// is in `server_token`, and the client sends its ConnectReq again
        /// with it in the same field.
        Retry = 8,
    }
}

mod field {
    use core::ops::Range;

    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 1;
    pub const PKT_TYPE: usize = 2;
    pub const REQ_TYPE: usize = 3;
    pub const MSG_SIZE: Range<usize> = 4..8;
    pub const DEST_SESSION: Range<usize> = 8..10;
    pub const PKT_NUM: Range<usize> = 10..12;
    pub const GRANT: Range<usize> = 12..14;
    /// The 64-bit word holding the grant (high 16 bits) and the 48-bit
    /// req_num (low 48 bits).
    pub const GRANT_REQ_NUM: Range<usize> = 12..20;
    pub const TOKEN: Range<usize> = 20..28;
}

mod sm_field {
    use core::ops::Range;

    pub const SM_TYPE: usize = 0;
    pub const STATUS: usize = 1;
    pub const CLIENT_SESSION: Range<usize> = 2..4;
    pub const SERVER_SESSION: Range<usize> = 4..6;
    pub const CREDITS: Range<usize> = 6..8;
    pub const MTU: Range<usize> = 8..10;
    pub const REQ_WINDOW: Range<usize> = 10..12;
    pub const SERVER_TOKEN: Range<usize> = 12..20;
}

/// A view of an RPC header followed by its payload.
#[derive(Debug, Clone)]
pub struct RpcHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RpcHeader<T> {
    /// Wraps a buffer without checks; getters panic if it is under 28 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        RpcHeader { buffer }
    }

    /// Wraps a buffer, checking it holds a whole header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    /// `Err(Truncated)` if the buffer is shorter than 28 bytes.
    #[inline]
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < RPC_HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives back the buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Magic, byte 0 ([`RPC_MAGIC`] in valid packets).
    #[inline]
    pub fn magic(&self) -> u8 {
        self.buffer.as_ref()[field::MAGIC]
    }

    /// Header version, byte 1.
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }

    /// Packet type, byte 2.
    #[inline]
    pub fn pkt_type(&self) -> PktType {
        PktType::from(self.buffer.as_ref()[field::PKT_TYPE])
    }

    /// Request type (selects the handler), byte 3.
    #[inline]
    pub fn req_type(&self) -> u8 {
        self.buffer.as_ref()[field::REQ_TYPE]
    }

    /// Message size in bytes, bytes 4..8.
    #[inline]
    pub fn msg_size(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::MSG_SIZE)
    }

    /// Receiver's session number, bytes 8..10.
    #[inline]
    pub fn dest_session(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::DEST_SESSION)
    }

    /// Packet number within the exchange, bytes 10..12.
    #[inline]
    pub fn pkt_num(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::PKT_NUM)
    }

    /// Credit grant, bytes 12..14: in the last packet of a request, how
    /// many response packets after Response(0) the server may send unasked.
    #[inline]
    pub fn grant(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::GRANT)
    }

    /// Request number (48 bits), bytes 14..20.
    #[inline]
    pub fn req_num(&self) -> u64 {
        get_u64(self.buffer.as_ref(), field::GRANT_REQ_NUM) & REQ_NUM_MAX
    }

    /// Session token, bytes 20..28.
    #[inline]
    pub fn token(&self) -> u64 {
        get_u64(self.buffer.as_ref(), field::TOKEN)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> RpcHeader<&'a T> {
    /// Everything after the header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[RPC_HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RpcHeader<T> {
    /// Sets the magic, byte 0.
    #[inline]
    pub fn set_magic(&mut self, value: u8) {
        self.buffer.as_mut()[field::MAGIC] = value;
    }

    /// Sets the header version, byte 1.
    #[inline]
    pub fn set_version(&mut self, value: u8) {
        self.buffer.as_mut()[field::VERSION] = value;
    }

    /// Sets the packet type, byte 2.
    #[inline]
    pub fn set_pkt_type(&mut self, value: PktType) {
        self.buffer.as_mut()[field::PKT_TYPE] = value.into();
    }

    /// Sets the request type, byte 3.
    #[inline]
    pub fn set_req_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::REQ_TYPE] = value;
    }

    /// Sets the message size in bytes, bytes 4..8.
    #[inline]
    pub fn set_msg_size(&mut self, value: u32) {
        set_u32(self.buffer.as_mut(), field::MSG_SIZE, value);
    }

    /// Sets the receiver's session number, bytes 8..10.
    #[inline]
    pub fn set_dest_session(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), field::DEST_SESSION, value);
    }

    /// Sets the packet number, bytes 10..12.
    #[inline]
    pub fn set_pkt_num(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), field::PKT_NUM, value);
    }

    /// Sets the credit grant, bytes 12..14.
    #[inline]
    pub fn set_grant(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), field::GRANT, value);
    }

    /// Sets the request number, bytes 14..20 (its low 48 bits).
    #[inline]
    pub fn set_req_num(&mut self, value: u64) {
        let grant = u64::from(self.grant()) << 48;
        let word = grant | (value & REQ_NUM_MAX);
        set_u64(self.buffer.as_mut(), field::GRANT_REQ_NUM, word);
    }

    /// Sets the session token, bytes 20..28.
    #[inline]
    pub fn set_token(&mut self, value: u64) {
        set_u64(self.buffer.as_mut(), field::TOKEN, value);
    }

    /// Everything after the header.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[RPC_HEADER_LEN..]
    }
}

/// The decoded RPC header (magic and version are implied).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RpcRepr {
    /// What this packet carries.
    pub pkt_type: PktType,
    /// Selects the request handler.
    pub req_type: u8,
    /// Bytes of the whole message this packet belongs to (SM: body length).
    pub msg_size: u32,
    /// The receiver's session number; [`SESSION_NONE`] in a ConnectReq.
    pub dest_session: u16,
    /// Index of this packet within its request/response exchange.
    pub pkt_num: u16,
    /// Request: response packets after Response(0) the client granted
    /// credits for (the server sends them unasked). Sack: the cumulative
    /// ack (request packets below it all arrived). 0 in other packets.
    pub grant: u16,
    /// The request this packet belongs to (48 bits on the wire: `emit`
    /// keeps the low 48).
    pub req_num: u64,
    /// The session's random token; guards against stray and stale packets.
    pub token: u64,
}

impl RpcRepr {
    /// Decodes; `BadMagic` / `BadVersion` if the header is not ours.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &RpcHeader<&T>) -> Result<Self, Error> {
        header.check_len()?;
        if header.magic() != RPC_MAGIC {
            return Err(Error::BadMagic);
        }
        if header.version() != RPC_VERSION {
            return Err(Error::BadVersion);
        }
        Ok(RpcRepr {
            pkt_type: header.pkt_type(),
            req_type: header.req_type(),
            msg_size: header.msg_size(),
            dest_session: header.dest_session(),
            pkt_num: header.pkt_num(),
            grant: header.grant(),
            req_num: header.req_num(),
            token: header.token(),
        })
    }

    /// Bytes `emit` writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        RPC_HEADER_LEN
    }

    /// Writes all 28 header bytes (magic and version included).
    ///
    /// # Panics
    /// If the buffer is shorter than 28 bytes.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut RpcHeader<T>) {
        header.set_magic(RPC_MAGIC);
        header.set_version(RPC_VERSION);
        header.set_pkt_type(self.pkt_type);
        header.set_req_type(self.req_type);
        header.set_msg_size(self.msg_size);
        header.set_dest_session(self.dest_session);
        header.set_pkt_num(self.pkt_num);
        header.set_grant(self.grant);
        header.set_req_num(self.req_num);
        header.set_token(self.token);
    }
}

/// A view of a session-management body.
#[derive(Debug, Clone)]
pub struct SmBody<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SmBody<T> {
    /// Wraps a buffer without checks; getters panic if it is under 20 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        SmBody { buffer }
    }

    /// Wraps a buffer, checking it holds a whole body. Bytes after the first
    /// 16 are ignored.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let body = Self::new_unchecked(buffer);
        body.check_len()?;
        Ok(body)
    }

    /// `Err(Truncated)` if the buffer is shorter than 20 bytes.
    #[inline]
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < SM_BODY_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives back the buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// SM message type, byte 0.
    #[inline]
    pub fn sm_type(&self) -> SmType {
        SmType::from(self.buffer.as_ref()[sm_field::SM_TYPE])
    }

    /// Status, byte 1.
    #[inline]
    pub fn status(&self) -> SmStatus {
        SmStatus::from(self.buffer.as_ref()[sm_field::STATUS])
    }

    /// Client's session number, bytes 2..4.
    #[inline]
    pub fn client_session(&self) -> u16 {
        get_u16(self.buffer.as_ref(), sm_field::CLIENT_SESSION)
    }

    /// Server's session number, bytes 4..6.
    #[inline]
    pub fn server_session(&self) -> u16 {
        get_u16(self.buffer.as_ref(), sm_field::SERVER_SESSION)
    }

    /// Client session's credits, bytes 6..8.
    #[inline]
    pub fn credits(&self) -> u16 {
        get_u16(self.buffer.as_ref(), sm_field::CREDITS)
    }

    /// Sender's data MTU, bytes 8..10.
    #[inline]
    pub fn mtu(&self) -> u16 {
        get_u16(self.buffer.as_ref(), sm_field::MTU)
    }

    /// The sender's request window (outstanding requests per session).
    #[inline]
    pub fn req_window(&self) -> u16 {
        get_u16(self.buffer.as_ref(), sm_field::REQ_WINDOW)
    }

    /// Bytes 12..20: ConnectResp (Ok), the session's token; ConnectResp
    /// (Retry) and the ConnectReqs after it, the cookie; else 0.
    #[inline]
    pub fn server_token(&self) -> u64 {
        get_u64(self.buffer.as_ref(), sm_field::SERVER_TOKEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SmBody<T> {
    /// Sets the SM message type, byte 0.
    #[inline]
    pub fn set_sm_type(&mut self, value: SmType) {
        self.buffer.as_mut()[sm_field::SM_TYPE] = value.into();
    }

    /// Sets the status, byte 1.
    #[inline]
    pub fn set_status(&mut self, value: SmStatus) {
        self.buffer.as_mut()[sm_field::STATUS] = value.into();
    }

    /// Sets the client's session number, bytes 2..4.
    #[inline]
    pub fn set_client_session(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), sm_field::CLIENT_SESSION, value);
    }

    /// Sets the server's session number, bytes 4..6.
    #[inline]
    pub fn set_server_session(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), sm_field::SERVER_SESSION, value);
    }

    /// Sets the credits, bytes 6..8.
    #[inline]
    pub fn set_credits(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), sm_field::CREDITS, value);
    }

    /// Sets the sender's data MTU, bytes 8..10.
    #[inline]
    pub fn set_mtu(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), sm_field::MTU, value);
    }

    /// Sets the request window, bytes 10..12.
    #[inline]
    pub fn set_req_window(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), sm_field::REQ_WINDOW, value);
    }

    /// Sets the server's token, bytes 12..20.
    #[inline]
    pub fn set_server_token(&mut self, value: u64) {
        set_u64(self.buffer.as_mut(), sm_field::SERVER_TOKEN, value);
    }
}

/// The decoded session-management body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmRepr {
    /// The SM message type.
    pub sm_type: SmType,
    /// `Ok` in requests; the outcome in responses.
    pub status: SmStatus,
    /// The client's session number.
    pub client_session: u16,
    /// [`SESSION_NONE`] until the server has assigned one.
    pub server_session: u16,
    /// The client session's credits.
    pub credits: u16,
    /// The sender's data MTU: its largest IP packet.
    pub mtu: u16,
    /// The sender's request window; both ends of a session must agree.
    pub req_window: u16,
    /// ConnectResp (Ok): the token the server chose for the session, which
    /// replaces the client's in every later packet, so only a peer that
    /// received the ConnectResp can use the session. ConnectResp (Retry)
    /// and the ConnectReqs after it: the cookie. 0 in every other body.
    pub server_token: u64,
}

impl SmRepr {
    /// Decodes; only the length is checked (unknown types are kept as `Unknown`).
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(body: &SmBody<&T>) -> Result<Self, Error> {
        body.check_len()?;
        Ok(SmRepr {
            sm_type: body.sm_type(),
            status: body.status(),
            client_session: body.client_session(),
            server_session: body.server_session(),
            credits: body.credits(),
            mtu: body.mtu(),
            req_window: body.req_window(),
            server_token: body.server_token(),
        })
    }

    /// Bytes `emit` writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        SM_BODY_LEN
    }

    /// Writes all 16 body bytes.
    ///
    /// # Panics
    /// If the buffer is shorter than 20 bytes.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, body: &mut SmBody<T>) {
        body.set_sm_type(self.sm_type);
        body.set_status(self.status);
        body.set_client_session(self.client_session);
        body.set_server_session(self.server_session);
        body.set_credits(self.credits);
        body.set_mtu(self.mtu);
        body.set_req_window(self.req_window);
        body.set_server_token(self.server_token);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    // Request (its last packet), req_type 7, msg_size 4096, dest_session 5,
    // pkt_num 2, grant 0x0103 (259 response packets), req_num
    // 0x0000_8001_0102, token 0x01234567deadbeef, then payload "hi".
    static RPC_BYTES: [u8; 30] = [
        0xe7, 0x02, 0x00, 0x07, // magic, version, pkt_type, req_type
        0x00, 0x00, 0x10, 0x00, // msg_size
        0x00, 0x05, // dest_session
        0x00, 0x02, // pkt_num
        0x01, 0x03, // grant
        0x00, 0x00, 0x80, 0x01, 0x01, 0x02, // req_num (48 bits)
        0x01, 0x23, 0x45, 0x67, 0xde, 0xad, 0xbe, 0xef, // token (64 bits)
        b'h', b'i',
    ];

    fn rpc_repr() -> RpcRepr {
        RpcRepr {
            pkt_type: PktType::Request,
            req_type: 7,
            msg_size: 4096,
            dest_session: 5,
            pkt_num: 2,
            grant: 0x0103,
            req_num: 0x8001_0102,
            token: 0x0123_4567_dead_beef,
        }
    }

    // CreditReturn, cumulative: request packets 0..=6 of req_num 9 arrived
    // (pkt_num 6), msg_size 20000 (the request's), dest_session 5, no grant.
    static CR_BYTES: [u8; 28] = [
        0xe7, 0x02, 0x02, 0x07, // magic, version, pkt_type, req_type
        0x00, 0x00, 0x4e, 0x20, // msg_size
        0x00, 0x05, // dest_session
        0x00, 0x06, // pkt_num: highest in-order request packet
        0x00, 0x00, // grant (unused in a CR)
        0x00, 0x00, 0x00, 0x00, 0x00, 0x09, // req_num
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // token
    ];

    #[test]
    fn test_cumulative_cr_golden() {
        let repr = RpcRepr {
            pkt_type: PktType::CreditReturn,
            req_type: 7,
            msg_size: 20000,
            dest_session: 5,
            pkt_num: 6,
            grant: 0,
            req_num: 9,
            token: 0x0102_0304_0506_0708,
        };
        let header = RpcHeader::new_checked(&CR_BYTES[..]).unwrap();
        assert_eq!(RpcRepr::parse(&header).unwrap(), repr);
        let mut bytes = [0xa5u8; 28];
        repr.emit(&mut RpcHeader::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, CR_BYTES);
    }

    // Sack: request packet 9 of req_num 9 arrived out of order; packets
    // 0..=3 arrived (cumulative ack 4), so 4..=8 are the holes.
    static SACK_BYTES: [u8; 28] = [
        0xe7, 0x02, 0x06, 0x07, // magic, version, pkt_type, req_type
        0x00, 0x00, 0x4e, 0x20, // msg_size (the request's)
        0x00, 0x05, // dest_session
        0x00, 0x09, // pkt_num: the packet kept out of order
        0x00, 0x04, // grant field: the cumulative ack
        0x00, 0x00, 0x00, 0x00, 0x00, 0x09, // req_num
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // token
    ];

    // Pause (XOFF) for 200 us: no session, token 0.
    static PAUSE_BYTES: [u8; 28] = [
        0xe7, 0x02, 0x07, 0x00, // magic, version, pkt_type, req_type
        0x00, 0x00, 0x00, 0xc8, // msg_size: pause time in us (0 = XON)
        0xff, 0xff, // dest_session: none
        0x00, 0x00, 0x00, 0x00, // pkt_num, grant
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // req_num
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // token
    ];

    // Cnp to client session 5.
    static CNP_BYTES: [u8; 28] = [
        0xe7, 0x02, 0x08, 0x00, // magic, version, pkt_type, req_type
        0x00, 0x00, 0x00, 0x00, // msg_size
        0x00, 0x05, // dest_session
        0x00, 0x00, 0x00, 0x00, // pkt_num, grant
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // req_num
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // token
    ];

    // Nak of request 9 of client session 5: packet 3 is missing.
    static NAK_BYTES: [u8; 28] = [
        0xe7, 0x02, 0x09, 0x00, // magic, version, pkt_type, req_type
        0x00, 0x00, 0x00, 0x00, // msg_size
        0x00, 0x05, // dest_session
        0x00, 0x03, 0x00, 0x00, // pkt_num: the first missing, grant
        0x00, 0x00, 0x00, 0x00, 0x00, 0x09, // req_num
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // token
    ];

    #[test]
    fn test_regime_packets_golden() {
        let base = RpcRepr {
            pkt_type: PktType::Sack,
            req_type: 7,
            msg_size: 20000,
            dest_session: 5,
            pkt_num: 9,
            grant: 4,
            req_num: 9,
            token: 0x0102_0304_0506_0708,
        };
        let pause = RpcRepr {
            pkt_type: PktType::Pause,
            req_type: 0,
            msg_size: 200,
            dest_session: SESSION_NONE,
            pkt_num: 0,
            grant: 0,
            req_num: 0,
            token: 0,
        };
        let cnp = RpcRepr {
            pkt_type: PktType::Cnp,
            dest_session: 5,
            msg_size: 0,
            token: 0x0102_0304_0506_0708,
            ..pause
        };
        let nak = RpcRepr {
            pkt_type: PktType::Nak,
            req_type: 0,
            msg_size: 0,
            pkt_num: 3,
            grant: 0,
            ..base
        };
        for (repr, golden) in [
            (base, &SACK_BYTES),
            (pause, &PAUSE_BYTES),
            (cnp, &CNP_BYTES),
            (nak, &NAK_BYTES),
        ] {
            let mut bytes = [0u8; 28];
            repr.emit(&mut RpcHeader::new_unchecked(&mut bytes[..]));
            assert_eq!(&bytes, golden);
            let parsed = RpcRepr::parse(&RpcHeader::new_checked(&golden[..]).unwrap()).unwrap();
            assert_eq!(parsed, repr);
        }
    }

    #[test]
    fn test_req_num_is_48_bits() {
        // Bits above 48 never leak into the grant: emit keeps the low 48.
        let repr = RpcRepr {
            req_num: REQ_NUM_MAX + 1 + 5,
            grant: 2,
            ..rpc_repr()
        };
        let mut bytes = [0u8; 28];
        let mut header = RpcHeader::new_unchecked(&mut bytes[..]);
        repr.emit(&mut header);
        assert_eq!(header.grant(), 2);
        assert_eq!(header.req_num(), 5);
        // Setting either half leaves the other alone.
        header.set_req_num(REQ_NUM_MAX);
        assert_eq!(header.grant(), 2);
        header.set_grant(0xffff);
        assert_eq!(header.req_num(), REQ_NUM_MAX);
        assert_eq!(&bytes[12..20], &[0xff; 8]);
    }

    // ConnectReq, Ok, client_session 3, server_session none, credits 32,
    // mtu 1500, req_window 8.
    static SM_BYTES: [u8; 20] = [
        0x01, 0x00, // sm_type, status
        0x00, 0x03, // client_session
        0xff, 0xff, // server_session
        0x00, 0x20, // credits
        0x05, 0xdc, // mtu
        0x00, 0x08, // req_window
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // server_token (0: not a ConnectResp)
    ];

    fn sm_repr() -> SmRepr {
        SmRepr {
            sm_type: SmType::ConnectReq,
            status: SmStatus::Ok,
            client_session: 3,
            server_session: SESSION_NONE,
            credits: 32,
            mtu: 1500,
            req_window: 8,
            server_token: 0,
        }
    }

    #[test]
    fn test_parse_rpc() {
        let header = RpcHeader::new_checked(&RPC_BYTES[..]).unwrap();
        assert_eq!(header.magic(), RPC_MAGIC);
        assert_eq!(header.version(), RPC_VERSION);
        assert_eq!(header.pkt_type(), PktType::Request);
        assert_eq!(header.req_type(), 7);
        assert_eq!(header.msg_size(), 4096);
        assert_eq!(header.dest_session(), 5);
        assert_eq!(header.pkt_num(), 2);
        assert_eq!(header.grant(), 0x0103);
        assert_eq!(header.req_num(), 0x8001_0102);
        assert_eq!(header.token(), 0x0123_4567_dead_beef);
        assert_eq!(header.payload(), b"hi");
        assert_eq!(RpcRepr::parse(&header).unwrap(), rpc_repr());
    }

    #[test]
    fn test_emit_rpc() {
        let mut bytes = [0xa5u8; 30];
        let mut header = RpcHeader::new_unchecked(&mut bytes[..]);
        rpc_repr().emit(&mut header);
        header.payload_mut().copy_from_slice(b"hi");
        assert_eq!(bytes, RPC_BYTES);
    }

    // ErrorResponse, req_type 7, msg_size 1, dest_session 5, pkt_num 0,
    // req_num 9, token 0x0102030405060708, then the code byte NoHandler.
    static ERROR_RESP_BYTES: [u8; 29] = [
        0xe7, 0x02, 0x05, 0x07, // magic, version, pkt_type, req_type
        0x00, 0x00, 0x00, 0x01, // msg_size
        0x00, 0x05, // dest_session
        0x00, 0x00, // pkt_num
        0x00, 0x00, // grant
        0x00, 0x00, 0x00, 0x00, 0x00, 0x09, // req_num
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // token
        0x01, // ErrorCode::NoHandler
    ];

    #[test]
    fn test_error_response_golden() {
        let repr = RpcRepr {
            pkt_type: PktType::ErrorResponse,
            req_type: 7,
            msg_size: 1,
            dest_session: 5,
            pkt_num: 0,
            grant: 0,
            req_num: 9,
            token: 0x0102_0304_0506_0708,
        };
        let header = RpcHeader::new_checked(&ERROR_RESP_BYTES[..]).unwrap();
        assert_eq!(RpcRepr::parse(&header).unwrap(), repr);
        assert_eq!(ErrorCode::from(header.payload()[0]), ErrorCode::NoHandler);
        let mut bytes = [0xa5u8; 29];
        let mut header = RpcHeader::new_unchecked(&mut bytes[..]);
        repr.emit(&mut header);
        header.payload_mut()[0] = ErrorCode::NoHandler.into();
        assert_eq!(bytes, ERROR_RESP_BYTES);
    }

    #[test]
    fn test_errors_rpc() {
        for len in 0..RPC_HEADER_LEN {
            assert_eq!(
                RpcHeader::new_checked(&RPC_BYTES[..len]).err(),
                Some(Error::Truncated)
            );
        }
        let mut bytes = RPC_BYTES;
        bytes[0] = 0xe8;
        let header = RpcHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(RpcRepr::parse(&header), Err(Error::BadMagic));
        let mut bytes = RPC_BYTES;
        bytes[1] = 1;
        let header = RpcHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(RpcRepr::parse(&header), Err(Error::BadVersion));
        // Unknown packet types parse; proto decides what to do with them.
        let mut bytes = RPC_BYTES;
        bytes[2] = 11;
        let header = RpcHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            RpcRepr::parse(&header).unwrap().pkt_type,
            PktType::Unknown(11)
        );
    }

    #[test]
    fn test_parse_sm() {
        let body = SmBody::new_checked(&SM_BYTES[..]).unwrap();
        assert_eq!(body.sm_type(), SmType::ConnectReq);
        assert_eq!(body.status(), SmStatus::Ok);
        assert_eq!(body.client_session(), 3);
        assert_eq!(body.server_session(), 0xffff);
        assert_eq!(body.credits(), 32);
        assert_eq!(body.mtu(), 1500);
        assert_eq!(body.req_window(), 8);
        assert_eq!(SmRepr::parse(&body).unwrap(), sm_repr());
        // Bytes 12..20: the server token, big-endian.
        let mut bytes = SM_BYTES;
        bytes[12..].copy_from_slice(&[0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]);
        let body = SmBody::new_checked(&bytes[..]).unwrap();
        let repr = SmRepr {
            server_token: 0x0102_0304_0506_0708,
            ..sm_repr()
        };
        assert_eq!(SmRepr::parse(&body).unwrap(), repr);
        let mut out = [0u8; 20];
        repr.emit(&mut SmBody::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
    }

    #[test]
    fn test_emit_sm() {
        let mut bytes = [0xa5u8; 20];
        sm_repr().emit(&mut SmBody::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, SM_BYTES);
    }

    #[test]
    fn test_errors_sm() {
        for len in 0..SM_BODY_LEN {
            assert_eq!(
                SmBody::new_checked(&SM_BYTES[..len]).err(),
                Some(Error::Truncated)
            );
        }
        let mut bytes = SM_BYTES;
        bytes[0] = 0;
        bytes[1] = 77;
        let repr = SmRepr::parse(&SmBody::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.sm_type, SmType::Unknown(0));
        assert_eq!(repr.status, SmStatus::Unknown(77));
    }

    #[test]
    fn test_enum_values() {
        let pkt = [
            (0, PktType::Request),
            (1, PktType::Response),
            (2, PktType::CreditReturn),
            (3, PktType::ReqForResp),
            (4, PktType::SessionMgmt),
            (5, PktType::ErrorResponse),
            (6, PktType::Sack),
            (7, PktType::Pause),
            (8, PktType::Cnp),
            (9, PktType::Nak),
            (10, PktType::TrimNak),
            (11, PktType::Unknown(11)),
        ];
        for (v, t) in pkt {
            assert_eq!(PktType::from(v), t);
            assert_eq!(u8::from(t), v);
        }
        let sm = [
            (1, SmType::ConnectReq),
            (2, SmType::ConnectResp),
            (3, SmType::DisconnectReq),
            (4, SmType::DisconnectResp),
            (5, SmType::KeepAlive),
        ];
        for (v, t) in sm {
            assert_eq!(SmType::from(v), t);
            assert_eq!(u8::from(t), v);
        }
        let status = [
            (0, SmStatus::Ok),
            (1, SmStatus::NoRingSpace),
            (2, SmStatus::TooManySessions),
            (3, SmStatus::BadCredits),
            (4, SmStatus::UnknownSession),
            (5, SmStatus::BadMtu),
            (6, SmStatus::BadWindow),
            (7, SmStatus::PeerLimit),
            (8, SmStatus::Retry),
            (9, SmStatus::Unknown(9)),
        ];
        for (v, t) in status {
            assert_eq!(SmStatus::from(v), t);
            assert_eq!(u8::from(t), v);
        }
        for (v, t) in [(1, ErrorCode::NoHandler), (0, ErrorCode::Unknown(0))] {
            assert_eq!(ErrorCode::from(v), t);
            assert_eq!(u8::from(t), v);
        }
    }

    /// Arbitrary (canonical) RPC headers; shared with the frame-level tests.
    pub(in crate::wire) fn arb_rpc_repr() -> impl Strategy<Value = RpcRepr> {
        (
            any::<u8>(),
            any::<u8>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u16>(),
            0..=REQ_NUM_MAX,
            any::<u64>(),
        )
            .prop_map(
                |(pkt_type, req_type, msg_size, dest_session, pkt_num, grant, req_num, token)| {
                    RpcRepr {
                        pkt_type: PktType::from(pkt_type),
                        req_type,
                        msg_size,
                        dest_session,
                        pkt_num,
                        grant,
                        req_num,
                        token,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn prop_rpc_roundtrip(repr in arb_rpc_repr(), payload_len in 0usize..64) {
            let mut bytes = vec![0u8; repr.buffer_len() + payload_len];
            repr.emit(&mut RpcHeader::new_unchecked(&mut bytes[..]));
            let header = RpcHeader::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(RpcRepr::parse(&header), Ok(repr));
            prop_assert_eq!(header.payload().len(), payload_len);
        }

        /// Any 28 bytes with our magic and version parse, and every byte
        /// is a field: emitting the parsed header gives the same bytes back.
        #[test]
        fn fuzz_rpc_header_bytes(tail in proptest::collection::vec(any::<u8>(), 26..64)) {
            let mut bytes = vec![RPC_MAGIC, RPC_VERSION];
            bytes.extend_from_slice(&tail);
            let header = RpcHeader::new_checked(&bytes[..]).unwrap();
            let repr = RpcRepr::parse(&header).unwrap();
            prop_assert!(repr.req_num <= REQ_NUM_MAX);
            let mut out = [0u8; RPC_HEADER_LEN];
            repr.emit(&mut RpcHeader::new_unchecked(&mut out[..]));
            prop_assert_eq!(&out[..], &bytes[..RPC_HEADER_LEN]);
        }

        /// Arbitrary bytes of any length: the view takes exactly the
        /// buffers that hold a header, its payload is the rest of the
        /// buffer, the parse accepts exactly our magic and version, and
        /// what it accepts emits back to the same 28 bytes.
        #[test]
        fn fuzz_rpc_arbitrary(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let header = match RpcHeader::new_checked(&bytes[..]) {
                Ok(h) => h,
                Err(e) => {
                    prop_assert!(bytes.len() < RPC_HEADER_LEN);
                    prop_assert_eq!(e, Error::Truncated);
                    return Ok(());
                }
            };
            prop_assert!(bytes.len() >= RPC_HEADER_LEN);
            prop_assert_eq!(header.payload(), &bytes[RPC_HEADER_LEN..]);
            prop_assert_eq!(header.payload().as_ptr_range().end, bytes.as_ptr_range().end);
            match RpcRepr::parse(&header) {
                Ok(repr) => {
                    prop_assert_eq!((bytes[0], bytes[1]), (RPC_MAGIC, RPC_VERSION));
                    let mut out = [0u8; RPC_HEADER_LEN];
                    repr.emit(&mut RpcHeader::new_unchecked(&mut out[..]));
                    prop_assert_eq!(&out[..], &bytes[..RPC_HEADER_LEN]);
                }
                Err(Error::BadMagic) => prop_assert_ne!(bytes[0], RPC_MAGIC),
                Err(Error::BadVersion) => {
                    prop_assert_eq!(bytes[0], RPC_MAGIC);
                    prop_assert_ne!(bytes[1], RPC_VERSION);
                }
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
        }

        #[test]
        fn prop_sm_roundtrip(
            sm_type: u8, status: u8, client_session: u16, server_session: u16,
            credits: u16, mtu: u16, req_window: u16, server_token: u64,
        ) {
            let repr = SmRepr {
                sm_type: SmType::from(sm_type),
                status: SmStatus::from(status),
                client_session,
                server_session,
                credits,
                mtu,
                req_window,
                server_token,
            };
            let mut bytes = [0xffu8; SM_BODY_LEN];
            repr.emit(&mut SmBody::new_unchecked(&mut bytes[..]));
            prop_assert_eq!(&bytes[12..], &server_token.to_be_bytes());
            let body = SmBody::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(SmRepr::parse(&body), Ok(repr));
        }
    }
}
