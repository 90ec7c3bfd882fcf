//! Packet captures (pcap and pcapng) turned into reassembled TCP byte streams, read as a stream:
//! memory is bounded by the open connections times a per-direction reassembly limit, never by
//! the size of the capture.
//!
//! [`Capture`] reads blocks with `pcap-parser`'s streaming readers, decodes the link layer, IP
//! and TCP ([`decode`]), and follows each TCP connection ([`reasm`]), producing [`Event`]s in
//! capture order: a connection opens, bytes of each direction arrive in stream order (with
//! gaps where the capture lost some), the connection closes. Nothing here knows about Kafka.

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Cursor, Read};
use std::sync::{Arc, Mutex};

use pcap_parser::pcapng::{Block, OptionCode};
use pcap_parser::traits::{PcapNGPacketBlock, PcapReaderIterator};
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};

use crate::decode::{self, Decoded};
use crate::error::CaptureError;
use crate::reasm::{Key, Sink, Tracker};
use crate::types::{CaptureStats, Event, Limits, Timestamp};

/// The read buffer to start with.
const BUFFER: usize = 64 << 10;
/// The largest block (pcapng) or packet record (pcap) read: the buffer doubles, as it fills, to
/// hold one up to this; a larger one is skipped (pcapng) or ends the reading (pcap, whose
/// records cannot be skipped safely: such a length is far more likely a corrupt file than a
/// packet).
const BLOCK_LIMIT: usize = 16 << 20;
/// Room in the buffer beyond the block being read.
const SLACK: usize = 4096;
/// A section header larger than this is not a real one.
const SECTION_HEADER_LIMIT: usize = 64 << 10;
/// Interfaces per pcapng section, at most.
const INTERFACE_LIMIT: usize = 1 << 16;

const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
const PCAPNG_BOM: u32 = 0x1a2b_3c4d;
/// pcapng block types that carry a packet: obsolete Packet Block, Simple, Enhanced.
const PB_TYPE: u32 = 2;
const SPB_TYPE: u32 = 3;
const EPB_TYPE: u32 = 6;

/// True when `head` (the first bytes of an input, at least 4) starts with the magic number of a
/// pcap file (either byte order; microsecond a1b2c3d4 or nanosecond a1b23c4d) or a pcapng file
/// (0a0d0d0a).
pub fn is_capture(head: &[u8]) -> bool {
    matches!(
        head.get(..4),
        Some(
            [0xa1, 0xb2, 0xc3, 0xd4]
                | [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0x0a, 0x0d, 0x0d, 0x0a]
        )
    )
}

/// The input, with the bytes already read to recognise it put back in front, and the last
/// I/O error kept (pcap-parser only says that a read failed).
struct Source<R> {
    head: Cursor<Vec<u8>>,
    inner: R,
    error: Arc<Mutex<Option<io::Error>>>,
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if (self.head.position() as usize) < self.head.get_ref().len() {
            return self.head.read(buf);
        }
        loop {
            match self.inner.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // pcap-parser keeps only that a read failed: the error itself is kept
                    // here, and a copy of it (its kind and words) handed on.
                    let copy = io::Error::new(e.kind(), e.to_string());
                    if let Ok(mut slot) = self.error.lock() {
                        *slot = Some(e);
                    }
                    return Err(copy);
                }
                ok => return ok,
            }
        }
    }
}

enum Reader<R: Read> {
    Legacy(LegacyPcapReader<Source<R>>),
    Ng(PcapNGReader<Source<R>>),
}

impl<R: Read> Reader<R> {
    fn it(&mut self) -> &mut dyn PcapReaderIterator {
        match self {
            Reader::Legacy(r) => r,
            Reader::Ng(r) => r,
        }
    }
}

/// A timestamp resolution: units per second as 10^n or 2^n.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Resolution {
    Pow10(u32),
    Pow2(u32),
}

impl Resolution {
    /// From pcapng's `if_tsresol` byte; None when out of range.
    fn from_tsresol(b: u8) -> Option<Resolution> {
        if b & 0x80 == 0 {
            (b <= 19).then_some(Resolution::Pow10(u32::from(b)))
        } else {
            let e = u32::from(b & 0x7f);
            (e <= 63).then_some(Resolution::Pow2(e))
        }
    }

