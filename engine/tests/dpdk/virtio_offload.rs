//! virtio's checksum offloads, both ends in one process of its own
//! (EAL initialises once per process; `main.rs`): the vhost-user backend (`net_vhost`) and the guest's driver
//! (`net_virtio_user`) each offer UDP checksum offload, TX and RX, and no
//! IPv4 header offload, so `auto` takes `tx udp, rx udp` on both and
//! `require` is refused naming what they lack.
//!
//! What crosses the virtqueues with both offloads taken: the sender's
//! frame carries only the pseudo-header sum the engine wrote (virtio's
//! `VIRTIO_NET_HDR_F_NEEDS_CSUM`, nobody computes the rest: there is no
//! wire), and the receiver's mbuf says so with `RTE_MBUF_F_RX_L4_CKSUM_NONE`
//! ("checksum not computed, data valid"), which the engine must not take
//! for a bad checksum. Each received frame is checked either way: a
//! device verdict of good with a right checksum, or the "none" verdict with
//! exactly the sender's pseudo-header sum; any other checksum, or a bad
//! verdict, fails the test.

use crate::frames::{engine_frame, udp_sum, ETH, UDP};
use engine::dpdk::{EalBuilder, Mbuf, MbufBatch, Mempool, Port, PortConfig, RxQueue, TxQueue};
use engine::nic::checksum::{MBUF_RX_L4_GOOD, MBUF_RX_L4_MASK};
use engine::nic::{ChecksumOffload, Offloads, RxChecksum};
use engine::wire::{checksum, prepare_checksum_offload};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sends `frame` from `tx` with the offloads `o` as the run loop does.
fn send(tx: &mut TxQueue, pool: &Arc<Mempool>, o: &Offloads, frame: &[u8]) {
    let mut m = Mbuf::alloc(pool).unwrap();
    m.room_mut()[..frame.len()].copy_from_slice(frame);
    m.set_len(frame.len());
    m.offload_checksums(o, o.tx_mbuf_flags());
    tx.tx_one(m).expect("the virtqueue takes the frame");
}

