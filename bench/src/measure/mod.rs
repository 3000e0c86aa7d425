//! Measuring what the RPC layer is compared against: the raw DPDK floor
//! and its robust rates (`floor`, `stream_rate`; its text, `floor_report`), the kernel UDP baseline
//! (`kudp`), the engine's own cost with no wire (`enginecost`), the
//! link measured once per invocation (`link`) and the resolution on it (`bdp`) and one port's bring-up (`portcheck`).
//! The latency histograms every figure is read from are the apps'
//! (`apps::measure::hist`).

pub mod bdp;
pub mod enginecost;
pub mod floor;
pub mod floor_report;
pub mod kudp;
pub mod link;
pub mod portcheck;
pub mod stream_rate;
