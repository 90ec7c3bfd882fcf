//! Issue 35, findings 4 and 6, through a running guard: a reload that would weaken the
//! rules keeps them, and the audit file follows logrotate.
//!
//! Finding 4: SIGHUP with an empty or truncated config file dropped every rule while the
//! log said its rules were in force. A reload is what `elect-leaders proxy` does on
//! SIGHUP: [`ConfigFile::read_again`], then [`Reloader::apply`]. Each refused reload is
//! proved by a decision: an election of the protected topic is still refused after it.
//!
//! Finding 6: the audit file was never opened again; after logrotate moved it, every line
//! went to the file moved (or a deleted one) while elections kept passing.
//!
//! The upstream is a **fake broker** that answers every request with its correlation id
//! alone: the guard forwards the answers of requests it let through without parsing them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kafka_elect_leaders::{
    parse_response, ElectLeadersRequestData, ElectionType, EncodeRequestExt, ErrorCode,
    TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{
    AuditTarget, Config, ConfigFile, Guard, ReloadError, Reloader, Route,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

/// Answers every frame with its correlation id alone.
async fn answering_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = socket.into_split();
                loop {
                    let mut size = [0u8; 4];
                    if r.read_exact(&mut size).await.is_err() {
                        return;
                    }
                    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
                    if r.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let mut answer = 4i32.to_be_bytes().to_vec();
                    answer.extend_from_slice(&body[4..8]);
                    if w.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A directory of its own for one test, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("kel-reload-{name}-{}", std::process::id()));
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

/// A guard running the configuration of the file at `path`, with one route to `broker`;
/// its listener and its reloader. It stops when the test's runtime does.
async fn guard_from(path: &Path, broker: SocketAddr) -> (SocketAddr, Reloader) {
    let mut config = Config::default();
    ConfigFile::read(path).unwrap().apply(&mut config);
    config.routes = vec![Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: broker,
    }];
    guard(config).await
}

async fn guard(config: Config) -> (SocketAddr, Reloader) {
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let reloader = guard.reloader();
    tokio::spawn(guard.run(std::future::pending()));
    (listen, reloader)
}

/// What SIGHUP does with `--config path` (no option on the command line): the file read
/// again, put in force; the error as the log would say it.
fn reload(reloader: &Reloader, path: &Path) -> Result<Vec<String>, String> {
    let file = ConfigFile::read_again(path).map_err(|e| e.to_string())?;
    let mut config = Config::default();
    file.apply(&mut config);
    reloader
        .apply(&config)
        .map(|reloaded| reloaded.weakened)
        .map_err(|e| e.to_string())
}

/// A PREFERRED election of `topic` partition 0 on a new connection: None when it was let
/// through (the broker's bare answer), else the guard's refusal message.
async fn elect(listen: SocketAddr, topic: &[u8]) -> Option<String> {
    let topics = [TopicPartitionsData::new(topic, &[0])];
    let request = ElectLeadersRequestData {
        correlation_id: 9,
        client_id: Some(b"reload-test"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&request).await.unwrap();
    let mut size = [0u8; 4];
    timeout(Duration::from_secs(10), client.read_exact(&mut size))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let mut frame = size.to_vec();
    frame.resize(4 + i32::from_be_bytes(size) as usize, 0);
    client.read_exact(&mut frame[4..]).await.unwrap();
    if frame.len() == 8 {
        return None;
    }
    let response = parse_response(&frame, 2).unwrap();
    let result = response.replica_election_results().first().unwrap();
    let partition = result.partition_result().first().unwrap();
    assert_eq!(partition.error_code(), ErrorCode::POLICY_VIOLATION);
    Some(String::from_utf8_lossy(partition.error_message().unwrap()).into_owned())
}

const RULES: &str = "[rules]\ndeny-unclean = true\nprotect-topic = [\"payments\", \"orders\"]\n\
                     max-partitions = 10\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_would_weaken_the_rules_keeps_them() {
    let dir = Dir::new("weaker");
    let path = dir.0.join("guard.toml");
    std::fs::write(&path, RULES).unwrap();
    let (listen, reloader) = guard_from(&path, answering_broker().await).await;
    let protected = |m: Option<String>| {
        m.is_some_and(|m| m.contains("the leaders of this topic are protected"))
    };
    assert!(protected(elect(listen, b"payments").await));
    assert_eq!(elect(listen, b"logs").await, None);

    // Empty: refused before it is looked at.
    std::fs::write(&path, "").unwrap();
    let e = reload(&reloader, &path).unwrap_err();
    assert!(e.contains("the file is empty"), "{e}");
    assert!(protected(elect(listen, b"payments").await), "after {e}");

    // Cut mid-table: it does not parse; the place is named.
    std::fs::write(&path, &RULES[..45]).unwrap();
    let e = reload(&reloader, &path).unwrap_err();
    assert!(e.contains("guard.toml:3:"), "{e}");
    assert!(protected(elect(listen, b"payments").await), "after {e}");

    // Cut at a line boundary: it parses, with fewer rules. Refused, naming them.
    std::fs::write(&path, &RULES[..RULES.find("protect").unwrap()]).unwrap();
    let e = reload(&reloader, &path).unwrap_err();
    assert!(
        e.ends_with(
            "its rules are weaker than those in force, and it does not say \
             allow-weaker-rules = true: protect-topic \"orders\", \"payments\" dropped; \
             max-partitions 10 dropped"
        ),
        "{e}"
    );
    assert!(protected(elect(listen, b"payments").await), "after {e}");

    // One protected topic fewer: refused.
    std::fs::write(&path, RULES.replace("\"payments\", ", "")).unwrap();
    let e = reload(&reloader, &path).unwrap_err();
    assert!(e.ends_with(": protect-topic \"payments\" dropped"), "{e}");
    assert!(protected(elect(listen, b"payments").await), "after {e}");

    // Stricter: applied at once, nothing dropped.
    std::fs::write(&path, RULES.replace("\"orders\"", "\"orders\", \"logs\"")).unwrap();
    assert_eq!(reload(&reloader, &path), Ok(vec![]));
    assert!(protected(elect(listen, b"logs").await));

    // Said so: applied, and what it dropped is returned for the log.
    std::fs::write(
        &path,
        format!(
            "allow-weaker-rules = true\n{}",
            RULES.replace("\"payments\", ", "")
        ),
    )
    .unwrap();
    assert_eq!(
        reload(&reloader, &path),
        Ok(vec![
            "protect-topic \"logs\", \"payments\" dropped".to_owned()
        ])
    );
    assert_eq!(elect(listen, b"payments").await, None);
    assert!(protected(elect(listen, b"orders").await));
}

