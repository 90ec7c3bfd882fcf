//! The Kubernetes manifests (`deploy/kubernetes/`) and the image (`deploy/Dockerfile`)
//! checked against the guard they deploy: every YAML document is parsed, and what it
//! names of the guard must exist in it. The probes ask `/livez` and `/readyz` on the
//! container port of the ConfigMap's `metrics-listen`; every container port is a route's
//! listener or the metrics port, and the Service sends each route's port to it; the
//! Deployment's arguments are options `elect-leaders proxy --help` prints; the ConfigMap's
//! `guard.toml` passes the guard's own `--check-config` (so every key in it is one the
//! file reader knows, and its certificate paths are files of the Secrets mounted there);
//! the grace period outlasts the preStop wait and the drain; the memory limit holds the
//! buffer budget; the PodDisruptionBudget and the Service select the Deployment's pods.
//!
//! `the_checks_fail_on_broken_manifests` breaks each of these in a copy of the files'
//! text and expects its check to say so: a check that cannot fail is no check.
#![cfg(feature = "proxy")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kafka_elect_leaders_proxy::{AuditTarget, Config, ConfigFile};
use yaml_rust2::{Yaml, YamlLoader};

const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy");

/// What a stop takes after the drain timeout, besides it (`crates/proxy/src/core/
/// server.rs`): 2 s more for the last connections to close, then up to 5 s for the audit
/// lines still queued (`AUDIT_DRAIN`) and up to 5 s for the diagnostics
/// (`diag::FLUSH_TIMEOUT`).
const STOP_AFTER_DRAIN: Duration = Duration::from_secs(2 + 5 + 5);

/// Buffers a connection allocates (GUARD.md, "Memory": a 16 KiB read buffer and an 8 KiB
/// write buffer a side).
const BYTES_PER_CONNECTION: u64 = 48 << 10;

/// The files checked: `kubernetes/NAME.yaml` under their names, and `Dockerfile`.
fn files() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let dir = Path::new(DEPLOY).join("kubernetes");
    for entry in std::fs::read_dir(&dir).expect("deploy/kubernetes/") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".yaml") || name.ends_with(".yml") {
            files.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    let dockerfile = std::fs::read_to_string(Path::new(DEPLOY).join("Dockerfile"));
    files.insert("Dockerfile".into(), dockerfile.expect("deploy/Dockerfile"));
    files
}

#[test]
fn the_manifests_name_what_the_guard_has() {
    let files = files();
    assert!(files.len() > 5, "{:?}", files.keys());
    let problems = problems(&files);
    assert!(
        problems.is_empty(),
        "deploy/ disagrees with the guard:\n{}",
        problems.join("\n")
    );
}

