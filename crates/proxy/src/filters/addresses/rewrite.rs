//! The rewrite itself: Metadata, FindCoordinator and DescribeCluster answers read as far as
//! their list of brokers (or coordinators), each entry decoded, its address replaced by
//! what the routes say clients are told ([`Routes::address_for`]), and encoded again;
//! what follows the list goes to the client from the broker's frame ([`Rewritten`]).
//!
//! Not here: which listener fronts a broker (`routes`), nor opening one (`listeners`):
//! this module binds nothing; nor the node endpoints and controller listeners of other
//! answers (`endpoints`), which write their entries with [`Routes::rewrite_entries`].

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_elect_leaders::api_name;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message, StrBytes};

use super::routes::Routes;
use crate::core::response_due::Reader;
use crate::observability::audit::ConnInfo;
use crate::observability::diag::log;

/// Metadata's API key.
pub const METADATA: i16 = 3;
/// FindCoordinator's API key.
pub const FIND_COORDINATOR: i16 = 10;
/// The first Metadata version with a throttle time.
const METADATA_THROTTLE: i16 = 3;
/// The first flexible Metadata version.
const FLEXIBLE_METADATA: i16 = 9;
/// The first FindCoordinator version with a list of coordinators (KIP-699).
const BATCHED_FIND_COORDINATOR: i16 = 4;
/// DescribeCluster's API key.
pub const DESCRIBE_CLUSTER: i16 = 60;

/// A broker address found in an answer, and what the client is told instead.
pub(super) struct Found<'a> {
    pub(super) node: i32,
    pub(super) host: &'a mut StrBytes,
    pub(super) port: &'a mut i32,
}

/// An answer with broker addresses rewritten: a new `head` (size prefix included, which
/// counts the whole answer), then the broker's frame from `tail_from` on, as it came. The
/// head holds the header and the answer up to the end of its list of brokers (or
/// coordinators); the tail is what follows the list, not copied.
#[derive(Debug, PartialEq, Eq)]
pub struct Rewritten {
    /// The new head: size prefix, header and the answer up to its list's end.
    pub head: BytesMut,
    /// Where the broker's frame goes on after the list.
    pub tail_from: usize,
}

impl Rewritten {
    /// The head with its size prefix set for a tail of `frame_len - tail_from` bytes.
    fn new(mut head: BytesMut, tail_from: usize, frame_len: usize) -> Result<Rewritten, String> {
        let size = (head.len() - 4)
            .checked_add(frame_len - tail_from)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or("the answer is too large")?;
        head[..4].copy_from_slice(&size.to_be_bytes());
        Ok(Rewritten { head, tail_from })
    }

    /// The whole answer in one buffer: the head, then `frame` (the broker's answer this was
    /// made from) from `tail_from` on. The guard itself writes the two parts in turn.
    pub fn to_frame(&self, frame: &[u8]) -> BytesMut {
        let tail = &frame[self.tail_from..];
        let mut whole = BytesMut::with_capacity(self.head.len() + tail.len());
        whole.put_slice(&self.head);
        whole.put_slice(tail);
        whole
    }
}

/// An entry of a list that carries a broker address, as kafka-protocol reads it.
pub(super) trait ListEntry: Decodable + Encodable + PartialEq {
    /// Its address, if it has one.
    fn found(&mut self) -> Option<Found<'_>>;

    /// Its addresses replaced by what the routes say clients are told; whether it changed.
    fn rewrite(&mut self, addresses: &Routes, conn: &ConnInfo) -> bool {
        addresses.replace(self.found().into_iter(), conn)
    }
}

impl ListEntry for MetadataResponseBroker {
    fn found(&mut self) -> Option<Found<'_>> {
        Some(Found {
            node: self.node_id.0,
            host: &mut self.host,
            port: &mut self.port,
        })
    }
}

impl ListEntry for DescribeClusterBroker {
    fn found(&mut self) -> Option<Found<'_>> {
        Some(Found {
            node: self.broker_id.0,
            host: &mut self.host,
            port: &mut self.port,
        })
    }
}

impl ListEntry for Coordinator {
    /// A coordinator with a negative node id is none (an error's entry): not an address.
    fn found(&mut self) -> Option<Found<'_>> {
        (self.node_id.0 >= 0).then_some(Found {
            node: self.node_id.0,
            host: &mut self.host,
            port: &mut self.port,
        })
    }
}

