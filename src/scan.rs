//! Finding frames inside arbitrary bytes: a capture that does not start on a frame boundary
//! and carries other traffic around the frames of interest (feature `scan`).
//!
//! A candidate is found with memchr's `memmem`; the library's parser decides whether it is
//! a frame. Nothing here decodes the wire a second way.
//!
//! # Bounded work
//!
//! Confirming a candidate costs a parse of its frame, and candidates can overlap: a hostile
//! input can nest thousands of request headers whose client ids all end where one large
//! body begins, so that every candidate walks the same body. The request scanner therefore
//! remembers what a failed parse proved about the bytes after a client id: the parse of a
//! request from there on depends only on those bytes, the version and where the frame
//! ends, and the frame's end matters only through bounds checks. So one failed walk tells,
//! for every frame end at once, whether that walk can succeed: at exactly one end (it
//! stopped early, [`TrailingBytes`](crate::ErrorKind::TrailingBytes)), at no end (a
//! malformed field), or only at an end past some point (it ran out of bytes). A later
//! candidate sharing that walk is decided without parsing. [`RequestScanner::stats`] counts
//! the work, for callers (and tests) that bound it.
//!
//! That memory covers candidates that share the bytes after their client ids. Crafted input
//! can still make candidates whose walks start apart and meet later, each walking the shared
//! part again (and responses have no client id to share). For a bound that holds whatever
//! the input, give the scanner a budget: [`RequestScanner::work_limit`] (and the same on
//! [`ResponseScanner`]) stops it once the parser has walked that many bytes in all, and
//! [`RequestScanner::stopped_at`] says where it stopped, so that nothing is skipped
//! silently. Everything found before that point is exactly what an unbounded scan finds
//! there.

use memchr::memmem;

use crate::error::{Error, ErrorKind};
use crate::frame::{split_frame, SIZE_PREFIX_LEN};
use crate::request::{parse_request, ElectLeadersRequest};
use crate::response::{parse_response, ElectLeadersResponse};
use crate::version::{API_KEY, MAX_VERSION, MIN_VERSION};

/// The ElectLeaders request frames in `capture`, in order, with their offsets.
///
/// Searches for the header pattern `00 2b 00 0V` (API key 43, version 0-2) and confirms
/// each candidate by parsing the frame that would start 4 bytes earlier. Candidates inside
/// a frame already found are skipped. Overlapping candidates are all tried: a 43-byte frame
/// has the size prefix `00 00 00 2b`, which holds the start of the pattern one byte before
/// the real header.
///
/// ```
/// use kafka_elect_leaders::scan_requests;
/// let frame = std::fs::read("corpus/request-v2-multi.bin").unwrap();
/// let mut capture = b"\x01\x02 other traffic".to_vec();
/// capture.extend_from_slice(&frame);
/// let found: Vec<_> = scan_requests(&capture).map(|(at, r)| (at, r.correlation_id())).collect();
/// assert_eq!(found, [(16, 16)]);
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "scan")))]
pub fn scan_requests(capture: &[u8]) -> RequestScanner<'_> {
    RequestScanner {
        capture,
        finder: memmem::Finder::new(&REQUEST_PATTERN),
        from: 0,
        resume: 0,
        walks: [None; WALK_MEMORY],
        next_walk: 0,
        work: Work::unlimited(),
    }
}

/// The work a scanner has done so far: how many candidates it met, how many it handed to
/// the parser, how many bytes those frames held and how many of them the parser walked.
/// The parser's work on a frame is linear in the bytes it walks, so `walked_bytes` measures
/// the scanner's parsing work (and is what [`RequestScanner::work_limit`] bounds).
#[cfg_attr(docsrs, doc(cfg(feature = "scan")))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanStats {
    /// Places where the search pattern was found.
    pub candidates: u64,
    /// Candidates whose frame was handed to the parser.
    pub parsed: u64,
    /// The bytes of the frames handed to the parser, in all.
    pub parsed_bytes: u64,
    /// The bytes the parser walked, in all: the whole of each frame found, and of each
    /// candidate that failed, its bytes up to the field that failed.
    pub walked_bytes: u64,
    /// Candidates decided without a parse, by what an earlier parse of the same bytes
    /// proved.
    pub remembered: u64,
}

/// How many failed walks a request scanner remembers (the most recent ones).
const WALK_MEMORY: usize = 4;

/// What a failed parse proved about the walk of a request from the end of its client id
/// (`from`, an offset in the capture) at `version`: which frame ends it can succeed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Walk {
    version: u8,
    from: usize,
    ends: Ends,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ends {
    /// Only a frame ending exactly here.
    Exactly(usize),
    /// None: a field is malformed whatever follows it.
    Never,
    /// Only a frame ending here or later.
    From(usize),
}

