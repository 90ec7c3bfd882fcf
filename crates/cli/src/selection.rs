//! Which frames `decode` prints, `scan` lists and `summary` counts: `--api`, `--topic`,
//! `--client-id`, `--election-type`, `--errors-only`, `--any-error`, `--connection`.
//!
//! The content filters (topic, client id, errors) look into ElectLeaders frames; frames of
//! other APIs carry none of these as this tool reads them, so with a content filter they
//! are not shown. A response is matched by client id through its request (in a capture,
//! where it is paired): the requests that matched are remembered per connection, only
//! those the capture reader keeps waiting for their responses (so at most as many as its
//! in-flight budget holds).

use std::collections::{HashMap, VecDeque};

use kafka_elect_leaders::{
    api_name, ElectLeadersRequest, ElectLeadersResponse, ElectionType, ErrorCode, API_KEY,
};
use kafka_elect_leaders_capture::summary::Outcome;

use crate::flags::FilterFlags;

/// The filters given, read.
pub struct Selection {
    apis: Option<Vec<i16>>,
    topics: Vec<Vec<u8>>,
    client_ids: Vec<Vec<u8>>,
    errors_only: bool,
    /// `--election-type`: the election types asked for.
    election_types: Vec<ElectionType>,
    /// `--connection`: the connections shown (all when empty).
    connections: Vec<u32>,
    /// With `errors_only`: every error code counts, ELECTION_NOT_NEEDED included
    /// (`--any-error`), not only failures.
    any_error: bool,
    /// Per connection, the frame numbers of the ElectLeaders requests that matched
    /// `--client-id` and wait for their responses, oldest first.
    matched: HashMap<u32, VecDeque<u64>>,
}

/// What a request matched, for [`Selection::pair`].
#[derive(Clone, Copy, Debug)]
pub struct Asked {
    client: bool,
    topic: bool,
}

/// Whether a response reports an error code `counts` (top level or a partition's).
fn reports(r: &ElectLeadersResponse<'_>, counts: impl Fn(ErrorCode) -> bool) -> bool {
    counts(r.error_code())
        || r.replica_election_results()
            .iter()
            .any(|t| t.partition_result().iter().any(|p| counts(p.error_code())))
}

/// Whether an error code is a failure, as the summary counts them: any code but NONE and
/// ELECTION_NOT_NEEDED (the preferred replica leads already: Kafka's
/// `kafka-leader-election.sh` reports it apart, "Valid replica already elected").
pub fn is_failure(code: ErrorCode) -> bool {
    Outcome::of(code) == Outcome::Failed
}

/// Whether a response reports a failure ([`is_failure`]), top level or a partition's.
pub fn has_failure(r: &ElectLeadersResponse<'_>) -> bool {
    reports(r, is_failure)
}

/// Whether a response has an error code other than NONE, top level or a partition's
/// (ELECTION_NOT_NEEDED included).
pub fn has_error(r: &ElectLeadersResponse<'_>) -> bool {
    reports(r, |code| code.is_error())
}

/// `--connection` given for an input that is not a capture: a usage error.
pub fn not_a_capture(command: &'static str, name: &str) -> crate::fail::Failure {
    crate::fail::Failure::usage(
        command,
        format!(
            "{name}: --connection picks the frames of a capture's connection, and this input \
             is not a capture"
        ),
    )
}

/// An election type from `--election-type`: its name (any case) or number.
pub fn election_type_of(name: &str) -> Result<ElectionType, String> {
    if let Ok(n) = name.parse::<i8>() {
        return Ok(ElectionType(n));
    }
    ElectionType::from_name(&name.to_ascii_uppercase()).ok_or_else(|| {
        format!(
            "--election-type: unknown election type \"{name}\" (PREFERRED, UNCLEAN, or a number)"
        )
    })
}

