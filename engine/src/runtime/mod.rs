//! The DPDK runtime: where rx_burst, tx_burst and the clock meet the sans-IO
//! protocol core. `Nexus` is the process-wide object (EAL, mempool, port, the
//! table of request handlers); `Rpc<A>` is one endpoint per worker thread,
//! owning one queue pair, with an eRPC-style event loop: one clock read per
//! iteration, an RX burst handed to the endpoint, handlers and continuations
//! run inline, timers, then the endpoint's frames written straight into mbufs
//! and sent as a TX burst.

mod background;
mod handlers;
mod nexus;
mod rpc;

pub use background::BackgroundFn;
pub use handlers::{Completion, Continuation, Handler, HandlerTable, ReqHandler};
pub use nexus::{Nexus, NexusConfig, WorkerInfo};
pub use rpc::{FaultSide, Rpc, RunCounters};

use crate::dpdk::DpdkError;
use crate::proto::{ConfigError, RpcError};

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    #[error("endpoint configuration: {0}")]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("mbufs hold {room} bytes but the endpoint needs {needed}-byte frames (raise the mbuf data room or lower the MTU)")]
    MbufTooSmall { room: usize, needed: usize },
    #[error("{0}")]
    Setup(String),
}
