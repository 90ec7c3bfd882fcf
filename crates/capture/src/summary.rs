//! A capture's summary as plain data, counted from its frames and notes: what the tool's
//! `summary` prints as text or JSON and draws as an HTML page, and what any other program
//! can count the same way. [`Tally`]
//! holds the counts (connections, client ids, APIs, elections by type, topic and outcome,
//! failed partitions, latencies, anomalies) and the methods that count one frame or note;
//! [`Timeline`] the points of the page's timeline, thinned past [`TIMELINE_POINTS`]; and
//! the names both outputs give to byte strings, error codes and election types.
//!
//! Not here: reading the input, nor writing any output (the tool's `summary` command does
//! both).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use kafka_elect_leaders::{ElectLeadersRequest, ElectLeadersResponse, ErrorCode, API_KEY};

use crate::traffic::Note;
use crate::types::Timestamp;

/// `bytes` in lowercase hex.
fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// A failed partition: topic, partition, error code, message.
pub type FailedKey = (Vec<u8>, i32, i16, Option<Vec<u8>>);

/// Requests and responses of one API.
#[derive(Default)]
pub struct ApiCount {
    /// Requests of the API.
    pub requests: u64,
    /// Responses to them.
    pub responses: u64,
}

/// Requests of one client id.
#[derive(Default)]
pub struct ClientCount {
    /// Requests with the client id.
    pub requests: u64,
    /// Connections it was seen on.
    pub connections: u64,
}

/// Requests naming one topic.
#[derive(Default)]
pub struct TopicCount {
    /// ElectLeaders requests naming the topic.
    pub requests: u64,
    /// Partitions of it they name.
    pub partitions: u64,
}

/// What a response said of one topic (or of one partition), for the timeline's colour.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    /// Every partition NONE.
    Elected,
    /// Errors, all ELECTION_NOT_NEEDED.
    NotNeeded,
    /// Another error.
    Failed,
}

impl Outcome {
    /// A partition's outcome: NONE elected, ELECTION_NOT_NEEDED not needed, any other failed.
    pub fn of(code: ErrorCode) -> Outcome {
        match code {
            ErrorCode::NONE => Outcome::Elected,
            ErrorCode::ELECTION_NOT_NEEDED => Outcome::NotNeeded,
            _ => Outcome::Failed,
        }
    }

    /// The outcome as the summary writes it (`elected`, `not needed`, `failed`).
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Elected => "elected",
            Outcome::NotNeeded => "not needed",
            Outcome::Failed => "failed",
        }
    }
}

/// How many of the slowest round trips the summary keeps.
pub const SLOWEST: usize = 5;

/// Partitions kept per slow round trip (the others counted).
pub const SLOW_PARTITIONS: usize = 8;

/// One of the slowest ElectLeaders round trips: where it was and what it elected.
#[derive(Clone, Debug)]
pub struct Slow {
    /// From the request to its answer, in microseconds.
    pub latency_us: i64,
    /// The connection.
    pub conn: u32,
    /// The request's frame number in its direction.
    pub request_frame: u64,
    /// The packet that completed the answer.
    pub packet: u64,
    /// The answer's capture time (µs since 1970).
    pub at: u128,
    /// Its first partitions: topic, partition, error code.
    pub partitions: Vec<(Vec<u8>, i32, i16)>,
    /// All its partitions.
    pub partitions_total: u64,
}

/// What is unusual, counted whatever the filters.
#[derive(Default)]
pub struct Anomalies {
    /// Requests never answered, by API key.
    pub unanswered: BTreeMap<i16, u64>,
    /// Responses whose request was not seen.
    pub unpaired: u64,
    /// Requests the capture reader's in-flight budget could not keep for pairing (their
    /// responses are among the unpaired; they are not unanswered).
    pub not_kept: u64,
    /// Frames the library refused.
    pub malformed: u64,
    /// Bytes missing from the capture.
    pub gaps: u64,
    /// Notes of other kinds (cut capture, connections let go, ...).
    pub other_notes: u64,
    /// Every note reported on stderr.
    pub notes: u64,
    /// Notes (and failures) that make the summary partial.
    pub partial: u64,
    /// The error that ended the reading early.
    pub error: Option<String>,
}

