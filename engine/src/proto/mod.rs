//! The sans-IO protocol core: an eRPC-style RPC endpoint with sessions,
//! session credits, multi-packet messages, go-back-N loss recovery and a
//! lossless/lossy mode. No I/O, no clock reads, no threads: frames come in
//! through [`Endpoint::handle_frame`] with a caller-supplied [`Instant`],
//! and go out through [`Endpoint::poll_transmit`] into caller-lent buffers.
//! The DPDK run loop and the in-memory link (`crate::sim`) are two drivers
//! of the same code.
//!
//! One concern per file, and imports only run downwards (no cycles):
//!
//! - leaves: `addr` (endpoint and peer addresses, their defaults),
//!   `config` (configuration and limits), `settings` (the config
//!   and what derives from it), `admission` (what a server lets one peer
//!   hold and replace), `gate` (the handshake's state), `budget` (memory
//!   and ring bounds and their accounting), `output` (events and counters),
//!   `pacing` (the pacer and whether to pace), `recovery` (the timer heap,
//!   the loss timeouts with the one RTO rule, the busy counts), `error`, `stats`
//!   (counters), `msgbuf` (message buffers, their pool, and
//!   `PayloadCopy`: how payload bytes move, a type the caller of
//!   `handle_frame_with` and `poll_transmit_with` picks), `state` (the
//!   transition table and its effects), `ids` (session and request handles),
//!   `event` (deliveries and events), `frame` (message geometry and frame
//!   writing), `txq` (transmit descriptors and queues), `rccc` (the
//!   server's pacer of credit returns, receiver credit control);
//! - sessions: `session` (what both roles share), `client` and `server`
//!   (each role's slots), `table` (the session table with typed lookups);
//! - per-role protocol: `client_rx`, `client_tx`, `server_rx`, `server_tx`,
//!   each a method set on its session type that reports an outcome, and
//!   `trim` (both roles' answer to a frame a switch trimmed);
//! - the endpoint: `endpoint` (its eight concerns, getters, frame
//!   dispatch), and beside
//!   it `lifecycle` (the one place state changes, running the table's
//!   effects), `handshake` (connect and disconnect), `requests` (request
//!   commands and completion), `transmit` (`poll_transmit` and scheduling),
//!   `loss` (what each session's timer does: rollback, reset, handshake
//!   retries, keepalives, reclamation), over `timers` (the deadline heap).
//!
//! [`Instant`]: crate::time::Instant

mod addr;
mod admission;
mod budget;
mod cc;
mod client;
mod client_rx;
mod client_sack;
mod client_tx;
mod config;
mod congestion;
pub mod defaults;
mod endpoint;
mod error;
mod event;
mod frame;
mod gate;
mod handshake;
pub mod hint;
mod ids;
mod lifecycle;
mod loss;
mod mac_shares;
mod msgbuf;
mod nak;
mod output;
mod pacing;
mod pause;
mod pause_peers;
mod police;
mod policing;
mod prefetch;
mod rccc;
mod rccc_grant;
mod recovery;
mod requests;
mod ring_grant;
mod rx_checked;
mod sack;
mod secrets;
mod server;
mod server_rx;
mod server_tx;
mod session;
mod settings;
mod state;
mod stats;
mod table;
mod timers;
mod transmit;
mod trim;
mod txq;
mod wrong_tokens;

pub use crate::wire::ErrorCode;
pub use admission::{Admission, RESERVE_SPLIT};
pub use budget::{MemBudget, DEFAULT_POOL_KEEP};
pub use config::{
    bdp_credits, lossless_ring_entries, os_seed, CcKind, DcqcnParams, EndpointAddr, EndpointConfig,
    FlowMode, LossPolicy, PauseConfig, PeerAddr, Retransmit, SackRule, DEFAULT_IP,
    DEFAULT_MAX_MSG_SIZE, DEFAULT_UDP_PORT, MAX_MTU, MAX_PKTS_PER_MSG, MAX_REQ_WINDOW,
    MAX_SESSIONS, MIN_MTU, PKT_OVERHEAD, RTO_LOW_MAX_IN_FLIGHT,
};
pub use endpoint::Endpoint;
pub use error::{refusal_reason, EndpointConfigError, RpcError};
pub use event::{Delivery, Event, Payload, ViolatorReport};
pub use ids::{ReqHandle, SessionId};
pub use mac_shares::MacUse;
pub use msgbuf::{CopyBytes, MsgBuf, MsgPool, PayloadCopy, PoolStats};
pub use police::Policing;
pub use secrets::{SecretKey, COOKIE_EPOCH};
pub use state::{
    transition, Effect, EventKind, FailCause, InvalidTransition, Next, SessionInput, SessionState,
    Step,
};
pub use stats::{Drops, SessionCounts, Stats};
pub use wrong_tokens::WrongTokenReport;
