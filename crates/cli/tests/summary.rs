//! `summary` (issue 26): on the real captures of `corpus/captures/`, checked against what
//! the clients did (corpus/captures/README.md) and against `decode --all` of the same file,
//! counted here independently; its filters; a cut capture; the HTML page's escaping.

mod tool;

use std::process::Output;

use serde_json::Value;
use tool::captures_dir;

const PCAP: &str = "elect-leaders-kafka-4.4.pcap";
const PCAPNG: &str = "elect-leaders-kafka-4.4.pcapng";

fn run(args: &[&str], stdin: &[u8]) -> Output {
    tool::run_in(&captures_dir(), args, stdin)
}

#[track_caller]
fn summary(args: &[&str], stdin: &[u8]) -> Value {
    let mut all = vec!["summary", "--json"];
    all.extend_from_slice(args);
    let output = run(&all, stdin);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {err}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn decode_all(file: &str) -> Vec<Value> {
    let output = run(&["decode", "--all", file], b"");
    assert_eq!(output.status.code(), Some(0));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `[{key: name, what: n}]` as a map from name to n.
fn counts(list: &Value, key: &str, what: &str) -> std::collections::BTreeMap<String, u64> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let name = match &o[key] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (name, o[what].as_u64().unwrap())
        })
        .collect()
}

/// What corpus/captures/README.md says the clients did: 8 connections, three client ids,
/// 6 ElectLeaders requests (PREFERRED, topic `capture`), 3 NONE and 3 ELECTION_NOT_NEEDED.
#[test]
fn the_real_captures_agree_with_what_the_clients_did() {
    for file in [PCAP, PCAPNG] {
        let s = summary(&[file], b"");
        assert_eq!(s["input"]["format"], "capture");
        assert_eq!(s["connections"], 8, "{file}");
        let clients = counts(&s["client_ids"], "client_id", "connections");
        let want: std::collections::BTreeMap<String, u64> = [
            ("e2e-java-admin", 4),
            ("e2e-confluent", 2),
            ("e2e-kafka-python", 2),
        ]
        .map(|(c, n)| (c.to_owned(), n))
        .into();
        assert_eq!(clients, want, "{file}");
        let e = &s["elect_leaders"];
        assert_eq!(e["requests"], 6);
        assert_eq!(e["responses"], 6);
        assert_eq!(
            counts(&e["by_election_type"], "election_name", "requests"),
            [("PREFERRED".to_owned(), 6)].into()
        );
        assert_eq!(
            counts(&e["by_topic"], "topic", "requests"),
            [("capture".to_owned(), 6)].into()
        );
        assert_eq!(
            counts(&e["outcomes"], "error_name", "partitions"),
            [
                ("NONE".to_owned(), 3),
                ("ELECTION_NOT_NEEDED".to_owned(), 3)
            ]
            .into()
        );
        // Three elections not needed, none failed: ELECTION_NOT_NEEDED is no failure (it
        // was listed among the failed partitions before).
        assert_eq!(e["failed_partitions"], serde_json::json!([]));
        assert_eq!(s["latency_us"]["paired"], 6);
        let a = &s["anomalies"];
        for key in [
            "unanswered_requests",
            "unpaired_responses",
            "malformed_frames",
            "gaps",
            "notes",
        ] {
            assert_eq!(a[key], 0, "{file} {key}");
        }
        assert_eq!(a["partial"], false);
    }
}

/// Every count of the summary against `decode --all` of the same capture, counted here.
#[test]
fn the_summary_counts_what_decode_prints() {
    for file in [PCAP, PCAPNG] {
        let s = summary(&[file], b"");
        let objects = decode_all(file);
        assert_eq!(s["frames"], objects.len());
        let mut conns: Vec<i64> = objects
            .iter()
            .map(|o| o["source"]["connection"].as_i64().unwrap())
            .collect();
        conns.sort();
        conns.dedup();
        assert_eq!(s["connections"], conns.len());
        for api in s["apis"].as_array().unwrap() {
            let of = |kind: &str| {
                objects
                    .iter()
                    .filter(|o| o["kind"] == kind && o["api_key"] == api["api_key"])
                    .count()
            };
            assert_eq!(api["requests"], of("request"), "{api}");
            assert_eq!(api["responses"], of("response"), "{api}");
        }
        // Latency: nearest-rank percentiles of decode's latency_us.
        let mut latencies: Vec<i64> = objects
            .iter()
            .filter(|o| o["kind"] == "response" && o["api_key"] == 43)
            .map(|o| o["source"]["latency_us"].as_i64().unwrap())
            .collect();
        latencies.sort();
        let rank = |p: usize| latencies[(p * latencies.len()).div_ceil(100) - 1];
        let l = &s["latency_us"];
        assert_eq!(l["p50"], rank(50));
        assert_eq!(l["p90"], rank(90));
        assert_eq!(l["p99"], rank(99));
        assert_eq!(l["max"], *latencies.last().unwrap());
        // Partitions by error code, from the responses.
        let mut by_code = std::collections::BTreeMap::<String, u64>::new();
        for o in objects.iter().filter(|o| o["api_key"] == 43) {
            for t in o["replica_election_results"]
                .as_array()
                .into_iter()
                .flatten()
            {
                for p in t["partition_result"].as_array().unwrap() {
                    *by_code
                        .entry(p["error_name"].as_str().unwrap().to_owned())
                        .or_default() += 1;
                }
            }
        }
        assert_eq!(
            counts(&s["elect_leaders"]["outcomes"], "error_name", "partitions"),
            by_code
        );
    }
}

