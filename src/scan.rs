//! Finding frames inside arbitrary bytes: a capture that does not start on a frame boundary
//! and carries other traffic around the frames of interest (feature `scan`).
//!
//! A candidate is found with memchr's `memmem`; the library's parser decides whether it is
//! a frame. Nothing here decodes the wire a second way.

use memchr::memmem;

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
            let Ok((frame, _)) = split_frame(&self.capture[start..]) else {
                continue;
            };
            if let Ok(request) = parse_request(frame) {
                self.resume = start + frame.len();
                return Some((start, request));
            }
        }
        self.from = self.capture.len();
        None
    }
}

impl core::iter::FusedIterator for RequestScanner<'_> {}

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
            let Ok((frame, _)) = split_frame(&self.capture[start..]) else {
                continue;
            };
            if let Ok(response) = parse_response(frame, self.version) {
                return Some((start, response));
            }
        }
        self.from = self.capture.len();
        None
    }
}

impl core::iter::FusedIterator for ResponseScanner<'_> {}
