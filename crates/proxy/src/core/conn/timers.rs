//! A connection's clocks: when a frame last went either way ([`Activity`]) and the idle
//! timeout it feeds, a deadline that may be none, and the grace period after a stop. The
//! frame and request timeouts are the pumps' own, read from these.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::core::close::{Close, CloseReason};

/// When a frame last went either way: milliseconds since the connection began. Both
/// directions run in one task; an atomic keeps the future `Send`.
pub(super) struct Activity {
    since: Instant,
    last: AtomicU64,
}

impl Activity {
    pub(super) fn new() -> Activity {
        Activity {
            since: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    pub(super) fn touch(&self) {
        let ms = self.since.elapsed().as_millis();
        self.last
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    pub(super) fn last(&self) -> Instant {
        self.since + Duration::from_millis(self.last.load(Ordering::Relaxed))
    }
}

/// Resolves once no frame went either way for `timeout`, wherever the connection waits:
/// for the client, for the broker, or for a client that does not read its answers.
pub(super) async fn idle(activity: &Activity, timeout: Duration) -> Close {
    loop {
        let at = activity.last() + timeout;
        if at <= Instant::now() {
            return Close::of(
                CloseReason::Idle,
                format!("idle: no frame either way within the idle timeout ({timeout:?})"),
            );
        }
        tokio::time::sleep_until(at).await;
    }
}

/// Sleeps until `deadline`, or for ever without one.
pub(super) async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Resolves `drain_timeout` after the connection was told to drain (the proxy stops, or
/// the connection reached its maximum age).
pub(super) async fn grace(drain: &mut watch::Receiver<bool>, drain_timeout: Duration) {
    let _ = drain.wait_for(|stop| *stop).await;
    tokio::time::sleep(drain_timeout).await;
}

/// Sets `drain` once `shutdown` is set or the connection's maximum age `aged` (if any)
/// comes, calling `on_age` in that case. Never returns.
pub(super) async fn drain_when(
    mut shutdown: watch::Receiver<bool>,
    aged: Option<Instant>,
    drain: watch::Sender<bool>,
    on_age: impl FnOnce(),
) {
    tokio::select! {
        _ = shutdown.wait_for(|stop| *stop) => {}
        () = until(aged) => on_age(),
    }
    let _ = drain.send(true);
    std::future::pending::<()>().await;
}

/// When a connection opened at `opened`, the `id`th, reaches `max_age`: between 90 and
/// 100 % of it, spread by the id, so that connections opened together do not all close
/// together.
pub(super) fn aged_at(opened: Instant, max_age: Option<Duration>, id: u64) -> Option<Instant> {
    let max_age = max_age?;
    // The id's bits mixed (Fibonacci hashing), as a fraction in [0, 1).
    let spread = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    Some(opened + max_age.mul_f64(0.9 + 0.1 * spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_spread_over_the_last_tenth() {
        let opened = Instant::now();
        let max = Duration::from_secs(100);
        assert_eq!(aged_at(opened, None, 1), None);
        let ages: Vec<Duration> = (0..1000)
            .map(|id| aged_at(opened, Some(max), id).unwrap() - opened)
            .collect();
        assert!(ages
            .iter()
            .all(|&a| a >= Duration::from_secs(90) && a <= max));
        // Spread: some in each second of the ten.
        for second in 90..100 {
            let in_it = ages.iter().filter(|a| a.as_secs() == second).count();
            assert!(in_it > 50, "{in_it} in second {second}");
        }
    }
}
