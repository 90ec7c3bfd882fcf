//! `fuzz --target`: a bounded campaign against one live broker, over plain blocking `std::net`.
//!
//! Each connection starts as a client's does, with ApiVersions (v0); then generated and
//! mutated ElectLeaders requests go out one at a time, and each answer is read (with a read
//! timeout), parsed with the library at the request's version and compared with the
//! request. Only the address given is ever connected to.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_elect_leaders::{parse_request, parse_response, set_request_correlation_id, ErrorCode};
use kafka_elect_leaders_json::hex::to_hex;

use crate::fail::Failure;
use crate::flags::FuzzArgs;

use super::broker::{
    connect_watched, dripped, is_timeout, on_signals, pace, read_frame, request, wait_for, Conn,
    ConnectError, Options, Watched,
};
use kafka_elect_leaders_capture::summary::shown;

#[derive(Default)]
struct Tally {
    sent: u64,
    answered: u64,
    malformed_sent: u64,
    malformed_closed: u64,
    reconnects: u64,
    /// Malformed requests the broker answered, by what the library refuses in them.
    malformed_answered: std::collections::BTreeMap<String, u64>,
    /// Answers to requests naming a topic that is not UTF-8 (Kafka answers another name).
    renamed: u64,
    anomalies: Vec<(&'static str, String)>,
}

/// The (topic, partition) pairs a request names; `None` for all partitions (null).
fn asked(frame: &[u8]) -> Option<BTreeSet<(Vec<u8>, i32)>> {
    let request = parse_request(frame).ok()?;
    let topics = request.topic_partitions()?;
    let mut set = BTreeSet::new();
    for t in topics {
        for p in t.partitions() {
            set.insert((t.topic().to_vec(), p));
        }
    }
    Some(set)
}

/// The correlation id an answer carries (after its size prefix), if it is that long.
fn answer_id(answer: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(answer.get(4..8)?.try_into().ok()?))
}

