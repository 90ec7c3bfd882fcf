#![no_main]
//! Fuzz target `conn`: the guard's connection state machine (crates/proxy) driven by a script
//! of client and broker moves, in memory, on a paused clock. See `check_conn` in
//! `crates/fuzz-checks`.
//!
//! The binary counts what the guard allocates, for the memory property: a global allocator
//! that puts a small header before every block, saying whether the block was allocated
//! while the check counts (`memory::counting`), so that it is counted out again when freed,
//! on whichever thread frees it.

use std::alloc::{GlobalAlloc, Layout, System};

use kafka_elect_leaders_fuzz_checks as checks;
use kafka_elect_leaders_fuzz_checks::memory;

/// The header's marks: the block is counted, or not.
const COUNTED: usize = 0xc0_11_7e_d1;
const NOT_COUNTED: usize = 0;

struct CountingAllocator;

impl CountingAllocator {
    /// The layout of the block with its header: the header is one alignment unit (at least
    /// 16 bytes), its mark in the last word before the caller's bytes.
    fn outer(layout: Layout) -> Option<(Layout, usize)> {
        let align = layout.align().max(16);
        let size = layout.size().checked_add(align)?;
        Some((Layout::from_size_align(size, align).ok()?, align))
    }

    unsafe fn alloc_with(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let Some((outer, header)) = Self::outer(layout) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `outer` has a non-zero size (it includes the header).
        let base = unsafe {
            if zeroed {
                System.alloc_zeroed(outer)
            } else {
                System.alloc(outer)
            }
        };
        if base.is_null() {
            return base;
        }
        let counted = memory::counting();
        // SAFETY: the header lies within the block, and holds a word before `ptr`.
        unsafe {
            let ptr = base.add(header);
            (ptr.sub(8) as *mut usize).write_unaligned(if counted { COUNTED } else { NOT_COUNTED });
            if counted {
                memory::allocated(layout.size());
            }
            ptr
        }
    }
}

// SAFETY: every block is the system allocator's, with a header in front of the caller's
// bytes; its layout is derived from the caller's the same way on every call.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { self.alloc_with(layout, false) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { self.alloc_with(layout, true) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let (outer, header) = Self::outer(layout).expect("allocated with this layout");
        // SAFETY: `ptr` came from `alloc_with` with this layout.
        unsafe {
            if (ptr.sub(8) as *const usize).read_unaligned() == COUNTED {
                memory::freed(layout.size());
            }
            System.dealloc(ptr.sub(header), outer);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (outer, header) = Self::outer(layout).expect("allocated with this layout");
        let Some(new_outer) = new_size.checked_add(header) else {
            return std::ptr::null_mut();
        };
        if Layout::from_size_align(new_outer, outer.align()).is_err() {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` came from `alloc_with` with this layout; the header moves with the
        // block, its mark with it.
        unsafe {
            let counted = (ptr.sub(8) as *const usize).read_unaligned() == COUNTED;
            let base = System.realloc(ptr.sub(header), outer, new_outer);
            if base.is_null() {
                return base;
            }
            if counted {
                if new_size >= layout.size() {
                    memory::allocated(new_size - layout.size());
                } else {
                    memory::freed(layout.size() - new_size);
                }
            }
            base.add(header)
        }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Keeps freed memory in the process: by default glibc hands blocks of more than 128 KiB
/// (frames near the largest, their buffers) back to the kernel when they are freed, and
/// the next run takes page faults to get them again, a quarter of the time of a run.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_MMAP_THRESHOLD: i32 = -3;
    // SAFETY: mallopt only sets glibc's allocator parameters (AddressSanitizer's allocator
    // ignores it).
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}

libfuzzer_sys::fuzz_target!(
    init: {
        memory::install();
        keep_freed_memory();
    },
    |data: &[u8]| checks::check_conn(data)
);
