//! The regime comparison of `rpc-bench`: one workload run in each of the
//! named regimes (`lossless`, `pause`, `lossy`, `irn`; see [`regimes`]) on
//! the same link (`compare`), one run per credit value (`sweep`), and N
//! sessions of one client thread converging on one server thread
//! (`incast`).
//!
//! Every run is an ordinary `rpc-bench run` pair ([`crate::run::bench::run_pair`]); this
//! module only derives the per-regime configurations, reads the kernel qdisc
//! counters around each run, and sorts the drops by source:
//!
//! - injected: the seeded fault injectors of the client and the server;
//! - rx ring overflow: the driver's `rx_missed` of either side (af_packet:
//!   the kernel's count of frames its receive ring had no room for);
//! - qdisc: drops of a `tbf` (or any root qdisc) on the path, read with
//!   `tc -s qdisc` before and after the run. On a *switch port* (the middle
//!   hop of `scripts/veth.sh up NAME --switch`) a dropped frame is lost. On
//!   the *sender's own egress* (a qdisc on the interface af_packet sends on,
//!   `scripts/veth.sh --rate` without `--switch`) the kernel refuses the
//!   frame and af_packet leaves it in its TX ring to be sent again: the
//!   sender stalls, nothing is lost. Both are counted, separately;
//! - protocol discards: frames that arrived and were dropped by the
//!   protocol (duplicates of retransmissions, stale answers, ...).
//!
//! "Lost" is injected + rx ring overflow + switch-port qdisc drops: frames
//! that left a sender and never arrived. Loss rate = lost / frames sent by
//! both endpoints.
//!
//! Every run also reports, from both sides' engine counters, how it
//! repaired loss and throttled its senders ([`RecoveryCounters`]:
//! retransmitted packets, spurious timeouts, pause frames, paused time, ECN
//! marks, CNPs).
//!
//! Layout: [`regimes`] (the regimes and per-regime overrides), [`run`] (one
//! measured run, `compare`), [`sweep`], [`size_sweep`] (`sweep
//! --msg-sizes`), [`incast`], [`stream`] (the multi-point loop: every
//! point written as it finishes, Ctrl-C keeps the finished ones), [`tc`]
//! (qdisc parsing), [`probes`] (host probes), [`report`] (drop sources, counters,
//! tables, plots), [`recovery_counters`] (the recovery and flow-control counters).

mod incast;
mod probes;
mod recovery_counters;
mod regimes;
mod report;
mod run;
mod size_sweep;
mod stream;
mod sweep;
mod sweep_args;
mod tc;

pub use incast::{incast_cmd, IncastArgs};
pub use probes::{cpu_steal, default_probes, parse_cpu_steal, QdiscProbe};
pub use recovery_counters::RecoveryCounters;
pub use regimes::{
    for_flow_mode, parse_regime, parse_regime_set, parse_regimes, ApplyRegime, Regime,
    RegimeOverrides,
};
pub use report::{
    packets_sent, render_drop_sources, render_recovery, DropSources, Point, QDISC_SENDER,
    QDISC_SWITCH,
};
pub use run::{compare_cmd, measure, Bases, CompareArgs, MeasureArgs};
pub use size_sweep::size_text;
pub use stream::PointsOut;
pub use sweep::sweep_cmd;
pub use sweep_args::{parse_credit_list, parse_msg_size, CreditSpec, RespSizes, SweepArgs};
pub use tc::{parse_tc_qdisc, QdiscStats};
