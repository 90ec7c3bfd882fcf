//! Where audit lines go ([`AuditSink`]: standard output or error, a file opened again when
//! rotated, any writer, a sink that acknowledges each line) and the writer thread that
//! writes them, one `write` each, retrying a failed write and a file that could not be
//! opened again every second; a sink that acknowledges is handed each line, and its
//! acknowledgement to come goes to whoever waits for it (`super::delivery`).
//!
//! A line is whole or absent, whatever a write did before it failed (a full disk takes
//! part of a line, then refuses the rest): a regular file is cut back to its length before
//! the line, and the whole line written again; where nothing can be taken back (standard
//! output or error, a pipe, any writer) the line goes on from the first byte not taken, so
//! no byte of it is written twice (issue 42, item 6: a retry glued a whole line to the part
//! of it written before, and the file held a line that was not JSON).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use super::queue::{release, Message, Queue};
use crate::observability::diag::log;

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
    /// A sink that acknowledges each line (the tool's Kafka topic), in a delivery mode.
    Delivered(super::delivery::DeliveryTarget),
    /// A syslog receiver (RFC 5424 over TCP or TLS): a failed send is retried as a failed
    /// write is, on a new connection.
    Syslog(super::syslog::Syslog),
}

impl AuditSink {
    /// The file at `path`, opened to append (created if missing). A FIFO with no reader is
    /// an error at once, not a wait for one ([`AuditSink::check`]).
    pub fn open(path: &Path) -> io::Result<AuditSink> {
        let mut file = AuditFile {
            path: path.to_owned(),
            open: None,
            #[cfg(test)]
            fake_disk_full_after: None,
        };
        file.reopen()?;
        Ok(AuditSink::File(file))
    }

    /// Opens the existing file at `path` as [`AuditSink::open`] does, and closes it again,
    /// writing nothing and creating nothing: what `elect-leaders proxy --check-config`
    /// checks, so that it says what a start would say rather than waiting where a start
    /// would not. A FIFO is opened too (its reader sees the end of its input, as when the
    /// guard stops), so that one with no reader is the same error as at a start.
    pub fn check(path: &Path) -> io::Result<()> {
        open_to_append(path, false).map(drop)
    }

    /// An audit file that could not be opened again: tried every second.
    fn broken(&self) -> bool {
        matches!(self, AuditSink::File(AuditFile { open: None, .. }))
    }
}

/// An audit file: its path, and the file open (None: it could not be opened again).
pub struct AuditFile {
    path: PathBuf,
    open: Option<OpenFile>,
    /// A fake of a fault a real disk cannot be made to produce on demand: the next line
    /// written takes only this many bytes, then fails as a full disk does. Tests only.
    #[cfg(test)]
    pub(super) fake_disk_full_after: Option<usize>,
}

/// The audit file open: the file, its identity, whether it is a regular file (one that
/// can be cut back), and the length to cut it back to before anything else is written,
/// when a failed line could not be taken back at once. Kept with the file it was read
/// from, so that a length is never applied to another file opened at the path since.
struct OpenFile {
    file: File,
    id: Option<FileId>,
    regular: bool,
    cut_to: Option<u64>,
}

impl OpenFile {
    /// Writes `line` whole, or leaves none of it: a regular file is cut back to its length
    /// before the line when the write fails; anything else (a FIFO, a terminal) goes on
    /// from `done`, the bytes of the line it took before.
    fn write_line(
        &mut self,
        line: &[u8],
        done: &mut usize,
        #[cfg(test)] fake_disk_full_after: Option<usize>,
    ) -> io::Result<()> {
        if !self.regular {
            return write_rest(&mut self.file, line, done);
        }
        if let Some(len) = self.cut_to {
            cut_back(&self.file, len)?;
            self.cut_to = None;
        }
        let before = self.file.metadata()?.len();
        #[cfg(test)]
        let written = match fake_disk_full_after {
            Some(room) => (&self.file)
                .write_all(&line[..room.min(line.len())])
                .and(Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "a fake full disk (tests only)",
                ))),
            None => (&self.file).write_all(line),
        };
        #[cfg(not(test))]
        let written = (&self.file).write_all(line);
        if written.is_err() && cut_back(&self.file, before).is_err() {
            // Tried again before the next line, on this file only.
            self.cut_to = Some(before);
        }
        written
    }
}

/// Cuts `file` back to `len` bytes, if it is longer: never longer than it is (a file cut to
/// nothing by logrotate's `copytruncate` since stays as it is).
fn cut_back(file: &File, len: u64) -> io::Result<()> {
    if file.metadata()?.len() > len {
        file.set_len(len)?;
    }
    Ok(())
}

