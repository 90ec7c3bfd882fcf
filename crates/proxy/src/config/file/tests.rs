//! Tests of the configuration file: a whole file read into the config, an empty one,
//! errors that say where (line and column), what a reload refuses (an empty or truncated
//! file), and read errors that name the file.

use super::*;

fn parse(text: &str) -> Result<ConfigFile, (usize, usize, String)> {
    ConfigFile::parse(text, Path::new("/etc/guard"))
}

#[test]
fn a_whole_file() {
    let file = parse(
        r#"
audit-log = "audit.jsonl"
replica-id = "guard-0.eu"
audit-chain-key-file = "chain.key"
idle-timeout = "5m"
max-buffered-bytes = "512MiB"
refused-bytes-per-second = "4MiB"
proxy-protocol-from = ["10.0.0.0/8", "192.0.2.7"]
refusal-text = "refused by the Kafka team's guard (ask in #kafka)"
max-frame-size = 1048576
max-connections = 100
advertise-host = "guard.example"
dynamic-listen = "0.0.0.0:19100-19199"

[[route]]
listen = "127.0.0.1:0"
upstream = "localhost:9092"

[[route]]
listen = "127.0.0.1:19093"
upstream = "127.0.0.2:9093"
advertise = "kafka-lb.example:29093"

[tls]
cert = "guard.pem"
key = "/keys/guard.key"

[upstream-tls]
ca = "ca.pem"

[rules]
deny-unclean = true
protect-topic = ["payments"]
allow-principal = ["alice", "ops"]
max-partitions = 100
min-replication = 3

[rules.principal.ops]
deny-unclean = false
max-partitions = "none"
min-replication = "none"

[rules.principal."CN=bob,O=example"]
log-only = true
"#,
    )
    .unwrap();
    assert_eq!(file.routes.len(), 2);
    assert_eq!(file.routes[0].1.host.as_deref(), Some("localhost"));
    assert_eq!(file.routes[1].1.host, None);
    assert_eq!(file.route_advertise.len(), 1);
    assert_eq!(file.route_advertise[0].1, "kafka-lb.example");
    assert_eq!(file.route_advertise[0].2, 29093);
    assert_eq!(
        file.tls.as_ref().unwrap().cert,
        Path::new("/etc/guard/guard.pem")
    );
    assert_eq!(file.tls.as_ref().unwrap().key, Path::new("/keys/guard.key"));
    assert_eq!(
        file.audit,
        Some(AuditTarget::File("/etc/guard/audit.jsonl".into()))
    );
    assert_eq!(file.replica_id.as_deref(), Some("guard-0.eu"));
    assert_eq!(
        file.audit_chain_key_file.as_deref(),
        Some(Path::new("/etc/guard/chain.key"))
    );
    assert_eq!(file.idle_timeout, Some(Duration::from_secs(300)));
    assert_eq!(file.max_buffered_bytes, Some(512 << 20));
    assert_eq!(file.refused_bytes_per_second, Some(4 << 20));
    assert_eq!(
        file.policy.refusal_text(),
        "refused by the Kafka team's guard (ask in #kafka)"
    );
    assert_eq!(
        file.proxy_protocol_from.as_ref().map(|r| r.len()),
        Some(2),
        "{:?}",
        file.proxy_protocol_from
    );
    assert_eq!(file.max_frame_size, Some(1 << 20));
    assert_eq!(file.advertise_host.as_deref(), Some("guard.example"));
    assert_eq!(
        file.dynamic_listen,
        Some(DynamicListen {
            ip: "0.0.0.0".parse().unwrap(),
            first: 19100,
            last: 19199
        })
    );
    let policy = &file.policy;
    assert!(policy.deny_unclean && policy.is_protected(b"payments"));
    assert_eq!(policy.max_partitions, Some(100));
    let ops = &policy.principal_rules["ops"];
    assert!(!ops.deny_unclean && ops.is_protected(b"payments"));
    assert_eq!(ops.max_partitions, None);
    assert_eq!(policy.min_replication, Some(3));
    assert_eq!(ops.min_replication, None);
    let bob = &policy.principal_rules["CN=bob,O=example"];
    assert!(bob.log_only && bob.deny_unclean && bob.max_partitions == Some(100));
    assert_eq!(bob.min_replication, Some(3));
    assert!(summary(&Config {
        policy: policy.clone(),
        ..Config::default()
    })
    .contains("min-replication 3"));

    let mut config = Config::default();
    file.apply(&mut config);
    assert_eq!(config.routes.len(), 2);
    assert_eq!(config.max_connections, 100);
    assert_eq!(config.frame_timeout, crate::DEFAULT_FRAME_TIMEOUT);
    let names = &config.upstream_tls.as_ref().unwrap().names;
    assert_eq!(names.len(), 1);
    assert_eq!(names[0].1, "localhost");
}

