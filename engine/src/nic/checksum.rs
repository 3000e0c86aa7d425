//! Checksum offloads by capability. A device advertises what it can do in
//! `rte_eth_dev_info`'s `tx_offload_capa` / `rx_offload_capa`;
//! `transport.checksum_offload` says what to take ([`ChecksumOffload`]);
//! [`Offloads::choose`] decides. Where a TX offload is not taken the engine
//! writes the IPv4 header checksum itself (incrementally, from the header
//! template) and sends UDP checksum 0, which IPv4 allows: the Ethernet FCS
//! covers the frame on the wire and summing every payload byte in software
//! would cost per byte. Where an RX offload is taken, the driver's verdict
//! in the mbuf ([`RxChecksum::of`]) replaces the software check of the IPv4
//! header; a bad checksum is a counted drop either way.
//!
//! The bit values are DPDK 22.11's (`rte_ethdev.h`, `rte_mbuf_core.h`);
//! the C shim checks them against the headers at build time.

use serde::{Deserialize, Serialize};
use std::fmt;

/// `RTE_ETH_TX_OFFLOAD_IPV4_CKSUM` (= the RX bit of the same name).
pub const OFFLOAD_IPV4_CKSUM: u64 = 1 << 1;
/// `RTE_ETH_TX_OFFLOAD_UDP_CKSUM` (= the RX bit of the same name).
pub const OFFLOAD_UDP_CKSUM: u64 = 1 << 2;
/// `RTE_MBUF_F_TX_IPV4`: the frame is IPv4 (needed with any IPv4 offload).
pub const MBUF_TX_IPV4: u64 = 1 << 55;
/// `RTE_MBUF_F_TX_IP_CKSUM`: the device fills the IPv4 header checksum.
pub const MBUF_TX_IP_CKSUM: u64 = 1 << 54;
/// `RTE_MBUF_F_TX_UDP_CKSUM`: the device fills the UDP checksum.
pub const MBUF_TX_UDP_CKSUM: u64 = 3 << 52;
/// `RTE_MBUF_F_RX_IP_CKSUM_MASK` and its values.
pub const MBUF_RX_IP_MASK: u64 = (1 << 4) | (1 << 7);
/// `RTE_MBUF_F_RX_IP_CKSUM_BAD`.
pub const MBUF_RX_IP_BAD: u64 = 1 << 4;
/// `RTE_MBUF_F_RX_IP_CKSUM_GOOD`.
pub const MBUF_RX_IP_GOOD: u64 = 1 << 7;
/// `RTE_MBUF_F_RX_L4_CKSUM_MASK` and its values.
pub const MBUF_RX_L4_MASK: u64 = (1 << 3) | (1 << 8);
/// `RTE_MBUF_F_RX_L4_CKSUM_BAD`.
pub const MBUF_RX_L4_BAD: u64 = 1 << 3;
/// `RTE_MBUF_F_RX_L4_CKSUM_GOOD`.
pub const MBUF_RX_L4_GOOD: u64 = 1 << 8;

/// `transport.checksum_offload`: which checksum offloads to take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChecksumOffload {
    /// Every IPv4/UDP checksum offload the device offers; software for the
    /// rest. A device without any is fine.
    #[default]
    Auto,
    /// None: software only, whatever the device offers.
    Off,
    /// All four (TX and RX, IPv4 header and UDP); a device that lacks one
    /// is refused at startup ([`OffloadError`]).
    Require,
}

impl ChecksumOffload {
    /// The value's name in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksumOffload::Auto => "auto",
            ChecksumOffload::Off => "off",
            ChecksumOffload::Require => "require",
        }
    }
}

/// `checksum_offload = "require"` on a device that lacks some offload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "transport.checksum_offload = \"require\" but device {device} (driver {driver}) lacks {missing} checksum offload; \"auto\" computes those checksums in software"
)]
pub struct OffloadError {
    /// The port's device name.
    pub device: String,
    /// Its driver's name.
    pub driver: String,
    /// What it lacks, e.g. `"tx ipv4, tx udp"`.
    pub missing: String,
}

/// The checksum offloads a port uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// The device fills the IPv4 header checksum of sent frames.
    pub tx_ipv4: bool,
    /// The device fills the UDP checksum of sent frames.
    pub tx_udp: bool,
    /// The device checks received IPv4 header checksums.
    pub rx_ipv4: bool,
    /// The device checks received UDP checksums.
    pub rx_udp: bool,
}

