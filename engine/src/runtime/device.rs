//! [`Device`]: which DPDK device a [`Nexus`](super::Nexus) opens. The one
//! place a device's EAL argument (`--vdev SPEC` or `-a ADDR`), port name,
//! real receive-ring size, promiscuous mode and limits are derived, so they
//! cannot disagree: memif between two processes, af_packet on a kernel
//! interface (or its veth peer), the in-process ring wire or net_ring
//! loopback, net_null, net_pcap, virtio (net_vhost, the vhost-user
//! backend, against net_virtio_user, the virtio-net driver of KVM guests),
//! af_xdp on a kernel interface, a raw vdev spec, or a PCI NIC. A device
//! keeps how it was named (a raw spec, the peer of an interface), so its
//! refusals name the config key that set the refused value; it displays as
//! what a person waits on ("memif socket /tmp/x.sock", "af_packet iface
//! veth0p"), and a memif server checks that no other process holds its
//! socket before EAL starts ([`Device::check_free`]); a virtio driver
//! waits there for its backend's socket and an af_xdp port checks that its
//! interface exists (`peer_check`).

use super::limits::{
    BuilderError, MAX_IFACE_LEN, MAX_SOCKET_PATH, MEMIF_MAX_LOG2_RING, MEMIF_MAX_RING,
};
use super::RuntimeError;
use crate::dpdk::EalBuilder;

/// Which DPDK device a [`Nexus`](super::Nexus) runs on. Each constructor
/// derives both the EAL argument and the port name.
///
/// By default memif and af_packet rings are sized from the RX descriptor
/// count (their drivers take the size from devargs, not from the queue
/// setup), so the lossless reservation counts the ring that really exists;
/// [`driver_ring_size`](Self::driver_ring_size) leaves the driver's default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    kind: Kind,
    size_rings: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Memif {
        server: bool,
        socket: String,
    },
    /// `peer`: open `iface` + "p", the other end of the veth pair.
    AfPacket {
        iface: String,
        peer: bool,
        qdisc_bypass: bool,
    },
    /// `backend`: net_vhost, which creates `socket` and listens on it;
    /// otherwise net_virtio_user, which connects to it.
    Virtio {
        backend: bool,
        socket: String,
    },
    /// `peer`: open `iface` + "p", as for af_packet.
    AfXdp {
        iface: String,
        peer: bool,
    },
    Ring {
        name: String,
    },
    RingLoopback,
    Null,
    Pcap {
        rx: String,
        tx: String,
    },
    Pci {
        addr: String,
    },
    Vdev {
        spec: String,
    },
}

/// memif's socket when a spec names none (the driver's default).
const MEMIF_DEFAULT_SOCKET: &str = "/run/memif.sock";
/// memif's ring when the spec sets no `rsize` (the driver's default, 2^10).
const MEMIF_DEFAULT_LOG2_RING: u32 = 10;
/// af_packet's frames when the spec sets no `framecnt` (the driver's default).
const AF_PACKET_DEFAULT_FRAMES: usize = 512;
/// The net_ring vdev creates its rings with 1024 slots, whatever the
/// descriptor count; an rte_ring holds one less than its size.
const NET_RING_ENTRIES: usize = 1023;
/// net_virtio_user's virtqueue size when the spec sets no `queue_size`
/// (the driver's default).
const VIRTIO_DEFAULT_QUEUE: usize = 256;

impl Device {
    fn of(kind: Kind) -> Self {
        Device {
            kind,
            size_rings: true,
        }
    }

    /// The listening side of a shared-memory wire between two processes
    /// (`net_memif`). Start it before the client, or let the client wait.
    ///
    /// memif rings are created by the client with the client's `rsize`
    /// (the server only sets an upper bound), so this end's real RX ring is
    /// as large as the *client's*: give both processes the same RX
    /// descriptor count, or lossless accounting on the server is off.
    pub fn memif_server(socket: impl Into<String>) -> Self {
        Self::of(Kind::Memif {
            server: true,
            socket: socket.into(),
        })
    }

    /// The connecting side of a memif wire; it waits for the server up to
    /// the link timeout ([`NexusBuilder::link_timeout`](super::NexusBuilder::link_timeout))
    /// or until stopped ([`NexusBuilder::stop_on`](super::NexusBuilder::stop_on)).
    pub fn memif_client(socket: impl Into<String>) -> Self {
        Self::of(Kind::Memif {
            server: false,
            socket: socket.into(),
        })
    }

