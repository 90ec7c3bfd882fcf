//! Issue 45, item 5: replicas that agree. Each guard exports the hash of its policy
//! (`policy_info{hash}`), its generation and its reloads by result, so that an alert fires
//! when replicas differ. The hash is canonical: two guards from the same rules show the
//! same one, whatever the file's formatting, comments or the order of its lists and
//! tables; a rule that differs changes it.

use std::net::SocketAddr;
use std::time::Duration;

use kafka_elect_leaders_proxy::elect::policy_hash;
use kafka_elect_leaders_proxy::{Config, ConfigFile, Guard, ReloadError, Reloader, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

const RULES: &str = r#"
[rules]
deny-unclean = true
protect-topic = ["payments", "orders", "ledger"]
allow-principal = ["alice", "ops"]
max-partitions = 1000

[rules.principal.ops]
deny-unclean = false
max-partitions = "none"

[rules.principal.alice]
protect-topic = ["ledger"]
"#;

/// [`RULES`] again: other comments and spacing, inline tables, every list and table in
/// another order.
const RULES_REFORMATTED: &str = r#"
# The same rules, written otherwise.
[rules]
max-partitions = 1_000          # the keys in another order
allow-principal = [ "ops", "alice" ]
protect-topic = [
    "ledger",
    "payments",
    "orders",
]
deny-unclean = true
principal.alice = { protect-topic = ["ledger"] }
principal.ops = { max-partitions = "none", deny-unclean = false }
"#;

fn config(text: &str) -> Config {
    let file = ConfigFile::parse(text, std::path::Path::new(".")).unwrap();
    let mut config = Config::default();
    file.apply(&mut config);
    config
}

fn hash(text: &str) -> String {
    policy_hash(&config(text).policy)
}

#[test]
fn the_same_rules_written_otherwise_have_the_same_hash() {
    assert_eq!(hash(RULES), hash(RULES_REFORMATTED));
    assert_eq!(hash(RULES).len(), 16);
    assert!(hash(RULES).bytes().all(|b| b.is_ascii_hexdigit()));
    // Parsed again, and again: a HashSet's order in memory changes nothing.
    for _ in 0..8 {
        assert_eq!(hash(RULES), hash(RULES));
    }
}

#[test]
fn a_rule_that_differs_changes_the_hash() {
    let base = hash(RULES);
    let changed = [
        RULES.replace("\"orders\", ", ""),
        RULES.replace("max-partitions = 1000", "max-partitions = 999"),
        RULES.replace("deny-unclean = true", "deny-unclean = false"),
        RULES.replace("[\"alice\", \"ops\"]", "[\"alice\", \"ops\", \"bob\"]"),
        RULES.replace("[rules.principal.alice]", "[rules.principal.alicia]"),
        format!("{RULES}\n[rules.principal.bob]\nlog-only = true\n"),
        RULES.replace("[rules]\n", "[rules]\nlog-only = true\n"),
        RULES.replace("[rules]\n", "[rules]\nmin-replication = 3\n"),
        format!("refusal-text = \"ask the Kafka team\"\n{RULES}"),
    ];
    let mut seen = vec![base];
    for text in &changed {
        let h = hash(text);
        assert!(!seen.contains(&h), "{text}: {h} seen before");
        seen.push(h);
    }
    // No rule at all is a hash of its own too.
    assert!(!seen.contains(&policy_hash(&Config::default().policy)));
}

async fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: guard\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = timeout(Duration::from_secs(10), s.read_to_end(&mut answer))
        .await
        .expect("an answer");
    String::from_utf8_lossy(&answer).into_owned()
}

/// A guard of `config`'s rules, serving its metrics: the metrics' address and its reloader.
async fn guard(mut config: Config) -> (SocketAddr, Reloader) {
    // Nothing connects: any upstream will do.
    config.routes = vec![Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: "127.0.0.1:9".parse().unwrap(),
    }];
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    let guard = Guard::bind(config).await.unwrap();
    let metrics = guard.metrics_addr().unwrap();
    let reloader = guard.reloader();
    tokio::spawn(guard.run(std::future::pending()));
    (metrics, reloader)
}

/// The value of the series `name` (labels included, as written) in `metrics`.
fn value(metrics: &str, name: &str) -> Option<String> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ').map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_of_the_same_rules_agree_and_a_reload_is_counted() {
    let (one, one_reloader) = guard(config(RULES)).await;
    let (two, _) = guard(config(RULES_REFORMATTED)).await;
    let expected = hash(RULES);
    let info = format!("elect_leaders_guard_policy_info{{hash=\"{expected}\"}}");
    for addr in [one, two] {
        let metrics = get(addr, "/metrics").await;
        assert_eq!(value(&metrics, &info).as_deref(), Some("1"), "{metrics}");
        assert_eq!(
            value(&metrics, "elect_leaders_guard_policy_generation").as_deref(),
            Some("1")
        );
        for result in ["applied", "unchanged", "refused", "failed"] {
            let series = format!("elect_leaders_guard_reloads_total{{result=\"{result}\"}}");
            assert_eq!(value(&metrics, &series).as_deref(), Some("0"), "{metrics}");
        }
        let status = get(addr, "/status").await;
        assert!(status.contains(&format!("<th>hash</th><td>{expected}</td>")));
        assert!(status.contains("<th>generation</th><td>1</td>"));
    }

    // The same rules again: unchanged, the generation stays.
    let same = one_reloader.apply(&config(RULES_REFORMATTED)).unwrap();
    assert!(same.unchanged);
    assert_eq!(
        (same.hash.as_str(), same.generation),
        (expected.as_str(), 1)
    );

    // A rule more: applied, the next generation, the old series gone.
    let stronger = RULES.replace(
        "\"orders\", \"ledger\"]",
        "\"orders\", \"ledger\", \"audit\"]",
    );
    let applied = one_reloader.apply(&config(&stronger)).unwrap();
    assert!(!applied.unchanged);
    assert_eq!(applied.generation, 2);
    assert_eq!(applied.hash, hash(&stronger));
    assert_ne!(applied.hash, expected);

    // A rule fewer: refused as weaker; nothing changes.
    let weaker = config(&RULES.replace("deny-unclean = true", ""));
    assert!(matches!(
        one_reloader.apply(&weaker),
        Err(ReloadError::Weaker(_))
    ));
    // A file that could not be read: counted by whoever read it.
    one_reloader.failed();
    assert_eq!(one_reloader.policy_version(), (applied.hash.clone(), 2));

    let metrics = get(one, "/metrics").await;
    assert_eq!(value(&metrics, &info), None, "{metrics}");
    let info = format!(
        "elect_leaders_guard_policy_info{{hash=\"{}\"}}",
        applied.hash
    );
    assert_eq!(value(&metrics, &info).as_deref(), Some("1"), "{metrics}");
    assert_eq!(
        metrics.matches("elect_leaders_guard_policy_info{").count(),
        1,
        "{metrics}"
    );
    assert_eq!(
        value(&metrics, "elect_leaders_guard_policy_generation").as_deref(),
        Some("2")
    );
    for (result, count) in [
        ("applied", 1),
        ("unchanged", 1),
        ("refused", 1),
        ("failed", 1),
    ] {
        let series = format!("elect_leaders_guard_reloads_total{{result=\"{result}\"}}");
        assert_eq!(
            value(&metrics, &series),
            Some(count.to_string()),
            "{metrics}"
        );
    }
    // The other replica still shows the first hash: the alert's query tells them apart.
    let other = get(two, "/metrics").await;
    assert!(other.contains(&format!("policy_info{{hash=\"{expected}\"}} 1")));
}
