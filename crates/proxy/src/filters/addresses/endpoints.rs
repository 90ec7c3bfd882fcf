//! The addresses that sit behind data the rewrite does not read: KIP-951's node endpoints
//! (the new leaders of Produce v10+, Fetch v16+, ShareFetch and ShareAcknowledge answers)
//! and the controllers' listeners of DescribeQuorum v2 answers.
//!
//! An answer is first checked against its shape (`shapes`), which steps over everything
//! (the records too) without decoding it or allocating, and says where its lists of
//! addresses are. Most answers have none (Kafka sends node endpoints only with the errors
//! NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH): they go on as the broker sent them,
//! not copied. Otherwise the entries of each list are decoded one at a time with the
//! `kafka-protocol` crate, rewritten, encoded again, and the answer is written whole: the
//! broker's bytes up to the list, the list, the broker's bytes after it. Nothing of the
//! answer but its lists is decoded, so that a Fetch answer's records come out byte for
//! byte as they came and a hostile answer's counts cannot make the guard hold more than
//! its bytes.
//!
//! Not here: which listener fronts a broker (`routes`), the shapes (`shapes`).

use bytes::{BufMut, Bytes, BytesMut};
use kafka_elect_leaders::api_name;
use kafka_protocol::messages::describe_quorum_response::Node;
use kafka_protocol::messages::{
    fetch_response, produce_response, share_acknowledge_response, share_fetch_response,
};
use kafka_protocol::protocol::StrBytes;

use super::rewrite::{Found, ListEntry};
use super::routes::Routes;
use super::shapes::{
    carried, scan, Carried, Listed, DESCRIBE_QUORUM, FETCH, PRODUCE, SHARE_ACKNOWLEDGE, SHARE_FETCH,
};
use crate::observability::audit::ConnInfo;
use crate::observability::diag::{info, log};

/// The four answers' node endpoints are one structure in four types.
macro_rules! node_endpoint {
    ($($message:ident),*) => {$(
        impl ListEntry for $message::NodeEndpoint {
            fn found(&mut self) -> Option<Found<'_>> {
                Some(Found {
                    node: self.node_id.0,
                    host: &mut self.host,
                    port: &mut self.port,
                })
            }
        }
    )*};
}

node_endpoint!(
    produce_response,
    fetch_response,
    share_fetch_response,
    share_acknowledge_response
);

impl ListEntry for Node {
    /// A controller's listeners are not brokers': nothing is opened for them.
    fn found(&mut self) -> Option<Found<'_>> {
        None
    }

    /// Each listener that is a route's upstream is given as the route's listener; the
    /// others are left out (see the module `addresses`), each said once.
    fn rewrite(&mut self, addresses: &Routes, conn: &ConnInfo) -> bool {
        let before = self.listeners.len();
        let mut changed = false;
        let node = self.node_id.0;
        self.listeners.retain_mut(|listener| {
            let port = i32::from(listener.port);
            match addresses.routed_address(listener.host.as_str(), port, conn) {
                Some((host, port)) => {
                    if host != listener.host.as_str() || port != listener.port {
                        listener.host = StrBytes::from_string(host);
                        listener.port = port;
                        changed = true;
                    }
                    true
                }
                None => {
                    let host = listener.host.as_str();
                    if addresses.first_warning(host, port) {
                        info(format_args!(
                            "{} -> {}: controller {host}:{port} (node {node}, listener {}) \
                             left out of a DescribeQuorum answer: no route.upstream is it, \
                             and clients go to the controllers through the brokers",
                            conn.client,
                            conn.upstream,
                            listener.name.as_str()
                        ));
                    }
                    false
                }
            }
        });
        changed || self.listeners.len() != before
    }
}

impl Routes {
    /// Whether an answer to this API may carry node endpoints or controller listeners (at
    /// some versions): Produce, Fetch, ShareFetch, ShareAcknowledge, DescribeQuorum.
    pub fn carries_endpoints(api_key: i16) -> bool {
        matches!(
            api_key,
            PRODUCE | FETCH | SHARE_FETCH | SHARE_ACKNOWLEDGE | DESCRIBE_QUORUM
        )
    }

