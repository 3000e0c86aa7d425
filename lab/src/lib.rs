//! The fabric lab: a research harness beside the transport, not part of it.
//! It runs the engine's own [`engine::proto::Endpoint`]s, unchanged, as the
//! hosts of a deterministic virtual-time datacenter fabric (switches with
//! shared buffers, PFC, link credits, ECN, ECMP or spraying) under named
//! regimes, and reports flow completion, drops by place, pauses,
//! marks and resends. It uses the engine through its public API only
//! (and `slot-lists`' occupancy bits, which its event queue shares with
//! the engine's pacer), and no DPDK.
//!
//! - [`fabric`]: the simulator, its regimes, scenarios and metrics.
//! - [`cli`]: the command, `rpc-lab` (and `rpc-bench fabric`, which hands
//!   its flags to [`cli::run_until`]): flags and `-c` file
//!   ([`settings`]) to a plan, the runs (Ctrl-C keeps the regimes that
//!   finished), the report; [`table`] (text tables), [`seeds`] (statistics across
//!   seeds and their JSON) and [`plot`] (the SVG chart) are what it prints;
//!   [`meta`] stamps its JSON with the build, the time and the machine;
//!   [`jobs`] runs the (seed, regime) pairs, on `--jobs N` threads, and
//!   [`progress`] draws their live line; [`malloc`] sets glibc's
//!   allocator up for large fabrics (huge pages, untouched buffers).

#![deny(missing_docs)]

pub mod cli;
pub mod fabric;
pub mod jobs;
pub mod malloc;
pub mod meta;
pub mod plot;
pub mod progress;
pub mod seeds;
pub mod settings;
pub mod table;