impl Routes {
    /// Whether an answer to this API may carry broker addresses (at some versions): the
    /// three whose lists [`Routes::rewrite`] rewrites, and those whose node endpoints
    /// or controller listeners [`Routes::rewrite_endpoints`] does.
    pub fn carries_addresses(api_key: i16) -> bool {
        Routes::lists_brokers(api_key) || Routes::carries_endpoints(api_key)
    }

    /// Whether an answer to this API is one of the three [`Routes::rewrite`] reads:
    /// Metadata, FindCoordinator, DescribeCluster.
    pub fn lists_brokers(api_key: i16) -> bool {
        matches!(api_key, METADATA | FIND_COORDINATOR | DESCRIBE_CLUSTER)
    }

    /// The answer `frame` (size prefix included) to a request of `api_key` at
    /// `api_version`, with broker addresses rewritten; None when it is not one of the three
    /// ([`Routes::lists_brokers`]) or nothing in it changes, or when it cannot be
    /// decoded (then with a warning).
    pub fn rewrite(
        &self,
        frame: &Bytes,
        api_key: i16,
        api_version: i16,
        conn: &ConnInfo,
    ) -> Option<Rewritten> {
        // Without routes (a guard embedded without any, the conn fuzz target) nothing can
        // be rewritten: not even decoded.
        if !Routes::lists_brokers(api_key) || self.rewrites_nothing() {
            return None;
        }
        match self.try_rewrite(frame, api_key, api_version, conn) {
            Ok(rewritten) => rewritten,
            Err(e) => {
                log(format_args!(
                    "{} -> {}: the broker's {} answer (v{api_version}) cannot be decoded \
                     ({e}): forwarded unchanged, its broker addresses not rewritten, so the \
                     client may go around the guard",
                    conn.client,
                    conn.upstream,
                    api_name(api_key).unwrap_or("unknown")
                ));
                None
            }
        }
    }

    fn try_rewrite(
        &self,
        frame: &Bytes,
        api_key: i16,
        api_version: i16,
        conn: &ConnInfo,
    ) -> Result<Option<Rewritten>, String> {
        let (known, header_version) = match api_key {
            METADATA => (
                MetadataResponse::VERSIONS.max,
                MetadataResponse::header_version(api_version),
            ),
            FIND_COORDINATOR => (
                FindCoordinatorResponse::VERSIONS.max,
                FindCoordinatorResponse::header_version(api_version),
            ),
            _ => (
                DescribeClusterResponse::VERSIONS.max,
                DescribeClusterResponse::header_version(api_version),
            ),
        };
        if !(0..=known).contains(&api_version) {
            return Err(format!(
                "{} v{api_version} is not a version the crate knows",
                api_name(api_key).unwrap_or("unknown")
            ));
        }
        if frame.len() < 4 {
            return Err("no size prefix".to_owned());
        }
        // Slices of the frame: kafka-protocol reads the strings without copying them.
        let mut buf = frame.slice(4..);
        ResponseHeader::decode(&mut buf, header_version).map_err(|e| e.to_string())?;
        let header_end = frame.len() - buf.remaining();
        if api_key == FIND_COORDINATOR && api_version < BATCHED_FIND_COORDINATOR {
            return self.rewrite_coordinator(frame, header_end, api_version, conn);
        }
        let list = list_start(&frame[header_end..], api_key, api_version)?;
        let at = header_end + list.entries_at;
        match api_key {
            METADATA => self.rewrite_list::<MetadataResponseBroker>(
                frame,
                api_key,
                at,
                list.count,
                api_version,
                conn,
            ),
            FIND_COORDINATOR => {
                self.rewrite_list::<Coordinator>(frame, api_key, at, list.count, api_version, conn)
            }
            _ => self.rewrite_list::<DescribeClusterBroker>(
                frame,
                api_key,
                at,
                list.count,
                api_version,
                conn,
            ),
        }
    }

