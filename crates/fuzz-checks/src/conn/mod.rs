//! conn: the guard's connection state machine (`proxy`, crates/proxy/src/conn.rs) as a whole,
//! driven in memory by a script: a client and a fake broker on in-memory pipes, a paused
//! clock, and the properties the guard promises checked on what each side saw.
//!
//! The script (`Script`, read with `arbitrary`) is up to [`MAX_OPS`] moves in any order: the
//! client sends frames (valid ElectLeaders requests of every version and shape, damaged
//! ones, Produce with acks 0/1/-1, Metadata, Fetch, any other API, frames cut into several
//! writes or left unfinished, size prefixes the guard must refuse); the broker answers its
//! oldest request (an ElectLeaders answer for exactly the partitions it was asked, error 0,
//! or a plain frame for other APIs), skips one, answers an id nobody sent, sends garbage;
//! either side closes; the client stops or resumes reading; virtual time moves; the guard is
//! told to stop. A finale then ends the connection (both sides close, or one of them, or the
//! guard is told to stop) and gives the guard an hour of virtual time to finish.
//!
//! What is checked (a panic on a violation):
//! 1. the answers the client gets are answers to its own requests, in the order it sent
//!    them, each at most once; an answer to a request the guard forwards as it is, is the
//!    broker's frame byte for byte;
//! 2. the broker gets the client's frames of other APIs byte for byte, in order, and of the
//!    ElectLeaders requests only those that parse, each forwarded as it was or trimmed of
//!    exactly the partitions the policy refuses; nothing after a malformed frame;
//! 3. every ElectLeaders answer parses at its request's version, and every partition the
//!    policy refuses is answered `POLICY_VIOLATION` (44), unless the policy only logs;
//! 4. the bytes the guard holds while the connection runs stay under [`memory_bound`] (only
//!    in the fuzz binary, which installs a counting allocator: see [`memory`]);
//! 5. no panic, and the guard finishes within that hour of the finale's end.
//!
//! Everything the guard sees is what the client's bytes are once framed, not what the script
//! meant to send: the checks split the client's stream into frames exactly as the guard's
//! codec does ([`classify`]), so a damaged frame that still parses is a request like any other.
//!
//! The audit log is a thread with a bounded queue: when it lags, the guard refuses the
//! elections it cannot record, whole (`Policy::refuse_unaudited`). That depends on thread
//! scheduling, not on the input, so the checks accept such a refusal in place of any
//! decision: it refuses more, never less. Except under `--log-only`, which never refuses:
//! there a decision that could not be audited is forwarded all the same, and a refusal
//! for want of an audit is a violation.
//!
//! The target found two bugs in the guard (`corpus/regressions/conn`); until they are
//! fixed, [`check_conn_lenient`] tolerates them, for campaigns and for the replay.
//!
//! The files, in the order a run goes through them:
//! - this one: the target's limits, the memory bound, the entry points and `run`, which
//!   wires the guard to the two sides and checks what they saw;
//! - `script`: the input grammar, the moves a script is made of, as `arbitrary` reads them;
//! - `requests`: the frames the client's requests become, and a Produce's acks read back;
//! - `policies`: the guard's configuration, one `Shared` per policy for the process;
//! - `world`: the in-memory sides (pipes, the client's close, what each side sent and got);
//! - `driver`: the fake broker's answers and the driver that plays a script, then its finale;
//! - [`memory`]: the counting allocator's side of the memory property;
//! - `expected`: the client's stream as the guard must read it, with the policy's decisions;
//! - `checks`: properties 1 to 3, on what each side saw;
//! - `seed`, `scripts`, `tests` (tests only): scripts written as bytes, the scripts of the
//!   corpus and whole runs of them, and the checks' own tests on hand-made streams.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders_proxy::testing::{proxy, MAX_IN_FLIGHT};
use kafka_elect_leaders_proxy::Verdict;
use tokio::sync::watch;

mod checks;
mod driver;
mod expected;
mod limits;
pub mod memory;
mod policies;
mod requests;
mod script;
#[cfg(test)]
mod scripts;
#[cfg(test)]
mod seed;
#[cfg(test)]
mod tests;
mod world;

pub use checks::{check_answers, check_forwarded};
pub use expected::{classify, Sent};
pub use limits::{memory_bound, MAX_FRAME_SIZE, MAX_OPS};

use checks::check_world;
use driver::{driver, guard};
use limits::{CLIENT_READ_CAP, PINNED_BUFFER};
use policies::{conn_info, shared};
use script::{Script, PIPES};
use world::{receiver, sender, ClientEnd, Sending, Uncounted, World};

/// `KEL_CONN_PEAKS` set: each run prints its memory peak and bound on stderr (how the bound
/// was checked against what the guard really holds).
fn report_peaks() -> bool {
    static REPORT: OnceLock<bool> = OnceLock::new();
    *REPORT.get_or_init(|| std::env::var_os("KEL_CONN_PEAKS").is_some())
}

thread_local! {
    /// One paused current-thread runtime per thread, for every input. Building one per input
    /// instead costs about 3 µs more a run (measured on the shorter half of a corpus: 27 µs
    /// against 30 µs a script, release build without instrumentation); the clock and the
    /// scheduler start each run idle either way.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
}

