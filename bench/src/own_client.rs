//! Sizing a run whose both sides rpc-bench starts for its own client:
//!
//! - the receive ring: lossless sessions each reserve (credits + 1) ring
//!   entries, and pause mode needs its headroom below the ring's top, so a
//!   run with many sessions needs a bigger ring than the 1,024-entry
//!   default. `link.rx_desc` is raised to fit (never lowered); when even
//!   the largest ring cannot hold the BDP's credits, credits the user did
//!   not set are lowered; what cannot fit is refused, naming the keys and
//!   the way out, before any process starts;
//! - the retransmission timeout: a thousand sessions with a window of 8
//!   queue 8,000 requests at one server worker, about 10 ms of work, so a
//!   5 ms timeout fires on packets that are only queued, and lossless
//!   mode's probe then reports losses that never happened. `transport.rto_us`
//!   is raised to twice the worst queue the run can build.
//!
//! [`load`] reads such a run's configuration (both roles, the server
//! trusting its own client) and applies both fits; [`OwnClient`] gives the
//! apps' [`Config`] the fits as methods.

use apps::config::cli::{ConfigArgs, Shortcuts};
use apps::config::link::LinkKind;
use apps::config::{Config, Mode, ValidationEnv, MAX_DESC};
use engine::proto::lossless_ring_entries;
use engine::runtime::MEMIF_MAX_RING;

/// What one small request costs a server worker on these virtual devices,
/// rounded up: 2.4 Mrps per core is 0.42 us (docs/results.md), and the
/// VM's stalls stretch it. Only used to size timeouts, with a 2x margin.
const SERVICE_NS_PER_PKT: u64 = 1_000;

/// What [`OwnClient::fit_ring`] and [`OwnClient::fit_rto`] changed, for a
/// line on stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingFit {
    /// `link.rx_desc` raised to this.
    pub rx_desc: Option<u32>,
    /// BDP-derived credits lowered to this (lossless, user left them unset).
    pub credits: Option<u16>,
    /// `transport.rto_us` raised to this.
    pub rto_us: Option<u64>,
}

impl RingFit {
    /// One line saying what changed and why, or None when nothing did.
    pub fn describe(&self, cfg: &Config) -> Option<String> {
        let sessions = ring_sessions(cfg);
        let mut parts = Vec::new();
        if let Some(r) = self.rx_desc {
            parts.push(format!("link.rx_desc raised to {r}"));
        }
        if let Some(c) = self.credits {
            parts.push(format!(
                "transport.credits lowered to {c} (the BDP's do not fit the largest ring, {})",
                cfg.largest_rx_ring()
            ));
        }
        let mut lines = Vec::new();
        if !parts.is_empty() {
            lines.push(format!(
                "{} so {sessions} {} session(s) per worker fit the receive ring",
                parts.join(", "),
                cfg.transport.mode.as_str()
            ));
        }
        if let Some(rto) = self.rto_us {
            lines.push(format!(
                "transport.rto_us raised to {rto} (twice the {} packets {sessions} session(s) can queue at one server worker, at ~1 us each), so queued packets are not taken for lost ones",
                cfg.queued_packets()
            ));
        }
        (!lines.is_empty()).then(|| lines.join("\nrpc-bench: "))
    }
}

/// Loads `args` for a run whose both roles rpc-bench starts (its server
/// trusts its client), fits the ring and the timeout to it
/// ([`OwnClient::fit_ring`], [`OwnClient::fit_rto`]; what changed goes to
/// stderr), then validates.
pub fn load<C: Shortcuts>(args: &ConfigArgs<C>) -> anyhow::Result<Config> {
    let mut cfg = Config::load(args.config.as_deref(), &args.overrides())?;
    let env = ValidationEnv::detect();
    cfg.trust_own_client();
    let mut fit = cfg
        .fit_ring()
        .map_err(|e| anyhow::anyhow!("invalid config: {e}"))?;
    cfg.fit_rto(&mut fit);
    if let Some(line) = fit.describe(&cfg) {
        eprintln!("rpc-bench: {line}");
    }
    cfg.validate(&env)?;
    Ok(cfg)
}