/// The next frame from `src_port` on `rx` and its `ol_flags`, within 3 s.
fn recv(rx: &mut RxQueue, src_port: u16) -> (Vec<u8>, u64) {
    let end = Instant::now() + Duration::from_secs(3);
    let mut b = MbufBatch::new();
    while Instant::now() < end {
        let n = rx.rx_burst(&mut b);
        for i in 0..n {
            let f = b.data(i);
            if f.len() > UDP + 8 && f[UDP..UDP + 2] == src_port.to_be_bytes() {
                let got = (f.to_vec(), b.ol_flags(i));
                b.clear();
                return got;
            }
        }
        b.clear();
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no frame from port {src_port} within 3 s");
}

/// What the receiver of `sent` (as the engine wrote it, before the
/// offload's preparation) must see: the same frame, its IPv4 header
/// checksum right (the engine's software one), never a bad verdict, and
/// either a right UDP checksum or virtio's "not computed, data valid"
/// with the sender's pseudo-header sum.
fn check_received(what: &str, sent: &[u8], got: &[u8], flags: u64) {
    assert_eq!(got.len(), sent.len(), "{what}: length");
    assert_eq!(&got[UDP + 8..], &sent[UDP + 8..], "{what}: payload");
    assert_eq!(checksum(&got[ETH..UDP]), 0, "{what}: IPv4 header checksum");
    assert_ne!(RxChecksum::of(flags), RxChecksum::Bad, "{what}: {flags:#x}");
    match flags & MBUF_RX_L4_MASK {
        MBUF_RX_L4_MASK => {
            let mut partial = sent.to_vec();
            prepare_checksum_offload(&mut partial, false, true);
            assert_eq!(
                &got[UDP + 6..UDP + 8],
                &partial[UDP + 6..UDP + 8],
                "{what}: \"not computed\" carries the pseudo-header sum"
            );
        }
        l4 => {
            assert_eq!(l4, MBUF_RX_L4_GOOD, "{what}: {flags:#x}");
            assert_eq!(udp_sum(got), 0, "{what}: a good verdict, a right checksum");
        }
    }
}

#[test]
fn virtio_offers_udp_checksums_and_both_ends_agree_on_them() {
    if !crate::own_process(
        module_path!(),
        "virtio_offers_udp_checksums_and_both_ends_agree_on_them",
    ) {
        return;
    }
    let pid = std::process::id();
    let sock = format!("/tmp/rpc-voff-{pid}.sock");
    let _ = std::fs::remove_file(&sock);
    // The backend creates its socket when its port is configured, and the
    // driver's probe connects to it: the driver is probed after that.
    let eal = EalBuilder::new()
        .cores(&[0])
        .vdev(format!("net_vhost0,iface={sock},queues=1"))
        .log_level(1)
        .init()
        .expect("EAL init with net_vhost0");
    let pool = Arc::new(Mempool::new(&eal, "voff_pool", 4095, 0, 2048).expect("pool"));
    let ports = PortConfig {
        rx_desc: 256,
        tx_desc: 256,
        ..PortConfig::default()
    };

    // Neither offers the IPv4 header checksum: `require` names the key,
    // the device and what it lacks; the ports stay usable.
    let require = PortConfig {
        checksum: ChecksumOffload::Require,
        ..ports.clone()
    };
    let refused = |dev: &str| {
        let err = Port::open(&eal, dev, &require, pool.clone()).expect_err(dev);
        let msg = err.to_string();
        assert!(
            msg.contains("transport.checksum_offload")
                && msg.contains(dev)
                && msg.contains("lacks tx ipv4, rx ipv4"),
            "{msg}"
        );
    };
    refused("net_vhost0");
    let backend = Port::open(&eal, "net_vhost0", &ports, pool.clone()).expect("vhost");
    eal.probe_vdev(&format!("virtio_user0,path={sock},queues=1,queue_size=256"))
        .expect("virtio_user0 connects to the backend's socket");
    refused("virtio_user0");
    let driver = Port::open(&eal, "virtio_user0", &ports, pool.clone()).expect("virtio_user");
    let udp_only = Offloads {
        tx_udp: true,
        rx_udp: true,
        ..Offloads::default()
    };
    for (p, drv) in [(&backend, "net_vhost"), (&driver, "net_virtio_user")] {
        assert_eq!(p.driver(), drv);
        assert_eq!(p.offloads(), udp_only, "{drv}");
        assert_eq!(
            p.offloads().to_string(),
            "checksum offload tx udp (ipv4: software), rx udp (ipv4: software)"
        );
    }
    driver
        .wait_link_up(Duration::from_secs(5))
        .expect("driver up");
    backend
        .wait_link_up(Duration::from_secs(5))
        .expect("backend up");
    let (mut b_rx, mut b_tx) = backend.queue_pair(0).expect("backend queue 0");
    let (mut d_rx, mut d_tx) = driver.queue_pair(0).expect("driver queue 0");
    assert!(b_rx.checks_checksums() && d_rx.checks_checksums());

    // Both directions, a short and an MTU-sized payload each.
    let o = udp_only;
    for (i, len) in [26usize, 1400].into_iter().enumerate() {
        let payload: Vec<u8> = (0..len).map(|j| (j * 7 + i) as u8).collect();
        let up = engine_frame(41000 + i as u16, &payload);
        send(&mut d_tx, &pool, &o, &up);
        let (got, flags) = recv(&mut b_rx, 41000 + i as u16);
        check_received("driver -> backend", &up, &got, flags);

        let down = engine_frame(42000 + i as u16, &payload);
        send(&mut b_tx, &pool, &o, &down);
        let (got, flags) = recv(&mut d_rx, 42000 + i as u16);
        check_received("backend -> driver", &down, &got, flags);
    }
    drop((b_rx, b_tx, d_rx, d_tx));
    drop(driver);
    drop(backend);
    let _ = std::fs::remove_file(&sock);
}
