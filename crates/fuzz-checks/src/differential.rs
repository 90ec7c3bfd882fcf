//! differential: the same bytes through this crate and through kafka-protocol.

use super::*;

//
// Deliberate differences, where Kafka's semantics do not make both accept:
// - Bytes left after the body: kafka-protocol ignores them; we refuse (`TrailingBytes`).
// - A 5-byte varint over 32 bits: kafka-protocol wraps it; we refuse (`VarintOverflow`).
// - Invalid UTF-8 in a string: kafka-protocol refuses (its strings are `str`); we keep the
//   bytes, as an inspector must show them.
// - Repeated or unordered unknown tags: kafka-protocol keeps the last of each tag, sorted
//   (a map); we keep them all, in wire order. Compared here as kafka-protocol sees them.
// - A negative length or count other than -1 on a nullable string or array: Apache Kafka
//   reads it as null, and so do we; kafka-protocol refuses it. Such a frame is checked
//   through our canonical re-encoding of it instead (`refused_by_them`).
// - kafka-protocol sizes its vectors from the wire count before checking it against the
//   bytes left, so frames we refuse are not handed to it: a count of 2^31 would make it
//   try to allocate gigabytes. Only frames we accept are compared.

/// First byte: bit 0 picks request (0) or response (1), the next bits the response
/// version; the rest is one frame.
pub fn check_differential(data: &[u8]) {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    if selector & 1 == 0 {
        differential_request(frame);
    } else {
        differential_response(frame, nth_version(u64::from(selector >> 1)));
    }
}

/// kafka-protocol refused a frame we accept. Its only known reason (see the list above) is
/// a negative length or count other than -1, which Apache Kafka reads as null and
/// kafka-protocol refuses. So the frame must not be canonical, and our canonical re-encoding
/// of it (-1 or 0 for null) must then pass the whole differential check.
pub(crate) fn refused_by_them(
    ours: &impl Canonical,
    frame: &[u8],
    e: &dyn std::fmt::Display,
    check: impl Fn(&[u8]),
) {
    // A message our writer refuses (unknown tags out of order) cannot be made canonical.
    let Some(canonical) = ours.canonical() else {
        return;
    };
    assert_ne!(
        &canonical[..],
        frame,
        "kafka-protocol refused a canonical frame we accept: {e}"
    );
    check(&canonical);
}

/// The frame our writer makes of a parsed message at its own version.
pub(crate) trait Canonical {
    fn canonical(&self) -> Option<Vec<u8>>;
}

impl Canonical for ElectLeadersRequest<'_> {
    fn canonical(&self) -> Option<Vec<u8>> {
        let mut out = vec![0u8; self.encoded_len(self.version()).ok()?];
        self.encode(self.version(), &mut out).ok()?;
        Some(out)
    }
}

impl Canonical for ElectLeadersResponse<'_> {
    fn canonical(&self) -> Option<Vec<u8>> {
        let mut out = vec![0u8; self.encoded_len(self.version()).ok()?];
        self.encode(self.version(), &mut out).ok()?;
        Some(out)
    }
}

pub(crate) fn their_tags(map: &BTreeMap<i32, bytes::Bytes>) -> Vec<(i32, Vec<u8>)> {
    map.iter().map(|(t, d)| (*t, d.to_vec())).collect()
}

/// Our tags as a map keyed by Java int, the last of each tag winning: what Kafka keeps.
pub(crate) fn our_tags(tags: TaggedFields<'_>) -> Vec<(i32, Vec<u8>)> {
    let map: BTreeMap<i32, Vec<u8>> = tags
        .iter()
        .map(|f| (f.tag() as i32, f.data().to_vec()))
        .collect();
    map.into_iter().collect()
}

pub(crate) fn all_utf8<'s>(mut strings: impl Iterator<Item = &'s [u8]>) -> bool {
    strings.all(|s| std::str::from_utf8(s).is_ok())
}

