//! Who waits for each outstanding client request of an `Rpc`: a
//! continuation, the completion queue (`poll_completion`), the blocking
//! `call`, or no one any more (a call that timed out). A slab indexed by
//! the tag the endpoint carries for the request; a slot is taken when the
//! request is enqueued and freed when it completes or fails, so steady
//! state never allocates.

use crate::runtime::handlers::{Continuation, OnDone};

/// Outstanding requests at once per endpoint before the slab grows:
/// sessions x window for the workloads here, sized so steady state never grows.
const PRESIZE: usize = 4096;

/// What to do with one request's outcome.
pub(super) enum Waiter<A> {
    /// Run this continuation.
    Continue(Continuation<A>),
    /// Queue it for `poll_completion`.
    Poll,
    /// Hand it to the `call` waiting on the loop.
    Call,
    /// Drop it: the `call` that sent it gave up (timeout).
    Abandoned,
}

impl<A> Waiter<A> {
    /// The waiter and user tag an [`OnDone`] stands for.
    pub(super) fn of(on_done: OnDone<A>) -> (Self, u64) {
        match on_done {
            OnDone::Poll { tag } => (Waiter::Poll, tag),
            OnDone::Continue { cont, tag } => (Waiter::Continue(cont), tag),
        }
    }
}

struct Slot<A> {
    waiter: Waiter<A>,
    user_tag: u64,
}

/// The slab of waiters, by slot index (the tag given to the endpoint).
pub(super) struct Waiters<A> {
    slots: Vec<Slot<A>>,
    free: Vec<u32>,
}

impl<A> Waiters<A> {
    /// `PRESIZE` free slots.
    pub(super) fn new() -> Self {
        let mut slots = Vec::with_capacity(PRESIZE);
        slots.resize_with(PRESIZE, || Slot {
            waiter: Waiter::Abandoned,
            user_tag: 0,
        });
        Waiters {
            slots,
            free: (0..PRESIZE as u32).rev().collect(),
        }
    }

    /// Takes a slot for a request about to be enqueued; its index is the
    /// request's tag for the endpoint.
    pub(super) fn insert(&mut self, waiter: Waiter<A>, user_tag: u64) -> u32 {
        let slot = Slot { waiter, user_tag };
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Requests whose outcome has not come yet (abandoned ones included:
    /// their session still carries them).
    pub(super) fn outstanding(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Frees a slot whose request the endpoint refused (never enqueued).
    pub(super) fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// The finished request's waiter and user tag; frees its slot. `None`
    /// for a tag that names no slot (the endpoint only reports tags it was
    /// given, so this is a guard, not a path).
    pub(super) fn take(&mut self, tag: u64) -> Option<(Waiter<A>, u64)> {
        let slot = u32::try_from(tag).ok()?;
        let entry = self.slots.get_mut(slot as usize)?;
        let waiter = std::mem::replace(&mut entry.waiter, Waiter::Abandoned);
        self.free.push(slot);
        Some((waiter, entry.user_tag))
    }

    /// Nobody waits for `slot` any more: its outcome will be dropped when
    /// it comes (the slot is freed then).
    pub(super) fn abandon(&mut self, slot: u32) {
        if let Some(entry) = self.slots.get_mut(slot as usize) {
            entry.waiter = Waiter::Abandoned;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_an_abandoned_outcome_has_no_waiter() {
        let mut w: Waiters<()> = Waiters::new();
        let a = w.insert(Waiter::Poll, 7);
        let b = w.insert(Waiter::Call, 0);
        assert_ne!(a, b);
        assert!(matches!(w.take(a as u64), Some((Waiter::Poll, 7))));
        // The freed slot is the next one handed out.
        assert_eq!(w.insert(Waiter::Poll, 1), a);
        w.abandon(b);
        assert!(matches!(w.take(b as u64), Some((Waiter::Abandoned, 0))));
        assert!(w.take(u64::MAX).is_none());
    }

    #[test]
    fn more_outstanding_requests_than_presized_grow_the_slab() {
        let mut w: Waiters<()> = Waiters::new();
        let slots: Vec<u32> = (0..PRESIZE + 1)
            .map(|_| w.insert(Waiter::Poll, 0))
            .collect();
        assert_eq!(slots[PRESIZE] as usize, PRESIZE);
        assert!(matches!(w.take(PRESIZE as u64), Some((Waiter::Poll, 0))));
    }
}
