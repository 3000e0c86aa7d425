//! What a server worker tells its operator on stderr from the engine's
//! events: sources over their wrong-token limit and sessions closed for
//! violating their credits (docs/reliability.md). Other events are not
//! the server's to report.

use engine::proto::Event;
use engine::runtime::Rpc;

/// Sources the engine reported for wrong tokens (at most one line per
/// source per second) and sessions it closed for violating their credits:
/// an operator sees who probes or floods the server. The server reads no
/// other event.
pub fn report<A>(rpc: &mut Rpc<A>, worker: u16) {
    while let Some(ev) = rpc.poll_event() {
        match ev {
            Event::WrongTokens(r) => eprintln!(
                "rpc-server: worker {worker}: {} wrong session tokens from {}:{} within one second; replies to it withheld for the rest of that second",
                r.count, r.ip, r.port
            ),
            Event::CreditViolator(r) => eprintln!(
                "rpc-server: worker {worker}: session from {}:{} ({}) closed for sending over its credits ({} packets dropped); the source is refused new sessions for transport.police_cooloff_ms",
                r.ip, r.port, r.mac, r.excess
            ),
            _ => {}
        }
    }
}