    fn time(self, ticks: u64, offset_secs: i64) -> Timestamp {
        let t = match self {
            Resolution::Pow10(e) => {
                let unit = 10u64.pow(e);
                Timestamp::from_parts(ticks / unit, ticks % unit, unit)
            }
            Resolution::Pow2(e) => {
                let frac = ticks & ((1u64 << e) - 1);
                let nanos = ((u128::from(frac) * 1_000_000_000) >> e) as u32;
                Timestamp {
                    secs: ticks >> e,
                    nanos,
                }
            }
        };
        let secs = i128::from(t.secs) + i128::from(offset_secs);
        Timestamp {
            secs: secs.clamp(0, i128::from(u64::MAX)) as u64,
            nanos: t.nanos,
        }
    }
}

/// One capture interface (the only one of a pcap file; one per IDB of a pcapng section).
struct Interface {
    linktype: u32,
    snaplen: u32,
    resolution: Resolution,
    offset_secs: i64,
    /// Whether its unsupported link type was noted already.
    noted: bool,
}

/// Everything but the reader: what blocks are turned into.
struct Decoder {
    ng: bool,
    /// Byte order of the pcap file or of the current pcapng section.
    big_endian: bool,
    /// A pcap file of the "modified" format (24-byte record headers).
    modified: bool,
    interfaces: Vec<Interface>,
    tracker: Tracker,
    stats: CaptureStats,
    last_time: Timestamp,
}

enum Phase {
    Reading,
    /// The end was reached: closing the connections still open, last key first.
    Closing(Vec<Key>),
    Done,
}

/// A pcap or pcapng capture read as TCP events.
pub struct Capture<R: Read> {
    reader: Reader<R>,
    io_error: Arc<Mutex<Option<io::Error>>>,
    capacity: usize,
    /// Bytes of an unusable block still to skip.
    skip: u64,
    dec: Decoder,
    queue: VecDeque<Event>,
    phase: Phase,
}

impl<R: Read> fmt::Debug for Capture<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("pcapng", &self.dec.ng)
            .field("stats", &self.stats())
            .field("queued", &self.queue.len())
            .finish_non_exhaustive()
    }
}

/// What the reader said, without its borrow of the buffer.
enum Step {
    Consume(usize),
    Eof,
    Incomplete,
    UnexpectedEof,
    TooSmall,
    Corrupt,
    NotRecognized,
    ReadError,
}

impl<R: Read> Capture<R> {
    /// Reads the file header / section header. Errors when the input is not a capture it can
    /// read.
    pub fn new(mut reader: R) -> Result<Self, CaptureError> {
        let mut head = Vec::new();
        read_up_to(&mut reader, &mut head, 12)?;
        if !is_capture(&head) {
            return Err(CaptureError::NotACapture);
        }
        let ng = head[..4] == PCAPNG_MAGIC;
        if ng {
            // Read the whole section header block, so that the parser sees it at once.
            let len = ng_block_len(&head, None).unwrap_or(0) as usize;
            if len > SECTION_HEADER_LIMIT {
                return Err(CaptureError::SectionHeaderTooLong { len });
            }
            read_up_to(&mut reader, &mut head, len)?;
        } else {
            read_up_to(&mut reader, &mut head, 24)?;
        }
        let io_error = Arc::new(Mutex::new(None));
        let source = Source {
            head: Cursor::new(head),
            inner: reader,
            error: Arc::clone(&io_error),
        };
        let opened = if ng {
            PcapNGReader::new(BUFFER, source).map(Reader::Ng)
        } else {
            LegacyPcapReader::new(BUFFER, source).map(Reader::Legacy)
        };
        let reader = opened.map_err(|e| match e {
            PcapError::Incomplete(_) | PcapError::UnexpectedEof | PcapError::Eof => {
                CaptureError::HeaderCut
            }
            PcapError::ReadError => {
                CaptureError::Io(take_io_error(&io_error).unwrap_or_else(|| io::Error::other("")))
            }
            _ => CaptureError::BadHeader,
        })?;
        Ok(Capture {
            reader,
            io_error,
            capacity: BUFFER,
            skip: 0,
            dec: Decoder {
                ng,
                big_endian: false,
                modified: false,
                interfaces: Vec::new(),
                tracker: Tracker::default(),
                stats: CaptureStats::default(),
                last_time: Timestamp::default(),
            },
            queue: VecDeque::new(),
            phase: Phase::Reading,
        })
    }

