//! What the guard's memory tests share: a global allocator that tracks the bytes live and
//! their peak. A test binary installs it as its own (`#[global_allocator] static ALLOCATOR:
//! common::Counting = common::Counting;`); `unsafe` is needed to implement `GlobalAlloc`,
//! and is confined to this file.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting.
pub struct Counting;

/// Bytes allocated and not yet freed.
pub static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most [`LIVE`] has been since a test last set it.
pub static PEAK: AtomicUsize = AtomicUsize::new(0);

// The workspace denies `unsafe_code`; implementing `GlobalAlloc` needs it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}
