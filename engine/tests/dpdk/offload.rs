//! Checksum offloads by capability on real drivers, in a process of its own
//! (EAL initialises once per process; `main.rs`): net_tap offers TX and RX
//! IPv4/UDP checksum offload, so frames the engine sends leave with checksums
//! the device filled (read back on the kernel side of the tap with an
//! AF_PACKET socket) and frames the kernel side sends arrive with the
//! device's verdict; net_memif offers none, which `auto` accepts and
//! `require` refuses, naming the key.

use crate::frames::{engine_frame, udp_sum, ETH, UDP};
use engine::dpdk::{EalBuilder, Mbuf, MbufBatch, Mempool, Port, PortConfig};
use engine::nic::{ChecksumOffload, RxChecksum};
use engine::wire::checksum;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SRC_PORT: u16 = 41000;

/// `f` with a full, correct UDP checksum.
fn with_udp_checksum(mut f: Vec<u8>) -> Vec<u8> {
    f[UDP + 6..UDP + 8].fill(0);
    let c = udp_sum(&f);
    f[UDP + 6..UDP + 8].copy_from_slice(&c.to_be_bytes());
    f
}

/// An AF_PACKET socket on the kernel side of the tap.
struct KernelSide {
    fd: i32,
    ifindex: i32,
}

impl KernelSide {
    fn open(iface: &str) -> KernelSide {
        let name = std::ffi::CString::new(iface).unwrap();
        // SAFETY: plain syscalls with valid arguments; fd checked.
        unsafe {
            let ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
            assert!(ifindex > 0, "no interface {iface}");
            let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, proto);
            assert!(fd >= 0, "AF_PACKET socket (needs root)");
            let mut sa: libc::sockaddr_ll = std::mem::zeroed();
            sa.sll_family = libc::AF_PACKET as u16;
            sa.sll_protocol = proto as u16;
            sa.sll_ifindex = ifindex;
            let rc = libc::bind(
                fd,
                &sa as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(rc, 0, "bind AF_PACKET");
            let tv = libc::timeval {
                tv_sec: 0,
                tv_usec: 200_000,
            };
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as u32,
            );
            KernelSide { fd, ifindex }
        }
    }

    fn send(&self, f: &[u8]) {
        // SAFETY: fd is a bound packet socket; f is a valid buffer.
        let n = unsafe { libc::send(self.fd, f.as_ptr().cast(), f.len(), 0) };
        assert_eq!(n, f.len() as isize, "kernel-side send");
    }

    /// The next frame from our UDP source port, within `limit`.
    fn recv_ours(&self, limit: Duration) -> Option<Vec<u8>> {
        let end = Instant::now() + limit;
        let mut buf = vec![0u8; 2048];
        while Instant::now() < end {
            // SAFETY: buf is valid for its length.
            let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n > UDP as isize + 8 {
                let f = &buf[..n as usize];
                if f[12..14] == [8, 0] && f[UDP..UDP + 2] == SRC_PORT.to_be_bytes() {
                    return Some(f.to_vec());
                }
            }
        }
        None
    }
}

impl Drop for KernelSide {
    fn drop(&mut self) {
        // SAFETY: closing our own fd once.
        unsafe { libc::close(self.fd) };
        let _ = self.ifindex;
    }
}