/// The errors a reload returns, by kind: a weaker policy from code (no file) is refused
/// the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_refuses_a_weaker_policy_unless_allowed() {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: answering_broker().await,
    });
    config.policy.deny_unclean = true;
    let (_, reloader) = guard(config.clone()).await;
    let mut weaker = config.clone();
    weaker.policy.deny_unclean = false;
    match reloader.apply(&weaker) {
        Err(ReloadError::Weaker(dropped)) => assert_eq!(dropped, ["deny-unclean dropped"]),
        other => panic!("{other:?}"),
    }
    weaker.allow_weaker_rules = true;
    let reloaded = reloader.apply(&weaker).unwrap();
    assert_eq!(reloaded.weakened, ["deny-unclean dropped"]);
    assert!(reloaded.restart.is_empty());
    // Back to the stricter rules: nothing to allow.
    assert!(reloader.apply(&config).unwrap().weakened.is_empty());
}

/// Decisions' lines of the file at `path` (none when it is missing): every line but the
/// audit chain's start, which the guard writes first at each start.
fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.contains("\"event\":\"chain-start\""))
        .count()
}

/// Waits until the file at `path` has `n` lines (the writer thread writes after the
/// answer may have gone out); panics after 10 s.
async fn wait_lines(path: &Path, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while lines(path) < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} has {} lines, not {n}",
            path.display(),
            lines(path)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn audited_guard(path: &Path) -> (SocketAddr, Reloader) {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: answering_broker().await,
    });
    config
        .policy
        .protected_topics
        .insert(b"payments"[..].into());
    config.audit = AuditTarget::File(path.to_owned());
    guard(config).await
}

/// logrotate's default `create` mode moves the file away and expects the writer to open a
/// new one; a deleted file the same. Each election's line lands in a file at the path; the
/// lines before stay in the file moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_file_follows_a_move_and_a_delete() {
    let dir = Dir::new("audit-rotate");
    let path = dir.0.join("audit.jsonl");
    let rotated = dir.0.join("audit.jsonl.1");
    let (listen, _reloader) = audited_guard(&path).await;
    assert_eq!(elect(listen, b"orders").await, None);
    wait_lines(&path, 1).await;

    std::fs::rename(&path, &rotated).unwrap();
    assert_eq!(elect(listen, b"orders").await, None);
    wait_lines(&path, 1).await;
    assert_eq!(lines(&rotated), 1, "the line went to the file moved");

    std::fs::remove_file(&path).unwrap();
    assert!(elect(listen, b"payments").await.is_some());
    wait_lines(&path, 1).await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"verdict\":\"refused\""), "{text}");
    assert_eq!(lines(&rotated), 1);
}

/// SIGHUP (`Reloader::reopen_audit`) opens the file again at once; when it cannot be
/// opened (its directory removed, or the path made a directory), the next election is
/// refused, failing closed; once the path can be opened, elections pass again, and are
/// audited there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_file_that_cannot_be_opened_again_refuses_elections() {
    let dir = Dir::new("audit-gone");
    let logs = dir.0.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let path = logs.join("audit.jsonl");
    let (listen, reloader) = audited_guard(&path).await;
    let reopen = |reloader: Reloader| async move {
        tokio::task::spawn_blocking(move || reloader.reopen_audit(Duration::from_secs(10)))
            .await
            .unwrap()
    };
    assert_eq!(elect(listen, b"orders").await, None);
    wait_lines(&path, 1).await;

    std::fs::rename(&path, logs.join("audit.jsonl.1")).unwrap();
    assert!(reopen(reloader.clone()).await.unwrap());
    assert!(path.exists(), "opened again before any election");

    std::fs::remove_dir_all(&logs).unwrap();
    let e = reopen(reloader.clone()).await.unwrap_err();
    assert!(e.to_string().contains("audit.jsonl again"), "{e}");
    let refused = elect(listen, b"orders").await;
    assert!(
        refused
            .as_deref()
            .is_some_and(|m| m.contains("the audit log cannot be written")),
        "{refused:?}"
    );

    std::fs::create_dir_all(&path).unwrap();
    assert!(reopen(reloader.clone()).await.is_err());
    assert!(elect(listen, b"orders").await.is_some());

    // The path can be opened again: the writer does it by itself within a second or so.
    std::fs::remove_dir(&path).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while elect(listen, b"orders").await.is_some() {
        assert!(tokio::time::Instant::now() < deadline, "still refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_lines(&path, 1).await;
}
