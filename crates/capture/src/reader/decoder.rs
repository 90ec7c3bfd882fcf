//! What packets are turned into, whatever brought them: the capture's interfaces (link type,
//! snap length, timestamp resolution), and each packet's link, IP and TCP decoding
//! ([`crate::decode`]) and reassembly ([`crate::reasm`]) into [`Event`]s, with the counts.
//!
//! The bottom of the reader layer: the file reader (`file`, with `pcapng`'s blocks) and the
//! live packets (`packets`) both hand their packets here. It reads no file format itself.

use std::collections::VecDeque;

use crate::decode::{self, Decoded};
use crate::reasm::{Sink, Tracker};
use crate::types::{CaptureStats, Event, Timestamp};

/// Interfaces per pcapng section, at most.
pub(super) const INTERFACE_LIMIT: usize = 1 << 16;

/// A timestamp resolution: units per second as 10^n or 2^n.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Resolution {
    Pow10(u32),
    Pow2(u32),
}

impl Resolution {
    /// From pcapng's `if_tsresol` byte; None when out of range.
    pub(super) fn from_tsresol(b: u8) -> Option<Resolution> {
        if b & 0x80 == 0 {
            (b <= 19).then_some(Resolution::Pow10(u32::from(b)))
        } else {
            let e = u32::from(b & 0x7f);
            (e <= 63).then_some(Resolution::Pow2(e))
        }
    }

    pub(super) fn time(self, ticks: u64, offset_secs: i64) -> Timestamp {
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
pub(super) struct Interface {
    pub(super) linktype: u32,
    pub(super) snaplen: u32,
    pub(super) resolution: Resolution,
    pub(super) offset_secs: i64,
    /// Whether its unsupported link type was noted already.
    pub(super) noted: bool,
}

/// Everything but the reader: what packets are turned into (the blocks that carry them are
/// read in `file` and `pcapng`).
pub(super) struct Decoder {
    pub(super) ng: bool,
    /// Byte order of the pcap file or of the current pcapng section.
    pub(super) big_endian: bool,
    /// A pcap file of the "modified" format (24-byte record headers).
    pub(super) modified: bool,
    pub(super) interfaces: Vec<Interface>,
    pub(super) tracker: Tracker,
    pub(super) stats: CaptureStats,
    pub(super) last_time: Timestamp,
}

impl Decoder {
    /// The counts so far, with the tracker's (connections, open, peak, let go).
    pub(super) fn totals(&self) -> CaptureStats {
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

    pub(super) fn note(&mut self, queue: &mut VecDeque<Event>, packet: u64, message: String) {
        self.stats.notes += 1;
        queue.push_back(Event::Note {
            packet,
            message,
            partial: true,
        });
    }
    /// A packet's time as it is handed on: at most [`Timestamp::LATEST`] (the time JSON
    /// readers hold exactly; `time` and `epoch_us` then agree), and a clock that steps back
    /// further than [`Timestamp::STEP_BACK`] from the packet before named, each in a note
    /// that does not make the output partial.
    fn checked_time(
        &mut self,
        time: Timestamp,
        packet: u64,
        queue: &mut VecDeque<Event>,
    ) -> Timestamp {
        let nanos = |t: Timestamp| i128::from(t.secs) * 1_000_000_000 + i128::from(t.nanos);
        let mut checked = time;
        if time > Timestamp::LATEST {
            checked = Timestamp::LATEST;
            self.stats.notes += 1;
            queue.push_back(Event::Note {
                packet,
                message: format!(
                    "capture time {}.{:09} s after 1970 is past {} (the last whole microsecond \
                     JSON readers hold exactly): taken as that",
                    time.secs,
                    time.nanos,
                    Timestamp::LATEST
                ),
                partial: false,
            });
        }
        let back = nanos(self.last_time) - nanos(checked);
        if self.stats.packets > 1 && back > Timestamp::STEP_BACK.as_nanos() as i128 {
            self.stats.notes += 1;
            queue.push_back(Event::Note {
                packet,
                message: format!(
                    "the capture's clock steps back {}.{:06} s here (from {} to {}), more \
                     than packet reordering explains: an answer timed before its request \
                     across it is left out of the latency percentiles",
                    back / 1_000_000_000,
                    (back % 1_000_000_000) / 1_000,
                    self.last_time,
                    checked
                ),
                partial: false,
            });
        }
        checked
    }

    /// One packet record, on interface `index`.
    pub(super) fn packet(
        &mut self,
        index: Option<usize>,
        time: Timestamp,
        data: &[u8],
        origlen: u32,
        queue: &mut VecDeque<Event>,
    ) {
        self.stats.packets += 1;
        let packet = self.stats.packets;
        let time = self.checked_time(time, packet, queue);
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