impl Ends {
    /// What `error`, from the parse of a frame ending at `end`, proves; `None` when it proves nothing past the frame (or is of a kind not known).
    fn learned(error: &Error, end: usize) -> Option<Ends> {
        Some(match error.kind {
            // The walk finished `count` bytes early: with any other end it either finishes
            // at the same place (every bounds check it passed still passes) or fails.
            ErrorKind::TrailingBytes { count } => Ends::Exactly(end.checked_sub(count)?),
            // The field at the error needed `needed` bytes past the end: a frame ending
            // before that fails there or earlier.
            ErrorKind::UnexpectedEnd { needed } => Ends::From(end.checked_add(needed)?),
            // Every element takes at least one byte, so the count needs at least `count`
            // bytes after it.
            ErrorKind::CountTooLarge { count, remaining } => {
                let after_count = end.checked_sub(remaining)?;
                Ends::From(after_count.checked_add(count)?.max(end + 1))
            }
            // Malformed whatever the frame's end: every walk reaching it fails there.
            ErrorKind::NegativeLength(_)
            | ErrorKind::UnexpectedNull
            | ErrorKind::StringTooLong { .. }
            | ErrorKind::VarintTooLong
            | ErrorKind::VarintOverflow => Ends::Never,
            _ => return None,
        })
    }

    fn allows(self, end: usize) -> bool {
        match self {
            Ends::Exactly(at) => end == at,
            Ends::Never => false,
            Ends::From(at) => end >= at,
        }
    }
}

const REQUEST_PATTERN: [u8; 3] = {
    let [high, low] = API_KEY.to_be_bytes();
    // The version's high byte; its low byte is checked by hand, one pass for all versions.
    [high, low, 0x00]
};

/// Iterator made by [`scan_requests`].
#[cfg_attr(docsrs, doc(cfg(feature = "scan")))]
#[derive(Clone, Debug)]
pub struct RequestScanner<'a> {
    capture: &'a [u8],
    finder: memmem::Finder<'static>,
    from: usize,
    resume: usize,
    walks: [Option<Walk>; WALK_MEMORY],
    next_walk: usize,
    work: Work,
}

impl RequestScanner<'_> {
    /// The work done so far.
    pub fn stats(&self) -> ScanStats {
        self.work.stats
    }

    /// Stops the scan once the parser has walked `limit` bytes in all
    /// ([`ScanStats::walked_bytes`]); the work is then at most `limit` plus one frame.
    /// Without a limit, crafted input (candidate frames that overlap and share a long
    /// stretch of bytes) can make the work grow with the square of its length.
    ///
    /// When the limit is reached, the scanner yields nothing more and
    /// [`stopped_at`](Self::stopped_at) says where: what was found before that offset is
    /// what a scan without a limit finds there.
    ///
    /// ```
    /// use kafka_elect_leaders::scan_requests;
    /// let frame = std::fs::read("corpus/request-v2-multi.bin").unwrap();
    /// let capture = [&frame[..], &frame[..]].concat();
    /// let mut scanner = scan_requests(&capture).work_limit(1);
    /// assert_eq!(scanner.next().map(|(at, _)| at), Some(0));
    /// assert!(scanner.next().is_none());
    /// assert_eq!(scanner.stopped_at(), Some(frame.len()));
    /// ```
    #[must_use]
    pub fn work_limit(mut self, limit: u64) -> Self {
        self.work.limit = limit;
        self
    }

    /// Where the scan stopped because its [work limit](Self::work_limit) was reached: the
    /// offset of the first candidate it did not decide. `None` while it has not.
    pub fn stopped_at(&self) -> Option<usize> {
        self.work.stopped_at
    }

    /// Where the client id of the request header starting at `start` ends: the walk from
    /// there depends only on the bytes that follow. `None` when the frame cannot hold it.
    fn client_id_end(&self, start: usize, end: usize) -> Option<usize> {
        // size (4), api key (2), version (2), correlation id (4), then the client id's
        // int16 length in every header version; negative is null.
        let at = start + SIZE_PREFIX_LEN + 8;
        let len = i16::from_be_bytes([*self.capture.get(at)?, *self.capture.get(at + 1)?]);
        let from = at + 2 + usize::try_from(len).unwrap_or(0);
        (from <= end).then_some(from)
    }
}

