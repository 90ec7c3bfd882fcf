//! JSON objects as the library's writer reads them: each object is checked field by
//! field (a misspelt key, a wrong type or a value out of range is an error naming its path)
//! and handed to the writer through its source traits (`EncodeRequest`, `EncodeResponse`),
//! the lists packed as they were read ([`super::packed`]).

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeError, EncodeReplicaElectionResult, EncodeRequest,
    EncodeResponse, EncodeTopicPartitions, ErrorCode, API_KEY,
};
use std::borrow::Cow;

use serde_json::{Map, Value};

use super::packed::{Packed, Record, Tags};

use crate::hex::from_hex;
use crate::versions;

pub(super) const REQUEST_KEYS: &[&str] = &[
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
pub(super) const RESPONSE_KEYS: &[&str] = &[
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
pub(super) const PARTITION_KEYS: &[&str] = &[
    "partition_id",
    "error_code",
    "error_name",
    "error_message",
    "tagged_fields",
];

/// What a list of a message (`topic_partitions`, `replica_election_results`) held when it
/// was an array, read element by element: packed, or the first refusal in it.
pub(super) type ListRead = Result<Packed, String>;

/// Tag lists read item by item: each list's key and what it held. Its member in the
/// object's `Value` is then an empty array.
pub(super) type TagLists = [(String, Result<Tags, String>)];

/// One message to one frame. `value` is the object's members but for its list, which was
/// read element by element into `list` (its member in `value` then an empty array), and
/// its tag lists, in `tags`. A list that is null, missing or not an array is in `value`
/// as it was given, and `list` is `None`.
pub(super) fn encode_message(
    value: &Value,
    tags: &TagLists,
    list: Option<ListRead>,
) -> Result<Vec<u8>, String> {
    let Some(map) = value.as_object() else {
        return Err(format!("expected a JSON object, got {}", brief(value)));
    };
    match map.get("kind") {
        Some(Value::String(kind)) if kind == "request" => encode_request(value, tags, list),
        Some(Value::String(kind)) if kind == "response" => encode_response(value, tags, list),
        Some(other) => Err(format!(
            "kind: expected \"request\" or \"response\", got {}",
            brief(other)
        )),
        None => Err("kind: missing (\"request\" or \"response\")".into()),
    }
}

fn encode_request(
    value: &Value,
    tags: &TagLists,
    list: Option<ListRead>,
) -> Result<Vec<u8>, String> {
    let obj = Obj::with_tags(value, tags, String::new(), REQUEST_KEYS)?;
    let version = obj.version()?;
    obj.api()?;
    let client_id = obj.bytes("client_id", true)?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let election_type = obj.int_or_name("election_type", "an int8", "PREFERRED, UNCLEAN", |n| {
        ElectionType::from_name(n).map(|e| e.0)
    })?;
    let topics = match obj.array("topic_partitions", true)? {
        None => Some(Packed::default()),
        Some(None) => None,
        Some(Some(_)) => Some(list.unwrap_or_else(|| Ok(Packed::default()))?),
    };
    let timeout_ms = obj.int::<i32>("timeout_ms", "an int32")?;
    let body_tags = obj.tagged("tagged_fields")?;
    let defaults = ElectLeadersRequestData::default();
    let source = RequestSource {
        correlation_id: obj.int::<i32>("correlation_id", "an int32")?.unwrap_or(0),
        client_id: match &client_id {
            None => defaults.client_id,
            Some(id) => id.as_deref(),
        },
        header_tags: &header_tags,
        election_type: election_type.map_or(defaults.election_type, ElectionType),
        topics: topics.as_ref(),
        timeout_ms: timeout_ms.unwrap_or(defaults.timeout_ms),
        body_tags: &body_tags,
    };
    let len = source.encoded_len(version).map_err(refusal)?;
    let mut frame = vec![0u8; len];
    source
        .encode_exact(version, len, &mut frame)
        .map_err(refusal)?;
    Ok(frame)
}

/// A request read from JSON, as the writer reads it.
struct RequestSource<'a> {
    correlation_id: i32,
    client_id: Option<&'a [u8]>,
    header_tags: &'a Tags,
    election_type: ElectionType,
    topics: Option<&'a Packed>,
    timeout_ms: i32,
    body_tags: &'a Tags,
}

impl EncodeRequest for RequestSource<'_> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn client_id(&self) -> Option<&[u8]> {
        self.client_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(self.header_tags)
    }
    fn election_type(&self) -> ElectionType {
        self.election_type
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        self.topics.map(Packed::topics)
    }
    fn timeout_ms(&self) -> i32 {
        self.timeout_ms
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(self.body_tags)
    }
}

fn encode_response(
    value: &Value,
    tags: &TagLists,
    list: Option<ListRead>,
) -> Result<Vec<u8>, String> {
    let obj = Obj::with_tags(value, tags, String::new(), RESPONSE_KEYS)?;
    let version = obj.version()?;
    obj.api()?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let results = match obj.array("replica_election_results", false)? {
        Some(Some(_)) => list.unwrap_or_else(|| Ok(Packed::default()))?,
        _ => Packed::default(),
    };
    let body_tags = obj.tagged("tagged_fields")?;
    let source = ResponseSource {
        correlation_id: obj.int("correlation_id", "an int32")?.unwrap_or(0),
        header_tags: &header_tags,
        throttle_time_ms: obj.int("throttle_time_ms", "an int32")?.unwrap_or(0),
        error_code: ErrorCode(obj.error_code()?.unwrap_or(0)),
        results: &results,
        body_tags: &body_tags,
    };
    let len = source.encoded_len(version).map_err(refusal)?;
    let mut frame = vec![0u8; len];
    source
        .encode_exact(version, len, &mut frame)
        .map_err(refusal)?;
    Ok(frame)
}

