//! The sizes, budgets and timeouts the connection checks run the guard with, and the
//! memory bound they hold it to: below every other part of `conn`, which all read them.

use std::time::Duration;

use kafka_elect_leaders_proxy::testing::{MAX_IN_FLIGHT, RESERVE_STEP};

/// The guard's `--max-frame-size` here: small, so that the memory bound means something
/// and a frame past it is a few bytes of input away.
pub const MAX_FRAME_SIZE: usize = 64 * 1024;
/// Moves of a script, at most.
pub const MAX_OPS: usize = 64;
/// The guard's idle and frame timeouts here: short, so that a few moves of the clock pass
/// them (a move is milliseconds to minutes).
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
pub(super) const FRAME_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the finale waits, in virtual time, for the guard to finish once both sides
/// closed.
pub(super) const FINISH_WITHIN: Duration = Duration::from_secs(3600);
/// Correlation ids of the client's requests start here and grow by one.
pub(super) const FIRST_ID: i32 = 1;
/// Bytes of requests the client writes, at most: enough for 32 frames of the largest size
/// (that many kept requests, each pinning its read buffer, are twice the memory bound), few
/// enough to keep a run short.
pub(super) const CLIENT_BUDGET: usize = 2 << 20;
/// Bytes of answers the client reads, at most (it stops reading there), and bytes the
/// broker writes: what one run may cost. Answers of refusals can be many times larger than
/// their requests (every refused partition carries its message).
pub(super) const CLIENT_READ_CAP: usize = 4 << 20;
pub(super) const BROKER_BUDGET: usize = 4 << 20;
/// Partitions the client's ElectLeaders requests name, at most: four frames of the largest
/// size. The guard's work grows with them (the audit record, the answers of refusals),
/// so that inputs of many such frames would take most of a campaign's time.
pub(super) const PARTITION_BUDGET: usize = 4 * MAX_FRAME_SIZE / 4;

/// Bytes the guard may hold at its peak while one connection runs, by its design, with
/// `max_frame_size` F. Two terms depend on the connection's requests: `largest_elect`, the
/// largest ElectLeaders request (its audit record), and `largest_refusal`, the largest answer
/// of refusals the guard writes for one of them (`answer::encode_refusal`, without the
/// broker's part). Checked only where a counting allocator is installed ([`super::memory`]).
///
/// Each term at its worst (conn.rs's constants; its write boundary of 64 KiB is not
/// exported, so it is written here):
/// - two read buffers (client, broker), each up to a frame and [`RESERVE_STEP`] past the
///   bytes received, and `BytesMut` grows by doubling: 2 × 2 × (F + RESERVE_STEP);
/// - the broker's write buffer, written out past 64 KiB and taking one more frame before
///   it is, doubling: 2 × (64 KiB + F);
/// - the ElectLeaders requests kept in slots to be answered or merged later: the budget of
///   one frame (F + 4), and their decisions, whose messages can repeat the client id: 2 × F;
/// - the audit record of one decision, a `serde_json::Value` and then a line: a 4-byte
///   partition id becomes a 32-byte `Value`, in two lists (`partitions`, `refused`), and up
///   to 12 bytes of text in each, the text written while the `Value` lives (names: less):
///   32 × `largest_elect`;
/// - one answer: the refusals (as large as `largest_refusal`: every refused partition
///   carries its message) merged with the broker's answer (at most F), held encoded, then
///   copied into the client's write buffer, which doubles as it grows, and the merge's
///   vectors beside them: 4 × (`largest_refusal` + F + 64 KiB);
/// - [`MAX_IN_FLIGHT`] slots and their bookkeeping: 512 bytes each.
///
/// With small ElectLeaders requests that is about 1.4 MiB at F = 64 KiB; with requests of
/// the largest size, 3.4 MiB and their answers. The measured peaks (FUZZING.md) are under
/// it; the bound is what the design allows, not the highest peak seen, so that a guard
/// holding more than its design says (per request kept, per byte received) fails here. What
/// the guard hands to the audit thread and the thread has not yet written is not the
/// connection's: the check allows it on top (see `run`).
pub const fn memory_bound(
    max_frame_size: usize,
    largest_elect: usize,
    largest_refusal: usize,
) -> usize {
    const WRITE_BOUNDARY: usize = 64 * 1024;
    let f = max_frame_size;
    let read = 2 * 2 * (f + RESERVE_STEP);
    let write = 2 * (WRITE_BOUNDARY + f);
    let held = 2 * f;
    let audit = 32 * largest_elect;
    let answer = 4 * (largest_refusal + f + WRITE_BOUNDARY);
    let slots = MAX_IN_FLIGHT * 512;
    read + write + held + audit + answer + slots
}

/// A read buffer at its largest: a frame and [`RESERVE_STEP`] past it, doubled.
pub(super) const PINNED_BUFFER: usize = 2 * (MAX_FRAME_SIZE + RESERVE_STEP);
