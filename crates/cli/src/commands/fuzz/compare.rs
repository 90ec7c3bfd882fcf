//! `fuzz --target A --compare B`: the same requests to two brokers, their answers compared.
//!
//! Request N is the one `fuzz --target` sends for the seed, at the newest version both
//! brokers have, its correlation id set to N + 1 on both sides, so that the two get the
//! same bytes. Each broker has its own connection (starting with ApiVersions, as
//! `--target`'s do); the request goes to both before either answer is read, and each
//! answer is read against the same deadline.
//!
//! What is normalized away (FUZZING.md says why; the counts are in the summary):
//! - `ThrottleTimeMs`: a quota's doing, not the request's;
//! - a partition's `ErrorMessage` when the two error codes agree: wording changes between
//!   releases, the code is the contract;
//! - the order of topics and of partitions: results are compared as sets keyed by topic and
//!   partition (duplicates counted). An answer equal but for order is counted, not reported.
//! - for a request whose `TimeoutMs` is under [`SHORT_TIMEOUT_MS`], a partition or a whole
//!   answer that timed out on one side only (REQUEST_TIMED_OUT; in version 0, which has no
//!   top-level error code, an answer without results): the deadline ran out on one broker.
//!
//! Everything else is a difference: an answer on one side and a closed connection or a
//! timeout on the other, a closed connection against a timeout, the correlation id, the
//! top-level error code, a topic or partition answered by one only or a different number of
//! times, a partition's error code, unknown tagged fields, and an answer that the library
//! parses against one that it refuses (two refused answers differ unless byte for byte
//! equal).

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_elect_leaders::compare::{code, compare_outcomes, Outcome, SHORT_TIMEOUT_MS};
use kafka_elect_leaders::{parse_request, parse_response, set_request_correlation_id};
use kafka_elect_leaders_json::hex::to_hex;
use kafka_elect_leaders_json::print::Message;
use serde_json::{json, Value};

use super::broker::{
    connect_watched, dripped, is_timeout, on_signals, pace, read_frame, request, wait_for, Conn,
    ConnectError, Options, Watched,
};
use crate::fail::Failure;
use crate::flags::FuzzArgs;

/// How long a malformed request's answer is waited for when neither broker has answered:
/// one whose size prefix promises more bytes is waited on by both, for ever.
const MALFORMED_WAIT: Duration = Duration::from_millis(500);

/// One broker: its address, connection and counts.
struct Side {
    o: Options,
    name: &'static str,
    conn: Option<Conn>,
    answered: u64,
    closed: u64,
    timeouts: u64,
    max_version: Option<i16>,
    /// Its connection, shut down by a watcher thread on a signal.
    watched: Watched,
}

impl Side {
    fn new(o: Options, name: &'static str) -> Side {
        Side {
            o,
            name,
            conn: None,
            answered: 0,
            closed: 0,
            timeouts: 0,
            max_version: None,
            watched: Watched::default(),
        }
    }

    /// Reads the answer, waiting until `deadline` (at least a millisecond, so that an answer
    /// already there is read).
    fn read(&mut self, deadline: Instant) -> Outcome {
        let Some(c) = self.conn.as_mut() else {
            return Outcome::Closed("not connected".into());
        };
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let answer = read_frame(&mut c.stream, wait);
        match answer {
            Ok(Some(frame)) => Outcome::Answer(frame),
            Ok(None) => Outcome::Closed("closed".into()),
            // An answer that dripped in past the wait: told apart from none at all.
            Err(e) if dripped(&e).is_some() => Outcome::Closed(format!(
                "answer not whole within {} ms: {}",
                wait.as_millis(),
                dripped(&e).map(ToString::to_string).unwrap_or_default()
            )),
            Err(e) if is_timeout(&e) => Outcome::Timeout,
            Err(e) => Outcome::Closed(e.to_string()),
        }
    }

    fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Answer(_) => self.answered += 1,
            Outcome::Closed(_) => self.closed += 1,
            Outcome::Timeout => self.timeouts += 1,
        }
        if !matches!(outcome, Outcome::Answer(_)) {
            self.conn = None;
        }
    }
}

#[derive(Default)]
struct Tally {
    sent: u64,
    malformed: u64,
    same: u64,
    differing: u64,
    order_only: u64,
    throttle_normalized: u64,
    messages_normalized: u64,
    timed_out_one_side: u64,
    /// Partition error codes in A's answers (when both answered): what was exercised.
    codes: BTreeMap<i16, u64>,
    classes: BTreeMap<String, u64>,
}

