//! The benchmark's message format, both sides': a request type, the
//! headers, and the body pattern. Bodies follow a fixed pattern with an
//! 8-byte sequence number in front, so the receiver can check every byte.
//! A request of 12 bytes or more also names, in bytes 8..12, the response
//! size its client expects (`run::workload` answers with it).

/// The request type of the benchmark's echo RPC.
pub const REQ_ECHO: u8 = 1;

/// Bytes of a request before its pattern: the sequence number and the
/// response size asked for.
pub const REQ_HEADER: usize = 12;

/// Bytes of a response before its pattern: the sequence number.
pub const RESP_HEADER: usize = 8;

/// Writes the response size a client expects into a request (no-op for
/// requests shorter than [`REQ_HEADER`]).
#[inline]
pub fn write_resp_size(dst: &mut [u8], resp_size: usize) {
    if let Some(b) = dst.get_mut(8..REQ_HEADER) {
        b.copy_from_slice(&(resp_size.min(u32::MAX as usize) as u32).to_le_bytes());
    }
}

/// The response size a request asks for, if it is long enough to say.
#[inline]
pub fn asked_resp_size(req: &[u8]) -> Option<usize> {
    let b = req.get(8..REQ_HEADER)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// Body pattern byte at position `i` (the first 8 bytes carry a sequence number).
#[inline]
pub fn pattern_byte(i: usize) -> u8 {
    (i as u8).wrapping_mul(31).wrapping_add(7)
}

/// A buffer of `len` pattern bytes to copy message bodies from.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(pattern_byte).collect()
}

/// Writes `seq` + pattern into `dst` from `template` (at least as long).
#[inline]
pub fn fill_message(dst: &mut [u8], template: &[u8], seq: u64) {
    let n = dst.len();
    dst.copy_from_slice(&template[..n]);
    let k = n.min(8);
    dst[..k].copy_from_slice(&seq.to_le_bytes()[..k]);
}

/// Writes only the sequence number (unverified runs: the body is whatever
/// the pooled buffer held, as in eRPC's benchmarks).
#[inline]
pub fn write_seq(dst: &mut [u8], seq: u64) {
    let k = dst.len().min(8);
    dst[..k].copy_from_slice(&seq.to_le_bytes()[..k]);
}

/// Checks `msg` against the pattern past its first `header` bytes
/// ([`REQ_HEADER`] or [`RESP_HEADER`]); returns the sequence number it
/// carries. A message longer than the pattern (a hostile peer) is an
/// error, never a panic.
#[inline]
pub fn check_message(
    msg: &[u8],
    template: &[u8],
    expect_len: usize,
    header: usize,
) -> Result<u64, String> {
    if msg.len() != expect_len {
        return Err(format!("length {} != expected {expect_len}", msg.len()));
    }
    if msg.len() > template.len() {
        let max = template.len();
        return Err(format!(
            "length {} exceeds the {max} bytes this side checks",
            msg.len()
        ));
    }
    let h = msg.len().min(header);
    if msg[h..] != template[h..msg.len()] {
        let at = (h..msg.len()).find(|&i| msg[i] != template[i]).unwrap_or(h);
        return Err(format!("byte {at} of {} differs", msg.len()));
    }
    let k = msg.len().min(8);
    let mut seq = [0u8; 8];
    seq[..k].copy_from_slice(&msg[..k]);
    Ok(u64::from_le_bytes(seq))
}
