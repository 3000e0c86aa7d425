//! What a port takes of its device's offloads at setup: the checksum
//! offloads it offers (`rte_eth_dev_info`'s capability bits, decided by
//! `nic::Offloads::choose`), RSS over IPv4/UDP with the engine's key and a
//! redirection table `j -> j % queues` when several queues share the port,
//! and the driver side of `nic::steer::decide` (rte_flow rules, the RSS
//! layout, queue pairing) for the runtime.

use super::{DpdkError, Port};
use crate::nic::{ChecksumOffload, Offloads, RssLayout, SteerDriver, RSS_KEY};
use std::ffi::CStr;

/// `RTE_ETH_RSS_NONFRAG_IPV4_UDP` (checked against the header in the shim).
const RSS_IPV4_UDP: u64 = 1 << 5;
/// Key bytes that matter for an IPv4 4-tuple (96 input bits + 32): a device
/// with a shorter key cannot hash as the clients compute.
const MIN_KEY: usize = 16;
/// Entries per `rte_eth_rss_reta_entry64` group.
const RETA_GROUP: usize = 64;
/// Drivers whose peer's TX queue `i` arrives on RX queue `i`: memif's
/// rings, virtio's virtqueue pairs (either end), net_ring's crossed rings.
const PAIRING_DRIVERS: [&str; 4] = ["net_memif", "net_virtio_user", "net_vhost", "net_ring"];

/// What `configure` chose, kept by the port.
#[derive(Clone, Debug)]
pub(super) struct Chosen {
    pub driver: String,
    pub offloads: Offloads,
    /// RSS configured (the table is programmed after start).
    pub rss: Option<RssLayout>,
    /// The key buffer `conf` points into; lives until configure returns.
    pub key: Vec<u8>,
}

/// The driver's name in `info`.
pub(super) fn driver_name(info: &dpdk_sys::rte_eth_dev_info) -> String {
    if info.driver_name.is_null() {
        return "unknown".into();
    }
    // SAFETY: DPDK sets driver_name to a static NUL-terminated string.
    unsafe { CStr::from_ptr(info.driver_name) }
        .to_string_lossy()
        .into_owned()
}

/// Decides the checksum offloads and RSS for a port of `queues` queues
/// on the device `info` describes, and writes them into `conf`.
pub(super) fn configure(
    info: &dpdk_sys::rte_eth_dev_info,
    mode: ChecksumOffload,
    queues: u16,
    device: &str,
    conf: &mut dpdk_sys::rte_eth_conf,
) -> Result<Chosen, DpdkError> {
    let driver = driver_name(info);
    let offloads = Offloads::choose(
        mode,
        info.tx_offload_capa,
        info.rx_offload_capa,
        device,
        &driver,
    )?;
    conf.txmode.offloads = offloads.tx_conf();
    conf.rxmode.offloads = offloads.rx_conf();
    let mut chosen = Chosen {
        driver,
        offloads,
        rss: None,
        key: Vec::new(),
    };
    let key_len = info.hash_key_size as usize;
    // A table whose size the queue count divides spreads by `hash % queues`
    // exactly: what a client computes knowing only the server's workers.
    let rss_ok = queues > 1
        && info.flow_type_rss_offloads & RSS_IPV4_UDP != 0
        && info.reta_size > 0
        && info.reta_size.is_multiple_of(queues)
        && key_len >= MIN_KEY;
    if rss_ok {
        chosen.key = (0..key_len)
            .map(|i| RSS_KEY.get(i).copied().unwrap_or(0))
            .collect();
        conf.rxmode.mq_mode = dpdk_sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf = dpdk_sys::rte_eth_rss_conf {
            rss_key: chosen.key.as_mut_ptr(),
            rss_key_len: info.hash_key_size,
            rss_hf: RSS_IPV4_UDP,
        };
        chosen.rss = Some(RssLayout {
            reta_size: info.reta_size,
            queues,
        });
    }
    Ok(chosen)
}