/// A connection being read.
#[derive(Default)]
struct Open {
    /// Whether a frame of it was counted.
    counted: bool,
    /// The client ids counted on it.
    clients: HashSet<Option<Vec<u8>>>,
    /// Its requests waiting for an answer: frame number and API key.
    waiting: VecDeque<(u64, i16)>,
}

/// Everything counted.
pub struct Tally {
    /// The input's name (a file, `-`).
    pub name: String,
    /// Whether the input is a capture (else frames one after the other).
    pub capture: bool,
    /// Frames read.
    pub frames: u64,
    /// A capture file's packets, and those of them not TCP over IP (ARP, UDP, a link type
    /// not read...).
    pub packets: Option<(u64, u64)>,
    /// Connections with a frame counted.
    pub connections: u64,
    /// Requests and connections by client id (None: a null client id).
    pub clients: BTreeMap<Option<Vec<u8>>, ClientCount>,
    /// Requests and responses by API key.
    pub apis: BTreeMap<i16, ApiCount>,
    /// ElectLeaders requests.
    pub elect_requests: u64,
    /// ElectLeaders responses.
    pub elect_responses: u64,
    /// ElectLeaders requests by election type.
    pub by_type: BTreeMap<i8, u64>,
    /// Requests for every partition (a null topic list).
    pub all_partitions: u64,
    /// Requests and partitions by topic.
    pub by_topic: BTreeMap<Vec<u8>, TopicCount>,
    /// Responses by their top-level error code.
    pub top_level: BTreeMap<i16, u64>,
    /// Partitions by error code.
    pub outcomes: BTreeMap<i16, u64>,
    /// Partitions by topic and error code.
    pub outcomes_by_topic: BTreeMap<Vec<u8>, BTreeMap<i16, u64>>,
    /// Partitions answered with an error: (topic, partition, error code, message) and how
    /// often; ELECTION_NOT_NEEDED among them, which is no failure ([`Outcome::of`] tells
    /// them apart, and the tool's outputs list it apart).
    pub failed: BTreeMap<FailedKey, u64>,
    /// Latencies of the paired ElectLeaders responses, sorted by `finish`.
    pub latencies: Vec<i64>,
    /// Paired ElectLeaders responses left out of [`Tally::latencies`]: timed before their
    /// request by more than [`Timestamp::STEP_BACK`] (the capture's clock stepped back).
    pub latency_across_steps: u64,
    /// The slowest paired ElectLeaders round trips, slowest first (at most [`SLOWEST`]).
    pub slowest: Vec<Slow>,
    /// What is unusual.
    pub anomalies: Anomalies,
    /// For `--html`: the timeline.
    pub timeline: Option<Timeline>,
    open: HashMap<u32, Open>,
}

impl Tally {
    /// Nothing counted yet, of the input `name`; with a timeline if `timeline`.
    pub fn new(name: &str, timeline: bool) -> Tally {
        Tally {
            name: name.to_owned(),
            capture: false,
            frames: 0,
            packets: None,
            connections: 0,
            clients: BTreeMap::new(),
            apis: BTreeMap::new(),
            elect_requests: 0,
            elect_responses: 0,
            by_type: BTreeMap::new(),
            all_partitions: 0,
            by_topic: BTreeMap::new(),
            top_level: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            outcomes_by_topic: BTreeMap::new(),
            failed: BTreeMap::new(),
            latencies: Vec::new(),
            latency_across_steps: 0,
            slowest: Vec::new(),
            anomalies: Anomalies::default(),
            timeline: timeline.then(Timeline::default),
            open: HashMap::new(),
        }
    }

    /// The counts of API `key`.
    pub fn api(&mut self, key: i16) -> &mut ApiCount {
        self.frames += 1;
        self.apis.entry(key).or_default()
    }

    /// A frame of `conn` was counted.
    pub fn counted(&mut self, conn: u32) {
        let open = self.open.entry(conn).or_default();
        if !open.counted {
            open.counted = true;
            self.connections += 1;
        }
    }

    /// Counts a request of `client` (on connection `conn`, if a capture).
    pub fn client(&mut self, client: Option<&[u8]>, conn: Option<u32>) {
        let client = client.map(<[u8]>::to_vec);
        let count = self.clients.entry(client.clone()).or_default();
        count.requests += 1;
        if let Some(conn) = conn {
            let open = self.open.entry(conn).or_default();
            if open.clients.insert(client) {
                count.connections += 1;
            }
        }
    }