/// Sessions that share one endpoint's ring: a client thread's, or the
/// busiest server worker's, whichever is more.
fn ring_sessions(c: &Config) -> u64 {
    (c.workload.sessions_per_thread as u64)
        .max(c.max_sessions_per_server_worker() as u64)
        .max(1)
}

/// The sizing of a run rpc-bench starts both sides of, on the apps'
/// [`Config`].
pub trait OwnClient {
    /// Packets the client can have waiting at one server worker: every
    /// session's window of requests, each as many packets as its size
    /// needs but no more than its credits, and never more than the ring.
    fn queued_packets(&self) -> u64;

    /// Raises `transport.rto_us` to twice the time one server worker takes
    /// to drain [`Self::queued_packets`]; never lowers it.
    fn fit_rto(&mut self, fit: &mut RingFit);

    /// The largest receive ring this link takes: DPDK 22.11's memif holds
    /// at most 16,384 entries, the others the engine's limit.
    fn largest_rx_ring(&self) -> u64;

    /// Lossless mode needs (credits + 1) x sessions <= rx_desc; pause mode
    /// with derived thresholds needs its headroom + 2 entries (XON < XOFF
    /// below it). Raises `rx_desc` to the next power of two that fits
    /// (at most [`Self::largest_rx_ring`]); in lossless mode with credits left to the
    /// BDP, lowers them to what the largest ring backs. Errs, saying what
    /// would fit, when even one credit per session does not.
    fn fit_ring(&mut self) -> Result<RingFit, String>;
}

impl OwnClient for Config {
    fn queued_packets(&self) -> u64 {
        let payload = (self.link.mtu as u64)
            .saturating_sub(engine::wire::HEADERS_LEN as u64)
            .max(1);
        let per_req = self.workload.req_size.div_ceil(payload).max(1);
        let per_session = (self.window() as u64 * per_req).min(self.effective_credits() as u64);
        (per_session * ring_sessions(self)).min(self.link.rx_desc as u64)
    }

    fn fit_rto(&mut self, fit: &mut RingFit) {
        let need_us = 2 * self.queued_packets() * SERVICE_NS_PER_PKT / 1_000;
        if need_us > self.transport.rto_us {
            self.transport.rto_us = need_us;
            fit.rto_us = Some(need_us);
        }
    }

    fn largest_rx_ring(&self) -> u64 {
        match self.link.kind {
            LinkKind::Memif => MEMIF_MAX_RING as u64,
            _ => MAX_DESC as u64,
        }
    }

    fn fit_ring(&mut self) -> Result<RingFit, String> {
        let mut fit = RingFit::default();
        let sessions = ring_sessions(self);
        let largest = self.largest_rx_ring();
        let (need, what) = match self.transport.mode {
            Mode::Lossless => {
                let mut credits = self.effective_credits();
                let per_session = largest / sessions;
                if lossless_ring_entries(credits) as u64 > per_session
                    && self.transport.credits.is_none()
                    && per_session >= lossless_ring_entries(1) as u64
                {
                    credits = (per_session - 1).min(u16::MAX as u64) as u16;
                    self.transport.credits = Some(credits);
                    fit.credits = Some(credits);
                }
                let need = lossless_ring_entries(credits) as u64 * sessions;
                let most = largest / lossless_ring_entries(1) as u64;
                (
                    need,
                    format!(
                        "lossless mode with {credits} credit(s) x {sessions} session(s) per worker; at most {most} lossless sessions per worker fit the largest ring (1 credit + 1 probe entry each): lower workload.sessions_per_thread, add cores, or use transport.mode = \"lossy\""
                    ),
                )
            }
            Mode::Pause if self.transport.pause_xoff.is_none() => {
                let headroom = self.pause_headroom();
                (
                    headroom as u64 + 2,
                    format!("pause mode with a headroom of {headroom} entries"),
                )
            }
            _ => return Ok(fit),
        };
        if need <= self.link.rx_desc as u64 {
            return Ok(fit);
        }
        let ring = need.next_power_of_two();
        if ring > largest {
            return Err(format!(
                "{what}: it needs a {need}-entry receive ring, more than the largest this link takes (link.rx_desc <= {largest})"
            ));
        }
        self.link.rx_desc = ring as u32;
        fit.rx_desc = Some(ring as u32);
        Ok(fit)
    }
}

