//! What a cache miss costs on this machine: a chain of dependent loads,
//! each to a random cache line of a buffer of a given size, timed per
//! load. The fabric lab's working set at 1,024 hosts is tens of MB, so
//! this says what each line an event touches costs (docs/fabric.md, "Three
//! loads that waited").
//!
//! `cargo run --release -p lab --example load_chain` runs it on 4 KiB
//! pages (glibc maps each buffer on its own); with
//! `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` glibc advises huge pages for
//! those mappings, as `rpc-lab` does for itself (`lab/src/malloc.rs`).

use std::hint::black_box;
use std::time::Instant;

/// Loads timed per buffer size.
const LOADS: usize = 4_000_000;

fn main() {
    for mb in [2usize, 6, 12, 24, 48, 256, 1024] {
        let ns = chain(mb << 20);
        println!("{mb:5} MB: {ns:6.1} ns a load");
    }
}

/// Nanoseconds per load of a chain through every line of a `bytes`-long
/// buffer once, in a random cyclic order (so no prefetcher guesses it).
fn chain(bytes: usize) -> f64 {
    const WORDS_PER_LINE: usize = 8;
    let lines = bytes / 64;
    // A random cyclic permutation of the lines (Sattolo's shuffle).
    let mut order: Vec<usize> = (0..lines).collect();
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..lines).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        order.swap(i, (s % i as u64) as usize);
    }
    // Each line's first word holds the index of the next line's.
    let mut next = vec![0usize; lines * WORDS_PER_LINE];
    for k in 0..lines {
        next[order[k] * WORDS_PER_LINE] = order[(k + 1) % lines] * WORDS_PER_LINE;
    }
    let mut at = order[0] * WORDS_PER_LINE;
    let t = Instant::now();
    for _ in 0..LOADS {
        at = next[at];
    }
    black_box(at);
    t.elapsed().as_nanos() as f64 / LOADS as f64
}
