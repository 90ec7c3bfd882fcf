//! Encoding ElectLeaders requests: the [`EncodeRequest`] source trait, plain data, the
//! parsed view, and edits of the view.

use super::error::{EncodeError, EncodeErrorKind};
use super::sink::{self, Emit, Sink, Vx};
use super::tagged::TaggedFieldData;
use crate::election_type::ElectionType;
use crate::request::{ElectLeadersRequest, TopicPartitions};
use crate::version;

use crate::field::CLIENT_ID as FIELD_CLIENT_ID;
use crate::field::ELECTION_TYPE as FIELD_ELECTION_TYPE;
use crate::field::PARTITIONS as FIELD_PARTITIONS;
use crate::field::REQUEST_HEADER_TAGS as FIELD_HEADER_TAGS;
use crate::field::TAGS as FIELD_TAGS;
use crate::field::TOPIC as FIELD_TOPIC;
use crate::field::TOPIC_PARTITIONS as FIELD_TOPIC_PARTITIONS;
use crate::field::TOPIC_PARTITIONS_TAGS as FIELD_ENTRY_TAGS;

/// The contents of an ElectLeaders request, as the writer reads them; `encoded_len` and
/// `encode` come with it.
///
/// Implemented by [`ElectLeadersRequestData`] (plain borrowed data), by the parsed
/// [`ElectLeadersRequest`] and by [`RequestEdit`]. Implement it on your own type to encode
/// from your own storage; every list method may be called more than once per encode and
/// must give the same items each time.
///
/// An application's own election plan, encoded without copying it into
/// [`ElectLeadersRequestData`] first:
///
/// ```
/// use std::collections::BTreeMap;
/// use kafka_elect_leaders::{
///     parse_request, ElectionType, EncodeError, EncodeRequest, EncodeTopicPartitions,
/// };
///
/// struct Plan {
///     correlation_id: i32,
///     unclean: bool,
///     partitions: BTreeMap<String, Vec<i32>>,
/// }
///
/// /// One topic of a plan, as the writer reads it.
/// struct Topic<'p>(&'p str, &'p [i32]);
///
/// impl EncodeTopicPartitions for Topic<'_> {
///     fn topic(&self) -> &[u8] {
///         self.0.as_bytes()
///     }
///     fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
///         self.1.iter().copied()
///     }
///     fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
///         std::iter::empty()
///     }
/// }
///
/// impl EncodeRequest for Plan {
///     fn correlation_id(&self) -> i32 {
///         self.correlation_id
///     }
///     fn client_id(&self) -> Option<&[u8]> {
///         Some(b"planner")
///     }
///     fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
///         std::iter::empty()
///     }
///     fn election_type(&self) -> ElectionType {
///         if self.unclean { ElectionType::UNCLEAN } else { ElectionType::PREFERRED }
///     }
///     fn topic_partitions(
///         &self,
///     ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
///         // Called twice per encode (measure, then write): the same items each time.
///         Some(self.partitions.iter().map(|(topic, ids)| Topic(topic, ids)))
///     }
///     fn timeout_ms(&self) -> i32 {
///         30_000
///     }
///     fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
///         std::iter::empty()
///     }
/// }
///
/// let plan = Plan {
///     correlation_id: 1,
///     unclean: true,
///     partitions: BTreeMap::from([
///         ("orders".to_owned(), vec![0, 2]),
///         ("audit".to_owned(), vec![1]),
///     ]),
/// };
/// let mut buf = vec![0u8; plan.encoded_len(1).unwrap()];
/// plan.encode(1, &mut buf).unwrap();
/// let request = parse_request(&buf).unwrap();
/// assert_eq!(request.election_type(), ElectionType::UNCLEAN);
/// let topics: Vec<&[u8]> = request
///     .topic_partitions()
///     .unwrap()
///     .iter()
///     .map(|t| t.topic())
///     .collect();
/// assert_eq!(topics, [&b"audit"[..], b"orders"]);
///
/// // Version 0 has no ElectionType: an unclean election cannot be asked for there.
/// let refused: EncodeError = plan.encode(0, &mut buf).unwrap_err();
/// assert_eq!(refused.field, "ElectionType");
/// ```
pub trait EncodeRequest {
    /// The header's `CorrelationId`.
    fn correlation_id(&self) -> i32;
    /// The header's `ClientId` (`None`: null).
    fn client_id(&self) -> Option<&[u8]>;
    /// The header's unknown tagged fields, tags ascending (header v2 only).
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_;
    /// `ElectionType`; must be [`ElectionType::PREFERRED`] to encode at version 0.
    fn election_type(&self) -> ElectionType;
    /// `TopicPartitions` (`None`: null, all partitions).
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_>;
    /// `TimeoutMs`.
    fn timeout_ms(&self) -> i32;
    /// The body's unknown tagged fields, tags ascending (version 2 only).
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_;

