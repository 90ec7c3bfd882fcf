//! The tool's side of reading whole connections out of a capture: walking a capture through
//! the capture crate's analyser with the tool's failures, and reporting its notes on
//! stderr. The analyser itself (framing, pairing, notes)
//! is `kafka_elect_leaders_capture::traffic`.

pub use kafka_elect_leaders_capture::traffic::*;

use kafka_elect_leaders::api_name;

/// What a walk through a capture saw.
#[derive(Default)]
pub struct Summary {
    /// Notes that mean some traffic was not decoded.
    pub partial: u64,
}

/// Reads `capture` as Kafka traffic ([`Traffic`]), handing each item to `each` as soon as
/// it is complete, and counting the notes that make the output partial.
pub fn walk<R: std::io::Read>(
    name: &str,
    capture: crate::capture::Capture<R>,
    port: Option<u16>,
    each: &mut dyn FnMut(Item) -> Result<(), crate::fail::Failure>,
) -> Result<Summary, crate::fail::Failure> {
    let mut summary = Summary::default();
    for item in Traffic::from_capture(capture, port) {
        let item = item.map_err(|e| crate::fail::Failure::Input(format!("{name}: {e}")))?;
        if let Item::Note(note) = &item {
            summary.partial += u64::from(note.partial);
        }
        each(item)?;
    }
    Ok(summary)
}

/// Reports a note on stderr, after what came before it on standard output.
pub fn report(out: &mut dyn std::io::Write, name: &str, note: &Note) -> std::io::Result<()> {
    out.flush()?;
    eprintln!("elect-leaders: {}", note_line(name, note));
    Ok(())
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

/// Kafka's name of an API key, or `"unknown"`.
pub fn api_label(api_key: i16) -> &'static str {
    api_name(api_key).unwrap_or("unknown")
}
