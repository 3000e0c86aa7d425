//! Running `rpc-bench`'s server and client (the apps' `run::node`, the
//! same code rpc-server and rpc-client run) as two child processes of this
//! binary pinned to their cores (`bench`), and the children themselves:
//! started with their stdout captured, stopped on drop, error or Ctrl-C
//! (`child`); what else ran on their pinned cores meanwhile
//! (`contention`); and `--repeat`'s runs with each figure's spread
//! (`repeat`).

pub mod bench;
pub mod child;
pub mod contention;
pub mod repeat;
