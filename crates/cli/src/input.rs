//! Where frames come from: files, standard input or the bundled samples; binary or hex
//! text; cut into frames one at a time, so a large input is never held whole.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

use kafka_elect_leaders::{
    is_supported, split_frame, Error, DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_LEN,
};
use kafka_elect_leaders_json::hex::to_hex;

use crate::capture::{self, Capture};
use crate::fail::Failure;

/// The sample frames `inspect` shows when given no file: the reference page's two frames.
pub const BUNDLED: [(&str, &[u8]); 2] = [
    (
        "request-v2-min.bin",
        include_bytes!("../samples/request-v2-min.bin"),
    ),
    (
        "response-v2-min.bin",
        include_bytes!("../samples/response-v2-min.bin"),
    ),
];

/// What the frames of an input are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// ElectLeaders requests: the header says the version.
    Request,
    /// ElectLeaders responses of this version (the wire does not say it).
    Response(i16),
}

/// One input.
pub enum Source {
    Stdin,
    File(PathBuf),
    Bundled {
        name: &'static str,
        bytes: &'static [u8],
    },
}

impl Source {
    /// A command-line argument: `-` is standard input.
    pub fn from_arg(arg: &OsStr) -> Source {
        if arg == "-" {
            Source::Stdin
        } else {
            Source::File(PathBuf::from(arg))
        }
    }

    /// The argument, or standard input when there is none.
    pub fn from_arg_or_stdin(arg: Option<&OsStr>) -> Source {
        arg.map_or(Source::Stdin, Source::from_arg)
    }

    /// Whether the input arrives as it is written (standard input from a pipe, a socket or
    /// a terminal: `tcpdump -U -w - | elect-leaders decode -`), so that what is read of it
    /// must be written out frame by frame, not when an output buffer fills. A file, or
    /// standard input redirected from one, is not.
    pub fn is_live(&self) -> bool {
        match self {
            Source::Stdin => !stdin_is_a_file(),
            Source::File(_) | Source::Bundled { .. } => false,
        }
    }

    /// How messages name the input.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_owned(),
            Source::File(path) => path.display().to_string(),
            Source::Bundled { name, .. } => format!("{name} (bundled)"),
        }
    }

    /// `response-vN…` (the corpus's naming) holds responses of version N; `request-…`
    /// requests. `None` when the name says neither.
    pub fn kind_by_name(&self) -> Option<Kind> {
        let name = match self {
            Source::Stdin => return None,
            Source::File(path) => path.file_name()?.to_str()?,
            Source::Bundled { name, .. } => name,
        };
        if name.starts_with("request-") {
            return Some(Kind::Request);
        }
        // `response-v2-min.bin`, `response-v0.bin`: the digits up to `-`, `.` or the end.
        let rest = name.strip_prefix("response-v")?;
        let end = rest.find(['-', '.']).unwrap_or(rest.len());
        match rest[..end].parse::<i16>() {
            Ok(v) if is_supported(v) => Some(Kind::Response(v)),
            _ => None,
        }
    }

    /// Opens the input as a byte stream; hex text is decoded as it is read. A file that
    /// cannot be opened, or a directory, is a usage error (exit 2).
    pub fn open(&self, command: &'static str, hex: bool) -> Result<Box<dyn Read + Send>, Failure> {
        let raw: Box<dyn BufRead + Send> = match self {
            Source::Stdin => Box::new(BufReader::new(io::stdin())),
            Source::File(path) => {
                let cannot_open = |why: &dyn std::fmt::Display| {
                    Failure::cannot_open(format!(
                        "{command}: cannot open {}: {why}",
                        path.display()
                    ))
                };
                let file = File::open(path).map_err(|e| cannot_open(&e))?;
                // A directory opens, and fails only when read: say so now, as for a
                // missing file.
                if file.metadata().is_ok_and(|m| m.is_dir()) {
                    return Err(cannot_open(&"is a directory, not a file"));
                }
                Box::new(BufReader::with_capacity(64 * 1024, file))
            }
            // The bundled samples are binary whatever `--hex` says.
            Source::Bundled { bytes, .. } => return Ok(Box::new(*bytes)),
        };
        Ok(if hex {
            Box::new(HexReader::new(raw))
        } else {
            Box::new(raw)
        })
    }

    /// Opens the input and tells a capture (pcap or pcapng, by its magic number) from a
    /// stream of frames. Hex text is always a stream. An empty input is an error (exit 1):
    /// there is nothing to read, and saying nothing would hide a wrong file or a pipe whose
    /// writer failed. With `Expect::Frames`, an input whose first 4 bytes cannot be a
    /// frame's size is refused at once with what it looks like (text, JSON, hex text, a PNG
    /// image...), rather than as a frame of an impossible size.
    pub fn open_any(
        &self,
        command: &'static str,
        hex: bool,
        expect: Expect,
    ) -> Result<Opened, Failure> {
        let mut reader = self.open(command, hex)?;
        let mut head = [0u8; SIZE_PREFIX_LEN];
        let got = read_full(&mut reader, &mut head)
            .map_err(|e| Failure::Input(format!("{}: {e}", self.name())))?;
        if got == 0 {
            return Err(Failure::Input(self.empty_message(hex)));
        }
        if !hex && got == head.len() && capture::is_capture(&head) {
            let reader: Box<dyn Read + Send> =
                Box::new(io::Cursor::new(head.to_vec()).chain(reader));
            let capture = Capture::new(reader)
                .map_err(|e| Failure::Input(format!("{}: {e}", self.name())))?;
            return Ok(Opened::Capture(Box::new(capture)));
        }
        if !hex && got == head.len() && expect == Expect::Frames {
            let size = i32::from_be_bytes(head);
            if usize::try_from(size).map_or(true, |s| s > DEFAULT_MAX_FRAME_SIZE) {
                // Not a frame: read a little more to say what it is instead.
                let mut more = [0u8; 60];
                let extra = read_full(&mut reader, &mut more).unwrap_or(0);
                let start: Vec<u8> = head.iter().chain(&more[..extra]).copied().collect();
                let why = if size < 0 {
                    format!("here {size}, negative")
                } else {
                    format!("here {size}, over the maximum of {DEFAULT_MAX_FRAME_SIZE}")
                };
                return Err(Failure::Input(format!(
                    "{}: not a Kafka frame stream or a capture: it looks like {}. A frame \
                     stream starts with a frame's 4-byte size ({why}); a capture with the \
                     magic number of pcap or pcapng",
                    self.name(),
                    looks_like(&start)
                )));
            }
        }
        let reader: Box<dyn Read + Send> =
            Box::new(io::Cursor::new(head[..got].to_vec()).chain(reader));
        Ok(Opened::Stream(reader))
    }

    /// What is said of an input with nothing in it.
    pub fn empty_message(&self, hex: bool) -> String {
        if hex {
            format!("{}: no hex digits in it: nothing to read", self.name())
        } else {
            format!("{}: empty (0 bytes): nothing to read", self.name())
        }
    }

    /// Reads the whole input (for `scan`, which searches it).
    pub fn read_all(&self, command: &'static str, hex: bool) -> Result<Vec<u8>, Failure> {
        let mut reader = self.open(command, hex)?;
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Input(format!("{}: {e}", self.name())))?;
        Ok(bytes)
    }
}

