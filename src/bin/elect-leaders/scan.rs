//! `scan`: find ElectLeaders requests in a raw capture, and their responses in the other
//! direction's capture.
//!
//! A raw capture of one direction need not start on a frame boundary and holds other APIs'
//! traffic, so frames cannot be walked from the start. The library's `scan_requests`
//! (memchr's memmem, confirmed by the parser) finds the requests; their responses are found
//! in one pass over the other direction ([`pair_responses`]). A pcap or pcapng capture is
//! walked connection by connection instead (`traffic`), its frames exact.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};

use kafka_elect_leaders::{
    parse_request, parse_response, scan_requests, split_frame, ElectLeadersRequest,
    ElectLeadersResponse, ErrorCode,
};

use crate::capture::Capture;
use crate::fail::Failure;
use crate::input::{to_hex, Opened, Source};
use crate::json::{write_request, write_response};
use crate::traffic::{self, Item, What};
use crate::Options;

/// `scan REQUESTS_FILE [RESPONSES_FILE]`, or `scan CAPTURE`.
pub fn run(options: &Options, out: &mut dyn Write) -> Result<(), Failure> {
    let requests_source = Source::from_arg(&options.files[0]);
    let requests_reader = match requests_source.open_any("scan", options.hex)? {
        Opened::Capture(mut capture) => {
            if options.files.len() > 1 {
                return Err(Failure::usage(
                    "scan",
                    "a capture holds both directions of its connections: give it alone",
                ));
            }
            return scan_capture(options, &requests_source.name(), &mut capture, out);
        }
        Opened::Stream(reader) => reader,
    };
    let requests_bytes = read_all(&requests_source, requests_reader)?;
    let responses = match options.files.get(1) {
        Some(arg) => {
            let source = Source::from_arg(arg);
            let bytes = source.read_all("scan", options.hex)?;
            Some((source.name(), bytes))
        }
        None => None,
    };

    let requests = find_requests(&requests_bytes);
    let answers = match &responses {
        Some((_, bytes)) => pair_responses(bytes, &requests),
        None => Vec::new(),
    };
    let mut answered = 0;
    let mut line = String::new();
    for (i, (offset, request)) in requests.iter().enumerate() {
        let answer = answers.get(i).and_then(Option::as_ref);
        answered += usize::from(answer.is_some());
        if options.json {
            line.clear();
            line.push_str("{\"request\":");
            write_request(&mut line, request);
            line.pop();
            line.push_str(&format!(",\"source\":{{\"offset\":{offset}}}}}"));
            if responses.is_some() {
                line.push_str(",\"response\":");
                match answer {
                    Some((at, response)) => {
                        write_response(&mut line, response);
                        line.pop();
                        line.push_str(&format!(",\"source\":{{\"offset\":{at}}}}}"));
                    }
                    None => line.push_str("null"),
                }
            }
            line.push_str("}\n");
            out.write_all(line.as_bytes())?;
            continue;
        }
        writeln!(out, "{}", request_line(*offset, request))?;
        if responses.is_none() {
            continue;
        }
        match answer {
            Some((at, response)) => writeln!(out, "  {}", response_line(*at, response))?,
            None => writeln!(
                out,
                "  response not found (correlation_id={})",
                request.correlation_id()
            )?,
        }
    }
    if options.json {
        return Ok(());
    }
    let found = match requests.len() {
        1 => "1 ElectLeaders request".to_owned(),
        n => format!("{n} ElectLeaders requests"),
    };
    match &responses {
        None => writeln!(
            out,
            "{found} in {} ({} bytes)",
            requests_source.name(),
            requests_bytes.len()
        )?,
        Some((name, bytes)) => writeln!(
            out,
            "{found} in {} ({} bytes); {answered} answered in {name} ({} bytes)",
            requests_source.name(),
            requests_bytes.len(),
            bytes.len()
        )?,
    }
    Ok(())
}

fn read_all(source: &Source, mut reader: Box<dyn Read + Send>) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::Input(format!("{}: {e}", source.name())))?;
    Ok(bytes)
}

/// Every ElectLeaders request frame in `capture`, with its offset, in order.
pub fn find_requests(capture: &[u8]) -> Vec<(usize, ElectLeadersRequest<'_>)> {
    scan_requests(capture).collect()
}

