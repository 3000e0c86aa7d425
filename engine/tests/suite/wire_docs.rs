//! The figures the documents state about the wire format, checked against
//! the constants the code uses: header lengths, the RPC version, the
//! payload one packet carries at MTU 1500 (`EndpointConfig::max_data_per_pkt`)
//! and the per-packet overhead in every `mtu - K` formula, in docs/*.md, the
//! Wireshark dissector and the htsim comparison script. Wire version 2 left
//! several version-1 figures behind (1,448 bytes a packet, `mtu - 52`, a
//! dissector heuristic for version 1); a document that states a wrong
//! figure, or loses the sentence a check anchors on, fails here.

use engine::proto::{EndpointConfig, PKT_OVERHEAD};
use engine::wire::{
    ETHERNET_HEADER_LEN, HEADERS_LEN, IPV4_HEADER_LEN, MAX_PAYLOAD_LEN, RPC_HEADER_LEN, RPC_MAGIC,
    RPC_VERSION, SM_BODY_LEN, UDP_HEADER_LEN,
};
use std::path::Path;

/// The MTU the documents' examples use.
const MTU: usize = 1500;

/// A file of the repository, with every run of whitespace (line breaks and
/// the indentation after them included) made one space, so a check does not
/// depend on where a paragraph wraps. `comment` is a line-comment marker
/// dropped at the start of each line first (a script's comments read as
/// prose).
fn text(path: &str, comment: Option<&str>) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let raw = std::fs::read_to_string(&full)
        .unwrap_or_else(|e| panic!("reading {}: {e}", full.display()));
    raw.lines()
        .map(|l| l.trim_start())
        .map(|l| comment.and_then(|c| l.strip_prefix(c)).unwrap_or(l))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

fn doc(path: &str) -> String {
    text(path, None)
}

/// The number right after each occurrence of `anchor` in `text` (digits,
/// with thousands separated by commas: "1,444"); at least one occurrence.
fn numbers_after(text: &str, anchor: &str, file: &str) -> Vec<u64> {
    let found: Vec<u64> = text
        .match_indices(anchor)
        .map(|(at, _)| {
            leading_number(&text[at + anchor.len()..])
                .unwrap_or_else(|| panic!("{file}: no number after {anchor:?}"))
        })
        .collect();
    assert!(
        !found.is_empty(),
        "{file}: {anchor:?} not found; the sentence this test checks moved \
         (update engine/tests/suite/wire_docs.rs with it)"
    );
    found
}

/// The number right before the first occurrence of `anchor`.
fn number_before(text: &str, anchor: &str, file: &str) -> u64 {
    let at = text.find(anchor).unwrap_or_else(|| {
        panic!("{file}: {anchor:?} not found; update engine/tests/suite/wire_docs.rs")
    });
    let head = &text[..at];
    let start = head
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_ascii_digit() || c == ',')
        .last()
        .map_or(at, |(i, _)| i);
    leading_number(&head[start..]).unwrap_or_else(|| panic!("{file}: no number before {anchor:?}"))
}

fn leading_number(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let mut digits = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            digits.push(b[i] as char);
        } else if b[i] == b',' && i + 1 < b.len() && b[i + 1].is_ascii_digit() && !digits.is_empty()
        {
            // A thousands separator, not the end of a list ("14, IPv4").
        } else {
            break;
        }
        i += 1;
    }
    digits.parse().ok()
}

/// Asserts every figure found equals `want`.
fn all_are(found: &[u64], want: usize, what: &str, file: &str) {
    for &n in found {
        assert_eq!(
            n, want as u64,
            "{file}: {what} is {want}, the document says {n}"
        );
    }
}

/// Payload bytes one packet carries at [`MTU`], as the engine computes it.
fn payload_at_mtu() -> usize {
    let cfg = EndpointConfig::default();
    assert_eq!(
        cfg.mtu, MTU,
        "the default MTU moved; the documents say {MTU}"
    );
    cfg.max_data_per_pkt()
}

