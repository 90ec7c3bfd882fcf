//! Parsing, visiting, iterating, splitting, peeking, failing, measuring and encoding (also at
//! a known length) allocate nothing: counted by a global allocator, per thread, so libtest's
//! other threads cannot disturb the count.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use common::{load_corpus, patch, walk_request, walk_response, Kind};
use kafka_elect_leaders::{
    never_answered, parse_request, parse_response, peek_produce, peek_request, read_request_header,
    split_frame, split_frame_with_max, ElectLeadersRequestData, ElectLeadersResponseData,
    ElectionType, EncodeRequest, EncodeResponse, ErrorCode, Frames, PartitionResultData,
    ReplicaElectionResultData, TaggedFieldData, TopicPartitionsData,
};

struct CountingAllocator;

thread_local! {
    // `const`-initialised and without a destructor: reading it never allocates, so the
    // allocator can use it without recursing into itself.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: during thread teardown the slot may be gone; those allocations are not ours.
    let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
}

/// Allocations made by the current thread so far.
fn allocations() -> usize {
    ALLOCS.with(Cell::get)
}

// SAFETY: every method forwards to `System` with the caller's own arguments, so `System`'s
// guarantees are passed through unchanged; the only addition is bumping a thread-local
// counter, which neither allocates nor touches the memory being managed.
// The workspace denies `unsafe_code`; implementing `GlobalAlloc` needs it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `f` and returns how many allocations it made on this thread.
fn allocations_in(f: impl FnOnce()) -> usize {
    let before = allocations();
    f();
    allocations() - before
}

#[test]
fn the_counter_sees_allocations() {
    // Without this the zeroes below could be vacuous.
    let n = allocations_in(|| {
        let v: Vec<u64> = black_box(Vec::with_capacity(16));
        drop(v);
    });
    assert_eq!(n, 1);
    let n = allocations_in(|| {
        let mut v: Vec<u8> = black_box(Vec::with_capacity(1));
        v.extend_from_slice(black_box(&[1, 2, 3, 4, 5, 6, 7, 8, 9]));
        black_box(&v);
    });
    assert_eq!(n, 2, "alloc then realloc");
    let n = allocations_in(|| {
        black_box(vec![0u8; 4096]);
    });
    assert_eq!(n, 1, "alloc_zeroed");
    let n = allocations_in(|| {
        black_box(format!("{}", black_box(12345)));
    });
    assert!(n >= 1, "formatting allocates");
}

#[test]
fn parsing_and_walking_every_frame_allocates_nothing() {
    // Everything that allocates happens before the count starts.
    let corpus = load_corpus();
    let requests: Vec<&[u8]> = corpus
        .iter()
        .filter(|f| f.is_request())
        .map(|f| &f.bytes[..])
        .collect();
    let stream: Vec<u8> = requests.concat();

    let mut sum = 0u64;
    let n = allocations_in(|| {
        for frame in &corpus {
            let bytes = black_box(&frame.bytes[..]);
            sum ^= match frame.kind() {
                Kind::Request => walk_request(&parse_request(bytes).unwrap()),
                Kind::Response { version } => {
                    walk_response(&parse_response(bytes, version).unwrap())
                }
            };
            let (whole, rest) = split_frame(bytes).unwrap();
            sum ^= (whole.len() + rest.len()) as u64;
        }
        // Every request, cut out of a stream.
        let mut count = 0;
        let mut frames = Frames::new(black_box(&stream));
        for frame in frames.by_ref() {
            let request = parse_request(frame.unwrap()).unwrap();
            sum ^= walk_request(&request);
            count += 1;
        }
        assert_eq!(count, requests.len());
        assert_eq!(frames.needed(), None);
        // And with a partial frame at the end.
        let mut frames = Frames::new(black_box(&stream[..stream.len() - 3]));
        sum ^= frames.by_ref().count() as u64;
        assert_eq!(frames.needed(), Some(3));
        // Peek every request.
        for &frame in &requests {
            let peek = peek_request(black_box(frame)).unwrap();
            assert!(peek.is_elect_leaders());
            sum ^= peek.correlation_id as u64;
        }
    });
    assert_eq!(
        n, 0,
        "allocations while parsing, walking, splitting, peeking"
    );
    black_box(sum);
}

