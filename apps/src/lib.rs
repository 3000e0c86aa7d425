//! Shared code of the binaries: link and EAL flags, child processes, latency
//! histograms, the raw floor benchmark, and the front end of the simulated
//! fabric lab (`fabric`, `fabric_plot`, `fabric_stats`, `fabric_table`).

pub mod attacks;
pub mod bdp;
pub mod bench;
pub mod child;
pub mod cli;
pub mod compare;
pub mod config;
pub mod enginecost;
pub mod fabric;
pub mod fabric_plot;
pub mod fabric_stats;
pub mod fabric_table;
pub mod floor;
pub mod hist;
pub mod hostile;
pub mod inject;
pub mod kudp;
pub mod link;
pub mod node;
pub mod plot;
pub mod portcheck;
pub mod report;
pub mod stream_rate;
pub mod sys;
pub mod workload;