/// `rte_eth_dev_configure` with `conf`; a driver that advertises RSS yet
/// refuses it is configured again without (`chosen.rss` then `None`).
/// Returns the call's code.
pub(super) fn dev_configure(
    id: u16,
    queues: u16,
    conf: &mut dpdk_sys::rte_eth_conf,
    chosen: &mut Chosen,
) -> i32 {
    // SAFETY: id is valid; conf asks only for offloads and an RSS hash the
    // device advertises, and its key pointer (chosen.key) lives through
    // the call.
    let rc = unsafe { dpdk_sys::rte_eth_dev_configure(id, queues, queues, &*conf) };
    if rc == 0 || chosen.rss.is_none() {
        return rc;
    }
    conf.rxmode.mq_mode = dpdk_sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_NONE;
    conf.rx_adv_conf.rss_conf = dpdk_sys::rte_eth_rss_conf::default();
    chosen.rss = None;
    // SAFETY: as above, with RSS off.
    unsafe { dpdk_sys::rte_eth_dev_configure(id, queues, queues, &*conf) }
}

/// Programs the redirection table of a started port: entry `j` names queue
/// `j % queues`, the layout clients compute with.
pub(super) fn program_reta(port: u16, l: &RssLayout) -> Result<(), DpdkError> {
    let groups = (l.reta_size as usize).div_ceil(RETA_GROUP);
    let mut table: Vec<dpdk_sys::rte_eth_rss_reta_entry64> = (0..groups)
        .map(|_| dpdk_sys::rte_eth_rss_reta_entry64::default())
        .collect();
    for j in 0..l.reta_size as usize {
        let g = &mut table[j / RETA_GROUP];
        g.mask |= 1 << (j % RETA_GROUP);
        g.reta[j % RETA_GROUP] = l.entry(j as u32);
    }
    // SAFETY: port is started; `table` holds reta_size entries in groups
    // of 64 as the call requires, and outlives it.
    let rc =
        unsafe { dpdk_sys::rte_eth_dev_rss_reta_update(port, table.as_mut_ptr(), l.reta_size) };
    if rc != 0 {
        return Err(DpdkError::from_rc("rte_eth_dev_rss_reta_update", rc));
    }
    Ok(())
}

/// The driver side of `nic::steer::decide` for a started port.
#[derive(Debug)]
pub struct PortSteer<'a> {
    port: &'a Port,
}

impl<'a> PortSteer<'a> {
    /// Asks `port`'s driver.
    pub fn new(port: &'a Port) -> Self {
        PortSteer { port }
    }
}

impl SteerDriver for PortSteer<'_> {
    fn flow(&mut self, udp_port: u16, queue: u16) -> Result<(), String> {
        self.port
            .steer_udp_dst_port(udp_port, queue)
            .map_err(|e| match e {
                DpdkError::PortConfig { what, .. } => what,
                e => e.to_string(),
            })
    }

    fn flush_flows(&mut self) {
        let mut err = dpdk_sys::rte_flow_error::default();
        // SAFETY: valid port, valid out-pointer; removes only this port's rules.
        let _ = unsafe { dpdk_sys::rte_flow_flush(self.port.id(), &mut err) };
    }

    fn rss(&self) -> Option<RssLayout> {
        self.port.rss()
    }

    fn pairs_queues(&self) -> bool {
        PAIRING_DRIVERS.contains(&self.port.driver())
    }
}

#[cfg(test)]
mod tests {
    use crate::nic::{hash_ipv4_udp, RSS_KEY};
    use crate::rng::Rng;
    use std::net::Ipv4Addr;

    /// The engine's Toeplitz hash (what clients choose source ports with)
    /// is DPDK's `rte_softrss`, the hash the NICs compute, on random tuples.
    #[test]
    fn toeplitz_matches_dpdk_softrss() {
        let mut rng = Rng::new(34);
        for _ in 0..2000 {
            let (s, d) = (rng.next_u32(), rng.next_u32());
            let (sp, dp) = (rng.next_u32() as u16, rng.next_u32() as u16);
            let tuple = [s, d, (u32::from(sp) << 16) | u32::from(dp)];
            // SAFETY: a 3-word tuple and a 40-byte key (16 are read).
            let want = unsafe { dpdk_sys::shim_softrss(tuple.as_ptr(), 3, RSS_KEY.as_ptr()) };
            let got = hash_ipv4_udp(&RSS_KEY, (Ipv4Addr::from(s), sp), (Ipv4Addr::from(d), dp));
            assert_eq!(got, want, "{s:x} {d:x} {sp} {dp}");
        }
    }
}