    /// The next event; Ok(None) at the end (after the final Close events for every open
    /// connection). An unreadable block is a Note; when the reading cannot resynchronise after
    /// it, the capture ends there. Err only for an I/O error of the underlying reader.
    pub fn next_event(&mut self) -> Result<Option<Event>, CaptureError> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Ok(Some(event));
            }
            match &mut self.phase {
                Phase::Done => return Ok(None),
                Phase::Closing(keys) => match keys.pop() {
                    Some(key) => {
                        let at = (self.dec.stats.packets, self.dec.last_time);
                        let mut sink = Sink {
                            events: &mut self.queue,
                            notes: &mut self.dec.stats.notes,
                        };
                        self.dec.tracker.close_at_end(key, at, &mut sink);
                    }
                    None => self.phase = Phase::Done,
                },
                Phase::Reading => self.step()?,
            }
        }
    }

    /// Packets read, packets skipped as not TCP, notes emitted (and a few more counts).
    pub fn stats(&self) -> CaptureStats {
        self.dec.totals()
    }

    /// Sets how many connections are followed at once and for how long one that is idle
    /// ([`Limits::default`] until then).
    pub fn set_limits(&mut self, limits: Limits) {
        self.dec.tracker.set_limits(limits);
    }

    /// The limits set (for [`crate::Traffic`], which takes the in-flight budgets from them).
    pub fn limits(&self) -> Limits {
        self.dec.tracker.limits()
    }

    fn finish(&mut self) {
        self.phase = Phase::Closing(self.dec.tracker.open_keys());
    }

    fn note(&mut self, packet: u64, message: String) {
        self.dec.stats.notes += 1;
        self.queue.push_back(Event::Note { packet, message });
    }

    /// The error of the read that just failed.
    fn io_error(&self) -> CaptureError {
        CaptureError::Io(
            take_io_error(&self.io_error).unwrap_or_else(|| io::Error::other("read error")),
        )
    }

    /// One step of the reader: a block handled, or the buffer refilled, grown or skipped.
    fn step(&mut self) -> Result<(), CaptureError> {
        if self.skip > 0 {
            return self.skip_step();
        }
        // A block shorter than its own header and trailer (12 bytes): pcap-parser 0.17
        // subtracts 12 from the length unchecked for some block types (an overflow panic
        // in a debug build, a 4 GiB "incomplete" block in a release one), so it is not
        // handed over.
        if let Some(len) = self.short_ng_block() {
            let next_packet = self.dec.stats.packets + 1;
            self.note(
                next_packet,
                format!(
                    "a pcapng block with an impossible length ({len} bytes, less than the 12 of \
                     its header and trailer): the rest of the capture cannot be read"
                ),
            );
            self.finish();
            return Ok(());
        }
        let r = self.reader.it();
        let step = match r.next() {
            Ok((len, block)) => {
                self.dec.block(block, &mut self.queue);
                Step::Consume(len)
            }
            Err(PcapError::Eof) => Step::Eof,
            Err(PcapError::Incomplete(_)) => Step::Incomplete,
            Err(PcapError::UnexpectedEof) => Step::UnexpectedEof,
            Err(PcapError::BufferTooSmall) => Step::TooSmall,
            Err(PcapError::NomError(..)) | Err(PcapError::OwnedNomError(..)) => Step::Corrupt,
            Err(PcapError::HeaderNotRecognized) => Step::NotRecognized,
            Err(PcapError::ReadError) => Step::ReadError,
        };
        let next_packet = self.dec.stats.packets + 1;
        match step {
            Step::Consume(len) => self.reader.it().consume(len),
            Step::Eof => self.finish(),
            Step::Incomplete => {
                if self.dec.ng {
                    // A block that is all in the buffer and still "incomplete" contradicts
                    // its own length: corrupt.
                    let r = self.reader.it();
                    if let Some(len) = ng_block_len(r.data(), Some(self.dec.big_endian)) {
                        if len as usize <= r.data().len() {
                            self.bad_block(len, "its contents overrun its length");
                            return Ok(());
                        }
                    }
                }
                let r = self.reader.it();
                let before = r.data().len();
                if r.refill().is_err() {
                    return Err(self.io_error());
                }
                let r = self.reader.it();
                if r.data().len() == before && !r.reader_exhausted() {
                    self.too_small();
                }
            }
            Step::UnexpectedEof => {
                let left = self.reader.it().data().len();
                let what = if self.dec.ng {
                    "block"
                } else {
                    "packet record"
                };
                self.note(
                    next_packet,
                    format!(
                        "the capture ends in the middle of a {what} ({left} bytes of it are there)"
                    ),
                );
                self.finish();
            }
            Step::TooSmall => {
                // The buffer is grown only once it is full of what was read: a length read off
                // the file (up to 16 MiB) never sizes an allocation by itself.
                let fits = self.next_block_len().is_some_and(|n| n <= BLOCK_LIMIT);
                let r = self.reader.it();
                let before = r.data().len();
                if fits && before < self.capacity {
                    if r.refill().is_err() {
                        return Err(self.io_error());
                    }
                    let r = self.reader.it();
                    if r.data().len() > before || r.reader_exhausted() {
                        return Ok(());
                    }
                }
                self.too_small();
            }
            Step::Corrupt => {
                let len = self
                    .dec
                    .ng
                    .then(|| ng_block_len(self.reader.it().data(), Some(self.dec.big_endian)))
                    .flatten();
                match len {
                    Some(len) => self.bad_block(len, "it does not parse"),
                    None => {
                        let what = if self.dec.ng {
                            "pcapng block"
                        } else {
                            "packet record"
                        };
                        self.note(
                            next_packet,
                            format!("unreadable {what}: the rest of the capture cannot be read"),
                        );
                        self.finish();
                    }
                }
            }
            Step::NotRecognized => {
                self.note(
                    next_packet,
                    "unreadable pcapng section header: the rest of the capture cannot be read"
                        .into(),
                );
                self.finish();
            }
            Step::ReadError => return Err(self.io_error()),
        }
        Ok(())
    }

    /// The length the next pcapng block (not a section header) claims, when it is less than
    /// the 12 bytes every block has.
    fn short_ng_block(&mut self) -> Option<u32> {
        if !self.dec.ng {
            return None;
        }
        let data = self.reader.it().data();
        if data.get(..4)? == PCAPNG_MAGIC {
            return None;
        }
        let raw: [u8; 4] = data.get(4..8)?.try_into().ok()?;
        let len = if self.dec.big_endian {
            u32::from_be_bytes(raw)
        } else {
            u32::from_le_bytes(raw)
        };
        (len < 12).then_some(len)
    }

    /// The length of the next block or packet record (its header included), as its header
    /// says, when the buffer holds enough of it to tell.
    fn next_block_len(&mut self) -> Option<usize> {
        let data = self.reader.it().data();
        if self.dec.ng {
            ng_block_len(data, Some(self.dec.big_endian)).map(|len| len as usize)
        } else {
            data.get(8..12)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(|b| {
                    if self.dec.big_endian {
                        u32::from_be_bytes(b)
                    } else {
                        u32::from_le_bytes(b)
                    }
                })
                .map(|caplen| {
                    let header = if self.dec.modified { 24 } else { 16 };
                    (caplen as usize).saturating_add(header)
                })
        }
    }

    /// The buffer cannot hold the next block: grow it, or skip the block (pcapng), or stop.
    fn too_small(&mut self) {
        let needed = self.next_block_len();
        let grow_to = match needed {
            // Doubling, up to what the block needs: at most twice the bytes actually read.
            Some(n) if n <= BLOCK_LIMIT => Some((n + SLACK).min(self.capacity * 2)),
            None if !self.dec.ng && self.capacity < BLOCK_LIMIT => Some(self.capacity * 2),
            _ => None,
        };
        if let Some(size) = grow_to.map(|s| s.min(BLOCK_LIMIT + SLACK)) {
            if size > self.capacity {
                self.reader.it().grow(size);
                self.capacity = size;
                return;
            }
        }
        if self.dec.ng {
            if let Some(len) = ng_block_len(self.reader.it().data(), Some(self.dec.big_endian)) {
                self.bad_block(len, "it is larger than the 16 MiB this reads");
                return;
            }
        }
        let message = match needed {
            Some(n) if !self.dec.ng => {
                let header = if self.dec.modified { 24 } else { 16 };
                format!(
                    "a packet record of {} bytes is larger than the 16 MiB this reads: the rest of the capture cannot be read",
                    n - header
                )
            }
            _ => "a pcapng block with an impossible length: the rest of the capture cannot be read"
                .to_string(),
        };
        let next_packet = self.dec.stats.packets + 1;
        self.note(next_packet, message);
        self.finish();
    }

    /// Skips a pcapng block of `len` bytes that cannot be used, with a Note.
    fn bad_block(&mut self, len: u32, why: &str) {
        let data = self.reader.it().data();
        let kind = ng_block_type(data, self.dec.big_endian).unwrap_or(0);
        let available = data.len();
        let packet = if matches!(kind, PB_TYPE | SPB_TYPE | EPB_TYPE) {
            // A packet all the same: it keeps its number.
            self.dec.stats.packets += 1;
            self.dec.stats.packets
        } else {
            self.dec.stats.packets + 1
        };
        self.note(
            packet,
            format!("unusable pcapng block (type {kind:#x}, {len} bytes), skipped: {why}"),
        );
        let now = (len as usize).min(available);
        self.reader.it().consume(now);
        self.skip = u64::from(len) - now as u64;
    }

    fn skip_step(&mut self) -> Result<(), CaptureError> {
        let r = self.reader.it();
        let available = r.data().len() as u64;
        if available > 0 {
            let n = available.min(self.skip);
            r.consume(n as usize);
            self.skip -= n;
            return Ok(());
        }
        if r.reader_exhausted() {
            self.skip = 0;
            let next_packet = self.dec.stats.packets + 1;
            self.note(
                next_packet,
                "the capture ends in the middle of a skipped block".into(),
            );
            self.finish();
            return Ok(());
        }
        if r.refill().is_err() {
            return Err(self.io_error());
        }
        Ok(())
    }
}

