//! [`Packets`]: packets handed over one at a time (a live capture through libpcap), each with
//! its link type and capture time, through the same [`Decoder`] as a capture file.
//!
//! Not a file format: no blocks, no buffer; the caller reads the packets.

use std::collections::VecDeque;
use std::fmt;

use super::decoder::{Decoder, Interface, Resolution, INTERFACE_LIMIT};
use crate::reasm::{Key, Sink, Tracker};
use crate::types::{CaptureStats, Event, Limits, Timestamp};

/// Packets handed over one at a time, each with its link type and capture time (a live
/// capture: libpcap gives packets, not a file), turned into the same [`Event`]s a
/// [`Capture`](crate::Capture) gives: the same link, IP and TCP decoding, the same
/// reassembly, the same [`Limits`].
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