    /// The answer `frame` (size prefix included) to a request of `api_key` at
    /// `api_version`, written whole with its node endpoints (or controller listeners)
    /// rewritten; None when it has none, nothing in it changes, or it is not one of these
    /// answers at a version that carries them (then it is not read at all). An answer
    /// that cannot be read is forwarded as it came (None) with a warning, and one of a
    /// version newer than the guard knows with a warning the first time.
    pub fn rewrite_endpoints(
        &self,
        frame: &[u8],
        api_key: i16,
        api_version: i16,
        conn: &ConnInfo,
    ) -> Option<BytesMut> {
        let shape = match carried(api_key, api_version) {
            Carried::Nothing => return None,
            // Without routes (a guard embedded without any, the conn fuzz target) nothing
            // can be rewritten: not even read.
            _ if self.rewrites_nothing() => return None,
            Carried::Newer => {
                let api = api_name(api_key).unwrap_or("unknown");
                if self.first_warning(&format!("{api} v{api_version}"), -1) {
                    log(format_args!(
                        "{} -> {}: {api} answers of v{api_version} are newer than the guard \
                         reads: forwarded unchanged, the broker addresses they may carry \
                         not rewritten, so clients may go around the guard (said once)",
                        conn.client, conn.upstream
                    ));
                }
                return None;
            }
            Carried::In(shape) => shape,
        };
        let lists = match scan(frame, shape) {
            Ok(lists) if lists.is_empty() => return None,
            Ok(lists) => lists,
            Err(e) => {
                self.undecodable(api_key, api_version, e, conn);
                return None;
            }
        };
        match self.rewrite_lists(frame, api_key, api_version, &lists, conn) {
            Ok(rewritten) => rewritten,
            Err(e) => {
                self.undecodable(api_key, api_version, &e, conn);
                None
            }
        }
    }

    /// The warning for an answer forwarded unchanged because it cannot be read.
    fn undecodable(&self, api_key: i16, api_version: i16, why: &str, conn: &ConnInfo) {
        log(format_args!(
            "{} -> {}: the broker's {} answer (v{api_version}) cannot be decoded ({why}): \
             forwarded unchanged, its broker addresses not rewritten, so the client may go \
             around the guard",
            conn.client,
            conn.upstream,
            api_name(api_key).unwrap_or("unknown")
        ));
    }

    /// `frame` with each of its `lists` (as the scan found them) rewritten, written whole;
    /// None when nothing changes.
    fn rewrite_lists(
        &self,
        frame: &[u8],
        api_key: i16,
        api_version: i16,
        lists: &[Listed],
        conn: &ConnInfo,
    ) -> Result<Option<BytesMut>, String> {
        let mut written = Vec::with_capacity(lists.len());
        let mut changed = false;
        for list in lists {
            let (field, list_changed) =
                self.rewrite_list_at(frame, api_key, api_version, list, conn)?;
            changed |= list_changed;
            written.push(field);
        }
        if !changed {
            return Ok(None);
        }
        let replaced: usize = lists.iter().map(|l| l.end - l.field_at).sum();
        let added: usize = written.iter().map(BytesMut::len).sum();
        let len = frame.len() - replaced + added;
        let size = i32::try_from(len - 4).map_err(|_| "the answer is too large")?;
        let mut whole = BytesMut::with_capacity(len);
        whole.put_i32(size);
        let mut from = 4;
        for (list, field) in lists.iter().zip(&written) {
            whole.put_slice(&frame[from..list.field_at]);
            whole.put_slice(field);
            from = list.end;
        }
        whole.put_slice(&frame[from..]);
        debug_assert_eq!(whole.len(), len);
        Ok(Some(whole))
    }

