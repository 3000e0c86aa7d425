//! Child processes of `rpc-bench`: launched with their stdout captured, killed
//! if the parent dies (PR_SET_PDEATHSIG), and stopped by PID on drop, on error
//! and on Ctrl-C, so no poll-mode process outlives a benchmark. A child's
//! `--json-stream` interval lines can be passed through to our stdout as
//! they arrive ([`ChildProc::pass_intervals`]).

use anyhow::{bail, Context};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Routes SIGINT/SIGTERM to a flag that `wait` checks, so children get stopped.
pub fn install_signal_handlers() {
    apps::run::sys::install_interrupt_flag();
}

pub fn interrupted() -> bool {
    apps::run::sys::interrupted()
}

#[derive(Debug)]
pub struct ChildProc {
    pub name: String,
    child: Option<Child>,
    stdout: String,
    /// Copy the child's interval lines to our stdout as they arrive.
    pass_intervals: bool,
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
        apps::run::sys::kill_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name} ({})", program.display()))?;
        Ok(ChildProc {
            name: name.into(),
            child: Some(child),
            stdout: String::new(),
            pass_intervals: false,
        })
    }

    /// From now on, every stdout line of the child that is a
    /// `--json-stream` interval record (`{"event":"interval",...}`) is
    /// also printed on our stdout the moment it arrives (all lines are
    /// still returned by `wait`).
    pub fn pass_intervals(&mut self) {
        self.pass_intervals = true;
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Waits for a successful exit up to `timeout`; returns the child's
    /// stdout. A non-zero exit is an error carrying that output.
    pub fn wait(&mut self, timeout: Duration) -> anyhow::Result<String> {
        let exited = self.wait_exit(timeout)?;
        if !exited.status.success() {
            bail!(
                "{} exited with {}; its output:\n{}",
                self.name,
                exited.status,
                exited.stdout
            );
        }
        Ok(exited.stdout)
    }

    /// Waits for exit up to `timeout`, successful or not; on timeout or
    /// Ctrl-C the child is killed and an error returned.
    pub fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<Exited> {
        let start = Instant::now();
        let Some(child) = self.child.as_mut() else {
            let stdout = std::mem::take(&mut self.stdout);
            return Ok(Exited {
                status: std::process::ExitStatus::default(),
                stdout,
            });
        };
        let out = child.stdout.take();
        let pass = self.pass_intervals;
        // Drain stdout on a thread so a chatty child never blocks on a full
        // pipe; line by line, so interval lines can be passed on at once.
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let Some(o) = out else {
                return s;
            };
            let mut r = std::io::BufReader::new(o);
            let mut line = String::new();
            while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
                if pass && is_interval_line(&line) {
                    use std::io::Write;
                    let mut me = std::io::stdout().lock();
                    let _ = me.write_all(line.as_bytes());
                    let _ = me.flush();
                }
                s.push_str(&line);
                line.clear();
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
        Ok(Exited { status, stdout })
    }

    /// SIGTERM, then SIGKILL after 1 s; waits for the process to be reaped.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if let Ok(None) = c.try_wait() {
                apps::run::sys::terminate(c.id());
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

/// Whether `line` is a `--json-stream` interval record (`run::live`
/// writes `event` first).
pub fn is_interval_line(line: &str) -> bool {
    line.starts_with(r#"{"event":"interval""#)
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

/// How a child process ended: its exit status and everything it printed
/// on stdout.
#[derive(Debug)]
pub struct Exited {
    pub status: std::process::ExitStatus,
    pub stdout: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_lines_are_recognised_and_every_line_is_still_returned() {
        assert!(is_interval_line(r#"{"event":"interval","t_s":1.0}"#));
        assert!(!is_interval_line(r#"{"completed":5}"#));
        assert!(!is_interval_line("  [  1.0 s] 1 worker(s): ..."));
        let script = r#"printf '%s\n' '{"event":"interval","t_s":1.0}' 'human' '{"completed":5}'"#;
        let mut c = ChildProc::spawn(
            "sh",
            std::path::Path::new("/bin/sh"),
            &["-c".to_string(), script.to_string()],
        )
        .unwrap();
        c.pass_intervals();
        let out = c.wait(Duration::from_secs(10)).unwrap();
        assert_eq!(out.lines().count(), 3, "{out}");
        assert_eq!(last_json(&out).unwrap()["completed"], 5);
    }
}