    /// The exact length of the frame at `version`, size prefix included; or why the
    /// version cannot carry this message.
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError>
    where
        Self: Sized,
    {
        sink::frame_len(&RequestFrame {
            src: self,
            vx: Vx::new(version)?,
        })
    }

    /// Writes the whole frame at `version` into the front of `buf` and returns its length.
    /// If `buf` is too short, writes nothing and returns
    /// [`BufferTooSmall`](EncodeErrorKind::BufferTooSmall).
    fn encode(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError>
    where
        Self: Sized,
    {
        sink::encode_frame(
            &RequestFrame {
                src: self,
                vx: Vx::new(version)?,
            },
            buf,
        )
    }

    /// Writes the whole frame at `version` into the front of `buf` when its length `len`
    /// (size prefix included) is already known, from [`encoded_len`](Self::encoded_len):
    /// nothing is measured again. Returns `len`.
    ///
    /// If `buf` is shorter than `len`, writes nothing and returns
    /// [`BufferTooSmall`](EncodeErrorKind::BufferTooSmall). If the message is not `len`
    /// bytes long, returns [`LengthMismatch`](EncodeErrorKind::LengthMismatch) (measuring it
    /// then, to say how long it is), and the first `len` bytes of `buf` hold a partial
    /// frame. The same checks as [`encode`](Self::encode) refuse what the version cannot
    /// carry.
    fn encode_exact(&self, version: i16, len: usize, buf: &mut [u8]) -> Result<usize, EncodeError>
    where
        Self: Sized,
    {
        sink::encode_frame_exact(
            &RequestFrame {
                src: self,
                vx: Vx::new(version)?,
            },
            len,
            buf,
        )
    }
}

/// One `TopicPartitions` entry, as the writer reads it.
pub trait EncodeTopicPartitions {
    /// `Topic`.
    fn topic(&self) -> &[u8];
    /// `Partitions`.
    fn partitions(&self) -> impl Iterator<Item = i32> + '_;
    /// `Partitions` as they are on the wire (big-endian, 4 bytes each), when the source
    /// holds them that way, as a parsed view does: the writer then copies them in one go and
    /// does not call [`partitions`](Self::partitions). The default is `None`.
    fn partitions_wire(&self) -> Option<&[u8]> {
        None
    }
    /// Unknown tagged fields, tags ascending (version 2 only).
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_;
}

pub(crate) struct RequestFrame<'s, R> {
    pub(crate) src: &'s R,
    pub(crate) vx: Vx,
}

