//! `elect-leaders audit verify`: reads audit lines (files in the order written, standard
//! input, or the audit topic), checks each replica's chains ([`super::trail`]) and prints
//! each chain and everything wrong: text, or one JSON object with `--json`. Exit status: 0
//! when the trail is whole, 1 when anything is wrong (records undelivered and counted by
//! the topic's producer too: records are missing), 2 when the input or the key cannot be
//! read or the flags do not go together.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;

use serde::Serialize;

use super::trail::{ChainSummary, Finding, Kind, Place, Trail};
use crate::fail::Failure;
use crate::flags::VerifyArgs;

/// The fewest bytes of a chain key, as the guard takes it.
const MIN_KEY_BYTES: usize = 16;

/// The longest line read: a guard's line is at most 64 KiB and its chain fields; a longer
/// one is read in part and is not JSON.
const MAX_LINE: u64 = 1 << 20;

pub fn run(args: &VerifyArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let key = match &args.key_file {
        Some(path) => Some(read_key(path)?),
        None => None,
    };
    let key = key.as_deref();
    let mut trail = Trail::default();
    if let Some(topic) = &args.topic {
        read_topic(args, topic, key, &mut trail)?;
    } else {
        for input in &args.inputs {
            read_lines(input, key, &mut trail)?;
        }
    }
    let findings = trail.findings(args.partial);
    let chains = trail.chains();
    if args.json {
        print_json(&trail, &chains, &findings, out)?;
    } else {
        print_text(&trail, &chains, &findings, args.key_file.is_some(), out)?;
    }
    if findings.is_empty() {
        return Ok(());
    }
    out.flush()?;
    eprintln!(
        "elect-leaders: audit verify: the trail is not whole: {} finding(s)",
        findings.len()
    );
    Err(Failure::Reported { usage: false })
}

/// The key in the file at `path`, as the guard reads it: its bytes without the white
/// space at their end. Its bytes are never said.
fn read_key(path: &Path) -> Result<Vec<u8>, Failure> {
    let bytes = std::fs::read(path).map_err(|e| {
        Failure::cannot_open(format!("cannot read the key file {}: {e}", path.display()))
    })?;
    let key = bytes.trim_ascii_end().to_vec();
    if key.len() < MIN_KEY_BYTES {
        return Err(Failure::cannot_open(format!(
            "the key file {} holds fewer than {MIN_KEY_BYTES} bytes",
            path.display()
        )));
    }
    Ok(key)
}

/// Each line of `input` (a file, or `-`: standard input) into `trail`.
fn read_lines(
    input: &std::ffi::OsStr,
    key: Option<&[u8]>,
    trail: &mut Trail,
) -> Result<(), Failure> {
    let name = input.to_string_lossy().into_owned();
    let reader: Box<dyn Read> = if input == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(
            std::fs::File::open(input)
                .map_err(|e| Failure::cannot_open(format!("cannot open {name}: {e}")))?,
        )
    };
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::cannot_open(format!("cannot read {name}: {e}")))?;
        if read == 0 {
            break;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let place = Place::Line {
            input: name.clone(),
            line: number,
        };
        trail.add(text, place, None, key);
        if read as u64 == MAX_LINE && !line.ends_with(b"\n") {
            // The rest of an overlong line: skipped, it was counted as not JSON.
            let mut rest = Vec::new();
            let _ = reader.read_until(b'\n', &mut rest);
        }
    }
    Ok(())
}

/// An audit topic's event: the line, byte for byte, and what was not delivered before.
#[cfg(feature = "audit-topic")]
#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    data: &'a serde_json::value::RawValue,
    undeliveredbefore: Option<u64>,
}

/// Every record of the audit topic into `trail`.
#[cfg(feature = "audit-topic")]
fn read_topic(
    args: &VerifyArgs,
    topic: &str,
    key: Option<&[u8]>,
    trail: &mut Trail,
) -> Result<(), Failure> {
    use kafka_elect_leaders_audit_kafka::{Connection, TopicReader};
    let connection = Connection {
        bootstrap_servers: args.bootstrap_server.clone().unwrap_or_default(),
        tls: None,
        sasl: None,
    };
    let reader = TopicReader::open(&connection, topic, std::time::Duration::from_secs(10))
        .map_err(|e| Failure::cannot_open(format!("cannot read the topic {topic}: {e}")))?;
    for record in reader {
        let record = record
            .map_err(|e| Failure::cannot_open(format!("cannot read the topic {topic}: {e}")))?;
        let place = Place::Record {
            partition: record.partition,
            offset: record.offset,
        };
        let value = record.value.unwrap_or_default();
        match event_line(&value) {
            Some((line, undelivered)) => trail.add(line, place, undelivered, key),
            // Not an event: looked at as a line, which says what is wrong with it.
            None => trail.add(&value, place, None, key),
        }
    }
    Ok(())
}

