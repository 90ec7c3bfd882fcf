//! The field paths that errors name (`Error::field`, `EncodeError::field`) and the tool and
//! the mutator print: Kafka's schema names, dotted from the message down. Defined once here,
//! so that a path is spelled the same everywhere.

/// The frame's int32 size prefix.
pub const SIZE: &str = "size";
/// The version a response is read or written at (a response does not carry it).
pub const API_VERSION: &str = "api_version";
/// The request as a whole (a limit on the whole message).
pub const REQUEST: &str = "ElectLeadersRequest";
/// The response as a whole.
pub const RESPONSE: &str = "ElectLeadersResponse";
/// Request header: the API key (43).
pub const REQUEST_API_KEY: &str = "RequestHeader.RequestApiKey";
/// Request header: the API version.
pub const REQUEST_API_VERSION: &str = "RequestHeader.RequestApiVersion";
/// Request header: the correlation id.
pub const REQUEST_CORRELATION_ID: &str = "RequestHeader.CorrelationId";
/// Request header: the client id.
pub const CLIENT_ID: &str = "RequestHeader.ClientId";
/// Request header v2: its tagged fields.
pub const REQUEST_HEADER_TAGS: &str = "RequestHeader._tagged_fields";
/// Response header: the correlation id.
pub const RESPONSE_CORRELATION_ID: &str = "ResponseHeader.CorrelationId";
/// Response header v1: its tagged fields.
pub const RESPONSE_HEADER_TAGS: &str = "ResponseHeader._tagged_fields";
/// Request (v1+): the election type.
pub const ELECTION_TYPE: &str = "ElectionType";
/// Request: the topics and partitions to elect for (null: all).
pub const TOPIC_PARTITIONS: &str = "TopicPartitions";
/// Request: a topic's name.
pub const TOPIC: &str = "TopicPartitions.Topic";
/// Request: a topic's partition ids.
pub const PARTITIONS: &str = "TopicPartitions.Partitions";
/// Request (v2): a topic entry's tagged fields.
pub const TOPIC_PARTITIONS_TAGS: &str = "TopicPartitions._tagged_fields";
/// Request: the time to wait for the election.
pub const TIMEOUT_MS: &str = "TimeoutMs";
/// The message's own tagged fields (v2).
pub const TAGS: &str = "_tagged_fields";
/// Response: the throttle time.
pub const THROTTLE_TIME_MS: &str = "ThrottleTimeMs";
/// Response (v1+): the top-level error code.
pub const ERROR_CODE: &str = "ErrorCode";
/// Response: the results per topic.
pub const REPLICA_ELECTION_RESULTS: &str = "ReplicaElectionResults";
/// Response: a result's topic name.
pub const RESULT_TOPIC: &str = "ReplicaElectionResults.Topic";
/// Response: a topic's results per partition.
pub const PARTITION_RESULT: &str = "ReplicaElectionResults.PartitionResult";
/// Response: a partition result's id.
pub const PARTITION_ID: &str = "ReplicaElectionResults.PartitionResult.PartitionId";
/// Response: a partition result's error code.
pub const PARTITION_ERROR_CODE: &str = "ReplicaElectionResults.PartitionResult.ErrorCode";
/// Response: a partition result's error message.
pub const ERROR_MESSAGE: &str = "ReplicaElectionResults.PartitionResult.ErrorMessage";
/// Response (v2): a topic result's tagged fields.
pub const RESULT_TAGS: &str = "ReplicaElectionResults._tagged_fields";
/// Response (v2): a partition result's tagged fields.
pub const PARTITION_RESULT_TAGS: &str = "ReplicaElectionResults.PartitionResult._tagged_fields";
