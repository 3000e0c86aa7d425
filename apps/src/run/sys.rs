//! Every libc call of the apps, each behind a safe wrapper: the
//! parent-death signal, SIGTERM to a child, entering a network namespace,
//! CPU pinning (libc rather than `core_affinity`, whose setter returns a
//! bare bool: the error here names the core and the OS's reason), af_packet
//! socket statistics. SIGINT/SIGTERM go to a flag through `signal-hook`
//! (and the signal's number beside it, for the exit code 128 + N).
//! No other apps module uses `unsafe`, nor does rpc-bench (the `bench`
//! crate), which calls these wrappers.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));
/// The number of the last of SIGINT/SIGTERM that arrived (0: none).
static SIGNAL: LazyLock<Arc<AtomicUsize>> = LazyLock::new(|| Arc::new(AtomicUsize::new(0)));

/// Routes SIGINT and SIGTERM to a flag [`interrupted`] reads (once per
/// process; later calls do nothing).
pub fn install_interrupt_flag() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(register_interrupt_flag);
}

fn register_interrupt_flag() {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // The number first: whoever sees the flag finds it recorded.
        let number = signal_hook::flag::register_usize(sig, Arc::clone(&SIGNAL), sig as usize);
        let flag = number.and_then(|_| signal_hook::flag::register(sig, Arc::clone(&INTERRUPTED)));
        if let Err(e) = flag {
            // Only forbidden signals fail; then Ctrl-C keeps its default
            // (the process dies, its children with it: PR_SET_PDEATHSIG).
            eprintln!("warning: cannot catch signal {sig}: {e}");
        }
    }
}

/// Whether SIGINT or SIGTERM arrived since [`install_interrupt_flag`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Which of SIGINT (2) and SIGTERM (15) arrived last, if one did.
pub fn interrupt_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n as i32),
    }
}

/// A stop handle the engine polls (the wait for the link,
/// `NexusBuilder::stop_on`), set by SIGINT/SIGTERM once
/// [`install_interrupt_flag`] ran: the same flag [`interrupted`] reads.
pub fn interrupt_stop_handle() -> engine::runtime::StopHandle {
    engine::runtime::StopHandle::from(Arc::clone(&INTERRUPTED))
}

/// Makes the child `cmd` starts die (SIGKILL) when this process dies.
pub fn kill_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec; prctl is
    // async-signal-safe and touches only the new process.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Sends SIGTERM to process `pid` (one of our children).
pub fn terminate(pid: u32) {
    // SAFETY: kill has no memory effects; signalling our own child by its PID.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}

/// Moves this thread into the network namespace open as `fd`.
pub fn enter_net_namespace(fd: RawFd) -> io::Result<()> {
    // SAFETY: setns only reads the descriptor; it affects only this thread
    // (threads created later from it inherit the namespace).
    let rc = unsafe { libc::setns(fd, libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pins the calling thread to CPU `core`.
pub fn pin_thread(core: u32) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data (all zeroes is an empty set); CPU_SET
    // and sched_setaffinity only touch it and this thread's affinity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The frames an AF_PACKET socket `fd` dropped for lack of ring room since
/// the last read (reading resets the kernel's count); `None` when `fd` is
/// not an AF_PACKET socket.
pub fn packet_socket_drops(fd: RawFd) -> Option<u64> {
    /// `struct tpacket_stats` (TPACKET_V1/V2, which the PMD uses).
    #[repr(C)]
    struct TpacketStats {
        tp_packets: u32,
        tp_drops: u32,
    }
    const PACKET_STATISTICS: libc::c_int = 6;
    let mut st = TpacketStats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `st`, which is
    // `len` bytes long; on a socket that is not AF_PACKET it fails
    // (ENOPROTOOPT) and writes nothing.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_STATISTICS,
            (&mut st as *mut TpacketStats).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(st.tp_drops as u64)
}