/// The filters count what `decode` prints with them.
#[test]
fn summary_filters_as_decode_does() {
    let one = summary(&["--client-id", "e2e-confluent", PCAP], b"");
    assert_eq!(one["elect_leaders"]["requests"], 2);
    assert_eq!(one["elect_leaders"]["responses"], 2);
    assert_eq!(one["connections"], 1);
    assert_eq!(
        counts(&one["client_ids"], "client_id", "requests"),
        [("e2e-confluent".to_owned(), 2)].into()
    );
    // Issue 44, item 5: ELECTION_NOT_NEEDED is no failure, for --errors-only too.
    let failed = summary(&["--errors-only", PCAP], b"");
    assert_eq!(failed["elect_leaders"]["responses"], 0, "{failed:#}");
    let failed = summary(&["--any-error", PCAP], b"");
    assert_eq!(failed["elect_leaders"]["requests"], 0);
    assert_eq!(failed["elect_leaders"]["responses"], 3);
    assert_eq!(
        counts(
            &failed["elect_leaders"]["outcomes"],
            "error_name",
            "partitions"
        ),
        [("ELECTION_NOT_NEEDED".to_owned(), 3)].into()
    );
    let metadata = summary(&["--api", "Metadata", PCAP], b"");
    let apis = counts(&metadata["apis"], "api_name", "requests");
    assert_eq!(apis.keys().collect::<Vec<_>>(), ["Metadata"]);
    assert_eq!(metadata["elect_leaders"]["requests"], 0);
    let none = summary(&["--topic", "other", PCAP], b"");
    assert_eq!(none["frames"], 0);
    // The anomalies are counted whatever the filters: none here.
    assert_eq!(none["anomalies"]["notes"], 0);
    let output = run(&["summary", "--api", "Bogus", PCAP], b"");
    assert_eq!(output.status.code(), Some(2));
}

/// The first `n` packets of a pcap file.
fn first_packets(pcap: &[u8], n: usize) -> Vec<u8> {
    let mut end = 24;
    for _ in 0..n {
        let len = u32::from_le_bytes(pcap[end + 8..end + 12].try_into().unwrap()) as usize;
        end += 16 + len;
    }
    pcap[..end].to_vec()
}

/// A capture cut short: the requests left unanswered are counted (as many as `decode --all`
/// shows requests without a paired response), and a capture cut inside a packet makes the
/// summary partial: it is still printed, and the exit status is 1.
#[test]
fn a_cut_capture_counts_its_unanswered_requests_and_is_partial() {
    let pcap = std::fs::read(captures_dir().join(PCAP)).unwrap();
    let mut seen_unanswered = 0;
    for n in (4..110).step_by(3) {
        let cut = first_packets(&pcap, n);
        let s = summary(&["-"], &cut);
        let decoded = run(&["decode", "--all", "-"], &cut);
        let objects: Vec<Value> = String::from_utf8(decoded.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let requests = objects.iter().filter(|o| o["kind"] == "request").count();
        let answered = objects
            .iter()
            .filter(|o| o["kind"] == "response" && o["source"]["latency_us"].is_number())
            .count();
        assert_eq!(
            s["anomalies"]["unanswered_requests"],
            requests - answered,
            "{n}"
        );
        seen_unanswered += requests - answered;
    }
    assert!(seen_unanswered > 0, "no cut left a request unanswered");
    let mut cut = first_packets(&pcap, 50);
    cut.truncate(cut.len() - 5);
    let output = run(&["summary", "--json", "-"], &cut);
    assert_eq!(output.status.code(), Some(1));
    let s: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(s["anomalies"]["partial"], true);
    assert!(s["anomalies"]["notes"].as_u64().unwrap() >= 1);
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(err.contains("the output is partial"), "{err}");
    let text = run(&["summary", "-"], &cut);
    assert_eq!(text.status.code(), Some(1));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("the summary is partial"), "{text}");
}

