//! Kafka protocol error codes as an open `i16` newtype.
//!
//! Names and numbers follow `org.apache.kafka.common.protocol.Errors` as of Kafka 4.3;
//! codes this crate does not know are carried through unchanged.

use core::fmt;

/// A Kafka protocol error code.
///
/// Any `i16` is a valid value: codes newer than this crate are kept as-is and
/// simply have no [`name`](ErrorCode::name).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct ErrorCode(pub i16);

impl ErrorCode {
    /// The broker hit an unexpected failure it could not classify.
    pub const UNKNOWN_SERVER_ERROR: Self = Self(-1);
    /// Success: no error occurred.
    pub const NONE: Self = Self(0);
    /// The requested offset lies outside the log's current range.
    pub const OFFSET_OUT_OF_RANGE: Self = Self(1);
    /// A record batch failed its checksum, size or key validation.
    pub const CORRUPT_MESSAGE: Self = Self(2);
    /// The broker has no such topic-partition.
    pub const UNKNOWN_TOPIC_OR_PARTITION: Self = Self(3);
    /// The fetch size in the request is not acceptable.
    pub const INVALID_FETCH_SIZE: Self = Self(4);
    /// The partition currently has no leader (an election is under way).
    pub const LEADER_NOT_AVAILABLE: Self = Self(5);
    /// The broker is not the leader, or not a replica at all, for this partition.
    pub const NOT_LEADER_OR_FOLLOWER: Self = Self(6);
    /// The request did not complete within its timeout.
    pub const REQUEST_TIMED_OUT: Self = Self(7);
    /// The target broker cannot be reached.
    pub const BROKER_NOT_AVAILABLE: Self = Self(8);
    /// The requested replica is not available on this broker.
    pub const REPLICA_NOT_AVAILABLE: Self = Self(9);
    /// A record exceeds the largest size the broker accepts.
    pub const MESSAGE_TOO_LARGE: Self = Self(10);
    /// The controller epoch is out of date; control moved to another node.
    pub const STALE_CONTROLLER_EPOCH: Self = Self(11);
    /// The metadata string attached to an offset commit is too long.
    pub const OFFSET_METADATA_TOO_LARGE: Self = Self(12);
    /// The connection dropped before a response arrived.
    pub const NETWORK_EXCEPTION: Self = Self(13);
    /// The coordinator is still loading its state.
    pub const COORDINATOR_LOAD_IN_PROGRESS: Self = Self(14);
    /// No coordinator is available right now.
    pub const COORDINATOR_NOT_AVAILABLE: Self = Self(15);
    /// The broker addressed is not the coordinator for this key.
    pub const NOT_COORDINATOR: Self = Self(16);
    /// The operation targeted a topic that is not valid for it.
    pub const INVALID_TOPIC_EXCEPTION: Self = Self(17);
    /// A record batch is bigger than the configured segment size.
    pub const RECORD_LIST_TOO_LARGE: Self = Self(18);
    /// Too few in-sync replicas to accept the write.
    pub const NOT_ENOUGH_REPLICAS: Self = Self(19);
    /// The write was appended, but to fewer in-sync replicas than required.
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: Self = Self(20);
    /// The produce request asked for an unsupported acks value.
    pub const INVALID_REQUIRED_ACKS: Self = Self(21);
    /// The group generation id does not match the current one.
    pub const ILLEGAL_GENERATION: Self = Self(22);
    /// The member's protocols do not match the group's, or were empty.
    pub const INCONSISTENT_GROUP_PROTOCOL: Self = Self(23);
    /// The group id is not valid.
    pub const INVALID_GROUP_ID: Self = Self(24);
    /// The coordinator does not know this member id.
    pub const UNKNOWN_MEMBER_ID: Self = Self(25);
    /// The session timeout falls outside the broker's allowed range.
    pub const INVALID_SESSION_TIMEOUT: Self = Self(26);
    /// The group is rebalancing; the member must rejoin.
    pub const REBALANCE_IN_PROGRESS: Self = Self(27);
    /// The offset commit payload has an invalid size.
    pub const INVALID_COMMIT_OFFSET_SIZE: Self = Self(28);
    /// The principal may not access the topic.
    pub const TOPIC_AUTHORIZATION_FAILED: Self = Self(29);
    /// The principal may not access the group.
    pub const GROUP_AUTHORIZATION_FAILED: Self = Self(30);
    /// The principal may not perform this cluster-level action.
    pub const CLUSTER_AUTHORIZATION_FAILED: Self = Self(31);
    /// A record timestamp is outside the accepted window.
    pub const INVALID_TIMESTAMP: Self = Self(32);
    /// The broker does not offer the SASL mechanism asked for.
    pub const UNSUPPORTED_SASL_MECHANISM: Self = Self(33);
    /// The request is not allowed in the current SASL handshake state.
    pub const ILLEGAL_SASL_STATE: Self = Self(34);
    /// The broker does not support this API version.
    pub const UNSUPPORTED_VERSION: Self = Self(35);
    /// A topic of that name exists already.
    pub const TOPIC_ALREADY_EXISTS: Self = Self(36);
    /// The partition count requested is not valid.
    pub const INVALID_PARTITIONS: Self = Self(37);
    /// The replication factor requested is not valid for this cluster.
    pub const INVALID_REPLICATION_FACTOR: Self = Self(38);
    /// The explicit replica assignment is not valid.
    pub const INVALID_REPLICA_ASSIGNMENT: Self = Self(39);
    /// A supplied configuration is not valid.
    pub const INVALID_CONFIG: Self = Self(40);
    /// The broker addressed is not the active controller.
    pub const NOT_CONTROLLER: Self = Self(41);
    /// The request is malformed or not understood by this broker.
    pub const INVALID_REQUEST: Self = Self(42);
    /// The broker's message format version cannot serve this request.
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: Self = Self(43);
    /// The request breaks a policy configured on the broker.
    pub const POLICY_VIOLATION: Self = Self(44);
    /// The producer sequence number arrived out of order.
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: Self = Self(45);
    /// The producer sequence number was already seen.
    pub const DUPLICATE_SEQUENCE_NUMBER: Self = Self(46);
    /// The producer epoch is older than the current one.
    pub const INVALID_PRODUCER_EPOCH: Self = Self(47);
    /// The transactional operation is not allowed in the current state.
    pub const INVALID_TXN_STATE: Self = Self(48);
    /// The producer id is not the one bound to this transactional id.
    pub const INVALID_PRODUCER_ID_MAPPING: Self = Self(49);
    /// The transaction timeout exceeds the broker's maximum.
    pub const INVALID_TRANSACTION_TIMEOUT: Self = Self(50);
    /// Another operation on the same transaction is still in progress.
    pub const CONCURRENT_TRANSACTIONS: Self = Self(51);
    /// The sending transaction coordinator has been superseded.
    pub const TRANSACTION_COORDINATOR_FENCED: Self = Self(52);
    /// The principal may not use this transactional id.
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Self = Self(53);
    /// Security features are turned off on the broker.
    pub const SECURITY_DISABLED: Self = Self(54);
    /// The broker skipped this item because others in the batch failed.
    pub const OPERATION_NOT_ATTEMPTED: Self = Self(55);
    /// A disk error occurred while accessing the log.
    pub const KAFKA_STORAGE_ERROR: Self = Self(56);
    /// The named log directory is not configured on the broker.
    pub const LOG_DIR_NOT_FOUND: Self = Self(57);
    /// SASL authentication did not succeed.
    pub const SASL_AUTHENTICATION_FAILED: Self = Self(58);
    /// The broker holds no state for this producer id.
    pub const UNKNOWN_PRODUCER_ID: Self = Self(59);
    /// A partition reassignment is currently running.
    pub const REASSIGNMENT_IN_PROGRESS: Self = Self(60);
    /// Delegation tokens are not enabled.
    pub const DELEGATION_TOKEN_AUTH_DISABLED: Self = Self(61);
    /// The broker has no such delegation token.
    pub const DELEGATION_TOKEN_NOT_FOUND: Self = Self(62);
    /// The principal is not a valid owner or renewer of the token.
    pub const DELEGATION_TOKEN_OWNER_MISMATCH: Self = Self(63);
    /// Token requests are refused on this kind of channel.
    pub const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: Self = Self(64);
    /// The principal may not perform this delegation token action.
    pub const DELEGATION_TOKEN_AUTHORIZATION_FAILED: Self = Self(65);
    /// The delegation token has expired.
    pub const DELEGATION_TOKEN_EXPIRED: Self = Self(66);
    /// The principal type given is not supported.
    pub const INVALID_PRINCIPAL_TYPE: Self = Self(67);
    /// The group still has members.
    pub const NON_EMPTY_GROUP: Self = Self(68);
    /// No group with that id exists.
    pub const GROUP_ID_NOT_FOUND: Self = Self(69);
    /// The fetch session id is unknown to the broker.
    pub const FETCH_SESSION_ID_NOT_FOUND: Self = Self(70);
    /// The fetch session epoch is not the expected one.
    pub const INVALID_FETCH_SESSION_EPOCH: Self = Self(71);
    /// The leader has no listener matching the one the request came in on.
    pub const LISTENER_NOT_FOUND: Self = Self(72);
    /// Deleting topics is turned off on this cluster.
    pub const TOPIC_DELETION_DISABLED: Self = Self(73);
    /// The request's leader epoch is older than the broker's.
    pub const FENCED_LEADER_EPOCH: Self = Self(74);
    /// The request's leader epoch is newer than the broker's.
    pub const UNKNOWN_LEADER_EPOCH: Self = Self(75);
    /// The client cannot handle the partition's compression codec.
    pub const UNSUPPORTED_COMPRESSION_TYPE: Self = Self(76);
    /// The broker epoch in the request is out of date.
    pub const STALE_BROKER_EPOCH: Self = Self(77);
    /// The offset cannot be served until the new leader's high watermark catches up.
    pub const OFFSET_NOT_AVAILABLE: Self = Self(78);
    /// The member must obtain a member id before joining the group.
    pub const MEMBER_ID_REQUIRED: Self = Self(79);
    /// The preferred replica could not become leader.
    pub const PREFERRED_LEADER_NOT_AVAILABLE: Self = Self(80);
    /// The group is already at its maximum size.
    pub const GROUP_MAX_SIZE_REACHED: Self = Self(81);
    /// Another member holds this static group.instance.id.
    pub const FENCED_INSTANCE_ID: Self = Self(82);
    /// No replica eligible for leadership is available.
    pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: Self = Self(83);
    /// The partition already has the leader an election would choose.
    pub const ELECTION_NOT_NEEDED: Self = Self(84);
    /// There is no partition reassignment to act on.
    pub const NO_REASSIGNMENT_IN_PROGRESS: Self = Self(85);
    /// Offsets cannot be deleted while the group is subscribed to the topic.
    pub const GROUP_SUBSCRIBED_TO_TOPIC: Self = Self(86);
    /// The broker rejected a record that failed validation.
    pub const INVALID_RECORD: Self = Self(87);
    /// Pending transactional offsets must settle first.
    pub const UNSTABLE_OFFSET_COMMIT: Self = Self(88);
    /// The request went over a throttling quota.
    pub const THROTTLING_QUOTA_EXCEEDED: Self = Self(89);
    /// A newer producer with the same transactional id has taken over.
    pub const PRODUCER_FENCED: Self = Self(90);
    /// The request names a resource that does not exist.
    pub const RESOURCE_NOT_FOUND: Self = Self(91);
    /// The request names the same resource more than once.
    pub const DUPLICATE_RESOURCE: Self = Self(92);
    /// The proposed credential does not meet the acceptance rules.
    pub const UNACCEPTABLE_CREDENTIAL: Self = Self(93);
    /// The sender or receiver of a voter-only request is not a voter.
    pub const INCONSISTENT_VOTER_SET: Self = Self(94);
    /// The update version supplied is not valid.
    pub const INVALID_UPDATE_VERSION: Self = Self(95);
    /// Updating finalized features failed on the server.
    pub const FEATURE_UPDATE_FAILED: Self = Self(96);
    /// A forwarded request's principal could not be decoded.
    pub const PRINCIPAL_DESERIALIZATION_FAILURE: Self = Self(97);
    /// The requested snapshot does not exist.
    pub const SNAPSHOT_NOT_FOUND: Self = Self(98);
    /// The snapshot position is negative or past its end.
    pub const POSITION_OUT_OF_RANGE: Self = Self(99);
    /// The broker has no topic with this topic id.
    pub const UNKNOWN_TOPIC_ID: Self = Self(100);
    /// Another broker already registered with this id.
    pub const DUPLICATE_BROKER_REGISTRATION: Self = Self(101);
    /// No broker has registered with this id.
    pub const BROKER_ID_NOT_REGISTERED: Self = Self(102);
    /// The topic id in the request differs from the log's topic id.
    pub const INCONSISTENT_TOPIC_ID: Self = Self(103);
    /// The cluster id in the request differs from the server's.
    pub const INCONSISTENT_CLUSTER_ID: Self = Self(104);
    /// No transaction state exists for this transactional id.
    pub const TRANSACTIONAL_ID_NOT_FOUND: Self = Self(105);
    /// The fetch session saw inconsistent use of topic ids.
    pub const FETCH_SESSION_TOPIC_ID_ERROR: Self = Self(106);
    /// The proposed ISR includes a replica that may not join it.
    pub const INELIGIBLE_REPLICA: Self = Self(107);
    /// The partition state was updated, but leadership changed meanwhile.
    pub const NEW_LEADER_ELECTED: Self = Self(108);
    /// The offset now lives in tiered (remote) storage.
    pub const OFFSET_MOVED_TO_TIERED_STORAGE: Self = Self(109);
    /// The member epoch was fenced; the member must drop its partitions and rejoin.
    pub const FENCED_MEMBER_EPOCH: Self = Self(110);
    /// Another group member still holds this instance id.
    pub const UNRELEASED_INSTANCE_ID: Self = Self(111);
    /// The group does not support this assignor or its version.
    pub const UNSUPPORTED_ASSIGNOR: Self = Self(112);
    /// The member epoch is stale; retry after a heartbeat refreshes it.
    pub const STALE_MEMBER_EPOCH: Self = Self(113);
    /// The request reached an endpoint of the wrong kind.
    pub const MISMATCHED_ENDPOINT_TYPE: Self = Self(114);
    /// This kind of endpoint is not supported yet.
    pub const UNSUPPORTED_ENDPOINT_TYPE: Self = Self(115);
    /// No controller with this id is known.
    pub const UNKNOWN_CONTROLLER_ID: Self = Self(116);
    /// The telemetry subscription id is unknown or outdated.
    pub const UNKNOWN_SUBSCRIPTION_ID: Self = Self(117);
    /// The telemetry push is larger than the broker allows.
    pub const TELEMETRY_TOO_LARGE: Self = Self(118);
    /// The controller considers the broker's registration invalid.
    pub const INVALID_REGISTRATION: Self = Self(119);
    /// The transaction hit an error; aborting it lets the producer continue.
    pub const TRANSACTION_ABORTABLE: Self = Self(120);
    /// The record is in a state that does not allow this acknowledgement.
    pub const INVALID_RECORD_STATE: Self = Self(121);
    /// The share session is unknown to the broker.
    pub const SHARE_SESSION_NOT_FOUND: Self = Self(122);
    /// The share session epoch is not the expected one.
    pub const INVALID_SHARE_SESSION_EPOCH: Self = Self(123);
    /// The share-group state epoch did not match the coordinator's.
    pub const FENCED_STATE_EPOCH: Self = Self(124);
    /// The voter key differs from the receiving replica's key.
    pub const INVALID_VOTER_KEY: Self = Self(125);
    /// The voter is already in the voter set.
    pub const DUPLICATE_VOTER: Self = Self(126);
    /// The voter is not in the voter set.
    pub const VOTER_NOT_FOUND: Self = Self(127);
    /// The regular expression supplied is not valid.
    pub const INVALID_REGULAR_EXPRESSION: Self = Self(128);
    /// The client's metadata is stale and it must rebootstrap.
    pub const REBOOTSTRAP_REQUIRED: Self = Self(129);
    /// The streams topology supplied is not valid.
    pub const STREAMS_INVALID_TOPOLOGY: Self = Self(130);
    /// The streams topology epoch supplied is not valid.
    pub const STREAMS_INVALID_TOPOLOGY_EPOCH: Self = Self(131);
    /// The streams topology epoch is out of date.
    pub const STREAMS_TOPOLOGY_FENCED: Self = Self(132);
    /// No more share sessions can be opened on this broker.
    pub const SHARE_SESSION_LIMIT_REACHED: Self = Self(133);

