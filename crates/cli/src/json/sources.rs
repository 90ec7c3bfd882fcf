//! JSON objects as the library's writer reads them: each object is checked field by
//! field (a misspelt key, a wrong type or a value out of range is an error naming its path)
//! and handed over as borrowed data (`ElectLeadersRequestData`) or as an `EncodeResponse`
//! source over the owned values.

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeError, EncodePartitionResult,
    EncodeReplicaElectionResult, EncodeRequest, EncodeResponse, ErrorCode, TaggedFieldData,
    TopicPartitionsData, API_KEY,
};
use serde_json::{Map, Value};

use crate::input::from_hex;
use crate::versions;

const REQUEST_KEYS: &[&str] = &[
    "kind",
    "api_key",
    "api_name",
    "api_version",
    "correlation_id",
    "client_id",
    "header_tagged_fields",
    "election_type",
    "topic_partitions",
    "timeout_ms",
    "tagged_fields",
];
pub(super) const TOPIC_KEYS: &[&str] = &["topic", "partitions", "tagged_fields"];
const RESPONSE_KEYS: &[&str] = &[
    "kind",
    "api_key",
    "api_name",
    "api_version",
    "correlation_id",
    "header_tagged_fields",
    "throttle_time_ms",
    "error_code",
    "error_name",
    "replica_election_results",
    "tagged_fields",
];
pub(super) const RESULT_KEYS: &[&str] = &["topic", "partition_result", "tagged_fields"];
const PARTITION_KEYS: &[&str] = &[
    "partition_id",
    "error_code",
    "error_name",
    "error_message",
    "tagged_fields",
];

/// One JSON object to one frame.
pub fn encode_value(value: &Value) -> Result<Vec<u8>, String> {
    let Some(map) = value.as_object() else {
        return Err(format!("expected a JSON object, got {}", brief(value)));
    };
    match map.get("kind") {
        Some(Value::String(kind)) if kind == "request" => encode_request(value, None),
        Some(Value::String(kind)) if kind == "response" => encode_response(value, None),
        Some(other) => Err(format!(
            "kind: expected \"request\" or \"response\", got {}",
            brief(other)
        )),
        None => Err("kind: missing (\"request\" or \"response\")".into()),
    }
}

/// An owned tagged field, read from JSON.
type Tag = (u32, Vec<u8>);

fn tag_data(tags: &[Tag]) -> Vec<TaggedFieldData<'_>> {
    tags.iter()
        .map(|(tag, data)| TaggedFieldData::new(*tag, data))
        .collect()
}

pub(super) struct TopicJson {
    topic: Vec<u8>,
    partitions: Vec<i32>,
    tags: Vec<Tag>,
}

/// `topics`: the `topic_partitions` array already read piece by piece (a large value, see
/// [`super::large`]), or the error it holds; `None` to read it from `value`.
pub(super) fn encode_request(value: &Value, topics: Option<TopicsRead>) -> Result<Vec<u8>, String> {
    let obj = Obj::new(value, String::new(), REQUEST_KEYS)?;
    let version = obj.version()?;
    obj.api()?;
    let client_id = obj.bytes("client_id", true)?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let election_type = obj.int_or_name("election_type", "an int8", "PREFERRED, UNCLEAN", |n| {
        ElectionType::from_name(n).map(|e| e.0)
    })?;
    let topics = match topics {
        Some(read) => read?,
        None => request_topics(&obj)?,
    };
    let timeout_ms = obj.int::<i32>("timeout_ms", "an int32")?;
    let body_tags = obj.tagged("tagged_fields")?;
    encode_request_data(
        &obj,
        version,
        client_id,
        header_tags,
        election_type,
        topics,
        body_tags,
        timeout_ms,
    )
}

/// What `topic_partitions` holds: `None` when null.
pub(super) type TopicsRead = Result<Option<Vec<TopicJson>>, String>;