/// Packets handed over one at a time, each with its link type and capture time (a live
/// capture: libpcap gives packets, not a file), turned into the same [`Event`]s a [`Capture`]
/// gives: the same link, IP and TCP decoding, the same reassembly, the same [`Limits`].
///
/// ```
/// use kafka_elect_leaders_capture::{Event, Packets, Timestamp};
///
/// let mut packets = Packets::new();
/// // A UDP datagram on Ethernet (link type 1): not TCP, counted and passed over.
/// let mut frame = vec![0u8; 12];
/// frame.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0]);
/// frame.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1, 0, 1, 0, 2, 0, 8, 0, 0]);
/// packets.packet(1, Timestamp::default(), &frame, frame.len() as u32);
/// packets.finish();
/// assert_eq!(packets.next_event(), None);
/// assert_eq!((packets.stats().packets, packets.stats().not_tcp), (1, 1));
/// ```
pub struct Packets {
    dec: Decoder,
    queue: VecDeque<Event>,
    /// After [`Packets::finish`]: the connections still to close, last key first.
    closing: Option<Vec<Key>>,
}

impl fmt::Debug for Packets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packets")
            .field("stats", &self.stats())
            .field("queued", &self.queue.len())
            .finish_non_exhaustive()
    }
}

impl Default for Packets {
    fn default() -> Self {
        Packets::new()
    }
}