/// Each check, broken in a copy of the files: (file, text, replacement, what the problem
/// must say).
#[test]
fn the_checks_fail_on_broken_manifests() {
    let breaks: &[(&str, &str, &str, &str)] = &[
        ("deployment.yaml", "replicas: 3", "replicas: 2", "replicas"),
        (
            "deployment.yaml",
            "path: /readyz",
            "path: /ready",
            "/readyz",
        ),
        (
            "deployment.yaml",
            "path: /livez",
            "path: /healthz",
            "/livez",
        ),
        (
            "deployment.yaml",
            "livenessProbe:\n            httpGet:\n              path: /livez",
            "livenessProbe:\n            httpGet:\n              path: /readyz",
            "livenessProbe asks \"/readyz\"",
        ),
        (
            "configmap.yaml",
            "metrics-listen = \"0.0.0.0:9100\"",
            "metrics-listen = \"0.0.0.0:9101\"",
            "metrics-listen",
        ),
        (
            "configmap.yaml",
            "metrics-listen = \"0.0.0.0:9100\"",
            "metrics-listen = \"127.0.0.1:9100\"",
            "all addresses",
        ),
        (
            "deployment.yaml",
            "containerPort: 19094",
            "containerPort: 19095",
            "container port",
        ),
        (
            "service.yaml",
            "targetPort: broker-2",
            "targetPort: broker-3",
            "no container port",
        ),
        ("service.yaml", "port: 19093", "port: 29093", "advertise"),
        (
            "deployment.yaml",
            "args: [\"proxy\", \"--config\"",
            "args: [\"proxy\", \"--no-such-option\", \"--config\"",
            "--help",
        ),
        (
            "deployment.yaml",
            "/etc/elect-leaders/guard.toml",
            "/etc/elect-leaders/guard.yaml",
            "--config",
        ),
        (
            "configmap.yaml",
            "deny-unclean = true",
            "deny-unclean = \"yes\"",
            "--check-config",
        ),
        (
            "configmap.yaml",
            "max-partitions = 1000",
            "max-partitions = 1000\n    no-such-key = 1",
            "--check-config",
        ),
        (
            "configmap.yaml",
            "key = \"/etc/elect-leaders-tls/clients/tls.key\"",
            "key = \"/etc/elect-leaders-tls/clients/guard.key\"",
            "--check-config",
        ),
        (
            "configmap.yaml",
            "deny-unclean = true",
            "deny-unclean = false",
            "deny-unclean",
        ),
        (
            "configmap.yaml",
            "audit-log = \"-\"",
            "audit-log = \"/var/log/audit.jsonl\"",
            "audit-log",
        ),
        (
            "configmap.yaml",
            "drain-timeout = \"5s\"",
            "drain-timeout = \"20s\"",
            "terminationGracePeriodSeconds",
        ),
        (
            "deployment.yaml",
            "command: [\"sleep\", \"5\"]",
            "command: [\"sleep\", \"25\"]",
            "terminationGracePeriodSeconds",
        ),
        (
            "configmap.yaml",
            "max-buffered-bytes = \"512MiB\"",
            "max-buffered-bytes = \"1GiB\"",
            "memory",
        ),
        (
            "configmap.yaml",
            "advertise-host = \"elect-leaders-guard.kafka.svc.cluster.local\"",
            "advertise-host = \"guard.example.com\"",
            "advertise-host",
        ),
        (
            "pdb.yaml",
            "  maxUnavailable: 1",
            "  maxUnavailable: 2",
            "PodDisruptionBudget",
        ),
        (
            "pdb.yaml",
            "      app.kubernetes.io/component: guard",
            "      app.kubernetes.io/component: other",
            "PodDisruptionBudget",
        ),
        (
            "service.yaml",
            "    app.kubernetes.io/component: guard\n  ports",
            "    app.kubernetes.io/component: other\n  ports",
            "service.yaml: its selector",
        ),
        (
            "configmap.yaml",
            "upstream = \"kafka-2.",
            "upstream = \"kafka-1.",
            "once each",
        ),
        (
            "deployment.yaml",
            "secretName: elect-leaders-guard-tls",
            "secretName: elect-leaders-guard-certs",
            "which secret-tls.yaml does not have",
        ),
        (
            "deployment.yaml",
            "readOnlyRootFilesystem: true",
            "readOnlyRootFilesystem: false",
            "readOnlyRootFilesystem",
        ),
        (
            "deployment.yaml",
            "prometheus.io/port: \"9100\"",
            "prometheus.io/port: \"9200\"",
            "prometheus.io/port",
        ),
        ("kustomization.yaml", "  - pdb.yaml\n", "", "kustomization"),
        ("Dockerfile", "USER 10001:10001", "USER 10002", "runAsUser"),
        (
            "Dockerfile",
            "--locked -p elect-leaders",
            "-p elect-leaders",
            "Dockerfile",
        ),
    ];
    let files = files();
    for &(file, from, to, expected) in breaks {
        let mut broken = files.clone();
        let text = broken.get_mut(file).unwrap_or_else(|| panic!("no {file}"));
        assert!(text.contains(from), "{file} has no {from:?}");
        *text = text.replacen(from, to, 1);
        let problems = problems(&broken);
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{file}: {from:?} -> {to:?} should be a problem naming {expected:?}; found: {problems:#?}"
        );
    }
}

/// Every disagreement between the files and the guard, as sentences; none: they agree.
fn problems(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(problem) = check(files, &mut problems) {
        problems.push(problem);
    }
    problems
}

