//! Running: one process's server or client (`node`) with its workloads,
//! `rpc-bench`'s orchestration of the two as child processes (`bench`,
//! `child`), and the few libc calls behind safe wrappers (`sys`).

pub mod bench;
pub mod child;
pub mod node;
pub mod sys;
pub mod workload;