impl<R: EncodeRequest> Emit for RequestFrame<'_, R> {
    #[inline(always)]
    fn emit<S: Sink>(&self, s: &mut S) -> Result<(), EncodeError> {
        let (src, vx) = (self.src, self.vx);
        // Request header v1 or v2. ClientId keeps its int16 length in both.
        s.i16(version::API_KEY);
        s.i16(vx.version);
        s.i32(src.correlation_id());
        sink::string(s, false, src.client_id(), FIELD_CLIENT_ID)?;
        sink::tagged_fields(s, vx, || src.header_tagged_fields(), FIELD_HEADER_TAGS)?;
        // Body.
        let election_type = src.election_type();
        if version::has_election_type(vx.version) {
            s.i8(election_type.0);
        } else if election_type != ElectionType::PREFERRED {
            return Err(EncodeError::new(
                EncodeErrorKind::NonDefaultValue {
                    version: vx.version,
                },
                FIELD_ELECTION_TYPE,
            ));
        }
        sink::list(
            s,
            vx.flexible,
            || src.topic_partitions(),
            FIELD_TOPIC_PARTITIONS,
            |s, entry| {
                sink::string(s, vx.flexible, Some(entry.topic()), FIELD_TOPIC)?;
                match entry.partitions_wire() {
                    Some(wire) => sink::int32_array_wire(s, vx.flexible, wire, FIELD_PARTITIONS)?,
                    None => {
                        sink::int32_array(s, vx.flexible, || entry.partitions(), FIELD_PARTITIONS)?
                    }
                }
                sink::tagged_fields(s, vx, || entry.tagged_fields(), FIELD_ENTRY_TAGS)
            },
        )?;
        s.i32(src.timeout_ms());
        sink::tagged_fields(s, vx, || src.tagged_fields(), FIELD_TAGS)
    }
}

/// An ElectLeaders request as plain borrowed data, ready to encode.
///
/// `Default` gives Kafka's defaults: preferred election, `TimeoutMs` 60000, an empty (not
/// null) topic list, an empty client id, correlation id 0.
///
/// ```
/// use kafka_elect_leaders::{ElectLeadersRequestData, EncodeRequest, TopicPartitionsData};
///
/// let topics = [TopicPartitionsData::new(b"orders", &[0, 1, 2])];
/// let request = ElectLeadersRequestData {
///     correlation_id: 7,
///     client_id: Some(b"admin"),
///     topic_partitions: Some(&topics),
///     ..Default::default()
/// };
/// let mut buf = [0u8; 64];
/// let len = request.encode(2, &mut buf).unwrap();
/// assert_eq!(len, request.encoded_len(2).unwrap());
/// let parsed = kafka_elect_leaders::parse_request(&buf[..len]).unwrap();
/// assert_eq!(parsed.timeout_ms(), 60000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElectLeadersRequestData<'a> {
    /// The header's `CorrelationId`.
    pub correlation_id: i32,
    /// The header's `ClientId` (`None`: null).
    pub client_id: Option<&'a [u8]>,
    /// The header's unknown tagged fields (header v2 only).
    pub header_tagged_fields: &'a [TaggedFieldData<'a>],
    /// `ElectionType` (v1+; must be preferred at v0).
    pub election_type: ElectionType,
    /// `TopicPartitions` (`None`: null, all partitions).
    pub topic_partitions: Option<&'a [TopicPartitionsData<'a>]>,
    /// `TimeoutMs`.
    pub timeout_ms: i32,
    /// The body's unknown tagged fields (v2 only).
    pub tagged_fields: &'a [TaggedFieldData<'a>],
}

/// Kafka's default for `TimeoutMs`.
pub const DEFAULT_TIMEOUT_MS: i32 = 60_000;

impl Default for ElectLeadersRequestData<'_> {
    fn default() -> Self {
        ElectLeadersRequestData {
            correlation_id: 0,
            client_id: Some(b""),
            header_tagged_fields: &[],
            election_type: ElectionType::PREFERRED,
            topic_partitions: Some(&[]),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            tagged_fields: &[],
        }
    }
}

/// One `TopicPartitions` entry as plain borrowed data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TopicPartitionsData<'a> {
    /// `Topic`.
    pub topic: &'a [u8],
    /// `Partitions`.
    pub partitions: &'a [i32],
    /// Unknown tagged fields (v2 only).
    pub tagged_fields: &'a [TaggedFieldData<'a>],
}

impl<'a> TopicPartitionsData<'a> {
    /// An entry with no tagged fields.
    pub const fn new(topic: &'a [u8], partitions: &'a [i32]) -> Self {
        TopicPartitionsData {
            topic,
            partitions,
            tagged_fields: &[],
        }
    }
}

