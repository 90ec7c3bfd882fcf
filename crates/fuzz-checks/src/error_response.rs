//! error_response: every request that parses gets an answer that encodes and parses at its
//! version, with every topic and partition it names answered with the code.

use super::*;

/// Most bytes of error message an error response may repeat across its partitions in this
/// check (4 MiB: 128 partitions at the 32767-byte limit).
pub(crate) const MAX_REPEATED_MESSAGE: usize = 4 << 20;

/// First byte: bit 1 generate the request (1) or read a frame (0). Then the frame (when
/// read), then the error code, message and throttle time.
pub fn check_error_response(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some((frame, mut u)) = take_request(rest, selector & 2 != 0) else {
        return;
    };
    let Ok(request) = parse_request(&frame) else {
        return;
    };
    let Ok(code) = u.arbitrary::<i16>() else {
        return;
    };
    let Ok(message) = some_string(&mut u) else {
        return;
    };
    let throttle: Option<i32> = u.arbitrary().unwrap_or(None);
    let version = request.version();
    let original = plain_request(&request);
    let asked: usize = original
        .topics
        .iter()
        .flatten()
        .map(|t| t.partitions.len())
        .sum();
    // The answer repeats the message once per partition: a 32 KB message for thousands of
    // partitions is a frame of many megabytes that exercises nothing more than a smaller
    // one, and held this campaign to a few hundred executions per second. Such inputs are
    // passed over.
    if asked.saturating_mul(message.as_ref().map_or(0, |m| m.len())) > MAX_REPEATED_MESSAGE {
        return;
    }

    let mut answer = request.error_response(ErrorCode(code), message.as_deref());
    if let Some(t) = throttle {
        answer = answer.throttle_time_ms(t);
    }
    let expected = PlainResponse {
        version,
        correlation_id: original.correlation_id,
        header_tags: Vec::new(),
        throttle_time_ms: throttle.unwrap_or(0),
        error_code: if version == 0 { 0 } else { code },
        results: original
            .topics
            .iter()
            .flatten()
            .map(|t| PlainResult {
                topic: t.topic.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|&p| PlainPartition {
                        partition_id: p,
                        error_code: code,
                        error_message: message.as_deref().map(<[u8]>::to_vec),
                        tags: Vec::new(),
                    })
                    .collect(),
                tags: Vec::new(),
            })
            .collect(),
        tags: Vec::new(),
    };
    let refusals = response_refusals(&expected, version);
    let Some(out) = encode_response_checked(&answer, version, &refusals) else {
        return;
    };
    let parsed = parse_response(&out, version).expect("an error response parses");
    let got = plain_response(&parsed);
    assert_eq!(got, expected);
    let answered: usize = got.results.iter().map(|r| r.partitions.len()).sum();
    assert_eq!(answered, asked);
}
