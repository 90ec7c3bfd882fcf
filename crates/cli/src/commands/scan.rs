//! `scan`: find ElectLeaders requests in a raw capture, and their responses in the other
//! direction's capture.
//!
//! A raw capture of one direction need not start on a frame boundary and holds other APIs'
//! traffic, so frames cannot be walked from the start. The library's `scan_requests`
//! (memchr's memmem, confirmed by the parser) finds the requests; their responses are found
//! in one pass over the other direction ([`pair_stream`]). Both files are streamed a window
//! at a time. A pcap or pcapng capture is walked connection by connection instead (the
//! input's items, [`crate::input::Items`]), its frames exact.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};

use kafka_elect_leaders::{
    is_supported, parse_request, parse_response, scan_requests, split_frame, ElectLeadersRequest,
    ElectLeadersResponse, ErrorCode, DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_LEN,
};
use kafka_elect_leaders_capture::summary::Outcome;
use kafka_elect_leaders_json::hex::to_hex;
use kafka_elect_leaders_json::print::{Message, Place};

use kafka_elect_leaders_capture::traffic::{bad_frame, What};

use crate::fail::Failure;
use crate::flags::ScanArgs;
use crate::input::items::From;
use crate::input::{Expect, Frame, Item, Items, Kind, Source};
use crate::notes::{self, Reporter};
use crate::output::LineFlushed;
use crate::selection::{Asked, Selection};