    /// A request of `conn` (frame `index`) waits for its answer.
    pub fn asked(&mut self, conn: u32, index: u64, api_key: i16) {
        // Bounded by the capture reader's in-flight budget: only the requests it keeps.
        self.open
            .entry(conn)
            .or_default()
            .waiting
            .push_back((index, api_key));
    }

    /// The request `index` of `conn` was answered: it, and any older one still waiting
    /// (Kafka answers in order), are no longer waiting.
    pub fn answered(&mut self, conn: u32, index: u64) {
        let Some(open) = self.open.get_mut(&conn) else {
            return;
        };
        while let Some(&(i, api)) = open.waiting.front() {
            if i > index {
                break;
            }
            open.waiting.pop_front();
            if i < index {
                *self.anomalies.unanswered.entry(api).or_default() += 1;
            }
        }
    }

    /// Connection `conn` ended.
    pub fn closed(&mut self, conn: u32) {
        if let Some(open) = self.open.remove(&conn) {
            for (_, api) in open.waiting {
                *self.anomalies.unanswered.entry(api).or_default() += 1;
            }
        }
    }

    /// Counts one of the capture's notes among the anomalies.
    pub fn note(&mut self, note: &Note) {
        let a = &mut self.anomalies;
        a.notes += 1;
        a.partial += u64::from(note.partial);
        let m = &note.message;
        if m.contains("missing from the capture") || m.contains("cut by the snap length at") {
            a.gaps += 1;
        } else if m.contains(" at frame byte ") || m.contains(": not a frame: ") {
            a.malformed += 1;
        } else if m.contains("its request was not seen") || m.contains("its request was not kept") {
            // Counted as an unpaired response, from its frame.
        } else {
            a.other_notes += 1;
        }
    }

    /// Counts an ElectLeaders request.
    pub fn elect_request(&mut self, r: &ElectLeadersRequest<'_>, conn: Option<u32>) {
        self.api(API_KEY).requests += 1;
        self.elect_requests += 1;
        self.client(r.header().client_id(), conn);
        *self.by_type.entry(r.election_type().0).or_default() += 1;
        match r.topic_partitions() {
            None => self.all_partitions += 1,
            Some(list) => {
                for t in list.iter() {
                    let count = self.by_topic.entry(t.topic().to_vec()).or_default();
                    count.requests += 1;
                    count.partitions += t.partitions().len() as u64;
                }
            }
        }
    }

    /// A response; `at` its capture time (µs since 1970) and connection.
    pub fn elect_response(
        &mut self,
        r: &ElectLeadersResponse<'_>,
        at: Option<(u128, u32)>,
        latency: Option<i128>,
    ) {
        self.api(API_KEY).responses += 1;
        self.elect_responses += 1;
        *self.top_level.entry(r.error_code().0).or_default() += 1;
        match latency {
            // Timed before its request by more than reordering explains: the capture's
            // clock stepped back between them (a note names the packet). Counted apart.
            Some(latency) if latency < -(Timestamp::STEP_BACK.as_micros() as i128) => {
                self.latency_across_steps += 1;
            }
            Some(latency) => self
                .latencies
                .push(i64::try_from(latency).unwrap_or(i64::MAX)),
            None => {}
        }
        for t in r.replica_election_results().iter() {
            let topic = t.topic();
            let by_code = self.outcomes_by_topic.entry(topic.to_vec()).or_default();
            // Partitions elected, not needed, failed: as the timeline colours them.
            let mut counts = [0u64; 3];
            for p in t.partition_result().iter() {
                let code = p.error_code();
                counts[Outcome::of(code) as usize] += 1;
                *by_code.entry(code.0).or_default() += 1;
                *self.outcomes.entry(code.0).or_default() += 1;
                if code.is_error() {
                    let key = (
                        topic.to_vec(),
                        p.partition_id(),
                        code.0,
                        p.error_message().map(<[u8]>::to_vec),
                    );
                    *self.failed.entry(key).or_default() += 1;
                }
            }
            if let (Some(timeline), Some((epoch_us, connection))) = (&mut self.timeline, at) {
                timeline.add(topic, epoch_us, connection, counts);
            }
        }
    }