/// The checks: a problem after which nothing else can be checked is returned, others are
/// pushed to `problems`.
fn check(files: &BTreeMap<String, String>, problems: &mut Vec<String>) -> Result<(), String> {
    let mut report = |ok: bool, problem: String| {
        if !ok {
            problems.push(problem);
        }
    };

    // Every document of every file parses, and says what it is.
    let mut docs: Vec<(String, Yaml)> = Vec::new();
    for (name, text) in files.iter().filter(|(n, _)| *n != "Dockerfile") {
        let parsed =
            YamlLoader::load_from_str(text).map_err(|e| format!("{name} does not parse: {e}"))?;
        for doc in parsed.into_iter().filter(|d| !d.is_null()) {
            let kind = doc["kind"].as_str().unwrap_or_default();
            if kind.is_empty() || doc["apiVersion"].as_str().is_none() {
                return Err(format!("{name}: a document without kind or apiVersion"));
            }
            docs.push((name.clone(), doc));
        }
    }

    // What kustomization.yaml applies: every manifest but the Secrets' templates (their
    // placeholders would replace the real certificates).
    let kustomization = only(&docs, "Kustomization", |_| true)?;
    let resources: BTreeSet<&str> = strings(&kustomization["resources"]).into_iter().collect();
    let namespace = kustomization["namespace"]
        .as_str()
        .ok_or("kustomization.yaml sets no namespace")?;
    let templates: BTreeSet<&str> = docs
        .iter()
        .filter(|(_, d)| d["kind"].as_str() == Some("Secret"))
        .map(|(n, _)| n.as_str())
        .collect();
    let manifests: BTreeSet<&str> = docs
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n != "kustomization.yaml" && !templates.contains(n))
        .collect();
    report(
        resources == manifests,
        format!(
            "kustomization.yaml's resources {resources:?} should be every manifest but the \
             Secrets' templates: {manifests:?}"
        ),
    );
    let applied = |kind: &str| only(&docs, kind, |file| manifests.contains(file));
    let deployment = applied("Deployment")?;
    let service = applied("Service")?;
    let pdb = applied("PodDisruptionBudget")?;
    let config_map = applied("ConfigMap")?;
    let secrets: Vec<&Yaml> = docs
        .iter()
        .filter(|(_, d)| d["kind"].as_str() == Some("Secret"))
        .map(|(_, d)| d)
        .collect();

    // The Deployment: three replicas of one container, its pods selected by its own labels.
    let spec = &deployment["spec"];
    report(
        spec["replicas"].as_i64() == Some(3),
        format!("deployment.yaml: replicas {:?}, not 3", spec["replicas"]),
    );
    let pod = &spec["template"]["spec"];
    let pod_labels = labels(&spec["template"]["metadata"]["labels"]);
    report(
        selects(&spec["selector"]["matchLabels"], &pod_labels),
        "deployment.yaml: its selector does not select its pods' labels".into(),
    );
    let containers = pod["containers"]
        .as_vec()
        .ok_or("deployment.yaml: no containers")?;
    let [container] = containers.as_slice() else {
        return Err("deployment.yaml: not one container".into());
    };

    // Its command: the image's binary, `proxy`, options the guard has.
    let argv: Vec<String> = strings(&container["command"])
        .into_iter()
        .chain(strings(&container["args"]))
        .map(str::to_owned)
        .collect();
    let dockerfile = &files["Dockerfile"];
    let entrypoint = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix("ENTRYPOINT ["))
        .and_then(|l| l.split('"').nth(1))
        .ok_or("Dockerfile: no ENTRYPOINT [\"...\"]")?;
    report(
        argv.first().map(String::as_str) == Some(entrypoint)
            && argv.get(1).map(String::as_str) == Some("proxy"),
        format!("deployment.yaml: runs {argv:?}, not `{entrypoint} proxy ...` (Dockerfile)"),
    );
    report(
        dockerfile.contains("cargo build --release --locked -p elect-leaders"),
        "Dockerfile: no `cargo build --release --locked -p elect-leaders`".into(),
    );
    let known = help_options();
    for option in argv.iter().filter(|a| a.starts_with("--")) {
        let option = option.split('=').next().unwrap();
        report(
            known.contains(option),
            format!("deployment.yaml: {option} is not an option of `elect-leaders proxy --help`"),
        );
    }
    let config_path = argv
        .iter()
        .position(|a| a == "--config")
        .and_then(|at| argv.get(at + 1))
        .ok_or("deployment.yaml: no --config FILE")?;

    // Volumes: where each is mounted, and what it is.
    let volumes: BTreeMap<&str, &Yaml> = pod["volumes"]
        .as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|v| Some((v["name"].as_str()?, v)))
                .collect()
        })
        .unwrap_or_default();
    let mounts: Vec<(&str, &Yaml, bool)> = container["volumeMounts"]
        .as_vec()
        .map(|m| {
            m.iter()
                .filter_map(|m| {
                    let volume = volumes.get(m["name"].as_str()?)?;
                    Some((
                        m["mountPath"].as_str()?,
                        *volume,
                        m["readOnly"].as_bool() == Some(true),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();

    // The configuration file: a key of the ConfigMap, mounted where --config reads it.
    let (config_dir, config_name) = config_path
        .rsplit_once('/')
        .ok_or("deployment.yaml: --config's path has no directory")?;
    let config_map_name = config_map["metadata"]["name"].as_str().unwrap_or_default();
    report(
        mounts.iter().any(|(at, v, _)| {
            *at == config_dir && v["configMap"]["name"].as_str() == Some(config_map_name)
        }),
        format!("deployment.yaml: --config {config_path}: ConfigMap {config_map_name} is not mounted at {config_dir}"),
    );
    let toml_text = config_map["data"][config_name]
        .as_str()
        .ok_or_else(|| format!("configmap.yaml has no {config_name} (--config {config_path})"))?;
    let raw: toml::Table =
        toml::from_str(toml_text).map_err(|e| format!("configmap.yaml's {config_name}: {e}"))?;

    // The file as it would be in the pod, on this machine: each volume's mount path made
    // a directory of the test's, holding the Secrets' keys (stand-in certificates and
    // keys, made here) and the ConfigMap's; each broker's host name (resolved by the guard
    // at start, and not here) made 127.0.0.1, its port kept. The host names are checked
    // apart below. Then the guard's own checker reads it.
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let scratch = Scratch(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "kubernetes-manifests-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    )));
    let scratch = &scratch.0;
    let _ = std::fs::remove_dir_all(scratch);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let mut text = toml_text.to_owned();
    // Longest mount paths first, so that a mount inside another is rewritten as itself.
    let mut by_length = mounts.clone();
    by_length.sort_by_key(|(at, _, _)| std::cmp::Reverse(at.len()));
    for (i, (at, volume, _)) in by_length.iter().enumerate() {
        let dir = scratch.join(format!("volume-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(name) = volume["secret"]["secretName"].as_str() {
            let secret = secrets
                .iter()
                .find(|s| s["metadata"]["name"].as_str() == Some(name))
                .ok_or_else(|| {
                    format!(
                        "deployment.yaml mounts Secret {name}, which secret-tls.yaml does not have"
                    )
                })?;
            for data in ["data", "stringData"] {
                for file in secret[data].as_hash().into_iter().flat_map(|h| h.keys()) {
                    let file = file.as_str().unwrap_or_default();
                    let pem = if file.ends_with(".key") {
                        key.serialize_pem()
                    } else {
                        cert.pem()
                    };
                    std::fs::write(dir.join(file), pem).unwrap();
                }
            }
        }
        text = text.replace(&format!("\"{at}/"), &format!("\"{}/", dir.display()));
    }
    let routes = raw
        .get("route")
        .and_then(toml::Value::as_array)
        .ok_or("guard.toml has no [[route]]")?;
    let mut hosts = BTreeSet::new();
    for route in routes {
        let upstream = route
            .get("upstream")
            .and_then(toml::Value::as_str)
            .ok_or("guard.toml: a [[route]] without upstream")?;
        let (host, port) = upstream
            .rsplit_once(':')
            .ok_or_else(|| format!("guard.toml: upstream {upstream} is not host:port"))?;
        report(
            host.parse::<std::net::IpAddr>().is_err()
                && host.split('.').all(|l| {
                    !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
                && port.parse::<u16>().is_ok()
                && hosts.insert(host),
            format!("guard.toml: upstream {upstream} should be a broker's own DNS name and port, once each"),
        );
        text = text.replace(&format!("\"{upstream}\""), &format!("\"127.0.0.1:{port}\""));
    }
    let checked_file = scratch.join(config_name);
    std::fs::write(&checked_file, &text).unwrap();
    let mut check_args: Vec<String> = argv[1..].to_vec();
    for arg in &mut check_args {
        if arg == "--config" {
            *arg = "--check-config".into();
        } else if arg == config_path {
            *arg = checked_file.display().to_string();
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(&check_args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    report(
        out.status.success() && stdout.contains(&format!("valid: {} route(s)", routes.len())),
        format!(
            "`elect-leaders {}` refuses configmap.yaml's {config_name} (as the pod would \
             see it, rewritten to {}): {stdout}{}",
            check_args.join(" "),
            checked_file.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
    );
    // The example's point: the rules the ConfigMap names are in force.
    for rule in ["deny-unclean", "protect-topic"] {
        report(
            !out.status.success() || stdout.contains(rule),
            format!("--check-config: the ConfigMap's rules do not include {rule}: {stdout}"),
        );
    }
    // The guard's own reading of it, for the values below.
    let file = ConfigFile::parse(&text, scratch)
        .map_err(|(l, c, e)| format!("configmap.yaml's {config_name}:{l}:{c}: {e}"))?;
    let defaults = Config::default();

    // The audit log: standard output or error, or a file on a writable volume (the root
    // filesystem is read-only).
    if let Some(AuditTarget::File(path)) = &file.audit {
        let written = raw
            .get("audit-log")
            .and_then(toml::Value::as_str)
            .unwrap_or_default();
        report(
            mounts.iter().any(|(at, v, read_only)| {
                written.starts_with(&format!("{at}/"))
                    && !read_only
                    && (!v["emptyDir"].is_badvalue() || !v["persistentVolumeClaim"].is_badvalue())
            }),
            format!(
                "guard.toml: audit-log {} is on no writable volume of the pod",
                path.display()
            ),
        );
    }

    // Ports: the metrics listener's and each route's, on every address of the pod (the
    // kubelet's probes and the Service come to the pod's IP), and no other.
    let metrics = file
        .metrics_listen
        .ok_or("guard.toml sets no metrics-listen: the probes need it")?;
    report(
        metrics.ip().is_unspecified() && file.routes.iter().all(|(l, _)| l.ip().is_unspecified()),
        "guard.toml: metrics-listen and each route's listen should be on all addresses \
         (0.0.0.0): the probes and the Service reach the pod's IP"
            .into(),
    );
    let route_ports: BTreeSet<u16> = file.routes.iter().map(|(l, _)| l.port()).collect();
    let mut container_ports: BTreeMap<i64, String> = BTreeMap::new();
    for port in container["ports"].as_vec().into_iter().flatten() {
        let number = port["containerPort"].as_i64().unwrap_or(-1);
        let name = port["name"].as_str().unwrap_or_default().to_owned();
        report(
            matches!(port["protocol"].as_str(), None | Some("TCP")),
            format!("deployment.yaml: container port {number} is not TCP"),
        );
        report(
            container_ports.insert(number, name).is_none(),
            format!("deployment.yaml: container port {number} twice"),
        );
    }
    let wanted: BTreeSet<i64> = route_ports
        .iter()
        .chain([&metrics.port()])
        .map(|&p| i64::from(p))
        .collect();
    let have: BTreeSet<i64> = container_ports.keys().copied().collect();
    report(
        have == wanted,
        format!(
            "deployment.yaml: container ports {have:?} should be guard.toml's routes' listen \
             ports and its metrics-listen port: {wanted:?}"
        ),
    );
    // A port as a probe or a Service names it: a number, or a container port's name.
    let resolve = |port: &Yaml| -> Option<i64> {
        match port {
            Yaml::Integer(n) => Some(*n),
            Yaml::String(name) => container_ports
                .iter()
                .find(|(_, n)| *n == name)
                .map(|(p, _)| *p),
            _ => None,
        }
    };
    let metrics_port = i64::from(metrics.port());

    // The probes: /livez and /readyz on the metrics port.
    for (probe, paths) in [
        ("livenessProbe", &["/livez"][..]),
        ("readinessProbe", &["/readyz"][..]),
        ("startupProbe", &["/livez", "/readyz"][..]),
    ] {
        let get = &container[probe]["httpGet"];
        if probe == "startupProbe" && container[probe].is_badvalue() {
            continue;
        }
        let path = get["path"].as_str().unwrap_or_default();
        report(
            paths.contains(&path),
            format!("deployment.yaml: {probe} asks {path:?}, not {paths:?}"),
        );
        report(
            resolve(&get["port"]) == Some(metrics_port),
            format!(
                "deployment.yaml: {probe}'s port {:?} is not the container port of guard.toml's \
                 metrics-listen ({metrics_port})",
                get["port"]
            ),
        );
    }
    if let Some(port) = spec["template"]["metadata"]["annotations"]["prometheus.io/port"].as_str() {
        report(
            port.parse() == Ok(metrics_port),
            format!(
                "deployment.yaml: prometheus.io/port {port} is not metrics-listen's {metrics_port}"
            ),
        );
    }

    // The Service: the Deployment's pods, each route's port at its own number. Clients are
    // told advertise-host and a route's listen port, so the Service must answer there.
    report(
        !labels(&service["spec"]["selector"]).is_empty()
            && selects(&service["spec"]["selector"], &pod_labels),
        "service.yaml: its selector does not select the Deployment's pods".into(),
    );
    let mut served = BTreeSet::new();
    for port in service["spec"]["ports"].as_vec().into_iter().flatten() {
        let number = port["port"].as_i64().unwrap_or(-1);
        let target = if port["targetPort"].is_badvalue() {
            Some(number)
        } else {
            resolve(&port["targetPort"])
        };
        let Some(target) = target.filter(|t| container_ports.contains_key(t)) else {
            report(
                false,
                format!(
                    "service.yaml: port {number}'s targetPort {:?} is no container port of the Deployment",
                    port["targetPort"]
                ),
            );
            continue;
        };
        report(
            number == target && target != metrics_port,
            format!(
                "service.yaml: port {number} goes to container port {target}: clients are told \
                 advertise-host and a route's listen port, so each Service port must be a \
                 route's own number"
            ),
        );
        served.insert(target);
    }
    let routes_wanted: BTreeSet<i64> = route_ports.iter().map(|&p| i64::from(p)).collect();
    report(
        served == routes_wanted,
        format!("service.yaml serves {served:?}, not every route's port {routes_wanted:?}"),
    );
    let service_name = service["metadata"]["name"].as_str().unwrap_or_default();
    let advertised = file.advertise_host.as_deref().unwrap_or_default();
    if service["spec"]["type"].as_str().unwrap_or("ClusterIP") == "ClusterIP" {
        let names = [
            format!("{service_name}.{namespace}.svc.cluster.local"),
            format!("{service_name}.{namespace}.svc"),
        ];
        report(
            names.iter().any(|n| n == advertised),
            format!(
                "guard.toml: advertise-host {advertised:?} should be the Service's DNS name, \
                 {} (kustomization.yaml's namespace)",
                names[0]
            ),
        );
    }

    // The PodDisruptionBudget: the Deployment's pods, one of them down at a time.
    report(
        !labels(&pdb["spec"]["selector"]["matchLabels"]).is_empty()
            && selects(&pdb["spec"]["selector"]["matchLabels"], &pod_labels),
        "pdb.yaml: the PodDisruptionBudget does not select the Deployment's pods".into(),
    );
    let replicas = spec["replicas"].as_i64().unwrap_or(1);
    report(
        pdb["spec"]["maxUnavailable"].as_i64() == Some(1)
            || pdb["spec"]["minAvailable"]
                .as_i64()
                .is_some_and(|m| m >= 2 && m < replicas),
        "pdb.yaml: the PodDisruptionBudget should keep all but one replica (maxUnavailable 1, \
         or minAvailable 2 of 3)"
            .into(),
    );

    // The stop: the preStop wait, then the drain and what follows it, within the grace.
    let pre_stop = &container["lifecycle"]["preStop"];
    let wait = match strings(&pre_stop["exec"]["command"]).as_slice() {
        ["sleep", seconds] => seconds.parse::<u64>().ok(),
        _ => pre_stop["sleep"]["seconds"]
            .as_i64()
            .and_then(|s| u64::try_from(s).ok()),
    }
    .filter(|&s| s > 0)
    .ok_or("deployment.yaml: no preStop sleep (the Service must stop sending new connections before SIGTERM)")?;
    let drain = file.drain_timeout.unwrap_or(defaults.drain_timeout);
    let needed = Duration::from_secs(wait) + drain + STOP_AFTER_DRAIN;
    let grace = pod["terminationGracePeriodSeconds"].as_i64().unwrap_or(30);
    report(
        u64::try_from(grace).is_ok_and(|g| Duration::from_secs(g) > needed),
        format!(
            "deployment.yaml: terminationGracePeriodSeconds {grace} should be over the preStop \
             sleep ({wait} s), drain-timeout ({drain:?}) and the stop after it \
             ({STOP_AFTER_DRAIN:?}): {needed:?}"
        ),
    );

    // Memory: twice the buffer budget (glibc's arenas), and each connection's buffers.
    let budget = file
        .max_buffered_bytes
        .unwrap_or(defaults.max_buffered_bytes) as u64;
    let connections = file
        .max_connections
        .ok_or("guard.toml sets no max-connections: the memory limit cannot be sized")?
        as u64;
    let needed = 2 * budget + connections * BYTES_PER_CONNECTION;
    let resources = &container["resources"];
    let limit = quantity(&resources["limits"]["memory"]);
    let request = quantity(&resources["requests"]["memory"]);
    report(
        limit.is_some_and(|l| l >= needed) && request.is_some_and(|r| Some(r) <= limit),
        format!(
            "deployment.yaml: the memory limit {:?} should hold twice max-buffered-bytes and \
             {} bytes a connection of max-connections: {needed} bytes; and the request be at \
             most the limit ({:?})",
            resources["limits"]["memory"], BYTES_PER_CONNECTION, resources["requests"]["memory"]
        ),
    );

    // Security: a user that is not root (the image's), nothing written, no capability.
    let either = |key: &str| {
        let own = &container["securityContext"][key];
        if own.is_badvalue() {
            pod["securityContext"][key].clone()
        } else {
            own.clone()
        }
    };
    report(
        either("runAsNonRoot").as_bool() == Some(true),
        "deployment.yaml: runAsNonRoot is not true".into(),
    );
    report(
        container["securityContext"]["readOnlyRootFilesystem"].as_bool() == Some(true),
        "deployment.yaml: readOnlyRootFilesystem is not true".into(),
    );
    report(
        container["securityContext"]["allowPrivilegeEscalation"].as_bool() == Some(false),
        "deployment.yaml: allowPrivilegeEscalation is not false".into(),
    );
    report(
        strings(&container["securityContext"]["capabilities"]["drop"]) == ["ALL"],
        "deployment.yaml: capabilities do not drop ALL".into(),
    );
    let image_user = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("USER "))
        .next_back()
        .and_then(|u| u.split(':').next())
        .and_then(|u| u.trim().parse::<i64>().ok());
    report(
        image_user.is_some_and(|u| u > 0) && either("runAsUser").as_i64() == image_user,
        format!(
            "deployment.yaml: runAsUser {:?} should be the Dockerfile's numeric USER {image_user:?}",
            either("runAsUser")
        ),
    );
    Ok(())
}

/// A directory of the test's, removed when the check is done, however it ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The one document of `kind` among the files `file` accepts.
fn only<'a>(
    docs: &'a [(String, Yaml)],
    kind: &str,
    file: impl Fn(&str) -> bool,
) -> Result<&'a Yaml, String> {
    let found: Vec<&Yaml> = docs
        .iter()
        .filter(|(n, d)| d["kind"].as_str() == Some(kind) && file(n))
        .map(|(_, d)| d)
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        _ => Err(format!(
            "{} {kind} among deploy/kubernetes/'s manifests (the Secrets' templates aside), not one",
            found.len()
        )),
    }
}

/// A list of strings (none: not a list of strings).
fn strings(node: &Yaml) -> Vec<&str> {
    node.as_vec()
        .map(|v| v.iter().filter_map(Yaml::as_str).collect())
        .unwrap_or_default()
}

/// A map of labels.
fn labels(node: &Yaml) -> BTreeMap<&str, &str> {
    node.as_hash()
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| Some((k.as_str()?, v.as_str()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a selector's labels (all given, each matched) select pods with `pod` labels.
fn selects(selector: &Yaml, pod: &BTreeMap<&str, &str>) -> bool {
    let wanted = labels(selector);
    !wanted.is_empty() && wanted.iter().all(|(k, v)| pod.get(k) == Some(v))
}

/// A Kubernetes quantity of bytes (`2Gi`, `1536Mi`, `2G`, `1073741824`).
fn quantity(node: &Yaml) -> Option<u64> {
    let text = match node {
        Yaml::String(s) => s.clone(),
        Yaml::Integer(n) => n.to_string(),
        _ => return None,
    };
    let at = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(at);
    let scale: u64 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

/// The long options `elect-leaders proxy --help` prints (as `guard_settings.rs` reads
/// them: clap's "Options:" lines that begin with an option).
fn help_options() -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(["proxy", "--help"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    let options: BTreeSet<String> = help
        .lines()
        .skip_while(|l| *l != "Options:")
        .filter(|l| l.len() - l.trim_start().len() <= 6)
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            l.starts_with("--").then(|| {
                l.split(|c: char| c.is_whitespace() || c == '=')
                    .next()
                    .unwrap()
                    .to_owned()
            })
        })
        .collect();
    assert!(options.contains("--config"), "{options:?}");
    options
}