#[test]
fn the_overhead_is_the_ip_udp_and_rpc_headers() {
    // What the documents' figures are derived from, once.
    assert_eq!(
        PKT_OVERHEAD,
        IPV4_HEADER_LEN + UDP_HEADER_LEN + RPC_HEADER_LEN
    );
    assert_eq!(HEADERS_LEN, ETHERNET_HEADER_LEN + PKT_OVERHEAD);
    assert_eq!(payload_at_mtu(), MTU - PKT_OVERHEAD);
}

#[test]
fn every_mtu_formula_in_the_docs_subtracts_the_real_overhead() {
    let mut seen = 0;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("docs/")
        .map(|e| {
            e.expect("docs/ entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    files.push("README.md".into());
    for file in &files {
        let t = doc(file).to_lowercase();
        // `mtu - 56`, `ceil(len / (mtu - 56))`, (`mtu` - 56).
        for anchor in ["mtu - ", "mtu` - "] {
            for (at, _) in t.match_indices(anchor) {
                if let Some(k) = leading_number(&t[at + anchor.len()..]) {
                    seen += 1;
                    assert_eq!(
                        k, PKT_OVERHEAD as u64,
                        "{file}: `mtu - {k}`, but a packet's IP, UDP and RPC headers are \
                         {PKT_OVERHEAD} bytes (proto::PKT_OVERHEAD)"
                    );
                }
            }
        }
    }
    // wire.md twice, configs.md once: the scan still finds them.
    assert!(seen >= 3, "only {seen} `mtu - K` formulas found");
}

#[test]
fn configs_md_states_the_per_packet_overhead() {
    let f = "docs/configs.md";
    let t = doc(f);
    let sum = format!(
        "({PKT_OVERHEAD} = IPv4 {IPV4_HEADER_LEN} + UDP {UDP_HEADER_LEN} + RPC {RPC_HEADER_LEN} header bytes"
    );
    assert!(t.contains(&sum), "{f}: max_msg_size's row lost {sum:?}");
}

#[test]
fn the_payload_per_packet_at_mtu_1500_is_the_engines() {
    let p = payload_at_mtu();
    let f = "docs/reliability.md";
    all_are(
        &numbers_after(&doc(f), "MTU 1500: ", f),
        p,
        "a packet's payload",
        f,
    );
    all_are(
        &numbers_after(&doc(f), "the class of a ", f),
        p,
        "a packet's payload",
        f,
    );
    let f = "docs/glossary.md";
    all_are(
        &numbers_after(&doc(f), "(at MTU 1500, ", f),
        p,
        "a packet's payload",
        f,
    );
    let f = "docs/wire.md";
    assert_eq!(
        number_before(&doc(f), " bytes at MTU 1500", f),
        p as u64,
        "{f}"
    );
    let f = "docs/fabric.md";
    let t = doc(f);
    all_are(
        &numbers_after(&t, "a 1514-byte frame with ", f),
        p,
        "a packet's payload",
        f,
    );
    all_are(
        &numbers_after(&t, "With version 2's ", f),
        p,
        "a packet's payload",
        f,
    );
    let f = "docs/results.md";
    all_are(
        &numbers_after(&doc(f), "a packet carries ", f),
        p,
        "a packet's payload",
        f,
    );
}

#[test]
fn wire_md_states_the_header_constants() {
    let f = "docs/wire.md";
    let t = doc(f);
    let sizes = format!(
        "Header sizes: Ethernet {ETHERNET_HEADER_LEN}, IPv4 {IPV4_HEADER_LEN}, \
         UDP {UDP_HEADER_LEN}, RPC {RPC_HEADER_LEN}; `wire::HEADERS_LEN = {HEADERS_LEN}`"
    );
    assert!(t.contains(&sizes), "{f}: lost {sizes:?}");
    all_are(
        &numbers_after(&t, "A frame is `", f),
        HEADERS_LEN,
        "HEADERS_LEN",
        f,
    );
    let max = numbers_after(&t, "`wire::MAX_PAYLOAD_LEN = ", f);
    all_are(&max, MAX_PAYLOAD_LEN, "MAX_PAYLOAD_LEN", f);
    // The IPv4 and UDP length fields, in the diagram and in the table.
    let ip_row = "| total length (IPv4 header + UDP + RPC + payload) | ";
    for anchor in ["IPv4 total length = ", ip_row] {
        all_are(
            &numbers_after(&t, anchor, f),
            PKT_OVERHEAD,
            "IPv4 length - N",
            f,
        );
    }
    let udp = UDP_HEADER_LEN + RPC_HEADER_LEN;
    let udp_row = "| length (UDP header + RPC header + payload) | ";
    for anchor in ["UDP length = ", udp_row] {
        all_are(&numbers_after(&t, anchor, f), udp, "UDP length - N", f);
    }
    // The two engine headers and where they sit.
    let rpc_at = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;
    for heading in [
        format!("## RPC header ({RPC_HEADER_LEN} bytes, frame offset {rpc_at})"),
        format!("## Session-management body ({SM_BODY_LEN} bytes, frame offset {HEADERS_LEN})"),
    ] {
        assert!(t.contains(&heading), "{f}: lost the heading {heading:?}");
    }
    all_are(
        &numbers_after(&t, "(it starts at ", f),
        rpc_at,
        "the RPC header's offset",
        f,
    );
    all_are(
        &numbers_after(&t, "emit gives the same ", f),
        RPC_HEADER_LEN,
        "RPC_HEADER_LEN",
        f,
    );
    let sm_body = [
        "the SM body length (",
        "Golden bytes of the ",
        "| `SessionMgmt` | both directions | the ",
    ];
    for anchor in sm_body {
        all_are(&numbers_after(&t, anchor, f), SM_BODY_LEN, "SM_BODY_LEN", f);
    }
}

#[test]
fn wire_md_states_the_version_everywhere() {
    let f = "docs/wire.md";
    let t = doc(f);
    let v = usize::from(RPC_VERSION);
    let anchors = [
        "RPC version ",            // the frame diagram
        "| magic 0xE7 | version ", // the RPC header diagram
        "header version, ",        // the field table
        "(`BadMagic`), version ",  // receive validation
        "magic 0xE7 and version ", // the dissector's heuristic
    ];
    for anchor in anchors {
        all_are(&numbers_after(&t, anchor, f), v, "RPC_VERSION", f);
    }
}

/// The frame lengths in wire.md's tshark example: a SessionMgmt frame is
/// the headers and the SM body, a Request the headers and its `len=`.
#[test]
fn wire_md_capture_example_has_the_real_frame_lengths() {
    let f = "docs/wire.md";
    let t = doc(f);
    let mut seen = 0;
    for line in t.split("eRPC ").skip(1) {
        let Some(len) = leading_number(line) else {
            continue;
        };
        let kind = line.split(' ').nth(1).unwrap_or("");
        let want = match kind {
            "ConnectReq" | "ConnectResp" => HEADERS_LEN + SM_BODY_LEN,
            "Request" => {
                let payload = numbers_after(line, "len=", f)[0];
                HEADERS_LEN + payload as usize
            }
            other => panic!("{f}: a {other} frame in the capture example; teach this test"),
        };
        assert_eq!(
            len, want as u64,
            "{f}: a {kind} frame is {want} bytes, the example says {len}"
        );
        seen += 1;
    }
    assert_eq!(seen, 3, "{f}: the capture example has 3 frames");
}

#[test]
fn results_md_benchmark_sizes_follow_the_headers() {
    let f = "docs/results.md";
    let t = doc(f);
    let frame = numbers_after(&t, "`parse_frame` of a ", f);
    all_are(&frame, HEADERS_LEN + 32, "a 32 B request's frame", f);
    let packets = numbers_after(&t, "through the memcpy path (", f);
    all_are(
        &packets,
        (8usize << 20).div_ceil(payload_at_mtu()),
        "8 MiB's packets",
        f,
    );
}

#[test]
fn the_dissector_speaks_the_engines_header() {
    let f = "scripts/wireshark/erpc.lua";
    let t = text(f, Some("--"));
    let magic = format!("local RPC_MAGIC = 0x{RPC_MAGIC:X}");
    assert!(t.contains(&magic), "{f}: lost {magic:?}");
    let v = usize::from(RPC_VERSION);
    all_are(
        &numbers_after(&t, "local RPC_VERSION = ", f),
        v,
        "RPC_VERSION",
        f,
    );
    all_are(
        &numbers_after(&t, "magic 0xE7 and version ", f),
        v,
        "RPC_VERSION",
        f,
    );
    all_are(
        &numbers_after(&t, "local RPC_HEADER_LEN = ", f),
        RPC_HEADER_LEN,
        "RPC_HEADER_LEN",
        f,
    );
    all_are(
        &numbers_after(&t, "local SM_BODY_LEN = ", f),
        SM_BODY_LEN,
        "SM_BODY_LEN",
        f,
    );
    assert_eq!(
        number_before(&t, "-byte RPC header", f),
        RPC_HEADER_LEN as u64,
        "{f}"
    );
    let sm = number_before(&t, "-byte session-management body", f);
    assert_eq!(sm, SM_BODY_LEN as u64, "{f}");
    // The malformed-body message takes its length from SM_BODY_LEN.
    for (at, _) in t.match_indices("shorter than ") {
        let n = leading_number(&t[at + "shorter than ".len()..]);
        assert!(
            n.is_none(),
            "{f}: a literal length in {:?}",
            &t[at..at + 20]
        );
    }
}

#[test]
fn the_htsim_script_counts_the_engines_headers() {
    let f = "scripts/reference/htsim_compare.py";
    let t = text(f, Some("#"));
    all_are(&numbers_after(&t, "OUR_MTU = ", f), MTU, "the MTU", f);
    all_are(
        &numbers_after(&t, "OUR_HEADERS = ", f),
        HEADERS_LEN,
        "HEADERS_LEN",
        f,
    );
    let p = payload_at_mtu();
    let payload = numbers_after(&t, "OUR_PAYLOAD = FRAME - OUR_HEADERS # ", f);
    all_are(&payload, p, "a packet's payload", f);
    all_are(
        &numbers_after(&t, "1514-byte frame carrying ", f),
        p,
        "a packet's payload",
        f,
    );
    let sum = format!(
        "(Ethernet {ETHERNET_HEADER_LEN} + IPv4 {IPV4_HEADER_LEN} + UDP {UDP_HEADER_LEN} \
         + RPC {RPC_HEADER_LEN} = {HEADERS_LEN} header bytes"
    );
    assert!(t.contains(&sum), "{f}: lost {sum:?}");
}

#[test]
fn internal_api_md_states_the_header_constants() {
    let f = "docs/internal-api.md";
    let t = doc(f);
    let layers = [
        ("Frame = Ethernet (", ETHERNET_HEADER_LEN),
        (") + IPv4 (", IPV4_HEADER_LEN),
        (") + UDP (", UDP_HEADER_LEN),
        (") + RPC header (", RPC_HEADER_LEN),
        ("`wire::HEADERS_LEN = ", HEADERS_LEN),
        ("RPC header, ", RPC_HEADER_LEN),
        ("| version = ", usize::from(RPC_VERSION)),
        ("Session-management body (", SM_BODY_LEN),
        ("writes all ", HEADERS_LEN),
    ];
    for (anchor, want) in layers {
        all_are(&numbers_after(&t, anchor, f), want, anchor, f);
    }
}
