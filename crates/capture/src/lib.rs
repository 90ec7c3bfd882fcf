//! Kafka traffic out of packet captures: pcap and pcapng files, or any [`std::io::Read`]
//! (standard input included, as `tcpdump -w -` writes it), turned into the Kafka frames of
//! every connection, of every API, each response paired with its request.
//!
//! Two layers, usable apart:
//!
//! - [`Capture`] reads capture blocks with `pcap-parser`'s streaming readers, decodes the
//!   link layer (Ethernet with VLAN tags, Linux cooked v1/v2, BSD loopback, raw IP), IPv4 and
//!   IPv6 and TCP, and reassembles each TCP direction. It hands out [`Event`]s in capture
//!   order: a connection opens, bytes of a direction arrive in stream order (with a
//!   [`Event::Gap`] where the capture lost some), the connection closes. It knows nothing of
//!   Kafka.
//! - [`Analyzer`] cuts each direction into Kafka frames, tells the broker's side from the
//!   client's, remembers every request (whatever its API) until its response comes, and
//!   hands out [`Item`]s: whole frames with where they were found ([`Origin`]: packets,
//!   time, connection, addresses, stream offset), notes, and closes. ElectLeaders frames are
//!   marked with the version to parse them at; this crate parses nothing itself beyond the
//!   headers: the frames go to `kafka_elect_leaders`' parsers.
//!
//! [`Traffic`] joins the two as one iterator. [`Packets`] takes the place of [`Capture`] when
//! packets come one at a time rather than as a file (a live capture through libpcap): each
//! with its link type and time, through the same decoding and reassembly, giving the same
//! [`Event`]s for the [`Analyzer`].
//!
//! Inside, the modules are layers, each importing only from those below it (the test
//! `tests/layers.rs` reads every `use` and fails on one that reaches up), bottom first:
//!
//! 1. `types` and `error`: the plain types every layer speaks ([`Endpoint`], [`ConnId`],
//!    [`Timestamp`], [`Event`] with its [`CloseReason`], [`Limits`], [`CaptureStats`]) and
//!    [`CaptureError`];
//! 2. `decode`: the link layer, IP and TCP of one packet;
//! 3. `reasm`: TCP reassembly, each connection's two directions in stream order;
//! 4. `reader`: what a packet becomes (`decoder`), pcapng's blocks (`pcapng`), then the file
//!    reader [`Capture`] (`file`) and the live [`Packets`] (`packets`);
//! 5. [`traffic`]: Kafka: what is handed on (`item`), the requests in flight (`in_flight`),
//!    framing one direction (`framing`), pairing (`pairing`), the [`Analyzer`]
//!    (`analyzer`), and [`Traffic`] over a capture file (`iter`).
//!
//! Errors are types: [`CaptureError`] when a capture cannot be read (on); a problem the
//! reading gets past is a note ([`Event::Note`], [`Note`]), for people to read.
//!
//! **Nothing is lost silently.** A gap, a cut packet, a frame that cannot be framed, a
//! response whose request was not seen or a connection let go with data comes out as a
//! [`Note`] (packet, connection, what), and such a response also as a [`What::Unpaired`]
//! frame; a note with `partial` set means some traffic was not decoded. Responses are
//! paired by TCP causality, not capture order: one captured before its request waits for
//! it, as far as its packet's ACK proves the request came first (within a bound per
//! connection, [`traffic::HELD_RESPONSES`] and [`traffic::HELD_RESPONSE_BYTES`]). The one
//! exception, not a loss: in a connection the capture joined mid-stream, a response to a
//! request sent before the first frame the capture shows is unpaired without a note.
//!
//! **Memory is bounded by the connections followed, never by the capture:** per direction
//! at most one ElectLeaders frame (a frame of another API longer than
//! [`traffic::PASS_OVER_HEAD`] is passed over as it streams by, its header kept and its
//! bytes counted) and a bounded reassembly buffer, the frames held on all connections
//! within [`Limits::held_bytes`] (128 MiB by default; past it the largest is let go and
//! named), per connection the requests waiting for their responses, within a budget in bytes
//! ([`Limits::in_flight_bytes`], 1 MiB by default, and [`Limits::in_flight_total_bytes`]
//! for all connections, 64 MiB): a request beyond it is not kept for pairing and is named
//! in a note, one by one, and its response says why it is unpaired. A request Kafka never
//! answers (Produce with `acks` 0) is not waited for.
//! [`Limits`] bound the connections: one idle for longer than the idle timeout (capture
//! time, 10 minutes by default) is let go, and at most `max_connections` (10,000 by
//! default) are followed, the least recently active let go first
//! ([`CaptureStats::peak_open_connections`] counts them).
//!
//! # Example
//!
//! Every ElectLeaders request of a capture of a real Kafka 4.4 cluster, with its answer:
//!
//! ```
//! use kafka_elect_leaders::{parse_request, parse_response};
//! use kafka_elect_leaders_capture::{Item, Traffic, What};
//!
//! # fn main() -> Result<(), String> {
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/captures/elect-leaders-kafka-4.4.pcap");
//! let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
//! let (mut requests, mut answered) = (0, 0);
//! for item in Traffic::new(file, None)? {
//!     match item? {
//!         Item::Frame(found) => match found.what {
//!             What::ElectRequest => {
//!                 let request = parse_request(&found.frame).map_err(|e| e.to_string())?;
//!                 assert_eq!(request.version(), 2);
//!                 requests += 1;
//!             }
//!             What::ElectResponse { version } => {
//!                 parse_response(&found.frame, version).map_err(|e| e.to_string())?;
//!                 answered += 1;
//!             }
//!             _ => {} // frames of other APIs, with their API key and version
//!         },
//!         Item::Note(note) => return Err(note.message),
//!         Item::Closed(_) => {}
//!     }
//! }
//! assert_eq!((requests, answered), (6, 6));
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg_attr(feature = "testing", allow(missing_docs))]
mod decode;
mod error;
mod reader;
mod reasm;
pub mod summary;
pub mod traffic;
mod types;

/// The link, IP and TCP decoding on its own, for the benchmark that measures it against
/// `etherparse` (`benches/link.rs`): not a stable API, only with the feature `testing`.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use crate::decode::*;
}

pub use error::CaptureError;
pub use reader::{is_capture, Capture, Packets};
pub use traffic::{Analyzer, Asked, Found, Item, Note, Origin, Role, Traffic, What};
pub use types::{CaptureStats, CloseReason, ConnId, Endpoint, Event, Limits, Timestamp};