    /// An in-process wire (rings, no vdev): worker `2k`'s frames arrive at
    /// worker `2k + 1` and back, so two workers of one process talk to each
    /// other; a last unpaired worker hears itself. The port is named
    /// `net_ring_NAME` (`name` as given if it starts with `net_ring_`).
    pub fn ring(name: impl Into<String>) -> Self {
        let name = name.into();
        let name = if name.starts_with("net_ring_") {
            name
        } else {
            format!("net_ring_{name}")
        };
        Self::of(Kind::Ring { name })
    }

    /// The net_ring vdev (`net_ring0`): each queue's transmitted frames come
    /// back on the same queue, so one worker talks to itself. Its rings hold
    /// 1023 frames whatever the descriptor count.
    pub fn ring_loopback() -> Self {
        Self::of(Kind::RingLoopback)
    }

    /// Kernel AF_PACKET on interface `iface` (`net_af_packet`, e.g. one end
    /// of a veth pair), one socket per queue pair, sending with
    /// `PACKET_QDISC_BYPASS` (see [`qdisc_bypass`](Self::qdisc_bypass)).
    pub fn af_packet(iface: impl Into<String>) -> Self {
        Self::of(Kind::AfPacket {
            iface: iface.into(),
            peer: false,
            qdisc_bypass: true,
        })
    }

    /// af_packet on the veth peer of `iface`: the interface `iface` + "p",
    /// as `scripts/veth.sh up IFACE` names the pair. A run's server opens
    /// `iface` ([`af_packet`](Self::af_packet)), its client the peer; a
    /// name too long for `IFNAMSIZ` is refused naming `iface`, the name the
    /// user gave.
    pub fn af_packet_peer(iface: impl Into<String>) -> Self {
        Self::of(Kind::AfPacket {
            iface: iface.into(),
            peer: true,
            qdisc_bypass: true,
        })
    }

    /// af_packet: `false` sends through the interface's qdisc (so a `tbf`
    /// on it applies), `true` (the default, DPDK's) bypasses it. Other
    /// devices have no qdisc: unchanged.
    pub fn qdisc_bypass(mut self, on: bool) -> Self {
        if let Kind::AfPacket { qdisc_bypass, .. } = &mut self.kind {
            *qdisc_bypass = on;
        }
        self
    }

    /// The vhost-user backend (`net_vhost`, OVS-DPDK's side): it creates
    /// `socket` and listens without blocking; its link comes up when a
    /// driver ([`virtio_user`](Self::virtio_user)) has set up its queues,
    /// and a driver that leaves and comes back is taken again.
    pub fn vhost(socket: impl Into<String>) -> Self {
        Self::of(Kind::Virtio {
            backend: true,
            socket: socket.into(),
        })
    }

    /// The virtio-net driver of a KVM guest, in user space
    /// (`net_virtio_user`), on a backend's `socket`. Its probe fails when
    /// nobody listens there, so the Nexus first waits for the socket up to
    /// the link timeout ([`RuntimeError::NoBackend`] past it).
    pub fn virtio_user(socket: impl Into<String>) -> Self {
        Self::of(Kind::Virtio {
            backend: false,
            socket: socket.into(),
        })
    }

    /// AF_XDP on kernel interface `iface` (`net_af_xdp`, e.g. one end of a
    /// veth pair), queues `0..queues` of the interface. A missing interface
    /// is refused before EAL starts ([`RuntimeError::NoInterface`]).
    pub fn af_xdp(iface: impl Into<String>) -> Self {
        Self::of(Kind::AfXdp {
            iface: iface.into(),
            peer: false,
        })
    }

    /// af_xdp on the veth peer of `iface` (`iface` + "p"), as
    /// [`af_packet_peer`](Self::af_packet_peer).
    pub fn af_xdp_peer(iface: impl Into<String>) -> Self {
        Self::of(Kind::AfXdp {
            iface: iface.into(),
            peer: true,
        })
    }

    /// An endless RX source and TX sink (`net_null0,copy=1`): the driver
    /// path with no wire.
    pub fn null() -> Self {
        Self::of(Kind::Null)
    }

    /// Frames replayed from the pcap file `rx` and captured into `tx`
    /// (`net_pcap0`).
    pub fn pcap(rx: impl Into<String>, tx: impl Into<String>) -> Self {
        Self::of(Kind::Pcap {
            rx: rx.into(),
            tx: tx.into(),
        })
    }

