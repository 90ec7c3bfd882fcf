//! Inputs built to make a search of arbitrary bytes work hard: chains of candidate frames
//! whose walks start apart and meet, so that remembering failed walks does not help. The
//! codec's scanner tests and the tool's tests both run them against their work limits.

/// A chain of `topics` version-0 topic entries, each of whose names holds a request header
/// whose client id ends four bytes before the next entry: from there, the entry's last
/// partition id reads as a topic count, and the candidate walks every entry after it. The
/// walks start apart and meet, so what the scanner remembers does not help: each walks the
/// rest of the chain. Every candidate's frame ends one byte after the chain's timeout, so
/// every walk fails there, at its very end. A valid frame before and one after the chain.
pub fn chain_of_meeting_walks(topics: usize, valid: &[u8]) -> Vec<u8> {
    const ENTRY: usize = 24;
    let chain_start = valid.len();
    let chain_end = chain_start + topics * ENTRY;
    let frame_end = chain_end + 4 + 1; // timeout, one byte too many
    let mut input = valid.to_vec();
    for i in 0..topics {
        let header = chain_start + i * ENTRY + 2;
        let size = i32::try_from(frame_end - header - 4).unwrap();
        input.extend_from_slice(&14i16.to_be_bytes()); // name: the header
        input.extend_from_slice(&size.to_be_bytes());
        input.extend_from_slice(&[0, 43, 0, 0]); // ElectLeaders v0
        input.extend_from_slice(&(i as i32).to_be_bytes());
        input.extend_from_slice(&4i16.to_be_bytes()); // client id: the next 4 bytes
        input.extend_from_slice(&1i32.to_be_bytes()); // one partition
        let rest = i32::try_from(topics - 1 - i).unwrap();
        input.extend_from_slice(&rest.to_be_bytes()); // its id: the entries after it
    }
    input.extend_from_slice(&60_000i32.to_be_bytes());
    input.push(0);
    input.extend_from_slice(valid);
    input
}

/// A chain of `entries` version-0 response results, each with one partition whose error
/// message holds a response header (`correlation_id`): from there, the message's last 8
/// bytes read as a throttle time and a result count, and the candidate walks every entry
/// after it, the same trap as [`chain_of_meeting_walks`] for the responses' search. Every
/// candidate's frame ends one byte after the chain; a valid response follows.
pub fn response_chain_of_meeting_walks(
    entries: usize,
    correlation_id: i32,
    valid: &[u8],
) -> Vec<u8> {
    const ENTRY: usize = 31;
    let frame_end = entries * ENTRY + 1;
    let mut input = Vec::new();
    for i in 0..entries {
        let header = i * ENTRY + 15;
        input.extend_from_slice(&[0, 1, b'a']); // topic "a"
        input.extend_from_slice(&1i32.to_be_bytes()); // one partition
        input.extend_from_slice(&(i as i32).to_be_bytes()); // its id
        input.extend_from_slice(&[0, 0, 0, 16]); // no error, a 16-byte message:
        let size = i32::try_from(frame_end - header - 4).unwrap();
        input.extend_from_slice(&size.to_be_bytes());
        input.extend_from_slice(&correlation_id.to_be_bytes());
        input.extend_from_slice(&0i32.to_be_bytes()); // throttle time
        let rest = i32::try_from(entries - 1 - i).unwrap();
        input.extend_from_slice(&rest.to_be_bytes()); // results: the entries after it
    }
    input.push(0);
    let mut valid = valid.to_vec();
    valid[4..8].copy_from_slice(&correlation_id.to_be_bytes());
    input.extend_from_slice(&valid);
    input
}
