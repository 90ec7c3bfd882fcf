//! `summary --html FILE`: the summary as one self-contained page. No script, no font, no
//! request of any kind: the tables are HTML, the timeline and the latency histogram inline
//! SVG, the style inline CSS, and a Content-Security-Policy that forbids everything else.
//! Every string that comes from the input (topic names, client ids, error messages: the
//! sender chose them) goes through [`escape`].

use std::fmt::Write as _;

use kafka_elect_leaders::ErrorCode;

use kafka_elect_leaders_capture::summary::{
    code_name, election_name, shown, Outcome, Tally, OUTCOMES, TIMELINE_POINTS,
};
use kafka_elect_leaders_json::print::api_label;

/// Topics drawn on the timeline, at most (a row each); the others are counted.
const TIMELINE_ROWS: usize = 200;

/// Bars of the latency histogram, at most.
const BINS: usize = 20;

/// Text for HTML, in an element or an attribute's quoted value: the workspace's one HTML
/// escape, which the guard's status page uses too.
pub use kafka_elect_leaders_text::html as escape;

/// A byte string from the input, shown as the text output shows it, escaped.
fn name(b: Option<&[u8]>) -> String {
    escape(&shown(b))
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
.counts span{display:inline-block;margin-right:2em}\
.elected{fill:#2e7d32}.not-needed{fill:#1565c0}.failed{fill:#c62828}\
.bar{fill:#6a1b9a}svg text{font-size:11px;fill:#333}\
.legend span{margin-right:1.5em}.swatch{display:inline-block;width:.8em;height:.8em;\
margin-right:.3em}";

/// The whole page.
pub fn page(t: &Tally) -> String {
    let mut h = String::new();
    let _ = write_page(&mut h, t);
    h
}

fn write_page(h: &mut String, t: &Tally) -> std::fmt::Result {
    let title = format!("ElectLeaders summary of {}", t.name);
    write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    )?;
    let a = &t.anomalies;
    write!(h, "<p class=\"counts\">")?;
    write!(h, "<span>frames <b id=\"frames\">{}</b></span>", t.frames)?;
    if t.capture {
        write!(
            h,
            "<span>connections <b id=\"connections\">{}</b></span>",
            t.connections
        )?;
    }
    // Partitions by outcome, as the timeline colours them: ELECTION_NOT_NEEDED is not a
    // failure there, so not here either.
    let mut by_outcome = [0u64; 3];
    for (code, n) in &t.outcomes {
        by_outcome[Outcome::of(ErrorCode(*code)) as usize] += n;
    }
    writeln!(
        h,
        "<span>ElectLeaders requests <b id=\"elect-requests\">{}</b></span>\
         <span>responses <b id=\"elect-responses\">{}</b></span>\
         <span>partitions elected <b id=\"elected-partitions\">{}</b></span>\
         <span>not needed <b id=\"not-needed-partitions\">{}</b></span>\
         <span>failed <b id=\"failed-partitions\">{}</b></span></p>",
        t.elect_requests, t.elect_responses, by_outcome[0], by_outcome[1], by_outcome[2]
    )?;

    writeln!(h, "<h2>Client ids</h2><table id=\"client-ids\"><tr><th>client id</th><th>requests</th><th>connections</th></tr>")?;
    for (client, c) in &t.clients {
        let conns = if t.capture {
            c.connections.to_string()
        } else {
            String::new()
        };
        writeln!(
            h,
            "<tr><td class=\"client-id\">{}</td><td class=\"n requests\">{}</td><td class=\"n\">{conns}</td></tr>",
            name(client.as_deref()),
            c.requests
        )?;
    }
    writeln!(h, "</table>")?;

    writeln!(h, "<h2>APIs</h2><table id=\"apis\"><tr><th>API</th><th>key</th><th>requests</th><th>responses</th></tr>")?;
    for (key, c) in &t.apis {
        writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{key}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            api_label(*key),
            c.requests,
            c.responses
        )?;
    }
    writeln!(h, "</table>")?;

    writeln!(h, "<h2>ElectLeaders requests</h2><table id=\"election-types\"><tr><th>election type</th><th>requests</th></tr>")?;
    for (ty, n) in &t.by_type {
        writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{n}</td></tr>",
            election_name(*ty)
        )?;
    }
    writeln!(h, "</table><table id=\"topics\"><tr><th>topic</th><th>requests</th><th>partitions asked</th></tr>")?;
    if t.all_partitions > 0 {
        writeln!(
            h,
            "<tr><td><i>every partition</i></td><td class=\"n\">{}</td><td></td></tr>",
            t.all_partitions
        )?;
    }
    for (topic, c) in &t.by_topic {
        writeln!(
            h,
            "<tr><td class=\"topic\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            name(Some(topic)),
            c.requests,
            c.partitions
        )?;
    }
    writeln!(h, "</table>")?;

    writeln!(h, "<h2>Outcomes</h2><table id=\"outcomes\"><tr><th>error code</th><th>name</th><th>partitions</th></tr>")?;
    for (code, n) in &t.outcomes {
        writeln!(
            h,
            "<tr data-code=\"{code}\"><td class=\"n\">{code}</td><td class=\"error-name\">{}</td><td class=\"n partitions\">{n}</td></tr>",
            code_name(*code)
        )?;
    }
    writeln!(h, "</table><table id=\"outcomes-by-topic\"><tr><th>topic</th><th>outcomes (partitions)</th></tr>")?;
    for (topic, codes) in &t.outcomes_by_topic {
        let codes: Vec<String> = codes
            .iter()
            .map(|(c, n)| format!("{} {n}", code_name(*c)))
            .collect();
        writeln!(
            h,
            "<tr><td class=\"topic\">{}</td><td>{}</td></tr>",
            name(Some(topic)),
            codes.join(", ")
        )?;
    }
    writeln!(
        h,
        "</table><table id=\"top-level\"><tr><th>top-level error code</th><th>responses</th></tr>"
    )?;
    for (code, n) in &t.top_level {
        writeln!(
            h,
            "<tr><td>{} ({code})</td><td class=\"n\">{n}</td></tr>",
            code_name(*code)
        )?;
    }
    writeln!(h, "</table>")?;

    // Failed and not needed apart, as the timeline colours them.
    for (outcome, id, heading) in [
        (Outcome::Failed, "failed", "Failed partitions"),
        (
            Outcome::NotNeeded,
            "not-needed",
            "Partitions whose election was not needed",
        ),
    ] {
        writeln!(h, "<h2>{heading}</h2><table id=\"{id}\"><tr><th>topic</th><th>partition</th><th>error</th><th>message</th><th>times</th></tr>")?;
        for ((topic, partition, code, message), n) in t.answered_with(outcome) {
            writeln!(
                h,
                "<tr><td class=\"topic\">{}</td><td class=\"n\">{partition}</td><td>{} ({code})</td><td>{}</td><td class=\"n\">{n}</td></tr>",
                name(Some(topic)),
                code_name(*code),
                name(message.as_deref())
            )?;
        }
        writeln!(h, "</table>")?;
    }

    writeln!(h, "<h2>Timeline of elections per topic</h2>")?;
    timeline(h, t)?;

    writeln!(h, "<h2>Latency</h2>")?;
    match (
        t.percentile(50),
        t.percentile(90),
        t.percentile(99),
        t.latencies.last(),
    ) {
        (Some(p50), Some(p90), Some(p99), Some(max)) => writeln!(
            h,
            "<p class=\"counts\"><span>paired responses <b id=\"latency-paired\">{}</b></span>\
             <span>p50 <b id=\"p50\">{p50}</b> µs</span><span>p90 <b id=\"p90\">{p90}</b> µs</span>\
             <span>p99 <b id=\"p99\">{p99}</b> µs</span><span>max <b id=\"max\">{max}</b> µs</span></p>",
            t.latencies.len()
        )?,
        _ => writeln!(
            h,
            "<p class=\"counts\"><span>paired responses <b id=\"latency-paired\">0</b></span></p>"
        )?,
    }
    if t.latency_across_steps > 0 {
        writeln!(
            h,
            "<p class=\"counts\"><span>left out (the capture's clock stepped back) <b \
             id=\"latency-across-steps\">{}</b></span></p>",
            t.latency_across_steps
        )?;
    }
    histogram(h, &t.latencies)?;

    writeln!(h, "<h2>Anomalies</h2><table id=\"anomalies\">")?;
    let rows = [
        ("unanswered", "unanswered requests", t.unanswered()),
        (
            "unpaired",
            "responses whose request was not seen",
            a.unpaired,
        ),
        (
            "not-kept",
            "requests not kept for pairing (in-flight budget full)",
            a.not_kept,
        ),
        ("malformed", "malformed frames", a.malformed),
        ("gaps", "gaps in the capture", a.gaps),
        ("other-notes", "other notes", a.other_notes),
        ("notes", "notes on stderr", a.notes),
    ];
    for (id, label, n) in rows {
        writeln!(
            h,
            "<tr><td>{label}</td><td class=\"n\" id=\"{id}\">{n}</td></tr>"
        )?;
    }
    writeln!(h, "</table>")?;
    if let Some(error) = &a.error {
        writeln!(h, "<p id=\"error\">Reading stopped: {}</p>", escape(error))?;
    }
    writeln!(h, "</body></html>")
}

