//! Priority flow control between ports: a PFC frame sent for an ingress
//! that filled (or drained), landing a link delay later on the egress that
//! feeds it, which stops (or resumes) there; and the time links spent
//! paused.

use super::event::Ev;
use super::Fabric;

impl Fabric {
    /// A PFC frame landed on egress `g`.
    pub(super) fn pause(&mut self, g: u32, on: bool) {
        let now = self.now;
        let p = &mut self.ports[g as usize];
        if on {
            if !p.paused {
                p.paused = true;
                p.paused_since = now;
                if !p.ever_paused {
                    p.ever_paused = true;
                    self.stats.links_paused += 1;
                }
            }
        } else if p.paused {
            p.paused = false;
            self.stats.paused_ns += now - p.paused_since;
            self.wake(g);
        }
    }

    /// Sends a PFC frame for the ingress side of port `ingress` to the
    /// egress that feeds it; it lands one link delay later.
    pub(super) fn send_pfc(&mut self, ingress: u32, on: bool) {
        let p = &mut self.ports[ingress as usize];
        p.xoff_sent = on;
        let (to, at) = (p.reverse, self.now + p.delay_ns);
        self.stats.pause_frames += 1;
        self.events.push(at, Ev::Pause { port: to, on });
    }

    /// Ends every pause still in force at `now` (so `paused_ns` counts it).
    pub(super) fn close_pauses(&mut self) {
        let now = self.now;
        for p in &mut self.ports {
            if p.paused {
                self.stats.paused_ns += now - p.paused_since;
                p.paused_since = now;
            }
        }
    }
}
