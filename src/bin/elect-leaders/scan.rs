//! `scan`: find ElectLeaders requests in a raw capture, and their responses in the other
//! direction's capture.
//!
//! A capture need not start on a frame boundary and holds other APIs' traffic, so frames
//! cannot be walked from the start. The library's `scan_requests` and `scan_responses`
//! (memchr's memmem, confirmed by the parser) find them; this module prints them and
//! pairs each request with the first unused response that has its correlation id.

use std::io::Write;
use std::ops::Range;

use kafka_elect_leaders::{
    scan_requests, scan_responses, ElectLeadersRequest, ElectLeadersResponse, ErrorCode,
};

use crate::fail::Failure;
use crate::input::{to_hex, Source};
use crate::Options;

/// `scan REQUESTS_FILE [RESPONSES_FILE]`.
pub fn run(options: &Options, out: &mut dyn Write) -> Result<(), Failure> {
    let requests_source = Source::from_arg(&options.files[0]);
    let requests_bytes = requests_source.read_all("scan", options.hex)?;
    let responses = match options.files.get(1) {
        Some(arg) => {
            let source = Source::from_arg(arg);
            let bytes = source.read_all("scan", options.hex)?;
            Some((source.name(), bytes))
        }
        None => None,
    };

    let requests = find_requests(&requests_bytes);
    let mut used: Vec<Range<usize>> = Vec::new();
    for (offset, request) in &requests {
        writeln!(out, "{}", request_line(*offset, request))?;
        let Some((_, bytes)) = &responses else {
            continue;
        };
        match find_response(bytes, request, &used) {
            Some((at, response)) => {
                used.push(at..at + response.frame().len());
                writeln!(out, "  {}", response_line(at, &response))?;
            }
            None => writeln!(
                out,
                "  response not found (correlation_id={})",
                request.correlation_id()
            )?,
        }
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
            "{found} in {} ({} bytes); {} answered in {name} ({} bytes)",
            requests_source.name(),
            requests_bytes.len(),
            used.len(),
            bytes.len()
        )?,
    }
    Ok(())
}

/// Every ElectLeaders request frame in `capture`, with its offset, in order.
pub fn find_requests(capture: &[u8]) -> Vec<(usize, ElectLeadersRequest<'_>)> {
    scan_requests(capture).collect()
}

/// The first frame in `capture`, not inside one already `used`, whose correlation id is
/// the request's and that parses as a response of the request's version.
pub fn find_response<'a>(
    capture: &'a [u8],
    request: &ElectLeadersRequest<'_>,
    used: &[Range<usize>],
) -> Option<(usize, ElectLeadersResponse<'a>)> {
    scan_responses(capture, request.correlation_id(), request.version())
        .find(|(start, _)| !used.iter().any(|r| r.contains(start)))
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