impl Offloads {
    /// What `mode` takes of a device offering `tx_capa` / `rx_capa`
    /// (`rte_eth_dev_info`'s bit masks); `device` and `driver` name it in
    /// the error of `Require`.
    pub fn choose(
        mode: ChecksumOffload,
        tx_capa: u64,
        rx_capa: u64,
        device: &str,
        driver: &str,
    ) -> Result<Offloads, OffloadError> {
        let offered = Offloads {
            tx_ipv4: tx_capa & OFFLOAD_IPV4_CKSUM != 0,
            tx_udp: tx_capa & OFFLOAD_UDP_CKSUM != 0,
            rx_ipv4: rx_capa & OFFLOAD_IPV4_CKSUM != 0,
            rx_udp: rx_capa & OFFLOAD_UDP_CKSUM != 0,
        };
        match mode {
            ChecksumOffload::Off => Ok(Offloads::default()),
            ChecksumOffload::Auto => Ok(offered),
            ChecksumOffload::Require => {
                let missing: Vec<&str> = offered
                    .named()
                    .into_iter()
                    .filter(|(_, on)| !on)
                    .map(|(name, _)| name)
                    .collect();
                if missing.is_empty() {
                    return Ok(offered);
                }
                Err(OffloadError {
                    device: device.into(),
                    driver: driver.into(),
                    missing: missing.join(", "),
                })
            }
        }
    }

    fn named(&self) -> [(&'static str, bool); 4] {
        [
            ("tx ipv4", self.tx_ipv4),
            ("tx udp", self.tx_udp),
            ("rx ipv4", self.rx_ipv4),
            ("rx udp", self.rx_udp),
        ]
    }

    /// `rte_eth_txmode.offloads`.
    pub fn tx_conf(&self) -> u64 {
        (if self.tx_ipv4 { OFFLOAD_IPV4_CKSUM } else { 0 })
            | (if self.tx_udp { OFFLOAD_UDP_CKSUM } else { 0 })
    }

    /// `rte_eth_rxmode.offloads`.
    pub fn rx_conf(&self) -> u64 {
        (if self.rx_ipv4 { OFFLOAD_IPV4_CKSUM } else { 0 })
            | (if self.rx_udp { OFFLOAD_UDP_CKSUM } else { 0 })
    }

    /// The `ol_flags` every sent mbuf carries; 0 when no TX offload is used.
    pub fn tx_mbuf_flags(&self) -> u64 {
        if !self.tx_ipv4 && !self.tx_udp {
            return 0;
        }
        MBUF_TX_IPV4
            | (if self.tx_ipv4 { MBUF_TX_IP_CKSUM } else { 0 })
            | (if self.tx_udp { MBUF_TX_UDP_CKSUM } else { 0 })
    }

    /// Whether received mbufs carry a checksum verdict to read.
    pub fn rx_any(&self) -> bool {
        self.rx_ipv4 || self.rx_udp
    }
}

impl fmt::Display for Offloads {
    /// `tx ipv4+udp, rx ipv4+udp`, with `software` for a side without any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |ip: bool, udp: bool| match (ip, udp) {
            (true, true) => "ipv4+udp",
            (true, false) => "ipv4 (udp: sent as 0)",
            (false, true) => "udp (ipv4: software)",
            (false, false) => "none",
        };
        let rx = match (self.rx_ipv4, self.rx_udp) {
            (true, true) => "ipv4+udp",
            (true, false) => "ipv4",
            (false, true) => "udp (ipv4: software)",
            (false, false) => "none",
        };
        write!(
            f,
            "checksum offload tx {}, rx {}",
            side(self.tx_ipv4, self.tx_udp),
            rx
        )
    }
}

/// A received frame's checksum as its device judged it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxChecksum {
    /// The IPv4 header checksum is right (and the UDP one, when the device
    /// checked it): no software check needed.
    Good,
    /// The IPv4 header or the UDP checksum is wrong: drop the frame.
    Bad,
    /// Not checked (or UDP checksum 0): check the IPv4 header in software.
    Unchecked,
}

