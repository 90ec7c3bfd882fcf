//! The broker's ApiVersions answer capped in place, so that a client never picks a
//! version of an API the guard polices newer than the guard reads (see `cap`).

use kafka_elect_leaders::Pending;

use crate::filter::{Filter, OnResponse, Response, Session};
use crate::filters::api_versions::cap::{cap_elect_leaders, API_VERSIONS};
use crate::observability::diag::log;

/// Caps the broker's ApiVersions answer to the versions the guard reads (ElectLeaders, and
/// every API whose answer carries broker addresses).
#[derive(Clone, Copy, Debug, Default)]
pub struct ApiVersions;

impl Filter for ApiVersions {
    fn name(&self) -> &'static str {
        "api-versions"
    }

    fn reads_response(&self, api_key: i16) -> bool {
        api_key == API_VERSIONS
    }

    /// An answer that cannot be read goes through unchanged, with a line saying what that
    /// risks.
    fn response(&self, session: &Session, request: Pending, answer: &mut Response) -> OnResponse {
        if let Err(field) = cap_elect_leaders(answer.frame_mut(), request.api_version) {
            log(format_args!(
                "{} -> {}: the broker's ApiVersions answer (v{}, correlation id {}) cannot be \
                 read at {field}: forwarded unchanged; should the client pick an ElectLeaders \
                 version newer than the guard reads, its connection will be closed",
                session.conn().client,
                session.conn().upstream,
                request.api_version,
                request.correlation_id
            ));
        }
        OnResponse::Pass
    }
}

#[cfg(test)]
mod tests {
    use kafka_elect_leaders::{API_KEY, LATEST_VERSION};
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::ApiVersionsResponse;
    use kafka_protocol::protocol::Decodable;

    use super::*;
    use crate::filter::testing::{answer, kafka_response, Conn};
    use crate::Config;

    /// The broker's ApiVersions answer at `version` (correlation id 9): Metadata up to v12,
    /// ElectLeaders up to `elect_max`.
    fn versions(version: i16, elect_max: i16) -> Vec<u8> {
        let entry = |api_key, max_version| {
            ApiVersion::default()
                .with_api_key(api_key)
                .with_min_version(0)
                .with_max_version(max_version)
        };
        let body = ApiVersionsResponse::default().with_api_keys(vec![
            entry(3, 12),
            entry(API_KEY, elect_max),
            entry(18, 4),
        ]);
        kafka_response(version, 9, &body)
    }

    fn read(conn: &Conn, version: i16, frame: &[u8]) -> Vec<u8> {
        let pending = Pending {
            api_key: API_VERSIONS,
            api_version: version,
            correlation_id: 9,
        };
        let mut answer = answer(frame);
        let next = ApiVersions.response(&conn.session(), pending, &mut answer);
        assert!(matches!(next, OnResponse::Pass));
        answer.frame().to_vec()
    }

    fn max_versions(frame: &[u8], version: i16) -> Vec<(i16, i16)> {
        // Header v0 at every version (KIP-511): the correlation id alone.
        let mut body = bytes::Bytes::copy_from_slice(&frame[8..]);
        let answer = ApiVersionsResponse::decode(&mut body, version).unwrap();
        answer
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.max_version))
            .collect()
    }

    #[test]
    fn reads_the_answers_to_api_versions_only() {
        for api_key in -1..200 {
            assert_eq!(ApiVersions.reads_response(api_key), api_key == 18);
            assert!(!ApiVersions.reads_request(api_key));
        }
    }

    /// ElectLeaders' max version in the broker's answer becomes the newest the guard reads,
    /// in place; nothing else changes.
    #[test]
    fn the_elect_leaders_max_version_is_capped() {
        let conn = Conn::new(&Config::default());
        for version in [0, 3] {
            let frame = versions(version, LATEST_VERSION + 3);
            let capped = read(&conn, version, &frame);
            assert_eq!(capped.len(), frame.len());
            assert_eq!(
                max_versions(&capped, version),
                [(3, 12), (API_KEY, LATEST_VERSION), (18, 4)],
                "v{version}"
            );
            // One the guard reads stays as it is.
            let frame = versions(version, LATEST_VERSION - 1);
            assert_eq!(read(&conn, version, &frame), frame);
        }
    }

    /// Issue 42: the APIs whose answers carry broker addresses are capped to the newest
    /// version the rewrite reads (a newer Produce, Fetch or ShareFetch answer would carry
    /// its KIP-951 node endpoints unread); Kafka 4.4's own versions stay as they are.
    #[test]
    fn the_address_carrying_apis_are_capped_to_what_the_rewrite_reads() {
        let conn = Conn::new(&Config::default());
        let entry = |api_key, max_version| {
            ApiVersion::default()
                .with_api_key(api_key)
                .with_min_version(0)
                .with_max_version(max_version)
        };
        let keys = [
            (0, 13),
            (1, 18),
            (3, 13),
            (10, 6),
            (55, 2),
            (60, 2),
            (78, 1),
            (79, 1),
        ];
        let body = ApiVersionsResponse::default()
            .with_api_keys(keys.iter().map(|&(key, max)| entry(key, max + 5)).collect());
        let capped = read(&conn, 3, &kafka_response(3, 9, &body));
        assert_eq!(max_versions(&capped, 3), keys);
        let body = ApiVersionsResponse::default()
            .with_api_keys(keys.iter().map(|&(key, max)| entry(key, max)).collect());
        let frame = kafka_response(3, 9, &body);
        assert_eq!(read(&conn, 3, &frame), frame);
    }

    /// An answer cut short goes to the client unchanged.
    #[test]
    fn an_answer_it_cannot_read_passes_unchanged() {
        let conn = Conn::new(&Config::default());
        let mut frame = versions(3, LATEST_VERSION + 3);
        frame.truncate(12);
        let size = u32::try_from(frame.len() - 4).unwrap();
        frame[..4].copy_from_slice(&size.to_be_bytes());
        assert_eq!(read(&conn, 3, &frame), frame);
    }
}