    /// A paired response's round trip, kept when it is among the [`SLOWEST`] (ties: the
    /// first seen) and within the percentiles (not across a clock step).
    pub fn round_trip(&mut self, r: &ElectLeadersResponse<'_>, slow: Slow) {
        if slow.latency_us < -(Timestamp::STEP_BACK.as_micros() as i64) {
            return;
        }
        let at = self
            .slowest
            .iter()
            .position(|s| s.latency_us < slow.latency_us)
            .unwrap_or(self.slowest.len());
        if at >= SLOWEST {
            return;
        }
        let mut slow = slow;
        for t in r.replica_election_results().iter() {
            for p in t.partition_result().iter() {
                slow.partitions_total += 1;
                if slow.partitions.len() < SLOW_PARTITIONS {
                    slow.partitions
                        .push((t.topic().to_vec(), p.partition_id(), p.error_code().0));
                }
            }
        }
        self.slowest.insert(at, slow);
        self.slowest.truncate(SLOWEST);
    }

    /// The end of the input: connections still open are closed, latencies sorted.
    pub fn finish(&mut self) {
        let open: Vec<u32> = self.open.keys().copied().collect();
        for conn in open {
            self.closed(conn);
        }
        self.latencies.sort_unstable();
    }

    /// The latency at percentile `p` (nearest rank), in µs.
    pub fn percentile(&self, p: u64) -> Option<i64> {
        let n = self.latencies.len() as u64;
        if n == 0 {
            return None;
        }
        let rank = (p * n).div_ceil(100).max(1);
        self.latencies.get((rank - 1) as usize).copied()
    }

    /// The partitions answered with an error whose outcome is `outcome`
    /// ([`Outcome::NotNeeded`]: ELECTION_NOT_NEEDED; [`Outcome::Failed`]: any other), and
    /// how often, in the order of [`Tally::failed`].
    pub fn answered_with(&self, outcome: Outcome) -> impl Iterator<Item = (&FailedKey, &u64)> {
        self.failed
            .iter()
            .filter(move |((_, _, code, _), _)| Outcome::of(ErrorCode(*code)) == outcome)
    }

    /// Requests never answered, of every API.
    pub fn unanswered(&self) -> u64 {
        self.anomalies.unanswered.values().sum()
    }
}

/// A byte string for text: quoted, `null`, or `hex:...` when not UTF-8.
pub fn shown(b: Option<&[u8]>) -> String {
    match b {
        None => "null".to_owned(),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => format!("{s:?}"),
            Err(_) => format!("hex:{}", to_hex(b)),
        },
    }
}

/// An error code as the summary writes it: its name, or its number if Kafka has none.
pub fn code_name(code: i16) -> String {
    ErrorCode(code)
        .name()
        .map_or_else(|| code.to_string(), str::to_owned)
}

/// An election type as the summary writes it: its name, or its number.
pub fn election_name(t: i8) -> String {
    kafka_elect_leaders::ElectionType(t)
        .name()
        .map_or_else(|| t.to_string(), str::to_owned)
}

/// Timeline points kept, at most: a third for each outcome. Past its third, an outcome's
/// points are thinned (one in two kept, then one in four, ...), evenly over the whole
/// input, and the page says so; failures are not thinned away by a flood of successes.
pub const TIMELINE_POINTS: usize = 100_000;

/// Points kept of one outcome, at most.
const PER_OUTCOME: usize = TIMELINE_POINTS / 3;

/// The outcomes, in the order of the timeline's counts.
pub const OUTCOMES: [Outcome; 3] = [Outcome::Elected, Outcome::NotNeeded, Outcome::Failed];

/// One response's result for one topic, on the timeline.
pub struct Point {
    /// When the response was captured, in µs since the epoch.
    pub epoch_us: u128,
    /// The topic, an index into [`Timeline::topics`].
    pub topic: usize,
    /// What the response said of it.
    pub outcome: Outcome,
    /// The connection it came on.
    pub connection: u32,
    /// Its partitions elected, not needed and failed.
    pub counts: [u64; 3],
    /// Its number among the results of its outcome (from 0).
    nth: u64,
}

