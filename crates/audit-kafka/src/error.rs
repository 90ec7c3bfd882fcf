//! What can go wrong, for the producer and the reader alike. librdkafka's own reasons are
//! kept as text (they are what an operator needs), with any password cut out of them.

use std::fmt;
use std::time::Duration;

use crate::event::EventError;

/// Why a record was not delivered, or a client not made, or a topic not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The settings cannot work (what is wrong with them).
    Settings(&'static str),
    /// librdkafka refused the configuration or could not start a client (its reason).
    Client(String),
    /// The audit line cannot be made into an event.
    Event(EventError),
    /// No room for the event: [`Settings::max_buffered_bytes`](crate::Settings) of
    /// events wait for the broker already. In batch mode the record is counted
    /// ([`Stats::undelivered`](crate::Stats)) and the next event that fits says so.
    Full,
    /// Blocking-strict mode: the broker did not acknowledge the record within the
    /// deadline. The guard refuses the decision this record was about.
    Deadline(Duration),
    /// The broker did not acknowledge the record: librdkafka gave up (its reason: the
    /// delivery timeout passed, the topic does not exist, authorization failed...).
    Delivery(String),
    /// The producer was closed before the record's fate was known.
    Closed,
    /// Reading the topic failed (librdkafka's reason, or what did not arrive in time).
    Read(String),
}

impl Error {
    /// librdkafka's error as text, any password in it replaced by `***`. Its
    /// configuration errors quote the value refused: never the password's, which it accepts
    /// whatever it is, but the text is cleaned all the same.
    pub(crate) fn from_kafka(
        wrap: fn(String) -> Error,
        error: &rdkafka::error::KafkaError,
        secret: Option<&str>,
    ) -> Error {
        wrap(redact(error.to_string(), secret))
    }
}

/// `text` with every occurrence of `secret` replaced by `***`.
pub(crate) fn redact(text: String, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() && text.contains(secret) => text.replace(secret, "***"),
        _ => text,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Settings(why) => write!(f, "audit to Kafka: bad settings: {why}"),
            Error::Client(why) => write!(f, "audit to Kafka: cannot start the client: {why}"),
            Error::Event(why) => write!(f, "audit to Kafka: {why}"),
            Error::Full => {
                f.write_str("audit to Kafka: the buffer of records waiting for the broker is full")
            }
            Error::Deadline(deadline) => write!(
                f,
                "audit to Kafka: the broker did not acknowledge the audit record within {} ms",
                deadline.as_millis()
            ),
            Error::Delivery(why) => {
                write!(f, "audit to Kafka: the record was not delivered: {why}")
            }
            Error::Closed => f.write_str("audit to Kafka: the producer was closed"),
            Error::Read(why) => write!(f, "audit to Kafka: reading the topic failed: {why}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<EventError> for Error {
    fn from(e: EventError) -> Error {
        Error::Event(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_cuts_the_secret_out() {
        assert_eq!(
            redact("bad value s3cret for x".into(), Some("s3cret")),
            "bad value *** for x"
        );
        assert_eq!(redact("nothing".into(), Some("")), "nothing");
        assert_eq!(redact("nothing".into(), None), "nothing");
    }
}
