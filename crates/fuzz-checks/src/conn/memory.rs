//! The live bytes the guard holds, counted by the fuzz binary's allocator.
//!
//! The fuzz target (`fuzz/fuzz_targets/conn.rs`) installs a global allocator that marks
//! every block allocated while [`counting`] says so, and calls [`allocated`] then, and
//! [`freed`] when a marked block is freed, on whichever thread; it [`install`]s itself at
//! start. The check counts only while it polls the guard's future, and not while the guard
//! writes into the in-memory pipes (their buffers stand for the kernel's socket buffers).
//! Without the allocator (`cargo test`'s replay) the memory property is skipped.
//!
//! This is the counting only: the allocator is the fuzz target's, and the bound the peak is
//! held to is `memory_bound`, in the module above.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

static INSTALLED: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// Counted bytes freed by another thread than the check's: the lines the guard hands
/// to the audit (and diagnostics) thread, counted until that thread is done with them.
static ELSEWHERE: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// The thread the check runs on.
    static HOME: Cell<bool> = const { Cell::new(false) };
}

/// Says that a counting allocator calls [`allocated`] and [`freed`].
pub fn install() {
    INSTALLED.store(true, Ordering::Relaxed);
}

/// Whether a block allocated now, on this thread, is to be counted. Safe to call from
/// a global allocator: the thread-locals are const-initialized and have no destructor.
#[inline]
pub fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

/// A counted block of `bytes` was allocated (or grown by `bytes`).
#[inline]
pub fn allocated(bytes: usize) {
    let bytes = bytes as isize;
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

/// A counted block of `bytes` was freed (or shrunk by `bytes`), on this thread.
#[inline]
pub fn freed(bytes: usize) {
    let bytes = bytes as isize;
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
    if !HOME.try_with(Cell::get).unwrap_or(false) {
        ELSEWHERE.fetch_add(bytes, Ordering::Relaxed);
    }
}

pub(crate) fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// One connection's measure.
pub(crate) struct Measure {
    live: isize,
    elsewhere: isize,
}

impl Measure {
    /// Starts a measure on this thread: the peak is reset to the live bytes now.
    pub(crate) fn start() -> Measure {
        HOME.with(|h| h.set(true));
        let live = LIVE.load(Ordering::Relaxed);
        PEAK.store(live, Ordering::Relaxed);
        Measure {
            live,
            elsewhere: ELSEWHERE.load(Ordering::Relaxed),
        }
    }

    /// Once the guard is gone: the peak above the start, and what the guard handed to
    /// other threads: the counted bytes they freed meanwhile, and those still live
    /// (lines not written yet, and whatever the guard's polls left behind, such as
    /// tokio's or a `OnceLock`'s). First waits (a second at most) for the other threads
    /// to free what they were handed: until the live count is back near the start.
    pub(crate) fn finish(self) -> (usize, usize) {
        let deadline = Instant::now() + Duration::from_secs(1);
        while LIVE.load(Ordering::Relaxed) > self.live + 4096 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        let peak = PEAK.load(Ordering::Relaxed) - self.live;
        let elsewhere = ELSEWHERE.load(Ordering::Relaxed) - self.elsewhere;
        let left = LIVE.load(Ordering::Relaxed) - self.live;
        (
            usize::try_from(peak).unwrap_or(0),
            usize::try_from(elsewhere.max(0) + left.max(0)).unwrap_or(0),
        )
    }
}

/// Counting on (or off) on this thread until dropped; the previous state comes back.
pub(crate) struct Counting(bool);

impl Counting {
    pub(crate) fn set(on: bool) -> Counting {
        Counting(COUNTING.with(|c| c.replace(on)))
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        COUNTING.with(|c| c.set(self.0));
    }
}
