//! The run loop's own counters ([`RunCounters`]): what the loop and the
//! layers around its device (`phy`) count, apart from the protocol's
//! `Stats`. Its own module so both the loop (`rpc`) and the layers bump
//! the same struct without importing each other.

crate::counters! {
/// Counters of the run loop itself (the protocol's are in `Endpoint::stats`).
pub struct RunCounters {
    /// Event-loop iterations.
    pub loops: u64,
    /// RX bursts that returned at least one frame.
    pub rx_bursts_nonempty: u64,
    /// Frames dropped on purpose by the RX fault injector.
    pub injected_drops_rx: u64,
    /// Frames dropped on purpose by the TX fault injector.
    pub injected_drops_tx: u64,
    /// Times the driver's TX ring was full and frames waited for the next loop.
    pub tx_ring_full: u64,
    /// Times the mbuf pool was empty when the endpoint had frames to send.
    pub tx_no_mbuf: u64,
    /// Requests for a type with no handler: answered with an
    /// `ErrorResponse(NoHandler)`, so the client fails them at once.
    pub no_handler: u64,
    /// Session events dropped because the application neither set an event
    /// handler nor drained `poll_event` (the queue holds `EVENT_QUEUE_CAP`).
    pub events_dropped: u64,
    /// Requests handed to background handler threads.
    pub background_jobs: u64,
    /// Received frames the injected ECN marker set CE on.
    pub injected_ecn_marks: u64,
}
}
