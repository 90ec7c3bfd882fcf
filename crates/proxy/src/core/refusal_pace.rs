//! The pace of a client's refused large frames: bytes per second, for all its connections.
//!
//! A frame larger than 64 KiB that a filter answers in the broker's place (a refusal) costs
//! the guard its reading, its decision and its answer, and costs the broker nothing: a
//! client sending such frames back to back takes cores the other clients need (issue 42,
//! item 5: two clients sending 16 MiB refused requests read 2 GB/s of answers off the guard,
//! and another client's p99 rose tenfold). Kafka answers a client over its quota with a
//! throttle time and stops reading its socket for that long; the guard does the same with a
//! client whose refused large frames go past [`Config::refused_bytes_per_second`]: after
//! the answer, the connection's next frame is read only when the client's refused bytes are
//! back within one second's worth. TCP holds the client back meanwhile.
//!
//! A client is an address (an IPv6 /64, `crate::core::clients`): more connections share one
//! pace. Frames forwarded to the broker and small frames are never paced, nor is a client
//! that has large frames refused less often than the pace.
//!
//! The pace is the generic cell rate algorithm: each client has the time its refused bytes
//! so far are paid for; a refusal pushes it on by `bytes / per_second`; the connection waits
//! until that time is less than one second ahead.
//!
//! [`Config::refused_bytes_per_second`]: crate::Config::refused_bytes_per_second

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::core::clients::PerClient;

/// [`Config::refused_bytes_per_second`](crate::Config::refused_bytes_per_second)'s default:
/// 16 MiB a second per client.
pub const DEFAULT_REFUSED_BYTES_PER_SECOND: usize = 16 << 20;

/// The pace every client is held to, and each client's account.
#[derive(Debug)]
pub(crate) struct RefusalPace {
    /// Bytes a second; 0: no pace.
    per_second: u64,
    /// What the accounts' times count from.
    base: Instant,
    clients: PerClient<Account>,
}

/// One client's account: when its refused bytes so far are paid for, in nanoseconds after
/// [`RefusalPace::base`].
#[derive(Debug, Default)]
pub(crate) struct Account {
    paid_at: AtomicU64,
}

const SECOND_NS: u64 = 1_000_000_000;

/// The longest one wait: an account pushed past it (frames of a GiB refused at a byte a
/// second) is still paid for, over several waits; the idle timeout may close the connection
/// first.
const MAX_WAIT: Duration = Duration::from_secs(3600);

impl RefusalPace {
    /// A pace of `per_second` bytes a second per client (0: none).
    pub(crate) fn new(per_second: u64) -> RefusalPace {
        RefusalPace {
            per_second,
            base: Instant::now(),
            clients: PerClient::default(),
        }
    }

    /// The account of `address`'s client, shared by its connections.
    pub(crate) fn account(&self, address: IpAddr) -> Arc<Account> {
        self.clients.counter(address)
    }

    /// Charges `bytes` refused at `now` to `account`: when the connection may read its next
    /// frame, or None when it may at once.
    pub(crate) fn charge(&self, account: &Account, bytes: usize, now: Instant) -> Option<Instant> {
        if self.per_second == 0 {
            return None;
        }
        let cost = u64::try_from(
            u128::from(bytes as u64) * u128::from(SECOND_NS) / u128::from(self.per_second),
        )
        .unwrap_or(u64::MAX);
        let now_ns = ns(now.saturating_duration_since(self.base));
        let push = |paid_at: u64| paid_at.max(now_ns).saturating_add(cost);
        // fetch_update's closure never refuses: the result is always Ok.
        let before =
            match account
                .paid_at
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |at| Some(push(at)))
            {
                Ok(at) | Err(at) => at,
            };
        let paid_at = push(before);
        // Within one second's worth ahead: no wait.
        let resume = paid_at.saturating_sub(SECOND_NS);
        (resume > now_ns).then(|| now + Duration::from_nanos(resume - now_ns).min(MAX_WAIT))
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn a_second_worth_passes_then_the_client_waits_its_bytes_time() {
        let pace = RefusalPace::new(16 * MIB as u64);
        let account = pace.account("10.0.0.1".parse().unwrap());
        let now = pace.base + Duration::from_secs(100);
        // 16 MiB: one second's worth, no wait.
        assert_eq!(pace.charge(&account, 16 * MIB, now), None);
        // 16 MiB more at once: paid for two seconds from now, read again in one.
        let resume = pace.charge(&account, 16 * MIB, now).unwrap();
        assert_eq!(resume - now, Duration::from_secs(1));
        // 8 MiB more: half a second later still.
        let resume = pace.charge(&account, 8 * MIB, now).unwrap();
        assert_eq!(resume - now, Duration::from_millis(1500));
    }

    #[test]
    fn a_client_under_the_pace_never_waits() {
        let pace = RefusalPace::new(16 * MIB as u64);
        let account = pace.account("10.0.0.1".parse().unwrap());
        let mut now = pace.base;
        for _ in 0..100 {
            now += Duration::from_secs(1);
            assert_eq!(pace.charge(&account, 16 * MIB, now), None);
        }
    }

    #[test]
    fn connections_of_one_client_share_its_account_and_others_have_their_own() {
        let pace = RefusalPace::new(MIB as u64);
        let now = pace.base;
        let a = pace.account("10.0.0.1".parse().unwrap());
        let b = pace.account("10.0.0.1".parse().unwrap());
        let other = pace.account("10.0.0.2".parse().unwrap());
        assert_eq!(pace.charge(&a, MIB, now), None);
        assert!(pace.charge(&b, MIB, now).is_some());
        assert_eq!(pace.charge(&other, MIB, now), None);
    }

    #[test]
    fn no_pace_never_waits_and_huge_counts_do_not_overflow() {
        let none = RefusalPace::new(0);
        let account = none.account("10.0.0.1".parse().unwrap());
        assert_eq!(none.charge(&account, usize::MAX, none.base), None);
        let slow = RefusalPace::new(1);
        let account = slow.account("10.0.0.1".parse().unwrap());
        let now = slow.base;
        assert_eq!(slow.charge(&account, usize::MAX, now), Some(now + MAX_WAIT));
        assert_eq!(slow.charge(&account, usize::MAX, now), Some(now + MAX_WAIT));
    }
}
