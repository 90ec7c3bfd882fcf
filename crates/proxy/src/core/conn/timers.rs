//! A connection's clocks: when a frame last went either way ([`Activity`]) and the idle
//! timeout it feeds, a deadline that may be none, and the grace period after a stop. The
//! frame and request timeouts are the pumps' own, read from these.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::core::close::{Close, CloseReason};

/// How long answers still in flight are waited for once the proxy is told to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

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

/// Resolves [`SHUTDOWN_GRACE`] after the proxy was told to stop.
pub(super) async fn grace(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
    tokio::time::sleep(SHUTDOWN_GRACE).await;
}