    /// A raw vdev spec, taken as given (the port is named by the spec up to
    /// its first comma). memif and af_packet specs without `rsize` /
    /// `framecnt` get them from the descriptor count like the typed devices.
    pub fn vdev(spec: impl Into<String>) -> Self {
        Self::of(Kind::Vdev { spec: spec.into() })
    }

    /// A real NIC by PCI address (bound to a DPDK driver; usually needs
    /// hugepages: [`NexusBuilder::hugepages`](super::NexusBuilder::hugepages)).
    pub fn pci(addr: impl Into<String>) -> Self {
        Self::of(Kind::Pci { addr: addr.into() })
    }

    /// Leaves memif's and af_packet's ring sizes to the driver (no `rsize`
    /// or `framecnt` in the spec: 1024 and 512 frames), for tools that move
    /// raw frames and reserve nothing.
    pub fn driver_ring_size(mut self) -> Self {
        self.size_rings = false;
        self
    }

    /// Whether this is a real NIC (PCI) rather than a virtual device.
    pub fn is_pci(&self) -> bool {
        matches!(self.kind, Kind::Pci { .. })
    }

    /// Promiscuous mode, decided here only: off on a real NIC (an endpoint's
    /// frames are addressed to its port's MAC or broadcast, and a shared
    /// segment's other traffic must not reach the run loop), on for virtual
    /// devices (af_packet then sets `IFF_PROMISC` on the kernel interface so
    /// frames to a MAC learned late, or made up by a test, still arrive;
    /// memif, ring, null and pcap have no MAC filter).
    pub fn promiscuous(&self) -> bool {
        !self.is_pci()
    }

    /// The DPDK port name (`net_memif0`, `net_af_packet0`, the ring's name,
    /// `net_ring0`, `net_null0`, `net_pcap0`, a raw spec's name, or the PCI
    /// address).
    pub fn port_name(&self) -> String {
        match &self.kind {
            Kind::Memif { .. } => "net_memif0".into(),
            Kind::AfPacket { .. } => "net_af_packet0".into(),
            Kind::Virtio { backend: true, .. } => "net_vhost0".into(),
            Kind::Virtio { backend: false, .. } => "virtio_user0".into(),
            Kind::AfXdp { .. } => "net_af_xdp0".into(),
            Kind::Ring { name } => name.clone(),
            Kind::RingLoopback => "net_ring0".into(),
            Kind::Null => "net_null0".into(),
            Kind::Pcap { .. } => "net_pcap0".into(),
            Kind::Pci { addr } => addr.clone(),
            Kind::Vdev { spec } => spec.split(',').next().unwrap_or(spec).to_string(),
        }
    }

    /// The `--vdev` spec for `queues` queue pairs of `rx_desc` entries, or
    /// `None` (a PCI NIC, or the ring wire, which is created after EAL init).
    pub fn vdev_spec(&self, queues: u16, rx_desc: u16) -> Option<String> {
        let size = self.size_rings;
        Some(match &self.kind {
            Kind::Memif { server, socket } => {
                let role = if *server { "server" } else { "client" };
                let mut s = format!("net_memif0,role={role},socket={socket}");
                if size {
                    s += &format!(",rsize={}", memif_log2(rx_desc));
                }
                s
            }
            Kind::AfPacket {
                iface,
                peer,
                qdisc_bypass,
            } => {
                let p = if *peer { "p" } else { "" };
                let mut s = format!("net_af_packet0,iface={iface}{p},qpairs={}", queues.max(1));
                if !qdisc_bypass {
                    s += ",qdisc_bypass=0";
                }
                if size {
                    s += &format!(",framecnt={rx_desc}");
                }
                s
            }
            // Both ends get the queue count: the driver asks for `queues`
            // pairs and the backend must offer as many.
            Kind::Virtio { backend, socket } => match (backend, size) {
                (true, _) => format!("net_vhost0,iface={socket},queues={}", queues.max(1)),
                (false, sized) => {
                    let q = format!("virtio_user0,path={socket},queues={}", queues.max(1));
                    match sized {
                        true => format!("{q},queue_size={}", virtio_queue(rx_desc)),
                        false => q,
                    }
                }
            },
            Kind::AfXdp { iface, peer } => {
                let p = if *peer { "p" } else { "" };
                format!(
                    "net_af_xdp0,iface={iface}{p},start_queue=0,queue_count={}",
                    queues.max(1)
                )
            }
            Kind::RingLoopback => "net_ring0".into(),
            Kind::Null => "net_null0,copy=1".into(),
            Kind::Pcap { rx, tx } => format!("net_pcap0,rx_pcap={rx},tx_pcap={tx}"),
            Kind::Vdev { spec } => {
                let mut s = spec.clone();
                if size && is_memif(spec) && devarg(spec, "rsize").is_none() {
                    s += &format!(",rsize={}", memif_log2(rx_desc));
                } else if size && is_af_packet(spec) && devarg(spec, "framecnt").is_none() {
                    s += &format!(",framecnt={rx_desc}");
                }
                s
            }
            Kind::Ring { .. } | Kind::Pci { .. } => return None,
        })
    }

