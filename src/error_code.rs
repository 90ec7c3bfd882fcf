//! Kafka protocol error codes as an open `i16` newtype.
//!
//! Names and numbers follow `org.apache.kafka.common.protocol.Errors` of Kafka 4.4 (codes
//! -1 to 136), one line each in one table; `tests/kafka_tables.rs` checks it against that
//! enum. Codes this crate does not know are carried through unchanged.

use core::fmt;

/// A Kafka protocol error code.
///
/// Any `i16` is a valid value: codes newer than this crate are kept as-is and
/// simply have no [`name`](ErrorCode::name).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct ErrorCode(pub i16);

/// The one table: each line is a doc comment and `KAFKA_NAME = code;`. It gives the
/// constant, its place in [`ErrorCode::ALL`] and its [`name`](ErrorCode::name) (the
/// constant's own name, which is Kafka's).
macro_rules! error_codes {
    ($($(#[$doc:meta])* $konst:ident = $code:literal;)*) => {
        impl ErrorCode {
            $(
                $(#[$doc])*
                pub const $konst: Self = Self($code);
            )*

            /// Every code this crate knows, in ascending order.
            pub const ALL: &'static [ErrorCode] = &[$(Self::$konst),*];

            /// Kafka's enum name for this code, or `None` if the code is unknown.
            pub const fn name(self) -> Option<&'static str> {
                Some(match self.0 {
                    $($code => stringify!($konst),)*
                    _ => return None,
                })
            }
        }
    };
}

// Kafka's `org.apache.kafka.common.protocol.Errors` of kafka-clients 4.4, every code.
error_codes! {
    /// The broker hit an unexpected failure it could not classify.
    UNKNOWN_SERVER_ERROR = -1;
    /// Success: no error occurred.
    NONE = 0;
    /// The requested offset lies outside the log's current range.
    OFFSET_OUT_OF_RANGE = 1;
    /// A record batch failed its checksum, size or key validation.
    CORRUPT_MESSAGE = 2;
    /// The broker has no such topic-partition.
    UNKNOWN_TOPIC_OR_PARTITION = 3;
    /// The fetch size in the request is not acceptable.
    INVALID_FETCH_SIZE = 4;
    /// The partition currently has no leader (an election is under way).
    LEADER_NOT_AVAILABLE = 5;
    /// The broker is not the leader, or not a replica at all, for this partition.
    NOT_LEADER_OR_FOLLOWER = 6;
    /// The request did not complete within its timeout.
    REQUEST_TIMED_OUT = 7;
    /// The target broker cannot be reached.
    BROKER_NOT_AVAILABLE = 8;
    /// The requested replica is not available on this broker.
    REPLICA_NOT_AVAILABLE = 9;
    /// A record exceeds the largest size the broker accepts.
    MESSAGE_TOO_LARGE = 10;
    /// The controller epoch is out of date; control moved to another node.
    STALE_CONTROLLER_EPOCH = 11;
    /// The metadata string attached to an offset commit is too long.
    OFFSET_METADATA_TOO_LARGE = 12;
    /// The connection dropped before a response arrived.
    NETWORK_EXCEPTION = 13;
    /// The coordinator is still loading its state.
    COORDINATOR_LOAD_IN_PROGRESS = 14;
    /// No coordinator is available right now.
    COORDINATOR_NOT_AVAILABLE = 15;
    /// The broker addressed is not the coordinator for this key.
    NOT_COORDINATOR = 16;
    /// The operation targeted a topic that is not valid for it.
    INVALID_TOPIC_EXCEPTION = 17;
    /// A record batch is bigger than the configured segment size.
    RECORD_LIST_TOO_LARGE = 18;
    /// Too few in-sync replicas to accept the write.
    NOT_ENOUGH_REPLICAS = 19;
    /// The write was appended, but to fewer in-sync replicas than required.
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20;
    /// The produce request asked for an unsupported acks value.
    INVALID_REQUIRED_ACKS = 21;
    /// The group generation id does not match the current one.
    ILLEGAL_GENERATION = 22;
    /// The member's protocols do not match the group's, or were empty.
    INCONSISTENT_GROUP_PROTOCOL = 23;
    /// The group id is not valid.
    INVALID_GROUP_ID = 24;
    /// The coordinator does not know this member id.
    UNKNOWN_MEMBER_ID = 25;
    /// The session timeout falls outside the broker's allowed range.
    INVALID_SESSION_TIMEOUT = 26;
    /// The group is rebalancing; the member must rejoin.
    REBALANCE_IN_PROGRESS = 27;
    /// The offset commit payload has an invalid size.
    INVALID_COMMIT_OFFSET_SIZE = 28;
    /// The principal may not access the topic.
    TOPIC_AUTHORIZATION_FAILED = 29;
    /// The principal may not access the group.
    GROUP_AUTHORIZATION_FAILED = 30;
    /// The principal may not perform this cluster-level action.
    CLUSTER_AUTHORIZATION_FAILED = 31;
    /// A record timestamp is outside the accepted window.
    INVALID_TIMESTAMP = 32;
    /// The broker does not offer the SASL mechanism asked for.
    UNSUPPORTED_SASL_MECHANISM = 33;
    /// The request is not allowed in the current SASL handshake state.
    ILLEGAL_SASL_STATE = 34;
    /// The broker does not support this API version.
    UNSUPPORTED_VERSION = 35;
    /// A topic of that name exists already.
    TOPIC_ALREADY_EXISTS = 36;
    /// The partition count requested is not valid.
    INVALID_PARTITIONS = 37;
    /// The replication factor requested is not valid for this cluster.
    INVALID_REPLICATION_FACTOR = 38;
    /// The explicit replica assignment is not valid.
    INVALID_REPLICA_ASSIGNMENT = 39;
    /// A supplied configuration is not valid.
    INVALID_CONFIG = 40;
    /// The broker addressed is not the active controller.
    NOT_CONTROLLER = 41;
    /// The request is malformed or not understood by this broker.
    INVALID_REQUEST = 42;
    /// The broker's message format version cannot serve this request.
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43;
    /// The request breaks a policy configured on the broker.
    POLICY_VIOLATION = 44;
    /// The producer sequence number arrived out of order.
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45;
    /// The producer sequence number was already seen.
    DUPLICATE_SEQUENCE_NUMBER = 46;
    /// The producer epoch is older than the current one.
    INVALID_PRODUCER_EPOCH = 47;
    /// The transactional operation is not allowed in the current state.
    INVALID_TXN_STATE = 48;
    /// The producer id is not the one bound to this transactional id.
    INVALID_PRODUCER_ID_MAPPING = 49;
    /// The transaction timeout exceeds the broker's maximum.
    INVALID_TRANSACTION_TIMEOUT = 50;
    /// Another operation on the same transaction is still in progress.
    CONCURRENT_TRANSACTIONS = 51;
    /// The sending transaction coordinator has been superseded.
    TRANSACTION_COORDINATOR_FENCED = 52;
    /// The principal may not use this transactional id.
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53;
    /// Security features are turned off on the broker.
    SECURITY_DISABLED = 54;
    /// The broker skipped this item because others in the batch failed.
    OPERATION_NOT_ATTEMPTED = 55;
    /// A disk error occurred while accessing the log.
    KAFKA_STORAGE_ERROR = 56;
    /// The named log directory is not configured on the broker.
    LOG_DIR_NOT_FOUND = 57;
    /// SASL authentication did not succeed.
    SASL_AUTHENTICATION_FAILED = 58;
    /// The broker holds no state for this producer id.
    UNKNOWN_PRODUCER_ID = 59;
    /// A partition reassignment is currently running.
    REASSIGNMENT_IN_PROGRESS = 60;
    /// Delegation tokens are not enabled.
    DELEGATION_TOKEN_AUTH_DISABLED = 61;
    /// The broker has no such delegation token.
    DELEGATION_TOKEN_NOT_FOUND = 62;
    /// The principal is not a valid owner or renewer of the token.
    DELEGATION_TOKEN_OWNER_MISMATCH = 63;
    /// Token requests are refused on this kind of channel.
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64;
    /// The principal may not perform this delegation token action.
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65;
    /// The delegation token has expired.
    DELEGATION_TOKEN_EXPIRED = 66;
    /// The principal type given is not supported.
    INVALID_PRINCIPAL_TYPE = 67;
    /// The group still has members.
    NON_EMPTY_GROUP = 68;
    /// No group with that id exists.
    GROUP_ID_NOT_FOUND = 69;
    /// The fetch session id is unknown to the broker.
    FETCH_SESSION_ID_NOT_FOUND = 70;
    /// The fetch session epoch is not the expected one.
    INVALID_FETCH_SESSION_EPOCH = 71;
    /// The leader has no listener matching the one the request came in on.
    LISTENER_NOT_FOUND = 72;
    /// Deleting topics is turned off on this cluster.
    TOPIC_DELETION_DISABLED = 73;
    /// The request's leader epoch is older than the broker's.
    FENCED_LEADER_EPOCH = 74;
    /// The request's leader epoch is newer than the broker's.
    UNKNOWN_LEADER_EPOCH = 75;
    /// The client cannot handle the partition's compression codec.
    UNSUPPORTED_COMPRESSION_TYPE = 76;
    /// The broker epoch in the request is out of date.
    STALE_BROKER_EPOCH = 77;
    /// The offset cannot be served until the new leader's high watermark catches up.
    OFFSET_NOT_AVAILABLE = 78;
    /// The member must obtain a member id before joining the group.
    MEMBER_ID_REQUIRED = 79;
    /// The preferred replica could not become leader.
    PREFERRED_LEADER_NOT_AVAILABLE = 80;
    /// The group is already at its maximum size.
    GROUP_MAX_SIZE_REACHED = 81;
    /// Another member holds this static group.instance.id.
    FENCED_INSTANCE_ID = 82;
    /// No replica eligible for leadership is available.
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83;
    /// The partition already has the leader an election would choose.
    ELECTION_NOT_NEEDED = 84;
    /// There is no partition reassignment to act on.
    NO_REASSIGNMENT_IN_PROGRESS = 85;
    /// Offsets cannot be deleted while the group is subscribed to the topic.
    GROUP_SUBSCRIBED_TO_TOPIC = 86;
    /// The broker rejected a record that failed validation.
    INVALID_RECORD = 87;
    /// Pending transactional offsets must settle first.
    UNSTABLE_OFFSET_COMMIT = 88;
    /// The request went over a throttling quota.
    THROTTLING_QUOTA_EXCEEDED = 89;
    /// A newer producer with the same transactional id has taken over.
    PRODUCER_FENCED = 90;
    /// The request names a resource that does not exist.
    RESOURCE_NOT_FOUND = 91;
    /// The request names the same resource more than once.
    DUPLICATE_RESOURCE = 92;
    /// The proposed credential does not meet the acceptance rules.
    UNACCEPTABLE_CREDENTIAL = 93;
    /// The sender or receiver of a voter-only request is not a voter.
    INCONSISTENT_VOTER_SET = 94;
    /// The update version supplied is not valid.
    INVALID_UPDATE_VERSION = 95;
    /// Updating finalized features failed on the server.
    FEATURE_UPDATE_FAILED = 96;
    /// A forwarded request's principal could not be decoded.
    PRINCIPAL_DESERIALIZATION_FAILURE = 97;
    /// The requested snapshot does not exist.
    SNAPSHOT_NOT_FOUND = 98;
    /// The snapshot position is negative or past its end.
    POSITION_OUT_OF_RANGE = 99;
    /// The broker has no topic with this topic id.
    UNKNOWN_TOPIC_ID = 100;
    /// Another broker already registered with this id.
    DUPLICATE_BROKER_REGISTRATION = 101;
    /// No broker has registered with this id.
    BROKER_ID_NOT_REGISTERED = 102;
    /// The topic id in the request differs from the log's topic id.
    INCONSISTENT_TOPIC_ID = 103;
    /// The cluster id in the request differs from the server's.
    INCONSISTENT_CLUSTER_ID = 104;
    /// No transaction state exists for this transactional id.
    TRANSACTIONAL_ID_NOT_FOUND = 105;
    /// The fetch session saw inconsistent use of topic ids.
    FETCH_SESSION_TOPIC_ID_ERROR = 106;
    /// The proposed ISR includes a replica that may not join it.
    INELIGIBLE_REPLICA = 107;
    /// The partition state was updated, but leadership changed meanwhile.
    NEW_LEADER_ELECTED = 108;
    /// The offset now lives in tiered (remote) storage.
    OFFSET_MOVED_TO_TIERED_STORAGE = 109;
    /// The member epoch was fenced; the member must drop its partitions and rejoin.
    FENCED_MEMBER_EPOCH = 110;
    /// Another group member still holds this instance id.
    UNRELEASED_INSTANCE_ID = 111;
    /// The group does not support this assignor or its version.
    UNSUPPORTED_ASSIGNOR = 112;
    /// The member epoch is stale; retry after a heartbeat refreshes it.
    STALE_MEMBER_EPOCH = 113;
    /// The request reached an endpoint of the wrong kind.
    MISMATCHED_ENDPOINT_TYPE = 114;
    /// This kind of endpoint is not supported yet.
    UNSUPPORTED_ENDPOINT_TYPE = 115;
    /// No controller with this id is known.
    UNKNOWN_CONTROLLER_ID = 116;
    /// The telemetry subscription id is unknown or outdated.
    UNKNOWN_SUBSCRIPTION_ID = 117;
    /// The telemetry push is larger than the broker allows.
    TELEMETRY_TOO_LARGE = 118;
    /// The controller considers the broker's registration invalid.
    INVALID_REGISTRATION = 119;
    /// The transaction hit an error; aborting it lets the producer continue.
    TRANSACTION_ABORTABLE = 120;
    /// The record is in a state that does not allow this acknowledgement.
    INVALID_RECORD_STATE = 121;
    /// The share session is unknown to the broker.
    SHARE_SESSION_NOT_FOUND = 122;
    /// The share session epoch is not the expected one.
    INVALID_SHARE_SESSION_EPOCH = 123;
    /// The share-group state epoch did not match the coordinator's.
    FENCED_STATE_EPOCH = 124;
    /// The voter key differs from the receiving replica's key.
    INVALID_VOTER_KEY = 125;
    /// The voter is already in the voter set.
    DUPLICATE_VOTER = 126;
    /// The voter is not in the voter set.
    VOTER_NOT_FOUND = 127;
    /// The regular expression supplied is not valid.
    INVALID_REGULAR_EXPRESSION = 128;
    /// The client's metadata is stale and it must rebootstrap.
    REBOOTSTRAP_REQUIRED = 129;
    /// The streams topology supplied is not valid.
    STREAMS_INVALID_TOPOLOGY = 130;
    /// The streams topology epoch supplied is not valid.
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131;
    /// The streams topology epoch is out of date.
    STREAMS_TOPOLOGY_FENCED = 132;
    /// No more share sessions can be opened on this broker.
    SHARE_SESSION_LIMIT_REACHED = 133;
    /// DeleteGroups could not complete; the per-group result says why.
    GROUP_DELETION_FAILED = 134;
    /// The broker could not process a streams topology description update.
    STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = 135;
    /// The controller id given is not registered.
    CONTROLLER_ID_NOT_REGISTERED = 136;
}

impl ErrorCode {
    /// The code Kafka names `name` (`"NOT_CONTROLLER"`), the inverse of
    /// [`name`](Self::name); `None` for a name this crate does not know. The match is exact,
    /// as Kafka spells its names: upper case, words joined by `_`.
    ///
    /// ```
    /// use kafka_elect_leaders::ErrorCode;
    /// assert_eq!(ErrorCode::from_name("NOT_CONTROLLER"), Some(ErrorCode::NOT_CONTROLLER));
    /// assert_eq!(ErrorCode::from_name("NONE"), Some(ErrorCode(0)));
    /// assert_eq!(ErrorCode::from_name("not_controller"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        Self::ALL
            .iter()
            .copied()
            .find(|code| code.name() == Some(name))
    }

    /// Whether this crate knows a name for this code.
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// Whether this code reports a failure, i.e. is anything other than [`NONE`](Self::NONE).
    pub const fn is_error(self) -> bool {
        self.0 != 0
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "ErrorCode({} {})", self.0, name),
            None => write!(f, "ErrorCode({})", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({})", name, self.0),
            None => write!(f, "unknown error code {}", self.0),
        }
    }
}