/// Plain tagged fields as the writer reads them.
pub(crate) fn tags<'t>(
    fields: &'t [TaggedFieldData<'_>],
) -> impl Iterator<Item = (u32, &'t [u8])> + 't {
    fields.iter().map(|f| (f.tag, f.data))
}

impl EncodeRequest for ElectLeadersRequestData<'_> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn client_id(&self) -> Option<&[u8]> {
        self.client_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.header_tagged_fields)
    }
    fn election_type(&self) -> ElectionType {
        self.election_type
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        self.topic_partitions.map(|t| t.iter())
    }
    fn timeout_ms(&self) -> i32 {
        self.timeout_ms
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tagged_fields)
    }
}

impl EncodeTopicPartitions for &TopicPartitionsData<'_> {
    fn topic(&self) -> &[u8] {
        self.topic
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        self.partitions.iter().copied()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tagged_fields)
    }
}

pub(crate) fn view_tags<'t>(
    fields: crate::TaggedFields<'t>,
) -> impl Iterator<Item = (u32, &'t [u8])> + 't {
    fields.iter().map(|f| (f.tag(), f.data()))
}

/// Re-emits a parsed request: at its own version, the same values (in canonical form: a
/// frame with non-minimal varints comes out minimal); at another version, whatever that
/// version can carry.
impl EncodeRequest for ElectLeadersRequest<'_> {
    fn correlation_id(&self) -> i32 {
        self.header().correlation_id()
    }
    fn client_id(&self) -> Option<&[u8]> {
        self.header().client_id()
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(self.header().tagged_fields())
    }
    fn election_type(&self) -> ElectionType {
        ElectLeadersRequest::election_type(self)
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        ElectLeadersRequest::topic_partitions(self).map(|l| l.iter())
    }
    fn timeout_ms(&self) -> i32 {
        ElectLeadersRequest::timeout_ms(self)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(ElectLeadersRequest::tagged_fields(self))
    }
}

impl EncodeTopicPartitions for TopicPartitions<'_> {
    fn topic(&self) -> &[u8] {
        TopicPartitions::topic(self)
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        TopicPartitions::partitions(self).iter()
    }
    fn partitions_wire(&self) -> Option<&[u8]> {
        Some(TopicPartitions::partitions(self).as_bytes())
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(TopicPartitions::tagged_fields(self))
    }
}

/// A parsed request with some values changed, or some topics or partitions dropped,
/// encoded without copying the rest. Made by [`ElectLeadersRequest::edit`].
///
/// ```
/// use kafka_elect_leaders::{parse_request, EncodeRequest};
///
/// let frame = std::fs::read("corpus/request-v0.bin").unwrap();
/// let request = parse_request(&frame).unwrap();
/// let edit = request
///     .edit()
///     .correlation_id(99)
///     .retain_topics(|t| t.topic() != b"payments")
///     .retain_partitions(|_topic, p| p != 1);
/// let mut buf = [0u8; 128];
/// let len = edit.encode(request.version(), &mut buf).unwrap();
/// let out = parse_request(&buf[..len]).unwrap();
/// assert_eq!(out.correlation_id(), 99);
/// let topics = out.topic_partitions().unwrap();
/// assert_eq!(topics.len(), 1);
/// assert_eq!(topics.first().unwrap().partitions().iter().collect::<Vec<_>>(), [0, 2]);
/// ```
#[derive(Clone, Copy)]
pub struct RequestEdit<'a, T, P> {
    request: ElectLeadersRequest<'a>,
    correlation_id: i32,
    client_id: Option<&'a [u8]>,
    election_type: ElectionType,
    timeout_ms: i32,
    keep_topic: T,
    keep_partition: P,
}

