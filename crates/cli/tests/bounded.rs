//! The tool's work and memory are bounded, measured on crafted and large inputs: `scan`'s
//! search gives up on a crafted stretch and names it; `inspect`, `decode` and `encode` of
//! large frames, and `encode` of JSON of every costly shape, stay within the peak memory
//! crates/cli/README.md states ("Bounded memory").

use kafka_elect_leaders::parse_request;
use kafka_elect_leaders_testkit::traps::{chain_of_meeting_walks, response_chain_of_meeting_walks};

/// The tool's memory, measured: peak resident memory of `inspect`, `decode` and `encode` on
/// large frames, against the bounds crates/cli/README.md states (a multiple of the largest
/// frame, plus a constant for the program itself). The tool reports its own peak (`VmHWM`)
/// when `ELECT_LEADERS_PEAK_RSS` is set (Linux).
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
        let (peak, stderr) = run(args, stdout);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
        peak
    }

    /// Runs the tool with `args`, standard output to `stdout`; its peak memory in bytes
    /// and what it said on stderr (but for the peak), whatever its exit status.
    fn run(args: &[&str], stdout: &Path) -> (u64, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .args(args)
            .env("ELECT_LEADERS_PEAK_RSS", "1")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(stdout).unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        let kb = stderr
            .lines()
            .find_map(|l| l.strip_prefix("elect-leaders: peak RSS "))
            .and_then(|l| l.strip_suffix(" kB"))
            .unwrap_or_else(|| panic!("no peak reported: {stderr}"));
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("elect-leaders: peak RSS "))
            .collect();
        (kb.trim().parse::<u64>().unwrap() * 1024, said.join("\n"))
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

        // encode: the partitions packed as they are read, and the frame.
        let json_len = std::fs::metadata(&json).unwrap().len();
        assert!(json_len > frame.len() as u64);
        let again = dir.join("again.bin");
        let encoded = peak(&["encode", json.to_str().unwrap()], &again);
        assert_within("encode", encoded, frame.len() as u64 * 3 + BASE);
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

    /// `encode` of JSON whose shape costs most per byte of the frame: 300,000 topics or
    /// results with empty names and no partitions (3 bytes each on the wire, 29 of JSON),
    /// 300,000 tagged fields, and a wrong value of 900,000 items. Reading them into a tree
    /// of JSON values took from 36 to 240 MB (a million of each: 120 MB to 800 MB).
    #[test]
    fn encode_of_json_of_any_shape_stays_within_its_bound() {
        const MANY: usize = 300_000;
        let dir = temp_dir("encode-shapes");
        let many = |item: &dyn Fn(usize) -> String| -> String {
            let items: Vec<String> = (0..MANY).map(item).collect();
            items.join(",")
        };
        let shapes = [
            (
                "empty topics",
                format!(
                    r#"{{"kind":"request","api_version":2,"topic_partitions":[{}]}}"#,
                    many(&|_| r#"{"topic":"","partitions":[]}"#.to_owned())
                ),
            ),
            (
                "empty results",
                format!(
                    r#"{{"kind":"response","api_version":2,"replica_election_results":[{}]}}"#,
                    many(&|_| r#"{"topic":"","partition_result":[]}"#.to_owned())
                ),
            ),
            (
                "tagged fields",
                format!(
                    r#"{{"kind":"request","api_version":2,"topic_partitions":[],"tagged_fields":[{}]}}"#,
                    many(&|i| format!(r#"{{"tag":{i},"data":""}}"#))
                ),
            ),
        ];
        let out = dir.join("out.bin");
        for (shape, text) in &shapes {
            let input = dir.join("in.json");
            std::fs::write(&input, text).unwrap();
            let encoded = peak(&["encode", input.to_str().unwrap()], &out);
            let frame = std::fs::read(&out).unwrap();
            assert!(frame.len() >= 3 * MANY, "{shape}: the whole frame written");
            assert_within(
                &format!("encode, {shape}"),
                encoded,
                frame.len() as u64 * 3 + BASE,
            );
        }

        // A value of the wrong type is refused, showing its start, and not held.
        let input = dir.join("wrong.json");
        let items: Vec<String> = (0..3 * MANY).map(|i| i.to_string()).collect();
        let text = format!(
            r#"{{"kind":"request","api_version":2,"client_id":[{}]}}"#,
            items.join(",")
        );
        std::fs::write(&input, &text).unwrap();
        let (refused, said) = run(&["encode", input.to_str().unwrap()], &out);
        assert!(
            said.contains("client_id: expected a string or {\"hex\":\"...\"}, got [0,1,2,3,4"),
            "{said}"
        );
        assert_within("encode, a wrong value", refused, BASE);
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

/// The tool's `scan` on the two traps above: each window's search has a work limit, so a
/// crafted chain costs a bounded amount, and the stretch not searched is named. A short
/// chain, within the limit, is searched whole.
#[test]
fn the_tool_names_what_its_search_did_not_reach() {
    use std::process::{Command, Output};
    let corpus = |name: &str| {
        std::fs::read(format!(
            "{}/../../corpus/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
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
