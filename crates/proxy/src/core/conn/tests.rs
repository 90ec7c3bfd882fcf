//! Tests of the connection core's own errors.

use bytes::BytesMut;
use kafka_elect_leaders::KafkaFrameCodec;
use tokio_util::codec::Decoder;

use crate::core::close::Close;

/// Issue 23, finding 8: a broker that hung up inside a frame was reported as sending a
/// malformed frame.
#[test]
fn a_broker_gone_mid_frame_is_not_called_malformed() {
    let mut codec = KafkaFrameCodec::new();
    let mut cut = BytesMut::from(&[0, 0, 0, 20, 0, 0, 0, 7][..]);
    let e = codec.decode_eof(&mut cut).unwrap_err();
    let close = Close::upstream_read(e).to_string();
    assert_eq!(
        close,
        "the broker closed the connection inside a frame (16 bytes missing)"
    );
    let mut negative = BytesMut::from(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 7][..]);
    let e = codec.decode(&mut negative).unwrap_err();
    assert!(Close::upstream_read(e)
        .to_string()
        .starts_with("malformed frame from the broker"));
}
