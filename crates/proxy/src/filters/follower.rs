//! A Fetch sent as a follower replica closes the connection while any rule is set.
//!
//! Kafka's followers fetch with the same API as consumers (Fetch, key 1), naming
//! themselves by a replica id (`ReplicaId` before v15, the `ReplicaState` tagged field
//! from v15); consumers send -1 (or, from v15, no `ReplicaState`). The leader takes a
//! follower's fetch offset as what that replica has copied: a client that fetches as
//! broker 3 at the log's end makes the leader count broker 3 in sync and move the high
//! watermark past records broker 3 never copied, so that acks=all acknowledges a record
//! one broker holds, lost with it. Kafka checks such a fetch as a cluster action, which a
//! cluster without ACLs does not refuse. No client fetches as a replica: the guard closes
//! the connection, as it does for the other APIs only brokers send (`crate::filters::doors::apis`).
//!
//! The replica id is read by hand ([`crate::filters::doors::apis::fetch_replica_id`], where its reasons
//! are). One the guard cannot read that far closes the connection too (the broker would
//! refuse it): what the guard cannot read is not forwarded while rules are set.

use crate::core::close::{Close, CloseReason};
use crate::filter::{Filter, OnRequest, Request, Session};
use crate::filters::doors::apis::fetch_replica_id as replica_id;

/// Fetch's API key.
const FETCH: i16 = 1;

/// Closes a Fetch sent as a follower replica (a replica id of 0 or more): the leader would
/// count that replica in sync.
#[derive(Clone, Copy, Debug, Default)]
pub struct FollowerFetch;

impl Filter for FollowerFetch {
    fn name(&self) -> &'static str {
        "follower-fetch"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        api_key == FETCH
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        if !session.policy().has_rules() {
            return OnRequest::Pass;
        }
        let peek = *request.peek();
        let why = match replica_id(request.frame(), peek.api_version) {
            Some(id) if id < 0 => return OnRequest::Pass,
            Some(id) => format!(
                "the client sent Fetch v{} as replica {id}, as only a follower broker does \
                 (the leader would count it in sync)",
                peek.api_version
            ),
            None => format!(
                "the client sent a Fetch v{} the guard cannot read to its replica id",
                peek.api_version
            ),
        };
        OnRequest::Close(Close::of(
            CloseReason::Refused,
            format!(
                "{why} (correlation id {}): never forwarded while the guard has rules",
                peek.correlation_id
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::fetch_request::{
        FetchPartition, FetchTopic, ForgottenTopic, ReplicaState,
    };
    use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;

    use super::*;
    use crate::filter::testing::{kafka_request, kind, request, Conn};
    use crate::filters::elect::policy::Policy;
    use crate::Config;

    /// A Fetch as Kafka's client writes it at `version`, naming itself `replica`.
    fn fetch(version: i16, replica: i32) -> Vec<u8> {
        let s = |text: &str| StrBytes::from_string(text.to_owned());
        let partition = |p| {
            FetchPartition::default()
                .with_partition(p)
                .with_fetch_offset(1000)
                .with_partition_max_bytes(1 << 20)
        };
        let topic = |name: &str, id: u128| {
            FetchTopic::default()
                .with_topic(TopicName(s(name)))
                .with_topic_id(uuid::Uuid::from_u128(id))
                .with_partitions(vec![partition(0), partition(1)])
        };
        let mut body = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_topics(vec![topic("orders", 7), topic("payments", 8)])
            .with_rack_id(s("rack-a"));
        if version >= 7 {
            body = body.with_forgotten_topics_data(vec![ForgottenTopic::default()
                .with_topic(TopicName(s("old")))
                .with_topic_id(uuid::Uuid::from_u128(9))
                .with_partitions(vec![3, 4])]);
        }
        if version >= 15 {
            if replica >= 0 {
                body = body.with_replica_state(
                    ReplicaState::default()
                        .with_replica_id(BrokerId(replica))
                        .with_replica_epoch(5),
                );
            }
            body = body.with_cluster_id(Some(s("cluster")));
        } else {
            body = body.with_replica_id(BrokerId(replica));
        }
        kafka_request(FETCH, version, 11, &body)
    }

    fn guard(policy: Policy) -> Conn {
        Conn::new(&Config {
            policy,
            ..Config::default()
        })
    }

    fn deny_unclean() -> Policy {
        Policy {
            deny_unclean: true,
            ..Policy::default()
        }
    }

    /// Every version Kafka 4.4 reads: a consumer's Fetch passes, a follower's closes the
    /// connection; with no rule, both pass.
    #[test]
    fn a_fetch_as_a_replica_closes_the_connection() {
        for version in 4..=18 {
            assert_eq!(
                replica_id(&fetch(version, -1), version),
                Some(-1),
                "v{version}"
            );
            assert_eq!(
                replica_id(&fetch(version, 3), version),
                Some(3),
                "v{version}"
            );
            let conn = guard(deny_unclean());
            let consumer =
                FollowerFetch.request(&conn.session(), &mut request(&fetch(version, -1)));
            assert!(
                matches!(consumer, OnRequest::Pass),
                "v{version}: {}",
                kind(&consumer)
            );
            match FollowerFetch.request(&conn.session(), &mut request(&fetch(version, 3))) {
                OnRequest::Close(close) => {
                    assert_eq!(close.reason(), CloseReason::Refused);
                    assert!(close.to_string().contains("as replica 3"), "{close}");
                }
                other => panic!("v{version}: {}", kind(&other)),
            }
            let open = guard(Policy::default());
            let follower = FollowerFetch.request(&open.session(), &mut request(&fetch(version, 3)));
            assert!(matches!(follower, OnRequest::Pass), "v{version}");
        }
    }

    /// A request cut anywhere, or with a count its bytes cannot hold, cannot be read to
    /// its replica id: None, never a panic.
    #[test]
    fn a_fetch_cut_short_or_lying_is_not_read() {
        for version in [11, 15, 17, 18] {
            let whole = fetch(version, -1);
            for end in 0..whole.len() {
                if version >= 15 {
                    assert_eq!(
                        replica_id(&whole[..end], version),
                        None,
                        "v{version} cut at {end}"
                    );
                }
            }
        }
        // v15: the topics' count (after header and 21 bytes) claims 2^28 topics.
        let mut lying = fetch(15, -1);
        let at = 4 + 8 + 2 + lying[13] as usize + 1 + 21;
        lying.splice(at..at + 1, [0xff, 0xff, 0xff, 0x7f]);
        assert_eq!(replica_id(&lying, 15), None);
    }

    #[test]
    fn reads_fetch_requests_only() {
        for api_key in -1..200 {
            assert_eq!(FollowerFetch.reads_request(api_key), api_key == FETCH);
        }
    }
}
