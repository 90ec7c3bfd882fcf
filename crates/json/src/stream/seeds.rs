//! The `DeserializeSeed` visitors that read one message piece by piece: its members as small
//! `Value`s, its list and the lists of that list's elements item by item, each item checked
//! and packed as it is read, the first refusal kept while the rest is still read. Where the
//! bytes come from and how the frame is written are the parent's and `sources`'.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::super::packed::{Packed, Record, Tags, MAX_ITEMS};
use super::super::sources::{self, ListRead, TagLists};

/// A visitor that is its own seed: the value is read whatever its type, and the visitor
/// sees what it is. (Types with a lifetime after the `;`.)
macro_rules! visitor_seed {
    ($($ty:ident),*; $($with:ident),*) => {
        $(impl<'de> DeserializeSeed<'de> for $ty {
            type Value = <$ty as Visitor<'de>>::Value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        })*
        $(impl<'de, 'a> DeserializeSeed<'de> for $with<'a> {
            type Value = <$with<'a> as Visitor<'de>>::Value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        })*
    };
}

visitor_seed!(Small, TagsSeed, MessageSeed; ListSeed, ElementSeed, ItemsSeed, PartitionResultSeed);

/// Any JSON value but an object or an array, as a `Value`: what a visitor does with a
/// value that is not what it reads piece by piece (`$whole` takes it).
macro_rules! scalars_whole {
    ($whole:expr) => {
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok($whole(self, Value::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok($whole(self, Value::from(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok($whole(self, Value::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok($whole(self, Value::from(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($whole(self, Value::String(v.to_owned())))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($whole(self, Value::Null))
        }
    };
}

/// A tag list read item by item: its key and what it held.
type TagList = (String, Result<Tags, String>);

/// How many items of an array, or members of an object, a [`Small`] value keeps.
const SMALL_ITEMS: usize = 40;

/// A value read as a `Value`, for a member that is not a list read piece by piece: a
/// number, a string, `{"hex": ...}`; or a value of the wrong type, which is refused with
/// its start shown. Arrays and objects keep their first [`SMALL_ITEMS`] items at each
/// level (enough to show what a message shows of them), the rest is read and dropped, so
/// that a wrong value costs little whatever its size. Strings are kept whole: they are
/// names and data the frame holds.
struct Small;

fn small_whole(_: Small, value: Value) -> Value {
    value
}

impl<'de> Visitor<'de> for Small {
    type Value = Value;

    scalars_whole!(small_whole);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while items.len() < SMALL_ITEMS {
            match seq.next_element_seed(Small)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.len() < SMALL_ITEMS || members.contains_key(&key) {
                let value = map.next_value_seed(Small)?;
                members.insert(key, value);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Value::Object(members))
    }
}

/// The members of an object as read: each small one as a `Value`, each tag list packed
/// (and an empty array in its place among the members).
#[derive(Default)]
struct Members {
    values: Map<String, Value>,
    tags: Vec<TagList>,
}

impl Members {
    /// Reads the value of `key`, a member of the object at `path` whose keys may be
    /// `allowed`. The value of a key not allowed is not kept: the key alone is refused.
    fn read<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        key: String,
        path: &str,
        allowed: &[&[&str]],
    ) -> Result<(), A::Error> {
        if !allowed.iter().any(|keys| keys.contains(&key.as_str())) {
            map.next_value::<IgnoredAny>()?;
            self.values.insert(key, Value::Null);
            return Ok(());
        }
        if key != "tagged_fields" && key != "header_tagged_fields" {
            let value = map.next_value_seed(Small)?;
            self.values.insert(key, value);
            return Ok(());
        }
        // Given again: the last one counts.
        self.tags.retain(|(k, _)| *k != key);
        let path = match path {
            "" => key.clone(),
            path => format!("{path}.{key}"),
        };
        let value = match map.next_value_seed(TagsSeed { path })? {
            Listed::Items(tags) => {
                self.tags.push((key.clone(), tags));
                Value::Array(Vec::new())
            }
            Listed::Whole(value) => value,
        };
        self.values.insert(key, value);
        Ok(())
    }

    fn value(self) -> (Value, Vec<TagList>) {
        (Value::Object(self.values), self.tags)
    }
}

/// A list as read: an array, item by item, or any other value whole.
enum Listed<T> {
    Items(Result<T, String>),
    Whole(Value),
}

fn listed_whole<S, T>(_: S, value: Value) -> Listed<T> {
    Listed::Whole(value)
}

/// A list of tagged fields, packed as it is read.
struct TagsSeed {
    path: String,
}

impl<'de> Visitor<'de> for TagsSeed {
    type Value = Listed<Tags>;

    scalars_whole!(listed_whole);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Ok(Listed::Whole(Small.visit_map(map)?))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut tags = Tags::default();
        let mut i = 0usize;
        while let Some(item) = seq.next_element_seed(Small)? {
            if let Err(e) = sources::push_tag(&mut tags, &item, format!("{}[{i}]", self.path)) {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(Listed::Items(Err(e)));
            }
            i += 1;
        }
        Ok(Listed::Items(Ok(tags)))
    }
}

/// One message as read: its members (`value`, `tags`), but for its list, which is in
/// `list` (and an empty array in `value`) when it was an array.
pub(super) struct ReadMessage {
    pub(super) value: Value,
    pub(super) tags: Vec<TagList>,
    pub(super) list: Option<ListRead>,
}

pub(super) struct MessageSeed;

fn message_whole(_: MessageSeed, value: Value) -> ReadMessage {
    ReadMessage {
        value,
        tags: Vec::new(),
        list: None,
    }
}

impl<'de> Visitor<'de> for MessageSeed {
    type Value = ReadMessage;

    scalars_whole!(message_whole);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ReadMessage, A::Error> {
        Ok(message_whole(self, Small.visit_seq(seq)?))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReadMessage, A::Error> {
        let mut members = Members::default();
        // The kind is not known before the object's end: either list is read as one.
        let mut topics = None;
        let mut results = None;
        while let Some(key) = map.next_key::<String>()? {
            let (list, response) = match key.as_str() {
                "topic_partitions" => (&mut topics, false),
                "replica_election_results" => (&mut results, true),
                _ => {
                    let allowed = [sources::REQUEST_KEYS, sources::RESPONSE_KEYS];
                    members.read(&mut map, key, "", &allowed)?;
                    continue;
                }
            };
            let seed = ListSeed {
                key: &key,
                response,
            };
            let value = match map.next_value_seed(seed)? {
                Listed::Items(read) => {
                    *list = Some(read);
                    Value::Array(Vec::new())
                }
                Listed::Whole(value) => {
                    *list = None;
                    value
                }
            };
            members.values.insert(key, value);
        }
        let list = match members.values.get("kind") {
            Some(Value::String(kind)) if kind == "response" => results,
            _ => topics,
        };
        let (value, tags) = members.value();
        Ok(ReadMessage { value, tags, list })
    }
}

/// A message's list: its elements checked and packed one by one.
struct ListSeed<'k> {
    key: &'k str,
    response: bool,
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = Listed<Packed>;

    scalars_whole!(listed_whole);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Ok(Listed::Whole(Small.visit_map(map)?))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Packed::default();
        let mut i = 0u32;
        loop {
            if i == MAX_ITEMS {
                return refuse_rest(seq, too_many(self.key));
            }
            let seed = ElementSeed {
                out: &mut out,
                path: format!("{}[{i}]", self.key),
                response: self.response,
            };
            match seq.next_element_seed(seed)? {
                None => return Ok(Listed::Items(Ok(out))),
                Some(Ok(())) => i += 1,
                Some(Err(e)) => return refuse_rest(seq, e),
            }
        }
    }
}

/// A list refused at one of its items: the rest is read (it must still be JSON) and
/// dropped.
fn refuse_rest<'de, A: SeqAccess<'de>, T>(mut seq: A, e: String) -> Result<Listed<T>, A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(Listed::Items(Err(e)))
}

fn too_many(path: &str) -> String {
    format!("{path}: more than {MAX_ITEMS} items, more than a Kafka array can hold")
}

/// One element of a message's list (a request topic, a response result), packed into
/// `out`; `Err` is its refusal.
struct ElementSeed<'a> {
    out: &'a mut Packed,
    path: String,
    response: bool,
}

impl ElementSeed<'_> {
    /// Ends the element: `entry` its members, but for its inner list when that was an
    /// array (`items`: how many were packed, or their first refusal).
    fn end(
        self,
        record: Record,
        entry: (&Value, &TagLists),
        items: Result<u32, String>,
    ) -> Result<(), String> {
        sources::end_element(self.out, record, self.response, entry, self.path, items)
    }
}

fn element_whole(seed: ElementSeed<'_>, value: Value) -> Result<(), String> {
    let record = seed.out.begin();
    seed.end(record, (&value, &[]), Ok(0))
}

impl<'de> Visitor<'de> for ElementSeed<'_> {
    type Value = Result<(), String>;

    scalars_whole!(element_whole);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let value = Small.visit_seq(seq)?;
        Ok(element_whole(self, value))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let record = self.out.begin();
        let (inner, allowed) = match self.response {
            true => ("partition_result", sources::RESULT_KEYS),
            false => ("partitions", sources::TOPIC_KEYS),
        };
        let mut members = Members::default();
        let mut items = Ok(0);
        while let Some(key) = map.next_key::<String>()? {
            if key != inner {
                members.read(&mut map, key, &self.path, &[allowed])?;
                continue;
            }
            // Given again: the last one counts.
            self.out.restart(record);
            let seed = ItemsSeed {
                out: self.out,
                path: &self.path,
                response: self.response,
            };
            let value = match map.next_value_seed(seed)? {
                Listed::Items(packed) => {
                    items = packed;
                    Value::Array(Vec::new())
                }
                Listed::Whole(value) => {
                    items = Ok(0);
                    value
                }
            };
            members.values.insert(key, value);
        }
        let (value, tags) = members.value();
        Ok(self.end(record, (&value, &tags), items))
    }
}

/// The inner list of an element (a topic's partitions, a result's partition results):
/// how many items were packed.
struct ItemsSeed<'a> {
    out: &'a mut Packed,
    /// The element's path.
    path: &'a str,
    response: bool,
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = Listed<u32>;

    scalars_whole!(listed_whole);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Ok(Listed::Whole(Small.visit_map(map)?))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let list = if self.response {
            "partition_result"
        } else {
            "partitions"
        };
        let mut n = 0u32;
        loop {
            if n == MAX_ITEMS {
                return refuse_rest(seq, too_many(&format!("{}.{list}", self.path)));
            }
            let path = || format!("{}.{list}[{n}]", self.path);
            let packed = if self.response {
                let seed = PartitionResultSeed {
                    out: &mut *self.out,
                    path: path(),
                };
                seq.next_element_seed(seed)?
            } else {
                match seq.next_element_seed(Small)? {
                    Some(item) => Some(sources::pack_partition(self.out, &item, path)),
                    None => None,
                }
            };
            match packed {
                None => return Ok(Listed::Items(Ok(n))),
                Some(Ok(())) => n += 1,
                Some(Err(e)) => return refuse_rest(seq, e),
            }
        }
    }
}

/// One partition result, packed into `out`; `Err` is its refusal.
struct PartitionResultSeed<'a> {
    out: &'a mut Packed,
    path: String,
}

fn partition_result_whole(seed: PartitionResultSeed<'_>, value: Value) -> Result<(), String> {
    sources::pack_partition_result(seed.out, &value, &[], seed.path)
}

impl<'de> Visitor<'de> for PartitionResultSeed<'_> {
    type Value = Result<(), String>;

    scalars_whole!(partition_result_whole);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let value = Small.visit_seq(seq)?;
        Ok(partition_result_whole(self, value))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Members::default();
        while let Some(key) = map.next_key::<String>()? {
            members.read(&mut map, key, &self.path, &[sources::PARTITION_KEYS])?;
        }
        let (value, tags) = members.value();
        Ok(sources::pack_partition_result(
            self.out, &value, &tags, self.path,
        ))
    }
}