/// `fuzz --target ADDR`: the campaign against one broker.
pub fn run(args: &FuzzArgs, target: SocketAddr, out: &mut dyn Write) -> Result<(), Failure> {
    let o = Options::new(args, target);
    let signalled = on_signals("fuzz")?;
    let watched = Watched::default();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watched.watch(Arc::clone(&signalled), Arc::clone(&done));
    let stopped = || signalled.load(Ordering::SeqCst);
    let started = Instant::now();
    let mut tally = Tally::default();
    // Anomalies are printed as they are found (a campaign killed outright keeps them).
    let mut printed = 0;
    let mut conn: Option<Conn> = None;
    let mut previous = Vec::new();
    let mut n = 0;
    // Every wait is cut to what is left of the duration: the campaign ends on time, and a
    // wait cut short that way is not an anomaly.
    let mut out_of_time = false;
    let mut api_versions_answered = false;
    let mut interrupted = false;
    // A signal that cut a wait for an answer: when nothing was ever answered, the broker
    // is reported silent, as when the duration cuts the wait.
    let mut signal_cut_a_wait = false;
    while n < o.count && started.elapsed() < o.duration {
        for (kind, what) in &tally.anomalies[printed..] {
            writeln!(out, "anomaly {kind}: {what}")
                .and_then(|()| out.flush())
                .map_err(Failure::Output)?;
        }
        printed = tally.anomalies.len();
        if let Some(rate) = o.rate {
            pace(&o, started, n, rate, &stopped);
        }
        if stopped() {
            interrupted = true;
            break;
        }
        let Some(limit) = wait_for(&o, started) else {
            break;
        };
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match connect_watched(&o, limit, &watched) {
                Ok(c) => {
                    api_versions_answered = true;
                    if let Some(problem) = c.api_versions_problem.clone() {
                        tally
                            .anomalies
                            .push(("api-versions", format!("{}: {problem}", o.target)));
                    }
                    conn.insert(c)
                }
                Err(ConnectError::NoApiVersions(_)) if stopped() => {
                    interrupted = true;
                    signal_cut_a_wait = true;
                    break;
                }
                Err(ConnectError::Unreachable(e)) => {
                    tally
                        .anomalies
                        .push(("unreachable", format!("{}: {e}", o.target)));
                    break;
                }
                Err(ConnectError::NoApiVersions(e)) => {
                    if limit < o.timeout && is_timeout(&e) {
                        out_of_time = true;
                    } else {
                        let what = if is_timeout(&e) {
                            format!(
                                "{}: connected, but no answer to ApiVersions within {} ms",
                                o.target,
                                o.timeout.as_millis()
                            )
                        } else {
                            format!("{}: connected, but ApiVersions failed: {e}", o.target)
                        };
                        let kind = if is_timeout(&e) {
                            "timeout"
                        } else {
                            "no-answer"
                        };
                        tally.anomalies.push((kind, what));
                    }
                    break;
                }
            },
        };
        let mut frame = request(&o, n, c.max_version, &previous);
        previous.clone_from(&frame);
        let refusal = parse_request(&frame).err();
        let well_formed = refusal.is_none();
        let id = c.next_id;
        c.next_id = c.next_id.wrapping_add(1);
        if well_formed {
            set_request_correlation_id(&mut frame, id).expect("parsed");
        }
        let version = frame
            .get(6..8)
            .map_or(-1, |v| i16::from_be_bytes([v[0], v[1]]));
        n += 1;
        tally.sent += 1;
        if !well_formed {
            tally.malformed_sent += 1;
        }
        // A malformed request may be one the broker waits on for ever (a size prefix that
        // promises more): it gets a short wait, then the connection is dropped.
        let wait = if well_formed {
            limit
        } else {
            limit.min(Duration::from_millis(500))
        };
        let sent = c
            .stream
            .set_write_timeout(Some(wait))
            .and_then(|()| c.stream.write_all(&frame));
        let answer = sent.and_then(|()| read_frame(&mut c.stream, wait));
        if stopped() && !matches!(answer, Ok(Some(_))) {
            // The watcher shut the connection down: not the broker's doing, but a wait cut
            // short, as by the duration.
            interrupted = true;
            signal_cut_a_wait = true;
            break;
        }
        let mut problem = |kind: &'static str, what: String| {
            tally.anomalies.push((
                kind,
                format!("request {} ({what}): {}", n - 1, to_hex(&frame)),
            ));
        };
        match answer {
            Ok(Some(answer)) if well_formed && answer_id(&answer).is_some_and(|a| a != id) => {
                // An answer to another request (an extra or a late one): the answers are out
                // of step, and every later one would be too. Said as such, and the
                // connection started again (before, each later answer was parsed at the
                // wrong request's version and reported unparsable or mismatched).
                tally.answered += 1;
                let got = answer_id(&answer).unwrap_or_default();
                problem(
                    "correlation",
                    format!(
                        "sent {id}, answered {got}: the answers are out of step (an extra or \
                         a late answer); the connection is started again; answer {}",
                        to_hex(&answer)
                    ),
                );
                conn = None;
                tally.reconnects += 1;
            }
            Ok(Some(answer)) => {
                tally.answered += 1;
                if let Some(e) = refusal {
                    // The broker answered what the library refuses: worth a look.
                    let kind = format!("{:?}", e.kind);
                    let name = kind.split([' ', '(', '{']).next().unwrap_or_default();
                    let key = format!("{name} in {}", e.field);
                    *tally.malformed_answered.entry(key).or_default() += 1;
                    continue;
                }
                match parse_response(&answer, version) {
                    Err(e) => problem("unparsable", format!("{e}; answer {}", to_hex(&answer))),
                    Ok(r) if r.correlation_id() != id => problem(
                        "correlation",
                        format!("sent {id}, answered {}", r.correlation_id()),
                    ),
                    Ok(r) => {
                        if let Some(want) = asked(&frame) {
                            let mut got = BTreeSet::new();
                            for t in r.replica_election_results() {
                                for p in t.partition_result() {
                                    got.insert((t.topic().to_vec(), p.partition_id()));
                                }
                            }
                            // Kafka decodes names as UTF-8 with replacement: a name
                            // that is not UTF-8 comes back as another name (Java's
                            // replacement, not Rust's: the two are not compared).
                            let renamed = want.iter().any(|(t, _)| std::str::from_utf8(t).is_err());
                            if r.error_code() != ErrorCode::NONE || got == want {
                            } else if renamed {
                                tally.renamed += 1;
                            } else {
                                let missing = want.difference(&got).next();
                                let extra = got.difference(&want).next();
                                // The broker's names, escaped as `summary` shows them:
                                // a name must not forge a line or reach the terminal.
                                let show = |e: Option<&(Vec<u8>, i32)>| match e {
                                    Some((t, p)) => format!("{}/{p}", shown(Some(t))),
                                    None => "none".into(),
                                };
                                problem(
                                    "partitions",
                                    format!(
                                        "asked {}, answered {}; first missing {}, first extra {}",
                                        want.len(),
                                        got.len(),
                                        show(missing),
                                        show(extra)
                                    ),
                                );
                            }
                        }
                    }
                }
            }
            Ok(None) | Err(_) if !well_formed => {
                tally.malformed_closed += 1;
                conn = None;
                tally.reconnects += 1;
            }
            Ok(None) => {
                problem("no-answer", "closed".into());
                conn = None;
                tally.reconnects += 1;
            }
            Err(e) if dripped(&e).is_some() && well_formed => {
                // Its first bytes came, the rest too slowly: --timeout bounds an answer
                // from its request to its last byte.
                let what = format!(
                    "answer not whole within {} ms: {}",
                    wait.as_millis(),
                    dripped(&e).map(ToString::to_string).unwrap_or_default()
                );
                problem("slow-answer", what);
                conn = None;
                tally.reconnects += 1;
            }
            Err(e) if is_timeout(&e) && wait < o.timeout => {
                // The duration ended while waiting: not the broker's fault.
                out_of_time = true;
                break;
            }
            Err(e) => {
                let (kind, what) = if is_timeout(&e) {
                    (
                        "timeout",
                        format!("no answer within {} ms", o.timeout.as_millis()),
                    )
                } else {
                    ("no-answer", e.to_string())
                };
                problem(kind, what);
                conn = None;
                tally.reconnects += 1;
            }
        }
    }
    // A wait cut by the duration is not the broker's fault, unless the broker answered
    // nothing at all: a silent target is a timeout, whatever the duration.
    // A signal that cut the wait is the same: Ctrl-C on a campaign against a broker that
    // never answered reports it (issue 44, item 2).
    if (out_of_time || signal_cut_a_wait) && tally.answered == 0 {
        let ended = if signal_cut_a_wait {
            "a signal ended the wait".to_owned()
        } else {
            format!(
                "--duration ended the wait, shorter than --timeout {} ms",
                o.timeout.as_millis()
            )
        };
        let what = if api_versions_answered {
            format!(
                "{}: connected and ApiVersions answered, but no ElectLeaders request answered \
                 in {:.1}s ({} sent; {ended})",
                o.target,
                started.elapsed().as_secs_f64(),
                tally.sent,
            )
        } else {
            format!(
                "{}: connected, but nothing answered in {:.1}s, not even ApiVersions ({ended})",
                o.target,
                started.elapsed().as_secs_f64(),
            )
        };
        tally.anomalies.push(("timeout", what));
    }
    done.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    let w = |out: &mut dyn Write, text: String| out.write_all(text.as_bytes());
    let mut report = || -> io::Result<()> {
        for (kind, what) in &tally.anomalies[printed..] {
            w(out, format!("anomaly {kind}: {what}\n"))?;
        }
        for (what, n) in &tally.malformed_answered {
            w(out, format!("answered though malformed: {n} x {what}\n"))?;
        }
        w(
            out,
            format!(
                "fuzz: {} sent ({} malformed), {} answered, {} malformed refused by closing, \
                 {} reconnects, {} with non-UTF-8 topic names (not compared), {} anomalies, \
                 {:.1}s{}\n",
                tally.sent,
                tally.malformed_sent,
                tally.answered,
                tally.malformed_closed,
                tally.reconnects,
                tally.renamed,
                tally.anomalies.len(),
                started.elapsed().as_secs_f64(),
                if interrupted {
                    " (stopped by a signal)"
                } else if out_of_time {
                    " (stopped at the duration, one answer not waited for)"
                } else {
                    ""
                }
            ),
        )
    };
    report().map_err(Failure::Output)?;
    if let Some((_, what)) = tally.anomalies.iter().find(|(k, _)| *k == "unreachable") {
        // As fuzz --compare says it: the campaign could not run (exit 2).
        return Err(Failure::cannot_open(format!(
            "fuzz --target stopped after {} requests: {what}",
            tally.sent
        )));
    }
    if tally.anomalies.is_empty() {
        Ok(())
    } else {
        Err(Failure::Input(format!(
            "{} anomalies against {}",
            tally.anomalies.len(),
            o.target
        )))
    }
}