/// The header of any request, and a Produce's acks, read without allocating.
#[test]
fn reading_any_request_header_and_produce_acks_allocates_nothing() {
    let corpus = load_corpus();
    // Produce v9 (flexible): client id "c", no tagged field, null transactional id,
    // acks 0, timeout 1500 ms.
    let produce: Vec<u8> = [0, 0, 0, 19, 0, 0, 0, 9, 0, 0, 0, 1, 0, 1, b'c', 0, 0, 0, 0]
        .into_iter()
        .chain(1500i32.to_be_bytes())
        .collect();
    let mut sum = 0u64;
    let n = allocations_in(|| {
        for frame in corpus.iter().filter(|f| f.is_request()) {
            let (header, body) = read_request_header(black_box(&frame.bytes[..])).unwrap();
            sum ^= (header.body_offset + body.len() + header.tagged_fields.len()) as u64;
            sum ^= u64::from(never_answered(black_box(&frame.bytes[..])));
        }
        let peek = peek_produce(black_box(&produce)).unwrap();
        sum ^= peek.acks as u64;
        sum ^= u64::from(never_answered(black_box(&produce)));
        sum ^= u64::from(never_answered(black_box(&produce[..10])));
    });
    assert_eq!(n, 0);
    assert!(never_answered(&produce));
    black_box(sum);
}

#[test]
fn errors_allocate_nothing() {
    let corpus = load_corpus();
    let v0 = common::load("request-v0.bin");
    let v2 = common::load("request-v2-min.bin");
    let malformed: Vec<Vec<u8>> = vec![
        patch(&v0, 31, &[0xff, 0xfe]),              // NegativeLength
        patch(&v0, 27, &8i32.to_be_bytes()),        // CountTooLarge
        patch(&v2, 17, &[0x00]),                    // UnexpectedNull
        patch(&v2, 4, &42i16.to_be_bytes()),        // UnsupportedApiKey
        patch(&v2, 6, &3i16.to_be_bytes()),         // UnsupportedVersion
        common::splice(&v2, 29..29, &[0]),          // TrailingBytes
        common::splice(&v2, 17..18, &[0xff; 5]),    // VarintTooLong
        common::splice(&v2, 28..29, &[1, 0, 5, 0]), // tagged field past the end
        common::with_size_prefix(&v2, -1),          // negative size
        [&v2[..], &[0]].concat(),                   // SizeMismatch
    ];

    let mut sum = 0usize;
    let n = allocations_in(|| {
        // Every corpus frame cut at every length: an error, and no allocation.
        for frame in &corpus {
            for k in 0..frame.bytes.len() {
                let cut = black_box(&frame.bytes[..k]);
                let e = match frame.kind() {
                    Kind::Request => parse_request(cut).unwrap_err(),
                    Kind::Response { version } => parse_response(cut, version).unwrap_err(),
                };
                sum ^= e.offset ^ e.field.len();
                let e = split_frame(cut).unwrap_err();
                sum ^= e.needed().unwrap();
                if k < 12 && frame.is_request() {
                    sum ^= peek_request(cut).unwrap_err().needed().unwrap();
                }
            }
        }
        for frame in &malformed {
            let e = parse_request(black_box(frame)).unwrap_err();
            assert!(!e.is_incomplete());
            sum ^= e.offset ^ e.field.len();
        }
        let e = split_frame_with_max(black_box(&v2), 24).unwrap_err();
        sum ^= e.offset;
        let e = parse_response(black_box(&v2), 3).unwrap_err();
        sum ^= e.offset;
        let mut frames = Frames::new(black_box(&malformed[8]));
        assert!(frames.next().unwrap().is_err());
        assert!(frames.next().is_none());
    });
    assert_eq!(n, 0, "allocations on the error paths");
    black_box(sum);
}

