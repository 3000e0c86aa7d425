//! The application on the fabric's hosts: a flow of `size` bytes from
//! `src` to `dst` is sent as requests on one session (chunks of at most the
//! endpoint's largest message), each answered with a small response; the
//! flow completes when the last answer is back. Also the flow's ideal
//! completion time, alone on the empty fabric.

use super::config::ser_ns as ser;
use super::scenario::Flow;
use super::topology::Topology;
use super::{FabricConfig, HostEps, ETH_OVERHEAD};
use engine::proto::{Delivery, Endpoint, Event, SessionId};
use engine::time::{Duration, Instant};
use std::collections::HashMap;

/// Bytes of a flow's largest request: a flow is a stream of requests of
/// this size (the last smaller), so the buffers in flight stay small and
/// are reused, whatever the flow's size.
pub(super) const MAX_CHUNK: usize = 8 << 20;

/// Bytes of every response.
pub(super) const RESP_LEN: usize = 16;

#[derive(Clone, Debug)]
pub(super) struct FlowState {
    pub spec: Flow,
    pub started: Option<Instant>,
    pub end: Option<Instant>,
    /// Requests queued and not yet answered.
    chunks_left: u32,
    /// Bytes not yet queued as requests.
    unsent: u64,
    session: Option<SessionId>,
    pub failed: bool,
}

/// Every flow of a run and the sessions they use.
#[derive(Debug)]
pub(super) struct Flows {
    pub flows: Vec<FlowState>,
    sessions: HashMap<(u32, u32), SessionId>,
    max_chunk: usize,
    /// Requests a flow keeps queued at once (the session's request window:
    /// more would only wait in the endpoint's backlog, holding buffers).
    window: usize,
    /// Flows neither complete nor failed.
    open: usize,
}

impl Flows {
    pub fn new(specs: &[Flow], max_chunk: usize, window: usize) -> Flows {
        Flows {
            flows: specs
                .iter()
                .map(|f| FlowState {
                    spec: *f,
                    started: None,
                    end: None,
                    chunks_left: 0,
                    unsent: 0,
                    session: None,
                    failed: false,
                })
                .collect(),
            sessions: HashMap::new(),
            max_chunk: max_chunk.max(1),
            window: window.max(1),
            open: specs.len(),
        }
    }

    /// Whether every flow has completed or failed.
    pub fn all_done(&self) -> bool {
        self.open == 0
    }

    /// Flows neither complete nor failed.
    pub fn open(&self) -> usize {
        self.open
    }

    /// Opens one session per (src, dst) pair the flows use, in flow order.
    pub fn connect(&mut self, eps: &mut HostEps<'_>, now: Instant) -> Result<(), String> {
        for f in &self.flows {
            let key = (f.spec.src as u32, f.spec.dst as u32);
            if self.sessions.contains_key(&key) {
                continue;
            }
            let peer = super::host_addr(f.spec.dst).into();
            let s = eps.ep(f.spec.src).connect(now, peer).map_err(|e| {
                format!(
                    "host {} cannot open a session to host {}: {e}",
                    key.0, key.1
                )
            })?;
            self.sessions.insert(key, s);
        }
        Ok(())
    }

    /// Starts flow `f`: queues its first requests. Returns the sending host.
    pub fn start(&mut self, f: usize, now: Instant, eps: &mut HostEps<'_>) -> Option<usize> {
        let st = &mut self.flows[f];
        st.started = Some(now);
        st.unsent = st.spec.size.max(1);
        let (src, dst) = (st.spec.src, st.spec.dst);
        let Some(&s) = self.sessions.get(&(src as u32, dst as u32)) else {
            // `connect` opened every pair's session or failed the run.
            st.failed = true;
            self.open -= 1;
            return None;
        };
        st.session = Some(s);
        let ep = eps.ep(src);
        for _ in 0..self.window {
            self.send_chunk(f, now, ep);
        }
        Some(src)
    }

