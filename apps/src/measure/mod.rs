//! Measuring: the latency histograms every figure is read from (`hist`,
//! one HdrHistogram per worker). What `rpc-bench` measures around the RPC
//! runs (the raw floor, the kernel baseline, the engine's own cost, the
//! BDP) is the `bench` crate's.

pub mod hist;
