//! The sending half of the attacks that hold real sessions (`pin.rs`,
//! `multi_addr.rs`): frames written straight into mbufs and sent in bursts
//! at most `rate` a second since the start, each counted in the report
//! under one kind; a full transmit ring is retried briefly, then what is
//! left counts as not sent.

use crate::hostile::{HostileKind, HostileReport};
use engine::dpdk::{MbufBatch, Mempool, TxQueue};
use std::time::{Duration, Instant};

/// A paced sender of one attack's frames.
pub(crate) struct Paced<'a> {
    tx: &'a mut TxQueue,
    pool: &'a Mempool,
    batch: MbufBatch,
    rate: u64,
    start: Instant,
    kind: HostileKind,
    /// What was sent (`sent`, `not_sent`, `by_kind`); the attack adds the
    /// rest of its report here.
    pub report: HostileReport,
}

impl<'a> Paced<'a> {
    /// Frames of `kind`, at most `rate` a second from now on.
    pub fn new(tx: &'a mut TxQueue, pool: &'a Mempool, rate: u64, kind: HostileKind) -> Self {
        Paced {
            tx,
            pool,
            batch: MbufBatch::new(),
            rate: rate.max(1),
            start: Instant::now(),
            kind,
            report: HostileReport::default(),
        }
    }

    /// One frame, written by `write` into an mbuf's room (it returns the
    /// frame's length); sent with the next full burst or `flush`.
    pub fn frame(&mut self, write: impl FnOnce(&mut [u8]) -> usize) -> anyhow::Result<()> {
        if self.batch.is_full() {
            self.flush()?;
        }
        let i = self.batch.len();
        self.batch.alloc(self.pool, 1)?;
        let len = write(self.batch.room_mut(i));
        self.batch.set_len(i, len);
        *self.report.by_kind.entry(self.kind).or_default() += 1;
        self.report.sent += 1;
        Ok(())
    }

    /// Sends what is batched once the rate allows it.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let due = self.start + Duration::from_secs_f64(self.report.sent as f64 / self.rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // A full TX ring: retry the rest (af_packet drains it quickly).
        for _ in 0..1000 {
            self.tx.tx_burst(&mut self.batch);
            if self.batch.is_empty() {
                break;
            }
            std::thread::yield_now();
        }
        self.report.not_sent += self.batch.len() as u64;
        self.batch.clear();
        Ok(())
    }
}
