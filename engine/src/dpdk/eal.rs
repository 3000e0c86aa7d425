//! EAL initialisation from a typed builder. EAL can be initialised once per
//! process and never again after cleanup, so a second `init` is an error
//! (`DpdkError::AlreadyInitialized`), not undefined behaviour.

use super::DpdkError;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

static EAL_STARTED: AtomicBool = AtomicBool::new(false);

/// Typed EAL arguments. Defaults suit this project's hardware-free setup:
/// no hugepages (512 MiB of ordinary memory), no PCI scan, no shared config.
#[derive(Clone, Debug)]
pub struct EalBuilder {
    program: String,
    cores: Vec<u32>,
    vdevs: Vec<String>,
    pci_allow: Vec<String>,
    no_huge_mb: Option<u32>,
    file_prefix: Option<String>,
    log_level: Option<u32>,
    extra: Vec<String>,
}

impl Default for EalBuilder {
    fn default() -> Self {
        EalBuilder {
            program: "rpc-engine".into(),
            cores: vec![0],
            vdevs: Vec::new(),
            pci_allow: Vec::new(),
            no_huge_mb: Some(512),
            file_prefix: None,
            log_level: None,
            extra: Vec::new(),
        }
    }
}

impl EalBuilder {
    /// The defaults (core 0, no hugepages, no PCI scan, `--no-shconf`).
    pub fn new() -> Self {
        Self::default()
    }
    /// Cores (lcores) EAL will own; the first is the main lcore, where the
    /// calling thread is pinned.
    pub fn cores(mut self, cores: &[u32]) -> Self {
        self.cores = cores.to_vec();
        self
    }
    /// A virtual device spec, e.g. `net_memif0,role=server,socket=/tmp/a.sock`.
    pub fn vdev(mut self, spec: impl Into<String>) -> Self {
        self.vdevs.push(spec.into());
        self
    }
    /// A PCI device to probe (`-a`); with none, PCI scanning is disabled.
    pub fn pci(mut self, addr: impl Into<String>) -> Self {
        self.pci_allow.push(addr.into());
        self
    }
    /// `Some(mb)`: run without hugepages on `mb` MiB of ordinary memory;
    /// `None`: use hugepages (real NIC deployments).
    pub fn no_huge(mut self, mb: Option<u32>) -> Self {
        self.no_huge_mb = mb;
        self
    }
    /// Isolate this process's runtime files; `None` means `--no-shconf`.
    pub fn file_prefix(mut self, prefix: Option<String>) -> Self {
        self.file_prefix = prefix;
        self
    }
    /// EAL log level 1 (critical) .. 8 (debug).
    pub fn log_level(mut self, level: u32) -> Self {
        self.log_level = Some(level);
        self
    }
    /// Raw EAL arguments appended last, for anything not typed here.
    pub fn extra_arg(mut self, arg: impl Into<String>) -> Self {
        self.extra.push(arg.into());
        self
    }

    /// The argv this builder passes to `rte_eal_init`.
    pub fn args(&self) -> Result<Vec<String>, DpdkError> {
        if self.cores.is_empty() {
            return Err(DpdkError::BadArgument {
                arg: "cores".into(),
                why: "at least one core is needed",
            });
        }
        let mut a = vec![self.program.clone()];
        let cores: Vec<String> = self.cores.iter().map(u32::to_string).collect();
        a.push("-l".into());
        a.push(cores.join(","));
        if let Some(mb) = self.no_huge_mb {
            a.push("--no-huge".into());
            a.push("-m".into());
            a.push(mb.to_string());
        }
        if self.pci_allow.is_empty() {
            a.push("--no-pci".into());
        }
        for p in &self.pci_allow {
            a.push("-a".into());
            a.push(p.clone());
        }
        for v in &self.vdevs {
            a.push("--vdev".into());
            a.push(v.clone());
        }
        match &self.file_prefix {
            Some(p) => {
                a.push("--file-prefix".into());
                a.push(p.clone());
            }
            None => a.push("--no-shconf".into()),
        }
        if let Some(l) = self.log_level {
            a.push(format!("--log-level={l}"));
        }
        a.extend(self.extra.iter().cloned());
        Ok(a)
    }

