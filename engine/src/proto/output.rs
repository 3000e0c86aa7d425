//! What the endpoint reports to its application besides deliveries: the
//! event queue `poll_event` drains and the counters `stats` shows.

use super::error::RpcError;
use super::event::Event;
use super::ids::SessionId;
use super::stats::Stats;
use std::collections::VecDeque;

/// Events pre-sized per endpoint: a session reset with a full window and a
/// modest backlog fits without growing the queue.
const EVENT_QUEUE_PRESIZE: usize = 256;

/// Events and counters.
#[derive(Debug)]
pub(crate) struct Output {
    pub events: VecDeque<Event>,
    pub stats: Stats,
}

impl Output {
    pub fn new() -> Self {
        Output {
            events: VecDeque::with_capacity(EVENT_QUEUE_PRESIZE),
            stats: Stats::default(),
        }
    }

    /// Client request `tag` of `session` failed with `error`: counted and
    /// reported.
    pub fn request_failed(&mut self, session: SessionId, tag: u64, error: RpcError) {
        self.stats.requests_failed += 1;
        self.events.push_back(Event::RequestFailed {
            session,
            tag,
            error,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_request_is_counted_and_reported() {
        let mut o = Output::new();
        let s = SessionId { num: 1, gen: 1 };
        o.request_failed(s, 9, RpcError::SessionReset);
        assert_eq!(o.stats.requests_failed, 1);
        assert!(matches!(
            o.events.pop_front(),
            Some(Event::RequestFailed { tag: 9, .. })
        ));
    }
}
