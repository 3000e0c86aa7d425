//! The RPC engine: an eRPC-style transport (sessions, credits capped at the
//! bandwidth-delay product, multi-packet messages by memcpy, go-back-N) whose
//! protocol core is sans-IO (`proto`, `wire`), driven over DPDK by per-core
//! poll-mode run loops (`dpdk`, feature `dpdk`) or over an in-memory link for
//! deterministic tests (`sim`).
//!
//! # Layers
//!
//! - [`wire`]: the frame format (Ethernet / IPv4 / UDP / RPC header), parse
//!   and build, no state.
//! - [`proto`]: the sans-IO protocol core. An [`proto::Endpoint`] owns
//!   sessions, credits, retransmission and reassembly; it never reads a
//!   clock or touches a NIC: the caller passes the time in and moves frames.
//! - [`sim`]: an in-memory link in virtual time for two or more endpoints
//!   (delay, loss, reordering, a bottleneck), deterministic from a seed.
//!   The fabric lab, the same endpoints on a simulated datacenter fabric
//!   (switches, PFC, link credits, ECN, ECMP or spraying) under its
//!   regimes, is the workspace crate `lab` (`rpc-lab`, `rpc-bench fabric`),
//!   built on this crate's public API.
//! - [`kernel`]: one endpoint over a plain kernel UDP socket (no DPDK): the
//!   same frames, cut to their UDP payload on send and rebuilt on receive,
//!   so a host without DPDK calls a DPDK server (`link.kind = "kernel"`).
//! - `dpdk` (feature `dpdk`): the safe layer over DPDK (EAL, mempools,
//!   ports, mbufs, lcores, the TSC clock).
//! - `runtime` (feature `dpdk`): where the two meet. `Nexus` is the
//!   process (EAL, pool, port, handlers; build it with `Nexus::builder()`),
//!   `Rpc` one endpoint per worker core with its event loop (`nexus.rpc(i)`
//!   makes it; `rpc.call(..)` sends a request and waits for its response);
//!   workers run with `Nexus::run` and stop with a `StopHandle` (Ctrl-C:
//!   `StopHandle::stop_on_signals`).
//! - [`config`]: the configuration the engine owns, the `[transport]`
//!   section every tool reads (one serde type, one default per key, one
//!   validation by key), and the one resolution step that turns it and what
//!   is known of the link (measured or not) into each endpoint's settings.
//! - [`counters`](mod@counters): the counter structs the layers report; [`fault`],
//!   [`rng`], [`time`]: loss models, the seeded RNG and the clock types.
//!   [`regimes`]: the table of regimes (named sets of transport settings)
//!   real links run (`rpc-bench compare --regimes`; the fabric lab runs
//!   `lossy` and `irn` too and states its own regimes with the table's
//!   types).
//! - [`stamp`]: the build stamp every tool's JSON summary carries (version,
//!   commit, DPDK version, time, host, CPU), kept once for `apps`, `bench`
//!   and `lab`.
//!
//! # The sans-IO call order
//!
//! Whoever drives an endpoint (the DPDK run loop, the simulator, a test)
//! repeats, with `now` read once per round:
//!
//! 1. [`handle_frame`](proto::Endpoint::handle_frame) for every received
//!    frame; it may return a `Delivery` (a request for a handler, a
//!    response for the caller), answered with
//!    [`respond`](proto::Endpoint::respond);
//! 2. [`handle_timeout`](proto::Endpoint::handle_timeout) once `now` reaches
//!    [`poll_timeout`](proto::Endpoint::poll_timeout);
//! 3. [`poll_transmit`](proto::Endpoint::poll_transmit) into a buffer until
//!    it returns `None`, sending each frame;
//! 4. [`poll_event`](proto::Endpoint::poll_event) until `None` (connects,
//!    failures, resets).
//!
//! Commands ([`connect`](proto::Endpoint::connect),
//! [`enqueue_request`](proto::Endpoint::enqueue_request), ...) may come at
//! any point between.
//!
//! # Example: a server and a client over DPDK
//!
//! `examples/hello.rs`, the README's library snippet: two workers of one
//! process on the in-process ring wire, one blocking `Rpc::call` (only
//! compiled here: it needs DPDK and two cores; `tests/examples.rs` runs
//! it).
//!
#![cfg_attr(
    feature = "dpdk",
    doc = concat!("```no_run\n", include_str!("../examples/hello.rs"), "```")
)]
//!
//! # Example: one RPC between two endpoints, no DPDK
//!
//! ```
//! use engine::proto::{Delivery, Endpoint, EndpointConfig, Event, PeerAddr};
//! use engine::sim::{ChannelConfig, Sim, SimApp};
//! use engine::time::{Duration, Instant};
//! use engine::wire::MacAddr;
//! use std::net::Ipv4Addr;
//!
//! // The application: node 1 answers every request; node 0 keeps the response.
//! #[derive(Default)]
//! struct App {
//!     response: Option<Vec<u8>>,
//! }
//! impl SimApp for App {
//!     fn on_delivery(&mut self, _node: usize, now: Instant, ep: &mut Endpoint, d: Delivery<'_>) {
//!         match d {
//!             Delivery::Request { handle, payload, .. } => {
//!                 let mut resp = ep.alloc_msg(payload.as_slice().len() + 4);
//!                 resp.as_mut_slice()[..4].copy_from_slice(b"re: ");
//!                 resp.as_mut_slice()[4..].copy_from_slice(payload.as_slice());
//!                 ep.respond(now, handle, resp).unwrap();
//!             }
//!             Delivery::Response { payload, .. } => {
//!                 self.response = Some(payload.as_slice().to_vec());
//!             }
//!         }
//!     }
//! }
//!
//! let cfg = |last: u8| {
//!     let mut c = EndpointConfig::default();
//!     c.local.mac = MacAddr([2, 0, 0, 0, 0, last]);
//!     c.local.ip = Ipv4Addr::new(10, 0, 0, last);
//!     c.seed = last as u64;
//!     c
//! };
//! let mut sim = Sim::new(7, ChannelConfig::default());
//! let client = sim.add(Endpoint::new(cfg(1)).unwrap());
//! let server_cfg = cfg(2);
//! sim.add(Endpoint::new(server_cfg.clone()).unwrap());
//!
//! let now = sim.now();
//! let ep = sim.ep_mut(client);
//! let s = ep.connect(now, PeerAddr::from(server_cfg.local)).unwrap();
//! let mut msg = ep.alloc_msg(5);
//! msg.as_mut_slice().copy_from_slice(b"hello");
//! ep.enqueue_request(now, s, 1, msg, 0).map_err(|(e, _)| e).unwrap();
//!
//! let mut app = App::default();
//! sim.run_for(&mut app, Duration::from_millis(10));
//! assert_eq!(app.response.as_deref(), Some(&b"re: hello"[..]));
//! # let _ = Event::Connected; // events arrive through SimApp::on_event
//! ```

#![deny(missing_docs)]

pub mod config;
pub mod counters;
pub mod fault;
pub mod kernel;
pub mod nic;
pub mod proto;
/// The regimes real links run, each name once: `rpc-bench compare
/// --regimes` reads this table, and the fabric lab runs two of its entries
/// and states its own regimes with its types.
pub mod regimes;
pub mod rng;
pub mod sim;
pub mod stamp;
pub mod time;
pub mod wire;

#[cfg(feature = "dpdk")]
pub mod dpdk;
#[cfg(feature = "dpdk")]
pub mod runtime;
