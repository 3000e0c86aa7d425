//! The in-process wire: a crossover pair of rte_rings per queue pair,
//! exposed as an ethdev (`rte_eth_from_rings`), so two workers of one
//! process talk to each other without a NIC or a peer process.

use super::DpdkError;
use std::ffi::CString;

/// Creates an in-process wire as a port named `name` (it must start with
/// `net_ring_`) with `queues` queue pairs: the frames queue `i` sends arrive
/// on the RX queue of its partner `i ^ 1` (workers 0 and 1 talk to each
/// other, 2 and 3, ...); a last unpaired queue receives its own frames.
/// Each direction is a ring of `entries` slots (a power of two; it holds
/// `entries - 1` frames). Call it after EAL init and before [`Port::open`](super::Port::open).
pub fn create_crossover_ring(name: &str, queues: u16, entries: u32) -> Result<(), DpdkError> {
    let short = name.strip_prefix("net_ring_").unwrap_or("");
    if short.is_empty() || queues == 0 || !entries.is_power_of_two() {
        return Err(DpdkError::BadArgument {
            arg: format!("{name} ({queues} queues, {entries} entries)"),
            why: "a ring port's name starts with net_ring_, it has queues, its rings a power-of-two size",
        });
    }
    // rte_eth_from_rings names the port "net_ring_" + its argument.
    let c_name = CString::new(short).map_err(|_| DpdkError::BadArgument {
        arg: name.into(),
        why: "device name contains a NUL byte",
    })?;
    // SAFETY: no preconditions once EAL runs.
    let socket = unsafe { dpdk_sys::rte_socket_id() };
    let mut rings = Vec::with_capacity(queues as usize);
    for q in 0..queues {
        let ring_name =
            CString::new(format!("{name}_{q}")).map_err(|_| DpdkError::BadArgument {
                arg: name.into(),
                why: "device name contains a NUL byte",
            })?;
        // SAFETY: a valid C string; one producer (the partner's TX queue)
        // and one consumer (this RX queue), as the flags say.
        let r = unsafe {
            dpdk_sys::rte_ring_create(
                ring_name.as_ptr(),
                entries,
                socket as i32,
                dpdk_sys::RING_F_SP_ENQ | dpdk_sys::RING_F_SC_DEQ,
            )
        };
        if r.is_null() {
            return Err(DpdkError::from_errno("rte_ring_create"));
        }
        rings.push(r);
    }
    let partner = |q: usize| if q ^ 1 < rings.len() { q ^ 1 } else { q };
    let tx: Vec<*mut dpdk_sys::rte_ring> = (0..rings.len()).map(|q| rings[partner(q)]).collect();
    // SAFETY: both arrays hold `queues` valid rings that live for the rest
    // of the process (never freed: the port uses them until exit).
    let rc = unsafe {
        dpdk_sys::rte_eth_from_rings(
            c_name.as_ptr(),
            rings.as_ptr(),
            queues as u32,
            tx.as_ptr(),
            queues as u32,
            socket,
        )
    };
    if rc < 0 {
        return Err(DpdkError::from_errno("rte_eth_from_rings"));
    }
    Ok(())
}
