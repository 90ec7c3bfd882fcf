//! Bounded work in the scanner: finding frames in arbitrary bytes costs work linear in the
//! input, even when thousands of candidate headers overlap and share one large body.
//!
//! Work is counted in operations (the bytes of the frames handed to the parser, which walks
//! each at most once), not in wall-clock time: the input doubled, the work at most doubles
//! plus a constant. Each input is also scanned the simple way (every candidate parsed) to
//! show that what the scanner remembers never changes what it finds.
#![cfg(feature = "scan")]

use std::ops::Range;

use kafka_elect_leaders::{parse_request, scan_requests, split_frame};

/// An unsigned varint.
fn uvarint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The body of a version-2 request with `topics` one-letter topics and no partitions:
/// four bytes a topic, and the parser walks every one of them.
fn large_body(topics: usize) -> Vec<u8> {
    let mut body = vec![0]; // ElectionType
    uvarint(topics + 1, &mut body);
    for _ in 0..topics {
        body.extend_from_slice(&[2, b'a', 1, 0]); // "a", no partitions, no tags
    }
    body.extend_from_slice(&60_000i32.to_be_bytes()); // TimeoutMs
    body.push(0); // tagged fields
    body
}

/// `headers` version-2 request headers, each one's client id holding all the headers after
/// it, so that every client id ends where the last one does; then one shared tag byte (the
/// headers' tagged fields, none) and `body`. `end(k, body)` says where the frame of header
/// `k` (0 the outermost) ends, given where the body lies; the input holds the body and as
/// many bytes after it as the frames claim.
fn nested(headers: usize, body: &[u8], end: impl Fn(usize, Range<usize>) -> usize) -> Vec<u8> {
    const PREFIX: usize = 14; // size, api key, version, correlation id, client id length
    let body_start = headers * PREFIX + 1;
    let body_range = body_start..body_start + body.len();
    let len = (0..headers)
        .map(|k| end(k, body_range.clone()))
        .max()
        .unwrap_or(0)
        .max(body_range.end);
    let mut input = Vec::with_capacity(len);
    for k in 0..headers {
        let start = k * PREFIX;
        let size = i32::try_from(end(k, body_range.clone()) - start - 4).unwrap();
        input.extend_from_slice(&size.to_be_bytes());
        input.extend_from_slice(&[0, 43, 0, 2]);
        input.extend_from_slice(&(k as i32).to_be_bytes());
        let client_id_len = i16::try_from((headers - 1 - k) * PREFIX).unwrap();
        input.extend_from_slice(&client_id_len.to_be_bytes());
    }
    input.push(0);
    input.extend_from_slice(body);
    input.resize(len, 0);
    input
}

/// The scanner's findings and the bytes it handed to the parser.
fn scan(input: &[u8]) -> (Vec<(usize, i32)>, u64) {
    let mut scanner = scan_requests(input);
    let found = scanner
        .by_ref()
        .map(|(at, r)| (at, r.correlation_id()))
        .collect();
    (found, scanner.stats().parsed_bytes)
}

/// What the scanner must find: every candidate parsed, in order, skipping those inside a
/// frame already found.
fn scan_every_candidate(input: &[u8]) -> Vec<(usize, i32)> {
    let mut found = Vec::new();
    let mut resume = 0;
    for at in 4..input.len().saturating_sub(3) {
        let start = at - 4;
        if input[at..at + 3] != [0, 43, 0] || input[at + 3] > 2 || start < resume {
            continue;
        }
        let Ok((frame, _)) = split_frame(&input[start..]) else {
            continue;
        };
        if let Ok(request) = parse_request(frame) {
            resume = start + frame.len();
            found.push((start, request.correlation_id()));
        }
    }
    found
}