fn request_topics(obj: &Obj<'_>) -> TopicsRead {
    Ok(match obj.array("topic_partitions", true)? {
        None => Some(Vec::new()),
        Some(None) => None,
        Some(Some((items, path))) => {
            let mut topics = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let entry = Obj::new(item, format!("{path}[{i}]"), TOPIC_KEYS)?;
                let partitions = match entry.array("partitions", false)? {
                    Some(Some((items, path))) => items
                        .iter()
                        .enumerate()
                        .map(|(j, p)| int_value::<i32>(p, &format!("{path}[{j}]"), "an int32"))
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => Vec::new(),
                };
                topics.push(topic_json(&entry, partitions)?);
            }
            Some(topics)
        }
    })
}

/// A topic of a request, its partitions read.
pub(super) fn topic_json(entry: &Obj<'_>, partitions: Vec<i32>) -> Result<TopicJson, String> {
    Ok(TopicJson {
        topic: entry.bytes("topic", false)?.flatten().unwrap_or_default(),
        partitions,
        tags: entry.tagged("tagged_fields")?,
    })
}

#[allow(clippy::too_many_arguments)]
fn encode_request_data(
    obj: &Obj<'_>,
    version: i16,
    client_id: Option<Option<Vec<u8>>>,
    header_tags: Vec<Tag>,
    election_type: Option<i8>,
    topics: Option<Vec<TopicJson>>,
    body_tags: Vec<Tag>,
    timeout_ms: Option<i32>,
) -> Result<Vec<u8>, String> {
    let defaults = ElectLeadersRequestData::default();

    let header_tag_data = tag_data(&header_tags);
    let body_tag_data = tag_data(&body_tags);
    let topic_tag_data: Vec<Vec<TaggedFieldData<'_>>> = topics
        .iter()
        .flatten()
        .map(|topic| tag_data(&topic.tags))
        .collect();
    let topic_data: Vec<TopicPartitionsData<'_>> = topics
        .iter()
        .flatten()
        .zip(&topic_tag_data)
        .map(|(topic, tags)| TopicPartitionsData {
            topic: &topic.topic,
            partitions: &topic.partitions,
            tagged_fields: tags,
        })
        .collect();
    let data = ElectLeadersRequestData {
        correlation_id: obj.int::<i32>("correlation_id", "an int32")?.unwrap_or(0),
        client_id: match &client_id {
            None => defaults.client_id,
            Some(id) => id.as_deref(),
        },
        header_tagged_fields: &header_tag_data,
        election_type: election_type.map_or(defaults.election_type, ElectionType),
        topic_partitions: topics.as_ref().map(|_| &topic_data[..]),
        timeout_ms: timeout_ms.unwrap_or(defaults.timeout_ms),
        tagged_fields: &body_tag_data,
    };
    let len = data.encoded_len(version).map_err(refusal)?;
    let mut frame = vec![0u8; len];
    data.encode(version, &mut frame).map_err(refusal)?;
    Ok(frame)
}

pub(super) struct PartitionJson {
    partition_id: i32,
    error_code: i16,
    error_message: Option<Vec<u8>>,
    tags: Vec<Tag>,
}

pub(super) struct ResultJson {
    topic: Vec<u8>,
    partitions: Vec<PartitionJson>,
    tags: Vec<Tag>,
}

/// `results`: the `replica_election_results` array already read piece by piece (a large
/// value, see [`super::large`]), or the error it holds; `None` to read it from `value`.
pub(super) fn encode_response(
    value: &Value,
    results: Option<Result<Vec<ResultJson>, String>>,
) -> Result<Vec<u8>, String> {
    let obj = Obj::new(value, String::new(), RESPONSE_KEYS)?;
    let version = obj.version()?;
    obj.api()?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let results = match results {
        Some(read) => read?,
        None => {
            let mut results = Vec::new();
            if let Some(Some((items, path))) = obj.array("replica_election_results", false)? {
                for (i, item) in items.iter().enumerate() {
                    let entry = Obj::new(item, format!("{path}[{i}]"), RESULT_KEYS)?;
                    let mut partitions = Vec::new();
                    if let Some(Some((items, path))) = entry.array("partition_result", false)? {
                        for (j, item) in items.iter().enumerate() {
                            partitions.push(partition_json(item, format!("{path}[{j}]"))?);
                        }
                    }
                    results.push(result_json(&entry, partitions)?);
                }
            }
            results
        }
    };
    let body_tags = obj.tagged("tagged_fields")?;

    // The writer reads the owned values themselves: nothing a partition is built again.
    let data = ResponseSource {
        correlation_id: obj.int("correlation_id", "an int32")?.unwrap_or(0),
        header_tags: &header_tags,
        throttle_time_ms: obj.int("throttle_time_ms", "an int32")?.unwrap_or(0),
        error_code: ErrorCode(obj.error_code()?.unwrap_or(0)),
        results: &results,
        body_tags: &body_tags,
    };
    let len = data.encoded_len(version).map_err(refusal)?;
    let mut frame = vec![0u8; len];
    data.encode(version, &mut frame).map_err(refusal)?;
    Ok(frame)
}

