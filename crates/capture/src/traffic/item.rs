//! What the analyser hands on ([`Item`]): whole frames ([`Found`]) with where they were
//! found ([`Origin`]) and what they are ([`What`]), notes ([`Note`]), and closes.
//!
//! The bottom of the Kafka layer: plain data, no framing or pairing.

use crate::types::{ConnId, Endpoint, Timestamp};

/// Which way a direction's frames go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// Client to broker.
    Requests,
    /// Broker to client.
    Responses,
}

/// Where a frame of a capture was found.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The connection, numbered from 1 in the order the capture shows them.
    pub conn: ConnId,
    /// The sender of the frame.
    pub from: Endpoint,
    /// The receiver of the frame.
    pub to: Endpoint,
    /// The first packet, in capture order, that carried bytes of the frame (numbered from
    /// 1, as Wireshark does).
    pub first_packet: u64,
    /// The last one: the packet that completed the frame.
    pub last_packet: u64,
    /// The capture time of `last_packet`.
    pub time: Timestamp,
    /// The frame's first byte in its direction's stream.
    pub offset: u64,
    /// The frame's number in its direction, from 1.
    pub index: u64,
}

/// What a frame is. Each variant's text says what its fields are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum What {
    /// An ElectLeaders request (v0-v2): `parse_request`.
    ElectRequest,
    /// An ElectLeaders response, of its request's version: `parse_response`.
    ElectResponse { version: i16 },
    /// A frame of another API (or an ElectLeaders version this crate does not read).
    Other {
        role: Role,
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    },
    /// A response whose request was not seen (the capture began after it, or it was lost).
    Unpaired { correlation_id: i32 },
}

/// The request a response answers, as the capture showed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The capture time of the packet that completed the request (its [`Origin::time`]).
    pub time: Timestamp,
    /// The request's frame number in its direction (its [`Origin::index`]).
    pub index: u64,
}

/// A frame, whole, size prefix included.
pub struct Found {
    /// Where it was found.
    pub origin: Origin,
    /// What it is, and for a response the version to parse it at.
    pub what: What,
    /// For a response paired with its request (of any API): that request. `None` for a
    /// request and for an unpaired response.
    pub request: Option<Asked>,
    /// For a request: it is kept until its response comes. False for a request Kafka never
    /// answers (a Produce with `acks` 0: not counted as unanswered), for one the in-flight
    /// budget could not keep (a note names it), and for every response.
    pub waits: bool,
    /// For a request: the in-flight budget could not keep it for pairing (a note named
    /// it); its response, if the capture has one, is listed unpaired. Never counted as
    /// unanswered.
    pub not_kept: bool,
    /// The frame's bytes, size prefix included: all of them, unless the frame was passed
    /// over as it streamed by (a frame of an API not decoded, longer than
    /// [`PASS_OVER_HEAD`](crate::traffic::PASS_OVER_HEAD), or one let go by
    /// [`Limits::held_bytes`](crate::Limits::held_bytes)): then its head alone (size
    /// prefix and header).
    pub frame: Vec<u8>,
    /// The frame's length, size prefix included (`frame.len()` when it is whole).
    pub len: usize,
}

impl Found {
    /// Whether [`Found::frame`] holds the whole frame (it was not passed over).
    pub fn is_whole(&self) -> bool {
        self.frame.len() == self.len
    }
}

/// Something the reader of the output should know: where, and what. `partial` when it
/// means some traffic could not be decoded (a gap, a malformed frame, a cut capture).
pub struct Note {
    /// The connection it is about (with its direction: from, to), if it is about one.
    pub conn: Option<(ConnId, Endpoint, Endpoint)>,
    /// The packet where it was noticed, if it is about one.
    pub packet: Option<u64>,
    /// What happened, in one line.
    pub message: String,
    /// Some traffic was not decoded because of it: the output is partial.
    pub partial: bool,
}

/// What the analyser hands on.
pub enum Item {
    /// A whole frame.
    Frame(Found),
    /// Something that could not be read, or that the reader of the output should know.
    Note(Note),
    /// A connection ended: nothing more will come from it.
    Closed(ConnId),
}

/// A frame of a capture that the library refused, as a note that names where it was.
pub fn bad_frame(o: &Origin, e: &kafka_elect_leaders::Error) -> Note {
    Note {
        conn: Some((o.conn, o.from, o.to)),
        packet: Some(o.last_packet),
        message: format!(
            "frame at stream offset {}: {} at frame byte {}: {}",
            o.offset, e.field, e.offset, e.kind
        ),
        partial: true,
    }
}
