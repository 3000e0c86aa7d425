//! Shared code of the binaries, laid out by stage: `config` (the TOML
//! file, the command line, the link flags, and the one seam to the engine),
//! `run` (the server and client processes, their workloads, `rpc-bench`'s
//! orchestration of child processes), `measure` (the raw floor, the kernel
//! baseline, the engine's own cost, the BDP, latency histograms),
//! `compare` (modes, sweeps and incasts side by side), `report` (run
//! reports and plots), and `hostile` (the malformed mix and the protocol
//! attacks of `rpc-hostile`). `rpc-bench fabric` is the `lab` crate's
//! command (`lab::cli`).

pub mod compare;
pub mod config;
pub mod hostile;
pub mod measure;
pub mod report;
pub mod run;