/// For each request, its response in `capture`: one pass over the bytes. Every place where
/// the correlation id of a request still waiting follows 4 bytes that could be a size
/// prefix is a candidate; the library's parser decides, at that request's version. A
/// response answers the oldest waiting request with its correlation id (Kafka answers in
/// order), and is used once.
pub fn pair_responses<'a>(
    capture: &'a [u8],
    requests: &[(usize, ElectLeadersRequest<'_>)],
) -> Vec<Option<(usize, ElectLeadersResponse<'a>)>> {
    let mut waiting: HashMap<i32, VecDeque<usize>> = HashMap::new();
    for (i, (_, request)) in requests.iter().enumerate() {
        waiting
            .entry(request.correlation_id())
            .or_default()
            .push_back(i);
    }
    let mut answers: Vec<Option<(usize, ElectLeadersResponse<'a>)>> = vec![None; requests.len()];
    let mut at = 0;
    while at + 8 <= capture.len() && !waiting.is_empty() {
        let id = i32::from_be_bytes([
            capture[at + 4],
            capture[at + 5],
            capture[at + 6],
            capture[at + 7],
        ]);
        if let Some(queue) = waiting.get_mut(&id) {
            let i = queue[0];
            let version = requests[i].1.version();
            if let Some(response) = split_frame(&capture[at..])
                .ok()
                .and_then(|(frame, _)| parse_response(frame, version).ok())
            {
                queue.pop_front();
                if queue.is_empty() {
                    waiting.remove(&id);
                }
                let len = response.frame().len();
                answers[i] = Some((at, response));
                at += len;
                continue;
            }
        }
        at += 1;
    }
    answers
}

/// A capture: every ElectLeaders request of every connection as it is found, and each
/// response as it comes, paired by the connection's own bookkeeping.
fn scan_capture<R: Read>(
    options: &Options,
    name: &str,
    capture: &mut Capture<R>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    // With --json, a request waits (as its JSON text) for its response, per connection.
    let mut waiting: HashMap<(u32, i32), VecDeque<String>> = HashMap::new();
    let mut requests = 0u64;
    let mut answered = 0u64;
    let mut bad_frames = 0u64;
    let summary = traffic::walk(name, capture, options.port, &mut |item| {
        let found = match item {
            Item::Note(note) => {
                out.flush()?;
                eprintln!("elect-leaders: {}", traffic::note_line(name, &note));
                return Ok(());
            }
            Item::Closed(conn) => {
                let mut left: Vec<_> = waiting.keys().filter(|k| k.0 == conn.0).copied().collect();
                left.sort_unstable();
                for key in left {
                    for request in waiting.remove(&key).unwrap_or_default() {
                        out.write_all(
                            format!("{{\"request\":{request},\"response\":null}}\n").as_bytes(),
                        )?;
                    }
                }
                return Ok(());
            }
            Item::Frame(found) => found,
        };
        let o = &found.origin;
        let place = format!("connection {} {} -> {}", o.conn.0, o.from, o.to);
        let mut text = String::new();
        match found.what {
            What::ElectRequest => match parse_request(&found.frame) {
                Ok(request) => {
                    requests += 1;
                    if options.json {
                        write_request(&mut text, &request);
                        text.pop();
                        text.push_str(&traffic::source_json(o));
                        text.push('}');
                        waiting
                            .entry((o.conn.0, request.correlation_id()))
                            .or_default()
                            .push_back(text);
                    } else {
                        writeln!(
                            out,
                            "{}  packet {} {place}",
                            request_line(o.offset as usize, &request),
                            o.last_packet
                        )?;
                    }
                }
                Err(e) => {
                    bad_frames += 1;
                    out.flush()?;
                    eprintln!(
                        "elect-leaders: {name}: packet {}: {place}: {} at frame byte {}: {}",
                        o.last_packet, e.field, e.offset, e.kind
                    );
                }
            },
            What::ElectResponse { version } => match parse_response(&found.frame, version) {
                Ok(response) => {
                    answered += 1;
                    if options.json {
                        write_response(&mut text, &response);
                        text.pop();
                        text.push_str(&traffic::source_json(o));
                        text.push('}');
                        // The request went the other way: the key is the client's side.
                        let key = (o.conn.0, response.correlation_id());
                        let request = waiting.get_mut(&key).and_then(VecDeque::pop_front);
                        if waiting.get(&key).is_some_and(VecDeque::is_empty) {
                            waiting.remove(&key);
                        }
                        let request = request.unwrap_or_else(|| "null".to_owned());
                        out.write_all(
                            format!("{{\"request\":{request},\"response\":{text}}}\n").as_bytes(),
                        )?;
                    } else {
                        writeln!(
                            out,
                            "  {}  packet {} {place}",
                            response_line(o.offset as usize, &response),
                            o.last_packet
                        )?;
                    }
                }
                Err(e) => {
                    bad_frames += 1;
                    out.flush()?;
                    eprintln!(
                        "elect-leaders: {name}: packet {}: {place}: {} at frame byte {}: {}",
                        o.last_packet, e.field, e.offset, e.kind
                    );
                }
            },
            What::Other { .. } | What::Unpaired { .. } => {}
        }
        Ok(())
    })?;
    if !options.json {
        writeln!(
            out,
            "{requests} ElectLeaders requests in {name}; {answered} answered"
        )?;
    }
    let problems = summary.partial + bad_frames;
    if problems > 0 {
        return Err(Failure::Input(format!(
            "{name}: the output is partial: {problems} problem(s) reported above"
        )));
    }
    Ok(())
}

fn request_line(offset: usize, r: &ElectLeadersRequest<'_>) -> String {
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

fn response_line(offset: usize, r: &ElectLeadersResponse<'_>) -> String {
    let results = r.replica_election_results();
    let mut partitions = 0;
    let mut errors = 0;
    for result in results.iter() {
        for p in result.partition_result() {
            partitions += 1;
            if p.error_code().is_error() {
                errors += 1;
            }
        }
    }
    format!(
        "response offset={offset} (0x{offset:x}) bytes={} v{} correlation_id={} \
         throttle_time_ms={} error_code={} results={} partitions={partitions} \
         partition_errors={errors}",
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
