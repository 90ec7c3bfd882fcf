//! [`Capture`]: a pcap or pcapng file (or any reader) read as a stream with `pcap-parser`'s
//! streaming readers, its buffer refilled, grown for a large block (within a bound) and a
//! block it cannot use skipped, each block handed on (pcap's records here, pcapng's to
//! `pcapng`) and the packets to the [`Decoder`]. At the end, the connections still open are
//! closed.
//!
//! Not what a packet becomes (`decoder`), nor packets that come one at a time (`packets`).

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Cursor, Read};
use std::sync::{Arc, Mutex};

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};

use super::decoder::{Decoder, Interface, Resolution};
use super::pcapng::{ng_block_len, ng_block_type, EPB_TYPE, PB_TYPE, PCAPNG_MAGIC, SPB_TYPE};
use crate::error::CaptureError;
use crate::reasm::{Key, Sink, Tracker};
use crate::types::{CaptureStats, Event, Limits, Timestamp};

/// The read buffer to start with.
pub(super) const BUFFER: usize = 64 << 10;
/// The largest block (pcapng) or packet record (pcap) read: the buffer doubles, as it fills, to
/// hold one up to this; a larger one is skipped (pcapng) or ends the reading (pcap, whose
/// records cannot be skipped safely: such a length is far more likely a corrupt file than a
/// packet).
const BLOCK_LIMIT: usize = 16 << 20;
/// Room in the buffer beyond the block being read.
const SLACK: usize = 4096;
/// A section header larger than this is not a real one.
const SECTION_HEADER_LIMIT: usize = 64 << 10;

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
    pub(super) capacity: usize,
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
        self.queue.push_back(Event::Note {
            packet,
            message,
            partial: true,
        });
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

impl Decoder {
    /// A block as pcap-parser read it: a pcap file's header and packet records here (one
    /// interface, a record a packet), a pcapng block to [`Decoder::ng_block`].
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
}