/// A response read from JSON, as the writer reads it.
struct ResponseSource<'a> {
    correlation_id: i32,
    header_tags: &'a [Tag],
    throttle_time_ms: i32,
    error_code: ErrorCode,
    results: &'a [ResultJson],
    body_tags: &'a [Tag],
}

fn tags_of(tags: &[Tag]) -> impl Iterator<Item = (u32, &[u8])> + '_ {
    tags.iter().map(|(tag, data)| (*tag, &data[..]))
}

impl EncodeResponse for ResponseSource<'_> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(self.header_tags)
    }
    fn throttle_time_ms(&self) -> i32 {
        self.throttle_time_ms
    }
    fn error_code(&self) -> ErrorCode {
        self.error_code
    }
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_ {
        self.results.iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(self.body_tags)
    }
}

impl EncodeReplicaElectionResult for &ResultJson {
    fn topic(&self) -> &[u8] {
        &self.topic
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        self.partitions.iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(&self.tags)
    }
}

impl EncodePartitionResult for &PartitionJson {
    fn partition_id(&self) -> i32 {
        self.partition_id
    }
    fn error_code(&self) -> ErrorCode {
        ErrorCode(self.error_code)
    }
    fn error_message(&self) -> Option<&[u8]> {
        self.error_message.as_deref()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(&self.tags)
    }
}

/// One partition result of a response.
pub(super) fn partition_json(item: &Value, path: String) -> Result<PartitionJson, String> {
    let p = Obj::new(item, path, PARTITION_KEYS)?;
    Ok(PartitionJson {
        partition_id: p.int("partition_id", "an int32")?.unwrap_or(0),
        error_code: p.error_code()?.unwrap_or(0),
        error_message: p.bytes("error_message", true)?.flatten(),
        tags: p.tagged("tagged_fields")?,
    })
}

/// A result of a response, its partitions read.
pub(super) fn result_json(
    entry: &Obj<'_>,
    partitions: Vec<PartitionJson>,
) -> Result<ResultJson, String> {
    Ok(ResultJson {
        topic: entry.bytes("topic", false)?.flatten().unwrap_or_default(),
        partitions,
        tags: entry.tagged("tagged_fields")?,
    })
}

/// The writer's refusal, naming the JSON field and the schema's.
fn refusal(e: EncodeError) -> String {
    let json = match e.field {
        "api_version" => "api_version",
        "RequestHeader.ClientId" => "client_id",
        "RequestHeader._tagged_fields" | "ResponseHeader._tagged_fields" => "header_tagged_fields",
        "ElectionType" => "election_type",
        "TopicPartitions" => "topic_partitions",
        "TopicPartitions.Topic" => "topic_partitions[].topic",
        "TopicPartitions.Partitions" => "topic_partitions[].partitions",
        "TopicPartitions._tagged_fields" => "topic_partitions[].tagged_fields",
        "ErrorCode" => "error_code",
        "ReplicaElectionResults" => "replica_election_results",
        "ReplicaElectionResults.Topic" => "replica_election_results[].topic",
        "ReplicaElectionResults.PartitionResult" => "replica_election_results[].partition_result",
        "ReplicaElectionResults._tagged_fields" => "replica_election_results[].tagged_fields",
        "ReplicaElectionResults.PartitionResult.ErrorMessage" => {
            "replica_election_results[].partition_result[].error_message"
        }
        "ReplicaElectionResults.PartitionResult._tagged_fields" => {
            "replica_election_results[].partition_result[].tagged_fields"
        }
        "_tagged_fields" => "tagged_fields",
        other => other,
    };
    if json == e.field {
        format!("{}: {}", e.field, e.kind)
    } else {
        format!("{json} ({}): {}", e.field, e.kind)
    }
}

