//! State-machine and bookkeeping tests: the session transition table as a
//! snapshot (s2n-quic style), and property tests of the message-buffer pool
//! and of the client's slot/window/backlog assignment against trivially
//! correct models.

use crate::proto_common::*;
use engine::fault::DropModel;
use engine::proto::{transition, EndpointConfig, FlowMode, MsgPool, SessionInput, SessionState};
use engine::sim::ChannelConfig;
use engine::time::Duration;
use proptest::prelude::*;
use std::collections::{HashMap, VecDeque};

/// The declared table: every (state, input) with where it leads and the
/// effects the endpoint runs, in order. `proto_transitions.rs` checks that
/// the engine does this for every valid row.
const TRANSITIONS: &str = "\
Connecting    + ConnectOk       -> To(Connected) [EndHandshake, Emit(Connected), Schedule]
Connecting    + ConnectRefused  -> Freed [EndHandshake, FailRequests(Closed), Free, Emit(ConnectFailed)]
Connecting    + ConnectTimeout  -> Freed [EndHandshake, FailRequests(Closed), Free, Emit(ConnectFailed)]
Connecting    + Disconnect      -> invalid
Connecting    + DisconnectDone  -> invalid
Connecting    + PeerDisconnect  -> invalid
Connecting    + Reset           -> invalid
Connecting    + IdleTimeout     -> invalid
Connected     + ConnectOk       -> invalid
Connected     + ConnectRefused  -> invalid
Connected     + ConnectTimeout  -> invalid
Connected     + Disconnect      -> To(Disconnecting) [StartHandshake, FailRequests(Closed), SendDisconnectReq]
Connected     + DisconnectDone  -> invalid
Connected     + PeerDisconnect  -> Freed [Free, Emit(PeerSessionClosed)]
Connected     + Reset           -> To(Reset) [ReleaseRing, Emit(SessionReset), FailRequests(Reset)]
Connected     + IdleTimeout     -> Freed [Free, Emit(PeerSessionReclaimed)]
Disconnecting + ConnectOk       -> invalid
Disconnecting + ConnectRefused  -> invalid
Disconnecting + ConnectTimeout  -> invalid
Disconnecting + Disconnect      -> invalid
Disconnecting + DisconnectDone  -> Freed [EndHandshake, Free, Emit(Disconnected)]
Disconnecting + PeerDisconnect  -> invalid
Disconnecting + Reset           -> invalid
Disconnecting + IdleTimeout     -> invalid
Reset         + ConnectOk       -> invalid
Reset         + ConnectRefused  -> invalid
Reset         + ConnectTimeout  -> invalid
Reset         + Disconnect      -> Freed [Free, Emit(Disconnected)]
Reset         + DisconnectDone  -> invalid
Reset         + PeerDisconnect  -> invalid
Reset         + Reset           -> invalid
Reset         + IdleTimeout     -> invalid
";

#[test]
fn session_transition_table_snapshot() {
    let mut table = String::new();
    for s in SessionState::ALL {
        for i in SessionInput::ALL {
            let to = match transition(s, i) {
                Ok(step) => format!("{:?} {:?}", step.next, step.effects),
                Err(e) => {
                    assert_eq!((e.state, e.input), (s, i));
                    "invalid".to_string()
                }
            };
            table += &format!(
                "{:<13} + {:<15} -> {to}\n",
                format!("{s:?}"),
                format!("{i:?}")
            );
        }
    }
    assert_eq!(table, TRANSITIONS, "transition table changed:\n{table}");
}

#[derive(Debug, Clone)]
enum PoolOp {
    Alloc(usize),
    Free(usize),
}

fn pool_op() -> impl Strategy<Value = PoolOp> {
    prop_oneof![
        (0usize..70_000).prop_map(PoolOp::Alloc),
        (0usize..64).prop_map(PoolOp::Alloc),
        any::<usize>().prop_map(PoolOp::Free),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The pool against a model of per-class free counts: right sizes, a
    /// fresh allocation exactly when the model's class is empty, reuse
    /// otherwise, and live buffers never alias.
    #[test]
    fn msg_pool_matches_model(ops in proptest::collection::vec(pool_op(), 1..200)) {
        let pool = MsgPool::new(8 << 20);
        let mut model_free: HashMap<usize, usize> = HashMap::new();
        let mut live = Vec::new();
        let mut fresh = 0;
        for (n, op) in ops.into_iter().enumerate() {
            match op {
                PoolOp::Alloc(len) => {
                    let cap = len.max(64).next_power_of_two();
                    let mut m = pool.alloc(len);
                    prop_assert_eq!(m.len(), len);
                    prop_assert_eq!(m.capacity(), cap);
                    let slot = model_free.entry(cap).or_default();
                    if *slot == 0 { fresh += 1 } else { *slot -= 1 }
                    m.fill(n as u8);
                    live.push((m, n as u8));
                }
                PoolOp::Free(i) if !live.is_empty() => {
                    let (m, fill) = live.swap_remove(i % live.len());
                    prop_assert!(m.iter().all(|&b| b == fill), "buffer aliased");
                    *model_free.entry(m.capacity()).or_default() += 1;
                    drop(m);
                }
                PoolOp::Free(_) => {}
            }
            prop_assert_eq!(pool.stats().fresh, fresh);
            prop_assert_eq!(pool.free_count(), model_free.values().sum::<usize>());
        }
    }
}

/// Model of the client's slot assignment: requests enqueued together take
/// slots 0.. in order, the rest wait FIFO; a completion frees its slot and
/// the backlog head takes it with the slot's next req_num (+window).
fn model_req_nums(window: usize, n: usize, completion_order: &[u64]) -> HashMap<u64, u64> {
    let mut next: Vec<u64> = (0..window as u64).collect();
    let mut slot_of = HashMap::new();
    let mut req_num = HashMap::new();
    let mut backlog: VecDeque<u64> = (0..n as u64).collect();
    for (s, next_s) in next.iter_mut().enumerate().take(n) {
        let t = backlog.pop_front().unwrap();
        slot_of.insert(t, s);
        req_num.insert(t, *next_s);
        *next_s += window as u64;
    }
    for t in completion_order {
        let s = slot_of[t];
        if let Some(nt) = backlog.pop_front() {
            slot_of.insert(nt, s);
            req_num.insert(nt, next[s]);
            next[s] += window as u64;
        }
    }
    req_num
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random window, request count, sizes and loss: every request
    /// completes once with the right bytes, and the req_num each one
    /// carried matches the model given the observed completion order.
    #[test]
    fn window_and_backlog_match_model(
        window in 1usize..=8,
        sizes in proptest::collection::vec(1usize..6000, 1..30),
        loss in 0.0f64..0.05,
        seed in any::<u64>(),
    ) {
        let c = |i| EndpointConfig { req_window: window, mode: FlowMode::Lossy, seed, ..cfg(i) };
        let link = ChannelConfig { drop: DropModel::Uniform { p: loss }, ..Default::default() };
        let mut p = Pair::new(seed, link, c(1), c(2));
        for (tag, &len) in sizes.iter().enumerate() {
            p.app.send(&mut p.sim, CLIENT, p.session, tag as u64, len);
        }
        p.run_idle(Duration::from_secs(60));
        p.check_clean();
        let order: Vec<u64> = p.app.completed.iter().map(|c| c.0).collect();
        let model = model_req_nums(window, sizes.len(), &order);
        for &(tag, req_num) in &p.app.handled_order {
            prop_assert_eq!(model.get(&tag).copied(), Some(req_num), "tag {}", tag);
        }
        prop_assert_eq!(p.app.handled_order.len(), sizes.len());
    }
}