    /// The list of `count` entries (Metadata's brokers, FindCoordinator's coordinators from
    /// v4, DescribeCluster's brokers) starting at `at` in `frame`, decoded, rewritten and
    /// encoded again one entry at a time, each with kafka-protocol's structure for it:
    /// what the guard holds beyond the frame is the rewritten head and one entry, however
    /// long the list. What follows the list (for Metadata, the topics and their partitions,
    /// often most of the answer) is neither decoded nor copied: it goes to the client from
    /// the broker's frame ([`Rewritten`]).
    fn rewrite_list<T: ListEntry>(
        &self,
        frame: &Bytes,
        api_key: i16,
        at: usize,
        count: usize,
        api_version: i16,
        conn: &ConnInfo,
    ) -> Result<Option<Rewritten>, String> {
        // A first pass finds where the list ends, so that the head is allocated once: one
        // entry decoded at a time, its strings slices of the frame.
        let mut buf = frame.slice(at..);
        for _ in 0..count {
            T::decode(&mut buf, api_version).map_err(|e| e.to_string())?;
        }
        let list_len = frame.len() - at - buf.remaining();
        // Room for addresses a little longer than the broker's, one in eight bytes.
        let mut head = BytesMut::with_capacity(at + list_len + list_len / 8 + 64);
        head.put_slice(&frame[..at]);
        let mut buf = frame.slice(at..);
        let changed = self.rewrite_entries::<T>(&mut buf, count, api_version, &mut head, conn)?;
        if !changed {
            return Ok(None);
        }
        let tail_from = frame.len() - buf.remaining();
        check_tail(&frame[tail_from..], api_key)?;
        Rewritten::new(head, tail_from, frame.len()).map(Some)
    }

    /// `count` entries read from `buf` one at a time (their strings slices of it), each
    /// rewritten ([`ListEntry::rewrite`]) and written to `out`; whether any changed.
    pub(super) fn rewrite_entries<T: ListEntry>(
        &self,
        buf: &mut Bytes,
        count: usize,
        api_version: i16,
        out: &mut BytesMut,
        conn: &ConnInfo,
    ) -> Result<bool, String> {
        let mut changed = false;
        for _ in 0..count {
            let mut entry = T::decode(buf, api_version).map_err(|e| e.to_string())?;
            changed |= entry.rewrite(self, conn);
            let start = out.len();
            entry
                .encode(out, api_version)
                .map_err(|e| format!("cannot encode it again: {e}"))?;
            reads_back(&out[start..], api_version, &entry)?;
        }
        Ok(changed)
    }

    /// FindCoordinator before v4: one coordinator at the top level (node -1: none, on an
    /// error), in an answer of a few fixed fields: decoded and encoded whole.
    fn rewrite_coordinator(
        &self,
        frame: &Bytes,
        header_end: usize,
        api_version: i16,
        conn: &ConnInfo,
    ) -> Result<Option<Rewritten>, String> {
        let mut buf = frame.slice(header_end..);
        let mut answer =
            FindCoordinatorResponse::decode(&mut buf, api_version).map_err(|e| e.to_string())?;
        if buf.has_remaining() {
            return Err(format!("{} bytes left over", buf.remaining()));
        }
        let found = (answer.node_id.0 >= 0).then_some(Found {
            node: answer.node_id.0,
            host: &mut answer.host,
            port: &mut answer.port,
        });
        if !self.replace(found.into_iter(), conn) {
            return Ok(None);
        }
        let mut head = BytesMut::with_capacity(frame.len() + 64);
        head.put_slice(&frame[..header_end]);
        answer
            .encode(&mut head, api_version)
            .map_err(|e| format!("cannot encode it again: {e}"))?;
        reads_back(&head[header_end..], api_version, &answer)?;
        Rewritten::new(head, frame.len(), frame.len()).map(Some)
    }

    /// Replaces each address found that the guard fronts; whether any changed.
    pub(super) fn replace<'a>(
        &self,
        found: impl Iterator<Item = Found<'a>>,
        conn: &ConnInfo,
    ) -> bool {
        let mut changed = false;
        for f in found {
            let (host, port) = (f.host.as_str().to_owned(), *f.port);
            let Some((advertised, listen_port)) = self.address_for(f.node, &host, port, conn)
            else {
                continue;
            };
            let new_port = i32::from(listen_port);
            if advertised != host || new_port != port {
                *f.host = StrBytes::from_string(advertised);
                *f.port = new_port;
                changed = true;
            }
        }
        changed
    }
}