    /// Every code this crate knows, in ascending order.
    pub const ALL: &'static [ErrorCode] = &[
        Self::UNKNOWN_SERVER_ERROR,
        Self::NONE,
        Self::OFFSET_OUT_OF_RANGE,
        Self::CORRUPT_MESSAGE,
        Self::UNKNOWN_TOPIC_OR_PARTITION,
        Self::INVALID_FETCH_SIZE,
        Self::LEADER_NOT_AVAILABLE,
        Self::NOT_LEADER_OR_FOLLOWER,
        Self::REQUEST_TIMED_OUT,
        Self::BROKER_NOT_AVAILABLE,
        Self::REPLICA_NOT_AVAILABLE,
        Self::MESSAGE_TOO_LARGE,
        Self::STALE_CONTROLLER_EPOCH,
        Self::OFFSET_METADATA_TOO_LARGE,
        Self::NETWORK_EXCEPTION,
        Self::COORDINATOR_LOAD_IN_PROGRESS,
        Self::COORDINATOR_NOT_AVAILABLE,
        Self::NOT_COORDINATOR,
        Self::INVALID_TOPIC_EXCEPTION,
        Self::RECORD_LIST_TOO_LARGE,
        Self::NOT_ENOUGH_REPLICAS,
        Self::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Self::INVALID_REQUIRED_ACKS,
        Self::ILLEGAL_GENERATION,
        Self::INCONSISTENT_GROUP_PROTOCOL,
        Self::INVALID_GROUP_ID,
        Self::UNKNOWN_MEMBER_ID,
        Self::INVALID_SESSION_TIMEOUT,
        Self::REBALANCE_IN_PROGRESS,
        Self::INVALID_COMMIT_OFFSET_SIZE,
        Self::TOPIC_AUTHORIZATION_FAILED,
        Self::GROUP_AUTHORIZATION_FAILED,
        Self::CLUSTER_AUTHORIZATION_FAILED,
        Self::INVALID_TIMESTAMP,
        Self::UNSUPPORTED_SASL_MECHANISM,
        Self::ILLEGAL_SASL_STATE,
        Self::UNSUPPORTED_VERSION,
        Self::TOPIC_ALREADY_EXISTS,
        Self::INVALID_PARTITIONS,
        Self::INVALID_REPLICATION_FACTOR,
        Self::INVALID_REPLICA_ASSIGNMENT,
        Self::INVALID_CONFIG,
        Self::NOT_CONTROLLER,
        Self::INVALID_REQUEST,
        Self::UNSUPPORTED_FOR_MESSAGE_FORMAT,
        Self::POLICY_VIOLATION,
        Self::OUT_OF_ORDER_SEQUENCE_NUMBER,
        Self::DUPLICATE_SEQUENCE_NUMBER,
        Self::INVALID_PRODUCER_EPOCH,
        Self::INVALID_TXN_STATE,
        Self::INVALID_PRODUCER_ID_MAPPING,
        Self::INVALID_TRANSACTION_TIMEOUT,
        Self::CONCURRENT_TRANSACTIONS,
        Self::TRANSACTION_COORDINATOR_FENCED,
        Self::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        Self::SECURITY_DISABLED,
        Self::OPERATION_NOT_ATTEMPTED,
        Self::KAFKA_STORAGE_ERROR,
        Self::LOG_DIR_NOT_FOUND,
        Self::SASL_AUTHENTICATION_FAILED,
        Self::UNKNOWN_PRODUCER_ID,
        Self::REASSIGNMENT_IN_PROGRESS,
        Self::DELEGATION_TOKEN_AUTH_DISABLED,
        Self::DELEGATION_TOKEN_NOT_FOUND,
        Self::DELEGATION_TOKEN_OWNER_MISMATCH,
        Self::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
        Self::DELEGATION_TOKEN_AUTHORIZATION_FAILED,
        Self::DELEGATION_TOKEN_EXPIRED,
        Self::INVALID_PRINCIPAL_TYPE,
        Self::NON_EMPTY_GROUP,
        Self::GROUP_ID_NOT_FOUND,
        Self::FETCH_SESSION_ID_NOT_FOUND,
        Self::INVALID_FETCH_SESSION_EPOCH,
        Self::LISTENER_NOT_FOUND,
        Self::TOPIC_DELETION_DISABLED,
        Self::FENCED_LEADER_EPOCH,
        Self::UNKNOWN_LEADER_EPOCH,
        Self::UNSUPPORTED_COMPRESSION_TYPE,
        Self::STALE_BROKER_EPOCH,
        Self::OFFSET_NOT_AVAILABLE,
        Self::MEMBER_ID_REQUIRED,
        Self::PREFERRED_LEADER_NOT_AVAILABLE,
        Self::GROUP_MAX_SIZE_REACHED,
        Self::FENCED_INSTANCE_ID,
        Self::ELIGIBLE_LEADERS_NOT_AVAILABLE,
        Self::ELECTION_NOT_NEEDED,
        Self::NO_REASSIGNMENT_IN_PROGRESS,
        Self::GROUP_SUBSCRIBED_TO_TOPIC,
        Self::INVALID_RECORD,
        Self::UNSTABLE_OFFSET_COMMIT,
        Self::THROTTLING_QUOTA_EXCEEDED,
        Self::PRODUCER_FENCED,
        Self::RESOURCE_NOT_FOUND,
        Self::DUPLICATE_RESOURCE,
        Self::UNACCEPTABLE_CREDENTIAL,
        Self::INCONSISTENT_VOTER_SET,
        Self::INVALID_UPDATE_VERSION,
        Self::FEATURE_UPDATE_FAILED,
        Self::PRINCIPAL_DESERIALIZATION_FAILURE,
        Self::SNAPSHOT_NOT_FOUND,
        Self::POSITION_OUT_OF_RANGE,
        Self::UNKNOWN_TOPIC_ID,
        Self::DUPLICATE_BROKER_REGISTRATION,
        Self::BROKER_ID_NOT_REGISTERED,
        Self::INCONSISTENT_TOPIC_ID,
        Self::INCONSISTENT_CLUSTER_ID,
        Self::TRANSACTIONAL_ID_NOT_FOUND,
        Self::FETCH_SESSION_TOPIC_ID_ERROR,
        Self::INELIGIBLE_REPLICA,
        Self::NEW_LEADER_ELECTED,
        Self::OFFSET_MOVED_TO_TIERED_STORAGE,
        Self::FENCED_MEMBER_EPOCH,
        Self::UNRELEASED_INSTANCE_ID,
        Self::UNSUPPORTED_ASSIGNOR,
        Self::STALE_MEMBER_EPOCH,
        Self::MISMATCHED_ENDPOINT_TYPE,
        Self::UNSUPPORTED_ENDPOINT_TYPE,
        Self::UNKNOWN_CONTROLLER_ID,
        Self::UNKNOWN_SUBSCRIPTION_ID,
        Self::TELEMETRY_TOO_LARGE,
        Self::INVALID_REGISTRATION,
        Self::TRANSACTION_ABORTABLE,
        Self::INVALID_RECORD_STATE,
        Self::SHARE_SESSION_NOT_FOUND,
        Self::INVALID_SHARE_SESSION_EPOCH,
        Self::FENCED_STATE_EPOCH,
        Self::INVALID_VOTER_KEY,
        Self::DUPLICATE_VOTER,
        Self::VOTER_NOT_FOUND,
        Self::INVALID_REGULAR_EXPRESSION,
        Self::REBOOTSTRAP_REQUIRED,
        Self::STREAMS_INVALID_TOPOLOGY,
        Self::STREAMS_INVALID_TOPOLOGY_EPOCH,
        Self::STREAMS_TOPOLOGY_FENCED,
        Self::SHARE_SESSION_LIMIT_REACHED,
    ];

    /// Kafka's enum name for this code, or `None` if the code is unknown.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            -1 => "UNKNOWN_SERVER_ERROR",
            0 => "NONE",
            1 => "OFFSET_OUT_OF_RANGE",
            2 => "CORRUPT_MESSAGE",
            3 => "UNKNOWN_TOPIC_OR_PARTITION",
            4 => "INVALID_FETCH_SIZE",
            5 => "LEADER_NOT_AVAILABLE",
            6 => "NOT_LEADER_OR_FOLLOWER",
            7 => "REQUEST_TIMED_OUT",
            8 => "BROKER_NOT_AVAILABLE",
            9 => "REPLICA_NOT_AVAILABLE",
            10 => "MESSAGE_TOO_LARGE",
            11 => "STALE_CONTROLLER_EPOCH",
            12 => "OFFSET_METADATA_TOO_LARGE",
            13 => "NETWORK_EXCEPTION",
            14 => "COORDINATOR_LOAD_IN_PROGRESS",
            15 => "COORDINATOR_NOT_AVAILABLE",
            16 => "NOT_COORDINATOR",
            17 => "INVALID_TOPIC_EXCEPTION",
            18 => "RECORD_LIST_TOO_LARGE",
            19 => "NOT_ENOUGH_REPLICAS",
            20 => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            21 => "INVALID_REQUIRED_ACKS",
            22 => "ILLEGAL_GENERATION",
            23 => "INCONSISTENT_GROUP_PROTOCOL",
            24 => "INVALID_GROUP_ID",
            25 => "UNKNOWN_MEMBER_ID",
            26 => "INVALID_SESSION_TIMEOUT",
            27 => "REBALANCE_IN_PROGRESS",
            28 => "INVALID_COMMIT_OFFSET_SIZE",
            29 => "TOPIC_AUTHORIZATION_FAILED",
            30 => "GROUP_AUTHORIZATION_FAILED",
            31 => "CLUSTER_AUTHORIZATION_FAILED",
            32 => "INVALID_TIMESTAMP",
            33 => "UNSUPPORTED_SASL_MECHANISM",
            34 => "ILLEGAL_SASL_STATE",
            35 => "UNSUPPORTED_VERSION",
            36 => "TOPIC_ALREADY_EXISTS",
            37 => "INVALID_PARTITIONS",
            38 => "INVALID_REPLICATION_FACTOR",
            39 => "INVALID_REPLICA_ASSIGNMENT",
            40 => "INVALID_CONFIG",
            41 => "NOT_CONTROLLER",
            42 => "INVALID_REQUEST",
            43 => "UNSUPPORTED_FOR_MESSAGE_FORMAT",
            44 => "POLICY_VIOLATION",
            45 => "OUT_OF_ORDER_SEQUENCE_NUMBER",
            46 => "DUPLICATE_SEQUENCE_NUMBER",
            47 => "INVALID_PRODUCER_EPOCH",
            48 => "INVALID_TXN_STATE",
            49 => "INVALID_PRODUCER_ID_MAPPING",
            50 => "INVALID_TRANSACTION_TIMEOUT",
            51 => "CONCURRENT_TRANSACTIONS",
            52 => "TRANSACTION_COORDINATOR_FENCED",
            53 => "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
            54 => "SECURITY_DISABLED",
            55 => "OPERATION_NOT_ATTEMPTED",
            56 => "KAFKA_STORAGE_ERROR",
            57 => "LOG_DIR_NOT_FOUND",
            58 => "SASL_AUTHENTICATION_FAILED",
            59 => "UNKNOWN_PRODUCER_ID",
            60 => "REASSIGNMENT_IN_PROGRESS",
            61 => "DELEGATION_TOKEN_AUTH_DISABLED",
            62 => "DELEGATION_TOKEN_NOT_FOUND",
            63 => "DELEGATION_TOKEN_OWNER_MISMATCH",
            64 => "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
            65 => "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
            66 => "DELEGATION_TOKEN_EXPIRED",
            67 => "INVALID_PRINCIPAL_TYPE",
            68 => "NON_EMPTY_GROUP",
            69 => "GROUP_ID_NOT_FOUND",
            70 => "FETCH_SESSION_ID_NOT_FOUND",
            71 => "INVALID_FETCH_SESSION_EPOCH",
            72 => "LISTENER_NOT_FOUND",
            73 => "TOPIC_DELETION_DISABLED",
            74 => "FENCED_LEADER_EPOCH",
            75 => "UNKNOWN_LEADER_EPOCH",
            76 => "UNSUPPORTED_COMPRESSION_TYPE",
            77 => "STALE_BROKER_EPOCH",
            78 => "OFFSET_NOT_AVAILABLE",
            79 => "MEMBER_ID_REQUIRED",
            80 => "PREFERRED_LEADER_NOT_AVAILABLE",
            81 => "GROUP_MAX_SIZE_REACHED",
            82 => "FENCED_INSTANCE_ID",
            83 => "ELIGIBLE_LEADERS_NOT_AVAILABLE",
            84 => "ELECTION_NOT_NEEDED",
            85 => "NO_REASSIGNMENT_IN_PROGRESS",
            86 => "GROUP_SUBSCRIBED_TO_TOPIC",
            87 => "INVALID_RECORD",
            88 => "UNSTABLE_OFFSET_COMMIT",
            89 => "THROTTLING_QUOTA_EXCEEDED",
            90 => "PRODUCER_FENCED",
            91 => "RESOURCE_NOT_FOUND",
            92 => "DUPLICATE_RESOURCE",
            93 => "UNACCEPTABLE_CREDENTIAL",
            94 => "INCONSISTENT_VOTER_SET",
            95 => "INVALID_UPDATE_VERSION",
            96 => "FEATURE_UPDATE_FAILED",
            97 => "PRINCIPAL_DESERIALIZATION_FAILURE",
            98 => "SNAPSHOT_NOT_FOUND",
            99 => "POSITION_OUT_OF_RANGE",
            100 => "UNKNOWN_TOPIC_ID",
            101 => "DUPLICATE_BROKER_REGISTRATION",
            102 => "BROKER_ID_NOT_REGISTERED",
            103 => "INCONSISTENT_TOPIC_ID",
            104 => "INCONSISTENT_CLUSTER_ID",
            105 => "TRANSACTIONAL_ID_NOT_FOUND",
            106 => "FETCH_SESSION_TOPIC_ID_ERROR",
            107 => "INELIGIBLE_REPLICA",
            108 => "NEW_LEADER_ELECTED",
            109 => "OFFSET_MOVED_TO_TIERED_STORAGE",
            110 => "FENCED_MEMBER_EPOCH",
            111 => "UNRELEASED_INSTANCE_ID",
            112 => "UNSUPPORTED_ASSIGNOR",
            113 => "STALE_MEMBER_EPOCH",
            114 => "MISMATCHED_ENDPOINT_TYPE",
            115 => "UNSUPPORTED_ENDPOINT_TYPE",
            116 => "UNKNOWN_CONTROLLER_ID",
            117 => "UNKNOWN_SUBSCRIPTION_ID",
            118 => "TELEMETRY_TOO_LARGE",
            119 => "INVALID_REGISTRATION",
            120 => "TRANSACTION_ABORTABLE",
            121 => "INVALID_RECORD_STATE",
            122 => "SHARE_SESSION_NOT_FOUND",
            123 => "INVALID_SHARE_SESSION_EPOCH",
            124 => "FENCED_STATE_EPOCH",
            125 => "INVALID_VOTER_KEY",
            126 => "DUPLICATE_VOTER",
            127 => "VOTER_NOT_FOUND",
            128 => "INVALID_REGULAR_EXPRESSION",
            129 => "REBOOTSTRAP_REQUIRED",
            130 => "STREAMS_INVALID_TOPOLOGY",
            131 => "STREAMS_INVALID_TOPOLOGY_EPOCH",
            132 => "STREAMS_TOPOLOGY_FENCED",
            133 => "SHARE_SESSION_LIMIT_REACHED",
            _ => return None,
        })
    }

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
        assert_eq!(ErrorCode::ALL.len(), 135);
        assert_eq!(
            ErrorCode::ALL.first(),
            Some(&ErrorCode::UNKNOWN_SERVER_ERROR)
        );
        assert_eq!(
            ErrorCode::ALL.last(),
            Some(&ErrorCode::SHARE_SESSION_LIMIT_REACHED)
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
        for raw in [-32768, -2, 134, 999, i16::MAX] {
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
