//! A binary under test that runs while the test acts on it (waits for a
//! line, sends a signal), as opposed to [`super::run`], which waits for the
//! exit: stdout collected, stderr collected line by line as it comes,
//! stopped by PID on drop.

use super::Run;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A process under test: stdout collected, stderr collected line by line
/// as it comes (so a test can wait for a line), stopped by PID on drop.
pub struct Running {
    child: Child,
    stdout: std::thread::JoinHandle<String>,
    stderr: Arc<Mutex<String>>,
    started: Instant,
}

impl Running {
    pub fn start(bin: &str, args: &[&str]) -> Running {
        let mut child = super::spawn_piped(bin, args);
        let mut out = child.stdout.take().expect("piped");
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let err = child.stderr.take().expect("piped");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
        Running {
            child,
            stdout,
            stderr,
            started: Instant::now(),
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Waits until stderr holds `needle` (panics after `limit`).
    pub fn wait_for(&self, needle: &str, limit: Duration) {
        let t = Instant::now();
        while !self.stderr().contains(needle) {
            assert!(
                t.elapsed() < limit,
                "no {needle:?} on stderr within {limit:?}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `sig` (INT, TERM) to the process by its PID.
    pub fn signal(&self, sig: &str) {
        // kill(1): libc is not a dev-dependency of the tests.
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(st.success(), "kill -{sig} failed");
    }

    /// Waits for the exit (killing it after `limit`): the finished run.
    pub fn finish(mut self, limit: Duration) -> Run {
        let t = Instant::now();
        let code = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break st.code();
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("did not exit within {limit:?}:\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = std::mem::replace(&mut self.stdout, std::thread::spawn(String::new));
        let stdout = stdout.join().unwrap_or_default();
        // The stderr reader ends with the pipe; give it a moment.
        std::thread::sleep(Duration::from_millis(100));
        Run {
            code,
            stdout,
            stderr: self.stderr(),
            elapsed: self.started.elapsed(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Running {
    /// The process's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The first stderr line containing `text`, waiting for it (panics
    /// after `limit`).
    pub fn line_with(&self, text: &str, limit: Duration) -> String {
        self.wait_for(text, limit);
        let err = self.stderr();
        let line = err.lines().find(|l| l.contains(text));
        line.unwrap_or_default().to_string()
    }

    /// Sends `sig` (INT, TERM) and waits for the exit: the finished run
    /// and how long after the signal it ended.
    pub fn signal_and_finish(self, sig: &str, limit: Duration) -> (Run, Duration) {
        let sent = Instant::now();
        self.signal(sig);
        let r = self.finish(limit);
        (r, sent.elapsed())
    }
}
