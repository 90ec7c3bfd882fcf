//! The proxy toolkit: encoding into `bytes::BufMut` (equal to `encode`, no zero-fill,
//! exact-length encoding and its mismatches), the tokio-util codec (splitting, reserving,
//! maximum and negative sizes, encoding), in-place correlation-id rewrites, and owned
//! frames.

mod common;

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use kafka_elect_leaders::VERSIONS;
use kafka_elect_leaders::{
    parse_request, parse_response, peek_request, peek_response, set_request_correlation_id,
    set_response_correlation_id, CodecError, ElectLeadersRequestData, ElectLeadersResponseData,
    ElectionType, EncodeErrorKind, EncodeRequest, EncodeRequestExt, EncodeResponse,
    EncodeResponseExt, EncodeTopicPartitions, ErrorCode, ErrorKind, KafkaFrameCodec, OwnedRequest,
    OwnedResponse, PartitionResultData, ReplicaElectionResultData, RequestAt, ResponseAt,
    TaggedFieldData, TopicPartitionsData, DEFAULT_MAX_FRAME_SIZE,
};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Decoder, Encoder, FramedRead};

// ---------------------------------------------------------------------------------------
// Frames

/// One corpus frame: its name, bytes, and the version to parse it at (`None`: a request,
/// whose version is in the frame).
struct Corpus {
    name: String,
    bytes: Vec<u8>,
    response_version: Option<i16>,
}

fn corpus() -> Vec<Corpus> {
    common::load_corpus()
        .into_iter()
        .map(|frame| Corpus {
            response_version: match frame.kind() {
                common::Kind::Request => None,
                common::Kind::Response { version } => Some(version),
            },
            name: frame.name,
            bytes: frame.bytes,
        })
        .collect()
}

fn load(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/corpus/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// An ApiVersions v3 request (API key 18), written by hand: another API on the same
/// connection, which the codec and the rewrites treat like any other frame.
fn api_versions_request(correlation_id: i32) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0]; // size, fixed below
    f.extend_from_slice(&18i16.to_be_bytes()); // RequestApiKey
    f.extend_from_slice(&3i16.to_be_bytes()); // RequestApiVersion
    f.extend_from_slice(&correlation_id.to_be_bytes());
    f.extend_from_slice(&[0, 5]); // ClientId: int16 length, then the bytes
    f.extend_from_slice(b"proxy");
    f.push(0); // header tagged fields
    f.extend_from_slice(&[4, b'k', b'e', b'l']); // ClientSoftwareName: compact string
    f.extend_from_slice(&[4, b'0', b'.', b'1']); // ClientSoftwareVersion
    f.push(0); // body tagged fields
    let size = (f.len() - 4) as i32;
    f[..4].copy_from_slice(&size.to_be_bytes());
    f
}

/// Every way the crate can encode a frame, into a slice: the reference bytes.
fn encode_request_slice(src: &impl EncodeRequest, version: i16) -> Vec<u8> {
    let mut out = vec![0u8; src.encoded_len(version).unwrap()];
    let len = src.encode(version, &mut out).unwrap();
    assert_eq!(len, out.len());
    out
}

fn encode_response_slice(src: &impl EncodeResponse, version: i16) -> Vec<u8> {
    let mut out = vec![0u8; src.encoded_len(version).unwrap()];
    let len = src.encode(version, &mut out).unwrap();
    assert_eq!(len, out.len());
    out
}

/// Two 7-byte slices and a tail chained: every `put_slice` longer than a few bytes crosses
/// a chunk boundary.
fn chunked_put(expected: &[u8], put: impl FnOnce(&mut dyn BufMut) -> usize) {
    let mut a = [0u8; 7];
    let mut b = [0u8; 7];
    let mut tail = vec![0u8; expected.len()];
    let len = {
        let mut chain = (&mut a[..]).chain_mut(&mut b[..]).chain_mut(&mut tail[..]);
        put(&mut chain)
    };
    assert_eq!(len, expected.len());
    let joined: Vec<u8> = [&a[..], &b[..], &tail[..]].concat();
    assert_eq!(&joined[..len], expected);
}