/// `scan REQUESTS_FILE [RESPONSES_FILE]`, `scan CAPTURE`, or `scan --interface IFACE`.
pub fn run(args: &ScanArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let mut filter = Selection::new(&args.filter).map_err(|e| Failure::usage("scan", e))?;
    let Some(requests) = &args.requests else {
        // Live (clap requires a file otherwise): each line flushed as it is printed.
        let mut out = LineFlushed::new(out);
        let items = Items::live("scan", &args.live, &args.read);
        return scan_capture(args, filter, items, &mut out);
    };
    let requests_source = Source::from_arg(requests);
    // A capture piped in as it is written: each line shows as soon as it is found.
    let mut flushed;
    let out: &mut dyn Write = if requests_source.is_live() {
        flushed = LineFlushed::new(out);
        &mut flushed
    } else {
        out
    };
    // Raw bytes are searched, not cut into frames: only a capture's items are walked.
    let items = Items::open(
        "scan",
        &requests_source,
        Kind::Request,
        &args.read,
        Expect::Anything,
    )?;
    let requests_reader = match items.from {
        From::Stream { .. } if !filter.shows_conn(None) => {
            return Err(crate::selection::not_a_capture(
                "scan",
                &requests_source.name(),
            ));
        }
        From::Stream { reader, .. } => reader,
        _ if args.responses.is_some() => {
            return Err(Failure::usage(
                "scan",
                "a capture holds both directions of its connections: give it alone",
            ));
        }
        _ => return scan_capture(args, filter, items, out),
    };
    let responses_source = args.responses.as_deref().map(Source::from_arg);
    let responses_reader = match &responses_source {
        Some(source) => Some(source.open("scan", args.read.hex)?),
        None => None,
    };

    // The requests, streamed. Without a responses file each is printed as it is found;
    // with one, what will be printed of it waits for its response.
    let mut found: Vec<Found> = Vec::new();
    let mut line = String::new();
    let mut failed = None;
    let mut skipped = Skipped::default();
    let streaming = responses_reader.is_none();
    let requests_len = stream_windows(requests_reader, |window, base, at_end| {
        let limit = if at_end {
            window.len()
        } else {
            incomplete_request(window).min(window.len().saturating_sub(11))
        };
        let mut consumed = limit;
        let mut scanner = scan_requests(window).work_limit(work_limit(window.len()));
        for (start, request) in scanner.by_ref() {
            if start >= limit {
                break;
            }
            consumed = consumed.max(start + request.frame().len());
            let offset = base + start as u64;
            // Alone, a request is listed as decode would print it; with its response, the
            // pair is decided when the response is found.
            let asked = filter.asked(&request);
            let shown = if streaming {
                filter.request(&request, None)
            } else {
                filter.pair(Some(asked), None)
            };
            line.clear();
            if args.json {
                line.push_str("{\"request\":");
                line.push_str(&Message::Request(request).text(Some(&Place::Raw { offset })));
            } else {
                line.push_str(&request_line(offset, &request));
            }
            if streaming {
                if args.json {
                    line.push('}');
                }
                line.push('\n');
                if shown {
                    if let Err(e) = out.write_all(line.as_bytes()) {
                        failed.get_or_insert(e);
                    }
                }
                line.clear();
            }
            found.push(Found {
                correlation_id: request.correlation_id(),
                version: request.version(),
                text: std::mem::take(&mut line),
                answer: None,
                asked,
                shown,
            });
        }
        if let Some(stop) = scanner.stopped_at().filter(|&stop| stop < limit) {
            skipped.note(&requests_source.name(), base, stop..limit, window.len());
            consumed = limit;
        }
        consumed
    })
    .map_err(|e| Failure::Input(format!("{}: {e}", requests_source.name())))?;
    if let Some(e) = failed {
        return Err(Failure::Output(e));
    }

    // The responses, streamed, in one pass: each candidate is looked up among the requests
    // still waiting for one.
    let responses = match (responses_reader, &responses_source) {
        (Some(reader), Some(source)) => {
            let len = pair_stream(
                reader,
                &mut found,
                &filter,
                args.json,
                &source.name(),
                &mut skipped,
            )
            .map_err(|e| Failure::Input(format!("{}: {e}", source.name())))?;
            Some((source.name(), len))
        }
        _ => None,
    };
    if responses.is_some() {
        for request in found.iter().filter(|f| f.shown) {
            if args.json {
                let response = request.answer.as_deref().unwrap_or("null");
                writeln!(out, "{},\"response\":{response}}}", request.text)?;
            } else {
                writeln!(out, "{}", request.text)?;
                match &request.answer {
                    Some(answer) => writeln!(out, "  {answer}")?,
                    None => writeln!(
                        out,
                        "  response not found (correlation_id={})",
                        request.correlation_id
                    )?,
                }
            }
        }
    }
    if args.json {
        return skipped.finish(&requests_source.name());
    }
    let listed = found.iter().filter(|f| f.shown).count();
    let mut count = match listed {
        1 => "1 ElectLeaders request".to_owned(),
        n => format!("{n} ElectLeaders requests"),
    };
    if listed < found.len() {
        count.push_str(&format!(" listed (of {} found)", found.len()));
    }
    let name = requests_source.name();
    match responses {
        None => writeln!(out, "{count} in {name} ({requests_len} bytes)")?,
        Some((responses_name, responses_len)) => {
            let answered = found
                .iter()
                .filter(|f| f.shown && f.answer.is_some())
                .count();
            writeln!(
                out,
                "{count} in {name} ({requests_len} bytes); {answered} answered in \
                 {responses_name} ({responses_len} bytes)"
            )?
        }
    }
    skipped.finish(&name)
}

/// How much parsing the search of one window may do: the parser's bytes walked, as a
/// multiple of the window's length, plus a constant. An ordinary capture needs about one
/// window's length; input crafted so that candidate frames overlap and re-walk the same
/// bytes could otherwise need a multiple of the window's length per byte.
const WORK_PER_BYTE: u64 = 32;
const WORK_CONSTANT: u64 = 16 << 20;

fn work_limit(window: usize) -> u64 {
    (window as u64).saturating_mul(WORK_PER_BYTE) + WORK_CONSTANT
}

/// The stretches of a raw file not searched because the search's work limit was reached.
#[derive(Default)]
struct Skipped {
    stretches: u64,
}

impl Skipped {
    /// Reports the bytes `range` of a window at `base` as not searched.
    fn note(&mut self, name: &str, base: u64, range: std::ops::Range<usize>, window: usize) {
        self.stretches += 1;
        eprintln!(
            "elect-leaders: {name}: bytes {}..{} not searched: overlapping candidate frames \
             there took the search past its work limit of {} bytes parsed ({WORK_PER_BYTE} \
             for each of the window's {} bytes, plus {} MiB)",
            base + range.start as u64,
            base + range.end as u64,
            work_limit(window),
            window,
            WORK_CONSTANT >> 20
        );
    }

