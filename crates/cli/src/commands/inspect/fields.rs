//! The fields of ElectLeaders requests and responses as tree nodes, with their byte ranges
//! and the schemas' descriptions.
//!
//! Every byte range comes from the codec: the views' field spans (`api_key_range()`,
//! `timeout_ms_range()`, `count_range()`, `element_range(i)`, …) and `range()`s. No offset
//! is computed here; the wire is read only for what a view does not keep (the exact
//! negative length a null string or array was written with).

use std::ops::Range;

use kafka_elect_leaders::{
    response_header_version, ElectLeadersRequest, ElectLeadersResponse, ElectionType, ErrorCode,
    Int32List, TaggedFields, SIZE_PREFIX_LEN,
};
use kafka_elect_leaders_json::hex::to_hex;

use super::style::Region;
use super::tree::{group, leaf, with_region, Node};

// What the schemas' `about` texts say, shortened to a line.
pub const ABOUT_SIZE: &str = "number of bytes that follow";
pub const ABOUT_FRAME: &str = "length-delimited framing";
pub const ABOUT_API_KEY: &str = "numeric id of the API being invoked";
pub const ABOUT_API_VERSION: &str = "version of the API being invoked";
pub const ABOUT_REQUEST_CORRELATION_ID: &str = "echoed back by the broker in the response";
pub const ABOUT_CLIENT_ID: &str = "always a non-flexible int16-prefixed string";
pub const ABOUT_HEADER_TAGS: &str = "number of tagged fields in the header";
pub const ABOUT_STRUCT_TAGS: &str = "number of tagged fields in this struct";
pub const ABOUT_RESPONSE_CORRELATION_ID: &str = "matches the CorrelationId of the request";
pub const ABOUT_ELECTION_TYPE: &str =
    "Type of elections to conduct: 0 elects the preferred replica, 1 the first live one.";
pub const ABOUT_TOPIC_PARTITIONS: &str = "The topic partitions to elect leaders.";
pub const ABOUT_TOPIC: &str = "The name of a topic.";
pub const ABOUT_PARTITIONS: &str = "The partitions of this topic whose leader should be elected.";
pub const ABOUT_TIMEOUT_MS: &str = "The time in ms to wait for the election to complete.";
pub const ABOUT_THROTTLE: &str = "Time in ms the request was throttled by a quota, or zero.";
pub const ABOUT_TOP_ERROR_CODE: &str = "The top level response error code.";
pub const ABOUT_RESULTS: &str = "The election results, or empty if the requester was not allowed.";
pub const ABOUT_RESULT_TOPIC: &str = "The topic name.";
pub const ABOUT_PARTITION_RESULT: &str = "The results for each partition.";
pub const ABOUT_PARTITION_ID: &str = "The partition id.";
pub const ABOUT_ERROR_CODE: &str = "The result error, or zero if there was no error.";
pub const ABOUT_ERROR_MESSAGE: &str = "The result message, or null if there was no error.";
pub const ABOUT_TAGGED_FIELD: &str = "unknown tagged field, kept as raw bytes";

/// The frame's size prefix.
pub fn frame_node<'a>(size: impl ToString, about: &str) -> Node<'a> {
    with_region(
        group(
            "Frame",
            "",
            None,
            0..SIZE_PREFIX_LEN,
            ABOUT_FRAME,
            vec![leaf("size", "int32", size, 0..SIZE_PREFIX_LEN, about)],
        ),
        Region::Frame,
    )
}

/// How a string is encoded on the wire.
#[derive(Clone, Copy)]
pub enum StrEncoding {
    /// int16 length (classic versions, and the request header's ClientId always).
    Int16,
    /// uvarint length + 1 (flexible versions).
    Compact,
}

impl StrEncoding {
    fn of(flexible: bool) -> StrEncoding {
        if flexible {
            StrEncoding::Compact
        } else {
            StrEncoding::Int16
        }
    }
}

