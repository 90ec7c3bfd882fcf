//! The guard's diagnostics: what it has to say that is not an audit line (a listener
//! opened, a client refused, a broker address left unrewritten, a connection closed and
//! why).
//!
//! The library says them through the [`log`] facade, as Rust libraries do, under the target
//! [`TARGET`], so that they go where the embedder's logger sends them (`env_logger`, a
//! `tracing` subscriber's `log` bridge, syslog...). With no logger installed they go
//! nowhere: the embedder chooses. The guard calls the logger on its runtime's threads: a
//! logger that blocks (a synchronous write to a slow disk or socket) blocks them, which
//! [`StderrLog`] never does. Levels: `warn` for what an operator should look at (a
//! refused client, a failing write, a rewrite left undone), `info` for the guard's life
//! (a listener opened for a broker). The messages name settings as the configuration file
//! does, never a command-line option.
//!
//! Each message is one line whatever logger takes it: what a peer sent (a broker's host
//! name, a client id) is escaped when the line is made ([`kafka_elect_leaders_text::one_line`]),
//! so that a peer cannot write lines of its own into a log or make one read otherwise than
//! its bytes.
//!
//! [`StderrLog`] is a logger for programs that have none, and the one the `elect-leaders`
//! tool installs: `PREFIX: TIME MESSAGE` on stderr, written by a thread of its own from a
//! bounded queue, so that saying something never blocks a runtime worker; when stderr does
//! not keep up, lines are dropped and the next line written says how many.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_elect_leaders_text::one_line;
use log::{Level, LevelFilter, Log, Metadata, Record};

/// The target of every record the guard logs: filter on it (`RUST_LOG=kafka_elect_leaders_proxy=info`).
pub const TARGET: &str = "kafka_elect_leaders_proxy";

/// Says `message` at level `warn`.
pub(crate) fn log(message: fmt::Arguments<'_>) {
    emit(Level::Warn, message);
}

/// Says `message` at level `info`.
pub(crate) fn info(message: fmt::Arguments<'_>) {
    emit(Level::Info, message);
}

fn emit(level: Level, message: fmt::Arguments<'_>) {
    // Nothing is formatted for a level nobody listens to.
    if !log::log_enabled!(target: TARGET, level) {
        return;
    }
    match message.as_str() {
        Some(text) => log::log!(target: TARGET, level, "{}", one_line(text)),
        None => {
            let text = message.to_string();
            log::log!(target: TARGET, level, "{}", one_line(&text));
        }
    }
}

/// Now, in RFC 3339 UTC with milliseconds (the time of diagnostics and of audit lines): `2025-01-31T23:59:59.123Z`.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// A time in RFC 3339 UTC with milliseconds, written by `humantime`. RFC 3339 has four-digit
/// years: a time before the epoch is written as `1970-01-01T00:00:00.000Z`, one past the end of
/// year 9999 as `9999-12-31T23:59:59.999Z`; nothing panics.
pub fn rfc3339(time: SystemTime) -> String {
    // 9999-12-31T23:59:59.999Z, the last instant written with milliseconds.
    const LAST: Duration = Duration::new(253_402_300_799, 999_000_000);
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let time = UNIX_EPOCH + since.min(LAST);
    humantime::format_rfc3339_millis(time).to_string()
}

/// Diagnostic lines waiting for stderr, at most; past it they are dropped and counted.
const QUEUE: usize = 1024;

/// How long [`StderrLog`]'s `flush` waits for the lines queued before it, at most.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

enum Line {
    Text(String),
    /// Answer once every line queued before this one is written.
    Flush(std::sync::mpsc::Sender<()>),
}

/// A logger writing one line per record on stderr, `PREFIX: TIME MESSAGE` (the time in RFC
/// 3339 UTC with milliseconds), from a thread of its own: a record is queued, never waited
/// for. At most 1,024 lines wait; past that they are dropped, and the next line written
/// says how many were. `flush` waits until the lines queued before it are written, at most
/// [`FLUSH_TIMEOUT`]: what a program does before it exits. The message is written as one
/// line whoever logged it (escaped as [`kafka_elect_leaders_text::one_line`] escapes).
///
/// ```no_run
/// use kafka_elect_leaders_proxy::diag::StderrLog;
/// StderrLog::new("my-guard").install(log::LevelFilter::Info).unwrap();
/// ```
pub struct StderrLog {
    prefix: String,
    /// `None` when no thread could be started: lines are then written by the caller.
    lines: Option<SyncSender<Line>>,
    dropped: std::sync::Arc<AtomicU64>,
}

impl StderrLog {
    /// A logger whose lines begin with `prefix` and a colon; its writer thread is started.
    pub fn new(prefix: impl Into<String>) -> StderrLog {
        let prefix = prefix.into();
        let (lines, rx) = sync_channel::<Line>(QUEUE);
        let dropped = std::sync::Arc::new(AtomicU64::new(0));
        let writer = Writer {
            prefix: prefix.clone(),
            dropped: dropped.clone(),
        };
        let started = std::thread::Builder::new()
            .name("diagnostics".into())
            .spawn(move || writer.run(rx));
        StderrLog {
            prefix,
            lines: started.ok().map(|_| lines),
            dropped,
        }
    }