    /// The end of the scan: an error saying the output is partial when something was skipped.
    fn finish(&self, name: &str) -> Result<(), Failure> {
        notes::finish(name, self.stretches)
    }
}

/// A request found in a raw file, waiting for its response.
struct Found {
    correlation_id: i32,
    version: i16,
    /// Its line (or the start of its JSON pair); empty once printed.
    text: String,
    /// Its response's line (or JSON object), once found.
    answer: Option<String>,
    /// What it matched of the filters.
    asked: Asked,
    /// Whether the filters show it (with its response, once found).
    shown: bool,
}

/// How much of a raw file is read at a time.
const WINDOW: usize = 4 << 20;

/// Reads `reader` a window at a time and hands `scan` the bytes not yet consumed, their
/// offset in the file, and whether the file ends there; `scan` says how many bytes it is
/// done with. At most one frame (the maximum frame size) is kept back between windows, so
/// memory is bounded by that and the window, not by the file. Returns the file's length.
fn stream_windows(
    mut reader: impl Read,
    mut scan: impl FnMut(&[u8], u64, bool) -> usize,
) -> std::io::Result<u64> {
    let mut buf: Vec<u8> = Vec::new();
    let mut base = 0u64;
    loop {
        let want = buf.len() + WINDOW;
        (&mut reader).take(WINDOW as u64).read_to_end(&mut buf)?;
        let at_end = buf.len() < want;
        let consumed = scan(&buf, base, at_end).min(buf.len());
        if at_end {
            return Ok(base + buf.len() as u64);
        }
        let consumed = consumed.max(buf.len().saturating_sub(DEFAULT_MAX_FRAME_SIZE + 16));
        buf.drain(..consumed);
        base += consumed as u64;
    }
}

/// Where, in a window that is not the end of its file, the first candidate request starts
/// whose frame the window does not hold whole (so the next window must start there).
fn incomplete_request(window: &[u8]) -> usize {
    let from = window.len().saturating_sub(DEFAULT_MAX_FRAME_SIZE + 16);
    memchr::memmem::find_iter(&window[from..], &[0x00, 0x2b, 0x00])
        .map(|hit| from + hit)
        .filter(|&hit| {
            hit >= SIZE_PREFIX_LEN
                && window
                    .get(hit + 3)
                    .is_some_and(|&v| is_supported(i16::from(v)))
                && split_frame(&window[hit - SIZE_PREFIX_LEN..]).is_err_and(|e| e.is_incomplete())
        })
        .map(|hit| hit - SIZE_PREFIX_LEN)
        .next()
        .unwrap_or(window.len())
}

/// Finds the responses of `found` in a raw file of the other direction, in one pass. Every
/// place where the correlation id of a request still waiting follows 4 bytes that could be
/// a size prefix is a candidate; the library's parser decides, at that request's version.
/// A response answers the oldest waiting request with its correlation id (Kafka answers
/// in order), and is used once.
fn pair_stream(
    reader: impl Read,
    found: &mut [Found],
    filter: &Selection,
    json: bool,
    name: &str,
    skipped: &mut Skipped,
) -> std::io::Result<u64> {
    let mut waiting: HashMap<i32, VecDeque<usize>> = HashMap::new();
    for (i, request) in found.iter().enumerate() {
        waiting
            .entry(request.correlation_id)
            .or_default()
            .push_back(i);
    }
    stream_windows(reader, |window, base, at_end| {
        let mut at = 0;
        let limit = work_limit(window.len());
        let mut walked = 0u64;
        while at + 8 <= window.len() && !waiting.is_empty() {
            let id = i32::from_be_bytes([
                window[at + 4],
                window[at + 5],
                window[at + 6],
                window[at + 7],
            ]);
            if let Some(queue) = waiting.get_mut(&id) {
                let i = queue[0];
                match split_frame(&window[at..]) {
                    Err(e) if e.is_incomplete() && !at_end => return at,
                    Ok(_) if walked >= limit => {
                        skipped.note(name, base, at..window.len(), window.len());
                        return window.len();
                    }
                    Ok((frame, _)) => {
                        let parsed = parse_response(frame, found[i].version);
                        walked += match &parsed {
                            Ok(_) => frame.len(),
                            Err(e) => e.offset.min(frame.len()),
                        } as u64;
                        if let Ok(response) = parsed {
                            queue.pop_front();
                            if queue.is_empty() {
                                waiting.remove(&id);
                            }
                            let offset = base + at as u64;
                            found[i].shown = filter.pair(Some(found[i].asked), Some(&response));
                            let text = if json {
                                Message::Response(response).text(Some(&Place::Raw { offset }))
                            } else {
                                response_line(offset, &response)
                            };
                            found[i].answer = Some(text);
                            at += frame.len();
                            continue;
                        }
                    }
                    Err(_) => {}
                }
            }
            at += 1;
        }
        if at_end || waiting.is_empty() {
            window.len()
        } else {
            at
        }
    })
}

