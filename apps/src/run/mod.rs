//! Running: one process's server or client (`node`; rpc-client on a plain
//! UDP socket, `kernel`) with its workloads
//! (`workload`, over the message format of `message`, each client's
//! completions in a `tally`) and the server's
//! exit summary (`summary`),
//! the counters its workers publish while they run (`live`, read as
//! `interval` records) and the
//! server's OpenMetrics endpoint over them (`metrics`), and the
//! few libc calls behind safe wrappers (`sys`); before a run, the wait for
//! the peer that a signal ends (`waiting`). `rpc-bench` runs the two
//! as child processes (the `bench` crate's `run`).

pub mod interval;
pub mod kernel;
pub mod live;
pub mod message;
pub mod metrics;
pub mod node;
pub mod server_events;
pub mod summary;
pub mod sys;
pub mod tally;
pub mod waiting;
pub mod workload;