pub(crate) fn differential_request(frame: &[u8]) {
    use kafka_protocol::messages::{ElectLeadersRequest as Theirs, RequestHeader};
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

    let Ok(ours) = parse_request(frame) else {
        return;
    };
    let version = ours.version();
    let strings = ours.header().client_id().into_iter().chain(
        ours.topic_partitions()
            .into_iter()
            .flatten()
            .map(|t| t.topic()),
    );
    let utf8 = all_utf8(strings);

    let mut buf = bytes::Bytes::copy_from_slice(&frame[4..]);
    let theirs = RequestHeader::decode(&mut buf, Theirs::header_version(version))
        .and_then(|h| Theirs::decode(&mut buf, version).map(|b| (h, b)));
    let (header, body) = match theirs {
        Ok(decoded) => decoded,
        Err(e) if utf8 => return refused_by_them(&ours, frame, &e, differential_request),
        Err(_) => return,
    };
    assert!(utf8, "kafka-protocol accepted invalid UTF-8");
    assert!(buf.is_empty(), "kafka-protocol left bytes we consumed");
    assert_eq!(header.request_api_key, 43);
    assert_eq!(header.request_api_version, version);
    assert_eq!(header.correlation_id, ours.correlation_id());
    assert_eq!(
        header.client_id.as_ref().map(|s| s.as_bytes()),
        ours.header().client_id()
    );
    assert_eq!(
        their_tags(&header.unknown_tagged_fields),
        our_tags(ours.header().tagged_fields())
    );
    assert_eq!(body.election_type, ours.election_type().0);
    assert_eq!(body.timeout_ms, ours.timeout_ms());
    assert_eq!(
        their_tags(&body.unknown_tagged_fields),
        our_tags(ours.tagged_fields())
    );
    match (&body.topic_partitions, ours.topic_partitions()) {
        (None, None) => {}
        (Some(theirs), Some(ours)) => {
            assert_eq!(theirs.len(), ours.len());
            for (t, o) in theirs.iter().zip(ours) {
                assert_eq!(t.topic.as_bytes(), o.topic());
                assert!(t.partitions.iter().copied().eq(o.partitions().iter()));
                assert_eq!(
                    their_tags(&t.unknown_tagged_fields),
                    our_tags(o.tagged_fields())
                );
            }
        }
        (t, o) => panic!("null-ness differs: {t:?} vs {o:?}"),
    }

    // Where our writer takes the tags as they are (ascending, within Java's int range), the
    // two writers must agree to the byte.
    if let Ok(len) = ours.encoded_len(version) {
        let mut mine = vec![0u8; len];
        ours.encode(version, &mut mine).unwrap();
        let in_int_range = |tags: TaggedFields<'_>| tags.iter().all(|f| f.tag() <= i32::MAX as u32);
        let ranged = in_int_range(ours.header().tagged_fields())
            && in_int_range(ours.tagged_fields())
            && ours
                .topic_partitions()
                .into_iter()
                .flatten()
                .all(|t| in_int_range(t.tagged_fields()));
        if ranged {
            let mut out = bytes::BytesMut::new();
            header
                .encode(&mut out, Theirs::header_version(version))
                .unwrap();
            body.encode(&mut out, version).unwrap();
            assert_eq!(&mine[4..], &out[..], "the writers disagree");
        }
    }
}

pub(crate) fn differential_response(frame: &[u8], version: i16) {
    use kafka_protocol::messages::{ElectLeadersResponse as Theirs, ResponseHeader};
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

    let Ok(ours) = parse_response(frame, version) else {
        return;
    };
    let results = ours.replica_election_results();
    let strings = results.iter().flat_map(|r| {
        std::iter::once(r.topic()).chain(
            r.partition_result()
                .iter()
                .filter_map(|p| p.error_message()),
        )
    });
    let utf8 = all_utf8(strings);

    let mut buf = bytes::Bytes::copy_from_slice(&frame[4..]);
    let theirs = ResponseHeader::decode(&mut buf, Theirs::header_version(version))
        .and_then(|h| Theirs::decode(&mut buf, version).map(|b| (h, b)));
    let (header, body) = match theirs {
        Ok(decoded) => decoded,
        Err(e) if utf8 => {
            let check = |canonical: &[u8]| differential_response(canonical, version);
            return refused_by_them(&ours, frame, &e, check);
        }
        Err(_) => return,
    };
    assert!(utf8, "kafka-protocol accepted invalid UTF-8");
    assert!(buf.is_empty(), "kafka-protocol left bytes we consumed");
    assert_eq!(header.correlation_id, ours.correlation_id());
    assert_eq!(
        their_tags(&header.unknown_tagged_fields),
        our_tags(ours.header().tagged_fields())
    );
    assert_eq!(body.throttle_time_ms, ours.throttle_time_ms());
    assert_eq!(body.error_code, ours.error_code().0);
    assert_eq!(
        their_tags(&body.unknown_tagged_fields),
        our_tags(ours.tagged_fields())
    );
    assert_eq!(body.replica_election_results.len(), results.len());
    for (t, o) in body.replica_election_results.iter().zip(results) {
        assert_eq!(t.topic.as_bytes(), o.topic());
        assert_eq!(
            their_tags(&t.unknown_tagged_fields),
            our_tags(o.tagged_fields())
        );
        assert_eq!(t.partition_result.len(), o.partition_result().len());
        for (tp, op) in t.partition_result.iter().zip(o.partition_result()) {
            assert_eq!(tp.partition_id, op.partition_id());
            assert_eq!(tp.error_code, op.error_code().0);
            assert_eq!(
                tp.error_message.as_ref().map(|s| s.as_bytes()),
                op.error_message()
            );
            assert_eq!(
                their_tags(&tp.unknown_tagged_fields),
                our_tags(op.tagged_fields())
            );
        }
    }
    if let Ok(len) = ours.encoded_len(version) {
        let mut mine = vec![0u8; len];
        ours.encode(version, &mut mine).unwrap();
        let in_int_range = |tags: TaggedFields<'_>| tags.iter().all(|f| f.tag() <= i32::MAX as u32);
        let ranged = in_int_range(ours.header().tagged_fields())
            && in_int_range(ours.tagged_fields())
            && results.iter().all(|r| {
                in_int_range(r.tagged_fields())
                    && r.partition_result()
                        .iter()
                        .all(|p| in_int_range(p.tagged_fields()))
            });
        if ranged {
            let mut out = bytes::BytesMut::new();
            header
                .encode(&mut out, Theirs::header_version(version))
                .unwrap();
            body.encode(&mut out, version).unwrap();
            assert_eq!(&mine[4..], &out[..], "the writers disagree");
        }
    }
}
