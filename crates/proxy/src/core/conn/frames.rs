//! A connection's frames on the wire: the buffers each side reads whole frames into, the
//! client's decoder that times a partial frame, and writes that hand a large frame (or a
//! spliced answer's tail) to the socket without copying it. No API, no order of answers.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::SinkExt;
use kafka_elect_leaders::{CodecError, KafkaFrameCodec};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};

use crate::core::budget::{Metered, Reserving};

/// How far ahead of the bytes received a partial frame's buffer is grown at a time: a size
/// prefix alone reserves no more than this.
pub const RESERVE_STEP: usize = 64 * 1024;

/// First read buffer of each side; a larger frame grows it, [`RESERVE_STEP`] at a time.
pub(super) const READ_CAPACITY: usize = 16 * 1024;

/// A `FramedWrite` writes its buffer out once it holds this much.
pub(super) const WRITE_BOUNDARY: usize = 64 * 1024;

pub(super) type FromPeer<R> = FramedRead<Metered<R>, Reserving<KafkaFrameCodec>>;
pub(super) type FromClient<R> = FramedRead<Metered<R>, Reserving<TimedDecoder>>;
pub(super) type ToPeer<W> = FramedWrite<W, KafkaFrameCodec>;

/// The client's frames, with the time the frame still partial began to arrive: what the
/// frame timeout counts from. `decode` runs after every read, so the time is the read's.
pub(super) struct TimedDecoder {
    pub(super) codec: KafkaFrameCodec,
    pub(super) started: Option<Instant>,
    /// Told when a frame begins, so that a wait armed for the idle timeout re-arms for the
    /// frame timeout: the frame's first bytes arrive while the guard waits for them.
    pub(super) began: Arc<Notify>,
}

impl Decoder for TimedDecoder {
    type Item = BytesMut;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        let frame = self.codec.decode(src)?;
        let was_started = self.started.is_some();
        if frame.is_some() || src.is_empty() {
            // What is left (if anything) is the next frame, begun with this read.
            self.started = (!src.is_empty()).then(Instant::now);
        } else if self.started.is_none() {
            self.started = Some(Instant::now());
        }
        if self.started.is_some() && (!was_started || frame.is_some()) {
            self.began.notify_one();
        }
        Ok(frame)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        self.codec.decode_eof(src)
    }
}

/// After a frame larger than the base buffer, a fresh base buffer with what is left: the
/// buffer left behind by the frame still shares the frame's allocation (whatever capacity
/// it shows), and would take it over once the frame is dropped, keeping it for the
/// connection's lifetime, outside the budget.
pub(super) fn shrink(buffer: &mut BytesMut) {
    let mut fresh = BytesMut::with_capacity(READ_CAPACITY.max(buffer.len()));
    fresh.extend_from_slice(buffer);
    *buffer = fresh;
}

/// Hands a frame to a `FramedWrite`: a large one is written straight to its socket, after
/// what is buffered, rather than copied into the buffer.
pub(super) async fn forward<W, F>(to: &mut ToPeer<W>, frame: F) -> Result<(), CodecError>
where
    W: AsyncWrite + Unpin,
    F: AsRef<[u8]>,
    KafkaFrameCodec: tokio_util::codec::Encoder<F, Error = CodecError>,
{
    if frame.as_ref().len() <= WRITE_BOUNDARY {
        return to.feed(frame).await;
    }
    flush(to).await?;
    to.get_mut().write_all(frame.as_ref()).await?;
    Ok(())
}

/// An answer a filter spliced: its new head, then the rest of the broker's `frame` from
/// `tail_from` on, as it came. A large one goes out in two writes, the tail (most of a
/// Metadata answer) never copied.
pub(super) async fn forward_spliced<W: AsyncWrite + Unpin>(
    to: &mut ToPeer<W>,
    head: BytesMut,
    tail_from: usize,
    frame: &Bytes,
) -> Result<(), CodecError> {
    let tail = frame.get(tail_from..).unwrap_or_default();
    if head.len() + tail.len() <= WRITE_BOUNDARY {
        let mut whole = BytesMut::with_capacity(head.len() + tail.len());
        whole.extend_from_slice(&head);
        whole.extend_from_slice(tail);
        return to.feed(whole).await;
    }
    flush(to).await?;
    let w = to.get_mut();
    w.write_all(&head).await?;
    w.write_all(tail).await?;
    Ok(())
}

/// Writes out what a `FramedWrite` holds (its items are frames, whichever type they came as).
pub(super) async fn flush<W: AsyncWrite + Unpin>(to: &mut ToPeer<W>) -> Result<(), CodecError> {
    SinkExt::<BytesMut>::flush(to).await
}
