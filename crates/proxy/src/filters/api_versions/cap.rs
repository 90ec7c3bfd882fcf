//! ApiVersions answers capped to what the guard understands.
//!
//! A client picks each API's version from the broker's ApiVersions answer. Were the guard to
//! pass that answer through unchanged, a client that knows a newer ElectLeaders than the
//! guard does would send it, and the guard, unable to read it, would close the connection
//! (it fails closed). So in the broker's answer, ElectLeaders' max version is lowered to
//! the newest this crate's codec reads, and so is the max version of each API the
//! leadership-change policy reads (`leadership::Api`) and of each whose answer carries
//! broker addresses (`addresses::newest_rewritten`), in place: the two bytes of those
//! fields change, nothing else, and the frame keeps its size. The client then negotiates down, as it
//! would with an older broker.
//!
//! The answer is read by hand, as far as the API list: it is a flat list of fixed-size
//! entries, the same at every version but for the array's length encoding, and
//! rewriting it with a general library would re-encode the whole frame (and its tagged
//! fields, which must pass through untouched).

use kafka_elect_leaders::{API_KEY, LATEST_VERSION};

use crate::core::response_due::Reader;

/// ApiVersions' API key.
pub const API_VERSIONS: i16 = 18;
/// The first flexible version of ApiVersions' response (a compact array; its header stays
/// v0, without tagged fields, at every version: KIP-511).
const FIRST_FLEXIBLE: i16 = 3;
/// UNSUPPORTED_VERSION: the broker did not know the version asked for and answered at v0.
const UNSUPPORTED_VERSION: i16 = 35;

/// The newest version of `api_key` the guard reads, for the APIs it reads: ElectLeaders
/// (the codec's), those of the leadership-change policy (a newer one of those would
/// close the connection: the guard never forwards what it cannot read while it polices
/// leadership), and those whose answers carry broker addresses (a newer answer would keep
/// its addresses unrewritten: `addresses::newest_rewritten`). Other APIs are forwarded
/// unread, whatever their version.
fn newest_read(api_key: i16) -> Option<i16> {
    if api_key == API_KEY {
        return Some(LATEST_VERSION);
    }
    crate::filters::leadership::Api::of(api_key)
        .map(crate::filters::leadership::Api::max_version)
        .or_else(|| crate::filters::addresses::newest::newest_rewritten(api_key))
}

/// What capping did to one answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capped {
    /// ElectLeaders' max version was lowered from this one.
    Lowered { from: i16 },
    /// Nothing to change: ElectLeaders is absent, or its max version is one the guard reads.
    Unchanged,
}

/// Lowers ElectLeaders' max version in the ApiVersions response `frame` (size prefix
/// included) answering a request of `api_version`, in every entry that lists ElectLeaders
/// (a broker answer with the key twice must not leave a client the newer version of the
/// second). The whole list is read first: an error names what could not be read, and the
/// frame is then unchanged.
pub fn cap_elect_leaders(frame: &mut [u8], api_version: i16) -> Result<Capped, &'static str> {
    let list = api_keys(frame, api_version)?;
    let mut highest = None;
    let mut at = list.at;
    for _ in 0..list.count {
        // The list was read whole: every entry is there.
        let Some(entry) = list.entry(frame, at) else {
            break;
        };
        at = entry.next;
        let max_at = entry.max_at;
        let max = i16::from_be_bytes([frame[max_at], frame[max_at + 1]]);
        match newest_read(entry.api_key) {
            Some(newest) if max > newest => {
                frame[max_at..max_at + 2].copy_from_slice(&newest.to_be_bytes());
                if entry.api_key == API_KEY {
                    highest = highest.max(Some(max));
                }
            }
            _ => {}
        }
    }
    Ok(match highest {
        Some(from) => Capped::Lowered { from },
        None => Capped::Unchanged,
    })
}

/// The answer's list of APIs, read through once: where it starts, how many entries, and
/// whether they carry tagged fields.
struct ApiKeys {
    at: usize,
    count: usize,
    flexible: bool,
}

