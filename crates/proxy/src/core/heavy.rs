//! Work on large frames, off the threads that run the connections and at most one job a
//! core at once: the filters' decision on a request larger than a small frame, and the
//! answer the guard writes to one.
//!
//! Refusing a 16 MiB ElectLeaders request (four million partitions) costs about a quarter
//! of a second of CPU: deciding it, measuring and writing a 33 MB answer, its audit line.
//! On the thread that runs the connection it held up every other connection of that
//! thread (issue 42, item 5: two clients sending such requests back to back took another
//! client's p99 from under 1 ms to 100 ms). Here it runs on the runtime's blocking pool,
//! at most one job a core but one at once ([`Heavy::per_core`]), so that however many
//! clients send large requests, a core is left for the small frames; the others wait
//! their turn (first come, first served). A client's connection waits for its own job, so its
//! answers stay in order.
//!
//! Tried and left out: a lower scheduling priority (nice 10) for these jobs made no
//! difference to the other clients' latency in `benches/guard_soak.py`, and would let any
//! other process on the host starve the guard's large frames until their timeouts.

use std::sync::Arc;

use tokio::sync::Semaphore;

/// The jobs on large frames of one guard (in `Shared`).
pub struct Heavy {
    running: Arc<Semaphore>,
}

/// Why a job gave no result: it panicked (the message, when it had one), or the runtime
/// stopped before it ran.
#[derive(Debug)]
pub struct Failed(String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Heavy {
    /// At most `at_once` jobs running at once (at least one).
    pub fn new(at_once: usize) -> Heavy {
        Heavy {
            running: Arc::new(Semaphore::new(at_once.max(1))),
        }
    }

    /// One job a core at once, but one: a core is always left for the small frames (on
    /// one core, one job).
    pub fn per_core() -> Heavy {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Heavy::new(cores.saturating_sub(1))
    }

    /// Runs `job` on the runtime's blocking pool when its turn comes, its result back when
    /// it is done.
    pub async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Failed> {
        let _turn = self
            .running
            .acquire()
            .await
            .map_err(|_| Failed("the guard is stopping".into()))?;
        tokio::task::spawn_blocking(job).await.map_err(|e| {
            let why = match e.try_into_panic() {
                Ok(panic) => panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            Failed(format!("it failed: {why}"))
        })
    }
}

impl Default for Heavy {
    fn default() -> Heavy {
        Heavy::per_core()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Eight jobs that each take a while, on a pool of two: never more than two at once,
    /// and each off the thread that asked for it.
    #[tokio::test(flavor = "current_thread")]
    async fn at_most_so_many_jobs_run_at_once_off_the_asking_thread() {
        let heavy = Arc::new(Heavy::new(2));
        let asking = std::thread::current().id();
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let jobs: Vec<_> = (0..8)
            .map(|_| {
                let (heavy, now, most) = (heavy.clone(), now.clone(), most.clone());
                tokio::spawn(async move {
                    heavy
                        .run(move || {
                            let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(running, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            now.fetch_sub(1, Ordering::SeqCst);
                            std::thread::current().id()
                        })
                        .await
                })
            })
            .collect();
        for job in jobs {
            assert_ne!(job.await.unwrap().unwrap(), asking);
        }
        let most = most.load(Ordering::SeqCst);
        assert!((1..=2).contains(&most), "{most} at once");
    }

    #[tokio::test]
    async fn a_panic_is_a_failure_of_its_job_alone() {
        let heavy = Heavy::new(1);
        let failed = heavy.run(|| -> u8 { panic!("a filter's bug") }).await;
        assert!(
            matches!(&failed, Err(Failed(why)) if why.ends_with("a filter's bug")),
            "{failed:?}"
        );
        assert_eq!(heavy.run(|| 7).await.unwrap(), 7);
    }
}
