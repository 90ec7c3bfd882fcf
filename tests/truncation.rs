//! Every corpus frame cut at every length: streaming splitters and parsers alike say how
//! many bytes are missing (a frame shorter than its size prefix is incomplete, never a bad
//! field); a cut frame whose size prefix was made to agree runs short in its body and is
//! malformed, named by field and offset; nothing panics.

mod common;

use common::{fix_size, load_corpus, load_requests, Kind};
use kafka_elect_leaders::{
    parse_request, parse_response, split_frame, Error, ErrorKind, Frames, SIZE_PREFIX_LEN,
};

fn parse(kind: Kind, frame: &[u8]) -> Result<(), Error> {
    match kind {
        Kind::Request => parse_request(frame).map(|_| ()),
        Kind::Response { version } => parse_response(frame, version).map(|_| ()),
    }
}

/// A frame cut short is malformed, not incomplete: the parsers take exactly one whole frame.
#[track_caller]
fn assert_cut_short(name: &str, k: usize, e: Error) {
    assert!(!e.is_incomplete(), "{name}[..{k}]: {e:?} is Incomplete");
    assert_eq!(e.needed(), None, "{name}[..{k}]");
    assert!(!e.field.is_empty(), "{name}[..{k}]: no field in {e:?}");
    assert!(
        e.offset <= k,
        "{name}[..{k}]: offset {} past the end",
        e.offset
    );
    assert!(
        matches!(
            e.kind,
            ErrorKind::UnexpectedEnd { .. } | ErrorKind::CountTooLarge { .. }
        ),
        "{name}[..{k}]: a cut frame should run short, got {e:?}"
    );
    if let ErrorKind::UnexpectedEnd { needed } = e.kind {
        assert!(needed >= 1, "{name}[..{k}]: needed 0");
    }
    if let ErrorKind::CountTooLarge { remaining, .. } = e.kind {
        assert!(remaining < k, "{name}[..{k}]: {e:?}");
    }
}

#[test]
fn whole_frames_split_and_parse() {
    for frame in load_corpus() {
        let bytes = &frame.bytes[..];
        assert_eq!(
            split_frame(bytes),
            Ok((bytes, &[][..])),
            "{}: split",
            frame.name
        );
        let mut tail = bytes.to_vec();
        tail.extend_from_slice(&[0xde, 0xad]);
        assert_eq!(
            split_frame(&tail),
            Ok((bytes, &[0xde, 0xad][..])),
            "{}",
            frame.name
        );
        parse(frame.kind(), bytes).unwrap_or_else(|e| panic!("{}: {e}", frame.name));
    }
}

#[test]
fn split_frame_says_how_many_bytes_are_missing() {
    for frame in load_corpus() {
        let len = frame.bytes.len();
        for k in 0..len {
            let e = split_frame(&frame.bytes[..k]).unwrap_err();
            let needed = if k < SIZE_PREFIX_LEN {
                SIZE_PREFIX_LEN - k
            } else {
                len - k
            };
            assert_eq!(
                (e.kind, e.field, e.offset),
                (ErrorKind::Incomplete { needed }, "size", 0),
                "{}[..{k}]",
                frame.name
            );
            assert!(e.is_incomplete());
            assert_eq!(e.needed(), Some(needed));
        }
    }
}

#[test]
fn parsers_call_a_cut_frame_incomplete_by_exactly_what_it_lacks() {
    for frame in load_corpus() {
        let len = frame.bytes.len();
        for k in 0..len {
            let cut = &frame.bytes[..k];
            let e = parse(frame.kind(), cut).unwrap_err();
            // Not even the size prefix: its missing bytes; else the frame's.
            let needed = if k < SIZE_PREFIX_LEN {
                SIZE_PREFIX_LEN - k
            } else {
                len - k
            };
            assert_eq!(
                (e.kind, e.field, e.offset),
                (ErrorKind::Incomplete { needed }, "size", 0),
                "{}[..{k}]",
                frame.name
            );
            assert!(e.is_incomplete());
            assert_eq!(e.needed(), Some(needed), "{}[..{k}]", frame.name);
        }
    }
}

#[test]
fn parsers_call_a_shortened_frame_with_a_fixed_size_malformed() {
    // The same cuts with the size prefix made to agree: the body itself runs short, so the
    // error must come from the body, not from the size check.
    for frame in load_corpus() {
        let len = frame.bytes.len();
        for k in SIZE_PREFIX_LEN..len {
            let cut = fix_size(frame.bytes[..k].to_vec());
            let e = parse(frame.kind(), &cut).unwrap_err();
            assert_cut_short(&frame.name, k, e);
            assert_ne!(e.field, "size", "{}[..{k}]: {e:?}", frame.name);
            assert!(e.offset >= SIZE_PREFIX_LEN, "{}[..{k}]: {e:?}", frame.name);
        }
    }
}