/// What an input is expected to hold, for [`Source::open_any`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expect {
    /// Frames from the first byte (or a capture): `decode`, `inspect`.
    Frames,
    /// Frames anywhere in arbitrary bytes (or a capture): `scan`.
    Anything,
}

/// What the first bytes of an input that is neither frames nor a capture look like, for
/// the message that refuses it: a file type known by its magic number (the `infer`
/// crate), or text (JSON, hex text), or binary data; with the first bytes shown.
pub fn looks_like(start: &[u8]) -> String {
    if let Some(kind) = infer::get(start) {
        return format!(
            "a {} file ({}, starting {})",
            kind.extension().to_uppercase(),
            kind.mime_type(),
            to_hex(&start[..start.len().min(8)])
        );
    }
    // Text: UTF-8 (a character may be cut at the end) without control characters but
    // whitespace.
    let valid = match std::str::from_utf8(start) {
        Ok(text) => text,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&start[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => "",
    };
    let is_text = !valid.is_empty()
        && valid.len() + 3 >= start.len()
        && valid
            .chars()
            .all(|c| !c.is_control() || c.is_ascii_whitespace());
    if !is_text {
        return format!(
            "binary data of another kind (starting {})",
            to_hex(&start[..start.len().min(8)])
        );
    }
    let shown: String = valid.chars().take(24).collect();
    let shown = serde_json::to_string(&shown).unwrap_or_default();
    let trimmed = valid.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return format!("JSON text ({shown}...): 'encode' turns JSON objects into frames");
    }
    let hexish = valid
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .all(|l| {
            l.chars()
                .all(|c| c.is_ascii_hexdigit() || c.is_ascii_whitespace())
        });
    if hexish || trimmed.starts_with('#') {
        return format!("text ({shown}...); if it is hex text, read it with --hex");
    }
    format!("text ({shown}...)")
}

/// Whether standard input is a regular file (`< capture.pcap`).
#[cfg(unix)]
fn stdin_is_a_file() -> bool {
    use std::os::fd::AsFd;
    io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(File::from)
        .and_then(|file| file.metadata())
        .is_ok_and(|m| m.is_file())
}

/// Elsewhere standard input is taken as live: flushing too often costs only speed.
#[cfg(not(unix))]
fn stdin_is_a_file() -> bool {
    false
}