fn class(o: Outcome) -> &'static str {
    match o {
        Outcome::Elected => "elected",
        Outcome::NotNeeded => "not-needed",
        Outcome::Failed => "failed",
    }
}

/// One row per topic, one dot per response's result for it, at its capture time, on an axis
/// from the input's first frame to its last; says when it thins its dots.
fn timeline(h: &mut String, t: &Tally) -> std::fmt::Result {
    let Some(tl) = t.timeline.as_ref().filter(|tl| !tl.points.is_empty()) else {
        return writeln!(
            h,
            "<p id=\"timeline-empty\">No ElectLeaders response with a capture time.</p>"
        );
    };
    let points = &tl.points;
    let legend = OUTCOMES
        .map(|o| {
            format!(
                "<span><svg class=\"swatch\" width=\"10\" height=\"10\"><rect class=\"{}\" \
                 width=\"10\" height=\"10\"/></svg>{}</span>",
                class(o),
                o.label()
            )
        })
        .join("");
    writeln!(h, "<p class=\"legend\">{legend}</p>")?;
    let results: u64 = tl.seen.iter().sum();
    if tl.thinned() {
        let each: Vec<String> = OUTCOMES
            .iter()
            .filter(|&&o| tl.stride[o as usize] > 1)
            .map(|&o| {
                let i = o as usize;
                format!(
                    "{}: one in {} drawn ({} of {})",
                    o.label(),
                    tl.stride[i],
                    tl.kept[i],
                    tl.seen[i]
                )
            })
            .collect();
        writeln!(
            h,
            "<p id=\"timeline-thinned\"><b>Thinned:</b> {results} results, more than the \
             {TIMELINE_POINTS} dots the timeline draws at most, so it draws some of them, evenly \
             over the whole capture: {}. The tables count every result.</p>",
            each.join("; ")
        )?;
    }
    let first = points.iter().map(|p| p.epoch_us).min().unwrap_or(0);
    let last = points.iter().map(|p| p.epoch_us).max().unwrap_or(0);
    let (start, end) = tl
        .span
        .map_or((first, last), |(a, b)| (a.min(first), b.max(last)));
    let span = (end - start).max(1) as f64;
    let rows = tl.topics.len().min(TIMELINE_ROWS);
    let (left, width, row) = (220.0, 640.0, 24.0);
    let height = row * rows as f64 + 30.0;
    writeln!(
        h,
        "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\">",
        left + width + 20.0
    )?;
    for (i, topic) in tl.topics.iter().take(rows).enumerate() {
        let y = row * i as f64 + row / 2.0;
        let label = shown(Some(topic));
        let short: String = label.chars().take(32).collect();
        writeln!(
            h,
            "<text class=\"topic\" x=\"4\" y=\"{}\"><title>{}</title>{}</text>\
             <line x1=\"{left}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#ddd\"/>",
            y + 4.0,
            escape(&label),
            escape(&short),
            left + width
        )?;
    }
    let mut dots = 0u64;
    for p in points.iter().filter(|p| p.topic < rows) {
        dots += 1;
        let x = left + width * (p.epoch_us - start) as f64 / span;
        let y = row * p.topic as f64 + row / 2.0;
        let offset = (p.epoch_us - start) as f64 / 1e6;
        let [elected, not_needed, failed] = p.counts;
        writeln!(
            h,
            "<circle class=\"{}\" cx=\"{x:.1}\" cy=\"{y}\" r=\"6\"><title>{} +{offset:.6} s: \
             {}: {elected} elected, {not_needed} not needed, {failed} failed ({} partitions), \
             connection {}</title></circle>",
            class(p.outcome),
            name(Some(&tl.topics[p.topic])),
            p.outcome.label(),
            elected + not_needed + failed,
            p.connection
        )?;
    }
    let axis = row * rows as f64 + 18.0;
    writeln!(
        h,
        "<text x=\"{left}\" y=\"{axis}\">+0 s</text><text id=\"timeline-axis-end\" x=\"{}\" \
         y=\"{axis}\" text-anchor=\"end\">+{:.6} s</text></svg>",
        left + width,
        (end - start) as f64 / 1e6
    )?;
    writeln!(
        h,
        "<p>Dots drawn: <b id=\"timeline-dots\">{dots}</b> of \
         <b id=\"timeline-results\">{results}</b> results; the axis runs from the first frame \
         of the input to its last.</p>"
    )?;
    let hidden = points.len() as u64 - dots;
    if hidden > 0 {
        writeln!(
            h,
            "<p>Not drawn: {hidden} results of topics past the first {TIMELINE_ROWS}.</p>"
        )?;
    }
    Ok(())
}