#[test]
fn cutting_the_last_field_names_it() {
    // Spot checks of the field and offset a cut lands on, from the annotated sources.
    let end = |needed| ErrorKind::UnexpectedEnd { needed };
    let cases = [
        // request-v0: TimeoutMs at 73..77.
        ("request-v0.bin", 75, end(2), "TimeoutMs", 73),
        // request-v2-min: body tagged-field count at 28.
        ("request-v2-min.bin", 28, end(1), "_tagged_fields", 28),
        // request-v2-min: the partitions count at 18 says 1, one byte is left after it:
        // the count is refused before the int32 is read.
        (
            "request-v2-min.bin",
            20,
            ErrorKind::CountTooLarge {
                count: 1,
                remaining: 1,
            },
            "TopicPartitions.Partitions",
            18,
        ),
        // request-v0: client id "adminclient-1", length at 12, 13 bytes from 14.
        ("request-v0.bin", 20, end(7), "RequestHeader.ClientId", 12),
        // response-v0-errors: last ErrorMessage length at 74, 32 bytes from 76.
        (
            "response-v0-errors.bin",
            100,
            end(8),
            "ReplicaElectionResults.PartitionResult.ErrorMessage",
            74,
        ),
        // response-v2-min: ThrottleTimeMs at 9..13.
        ("response-v2-min.bin", 11, end(2), "ThrottleTimeMs", 9),
        // response-v2-tagged: header tag 3, size 1, data 2a at 11.
        (
            "response-v2-tagged.bin",
            11,
            end(1),
            "ResponseHeader._tagged_fields",
            11,
        ),
    ];
    for (name, k, kind, field, offset) in cases {
        // The size prefix made to agree with the cut, so that the body runs short.
        let bytes = common::load(name);
        let e = parse(common::kind_of(name), &fix_size(bytes[..k].to_vec())).unwrap_err();
        assert_eq!(
            (e.kind, e.field, e.offset),
            (kind, field, offset),
            "{name}[..{k}]"
        );
    }
}

#[test]
fn frames_over_a_cut_stream_yield_the_whole_frames_and_wait_for_the_rest() {
    let requests = load_requests();
    assert!(requests.len() >= 10);
    let mut stream = Vec::new();
    let mut bounds = Vec::new();
    for frame in &requests {
        let start = stream.len();
        stream.extend_from_slice(&frame.bytes);
        bounds.push(start..stream.len());
    }

    for k in 0..=stream.len() {
        let cut = &stream[..k];
        let mut frames = Frames::new(cut);
        let got: Vec<&[u8]> = frames
            .by_ref()
            .map(|f| f.unwrap_or_else(|e| panic!("[..{k}]: {e}")))
            .collect();
        let whole: Vec<&[u8]> = bounds
            .iter()
            .filter(|b| b.end <= k)
            .map(|b| &stream[b.clone()])
            .collect();
        assert_eq!(got, whole, "[..{k}]: whole frames");
        for (frame, bytes) in got.iter().zip(&requests) {
            assert_eq!(*frame, &bytes.bytes[..]);
            parse_request(frame).unwrap();
        }

        let boundary = bounds
            .iter()
            .map(|b| b.end)
            .filter(|&end| end <= k)
            .max()
            .unwrap_or(0);
        assert_eq!(frames.offset(), boundary, "[..{k}]");
        assert_eq!(frames.remainder(), &stream[boundary..k], "[..{k}]");
        let expected = if boundary == k {
            None
        } else {
            let have = k - boundary;
            let next = bounds.iter().find(|b| b.start == boundary).unwrap();
            Some(if have < SIZE_PREFIX_LEN {
                SIZE_PREFIX_LEN - have
            } else {
                next.len() - have
            })
        };
        assert_eq!(frames.needed(), expected, "[..{k}]: needed");
        // Fused: still nothing, still the same partial frame.
        assert!(frames.next().is_none());
        assert_eq!(frames.offset(), boundary);
    }
}

#[test]
fn frames_over_every_corpus_frame_in_turn() {
    // Requests and responses share the framing.
    let corpus = load_corpus();
    let stream: Vec<u8> = corpus.iter().flat_map(|f| f.bytes.clone()).collect();
    let got: Vec<&[u8]> = Frames::new(&stream).map(Result::unwrap).collect();
    let want: Vec<&[u8]> = corpus.iter().map(|f| &f.bytes[..]).collect();
    assert_eq!(got, want);
    assert_eq!(Frames::new(&stream).count(), corpus.len());
}

#[test]
fn empty_input() {
    assert_eq!(
        split_frame(&[]).unwrap_err().kind,
        ErrorKind::Incomplete { needed: 4 }
    );
    let mut frames = Frames::new(&[]);
    assert!(frames.next().is_none());
    assert_eq!(frames.needed(), None);
    assert_eq!(frames.remainder(), &[] as &[u8]);
    for e in [
        parse_request(&[]).unwrap_err(),
        parse_response(&[], 2).unwrap_err(),
    ] {
        assert_eq!(
            (e.kind, e.field, e.offset),
            (ErrorKind::Incomplete { needed: 4 }, "size", 0)
        );
    }
}