/// Reads the list of APIs through to its end, or says which field it could not read.
fn api_keys(frame: &[u8], api_version: i16) -> Result<ApiKeys, &'static str> {
    let mut r = Reader::new(frame);
    // Size prefix and correlation id: the response header is v0 at every version.
    r.skip(4 + 4).ok_or("correlation_id")?;
    let error_code = r.int16().ok_or("error_code")?;
    // An UNSUPPORTED_VERSION answer is written at v0 whatever the request's version.
    let flexible = api_version >= FIRST_FLEXIBLE && error_code != UNSUPPORTED_VERSION;
    let count = if flexible {
        let len_plus_one = r.uvarint().ok_or("api_keys length")?;
        len_plus_one.saturating_sub(1) as usize
    } else {
        usize::try_from(r.int32().ok_or("api_keys length")?).unwrap_or(0)
    };
    let list = ApiKeys {
        at: frame.len() - r.remaining(),
        count,
        flexible,
    };
    // An entry takes 6 bytes at least: a count past the bytes fails at its first missing
    // entry, after at most a sixth of the frame's length of them.
    let mut at = list.at;
    for _ in 0..count {
        at = list.entry(frame, at).ok_or("api_keys: an entry")?.next;
    }
    Ok(list)
}

/// One entry of the list of APIs: its key, where its `MaxVersion` is, where the next
/// entry starts.
struct Entry {
    api_key: i16,
    max_at: usize,
    next: usize,
}

