//! `decode`, `scan` and `summary` with `--interface lo`: a live capture through libpcap of
//! TCP exchanges this test makes itself on 127.0.0.1 (a tiny listener, a client sending an
//! ElectLeaders request written by the codec, the listener answering with a response),
//! read as they happen; and how a capture ends on a signal. Capturing needs root or
//! CAP_NET_RAW: without it, each test says so in one line and skips.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectLeadersResponseData, ElectionType, EncodeRequest, EncodeResponse,
    ErrorCode, PartitionResultData, ReplicaElectionResultData, TopicPartitionsData,
};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_elect-leaders");
/// How long to wait for anything the capture should show, at most: a bound, not a timing
/// asserted on.
const PATIENCE: Duration = Duration::from_secs(60);

fn request(correlation_id: i32) -> Vec<u8> {
    let partitions = [2, 0];
    let topics = [TopicPartitionsData::new(b"live-topic", &partitions)];
    let data = ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"live-test"),
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        timeout_ms: 12_345,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

fn response(correlation_id: i32) -> Vec<u8> {
    let partitions = [
        PartitionResultData {
            partition_id: 2,
            error_code: ErrorCode(0),
            error_message: None,
            tagged_fields: &[],
        },
        PartitionResultData {
            partition_id: 0,
            error_code: ErrorCode(84),
            error_message: Some(b"Leader election not needed for topic partition."),
            tagged_fields: &[],
        },
    ];
    let results = [ReplicaElectionResultData {
        topic: b"live-topic",
        partition_result: &partitions,
        tagged_fields: &[],
    }];
    let data = ElectLeadersResponseData {
        correlation_id,
        throttle_time_ms: 7,
        replica_election_results: &results,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

/// The objects `decode` prints for these bytes read as a file (no capture), each without
/// "source": what the live capture must print too.
fn decoded_offline(frame: &[u8], args: &[&str]) -> Value {
    let mut child = Command::new(BIN)
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(frame).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The capturing process, killed when the test ends, also on failure, and the first line
/// it wrote on stderr (what it captures, and how).
struct Capturing(Child, String);

impl Drop for Capturing {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines read from a pipe on a thread, as they come.
fn lines_of(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// `elect-leaders COMMAND --interface lo` with `args`, capturing on `port`, once it says
/// it captures: the process, its stdout (unread: `None` when `read_stdout` is false, the
/// pipe left to fill) and stderr, line by line. `None` (and one line saying so) where
/// this machine cannot capture.
#[allow(clippy::type_complexity)]
fn capture(
    command: &str,
    port: u16,
    args: &[&str],
    read_stdout: bool,
) -> Option<(
    Capturing,
    Option<mpsc::Receiver<String>>,
    mpsc::Receiver<String>,
)> {
    let filter = format!("tcp port {port}");
    let port_arg = port.to_string();
    let child = Command::new(BIN)
        .args([command, "--interface", "lo", "--filter", &filter])
        .args(["--port", &port_arg])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut capturing = Capturing(child, String::new());
    // The first line on stderr says whether it captures.
    let err = lines_of(capturing.0.stderr.take().unwrap());
    let first = err
        .recv_timeout(PATIENCE)
        .expect("--interface says something on stderr");
    capturing.1.clone_from(&first);
    if first.contains("cannot capture") {
        eprintln!("skipped: cannot capture on lo here (needs root or CAP_NET_RAW): {first}");
        return None;
    }
    assert!(first.contains("interface lo: capturing"), "{first}");
    let stdout = capturing.0.stdout.take().unwrap();
    let out = if read_stdout {
        Some(lines_of(stdout))
    } else {
        // Kept open (by the child's handle, closed when it is dropped), never read.
        capturing.0.stdout = Some(stdout);
        None
    };
    Some((capturing, out, err))
}

/// One ElectLeaders exchange with `listener` (request `correlation_id` in two writes,
/// reassembled by the capture; the response; both sides closed): the frames sent.
fn exchange(listener: &TcpListener, correlation_id: i32) -> (Vec<u8>, Vec<u8>) {
    let port = listener.local_addr().unwrap().port();
    let (req, resp) = (request(correlation_id), response(correlation_id));
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    client.set_nodelay(true).unwrap();
    client.write_all(&req[..9]).unwrap();
    client.flush().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    client.write_all(&req[9..]).unwrap();
    let mut got = vec![0; req.len()];
    conn.read_exact(&mut got).unwrap();
    assert_eq!(got, req);
    conn.write_all(&resp).unwrap();
    let mut answer = vec![0; resp.len()];
    client.read_exact(&mut answer).unwrap();
    assert_eq!(answer, resp);
    (req, resp)
}

/// Sends `signal` (INT, TERM) to the capture and waits for its end, at most PATIENCE.
fn stop(capturing: &mut Capturing, signal: &str) -> std::process::ExitStatus {
    let pid = capturing.0.id().to_string();
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = capturing.0.try_wait().unwrap() {
            return status;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the capture did not end on SIG{signal}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn live_capture_on_loopback_decodes_the_exchange_it_sees() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some((mut capturing, out_rx, err_rx)) = capture("decode", port, &[], true) else {
        return;
    };
    let out_rx = out_rx.unwrap();

    let (req, resp) = exchange(&listener, 41);

    // Both objects appear while the capture still runs (flushed per frame).
    let mut objects = Vec::new();
    while objects.len() < 2 {
        let line = out_rx
            .recv_timeout(PATIENCE)
            .expect("two objects from the live capture");
        objects.push(serde_json::from_str::<Value>(&line).unwrap());
    }

    // Ctrl-C (SIGINT) ends it cleanly: exit status 0, nothing more on stdout. (The e2e
    // test ends its capture with SIGTERM.)
    let status = stop(&mut capturing, "INT");
    let rest: Vec<String> = out_rx.try_iter().collect();
    let errors: Vec<String> = err_rx.try_iter().collect();
    assert!(status.success(), "{status:?}, stderr: {errors:?}");
    assert!(rest.is_empty(), "{rest:?}");
    assert!(errors.is_empty(), "{errors:?}");

    // The objects are those of the frames sent, as decode reads them from a file, with
    // where they were seen.
    let mut expected = [
        decoded_offline(&req, &[]),
        decoded_offline(&resp, &["--response", "--version", "2"]),
    ];
    assert_eq!(expected[0]["correlation_id"], 41);
    assert_eq!(expected[0]["client_id"], "live-test");
    assert_eq!(
        expected[1]["replica_election_results"][0]["topic"],
        "live-topic"
    );
    for (object, want) in objects.iter().zip(expected.iter_mut()) {
        let source = &object["source"];
        assert_eq!(source["connection"], 1, "{object}");
        let mut object = object.clone();
        let got = object.as_object_mut().unwrap();
        got.remove("source");
        // Members a capture adds to a response (its request's API): compared as they are.
        for key in ["api_key", "api_name"] {
            if let (Some(v), Some(w)) = (got.get(key), want.get(key)) {
                assert_eq!(v, w, "{key}");
            }
        }
        let want = want.as_object_mut().unwrap();
        for key in ["api_key", "api_name"] {
            got.remove(key);
            want.remove(key);
        }
        assert_eq!(&Value::Object(got.clone()), &Value::Object(want.clone()));
    }
    let (req_src, resp_src) = (&objects[0]["source"], &objects[1]["source"]);
    assert_eq!(req_src["dst"], format!("127.0.0.1:{port}"));
    assert_eq!(resp_src["src"], format!("127.0.0.1:{port}"));
    assert_eq!(req_src["stream_offset"], 0);
    assert_eq!(resp_src["request_frame"], 1, "{resp_src}");
    assert!(resp_src["latency_us"].is_u64(), "{resp_src}");
}

#[test]
fn scan_and_summary_read_a_live_exchange_as_decode_does() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some((mut scan, scan_out, _)) = capture("scan", port, &["--json"], true) else {
        return;
    };
    let Some((mut summary, summary_out, _)) = capture("summary", port, &["--json"], true) else {
        return;
    };
    let (req, _) = exchange(&listener, 42);
    let (_, resp) = exchange(&listener, 43);

    // scan: each request with its response, as they are seen (flushed per line).
    let scan_out = scan_out.unwrap();
    let mut pairs = Vec::new();
    while pairs.len() < 2 {
        let line = scan_out
            .recv_timeout(PATIENCE)
            .expect("scan --interface lists both exchanges while it runs");
        pairs.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    for (pair, id) in pairs.iter().zip([42, 43]) {
        assert_eq!(pair["request"]["correlation_id"], id, "{pair}");
        assert_eq!(pair["response"]["correlation_id"], id, "{pair}");
        assert_eq!(pair["request"]["client_id"], "live-test", "{pair}");
    }
    assert_eq!(
        pairs[0]["request"]["topic_partitions"],
        decoded_offline(&req, &[])["topic_partitions"]
    );
    let status = stop(&mut scan, "INT");
    assert!(status.success(), "{status:?}");

    // summary: printed when the capture ends, counting what was seen.
    let status = stop(&mut summary, "TERM");
    assert!(status.success(), "{status:?}");
    let text: Vec<String> = summary_out.unwrap().try_iter().collect();
    let counted: Value = serde_json::from_str(&text.join("\n")).unwrap();
    let offline = decoded_offline(&resp, &["--response", "--version", "2"]);
    assert_eq!(
        offline["replica_election_results"][0]["topic"],
        "live-topic"
    );
    let text = counted.to_string();
    assert!(text.contains("live-topic"), "{text}");
    assert!(text.contains("live-test"), "{text}");
    assert!(
        text.contains("ELECTION_NOT_NEEDED"),
        "the outcomes are counted by name: {text}"
    );
}

/// A first Ctrl-C ends the capture cleanly, which takes as long as writing out what was
/// captured: with nobody reading standard output, for ever. A second one ends it at once,
/// with 128 + the signal's number.
#[test]
fn a_second_signal_ends_a_capture_stuck_on_its_output() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some((mut capturing, _, _)) = capture("decode", port, &[], false) else {
        return;
    };
    // More objects than a pipe holds (64 KiB; an object is about 500 bytes here).
    for id in 0..400 {
        exchange(&listener, id);
    }
    let pid = capturing.0.id().to_string();
    let int = |pid: &str| {
        assert!(Command::new("kill")
            .args(["-INT", pid])
            .status()
            .unwrap()
            .success())
    };
    int(&pid);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        capturing.0.try_wait().unwrap().is_none(),
        "the capture waits on its full output"
    );
    let status = stop(&mut capturing, "INT");
    assert_eq!(status.code(), Some(128 + 2), "{status:?}");
}

/// Issue 36, finding 7: with libpcap's immediate mode always on, Linux gave the capture a
/// ring of slots each as large as the largest loopback packet (32 in the 2 MiB buffer),
/// and a burst of small packets overran it (thousands dropped of a 40,000-write flood,
/// where tcpdump in its default mode dropped none: BENCHMARKS.md, "Live capture"). Now it
/// is set up as tcpdump's: immediate mode only for decode or scan printing to a terminal,
/// the 2 MiB buffer shared by packets of any size. A burst of BURST elections, each
/// request and each answer written on its own (with the ACKs, well under 2 MiB in the
/// buffer), then fits whole however slowly the capture reads it: nothing is dropped or
/// missing, and every election is counted.
#[test]
fn a_burst_that_fits_in_libpcap_s_buffer_is_not_dropped() {
    const BURST: i32 = 1000;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some((mut capturing, out, err)) = capture("summary", port, &["--json"], true) else {
        return;
    };
    assert!(
        capturing.1.contains("buffer 2MiB, immediate mode off"),
        "{}",
        capturing.1
    );
    // The broker: answers each request as it is read.
    let broker = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_nodelay(true).unwrap();
        let mut head = [0u8; 12];
        while conn.read_exact(&mut head).is_ok() {
            let size = i32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
            let mut rest = vec![0u8; size - 8];
            conn.read_exact(&mut rest).unwrap();
            let id = i32::from_be_bytes(head[8..12].try_into().unwrap());
            conn.write_all(&response(id)).unwrap();
        }
    });
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    client.set_nodelay(true).unwrap();
    let mut answers = client.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; response(1).len() * BURST as usize];
        answers.read_exact(&mut buf).unwrap();
    });
    for id in 0..BURST {
        client.write_all(&request(id)).unwrap();
    }
    reader.join().unwrap();
    drop(client);
    broker.join().unwrap();
    let status = stop(&mut capturing, "INT");
    let said: Vec<String> = err.iter().collect();
    assert!(
        !said
            .iter()
            .any(|l| l.contains("dropped") || l.contains("missing") || l.contains("not a")),
        "{status:?}: {said:?}"
    );
    assert!(status.success(), "{status:?}: {said:?}");
    let counted: Value =
        serde_json::from_str(&out.unwrap().iter().collect::<Vec<_>>().join("\n")).unwrap();
    assert_eq!(counted["elect_leaders"]["requests"], BURST, "{counted}");
    assert_eq!(counted["elect_leaders"]["responses"], BURST, "{counted}");
}