/// Writes what `out` has not taken of `line` yet, from `done` on, counting each byte
/// taken in `done`: a write that fails part way is taken up again where it stopped, and
/// no byte is written twice.
fn write_rest(out: &mut impl Write, line: &[u8], done: &mut usize) -> io::Result<()> {
    while let Some(rest) = line.get(*done..).filter(|rest| !rest.is_empty()) {
        match out.write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => *done += n.min(rest.len()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Opens `path` to append (created if missing when `create`), as the audit log: a FIFO
/// with no reader is an error at once. On unix every path is opened with `O_NONBLOCK`,
/// which alone keeps the open of a FIFO from waiting for a reader (it fails with
/// `ENXIO`), and then set back to blocking, so that writes behave as for any file; opening
/// each path so, rather than looking first whether it is a FIFO, leaves no moment in which
/// a FIFO put in its place is opened to wait.
fn open_to_append(path: &Path, create: bool) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(create);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    match options.open(path) {
        Ok(file) => blocking(file),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) && is_fifo(path) => Err(io::Error::new(
            io::ErrorKind::NotConnected,
            format!(
                "audit log {} is a FIFO with no reader: start its reader first",
                path.display()
            ),
        )),
        Err(e) => Err(e),
    }
}

/// Whether `path` is a FIFO.
#[cfg(unix)]
fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// `file`, set back to blocking: its `O_NONBLOCK` cleared. The crate has no unsafe code,
/// so the system call is mio's (already built for tokio's `net`), through its pipe type,
/// made for this.
#[cfg(unix)]
fn blocking(file: File) -> io::Result<File> {
    use std::os::fd::OwnedFd;
    let pipe = mio::unix::pipe::Sender::from(OwnedFd::from(file));
    pipe.set_nonblocking(false)?;
    Ok(File::from(OwnedFd::from(pipe)))
}

/// Elsewhere a file is opened blocking and stays so.
#[cfg(not(unix))]
fn blocking(file: File) -> io::Result<File> {
    Ok(file)
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
    /// error none is open (lines are not written to a file the path no longer names). The
    /// part of a line the file closed still had to take back is taken back first, if it
    /// can be: it is the end of that file, moved or not.
    fn reopen(&mut self) -> io::Result<()> {
        if let Some(OpenFile {
            file,
            cut_to: Some(len),
            ..
        }) = &self.open
        {
            let _ = cut_back(file, *len);
        }
        self.open = None;
        let opened = open_to_append(&self.path, true).and_then(|file| {
            let meta = file.metadata()?;
            Ok(OpenFile {
                id: file_id(&meta),
                regular: meta.is_file(),
                file,
                cut_to: None,
            })
        });
        match opened {
            Ok(open) => {
                self.open = Some(open);
                Ok(())
            }
            // It names the path already.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Err(e),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("cannot open {} again: {e}", self.path.display()),
            )),
        }
    }

    /// Writes `line` to the file the path names, whole or not at all: opened again first
    /// when it is not the one open (moved or deleted), or when none is. `done`: the bytes
    /// of the line a file that cannot be cut back took before (none once opened again).
    fn write(&mut self, line: &[u8], done: &mut usize) -> io::Result<()> {
        let at_path = std::fs::metadata(&self.path).map(|m| file_id(&m));
        let moved = match (&self.open, &at_path) {
            (Some(OpenFile { id: Some(open), .. }), Ok(Some(at_path))) => open != at_path,
            (Some(_), Ok(_)) | (None, _) => false,
            (Some(_), Err(_)) => true,
        };
        if moved || self.open.is_none() {
            *done = 0;
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
            Some(open) => open.write_line(
                line,
                done,
                #[cfg(test)]
                self.fake_disk_full_after.take(),
            ),
            None => Err(io::Error::other("no audit file open")),
        }
    }
}

/// Writes `line` to `sink`, whole or not at all (see the module's docs); `done`: the bytes
/// of it taken by an earlier try that failed, where they cannot be taken back.
fn write_line(sink: &mut AuditSink, line: &[u8], done: &mut usize) -> io::Result<()> {
    match sink {
        AuditSink::Stdout => {
            let mut out = io::stdout().lock();
            write_rest(&mut out, line, done)?;
            out.flush()
        }
        AuditSink::Stderr => write_rest(&mut io::stderr().lock(), line, done),
        AuditSink::File(f) => f.write(line, done),
        AuditSink::Writer(w) => {
            write_rest(w, line, done)?;
            w.flush()
        }
        // Handed over by the writer thread itself, never here.
        AuditSink::Delivered(_) => Ok(()),
        // Whole on one connection, or whole again on the next.
        AuditSink::Syslog(syslog) => {
            *done = 0;
            syslog.send(line)
        }
    }
}

/// How often a writer whose file could not be opened again tries again.
const REOPEN_RETRY: Duration = Duration::from_secs(1);

/// The writer thread: one `write` per line. A line whose write fails is tried again every
/// second until it is written, whole and once ([`write_line`]); meanwhile the log is
/// failing and no decision is let through.
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
        let line = Box::new(queue.sealed(*line));
        if let AuditSink::Delivered(target) = &sink {
            // Handed over without blocking; never failing the queue: a line the sink does
            // not take is its to count (batch), and refuses the change waiting for it.
            let answer = target.sink.send(line.text.as_bytes());
            if let Some(handed) = line.handed {
                let _ = handed.send(answer);
            }
            release(queue, line.bytes, line.conn.as_deref());
            continue;
        }
        let mut done = 0;
        loop {
            match write_line(&mut sink, line.text.as_bytes(), &mut done) {
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
