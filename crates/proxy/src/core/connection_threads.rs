//! Threads that each run their connections on a single-threaded runtime of their own
//! ([`crate::Config::connection_threads`]).
//!
//! On a work-stealing runtime, every event of a connection (a request in, an answer back)
//! may wake a second worker to look for work it then does not find: a futex wake and a
//! park per event, which measured about half of the guard's CPU per round trip at a paced
//! request rate (`benches/guard_cpu.py`, issue 37). A connection placed on one thread for
//! its whole life has its events handled where they arrive, and the threads share only
//! what every connection shares ([`crate::core::shared::Shared`]: the policy, the budget, the
//! audit queue, the metrics). Connections go to the threads in turn.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// The connection threads: spawned on in turn; ended when dropped.
pub struct ConnectionThreads {
    threads: Vec<Thread>,
    next: AtomicUsize,
}

struct Thread {
    handle: Handle,
    /// Dropped to end the thread (its runtime, and whatever still runs on it).
    _end: oneshot::Sender<()>,
}

impl ConnectionThreads {
    /// `n` threads, each with a runtime of its own (I/O and timers enabled).
    pub fn start(n: usize) -> io::Result<ConnectionThreads> {
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let runtime = Builder::new_current_thread().enable_all().build()?;
            let handle = runtime.handle().clone();
            let (end, ended) = oneshot::channel::<()>();
            std::thread::Builder::new()
                .name(format!("guard-conn-{i}"))
                .spawn(move || {
                    runtime.block_on(async {
                        let _ = ended.await;
                    });
                })?;
            threads.push(Thread { handle, _end: end });
        }
        Ok(ConnectionThreads {
            threads,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs `task` on the next thread in turn (on the caller's runtime when there are no
    /// threads). `task` registers its sockets with the runtime it runs on: hand it
    /// `std::net` sockets, not tokio's.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if self.threads.is_empty() {
            tokio::spawn(task);
            return;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.threads.len();
        self.threads[i].handle.spawn(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_run_on_the_threads_in_turn_and_the_threads_end_when_dropped() {
        let threads = ConnectionThreads::start(2).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..4 {
            let tx = tx.clone();
            threads.spawn(async move {
                // A timer: the thread's runtime has one.
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                tx.send(std::thread::current().name().map(str::to_owned))
                    .unwrap();
            });
        }
        let mut names: Vec<_> = (0..4).map(|_| rx.recv().unwrap().unwrap()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "guard-conn-0",
                "guard-conn-0",
                "guard-conn-1",
                "guard-conn-1"
            ]
        );
        // A task still running when the threads are dropped is dropped with its thread.
        let (alive_tx, alive_rx) = std::sync::mpsc::channel::<()>();
        threads.spawn(async move {
            let _alive = alive_tx;
            std::future::pending::<()>().await;
        });
        drop(threads);
        assert_eq!(
            alive_rx.recv_timeout(std::time::Duration::from_secs(10)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        );
    }
}
