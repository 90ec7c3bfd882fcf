//! The connection core: one client connection and its own broker connection; requests go
//! up in order, answers come back in the same order. It knows no API beyond pairing (which
//! requests get no answer, how long a request lets the broker wait: `owed`): what is read
//! and decided is the filters' ([`crate::filter`]), asked in their order for the API keys
//! they read.
//!
//! Both directions run in one task, as two futures:
//! - `requests` reads whole frames from the client (`FramedRead`, `KafkaFrameCodec`), peeks
//!   each header, lets the filters decide, and for every request puts a *slot* into a
//!   bounded channel before the request (or the frame a filter put in its place) is written
//!   upstream: `Forwarded` (its answer through the response filters, or to the filter that
//!   kept it to merge) or `Local` (answered by a filter, nothing sent).
//! - `responses` takes the slots in order. A `Local` slot is answered as soon as every slot
//!   before it is; the broker's frames are paired with the forwarded slots by correlation id
//!   (`InFlight`): a forwarded request the broker skipped (a `Produce` with `acks=0`, which
//!   gets no answer) is passed over, and the local answers queued after it still go out in
//!   their turn.
//!
//! Memory is bounded: each side reads one frame at a time (at most `max-frame-size`)
//! and does not read the next before the last one was handed on; writes go through
//! `FramedWrite`s that flush past 64 KiB; at most [`MAX_IN_FLIGHT`] requests wait for
//! their answers; and what the filters keep to answer or merge later holds permits of a
//! per-connection budget of `max-frame-size` bytes and a share of the guard's buffer
//! budget. A slow client thus
//! stops the proxy reading the broker, which stops it reading the client.
//!
//! The files, bottom up: `frames` (reading and writing whole frames), `client_read` (the
//! client's close seen while it is not read), `timers` (activity, idle, grace), `slot` (the
//! queue of answers owed and the budgets its entries hold), `requests` and `responses` (the
//! two pumps), `proxy` (both pumps over one connection), `serve` (TLS accept and dial, the
//! principal, then `proxy`).

mod client_read;
mod frames;
mod proxy;
mod requests;
mod responses;
mod serve;
mod slot;
#[cfg(test)]
mod tests;
mod timers;

pub use serve::serve;

// The core alone, over any streams: what `crate::testing` re-exports (the `testing`
// feature, for the `conn` fuzz target); unused in the crate without it.
#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use {client_read::ClientRead, frames::RESERVE_STEP, proxy::proxy, slot::MAX_IN_FLIGHT};