/// A file of frames: a malformed frame is counted, what came before summarized, status 1.
#[test]
fn a_malformed_frame_in_a_file_is_counted() {
    let corpus = captures_dir().join("..");
    let mut bytes = std::fs::read(corpus.join("request-v2-min.bin")).unwrap();
    let mut cut = bytes.clone();
    cut.truncate(cut.len() - 3);
    bytes.extend_from_slice(&cut);
    let output = run(&["summary", "--json", "-"], &bytes);
    assert_eq!(output.status.code(), Some(1));
    let s: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(s["input"]["format"], "frames");
    assert_eq!(s["connections"], Value::Null);
    assert_eq!(s["elect_leaders"]["requests"], 1);
    assert_eq!(s["anomalies"]["malformed_frames"], 1);
    assert!(s["anomalies"]["error"]
        .as_str()
        .unwrap()
        .contains("frame 2"));
}

fn encode(json: &str) -> Vec<u8> {
    let output = run(&["encode", "-"], json.as_bytes());
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    output.stdout
}

fn html_of(args: &[&str], stdin: &[u8], name: &str) -> String {
    let path = std::env::temp_dir().join(format!("kel-summary-{}-{name}.html", std::process::id()));
    let mut all = vec!["summary", "--html", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = run(&all, stdin);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(output.stdout.is_empty());
    let page = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    page
}

/// Names chosen by the sender are text on the page, never markup.
#[test]
fn the_page_escapes_what_the_input_names() {
    let request = encode(
        r#"{"kind":"request","api_version":2,"correlation_id":1,"client_id":"<b onmouseover=alert(2)>c</b>","election_type":0,"topic_partitions":[{"topic":"<script>alert(1)</script>","partitions":[0]}],"timeout_ms":1000}"#,
    );
    let page = html_of(&["-"], &request, "request");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(
        page.contains("&lt;b onmouseover=alert(2)&gt;c&lt;/b&gt;"),
        "{page}"
    );
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<b onmouseover"), "{page}");
    let response = encode(
        r#"{"kind":"response","api_version":2,"correlation_id":1,"throttle_time_ms":0,"error_code":0,"replica_election_results":[{"topic":"t\"><svg onload=alert(3)>","partition_result":[{"partition_id":0,"error_code":84,"error_message":"<img src=x onerror=alert(4)>"}]}]}"#,
    );
    let page = html_of(
        &["--response", "--version", "2", "-"],
        &response,
        "response",
    );
    assert!(
        page.contains("&lt;img src=x onerror=alert(4)&gt;"),
        "{page}"
    );
    assert!(
        page.contains("t\\&quot;&gt;&lt;svg onload=alert(3)&gt;"),
        "{page}"
    );
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains("<svg onload"), "{page}");
}

/// The page of a real capture: one file, nothing fetched, its counts those of --json.
#[test]
fn the_page_of_a_capture_is_self_contained() {
    let page = html_of(&[PCAP], b"", "capture");
    let s = summary(&[PCAP], b"");
    for forbidden in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(forbidden), "{forbidden}");
    }
    assert!(page.contains(&format!("<b id=\"connections\">{}</b>", s["connections"])));
    assert!(page.contains(&format!(
        "<b id=\"elect-requests\">{}</b>",
        s["elect_leaders"]["requests"]
    )));
    // One dot per response's topic result on the timeline, coloured by outcome.
    assert!(page.contains("<b id=\"timeline-dots\">6</b>"));
    assert_eq!(page.matches("<circle class=\"elected\"").count(), 3);
    assert_eq!(page.matches("<circle class=\"not-needed\"").count(), 3);
    assert!(page.contains("<svg id=\"latency-histogram\""));
}

