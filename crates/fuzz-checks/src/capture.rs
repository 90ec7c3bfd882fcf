//! capture: the pcap/pcapng reader (crates/capture) over arbitrary bytes: no panic, work
//! bounded by the input, and the event stream keeps its documented order.

use kafka_elect_leaders_capture as capture;

/// The `capture` target: the capture reader over the input; no panic, work bounded by the
/// input, and the events in their documented order.
pub fn check_capture(data: &[u8]) {
    use capture::{Capture, ConnId, Endpoint, Event};
    use std::collections::HashMap;

    let Ok(mut reader) = Capture::new(std::io::Cursor::new(data)) else {
        return;
    };
    // Open connections: their two ends. Directions: the next offset of each.
    let mut open: HashMap<ConnId, (Endpoint, Endpoint)> = HashMap::new();
    let mut next: HashMap<(ConnId, Endpoint), u64> = HashMap::new();
    let mut opened = 0u32;
    let mut events = 0usize;
    let direction = |open: &HashMap<ConnId, (Endpoint, Endpoint)>, conn, from, to| {
        let &(a, b) = open.get(&conn).expect("an event of a connection not open");
        assert!((from, to) == (a, b) || (from, to) == (b, a));
        (conn, from)
    };
    while let Some(event) = reader.next_event().expect("no I/O error from memory") {
        events += 1;
        // Every event stands for input bytes (a packet record is 16 bytes or more) or a
        // connection opened by one.
        assert!(
            events <= data.len() + 64,
            "{events} events from {} bytes",
            data.len()
        );
        match event {
            Event::Open { conn, a, b, .. } => {
                opened += 1;
                assert_eq!(conn, ConnId(opened), "connections numbered in order");
                assert!(open.insert(conn, (a, b)).is_none());
            }
            Event::Data {
                conn,
                from,
                to,
                offset,
                bytes,
                ..
            } => {
                assert!(!bytes.is_empty());
                let at = next.entry(direction(&open, conn, from, to)).or_insert(0);
                assert_eq!(offset, *at, "Data continues its direction");
                *at += bytes.len() as u64;
            }
            Event::Gap {
                conn,
                from,
                to,
                offset,
                len,
                ..
            } => {
                assert!(len > 0);
                let at = next.entry(direction(&open, conn, from, to)).or_insert(0);
                assert_eq!(offset, *at, "a Gap continues its direction");
                *at += len;
            }
            Event::Close { conn, reason, .. } => {
                assert!(open.remove(&conn).is_some(), "closed twice or never opened");
                assert!(!reason.as_str().is_empty());
            }
            Event::Note { message, .. } => assert!(!message.is_empty()),
        }
    }
    assert!(
        open.is_empty(),
        "the end of the capture closes every connection"
    );
    assert!(reader.next_event().expect("no I/O error").is_none());
    assert_eq!(reader.stats().connections, opened);
}