/// Checks every `BufMut` route against `expected` (the slice encoder's bytes).
macro_rules! check_buf_routes {
    ($src:expr, $version:expr, $expected:expr, $what:expr) => {{
        let (src, version, expected): (_, i16, &[u8]) = ($src, $version, $expected);
        // A BytesMut with room: put into its spare capacity, no reallocation, no zero-fill.
        let mut out = BytesMut::with_capacity(expected.len() + 64);
        let capacity = out.capacity();
        let len = src.encode_buf(version, &mut out).unwrap();
        assert_eq!((len, &out[..]), (expected.len(), expected), "{}", $what);
        assert_eq!(out.capacity(), capacity, "{}: reallocated", $what);
        // After bytes already there: appended.
        let mut out = BytesMut::from(&b"head"[..]);
        src.encode_buf(version, &mut out).unwrap();
        assert_eq!(
            (&out[..4], &out[4..]),
            (&b"head"[..], expected),
            "{}",
            $what
        );
        // An empty BytesMut and a Vec, which grow.
        let mut out = BytesMut::new();
        src.encode_buf(version, &mut out).unwrap();
        assert_eq!(&out[..], expected, "{}", $what);
        let mut out: Vec<u8> = Vec::new();
        src.encode_buf(version, &mut out).unwrap();
        assert_eq!(&out[..], expected, "{}", $what);
        // A fixed slice of exactly the length, and chained chunks.
        let mut slice = vec![0u8; expected.len()];
        src.encode_buf(version, &mut &mut slice[..]).unwrap();
        assert_eq!(&slice[..], expected, "{}", $what);
        chunked_put(expected, |buf| src.encode_buf(version, buf).unwrap());
        // Exact length known: same bytes, exactly that reserved.
        let mut out = BytesMut::new();
        let len = src
            .encode_with_len(version, expected.len(), &mut out)
            .unwrap();
        assert_eq!((len, &out[..]), (expected.len(), expected), "{}", $what);
        assert_eq!(out.capacity(), expected.len(), "{}", $what);
        // A new Vec of exactly the length.
        let vec = src.encode_to_vec(version).unwrap();
        assert_eq!(
            (&vec[..], vec.capacity()),
            (expected, expected.len()),
            "{}",
            $what
        );
    }};
}

// ---------------------------------------------------------------------------------------
// Encoding into BufMut

#[test]
fn buf_mut_encoding_equals_slice_encoding_for_every_corpus_frame() {
    for frame in corpus() {
        let name = &frame.name;
        match frame.response_version {
            None => {
                let request = parse_request(&frame.bytes).unwrap();
                let v = request.version();
                check_buf_routes!(&request, v, &frame.bytes, name);
                let edit = request
                    .edit()
                    .correlation_id(-3)
                    .retain_topics(|t| t.topic() != b"payments")
                    .retain_partitions(|_, p| p % 2 == 0);
                let expected = encode_request_slice(&edit, v);
                check_buf_routes!(&edit, v, &expected, format!("{name} edited"));
                let refusal = request.error_response(ErrorCode::POLICY_VIOLATION, Some(b"no"));
                let expected = encode_response_slice(&refusal, v);
                check_buf_routes!(&refusal, v, &expected, format!("{name} refused"));
                // Every other version the request fits.
                for other in VERSIONS {
                    if let Ok(len) = request.encoded_len(other) {
                        let expected = encode_request_slice(&request, other);
                        assert_eq!(len, expected.len());
                        check_buf_routes!(&request, other, &expected, format!("{name} v{other}"));
                    }
                }
            }
            Some(v) => {
                let response = parse_response(&frame.bytes, v).unwrap();
                check_buf_routes!(&response, v, &frame.bytes, name);
                let edit = response
                    .edit()
                    .correlation_id(i32::MIN)
                    .retain_topics(|r| r.topic() != b"orders");
                let expected = encode_response_slice(&edit, v);
                check_buf_routes!(&edit, v, &expected, format!("{name} edited"));
            }
        }
    }
}

#[test]
fn buf_mut_encoding_equals_slice_encoding_for_plain_data() {
    let tags = [
        TaggedFieldData::new(1, b"x"),
        TaggedFieldData::new(300, b""),
    ];
    let long_name = [b'n'; 32767];
    // Enough partitions to cross the int32 batches of the BufMut sink several times.
    let many: Vec<i32> = (-70..200).collect();
    let topics = [
        TopicPartitionsData::new(b"orders", &[0, 1, -1, i32::MIN, i32::MAX]),
        TopicPartitionsData::new(b"", &[]),
        TopicPartitionsData::new(&long_name, &[7]),
        TopicPartitionsData::new(b"many", &many),
    ];
    for version in VERSIONS {
        let flexible = version >= 2;
        for topic_partitions in [None, Some(&[][..]), Some(&topics[..])] {
            let request = ElectLeadersRequestData {
                correlation_id: -5,
                client_id: if version == 1 { None } else { Some(b"client") },
                header_tagged_fields: if flexible { &tags } else { &[] },
                election_type: if version == 0 {
                    ElectionType::PREFERRED
                } else {
                    ElectionType::UNCLEAN
                },
                topic_partitions,
                timeout_ms: 1234,
                tagged_fields: if flexible { &tags } else { &[] },
            };
            let expected = encode_request_slice(&request, version);
            check_buf_routes!(&request, version, &expected, format!("request v{version}"));
        }
        let partitions = [
            PartitionResultData {
                partition_id: 4,
                error_code: ErrorCode::ELECTION_NOT_NEEDED,
                error_message: Some(b"not needed"),
                tagged_fields: if flexible { &tags } else { &[] },
            },
            PartitionResultData::default(),
        ];
        let results = [ReplicaElectionResultData {
            topic: b"orders",
            partition_result: &partitions,
            tagged_fields: &[],
        }];
        let response = ElectLeadersResponseData {
            correlation_id: 9,
            throttle_time_ms: 100,
            error_code: if version == 0 {
                ErrorCode::NONE
            } else {
                ErrorCode::NOT_CONTROLLER
            },
            replica_election_results: &results,
            ..Default::default()
        };
        let expected = encode_response_slice(&response, version);
        check_buf_routes!(
            &response,
            version,
            &expected,
            format!("response v{version}")
        );
    }
}