/// Scans the input built at `scale` and at twice that scale: the work at most doubles
/// (plus a constant), and both find what parsing every candidate finds.
fn assert_linear(build: impl Fn(usize) -> Vec<u8>, scale: usize) -> (Vec<(usize, i32)>, u64) {
    let small = build(scale);
    let large = build(2 * scale);
    assert!(large.len() >= 2 * small.len() - 64, "the input doubles");
    let (found_small, work_small) = scan(&small);
    let (found_large, work_large) = scan(&large);
    assert_eq!(found_small, scan_every_candidate(&small));
    assert_eq!(found_large, scan_every_candidate(&large));
    assert!(work_small > 0, "the body was parsed at least once");
    assert!(
        work_large <= 2 * work_small + 4096,
        "work {work_small} for {} bytes, {work_large} for {} bytes: more than doubled",
        small.len(),
        large.len()
    );
    (found_large, work_large)
}

#[test]
fn nested_headers_sharing_one_body_and_one_end_cost_one_parse() {
    // Every frame claims one byte more than the body: each walk stops a byte early.
    let (found, work) = assert_linear(
        |n| nested(n, &large_body(20 * n), |_, body| body.end + 1),
        100,
    );
    assert!(found.is_empty());
    // About one walk of the body, not one per header.
    let large_input = 200 * 14 + 1 + large_body(20 * 200).len() + 1;
    assert!(work < 2 * large_input as u64, "work {work}");
}

#[test]
fn nested_headers_with_frames_ending_past_the_body_cost_one_parse() {
    // Header k's frame ends k + 1 bytes past the body: each walk stops early, by a
    // different count.
    let (found, _) = assert_linear(
        |n| nested(n, &large_body(20 * n), |k, body| body.end + k + 1),
        100,
    );
    assert!(found.is_empty());
}

#[test]
fn nested_headers_with_frames_ending_inside_the_body_cost_one_parse() {
    // The last topic's name is long, and header k's frame ends inside it, k + 1 bytes in:
    // each walk runs out of bytes there, having walked every topic before it.
    let build = |n: usize| {
        let topics = 20 * n;
        let mut body = vec![0];
        uvarint(topics + 1, &mut body);
        for _ in 1..topics {
            body.extend_from_slice(&[2, b'a', 1, 0]);
        }
        uvarint(2 * n + 1, &mut body);
        let name_start = body.len();
        body.extend(std::iter::repeat(b'x').take(2 * n));
        body.extend_from_slice(&[1, 0]);
        body.extend_from_slice(&60_000i32.to_be_bytes());
        body.push(0);
        nested(n, &body, |k, body| body.start + name_start + k + 1)
    };
    let (found, _) = assert_linear(build, 100);
    assert!(found.is_empty());
}

#[test]
fn a_frame_among_the_nested_headers_is_still_found() {
    // The innermost header's frame ends exactly at the body's end: it parses, and the
    // outer ones, ending one byte later, do not. A valid frame after them is found too.
    let valid = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/request-v2-min.bin"
    ))
    .unwrap();
    let build = |n: usize| {
        let mut input = nested(n, &large_body(20 * n), |k, body| {
            body.end + usize::from(k + 1 != n)
        });
        input.extend_from_slice(&valid);
        input
    };
    let (found, _) = assert_linear(build, 100);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0], ((200 - 1) * 14, 200 - 1));
}

/// A chain of `topics` version-0 topic entries, each of whose names holds a request header
/// whose client id ends four bytes before the next entry: from there, the entry's last
/// partition id reads as a topic count, and the candidate walks every entry after it. The
/// walks start apart and meet, so what the scanner remembers does not help: each walks the
/// rest of the chain. Every candidate's frame ends one byte after the chain's timeout, so
/// every walk fails there, at its very end. A valid frame before and one after the chain.
fn chain_of_meeting_walks(topics: usize, valid: &[u8]) -> Vec<u8> {
    const ENTRY: usize = 24;
    let chain_start = valid.len();
    let chain_end = chain_start + topics * ENTRY;
    let frame_end = chain_end + 4 + 1; // timeout, one byte too many
    let mut input = valid.to_vec();
    for i in 0..topics {
        let header = chain_start + i * ENTRY + 2;
        let size = i32::try_from(frame_end - header - 4).unwrap();
        input.extend_from_slice(&14i16.to_be_bytes()); // name: the header
        input.extend_from_slice(&size.to_be_bytes());
        input.extend_from_slice(&[0, 43, 0, 0]); // ElectLeaders v0
        input.extend_from_slice(&(i as i32).to_be_bytes());
        input.extend_from_slice(&4i16.to_be_bytes()); // client id: the next 4 bytes
        input.extend_from_slice(&1i32.to_be_bytes()); // one partition
        let rest = i32::try_from(topics - 1 - i).unwrap();
        input.extend_from_slice(&rest.to_be_bytes()); // its id: the entries after it
    }
    input.extend_from_slice(&60_000i32.to_be_bytes());
    input.push(0);
    input.extend_from_slice(valid);
    input
}

