//! The sample frames of `corpus/` and the small tools tests use on frames: hex literals
//! (as the `corpus/src/*.hex` sources write them) and surgery on size prefixes and bytes.

use std::ops::Range;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// The corpus

/// What a corpus file holds, told by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `request-…`: the version is in the frame.
    Request,
    /// `response-vN-…`: the version is only in the name.
    Response {
        /// The version the name gives, at which the response is parsed.
        version: i16,
    },
}

/// One corpus frame, loaded.
pub struct CorpusFrame {
    /// The file name, e.g. `request-v2-min.bin`.
    pub name: String,
    /// The whole frame, size prefix included.
    pub bytes: Vec<u8>,
}

impl CorpusFrame {
    /// Request or response (and at which version), told by the file's name.
    pub fn kind(&self) -> Kind {
        kind_of(&self.name)
    }

    /// The file holds a request.
    pub fn is_request(&self) -> bool {
        self.kind() == Kind::Request
    }
}

/// `corpus/` at the workspace's root.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// Every `corpus/*.bin`, sorted by name.
pub fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus/ is readable")
        .map(|entry| entry.expect("corpus/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "bin"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 18,
        "corpus/ holds {} .bin files, the README lists 18",
        files.len()
    );
    files
}

/// Every corpus frame, sorted by name.
pub fn load_corpus() -> Vec<CorpusFrame> {
    corpus_files()
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("UTF-8 file name")
                .to_owned();
            let bytes = std::fs::read(&path).expect("corpus file is readable");
            CorpusFrame { name, bytes }
        })
        .collect()
}

/// Every corpus request frame, sorted by name.
pub fn load_requests() -> Vec<CorpusFrame> {
    load_corpus()
        .into_iter()
        .filter(CorpusFrame::is_request)
        .collect()
}

/// One corpus file by name (`request-v0.bin`).
pub fn load(name: &str) -> Vec<u8> {
    std::fs::read(corpus_dir().join(name)).unwrap_or_else(|e| panic!("corpus/{name}: {e}"))
}

/// Request or response, and a response's version, from the file name.
pub fn kind_of(name: &str) -> Kind {
    if name.starts_with("request-") {
        return Kind::Request;
    }
    let version = response_version(name)
        .unwrap_or_else(|| panic!("{name}: neither request-… nor response-vN-…"));
    Kind::Response { version }
}

/// N of `response-vN-…`, or `None` for any other name.
pub fn response_version(name: &str) -> Option<i16> {
    let rest = name.strip_prefix("response-v")?;
    let digits = &rest[..rest.find(|c: char| !c.is_ascii_digit())?];
    digits.parse().ok()
}

// ---------------------------------------------------------------------------------------
// Hex and frame surgery

/// Decodes hex digits; whitespace, `|` and `_` are ignored so literals can be laid out by
/// field.
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'|' && *b != b'_')
        .collect();
    assert!(
        digits.len() % 2 == 0,
        "odd number of hex digits in {text:?}"
    );
    digits
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).expect("ASCII");
            u8::from_str_radix(pair, 16).unwrap_or_else(|_| panic!("not hex: {pair:?}"))
        })
        .collect()
}

/// Decodes an annotated hex source (`corpus/src/*.hex`): `#` starts a comment.
pub fn hex_source(text: &str) -> Vec<u8> {
    let stripped: String = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    hex(&stripped)
}

/// Sets the size prefix to the number of bytes that follow it.
pub fn fix_size(mut frame: Vec<u8>) -> Vec<u8> {
    let size = i32::try_from(frame.len() - 4).expect("frame fits i32");
    frame[..4].copy_from_slice(&size.to_be_bytes());
    frame
}

/// `frame` with the bytes at `at` overwritten by `with` (same length: the size stays right).
pub fn patch(frame: &[u8], at: usize, with: &[u8]) -> Vec<u8> {
    let mut out = frame.to_vec();
    out[at..at + with.len()].copy_from_slice(with);
    out
}

/// `frame` with the bytes in `at` replaced by `with`, and the size prefix fixed.
pub fn splice(frame: &[u8], at: Range<usize>, with: &[u8]) -> Vec<u8> {
    let mut out = frame.to_vec();
    out.splice(at, with.iter().copied());
    fix_size(out)
}

/// `frame` with its size prefix set to `size`, nothing else changed.
pub fn with_size_prefix(frame: &[u8], size: i32) -> Vec<u8> {
    patch(frame, 0, &size.to_be_bytes())
}