/// The side's answer as the JSON line shows it: outcome, hex, and the decoded object.
fn side_json(o: &Outcome, version: i16) -> Value {
    match o {
        Outcome::Answer(frame) => {
            let decoded = match parse_response(frame, version) {
                Ok(r) => {
                    serde_json::from_str(&Message::Response(r).text(None)).unwrap_or(Value::Null)
                }
                Err(e) => json!({ "error": e.to_string() }),
            };
            json!({ "outcome": "answer", "hex": to_hex(frame), "decoded": decoded })
        }
        Outcome::Closed(why) => json!({ "outcome": "closed", "error": why }),
        Outcome::Timeout => json!({ "outcome": "timeout" }),
    }
}

/// `fuzz --target A --compare B`.
pub fn run(
    args: &FuzzArgs,
    a: SocketAddr,
    b: SocketAddr,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let mut sides = [
        Side::new(Options::new(args, a), "A"),
        Side::new(Options::new(args, b), "B"),
    ];
    let o = Options::new(args, a);
    let (first, end) = match args.index {
        Some(i) => (i, i.saturating_add(1)),
        None => (0, args.count),
    };
    // SIGINT or SIGTERM ends the campaign with its summary, as --count does; a wait for an
    // answer is cut short (each side's connection is shut down) and that request is not
    // compared.
    let signalled = on_signals("fuzz --compare")?;
    let done = Arc::new(AtomicBool::new(false));
    let watchers: Vec<_> = sides
        .iter()
        .map(|s| s.watched.watch(Arc::clone(&signalled), Arc::clone(&done)))
        .collect();
    let stopped = || signalled.load(Ordering::SeqCst);
    let mut interrupted = false;
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut previous = Vec::new();
    let mut out_of_time = false;
    let mut harness: Option<String> = None;
    // Request N is generated from the seed alone, or (N odd) mutated from request N - 1:
    // `--index N` starts at N - 1.
    let mut n = first.saturating_sub(1);
    'requests: while n < end && started.elapsed() < o.duration {
        if let (Some(rate), true) = (o.rate, n >= first) {
            pace(&o, started, n - first, rate, &stopped);
        }
        if stopped() {
            interrupted = true;
            break;
        }
        if wait_for(&o, started).is_none() {
            break;
        }
        for side in sides.iter_mut() {
            if side.conn.is_some() {
                continue;
            }
            // What is left now: A's connection may have taken some of it.
            let Some(limit) = wait_for(&o, started) else {
                break 'requests;
            };
            match connect_watched(&side.o, limit, &side.watched) {
                Ok(c) => {
                    side.max_version = Some(c.max_version);
                    side.conn = Some(c);
                }
                // The duration ended while waiting: not the broker's fault, unless nothing
                // at all could be compared.
                Err(ConnectError::NoApiVersions(e))
                    if limit < o.timeout && is_timeout(&e) && tally.sent > 0 =>
                {
                    out_of_time = true;
                    break 'requests;
                }
                Err(ConnectError::NoApiVersions(_)) if stopped() => {
                    // Cut by a signal: a broker that never answered is said so, as when
                    // the duration cuts the wait (issue 44, item 2).
                    if side.answered == 0 {
                        harness = Some(format!(
                            "{} {}: connected, but no answer to ApiVersions in {:.1}s (a \
                             signal ended the wait)",
                            side.name,
                            side.o.target,
                            started.elapsed().as_secs_f64()
                        ));
                    }
                    interrupted = true;
                    break 'requests;
                }
                Err(ConnectError::Unreachable(e)) => {
                    harness = Some(format!(
                        "{} {}: cannot connect: {e}",
                        side.name, side.o.target
                    ));
                    break 'requests;
                }
                Err(ConnectError::NoApiVersions(e)) => {
                    harness = Some(format!(
                        "{} {}: connected, but no answer to ApiVersions: {}",
                        side.name,
                        side.o.target,
                        if is_timeout(&e) {
                            format!("none within {} ms", limit.as_millis())
                        } else {
                            e.to_string()
                        }
                    ));
                    break 'requests;
                }
            }
        }
        let Some(limit) = wait_for(&o, started) else {
            break;
        };
        let max_version = sides
            .iter()
            .filter_map(|s| s.conn.as_ref().map(|c| c.max_version))
            .min()
            .unwrap_or(kafka_elect_leaders::MAX_VERSION);
        let mut frame = request(&o, n, max_version, &previous);
        previous.clone_from(&frame);
        if n < first {
            n += 1;
            continue;
        }
        let parsed = parse_request(&frame).map(|r| r.timeout_ms());
        let well_formed = parsed.is_ok();
        let short_timeout = parsed.is_ok_and(|t| t < SHORT_TIMEOUT_MS);
        let id = (n % i32::MAX as u64) as i32 + 1;
        if well_formed {
            set_request_correlation_id(&mut frame, id).expect("parsed");
        }
        let version = frame
            .get(6..8)
            .map_or(-1, |v| i16::from_be_bytes([v[0], v[1]]));
        let index = n;
        n += 1;
        tally.sent += 1;
        tally.malformed += u64::from(!well_formed);

        let wait = if well_formed {
            limit
        } else {
            limit.min(MALFORMED_WAIT)
        };
        let sent_at = Instant::now();
        let mut write_failed: [Option<String>; 2] = [None, None];
        for (side, failed) in sides.iter_mut().zip(write_failed.iter_mut()) {
            if let Some(c) = side.conn.as_mut() {
                let w = c
                    .stream
                    .set_write_timeout(Some(wait))
                    .and_then(|()| c.stream.write_all(&frame));
                if let Err(e) = w {
                    *failed = Some(e.to_string());
                }
            }
        }
        let mut outcomes: Vec<Outcome> = sides
            .iter_mut()
            .zip(write_failed)
            .map(|(side, failed)| match failed {
                Some(e) => Outcome::Closed(format!("write: {e}")),
                None => side.read(sent_at + wait),
            })
            .collect();
        // A signal cut the wait: what the shut-down connections gave is not compared; a
        // broker that answered nothing at all is said so, as when the duration cuts the
        // wait (issue 44, item 2).
        if stopped() {
            let silent: Vec<String> = sides
                .iter()
                .zip(&outcomes)
                .filter(|(s, o)| !matches!(o, Outcome::Answer(_)) && s.answered == 0)
                .map(|(s, _)| format!("{} {}", s.name, s.o.target))
                .collect();
            if !silent.is_empty() && well_formed {
                harness = Some(format!(
                    "{}: connected and ApiVersions answered, but no ElectLeaders request \
                     answered in {:.1}s (a signal ended the wait)",
                    silent.join(" and "),
                    started.elapsed().as_secs_f64(),
                ));
            }
            interrupted = true;
            break;
        }
        // A malformed request answered by one side only: the other gets the whole wait.
        if wait < limit {
            let answered = outcomes
                .iter()
                .filter(|o| matches!(o, Outcome::Answer(_)))
                .count();
            if answered == 1 {
                for (side, outcome) in sides.iter_mut().zip(outcomes.iter_mut()) {
                    if *outcome == Outcome::Timeout {
                        *outcome = side.read(sent_at + limit);
                    }
                }
            }
        }
        // A wait cut short by the duration is not the broker's fault.
        if limit < o.timeout && outcomes.contains(&Outcome::Timeout) {
            let cut = well_formed || outcomes.iter().any(|o| matches!(o, Outcome::Answer(_)));
            if cut {
                // Unless a broker answered nothing at all: a silent broker is not the
                // duration's doing, whatever cut the wait.
                let silent: Vec<String> = sides
                    .iter()
                    .zip(&outcomes)
                    .filter(|(s, o)| **o == Outcome::Timeout && s.answered == 0)
                    .map(|(s, _)| format!("{} {}", s.name, s.o.target))
                    .collect();
                if !silent.is_empty() {
                    harness = Some(format!(
                        "{}: connected and ApiVersions answered, but no ElectLeaders request \
                         answered in {:.1}s (--duration ended the wait, shorter than --timeout \
                         {} ms)",
                        silent.join(" and "),
                        started.elapsed().as_secs_f64(),
                        o.timeout.as_millis()
                    ));
                }
                out_of_time = true;
                tally.sent -= 1;
                tally.malformed -= u64::from(!well_formed);
                break;
            }
        }
        for (side, outcome) in sides.iter_mut().zip(&outcomes) {
            side.count(outcome);
        }
        let c = compare_outcomes(&outcomes[0], &outcomes[1], version, short_timeout);
        tally.throttle_normalized += u64::from(c.throttle_normalized);
        tally.messages_normalized += c.messages_normalized;
        tally.timed_out_one_side += c.timed_out_one_side;
        if let [Outcome::Answer(x), Outcome::Answer(_)] = &outcomes[..] {
            if let Ok(r) = parse_response(x, version) {
                for t in r.replica_election_results() {
                    for p in t.partition_result() {
                        *tally.codes.entry(p.error_code().0).or_default() += 1;
                    }
                }
            }
        }
        if c.differences.is_empty() {
            tally.same += 1;
            tally.order_only += u64::from(c.order_only);
            continue;
        }
        tally.differing += 1;
        let mut classes: Vec<&str> = c.differences.iter().map(|d| d.class.as_str()).collect();
        classes.sort_unstable();
        classes.dedup();
        for class in &classes {
            *tally.classes.entry((*class).to_string()).or_default() += 1;
        }
        let differences: Vec<Value> = c
            .differences
            .iter()
            .map(|d| json!({ "path": d.path, "a": d.a, "b": d.b }))
            .collect();
        let line = json!({
            "index": index,
            "seed": o.seed,
            // jq (and JavaScript) read numbers as doubles: a seed above 2^53 comes out
            // rounded.
            "seed_str": o.seed.to_string(),
            "request_version": version,
            "malformed": !well_formed,
            "request": to_hex(&frame),
            "differences": differences,
            "classes": classes,
            "a": side_json(&outcomes[0], version),
            "b": side_json(&outcomes[1], version),
            "reproduce": format!(
                "elect-leaders fuzz --target {a} --compare {b} --seed {} --index {index}",
                o.seed
            ),
        });
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(Failure::Output)?;
    }
    done.store(true, Ordering::SeqCst);
    for watcher in watchers {
        let _ = watcher.join();
    }
    report(
        &tally,
        &sides,
        started,
        (out_of_time, interrupted),
        harness.as_deref(),
    )
    .map_err(Failure::Output)?;
    if let Some(why) = harness {
        return Err(Failure::cannot_open(format!(
            "fuzz --compare stopped after {} requests: {why}",
            tally.sent
        )));
    }
    if tally.differing > 0 {
        return Err(Failure::Reported { usage: false });
    }
    Ok(())
}

