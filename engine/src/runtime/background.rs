//! Background handlers: request types marked for long work run on ordinary
//! threads, off the poll-mode core's critical path. The dispatch thread copies
//! the request out, a worker computes the response, and the dispatch thread
//! picks it up on a later loop iteration and sends it. Copies and a channel
//! hop per request are the price; this path is for work that dwarfs them.

use crate::proto::ReqHandle;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A background handler: request type and bytes in, response bytes out.
pub type BackgroundFn = dyn Fn(u8, &[u8]) -> Vec<u8> + Send + Sync;

pub(crate) struct Job {
    pub handle: ReqHandle,
    pub req_type: u8,
    pub req: Vec<u8>,
    pub f: Arc<BackgroundFn>,
}

pub(crate) struct Done {
    pub handle: ReqHandle,
    pub resp: Vec<u8>,
}

pub(crate) struct BackgroundPool {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
    pub in_flight: usize,
}

impl std::fmt::Debug for BackgroundPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundPool")
            .field("threads", &self.threads.len())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl BackgroundPool {
    pub fn new(threads: usize) -> Self {
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let (done_tx, done_rx) = channel::<Done>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let threads = (0..threads.max(1))
            .map(|i| {
                let rx = jobs_rx.clone();
                let tx = done_tx.clone();
                std::thread::Builder::new()
                    .name(format!("rpc-bg-{i}"))
                    .spawn(move || loop {
                        // A poisoned lock means another worker panicked: stop too.
                        let job = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = job else { return };
                        let resp = (job.f)(job.req_type, &job.req);
                        if tx
                            .send(Done {
                                handle: job.handle,
                                resp,
                            })
                            .is_err()
                        {
                            return;
                        }
                    })
                    .expect("spawning a background thread")
            })
            .collect();
        BackgroundPool {
            jobs: Some(jobs_tx),
            done: done_rx,
            threads,
            in_flight: 0,
        }
    }

    pub fn submit(&mut self, job: Job) {
        if let Some(tx) = &self.jobs {
            if tx.send(job).is_ok() {
                self.in_flight += 1;
            }
        }
    }

    pub fn try_done(&mut self) -> Option<Done> {
        let d = self.done.try_recv().ok()?;
        self.in_flight -= 1;
        Some(d)
    }
}

impl Drop for BackgroundPool {
    fn drop(&mut self) {
        self.jobs = None; // closes the channel: workers exit
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