/// A capture or a live interface (what `walk` reads): every ElectLeaders request of every
/// connection as it is found, and each response as it comes, paired by the connection's
/// own bookkeeping.
fn scan_capture(
    args: &ScanArgs,
    mut filter: Selection,
    items: Items<'_>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let name = items.name.clone();
    let name = name.as_str();
    // With --json, a request waits (its frame number, its JSON text, what it matched of
    // the filters) for its response, per connection, as long as the capture reader keeps
    // it: a response is listed with the request the reader paired it with.
    let mut waiting: HashMap<u32, VecDeque<(u64, String, Asked)>> = HashMap::new();
    let mut requests = 0u64;
    let mut answered = 0u64;
    let mut bad_frames = 0u64;
    let mut notes = Reporter::default();
    let summary = items.walk(&mut |item| {
        let found = match item {
            Item::Note(note) => return Ok(notes.report(out, name, &note)?),
            // Only a capture's items come here.
            Item::Cut(_) | Item::Frame(Frame::Stream(_)) => return Ok(()),
            Item::Closed(conn) => {
                filter.closed(conn.0);
                for (_, request, asked) in waiting.remove(&conn.0).unwrap_or_default() {
                    unanswered(out, &filter, &mut requests, &request, asked)?;
                }
                return Ok(());
            }
            Item::Frame(Frame::Capture(found)) => found,
        };
        let o = &found.origin;
        if !filter.shows_conn(Some(o.conn.0)) {
            return Ok(());
        }
        let place = format!("connection {} {} -> {}", o.conn.0, o.from, o.to);
        match found.what {
            What::ElectRequest => match parse_request(&found.frame) {
                Ok(request) => {
                    if args.json {
                        let asked = filter.asked(&request);
                        let text = Message::Request(request).text(Some(&Place::Capture {
                            origin: o,
                            request: found.request,
                            file: None,
                            not_kept: found.not_kept,
                        }));
                        if found.waits {
                            waiting
                                .entry(o.conn.0)
                                .or_default()
                                .push_back((o.index, text, asked));
                        } else {
                            // Not kept for pairing (named in a note): no answer will be
                            // paired with it.
                            unanswered(out, &filter, &mut requests, &text, asked)?;
                        }
                    } else if filter.request(&request, found.waits.then_some((o.conn.0, o.index))) {
                        requests += 1;
                        writeln!(
                            out,
                            "{}  packet {} {place}",
                            request_line(o.offset, &request),
                            o.last_packet
                        )?;
                    }
                }
                Err(e) => {
                    bad_frames += 1;
                    notes.report(out, name, &bad_frame(o, &e))?;
                }
            },
            What::ElectResponse { version } => match parse_response(&found.frame, version) {
                Ok(response) => {
                    if args.json {
                        let text = Message::Response(response).text(Some(&Place::Capture {
                            origin: o,
                            request: found.request,
                            file: None,
                            not_kept: found.not_kept,
                        }));
                        // The request the reader paired it with; the older ones waiting
                        // were left unanswered (Kafka answers in order).
                        let mut request = None;
                        if let (Some(asked), Some(queue)) =
                            (found.request, waiting.get_mut(&o.conn.0))
                        {
                            while queue.front().is_some_and(|r| r.0 < asked.index) {
                                if let Some((_, text, matched)) = queue.pop_front() {
                                    unanswered(out, &filter, &mut requests, &text, matched)?;
                                }
                            }
                            if queue.front().is_some_and(|r| r.0 == asked.index) {
                                request = queue.pop_front().map(|r| (r.1, r.2));
                            }
                            if queue.is_empty() {
                                waiting.remove(&o.conn.0);
                            }
                        }
                        if !filter.pair(request.as_ref().map(|r| r.1), Some(&response)) {
                            return Ok(());
                        }
                        answered += 1;
                        requests += u64::from(request.is_some());
                        let request = request.map_or_else(|| "null".to_owned(), |r| r.0);
                        out.write_all(
                            format!("{{\"request\":{request},\"response\":{text}}}\n").as_bytes(),
                        )?;
                    } else if filter.response(&response, found.request.map(|a| (o.conn.0, a.index)))
                    {
                        answered += 1;
                        writeln!(
                            out,
                            "  {}  packet {} {place}",
                            response_line(o.offset, &response),
                            o.last_packet
                        )?;
                    }
                }
                Err(e) => {
                    bad_frames += 1;
                    notes.report(out, name, &bad_frame(o, &e))?;
                }
            },
            What::Other { .. } | What::Unpaired { .. } => {}
        }
        Ok(())
    })?;
    if !args.json {
        writeln!(
            out,
            "{requests} ElectLeaders requests in {name}; {answered} answered"
        )?;
    }
    notes.finish(out, name, summary.partial + bad_frames)
}