    /// One list's field written again: its tag and size for a tagged field, its count, its
    /// entries each rewritten; and whether any changed.
    fn rewrite_list_at(
        &self,
        frame: &[u8],
        api_key: i16,
        api_version: i16,
        list: &Listed,
        conn: &ConnInfo,
    ) -> Result<(BytesMut, bool), String> {
        // The entries alone, in a buffer of their own: kafka-protocol reads their strings
        // as slices of it, and the answer's frame stays the one buffer the broker's bytes
        // are in (a frame of its own, which the answer written whole replaces).
        let mut buf = Bytes::copy_from_slice(&frame[list.entries_at..list.end]);
        let mut entries = BytesMut::with_capacity(buf.len() + buf.len() / 8 + 64);
        let (count, version) = (list.count, api_version);
        let changed = match api_key {
            PRODUCE => self.rewrite_entries::<produce_response::NodeEndpoint>(
                &mut buf,
                count,
                version,
                &mut entries,
                conn,
            ),
            FETCH => self.rewrite_entries::<fetch_response::NodeEndpoint>(
                &mut buf,
                count,
                version,
                &mut entries,
                conn,
            ),
            SHARE_FETCH => self.rewrite_entries::<share_fetch_response::NodeEndpoint>(
                &mut buf,
                count,
                version,
                &mut entries,
                conn,
            ),
            SHARE_ACKNOWLEDGE => self.rewrite_entries::<share_acknowledge_response::NodeEndpoint>(
                &mut buf,
                count,
                version,
                &mut entries,
                conn,
            ),
            _ => self.rewrite_entries::<Node>(&mut buf, count, version, &mut entries, conn),
        }?;
        if !buf.is_empty() {
            return Err("kafka-protocol reads its entries otherwise than their shape".to_owned());
        }
        let count_bytes = &frame[list.count_at..list.entries_at];
        let mut field = BytesMut::with_capacity(entries.len() + count_bytes.len() + 10);
        if let Some(tag) = list.tag {
            let size = u32::try_from(count_bytes.len() + entries.len())
                .map_err(|_| "a tagged field too large")?;
            put_uvarint(&mut field, tag);
            put_uvarint(&mut field, size);
        }
        field.put_slice(count_bytes);
        field.put_slice(&entries);
        Ok((field, changed))
    }
}