/// A JSON object being read, with its path for messages (`topic_partitions[1]`).
pub(super) struct Obj<'v> {
    map: &'v Map<String, Value>,
    path: String,
}

impl<'v> Obj<'v> {
    /// Checks that `value` is an object whose keys are all in `allowed`: a misspelt key
    /// is an error, not a field silently left at its default.
    pub(super) fn new(value: &'v Value, path: String, allowed: &[&str]) -> Result<Self, String> {
        let Some(map) = value.as_object() else {
            return Err(format!(
                "{}: expected a JSON object, got {}",
                if path.is_empty() { "message" } else { &path },
                brief(value)
            ));
        };
        if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            let at = if path.is_empty() {
                String::new()
            } else {
                format!(" in {path}")
            };
            return Err(format!(
                "unknown field \"{key}\"{at} (expected one of: {})",
                allowed.join(", ")
            ));
        }
        Ok(Obj { map, path })
    }

    pub(super) fn path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// `api_version`: required, so `encode` knows the version.
    fn version(&self) -> Result<i16, String> {
        match self.int::<i16>("api_version", "an int16")? {
            Some(version) => Ok(version),
            None => Err(format!("api_version: missing ({})", versions::list())),
        }
    }

    /// An integer field, `None` when missing.
    fn int<T: TryFrom<i64>>(&self, key: &str, ty: &str) -> Result<Option<T>, String> {
        self.map
            .get(key)
            .map(|v| int_value(v, &self.path(key), ty))
            .transpose()
    }

    /// An integer field that may also be given by name (`"UNCLEAN"`): `from_name` reads
    /// the name; `names` says what names there are, for messages.
    fn int_or_name<T: TryFrom<i64>>(
        &self,
        key: &str,
        ty: &str,
        names: &str,
        from_name: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, String> {
        match self.map.get(key) {
            Some(Value::String(name)) => from_name(name).map(Some).ok_or_else(|| {
                format!(
                    "{}: unknown name \"{name}\" (expected {ty} or one of Kafka's names: \
                     {names})",
                    self.path(key)
                )
            }),
            _ => self.int(key, ty),
        }
    }

    /// `api_key` and `api_name`, which `decode` prints on every object: when given, they
    /// must name ElectLeaders.
    fn api(&self) -> Result<(), String> {
        if let Some(api_key) = self.int::<i16>("api_key", "an int16")? {
            if api_key != API_KEY {
                return Err(format!(
                    "api_key: expected 43 (ElectLeaders), got {api_key}"
                ));
            }
        }
        match self.map.get("api_name") {
            None => Ok(()),
            Some(Value::String(name)) if name == "ElectLeaders" => Ok(()),
            Some(other) => Err(format!(
                "api_name: expected \"ElectLeaders\", got {}",
                brief(other)
            )),
        }
    }

    /// `error_code`: an int16 or the name of a Kafka error code (`"NOT_CONTROLLER"`).
    /// `error_name`, which `decode` prints beside it, must then be its name (`null` for a
    /// code Kafka does not name); alone, it gives the code.
    fn error_code(&self) -> Result<Option<i16>, String> {
        let code = self.int_or_name(
            "error_code",
            "an int16",
            "NONE, NOT_CONTROLLER, ELECTION_NOT_NEEDED, ...",
            |n| ErrorCode::from_name(n).map(|c| c.0),
        )?;
        let path = self.path("error_name");
        let name = match self.map.get("error_name") {
            None => return Ok(code),
            Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.as_str()),
            Some(other) => {
                return Err(format!(
                    "{path}: expected a Kafka error name or null, got {}",
                    brief(other)
                ))
            }
        };
        match (code, name) {
            (Some(code), name) if ErrorCode(code).name() == name => Ok(Some(code)),
            (Some(code), _) => Err(format!(
                "{path}: {} does not name error_code {code} ({})",
                name.map_or_else(|| "null".to_owned(), |n| format!("\"{n}\"")),
                ErrorCode(code)
                    .name()
                    .unwrap_or("a code Kafka does not name")
            )),
            (None, Some(name)) => match ErrorCode::from_name(name) {
                Some(code) => Ok(Some(code.0)),
                None => Err(format!("{path}: unknown name \"{name}\"")),
            },
            (None, None) => Err(format!(
                "{path}: null says the code has no name: give error_code"
            )),
        }
    }

    /// A byte string: `None` missing, `Some(None)` null (when `nullable`), else the bytes
    /// of a JSON string or of `{"hex":"..."}`.
    fn bytes(&self, key: &str, nullable: bool) -> Result<Option<Option<Vec<u8>>>, String> {
        let path = self.path(key);
        let Some(value) = self.map.get(key) else {
            return Ok(None);
        };
        match value {
            Value::Null if nullable => Ok(Some(None)),
            Value::Null => Err(format!("{path}: null, but the field is not nullable")),
            Value::String(s) => Ok(Some(Some(s.as_bytes().to_vec()))),
            Value::Object(map) if map.len() == 1 => match map.get("hex") {
                Some(Value::String(hex)) => from_hex(hex)
                    .map(|b| Some(Some(b)))
                    .map_err(|e| format!("{path}.hex: {e}")),
                _ => Err(format!(
                    "{path}: expected a string or {{\"hex\":\"...\"}}, got {}",
                    brief(value)
                )),
            },
            _ => Err(format!(
                "{path}: expected a string or {{\"hex\":\"...\"}}, got {}",
                brief(value)
            )),
        }
    }

    /// An array: `None` missing, `Some(None)` null (when `nullable`), else the items and
    /// the array's path.
    #[allow(clippy::type_complexity)]
    pub(super) fn array(
        &self,
        key: &str,
        nullable: bool,
    ) -> Result<Option<Option<(&'v Vec<Value>, String)>>, String> {
        let path = self.path(key);
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Null) if nullable => Ok(Some(None)),
            Some(Value::Null) => Err(format!("{path}: null, but the field is not nullable")),
            Some(Value::Array(items)) => Ok(Some(Some((items, path)))),
            Some(other) => Err(format!("{path}: expected an array, got {}", brief(other))),
        }
    }

    /// Tagged fields: `[{"tag":N,"data":"<hex>"}, …]`; missing or null is none.
    fn tagged(&self, key: &str) -> Result<Vec<Tag>, String> {
        let Some(Some((items, path))) = self.array(key, true)? else {
            return Ok(Vec::new());
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let field = Obj::new(item, format!("{path}[{i}]"), &["tag", "data"])?;
                let tag = field
                    .int::<u32>("tag", "a uint32")?
                    .ok_or_else(|| format!("{}: missing", field.path("tag")))?;
                let data = match field.map.get("data") {
                    None => Vec::new(),
                    Some(Value::String(hex)) => {
                        from_hex(hex).map_err(|e| format!("{}: {e}", field.path("data")))?
                    }
                    Some(other) => {
                        return Err(format!(
                            "{}: expected a hex string, got {}",
                            field.path("data"),
                            brief(other)
                        ))
                    }
                };
                Ok((tag, data))
            })
            .collect()
    }
}

/// An integer that must fit `T` (`ty` names it in messages: "an int32").
pub(super) fn int_value<T: TryFrom<i64>>(value: &Value, path: &str, ty: &str) -> Result<T, String> {
    value
        .as_i64()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("{path}: expected {ty}, got {}", brief(value)))
}

/// A value, shortened for a message.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        let short: String = text.chars().take(37).collect();
        format!("{short}...")
    } else {
        text
    }
}
