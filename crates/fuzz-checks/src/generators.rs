//! generators: the crate's own generators and mutator, fuzzed. Whatever they produce either
//! parses and round-trips (re-encoding gives the same bytes), or is refused by name: by the
//! writer (`AnyVersion` messages) or, for a deliberate malformation, by the parser.

use super::*;

pub(crate) fn generated_request_round_trips(frame: &[u8]) {
    assert_eq!(canonical_request(frame), Some(true));
    let parsed = parse_request(frame).expect("the writer wrote it");
    let mut again = vec![0u8; frame.len()];
    assert_eq!(parsed.encode(parsed.version(), &mut again), Ok(frame.len()));
    assert_eq!(again, frame);
}

pub(crate) fn generated_response_round_trips(frame: &[u8], version: i16) {
    assert_eq!(canonical_response(frame, version), Some(true));
    let parsed = parse_response(frame, version).expect("the writer wrote it");
    let mut again = vec![0u8; frame.len()];
    assert_eq!(parsed.encode(version, &mut again), Ok(frame.len()));
    assert_eq!(again, frame);
}

/// First byte: bit 0 request (0) or response (1), bit 1 any version (`AnyVersion`, which
/// the writer may refuse) or a carryable one; it also seeds the mutator. The rest feeds
/// the generator.
pub fn check_generators(data: &[u8]) {
    use kafka_elect_leaders::{
        mutate_request, mutate_response, AnyVersion, ArbitraryRequest, ArbitraryResponse,
    };
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    let seed = u64::from(selector);
    let mut out = vec![0u8; 70_000 + 2 * rest.len()];
    if selector & 1 == 0 {
        let request = if selector & 2 == 0 {
            ArbitraryRequest::arbitrary(&mut u)
        } else {
            AnyVersion::<ArbitraryRequest>::arbitrary(&mut u).map(|a| a.0)
        };
        let Ok(request) = request else { return };
        let Ok(len) = request.encoded_len(request.version) else {
            assert!(selector & 2 != 0, "a carryable request was refused");
            return;
        };
        let mut frame = vec![0u8; len];
        request.encode(request.version, &mut frame).unwrap();
        generated_request_round_trips(&frame);
        let mutant = mutate_request(&frame, seed, &mut out).unwrap();
        let bytes = &out[..mutant.len];
        if mutant.mutation.malformed {
            if let Err(e) = parse_request(bytes) {
                assert!(!e.field.is_empty() && e.offset <= bytes.len());
            }
        } else {
            generated_request_round_trips(bytes);
        }
    } else {
        let response = if selector & 2 == 0 {
            ArbitraryResponse::arbitrary(&mut u)
        } else {
            AnyVersion::<ArbitraryResponse>::arbitrary(&mut u).map(|a| a.0)
        };
        let Ok(response) = response else { return };
        let Ok(len) = response.encoded_len(response.version) else {
            assert!(selector & 2 != 0, "a carryable response was refused");
            return;
        };
        let mut frame = vec![0u8; len];
        response.encode(response.version, &mut frame).unwrap();
        generated_response_round_trips(&frame, response.version);
        let mutant = mutate_response(&frame, response.version, seed, &mut out).unwrap();
        let bytes = &out[..mutant.len];
        if mutant.mutation.malformed {
            if let Err(e) = parse_response(bytes, mutant.version) {
                assert!(!e.field.is_empty() && e.offset <= bytes.len());
            }
        } else {
            generated_response_round_trips(bytes, mutant.version);
        }
    }
}
