//! A capture's notes on stderr ([`Reporter`]), one line per distinct problem, and the end
//! of a walk that reported some ([`finish`]).

use kafka_elect_leaders_capture::traffic::Note;
use kafka_elect_leaders_capture::Endpoint;

/// Reports a capture's notes on stderr, one line per distinct problem: the first of each
/// kind in full as it is met (after what came before it on standard output), the others
/// counted, and at the end one line per kind that repeated, with its count and the packets
/// and connections it spans. Two notes are of one kind when their messages
/// differ only in words that hold digits (offsets, sizes, addresses, ids).
#[derive(Default)]
pub struct Reporter {
    kinds: std::collections::HashMap<String, usize>,
    repeats: Vec<Repeat>,
}

/// The notes of one kind after the first.
struct Repeat {
    /// The first's message, and its direction.
    first: String,
    first_way: Option<(Endpoint, Endpoint)>,
    count: u64,
    packets: Option<(u64, u64)>,
    conns: Option<(u32, u32)>,
    /// Of the count, those the other way than the first (the quoted message names the
    /// first's direction), and the first of them.
    other_way: u64,
    other: Option<(Endpoint, Endpoint)>,
}

/// Whether `b` goes the other way than `a`, also on another connection: the side that
/// keeps its port (the broker's) is on the other end.
fn other_way(a: (Endpoint, Endpoint), b: (Endpoint, Endpoint)) -> bool {
    b != a && b.0.port != a.0.port && b.1.port != a.1.port
}

/// Kinds told apart, at most: past this (a capture crafted so), every note is printed.
const KINDS: usize = 1024;

impl Reporter {
    /// Reports `note` (see [`Reporter`]).
    pub fn report(
        &mut self,
        out: &mut dyn std::io::Write,
        name: &str,
        note: &Note,
    ) -> std::io::Result<()> {
        let kind: Vec<&str> = note
            .message
            .split_whitespace()
            .map(|w| {
                if w.bytes().any(|b| b.is_ascii_digit()) {
                    "#"
                } else {
                    w
                }
            })
            .collect();
        let kind = kind.join(" ");
        if let Some(&i) = self.kinds.get(&kind) {
            let r = &mut self.repeats[i];
            r.count += 1;
            if let Some(p) = note.packet {
                r.packets = Some(r.packets.map_or((p, p), |(a, b)| (a.min(p), b.max(p))));
            }
            if let Some((c, from, to)) = note.conn {
                let c = c.0;
                r.conns = Some(r.conns.map_or((c, c), |(a, b)| (a.min(c), b.max(c))));
                if r.first_way
                    .is_some_and(|first| other_way(first, (from, to)))
                {
                    r.other_way += 1;
                    r.other.get_or_insert((from, to));
                }
            }
            return Ok(());
        }
        if self.kinds.len() < KINDS {
            self.kinds.insert(kind, self.repeats.len());
            self.repeats.push(Repeat {
                first: note.message.clone(),
                first_way: note.conn.map(|(_, from, to)| (from, to)),
                count: 0,
                packets: None,
                conns: None,
                other_way: 0,
                other: None,
            });
        }
        out.flush()?;
        eprintln!("elect-leaders: {}", note_line(name, note));
        Ok(())
    }

    /// The counts of the notes that repeated, then [`finish`].
    pub fn finish(
        self,
        out: &mut dyn std::io::Write,
        name: &str,
        problems: u64,
    ) -> Result<(), crate::fail::Failure> {
        out.flush()?;
        for r in self.repeats.iter().filter(|r| r.count > 0) {
            let mut span = Vec::new();
            let range = |one: &str, many: &str, (a, b): (u64, u64)| {
                if a == b {
                    format!("{one} {a}")
                } else {
                    format!("{many} {a} to {b}")
                }
            };
            if let Some(packets) = r.packets {
                span.push(range("packet", "packets", packets));
            }
            if let Some((a, b)) = r.conns {
                span.push(range("connection", "connections", (a.into(), b.into())));
            }
            if let Some((from, to)) = r.other {
                let which = if r.other_way == r.count {
                    "all".to_owned()
                } else {
                    r.other_way.to_string()
                };
                span.push(format!("{which} of them the other way, as {from} -> {to}"));
            }
            let span = if span.is_empty() {
                String::new()
            } else {
                format!(" ({})", span.join(", "))
            };
            eprintln!(
                "elect-leaders: {name}: {} more like \"{}\"{span}",
                r.count, r.first
            );
        }
        finish(name, problems)
    }
}

/// The end of a walk: an error saying the output is partial when `problems` were reported.
pub fn finish(name: &str, problems: u64) -> Result<(), crate::fail::Failure> {
    if problems == 0 {
        return Ok(());
    }
    Err(crate::fail::Failure::Input(format!(
        "{name}: the output is partial: {problems} problem(s) reported above"
    )))
}

/// A note as one line: where (input, packet, connection), then what.
pub fn note_line(name: &str, note: &Note) -> String {
    let mut line = name.to_owned();
    if let Some(packet) = note.packet {
        line.push_str(&format!(": packet {packet}"));
    }
    if let Some((conn, from, to)) = note.conn {
        line.push_str(&format!(": connection {} ({from} -> {to})", conn.0));
    }
    line.push_str(": ");
    line.push_str(&note.message);
    line
}
