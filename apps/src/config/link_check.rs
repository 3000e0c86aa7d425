//! The engine's verdict on `[link]` and `[cores]`, in the config's words:
//! validation builds each role's `NexusBuilder` as the seam (`setup.rs`)
//! does and runs the engine's own check on it (`NexusBuilder::validate`,
//! the only copy of DPDK's limits), naming the key that set the refused
//! value. (`[transport]` needs no such step: the engine validates it by
//! key itself, `engine::config`.)

use super::schema::{Config, ConfigError};
use super::setup::Worker;
use crate::config::link::Role;
use engine::runtime::{
    BuilderError, Ring, ETH_HEADER_LEN, MAX_DATA_ROOM, MEMIF_MAX_LOG2_RING, MEMIF_MAX_RING,
};
use engine::wire::MacAddr;

/// Where a worker's MAC is not configured: any unicast MAC (the port's is
/// known only once it is open).
const PLACEHOLDER_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);

impl Config {
    /// Runs the engine's check on what each role's process would build.
    pub(super) fn validate_builders(&self) -> Result<(), ConfigError> {
        for r in [Role::Server, Role::Client] {
            let b = self
                .nexus_builder(r)
                .map_err(|e| ConfigError::invalid("link.pci", e.to_string()))?;
            b.validate().map_err(|e| self.builder_refusal(r, e))?;
        }
        Ok(())
    }

    /// A guard on resolution's contract, never expected to fire: each
    /// worker's endpoint, as resolved, passes the engine's own check.
    pub(super) fn validate_endpoints(&self) -> Result<(), ConfigError> {
        for r in [Role::Server, Role::Client] {
            let b = self
                .nexus_builder(r)
                .map_err(|e| ConfigError::invalid("link.pci", e.to_string()))?;
            for index in 0..self.cores(r).len() as u16 {
                let w = Worker {
                    index,
                    mac: self.mac(r).unwrap_or(PLACEHOLDER_MAC),
                    rx_ring_entries: b.rx_ring_entries(),
                };
                let e = self.endpoint_config(r, &w)?;
                e.validate().map_err(|e| {
                    ConfigError::invalid(e.field, format!("{e} (the engine refused what resolution built: a bug, please report it)"))
                })?;
            }
        }
        Ok(())
    }

    /// A refusal of `role`'s builder, by the key that set it.
    fn builder_refusal(&self, role: Role, e: BuilderError) -> ConfigError {
        let l = &self.link;
        let (key, msg) = match &e {
            BuilderError::Descriptors { ring, .. } => {
                let (key, v) = match ring {
                    Ring::Rx => ("link.rx_desc", l.rx_desc),
                    Ring::Tx => ("link.tx_desc", l.tx_desc),
                };
                let limit = e.to_string();
                let limit = limit.split_once(": ").map_or(limit.as_str(), |x| x.1);
                (key, format!("{key} = {v} {limit}"))
            }
            BuilderError::MemifRing { .. } if l.vdev.is_some() => {
                ("link.vdev", format!("link.vdev = {:?}: {e}", l.vdev.as_deref().unwrap_or("")))
            }
            BuilderError::MemifRing { entries } => (
                "link.rx_desc",
                format!(
                    "link.rx_desc = {} asks for a memif ring of {entries} entries; DPDK 22.11's memif holds at most {MEMIF_MAX_RING} (rsize {MEMIF_MAX_LOG2_RING})",
                    l.rx_desc
                ),
            ),
            BuilderError::SocketPath { .. } => ("link.socket", format!("link.socket = {:?}: {e}", l.socket)),
            BuilderError::IfaceName { iface } => (
                "link.iface",
                format!(
                    "link.iface = {:?}: the {} opens {iface:?}, which must be 1..={} bytes (IFNAMSIZ; the client side appends \"p\")",
                    l.iface,
                    role.as_str(),
                    engine::runtime::MAX_IFACE_LEN
                ),
            ),
            BuilderError::DataRoom { .. } => (
                "link.mbuf_data_room",
                format!("link.mbuf_data_room = {} must be in 1..={MAX_DATA_ROOM}", l.mbuf_data_room),
            ),
            BuilderError::MbufTooSmall { .. } => (
                "link.mtu",
                format!(
                    "link.mtu = {} needs {}-byte frames but link.mbuf_data_room = {}",
                    l.mtu,
                    l.mtu as usize + ETH_HEADER_LEN,
                    l.mbuf_data_room
                ),
            ),
            BuilderError::NoMemory => ("link.mem_mb", "link.mem_mb must be > 0".to_string()),
            BuilderError::UdpPorts { .. } if l.udp_port == 0 => {
                ("link.udp_port", "link.udp_port must be > 0".to_string())
            }
            BuilderError::UdpPorts { workers, .. } => (
                "link.udp_port",
                format!("link.udp_port = {} + {workers} workers runs past port 65535", l.udp_port),
            ),
            BuilderError::NoCores => {
                let key = format!("cores.{}", role.as_str());
                return ConfigError::invalid(&key, format!("{key} is empty (one core per worker)"));
            }
            BuilderError::NoDevice => ("link.kind", format!("link.kind: {e}")),
        };
        ConfigError::invalid(key, msg)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testutil::*;

    fn msg(sets: &[&str]) -> String {
        let c = with(sets).unwrap();
        c.validate(&ENV).unwrap_err().to_string()
    }

    #[test]
    fn transport_refusals_name_the_key_and_its_value() {
        assert_eq!(
            msg(&["transport.rto_us=100"]),
            "invalid config: transport.rto_us = 100 must be >= transport.scan_us = 500"
        );
        let e = msg(&["transport.half_open_timeout_ms=1000"]);
        assert!(
            e.contains("transport.half_open_timeout_ms = 1000 must be >= 2 x transport.keepalive_ms = 2000"),
            "{e}"
        );
        let e = msg(&["transport.nak=true"]);
        assert!(
            e.contains("transport.nak = true needs transport.mode = lossy or pause"),
            "{e}"
        );
        let e = msg(&["transport.session_ring_share_pct=101"]);
        assert!(
            e.contains("transport.session_ring_share_pct = 101 must be in 1..=100"),
            "{e}"
        );
    }

    #[test]
    fn a_ring_smaller_than_its_descriptors_is_what_backs_the_credits() {
        // net_ring's rings hold 1023 frames, whatever link.rx_desc says.
        let e = msg(&[
            "link.kind=ring",
            "transport.credits=1023",
            "transport.session_ring_share_pct=100",
            "transport.peer_ring_share_pct=100",
        ]);
        assert!(e.contains("link.rx_desc = 1023 can back"), "{e}");
    }

    #[test]
    fn link_refusals_name_the_key() {
        let e = msg(&["link.mtu=9000"]);
        assert!(e.contains("link.mtu = 9000 needs 9014-byte frames"), "{e}");
        assert_eq!(rejected_key(&["link.udp_port=0"]), "link.udp_port");
    }
}
