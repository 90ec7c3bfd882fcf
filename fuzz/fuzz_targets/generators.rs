#![no_main]
//! Fuzz target `generators`: the crate's own generators and mutator, fuzzed. Whatever they
//! produce either parses and round-trips (re-encoding gives the same bytes), or is refused
//! by name: by the writer (`AnyVersion` messages) or, for a deliberate malformation, by the
//! parser.

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{
    mutate_request, mutate_response, parse_request, parse_response, AnyVersion, ArbitraryRequest,
    ArbitraryResponse, EncodeRequest, EncodeResponse,
};

fn request_round_trips(frame: &[u8]) {
    let parsed = parse_request(frame).expect("the writer wrote it");
    let mut again = vec![0u8; frame.len()];
    assert_eq!(parsed.encode(parsed.version(), &mut again), Ok(frame.len()));
    assert_eq!(again, frame);
}

fn response_round_trips(frame: &[u8], version: i16) {
    let parsed = parse_response(frame, version).expect("the writer wrote it");
    let mut again = vec![0u8; frame.len()];
    assert_eq!(parsed.encode(version, &mut again), Ok(frame.len()));
    assert_eq!(again, frame);
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
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
        request_round_trips(&frame);
        let mutant = mutate_request(&frame, seed, &mut out).unwrap();
        let bytes = &out[..mutant.len];
        if mutant.mutation.malformed {
            if let Err(e) = parse_request(bytes) {
                assert!(!e.field.is_empty() && e.offset <= bytes.len());
            }
        } else {
            request_round_trips(bytes);
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
        response_round_trips(&frame, response.version);
        let mutant = mutate_response(&frame, response.version, seed, &mut out).unwrap();
        let bytes = &out[..mutant.len];
        if mutant.mutation.malformed {
            if let Err(e) = parse_response(bytes, mutant.version) {
                assert!(!e.field.is_empty() && e.offset <= bytes.len());
            }
        } else {
            response_round_trips(bytes, mutant.version);
        }
    }
});
