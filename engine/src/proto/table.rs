//! The session table: session numbers, generations and typed lookups. A
//! lookup by [`SessionId`] checks the generation; a lookup for a received
//! data packet checks role, token and state and counts the drop reason when
//! there is no such session. Client and server sessions are distinct types,
//! so callers never hold an untyped session and match on its role.

use super::client::ClientSession;
use super::ids::SessionId;
use super::server::ServerSession;
use super::session::SessionCommon;
use super::state::SessionState;
use super::stats::{Drops, SessionCounts};
use super::wrong_tokens::WrongTokens;
use crate::time::Instant;
use crate::wire::Parsed;
use std::collections::VecDeque;

/// One entry of the session table.
#[derive(Debug)]
pub(crate) enum Session {
    Client(ClientSession),
    Server(ServerSession),
}

impl Session {
    pub fn common(&self) -> &SessionCommon {
        match self {
            Session::Client(c) => &c.common,
            Session::Server(s) => &s.common,
        }
    }

    pub fn common_mut(&mut self) -> &mut SessionCommon {
        match self {
            Session::Client(c) => &mut c.common,
            Session::Server(s) => &mut s.common,
        }
    }
}

/// Sessions indexed by local number.
#[derive(Debug)]
pub(crate) struct SessionTable {
    entries: Vec<Option<Session>>,
    /// Numbers below `entries.len()` that are free (FIFO, so a freed number
    /// is reused as late as possible).
    free_nums: VecDeque<u16>,
    /// Generation given to the next session created.
    next_gen: u32,
    max: usize,
    /// Sessions in the table.
    live: usize,
    /// Sessions per state, kept as states change so the getter is O(1).
    counts: SessionCounts,
}

impl SessionTable {
    pub fn new(max: usize) -> Self {
        SessionTable {
            entries: Vec::new(),
            free_nums: VecDeque::new(),
            next_gen: 1,
            max,
            live: 0,
            counts: SessionCounts::default(),
        }
    }

    /// Sessions in the table, any state.
    pub fn live(&self) -> usize {
        self.live
    }

    /// A free number and a fresh generation, growing the table up to its
    /// maximum; the caller must `insert` a session under it.
    pub fn reserve(&mut self) -> Option<SessionId> {
        let num = match self.free_nums.pop_front() {
            Some(n) => n,
            None if self.entries.len() < self.max => {
                self.entries.push(None);
                (self.entries.len() - 1) as u16
            }
            None => return None,
        };
        let gen = self.next_gen;
        self.next_gen = self.next_gen.wrapping_add(1);
        Some(SessionId { num, gen })
    }

    /// Stores `s` under the number `reserve` gave.
    pub fn insert(&mut self, s: Session) {
        let num = s.common().num as usize;
        debug_assert!(self.entries[num].is_none());
        *self.counts.of(s.common().state) += 1;
        self.entries[num] = Some(s);
        self.live += 1;
    }

    /// Removes the session `id` names; its number goes back to the free list.
    pub fn remove(&mut self, id: SessionId) -> Option<Session> {
        self.get(id)?;
        let s = self.entries[id.num as usize].take()?;
        *self.counts.of(s.common().state) -= 1;
        self.free_nums.push_back(id.num);
        self.live -= 1;
        Some(s)
    }

    pub fn get(&self, id: SessionId) -> Option<&Session> {
        match self.entries.get(id.num as usize) {
            Some(Some(s)) if s.common().gen == id.gen => Some(s),
            _ => None,
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: SessionId) -> Option<&mut Session> {
        match self.entries.get_mut(id.num as usize) {
            Some(Some(s)) if s.common().gen == id.gen => Some(s),
            _ => None,
        }
    }

    /// Starts loading session number `num`'s entry (a hint,
    /// `prefetch.rs`): every cache line of it, as a packet's work reads
    /// the common part, the role's half and the congestion state's pointer.
    #[inline]
    pub fn prefetch_entry(&self, num: u16) {
        if let Some(e) = self.entries.get(num as usize) {
            super::hint::prefetch_lines(e);
        }
    }

    /// The live session with local number `num`, whatever its generation.
    pub fn by_num(&self, num: u16) -> Option<&Session> {
        self.entries.get(num as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub fn by_num_mut(&mut self, num: u16) -> Option<&mut Session> {
        self.entries.get_mut(num as usize).and_then(Option::as_mut)
    }

    pub fn client(&self, id: SessionId) -> Option<&ClientSession> {
        match self.get(id)? {
            Session::Client(c) => Some(c),
            Session::Server(_) => None,
        }
    }

    #[inline]
    pub fn client_mut(&mut self, id: SessionId) -> Option<&mut ClientSession> {
        match self.get_mut(id)? {
            Session::Client(c) => Some(c),
            Session::Server(_) => None,
        }
    }

    #[inline]
    pub fn server_mut(&mut self, id: SessionId) -> Option<&mut ServerSession> {
        match self.get_mut(id)? {
            Session::Server(s) => Some(s),
            Session::Client(_) => None,
        }
    }

    /// The connected client session a CreditReturn or Response is for,
    /// counting the drop reason if there is none.
    #[inline]
    pub fn client_for_packet(
        &mut self,
        now: Instant,
        p: &Parsed<'_>,
        drops: &mut Drops,
        wrong: &mut WrongTokens,
    ) -> Option<&mut ClientSession> {
        match self.by_num_mut(p.rpc.dest_session) {
            Some(Session::Client(c)) if admit(&c.common, now, p, drops, wrong) => Some(c),
            Some(Session::Client(_)) => None,
            _ => {
                drops.unknown_session += 1;
                None
            }
        }
    }

    /// The connected server session a Request or RFR is for, counting the
    /// drop reason if there is none.
    #[inline]
    pub fn server_for_packet(
        &mut self,
        now: Instant,
        p: &Parsed<'_>,
        drops: &mut Drops,
        wrong: &mut WrongTokens,
    ) -> Option<&mut ServerSession> {
        match self.by_num_mut(p.rpc.dest_session) {
            Some(Session::Server(s)) if admit(&s.common, now, p, drops, wrong) => Some(s),
            Some(Session::Server(_)) => None,
            _ => {
                drops.unknown_session += 1;
                None
            }
        }
    }

    /// How many sessions are in each state (O(1)).
    pub fn counts(&self) -> SessionCounts {
        self.counts
    }

    /// Session `id` moves from state `from` to `to` (`change_state` only).
    pub fn note_state(&mut self, from: SessionState, to: SessionState) {
        *self.counts.of(from) -= 1;
        *self.counts.of(to) += 1;
    }
}

/// Token and state check of a data packet against the session it names;
/// a wrong token is tallied against its source (`wrong_tokens.rs`).
#[inline]
fn admit(
    c: &SessionCommon,
    now: Instant,
    p: &Parsed<'_>,
    drops: &mut Drops,
    wrong: &mut WrongTokens,
) -> bool {
    if c.token != p.rpc.token {
        drops.bad_token += 1;
        wrong.note(now, p.src_ip, p.src_port);
        false
    } else if c.state != SessionState::Connected {
        drops.bad_state += 1;
        false
    } else {
        true
    }
}