/// The summary, on standard error: standard output holds only the differences.
fn report(
    tally: &Tally,
    sides: &[Side; 2],
    started: Instant,
    (out_of_time, interrupted): (bool, bool),
    harness: Option<&str>,
) -> io::Result<()> {
    let mut e = io::stderr().lock();
    let mut classes: Vec<(&String, &u64)> = tally.classes.iter().collect();
    classes.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    for (class, n) in classes {
        writeln!(e, "difference {n} x {class}")?;
    }
    for s in sides {
        let version = s
            .max_version
            .map_or("not known".to_string(), |v| format!("up to v{v}"));
        writeln!(
            e,
            "{} {}: ElectLeaders {version}; {} answered, {} closed, {} timeouts",
            s.name, s.o.target, s.answered, s.closed, s.timeouts
        )?;
    }
    let codes: Vec<String> = tally
        .codes
        .iter()
        .map(|(c, n)| format!("{n} x {}", code(*c)))
        .collect();
    writeln!(
        e,
        "partition results answered by both (A's codes): {}",
        if codes.is_empty() {
            "none".to_string()
        } else {
            codes.join(", ")
        }
    )?;
    writeln!(
        e,
        "compare: {} sent ({} malformed), {} the same, {} different; normalized: {} in another \
         order only, {} throttle times, {} messages with the same error code, {} partitions \
         timed out on one side only; {:.1}s{}",
        tally.sent,
        tally.malformed,
        tally.same,
        tally.differing,
        tally.order_only,
        tally.throttle_normalized,
        tally.messages_normalized,
        tally.timed_out_one_side,
        started.elapsed().as_secs_f64(),
        match (out_of_time, interrupted, harness) {
            (_, _, Some(_)) => " (stopped: a broker could not be reached or answered nothing)",
            (_, true, None) => " (stopped by a signal)",
            (true, false, None) => " (stopped at the duration, one answer not waited for)",
            (false, false, None) => "",
        }
    )
}
