//! Shared code of the binaries rpc-server, rpc-client and rpc-hostile
//! (config in, report out), laid out by stage: `config` (the TOML file,
//! the command line, the link flags, and the one seam to the engine), `run`
//! (the server and client processes and their workloads), `measure` (the
//! latency histograms), `report` (run reports, their output convention and
//! plots), `hostile` (the malformed mix and the protocol attacks of
//! `rpc-hostile`), and `exit` (how every binary ends: its exit status,
//! Ctrl-C). The benchmark harness, `rpc-bench`, is the `bench`
//! crate, over this one.

pub mod config;
pub mod exit;
pub mod hostile;
pub mod measure;
pub mod report;
pub mod run;
