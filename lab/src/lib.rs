//! The fabric lab: a research harness, not part of the transport. It runs
//! the engine's own [`engine::proto::Endpoint`]s, unchanged, as hosts of a
//! deterministic virtual-time datacenter fabric (switches with shared
//! buffers, PFC, link credits, ECN, ECMP or spraying) under named regime
//! presets, and reports flow completion, drops by place, pauses, marks and
//! resends. It uses the engine through its public API only.
//!
//! - [`fabric`]: the simulator, its regimes, scenarios and metrics.

#![deny(missing_docs)]

pub mod fabric;