/// A request listed without an answer (`--json`), if the filters show it.
fn unanswered(
    out: &mut dyn Write,
    filter: &Selection,
    requests: &mut u64,
    request: &str,
    asked: Asked,
) -> std::io::Result<()> {
    if !filter.pair(Some(asked), None) {
        return Ok(());
    }
    *requests += 1;
    out.write_all(format!("{{\"request\":{request},\"response\":null}}\n").as_bytes())
}

fn request_line(offset: u64, r: &ElectLeadersRequest<'_>) -> String {
    let (topics, partitions) = match r.topic_partitions() {
        None => ("all".to_owned(), "all".to_owned()),
        Some(list) => (
            list.len().to_string(),
            list.iter()
                .map(|t| t.partitions().len())
                .sum::<usize>()
                .to_string(),
        ),
    };
    let election = r.election_type();
    format!(
        "request  offset={offset} (0x{offset:x}) bytes={} v{} correlation_id={} client_id={} \
         election_type={} topics={topics} partitions={partitions}",
        r.frame().len(),
        r.version(),
        r.correlation_id(),
        text(r.header().client_id()),
        election
            .name()
            .map_or_else(|| election.0.to_string(), str::to_owned),
    )
}

fn response_line(offset: u64, r: &ElectLeadersResponse<'_>) -> String {
    let results = r.replica_election_results();
    let (mut partitions, mut failed, mut not_needed) = (0, 0, 0);
    for result in results.iter() {
        for p in result.partition_result() {
            partitions += 1;
            match Outcome::of(p.error_code()) {
                Outcome::Failed => failed += 1,
                Outcome::NotNeeded => not_needed += 1,
                Outcome::Elected => {}
            }
        }
    }
    format!(
        "response offset={offset} (0x{offset:x}) bytes={} v{} correlation_id={} \
         throttle_time_ms={} error_code={} results={} partitions={partitions} \
         failed={failed} not_needed={not_needed}",
        r.frame().len(),
        r.version(),
        r.correlation_id(),
        r.throttle_time_ms(),
        code(r.error_code()),
        results.len(),
    )
}

fn code(code: ErrorCode) -> String {
    code.name()
        .map_or_else(|| code.0.to_string(), str::to_owned)
}

/// A client id for a one-line summary: quoted text, `null`, or `hex:…` when not UTF-8.
fn text(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "null".to_owned(),
        Some(bytes) => match std::str::from_utf8(bytes) {
            Ok(s) => format!("{s:?}"),
            Err(_) => format!("hex:{}", to_hex(bytes)),
        },
    }
}