/// The timeline's points, at most [`TIMELINE_POINTS`], and the times of the whole input.
#[derive(Default)]
pub struct Timeline {
    /// The points kept.
    pub points: Vec<Point>,
    /// Topic names, by first appearance; a point's `topic` indexes this.
    pub topics: Vec<Vec<u8>>,
    ids: HashMap<Vec<u8>, usize>,
    /// Per outcome: results seen, and one in how many is kept (1: all).
    pub seen: [u64; 3],
    /// Per outcome, one in how many results is kept (1: all).
    pub stride: [u64; 3],
    /// Per outcome: points kept.
    pub kept: [usize; 3],
    /// The first and last frame times of the input (µs since 1970).
    pub span: Option<(u128, u128)>,
}

impl Timeline {
    /// A frame at `epoch_us`: the time axis covers it.
    pub fn saw(&mut self, epoch_us: u128) {
        self.span = Some(match self.span {
            None => (epoch_us, epoch_us),
            Some((a, b)) => (a.min(epoch_us), b.max(epoch_us)),
        });
    }

    /// A response's result for `topic`: its partitions elected, not needed, failed.
    pub fn add(&mut self, topic: &[u8], epoch_us: u128, connection: u32, counts: [u64; 3]) {
        self.saw(epoch_us);
        let outcome = if counts[2] > 0 {
            Outcome::Failed
        } else if counts[1] > 0 {
            Outcome::NotNeeded
        } else {
            Outcome::Elected
        };
        let o = outcome as usize;
        let nth = self.seen[o];
        self.seen[o] += 1;
        let stride = &mut self.stride[o];
        *stride = (*stride).max(1);
        if nth % *stride != 0 {
            return;
        }
        if self.kept[o] >= PER_OUTCOME {
            *stride *= 2;
            let s = *stride;
            self.points
                .retain(|p| p.outcome != outcome || p.nth % s == 0);
            self.kept[o] = self.points.iter().filter(|p| p.outcome == outcome).count();
            self.forget_topics_not_drawn();
            if nth % s != 0 {
                return;
            }
        }
        self.kept[o] += 1;
        let next = self.topics.len();
        let id = *self.ids.entry(topic.to_vec()).or_insert(next);
        if id == next {
            self.topics.push(topic.to_vec());
        }
        self.points.push(Point {
            epoch_us,
            topic: id,
            outcome,
            connection,
            counts,
            nth,
        });
    }

    /// Keeps only the names of topics that still have a point, in the order they first
    /// appear: the names are as bounded as the points, whatever thinning dropped.
    fn forget_topics_not_drawn(&mut self) {
        let mut renumbered = vec![usize::MAX; self.topics.len()];
        let mut topics = Vec::new();
        for p in &mut self.points {
            if renumbered[p.topic] == usize::MAX {
                renumbered[p.topic] = topics.len();
                topics.push(std::mem::take(&mut self.topics[p.topic]));
            }
            p.topic = renumbered[p.topic];
        }
        self.ids = topics
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i))
            .collect();
        self.topics = topics;
    }

    /// Whether some results are not drawn.
    pub fn thinned(&self) -> bool {
        self.stride.iter().any(|&s| s > 1)
    }
}

#[cfg(test)]
mod tests {
    use super::{Outcome, Timeline, PER_OUTCOME};

    /// Thinning keeps at most a third of the points per outcome, spread over the input,
    /// and the names of only the topics it still draws: a topic a result, each name
    /// forgotten with its point.
    #[test]
    fn thinning_keeps_points_and_names_bounded() {
        let mut t = Timeline::default();
        let n = 4 * PER_OUTCOME as u64 + 7;
        for i in 0..n {
            t.add(format!("topic-{i}").as_bytes(), u128::from(i), 1, [1, 0, 0]);
        }
        t.add(b"failure", u128::from(n), 1, [0, 0, 1]);
        assert_eq!((t.stride[0], t.thinned()), (8, true));
        assert!(t.stride[2] <= 1, "the one failure is drawn");
        assert!(t.points.len() <= PER_OUTCOME + 1);
        assert_eq!(t.topics.len(), t.points.len());
        assert_eq!(t.ids.len(), t.topics.len());
        for p in &t.points {
            let name = &t.topics[p.topic];
            assert_eq!(t.ids[name], p.topic);
            if p.outcome == Outcome::Elected {
                assert_eq!(*name, format!("topic-{}", p.epoch_us).into_bytes());
                assert_eq!(p.epoch_us % 8, 0);
            }
        }
        assert_eq!(t.points.last().unwrap().outcome, Outcome::Failed);
        assert_eq!(t.seen, [n, 0, 1]);
    }
}