    /// Installs this logger for the whole program (`log::set_logger`) and lets records up to
    /// `level` through. Fails if a logger is installed already.
    pub fn install(self, level: LevelFilter) -> Result<(), log::SetLoggerError> {
        log::set_logger(Box::leak(Box::new(self)))?;
        log::set_max_level(level);
        Ok(())
    }
}

impl Log for StderrLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        let line = format!(
            "{}: {} {}\n",
            self.prefix,
            rfc3339_now(),
            one_line(&message)
        );
        match &self.lines {
            Some(lines) => {
                if lines.try_send(Line::Text(line)).is_err() {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            // No thread could be started: written here rather than lost.
            None => {
                let _ = io::stderr().lock().write_all(line.as_bytes());
            }
        }
    }

    fn flush(&self) {
        if let Some(lines) = &self.lines {
            flush(lines, Instant::now() + FLUSH_TIMEOUT);
        }
    }
}

/// Queues a `Flush` and waits for its answer, at most until `deadline`: whether every line
/// queued before it was written.
fn flush(lines: &SyncSender<Line>, deadline: Instant) -> bool {
    let (done, wait) = std::sync::mpsc::channel();
    let mut message = Line::Flush(done);
    loop {
        match lines.try_send(message) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                message = back;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
    wait.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .is_ok()
}

struct Writer {
    prefix: String,
    dropped: std::sync::Arc<AtomicU64>,
}

impl Writer {
    fn run(self, lines: Receiver<Line>) {
        for line in lines {
            let line = match line {
                Line::Text(line) => line,
                Line::Flush(done) => {
                    let _ = done.send(());
                    continue;
                }
            };
            let lost = self.dropped.swap(0, Ordering::Relaxed);
            let mut err = io::stderr().lock();
            if lost > 0 {
                let _ = writeln!(
                    err,
                    "{}: {} {lost} diagnostic line(s) dropped: stderr was not keeping up",
                    self.prefix,
                    rfc3339_now()
                );
            }
            let _ = err.write_all(line.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Mutex, OnceLock};

    /// A logger keeping what it is given, installed once for this test binary.
    struct Kept(Mutex<Vec<(Level, String, String)>>);

    impl Log for Kept {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn log(&self, record: &Record<'_>) {
            self.0.lock().unwrap().push((
                record.level(),
                record.target().to_owned(),
                record.args().to_string(),
            ));
        }
        fn flush(&self) {}
    }

    fn kept() -> &'static Kept {
        static KEPT: OnceLock<&'static Kept> = OnceLock::new();
        KEPT.get_or_init(|| {
            let kept: &'static Kept = Box::leak(Box::new(Kept(Mutex::new(Vec::new()))));
            log::set_logger(kept).unwrap();
            log::set_max_level(LevelFilter::Trace);
            kept
        })
    }

    fn said(marker: &str) -> Vec<(Level, String, String)> {
        kept()
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, _, m)| m.contains(marker))
            .cloned()
            .collect()
    }

    /// A broker that advertises a host name with a newline and an escape sequence in it
    /// cannot write a line of its own into the embedder's log, nor colour a terminal: the
    /// record the logger gets is one line already, under the guard's target.
    #[test]
    fn a_diagnostic_stays_one_line_whatever_a_peer_sent() {
        kept();
        let host = "b1\nelect-leaders proxy: 2026-12-02T00:00:00Z forged line\r\u{1b}[31m";
        log(format_args!("broker {host}:9092 left as it is"));
        assert_eq!(
            said("forged line"),
            [(
                Level::Warn,
                TARGET.to_owned(),
                "broker b1\\nelect-leaders proxy: 2026-12-02T00:00:00Z forged line\\r\\u{1b}[31m\
                 :9092 left as it is"
                    .to_owned()
            )]
        );
    }

    /// Bidi controls and other characters a reader cannot see are shown as escapes: a host
    /// name with U+202E cannot make the rest of the line read right to left.
    #[test]
    fn a_diagnostic_shows_the_characters_a_reader_cannot_see() {
        kept();
        let host = "b1\u{202e}si ti sa tfel\u{2066}\u{2069}\u{200e}\u{200f}\u{61c}\u{202a}\
                    \u{feff}\u{200b}\u{2028}\u{2029}\u{e0041}x";
        info(format_args!("broker {host}:9092 hidden-marker"));
        let said = said("hidden-marker");
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(said[0].0, Level::Info);
        assert_eq!(
            said[0].2,
            "broker b1\\u{202e}si ti sa tfel\\u{2066}\\u{2069}\\u{200e}\\u{200f}\\u{61c}\
             \\u{202a}\\u{feff}\\u{200b}\\u{2028}\\u{2029}\\u{e0041}x:9092 hidden-marker"
        );
    }

    /// `flush` returns once the lines before it are written, and gives up at its deadline
    /// when the writer does not take them.
    #[test]
    fn flush_waits_for_the_writer_and_no_longer_than_its_deadline() {
        kept();
        let log = StderrLog::new("diag-test");
        log.log(
            &Record::builder()
                .level(Level::Warn)
                .args(format_args!("a line of the flush test"))
                .build(),
        );
        let lines = log.lines.as_ref().expect("a writer thread");
        assert!(flush(lines, Instant::now() + Duration::from_secs(10)));

        // A writer that takes nothing: a queue of none, nobody receiving.
        let (stalled, _rx) = sync_channel::<Line>(0);
        let started = Instant::now();
        assert!(!flush(
            &stalled,
            Instant::now() + Duration::from_millis(300)
        ));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5));
    }
}