#[cfg(test)]
mod tests {
    use super::OwnClient;
    use crate::testutil::with;

    #[test]
    fn a_thousand_lossless_sessions_get_a_ring_that_backs_their_credits() {
        let mut c = with(&[
            "workload.kind=\"throughput\"",
            "workload.sessions_per_thread=1000",
        ])
        .unwrap();
        let bdp = c.effective_credits();
        let fit = c.fit_ring().unwrap();
        assert_eq!(fit.credits, None, "the BDP's {bdp} credits fit 16384");
        let ring = fit.rx_desc.expect("raised");
        assert!((bdp as u32 + 1) * 1000 <= ring && ring <= 16384, "{ring}");
        assert!(fit.describe(&c).unwrap().contains("link.rx_desc raised to"));
        assert_eq!(c.link.rx_desc, ring);
    }

    #[test]
    fn many_sessions_raise_the_timeout_past_their_queue_and_few_do_not() {
        let mut c = with(&[
            "workload.kind=\"throughput\"",
            "workload.sessions_per_thread=1000",
        ])
        .unwrap();
        let mut fit = c.fit_ring().unwrap();
        // 1000 sessions x window 8 one-packet requests: 8,000 queued.
        assert_eq!(c.queued_packets(), 8000);
        c.fit_rto(&mut fit);
        assert_eq!(fit.rto_us, Some(16_000));
        assert_eq!(c.transport.rto_us, 16_000);
        assert!(fit
            .describe(&c)
            .unwrap()
            .contains("transport.rto_us raised to 16000"));
        let mut few = with(&[
            "workload.kind=\"throughput\"",
            "workload.sessions_per_thread=4",
        ])
        .unwrap();
        let mut fit = few.fit_ring().unwrap();
        few.fit_rto(&mut fit);
        assert_eq!((fit.rto_us, few.transport.rto_us), (None, 5000));
        // 8 MiB requests: bounded by credits, not by the request's packets.
        let large = with(&[
            "workload.kind=\"large\"",
            "workload.req_size=8388608",
            "workload.sessions_per_thread=64",
        ])
        .unwrap();
        let credits = large.effective_credits() as u64;
        assert_eq!(large.queued_packets(), credits * 64);
    }

    #[test]
    fn past_the_largest_ring_bdp_credits_are_lowered_and_set_ones_refused() {
        let mut c = with(&["workload.sessions_per_thread=4000"]).unwrap();
        let fit = c.fit_ring().unwrap();
        assert_eq!(
            fit.credits,
            Some(3),
            "16384 / 4000 = 4 entries: 3 credits + probe"
        );
        assert_eq!(fit.rx_desc, Some(16384));
        let mut set = with(&["workload.sessions_per_thread=4000", "transport.credits=9"]).unwrap();
        let e = set.fit_ring().unwrap_err();
        assert!(
            e.contains("9 credit(s) x 4000") && e.contains("link.rx_desc <= 16384"),
            "{e}"
        );
    }

    #[test]
    fn too_many_lossless_sessions_are_refused_with_the_way_out() {
        let mut c = with(&["workload.sessions_per_thread=20000"]).unwrap();
        let e = c.fit_ring().unwrap_err();
        assert!(
            e.contains("at most 8192 lossless sessions") && e.contains("\"lossy\""),
            "{e}"
        );
        let mut lossy = with(&[
            "workload.sessions_per_thread=20000",
            "transport.mode=\"lossy\"",
        ])
        .unwrap();
        assert_eq!(lossy.fit_ring(), Ok(Default::default()));
    }

    #[test]
    fn a_ring_that_fits_is_left_alone() {
        let mut c = with(&[]).unwrap();
        assert_eq!(c.fit_ring(), Ok(Default::default()));
        assert_eq!(c.link.rx_desc, 1024);
    }
}