#[test]
fn a_work_limit_bounds_walks_that_meet_and_says_where_it_stopped() {
    let valid = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/request-v0.bin"
    ))
    .unwrap();
    let walked = |input: &[u8]| {
        let mut scanner = scan_requests(input);
        let found: Vec<usize> = scanner.by_ref().map(|(at, _)| at).collect();
        (found, scanner.stats().walked_bytes)
    };

    // Without a limit this input is the scanner's worst case: the input doubled, the work
    // about four times. (That it is, is what makes the rest of the test mean something.)
    let small = chain_of_meeting_walks(1000, &valid);
    let large = chain_of_meeting_walks(2000, &valid);
    let (found_small, work_small) = walked(&small);
    let (found_large, work_large) = walked(&large);
    eprintln!(
        "no limit: {} bytes walked {work_small}, {} bytes walked {work_large}",
        small.len(),
        large.len()
    );
    assert!(
        work_large > 3 * work_small && work_small > 100 * small.len() as u64,
        "work {work_small} for {} bytes, {work_large} for {}",
        small.len(),
        large.len()
    );
    assert_eq!(found_large, [0, large.len() - valid.len()]);
    assert_eq!(
        found_small,
        scan_every_candidate(&small)
            .iter()
            .map(|f| f.0)
            .collect::<Vec<_>>()
    );

    // With a limit of eight times the input, the work is at most that and one frame more,
    // the scan says where it stopped, and what it found before is what the full scan found.
    for input in [&small, &large] {
        let limit = 8 * input.len() as u64;
        let mut scanner = scan_requests(input).work_limit(limit);
        let found: Vec<usize> = scanner.by_ref().map(|(at, _)| at).collect();
        let work = scanner.stats().walked_bytes;
        assert!(
            work <= limit + input.len() as u64,
            "work {work}, limit {limit}"
        );
        let stopped = scanner.stopped_at().expect("the limit is reached");
        assert!(stopped > valid.len() && stopped < input.len() - valid.len());
        assert_eq!(found, [0], "found before {stopped}");
        assert!(scanner.next().is_none(), "nothing more after the stop");
    }

    // A limit the work does not reach changes nothing.
    let mut scanner = scan_requests(&small).work_limit(work_small);
    let found: Vec<usize> = scanner.by_ref().map(|(at, _)| at).collect();
    assert_eq!((found, scanner.stopped_at()), (found_small, None));
}

#[test]
fn a_response_scan_stops_at_its_work_limit() {
    let frame = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/response-v2-multi.bin"
    ))
    .unwrap();
    let id = kafka_elect_leaders::parse_response(&frame, 2)
        .unwrap()
        .correlation_id();
    let input = [&frame[..], b"other", &frame[..]].concat();
    let all: Vec<usize> = kafka_elect_leaders::scan_responses(&input, id, 2)
        .map(|(at, _)| at)
        .collect();
    assert_eq!(all, [0, frame.len() + 5]);
    let mut scanner = kafka_elect_leaders::scan_responses(&input, id, 2).work_limit(1);
    assert_eq!(scanner.next().map(|(at, _)| at), Some(0));
    assert!(scanner.next().is_none());
    assert_eq!(scanner.stopped_at(), Some(frame.len() + 5));
    assert_eq!(scanner.stats().walked_bytes, frame.len() as u64);
}