/// The fewest bytes a Metadata broker takes on the wire (v0: id, empty host, port).
const MIN_METADATA_BROKER_BYTES: usize = 10;
/// The fewest bytes a DescribeCluster broker takes on the wire (id, empty host, port,
/// null rack, no tags).
const MIN_BROKER_BYTES: usize = 11;
/// The fewest bytes a FindCoordinator v4+ coordinator takes (empty key, node id, empty
/// host, port, error code, null message, no tags).
const MIN_COORDINATOR_BYTES: usize = 14;

/// Where an answer's list of entries begins, after its count.
#[derive(Debug)]
struct ListStart {
    /// Offset of the first entry in the answer (after the header).
    entries_at: usize,
    count: usize,
}

/// Finds the list in `answer` (the body, after the header): Metadata's brokers (after the
/// throttle time, from v3), FindCoordinator's coordinators (from v4, after the throttle
/// time), DescribeCluster's brokers (after the throttle time, error code and message,
/// endpoint type from v1, cluster id and controller). A list that claims more entries than
/// its remaining bytes can hold is refused before anything is read: entries are read one
/// at a time, so nothing would be allocated for it, but the answer is not what it says.
fn list_start(answer: &[u8], api_key: i16, api_version: i16) -> Result<ListStart, String> {
    let mut read = Reader::new(answer);
    let short = "cut short before its list";
    let compact_string = |read: &mut Reader<'_>| -> Result<(), String> {
        match read.uvarint().ok_or(short)? {
            0 => Ok(()),
            n => read.skip(n as usize - 1).ok_or_else(|| short.to_owned()),
        }
    };
    let (what, min, flexible) = match api_key {
        METADATA => {
            if api_version >= METADATA_THROTTLE {
                read.int32().ok_or(short)?;
            }
            (
                "brokers",
                MIN_METADATA_BROKER_BYTES,
                api_version >= FLEXIBLE_METADATA,
            )
        }
        FIND_COORDINATOR => {
            read.int32().ok_or(short)?;
            ("coordinators", MIN_COORDINATOR_BYTES, true)
        }
        _ => {
            read.int32().ok_or(short)?;
            read.int16().ok_or(short)?;
            compact_string(&mut read)?;
            if api_version >= 1 {
                read.skip(1).ok_or(short)?;
            }
            compact_string(&mut read)?;
            read.int32().ok_or(short)?;
            ("brokers", MIN_BROKER_BYTES, true)
        }
    };
    let entries = if flexible {
        // A compact array: the count plus one, 0 for null.
        match read.uvarint().ok_or(short)? {
            0 => return Err(format!("its {what} are null")),
            n => u64::from(n - 1),
        }
    } else {
        u64::try_from(read.int32().ok_or(short)?)
            .map_err(|_| format!("a negative count of {what}"))?
    };
    if entries > (read.remaining() / min) as u64 {
        return Err(format!(
            "its {what} claim {entries} entries, more than the {} bytes after them can hold",
            read.remaining()
        ));
    }
    Ok(ListStart {
        entries_at: answer.len() - read.remaining(),
        count: entries as usize,
    })
}

/// What follows the list, read through to its end: DescribeCluster's authorized
/// operations and tagged fields, FindCoordinator's tagged fields (from v4). An answer with
/// bytes left over, or cut short, is not rewritten, as when kafka-protocol read these
/// answers whole. Metadata's (the topics and partitions, often most of the answer) is not
/// read: it goes to the client as the broker sent it.
fn check_tail(tail: &[u8], api_key: i16) -> Result<(), String> {
    if api_key == METADATA {
        return Ok(());
    }
    let mut read = Reader::new(tail);
    let short = "cut short after its list";
    if api_key == DESCRIBE_CLUSTER {
        read.int32().ok_or(short)?;
    }
    read.skip_tagged_fields().ok_or(short)?;
    match read.remaining() {
        0 => Ok(()),
        n => Err(format!("{n} bytes left over")),
    }
}

