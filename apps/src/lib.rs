//! Shared code of the binaries: link and EAL flags, child processes, latency
//! histograms, the raw floor benchmark. (`rpc-bench fabric` is the `lab`
//! crate's command, `lab::cli`.)

pub mod attacks;
pub mod bdp;
pub mod bench;
pub mod child;
pub mod cli;
pub mod compare;
pub mod config;
pub mod enginecost;
pub mod floor;
pub mod hist;
pub mod hostile;
pub mod inject;
pub mod kudp;
pub mod link;
pub mod node;
pub mod pin_attack;
pub mod plot;
pub mod portcheck;
pub mod report;
pub mod stream_rate;
pub mod sys;
pub mod workload;
