//! The hosts' message buffers, and how their endpoints move payload bytes:
//! by default not at all. The fabric measures the transport, not the data,
//! so it hands the endpoints [`HeadersOnly`], the lab's own
//! [`PayloadCopy`], through `handle_frame_with` and `poll_transmit_with`:
//! they run all of their protocol code and write every header and frame
//! length, but copy no payload byte into a frame or out of one, and spend
//! no time or cache on copies nobody reads. The results are the same byte
//! for byte as with the copies (a test checks); `--copy-payload`
//! ([`Buffers::copying`]) runs the real links'
//! [`CopyBytes`](engine::proto::CopyBytes). The choice is
//! the lab's alone: the engine's data path has no such mode, and a real
//! link's endpoint compiles to the copy and nothing else.

use engine::proto::{EndpointConfig, MsgPool, PayloadCopy};

/// The lab's [`PayloadCopy`]: copies nothing, so a message's bytes and a
/// frame's bytes past its headers are unspecified (which lets the fabric
/// lay frames out closer than their length: `packets.rs`).
#[derive(Clone, Copy, Debug, Default)]
pub struct HeadersOnly;

impl PayloadCopy for HeadersOnly {
    #[inline(always)]
    fn copy(_: &mut [u8], _: &[u8]) {}
}

/// Message buffers for fabric runs: one pool that every host shares and
/// that keeps what it hands out (runs one after another in it touch fresh
/// memory only up to the largest run's peak), and whether the endpoints
/// copy payload bytes. A buffer the endpoints never write is allocated
/// zeroed and costs address space, not memory.
#[derive(Clone, Debug)]
pub struct Buffers {
    pool: MsgPool,
    copy: bool,
}

impl Buffers {
    /// Headers only (the default): no payload byte moves.
    pub fn headers_only() -> Buffers {
        Buffers::with(false)
    }

    /// Every payload byte copied in and out, as on a real link.
    pub fn copying() -> Buffers {
        Buffers::with(true)
    }

    fn with(copy: bool) -> Buffers {
        let max = EndpointConfig::default().max_msg_size;
        Buffers {
            pool: MsgPool::keeping(max, usize::MAX),
            copy,
        }
    }

    /// Whether the endpoints copy payload bytes.
    pub fn copies(&self) -> bool {
        self.copy
    }

    /// The pool every host's message buffers come from.
    pub fn pool(&self) -> &MsgPool {
        &self.pool
    }
}