impl Packets {
    /// No packet yet; [`Limits::default`].
    pub fn new() -> Packets {
        Packets {
            dec: Decoder {
                ng: false,
                big_endian: false,
                modified: false,
                interfaces: Vec::new(),
                tracker: Tracker::default(),
                stats: CaptureStats::default(),
                last_time: Timestamp::default(),
            },
            queue: VecDeque::new(),
            closing: None,
        }
    }

    /// Sets how many connections are followed at once and for how long one that is idle.
    pub fn set_limits(&mut self, limits: Limits) {
        self.dec.tracker.set_limits(limits);
    }

    /// One packet: `linktype` as pcap numbers them (1 Ethernet, 113 Linux cooked...), its
    /// capture `time`, the bytes captured, and `origlen`, its length on the wire (more than
    /// `data` when the snap length cut it). Its events wait for [`Packets::next_event`]. A
    /// link type that is not supported is one [`Event::Note`], the first time it is met;
    /// packets after [`Packets::finish`] are ignored.
    pub fn packet(&mut self, linktype: u32, time: Timestamp, data: &[u8], origlen: u32) {
        if self.closing.is_some() {
            return;
        }
        // One interface per link type met: its "not supported" note is said once.
        let index = match self
            .dec
            .interfaces
            .iter()
            .position(|i| i.linktype == linktype)
        {
            Some(index) => index,
            None if self.dec.interfaces.len() < INTERFACE_LIMIT => {
                self.dec.interfaces.push(Interface {
                    linktype,
                    snaplen: 0,
                    resolution: Resolution::Pow10(9),
                    offset_secs: 0,
                    noted: false,
                });
                self.dec.interfaces.len() - 1
            }
            // Only link types that all differ get here, and all but a few are unsupported:
            // the last one stands for the rest.
            None => self.dec.interfaces.len() - 1,
        };
        self.dec
            .packet(Some(index), time, data, origlen, &mut self.queue);
    }