/// An input, opened.
pub enum Opened {
    /// A pcap or pcapng capture.
    Capture(Box<Capture<Box<dyn Read + Send>>>),
    /// Frames back to back (binary, or hex text decoded).
    Stream(Box<dyn Read + Send>),
}

/// One frame as read: its offset in the input and its bytes, size prefix included. The
/// last frame of an input that ends too early is shorter than its size prefix says; the
/// parser then names the field that was cut.
pub struct RawFrame {
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// Why no frame could be read.
pub enum ReadFailure {
    /// The input could not be read (or its hex text is not hex).
    Io(io::Error),
    /// The size prefix is negative or over the library's maximum frame size: the library's
    /// error, with the prefix and where it starts.
    Size {
        offset: u64,
        prefix: [u8; SIZE_PREFIX_LEN],
        error: Error,
    },
}

/// Cuts a byte stream into frames, one at a time: the 4-byte size prefix, then that many
/// bytes. Sizes over [`DEFAULT_MAX_FRAME_SIZE`] are refused (by the library's
/// `split_frame`); a frame's buffer grows as its bytes arrive, never sized from the wire's
/// count up front.
pub struct FrameReader<R> {
    inner: R,
    offset: u64,
    finished: bool,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        FrameReader {
            inner,
            offset: 0,
            finished: false,
        }
    }

    /// The next frame; `Ok(None)` at the end of the input.
    pub fn next_frame(&mut self) -> Result<Option<RawFrame>, ReadFailure> {
        if self.finished {
            return Ok(None);
        }
        let offset = self.offset;
        let mut prefix = [0u8; SIZE_PREFIX_LEN];
        let got = read_full(&mut self.inner, &mut prefix).map_err(ReadFailure::Io)?;
        if got < SIZE_PREFIX_LEN {
            self.finished = true;
            if got == 0 {
                return Ok(None);
            }
            // A cut size prefix: the parser reports it as `size` ending too early.
            return Ok(Some(RawFrame {
                offset,
                bytes: prefix[..got].to_vec(),
            }));
        }
        // The library reads the prefix: a 4-byte buffer is `Incomplete` by exactly the
        // frame's size, or a malformed size.
        let size = match split_frame(&prefix) {
            Ok(_) => 0,
            Err(error) => match error.needed() {
                Some(size) => size,
                None => {
                    self.finished = true;
                    return Err(ReadFailure::Size {
                        offset,
                        prefix,
                        error,
                    });
                }
            },
        };
        let mut bytes = Vec::with_capacity(SIZE_PREFIX_LEN + size.min(64 * 1024));
        bytes.extend_from_slice(&prefix);
        (&mut self.inner)
            .take(size as u64)
            .read_to_end(&mut bytes)
            .map_err(ReadFailure::Io)?;
        if bytes.len() < SIZE_PREFIX_LEN + size {
            self.finished = true;
        }
        self.offset += bytes.len() as u64;
        Ok(Some(RawFrame { offset, bytes }))
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Decodes hex text as it is read, a line at a time: pairs of hex digits are bytes;
/// whitespace is ignored (a pair may even be split by it), and so is everything from `#`
/// to the end of the line, so the corpus's annotated `.hex` sources can be read directly.
pub struct HexReader<R> {
    inner: R,
    line: Vec<u8>,
    pos: usize,
    line_no: usize,
    /// A first digit waiting for its pair, with its line and column (for the message
    /// when the input ends there).
    high: Option<(u8, usize, usize)>,
}

impl<R: BufRead> HexReader<R> {
    pub fn new(inner: R) -> Self {
        HexReader {
            inner,
            line: Vec::new(),
            pos: 0,
            line_no: 0,
            high: None,
        }
    }
}

impl<R: BufRead> Read for HexReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < out.len() {
            let Some(&c) = self.line.get(self.pos) else {
                if n > 0 {
                    break;
                }
                self.line.clear();
                self.pos = 0;
                if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                    if let Some((_, line, column)) = self.high {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "hex input: odd number of hex digits: the last one (line \
                                 {line}, column {column}) has no pair, so the last byte is cut"
                            ),
                        ));
                    }
                    return Ok(0);
                }
                self.line_no += 1;
                continue;
            };
            self.pos += 1;
            let nibble = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                b'#' => {
                    self.pos = self.line.len();
                    continue;
                }
                c if c.is_ascii_whitespace() => continue,
                _ => {
                    let shown = String::from_utf8_lossy(&self.line[self.pos - 1..])
                        .chars()
                        .next()
                        .unwrap_or('?');
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "hex input: {shown:?} is not a hex digit (line {}, column {})",
                            self.line_no, self.pos
                        ),
                    ));
                }
            };
            match self.high.take() {
                None => self.high = Some((nibble, self.line_no, self.pos)),
                Some((high, ..)) => {
                    out[n] = (high << 4) | nibble;
                    n += 1;
                }
            }
        }
        Ok(n)
    }
}