/// The latencies in equal-width bins from the least to the greatest.
fn histogram(h: &mut String, sorted: &[i64]) -> std::fmt::Result {
    let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) else {
        return Ok(());
    };
    let range = (i128::from(max) - i128::from(min)).max(0);
    let bins = if range == 0 { 1 } else { BINS };
    let width_of = (range / bins as i128) + 1;
    let mut counts = vec![0u64; bins];
    for &l in sorted {
        let i = ((i128::from(l) - i128::from(min)) / width_of) as usize;
        counts[i.min(bins - 1)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let (bar, height) = (30.0, 160.0);
    writeln!(
        h,
        "<svg id=\"latency-histogram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">",
        bar * bins as f64 + 40.0,
        height + 50.0
    )?;
    for (i, &n) in counts.iter().enumerate() {
        let lo = i128::from(min) + width_of * i as i128;
        let hi = lo + width_of - 1;
        let bh = height * n as f64 / top;
        let x = 10.0 + bar * i as f64;
        writeln!(
            h,
            "<rect class=\"bar\" x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{bh}\"><title>{lo} to {hi} µs: {n}</title></rect>",
            height + 20.0 - bh,
            bar - 4.0
        )?;
        if n > 0 {
            writeln!(
                h,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{n}</text>",
                x + (bar - 4.0) / 2.0,
                height + 16.0 - bh
            )?;
        }
    }
    writeln!(
        h,
        "<text x=\"10\" y=\"{}\">{min} µs</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{max} µs</text></svg>",
        height + 38.0,
        10.0 + bar * bins as f64,
        height + 38.0
    )
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(escape("a\"b'c&d"), "a&quot;b&#39;c&amp;d");
    }
}
