//! Frame writing and message geometry shared by the client and server
//! paths: how a message splits into packets, and how one packet's headers
//! (from the session's prebuilt template) and payload go into the caller's
//! transmit buffer. Payload bytes move once, from the stored message into
//! the frame.

use crate::wire::{HeaderTemplate, RpcRepr};

/// Packets of a `len`-byte message at `dpp` bytes per packet: at least one.
pub(crate) fn pkts_of(len: usize, dpp: usize) -> u32 {
    len.div_ceil(dpp).max(1) as u32
}

/// Byte range of packet `k` of a `len`-byte message.
pub(crate) fn chunk(len: usize, k: u32, dpp: usize) -> core::ops::Range<usize> {
    let start = (k as usize * dpp).min(len);
    start..(start + dpp).min(len)
}

/// Headers from the template, then the payload (its bytes only if `copy`:
/// not from a phantom message buffer); returns the frame length. Without
/// `copy` nothing past the headers is written: the fabric lab relies on it
/// to lay phantom frames out 128 bytes apart (`lab::fabric`'s
/// `PHANTOM_STRIDE`, crate `lab`), and its phantom-against-copying test would catch a
/// write that strayed into the next frame.
pub(crate) fn write_frame(
    buf: &mut [u8],
    template: &HeaderTemplate,
    rpc: &RpcRepr,
    payload: &[u8],
    copy: bool,
) -> usize {
    let n = template.write(buf, rpc, payload.len());
    if copy {
        buf[n..n + payload.len()].copy_from_slice(payload);
    }
    n + payload.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        assert_eq!(pkts_of(0, 100), 1);
        assert_eq!(pkts_of(100, 100), 1);
        assert_eq!(pkts_of(101, 100), 2);
        assert_eq!(chunk(250, 2, 100), 200..250);
        assert_eq!(chunk(0, 0, 100), 0..0);
    }
}
