//! Where an input comes from (files, standard input or the bundled samples; binary or hex
//! text), and what it is: a capture or a stream of frames, told by its first bytes.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

use kafka_elect_leaders::{is_supported, DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_LEN};
use kafka_elect_leaders_json::hex::to_hex;

use crate::capture::{self, Capture};
use crate::fail::Failure;

use super::frames::{read_full, HexReader};

/// The sample frames `inspect` shows when given no file: the reference page's two frames.
pub const BUNDLED: [(&str, &[u8]); 2] = [
    (
        "request-v2-min.bin",
        include_bytes!("../../samples/request-v2-min.bin"),
    ),
    (
        "response-v2-min.bin",
        include_bytes!("../../samples/response-v2-min.bin"),
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
