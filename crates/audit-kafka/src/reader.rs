//! The audit topic read back, for `elect-leaders audit verify`: every record of every
//! partition from the beginning to the end it had when the reading started, in order within
//! each partition, without joining a consumer group and without committing an offset.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use crate::error::Error;
use crate::settings::Connection;

/// One record of the topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its partition.
    pub partition: i32,
    /// Its offset in the partition.
    pub offset: i64,
    /// Its key (the replica, for the events of this crate).
    pub key: Option<Vec<u8>>,
    /// Its value (the event).
    pub value: Option<Vec<u8>>,
}

/// Bytes librdkafka prefetches at most, over all partitions: what the reader holds
/// besides the record it hands out.
const PREFETCH_KBYTES: &str = "8192";

/// Reads a topic from its start offsets to the end offsets it had when opened. An
/// iterator of records, each partition's in offset order; partitions interleave as their
/// records arrive. Memory is bounded by librdkafka's prefetch (8 MiB), whatever the
/// topic's size.
pub struct TopicReader {
    consumer: BaseConsumer,
    /// Per partition still to read: the offset after the last record to read.
    left: BTreeMap<i32, i64>,
    /// Per partition: (start, end) when opened.
    bounds: BTreeMap<i32, (i64, i64)>,
    /// How long to wait for the next record before giving up.
    idle_timeout: Duration,
    secret: Option<String>,
    failed: bool,
}

impl std::fmt::Debug for TopicReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopicReader")
            .field("bounds", &self.bounds)
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

impl TopicReader {
    /// Finds the topic's partitions and their start and end offsets (each question
    /// bounded by `timeout`, which also bounds the wait for any next record), and starts
    /// reading. Blocks: call it off a runtime's workers (`spawn_blocking`).
    pub fn open(
        connection: &Connection,
        topic: &str,
        timeout: Duration,
    ) -> Result<TopicReader, Error> {
        connection.check()?;
        let secret = connection.secret().map(str::to_owned);
        let fail = |e: KafkaError| Error::from_kafka(Error::Read, &e, secret.as_deref());
        let mut config: ClientConfig = connection.client_config();
        config
            // librdkafka assigns partitions only to a consumer with a group id; this one
            // never joins its group (no subscribe) and never commits an offset to it.
            .set("group.id", "elect-leaders-audit-reader")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", "true")
            .set("isolation.level", "read_uncommitted")
            .set("queued.max.messages.kbytes", PREFETCH_KBYTES)
            .set("fetch.max.bytes", "4194304")
            .set("max.partition.fetch.bytes", "1048576");
        let consumer: BaseConsumer = config.create().map_err(fail)?;
        let metadata = consumer
            .fetch_metadata(Some(topic), timeout)
            .map_err(fail)?;
        let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) else {
            return Err(Error::Read(format!(
                "the cluster did not describe topic {topic}"
            )));
        };
        if let Some(error) = found.error() {
            let code = RDKafkaErrorCode::from(error);
            return Err(Error::Read(format!("topic {topic}: {code}")));
        }
        let mut bounds = BTreeMap::new();
        let mut assignment = TopicPartitionList::new();
        let mut left = BTreeMap::new();
        for partition in found.partitions() {
            let id = partition.id();
            let (start, end) = consumer
                .fetch_watermarks(topic, id, timeout)
                .map_err(fail)?;
            bounds.insert(id, (start, end));
            if end > start {
                left.insert(id, end);
                assignment
                    .add_partition_offset(topic, id, Offset::Offset(start))
                    .map_err(fail)?;
            }
        }
        consumer.assign(&assignment).map_err(fail)?;
        Ok(TopicReader {
            consumer,
            left,
            bounds,
            idle_timeout: timeout,
            secret,
            failed: false,
        })
    }

    /// Each partition's (start, end) offsets when the reader was opened: the records read
    /// are those from start to end - 1.
    pub fn bounds(&self) -> &BTreeMap<i32, (i64, i64)> {
        &self.bounds
    }

    /// Marks `partition` read up to `next` (the offset after the last record seen).
    fn reached(&mut self, partition: i32, next: i64) {
        if self.left.get(&partition).is_some_and(|&end| next >= end) {
            self.left.remove(&partition);
        }
    }
}

impl Iterator for TopicReader {
    type Item = Result<Record, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut last_progress = Instant::now();
        while !self.left.is_empty() && !self.failed {
            if last_progress.elapsed() >= self.idle_timeout {
                self.failed = true;
                return Some(Err(Error::Read(format!(
                    "no record for {} ms; partitions not read to their end: {:?}",
                    self.idle_timeout.as_millis(),
                    self.left.keys().collect::<Vec<_>>()
                ))));
            }
            let polled = match self.consumer.poll(Duration::from_millis(100)) {
                None => continue,
                Some(Err(KafkaError::PartitionEOF(partition))) => Err(partition),
                Some(Err(error)) => {
                    self.failed = true;
                    return Some(Err(Error::from_kafka(
                        Error::Read,
                        &error,
                        self.secret.as_deref(),
                    )));
                }
                Some(Ok(message)) => Ok(Record {
                    partition: message.partition(),
                    offset: message.offset(),
                    key: message.key().map(<[u8]>::to_vec),
                    value: message.payload().map(<[u8]>::to_vec),
                }),
            };
            last_progress = Instant::now();
            match polled {
                // At the partition's end as the broker has it now: past the end captured.
                Err(partition) => {
                    self.left.remove(&partition);
                }
                Ok(record) => {
                    let Some(&end) = self.left.get(&record.partition) else {
                        continue;
                    };
                    if record.offset >= end {
                        self.left.remove(&record.partition);
                        continue;
                    }
                    self.reached(record.partition, record.offset + 1);
                    return Some(Ok(record));
                }
            }
        }
        None
    }
}
