//! Child processes of `rpc-bench`: launched with their stdout captured, killed
//! if the parent dies (PR_SET_PDEATHSIG), and stopped by PID on drop, on error
//! and on Ctrl-C, so no poll-mode process outlives a benchmark.

use anyhow::{bail, Context};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Routes SIGINT/SIGTERM to a flag that `wait` checks, so children get stopped.
pub fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

#[derive(Debug)]
pub struct ChildProc {
    pub name: String,
    child: Option<Child>,
    stdout: String,
}

impl ChildProc {
    pub fn spawn(
        name: &str,
        program: &std::path::Path,
        args: &[String],
    ) -> anyhow::Result<ChildProc> {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .stdin(Stdio::null());
        // SAFETY: prctl is async-signal-safe and touches only this new process.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name} ({})", program.display()))?;
        Ok(ChildProc {
            name: name.into(),
            child: Some(child),
            stdout: String::new(),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Waits for exit up to `timeout`; on timeout or Ctrl-C the child is killed
    /// and an error returned. Returns the child's stdout.
    pub fn wait(&mut self, timeout: Duration) -> anyhow::Result<String> {
        let start = Instant::now();
        let Some(child) = self.child.as_mut() else {
            return Ok(std::mem::take(&mut self.stdout));
        };
        let mut out = child.stdout.take();
        // Drain stdout on a thread so a chatty child never blocks on a full pipe.
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(o) = out.as_mut() {
                let _ = o.read_to_string(&mut s);
            }
            s
        });
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            if interrupted() {
                self.stop();
                bail!("interrupted: stopped {}", self.name);
            }
            if start.elapsed() > timeout {
                self.stop();
                bail!("{} did not finish within {:?}: killed", self.name, timeout);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.child = None;
        let stdout = reader.join().unwrap_or_default();
        if !status.success() {
            bail!("{} exited with {status}; its output:\n{stdout}", self.name);
        }
        Ok(stdout)
    }

    /// SIGTERM, then SIGKILL after 1 s; waits for the process to be reaped.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if let Ok(None) = c.try_wait() {
                // SAFETY: signalling our own child by its PID.
                unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
                let t = Instant::now();
                while t.elapsed() < Duration::from_secs(1) {
                    if let Ok(Some(_)) = c.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last line of `stdout` that parses as a JSON object.
pub fn last_json(stdout: &str) -> anyhow::Result<serde_json::Value> {
    stdout
        .lines()
        .rev()
        .find_map(|l| {
            let l = l.trim();
            l.starts_with('{')
                .then(|| serde_json::from_str(l).ok())
                .flatten()
        })
        .context("no JSON summary line in the child's output")
}