/// Checks that `written` reads back as `entry` at `version`, nothing left over.
/// kafka-protocol reads some malformed bytes without complaint and then writes them
/// otherwise: a tagged field whose tag is a varint too long (87 83 83 ff ff) is read as
/// tag -2047609 and written as nothing but its count, so that the client would read the
/// rest of the answer shifted. Such an answer is forwarded as the broker sent it.
fn reads_back<T: Decodable + PartialEq>(
    written: &[u8],
    version: i16,
    entry: &T,
) -> Result<(), String> {
    let mut buf = Bytes::copy_from_slice(written);
    let again = T::decode(&mut buf, version).map_err(|e| e.to_string());
    if again.as_ref() != Ok(entry) || buf.has_remaining() {
        return Err("kafka-protocol does not write it back as it read it".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::{BrokerId, TopicName};

    use super::*;
    use crate::filters::addresses::routes::tests::one_route;

    /// Only the brokers of a Metadata answer are decoded and written again: everything
    /// after them (cluster id, controller, topics and partitions) comes out equal, at a
    /// flexible and an older version.
    #[test]
    fn metadata_keeps_everything_but_the_brokers() {
        let (addresses, conn) = one_route();
        let mut answer = MetadataResponse::default();
        answer.brokers = vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("10.0.0.1"))
            .with_port(9092)
            .with_rack(Some(StrBytes::from_static_str("rack-a")))];
        answer.cluster_id = Some(StrBytes::from_static_str("cluster"));
        answer.controller_id = BrokerId(1);
        answer.topics = vec![MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str("orders"))))
            .with_partitions(vec![MetadataResponsePartition::default()
                .with_partition_index(3)
                .with_leader_id(BrokerId(1))
                .with_replica_nodes(vec![BrokerId(1)])
                .with_isr_nodes(vec![BrokerId(1)])])];
        for version in [12, 1] {
            let header_version = MetadataResponse::header_version(version);
            let mut frame = BytesMut::new();
            frame.put_i32(0);
            ResponseHeader::default()
                .with_correlation_id(5)
                .encode(&mut frame, header_version)
                .unwrap();
            answer.encode(&mut frame, version).unwrap();
            let size = (frame.len() - 4) as i32;
            frame[..4].copy_from_slice(&size.to_be_bytes());
            let frame = frame.freeze();

            let rewritten = addresses
                .rewrite(&frame, METADATA, version, &conn)
                .expect("rewritten");
            // Everything after the brokers comes from the broker's frame, not copied.
            assert!(rewritten.tail_from < frame.len(), "v{version}");
            let out = rewritten.to_frame(&frame);
            let mut body = Bytes::copy_from_slice(&out[4..]);
            let header = ResponseHeader::decode(&mut body, header_version).unwrap();
            assert_eq!(header.correlation_id, 5);
            let got = MetadataResponse::decode(&mut body, version).unwrap();
            assert!(!body.has_remaining());
            let mut want = answer.clone();
            want.brokers[0].host = StrBytes::from_static_str("127.0.0.1");
            want.brokers[0].port = 19092;
            if version < 2 {
                want.cluster_id = None;
            }
            assert_eq!(got, want, "v{version}");
            assert_eq!(
                i32::from_be_bytes(out[..4].try_into().unwrap()) as usize,
                out.len() - 4
            );
        }
    }

    /// A broker answer whose list of brokers or coordinators claims more entries than its
    /// bytes can hold (a count of 4,294,967,294 in a frame of 30 bytes): forwarded
    /// unchanged, never decoded. kafka-protocol 0.18 reserves a vector of the count read
    /// off the wire before reading an entry, and an allocation that large aborts the
    /// process: one hostile or corrupt answer took every connection of the guard down.
    #[test]
    fn a_list_longer_than_its_answer_is_refused_before_anything_is_allocated() {
        let (addresses, conn) = one_route();
        // A compact array count of 0xFFFFFFFF - 1 entries.
        let huge = [0xff, 0xff, 0xff, 0xff, 0x0f];
        let frame = |api_key: i16, version: i16, body: &[u8]| {
            let header_version = match api_key {
                FIND_COORDINATOR => FindCoordinatorResponse::header_version(version),
                _ => DescribeClusterResponse::header_version(version),
            };
            let mut frame = BytesMut::new();
            frame.put_i32(0);
            ResponseHeader::default()
                .with_correlation_id(9)
                .encode(&mut frame, header_version)
                .unwrap();
            frame.put_slice(body);
            frame.put_slice(&[0; 16]);
            let size = (frame.len() - 4) as i32;
            frame[..4].copy_from_slice(&size.to_be_bytes());
            frame.freeze()
        };
        // FindCoordinator v4: the throttle time, then the coordinators.
        let mut find = vec![0, 0, 0, 0];
        find.extend_from_slice(&huge);
        // DescribeCluster v0 and v1: throttle time, error code, null message, [endpoint
        // type,] empty cluster id, controller id, then the brokers.
        let describe = |version: i16| {
            let mut body = vec![0, 0, 0, 0, 0, 0, 0];
            if version >= 1 {
                body.push(1);
            }
            body.extend_from_slice(&[1, 0, 0, 0, 1]);
            body.extend_from_slice(&huge);
            body
        };
        let cases = [
            (FIND_COORDINATOR, BATCHED_FIND_COORDINATOR, find.clone()),
            (FIND_COORDINATOR, 6, find),
            (DESCRIBE_CLUSTER, 0, describe(0)),
            (DESCRIBE_CLUSTER, 1, describe(1)),
        ];
        for (api_key, version, body) in cases {
            let frame = frame(api_key, version, &body);
            let refused = addresses.try_rewrite(&frame, api_key, version, &conn);
            let why = refused.err().unwrap_or_else(|| {
                panic!(
                    "{} v{version}: a count past its bytes was read",
                    api_name(api_key).unwrap()
                )
            });
            assert!(why.contains("4294967294"), "{why}");
            assert_eq!(addresses.rewrite(&frame, api_key, version, &conn), None);
        }
    }

    /// The smallest entries there are, at every version, are no shorter than the bounds
    /// `list_start` divides by: no answer that can exist is refused by it.
    #[test]
    fn the_smallest_entries_fit_the_bounds() {
        for version in 0..=MetadataResponse::VERSIONS.max {
            let len = MetadataResponseBroker::default()
                .compute_size(version)
                .unwrap();
            assert!(
                len >= MIN_METADATA_BROKER_BYTES,
                "Metadata v{version}: {len}"
            );
        }
        for version in 0..=DescribeClusterResponse::VERSIONS.max {
            let len = DescribeClusterBroker::default()
                .compute_size(version)
                .unwrap();
            assert!(len >= MIN_BROKER_BYTES, "DescribeCluster v{version}: {len}");
        }
        for version in BATCHED_FIND_COORDINATOR..=FindCoordinatorResponse::VERSIONS.max {
            let len = Coordinator::default().compute_size(version).unwrap();
            assert!(
                len >= MIN_COORDINATOR_BYTES,
                "FindCoordinator v{version}: {len}"
            );
        }
    }

    /// A broker whose tagged field's tag is a varint too long: kafka-protocol reads it and
    /// writes it back as nothing but the count. The rewrite would have shifted everything
    /// after it; the answer is forwarded as the broker sent it instead.
    #[test]
    fn an_answer_kafka_protocol_cannot_write_back_is_left_as_it_is() {
        const VERSION: i16 = 9;
        let (addresses, conn) = one_route();
        let mut frame = vec![0, 0, 0, 0];
        // Header v1 (correlation id, no tags), throttle time, one broker.
        frame.extend_from_slice(&[0, 0, 0, 7, 0, 0, 0, 0, 0, 2]);
        // Node 1 at the route's upstream, null rack, one tag: 87 83 83 ff ff, one byte.
        frame.extend_from_slice(&[0, 0, 0, 1, 9]);
        frame.extend_from_slice(b"10.0.0.1");
        frame.extend_from_slice(&[
            0, 0, 0x23, 0x84, 0, 1, 0x87, 0x83, 0x83, 0xff, 0xff, 1, 0x80,
        ]);
        // Cluster id null, controller, no topics, no tags.
        frame.extend_from_slice(&[0, 0, 0, 0, 1, 1, 0]);
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        let frame = Bytes::from(frame);
        let refused = addresses.try_rewrite(&frame, METADATA, VERSION, &conn);
        assert_eq!(
            refused.err().as_deref(),
            Some("kafka-protocol does not write it back as it read it")
        );
        assert_eq!(addresses.rewrite(&frame, METADATA, VERSION, &conn), None);
    }

    /// The codec's names of the three APIs are the words the warnings always used.
    #[test]
    fn the_three_answers_are_named_by_the_codec() {
        assert_eq!(api_name(METADATA), Some("Metadata"));
        assert_eq!(api_name(FIND_COORDINATOR), Some("FindCoordinator"));
        assert_eq!(api_name(DESCRIBE_CLUSTER), Some("DescribeCluster"));
    }
}
