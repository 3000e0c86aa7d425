//! Shared code of the binaries: link and EAL flags, child processes, latency
//! histograms, the raw floor benchmark.

pub mod child;
pub mod floor;
pub mod hist;
pub mod link;
pub mod node;
pub mod portcheck;
pub mod workload;
