//! The audit log's tests: lines, records, the queue and its shares, the writer, rotation.

use super::*;
use std::io::Write;
use std::path::{Path, PathBuf};

use futures_util::FutureExt;
use kafka_elect_leaders_text::is_hidden;

/// Issue 23, finding 7: a name that is not UTF-8 was written with U+FFFD in its place,
/// so two different names could look the same in the audit log.
#[test]
fn names_that_are_not_utf8_are_written_losslessly() {
    let text = |name: &[u8]| serde_json::to_string(&Name(name)).unwrap();
    assert_eq!(text(b"payments"), r#""payments""#);
    assert_eq!(text(b"pay\xffments"), r#"{"hex":"706179ff6d656e7473"}"#);
    assert_ne!(text(b"pay\xffments"), text(b"pay\xfements"));
}

/// The whole record of a partial refusal, read back as JSON: every key with its value,
/// the names as the tool writes them, only the protected topic under `refused`.
#[test]
fn a_decision_record_reads_back_as_the_decision() {
    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    const VERSION: i16 = 2;
    let (orders, bad) = ([0, 5, -1], [7]);
    let topics = [
        TopicPartitionsData::new(b"orders", &orders),
        TopicPartitionsData::new(b"pay\xffments", &bad),
    ];
    let frame = ElectLeadersRequestData {
        correlation_id: 41,
        client_id: Some(b"ops\xfe"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(VERSION)
    .unwrap();
    let request = parse_request(&frame).unwrap();
    let policy = Policy {
        protected_topics: [b"pay\xffments".to_vec().into_boxed_slice()].into(),
        ..Default::default()
    };
    let decision = policy.decide(&request);
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let line = DecisionRecord::new(&conn, Some("alice"), &policy, &request, &decision).line();
    assert!(
        line.ends_with('\n') && line.matches('\n').count() == 1,
        "{line:?}"
    );
    let mut got: serde_json::Value = serde_json::from_str(&line).unwrap();
    let time = got.as_object_mut().unwrap().remove("time").unwrap();
    assert!(time.as_str().unwrap().ends_with('Z'), "{time}");
    let pay = serde_json::json!({"hex": "706179ff6d656e7473"});
    assert_eq!(
        got,
        serde_json::json!({
            "listener": "127.0.0.1:19092",
            "client": "127.0.0.1:5000",
            "upstream": "10.0.0.2:9092",
            "client_id": {"hex": "6f7073fe"},
            "principal": "alice",
            "correlation_id": 41,
            "version": VERSION,
            "election_type": "PREFERRED",
            "partitions": [
                {"topic": "orders", "partitions": [0, 5, -1]},
                {"topic": pay.clone(), "partitions": [7]},
            ],
            "partition_count": 4,
            "verdict": decision.verdict.name(),
            "rules": ["protect-topic"],
            "refused": [{"topic": pay, "partitions": [7]}],
            "whole": false,
        })
    );
}

/// A line past its limit is given up as it is written, not made whole first: the line
/// of a request of the largest frame size would be several times that size. Within
/// the limit it is the line, byte for byte.
#[test]
fn a_line_past_its_limit_is_given_up() {
    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let partitions: Vec<i32> = (0..3000).collect();
    let topics = [TopicPartitionsData::new(b"orders", &partitions)];
    let frame = ElectLeadersRequestData {
        correlation_id: 1,
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let request = parse_request(&frame).unwrap();
    let policy = Policy::default();
    let decision = policy.decide(&request);
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let record = DecisionRecord::new(&conn, None, &policy, &request, &decision);
    let line = record.line();
    let within = record.line_within(line.len()).unwrap();
    // The time may have moved on between the two: the rest is the same.
    assert_eq!(within.len(), line.len());
    let after_time = |l: &str| l[l.find("\"listener\"").unwrap()..].to_owned();
    assert_eq!(after_time(&within), after_time(&line));
    assert_eq!(record.line_within(line.len() - 1), None);
    assert_eq!(record.line_within(100), None);
}

/// The audit line of a request whose client id and principal carry bidi controls:
/// they are written as JSON escapes, so that the line shows as its bytes are, and
/// read back as what the client sent.
#[test]
fn an_audit_line_escapes_the_characters_a_reader_cannot_see() {
    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let client_id = "ops\u{202e}nimda\u{2066}";
    let topic = "pay\u{200f}ments\u{1d173}";
    let topics = [TopicPartitionsData::new(topic.as_bytes(), &[0])];
    let frame = ElectLeadersRequestData {
        correlation_id: 1,
        client_id: Some(client_id.as_bytes()),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let request = parse_request(&frame).unwrap();
    let policy = Policy::default();
    let decision = policy.decide(&request);
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let principal = "CN=al\u{2067}ice";
    let line = DecisionRecord::new(&conn, Some(principal), &policy, &request, &decision).line();
    assert!(
        !line.chars().any(is_hidden),
        "a hidden character written as it is: {line:?}"
    );
    assert!(
        line.contains(r#""client_id":"ops\u202enimda\u2066""#),
        "{line}"
    );
    assert!(
        line.contains(r#""topic":"pay\u200fments\ud834\udd73""#),
        "{line}"
    );
    let got: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(got["client_id"], client_id);
    assert_eq!(got["principal"], principal);
    assert_eq!(got["partitions"][0]["topic"], topic);
}

#[test]
fn rfc3339_dates() {
    let at = |secs: u64, millis: u32| rfc3339(UNIX_EPOCH + Duration::new(secs, millis * 1_000_000));
    assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
    assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
    assert_eq!(at(1_767_225_599, 999), "2025-12-31T23:59:59.999Z");
    assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
    // Milliseconds are cut, not rounded.
    assert_eq!(
        rfc3339(UNIX_EPOCH + Duration::new(1_738_367_999, 123_999_999)),
        "2025-01-31T23:59:59.123Z"
    );
    // The limits: no panic, the nearest instant RFC 3339 can write.
    assert_eq!(at(u64::from(u32::MAX), 0), "2106-02-07T06:28:15.000Z");
    assert_eq!(at(253_402_300_799, 999), "9999-12-31T23:59:59.999Z");
    if let Some(far) = UNIX_EPOCH.checked_add(Duration::from_secs(1 << 40)) {
        assert_eq!(rfc3339(far), "9999-12-31T23:59:59.999Z");
    }
    if let Some(before) = UNIX_EPOCH.checked_sub(Duration::from_secs(86_400)) {
        assert_eq!(rfc3339(before), "1970-01-01T00:00:00.000Z");
    }
}

/// A writer that takes 20 ms a line and counts them; or, gated, none until let go.
struct Slow(
    Arc<std::sync::Mutex<usize>>,
    Option<std::sync::mpsc::Receiver<()>>,
);

impl Write for Slow {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(gate) = &self.1 {
            let _ = gate.recv();
        }
        std::thread::sleep(Duration::from_millis(20));
        *self.0.lock().unwrap() += buf.iter().filter(|&&b| b == b'\n').count();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn queue_lines(audit: &Audit, n: usize) {
    for i in 0..n {
        audit.record_line(format!("{{\"line\":{i}}}\n")).unwrap();
    }
}

#[test]
fn drain_waits_for_every_line_queued() {
    let written = Arc::new(std::sync::Mutex::new(0));
    let audit = Audit::start(
        AuditSink::Writer(Box::new(Slow(written.clone(), None))),
        4096,
    )
    .unwrap();
    queue_lines(&audit, 10);
    assert!(audit.drain(Duration::from_secs(10)));
    assert_eq!(
        *written.lock().unwrap(),
        10,
        "drained before the lines were written"
    );
}

#[test]
fn drain_gives_up_on_a_stalled_log() {
    let written = Arc::new(std::sync::Mutex::new(0));
    let (open, gate) = std::sync::mpsc::channel();
    let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
    let audit = Audit::start(sink, 4096).unwrap();
    queue_lines(&audit, 4);
    let started = std::time::Instant::now();
    assert!(!audit.drain(Duration::from_millis(300)));
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(open);
}

/// Issue 35, finding 5: the queue was bounded in lines and shared by all. Now a
/// connection whose own lines fill its share waits (on the runtime) until they are
/// written, while another connection's lines are still queued; a line larger than a
/// share is refused; the bytes queued never pass the bound, and are given back once
/// written.
#[tokio::test]
async fn a_connection_past_its_share_waits_for_its_own_lines_and_no_one_else_does() {
    let written = Arc::new(std::sync::Mutex::new(0));
    let (open, gate) = std::sync::mpsc::channel::<()>();
    let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
    let bound = 8 << 20;
    let audit = Arc::new(Audit::start(sink, bound).unwrap());
    assert_eq!(audit.queue.share, 1 << 20);
    let line = |n: usize| format!("{}\n", "x".repeat(n - 1));
    let flooder = audit.connection(FLOODER);
    let mut lines = 0;
    while flooder.queued.load(Ordering::Relaxed) < audit.queue.share {
        flooder.record_line(line(300_000)).unwrap();
        lines += 1;
    }
    assert_eq!(
        lines, 4,
        "the line that crosses the share is taken, no more"
    );
    assert_eq!(
        flooder.record_line(line(1000)),
        Err(AuditError::Stalled),
        "past its share without waiting"
    );
    assert!(
        flooder.ready().now_or_never().is_none(),
        "ready while its share is full"
    );
    let other = audit.connection("192.0.2.2".parse().unwrap());
    assert!(other.ready().now_or_never().is_some());
    other.record_line(line(300_000)).unwrap();
    assert_eq!(
        other.record_line(line((1 << 20) + 1)),
        Err(AuditError::TooLarge)
    );
    assert!(audit.queued_bytes() <= bound);
    assert_eq!(audit.queued_bytes(), 5 * 300_000);
    assert_eq!(audit.metrics().queued_bytes.get(), 5 * 300_000);
    // The log writes: the flooder's wait ends, on the runtime.
    drop(open);
    tokio::time::timeout(Duration::from_secs(30), flooder.ready())
        .await
        .expect("the wait ends once its lines are written");
    assert!(audit.drain(Duration::from_secs(30)));
    assert_eq!(*written.lock().unwrap(), 5);
    assert_eq!(audit.queued_bytes(), 0);
    assert_eq!(audit.metrics().queued_bytes.get(), 0);
    assert_eq!(audit.metrics().queued_lines.get(), 0);
}

const FLOODER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

/// Issue 35, finding 5: the share was a connection's, so one client with eight
/// connections filled the queue and everyone's elections were refused. Now every
/// connection from one address (an IPv6 client's /64) draws on one share, and another
/// address keeps its own.
#[tokio::test]
async fn connections_from_one_address_share_one_share() {
    let (open, gate) = std::sync::mpsc::channel::<()>();
    let sink = AuditSink::Writer(Box::new(Slow(Default::default(), Some(gate))));
    let audit = Arc::new(Audit::start(sink, 8 << 20).unwrap());
    let line = || format!("{}\n", "x".repeat(299_999));
    for (first, second) in [
        ("192.0.2.1", "192.0.2.1"),
        ("2001:db8:0:1::1", "2001:db8:0:1:ffff::2"),
        ("198.51.100.7", "::ffff:198.51.100.7"),
    ] {
        let first = audit.connection(first.parse().unwrap());
        while first.queued.load(Ordering::Relaxed) < audit.queue.share {
            first.record_line(line()).unwrap();
        }
        let second = audit.connection(second.parse().unwrap());
        assert_eq!(second.record_line(line()), Err(AuditError::Stalled));
        assert!(second.ready().now_or_never().is_none());
    }
    // Another /64, another address: a share of their own.
    for other in ["2001:db8:0:2::1", "192.0.2.2"] {
        let other = audit.connection(other.parse().unwrap());
        assert_eq!(other.record_line(line()), Ok(()));
    }
    assert!(audit.queued_bytes() <= 8 << 20);
    drop(open);
}

/// Issue 35, finding 5: audit lines were held outside `max_buffered_bytes`. Now each
/// line queued takes its bytes from the guard's budget until written, and a line the
/// budget has no room for is refused (the election with it), never held beyond it.
#[tokio::test]
async fn audit_lines_are_counted_in_the_buffer_budget() {
    let (open, gate) = std::sync::mpsc::channel::<()>();
    let written = Arc::new(std::sync::Mutex::new(0));
    let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
    let audit = Arc::new(Audit::start(sink, 8 << 20).unwrap());
    // 1 MiB for frames' remainders, about 1 MiB for everything else.
    let budget = crate::core::budget::Budget::new(2 << 20, 1 << 20);
    audit.count_in(&budget);
    let before = budget.available();
    let line = || format!("{}\n", "x".repeat(299_999));
    let conn = audit.connection(FLOODER);
    for _ in 0..3 {
        conn.record_line(line()).unwrap();
    }
    assert_eq!(budget.available(), before - 3 * 300_000);
    let other = audit.connection("192.0.2.2".parse().unwrap());
    assert_eq!(other.record_line(line()), Err(AuditError::NoMemory));
    assert_eq!(
        audit.queued_bytes(),
        3 * 300_000,
        "the refused line is not queued"
    );
    drop(open);
    assert!(audit.drain(Duration::from_secs(30)));
    assert_eq!(
        budget.available(),
        before,
        "written lines give their share back"
    );
    assert_eq!(other.record_line(line()), Ok(()));
}

/// The map of addresses keeps no more than about twice the addresses with a connection
/// open.
#[test]
fn closed_connections_leave_the_map_of_addresses() {
    let audit = Arc::new(Audit::start(AuditSink::Writer(Box::new(io::sink())), 1 << 20).unwrap());
    let kept = audit.connection(FLOODER);
    for n in 0..10_000u32 {
        drop(audit.connection(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + n))));
    }
    let size = audit.by_address.len();
    assert!(size <= 130, "{size} entries for one connection open");
    assert!(Arc::ptr_eq(&kept.queued, &audit.connection(FLOODER).queued));
}

/// A connection waiting for its share while the log writes nothing at all (stopped)
/// is not held for ever: after [`STALLED_AFTER`] its wait ends and its next line is
/// refused as stalled, so that the client is answered rather than left to time out.
#[tokio::test]
async fn a_wait_on_a_stopped_log_ends_in_a_refusal() {
    let written = Arc::new(std::sync::Mutex::new(0));
    let (open, gate) = std::sync::mpsc::channel::<()>();
    let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
    let audit = Arc::new(Audit::start(sink, 8 << 20).unwrap());
    let flooder = audit.connection(FLOODER);
    while flooder.queued.load(Ordering::Relaxed) < audit.queue.share {
        flooder
            .record_line(format!("{}\n", "x".repeat(299_999)))
            .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(60), flooder.ready())
        .await
        .expect("the wait ends while nothing is written");
    assert_eq!(*written.lock().unwrap(), 0);
    assert_eq!(
        flooder.record_line(String::from("{}\n")),
        Err(AuditError::Stalled)
    );
    drop(open);
}

/// A directory of its own for one test, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("kel-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Issue 35, finding 6: the audit file was never opened again, so after logrotate
/// moved it (its default `create` mode) every line went to the file moved, and after
/// a delete to a file no one can read. Now the next line goes to a new file at the
/// path; the lines before stay where they were.
#[test]
fn a_file_moved_or_deleted_is_opened_again_at_its_path() {
    let dir = Dir::new("audit-moved");
    let path = dir.0.join("audit.jsonl");
    let audit = Audit::start(AuditSink::open(&path).unwrap(), 4096).unwrap();
    queue_lines(&audit, 1);
    assert!(audit.drain(Duration::from_secs(10)));
    std::fs::rename(&path, dir.0.join("audit.jsonl.1")).unwrap();
    queue_lines(&audit, 2);
    assert!(audit.drain(Duration::from_secs(10)));
    assert_eq!(read(&dir.0.join("audit.jsonl.1")), "{\"line\":0}\n");
    assert_eq!(read(&path), "{\"line\":0}\n{\"line\":1}\n");

    std::fs::remove_file(&path).unwrap();
    queue_lines(&audit, 1);
    assert!(audit.drain(Duration::from_secs(10)));
    assert_eq!(read(&path), "{\"line\":0}\n");
    assert!(!audit.queue.failing.load(Ordering::Relaxed));
}

/// logrotate's `copytruncate`: the file is copied, then cut to nothing in place; the
/// next line goes at its start (appended), not after a hole where the old end was.
#[test]
fn a_file_truncated_in_place_is_written_from_its_start() {
    let dir = Dir::new("audit-truncated");
    let path = dir.0.join("audit.jsonl");
    let audit = Audit::start(AuditSink::open(&path).unwrap(), 4096).unwrap();
    queue_lines(&audit, 3);
    assert!(audit.drain(Duration::from_secs(10)));
    std::fs::copy(&path, dir.0.join("audit.jsonl.1")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    queue_lines(&audit, 1);
    assert!(audit.drain(Duration::from_secs(10)));
    assert_eq!(read(&path), "{\"line\":0}\n");
    assert_eq!(read(&dir.0.join("audit.jsonl.1")).lines().count(), 3);
}

/// SIGHUP: opened again at once, before any line; a path that cannot be opened (its
/// directory gone, or a directory itself) sets the log failing, so that the next
/// decision is refused; once it can be opened again, the writer does it by itself.
#[test]
fn reopen_at_once_and_fail_closed_when_it_cannot() {
    let dir = Dir::new("audit-reopen");
    let logs = dir.0.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let path = logs.join("audit.jsonl");
    let audit = Audit::start(AuditSink::open(&path).unwrap(), 4096).unwrap();
    std::fs::rename(&path, logs.join("audit.jsonl.1")).unwrap();
    assert!(audit.reopen(Duration::from_secs(10)).unwrap());
    assert!(path.exists(), "opened again before any line");

    std::fs::remove_dir_all(&logs).unwrap();
    let e = audit.reopen(Duration::from_secs(10)).unwrap_err();
    assert!(e.to_string().contains("audit.jsonl again"), "{e}");
    assert!(
        audit.queue.failing.load(Ordering::Relaxed),
        "elections refused"
    );

    // The path is now a directory: still failing, whatever is asked.
    std::fs::create_dir_all(&path).unwrap();
    assert!(audit.reopen(Duration::from_secs(10)).is_err());
    assert!(audit.queue.failing.load(Ordering::Relaxed));

    // Fixed: the writer opens it by itself (it tries every second).
    std::fs::remove_dir(&path).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while audit.queue.failing.load(Ordering::Relaxed) {
        assert!(std::time::Instant::now() < deadline, "never opened again");
        std::thread::sleep(Duration::from_millis(20));
    }
    queue_lines(&audit, 1);
    assert!(audit.drain(Duration::from_secs(10)));
    assert_eq!(read(&path), "{\"line\":0}\n");

    // Standard error is no file: nothing to open.
    let stderr = Audit::start(AuditSink::Stderr, 4096).unwrap();
    assert!(!stderr.reopen(Duration::from_secs(10)).unwrap());
}

/// Waits until the log is failing (a write failed and is being tried again), at most 10 s.
fn until_failing(audit: &Audit) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !audit.queue.failing.load(Ordering::Relaxed) {
        assert!(
            std::time::Instant::now() < deadline,
            "the write never failed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every line of `text` reads as JSON, and it ends with a newline.
fn whole_lines(text: &str) {
    assert!(text.is_empty() || text.ends_with('\n'), "{text:?}");
    for line in text.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not JSON: {line:?} in {text:?}"
        );
    }
}

/// A writer that takes `room` bytes, then fails once as a full disk does, then takes
/// everything: where nothing written can be taken back (standard output, a pipe).
struct FullOnce {
    out: Arc<std::sync::Mutex<Vec<u8>>>,
    room: Option<usize>,
}

impl Write for FullOnce {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let taken = match &mut self.room {
            Some(0) => {
                self.room = None;
                return Err(io::ErrorKind::StorageFull.into());
            }
            Some(room) => {
                let n = (*room).min(buf.len());
                *room -= n;
                n
            }
            None => buf.len(),
        };
        self.out.lock().unwrap().extend_from_slice(&buf[..taken]);
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Issue 42, item 6: a write that failed part way (a full disk) was tried again whole,
/// so the part written before was glued to the whole line: not JSON. Where nothing can be
/// taken back, the line now goes on from the first byte not taken: written once, whole.
#[test]
fn a_line_a_writer_took_part_of_goes_on_where_it_stopped() {
    let out = Arc::new(std::sync::Mutex::new(Vec::new()));
    let first = "{\"line\":0,\"pad\":\"xxxxxxxxxxxxxxxxxxxx\"}\n";
    let sink = AuditSink::Writer(Box::new(FullOnce {
        out: out.clone(),
        // All of the first line, 10 bytes of the second.
        room: Some(first.len() + 10),
    }));
    let audit = Audit::start(sink, 4096).unwrap();
    audit.record_line(first.to_owned()).unwrap();
    let second = "{\"line\":1,\"pad\":\"yyyyyyyyyyyyyyyyyyyy\"}\n";
    audit.record_line(second.to_owned()).unwrap();
    until_failing(&audit);
    assert!(audit.drain(Duration::from_secs(10)), "never written");
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    assert_eq!(text, format!("{first}{second}"));
    whole_lines(&text);
    assert!(!audit.queue.failing.load(Ordering::Relaxed));
}

/// Issue 42, item 6, for a file: the part of a line a full disk took is cut off again,
/// so the file holds whole lines only while the write is tried again, and the line once
/// it is written. A real disk cannot be filled on demand: the writer's fake full disk
/// (`fake_disk_full_after`) takes 7 bytes of the line and fails as one does.
#[test]
fn a_line_a_full_disk_took_part_of_is_cut_off_the_file() {
    let dir = Dir::new("audit-full-disk");
    let path = dir.0.join("audit.jsonl");
    let before = "{\"line\":\"before\"}\n";
    std::fs::write(&path, before).unwrap();
    let mut sink = AuditSink::open(&path).unwrap();
    if let AuditSink::File(file) = &mut sink {
        file.fake_disk_full_after = Some(7);
    }
    let audit = Audit::start(sink, 4096).unwrap();
    queue_lines(&audit, 1);
    until_failing(&audit);
    assert_eq!(read(&path), before, "the part written is taken back");
    assert!(audit.drain(Duration::from_secs(10)), "never written");
    assert_eq!(read(&path), format!("{before}{{\"line\":0}}\n"));
    whole_lines(&read(&path));
}

/// The environment variable that makes [`a_real_file_size_limit_leaves_whole_lines`]
/// the child that writes under the limit: the directory to write in.
#[cfg(unix)]
const FSIZE_CHILD: &str = "KEL_AUDIT_FSIZE_CHILD";

/// Issue 42, item 6, on a real file system's limit: the file size limit (`RLIMIT_FSIZE`,
/// which needs no root) lets a write take part of a line and refuses the rest (`EFBIG`),
/// as a full disk does. Run in a child of its own, started through `sh` with `SIGXFSZ`
/// ignored (else the kernel would end it), since the limit is the whole process's.
#[cfg(unix)]
#[test]
fn a_real_file_size_limit_leaves_whole_lines() {
    if let Some(dir) = std::env::var_os(FSIZE_CHILD) {
        return under_a_file_size_limit(Path::new(&dir));
    }
    let dir = Dir::new("audit-fsize");
    // This test's name as the harness knows it: its module path without the crate's.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::a_real_file_size_limit_leaves_whole_lines");
    let child = std::process::Command::new("sh")
        .args(["-c", r#"trap '' XFSZ && exec "$0" "$@""#])
        .arg(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(FSIZE_CHILD, &dir.0)
        .output();
    let out = match child {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: no sh to start the child with SIGXFSZ ignored: {e}");
            return;
        }
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 passed"), "the child ran no test: {said}");
}

/// The child's side: a line past the limit fails part way, the file keeps whole lines,
/// and the line is written whole once the limit is raised.
#[cfg(unix)]
fn under_a_file_size_limit(dir: &Path) {
    use rlimit::Resource;
    let path = dir.join("audit.jsonl");
    let audit = Audit::start(AuditSink::open(&path).unwrap(), 4096).unwrap();
    queue_lines(&audit, 1);
    assert!(audit.drain(Duration::from_secs(10)));
    let first = read(&path);
    let (soft, hard) = Resource::FSIZE.get().unwrap();
    // Room for 10 bytes of the next line.
    Resource::FSIZE.set(first.len() as u64 + 10, hard).unwrap();
    let long = format!("{{\"line\":\"{}\"}}\n", "x".repeat(100));
    audit.record_line(long.clone()).unwrap();
    until_failing(&audit);
    assert_eq!(read(&path), first, "the part written is taken back");
    Resource::FSIZE.set(soft, hard).unwrap();
    assert!(audit.drain(Duration::from_secs(10)), "never written");
    assert_eq!(read(&path), format!("{first}{long}"));
    whole_lines(&read(&path));
}

/// A FIFO made in `dir` by `mkfifo`, or None (said) where there is none to run.
#[cfg(unix)]
fn fifo(dir: &Path) -> Option<PathBuf> {
    let path = dir.join("audit.fifo");
    match std::process::Command::new("mkfifo").arg(&path).status() {
        Ok(status) if status.success() => Some(path),
        other => {
            eprintln!("skipped: mkfifo made no FIFO: {other:?}");
            None
        }
    }
}

/// Runs `open` on a thread of its own, and waits for it at most 10 s: an open that
/// waits for a reader fails the test rather than hangs it.
#[cfg(unix)]
fn at_once<T: Send + 'static>(open: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(open());
    });
    wait.recv_timeout(Duration::from_secs(10))
        .expect("the open waited: it must not wait for a reader")
}

/// Issue 42, item 6: an audit path that is a FIFO with no reader hung the start (and
/// `--check-config`) without a word, since opening a FIFO to write waits for a reader.
/// Now it is an error at once, naming the path; with a reader, lines arrive whole, and
/// the descriptor is blocking again (a line larger than the pipe's buffer is written
/// whole, not refused with `EAGAIN`).
#[cfg(unix)]
#[test]
fn a_fifo_with_no_reader_is_an_error_at_once_and_with_one_gets_whole_lines() {
    use std::io::Read;
    let dir = Dir::new("audit-fifo");
    let Some(path) = fifo(&dir.0) else { return };
    let opened = at_once({
        let path = path.clone();
        move || AuditSink::open(&path).map(drop)
    });
    let e = opened.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "audit log {} is a FIFO with no reader: start its reader first",
            path.display()
        )
    );
    let checked = at_once({
        let path = path.clone();
        move || AuditSink::check(&path)
    });
    assert_eq!(checked.unwrap_err().to_string(), e.to_string());

    // A reader: opening it to read waits for the guard's open, and the guard's no
    // longer waits for it.
    let reader = std::thread::spawn({
        let path = path.clone();
        move || {
            let mut text = String::new();
            std::fs::File::open(path)
                .and_then(|mut f| f.read_to_string(&mut text))
                .map(|_| text)
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let sink = loop {
        match AuditSink::open(&path) {
            Ok(sink) => break sink,
            // The reader thread has not opened it yet.
            Err(e) if std::time::Instant::now() < deadline => {
                assert_eq!(e.kind(), io::ErrorKind::NotConnected, "{e}");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    let audit = Audit::start(sink, 1 << 20).unwrap();
    // Past a pipe's buffer (64 KiB on Linux): a nonblocking descriptor would fail it.
    let long = format!("{{\"line\":\"{}\"}}\n", "x".repeat(200_000));
    audit.record_line(long.clone()).unwrap();
    queue_lines(&audit, 2);
    assert!(audit.drain(Duration::from_secs(10)));
    assert!(!audit.queue.failing.load(Ordering::Relaxed));
    drop(audit);
    let text = reader.join().unwrap().unwrap();
    assert_eq!(text, format!("{long}{{\"line\":0}}\n{{\"line\":1}}\n"));
}

/// A writer that keeps every byte, for reading the lines back.
fn kept() -> (Arc<std::sync::Mutex<Vec<u8>>>, AuditSink) {
    let out = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = AuditSink::Writer(Box::new(FullOnce {
        out: out.clone(),
        room: None,
    }));
    (out, sink)
}

/// Issue 42, item 6: a request whose audit line was larger than the client's share of
/// the queue was refused with no record at all. Now its line is shortened to fit: both
/// lists cut (the refused one given room first), `"truncated": true`, and how many
/// partitions each leaves out; what it shows is the start of each list, and shown and
/// left out add up to the request's.
#[test]
fn a_refusal_too_large_for_its_line_is_audited_shortened() {
    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let names: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("{i:03}-{}", "t".repeat(240)).into_bytes())
        .collect();
    let partitions: Vec<i32> = (0..100).map(|p| p * 1000).collect();
    let topics: Vec<_> = names
        .iter()
        .map(|n| TopicPartitionsData::new(n, &partitions))
        .collect();
    let frame = ElectLeadersRequestData {
        correlation_id: 7,
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let request = parse_request(&frame).unwrap();
    // Every other topic protected: a refusal of part of the request.
    let policy = Policy {
        protected_topics: names
            .iter()
            .step_by(2)
            .map(|n| n.clone().into_boxed_slice())
            .collect(),
        ..Default::default()
    };
    let decision = policy.decide(&request);
    assert_eq!(
        decision.verdict,
        crate::filters::elect::policy::Verdict::Trimmed
    );
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let record = DecisionRecord::new(&conn, None, &policy, &request, &decision);
    let full = record.line();
    let (out, sink) = kept();
    let audit = Arc::new(Audit::start(sink, 64 << 10).unwrap());
    let share = audit.queue.share;
    assert!(full.len() > share, "the whole line fits: {}", full.len());

    let client = audit.connection(FLOODER);
    assert_eq!(
        client.record(&conn, None, &policy, &request, &decision),
        Ok(())
    );
    assert!(audit.drain(Duration::from_secs(10)));
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    assert!(text.len() <= share, "{} bytes", text.len());
    whole_lines(&text);
    let line: serde_json::Value = serde_json::from_str(&text).unwrap();
    let whole: serde_json::Value = serde_json::from_str(&full).unwrap();
    assert_eq!(line["truncated"], true);
    for key in [
        "correlation_id",
        "partition_count",
        "verdict",
        "rules",
        "whole",
    ] {
        assert_eq!(line[key], whole[key], "{key}");
    }
    let count = |list: &serde_json::Value| -> u64 {
        list.as_array()
            .unwrap()
            .iter()
            .map(|t| t["partitions"].as_array().unwrap().len() as u64)
            .sum()
    };
    for list in ["partitions", "refused"] {
        let (shown, all) = (count(&line[list]), count(&whole[list]));
        assert!(shown > 0, "nothing of {list} shown");
        assert_eq!(
            shown + line["left_out"][list].as_u64().unwrap(),
            all,
            "{list}"
        );
        // The start of the list: each topic shown as it is, but the last in part.
        let (shown, all) = (
            line[list].as_array().unwrap(),
            whole[list].as_array().unwrap(),
        );
        let last = shown.len() - 1;
        assert_eq!(shown[..last], all[..last], "{list}");
        assert_eq!(shown[last]["topic"], all[last]["topic"]);
    }
}

/// Issue 42, item 5: a decision's line is at most [`MAX_LINE`] bytes, whatever the share
/// of the queue (here 1 MiB): the 8 MiB lines of refused 16 MiB requests took half of what
/// the guard's other clients waited for.
#[test]
fn a_decision_line_is_at_most_max_line_whatever_the_share() {
    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let partitions: Vec<i32> = (0..50_000).collect();
    let topics = [TopicPartitionsData::new(b"orders", &partitions)];
    let frame = ElectLeadersRequestData {
        correlation_id: 7,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let request = parse_request(&frame).unwrap();
    let policy = Policy {
        deny_unclean: true,
        ..Default::default()
    };
    let decision = policy.decide(&request);
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let full = DecisionRecord::new(&conn, None, &policy, &request, &decision).line();
    let (out, sink) = kept();
    let audit = Arc::new(Audit::start(sink, 8 << 20).unwrap());
    assert_eq!(audit.queue.share, 1 << 20);
    assert!(
        full.len() > MAX_LINE && full.len() < audit.queue.share,
        "{}",
        full.len()
    );
    let client = audit.connection(FLOODER);
    assert_eq!(
        client.record(&conn, None, &policy, &request, &decision),
        Ok(())
    );
    assert!(audit.drain(Duration::from_secs(10)));
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    assert!(text.len() <= MAX_LINE, "{} bytes", text.len());
    let line: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(line["truncated"], true);
    assert_eq!(line["partition_count"], 50_000);
}

/// A share smaller than even the shortened line (its fixed fields: a client id of 32 KiB
/// of control characters, each written as a six-byte escape) leaves `TooLarge`: the
/// only refusal still unaudited for its size.
#[test]
fn a_share_smaller_than_a_line_with_empty_lists_is_too_large() {
    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let client_id = vec![1u8; 32_000];
    let partitions: Vec<i32> = (0..100).collect();
    let topics = [TopicPartitionsData::new(b"orders", &partitions)];
    let frame = ElectLeadersRequestData {
        correlation_id: 7,
        client_id: Some(&client_id),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let request = parse_request(&frame).unwrap();
    let policy = Policy::default();
    let decision = policy.decide(&request);
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let record = DecisionRecord::new(&conn, None, &policy, &request, &decision);
    let full = record.line().len();
    assert!(full > 64 << 10);
    assert_eq!(record.line_fitted_to(64 << 10), None);
    // With room for the fixed fields but not the whole line: shortened, and what it
    // leaves out is counted.
    let line = record.line_fitted_to(full - 1).unwrap();
    assert!(line.len() < full);
    let got: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(got["truncated"], true);
    let shown = got["partitions"][0]["partitions"].as_array().unwrap().len() as u64;
    assert!(shown > 50, "{shown}");
    assert_eq!(shown + got["left_out"]["partitions"].as_u64().unwrap(), 100);
    assert_eq!(
        got["left_out"].as_object().unwrap().len(),
        1,
        "no refused list"
    );
    assert_eq!(got["client_id"].as_str().unwrap().len(), client_id.len());
}

/// Issue 42, item 6, for a leadership change: its line is capped at a hundred entries,
/// not in bytes, so a hundred entries of long names (each name 30,000 control
/// characters, six bytes each when escaped) made a line larger than a share, refused
/// unaudited. Now it is shortened as an ElectLeaders line is: the refusals, then the
/// entries, as many as fit, `"truncated": true`, and the counts left out (against the
/// request's entries, 150 here, of which the line never lists more than 100).
#[test]
fn a_leadership_change_too_large_for_its_line_is_audited_shortened() {
    use crate::filters::elect::policy::{Rule, Rules, Verdict};
    use crate::filters::leadership::{
        Api, ChangeDecision, ChangeRequest, Entry, Why, RESOURCE_TOPIC,
    };
    let names: Vec<Vec<u8>> = (0..150u8)
        .map(|i| {
            let mut name = vec![i];
            name.extend(std::iter::repeat_n(1u8, 3_000));
            name
        })
        .collect();
    let entries = names
        .iter()
        .map(|name| Entry {
            resource_type: RESOURCE_TOPIC,
            name: Some(name),
            topic_id: [0; 16],
            changes: Vec::new(),
            partitions: Vec::new(),
            replication_factor: -1,
            fewest_assigned: None,
            unknown_config: false,
        })
        .collect();
    let request = ChangeRequest {
        api: Api::DeleteTopics,
        version: 4,
        correlation_id: 9,
        client_id: Some(b"ops"),
        entries,
        validate_only: false,
        allow_replication_factor_change: false,
        broker_id: None,
    };
    let mut rules = Rules::default();
    rules.insert(Rule::ProtectTopic);
    let why = Why {
        rule: Rule::ProtectTopic,
        message: "the topic is protected",
    };
    let decision = ChangeDecision {
        verdict: Verdict::Refused,
        rules,
        refused: (0..150).map(|i| (i, why)).collect(),
        whole: None,
        rules_of: None,
    };
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let line = crate::filters::leadership::audit::line(&conn, None, &request, &decision);
    assert!(line.text().len() > 1 << 20);
    let (out, sink) = kept();
    let audit = Arc::new(Audit::start(sink, 1 << 20).unwrap());
    let client = audit.connection(FLOODER);
    assert_eq!(client.record_line(line), Ok(()));
    assert!(audit.drain(Duration::from_secs(10)));
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    assert!(
        text.len() <= audit.queue.share.min(MAX_LINE),
        "{} bytes",
        text.len()
    );
    whole_lines(&text);
    let got: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(got["truncated"], true);
    assert_eq!(got["entries"], 150);
    assert_eq!(got["verdict"], "refused");
    let changes = got["changes"].as_array().unwrap();
    assert!(
        !changes.is_empty() && changes.len() < 100,
        "{}",
        changes.len()
    );
    assert_eq!(
        changes[0]["name"].as_str().unwrap().as_bytes(),
        &names[0][..]
    );
    let refused = got["refused"].as_array().unwrap().len();
    assert!(refused > 0 && refused < 150, "{refused}");
    assert_eq!(
        got["left_out"],
        serde_json::json!({"changes": 150 - changes.len(), "refused": 150 - refused})
    );
}

/// Every line of `text` is the next of one chain under `key`: its seq one more than the
/// line before's, its prev that line's hash, its hash that of its bytes up to prev
/// (chain.rs); the lines, read.
fn one_chain(text: &str, key: Option<&ChainKey>) -> Vec<serde_json::Value> {
    let mut prev = serde_json::Value::Null;
    let mut lines = Vec::new();
    for (seq, line) in text.lines().enumerate() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["seq"], seq, "{line}");
        assert_eq!(value["prev"], prev, "{line}");
        let cut = line.rfind(",\"hash\":").unwrap();
        let hash: String = line_hash(key, format!("{}}}", &line[..cut]).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(value["hash"], hash.as_str(), "{line}");
        prev = value["hash"].clone();
        lines.push(value);
    }
    lines
}

/// Issue 45, item 2: lines queued from many threads at once, some refused as they are
/// queued, make one chain in the order they are written: no seq taken by a line refused,
/// none twice, each line naming the hash of the one written before it; each thread's
/// lines in the order it queued them.
#[test]
fn lines_queued_from_many_threads_make_one_chain_in_written_order() {
    const THREADS: usize = 8;
    const LINES: usize = 200;
    let dir = Dir::new("audit-chain-threads");
    let path = dir.0.join("audit.jsonl");
    let key = ChainKey::new(b"sixteen or more bytes of key").unwrap();
    let audit = Arc::new(
        Audit::start_chained(
            AuditSink::open(&path).unwrap(),
            8 << 20,
            "guard-0",
            Some(key.clone()),
        )
        .unwrap(),
    );
    let refused = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (audit, refused) = (audit.clone(), refused.clone());
            std::thread::spawn(move || {
                let client = audit.connection(format!("10.0.0.{t}").parse().unwrap());
                for i in 0..LINES {
                    client
                        .record_line(format!("{{\"thread\":{t},\"i\":{i}}}\n"))
                        .unwrap();
                    if i % 50 == 0 {
                        // Larger than a share: refused, and no seq taken.
                        let huge = format!("{{\"huge\":\"{}\"}}\n", "x".repeat(2 << 20));
                        assert_eq!(audit.record_line(huge), Err(AuditError::TooLarge));
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(audit.drain(Duration::from_secs(10)));
    assert_eq!(refused.load(Ordering::Relaxed), THREADS * 4);
    let lines = one_chain(&read(&path), Some(&key));
    assert_eq!(lines.len(), 1 + THREADS * LINES);
    assert_eq!(lines[0]["event"], "chain-start");
    assert_eq!(lines[0]["algorithm"], "hmac-sha256");
    let chain = lines[0]["chain"].clone();
    let mut next = [0u64; THREADS];
    for line in &lines[1..] {
        assert_eq!(line["replica"], "guard-0");
        assert_eq!(line["chain"], chain);
        let t = line["thread"].as_u64().unwrap() as usize;
        assert_eq!(line["i"], next[t]);
        next[t] += 1;
    }
    // Without the key the same lines do not verify.
    let text = read(&path);
    let unkeyed = std::panic::catch_unwind(|| one_chain(&text, None));
    assert!(unkeyed.is_err());
}

/// A line a full disk took part of is written again with the same chain fields: no seq
/// skipped, none twice (the first line written is the chain's start).
#[test]
fn a_line_written_again_after_a_full_disk_keeps_its_place_in_the_chain() {
    let dir = Dir::new("audit-chain-full-disk");
    let path = dir.0.join("audit.jsonl");
    let mut sink = AuditSink::open(&path).unwrap();
    if let AuditSink::File(file) = &mut sink {
        file.fake_disk_full_after = Some(7);
    }
    let audit = Audit::start_chained(sink, 4096, "guard-0", None).unwrap();
    queue_lines(&audit, 2);
    assert!(audit.drain(Duration::from_secs(10)), "never written");
    let text = read(&path);
    whole_lines(&text);
    let lines = one_chain(&text, None);
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0]["event"], "chain-start");
    assert_eq!(lines[2]["line"], 1);
}

/// A decision's line shortened to [`MAX_LINE`] keeps its chain fields: they are added
/// after it is cut, a few hundred bytes past it.
#[test]
fn a_shortened_line_keeps_its_chain_fields() {
    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let partitions: Vec<i32> = (0..50_000).collect();
    let topics = [TopicPartitionsData::new(b"orders", &partitions)];
    let frame = ElectLeadersRequestData {
        correlation_id: 7,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let request = parse_request(&frame).unwrap();
    let policy = Policy {
        deny_unclean: true,
        ..Default::default()
    };
    let decision = policy.decide(&request);
    let conn = ConnInfo {
        client: "127.0.0.1:5000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "10.0.0.2:9092".parse().unwrap(),
    };
    let (out, sink) = kept();
    let audit = Audit::start_chained(sink, 8 << 20, "guard-0", None).unwrap();
    assert_eq!(
        audit.record(&conn, None, &policy, &request, &decision),
        Ok(())
    );
    assert!(audit.drain(Duration::from_secs(10)));
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    let lines = one_chain(&text, None);
    assert_eq!(lines[1]["truncated"], true);
    assert_eq!(lines[1]["seq"], 1);
    let decision_line = text.lines().nth(1).unwrap();
    assert!(
        decision_line.len() <= MAX_LINE + MAX_CHAIN_FIELDS,
        "{}",
        decision_line.len()
    );
}