#[test]
fn measuring_and_encoding_allocate_nothing() {
    let corpus = load_corpus();
    let mut out = vec![0u8; 1 << 16];
    let tags = [TaggedFieldData::new(1, b"ab"), TaggedFieldData::new(9, b"")];
    let topics = [
        TopicPartitionsData::new(b"orders", &[0, 1, 2]),
        TopicPartitionsData {
            topic: b"t",
            partitions: &[-1],
            tagged_fields: &tags,
        },
    ];
    let request = ElectLeadersRequestData {
        correlation_id: 3,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        tagged_fields: &tags,
        ..Default::default()
    };
    let partitions = [PartitionResultData {
        partition_id: 4,
        error_code: ErrorCode::ELECTION_NOT_NEEDED,
        error_message: Some(b"no"),
        tagged_fields: &tags,
    }];
    let results = [ReplicaElectionResultData {
        topic: b"orders",
        partition_result: &partitions,
        tagged_fields: &[],
    }];
    let response = ElectLeadersResponseData {
        replica_election_results: &results,
        ..Default::default()
    };

    let mut sum = 0usize;
    let n = allocations_in(|| {
        // Re-emitting every parsed frame, an edit of it, and a refusal of each request.
        for frame in &corpus {
            let bytes = black_box(&frame.bytes[..]);
            match frame.kind() {
                Kind::Request => {
                    let parsed = parse_request(bytes).unwrap();
                    let v = parsed.version();
                    sum ^= parsed.encoded_len(v).unwrap();
                    sum ^= parsed.encode(v, &mut out).unwrap();
                    let edit = parsed
                        .edit()
                        .correlation_id(1)
                        .retain_topics(|t| !t.topic().is_empty())
                        .retain_partitions(|_, p| p % 2 == 0);
                    sum ^= edit.encode(v, &mut out).unwrap();
                    let refusal = parsed.error_response(ErrorCode::NOT_CONTROLLER, Some(b"no"));
                    sum ^= refusal.encode(v, &mut out).unwrap();
                    // Too small a buffer: refused, and still no allocation.
                    sum ^= parsed.encode(v, &mut out[..3]).unwrap_err().field.len();
                }
                Kind::Response { version } => {
                    let parsed = parse_response(bytes, version).unwrap();
                    sum ^= parsed.encoded_len(version).unwrap();
                    sum ^= parsed.encode(version, &mut out).unwrap();
                    sum ^= parsed
                        .edit()
                        .correlation_id(5)
                        .encode(version, &mut out)
                        .unwrap();
                }
            }
        }
        // Plain borrowed data at v2, the one version that carries it all (UNCLEAN and
        // tagged fields), and the refusals of the others: each must happen, without
        // allocating.
        sum ^= black_box(&request).encode(2, &mut out).unwrap();
        for v in 0..=1 {
            sum ^= black_box(&request)
                .encode(v, &mut out)
                .unwrap_err()
                .field
                .len();
        }
        sum ^= black_box(&response).encode(2, &mut out).unwrap();
        for v in 0..=1 {
            sum ^= black_box(&response)
                .encode(v, &mut out)
                .unwrap_err()
                .field
                .len();
        }
    });
    assert_eq!(n, 0, "allocations while measuring and encoding");
    black_box(sum);
}

#[test]
fn rewriting_correlation_ids_allocates_nothing() {
    use kafka_elect_leaders::{set_request_correlation_id, set_response_correlation_id};
    let mut corpus = load_corpus();
    let mut short = common::load("request-v0.bin")[..7].to_vec();
    let mut sum = 0i64;
    let n = allocations_in(|| {
        for frame in &mut corpus {
            let kind = frame.kind();
            let bytes = black_box(&mut frame.bytes[..]);
            sum ^= i64::from(match kind {
                Kind::Request => set_request_correlation_id(bytes, 5).unwrap(),
                Kind::Response { .. } => set_response_correlation_id(bytes, 5).unwrap(),
            });
        }
        // Refused, on the error path.
        let e = set_request_correlation_id(black_box(&mut short), 5).unwrap_err();
        sum ^= e.needed().unwrap() as i64;
    });
    assert_eq!(n, 0, "allocations while rewriting correlation ids");
    black_box(sum);
}