/// Receives until a frame from our source port arrives; its verdict.
fn verdict_of_next(rx: &mut engine::dpdk::RxQueue, limit: Duration) -> Option<RxChecksum> {
    let end = Instant::now() + limit;
    let mut b = MbufBatch::new();
    while Instant::now() < end {
        let n = rx.rx_burst(&mut b);
        for i in 0..n {
            let f = b.data(i);
            if f.len() > UDP + 8 && f[12..14] == [8, 0] && f[UDP..UDP + 2] == SRC_PORT.to_be_bytes()
            {
                let v = RxChecksum::of(b.ol_flags(i));
                b.clear();
                return Some(v);
            }
        }
        b.clear();
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

#[test]
fn tap_offloads_checksums_and_memif_has_none() {
    if !crate::own_process(module_path!(), "tap_offloads_checksums_and_memif_has_none") {
        return;
    }
    let pid = std::process::id();
    let iface = format!("tof{}", pid % 100_000);
    let sock = format!("/tmp/rpc-offload-{pid}.sock");
    let eal = EalBuilder::new()
        .cores(&[0])
        .vdev(format!("net_tap0,iface={iface}"))
        .vdev(format!("net_memif0,role=server,socket={sock}"))
        .log_level(1)
        .init()
        .expect("EAL init with net_tap0 and net_memif0 (root, /dev/net/tun)");
    let pool = Arc::new(Mempool::new(&eal, "off_pool", 4095, 0, 2048).expect("pool"));

    // memif: no checksum offload. `require` names the key and the device;
    // `auto` is fine and uses none.
    let require = PortConfig {
        checksum: ChecksumOffload::Require,
        ..PortConfig::default()
    };
    let err = Port::open(&eal, "net_memif0", &require, pool.clone()).expect_err("memif lacks them");
    let msg = err.to_string();
    assert!(msg.contains("transport.checksum_offload"), "{msg}");
    assert!(
        msg.contains("net_memif0") && msg.contains("tx ipv4"),
        "{msg}"
    );
    let memif =
        Port::open(&eal, "net_memif0", &PortConfig::default(), pool.clone()).expect("memif");
    assert_eq!(memif.offloads(), Default::default(), "memif offers none");
    assert_eq!(memif.driver(), "net_memif");
    drop(memif);

    // net_tap: all four offered and taken.
    let tap = Port::open(&eal, "net_tap0", &require, pool.clone()).expect("tap offers all four");
    let o = tap.offloads();
    assert!(o.tx_ipv4 && o.tx_udp && o.rx_ipv4 && o.rx_udp, "{o:?}");
    assert_eq!(o.to_string(), "checksum offload tx ipv4+udp, rx ipv4+udp");
    tap.wait_link_up(Duration::from_secs(5)).expect("tap up");
    let kernel = KernelSide::open(&iface);
    let (mut rx, mut tx) = tap.queue_pair(0).expect("queue 0");
    assert!(rx.checks_checksums());

    // TX: the engine's frame with a wrong IPv4 checksum on purpose; the
    // device must write both checksums.
    let payload = b"offloaded checksum payload";
    let sent = engine_frame(SRC_PORT, payload);
    let mut m = Mbuf::alloc(&pool).unwrap();
    m.room_mut()[..sent.len()].copy_from_slice(&sent);
    m.set_len(sent.len());
    m.data_mut()[ETH + 10] ^= 0x5a;
    m.offload_checksums(&o, o.tx_mbuf_flags());
    tx.tx_one(m).expect("tap takes the frame");
    let got = kernel
        .recv_ours(Duration::from_secs(3))
        .expect("the frame reaches the kernel side");
    assert_eq!(got.len(), sent.len());
    assert_eq!(checksum(&got[ETH..UDP]), 0, "IPv4 header checksum filled");
    assert_ne!(&got[UDP + 6..UDP + 8], &[0, 0], "UDP checksum filled");
    assert_eq!(udp_sum(&got), 0, "UDP checksum right");
    assert_eq!(&got[got.len() - payload.len()..], payload);

    // RX: the device's verdict on frames the kernel side sends.
    let good = with_udp_checksum(engine_frame(SRC_PORT, payload));
    kernel.send(&good);
    assert_eq!(
        verdict_of_next(&mut rx, Duration::from_secs(3)),
        Some(RxChecksum::Good)
    );
    let mut bad_udp = good.clone();
    bad_udp[UDP + 7] ^= 0xff;
    kernel.send(&bad_udp);
    assert_eq!(
        verdict_of_next(&mut rx, Duration::from_secs(3)),
        Some(RxChecksum::Bad)
    );
    let mut bad_ip = engine_frame(SRC_PORT, payload);
    bad_ip[ETH + 10] ^= 0xff;
    kernel.send(&bad_ip);
    assert_eq!(
        verdict_of_next(&mut rx, Duration::from_secs(3)),
        Some(RxChecksum::Bad)
    );
    // UDP checksum 0 (the engine's software path): the IPv4 verdict decides.
    kernel.send(&engine_frame(SRC_PORT, payload));
    assert_eq!(
        verdict_of_next(&mut rx, Duration::from_secs(3)),
        Some(RxChecksum::Good)
    );
    let _ = std::fs::remove_file(&sock);
}
