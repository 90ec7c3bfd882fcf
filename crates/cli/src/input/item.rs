//! What an input hands on, whatever it is (a stream of frames, a capture, a live
//! interface): [`Item`]s, each frame classified as an ElectLeaders request, an ElectLeaders
//! response with the version to parse it at, a frame of another API, or a response whose
//! request was not seen ([`What`]); and the notes, closes and cuts around them.

use kafka_elect_leaders::{Error, SIZE_PREFIX_LEN};
use kafka_elect_leaders_capture::traffic::{Found, Note, What};
use kafka_elect_leaders_capture::{CaptureStats, ConnId};

use super::source::Kind;

/// One classified item of an input.
pub enum Item {
    /// A frame, classified.
    Frame(Frame),
    /// Something the reader of the output should know (captures only).
    Note(Note),
    /// A capture's connection ended: nothing more comes from it.
    Closed(ConnId),
    /// A stream of frames whose next size prefix the library refuses: the stream ends here.
    Cut(Cut),
}

/// A frame and where it was found.
pub enum Frame {
    /// In a stream of frames (a file, standard input).
    Stream(StreamFrame),
    /// In a capture's connection (a file or a live interface), paired by the capture reader.
    Capture(Found),
}

/// A frame of a stream: its number, where it starts, what it is and its bytes.
pub struct StreamFrame {
    /// The frame's number in the input, from 1.
    pub index: usize,
    /// Its first byte in the input.
    pub offset: u64,
    pub what: What,
    /// The whole frame, size prefix included (the last one of an input cut short is
    /// shorter than its prefix says: the parser names the field that was cut).
    pub bytes: Vec<u8>,
}

/// A size prefix no frame can have, and where.
pub struct Cut {
    /// The number the frame would have had, from 1.
    pub index: usize,
    pub offset: u64,
    pub prefix: [u8; SIZE_PREFIX_LEN],
    pub error: Error,
    /// What the stream's frames were read as.
    pub kind: Kind,
}

impl Frame {
    /// What the frame is.
    pub fn what(&self) -> What {
        match self {
            Frame::Stream(f) => f.what,
            Frame::Capture(found) => found.what,
        }
    }

    /// The frame's bytes (of a capture's frame passed over as it streamed by, its head).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Frame::Stream(f) => &f.bytes,
            Frame::Capture(found) => &found.frame,
        }
    }

    /// The frame's length on the wire, size prefix included.
    pub fn len(&self) -> usize {
        match self {
            Frame::Stream(f) => f.bytes.len(),
            Frame::Capture(found) => found.len,
        }
    }

    /// The capture connection the frame was found on; `None` in a stream.
    pub fn conn(&self) -> Option<u32> {
        match self {
            Frame::Stream(_) => None,
            Frame::Capture(found) => Some(found.origin.conn.0),
        }
    }

    /// For a request the capture reader keeps until its response comes: its connection
    /// and frame number, by which the response will name it.
    pub fn waiting_at(&self) -> Option<(u32, u64)> {
        match self {
            Frame::Stream(_) => None,
            Frame::Capture(found) => found
                .waits
                .then_some((found.origin.conn.0, found.origin.index)),
        }
    }

    /// For a response paired with its request: the request's connection and frame number.
    pub fn answering(&self) -> Option<(u32, u64)> {
        match self {
            Frame::Stream(_) => None,
            Frame::Capture(found) => found.request.map(|a| (found.origin.conn.0, a.index)),
        }
    }
}

/// What a walk saw.
#[derive(Default)]
pub struct Walked {
    /// Notes that mean some traffic was not decoded.
    pub partial: u64,
    /// The capture's counts (packets, those not TCP/IP...), from a capture file.
    pub stats: Option<CaptureStats>,
}
