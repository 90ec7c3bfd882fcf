//! needed: Incomplete { needed } is exactly the number of bytes missing, at every prefix of
//! a frame, from every entry point that reads a stream.

use super::*;

/// The input is a stream: its first frame (by its size prefix) is cut at every length.
pub fn check_needed(data: &[u8]) {
    use kafka_elect_leaders::{peek_request, peek_response};
    let Ok((frame, _)) = split_frame(data) else {
        // Fewer than 4 bytes: the size prefix itself is what is missing.
        if data.len() < 4 {
            let e = split_frame(data).unwrap_err();
            assert_eq!(e.needed(), Some(4 - data.len()));
        }
        return;
    };
    let len = frame.len();
    let whole_request = parse_request(frame).map(|r| plain_request(&r));
    for cut in 0..len {
        let prefix = &frame[..cut];
        // Until the size prefix is whole, only its missing bytes are known to be missing.
        let missing = if cut < 4 { 4 - cut } else { len - cut };
        let e = split_frame(prefix).unwrap_err();
        assert_eq!(e.needed(), Some(missing), "split_frame at {cut} of {len}");
        assert!(e.is_incomplete());
        assert_eq!((e.field, e.offset), ("size", 0));
        let e = parse_request(prefix).unwrap_err();
        assert_eq!(e.needed(), Some(missing), "parse_request at {cut} of {len}");
        for version in VERSIONS {
            let e = parse_response(prefix, version).unwrap_err();
            assert_eq!(
                e.needed(),
                Some(missing),
                "parse_response at {cut} of {len}"
            );
        }
        let mut frames = Frames::new(prefix);
        assert!(frames.next().is_none());
        assert_eq!(frames.remainder(), prefix);
        let want = (cut > 0).then_some(missing);
        assert_eq!(frames.needed(), want, "Frames at {cut} of {len}");
        // The peeks need 12 and 8 bytes, whatever the frame's size (which holds them: a
        // prefix that long is a prefix of a longer frame).
        match peek_request(prefix) {
            Ok(p) => {
                assert!(cut >= 12, "peek_request at {cut}");
                assert_eq!(p.size + 4, len);
                assert_eq!(p.api_key, i16::from_be_bytes([frame[4], frame[5]]));
                assert_eq!(p.api_version, i16::from_be_bytes([frame[6], frame[7]]));
            }
            Err(e) => assert_eq!(e.needed(), Some(12 - cut), "peek_request at {cut}: {e}"),
        }
        match peek_response(prefix) {
            Ok(p) => {
                assert!(cut >= 8, "peek_response at {cut}");
                assert_eq!(p.size + 4, len);
                assert_eq!(p.correlation_id.to_be_bytes(), frame[4..8]);
            }
            Err(e) => assert_eq!(e.needed(), Some(8 - cut), "peek_response at {cut}: {e}"),
        }
    }
    // Whole, it is not incomplete, whatever else it is.
    match &whole_request {
        Ok(_) => {}
        Err(e) => assert!(!e.is_incomplete(), "{e}"),
    }
    // In a stream, the frame followed by a part of the next one: the next one's count.
    let mut stream = frame.to_vec();
    stream.extend_from_slice(&frame[..len / 2]);
    let mut frames = Frames::new(&stream);
    assert_eq!(frames.next().map(|f| f.map(<[u8]>::len)), Some(Ok(len)));
    assert!(frames.next().is_none());
    let missing = if len / 2 < 4 {
        4 - len / 2
    } else {
        len - len / 2
    };
    assert_eq!(frames.needed(), (len / 2 > 0).then_some(missing));
    assert_eq!(frames.offset(), len);
}
