//! split_stream: a stream cut into arbitrary chunks yields the same frames as whole.

use super::*;

/// The input of the `split_stream` target.
#[derive(Arbitrary, Debug)]
pub struct SplitModel {
    /// The frames of the stream, encoded one after the other.
    pub requests: Vec<RequestModel>,
    /// Bytes after the last frame: an incomplete frame, or garbage.
    pub tail: Vec<u8>,
    /// Where the stream is cut into the chunks it is read in.
    pub cuts: Vec<u16>,
    /// The splitter's largest frame, when it has one.
    pub max_frame_size: Option<u16>,
}

/// The `split_stream` target: the stream read in chunks yields the frames (or the error)
/// that it yields read whole.
pub fn check_split_stream(data: &[u8]) {
    let Ok(model) = SplitModel::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let mut stream = Vec::new();
    let mut valid = 0;
    for request in &model.requests {
        if let Some(frame) = encode_request_model(request) {
            stream.extend_from_slice(&frame);
            valid += 1;
        }
    }
    let valid_len = stream.len();
    stream.extend_from_slice(&model.tail);
    let max = model
        .max_frame_size
        .map_or(kafka_elect_leaders::DEFAULT_MAX_FRAME_SIZE, usize::from);

    // Whole: the frames up to the first partial or malformed one.
    let mut whole_iter = Frames::new(&stream).with_max_frame_size(max);
    let mut whole: Vec<&[u8]> = Vec::new();
    let mut whole_error = None;
    for frame in whole_iter.by_ref() {
        match frame {
            Ok(frame) => whole.push(frame),
            Err(e) => whole_error = Some(e),
        }
    }
    if model.max_frame_size.is_none() {
        // Every valid frame the writer made comes out whole, in order.
        let valid_frames: usize = whole.iter().take(valid).map(|f| f.len()).sum();
        assert!(whole.len() >= valid && valid_frames == valid_len);
        for frame in &whole[..valid] {
            parse_request(frame).expect("a written frame parses");
        }
    }

    // Chunked, as a proxy reads a socket: append each chunk, take every whole frame.
    let mut buffer: Vec<u8> = Vec::new();
    let mut chunked: Vec<Vec<u8>> = Vec::new();
    let mut chunked_error = None;
    let mut at = 0;
    let mut consumed = 0;
    let mut cuts = model
        .cuts
        .iter()
        .map(|&c| usize::from(c) % 97 + 1)
        .chain(std::iter::repeat(64));
    'feed: while at < stream.len() {
        let n = cuts.next().unwrap_or(1).min(stream.len() - at);
        buffer.extend_from_slice(&stream[at..at + n]);
        at += n;
        loop {
            match kafka_elect_leaders::split_frame_with_max(&buffer, max) {
                Ok((frame, _)) => {
                    let len = frame.len();
                    chunked.push(frame.to_vec());
                    buffer.drain(..len);
                    consumed += len;
                }
                Err(e) if e.is_incomplete() => {
                    assert!(e.needed().unwrap() > 0);
                    break;
                }
                Err(mut e) => {
                    e.offset += consumed;
                    chunked_error = Some(e);
                    break 'feed;
                }
            }
        }
    }
    assert_eq!(chunked.len(), whole.len());
    for (c, w) in chunked.iter().zip(&whole) {
        assert_eq!(&c[..], *w);
    }
    assert_eq!(chunked_error, whole_error);
    if whole_error.is_none() {
        assert_eq!(whole_iter.remainder(), &buffer[..]);
        assert_eq!(whole_iter.needed().is_some(), !buffer.is_empty());
    }
    if let Some(e) = whole_error {
        assert!(matches!(
            e.kind,
            ErrorKind::FrameTooLarge { .. } | ErrorKind::NegativeLength(_)
        ));
    }
    let _ = split_frame(&stream);
}