#[test]
fn refusals_write_nothing() {
    let frame = load("request-v1-unclean.bin");
    let request = parse_request(&frame).unwrap();
    // A version that cannot carry the message, and one that does not exist.
    for (version, kind) in [
        (0, EncodeErrorKind::NonDefaultValue { version: 0 }),
        (3, EncodeErrorKind::UnsupportedVersion(3)),
    ] {
        let mut out = BytesMut::from(&b"keep"[..]);
        assert_eq!(
            request.encode_buf(version, &mut out).unwrap_err().kind,
            kind
        );
        assert_eq!(&out[..], b"keep");
        let e = request.encode_with_len(version, frame.len(), &mut out);
        assert_eq!(e.unwrap_err().kind, kind);
        assert_eq!(&out[..], b"keep");
        assert_eq!(request.encode_to_vec(version).unwrap_err().kind, kind);
    }
    // A BufMut with too little room: refused before writing.
    for short in 0..frame.len() {
        let mut slice = vec![0xa5u8; short];
        let e = request.encode_buf(1, &mut &mut slice[..]).unwrap_err();
        assert_eq!(
            e.kind,
            EncodeErrorKind::BufferTooSmall {
                needed: frame.len()
            }
        );
        assert!(slice.iter().all(|&b| b == 0xa5));
        let mut limited = BytesMut::new().limit(short);
        assert!(request.encode_buf(1, &mut limited).is_err());
        assert!(limited.get_ref().is_empty());
    }
}

#[test]
fn exact_length_mismatch_is_reported_and_nothing_is_kept() {
    for frame in corpus() {
        let len = frame.bytes.len();
        let wrong = [0, 1, 3, 4, 5, len - 1, len + 1, 2 * len, usize::MAX];
        for given in wrong {
            let mut out = BytesMut::from(&b"earlier frames"[..]);
            let e = match frame.response_version {
                None => {
                    let request = parse_request(&frame.bytes).unwrap();
                    request.encode_with_len(request.version(), given, &mut out)
                }
                Some(v) => {
                    let response = parse_response(&frame.bytes, v).unwrap();
                    response.encode_with_len(v, given, &mut out)
                }
            }
            .unwrap_err();
            assert_eq!(
                e.kind,
                EncodeErrorKind::LengthMismatch {
                    expected: given,
                    actual: len
                },
                "{} given {given}",
                frame.name
            );
            assert_eq!(e.field, "frame");
            assert_eq!(&out[..], b"earlier frames", "{}: bytes kept", frame.name);
            assert!(e.to_string().contains(&len.to_string()));
        }
    }
}

/// A source that breaks the contract: after `stable_calls` calls its topic list grows.
struct Fickle {
    calls: Cell<usize>,
    stable_calls: usize,
}

impl EncodeRequest for Fickle {
    fn correlation_id(&self) -> i32 {
        1
    }
    fn client_id(&self) -> Option<&[u8]> {
        Some(b"fickle")
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        std::iter::empty()
    }
    fn election_type(&self) -> ElectionType {
        ElectionType::PREFERRED
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        const TOPICS: [TopicPartitionsData<'static>; 2] = [
            TopicPartitionsData::new(b"a", &[1, 2, 3]),
            TopicPartitionsData::new(b"b", &[4]),
        ];
        let calls = self.calls.get() + 1;
        self.calls.set(calls);
        let n = if calls <= self.stable_calls { 1 } else { 2 };
        Some(TOPICS[..n].iter())
    }
    fn timeout_ms(&self) -> i32 {
        0
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        std::iter::empty()
    }
}