impl ApiKeys {
    /// The entry at `at` in `frame`: None past the frame's end.
    fn entry(&self, frame: &[u8], at: usize) -> Option<Entry> {
        let mut r = Reader::new(frame.get(at..)?);
        let api_key = r.int16()?;
        r.skip(2)?;
        let max_at = frame.len() - r.remaining();
        r.skip(2)?;
        if self.flexible {
            r.skip_tagged_fields()?;
        }
        Some(Entry {
            api_key,
            max_at,
            next: frame.len() - r.remaining(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};
    use kafka_protocol::messages::ResponseHeader;
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    /// The broker's answer at `version`, as Kafka's schema has it (written by the
    /// kafka-protocol crate): ApiVersions 0..=4, Metadata 0..=12, ElectLeaders 0..=`elect_max`.
    fn answer(version: i16, elect_max: i16) -> Vec<u8> {
        let mut response = ApiVersionsResponse::default()
            .with_throttle_time_ms(5)
            .with_api_keys(vec![
                ApiVersion::default()
                    .with_api_key(18)
                    .with_min_version(0)
                    .with_max_version(4),
                ApiVersion::default()
                    .with_api_key(3)
                    .with_min_version(0)
                    .with_max_version(12),
                ApiVersion::default()
                    .with_api_key(API_KEY)
                    .with_min_version(0)
                    .with_max_version(elect_max),
            ]);
        if version >= FIRST_FLEXIBLE {
            response = response
                .with_finalized_features_epoch(7)
                .with_supported_features(vec![
                    kafka_protocol::messages::api_versions_response::SupportedFeatureKey::default()
                        .with_name(StrBytes::from_static_str("kraft.version"))
                        .with_min_version(0)
                        .with_max_version(1),
                ]);
        }
        let mut body = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(9)
            .encode(&mut body, 0)
            .unwrap();
        response.encode(&mut body, version).unwrap();
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame
    }

    fn decode(frame: &[u8], version: i16) -> ApiVersionsResponse {
        let mut body = bytes::Bytes::copy_from_slice(&frame[8..]);
        ApiVersionsResponse::decode(&mut body, version).unwrap()
    }

    #[test]
    fn elect_leaders_is_capped_at_every_version_and_nothing_else_changes() {
        for version in 0..=4 {
            let original = answer(version, LATEST_VERSION + 1);
            let mut frame = original.clone();
            assert_eq!(
                cap_elect_leaders(&mut frame, version),
                Ok(Capped::Lowered {
                    from: LATEST_VERSION + 1
                }),
                "v{version}"
            );
            assert_eq!(frame.len(), original.len());
            // Exactly the two bytes of one field differ.
            let changed: Vec<usize> = (0..frame.len())
                .filter(|&i| frame[i] != original[i])
                .collect();
            assert!(
                changed.len() <= 2 && !changed.is_empty(),
                "v{version}: {changed:?}"
            );
            let mut want = decode(&original, version);
            want.api_keys[2].max_version = LATEST_VERSION;
            assert_eq!(decode(&frame, version), want, "v{version}");
        }
    }

    /// A broker answer that lists ElectLeaders twice (the second with a newer max): both
    /// entries are capped. Capping only the first left the client the second's version,
    /// which some clients take (the last entry of a key wins in a map built from the list).
    #[test]
    fn every_elect_leaders_entry_is_capped() {
        for version in 0..=4 {
            let mut response = decode(&answer(version, LATEST_VERSION + 1), version);
            response.api_keys.push(
                ApiVersion::default()
                    .with_api_key(API_KEY)
                    .with_min_version(0)
                    .with_max_version(LATEST_VERSION + 5),
            );
            let mut body = BytesMut::new();
            ResponseHeader::default()
                .with_correlation_id(9)
                .encode(&mut body, 0)
                .unwrap();
            response.encode(&mut body, version).unwrap();
            let mut frame = (body.len() as i32).to_be_bytes().to_vec();
            frame.extend_from_slice(&body);
            assert_eq!(
                cap_elect_leaders(&mut frame, version),
                Ok(Capped::Lowered {
                    from: LATEST_VERSION + 5
                }),
                "v{version}"
            );
            let mut want = response.clone();
            want.api_keys[2].max_version = LATEST_VERSION;
            want.api_keys[3].max_version = LATEST_VERSION;
            assert_eq!(decode(&frame, version), want, "v{version}");
        }
    }

    /// Issue 35: a client picking a leadership-change API newer than the guard reads (a
    /// later Kafka's CreateTopics v8) would have its connection closed; the answer tells it
    /// the guard's newest instead. APIs the guard does not read keep theirs.
    #[test]
    fn the_leadership_change_apis_are_capped_to_what_the_guard_reads() {
        use crate::filters::leadership::Api;
        for version in 0..=4 {
            let mut keys: Vec<ApiVersion> = Api::ALL
                .iter()
                .map(|api| {
                    ApiVersion::default()
                        .with_api_key(api.key())
                        .with_max_version(api.max_version() + 3)
                })
                .collect();
            // ListOffsets: read by no filter, whatever its version.
            keys.push(ApiVersion::default().with_api_key(2).with_max_version(99));
            let response = ApiVersionsResponse::default().with_api_keys(keys);
            let mut body = BytesMut::new();
            ResponseHeader::default()
                .with_correlation_id(1)
                .encode(&mut body, 0)
                .unwrap();
            response.encode(&mut body, version).unwrap();
            let mut frame = (body.len() as i32).to_be_bytes().to_vec();
            frame.extend_from_slice(&body);
            assert_eq!(
                cap_elect_leaders(&mut frame, version),
                Ok(Capped::Unchanged)
            );
            let got = decode(&frame, version);
            for (key, api) in got.api_keys.iter().zip(Api::ALL) {
                assert_eq!(
                    key.max_version,
                    api.max_version(),
                    "v{version} {}",
                    api.name()
                );
            }
            assert_eq!(got.api_keys.last().unwrap().max_version, 99);
        }
    }

    #[test]
    fn an_answer_the_guard_can_serve_is_left_alone() {
        for version in 0..=4 {
            let original = answer(version, LATEST_VERSION);
            let mut frame = original.clone();
            assert_eq!(
                cap_elect_leaders(&mut frame, version),
                Ok(Capped::Unchanged)
            );
            assert_eq!(frame, original);
        }
    }

    #[test]
    fn unsupported_version_answers_are_read_at_v0() {
        // A broker that does not know ApiVersions v9 answers at v0 with error 35.
        let mut response = decode(&answer(0, LATEST_VERSION + 3), 0);
        response.error_code = UNSUPPORTED_VERSION;
        let mut body = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(1)
            .encode(&mut body, 0)
            .unwrap();
        response.encode(&mut body, 0).unwrap();
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        assert_eq!(
            cap_elect_leaders(&mut frame, 9),
            Ok(Capped::Lowered {
                from: LATEST_VERSION + 3
            })
        );
    }

    #[test]
    fn a_cut_or_lying_answer_is_an_error_and_stays_unchanged() {
        let original = answer(3, LATEST_VERSION + 1);
        for cut in 0..original.len() {
            let mut frame = original[..cut].to_vec();
            let before = frame.clone();
            let result = cap_elect_leaders(&mut frame, 3);
            if result.is_err() {
                assert_eq!(frame, before, "cut at {cut}");
            }
        }
        // A count far beyond the bytes: an error, no loop over it.
        let mut lying = original[..10].to_vec();
        lying.extend([0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(cap_elect_leaders(&mut lying, 3).is_err());
    }
}