/// Into a `BytesMut` reserved beforehand: the `BufMut` sink, the exact-length encoder (and
/// its truncation on a wrong length), and the views of owned frames allocate nothing.
#[cfg(feature = "bytes")]
#[test]
fn encoding_into_a_reserved_bytes_mut_allocates_nothing() {
    use bytes::{Bytes, BytesMut};
    use kafka_elect_leaders::{EncodeRequestExt, EncodeResponseExt, OwnedRequest};

    let corpus = load_corpus();
    let owned: Vec<OwnedRequest<Bytes>> = corpus
        .iter()
        .filter(|f| f.is_request())
        .map(|f| OwnedRequest::new(Bytes::from(f.bytes.clone())).unwrap())
        .collect();
    let mut out = BytesMut::with_capacity(1 << 16);
    let mut slice = vec![0u8; 1 << 16];
    let capacity = out.capacity();

    let mut sum = 0usize;
    let n = allocations_in(|| {
        for frame in &corpus {
            let bytes = black_box(&frame.bytes[..]);
            out.clear();
            match frame.kind() {
                Kind::Request => {
                    let parsed = parse_request(bytes).unwrap();
                    let v = parsed.version();
                    sum ^= parsed.encode_buf(v, &mut out).unwrap();
                    let edit = parsed
                        .edit()
                        .correlation_id(1)
                        .retain_partitions(|_, p| p > 0);
                    sum ^= edit.encode_buf(v, &mut out).unwrap();
                    let refusal = parsed.error_response(ErrorCode::NOT_CONTROLLER, Some(b"no"));
                    sum ^= refusal.encode_buf(v, &mut out).unwrap();
                    let len = parsed.encoded_len(v).unwrap();
                    sum ^= parsed.encode_with_len(v, len, &mut out).unwrap();
                    // A wrong length: refused and truncated back, still no allocation.
                    let e = parsed.encode_with_len(v, len + 1, &mut out).unwrap_err();
                    sum ^= e.field.len();
                    sum ^= parsed.encode_buf(v, &mut &mut slice[..]).unwrap();
                }
                Kind::Response { version } => {
                    let parsed = parse_response(bytes, version).unwrap();
                    sum ^= parsed.encode_buf(version, &mut out).unwrap();
                    let len = parsed.encoded_len(version).unwrap();
                    sum ^= parsed.encode_with_len(version, len, &mut out).unwrap();
                    sum ^= parsed.encode_buf(version, &mut &mut slice[..]).unwrap();
                }
            }
        }
        for request in &owned {
            sum ^= walk_request(&request.view()) as usize;
        }
    });
    assert_eq!(n, 0, "allocations while encoding into a reserved BytesMut");
    assert_eq!(out.capacity(), capacity);
    black_box(sum);
}

#[test]
fn visiting_and_encoding_at_a_known_length_allocate_nothing() {
    struct Sum(u64);
    impl<'a> kafka_elect_leaders::RequestVisitor<'a> for Sum {
        fn topic_partitions(&mut self, entry: kafka_elect_leaders::TopicPartitions<'a>) {
            self.0 += entry.topic().len() as u64;
            self.0 += entry
                .partitions()
                .iter()
                .map(|p| u64::from(p as u32))
                .sum::<u64>();
        }
    }
    impl<'a> kafka_elect_leaders::ResponseVisitor<'a> for Sum {
        fn replica_election_result(&mut self, topic: &'a [u8]) {
            self.0 += topic.len() as u64;
        }
        fn partition_result(&mut self, p: kafka_elect_leaders::PartitionResult<'a>) {
            self.0 += u64::from(p.partition_id() as u32)
                + p.error_message().map_or(0, <[u8]>::len) as u64;
            self.0 += u64::from(p.error_message_str().is_ok());
        }
        fn end_replica_election_result(
            &mut self,
            r: kafka_elect_leaders::ReplicaElectionResult<'a>,
        ) {
            self.0 += r.range().len() as u64 + u64::from(r.topic_str().is_ok());
        }
    }
    let corpus = load_corpus();
    let lens: Vec<usize> = corpus
        .iter()
        .map(|f| match f.kind() {
            Kind::Request => parse_request(&f.bytes).unwrap().encoded_len(2).unwrap_or(0),
            Kind::Response { version } => parse_response(&f.bytes, version)
                .unwrap()
                .encoded_len(version)
                .unwrap(),
        })
        .collect();
    let mut out = vec![0u8; 1 << 16];
    let mut sum = Sum(0);
    let n = allocations_in(|| {
        for (frame, &len) in corpus.iter().zip(&lens) {
            let bytes = black_box(&frame.bytes[..]);
            match frame.kind() {
                Kind::Request => {
                    let r = kafka_elect_leaders::visit_request(bytes, &mut sum).unwrap();
                    if r.version() == 2 {
                        sum.0 += r.encode_exact(2, len, &mut out).unwrap() as u64;
                    }
                }
                Kind::Response { version } => {
                    let r = kafka_elect_leaders::visit_response(bytes, version, &mut sum).unwrap();
                    sum.0 += r.encode_exact(version, len, &mut out).unwrap() as u64;
                }
            }
            // Failures too: a cut frame, and a wrong length.
            let cut = &bytes[..bytes.len() - 1];
            match frame.kind() {
                Kind::Request => {
                    assert!(kafka_elect_leaders::visit_request(cut, &mut sum).is_err());
                }
                Kind::Response { version } => {
                    assert!(kafka_elect_leaders::visit_response(cut, version, &mut sum).is_err());
                    let r = parse_response(bytes, version).unwrap();
                    assert!(r.encode_exact(version, len + 1, &mut out).is_err());
                }
            }
        }
    });
    assert_eq!(
        n, 0,
        "allocations while visiting and encoding at a known length"
    );
    assert!(sum.0 > 0);
}
