//! The configuration the engine owns: the `[transport]` section every tool
//! reads (rpc-server, rpc-client, rpc-bench, rpc-lab) as one serde type,
//! [`TransportConfig`], with one default per key and one validation
//! ([`TransportConfig::validate`]) whose every refusal names the user's key
//! and its limit ([`KeyError`]); and the one resolution step, [`resolve`],
//! that turns it and what is known of the link (MTU, receive ring, a
//! measured rate and round trip, or nothing measured) and of the run
//! (sessions per worker, window, request size) into the settings every
//! endpoint of the run uses ([`Resolved`]), each value with where it came
//! from ([`Source`]: default, file, flag, measured, derived).
//!
//! The `[link]` and `[cores]` keys are the runtime's builder's: its setters
//! mirror them and its refusals name them (`runtime::BuilderError::key`).
//!
//! Contract: a config that [`resolve`] accepts gives endpoint
//! configurations that `EndpointConfig::validate` accepts (the protocol
//! core's own guard, for endpoints built by hand); tools never translate an
//! endpoint's refusal back into keys.

mod check;
mod endpoint;
mod idle;
mod resolve;
mod ring;
mod source;
mod transport;

pub use check::{at_most, positive, range, KeyError};
pub use endpoint::Site;
pub use idle::{
    IdleMode, IdlePolicy, DEFAULT_IDLE_AFTER_US, DEFAULT_IDLE_SLEEP_US, MAX_IDLE_AFTER_US,
    MAX_IDLE_SLEEP_US, MIN_IDLE_SLEEP_US,
};
pub use resolve::{
    resolve, Bdp, Facts, Load, Measured, Resolved, PAUSE_BURST_ENTRIES, SERVICE_NS_PER_PKT,
};
pub use source::{Origins, Setting, Source};
pub use transport::{
    BdpSource, CreditMultiple, DcqcnSet, TransportConfig, ADMISSION_KEYS, LINK_KEYS, REGIME_KEYS,
};