/// A string field's value and its length prefix: `"orders" (compact, len+1=7)`. `span` is
/// the field's, from the codec: for a null int16 string, the length it was written with.
pub fn string_value(
    s: Option<&[u8]>,
    encoding: StrEncoding,
    frame: &[u8],
    span: Range<usize>,
) -> String {
    match (s, encoding) {
        (Some(s), StrEncoding::Int16) => format!("{} (int16 len={})", quoted(s), s.len()),
        (Some(s), StrEncoding::Compact) => {
            format!("{} (compact, len+1={})", quoted(s), s.len() + 1)
        }
        // A null's length is any negative int16: show the one on the wire.
        (None, StrEncoding::Int16) => match frame.get(span) {
            Some(&[a, b]) => format!("null (int16 len={})", i16::from_be_bytes([a, b])),
            _ => "null (int16 len<0)".to_owned(),
        },
        (None, StrEncoding::Compact) => "null (compact, 0)".to_owned(),
    }
}

/// A byte string as text when it is UTF-8 (escaped as Rust does), as hex when not.
pub fn quoted(s: &[u8]) -> String {
    match std::str::from_utf8(s) {
        Ok(text) => format!("{text:?}"),
        Err(_) => format!("hex:{} (not UTF-8)", to_hex(s)),
    }
}

pub fn election_value(e: ElectionType) -> String {
    format!("{} ({})", e.0, e.name().unwrap_or("unknown"))
}

pub fn error_code_value(code: ErrorCode) -> String {
    format!("{} ({})", code.0, code.name().unwrap_or("unknown"))
}

pub fn byte_count(n: usize) -> String {
    match n {
        1 => "1 byte".to_owned(),
        n => format!("{n} bytes"),
    }
}

pub fn elements(n: usize) -> String {
    match n {
        1 => "1 element".to_owned(),
        n => format!("{n} elements"),
    }
}

/// The count prefix of a non-null array.
pub fn length_leaf<'a>(n: usize, flexible: bool, range: Range<usize>) -> Node<'a> {
    let about = match n {
        0 => "no elements follow".to_owned(),
        1 => "1 element follows".to_owned(),
        n => format!("{n} elements follow"),
    };
    if flexible {
        leaf(
            "length",
            "uvarint",
            format!("{} (compact, n+1)", n + 1),
            range,
            &about,
        )
    } else {
        leaf("length", "int32", n, range, &about)
    }
}

/// A null array (request `TopicPartitions`): its count prefix is all there is.
pub fn null_array_node<'a>(
    name: &str,
    ty: &str,
    flexible: bool,
    frame: &[u8],
    range: Range<usize>,
    about: &str,
) -> Node<'a> {
    let length = if flexible {
        leaf(
            "length",
            "uvarint",
            "0 (compact, null)",
            range.clone(),
            "null: all partitions",
        )
    } else {
        let raw = frame
            .get(range.clone())
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(-1, i32::from_be_bytes);
        leaf(
            "length",
            "int32",
            raw,
            range.clone(),
            "null: all partitions",
        )
    };
    group(
        name,
        ty,
        Some("null (all partitions)".to_owned()),
        range,
        about,
        vec![length],
    )
}

/// An `[]int32`: count prefix, then 4 bytes per element.
pub fn int32_list_node<'a>(
    name: &str,
    list: Int32List<'a>,
    flexible: bool,
    about: &str,
) -> Node<'a> {
    let range = list.range();
    let children = vec![length_leaf(list.len(), flexible, list.count_range())];
    let values = list.iter().enumerate().map(move |(j, value)| {
        let at = list.element_range(j).unwrap_or(range.end..range.end);
        leaf(format!("int32[{j}]"), "int32", value, at, "")
    });
    group(
        name,
        "[]int32",
        Some(elements(list.len())),
        range,
        about,
        children,
    )
    .lazy(list.len(), values)
}

/// Tagged fields: the count, as on the reference page, and each unknown field.
pub fn tagged_node<'a>(fields: TaggedFields<'a>, about: &str) -> Node<'a> {
    let range = fields.range();
    if fields.is_empty() {
        return with_region(
            leaf("TaggedFields", "uvarint", 0, range, about),
            Region::Tagged,
        );
    }
    let children = vec![leaf(
        "count",
        "uvarint",
        fields.len(),
        fields.count_range(),
        about,
    )];
    let nodes = fields.iter().enumerate().map(|(i, field)| {
        let data = field.data();
        let shown = if data.is_empty() {
            "empty".to_owned()
        } else if data.len() > 32 {
            format!("{}... ({})", to_hex(&data[..32]), byte_count(data.len()))
        } else {
            format!("{} ({})", to_hex(data), byte_count(data.len()))
        };
        leaf(
            format!("TaggedField[{i}]"),
            &format!("tag {}", field.tag()),
            shown,
            field.range(),
            ABOUT_TAGGED_FIELD,
        )
    });
    let count = match fields.len() {
        1 => "1 field".to_owned(),
        n => format!("{n} fields"),
    };
    with_region(
        group(
            "TaggedFields",
            "tagged_fields",
            Some(count),
            range,
            "count, then tag, size and data of each",
            children,
        )
        .lazy(fields.len(), nodes),
        Region::Tagged,
    )
}