    /// The next event of the packets handed over so far, None when there is none yet (or,
    /// after [`Packets::finish`], none left).
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            let key = self.closing.as_mut()?.pop()?;
            let at = (self.dec.stats.packets, self.dec.last_time);
            let mut sink = Sink {
                events: &mut self.queue,
                notes: &mut self.dec.stats.notes,
            };
            self.dec.tracker.close_at_end(key, at, &mut sink);
        }
    }

    /// The end of the capture: every connection still open is closed (its Close events,
    /// and the gaps and bytes it still held, come out of [`Packets::next_event`]), as at the
    /// end of a capture file.
    pub fn finish(&mut self) {
        if self.closing.is_none() {
            self.closing = Some(self.dec.tracker.open_keys());
        }
    }

    /// Packets handed over, packets skipped as not TCP, notes emitted (and a few more
    /// counts).
    pub fn stats(&self) -> CaptureStats {
        self.dec.totals()
    }
}

/// Reads until `buf` holds `len` bytes or the input ends.
fn read_up_to<R: Read>(reader: &mut R, buf: &mut Vec<u8>, len: usize) -> Result<(), CaptureError> {
    if buf.len() >= len {
        return Ok(());
    }
    let want = (len - buf.len()) as u64;
    reader.by_ref().take(want).read_to_end(buf)?;
    Ok(())
}

/// The I/O error a [`Source`] kept, taken out (every read error is kept anew before
/// pcap-parser reports it).
fn take_io_error(slot: &Mutex<Option<io::Error>>) -> Option<io::Error> {
    slot.lock().ok().and_then(|mut e| e.take())
}

