//! An embedder's own rule, audited and counted as the built-ins are: DeleteTopics of any
//! topic whose name starts with `prod-` is refused (answered POLICY_VIOLATION for every
//! topic, nothing forwarded), with an audit line under the rule's own name and a counter
//! in the guard's metrics; any other DeleteTopics goes on.
//!
//! ```text
//! cargo run -p kafka-elect-leaders-proxy --example delete_topics_prefix
//! ```
//!
//! It runs on its own: a stand-in broker on loopback (`common/`, not Kafka), the guard in
//! front of it with the guard's own filters and this one, and a client that deletes
//! `tmp-1` (forwarded) and then `prod-orders` with `tmp-2` (refused). It exits 0 when the
//! answers, the audit line and the counters are as they should be, 1 otherwise.

#[path = "common/mod.rs"]
mod common;

use bytes::{Bytes, BytesMut};
use kafka_elect_leaders_proxy::filter::{OnRequest, Request, Respond, Session, Wait};
use kafka_elect_leaders_proxy::{
    ApiKey, AuditTarget, Config, ErrorCode, Filter, Filters, RequestPeek,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    DeleteTopicsRequest, DeleteTopicsResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::net::TcpStream;

/// Refuses DeleteTopics of any topic under `prefix`.
struct DeleteTopicsPrefix {
    prefix: &'static str,
}

impl Filter for DeleteTopicsPrefix {
    fn name(&self) -> &'static str {
        "delete-topics-prefix"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        api_key == ApiKey::DELETE_TOPICS.0
    }

    /// Room in this client's share of the audit queue first, as the built-ins wait.
    fn ready<'a>(&'a self, session: &'a Session, _: &RequestPeek) -> Option<Wait<'a>> {
        Some(session.audit_ready())
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        let peek = *request.peek();
        let Some((header, body)) = read(request.frame(), peek.api_version) else {
            return OnRequest::malformed("a DeleteTopics request kafka-protocol cannot read");
        };
        let mut names: Vec<String> = body.topic_names.iter().map(|n| n.to_string()).collect();
        names.extend(
            body.topics
                .iter()
                .filter_map(|t| t.name.as_ref())
                .map(|n| n.to_string()),
        );
        if !names.iter().any(|n| n.starts_with(self.prefix)) {
            session.count(self.name(), "forwarded", 1);
            return OnRequest::Pass;
        }
        let details = serde_json::json!({ "topics": names, "prefix": self.prefix });
        // Fail closed: a refusal that cannot be audited closes the connection instead.
        if let Err(e) = session.audit(self.name(), &peek, "refused", details) {
            return OnRequest::close(format!("DeleteTopics refused, but not audited: {e}"));
        }
        session.count(self.name(), "refused", 1);
        // The operator's refusal text (`refusal-text`), as the built-in rules write it.
        let why = format!(
            "{}: deleting topics under {} is not allowed",
            session.policy().refusal_text(),
            self.prefix
        );
        OnRequest::Answer(Respond::frame(refusal(
            &header,
            &names,
            &why,
            peek.api_version,
        )))
    }
}

/// The request's header and body, as kafka-protocol reads them.
fn read(frame: &[u8], version: i16) -> Option<(RequestHeader, DeleteTopicsRequest)> {
    let mut buf = Bytes::copy_from_slice(frame.get(4..)?);
    let header =
        RequestHeader::decode(&mut buf, DeleteTopicsRequest::header_version(version)).ok()?;
    let body = DeleteTopicsRequest::decode(&mut buf, version).ok()?;
    Some((header, body))
}

/// Every topic answered POLICY_VIOLATION, size prefix included.
fn refusal(header: &RequestHeader, names: &[String], why: &str, version: i16) -> Bytes {
    let responses = names
        .iter()
        .map(|name| {
            DeletableTopicResult::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
                .with_error_code(ErrorCode::POLICY_VIOLATION.0)
                .with_error_message(Some(StrBytes::from_string(why.to_owned())))
        })
        .collect();
    let body = DeleteTopicsResponse::default().with_responses(responses);
    let mut out = BytesMut::from(&[0u8; 4][..]);
    ResponseHeader::default()
        .with_correlation_id(header.correlation_id)
        .encode(&mut out, DeleteTopicsResponse::header_version(version))
        .expect("a response header");
    body.encode(&mut out, version)
        .expect("a DeleteTopics answer");
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out.freeze()
}

