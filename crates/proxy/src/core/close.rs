//! Why the guard closed a connection: the message for its log line, and the kind the
//! metrics count ([`CloseReason`]). Apart from the connection's pump so that the metrics
//! and the server name closes without reaching into it.

use std::fmt;

use kafka_elect_leaders::{CodecError, Error, ErrorKind};

/// Why a connection was closed by the proxy.
#[derive(Debug)]
pub struct Close {
    reason: CloseReason,
    message: String,
}

/// A connection's end, by kind: what the metrics count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed it (or reset it).
    Client,
    /// No frame either way within the idle timeout.
    Idle,
    /// A frame not whole within the frame timeout, or an answer owed that was late.
    Timeout,
    /// A malformed frame from either side.
    Malformed,
    /// The broker closed it, or could not be reached or written to.
    Upstream,
    /// The guard stopped.
    Stop,
    /// A request the guard never forwards (an API only brokers and controllers send, a
    /// key it has no decision for): refused by the policy, not malformed.
    Refused,
    /// Anything else (a refusal that could not be encoded, ...).
    Error,
}

impl CloseReason {
    /// Every reason, for what lists them (the metrics' label values).
    pub const ALL: [CloseReason; 8] = [
        CloseReason::Client,
        CloseReason::Idle,
        CloseReason::Timeout,
        CloseReason::Malformed,
        CloseReason::Upstream,
        CloseReason::Stop,
        CloseReason::Refused,
        CloseReason::Error,
    ];

    /// The reason as the metrics and the diagnostics name it (`client`, `idle`...).
    pub fn name(self) -> &'static str {
        match self {
            CloseReason::Client => "client",
            CloseReason::Idle => "idle",
            CloseReason::Timeout => "timeout",
            CloseReason::Malformed => "malformed",
            CloseReason::Upstream => "upstream",
            CloseReason::Stop => "stop",
            CloseReason::Refused => "refused",
            CloseReason::Error => "error",
        }
    }
}

impl fmt::Display for Close {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Close {
    pub(crate) fn new(what: impl Into<String>) -> Close {
        Close::of(CloseReason::Error, what)
    }

    pub(crate) fn of(reason: CloseReason, what: impl Into<String>) -> Close {
        Close {
            reason,
            message: what.into(),
        }
    }

    /// What kind of end this is.
    pub fn reason(&self) -> CloseReason {
        self.reason
    }

    pub(crate) fn client_read(e: CodecError) -> Close {
        match e {
            CodecError::Frame(e) => Close::of(
                CloseReason::Malformed,
                format!("malformed frame from the client: {e}"),
            ),
            e => Close::of(CloseReason::Client, format!("reading the client: {e}")),
        }
    }

    pub(crate) fn upstream_read(e: CodecError) -> Close {
        match e {
            // What `decode_eof` says of a stream that ended inside a frame.
            CodecError::Frame(Error {
                kind: ErrorKind::UnexpectedEnd { needed },
                ..
            }) => Close::of(
                CloseReason::Upstream,
                format!("the broker closed the connection inside a frame ({needed} bytes missing)"),
            ),
            CodecError::Frame(e) => Close::of(
                CloseReason::Malformed,
                format!("malformed frame from the broker: {e}"),
            ),
            e => Close::of(CloseReason::Upstream, format!("reading the broker: {e}")),
        }
    }

    pub(crate) fn write(to: &str) -> impl Fn(CodecError) -> Close + '_ {
        let reason = if to == "client" {
            CloseReason::Client
        } else {
            CloseReason::Upstream
        };
        move |e| Close::of(reason, format!("writing to the {to}: {e}"))
    }
}
