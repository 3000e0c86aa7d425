//! Running: one process's server or client (`node`) with its workloads
//! and the server's exit summary (`summary`),
//! the counters its workers publish while they run (`live`, read as
//! `interval` records) and the
//! server's OpenMetrics endpoint over them (`metrics`), `rpc-bench`'s
//! orchestration of the two as child processes (`bench`, `child`), and the
//! few libc calls behind safe wrappers (`sys`).

pub mod bench;
pub mod child;
pub mod interval;
pub mod live;
pub mod metrics;
pub mod node;
pub mod summary;
pub mod sys;
pub mod workload;