    /// Adds this device's EAL arguments to `eal`.
    pub fn apply(&self, eal: EalBuilder, queues: u16, rx_desc: u16) -> EalBuilder {
        match (&self.kind, self.vdev_spec(queues, rx_desc)) {
            (_, Some(spec)) => eal.vdev(spec),
            (Kind::Pci { addr }, None) => eal.pci(addr.clone()),
            _ => eal,
        }
    }

    /// Frames one RX queue's ring really holds with `rx_desc` descriptors:
    /// memif `2^rsize`, af_packet `framecnt` (or the drivers' defaults),
    /// the ring wire one less than its power-of-two size, net_ring 1023, a
    /// raw spec what its devargs say, the others `rx_desc`.
    pub fn rx_ring_entries(&self, rx_desc: u16) -> usize {
        match &self.kind {
            Kind::Memif { .. } => memif_entries(self.memif_rsize(None, rx_desc)),
            Kind::AfPacket { .. } => self.af_packet_frames(None, rx_desc),
            Kind::Ring { .. } => ring_slots(rx_desc) as usize - 1,
            Kind::RingLoopback => NET_RING_ENTRIES,
            // Both ends' RX ring is a virtqueue of the driver's size.
            Kind::Virtio { .. } if self.size_rings => virtio_queue(rx_desc),
            Kind::Virtio { .. } => VIRTIO_DEFAULT_QUEUE,
            Kind::AfXdp { .. } | Kind::Null | Kind::Pcap { .. } | Kind::Pci { .. } => {
                rx_desc as usize
            }
            Kind::Vdev { spec } if is_memif(spec) => {
                memif_entries(self.memif_rsize(Some(spec), rx_desc))
            }
            Kind::Vdev { spec } if is_af_packet(spec) => self.af_packet_frames(Some(spec), rx_desc),
            Kind::Vdev { spec } if spec.starts_with("net_ring") => NET_RING_ENTRIES,
            Kind::Vdev { .. } => rx_desc as usize,
        }
    }

    /// `rsize` of a memif ring: the spec's, else from `rx_desc` or the
    /// driver's default.
    fn memif_rsize(&self, spec: Option<&str>, rx_desc: u16) -> u32 {
        match spec.and_then(|s| devarg(s, "rsize")) {
            Some(v) => v.parse().unwrap_or(MEMIF_DEFAULT_LOG2_RING),
            None if self.size_rings => memif_log2(rx_desc),
            None => MEMIF_DEFAULT_LOG2_RING,
        }
    }

    fn af_packet_frames(&self, spec: Option<&str>, rx_desc: u16) -> usize {
        match spec.and_then(|s| devarg(s, "framecnt")) {
            Some(v) => v.parse().unwrap_or(AF_PACKET_DEFAULT_FRAMES),
            None if self.size_rings => rx_desc as usize,
            None => AF_PACKET_DEFAULT_FRAMES,
        }
    }