impl<'a> Iterator for RequestScanner<'a> {
    type Item = (usize, ElectLeadersRequest<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some(hit) = self.finder.find(self.capture.get(self.from..)?) {
            let at = self.from + hit;
            self.from = at + 1;
            let version_ok = self
                .capture
                .get(at + 3)
                .is_some_and(|&v| (MIN_VERSION..=MAX_VERSION).contains(&i16::from(v)));
            let Some(start) = at.checked_sub(SIZE_PREFIX_LEN) else {
                continue;
            };
            if !version_ok || start < self.resume {
                continue;
            }
            self.work.stats.candidates += 1;
            let Ok((frame, _)) = split_frame(&self.capture[start..]) else {
                continue;
            };
            let end = start + frame.len();
            let version = self.capture[at + 3];
            let from = self.client_id_end(start, end);
            let known = self
                .walks
                .iter()
                .flatten()
                .find(|w| Some(w.from) == from && w.version == version);
            if known.is_some_and(|w| !w.ends.allows(end)) {
                self.work.stats.remembered += 1;
                continue;
            }
            if !self.work.admit(start) {
                break;
            }
            let parsed = parse_request(frame);
            self.work.parsed(frame, parsed.as_ref().err());
            match parsed {
                Ok(request) => {
                    self.resume = end;
                    return Some((start, request));
                }
                Err(error) => {
                    let Some(from) = from.filter(|&from| start + error.offset >= from) else {
                        continue;
                    };
                    if let Some(ends) = Ends::learned(&error, end) {
                        let walk = Walk {
                            version,
                            from,
                            ends,
                        };
                        match self
                            .walks
                            .iter_mut()
                            .flatten()
                            .find(|w| w.from == from && w.version == version)
                        {
                            Some(known) => known.ends = ends,
                            None => {
                                self.walks[self.next_walk] = Some(walk);
                                self.next_walk = (self.next_walk + 1) % WALK_MEMORY;
                            }
                        }
                    }
                }
            }
        }
        self.from = self.capture.len();
        None
    }
}

impl core::iter::FusedIterator for RequestScanner<'_> {}

/// A scanner's account of its work: what it has done, what it may do, where it stopped.
#[derive(Clone, Copy, Debug)]
struct Work {
    stats: ScanStats,
    limit: u64,
    stopped_at: Option<usize>,
}

impl Work {
    fn unlimited() -> Work {
        Work {
            stats: ScanStats::default(),
            limit: u64::MAX,
            stopped_at: None,
        }
    }

    /// Whether the candidate at `start` may be parsed; when the limit is reached, the scan
    /// stops there.
    fn admit(&mut self, start: usize) -> bool {
        if self.stats.walked_bytes >= self.limit {
            self.stopped_at = Some(start);
            return false;
        }
        true
    }

    /// Counts the parse of `frame`: all its bytes walked, or those before the field that
    /// failed.
    fn parsed(&mut self, frame: &[u8], error: Option<&Error>) {
        self.stats.parsed += 1;
        self.stats.parsed_bytes += frame.len() as u64;
        self.stats.walked_bytes += error.map_or(frame.len(), |e| e.offset.min(frame.len())) as u64;
    }
}

/// Every frame in `capture` that parses as an ElectLeadersResponse of `version` with this
/// `correlation_id`, in order, with its offset. Responses carry no API key, so the needle
/// is the correlation id, right after a size prefix.
#[cfg_attr(docsrs, doc(cfg(feature = "scan")))]
pub fn scan_responses(capture: &[u8], correlation_id: i32, version: i16) -> ResponseScanner<'_> {
    ResponseScanner {
        capture,
        needle: correlation_id.to_be_bytes(),
        version,
        from: 0,
        work: Work::unlimited(),
    }
}

/// Iterator made by [`scan_responses`].
#[cfg_attr(docsrs, doc(cfg(feature = "scan")))]
#[derive(Clone, Debug)]
pub struct ResponseScanner<'a> {
    capture: &'a [u8],
    needle: [u8; 4],
    version: i16,
    from: usize,
    work: Work,
}

impl ResponseScanner<'_> {
    /// The work done so far.
    pub fn stats(&self) -> ScanStats {
        self.work.stats
    }

    /// Stops the scan once the parser has walked `limit` bytes in all, as
    /// [`RequestScanner::work_limit`] does.
    #[must_use]
    pub fn work_limit(mut self, limit: u64) -> Self {
        self.work.limit = limit;
        self
    }

    /// Where the scan stopped because its [work limit](Self::work_limit) was reached.
    pub fn stopped_at(&self) -> Option<usize> {
        self.work.stopped_at
    }
}

impl<'a> Iterator for ResponseScanner<'a> {
    type Item = (usize, ElectLeadersResponse<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some(hit) = memmem::find(self.capture.get(self.from..)?, &self.needle) {
            let at = self.from + hit;
            self.from = at + 1;
            let Some(start) = at.checked_sub(SIZE_PREFIX_LEN) else {
                continue;
            };
            self.work.stats.candidates += 1;
            let Ok((frame, _)) = split_frame(&self.capture[start..]) else {
                continue;
            };
            if !self.work.admit(start) {
                break;
            }
            let parsed = parse_response(frame, self.version);
            self.work.parsed(frame, parsed.as_ref().err());
            if let Ok(response) = parsed {
                return Some((start, response));
            }
        }
        self.from = self.capture.len();
        None
    }
}

impl core::iter::FusedIterator for ResponseScanner<'_> {}
