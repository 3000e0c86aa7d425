//! The DPDK runtime: where rx_burst, tx_burst and the clock meet the sans-IO
//! protocol core. `Nexus` is the process-wide object (EAL, mempool, port, the
//! table of request handlers); `Rpc<A>` is one endpoint per worker thread,
//! owning one queue pair, with an eRPC-style event loop: one clock read per
//! iteration, an RX burst handed to the endpoint, handlers and continuations
//! run inline, timers, then the endpoint's frames written straight into mbufs
//! and sent as a TX burst.
//!
//! The short path: `Nexus::builder().device(..).ip(..).build(handlers)`,
//! then per worker `nexus.rpc(index)` (`Rpc::new` only for settings of
//! your own), `rpc.connect("10.0.0.1:31850".parse()?)` (or
//! `nexus.worker_addr(i)` within the process), `rpc.call(session,
//! req_type, &bytes, timeout)`; a server runs `rpc.run_until_stopped(&mut
//! app, &stop)` with `stop.stop_on_signals()` for Ctrl-C. The README's
//! "Using the engine as a library" walks through it.

mod background;
mod builder;
mod device;
mod handlers;
mod limits;
mod nexus;
mod peer_check;
mod phy;
mod rpc;
mod run_counters;
mod rx_signals;
mod stop;

pub use background::BackgroundFn;
pub use builder::NexusBuilder;
pub use device::Device;
pub use handlers::{Completion, Continuation, Handler, HandlerTable, OnDone, ReqHandler};
pub use limits::{
    BuilderError, Ring, Role, ETH_HEADER_LEN, MAX_DATA_ROOM, MAX_DESC, MAX_IFACE_LEN,
    MAX_SOCKET_PATH, MEMIF_MAX_LOG2_RING, MEMIF_MAX_RING, MIN_DESC,
};
pub use nexus::{Nexus, NexusConfig, RunError, WorkerError, WorkerInfo};
pub use phy::{Capture, CaptureError, CaptureStats, FaultSide, DEFAULT_CAPTURE_LIMIT};
pub use rpc::{CallError, EventHandler, IdleWake, Rpc, EVENT_QUEUE_CAP, MAX_WAIT};
pub use run_counters::RunCounters;
pub use stop::StopHandle;

use crate::dpdk::DpdkError;
use crate::proto::{EndpointConfigError, RpcError};

/// Why setting up or running a worker failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A DPDK call failed (EAL, mempool, port).
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    /// A builder setting DPDK or the kernel would refuse (checked before
    /// EAL starts).
    #[error(transparent)]
    Builder(#[from] BuilderError),
    /// The endpoint configuration did not validate.
    #[error("endpoint configuration: {0}")]
    Config(#[from] EndpointConfigError),
    /// A protocol command failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// A blocking call ([`Rpc::call`]) returned no response.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The mbuf data room cannot hold a full frame.
    #[error("mbufs hold {room} bytes but the endpoint needs {needed}-byte frames (raise the mbuf data room or lower the MTU)")]
    MbufTooSmall {
        /// Bytes an mbuf holds.
        room: usize,
        /// Bytes the largest frame needs.
        needed: usize,
    },
    /// The [`StopHandle`] given to [`NexusBuilder::stop_on`] was set while
    /// the Nexus waited for its link (or a memif client for its server).
    #[error("stopped while waiting for the link on {device}")]
    Stopped {
        /// What was waited on, as [`Device`] displays it.
        device: String,
    },
    /// Another process already listens on a memif server's socket (checked
    /// before EAL starts; DPDK's probe would fail and leave no port).
    #[error("memif socket {socket} is in use by another process (a second server?)")]
    SocketInUse {
        /// The socket path.
        socket: String,
    },
    /// No vhost-user backend listened on a virtio driver's socket within
    /// the link timeout (checked before EAL starts).
    #[error("no vhost-user backend listens on {socket} after {waited_ms} ms: start the backend (rpc-server with link.kind = virtio) on the same link.socket first")]
    NoBackend {
        /// The socket path.
        socket: String,
        /// How long was waited, in milliseconds.
        waited_ms: u64,
    },
    /// An af_xdp device's interface does not exist in this network
    /// namespace (checked before EAL starts).
    #[error("interface {iface} does not exist in this network namespace (af_xdp needs it: create the veth pair with scripts/veth.sh up IFACE, and run the client in its namespace)")]
    NoInterface {
        /// The interface name opened (a veth peer's with its "p").
        iface: String,
    },
    /// A setup step that has no DPDK error code (e.g. flow steering refused).
    #[error("{0}")]
    Setup(String),
}