    /// What DPDK or the kernel would refuse with `rx_desc` RX descriptors:
    /// a memif ring over `2^14` entries, a socket path longer than
    /// `sun_path`, an interface name (the peer's with its "p") longer than
    /// `IFNAMSIZ`.
    pub fn validate(&self, rx_desc: u16) -> Result<(), BuilderError> {
        let memif_spec = match &self.kind {
            Kind::Memif { .. } => Some(None),
            Kind::Vdev { spec } if is_memif(spec) => Some(Some(spec.as_str())),
            _ => None,
        };
        if let Some(spec) = memif_spec {
            let rsize = self.memif_rsize(spec, rx_desc);
            if rsize > MEMIF_MAX_LOG2_RING {
                let entries = memif_entries(rsize);
                debug_assert!(entries > MEMIF_MAX_RING);
                // The spec is at fault only if its own rsize asked for the
                // ring; one it leaves unsized is sized from the descriptors.
                let vdev = spec.filter(|s| devarg(s, "rsize").is_some());
                return Err(BuilderError::MemifRing {
                    entries,
                    rx_desc,
                    vdev: vdev.map(str::to_string),
                });
            }
        }
        match &self.kind {
            Kind::Memif { socket, .. } | Kind::Virtio { socket, .. }
                if socket.is_empty() || socket.len() > MAX_SOCKET_PATH =>
            {
                Err(BuilderError::SocketPath {
                    path: socket.clone(),
                })
            }
            Kind::AfPacket { iface, peer, .. } | Kind::AfXdp { iface, peer } => {
                let opened = iface.len() + usize::from(*peer);
                match (1..=MAX_IFACE_LEN).contains(&opened) {
                    true => Ok(()),
                    false => Err(BuilderError::IfaceName {
                        iface: iface.clone(),
                        peer: *peer,
                    }),
                }
            }
            _ => Ok(()),
        }
    }

    /// Whether the driver registers the pool as one span (net_af_xdp's
    /// UMEM): [`Mempool::new_packed`](crate::dpdk::Mempool::new_packed).
    pub(super) fn needs_packed_pool(&self) -> bool {
        match &self.kind {
            Kind::AfXdp { .. } => true,
            Kind::Vdev { spec } => spec.starts_with("net_af_xdp"),
            _ => false,
        }
    }