/// A page that cannot be written is said at once, naming its path, before the input is read.
#[test]
fn an_html_path_that_cannot_be_created_is_a_usage_error() {
    let output = run(
        &["summary", "--html", "/nonexistent-dir/page.html", PCAP],
        b"",
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(
        err.contains("cannot create /nonexistent-dir/page.html"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// The HTML page's outcome counts and timeline (issue 36, finding 6), on made captures.

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectLeadersResponseData, ElectionType, EncodeRequest, EncodeResponse,
    ErrorCode, PartitionResultData, ReplicaElectionResultData, TopicPartitionsData,
};
use kafka_elect_leaders_testkit::pcap as cap;

/// A response's results: (topic, error code of each of its partitions 0, 1, ...).
type Results<'a> = Vec<(String, Vec<i16>)>;

/// A capture (raw IPv4) of one connection to port 9092: an ElectLeaders v2 request and its
/// response for each of `exchanges`, the request at `ms` milliseconds and its answer a
/// millisecond later, then the connection closed at `end_ms`.
fn capture_of(exchanges: &[(u64, Results<'_>)], end_ms: u64) -> Vec<u8> {
    const CLIENT: [u8; 4] = [10, 0, 0, 1];
    const SERVER: [u8; 4] = [10, 0, 0, 2];
    let (cport, sport) = (50000u16, 9092u16);
    let (mut cseq, mut sseq) = (1000u32, 5000u32);
    let mut packets: Vec<(u64, Vec<u8>)> = vec![
        (
            0,
            cap::ipv4_tcp(CLIENT, SERVER, cport, sport, cseq, 0, cap::SYN, &[]),
        ),
        (
            0,
            cap::ipv4_tcp(
                SERVER,
                CLIENT,
                sport,
                cport,
                sseq,
                cseq + 1,
                cap::SYN | cap::ACK,
                &[],
            ),
        ),
    ];
    cseq += 1;
    sseq += 1;
    for (k, (ms, results)) in exchanges.iter().enumerate() {
        let id = k as i32 + 1;
        let partitions = [0];
        let topics = [TopicPartitionsData::new(b"asked", &partitions)];
        let request = ElectLeadersRequestData {
            correlation_id: id,
            client_id: Some(b"admin"),
            election_type: ElectionType::PREFERRED,
            topic_partitions: Some(&topics),
            timeout_ms: 30_000,
            ..Default::default()
        };
        let mut req = vec![0; request.encoded_len(2).unwrap()];
        request.encode(2, &mut req).unwrap();
        let parts: Vec<Vec<PartitionResultData<'_>>> = results
            .iter()
            .map(|(_, codes)| {
                codes
                    .iter()
                    .enumerate()
                    .map(|(p, &c)| PartitionResultData {
                        partition_id: p as i32,
                        error_code: ErrorCode(c),
                        error_message: None,
                        tagged_fields: &[],
                    })
                    .collect()
            })
            .collect();
        let entries: Vec<ReplicaElectionResultData<'_>> = results
            .iter()
            .zip(&parts)
            .map(|((topic, _), p)| ReplicaElectionResultData {
                topic: topic.as_bytes(),
                partition_result: p,
                tagged_fields: &[],
            })
            .collect();
        let response = ElectLeadersResponseData {
            correlation_id: id,
            replica_election_results: &entries,
            ..Default::default()
        };
        let mut resp = vec![0; response.encoded_len(2).unwrap()];
        response.encode(2, &mut resp).unwrap();
        packets.push((
            *ms,
            cap::ipv4_tcp(
                CLIENT,
                SERVER,
                cport,
                sport,
                cseq,
                sseq,
                cap::ACK | cap::PSH,
                &req,
            ),
        ));
        cseq += req.len() as u32;
        packets.push((
            ms + 1,
            cap::ipv4_tcp(
                SERVER,
                CLIENT,
                sport,
                cport,
                sseq,
                cseq,
                cap::ACK | cap::PSH,
                &resp,
            ),
        ));
        sseq += resp.len() as u32;
    }
    packets.push((
        end_ms,
        cap::ipv4_tcp(
            CLIENT,
            SERVER,
            cport,
            sport,
            cseq,
            sseq,
            cap::FIN | cap::ACK,
            &[],
        ),
    ));
    packets.push((
        end_ms,
        cap::ipv4_tcp(
            SERVER,
            CLIENT,
            sport,
            cport,
            sseq,
            cseq + 1,
            cap::FIN | cap::ACK,
            &[],
        ),
    ));
    let base = 1_800_000_000u64; // seconds since 1970
    let records: Vec<cap::Packet<'_>> = packets
        .iter()
        .map(|(ms, data)| {
            (
                (base + ms / 1000) as u32,
                ((ms % 1000) * 1_000_000) as u32,
                &data[..],
                data.len() as u32,
            )
        })
        .collect();
    cap::pcap_file(cap::LINKTYPE_RAW, true, false, &records)
}

fn html_of_capture(capture: &[u8], name: &str) -> String {
    let path = std::env::temp_dir().join(format!("kel-summary-{}-{name}.pcap", std::process::id()));
    std::fs::write(&path, capture).unwrap();
    let page = html_of(&[path.to_str().unwrap()], b"", name);
    std::fs::remove_file(&path).unwrap();
    page
}

/// The text of the element with this `id` (its first child text).
fn by_id<'a>(page: &'a str, id: &str) -> &'a str {
    let at = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let rest = &page[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest[start..].find('<').unwrap();
    &rest[start..start + end]
}

/// Issue 36, finding 6: a topic's dot said "failed (4 partitions)" when 3 of its 4
/// partitions were elected, and the page's "failed partitions" counted ELECTION_NOT_NEEDED,
/// which the timeline colours "not needed". Each dot now counts its partitions by outcome,
/// and the page counts partitions as the timeline colours them.
#[test]
fn the_page_counts_outcomes_as_the_timeline_colours_them() {
    let exchanges = [
        (10, vec![("mixed".to_string(), vec![0, 0, 0, 80])]),
        (20, vec![("calm".to_string(), vec![0, 0, 0, 84])]),
    ];
    let page = html_of_capture(&capture_of(&exchanges, 30), "outcomes");
    assert_eq!(by_id(&page, "elected-partitions"), "6");
    assert_eq!(by_id(&page, "not-needed-partitions"), "1");
    assert_eq!(by_id(&page, "failed-partitions"), "1");
    assert!(
        page.contains("failed: 3 elected, 0 not needed, 1 failed (4 partitions), connection"),
        "{page}"
    );
    assert!(
        page.contains("not needed: 3 elected, 1 not needed, 0 failed (4 partitions), connection"),
        "{page}"
    );
    assert_eq!(page.matches("<circle class=\"failed\"").count(), 1);
    assert_eq!(page.matches("<circle class=\"not-needed\"").count(), 1);
    // The failed table lists the failure only; the not-needed one apart.
    let failed = &page[page.find("<table id=\"failed\"").unwrap()..];
    let failed = &failed[..failed.find("</table>").unwrap()];
    assert!(
        failed.contains("(80)") && !failed.contains("(84)"),
        "{failed}"
    );
    let not_needed = &page[page.find("<table id=\"not-needed\"").unwrap()..];
    let not_needed = &not_needed[..not_needed.find("</table>").unwrap()];
    assert!(not_needed.contains("(84)"), "{not_needed}");
}

/// Issue 36, finding 6: past 100,000 results the timeline stopped drawing, and its axis ended
/// at the last result drawn, not at the end of the capture. Now it thins its dots evenly and
/// says so, failures are kept past a flood of successes, and the axis runs to the last frame.
#[test]
fn the_timeline_says_when_it_thins_its_dots_and_its_axis_covers_the_capture() {
    // 1,200 responses of 100 elected topics each (120,000 results), then one failure.
    let elected: Vec<(String, Vec<i16>)> =
        (0..100).map(|t| (format!("topic-{t}"), vec![0])).collect();
    let mut exchanges: Vec<(u64, Results<'_>)> = (0..1200)
        .map(|k| (10 + 10 * k as u64, elected.clone()))
        .collect();
    exchanges.push((20_000, vec![("topic-7".to_string(), vec![0, 80])]));
    let page = html_of_capture(&capture_of(&exchanges, 120_000), "thinned");
    assert_eq!(by_id(&page, "timeline-results"), "120001");
    let thinned = &page[page
        .find("<p id=\"timeline-thinned\"")
        .expect("says it thins")..];
    let thinned = &thinned[..thinned.find("</p>").unwrap()];
    assert!(
        thinned.contains("elected: one in 4 drawn (30000 of 120000)"),
        "{thinned}"
    );
    assert!(!thinned.contains("failed:"), "{thinned}");
    let dots: u64 = by_id(&page, "timeline-dots").parse().unwrap();
    assert_eq!(dots, 30_001);
    assert_eq!(page.matches("<circle class=\"failed\"").count(), 1);
    // The axis: from the first frame (the first request, at 10 ms) to the last (the
    // failure's answer, at 20.001 s), where it ended at the 100,000th result (9.991 s).
    assert_eq!(by_id(&page, "timeline-axis-end"), "+19.991000 s");
}