#[test]
fn a_source_that_changes_is_caught_and_never_overruns() {
    // Measuring calls `topic_partitions` twice; the write sees the longer list.
    let fickle = || Fickle {
        calls: Cell::new(0),
        stable_calls: 2,
    };
    let measured = fickle().encoded_len(1).unwrap();
    let mut out = BytesMut::from(&b"x"[..]);
    let e = fickle().encode_buf(1, &mut out).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::InconsistentSource);
    // A generic BufMut cannot take bytes back: what was put stays, never past the length.
    assert!(out.len() - 1 <= measured);
    let mut slice = vec![0u8; measured + 100];
    let e = fickle().encode_buf(1, &mut &mut slice[..]).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::InconsistentSource);
    assert!(
        slice[measured..].iter().all(|&b| b == 0),
        "wrote past the length"
    );
    // `encode_with_len` does not measure: given the length of the first state, it finds
    // the frame longer, and truncates back.
    let changed = Fickle {
        calls: Cell::new(0),
        stable_calls: 0,
    };
    let mut out = BytesMut::from(&b"x"[..]);
    let e = changed.encode_with_len(1, measured, &mut out).unwrap_err();
    let longer = changed.encoded_len(1).unwrap();
    assert_eq!(
        e.kind,
        EncodeErrorKind::LengthMismatch {
            expected: measured,
            actual: longer
        }
    );
    assert_eq!(&out[..], b"x");
    // The codec measures, then writes a changed source: caught, truncated back.
    let e = KafkaFrameCodec::new()
        .encode(RequestAt::new(fickle(), 1), &mut out)
        .unwrap_err();
    assert!(matches!(e, CodecError::Encode(_)), "{e}");
    assert_eq!(&out[..], b"x");
    let e = fickle().encode_to_vec(1).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::InconsistentSource);
}

// ---------------------------------------------------------------------------------------
// The codec

/// An in-memory reader that hands out its bytes in the given chunk sizes, cycling.
struct Chunked {
    data: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    turn: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let size = this.sizes[this.turn % this.sizes.len()];
        this.turn += 1;
        let n = size.min(buf.remaining()).min(this.data.len() - this.at);
        buf.put_slice(&this.data[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// Deterministic chunk sizes from 1 to `max` (xorshift).
fn random_sizes(seed: u64, count: usize, max: usize) -> Vec<usize> {
    let mut x = seed | 1;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1 + (x % max as u64) as usize
        })
        .collect()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// Reads every frame of `data` with the codec, the reader giving chunks of `sizes`.
fn read_frames(
    data: &[u8],
    sizes: Vec<usize>,
    codec: KafkaFrameCodec,
) -> (Vec<BytesMut>, Option<CodecError>) {
    block_on(async {
        let reader = Chunked {
            data: data.to_vec(),
            at: 0,
            sizes,
            turn: 0,
        };
        let mut framed = FramedRead::new(reader, codec);
        let mut frames = Vec::new();
        while let Some(frame) = framed.next().await {
            match frame {
                Ok(frame) => frames.push(frame),
                Err(e) => return (frames, Some(e)),
            }
        }
        (frames, None)
    })
}

/// A recorded connection's client side: every corpus request, with ApiVersions requests
/// between them.
fn connection() -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut frames = vec![api_versions_request(0)];
    for (i, frame) in corpus()
        .into_iter()
        .filter(|f| f.response_version.is_none())
        .enumerate()
    {
        frames.push(frame.bytes);
        frames.push(api_versions_request(100 + i as i32));
    }
    (frames.concat(), frames)
}

#[test]
fn codec_splits_a_connection_read_a_byte_at_a_time_and_in_random_chunks() {
    let (stream, expected) = connection();
    let mut chunkings = vec![vec![1], vec![stream.len()], vec![3, 4, 5]];
    for seed in 1..=20 {
        chunkings.push(random_sizes(seed, 50, 1 + seed as usize * 7));
    }
    for sizes in chunkings {
        let (frames, error) = read_frames(&stream, sizes.clone(), KafkaFrameCodec::new());
        assert!(error.is_none(), "{error:?} with chunks {sizes:?}");
        assert_eq!(frames.len(), expected.len());
        for (frame, expected) in frames.iter().zip(&expected) {
            assert_eq!(&frame[..], &expected[..]);
            // Given to the parsers as they are.
            let peek = peek_request(frame).unwrap();
            if peek.is_elect_leaders() {
                parse_request(frame).unwrap();
            } else {
                assert_eq!(peek.api_key, 18);
            }
        }
    }
}

/// Issue 23, finding 4: a peer that announces a 100 MiB frame and sends 8 bytes made the
/// decoder reserve the whole frame. With a reserve step, what is reserved follows what has
/// arrived; the frame still comes out whole once all of it is there.
#[test]
fn codec_with_a_reserve_step_grows_with_the_bytes_received() {
    const STEP: usize = 64 << 10;
    let announced = 100 << 20;
    let mut codec = KafkaFrameCodec::new()
        .with_max_frame_size(announced)
        .with_max_reserve(STEP);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&(announced as i32).to_be_bytes());
    buf.extend_from_slice(&[0, 18, 0, 3]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(buf.capacity() <= 8 + STEP, "reserved {}", buf.capacity());
    // Without the step, the same bytes reserve the announced size.
    let mut unbounded = BytesMut::from(&buf[..]);
    assert!(KafkaFrameCodec::new()
        .with_max_frame_size(announced)
        .decode(&mut unbounded)
        .unwrap()
        .is_none());
    assert!(unbounded.capacity() >= announced);

    // A real frame fed a byte at a time through a small step still comes out whole, and
    // the buffer stays within a multiple of what arrived.
    let frame = load("request-v2-multi.bin");
    let mut codec = KafkaFrameCodec::new().with_max_reserve(16);
    let mut buf = BytesMut::new();
    for (i, &b) in frame.iter().enumerate() {
        buf.extend_from_slice(&[b]);
        let out = codec.decode(&mut buf).unwrap();
        // `BytesMut` grows by doubling: at most twice what arrived, plus the step.
        assert!(
            buf.capacity() <= 2 * (i + 1) + 16 + 64,
            "{} at {i}",
            buf.capacity()
        );
        if i + 1 < frame.len() {
            assert!(out.is_none());
        } else {
            assert_eq!(&out.unwrap()[..], &frame[..]);
        }
    }
}

#[test]
fn codec_reserves_exactly_what_is_missing() {
    let mut codec = KafkaFrameCodec::new();
    let frame = load("request-v2-multi.bin");
    let total = frame.len();

    // Part of the prefix: only the rest of the prefix is asked for.
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&frame[..1]);
    let before = buf.capacity();
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(buf.capacity() >= 4);
    assert_eq!(
        buf.capacity(),
        before.max(4),
        "reserved more than the prefix"
    );

