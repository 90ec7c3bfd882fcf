//! Why a capture cannot be read ([`CaptureError`]): its header is not one this reads, or
//! the input failed. A problem inside a capture that the reading gets past (a bad packet, a
//! corrupt block, a cut file) is not an error but an [`crate::Event::Note`].
//!
//! The bottom layer, beside `types`: it imports nothing from the rest of the crate.

use std::{error, fmt, io};

/// A capture that cannot be read (on): [`Capture::new`](crate::Capture::new) refuses its
/// header, or reading the input failed. Its `Display` is one line, as the tool prints it.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaptureError {
    /// The input does not start with the magic number of pcap or pcapng.
    NotACapture,
    /// The pcapng section header block claims `len` bytes, more than a real one has.
    SectionHeaderTooLong {
        /// The length it claims.
        len: usize,
    },
    /// The input ends inside the capture's file header.
    HeaderCut,
    /// The capture's file header does not parse.
    BadHeader,
    /// Reading the input failed (the reader's own error).
    Io(io::Error),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::NotACapture => {
                f.write_str("not a pcap or pcapng capture (unknown magic number)")
            }
            CaptureError::SectionHeaderTooLong { len } => write!(
                f,
                "the pcapng section header block is {len} bytes long: not a capture this reads"
            ),
            CaptureError::HeaderCut => f.write_str("the capture ends inside its file header"),
            CaptureError::BadHeader => f.write_str("unreadable capture file header"),
            CaptureError::Io(e) => write!(f, "cannot read the capture: {e}"),
        }
    }
}

impl error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        match self {
            CaptureError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for CaptureError {
    fn from(e: io::Error) -> Self {
        CaptureError::Io(e)
    }
}

/// The error's one line, for callers that keep errors as text (as this crate's were before
/// they were a type): `?` still turns it into a `String`.
impl From<CaptureError> for String {
    fn from(e: CaptureError) -> Self {
        e.to_string()
    }
}
