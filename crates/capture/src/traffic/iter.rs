//! [`Traffic`]: a capture file read as Kafka traffic, one iterator joining the reader
//! ([`Capture`]) and the [`Analyzer`].
//!
//! The top of the crate: the only place where the reader layer and the Kafka layer meet.

use std::collections::VecDeque;

use super::analyzer::Analyzer;
use super::item::Item;
use crate::error::CaptureError;
use crate::reader::Capture;
use crate::types::CaptureStats;

/// A capture read as Kafka traffic: a [`Capture`]'s events through an [`Analyzer`], as one
/// iterator of [`Item`]s, each handed out as soon as it is complete. An error is an I/O
/// error of the reader or a capture that cannot be read on (the items before it were
/// handed out); the iterator ends after it.
pub struct Traffic<R: std::io::Read> {
    capture: Capture<R>,
    analyzer: Analyzer,
    ready: VecDeque<Item>,
    done: bool,
}

impl<R: std::io::Read> Traffic<R> {
    /// Reads a pcap or pcapng capture from `reader`; `port` is the broker's TCP port when
    /// known (else the side that received the SYN, else the side requests go to).
    pub fn new(reader: R, port: Option<u16>) -> Result<Self, CaptureError> {
        Ok(Self::from_capture(Capture::new(reader)?, port))
    }

    /// The traffic of a capture already opened, within its limits (set them first).
    pub fn from_capture(capture: Capture<R>, port: Option<u16>) -> Self {
        let mut analyzer = Analyzer::new(port);
        analyzer.set_limits(capture.limits());
        Traffic {
            capture,
            analyzer,
            ready: VecDeque::new(),
            done: false,
        }
    }

    /// The capture's counts so far.
    pub fn stats(&self) -> CaptureStats {
        self.capture.stats()
    }
}

impl<R: std::io::Read> Iterator for Traffic<R> {
    type Item = Result<Item, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match self.capture.next_event() {
                Ok(Some(event)) => {
                    let ready = &mut self.ready;
                    self.analyzer.feed(event, &mut |item| ready.push_back(item));
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