/// The type of the pcapng block at the start of `data`, in the section's byte order.
fn ng_block_type(data: &[u8], big_endian: bool) -> Option<u32> {
    let b: [u8; 4] = data.get(..4)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

/// The total length of the pcapng block at the start of `data`, when it is plausible (at
/// least 12, a multiple of 4). A section header says its own byte order; other blocks use
/// `big_endian` (None: only a section header is expected).
fn ng_block_len(data: &[u8], big_endian: Option<bool>) -> Option<u32> {
    let raw: [u8; 4] = data.get(4..8)?.try_into().ok()?;
    let big_endian = if data.get(..4)? == PCAPNG_MAGIC {
        let bom: [u8; 4] = data.get(8..12)?.try_into().ok()?;
        if u32::from_le_bytes(bom) == PCAPNG_BOM {
            false
        } else if u32::from_be_bytes(bom) == PCAPNG_BOM {
            true
        } else {
            return None;
        }
    } else {
        big_endian?
    };
    let len = if big_endian {
        u32::from_be_bytes(raw)
    } else {
        u32::from_le_bytes(raw)
    };
    (len >= 12 && len % 4 == 0).then_some(len)
}

impl Decoder {
    /// The counts so far, with the tracker's (connections, open, peak, let go).
    fn totals(&self) -> CaptureStats {
        let (open_connections, peak_open_connections, idle_closed, evicted) =
            self.tracker.tracking();
        CaptureStats {
            connections: self.tracker.connections(),
            open_connections,
            peak_open_connections,
            idle_closed,
            evicted,
            ..self.stats
        }
    }

    fn note(&mut self, queue: &mut VecDeque<Event>, packet: u64, message: String) {
        self.stats.notes += 1;
        queue.push_back(Event::Note { packet, message });
    }

    fn block(&mut self, block: PcapBlockOwned<'_>, queue: &mut VecDeque<Event>) {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.big_endian = h.is_bigendian();
                self.modified = h.is_modified_format();
                let resolution = if h.is_nanosecond_precision() {
                    Resolution::Pow10(9)
                } else {
                    Resolution::Pow10(6)
                };
                self.interfaces = vec![Interface {
                    // The upper bits hold the FCS length, not the link type.
                    linktype: (h.network.0 as u32) & 0xffff,
                    snaplen: h.snaplen,
                    resolution,
                    offset_secs: 0,
                    noted: false,
                }];
            }
            PcapBlockOwned::Legacy(b) => {
                let time = match self.interfaces.first().map(|i| i.resolution) {
                    Some(Resolution::Pow10(9)) => Timestamp::from_parts(
                        u64::from(b.ts_sec),
                        u64::from(b.ts_usec),
                        1_000_000_000,
                    ),
                    _ => {
                        Timestamp::from_parts(u64::from(b.ts_sec), u64::from(b.ts_usec), 1_000_000)
                    }
                };
                self.packet(Some(0), time, b.data, b.origlen, queue);
            }
            PcapBlockOwned::NG(block) => self.ng_block(block, queue),
        }
    }

    fn ng_block(&mut self, block: Block<'_>, queue: &mut VecDeque<Event>) {
        match block {
            Block::SectionHeader(shb) => {
                self.big_endian = shb.big_endian();
                self.interfaces.clear();
            }
            Block::InterfaceDescription(idb) => {
                let next_packet = self.stats.packets + 1;
                if self.interfaces.len() >= INTERFACE_LIMIT {
                    self.note(
                        queue,
                        next_packet,
                        format!("more than {INTERFACE_LIMIT} interfaces in one section: ignored"),
                    );
                    return;
                }
                let index = self.interfaces.len();
                let resolution = match Resolution::from_tsresol(idb.if_tsresol) {
                    Some(r) => r,
                    None => {
                        self.note(
                            queue,
                            next_packet,
                            format!(
                                "interface {index}: invalid timestamp resolution {:#04x}, microseconds assumed",
                                idb.if_tsresol
                            ),
                        );
                        Resolution::Pow10(6)
                    }
                };
                // if_tsoffset, read in the section's byte order.
                let offset_secs = idb
                    .options
                    .iter()
                    .filter(|o| o.code == OptionCode::IfTsoffset)
                    .find_map(|o| o.as_bytes().ok()?.get(..8)?.try_into().ok())
                    .map(|b: [u8; 8]| {
                        if self.big_endian {
                            i64::from_be_bytes(b)
                        } else {
                            i64::from_le_bytes(b)
                        }
                    })
                    .unwrap_or(0);
                self.interfaces.push(Interface {
                    linktype: u32::from(idb.linktype.0 as u16),
                    snaplen: idb.snaplen,
                    resolution,
                    offset_secs,
                    noted: false,
                });
            }
            Block::EnhancedPacket(epb) => {
                let ticks = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                let index = epb.if_id as usize;
                let time = match self.interfaces.get(index) {
                    Some(i) => i.resolution.time(ticks, i.offset_secs),
                    None => self.last_time,
                };
                self.packet(Some(index), time, epb.packet_data(), epb.origlen, queue);
            }
            Block::SimplePacket(spb) => {
                // No timestamp: the previous packet's time stands in.
                let mut data = spb.packet_data();
                if let Some(snaplen) = self.interfaces.first().map(|i| i.snaplen as usize) {
                    if snaplen > 0 && data.len() > snaplen {
                        data = &data[..snaplen];
                    }
                }
                self.packet(Some(0), self.last_time, data, spb.origlen, queue);
            }
            Block::Unknown(ub) => {
                let kind = if self.big_endian {
                    ub.block_type.swap_bytes()
                } else {
                    ub.block_type
                };
                if kind == PB_TYPE {
                    self.obsolete_packet(ub.data, queue);
                }
            }
            _ => {}
        }
    }

    /// The obsolete Packet Block (type 2): interface (u16), drops (u16), timestamp, captured
    /// and original lengths, data.
    fn obsolete_packet(&mut self, body: &[u8], queue: &mut VecDeque<Event>) {
        let u32_at = |at: usize| -> Option<u32> {
            let b: [u8; 4] = body.get(at..at + 4)?.try_into().ok()?;
            Some(if self.big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            })
        };
        let fields = (|| {
            let b: [u8; 2] = body.get(..2)?.try_into().ok()?;
            let index = if self.big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            };
            let ticks = (u64::from(u32_at(4)?) << 32) | u64::from(u32_at(8)?);
            let caplen = u32_at(12)? as usize;
            let origlen = u32_at(16)?;
            let data = body.get(20..20 + caplen)?;
            Some((usize::from(index), ticks, data, origlen))
        })();
        match fields {
            Some((index, ticks, data, origlen)) => {
                let time = match self.interfaces.get(index) {
                    Some(i) => i.resolution.time(ticks, i.offset_secs),
                    None => self.last_time,
                };
                self.packet(Some(index), time, data, origlen, queue);
            }
            None => {
                self.stats.packets += 1;
                let packet = self.stats.packets;
                self.note(queue, packet, "malformed pcapng packet block".into());
            }
        }
    }

    /// One packet record, on interface `index`.
    fn packet(
        &mut self,
        index: Option<usize>,
        time: Timestamp,
        data: &[u8],
        origlen: u32,
        queue: &mut VecDeque<Event>,
    ) {
        self.stats.packets += 1;
        let packet = self.stats.packets;
        self.last_time = time;
        let Some(interface) = index.and_then(|i| self.interfaces.get_mut(i)) else {
            self.note(
                queue,
                packet,
                format!(
                    "packet on interface {} that no interface description declared: skipped",
                    index.unwrap_or(0)
                ),
            );
            return;
        };
        let linktype = interface.linktype;
        if !decode::link_supported(linktype) {
            self.stats.unsupported_link += 1;
            if !interface.noted {
                interface.noted = true;
                // pcap-parser knows the names of the registered link types.
                let name = pcap_parser::Linktype(linktype as i32).to_string();
                let name = if name.starts_with("Linktype(") {
                    String::new()
                } else {
                    format!(" ({name})")
                };
                let message = format!(
                    "link type {linktype}{name} is not supported: packets of interface {} are skipped",
                    index.unwrap_or(0)
                );
                self.note(queue, packet, message);
            }
            return;
        }
        let cut = u64::from(origlen).saturating_sub(data.len() as u64);
        match decode::decode(linktype, data, cut) {
            Decoded::Tcp(segment) => {
                self.stats.tcp += 1;
                let mut sink = Sink {
                    events: queue,
                    notes: &mut self.stats.notes,
                };
                self.tracker.segment(&segment, packet, time, &mut sink);
            }
            Decoded::NotTcp => self.stats.not_tcp += 1,
            Decoded::Bad(message) => self.note(queue, packet, message),
        }
    }
}
