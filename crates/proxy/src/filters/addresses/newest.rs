//! The newest version of each answer that carries addresses the rewrite reads.

use super::rewrite::{DESCRIBE_CLUSTER, FIND_COORDINATOR, METADATA};
use super::shapes;

/// The newest version of `api_key` whose answer the rewrite reads, for every answer that
/// carries addresses: an answer of a newer version would be forwarded with its addresses
/// unread, so the broker's ApiVersions answer is capped to it (`crate::filters::api_versions::cap`) and a
/// client negotiates down instead of being led around the guard. The kafka-protocol
/// crate's newest for the lists it decodes, the known shapes' for the others.
pub fn newest_rewritten(api_key: i16) -> Option<i16> {
    use kafka_protocol::messages::{
        DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse,
    };
    use kafka_protocol::protocol::Message;
    match api_key {
        METADATA => Some(MetadataResponse::VERSIONS.max),
        FIND_COORDINATOR => Some(FindCoordinatorResponse::VERSIONS.max),
        DESCRIBE_CLUSTER => Some(DescribeClusterResponse::VERSIONS.max),
        _ => shapes::newest_shape(api_key),
    }
}
