//! One walk over any input: [`Items::open`] tells a capture from a stream of frames (or
//! [`Items::live`] captures on an interface), and [`Items::walk`] hands each classified
//! [`Item`] on as soon as it is complete.
//!
//! Internal iteration (a callback per item) rather than `Iterator`: a live capture is
//! driven by libpcap, its signals and its clock, and hands items on as packets come.

use std::io::Read;

use kafka_elect_leaders::{is_known_request, peek_request, API_KEY};
use kafka_elect_leaders_capture::traffic::{self, Role, Traffic, What};
use kafka_elect_leaders_capture::Capture;

use crate::fail::Failure;
use crate::flags::{LiveFlags, ReadFlags};

use super::frames::{FrameReader, ReadFailure};
use super::item::{Cut, Frame, Item, StreamFrame, Walked};
use super::source::{Expect, Kind, Opened, Source};

/// An input, opened, with how its items are read.
pub struct Items<'a> {
    /// How messages name the input.
    pub name: String,
    pub from: From<'a>,
    read: &'a ReadFlags,
}

/// Where the items come from.
pub enum From<'a> {
    /// Frames back to back, read as `kind` says.
    Stream {
        reader: Box<dyn Read + Send>,
        kind: Kind,
    },
    /// A pcap or pcapng capture.
    Capture(Box<Capture<Box<dyn Read + Send>>>),
    /// A live interface, for `command`.
    Live {
        command: &'static str,
        flags: &'a LiveFlags,
    },
}

impl<'a> Items<'a> {
    /// Opens `source` for `command` (see [`Source::open_any`]); a stream's frames are read
    /// as `kind` says.
    pub fn open(
        command: &'static str,
        source: &Source,
        kind: Kind,
        read: &'a ReadFlags,
        expect: Expect,
    ) -> Result<Items<'a>, Failure> {
        let from = match source.open_any(command, read.hex, expect)? {
            Opened::Capture(capture) => From::Capture(capture),
            Opened::Stream(reader) => From::Stream { reader, kind },
        };
        Ok(Items {
            name: source.name(),
            from,
            read,
        })
    }

    /// The interface `flags` names, for `command` (opened when walked).
    pub fn live(command: &'static str, flags: &'a LiveFlags, read: &'a ReadFlags) -> Items<'a> {
        let interface = flags.interface.as_deref().unwrap_or_default();
        Items {
            name: super::live::name(interface),
            from: From::Live { command, flags },
            read,
        }
    }

    /// Whether the input is a stream of frames (no connections, no notes).
    pub fn is_stream(&self) -> bool {
        matches!(self.from, From::Stream { .. })
    }

    /// Hands each item to `each` as soon as it is complete. An error of `each` ends the
    /// walk with it.
    pub fn walk(
        self,
        each: &mut dyn FnMut(Item) -> Result<(), Failure>,
    ) -> Result<Walked, Failure> {
        let name = self.name;
        match self.from {
            From::Stream { reader, kind } => walk_stream(&name, reader, kind, each),
            From::Capture(capture) => walk_capture(&name, *capture, self.read, each),
            From::Live { command, flags } => {
                super::live::walk(command, flags, self.read, &mut |item| {
                    each(classified(item))
                })
            }
        }
    }
}

/// A capture reader's item as the tool's.
fn classified(item: traffic::Item) -> Item {
    match item {
        traffic::Item::Frame(found) => Item::Frame(Frame::Capture(found)),
        traffic::Item::Note(note) => Item::Note(note),
        traffic::Item::Closed(conn) => Item::Closed(conn),
    }
}

/// What a frame of a stream is: a stream of requests may hold frames of any API (a
/// recorded connection), told by their header; a stream of responses is of one version.
fn classify(kind: Kind, frame: &[u8]) -> What {
    match kind {
        Kind::Response(version) => What::ElectResponse { version },
        Kind::Request => match peek_request(frame) {
            Ok(peek)
                if peek.api_key != API_KEY && is_known_request(peek.api_key, peek.api_version) =>
            {
                What::Other {
                    role: Role::Requests,
                    api_key: peek.api_key,
                    api_version: peek.api_version,
                    correlation_id: peek.correlation_id,
                }
            }
            _ => What::ElectRequest,
        },
    }
}

/// Frames back to back, one at a time.
fn walk_stream(
    name: &str,
    reader: Box<dyn Read + Send>,
    kind: Kind,
    each: &mut dyn FnMut(Item) -> Result<(), Failure>,
) -> Result<Walked, Failure> {
    let mut frames = FrameReader::new(reader);
    let mut index = 0;
    loop {
        match frames.next_frame() {
            Ok(Some(frame)) => {
                index += 1;
                let what = classify(kind, &frame.bytes);
                each(Item::Frame(Frame::Stream(StreamFrame {
                    index,
                    offset: frame.offset,
                    what,
                    bytes: frame.bytes,
                })))?;
            }
            Ok(None) => return Ok(Walked::default()),
            Err(ReadFailure::Io(e)) => return Err(Failure::Input(format!("{name}: {e}"))),
            Err(ReadFailure::Size {
                offset,
                prefix,
                error,
            }) => {
                each(Item::Cut(Cut {
                    index: index + 1,
                    offset,
                    prefix,
                    error,
                    kind,
                }))?;
                return Ok(Walked::default());
            }
        }
    }
}

/// A capture file, read as Kafka traffic ([`Traffic`]), counting the notes that make the
/// output partial.
fn walk_capture<R: Read>(
    name: &str,
    mut capture: Capture<R>,
    read: &ReadFlags,
    each: &mut dyn FnMut(Item) -> Result<(), Failure>,
) -> Result<Walked, Failure> {
    let mut walked = Walked::default();
    capture.set_limits(read.limits());
    let mut traffic = Traffic::from_capture(capture, read.port);
    for item in traffic.by_ref() {
        let item = item.map_err(|e| Failure::Input(format!("{name}: {e}")))?;
        if let traffic::Item::Note(note) = &item {
            walked.partial += u64::from(note.partial);
        }
        each(classified(item))?;
    }
    let stats = traffic.stats();
    if stats.packets > 0 && stats.tcp == 0 {
        // Nothing to decode is not the same as nothing found: said, not an error.
        each(Item::Note(traffic::Note {
            conn: None,
            packet: None,
            message: format!(
                "none of the capture's {} packets is TCP over IP ({} of them not TCP/IP, {} \
                 of a link type not read): no Kafka traffic could be read",
                stats.packets, stats.not_tcp, stats.unsupported_link
            ),
            partial: false,
        }))?;
    }
    walked.stats = Some(stats);
    Ok(walked)
}