#[test]
fn an_empty_file_changes_nothing() {
    let mut config = Config::default();
    parse("").unwrap().apply(&mut config);
    assert!(config.routes.is_empty() && !config.policy.has_rules());
    assert_eq!(config.idle_timeout, crate::DEFAULT_IDLE_TIMEOUT);
}

/// `forward-unknown-api`: the keys reach the policy.
#[test]
fn unknown_api_keys_forwarded() {
    let mut config = Config::default();
    parse("[rules]\ndeny-unclean = true\nforward-unknown-api = [95, 1000]")
        .unwrap()
        .apply(&mut config);
    let keys: Vec<i16> = config
        .policy
        .forwarded_unknown_apis
        .iter()
        .copied()
        .collect();
    assert_eq!(keys, [95, 1000]);
}

/// Every error names the line and column of the value or key at fault.
#[test]
fn errors_say_where() {
    for (text, line, column, says) in [
        ("idle-timeout = \"soon\"", 1, 16, "expected a duration"),
        ("refusal-text = \"\"", 1, 16, "an empty refusal text"),
        ("proxy-protocol-from = [\"lb\"]", 1, 23, "10.0.0.0/8"),
        ("idle-timeout = \"0s\"", 1, 16, "above zero"),
        (
            "\n[rules]\ndeny-uncleen = true",
            3,
            1,
            "unknown field `deny-uncleen`",
        ),
        (
            "[rules]\ndeny-unclean = \"yes\"",
            2,
            16,
            "expected a boolean",
        ),
        (
            "[[route]]\nlisten = \"127.0.0.1:0\"\nupstream = \"nowhere\"",
            3,
            12,
            "expected host:port",
        ),
        ("max-buffered-bytes = \"1GB\"", 1, 22, "KiB, MiB or GiB"),
        ("max-buffered-bytes = 100", 1, 22, "at least 65536"),
        (
            "max-frame-size = 4294967296",
            1,
            18,
            "a size prefix is an int32",
        ),
        ("[rules]\nmax-partitions = -1", 2, 18, "\"none\""),
        ("[rules]\nmin-replication = 0", 2, 19, "from 1 to 32767"),
        ("[rules]\nmin-replication = 40000", 2, 19, "from 1 to 32767"),
        (
            "[rules.principal.ops]\nallow-principal = []",
            2,
            1,
            "unknown field",
        ),
        ("audit-queue-bytes = 1000", 1, 21, "at least 65536"),
        ("audit-queue-bytes = \"1GB\"", 1, 21, "KiB, MiB or GiB"),
        ("audit-queue = 4096", 1, 1, "unknown field `audit-queue`"),
        ("replica-id = \"guard 0\"", 1, 14, "only letters, digits"),
        ("replica-id = \"\"", 1, 14, "1 to 200 bytes"),
        ("dynamic-listen = \"0.0.0.0:9-8\"", 1, 18, "IP:FIRST-LAST"),
        ("[tls]\ncert = \"a.pem\"", 1, 1, "missing field `key`"),
        ("idle-timeout = ", 1, 16, ""),
        (
            "[rules]\nforward-unknown-api = [27]",
            2,
            23,
            "api key 27 is WriteTxnMarkers, which the guard knows (closed)",
        ),
    ] {
        let (l, c, message) = parse(text).map(|_| ()).unwrap_err();
        assert_eq!((l, c), (line, column), "{text:?}: {message}");
        assert!(message.contains(says), "{text:?}: {message}");
    }
}

