//! rte_flow rules on a port: steering one UDP destination port to one RX
//! queue, so worker i of a multi-queue NIC sees only its own traffic
//! (`nic::steer` decides when to ask; drivers without rte_flow refuse).

use super::{DpdkError, Port};
use std::ffi::CStr;

impl Port {
    /// Steers IPv4/UDP frames with destination port `udp_port` to RX queue
    /// `queue` with an rte_flow rule, so worker `queue` sees only its own
    /// traffic on a multi-queue NIC. Virtual devices (and some NICs) do not
    /// support rte_flow: the error says so and callers fall back (see README,
    /// "Real NICs").
    pub fn steer_udp_dst_port(&self, udp_port: u16, queue: u16) -> Result<(), DpdkError> {
        // struct rte_flow_item_udp is { struct rte_udp_hdr hdr; }: four
        // big-endian u16s. Written here rather than bound (packed header type).
        #[repr(C)]
        struct UdpHdr {
            src_port: u16,
            dst_port: u16,
            dgram_len: u16,
            dgram_cksum: u16,
        }
        let spec = UdpHdr {
            src_port: 0,
            dst_port: udp_port.to_be(),
            dgram_len: 0,
            dgram_cksum: 0,
        };
        let mask = UdpHdr {
            src_port: 0,
            dst_port: 0xffff,
            dgram_len: 0,
            dgram_cksum: 0,
        };
        let attr = dpdk_sys::rte_flow_attr {
            _bitfield_1: dpdk_sys::rte_flow_attr::new_bitfield_1(1, 0, 0, 0), // ingress, egress, transfer, reserved
            ..Default::default()
        };
        let item = |type_, spec: *const UdpHdr, mask: *const UdpHdr| dpdk_sys::rte_flow_item {
            type_,
            spec: spec.cast(),
            last: std::ptr::null(),
            mask: mask.cast(),
        };
        let none = std::ptr::null();
        let pattern = [
            item(
                dpdk_sys::rte_flow_item_type_RTE_FLOW_ITEM_TYPE_ETH,
                none,
                none,
            ),
            item(
                dpdk_sys::rte_flow_item_type_RTE_FLOW_ITEM_TYPE_IPV4,
                none,
                none,
            ),
            item(
                dpdk_sys::rte_flow_item_type_RTE_FLOW_ITEM_TYPE_UDP,
                &spec,
                &mask,
            ),
            item(
                dpdk_sys::rte_flow_item_type_RTE_FLOW_ITEM_TYPE_END,
                none,
                none,
            ),
        ];
        let q = dpdk_sys::rte_flow_action_queue { index: queue };
        let actions = [
            dpdk_sys::rte_flow_action {
                type_: dpdk_sys::rte_flow_action_type_RTE_FLOW_ACTION_TYPE_QUEUE,
                conf: (&q as *const dpdk_sys::rte_flow_action_queue).cast(),
            },
            dpdk_sys::rte_flow_action {
                type_: dpdk_sys::rte_flow_action_type_RTE_FLOW_ACTION_TYPE_END,
                conf: std::ptr::null(),
            },
        ];
        let mut err = dpdk_sys::rte_flow_error::default();
        // SAFETY: every pointer refers to a local that outlives the call; the
        // pattern and action lists are END-terminated as rte_flow requires.
        let flow = unsafe {
            dpdk_sys::rte_flow_create(
                self.id(),
                &attr,
                pattern.as_ptr(),
                actions.as_ptr(),
                &mut err,
            )
        };
        if flow.is_null() {
            let why = if err.message.is_null() {
                "no reason given".to_string()
            } else {
                // SAFETY: DPDK sets message to a static NUL-terminated string.
                unsafe { CStr::from_ptr(err.message) }
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(DpdkError::PortConfig {
                port: self.id(),
                what: format!("rte_flow rule UDP dst {udp_port} -> queue {queue} refused: {why}"),
            });
        }
        Ok(())
    }
}
