//! How `rpc-lab` asks glibc's allocator for the memory layout a large
//! fabric needs: transparent huge pages for its heap, and every allocation
//! of 128 KiB or more (the hosts' message buffers) in its own mapping.
//!
//! Why: a 1,024-host websearch holds tens of thousands of sessions, and
//! each packet touches a few of them, scattered over hundreds of MB; with
//! 4 KiB pages nearly every such touch is a TLB miss as well as a cache
//! miss. The message buffers are never read or written when no payload
//! moves ([`HeadersOnly`](crate::fabric::HeadersOnly)), but glibc's
//! `calloc` zeroes a buffer it carves from its heap, which faults the pages
//! in, and its heap then interleaves them with the sessions. A buffer in
//! its own mapping is zero already, is never touched, and costs address
//! space only. Measured on 1,024 hosts x 10,000 websearch flows (irn, 4 KiB
//! frames), two alternated rounds: 16.0-17.8 s of CPU and 534 MB peak
//! before, 9.9-10.3 s and 193 MB after; the results are the same bytes
//! (the allocator never reaches a result). docs/fabric.md, "Speed".
//!
//! glibc reads its tunables (`GLIBC_TUNABLES`) once, before `main`, and
//! has no call that turns huge pages on afterwards, so the binary starts
//! itself again with them set ([`reexec_with_tunables`]). A caller who set
//! `glibc.malloc.hugetlb` themselves (e.g. `glibc.malloc.hugetlb=0` to
//! compare) is left as they are; other allocators ignore the variable.

/// The tunables added: `hugetlb=1` makes glibc advise huge pages on what it
/// maps for its heap (Linux's `madvise` mode, this machine's default, gives
/// them only to memory so advised); a fixed `mmap_threshold` puts every
/// allocation of that size or more in its own mapping (without it, glibc
/// raises the threshold as large blocks are freed, up to 32 MiB).
pub const TUNABLES: &str = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=131072";

/// The environment variable glibc reads.
const VAR: &str = "GLIBC_TUNABLES";

/// `GLIBC_TUNABLES` with [`TUNABLES`] added to `current`'s, or `None` when
/// `current` already sets huge pages (the caller's choice, or this
/// process started again already).
pub fn with_tunables(current: Option<&str>) -> Option<String> {
    match current {
        Some(c) if c.contains("glibc.malloc.hugetlb") => None,
        Some(c) if !c.is_empty() => Some(format!("{c}:{TUNABLES}")),
        _ => Some(TUNABLES.to_string()),
    }
}

/// Replaces this process by itself, same arguments, with [`TUNABLES`] in
/// its environment; returns only if it did not (already set, not glibc on
/// Linux, or the exec failed: the run goes on with the allocator as it is,
/// at its speed, with the same results).
pub fn reexec_with_tunables() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        let current = std::env::var(VAR).ok();
        let Some(tunables) = with_tunables(current.as_deref()) else {
            return;
        };
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let err = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(VAR, tunables)
            .exec();
        eprintln!("rpc-lab: note: running without huge pages for the heap ({err})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunables_are_added_once_and_a_callers_choice_is_kept() {
        assert_eq!(with_tunables(None).as_deref(), Some(TUNABLES));
        assert_eq!(with_tunables(Some("")).as_deref(), Some(TUNABLES));
        assert_eq!(
            with_tunables(Some("glibc.malloc.arena_max=1")),
            Some(format!("glibc.malloc.arena_max=1:{TUNABLES}"))
        );
        // Started again: set already, no second exec.
        assert_eq!(with_tunables(Some(TUNABLES)), None);
        assert_eq!(with_tunables(Some("glibc.malloc.hugetlb=0")), None);
    }
}