/// A DeleteTopics v5 request for `names`, size prefix included.
fn delete_topics(correlation_id: i32, names: &[&str]) -> Vec<u8> {
    let version = 5;
    let mut out = BytesMut::from(&[0u8; 4][..]);
    RequestHeader::default()
        .with_request_api_key(ApiKey::DELETE_TOPICS.0)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("admin")))
        .encode(&mut out, DeleteTopicsRequest::header_version(version))
        .expect("a request header");
    DeleteTopicsRequest::default()
        .with_topic_names(
            names
                .iter()
                .map(|n| TopicName(StrBytes::from_string((*n).to_owned())))
                .collect(),
        )
        .with_timeout_ms(30_000)
        .encode(&mut out, version)
        .expect("a DeleteTopics request");
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out.to_vec()
}

/// The error code and message of each topic in a DeleteTopics v5 answer (size prefix
/// included).
fn errors(answer: &[u8]) -> Vec<(i16, Option<String>)> {
    let mut buf = Bytes::copy_from_slice(&answer[4..]);
    let version = 5;
    let _ = ResponseHeader::decode(&mut buf, DeleteTopicsResponse::header_version(version));
    DeleteTopicsResponse::decode(&mut buf, version)
        .map(|r| {
            r.responses
                .iter()
                .map(|t| {
                    (
                        t.error_code,
                        t.error_message.as_ref().map(|m| m.to_string()),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The error code of each topic in a DeleteTopics v5 answer.
fn error_codes(answer: &[u8]) -> Vec<i16> {
    errors(answer).into_iter().map(|(code, _)| code).collect()
}

/// The operator's refusal text the example's guard is given.
const TEXT: &str = "refused by the Kafka team's guard (ask in #kafka)";

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let audit =
        std::env::temp_dir().join(format!("delete-topics-prefix-{}.jsonl", std::process::id()));
    let mut config = Config {
        filters: Filters::builtin().with(DeleteTopicsPrefix { prefix: "prod-" }),
        audit: AuditTarget::File(audit.clone()),
        ..Config::default()
    };
    config.policy.refusal_text = Some(TEXT.into());
    let (listen, metrics, stop) = common::guard(config).await;
    let mut client = TcpStream::connect(listen).await.expect("the guard");
    // Forwarded: the stand-in answers with the correlation id alone.
    let allowed = common::round_trip(&mut client, &delete_topics(1, &["tmp-1"])).await;
    let refused =
        common::round_trip(&mut client, &delete_topics(2, &["prod-orders", "tmp-2"])).await;
    let text = common::scrape(metrics).await;
    let _ = stop.send(());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let lines = std::fs::read_to_string(&audit).unwrap_or_default();
    let _ = std::fs::remove_file(&audit);
    let line: Option<serde_json::Value> = lines
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|l: &serde_json::Value| l["rule"] == "delete-topics-prefix");
    println!("audit line: {line:?}");
    let refused_codes = refused.as_deref().map(error_codes).unwrap_or_default();
    common::verdict(&[
        ("tmp-1 deleted through the guard (the broker answered)", allowed.as_deref().map(<[u8]>::len) == Some(8)),
        ("prod-orders and tmp-2 answered POLICY_VIOLATION by the guard", refused_codes == [44, 44]),
        (
            "the refusal begins with the operator's refusal text",
            refused.as_deref().map(errors).is_some_and(|e| {
                !e.is_empty()
                    && e.iter()
                        .all(|(_, m)| m.as_deref().is_some_and(|m| m.starts_with(TEXT)))
            }),
        ),
        (
            "the audit line names the rule, the verdict and the topics",
            line.as_ref().is_some_and(|l| {
                l["verdict"] == "refused"
                    && l["api"] == "DeleteTopics"
                    && l["details"]["topics"] == serde_json::json!(["prod-orders", "tmp-2"])
            }),
        ),
        (
            "counted as refused once",
            text.contains("elect_leaders_guard_filter_events_total{filter=\"delete-topics-prefix\",event=\"refused\"} 1"),
        ),
        (
            "counted as forwarded once",
            text.contains("elect_leaders_guard_filter_events_total{filter=\"delete-topics-prefix\",event=\"forwarded\"} 1"),
        ),
    ])
}