impl From<i16> for ErrorCode {
    fn from(code: i16) -> Self {
        Self(code)
    }
}

impl From<ErrorCode> for i16 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::ErrorCode;
    use std::format;

    /// Spot checks transcribed from Kafka's `Errors.java`.
    const SPOT: &[(i16, &str)] = &[
        (-1, "UNKNOWN_SERVER_ERROR"),
        (0, "NONE"),
        (3, "UNKNOWN_TOPIC_OR_PARTITION"),
        (6, "NOT_LEADER_OR_FOLLOWER"),
        (17, "INVALID_TOPIC_EXCEPTION"),
        (29, "TOPIC_AUTHORIZATION_FAILED"),
        (41, "NOT_CONTROLLER"),
        (56, "KAFKA_STORAGE_ERROR"),
        (68, "NON_EMPTY_GROUP"),
        (80, "PREFERRED_LEADER_NOT_AVAILABLE"),
        (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE"),
        (84, "ELECTION_NOT_NEEDED"),
        (97, "PRINCIPAL_DESERIALIZATION_FAILURE"),
        (106, "FETCH_SESSION_TOPIC_ID_ERROR"),
        (116, "UNKNOWN_CONTROLLER_ID"),
        (120, "TRANSACTION_ABORTABLE"),
        (129, "REBOOTSTRAP_REQUIRED"),
        (133, "SHARE_SESSION_LIMIT_REACHED"),
        (134, "GROUP_DELETION_FAILED"),
        (135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED"),
        (136, "CONTROLLER_ID_NOT_REGISTERED"),
    ];

    #[test]
    fn spot_checks_match_kafka() {
        for &(code, name) in SPOT {
            assert_eq!(ErrorCode(code).name(), Some(name), "code {code}");
        }
        assert_eq!(ErrorCode::NONE, ErrorCode(0));
        assert_eq!(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0, 3);
        assert_eq!(ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE.0, 80);
        assert_eq!(ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE.0, 83);
        assert_eq!(ErrorCode::ELECTION_NOT_NEEDED.0, 84);
    }

    #[test]
    fn all_is_strictly_ascending() {
        for pair in ErrorCode::ALL.windows(2) {
            assert!(pair[0] < pair[1], "{:?} !< {:?}", pair[0], pair[1]);
        }
    }

    #[test]
    fn all_covers_the_contiguous_kafka_range() {
        // Kafka has assigned every value from -1 up to the newest code without gaps.
        assert_eq!(ErrorCode::ALL.len(), 138);
        assert_eq!(
            ErrorCode::ALL.first(),
            Some(&ErrorCode::UNKNOWN_SERVER_ERROR)
        );
        assert_eq!(
            ErrorCode::ALL.last(),
            Some(&ErrorCode::CONTROLLER_ID_NOT_REGISTERED)
        );
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(i64::from(code.0), i as i64 - 1);
        }
    }

    #[test]
    fn every_known_name_round_trips() {
        for &code in ErrorCode::ALL {
            let name = code.name().expect("every code in ALL has a name");
            assert!(code.is_known());
            let found: std::vec::Vec<_> = ErrorCode::ALL
                .iter()
                .filter(|c| c.name() == Some(name))
                .collect();
            assert_eq!(found, [&code], "name {name} must map back to one code");
        }
    }

    #[test]
    fn from_name_inverts_name() {
        for &code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_name(code.name().unwrap()), Some(code));
        }
        for name in [
            "",
            "none",
            "NOT CONTROLLER",
            "NOT_CONTROLLER ",
            "41",
            "UNKNOWN",
        ] {
            assert_eq!(ErrorCode::from_name(name), None, "{name:?}");
        }
    }

    #[test]
    fn unknown_codes_have_no_name() {
        for raw in [-32768, -2, 137, 999, i16::MAX] {
            let code = ErrorCode(raw);
            assert_eq!(code.name(), None);
            assert!(!code.is_known());
            assert!(!ErrorCode::ALL.contains(&code));
        }
    }

    #[test]
    fn is_error_only_for_non_zero() {
        assert!(!ErrorCode::NONE.is_error());
        assert!(!ErrorCode::default().is_error());
        assert!(ErrorCode::UNKNOWN_SERVER_ERROR.is_error());
        assert!(ErrorCode(999).is_error());
    }

    #[test]
    fn formatting() {
        let known = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
        assert_eq!(
            format!("{known:?}"),
            "ErrorCode(3 UNKNOWN_TOPIC_OR_PARTITION)"
        );
        assert_eq!(format!("{known}"), "UNKNOWN_TOPIC_OR_PARTITION (3)");
        assert_eq!(format!("{:?}", ErrorCode(999)), "ErrorCode(999)");
        assert_eq!(format!("{}", ErrorCode(999)), "unknown error code 999");
        assert_eq!(
            format!("{:?}", ErrorCode(-1)),
            "ErrorCode(-1 UNKNOWN_SERVER_ERROR)"
        );
    }

    #[test]
    fn conversions() {
        assert_eq!(ErrorCode::from(84), ErrorCode::ELECTION_NOT_NEEDED);
        assert_eq!(i16::from(ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE), 83);
        assert_eq!(i16::from(ErrorCode::from(-500)), -500);
    }
}
