//! The tool's input, in one place: where it comes from ([`source`]), how a stream of
//! frames is cut ([`frames`]), and one walk ([`items`]) that hands `decode`, `scan`,
//! `summary` and `inspect` the same classified [`Item`]s whether the frames come from a
//! file of frames, a pcap or pcapng capture, or a live interface ([`live`]).
//!
//! Streaming, and bounded: a stream is cut one frame at a time; a capture is read by the
//! capture crate, which passes over large frames of other APIs as they stream by and holds
//! what it must within `--max-held-bytes`.

pub mod frames;
pub mod item;
pub mod items;
pub mod live;
pub mod source;

pub use item::{Frame, Item, StreamFrame};
pub use items::Items;
pub use source::{Expect, Kind, Source, BUNDLED};