/// An API key from `--api`: Kafka's name (any case) or the key's number.
pub fn api_key_of(name: &str) -> Result<i16, String> {
    if let Ok(key) = name.parse::<i16>() {
        if api_name(key).is_some() {
            return Ok(key);
        }
    }
    (0..=i16::MAX)
        .map_while(|key| api_name(key).map(|n| (key, n)))
        .find(|(_, n)| n.eq_ignore_ascii_case(name))
        .map(|(key, _)| key)
        .ok_or_else(|| {
            format!(
                "--api: unknown API \"{name}\" (Kafka's name, as ElectLeaders, Metadata, \
                 ApiVersions, Produce, or its key's number)"
            )
        })
}

impl Selection {
    pub fn new(flags: &FilterFlags) -> Result<Selection, String> {
        let apis = if flags.api.is_empty() {
            None
        } else {
            Some(
                flags
                    .api
                    .iter()
                    .map(|n| api_key_of(n))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        };
        let election_types = flags
            .election_type
            .iter()
            .map(|t| election_type_of(t))
            .collect::<Result<Vec<_>, _>>()?;
        let by_content = !flags.topic.is_empty()
            || !flags.client_id.is_empty()
            || flags.errors_only
            || flags.any_error
            || !election_types.is_empty();
        if let (Some(apis), true) = (&apis, by_content) {
            if !apis.contains(&API_KEY) {
                // Nothing could ever be shown: said, rather than an empty output.
                return Err(format!(
                    "--api {} with --topic, --client-id, --election-type, --errors-only or \
                     --any-error can never match: those look into ElectLeaders frames, and \
                     --api leaves ElectLeaders out (add --api ElectLeaders)",
                    flags.api.join(" --api ")
                ));
            }
        }
        Ok(Selection {
            election_types,
            connections: flags.connection.clone(),
            apis,
            topics: flags.topic.iter().map(|t| t.as_bytes().to_vec()).collect(),
            client_ids: flags
                .client_id
                .iter()
                .map(|c| c.as_bytes().to_vec())
                .collect(),
            errors_only: flags.errors_only || flags.any_error,
            any_error: flags.any_error,
            matched: HashMap::new(),
        })
    }

    /// Whether a filter looks into the frames.
    fn by_content(&self) -> bool {
        !self.topics.is_empty()
            || !self.client_ids.is_empty()
            || self.errors_only
            || !self.election_types.is_empty()
    }

    /// Whether a filter picks requests by what only the request says (client id, election
    /// type): their responses are matched through them.
    fn by_request(&self) -> bool {
        !self.client_ids.is_empty() || !self.election_types.is_empty()
    }

    /// Whether the frames of connection `conn` are shown (`--connection`); frames read
    /// outside a capture have none.
    pub fn shows_conn(&self, conn: Option<u32>) -> bool {
        self.connections.is_empty() || conn.is_some_and(|c| self.connections.contains(&c))
    }

    /// Whether a request matches `--client-id` and `--election-type`.
    fn request_matches(&self, r: &ElectLeadersRequest<'_>) -> bool {
        let client = self.client_ids.is_empty()
            || self
                .client_ids
                .iter()
                .any(|c| Some(&c[..]) == r.header().client_id());
        let election =
            self.election_types.is_empty() || self.election_types.contains(&r.election_type());
        client && election
    }

    /// Whether ElectLeaders frames are shown at all.
    pub fn shows_elect_leaders(&self) -> bool {
        self.apis.as_ref().is_none_or(|a| a.contains(&API_KEY))
    }

    /// Whether a frame of another API (`None`: a response whose request was not seen) is
    /// shown, `all` being `--all`.
    pub fn shows_other(&self, api_key: Option<i16>, all: bool) -> bool {
        if self.by_content() {
            return false;
        }
        match (&self.apis, api_key) {
            (Some(apis), Some(key)) => apis.contains(&key),
            (Some(_), None) => false,
            (None, _) => all,
        }
    }

    /// Whether an ElectLeaders request is shown. `conn` and `index` (in a capture, for a
    /// request the reader keeps waiting for its response) let its response be matched by
    /// client id later.
    pub fn request(&mut self, r: &ElectLeadersRequest<'_>, at: Option<(u32, u64)>) -> bool {
        if !self.shows_elect_leaders() {
            return false;
        }
        // A request for every partition (null) elects the topics asked for too.
        let topic = self.topics.is_empty()
            || r.topic_partitions().is_none_or(|list| {
                list.iter()
                    .any(|t| self.topics.iter().any(|w| w == t.topic()))
            });
        let client = self.request_matches(r);
        if client && self.by_request() {
            if let Some((conn, index)) = at {
                self.matched.entry(conn).or_default().push_back(index);
            }
        }
        // With --errors-only a request is never shown: its answer says whether it failed.
        topic && client && !self.errors_only
    }

    /// Whether an ElectLeaders response is shown; `request` is its request's connection and
    /// frame number when it was paired in a capture.
    pub fn response(&mut self, r: &ElectLeadersResponse<'_>, request: Option<(u32, u64)>) -> bool {
        if !self.shows_elect_leaders() {
            return false;
        }
        let client = !self.by_request() || request.is_some_and(|at| self.answered(at));
        let topic = self.topics.is_empty()
            || r.replica_election_results()
                .iter()
                .any(|t| self.topics.iter().any(|w| w == t.topic()));
        let errors = !self.errors_only || self.failed(r);
        client && topic && errors
    }

    /// Whether the request `index` of `conn` matched `--client-id`; it and any older one
    /// (never to be answered) are forgotten.
    fn answered(&mut self, (conn, index): (u32, u64)) -> bool {
        let Some(matched) = self.matched.get_mut(&conn) else {
            return false;
        };
        while matched.front().is_some_and(|&i| i < index) {
            matched.pop_front();
        }
        let found = matched.front() == Some(&index);
        if found {
            matched.pop_front();
        }
        if matched.is_empty() {
            self.matched.remove(&conn);
        }
        found
    }

    /// What a request says for [`Selection::pair`]: whether it matches `--client-id` and
    /// `--topic` (`--api` and `--errors-only` are decided with the response).
    pub fn asked(&self, r: &ElectLeadersRequest<'_>) -> Asked {
        Asked {
            client: self.request_matches(r),
            topic: self.topics.is_empty()
                || r.topic_partitions().is_none_or(|list| {
                    list.iter()
                        .any(|t| self.topics.iter().any(|w| w == t.topic()))
                }),
        }
    }

    /// Whether a request and its response, listed together (`scan`), are shown: the
    /// request is from a `--client-id` given, the request or the response names a `--topic`
    /// given, and with `--errors-only` the response reports a failure ([`is_failure`]).
    /// `asked` is `None` for a response whose request was not found, `response` for a
    /// request not answered.
    pub fn pair(&self, asked: Option<Asked>, response: Option<&ElectLeadersResponse<'_>>) -> bool {
        if !self.shows_elect_leaders() {
            return false;
        }
        let client = asked.map_or(!self.by_request(), |a| a.client);
        let topic = asked.is_some_and(|a| a.topic)
            || self.topics.is_empty()
            || response.is_some_and(|r| {
                r.replica_election_results()
                    .iter()
                    .any(|t| self.topics.iter().any(|w| w == t.topic()))
            });
        let errors = !self.errors_only || response.is_some_and(|r| self.failed(r));
        client && topic && errors
    }

    /// Whether a response is one `--errors-only` shows: it reports a failure, or with
    /// `--any-error` any error code.
    fn failed(&self, r: &ElectLeadersResponse<'_>) -> bool {
        if self.any_error {
            has_error(r)
        } else {
            has_failure(r)
        }
    }

    /// A connection ended: nothing of it is awaited any more.
    pub fn closed(&mut self, conn: u32) {
        self.matched.remove(&conn);
    }
}
