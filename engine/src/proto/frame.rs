//! Frame writing and message geometry shared by the client and server
//! paths: how a message splits into packets, and how one packet's headers
//! (from the session's prebuilt template) and payload go into the caller's
//! transmit buffer. Payload bytes move once, from the stored message into
//! the frame, by the caller's [`PayloadCopy`].

use super::msgbuf::PayloadCopy;
use crate::wire::{HeaderTemplate, RpcRepr};

/// Packets of a `len`-byte message at `dpp` bytes per packet: at least one.
#[inline]
pub(crate) fn pkts_of(len: usize, dpp: usize) -> u32 {
    len.div_ceil(dpp).max(1) as u32
}

/// Byte range of packet `k` of a `len`-byte message.
#[inline]
pub(crate) fn chunk(len: usize, k: u32, dpp: usize) -> core::ops::Range<usize> {
    let start = (k as usize * dpp).min(len);
    start..(start + dpp).min(len)
}

/// Headers from the template, then the payload, its bytes moved by `C`;
/// returns the frame length. Nothing past the headers is written but what
/// `C` copies (see [`PayloadCopy`]).
pub(crate) fn write_frame<C: PayloadCopy>(
    buf: &mut [u8],
    template: &HeaderTemplate,
    rpc: &RpcRepr,
    payload: &[u8],
) -> usize {
    let n = template.write(buf, rpc, payload.len());
    C::copy(&mut buf[n..n + payload.len()], payload);
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
