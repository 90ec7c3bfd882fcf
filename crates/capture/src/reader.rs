//! Packet captures (pcap and pcapng) turned into reassembled TCP byte streams, read as a stream:
//! memory is bounded by the open connections times a per-direction reassembly limit, never by
//! the size of the capture.
//!
//! [`Capture`] reads blocks with `pcap-parser`'s streaming readers, decodes the link layer, IP
//! and TCP ([`crate::decode`]), and follows each TCP connection ([`crate::reasm`]), producing
//! [`Event`](crate::Event)s in capture order: a connection opens, bytes of each direction
//! arrive in stream order (with gaps where the capture lost some), the connection closes.
//! [`Packets`] does the same for packets handed over one at a time. Nothing here knows about
//! Kafka.
//!
//! The reader layer, in layers of its own: `decoder` (interfaces, and what a packet becomes),
//! then `pcapng` (its blocks), then `file` ([`Capture`]) and `packets` ([`Packets`]). This
//! file is only their index.

mod decoder;
mod file;
mod packets;
mod pcapng;
#[cfg(test)]
mod tests;

pub use file::{is_capture, Capture};
pub use packets::Packets;