    // The prefix: the rest of the frame, exactly. (`BytesMut::from` a slice has exactly
    // the slice's capacity; `reserve` on it grows to len + additional when that is at
    // least double, as it is here.)
    let mut buf = BytesMut::from(&frame[..4]);
    assert_eq!(buf.capacity(), 4);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert_eq!(buf.capacity(), total);

    // Part of the body: what is left.
    let k = total / 3;
    let mut buf = BytesMut::from(&frame[..k]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert_eq!(buf.capacity(), total);
    assert_eq!(buf.len(), k);

    // A whole frame then part of the next: the first comes out, the rest is reserved for.
    let next = load("request-v0.bin");
    let mut buf = BytesMut::from(&[&frame[..], &next[..10]].concat()[..]);
    let out = codec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(&out[..], &frame[..]);
    assert_eq!(&buf[..], &next[..10]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(buf.capacity() >= next.len());
    buf.extend_from_slice(&next[10..]);
    assert_eq!(&codec.decode(&mut buf).unwrap().unwrap()[..], &next[..]);
    assert!(buf.is_empty());
}

#[test]
fn codec_refuses_oversize_and_negative_sizes_without_reserving() {
    let max = 1000;
    let mut codec = KafkaFrameCodec::new().with_max_frame_size(max);
    assert_eq!(codec.max_frame_size(), max);
    assert_eq!(
        KafkaFrameCodec::default().max_frame_size(),
        DEFAULT_MAX_FRAME_SIZE
    );

    // At the maximum: reserved for, up to it and not past it.
    let mut buf = BytesMut::from(&(max as i32).to_be_bytes()[..]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert_eq!(buf.capacity(), 4 + max);

    for (size, kind) in [
        (
            max as i32 + 1,
            ErrorKind::FrameTooLarge { size: max + 1, max },
        ),
        (
            i32::MAX,
            ErrorKind::FrameTooLarge {
                size: i32::MAX as usize,
                max,
            },
        ),
        (-1, ErrorKind::NegativeLength(-1)),
        (i32::MIN, ErrorKind::NegativeLength(i32::MIN)),
    ] {
        let mut buf = BytesMut::from(&size.to_be_bytes()[..]);
        let e = codec.decode(&mut buf).unwrap_err();
        let CodecError::Frame(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!((e.kind, e.field, e.offset), (kind, "size", 0));
        assert_eq!(buf.capacity(), 4, "reserved for a refused size");
        // Through FramedRead, after a good frame, a byte at a time.
        let good = load("request-v2-min.bin");
        let stream = [&good[..], &size.to_be_bytes(), &[0; 8]].concat();
        let (frames, error) = read_frames(&stream, vec![1], codec);
        assert_eq!(frames.len(), 1);
        let Some(CodecError::Frame(e)) = error else {
            panic!("{error:?}")
        };
        assert_eq!(e.kind, kind);
        assert!(e.to_string().starts_with("size at byte 0"), "{e}");
    }

    // The default maximum.
    let over = DEFAULT_MAX_FRAME_SIZE as i32 + 1;
    let mut buf = BytesMut::from(&over.to_be_bytes()[..]);
    let e = KafkaFrameCodec::new().decode(&mut buf).unwrap_err();
    assert!(
        e.to_string().contains(&DEFAULT_MAX_FRAME_SIZE.to_string()),
        "{e}"
    );
}

#[test]
fn codec_reports_a_stream_that_ends_inside_a_frame() {
    let frame = load("request-v0.bin");
    for cut in [1, 3, 4, 20, frame.len() - 1] {
        // Before the size prefix is whole, only the prefix is known to be missing.
        let needed = if cut < 4 { 4 - cut } else { frame.len() - cut };
        let stream = [&frame[..], &frame[..cut]].concat();
        let (frames, error) = read_frames(&stream, vec![5], KafkaFrameCodec::new());
        assert_eq!(frames.len(), 1);
        let Some(CodecError::Frame(e)) = error else {
            panic!("{error:?}")
        };
        assert_eq!(
            (e.kind, e.field),
            (ErrorKind::UnexpectedEnd { needed }, "size")
        );
    }
    // Ending between frames is the end.
    let (frames, error) = read_frames(&frame, vec![7], KafkaFrameCodec::new());
    assert_eq!((frames.len(), error.is_none()), (1, true));
    let (frames, error) = read_frames(&[], vec![7], KafkaFrameCodec::new());
    assert_eq!((frames.len(), error.is_none()), (0, true));
}

#[test]
fn codec_encodes_whole_frames_and_sources() {
    let mut codec = KafkaFrameCodec::new();
    let frame = load("request-v2-tagged.bin");
    let mut dst = BytesMut::new();
    codec.encode(Bytes::from(frame.clone()), &mut dst).unwrap();
    codec.encode(BytesMut::from(&frame[..]), &mut dst).unwrap();
    codec.encode(&frame[..], &mut dst).unwrap();
    assert_eq!(&dst[..], &[&frame[..], &frame[..], &frame[..]].concat()[..]);

    // Not exactly one frame: refused, nothing written.
    let mut longer = frame.clone();
    longer.push(0);
    let mut negative = frame.clone();
    negative[..4].copy_from_slice(&(-2i32).to_be_bytes());
    let size = frame.len() - 4;
    let cases: [(&[u8], ErrorKind); 5] = [
        (
            &longer,
            ErrorKind::SizeMismatch {
                declared: size,
                actual: size + 1,
            },
        ),
        (
            &frame[..frame.len() - 1],
            ErrorKind::SizeMismatch {
                declared: size,
                actual: size - 1,
            },
        ),
        (
            &frame[..4],
            ErrorKind::SizeMismatch {
                declared: size,
                actual: 0,
            },
        ),
        (&frame[..2], ErrorKind::UnexpectedEnd { needed: 2 }),
        (&negative, ErrorKind::NegativeLength(-2)),
    ];
    for (bad, kind) in cases {
        let mut dst = BytesMut::from(&b"kept"[..]);
        let e = codec.encode(bad, &mut dst).unwrap_err();
        let CodecError::Frame(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!((e.kind, e.field), (kind, "size"));
        assert_eq!(&dst[..], b"kept");
    }
    // The maximum is for reading only.
    let mut small = KafkaFrameCodec::new().with_max_frame_size(8);
    small.encode(&frame[..], &mut BytesMut::new()).unwrap();

    // Sources: the same bytes as `encode`, exactly their length reserved.
    let request = parse_request(&frame).unwrap();
    let edit = request.edit().correlation_id(5).timeout_ms(1);
    let mut dst = BytesMut::new();
    codec.encode(RequestAt::new(edit, 2), &mut dst).unwrap();
    assert_eq!(&dst[..], &encode_request_slice(&edit, 2)[..]);
    assert_eq!(dst.capacity(), dst.len());
    let response_frame = load("response-v2-tagged.bin");
    let response = parse_response(&response_frame, 2).unwrap();
    let mut dst = BytesMut::new();
    codec
        .encode(ResponseAt::new(response, 2), &mut dst)
        .unwrap();
    assert_eq!(&dst[..], &response_frame[..]);
    let refusal = request.error_response(ErrorCode::NOT_CONTROLLER, None);
    codec.encode(ResponseAt::new(refusal, 2), &mut dst).unwrap();
    assert_eq!(
        &dst[response_frame.len()..],
        &encode_response_slice(&refusal, 2)[..]
    );
    // Refused sources leave the buffer as it was.
    let before = dst.clone();
    let e = codec
        .encode(RequestAt::new(request, 0), &mut dst)
        .unwrap_err();
    assert!(
        matches!(e, CodecError::Encode(e) if e.kind == EncodeErrorKind::TaggedFieldsUnsupported { version: 0 })
    );
    assert_eq!(dst, before);
}

#[test]
fn codec_errors_wrap_io_frame_and_encode_errors() {
    use std::error::Error as _;
    let io = CodecError::from(io::Error::new(io::ErrorKind::BrokenPipe, "gone"));
    assert!(io.to_string().contains("gone"));
    assert_eq!(io::Error::from(io).kind(), io::ErrorKind::BrokenPipe);
    let frame = CodecError::from(
        peek_request(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap_err(),
    );
    assert!(frame.source().is_some());
    assert!(frame.to_string().contains("negative length -1"), "{frame}");
    assert_eq!(io::Error::from(frame).kind(), io::ErrorKind::InvalidData);
    let encode = CodecError::from(
        ElectLeadersRequestData::default()
            .encoded_len(7)
            .unwrap_err(),
    );
    assert!(encode.to_string().contains("version 7"), "{encode}");
}

// ---------------------------------------------------------------------------------------
// Correlation-id rewrites

#[test]
fn correlation_id_rewrites_round_trip_for_every_corpus_frame() {
    for frame in corpus() {
        let mut bytes = frame.bytes.clone();
        let original_id = match frame.response_version {
            None => peek_request(&frame.bytes).unwrap().correlation_id,
            Some(_) => peek_response(&frame.bytes).unwrap().correlation_id,
        };
        for id in [0, 1, -1, i32::MAX, i32::MIN, 0x0102_0304] {
            match frame.response_version {
                None => {
                    let old = parse_request(&bytes).unwrap().correlation_id();
                    assert_eq!(set_request_correlation_id(&mut bytes, id), Ok(old));
                    let rewritten = parse_request(&bytes).unwrap();
                    assert_eq!(rewritten.correlation_id(), id);
                    // Nothing else changed.
                    let restored = rewritten.edit().correlation_id(original_id);
                    let v = rewritten.version();
                    assert_eq!(restored.encode_to_vec(v).unwrap(), frame.bytes);
                }
                Some(v) => {
                    let old = parse_response(&bytes, v).unwrap().correlation_id();
                    assert_eq!(set_response_correlation_id(&mut bytes, id), Ok(old));
                    assert_eq!(parse_response(&bytes, v).unwrap().correlation_id(), id);
                    assert_eq!(peek_response(&bytes).unwrap().correlation_id, id);
                }
            }
            assert_eq!(bytes.len(), frame.bytes.len());
            assert_eq!(bytes[..4], frame.bytes[..4], "{}: size changed", frame.name);
        }
        // Back to the original id: the original bytes.
        match frame.response_version {
            None => set_request_correlation_id(&mut bytes, original_id).unwrap(),
            Some(_) => set_response_correlation_id(&mut bytes, original_id).unwrap(),
        };
        assert_eq!(bytes, frame.bytes, "{}", frame.name);
    }
    // Another API, and the head of a frame still arriving.
    let mut api_versions = api_versions_request(4);
    assert_eq!(set_request_correlation_id(&mut api_versions, 40), Ok(4));
    assert_eq!(api_versions, api_versions_request(40));
    let mut head = api_versions_request(4)[..12].to_vec();
    assert_eq!(set_request_correlation_id(&mut head, 41), Ok(4));
    assert_eq!(peek_request(&head).unwrap().correlation_id, 41);
}

#[test]
fn correlation_id_rewrites_refuse_short_and_bad_frames_untouched() {
    let request = load("request-v0.bin");
    let response = load("response-v0.bin");
    let mut refused: Vec<(Vec<u8>, bool)> = Vec::new();
    for cut in 0..12 {
        refused.push((request[..cut].to_vec(), true));
    }
    for cut in 0..8 {
        refused.push((response[..cut].to_vec(), false));
    }
    for size in [-1, i32::MIN] {
        let mut bad = request.clone();
        bad[..4].copy_from_slice(&size.to_be_bytes());
        refused.push((bad.clone(), true));
        refused.push((bad, false));
    }
    // A size prefix too small for the fields rewritten.
    for size in [0i32, 4, 7] {
        let mut bad = request.clone();
        bad[..4].copy_from_slice(&size.to_be_bytes());
        refused.push((bad, true));
    }
    for size in [0i32, 3] {
        let mut bad = response.clone();
        bad[..4].copy_from_slice(&size.to_be_bytes());
        refused.push((bad, false));
    }
    for (frame, is_request) in refused {
        let mut buf = frame.clone();
        let result = if is_request {
            set_request_correlation_id(&mut buf, 99)
        } else {
            set_response_correlation_id(&mut buf, 99)
        };
        let e = result.unwrap_err();
        let peeked = if is_request {
            peek_request(&frame).map(|p| p.correlation_id)
        } else {
            peek_response(&frame).map(|p| p.correlation_id)
        };
        assert_eq!(peeked, Err(e), "the peek's error");
        assert_eq!(buf, frame, "changed a refused frame: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// Owned frames

const fn assert_send_sync_static<T: Send + Sync + 'static>() {}
const _: () = {
    assert_send_sync_static::<OwnedRequest<Bytes>>();
    assert_send_sync_static::<OwnedRequest<BytesMut>>();
    assert_send_sync_static::<OwnedRequest<Vec<u8>>>();
    assert_send_sync_static::<OwnedRequest<Box<[u8]>>>();
    assert_send_sync_static::<OwnedRequest<Arc<[u8]>>>();
    assert_send_sync_static::<OwnedRequest<&'static [u8]>>();
    assert_send_sync_static::<OwnedResponse<Bytes>>();
    assert_send_sync_static::<OwnedResponse<Vec<u8>>>();
    assert_send_sync_static::<kafka_elect_leaders::OwnedParseError<Bytes>>();
    assert_send_sync_static::<CodecError>();
};

#[test]
fn owned_frames_give_the_borrowed_views_values() {
    for frame in corpus() {
        let bytes = Bytes::from(frame.bytes.clone());
        match frame.response_version {
            None => {
                let borrowed = parse_request(&frame.bytes).unwrap();
                let owned = OwnedRequest::new(bytes.clone()).unwrap();
                assert_eq!(owned.view(), borrowed);
                assert_eq!(owned.version(), borrowed.version());
                assert_eq!(owned.correlation_id(), borrowed.correlation_id());
                assert_eq!(owned.frame(), &frame.bytes[..]);
                assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"));
                assert_eq!(
                    owned.view().encode_to_vec(owned.version()).unwrap(),
                    frame.bytes
                );
                // Every storage gives the same view.
                assert_eq!(
                    OwnedRequest::new(frame.bytes.clone()).unwrap().view(),
                    borrowed
                );
                let boxed: Box<[u8]> = frame.bytes.clone().into();
                assert_eq!(OwnedRequest::new(boxed).unwrap().view(), borrowed);
                let shared: Arc<[u8]> = frame.bytes.clone().into();
                assert_eq!(OwnedRequest::new(shared).unwrap().view(), borrowed);
                let leaked: &'static [u8] = frame.bytes.clone().leak();
                assert_eq!(OwnedRequest::new(leaked).unwrap().view(), borrowed);
                let mutable = BytesMut::from(&frame.bytes[..]);
                assert_eq!(OwnedRequest::new(mutable).unwrap().view(), borrowed);
                // No copy: the same bytes come back.
                let back = owned.clone().into_bytes();
                assert_eq!(back.as_ptr(), bytes.as_ptr());
            }
            Some(v) => {
                let borrowed = parse_response(&frame.bytes, v).unwrap();
                let owned = OwnedResponse::new(bytes.clone(), v).unwrap();
                assert_eq!(owned.view(), borrowed);
                assert_eq!(owned.version(), v);
                assert_eq!(owned.correlation_id(), borrowed.correlation_id());
                assert_eq!(owned.frame(), &frame.bytes[..]);
                assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"));
                assert_eq!(owned.into_bytes().as_ptr(), bytes.as_ptr());
                assert_eq!(
                    OwnedResponse::new(frame.bytes.clone(), v).unwrap().view(),
                    borrowed
                );
            }
        }
    }
}

#[test]
fn malformed_frames_are_given_back_with_the_error() {
    for frame in corpus() {
        let cut = Bytes::from(frame.bytes[..frame.bytes.len() - 1].to_vec());
        let (e, expected) = match frame.response_version {
            None => (
                OwnedRequest::new(cut.clone()).unwrap_err(),
                parse_request(&cut).unwrap_err(),
            ),
            Some(v) => (
                OwnedResponse::new(cut.clone(), v).unwrap_err(),
                parse_response(&cut, v).unwrap_err(),
            ),
        };
        assert_eq!(e.error(), expected);
        assert_eq!(e.to_string(), expected.to_string());
        assert!(format!("{e:?}").contains(&format!("len: {}", cut.len())));
        assert_eq!(
            std::error::Error::source(&e).unwrap().to_string(),
            expected.to_string()
        );
        assert_eq!(e.into_bytes(), cut);
    }
    let e = OwnedRequest::new(api_versions_request(1)).unwrap_err();
    assert_eq!(e.error().kind, ErrorKind::UnsupportedApiKey(18));
}

#[test]
fn owned_frames_are_held_across_await_points_in_spawned_tasks() {
    let frames: Vec<Bytes> = ["request-v0.bin", "request-v2-tagged.bin"]
        .iter()
        .map(|name| Bytes::from(load(name)))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let topics = runtime.block_on(async {
        let mut tasks = Vec::new();
        for frame in &frames {
            let owned = OwnedRequest::new(frame.clone()).unwrap();
            // `tokio::spawn` needs `Send + 'static`, and the request lives across the yield.
            tasks.push(tokio::spawn(async move {
                tokio::task::yield_now().await;
                let view = owned.view();
                tokio::task::yield_now().await;
                let _ = view; // A view borrows `owned`; it may not outlive the task.
                owned.view().topic_partitions().map_or(0, |t| t.len())
            }));
        }
        let mut topics = Vec::new();
        for task in tasks {
            topics.push(task.await.unwrap());
        }
        topics
    });
    assert_eq!(topics, [2, 2]);
}