/// Keeps every topic: the default topic filter of an edit.
pub(crate) type KeepAllTopics = fn(&TopicPartitions<'_>) -> bool;
/// Keeps every partition: the default partition filter of an edit.
pub(crate) type KeepAllPartitions = fn(&[u8], i32) -> bool;

impl<'a> ElectLeadersRequest<'a> {
    /// Starts an edit of this request for re-encoding: change the header or body values,
    /// drop topics or partitions. Nothing is copied.
    pub fn edit(&self) -> RequestEdit<'a, KeepAllTopics, KeepAllPartitions> {
        RequestEdit {
            request: *self,
            correlation_id: self.correlation_id(),
            client_id: self.header().client_id(),
            election_type: self.election_type(),
            timeout_ms: self.timeout_ms(),
            keep_topic: |_| true,
            keep_partition: |_, _| true,
        }
    }
}

impl<'a, T, P> RequestEdit<'a, T, P>
where
    T: Fn(&TopicPartitions<'a>) -> bool,
    P: Fn(&[u8], i32) -> bool,
{
    /// Sets the header's `CorrelationId`.
    pub fn correlation_id(mut self, correlation_id: i32) -> Self {
        self.correlation_id = correlation_id;
        self
    }

    /// Sets the header's `ClientId`.
    pub fn client_id(mut self, client_id: Option<&'a [u8]>) -> Self {
        self.client_id = client_id;
        self
    }

    /// Sets `ElectionType`.
    pub fn election_type(mut self, election_type: ElectionType) -> Self {
        self.election_type = election_type;
        self
    }

    /// Sets `TimeoutMs`.
    pub fn timeout_ms(mut self, timeout_ms: i32) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// Keeps only the topics for which `keep` is true (a null list stays null).
    pub fn retain_topics<T2>(self, keep: T2) -> RequestEdit<'a, T2, P>
    where
        T2: Fn(&TopicPartitions<'a>) -> bool,
    {
        RequestEdit {
            request: self.request,
            correlation_id: self.correlation_id,
            client_id: self.client_id,
            election_type: self.election_type,
            timeout_ms: self.timeout_ms,
            keep_topic: keep,
            keep_partition: self.keep_partition,
        }
    }

    /// Keeps only the partitions for which `keep(topic, partition)` is true.
    pub fn retain_partitions<P2>(self, keep: P2) -> RequestEdit<'a, T, P2>
    where
        P2: Fn(&[u8], i32) -> bool,
    {
        RequestEdit {
            request: self.request,
            correlation_id: self.correlation_id,
            client_id: self.client_id,
            election_type: self.election_type,
            timeout_ms: self.timeout_ms,
            keep_topic: self.keep_topic,
            keep_partition: keep,
        }
    }
}

/// A topic entry of a [`RequestEdit`], with its partition filter.
pub struct EditedTopicPartitions<'e, 'a, P> {
    entry: TopicPartitions<'a>,
    keep_partition: &'e P,
}

impl<'a, P: Fn(&[u8], i32) -> bool> EncodeTopicPartitions for EditedTopicPartitions<'_, 'a, P> {
    fn topic(&self) -> &[u8] {
        self.entry.topic()
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        let topic = self.entry.topic();
        self.entry
            .partitions()
            .iter()
            .filter(move |&p| (self.keep_partition)(topic, p))
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(self.entry.tagged_fields())
    }
}

impl<'a, T, P> EncodeRequest for RequestEdit<'a, T, P>
where
    T: Fn(&TopicPartitions<'a>) -> bool,
    P: Fn(&[u8], i32) -> bool,
{
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn client_id(&self) -> Option<&[u8]> {
        self.client_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(self.request.header().tagged_fields())
    }
    fn election_type(&self) -> ElectionType {
        self.election_type
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        let keep_partition = &self.keep_partition;
        self.request.topic_partitions().map(move |list| {
            list.iter()
                .filter(|entry| (self.keep_topic)(entry))
                .map(move |entry| EditedTopicPartitions {
                    entry,
                    keep_partition,
                })
        })
    }
    fn timeout_ms(&self) -> i32 {
        self.timeout_ms
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(self.request.tagged_fields())
    }
}
