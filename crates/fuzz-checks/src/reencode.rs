//! reencode: a parsed message written at another version. What that version can carry must
//! encode and parse back equal; what it cannot must be refused by name. And back again.

use super::*;

/// First byte: bit 0 request (0) or response (1), bits 2-3 the response's version, bits
/// 4-5 the version to write at (3: one that does not exist; bit 6 makes it -1). The rest is
/// one frame.
pub fn check_reencode(data: &[u8]) {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    let mut target = version_or_one_past(selector >> 4);
    if selector & 0x40 != 0 {
        target = -1 - target;
    }
    if selector & 1 == 0 {
        let Ok(request) = parse_request(frame) else {
            return;
        };
        let original = plain_request(&request);
        let refusals = request_refusals(&original, target);
        let Some(out) = encode_request_checked(&request, target, &refusals) else {
            return;
        };
        let parsed = parse_request(&out).expect("a re-encoded request parses");
        let mut expected = original.clone();
        expected.version = target;
        assert_eq!(plain_request(&parsed), expected);
        // And back: the canonical frame of the original.
        if let Some(canonical) = reencoded_request(&request) {
            let mut back = vec![0u8; canonical.len()];
            assert_eq!(
                parsed.encode(request.version(), &mut back),
                Ok(canonical.len())
            );
            assert_eq!(back, canonical);
        }
    } else {
        let version = version_or_one_past(selector >> 2);
        let Ok(response) = parse_response(frame, version) else {
            return;
        };
        let original = plain_response(&response);
        let refusals = response_refusals(&original, target);
        let Some(out) = encode_response_checked(&response, target, &refusals) else {
            return;
        };
        let parsed = parse_response(&out, target).expect("a re-encoded response parses");
        let mut expected = original.clone();
        expected.version = target;
        assert_eq!(plain_response(&parsed), expected);
        if let Some(canonical) = reencoded_response(&response) {
            let mut back = vec![0u8; canonical.len()];
            assert_eq!(parsed.encode(version, &mut back), Ok(canonical.len()));
            assert_eq!(back, canonical);
        }
    }
}
