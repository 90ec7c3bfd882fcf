//! The answer to a refused leadership change: each API's own response, every entry of the
//! request answered `POLICY_VIOLATION` (44), as Kafka's `AbstractRequest.getErrorResponse`
//! answers a request it refuses whole.
//!
//! Written by hand, field by field, for the same reason the requests are read by hand
//! (see `read`): memory. The answer is written straight into the caller's buffer, about
//! the request's size (each entry's name, an error code and, for the first
//! [`MESSAGES`] refused entries, a short message); the other entries carry no message, so
//! that a request of many small entries cannot make the guard write a message per entry.
//! Every layout is checked against `kafka-protocol`'s decoder in the tests.
//!
//! ```text
//! CreateTopics: ThrottleTimeMs i32 (2+), Topics [Name, TopicId uuid (7+), ErrorCode,
//!   ErrorMessage? (1+), NumPartitions i32 (5+), ReplicationFactor i16 (5+), Configs []? (5+)]
//! DeleteTopics: ThrottleTimeMs (1+), Responses [Name (nullable 6+), TopicId (6+), ErrorCode,
//!   ErrorMessage? (5+)]
//! DeleteRecords: ThrottleTimeMs, Topics [Name, Partitions [PartitionIndex, LowWatermark i64,
//!   ErrorCode]] (no message: the audit line has it)
//! AlterConfigs, IncrementalAlterConfigs: ThrottleTimeMs, Responses [ErrorCode, ErrorMessage?,
//!   ResourceType i8, ResourceName]
//! CreatePartitions: ThrottleTimeMs, Results [Name, ErrorCode, ErrorMessage?]
//! AlterPartitionReassignments: ThrottleTimeMs, AllowReplicationFactorChange (1+), ErrorCode,
//!   ErrorMessage?, Responses [Name, Partitions [PartitionIndex, ErrorCode, ErrorMessage?]]
//! UnregisterBroker: ThrottleTimeMs, ErrorCode, ErrorMessage?
//! ```

use bytes::{BufMut, BytesMut};

use super::api::Api;
use super::decision::ChangeDecision;
use super::read::{ChangeRequest, Entry};
use crate::filters::elect::policy::Policy;

/// POLICY_VIOLATION.
pub const POLICY_VIOLATION: i16 = 44;
/// Refused entries whose answer carries a message, at most.
pub const MESSAGES: usize = 64;

/// Appends the whole answer (size prefix included) to `out`, its messages beginning with
/// the default refusal text.
pub fn encode_refusal(request: &ChangeRequest<'_>, decision: &ChangeDecision, out: &mut BytesMut) {
    encode_refusal_with(request, decision, &Policy::default(), out)
}