    /// Queues flow `f`'s next chunk, if any is left, as one request.
    fn send_chunk(&mut self, f: usize, now: Instant, ep: &mut Endpoint) {
        let st = &mut self.flows[f];
        let Some(s) = st.session.filter(|_| st.unsent > 0 && !st.failed) else {
            return;
        };
        let len = st.unsent.min(self.max_chunk as u64);
        st.unsent -= len;
        let msg = ep.alloc_msg(len as usize);
        if ep.enqueue_request(now, s, 1, msg, f as u64).is_err() {
            st.failed = true;
            if st.end.is_none() {
                self.open -= 1;
            }
            return;
        }
        st.chunks_left += 1;
    }

    /// A request (answer it) or a response (count it) reached host `h`.
    pub fn on_delivery(&mut self, _h: usize, now: Instant, ep: &mut Endpoint, d: Delivery<'_>) {
        match d {
            Delivery::Request { handle, .. } => {
                let m = ep.alloc_msg(RESP_LEN);
                // A failed answer leaves the client to time out; the counts
                // show it as a failed flow.
                let _ = ep.respond(now, handle, m);
            }
            Delivery::Response { tag, .. } => {
                let Some(st) = self.flows.get_mut(tag as usize) else {
                    return;
                };
                st.chunks_left = st.chunks_left.saturating_sub(1);
                if st.unsent > 0 {
                    self.send_chunk(tag as usize, now, ep);
                } else if st.chunks_left == 0 && st.end.is_none() && !st.failed {
                    st.end = Some(now);
                    self.open -= 1;
                }
            }
        }
    }

    /// An endpoint event of host `h`: a failed request fails its flow.
    pub fn on_event(&mut self, _h: usize, _now: Instant, ev: Event) {
        if let Event::RequestFailed { tag, .. } = ev {
            if let Some(st) = self.flows.get_mut(tag as usize) {
                if !st.failed && st.end.is_none() {
                    st.failed = true;
                    self.open -= 1;
                }
            }
        }
    }
}

/// How long `size` bytes from `src` to `dst` take alone on the empty
/// fabric, answer included: the request's frames pipelined through every
/// hop (the slowest link paces them; each hop adds one frame's store and
/// forward), the propagation delays, and the small answer back. A lower
/// bound: the endpoint's credits and its own packet overheads come on top.
pub(super) fn ideal_fct(
    cfg: &FabricConfig,
    topo: &Topology,
    data_per_pkt: usize,
    src: usize,
    dst: usize,
    size: u64,
) -> Duration {
    let rates = cfg.path_rates(topo, src, dst);
    let hdr = (cfg.mtu + ETH_OVERHEAD - data_per_pkt) as u64;
    let dpp = data_per_pkt as u64;
    let size = size.max(1);
    let pkts = size.div_ceil(dpp);
    let full = dpp + hdr;
    let last = size - (pkts - 1) * dpp + hdr;
    let slowest = rates.iter().copied().min().unwrap_or(1);
    let delay = cfg.link_delay.as_nanos();
    let hops = rates.len() as u64;
    let resp = RESP_LEN as u64 + hdr;
    let ns = (pkts - 1) * ser(full, slowest)
        + rates.iter().map(|&r| ser(last, r)).sum::<u64>()
        + rates.iter().map(|&r| ser(resp, r)).sum::<u64>()
        + 2 * hops * delay;
    Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_fct_of_one_packet_and_of_many() {
        let cfg = FabricConfig::default();
        let star = Topology::Star { hosts: 2 };
        // 1444 data bytes per frame at mtu 1500: 70 bytes of headers.
        let dpp = cfg.mtu - engine::proto::PKT_OVERHEAD;
        assert_eq!(dpp, 1444);
        let one = ideal_fct(&cfg, &star, dpp, 0, 1, 100);
        // 170 B twice at 80 ps/B (13.6 ns, rounded up), 86 B twice, 4
        // delays of 1 us.
        assert_eq!(one.as_nanos(), 2 * 14 + 2 * 7 + 4000);
        let many = ideal_fct(&cfg, &star, dpp, 0, 1, dpp as u64 * 100);
        // 99 full frames paced at 100 Gb/s (121.12 ns each) come first.
        assert!(many.as_nanos() > 99 * 121 + 4000, "{many:?}");
    }
}