/// The tool's memory, measured: peak resident memory of `inspect`, `decode` and `encode` on
/// large frames, against the bounds the README states (a multiple of the largest frame, or
/// of the largest JSON object for `encode`, plus a constant for the program itself). The
/// tool reports its own peak (`VmHWM`) when `ELECT_LEADERS_PEAK_RSS` is set (Linux).
#[cfg(feature = "cli")]
mod tool_memory {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};

    use kafka_elect_leaders::{
        ElectLeadersRequestData, ElectLeadersResponseData, EncodeRequest, EncodeResponse,
        ErrorCode, PartitionResultData, ReplicaElectionResultData, TopicPartitionsData,
    };

    const MIB: u64 = 1024 * 1024;
    /// The program itself, its buffers and the allocator's slack.
    const BASE: u64 = 16 * MIB;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kel-bounded-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A version-2 request: `topics` topics named by `name`, each with `partitions`
    /// partitions.
    fn request(topics: usize, name: impl Fn(usize) -> Vec<u8>, partitions: usize) -> Vec<u8> {
        let names: Vec<Vec<u8>> = (0..topics).map(name).collect();
        let ids: Vec<i32> = (0..partitions as i32).collect();
        let entries: Vec<TopicPartitionsData<'_>> = names
            .iter()
            .map(|n| TopicPartitionsData::new(n, &ids))
            .collect();
        let data = ElectLeadersRequestData {
            correlation_id: 5,
            topic_partitions: Some(&entries),
            ..Default::default()
        };
        let mut frame = vec![0; data.encoded_len(2).unwrap()];
        data.encode(2, &mut frame).unwrap();
        frame
    }

    /// A version-2 response: `results` results of `partitions` partitions each, no error
    /// messages: 8 bytes a partition on the wire, about 55 in JSON.
    fn response(results: usize, partitions: usize) -> Vec<u8> {
        let list: Vec<PartitionResultData<'_>> = (0..partitions as i32)
            .map(|p| PartitionResultData {
                partition_id: p,
                error_code: ErrorCode(0),
                error_message: None,
                tagged_fields: &[],
            })
            .collect();
        let names: Vec<Vec<u8>> = (0..results).map(|i| format!("t{i}").into_bytes()).collect();
        let entries: Vec<ReplicaElectionResultData<'_>> = names
            .iter()
            .map(|n| ReplicaElectionResultData {
                topic: n,
                partition_result: &list,
                tagged_fields: &[],
            })
            .collect();
        let data = ElectLeadersResponseData {
            correlation_id: 5,
            replica_election_results: &entries,
            ..Default::default()
        };
        let mut frame = vec![0; data.encoded_len(2).unwrap()];
        data.encode(2, &mut frame).unwrap();
        frame
    }

    /// Runs the tool with `args`, standard output to `stdout`; its peak memory in bytes.
    fn peak(args: &[&str], stdout: &Path) -> u64 {
        let output = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .args(args)
            .env("ELECT_LEADERS_PEAK_RSS", "1")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(stdout).unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(output.status.success(), "{args:?}: {stderr}");
        let kb = stderr
            .lines()
            .find_map(|l| l.strip_prefix("elect-leaders: peak RSS "))
            .and_then(|l| l.strip_suffix(" kB"))
            .unwrap_or_else(|| panic!("no peak reported: {stderr}"));
        kb.trim().parse::<u64>().unwrap() * 1024
    }

    #[track_caller]
    fn assert_within(what: &str, peak: u64, bound: u64) {
        eprintln!("{what}: peak {} MiB, bound {} MiB", peak / MIB, bound / MIB);
        assert!(
            peak <= bound,
            "{what}: peak {peak} bytes is over the documented bound of {bound}"
        );
    }

    #[test]
    fn decode_and_encode_of_a_24_mib_frame_stay_within_their_bounds() {
        let dir = temp_dir("decode");
        // 6.4 million partitions: 24 MiB on the wire, about 40 MB of JSON.
        let frame = request(64, |i| format!("topic-{i}").into_bytes(), 100_000);
        assert!(frame.len() > 24 * MIB as usize);
        let input = dir.join("large.bin");
        std::fs::write(&input, &frame).unwrap();
        let json = dir.join("large.json");

        // decode: the frame, and the JSON written as it is walked.
        let decoded = peak(&["decode", input.to_str().unwrap()], &json);
        assert_within("decode", decoded, frame.len() as u64 * 3 / 2 + BASE);

        // encode: the object's text, what is read of it, and the frame.
        let json_len = std::fs::metadata(&json).unwrap().len();
        assert!(json_len > frame.len() as u64);
        let again = dir.join("again.bin");
        let encoded = peak(&["encode", json.to_str().unwrap()], &again);
        assert_within("encode", encoded, json_len * 4 + BASE);
        assert!(
            std::fs::read(&again).unwrap() == frame,
            "encode gives back the frame"
        );

        // A response's JSON is seven times its frame: none of it is held.
        let frame = response(9, 125_000);
        assert!(frame.len() > 8 * MIB as usize);
        std::fs::write(&input, &frame).unwrap();
        let args = [
            "decode",
            "--response",
            "--version",
            "2",
            input.to_str().unwrap(),
        ];
        let decoded = peak(&args, &json);
        assert!(std::fs::metadata(&json).unwrap().len() > 6 * frame.len() as u64);
        assert_within(
            "decode, response",
            decoded,
            frame.len() as u64 * 3 / 2 + BASE,
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn inspect_of_a_large_frame_stays_within_its_bound() {
        let dir = temp_dir("inspect");
        // 24 MiB in topics with the longest names there are: few nodes, every byte shown.
        let long = |i: usize| {
            let mut name = format!("topic-{i}-").into_bytes();
            name.resize(32_767, b'x');
            name
        };
        let frame = request(24 * 32, long, 2);
        assert!(frame.len() > 24 * MIB as usize);
        let input = dir.join("long-names.bin");
        std::fs::write(&input, &frame).unwrap();
        let shown = dir.join("long-names.txt");
        let inspected = peak(&["inspect", input.to_str().unwrap()], &shown);
        assert_within("inspect", inspected, frame.len() as u64 * 3 + BASE);
        let text = std::fs::read_to_string(&shown).unwrap();
        assert!(
            text.contains("TopicPartitions[767]"),
            "every topic is shown"
        );

        // A million partitions, each a node of the tree: a tree built whole would take
        // hundreds of bytes each.
        let frame = request(4, |i| format!("t{i}").into_bytes(), 250_000);
        let input = dir.join("many-nodes.bin");
        std::fs::write(&input, &frame).unwrap();
        let inspected = peak(&["inspect", input.to_str().unwrap()], &shown);
        assert_within(
            "inspect, many nodes",
            inspected,
            frame.len() as u64 * 3 + BASE,
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A chain of `entries` version-0 response results, each with one partition whose error
/// message holds a response header (`correlation_id`): from there, the message's last 8
/// bytes read as a throttle time and a result count, and the candidate walks every entry
/// after it, the same trap as [`chain_of_meeting_walks`] for the responses' search. Every
/// candidate's frame ends one byte after the chain; a valid response follows.
#[cfg(feature = "cli")]
fn response_chain_of_meeting_walks(entries: usize, correlation_id: i32, valid: &[u8]) -> Vec<u8> {
    const ENTRY: usize = 31;
    let frame_end = entries * ENTRY + 1;
    let mut input = Vec::new();
    for i in 0..entries {
        let header = i * ENTRY + 15;
        input.extend_from_slice(&[0, 1, b'a']); // topic "a"
        input.extend_from_slice(&1i32.to_be_bytes()); // one partition
        input.extend_from_slice(&(i as i32).to_be_bytes()); // its id
        input.extend_from_slice(&[0, 0, 0, 16]); // no error, a 16-byte message:
        let size = i32::try_from(frame_end - header - 4).unwrap();
        input.extend_from_slice(&size.to_be_bytes());
        input.extend_from_slice(&correlation_id.to_be_bytes());
        input.extend_from_slice(&0i32.to_be_bytes()); // throttle time
        let rest = i32::try_from(entries - 1 - i).unwrap();
        input.extend_from_slice(&rest.to_be_bytes()); // results: the entries after it
    }
    input.push(0);
    let mut valid = valid.to_vec();
    valid[4..8].copy_from_slice(&correlation_id.to_be_bytes());
    input.extend_from_slice(&valid);
    input
}

/// The tool's `scan` on the two traps above: each window's search has a work limit, so a
/// crafted chain costs a bounded amount, and the stretch not searched is named. A short
/// chain, within the limit, is searched whole.
#[cfg(feature = "cli")]
#[test]
fn the_tool_names_what_its_search_did_not_reach() {
    use std::process::{Command, Output};
    let corpus = |name: &str| {
        std::fs::read(format!("{}/corpus/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let request = corpus("request-v0.bin");
    let correlation_id = parse_request(&request).unwrap().correlation_id();
    let dir = std::env::temp_dir().join(format!("kel-bounded-{}-scan", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scan = |files: &[(&str, &[u8])]| -> (Output, String, String) {
        let paths: Vec<String> = files
            .iter()
            .map(|(name, bytes)| {
                let path = dir.join(name);
                std::fs::write(&path, bytes).unwrap();
                path.to_str().unwrap().to_owned()
            })
            .collect();
        let output = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .arg("scan")
            .args(&paths)
            .output()
            .unwrap();
        let stdout = String::from_utf8(output.stdout.clone()).unwrap();
        let stderr = String::from_utf8(output.stderr.clone()).unwrap();
        (output, stdout, stderr)
    };
    // The bytes a note says were not searched.
    let not_searched = |stderr: &str| -> (usize, usize) {
        let note = stderr
            .lines()
            .find(|l| l.contains("not searched"))
            .unwrap_or_else(|| panic!("no note: {stderr}"));
        note.split("bytes ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|r| r.split_once(".."))
            .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
            .unwrap_or_else(|| panic!("no range in {note}"))
    };

    // Requests: 3,000 entries, 72 KB whose full search walks about 100 MB, past the limit
    // of 32 bytes a byte plus 16 MiB. The frame before the chain is found, the one after
    // it is in the stretch given up on.
    let input = chain_of_meeting_walks(3000, &request);
    let (output, stdout, stderr) = scan(&[("chain.bin", &input)]);
    assert!(!output.status.success(), "a partial search fails: {stderr}");
    let (from, to) = not_searched(&stderr);
    assert!(
        from > request.len() && to == input.len(),
        "{from}..{to}: {stderr}"
    );
    assert!(stderr.contains("the output is partial"), "{stderr}");
    assert!(stdout.contains("1 ElectLeaders request in"), "{stdout}");
    // 300 entries: within the limit, both frames found.
    let (output, stdout, stderr) = scan(&[("chain.bin", &chain_of_meeting_walks(300, &request))]);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("2 ElectLeaders requests in"), "{stdout}");

    // Responses: the same for the search of the other direction.
    let response = corpus("response-v0.bin");
    let input = response_chain_of_meeting_walks(3000, correlation_id, &response);
    let (output, stdout, stderr) = scan(&[("request.bin", &request), ("chain.bin", &input)]);
    assert!(!output.status.success(), "a partial search fails: {stderr}");
    let (from, to) = not_searched(&stderr);
    assert!(from > 0 && to == input.len(), "{from}..{to}: {stderr}");
    assert!(stdout.contains("response not found"), "{stdout}");
    let input = response_chain_of_meeting_walks(300, correlation_id, &response);
    let (output, stdout, stderr) = scan(&[("request.bin", &request), ("chain.bin", &input)]);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("1 answered in"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
