//! edit: RequestEdit / ResponseEdit, the edited frame parses and shows exactly the change.

use super::*;

/// First byte: bit 0 request (0) or response (1), bit 1 generate the message (1) or read a
/// frame from the input (0), bits 2-3 the response version. Then the frame (when read),
/// then the edit's parameters.
pub fn check_edit(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let generate = selector & 2 != 0;
    if selector & 1 == 0 {
        if let Some((frame, mut u)) = take_request(rest, generate) {
            let _ = edit_request(&frame, &mut u);
        }
    } else if let Some((frame, version, mut u)) =
        take_response(rest, generate, nth_version(u64::from(selector >> 2)))
    {
        let _ = edit_response(&frame, version, &mut u);
    }
}

pub(crate) fn edit_request(frame: &[u8], u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let Ok(request) = parse_request(frame) else {
        return Ok(());
    };
    let original = plain_request(&request);
    let version = request.version();
    let correlation_id: Option<i32> = u.arbitrary()?;
    let client_id = if u.arbitrary()? {
        Some(some_string(u)?)
    } else {
        None
    };
    let election_type: Option<i8> = u.arbitrary()?;
    let timeout_ms: Option<i32> = u.arbitrary()?;
    let topic_seed: Option<u64> = u.arbitrary()?;
    let partition_seed: Option<u64> = u.arbitrary()?;

    let mut expected = original.clone();
    let mut edit = request.edit();
    if let Some(id) = correlation_id {
        edit = edit.correlation_id(id);
        expected.correlation_id = id;
    }
    if let Some(id) = &client_id {
        edit = edit.client_id(id.as_deref());
        expected.client_id = id.as_deref().map(<[u8]>::to_vec);
    }
    if let Some(t) = election_type {
        edit = edit.election_type(ElectionType(t));
        expected.election_type = t;
    }
    if let Some(t) = timeout_ms {
        edit = edit.timeout_ms(t);
        expected.timeout_ms = t;
    }
    let topic_seed = topic_seed.unwrap_or(0);
    let partition_seed = partition_seed.unwrap_or(0);
    if let Some(topics) = &mut expected.topics {
        topics.retain(|t| keeps(topic_seed, &t.topic, t.partitions.len() as i64));
        for t in topics.iter_mut() {
            let name = t.topic.clone();
            t.partitions
                .retain(|&p| keeps(partition_seed, &name, i64::from(p)));
        }
    }
    let edit = edit
        .retain_topics(|t| keeps(topic_seed, t.topic(), t.partitions().len() as i64))
        .retain_partitions(|topic, p| keeps(partition_seed, topic, i64::from(p)));

    let refusals = request_refusals(&expected, version);
    let Some(out) = encode_request_checked(&edit, version, &refusals) else {
        return Ok(());
    };
    let parsed = parse_request(&out).expect("an edited request parses");
    assert_eq!(plain_request(&parsed), expected);
    // The views' own equality says "different" exactly when the values are.
    assert_eq!(parsed == request, expected == original, "view equality");
    // An edit that changes nothing is the canonical frame of the original.
    if correlation_id.is_none()
        && client_id.is_none()
        && election_type.is_none()
        && timeout_ms.is_none()
        && topic_seed == 0
        && partition_seed == 0
    {
        assert_eq!(
            out,
            reencoded_request(&request).expect("the same request encodes")
        );
    }
    Ok(())
}

pub(crate) fn edit_response(
    frame: &[u8],
    version: i16,
    u: &mut Unstructured<'_>,
) -> arbitrary::Result<()> {
    let Ok(response) = parse_response(frame, version) else {
        return Ok(());
    };
    let original = plain_response(&response);
    let correlation_id: Option<i32> = u.arbitrary()?;
    let throttle_time_ms: Option<i32> = u.arbitrary()?;
    let error_code: Option<i16> = u.arbitrary()?;
    let topic_seed: Option<u64> = u.arbitrary()?;

    let mut expected = original.clone();
    let mut edit = response.edit();
    if let Some(id) = correlation_id {
        edit = edit.correlation_id(id);
        expected.correlation_id = id;
    }
    if let Some(t) = throttle_time_ms {
        edit = edit.throttle_time_ms(t);
        expected.throttle_time_ms = t;
    }
    if let Some(code) = error_code {
        edit = edit.error_code(ErrorCode(code));
        expected.error_code = code;
    }
    let topic_seed = topic_seed.unwrap_or(0);
    expected
        .results
        .retain(|r| keeps(topic_seed, &r.topic, r.partitions.len() as i64));
    let edit =
        edit.retain_topics(|r| keeps(topic_seed, r.topic(), r.partition_result().len() as i64));

    let refusals = response_refusals(&expected, version);
    let Some(out) = encode_response_checked(&edit, version, &refusals) else {
        return Ok(());
    };
    let parsed = parse_response(&out, version).expect("an edited response parses");
    assert_eq!(plain_response(&parsed), expected);
    assert_eq!(parsed == response, expected == original, "view equality");
    Ok(())
}

/// A parsed request re-encoded at its own version, if the writer takes it.
pub(crate) fn reencoded_request(request: &ElectLeadersRequest<'_>) -> Option<Vec<u8>> {
    let mut out = vec![0u8; request.encoded_len(request.version()).ok()?];
    request.encode(request.version(), &mut out).ok()?;
    Some(out)
}

pub(crate) fn reencoded_response(response: &ElectLeadersResponse<'_>) -> Option<Vec<u8>> {
    let mut out = vec![0u8; response.encoded_len(response.version()).ok()?];
    response.encode(response.version(), &mut out).ok()?;
    Some(out)
}
