//! scan: scan_requests / scan_responses (feature `scan`). Every reported frame is at a real
//! offset and parses there; and what is reported is what a plain walk over every offset
//! finds (requests: the first frame that parses from each point on, then on after it;
//! responses: every offset where one parses with the correlation id asked for).

use super::*;

/// First byte: bit 0 requests (0) or responses (1), bits 2-3 the response version, bit 4
/// take the correlation id from the first candidate (1) or from the next 4 bytes (0), bits
/// 5-7 a work limit (16 bytes walked a step) for a second scan, which must find what the
/// first found up to where it says it stopped. The rest is the capture.
pub fn check_scan(data: &[u8]) {
    use kafka_elect_leaders::{scan_requests, scan_responses};
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector & 1 == 0 {
        let capture = rest;
        let found: Vec<(usize, PlainRequest, usize)> = scan_requests(capture)
            .map(|(at, r)| {
                let frame = r.frame();
                // The view borrows the capture at the offset it reports.
                assert_eq!(frame.as_ptr(), capture[at..].as_ptr(), "offset {at}");
                (at, plain_request(&r), frame.len())
            })
            .collect();
        let mut expected = Vec::new();
        let mut at = 0;
        while at + 8 <= capture.len() {
            if capture[at + 4..at + 6] == [0, 43] {
                if let Ok((frame, _)) = split_frame(&capture[at..]) {
                    if let Ok(r) = parse_request(frame) {
                        expected.push((at, plain_request(&r), frame.len()));
                        at += frame.len();
                        continue;
                    }
                }
            }
            at += 1;
        }
        assert_eq!(found, expected);
        let limit = u64::from(selector >> 5) * 16;
        let mut limited = scan_requests(capture).work_limit(limit);
        let found: Vec<usize> = limited.by_ref().map(|(at, _)| at).collect();
        let all: Vec<usize> = expected.iter().map(|f| f.0).collect();
        let work = limited.stats().walked_bytes;
        check_limited(
            &found,
            &all,
            limited.stopped_at(),
            (work, limit),
            capture.len(),
        );
    } else {
        let version = version_or_one_past(selector >> 2);
        let (correlation_id, capture) = if selector & 0x10 != 0 {
            let id = rest
                .get(4..8)
                .map_or(0, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            (id, rest)
        } else {
            let Some(id) = rest.get(..4) else { return };
            (i32::from_be_bytes([id[0], id[1], id[2], id[3]]), &rest[4..])
        };
        let found: Vec<(usize, PlainResponse)> = scan_responses(capture, correlation_id, version)
            .map(|(at, r)| {
                assert_eq!(r.frame().as_ptr(), capture[at..].as_ptr(), "offset {at}");
                assert_eq!(r.correlation_id(), correlation_id);
                (at, plain_response(&r))
            })
            .collect();
        let needle = correlation_id.to_be_bytes();
        let expected: Vec<(usize, PlainResponse)> = (0..capture.len().saturating_sub(7))
            .filter(|&at| capture[at + 4..at + 8] == needle)
            .filter_map(|at| {
                let (frame, _) = split_frame(&capture[at..]).ok()?;
                let r = parse_response(frame, version).ok()?;
                Some((at, plain_response(&r)))
            })
            .collect();
        assert_eq!(found, expected);
        let limit = u64::from(selector >> 5) * 16;
        let mut limited = scan_responses(capture, correlation_id, version).work_limit(limit);
        let found: Vec<usize> = limited.by_ref().map(|(at, _)| at).collect();
        let all: Vec<usize> = expected.iter().map(|f| f.0).collect();
        let work = limited.stats().walked_bytes;
        check_limited(
            &found,
            &all,
            limited.stopped_at(),
            (work, limit),
            capture.len(),
        );
    }
}

/// A scan with a work limit found `found`, one without found `all`: the same up to where the
/// limited one says it stopped, and all of it if it did not; and its work was at most the
/// limit and one frame (at most the capture) more.
pub(crate) fn check_limited(
    found: &[usize],
    all: &[usize],
    stopped_at: Option<usize>,
    (work, limit): (u64, u64),
    capture_len: usize,
) {
    assert!(
        work <= limit + capture_len as u64,
        "work {work}, limit {limit}"
    );
    match stopped_at {
        None => assert_eq!(found, all),
        Some(stop) => {
            assert_eq!(found, &all[..found.len()], "a prefix of the full scan");
            assert!(
                found.iter().all(|&at| at < stop),
                "found {found:?}, stopped at {stop}"
            );
            if let Some(&next) = all.get(found.len()) {
                assert!(next >= stop, "{next} skipped before the stop at {stop}");
            }
        }
    }
}