/// Issue 35, finding 4: an empty file on SIGHUP dropped every rule. A reload now
/// refuses a file that sets nothing (empty, blank, comments only), and one cut
/// mid-table, with its line and column; `allow-weaker-rules` is read and reaches the
/// configuration.
#[test]
fn a_reload_refuses_an_empty_or_truncated_file() {
    let dir = std::env::temp_dir().join(format!("kel-file-again-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("guard.toml");
    for empty in ["", "\n  \n", "# the guard\n\n   # nothing else\n"] {
        std::fs::write(&path, empty).unwrap();
        assert!(ConfigFile::read(&path).unwrap().empty, "{empty:?}");
        let e = ConfigFile::read_again(&path).unwrap_err();
        assert!(
            e.to_string().ends_with(
                "guard.toml: the file is empty (it sets nothing): a \
                                    reload never drops every rule"
            ),
            "{e}"
        );
    }
    let whole = "[rules]\ndeny-unclean = true\nprotect-topic = [\"payments\", \"orders\"]\n";
    std::fs::write(&path, whole).unwrap();
    let file = ConfigFile::read_again(&path).unwrap();
    assert!(!file.empty && !file.allow_weaker_rules);
    // Cut mid-table, mid-value: it does not parse.
    std::fs::write(&path, &whole[..whole.len() - 12]).unwrap();
    let e = ConfigFile::read_again(&path).unwrap_err();
    assert_eq!((e.line, e.column), (3, 28), "{e}");
    assert!(e.message.contains("unclosed array"), "{e}");

    std::fs::write(&path, format!("allow-weaker-rules = true\n{whole}")).unwrap();
    let file = ConfigFile::read_again(&path).unwrap();
    assert!(file.allow_weaker_rules);
    let mut config = Config::default();
    file.apply(&mut config);
    assert!(config.allow_weaker_rules);
    assert_eq!(
        summary(&config),
        "0 route(s); rules: deny-unclean, protect-topic (2); audit-log standard error; \
         allow-weaker-rules = true"
    );
    assert_eq!(
        rules_summary(&Policy::default()),
        "none (every election is forwarded)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_names_the_file() {
    let e = ConfigFile::read(Path::new("/nonexistent/guard.toml")).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("/nonexistent/guard.toml: cannot read it"));
    let dir = std::env::temp_dir().join(format!("kel-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("guard.toml");
    std::fs::write(&path, "[rules]\nmax-partitions = \"many\"\n").unwrap();
    let e = ConfigFile::read(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2:18: expected a whole number, or \"none\"",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `[audit-kafka]` and `[audit-syslog]`: read, paths resolved; two sinks refused.
#[test]
fn audit_sink_tables() {
    let text = "[audit-kafka]\nbootstrap-servers = \"k:9092\"\ntopic = \"audit\"\n\
                mode = \"blocking\"\ndeadline = \"2s\"\nsasl-password-file = \"pw\"\n";
    let file = ConfigFile::parse(text, Path::new("/etc/guard")).unwrap();
    let kafka = file.audit_kafka.unwrap();
    assert_eq!(kafka.bootstrap_servers, "k:9092");
    assert_eq!(kafka.mode.as_deref(), Some("blocking"));
    assert_eq!(kafka.deadline, Some(Duration::from_secs(2)));
    assert_eq!(kafka.sasl_password_file, Some("/etc/guard/pw".into()));
    let bad =
        "[audit-kafka]\nbootstrap-servers = \"k:9092\"\ntopic = \"a\"\nmode = \"eventually\"\n";
    assert!(ConfigFile::parse(bad, Path::new("."))
        .unwrap_err()
        .2
        .contains("blocking-strict"));

    let text =
        "[audit-syslog]\naddress = \"siem:6514\"\ntls-ca = \"ca.pem\"\nfacility = \"auth\"\n";
    let file = ConfigFile::parse(text, Path::new("/etc/guard")).unwrap();
    match file.audit {
        Some(AuditTarget::Syslog(target)) => {
            assert_eq!(target.address, "siem:6514");
            assert_eq!(target.facility, 4);
            assert_eq!(target.app_name, "elect-leaders");
            let tls = target.tls.unwrap();
            assert_eq!(tls.ca, Some("/etc/guard/ca.pem".into()));
        }
        other => panic!("{other:?}"),
    }
    let both = "audit-log = \"a.jsonl\"\n[audit-syslog]\naddress = \"siem:514\"\n";
    assert!(ConfigFile::parse(both, Path::new("."))
        .unwrap_err()
        .2
        .contains("two audit sinks"));
}