/// [`encode_refusal`], the messages beginning with `policy`'s refusal text
/// ([`Policy::refusal_text`]).
pub fn encode_refusal_with(
    request: &ChangeRequest<'_>,
    decision: &ChangeDecision,
    policy: &Policy,
    out: &mut BytesMut,
) {
    let start = out.len();
    let flexible = request.version >= request.api.first_flexible();
    let mut w = Writer {
        out,
        flexible,
        messages: MESSAGES,
        policy,
    };
    w.out.put_i32(0); // the size, written at the end
    w.out.put_i32(request.correlation_id);
    if flexible {
        w.out.put_u8(0); // response header v1: no tagged fields
    }
    let v = request.version;
    let message = |i: usize| decision.message(i);
    match request.api {
        Api::CreateTopics => {
            if v >= 2 {
                w.out.put_i32(0);
            }
            w.array(request.entries.len());
            for (i, entry) in request.entries.iter().enumerate() {
                w.string(entry.name.unwrap_or_default());
                if v >= 7 {
                    w.out.put_slice(&[0; 16]);
                }
                w.out.put_i16(POLICY_VIOLATION);
                if v >= 1 {
                    w.message(message(i));
                }
                if v >= 5 {
                    w.out.put_i32(-1);
                    w.out.put_i16(-1);
                    w.array(0);
                }
                w.struct_end();
            }
        }
        Api::DeleteTopics => {
            if v >= 1 {
                w.out.put_i32(0);
            }
            w.array(request.entries.len());
            for (i, entry) in request.entries.iter().enumerate() {
                if v >= 6 {
                    w.nullable_string(entry.name);
                    w.out.put_slice(&entry.topic_id);
                } else {
                    w.string(entry.name.unwrap_or_default());
                }
                w.out.put_i16(POLICY_VIOLATION);
                if v >= 5 {
                    w.message(message(i));
                }
                w.struct_end();
            }
        }
        Api::DeleteRecords => {
            w.out.put_i32(0);
            w.array(request.entries.len());
            for entry in &request.entries {
                w.string(entry.name.unwrap_or_default());
                w.array(entry.partitions.len());
                for &partition in &entry.partitions {
                    w.out.put_i32(partition);
                    w.out.put_i64(-1); // no low watermark: nothing was deleted
                    w.out.put_i16(POLICY_VIOLATION);
                    w.struct_end();
                }
                w.struct_end();
            }
        }
        Api::AlterConfigs | Api::IncrementalAlterConfigs => {
            w.out.put_i32(0);
            w.array(request.entries.len());
            for (i, entry) in request.entries.iter().enumerate() {
                w.out.put_i16(POLICY_VIOLATION);
                w.message(message(i));
                w.out.put_i8(entry.resource_type);
                w.string(entry.name.unwrap_or_default());
                w.struct_end();
            }
        }
        Api::CreatePartitions => {
            w.out.put_i32(0);
            w.array(request.entries.len());
            for (i, entry) in request.entries.iter().enumerate() {
                w.string(entry.name.unwrap_or_default());
                w.out.put_i16(POLICY_VIOLATION);
                w.message(message(i));
                w.struct_end();
            }
        }
        Api::AlterPartitionReassignments => {
            w.out.put_i32(0);
            if v >= 1 {
                w.out
                    .put_u8(u8::from(request.allow_replication_factor_change));
            }
            w.out.put_i16(POLICY_VIOLATION);
            w.message(decision.first_message());
            w.array(request.entries.len());
            for (i, entry) in request.entries.iter().enumerate() {
                reassigned_topic(&mut w, entry, message(i));
            }
        }
        Api::UnregisterBroker => {
            w.out.put_i32(0);
            w.out.put_i16(POLICY_VIOLATION);
            w.message(decision.first_message());
        }
    }
    if flexible {
        w.out.put_u8(0);
    }
    let size = w.out.len() - start - 4;
    let size = i32::try_from(size).unwrap_or(i32::MAX);
    w.out[start..start + 4].copy_from_slice(&size.to_be_bytes());
}

fn reassigned_topic(w: &mut Writer<'_>, entry: &Entry<'_>, message: Option<&str>) {
    w.string(entry.name.unwrap_or_default());
    w.array(entry.partitions.len());
    for (j, &partition) in entry.partitions.iter().enumerate() {
        w.out.put_i32(partition);
        w.out.put_i16(POLICY_VIOLATION);
        // The topic's message on its first partition only.
        w.message(if j == 0 { message } else { None });
        w.struct_end();
    }
    w.struct_end();
}

struct Writer<'o> {
    out: &'o mut BytesMut,
    flexible: bool,
    /// Messages still to be written; past them, entries carry none.
    messages: usize,
    /// Whose refusal text the messages begin with.
    policy: &'o Policy,
}

impl Writer<'_> {
    fn array(&mut self, n: usize) {
        if self.flexible {
            self.uvarint(n as u64 + 1);
        } else {
            self.out.put_i32(i32::try_from(n).unwrap_or(i32::MAX));
        }
    }

    fn uvarint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.out.put_u8((n as u8) | 0x80);
            n >>= 7;
        }
        self.out.put_u8(n as u8);
    }

    fn string(&mut self, s: &[u8]) {
        // Names come from the request, where they were at most 32767 bytes.
        if self.flexible {
            self.uvarint(s.len() as u64 + 1);
        } else {
            self.out.put_i16(i16::try_from(s.len()).unwrap_or(i16::MAX));
        }
        self.out.put_slice(s);
    }

    fn nullable_string(&mut self, s: Option<&[u8]>) {
        match s {
            Some(s) => self.string(s),
            None if self.flexible => self.out.put_u8(0),
            None => self.out.put_i16(-1),
        }
    }

    fn message(&mut self, message: Option<&str>) {
        let message = message.filter(|_| self.messages > 0);
        if message.is_some() {
            self.messages -= 1;
        }
        let message = message.map(|m| self.policy.refusal_message(m));
        self.nullable_string(message.as_deref().map(str::as_bytes));
    }

    fn struct_end(&mut self) {
        if self.flexible {
            self.out.put_u8(0);
        }
    }
}