impl RxChecksum {
    /// The verdict in an mbuf's `ol_flags`.
    #[inline]
    pub fn of(ol_flags: u64) -> RxChecksum {
        let ip = ol_flags & MBUF_RX_IP_MASK;
        if ip == MBUF_RX_IP_BAD || ol_flags & MBUF_RX_L4_MASK == MBUF_RX_L4_BAD {
            RxChecksum::Bad
        } else if ip == MBUF_RX_IP_GOOD {
            RxChecksum::Good
        } else {
            RxChecksum::Unchecked
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: u64 = OFFLOAD_IPV4_CKSUM | OFFLOAD_UDP_CKSUM;

    #[test]
    fn test_auto_takes_what_is_offered() {
        let o = Offloads::choose(ChecksumOffload::Auto, ALL, OFFLOAD_IPV4_CKSUM, "d", "x").unwrap();
        assert_eq!(
            o,
            Offloads {
                tx_ipv4: true,
                tx_udp: true,
                rx_ipv4: true,
                rx_udp: false
            }
        );
        assert_eq!(o.tx_conf(), ALL);
        assert_eq!(o.rx_conf(), OFFLOAD_IPV4_CKSUM);
        assert_eq!(
            o.tx_mbuf_flags(),
            MBUF_TX_IPV4 | MBUF_TX_IP_CKSUM | MBUF_TX_UDP_CKSUM
        );
        assert_eq!(o.to_string(), "checksum offload tx ipv4+udp, rx ipv4");
    }

    #[test]
    fn test_a_device_without_offloads_is_not_an_error() {
        let o = Offloads::choose(ChecksumOffload::Auto, 0, 0, "net_memif0", "net_memif").unwrap();
        assert_eq!(o, Offloads::default());
        assert_eq!(o.tx_mbuf_flags(), 0);
        assert!(!o.rx_any());
        assert_eq!(o.to_string(), "checksum offload tx none, rx none");
    }

    #[test]
    fn test_off_takes_nothing() {
        let o = Offloads::choose(ChecksumOffload::Off, ALL, ALL, "d", "x").unwrap();
        assert_eq!(o, Offloads::default());
    }

    #[test]
    fn test_require_names_key_device_and_what_is_missing() {
        let e = Offloads::choose(
            ChecksumOffload::Require,
            OFFLOAD_UDP_CKSUM,
            0,
            "net_memif0",
            "net_memif",
        )
        .unwrap_err();
        assert_eq!(e.missing, "tx ipv4, rx ipv4, rx udp");
        let msg = e.to_string();
        assert!(msg.contains("transport.checksum_offload"), "{msg}");
        assert!(msg.contains("net_memif0"), "{msg}");
        let ok = Offloads::choose(ChecksumOffload::Require, ALL, ALL, "d", "x").unwrap();
        assert!(ok.tx_ipv4 && ok.tx_udp && ok.rx_ipv4 && ok.rx_udp);
    }

    #[test]
    fn test_udp_only_tx_flags() {
        // virtio offers UDP checksum but not the IPv4 header's.
        let o = Offloads::choose(ChecksumOffload::Auto, OFFLOAD_UDP_CKSUM, 0, "d", "x").unwrap();
        assert_eq!(o.tx_mbuf_flags(), MBUF_TX_IPV4 | MBUF_TX_UDP_CKSUM);
    }

    #[test]
    fn test_rx_verdicts() {
        assert_eq!(RxChecksum::of(0), RxChecksum::Unchecked);
        assert_eq!(RxChecksum::of(MBUF_RX_IP_GOOD), RxChecksum::Good);
        assert_eq!(
            RxChecksum::of(MBUF_RX_IP_GOOD | MBUF_RX_L4_GOOD),
            RxChecksum::Good
        );
        // UDP checksum 0: L4 "none" (both bits), the IPv4 verdict decides.
        assert_eq!(
            RxChecksum::of(MBUF_RX_IP_GOOD | MBUF_RX_L4_MASK),
            RxChecksum::Good
        );
        assert_eq!(RxChecksum::of(MBUF_RX_IP_BAD), RxChecksum::Bad);
        assert_eq!(
            RxChecksum::of(MBUF_RX_IP_GOOD | MBUF_RX_L4_BAD),
            RxChecksum::Bad
        );
        // IPv4 "none" (both bits): not checked, software decides.
        assert_eq!(RxChecksum::of(MBUF_RX_IP_MASK), RxChecksum::Unchecked);
    }
}