/// `--buffer-size` and `--immediate-mode` set libpcap up as they say (the first line says
/// how), and are refused without `--interface` or below a slot for the largest packet.
#[test]
fn buffer_size_and_immediate_mode_are_as_given() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    if let Some((capturing, _, _)) = capture(
        "decode",
        port,
        &["--buffer-size", "8MiB", "--immediate-mode"],
        true,
    ) {
        assert!(
            capturing.1.contains("buffer 8MiB, immediate mode on"),
            "{}",
            capturing.1
        );
    }
    for (args, says) in [
        (
            &["decode", "--buffer-size", "8MiB", "-"][..],
            "--buffer-size goes with --interface",
        ),
        (
            &["decode", "--immediate-mode", "-"][..],
            "--immediate-mode goes with --interface",
        ),
        (
            &["decode", "--interface", "lo", "--buffer-size", "64KiB"][..],
            "--buffer-size",
        ),
        (
            &["decode", "--interface", "lo", "--buffer-size", "2MB"][..],
            "--buffer-size",
        ),
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_bad_filter_names_the_option_and_libpcap_says_why() {
    let out = Command::new(BIN)
        .args(["decode", "--interface", "lo", "--filter", "tcp portt 9"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("cannot capture") {
        eprintln!("skipped: cannot capture on lo here (needs root or CAP_NET_RAW): {err}");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("elect-leaders: --filter 'tcp portt 9': "),
        "{err}"
    );
    assert!(err.contains("syntax error"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn an_interface_that_does_not_exist_is_one_line_naming_it() {
    let out = Command::new(BIN)
        .args(["decode", "--interface", "no-such-if0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("elect-leaders: --interface no-such-if0: cannot capture"),
        "{err}"
    );
}

#[test]
fn without_the_privilege_the_error_says_which_in_one_line() {
    // Run as nobody, without capabilities: only possible from root, with setpriv.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !root || !setpriv {
        eprintln!("skipped: needs root and setpriv to drop the capture privilege");
        return;
    }
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .args([BIN, "decode", "--interface", "lo"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("elect-leaders: --interface lo: cannot capture (live capture needs root or the CAP_NET_RAW capability): "),
        "{err}"
    );
}