/// Input: a `Script`, read with `arbitrary`. Strict, unless `KEL_CONN_LENIENT` is set in
/// the environment (see [`check_conn_lenient`]); with `KEL_CONN_SCRIPT` set, the script is
/// printed on stderr first.
pub fn check_conn(data: &[u8]) {
    static LENIENT: OnceLock<bool> = OnceLock::new();
    let lenient = *LENIENT.get_or_init(|| std::env::var_os("KEL_CONN_LENIENT").is_some());
    static SHOW: OnceLock<bool> = OnceLock::new();
    let show = *SHOW.get_or_init(|| std::env::var_os("KEL_CONN_SCRIPT").is_some());
    if let Ok(script) = Script::arbitrary_take_rest(Unstructured::new(data)) {
        if show {
            eprintln!("{script:#?}");
        }
        run(&script, lenient);
    }
}

/// [`check_conn`], tolerating the two bugs this target found in the guard at 13de460
/// (`corpus/regressions/conn`), so that a campaign on a guard that still has them looks for
/// other faults, and the replay of that corpus passes until they are fixed:
/// - a request kept in a slot (refused or trimmed) is a slice of the read buffer it was
///   read into, and keeps all of it allocated: the memory bound allows a whole read buffer
///   (`PINNED_BUFFER`) for each, up to [`MAX_IN_FLIGHT`];
/// - while one of its sides waits (the client's for room: the budget of kept requests, or a
///   slot; the broker's to write to a client that does not read), the guard sees neither a
///   stop, nor the other side's close, nor its idle timeout: after such an end, if the guard
///   has not finished, both sides close, and then it must.
pub fn check_conn_lenient(data: &[u8]) {
    if let Ok(script) = Script::arbitrary_take_rest(Unstructured::new(data)) {
        run(&script, true);
    }
}

/// Plays `script` against the guard and checks what each side saw (`lenient`: see
/// [`check_conn_lenient`]); returns the world for the tests (`scripts`) to look into.
fn run(script: &Script, lenient: bool) -> World {
    let shared = shared(script.policy);
    let pipe = PIPES[usize::from(script.pipe) % PIPES.len()];
    let world = World::new();
    let conn = conn_info();
    let measure = memory::installed().then(memory::Measure::start);

    RUNTIME.with(|rt| {
        rt.block_on(async {
            let (client, guard_client) = tokio::io::duplex(pipe);
            let (broker, guard_broker) = tokio::io::duplex(pipe);
            let (client_r, client_w) = tokio::io::split(client);
            let (broker_r, broker_w) = tokio::io::split(broker);
            let (gc_r, gc_w) = tokio::io::split(guard_client);
            let (gb_r, gb_w) = tokio::io::split(guard_broker);
            let client_end = ClientEnd {
                read: gc_r,
                closed: world.client_closed.clone(),
            };
            let (stop_tx, stop_rx) = watch::channel(false);
            let future = proxy(
                (client_end, Uncounted(gc_w)),
                (gb_r, Uncounted(gb_w)),
                &conn,
                shared,
                stop_rx,
            );
            let w = &world;
            tokio::join!(
                guard(w, future),
                sender(
                    w,
                    client_w,
                    &w.client_queue,
                    &w.client_sending,
                    &w.client_sent,
                    || w.client_closed.close(),
                ),
                receiver(
                    w,
                    client_r,
                    &w.client_got,
                    || w.client_reading.get() && w.client_got.borrow().len() < CLIENT_READ_CAP,
                    || w.client_sending.get() == Sending::Gone && !w.over.get(),
                    || {},
                ),
                sender(
                    w,
                    broker_w,
                    &w.broker_queue,
                    &w.broker_sending,
                    &w.broker_sent,
                    || w.broker_sending.set(Sending::Gone),
                ),
                receiver(
                    w,
                    broker_r,
                    &w.broker_got,
                    || true,
                    || w.broker_sending.get() == Sending::Gone && !w.over.get(),
                    || w.broker_received(),
                ),
                driver(w, script, &stop_tx, lenient),
            );
        })
    });

    let client_sent = world.client_sent.borrow();
    let (sent, growing) = classify(&client_sent, &shared.policy());
    if let Some(measure) = measure {
        let (peak, handed_over) = measure.finish();
        let largest_elect = sent
            .iter()
            .filter(|s| s.elect.is_some())
            .map(|s| s.frame.len())
            .max()
            .unwrap_or(0);
        let largest_refusal = sent.iter().map(|s| s.refusal_len).max().unwrap_or(0);
        let mut bound = memory_bound(MAX_FRAME_SIZE, largest_elect, largest_refusal);
        if lenient {
            let kept = sent
                .iter()
                .filter(|s| {
                    s.elect.as_ref().is_some_and(|(_, d)| {
                        matches!(d.verdict, Verdict::Refused | Verdict::Trimmed)
                    })
                })
                .count();
            bound += kept.min(MAX_IN_FLIGHT) * PINNED_BUFFER;
        }
        if report_peaks() {
            eprintln!(
                "conn: peak {peak} B, bound {bound} B, handed to the audit thread {handed_over} \
                 B, the guard's end: {:?}",
                world.guard_result.borrow()
            );
        }
        assert!(
            peak <= bound + handed_over,
            "the guard held {peak} bytes at its peak, over the bound of {bound} (and \
             {handed_over} bytes handed to the audit thread)"
        );
    }
    if growing {
        check_world(&world, &sent, &shared.policy());
    }
    drop(sent);
    drop(client_sent);
    world
}
