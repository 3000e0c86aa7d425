//! Child processes of `rpc-bench`: launched with their stdout captured, killed
//! if the parent dies (PR_SET_PDEATHSIG), and stopped by PID on drop, on error
//! and on Ctrl-C, so no poll-mode process outlives a benchmark. On Ctrl-C
//! (SIGINT or SIGTERM to rpc-bench) a child is asked to finish (SIGTERM:
//! a client reports what completed, a server its counters) and what it
//! printed is returned, so the command can report what finished
//! ([`apps::exit`]'s rule). A child's `--json-stream` interval lines can
//! be passed through to our stdout as they arrive
//! ([`ChildProc::pass_intervals`]).

use anyhow::{bail, Context};
use apps::report::output::Stdout;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a child may take to end after SIGTERM before SIGKILL, unless
/// [`ChildProc::grace`] says otherwise.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// The grace of an rpc-server or rpc-client child: after SIGTERM it leaves
/// its run loop, says goodbye to its peers (at most 200 ms), closes its
/// port and prints its summary, which an interrupted `rpc-bench` reports.
pub const NODE_GRACE: Duration = Duration::from_secs(5);

/// Routes SIGINT/SIGTERM to the flag that `wait` checks, so children get
/// stopped and the command exits 130/143 ([`apps::exit::install_interrupt`]).
pub fn install_signal_handlers() {
    apps::exit::install_interrupt();
}

/// Whether SIGINT or SIGTERM arrived ([`apps::exit::interrupted`]).
pub fn interrupted() -> bool {
    apps::exit::interrupted()
}

#[derive(Debug)]
pub struct ChildProc {
    pub name: String,
    child: Option<Child>,
    stdout: String,
    /// Copy the child's interval lines to our stdout as they arrive.
    pass_intervals: bool,
    /// How long the child may take to end after SIGTERM.
    grace: Duration,
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
            grace: STOP_GRACE,
        })
    }

    /// Gives the child `grace` to end after SIGTERM (its summary written)
    /// before it is killed; [`STOP_GRACE`] by default.
    pub fn grace(&mut self, grace: Duration) {
        self.grace = grace;
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

    /// Waits for exit up to `timeout`, successful or not. On Ctrl-C the
    /// child is asked to finish (SIGTERM, SIGKILL after its grace) and how
    /// it ended is returned with what it printed; on timeout it is killed
    /// and an error returned.
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
                    let _ = Stdout.write_all(line.as_bytes());
                    let _ = Stdout.flush();
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
                break end_within(child, self.grace)?;
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

    /// SIGTERM, then SIGKILL after the grace; waits for the process to be
    /// reaped.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = end_within(&mut c, self.grace);
        }
    }
}

/// Ends `child`: SIGTERM by its PID, then SIGKILL if it is still running
/// after `grace`; its exit status once reaped.
fn end_within(child: &mut Child, grace: Duration) -> std::io::Result<std::process::ExitStatus> {
    if let Some(st) = child.try_wait()? {
        return Ok(st);
    }
    apps::run::sys::terminate(child.id());
    let t = Instant::now();
    while t.elapsed() < grace {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    child.wait()
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