    /// What `peer_check` waits for or checks before EAL starts.
    pub(super) fn peer_need(&self) -> Option<super::peer_check::Need<'_>> {
        use super::peer_check::Need;
        match &self.kind {
            Kind::Virtio {
                backend: false,
                socket,
            } => Some(Need::Backend(socket)),
            Kind::Virtio {
                backend: true,
                socket,
            } => Some(Need::OwnSocket(socket)),
            Kind::AfXdp { iface, peer } => Some(Need::Interface(iface, *peer)),
            _ => None,
        }
    }

    /// Whether this is the client end of a memif wire.
    pub(super) fn is_memif_client(&self) -> bool {
        matches!(self.kind, Kind::Memif { server: false, .. })
    }

    /// A memif server's socket, if this is one: `(path, abstract name)` as
    /// DPDK 22.11 binds it (a raw spec's `socket`, default
    /// `/run/memif.sock`; `socket-abstract`, default yes; a spec's role
    /// defaults to server).
    fn memif_server_socket(&self) -> Option<(&str, bool)> {
        match &self.kind {
            Kind::Memif {
                server: true,
                socket,
            } => Some((socket, true)),
            Kind::Vdev { spec } if is_memif(spec) => {
                let role = devarg(spec, "role").unwrap_or("server");
                let abstract_name = devarg(spec, "socket-abstract") != Some("no");
                let socket = devarg(spec, "socket").unwrap_or(MEMIF_DEFAULT_SOCKET);
                (role == "server" || role == "master").then_some((socket, abstract_name))
            }
            _ => None,
        }
    }

    /// Refuses a memif server whose socket another process listens on
    /// ([`RuntimeError::SocketInUse`]): checked before EAL starts, since
    /// DPDK's probe would only log "Address already in use" and leave the
    /// port missing. Other devices pass.
    pub fn check_free(&self) -> Result<(), RuntimeError> {
        match self.memif_server_socket() {
            Some((socket, abstract_name))
                if crate::dpdk::memif_server_socket_in_use(socket, abstract_name) =>
            {
                Err(RuntimeError::SocketInUse {
                    socket: socket.to_string(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Creates a device that is not a vdev (the ring wire), after EAL init.
    pub(super) fn create_after_eal(&self, queues: u16, rx_desc: u16) -> Result<(), RuntimeError> {
        if let Kind::Ring { name } = &self.kind {
            crate::dpdk::create_crossover_ring(name, queues, ring_slots(rx_desc))?;
        }
        Ok(())
    }
}

/// What a memif device is named in messages: its socket, peer interface,
/// ring, file or address; a raw spec that is not memif or af_packet as given.
impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Memif { socket, .. } => write!(f, "memif socket {socket}"),
            Kind::AfPacket { iface, peer, .. } => {
                write!(f, "af_packet iface {iface}{}", if *peer { "p" } else { "" })
            }
            Kind::Virtio { backend, socket } => {
                let what = ["vhost-user backend at", "vhost-user socket"][usize::from(*backend)];
                write!(f, "{what} {socket}")
            }
            Kind::AfXdp { iface, peer } => {
                write!(f, "af_xdp iface {iface}{}", if *peer { "p" } else { "" })
            }
            Kind::Ring { name } => write!(f, "ring wire {name}"),
            Kind::RingLoopback => f.write_str("net_ring0 loopback"),
            Kind::Null => f.write_str("net_null0"),
            Kind::Pcap { rx, tx } => write!(f, "pcap {rx} -> {tx}"),
            Kind::Pci { addr } => write!(f, "PCI NIC {addr}"),
            Kind::Vdev { spec } if is_memif(spec) => {
                let socket = devarg(spec, "socket").unwrap_or(MEMIF_DEFAULT_SOCKET);
                write!(f, "memif socket {socket}")
            }
            Kind::Vdev { spec } if is_af_packet(spec) => {
                write!(
                    f,
                    "af_packet iface {}",
                    devarg(spec, "iface").unwrap_or("?")
                )
            }
            Kind::Vdev { spec } => write!(f, "vdev {spec}"),
        }
    }
}

fn is_memif(spec: &str) -> bool {
    spec.starts_with("net_memif")
}

fn is_af_packet(spec: &str) -> bool {
    spec.starts_with("net_af_packet")
}

/// The value of devarg `key` in a vdev spec (`name,key=value,...`).
fn devarg<'a>(spec: &'a str, key: &str) -> Option<&'a str> {
    spec.split(',')
        .skip(1)
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// memif's `rsize` for `rx_desc` entries: the largest power of two not
/// above it (`Device::validate` refuses what DPDK would).
fn memif_log2(rx_desc: u16) -> u32 {
    rx_desc.max(2).ilog2()
}

/// Entries of a memif ring of `2^rsize` (saturating for absurd specs).
fn memif_entries(rsize: u32) -> usize {
    1usize.checked_shl(rsize).unwrap_or(usize::MAX)
}

/// net_virtio_user's `queue_size` for `rx_desc` descriptors: the largest
/// power of two not above it (virtqueues are powers of two).
fn virtio_queue(rx_desc: u16) -> usize {
    1 << rx_desc.max(2).ilog2()
}

fn ring_slots(rx_desc: u16) -> u32 {
    (rx_desc as u32).max(2).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_name_their_port_and_eal_argument_together() {
        let d = Device::memif_client("/tmp/x.sock");
        assert_eq!(d.port_name(), "net_memif0");
        assert_eq!(
            d.vdev_spec(2, 1000).unwrap(),
            "net_memif0,role=client,socket=/tmp/x.sock,rsize=9"
        );
        assert_eq!(d.rx_ring_entries(1000), 512);
        let a = Device::af_packet("veth0");
        assert_eq!(
            a.vdev_spec(2, 1024).unwrap(),
            "net_af_packet0,iface=veth0,qpairs=2,framecnt=1024"
        );
        assert_eq!(a.rx_ring_entries(1024), 1024);
        let peer = Device::af_packet_peer("veth0");
        assert_eq!(
            peer.vdev_spec(1, 1024).unwrap(),
            "net_af_packet0,iface=veth0p,qpairs=1,framecnt=1024"
        );
        let r = Device::ring("hello");
        assert_eq!(r.port_name(), "net_ring_hello");
        assert_eq!(r.vdev_spec(2, 1024), None);
        assert_eq!(r.rx_ring_entries(1024), 1023);
        let p = Device::pci("0000:01:00.0");
        let args = p.apply(EalBuilder::new(), 1, 512).args().unwrap();
        assert!(args.windows(2).any(|w| w == ["-a", "0000:01:00.0"]));
    }

    #[test]
    fn every_vdev_kind_and_the_driver_ring_size() {
        let bypass = Device::af_packet("v").qdisc_bypass(false);
        assert_eq!(
            bypass.vdev_spec(1, 64).unwrap(),
            "net_af_packet0,iface=v,qpairs=1,qdisc_bypass=0,framecnt=64"
        );
        let raw = bypass.driver_ring_size();
        assert_eq!(
            raw.vdev_spec(1, 64).unwrap(),
            "net_af_packet0,iface=v,qpairs=1,qdisc_bypass=0"
        );
        assert_eq!(raw.rx_ring_entries(64), 512);
        let m = Device::memif_server("/s").driver_ring_size();
        assert_eq!(
            m.vdev_spec(1, 4096).unwrap(),
            "net_memif0,role=server,socket=/s"
        );
        assert_eq!(m.rx_ring_entries(4096), 1024);
        for (d, spec, name) in [
            (Device::ring_loopback(), "net_ring0", "net_ring0"),
            (Device::null(), "net_null0,copy=1", "net_null0"),
            (
                Device::pcap("/a", "/b"),
                "net_pcap0,rx_pcap=/a,tx_pcap=/b",
                "net_pcap0",
            ),
        ] {
            assert_eq!(
                (d.vdev_spec(1, 64).unwrap(), d.port_name()),
                (spec.into(), name.into())
            );
            assert!(d.promiscuous());
        }
        assert_eq!(Device::ring_loopback().rx_ring_entries(4096), 1023);
        assert!(!Device::pci("0000:01:00.0").promiscuous());
    }

    #[test]
    fn virtio_and_af_xdp_name_both_ends() {
        let b = Device::vhost("/tmp/v.sock");
        assert_eq!(
            (b.port_name(), b.vdev_spec(2, 1024).unwrap()),
            (
                "net_vhost0".into(),
                "net_vhost0,iface=/tmp/v.sock,queues=2".into()
            )
        );
        let d = Device::virtio_user("/tmp/v.sock");
        assert_eq!(
            (d.port_name(), d.vdev_spec(1, 3000).unwrap()),
            (
                "virtio_user0".into(),
                "virtio_user0,path=/tmp/v.sock,queues=1,queue_size=2048".into()
            )
        );
        assert_eq!(
            (b.rx_ring_entries(3000), d.rx_ring_entries(3000)),
            (2048, 2048)
        );
        let raw = d.clone().driver_ring_size();
        assert_eq!(
            raw.vdev_spec(1, 64).unwrap(),
            "virtio_user0,path=/tmp/v.sock,queues=1"
        );
        assert_eq!(raw.rx_ring_entries(64), 256);
        assert_eq!(d.to_string(), "vhost-user backend at /tmp/v.sock");
        assert_eq!(b.to_string(), "vhost-user socket /tmp/v.sock");
        let x = Device::af_xdp_peer("veth0");
        assert_eq!(
            (x.port_name(), x.vdev_spec(1, 512).unwrap()),
            (
                "net_af_xdp0".into(),
                "net_af_xdp0,iface=veth0p,start_queue=0,queue_count=1".into()
            )
        );
        assert_eq!(x.to_string(), "af_xdp iface veth0p");
        assert!(x.promiscuous() && x.needs_packed_pool());
        assert!(Device::vdev("net_af_xdp0,iface=e").needs_packed_pool());
        assert!(!b.needs_packed_pool() && !Device::af_packet("v").needs_packed_pool());
        use super::super::peer_check::Need;
        assert_eq!(d.peer_need(), Some(Need::Backend("/tmp/v.sock")));
        assert_eq!(b.peer_need(), Some(Need::OwnSocket("/tmp/v.sock")));
        assert_eq!(x.peer_need(), Some(Need::Interface("veth0", true)));
        assert_eq!(Device::memif_client("/m").peer_need(), None);
        // The limits af_packet and memif have apply to them too.
        assert_eq!(
            Device::af_xdp_peer("fifteen-bytes!!")
                .validate(1024)
                .map_err(|e| e.key()),
            Err("link.iface")
        );
        assert_eq!(
            Device::virtio_user("").validate(1024).map_err(|e| e.key()),
            Err("link.socket")
        );
    }

    #[test]
    fn raw_specs_get_ring_sizes_they_do_not_set() {
        let d = Device::vdev("net_memif0,role=server,socket=/v");
        assert_eq!(d.port_name(), "net_memif0");
        assert_eq!(
            d.vdev_spec(1, 1024).unwrap(),
            "net_memif0,role=server,socket=/v,rsize=10"
        );
        let d = Device::vdev("net_memif0,role=client,socket=/v,rsize=8");
        assert_eq!(
            d.vdev_spec(1, 1024).unwrap(),
            "net_memif0,role=client,socket=/v,rsize=8"
        );
        assert_eq!(d.rx_ring_entries(1024), 256);
        let d = Device::vdev("net_af_packet0,iface=x");
        assert_eq!(
            d.vdev_spec(1, 128).unwrap(),
            "net_af_packet0,iface=x,framecnt=128"
        );
        let d = Device::vdev("net_af_packet0,iface=x,framecnt=64");
        assert_eq!(d.rx_ring_entries(1024), 64);
        let d = Device::vdev("net_null0");
        assert_eq!(
            (d.vdev_spec(1, 64).unwrap(), d.port_name()),
            ("net_null0".into(), "net_null0".into())
        );
        assert_eq!(devarg("net_memif0,rsizex=1,rsize=3", "rsize"), Some("3"));
    }

    #[test]
    fn devices_display_as_what_is_waited_on() {
        let cases = [
            (
                Device::memif_server("/tmp/s.sock"),
                "memif socket /tmp/s.sock",
            ),
            (Device::af_packet("veth0"), "af_packet iface veth0"),
            (Device::af_packet_peer("veth0"), "af_packet iface veth0p"),
            (Device::pci("0000:01:00.0"), "PCI NIC 0000:01:00.0"),
            (
                Device::vdev("net_memif0,role=client"),
                "memif socket /run/memif.sock",
            ),
            (
                Device::vdev("net_af_packet0,iface=e1"),
                "af_packet iface e1",
            ),
            (Device::vdev("net_null0"), "vdev net_null0"),
        ];
        for (d, text) in cases {
            assert_eq!(d.to_string(), text);
        }
    }

    #[test]
    fn only_memif_servers_have_a_socket_to_check() {
        let server = |d: Device| d.memif_server_socket().map(|(s, a)| (s.to_string(), a));
        let spec = |spec: &str| server(Device::vdev(spec));
        assert_eq!(
            server(Device::memif_server("/a")),
            Some(("/a".into(), true))
        );
        assert_eq!(server(Device::memif_client("/a")), None);
        assert_eq!(spec("net_memif0"), Some(("/run/memif.sock".into(), true)));
        assert_eq!(
            spec("net_memif0,socket=/b,socket-abstract=no"),
            Some(("/b".into(), false))
        );
        assert_eq!(spec("net_memif0,role=client,socket=/b"), None);
        assert_eq!(server(Device::af_packet("v")), None);
    }

    #[test]
    fn limits_are_refused_with_the_limit() {
        let m = Device::memif_client("/tmp/x.sock");
        assert_eq!(m.validate(16384), Ok(()));
        assert_eq!(
            m.validate(32768),
            Err(BuilderError::MemifRing {
                entries: 32768,
                rx_desc: 32768,
                vdev: None
            })
        );
        // The driver's default ring, whatever the descriptors.
        assert_eq!(m.clone().driver_ring_size().validate(32768), Ok(()));
        let spec = "net_memif0,role=server,socket=/v,rsize=15";
        assert_eq!(
            Device::vdev(spec).validate(1024),
            Err(BuilderError::MemifRing {
                entries: 32768,
                rx_desc: 1024,
                vdev: Some(spec.into())
            })
        );
        // A spec without its own rsize is sized, and refused, by rx_desc.
        let no_rsize = Device::vdev("net_memif0,role=server,socket=/v");
        assert_eq!(
            no_rsize.validate(32768).map_err(|e| e.key()),
            Err("link.rx_desc")
        );
        let long = "/tmp/".to_string() + &"x".repeat(MAX_SOCKET_PATH);
        assert!(matches!(
            Device::memif_server(long).validate(1024),
            Err(BuilderError::SocketPath { .. })
        ));
        assert!(matches!(
            Device::af_packet("a-sixteen-bytes!").validate(1024),
            Err(BuilderError::IfaceName { peer: false, .. })
        ));
        assert_eq!(Device::af_packet("fifteen-bytes!!").validate(1024), Ok(()));
        // The peer's name has one byte more than the one given.
        assert_eq!(
            Device::af_packet_peer("fifteen-bytes!!").validate(1024),
            Err(BuilderError::IfaceName {
                iface: "fifteen-bytes!!".into(),
                peer: true
            })
        );
        assert_eq!(
            Device::af_packet_peer("fourteen-bytes").validate(1024),
            Ok(())
        );
        assert_eq!(
            Device::af_packet("").validate(1024).map_err(|e| e.key()),
            Err("link.iface")
        );
        assert_eq!(Device::pci("x").validate(32768), Ok(()));
    }
}
