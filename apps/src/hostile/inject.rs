//! The `rpc-hostile` injector: opens the client side of the link and sends
//! the frames of the malformed mix (`hostile.rs`) or of one protocol attack
//! (`attacks.rs`) at a bounded rate, reporting how many of each kind it sent.

use crate::config::link::{LinkArgs, Role};
use crate::config::setup::{self, PortShape};
use crate::hostile::amplify;
use crate::hostile::attacks::{Attack, AttackGen};
use crate::hostile::credit_flood;
use crate::hostile::multi_addr::{self, MultiSource, MULTI_ADDR_MAC};
use crate::hostile::pin::{self, PinPackets, PinSource};
use crate::hostile::{HostileGen, HostileReport, Target};
use engine::dpdk::{MbufBatch, BURST};
use engine::runtime::HandlerTable;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// How `rpc-hostile` runs.
#[derive(Clone, Debug)]
pub struct InjectParams {
    pub target: Target,
    /// The frames: the malformed mix, or one protocol attack.
    pub attack: Attack,
    /// Whose name an attack uses (`attacks::AttackGen`).
    pub victim: (Ipv4Addr, u16),
    /// `multi-addr-hog`: how many addresses (from `victim`'s) it answers for.
    pub addresses: u8,
    pub seed: u64,
    /// Frames per second, at most.
    pub rate: u64,
    pub seconds: f64,
    pub core: u32,
    /// mem-pin: packets sent of each request.
    pub pin_packets: PinPackets,
}

/// Opens the link as the client side and sends hostile frames at `rate`
/// for `seconds`, sleeping between bursts (it does not poll a core).
pub fn inject(link: &LinkArgs, p: &InjectParams) -> anyhow::Result<HostileReport> {
    // One queue pair, 4095 mbufs, the driver's ring sizes.
    let b = setup::builder(link, Role::Client, &[p.core], &PortShape::raw(4095, 256))?;
    let nexus = setup::open(link, Role::Client, b, HandlerTable::<()>::new())?;
    let pool = nexus.pool();
    let (mut rx, mut tx) = nexus.port().queue_pair(0)?;
    let src = PinSource {
        mac: nexus.mac(),
        ip: p.victim.0,
        port: p.victim.1,
    };
    if p.attack == Attack::MemPin {
        return pin::run(
            &mut rx,
            &mut tx,
            pool,
            src,
            p.target,
            (p.rate, p.seconds),
            p.pin_packets,
        );
    }
    if p.attack == Attack::DupAmplify {
        return amplify::run(&mut rx, &mut tx, pool, src, p.target, p.rate, p.seconds);
    }
    if p.attack == Attack::MultiAddrHog {
        let src = MultiSource {
            mac: MULTI_ADDR_MAC,
            first: p.victim.0,
            addresses: p.addresses,
            port: p.victim.1,
        };
        return multi_addr::run(&mut rx, &mut tx, pool, src, p.target, p.rate, p.seconds);
    }
    if p.attack == Attack::CreditFlood {
        return credit_flood::run(&mut rx, &mut tx, pool, src, p.target, p.rate, p.seconds);
    }
    let mut mix = HostileGen::new(p.seed, p.target);
    let mut attack = AttackGen::new(p.attack, p.seed, p.target, p.victim);
    let mut report = HostileReport::default();
    let mut batch = MbufBatch::new();
    let start = Instant::now();
    let per_burst = Duration::from_secs_f64(BURST as f64 / p.rate.max(1) as f64);
    while start.elapsed().as_secs_f64() < p.seconds {
        let due = start + per_burst * (report.sent / BURST as u64) as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        batch.alloc(pool, BURST)?;
        for i in 0..batch.len() {
            let room = batch.room_mut(i);
            let (kind, len) = match p.attack {
                Attack::Mix => mix.next_frame(room),
                _ => attack.next_frame(room),
            };
            batch.set_len(i, len.max(1));
            *report.by_kind.entry(kind).or_default() += 1;
            report.sent += 1;
        }
        tx.tx_burst(&mut batch);
        report.not_sent += batch.len() as u64;
        batch.clear();
    }
    Ok(report)
}
