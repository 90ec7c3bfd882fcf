//! Where audit lines go ([`AuditSink`]: standard output or error, a file opened again when
//! rotated, any writer) and the writer thread that writes them, one `write` each, retrying
//! a failed write and a file that could not be opened again every second.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use super::queue::{release, Message, Queue};
use crate::diag::log;

/// Where audit lines go.
pub enum AuditSink {
    /// Standard output, flushed after each line.
    Stdout,
    /// Standard error.
    Stderr,
    /// A file, appended to, and opened again at its path when that names another file or
    /// none ([`AuditSink::open`]).
    File(AuditFile),
    /// Any writer, e.g. `io::sink()` or a pipe of the embedding program's.
    Writer(Box<dyn Write + Send>),
}

impl AuditSink {
    /// The file at `path`, opened to append (created if missing).
    pub fn open(path: &Path) -> io::Result<AuditSink> {
        let mut file = AuditFile {
            path: path.to_owned(),
            open: None,
        };
        file.reopen()?;
        Ok(AuditSink::File(file))
    }

    /// An audit file that could not be opened again: tried every second.
    fn broken(&self) -> bool {
        matches!(self, AuditSink::File(AuditFile { open: None, .. }))
    }
}

/// An audit file: its path, and the file open with its identity (None: it could not be
/// opened again).
pub struct AuditFile {
    path: PathBuf,
    open: Option<(File, Option<FileId>)>,
}

/// A file's device and inode: whether a path still names the file open.
type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

/// Elsewhere a file has no identity the standard library shows: a move is not seen (a
/// delete still is), and SIGHUP opens the file again.
#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<FileId> {
    None
}

impl AuditFile {
    /// Opens the file at the path (created if missing) in place of the one open; on an
    /// error none is open (lines are not written to a file the path no longer names).
    fn reopen(&mut self) -> io::Result<()> {
        self.open = None;
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|file| {
                let id = file_id(&file.metadata()?);
                Ok((file, id))
            });
        match opened {
            Ok(open) => {
                self.open = Some(open);
                Ok(())
            }
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("cannot open {} again: {e}", self.path.display()),
            )),
        }
    }

    /// Writes `line` to the file the path names: opened again first when it is not the
    /// one open (moved or deleted), or when none is.
    fn write(&mut self, line: &[u8]) -> io::Result<()> {
        let at_path = std::fs::metadata(&self.path).map(|m| file_id(&m));
        let moved = match (&self.open, &at_path) {
            (Some((_, Some(open))), Ok(Some(at_path))) => open != at_path,
            (Some(_), Ok(_)) | (None, _) => false,
            (Some(_), Err(_)) => true,
        };
        if moved || self.open.is_none() {
            self.reopen()?;
            if moved {
                log(format_args!(
                    "audit log {}: the path names another file or none (moved or deleted, as \
                     logrotate does): opened again; the lines before stay in the file moved",
                    self.path.display()
                ));
            }
        }
        match &mut self.open {
            Some((file, _)) => file.write_all(line),
            None => Err(io::Error::other("no audit file open")),
        }
    }
}

/// How often a writer whose file could not be opened again tries again.
const REOPEN_RETRY: Duration = Duration::from_secs(1);

/// The writer thread: one `write` per line. A line whose write fails is tried again every
/// second until it is written; meanwhile the log is failing and no decision is let through.
/// A file that could not be opened again is tried every second too, lines or not.
pub(super) fn write_lines(mut sink: AuditSink, lines: &Receiver<Message>, queue: &Queue) {
    loop {
        let message = if sink.broken() {
            match lines.recv_timeout(REOPEN_RETRY) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    if let AuditSink::File(file) = &mut sink {
                        if file.reopen().is_ok() {
                            queue.set_failing(false);
                            log(format_args!(
                                "audit log {} opened again: elections are audited again",
                                file.path.display()
                            ));
                        }
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        } else {
            match lines.recv() {
                Ok(message) => message,
                Err(_) => return,
            }
        };
        let line = match message {
            Message::Line(line) => line,
            Message::Drained(done) => {
                let _ = done.send(());
                continue;
            }
            Message::Reopen(done) => {
                let reopened = match &mut sink {
                    AuditSink::File(file) => match file.reopen() {
                        Ok(()) => {
                            queue.set_failing(false);
                            Ok(true)
                        }
                        // The caller says it (its error), once.
                        Err(e) => {
                            queue.set_failing(true);
                            Err(e)
                        }
                    },
                    _ => Ok(false),
                };
                let _ = done.send(reopened);
                continue;
            }
        };
        loop {
            let text = line.text.as_bytes();
            let written = match &mut sink {
                AuditSink::Stdout => {
                    let mut out = io::stdout().lock();
                    out.write_all(text).and_then(|()| out.flush())
                }
                AuditSink::Stderr => io::stderr().lock().write_all(text),
                AuditSink::File(f) => f.write(text),
                AuditSink::Writer(w) => w.write_all(text).and_then(|()| w.flush()),
            };
            match written {
                Ok(()) => {
                    queue.set_failing(false);
                    release(queue, line.bytes, line.conn.as_deref());
                    break;
                }
                Err(e) => {
                    if !queue.failing.load(Ordering::Relaxed) {
                        log(format_args!(
                            "cannot write the audit log: {e}; elections are refused until it \
                             can be written"
                        ));
                    }
                    queue.set_failing(true);
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }
}