/// An unsigned varint (a tagged field's tag and size): seven bits a byte, lowest first,
/// the high bit set on every byte but the last.
fn put_uvarint(out: &mut BytesMut, mut n: u32) {
    while n >= 0x80 {
        out.put_u8((n & 0x7f) as u8 | 0x80);
        n >>= 7;
    }
    out.put_u8(n as u8);
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::describe_quorum_response::{
        Listener, PartitionData, ReplicaState, TopicData,
    };
    use kafka_protocol::messages::{
        BrokerId, DescribeQuorumResponse, FetchResponse, ProduceResponse, ProducerId,
        ResponseHeader, ShareAcknowledgeResponse, ShareFetchResponse, TopicName,
    };
    use kafka_protocol::protocol::{Decodable, HeaderVersion};
    use uuid::Uuid;

    use super::*;
    use crate::filters::addresses::routes::tests::one_route;
    use crate::filters::addresses::shapes::tests::frame;

    /// What a client reads of an answer: its header's correlation id and its body, with
    /// nothing left over.
    fn read<M: Decodable + HeaderVersion>(frame: &[u8], version: i16) -> M {
        let size = i32::from_be_bytes(frame[..4].try_into().unwrap());
        assert_eq!(size as usize, frame.len() - 4, "the size prefix");
        let mut body = Bytes::copy_from_slice(&frame[4..]);
        let header = ResponseHeader::decode(&mut body, M::header_version(version)).unwrap();
        assert_eq!(header.correlation_id, 5);
        let answer = M::decode(&mut body, version).unwrap();
        assert!(body.is_empty(), "bytes left over");
        answer
    }

    fn host(s: &'static str) -> StrBytes {
        StrBytes::from_static_str(s)
    }

    /// Records as a broker sends them: opaque bytes to the guard.
    const RECORDS: &[u8] = b"\0\0\0\0\0\0\0\x07 a record batch, byte for byte";

    /// A Fetch answer with everything a partition can carry (aborted transactions, the
    /// three tagged fields, one unknown), and two node endpoints: node 1 at the route's
    /// upstream, node 2 at a broker the guard has no route for; an unknown tagged field
    /// after them.
    fn fetch_answer() -> FetchResponse {
        use kafka_protocol::messages::fetch_response::*;
        let partition = PartitionData::default()
            .with_partition_index(3)
            .with_error_code(6)
            .with_high_watermark(100)
            .with_last_stable_offset(90)
            .with_log_start_offset(1)
            .with_aborted_transactions(Some(vec![AbortedTransaction::default()
                .with_producer_id(ProducerId(7))
                .with_first_offset(50)]))
            .with_preferred_read_replica(BrokerId(2))
            .with_records(Some(Bytes::from_static(RECORDS)))
            .with_diverging_epoch(EpochEndOffset::default().with_epoch(4).with_end_offset(80))
            .with_current_leader(
                LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(1))
                    .with_leader_epoch(5),
            )
            .with_snapshot_id(SnapshotId::default().with_end_offset(9).with_epoch(2))
            .with_unknown_tagged_field(7, Bytes::from_static(b"x"));
        FetchResponse::default()
            .with_throttle_time_ms(3)
            .with_session_id(42)
            .with_responses(vec![FetchableTopicResponse::default()
                .with_topic_id(Uuid::from_u128(0x1234))
                .with_partitions(vec![
                    partition.clone(),
                    partition.with_partition_index(4),
                ])])
            .with_node_endpoints(vec![
                NodeEndpoint::default()
                    .with_node_id(BrokerId(1))
                    .with_host(host("10.0.0.1"))
                    .with_port(9092)
                    .with_rack(Some(host("rack-a"))),
                NodeEndpoint::default()
                    .with_node_id(BrokerId(2))
                    .with_host(host("10.0.0.2"))
                    .with_port(9092),
            ])
            .with_unknown_tagged_field(5, Bytes::from_static(b"later"))
    }

    /// A Fetch answer (v16 to v18) naming the route's broker as a new leader: it comes out
    /// with the guard's listener in its place, the broker with no route left as it is,
    /// and everything else equal; the records and all before the node endpoints byte for
    /// byte the broker's.
    #[test]
    fn fetch_node_endpoints_are_rewritten_and_the_records_kept() {
        let (addresses, conn) = one_route();
        for version in 16..=18 {
            let answer = fetch_answer();
            let frame = frame(version, &answer);
            let out = addresses
                .rewrite_endpoints(&frame, FETCH, version, &conn)
                .unwrap_or_else(|| panic!("v{version}: not rewritten"));
            let got: FetchResponse = read(&out, version);
            let mut want = answer;
            want.node_endpoints[0].host = host("127.0.0.1");
            want.node_endpoints[0].port = 19092;
            assert_eq!(got, want, "v{version}");
            // Up to the node endpoints (the header, the topics, the records), the broker's
            // bytes; the rewritten host is one byte longer.
            let records_at = frame
                .windows(RECORDS.len())
                .position(|w| w == RECORDS)
                .unwrap();
            let endpoints_at = frame.windows(8).position(|w| w == b"10.0.0.1").unwrap();
            assert!(records_at < endpoints_at);
            assert_eq!(
                out[4..endpoints_at - 7],
                frame[4..endpoints_at - 7],
                "v{version}"
            );
            assert_eq!(out.len(), frame.len() + 1);
        }
    }

    /// A Produce answer (v11, and v13 which names topics by id) naming the route's broker
    /// as a new leader: rewritten, all else equal.
    #[test]
    fn produce_node_endpoints_are_rewritten() {
        use kafka_protocol::messages::produce_response::*;
        let (addresses, conn) = one_route();
        for version in [10, 11, 13] {
            let mut topic = TopicProduceResponse::default().with_partition_responses(vec![
                PartitionProduceResponse::default()
                    .with_index(0)
                    .with_error_code(6)
                    .with_base_offset(-1)
                    .with_record_errors(vec![BatchIndexAndErrorMessage::default()
                        .with_batch_index(1)
                        .with_batch_index_error_message(Some(host("bad")))])
                    .with_error_message(Some(host("NOT_LEADER_OR_FOLLOWER")))
                    .with_current_leader(
                        LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(1))
                            .with_leader_epoch(8),
                    ),
            ]);
            if version >= 13 {
                topic.topic_id = Uuid::from_u128(0xabcd);
            } else {
                topic.name = TopicName(host("orders"));
            }
            let answer = ProduceResponse::default()
                .with_responses(vec![topic])
                .with_throttle_time_ms(1)
                .with_node_endpoints(vec![NodeEndpoint::default()
                    .with_node_id(BrokerId(1))
                    .with_host(host("10.0.0.1"))
                    .with_port(9092)]);
            let frame = frame(version, &answer);
            let out = addresses
                .rewrite_endpoints(&frame, PRODUCE, version, &conn)
                .unwrap_or_else(|| panic!("v{version}: not rewritten"));
            let got: ProduceResponse = read(&out, version);
            let mut want = answer;
            want.node_endpoints[0].host = host("127.0.0.1");
            want.node_endpoints[0].port = 19092;
            assert_eq!(got, want, "v{version}");
        }
    }

    /// ShareFetch and ShareAcknowledge carry node endpoints as a field of their own (not
    /// tagged), before the answer's tagged fields: rewritten the same way.
    #[test]
    fn share_node_endpoints_are_rewritten() {
        use kafka_protocol::messages::{
            share_acknowledge_response as ack, share_fetch_response as share,
        };
        let (addresses, conn) = one_route();
        let fetch = ShareFetchResponse::default()
            .with_throttle_time_ms(2)
            .with_acquisition_lock_timeout_ms(30_000)
            .with_responses(vec![share::ShareFetchableTopicResponse::default()
                .with_topic_id(Uuid::from_u128(7))
                .with_partitions(vec![share::PartitionData::default()
                    .with_partition_index(1)
                    .with_error_code(6)
                    .with_current_leader(
                        share::LeaderIdAndEpoch::default()
                            .with_leader_id(1)
                            .with_leader_epoch(3),
                    )
                    .with_records(Some(Bytes::from_static(RECORDS)))
                    .with_acquired_records(vec![share::AcquiredRecords::default()
                        .with_first_offset(10)
                        .with_last_offset(19)
                        .with_delivery_count(1)])])])
            .with_node_endpoints(vec![share::NodeEndpoint::default()
                .with_node_id(BrokerId(1))
                .with_host(host("10.0.0.1"))
                .with_port(9092)])
            .with_unknown_tagged_field(3, Bytes::from_static(b"t"));
        let frame_fetch = frame(1, &fetch);
        let out = addresses
            .rewrite_endpoints(&frame_fetch, SHARE_FETCH, 1, &conn)
            .expect("ShareFetch rewritten");
        let mut want = fetch;
        want.node_endpoints[0].host = host("127.0.0.1");
        want.node_endpoints[0].port = 19092;
        assert_eq!(read::<ShareFetchResponse>(&out, 1), want);

        let acknowledge = ShareAcknowledgeResponse::default()
            .with_error_message(Some(host("moved")))
            .with_responses(vec![ack::ShareAcknowledgeTopicResponse::default()
                .with_topic_id(Uuid::from_u128(7))
                .with_partitions(vec![ack::PartitionData::default()
                    .with_partition_index(1)
                    .with_error_code(6)
                    .with_current_leader(
                        ack::LeaderIdAndEpoch::default()
                            .with_leader_id(1)
                            .with_leader_epoch(3),
                    )])])
            .with_node_endpoints(vec![ack::NodeEndpoint::default()
                .with_node_id(BrokerId(1))
                .with_host(host("10.0.0.1"))
                .with_port(9092)
                .with_rack(Some(host("rack-a")))]);
        let frame_ack = frame(1, &acknowledge);
        let out = addresses
            .rewrite_endpoints(&frame_ack, SHARE_ACKNOWLEDGE, 1, &conn)
            .expect("ShareAcknowledge rewritten");
        let mut want = acknowledge;
        want.node_endpoints[0].host = host("127.0.0.1");
        want.node_endpoints[0].port = 19092;
        assert_eq!(read::<ShareAcknowledgeResponse>(&out, 1), want);
    }

    /// Answers with no node endpoints (the usual case), or only brokers the guard has no
    /// route for, are left as they came; so is a ShareFetch answer without them.
    #[test]
    fn answers_without_routed_endpoints_are_left_as_they_came() {
        let (addresses, conn) = one_route();
        let mut none = fetch_answer();
        none.node_endpoints.clear();
        assert_eq!(
            addresses.rewrite_endpoints(&frame(17, &none), FETCH, 17, &conn),
            None
        );
        let mut elsewhere = fetch_answer();
        elsewhere.node_endpoints.remove(0);
        assert_eq!(
            addresses.rewrite_endpoints(&frame(17, &elsewhere), FETCH, 17, &conn),
            None
        );
        let produce = ProduceResponse::default();
        assert_eq!(
            addresses.rewrite_endpoints(&frame(12, &produce), PRODUCE, 12, &conn),
            None
        );
        let share = ShareFetchResponse::default();
        assert_eq!(
            addresses.rewrite_endpoints(&frame(1, &share), SHARE_FETCH, 1, &conn),
            None
        );
    }

    /// Before Produce v10 and Fetch v16 there are no node endpoints: the answer is not
    /// read at all, so bytes no scan would accept pass without a word. An answer that
    /// cannot be read at a version that has them (cut short, a count past its bytes, a
    /// version newer than the guard knows) is forwarded unchanged.
    #[test]
    fn older_and_unreadable_answers_are_left_as_they_came() {
        let (addresses, conn) = one_route();
        let garbage = [0, 0, 0, 3, 0xff, 0xff, 0xff];
        assert_eq!(
            addresses.rewrite_endpoints(&garbage, FETCH, 15, &conn),
            None
        );
        assert_eq!(
            addresses.rewrite_endpoints(&garbage, PRODUCE, 9, &conn),
            None
        );
        assert_eq!(
            addresses.rewrite_endpoints(&garbage, DESCRIBE_QUORUM, 1, &conn),
            None
        );
        let whole = frame(16, &fetch_answer());
        assert!(addresses
            .rewrite_endpoints(&whole, FETCH, 16, &conn)
            .is_some());
        let cut = &whole[..whole.len() - 4];
        assert_eq!(addresses.rewrite_endpoints(cut, FETCH, 16, &conn), None);
        assert_eq!(addresses.rewrite_endpoints(&whole, FETCH, 19, &conn), None);
        // The node endpoints' count (2, as 3) replaced by 4,294,967,294.
        let at = whole
            .windows(9)
            .position(|w| w == b"\x03\0\0\0\x01\x0910.")
            .unwrap();
        let mut huge = whole[..at].to_vec();
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        huge.extend_from_slice(&whole[at + 1..]);
        assert_eq!(addresses.rewrite_endpoints(&huge, FETCH, 16, &conn), None);
        assert_eq!(
            scan(
                &huge,
                match carried(FETCH, 16) {
                    Carried::In(shape) => shape,
                    _ => unreachable!(),
                }
            ),
            Err("an array claims more entries than its bytes can hold")
        );
    }

    /// DescribeQuorum v2: a controller listener at a route's upstream is given as the
    /// route's listener; the others are left out (controllers are not behind the guard's
    /// routes), their nodes kept; the quorum itself comes out equal.
    #[test]
    fn describe_quorum_keeps_only_routed_listeners() {
        let (addresses, conn) = one_route();
        let replica = |id| {
            ReplicaState::default()
                .with_replica_id(BrokerId(id))
                .with_replica_directory_id(Uuid::from_u128(id as u128))
                .with_log_end_offset(100)
        };
        let listener = |name, h, port| {
            Listener::default()
                .with_name(host(name))
                .with_host(host(h))
                .with_port(port)
        };
        let answer = DescribeQuorumResponse::default()
            .with_topics(vec![TopicData::default()
                .with_topic_name(TopicName(host("__cluster_metadata")))
                .with_partitions(vec![PartitionData::default()
                    .with_leader_id(BrokerId(3000))
                    .with_leader_epoch(7)
                    .with_high_watermark(100)
                    .with_current_voters(vec![replica(3000), replica(3001)])
                    .with_observers(vec![replica(1)])])])
            .with_nodes(vec![
                Node::default()
                    .with_node_id(BrokerId(3000))
                    .with_listeners(vec![
                        listener("CONTROLLER", "10.0.0.9", 9093),
                        listener("ROUTED", "10.0.0.1", 9092),
                    ]),
                Node::default()
                    .with_node_id(BrokerId(3001))
                    .with_listeners(vec![listener("CONTROLLER", "10.0.0.10", 9093)]),
            ]);
        let frame = frame(2, &answer);
        let out = addresses
            .rewrite_endpoints(&frame, DESCRIBE_QUORUM, 2, &conn)
            .expect("rewritten");
        let mut want = answer;
        want.nodes[0].listeners = vec![listener("ROUTED", "127.0.0.1", 19092)];
        want.nodes[1].listeners.clear();
        assert_eq!(read::<DescribeQuorumResponse>(&out, 2), want);
    }
}