pub fn request_tree<'a>(r: &ElectLeadersRequest<'a>) -> Node<'a> {
    let frame = r.frame();
    let version = r.version();
    let flexible = version >= 2;
    let header = r.header();
    let header_range = header.range();
    let header_tags = header.tagged_fields();
    let client_id = header.client_id_range();
    let mut header_fields = vec![
        leaf(
            "RequestApiKey",
            "int16",
            format!("{} (ElectLeaders)", header.api_key()),
            header.api_key_range(),
            ABOUT_API_KEY,
        ),
        leaf(
            "RequestApiVersion",
            "int16",
            version,
            header.api_version_range(),
            ABOUT_API_VERSION,
        ),
        leaf(
            "CorrelationId",
            "int32",
            header.correlation_id(),
            header.correlation_id_range(),
            ABOUT_REQUEST_CORRELATION_ID,
        ),
        leaf(
            "ClientId",
            "nullable_string",
            string_value(
                header.client_id(),
                StrEncoding::Int16,
                frame,
                client_id.clone(),
            ),
            client_id,
            ABOUT_CLIENT_ID,
        ),
    ];
    if flexible {
        header_fields.push(tagged_node(header_tags, ABOUT_HEADER_TAGS));
    }

    let body = r.body_range();
    let body_tags = r.tagged_fields();
    let mut body_fields = Vec::new();
    if let Some(range) = r.election_type_range() {
        body_fields.push(leaf(
            "ElectionType",
            "int8",
            election_value(r.election_type()),
            range,
            ABOUT_ELECTION_TYPE,
        ));
    }
    body_fields.push(match r.topic_partitions() {
        None => null_array_node(
            "TopicPartitions",
            "[]TopicPartitions",
            flexible,
            frame,
            r.topic_partitions_range(),
            ABOUT_TOPIC_PARTITIONS,
        ),
        Some(list) => {
            let range = list.range();
            let children = vec![length_leaf(list.len(), flexible, list.count_range())];
            let topics = list.iter().enumerate().map(move |(i, entry)| {
                let partitions = entry.partitions();
                let mut fields = vec![
                    leaf(
                        "Topic",
                        "string",
                        string_value(
                            Some(entry.topic()),
                            StrEncoding::of(flexible),
                            frame,
                            entry.topic_range(),
                        ),
                        entry.topic_range(),
                        ABOUT_TOPIC,
                    ),
                    int32_list_node("Partitions", partitions, flexible, ABOUT_PARTITIONS),
                ];
                if flexible {
                    fields.push(tagged_node(entry.tagged_fields(), ABOUT_STRUCT_TAGS));
                }
                group(
                    format!("TopicPartitions[{i}]"),
                    "TopicPartitions",
                    Some("struct".to_owned()),
                    entry.range(),
                    "",
                    fields,
                )
            });
            group(
                "TopicPartitions",
                "[]TopicPartitions",
                Some(elements(list.len())),
                range,
                ABOUT_TOPIC_PARTITIONS,
                children,
            )
            .lazy(list.len(), topics)
        }
    });
    body_fields.push(leaf(
        "TimeoutMs",
        "int32",
        r.timeout_ms(),
        r.timeout_ms_range(),
        ABOUT_TIMEOUT_MS,
    ));
    if flexible {
        body_fields.push(tagged_node(body_tags, ABOUT_STRUCT_TAGS));
    }

    group(
        "ElectLeadersRequest",
        &format!("message v{version}"),
        None,
        0..frame.len(),
        "",
        vec![
            frame_node(r.size(), ABOUT_SIZE),
            with_region(
                group(
                    "RequestHeader",
                    &format!("v{}", header.header_version()),
                    None,
                    header_range,
                    "common request header",
                    header_fields,
                ),
                Region::Header,
            ),
            with_region(
                group(
                    "ElectLeadersRequest",
                    "struct",
                    None,
                    body,
                    &format!("message body, version {version}"),
                    body_fields,
                ),
                Region::Body,
            ),
        ],
    )
}