/// An event's audit line, its bytes as they are in the event (`data`, spliced in byte for
/// byte by the producer), and its `undeliveredbefore`; None when it is no such event.
#[cfg(feature = "audit-topic")]
fn event_line(value: &[u8]) -> Option<(&[u8], Option<u64>)> {
    let event: Event<'_> = serde_json::from_slice(value).ok()?;
    Some((event.data.get().as_bytes(), event.undeliveredbefore))
}

#[cfg(all(test, feature = "audit-topic"))]
mod tests {
    use kafka_elect_leaders_audit_kafka::{cloud_event, Attributes};

    /// The producer's own events (audit-kafka's `cloud_event`) give back the line byte for
    /// byte, and what was not delivered before it.
    #[test]
    fn an_event_gives_back_its_line_and_what_was_not_delivered() {
        let line =
            br#"{"time":"2026-12-08T00:00:00.000Z","verdict":"allowed","seq":3,"x":"a\u202e b"}"#;
        let attributes = |undelivered_before| Attributes {
            id: "guard-0:c:3",
            replica: "guard-0",
            time: None,
            subject: None,
            undelivered_before,
        };
        let event = cloud_event(&attributes(2), line).unwrap();
        assert_eq!(super::event_line(&event), Some((&line[..], Some(2))));
        let event = cloud_event(&attributes(0), line).unwrap();
        assert_eq!(super::event_line(&event), Some((&line[..], None)));
        assert_eq!(super::event_line(line), None);
    }
}

#[cfg(not(feature = "audit-topic"))]
fn read_topic(_: &VerifyArgs, _: &str, _: Option<&[u8]>, _: &mut Trail) -> Result<(), Failure> {
    Err(Failure::usage(
        "audit verify",
        "--topic needs the tool built with the audit-topic feature",
    ))
}

/// The report as text: one line per chain, then one per finding.
fn print_text(
    trail: &Trail,
    chains: &[ChainSummary],
    findings: &[Finding],
    keyed: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    for chain in chains {
        write!(
            out,
            "replica {} chain {}: {} record(s), seq {} to {}",
            chain.replica, chain.chain, chain.records, chain.first_seq, chain.last_seq
        )?;
        match &chain.started {
            Some(start) => writeln!(
                out,
                "; started at {} ({}, {})",
                start.at,
                start.time.as_deref().unwrap_or("no time"),
                start.algorithm.as_deref().unwrap_or("no algorithm")
            )?,
            None if chain.first_seq == 0 => writeln!(out, "; its seq 0 is no chain-start")?,
            None => writeln!(out, "; its start is not in the input")?,
        }
        let keyed_chain = chain
            .started
            .as_ref()
            .and_then(|s| s.algorithm.as_deref())
            .is_some_and(|a| a == "hmac-sha256");
        if keyed_chain && !keyed {
            writeln!(
                out,
                "  its records are hashed with a key (hmac-sha256): give it with --key-file"
            )?;
        }
    }
    for finding in findings {
        let seq = match (finding.seq, finding.last_seq) {
            (Some(first), Some(last)) if last > first => format!("seq {first} to {last}"),
            (Some(seq), _) => format!("seq {seq}"),
            (None, _) => String::new(),
        };
        let whose = match (&finding.replica, &finding.chain) {
            (Some(r), Some(c)) => format!("replica {r} chain {c} {seq}: "),
            _ => match &finding.at {
                Some(at) => format!("{at}: "),
                None => String::new(),
            },
        };
        let at = match (&finding.at, &finding.replica) {
            (Some(at), Some(_))
                if finding.kind != Kind::Gap && finding.kind != Kind::Undelivered =>
            {
                format!(" (at {at})")
            }
            _ => String::new(),
        };
        writeln!(
            out,
            "{}: {whose}{}{at}",
            kind_name(finding.kind),
            finding.message
        )?;
    }
    let replicas = {
        let mut names: Vec<&str> = chains.iter().map(|c| c.replica.as_str()).collect();
        names.dedup();
        names.len()
    };
    writeln!(
        out,
        "{} record(s), {} chain(s) of {replicas} replica(s): {}",
        trail.records(),
        chains.len(),
        if findings.is_empty() {
            "whole".to_owned()
        } else {
            format!("{} finding(s)", findings.len())
        }
    )
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Gap => "gap",
        Kind::Undelivered => "undelivered",
        Kind::Reorder => "reorder",
        Kind::Duplicate => "duplicate",
        Kind::Edited => "edited",
        Kind::NotJson => "not-json",
        Kind::Unchained => "unchained",
    }
}

/// The report as one JSON object.
fn print_json(
    trail: &Trail,
    chains: &[ChainSummary],
    findings: &[Finding],
    out: &mut dyn Write,
) -> io::Result<()> {
    #[derive(Serialize)]
    struct Report<'a> {
        whole: bool,
        records: u64,
        chains: &'a [ChainSummary],
        findings: &'a [Finding],
    }
    let report = Report {
        whole: findings.is_empty(),
        records: trail.records(),
        chains,
        findings,
    };
    serde_json::to_writer(&mut *out, &report).map_err(io::Error::other)?;
    writeln!(out)
}