    /// Runs `rte_eal_init` with [`args`](Self::args); once per process.
    pub fn init(self) -> Result<Eal, DpdkError> {
        let args = self.args()?;
        let c_args: Vec<CString> = args
            .iter()
            .map(|s| {
                CString::new(s.as_str()).map_err(|_| DpdkError::BadArgument {
                    arg: s.clone(),
                    why: "contains a NUL byte",
                })
            })
            .collect::<Result<_, _>>()?;
        if EAL_STARTED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::AlreadyInitialized);
        }
        // EAL permutes argv and may keep pointers into it for the life of the
        // process: leak the strings and the array (once per process).
        let c_args: &'static mut [CString] = Box::leak(c_args.into_boxed_slice());
        let argv: &'static mut [*mut std::os::raw::c_char] = Box::leak(
            c_args
                .iter_mut()
                .map(|s| s.as_ptr() as *mut _)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let argc = argv.len() as i32;
        // SAFETY: argv holds `argc` valid NUL-terminated strings that live for
        // the rest of the process; EAL has not been initialised (checked above).
        let rc = unsafe { dpdk_sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if rc < 0 {
            return Err(DpdkError::from_errno("rte_eal_init"));
        }
        let mut lcores = self.cores.clone();
        lcores.sort_unstable();
        lcores.dedup();
        // SAFETY: EAL is initialised.
        let main = unsafe { dpdk_sys::rte_get_main_lcore() };
        Ok(Eal { lcores, main, args })
    }
}

/// Proof that EAL is initialised in this process. Dropping it does not call
/// `rte_eal_cleanup`: mempools and ports may outlive it in worker threads, and
/// EAL can never be re-initialised anyway; the OS reclaims everything at exit.
#[derive(Debug)]
pub struct Eal {
    lcores: Vec<u32>,
    main: u32,
    args: Vec<String>,
}

impl Eal {
    /// The lcores EAL owns, sorted (one worker each).
    pub fn lcores(&self) -> &[u32] {
        &self.lcores
    }
    /// The main lcore (the thread that called `init`).
    pub fn main_lcore(&self) -> u32 {
        self.main
    }
    /// The argv EAL was initialised with (for logs and reports).
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Probes a virtual device after EAL started (`rte_dev_probe`), for a
    /// device whose probe needs another port configured first: a
    /// `virtio_user` driver whose `net_vhost` backend lives in the same
    /// process (the backend creates its socket when its port is
    /// configured, not at EAL's probe).
    pub fn probe_vdev(&self, spec: &str) -> Result<(), DpdkError> {
        let c = CString::new(spec).map_err(|_| DpdkError::BadArgument {
            arg: spec.into(),
            why: "contains a NUL byte",
        })?;
        // SAFETY: EAL is initialised (self proves it); `c` is a valid
        // NUL-terminated string that outlives the call.
        let rc = unsafe { dpdk_sys::rte_dev_probe(c.as_ptr()) };
        if rc < 0 {
            return Err(DpdkError::from_rc("rte_dev_probe", rc));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_for_vdev_setup() {
        let b = EalBuilder::new()
            .cores(&[1, 0])
            .vdev("net_null0")
            .file_prefix(Some("t1".into()))
            .log_level(4);
        let a = b.args().unwrap();
        assert_eq!(
            a[1..],
            [
                "-l",
                "1,0",
                "--no-huge",
                "-m",
                "512",
                "--no-pci",
                "--vdev",
                "net_null0",
                "--file-prefix",
                "t1",
                "--log-level=4"
            ]
        );
    }

    #[test]
    fn pci_disables_no_pci_and_empty_cores_rejected() {
        let a = EalBuilder::new()
            .pci("0000:01:00.0")
            .no_huge(None)
            .args()
            .unwrap();
        assert!(!a.contains(&"--no-pci".to_string()));
        assert!(a.windows(2).any(|w| w == ["-a", "0000:01:00.0"]));
        assert!(!a.contains(&"--no-huge".to_string()));
        assert!(a.contains(&"--no-shconf".to_string()));
        assert!(EalBuilder::new().cores(&[]).args().is_err());
    }
}
