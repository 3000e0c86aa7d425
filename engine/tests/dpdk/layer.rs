//! The safe DPDK layer in a process of its own (EAL initialises once per
//! process; `main.rs`): a second EAL init is
//! an error, mbufs go back to the pool (no leaks), bursts move frames over
//! net_ring, and a worker runs on its EAL lcore.

use engine::dpdk::{
    current_lcore, DpdkError, EalBuilder, Mbuf, MbufBatch, Mempool, Port, PortConfig, BURST,
};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn eal_pool_port_and_bursts() {
    if !crate::own_process(module_path!(), "eal_pool_port_and_bursts") {
        return;
    }
    let eal = EalBuilder::new()
        .cores(&[0])
        .vdev("net_ring0")
        .log_level(1)
        .init()
        .expect("EAL init with net_ring0");
    assert!(matches!(
        EalBuilder::new().vdev("net_null0").init(),
        Err(DpdkError::AlreadyInitialized)
    ));
    assert_eq!(current_lcore(), Some(0));

    let pool = Arc::new(Mempool::new(&eal, "t_pool", 1023, 0, 2048).expect("pool"));
    assert_eq!(pool.in_use(), 0);
    {
        let mut batch = MbufBatch::new();
        batch.alloc(&pool, BURST).expect("bulk alloc");
        assert_eq!(batch.len(), BURST);
        assert_eq!(pool.in_use(), BURST as u32);
        let one = Mbuf::alloc(&pool).expect("alloc");
        assert!(one.capacity() >= 2048);
        assert_eq!(
            batch.push(one).map_err(|_| ()),
            Err(()),
            "full batch refuses"
        );
        assert_eq!(
            pool.in_use(),
            BURST as u32,
            "the refused mbuf was dropped and freed"
        );
    }
    assert_eq!(pool.in_use(), 0, "batch drop frees in bulk");

    let port = Port::open(&eal, "net_ring0", &PortConfig::default(), pool.clone()).expect("port");
    port.wait_link_up(Duration::from_secs(5))
        .expect("ring link is up");
    let base = pool.in_use();
    let (mut rx, mut tx) = port.queue_pair(0).expect("queue 0");
    assert!(port.queue_pair(0).is_err(), "a queue is handed out once");
    assert!(port.queue_pair(7).is_err(), "no such queue");

    let mut out = MbufBatch::new();
    out.alloc(&pool, 8).unwrap();
    for i in 0..8 {
        out.room_mut(i)[..60].fill(i as u8);
        out.set_len(i, 60);
    }
    assert_eq!(tx.tx_burst(&mut out), 8);
    assert!(out.is_empty());
    let mut got = MbufBatch::new();
    assert_eq!(rx.rx_burst(&mut got), 8);
    for i in 0..8 {
        assert_eq!(got.data(i), &[i as u8; 60][..]);
    }
    got.clear();
    assert_eq!(pool.in_use(), base, "every mbuf is back");

    // net_ring has no flow engine: steering is refused with a clear error
    // (real NICs install the rule; the call path is the same).
    let err = port
        .steer_udp_dst_port(31851, 0)
        .expect_err("net_ring cannot steer");
    assert!(
        err.to_string()
            .contains("rte_flow rule UDP dst 31851 -> queue 0 refused"),
        "{err}"
    );

    // A worker on the main lcore runs and knows its lcore id.
    let seen = std::sync::atomic::AtomicU32::new(u32::MAX);
    eal.run_on_lcores(&|lcore| seen.store(lcore, std::sync::atomic::Ordering::SeqCst))
        .expect("run on lcores");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 0);
}