/// A response read from JSON, as the writer reads it.
struct ResponseSource<'a> {
    correlation_id: i32,
    header_tags: &'a Tags,
    throttle_time_ms: i32,
    error_code: ErrorCode,
    results: &'a Packed,
    body_tags: &'a Tags,
}

fn tags_of(tags: &Tags) -> impl Iterator<Item = (u32, &[u8])> + '_ {
    tags.iter()
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
        self.results.results()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(self.body_tags)
    }
}

// The elements of the lists, each checked and packed as it is read. An element that holds
// a list of its own (a topic's `partitions`, a result's `partition_result`) is packed in
// three steps: `Packed::begin`, each item of the inner list (`pack_partition`,
// `pack_partition_result`), then `end_element` with the element's other
// members. The first refusal ends the list: it is what `encode` reports, once the rest of
// the object is known to be JSON.

/// One partition of a request topic (`path` names it in a refusal).
pub(super) fn pack_partition(
    out: &mut Packed,
    item: &Value,
    path: impl FnOnce() -> String,
) -> Result<(), String> {
    match item.as_i64().and_then(|n| i32::try_from(n).ok()) {
        Some(partition) => {
            out.partition(partition);
            Ok(())
        }
        None => int_value::<i32>(item, &path(), "an int32").map(drop),
    }
}

/// One partition result of a response result, its tag lists in `tags`.
pub(super) fn pack_partition_result(
    out: &mut Packed,
    item: &Value,
    tags: &TagLists,
    path: String,
) -> Result<(), String> {
    let p = Obj::with_tags(item, tags, path, PARTITION_KEYS)?;
    let partition_id = p.int("partition_id", "an int32")?.unwrap_or(0);
    let error_code = p.error_code()?.unwrap_or(0);
    let message = p.bytes("error_message", true)?.flatten();
    let tags = p.tagged("tagged_fields")?;
    out.partition_result(partition_id, error_code, message.as_deref(), &tags);
    Ok(())
}

/// Ends a request topic, or a response result: `entry` is the element as given, but for
/// its inner list (`partitions`, `partition_result`) when that was an array, packed
/// already (`items`: how many, or the first refusal among them) and an empty array in
/// `entry`. A refused element is dropped.
pub(super) fn end_element(
    out: &mut Packed,
    record: Record,
    response: bool,
    (entry, tags): (&Value, &TagLists),
    path: String,
    items: Result<u32, String>,
) -> Result<(), String> {
    let (keys, list) = match response {
        true => (RESULT_KEYS, "partition_result"),
        false => (TOPIC_KEYS, "partitions"),
    };
    let checked = (|| {
        let entry = Obj::with_tags(entry, tags, path, keys)?;
        let items = match entry.array(list, false)? {
            Some(Some(_)) => items?,
            _ => 0,
        };
        let topic = entry.bytes("topic", false)?.flatten().unwrap_or_default();
        let tags = entry.tagged("tagged_fields")?;
        Ok((items, topic, tags))
    })();
    match checked {
        Ok((items, topic, tags)) => {
            out.end(record, items, &topic, &tags);
            Ok(())
        }
        Err(e) => {
            out.drop_record(record);
            Err(e)
        }
    }
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
    /// Its tag lists read item by item.
    tags: &'v TagLists,
    path: String,
}

impl<'v> Obj<'v> {
    /// Checks that `value` is an object whose keys are all in `allowed`: a misspelt key
    /// is an error, not a field silently left at its default.
    pub(super) fn new(value: &'v Value, path: String, allowed: &[&str]) -> Result<Self, String> {
        Self::with_tags(value, &[], path, allowed)
    }

    /// [`Obj::new`] of an object whose tag lists were read item by item, into `tags`.
    pub(super) fn with_tags(
        value: &'v Value,
        tags: &'v TagLists,
        path: String,
        allowed: &[&str],
    ) -> Result<Self, String> {
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
        Ok(Obj { map, tags, path })
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
    fn tagged(&self, key: &str) -> Result<Cow<'v, Tags>, String> {
        let Some(Some((items, path))) = self.array(key, true)? else {
            return Ok(Cow::Owned(Tags::default()));
        };
        if let Some((_, read)) = self.tags.iter().rev().find(|(k, _)| k == key) {
            return read.as_ref().map(Cow::Borrowed).map_err(Clone::clone);
        }
        let mut tags = Tags::default();
        for (i, item) in items.iter().enumerate() {
            push_tag(&mut tags, item, format!("{path}[{i}]"))?;
        }
        Ok(Cow::Owned(tags))
    }
}

/// One tagged field, `{"tag":N,"data":"<hex>"}` (`path` names it), added to `tags`.
pub(super) fn push_tag(tags: &mut Tags, item: &Value, path: String) -> Result<(), String> {
    let field = Obj::new(item, path, &["tag", "data"])?;
    let tag = field
        .int::<u32>("tag", "a uint32")?
        .ok_or_else(|| format!("{}: missing", field.path("tag")))?;
    match field.map.get("data") {
        None => tags.push(tag, &[]),
        Some(Value::String(hex)) => {
            let data = from_hex(hex).map_err(|e| format!("{}: {e}", field.path("data")))?;
            tags.push(tag, &data);
        }
        Some(other) => {
            return Err(format!(
                "{}: expected a hex string, got {}",
                field.path("data"),
                brief(other)
            ))
        }
    }
    Ok(())
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