pub fn response_tree<'a>(r: &ElectLeadersResponse<'a>) -> Node<'a> {
    let frame = r.frame();
    let version = r.version();
    let flexible = version >= 2;
    let encoding = StrEncoding::of(flexible);
    let header = r.header();
    let header_tags = header.tagged_fields();
    let mut header_fields = vec![leaf(
        "CorrelationId",
        "int32",
        header.correlation_id(),
        header.correlation_id_range(),
        ABOUT_RESPONSE_CORRELATION_ID,
    )];
    if flexible {
        header_fields.push(tagged_node(header_tags, ABOUT_HEADER_TAGS));
    }

    let body = r.body_range();
    let mut body_fields = vec![leaf(
        "ThrottleTimeMs",
        "int32",
        r.throttle_time_ms(),
        r.throttle_time_ms_range(),
        ABOUT_THROTTLE,
    )];
    if let Some(range) = r.error_code_range() {
        body_fields.push(leaf(
            "ErrorCode",
            "int16",
            error_code_value(r.error_code()),
            range,
            ABOUT_TOP_ERROR_CODE,
        ));
    }
    let results = r.replica_election_results();
    let range = results.range();
    let children = vec![length_leaf(results.len(), flexible, results.count_range())];
    let result_nodes = results.iter().enumerate().map(move |(i, result)| {
        let partitions = result.partition_result();
        let p_range = partitions.range();
        let p_children = vec![length_leaf(
            partitions.len(),
            flexible,
            partitions.count_range(),
        )];
        let p_nodes = partitions.iter().enumerate().map(move |(j, p)| {
            let tags = p.tagged_fields();
            let message = p.error_message_range();
            let mut fields = vec![
                leaf(
                    "PartitionId",
                    "int32",
                    p.partition_id(),
                    p.partition_id_range(),
                    ABOUT_PARTITION_ID,
                ),
                leaf(
                    "ErrorCode",
                    "int16",
                    error_code_value(p.error_code()),
                    p.error_code_range(),
                    ABOUT_ERROR_CODE,
                ),
                leaf(
                    "ErrorMessage",
                    "string",
                    string_value(p.error_message(), encoding, frame, message.clone()),
                    message,
                    ABOUT_ERROR_MESSAGE,
                ),
            ];
            if flexible {
                fields.push(tagged_node(tags, ABOUT_STRUCT_TAGS));
            }
            group(
                format!("PartitionResult[{j}]"),
                "PartitionResult",
                Some("struct".to_owned()),
                p.range(),
                "",
                fields,
            )
        });
        let mut fields = vec![
            leaf(
                "Topic",
                "string",
                string_value(Some(result.topic()), encoding, frame, result.topic_range()),
                result.topic_range(),
                ABOUT_RESULT_TOPIC,
            ),
            group(
                "PartitionResult",
                "[]PartitionResult",
                Some(elements(partitions.len())),
                p_range,
                ABOUT_PARTITION_RESULT,
                p_children,
            )
            .lazy(partitions.len(), p_nodes),
        ];
        if flexible {
            fields.push(tagged_node(result.tagged_fields(), ABOUT_STRUCT_TAGS));
        }
        group(
            format!("ReplicaElectionResult[{i}]"),
            "ReplicaElectionResult",
            Some("struct".to_owned()),
            result.range(),
            "",
            fields,
        )
    });
    body_fields.push(
        group(
            "ReplicaElectionResults",
            "[]ReplicaElectionResult",
            Some(elements(results.len())),
            range,
            ABOUT_RESULTS,
            children,
        )
        .lazy(results.len(), result_nodes),
    );
    if flexible {
        body_fields.push(tagged_node(r.tagged_fields(), ABOUT_STRUCT_TAGS));
    }

    group(
        "ElectLeadersResponse",
        &format!("message v{version}"),
        None,
        0..frame.len(),
        "",
        vec![
            frame_node(r.size(), ABOUT_SIZE),
            with_region(
                group(
                    "ResponseHeader",
                    &format!("v{}", response_header_version(version)),
                    None,
                    header.range(),
                    "common response header",
                    header_fields,
                ),
                Region::Header,
            ),
            with_region(
                group(
                    "ElectLeadersResponse",
                    "struct",
                    None,
                    body,
                    &format!("message body, version {version}"),
                    body_fields,
                ),
                Region::Body,
            ),
        ],
    )
}
