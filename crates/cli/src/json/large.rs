//! Reading a large JSON value piece by piece.
//!
//! A `serde_json::Value` costs tens of bytes a number and far more an object: the value of
//! a frame with millions of partitions would need gigabytes. A value whose text is larger
//! than [`LARGE_VALUE`] is therefore walked here a level at a time: its members and the
//! elements of its lists are found by their delimiters, and only the small pieces (a
//! partition, a partition result, a topic's name, any other field) are read as `Value`s,
//! one at a time, and checked by the same code as a small value's. What is kept is the
//! owned data handed to the writer. The syntax is still checked everywhere: the pieces by
//! serde_json, the levels walked here with serde_json's own messages; only where a
//! malformed large value first goes wrong, and so which error is named, may differ.

use std::ops::Range;

use serde_json::{Map, Value};

use super::read::what;
use super::sources::{
    encode_request, encode_response, encode_value, int_value, partition_json, result_json,
    topic_json, Obj, ResultJson, TopicJson, TopicsRead, RESULT_KEYS, TOPIC_KEYS,
};

/// A value whose text is at least this long is read piece by piece.
pub const LARGE_VALUE: usize = 1 << 20;

/// Why a large value was not encoded: its text is not JSON (at a byte offset of the
/// text), or it is not a message the writer can encode.
pub enum Refused {
    Syntax(usize, String),
    Message(String),
}

type Syntax<T> = Result<T, (usize, String)>;

/// One JSON object (the text of a large value, leading whitespace allowed) to one
/// frame; `None` when the value is not an object, for the caller to read whole.
pub fn encode(text: &str) -> Option<Result<Vec<u8>, Refused>> {
    let t = text.as_bytes();
    let at = ws(t, 0);
    if t.get(at) != Some(&b'{') {
        return None;
    }
    Some(encode_object(text, at))
}

fn encode_object(text: &str, at: usize) -> Result<Vec<u8>, Refused> {
    let syntax = |(at, what)| Refused::Syntax(at, what);
    let members = members(text, at).map_err(syntax)?;
    let kind = members
        .iter()
        .rev()
        .find(|(k, _)| k == "kind")
        .map(|(_, r)| piece(text, r.clone()))
        .transpose()
        .map_err(syntax)?;
    let (list_key, request) = match kind {
        Some(Value::String(kind)) if kind == "request" => ("topic_partitions", true),
        Some(Value::String(kind)) if kind == "response" => ("replica_election_results", false),
        // Not a message of a known kind: read whole, for the same message as a small one.
        _ => {
            let value = piece(text, at..text.len()).map_err(syntax)?;
            return encode_value(&value).map_err(Refused::Message);
        }
    };
    let mut map = Map::new();
    let mut list = None;
    for (key, range) in members {
        let first = text.as_bytes()[range.start];
        if key == list_key && (first == b'[' || (first == b'n' && request)) {
            map.remove(&key);
            list = Some(range);
            continue;
        }
        if key == list_key {
            list = None;
        }
        map.insert(key, piece(text, range).map_err(syntax)?);
    }
    let value = Value::Object(map);
    if request {
        let topics = match list {
            None => None,
            Some(range) => Some(request_topics(text, range).map_err(syntax)?),
        };
        encode_request(&value, topics).map_err(Refused::Message)
    } else {
        let results = match list {
            None => None,
            Some(range) => Some(response_results(text, range).map_err(syntax)?),
        };
        encode_response(&value, results).map_err(Refused::Message)
    }
}

/// `topic_partitions`, an array or null: the topics, or the first error in them.
fn request_topics(text: &str, range: Range<usize>) -> Syntax<TopicsRead> {
    if text.as_bytes()[range.start] == b'n' {
        piece(text, range)?;
        return Ok(Ok(None));
    }
    let mut topics = Vec::new();
    let mut refused = None;
    let mut i = 0;
    elements(text, range.start, &mut |item| {
        let path = format!("topic_partitions[{i}]");
        i += 1;
        if refused.is_some() {
            return skip_piece(text, item);
        }
        match topic(text, item, path)? {
            Ok(topic) => topics.push(topic),
            Err(e) => refused = Some(e),
        }
        Ok(())
    })?;
    Ok(match refused {
        Some(e) => Err(e),
        None => Ok(Some(topics)),
    })
}

fn topic(text: &str, item: Range<usize>, path: String) -> Syntax<Result<TopicJson, String>> {
    let (entry, partitions) = split_object(text, item, "partitions")?;
    let entry = match Obj::new(&entry, path, TOPIC_KEYS) {
        Ok(entry) => entry,
        Err(e) => {
            // The syntax is checked whole before any field, as for a small value.
            if let Some(range) = partitions {
                skip_piece(text, range)?;
            }
            return Ok(Err(e));
        }
    };
    let mut values = Vec::new();
    let mut refused = None;
    if partitions.is_none() {
        // Missing, null or not an array: the small value's checks and messages.
        match entry.array("partitions", false) {
            Err(e) => return Ok(Err(e)),
            Ok(Some(Some((items, path)))) => {
                for (j, p) in items.iter().enumerate() {
                    match int_value::<i32>(p, &format!("{path}[{j}]"), "an int32") {
                        Ok(n) => values.push(n),
                        Err(e) => return Ok(Err(e)),
                    }
                }
            }
            Ok(_) => {}
        }
    }
    if let Some(range) = partitions {
        let path = entry.path("partitions");
        let mut j = 0;
        elements(text, range.start, &mut |p| {
            let value = piece(text, p)?;
            if refused.is_none() {
                match int_value::<i32>(&value, &format!("{path}[{j}]"), "an int32") {
                    Ok(n) => values.push(n),
                    Err(e) => refused = Some(e),
                }
            }
            j += 1;
            Ok(())
        })?;
    }
    if let Some(e) = refused {
        return Ok(Err(e));
    }
    Ok(topic_json(&entry, values))
}

/// `replica_election_results`: the results, or the first error in them.
fn response_results(text: &str, range: Range<usize>) -> Syntax<Result<Vec<ResultJson>, String>> {
    let mut results = Vec::new();
    let mut refused = None;
    let mut i = 0;
    elements(text, range.start, &mut |item| {
        let path = format!("replica_election_results[{i}]");
        i += 1;
        if refused.is_some() {
            return skip_piece(text, item);
        }
        let (entry, partitions) = split_object(text, item, "partition_result")?;
        let entry = match Obj::new(&entry, path, RESULT_KEYS) {
            Ok(entry) => entry,
            Err(e) => {
                refused = Some(e);
                return partitions.map_or(Ok(()), |range| skip_piece(text, range));
            }
        };
        let mut list = Vec::new();
        let mut failed = None;
        if partitions.is_none() {
            match entry.array("partition_result", false) {
                Err(e) => failed = Some(e),
                Ok(Some(Some((items, path)))) => {
                    for (j, item) in items.iter().enumerate() {
                        match partition_json(item, format!("{path}[{j}]")) {
                            Ok(p) => list.push(p),
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                }
                Ok(_) => {}
            }
        }
        if let Some(range) = partitions {
            let path = entry.path("partition_result");
            let mut j = 0;
            elements(text, range.start, &mut |p| {
                let value = piece(text, p)?;
                if failed.is_none() {
                    match partition_json(&value, format!("{path}[{j}]")) {
                        Ok(p) => list.push(p),
                        Err(e) => failed = Some(e),
                    }
                }
                j += 1;
                Ok(())
            })?;
        }
        match failed.map_or_else(|| result_json(&entry, list), Err) {
            Ok(result) => results.push(result),
            Err(e) => refused = Some(e),
        }
        Ok(())
    })?;
    Ok(match refused {
        Some(e) => Err(e),
        None => Ok(results),
    })
}

/// An object's members as a `Value`, except `key` when it holds an array: that one's
/// range, to be walked. Anything but an object is returned whole, for `Obj::new`'s
/// message.
fn split_object(
    text: &str,
    item: Range<usize>,
    key: &str,
) -> Syntax<(Value, Option<Range<usize>>)> {
    if text.as_bytes()[item.start] != b'{' {
        return Ok((piece(text, item)?, None));
    }
    let mut map = Map::new();
    let mut list = None;
    for (k, range) in members(text, item.start)? {
        if k == key && text.as_bytes()[range.start] == b'[' {
            map.remove(&k);
            list = Some(range);
            continue;
        }
        if k == key {
            list = None;
        }
        map.insert(k, piece(text, range)?);
    }
    Ok((Value::Object(map), list))
}

/// Skips skipped whitespace from `i`.
pub fn ws(t: &[u8], mut i: usize) -> usize {
    while i < t.len() && matches!(t[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

fn eof(t: &[u8], what: &str) -> (usize, String) {
    (
        t.len().saturating_sub(1),
        format!("EOF while parsing {what}"),
    )
}

/// Where the value starting at `at` ends, found by its delimiters alone (what is between
/// them is checked when it is read).
pub fn value_end(t: &[u8], at: usize) -> Syntax<usize> {
    match t.get(at) {
        None => Err(eof(t, "a value")),
        Some(b'"') => string_end(t, at),
        Some(&open @ (b'{' | b'[')) => {
            let mut depth = 0usize;
            let mut i = at;
            while i < t.len() {
                match t[i] {
                    b'"' => {
                        i = string_end(t, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            Err(eof(t, if open == b'{' { "an object" } else { "a list" }))
        }
        Some(_) => {
            let mut i = at;
            while i < t.len() && !matches!(t[i], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            Ok(i)
        }
    }
}

fn string_end(t: &[u8], at: usize) -> Syntax<usize> {
    let mut i = at + 1;
    while i < t.len() {
        match t[i] {
            b'\\' => i += 2,
            b'"' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err(eof(t, "a string"))
}

/// The members of the object at `at`: each key and the range of its value.
fn members(text: &str, at: usize) -> Syntax<Vec<(String, Range<usize>)>> {
    let t = text.as_bytes();
    let mut out = Vec::new();
    let mut i = ws(t, at + 1);
    if t.get(i) == Some(&b'}') {
        return Ok(out);
    }
    loop {
        match t.get(i) {
            None => return Err(eof(t, "an object")),
            Some(b'"') => {}
            Some(_) => return Err((i, "key must be a string".into())),
        }
        let key_end = string_end(t, i)?;
        let key = match piece(text, i..key_end)? {
            Value::String(key) => key,
            _ => return Err((i, "key must be a string".into())),
        };
        i = ws(t, key_end);
        match t.get(i) {
            None => return Err(eof(t, "an object")),
            Some(b':') => {}
            Some(_) => return Err((i, "expected `:`".into())),
        }
        i = ws(t, i + 1);
        let end = value_end(t, i)?;
        out.push((key, i..end));
        i = ws(t, end);
        match t.get(i) {
            None => return Err(eof(t, "an object")),
            Some(b',') => {
                i = ws(t, i + 1);
                if t.get(i) == Some(&b'}') {
                    return Err((i, "trailing comma".into()));
                }
            }
            Some(b'}') => return Ok(out),
            Some(_) => return Err((i, "expected `,` or `}`".into())),
        }
    }
}

/// Hands `each` the range of every element of the array at `at`, in order.
fn elements(text: &str, at: usize, each: &mut dyn FnMut(Range<usize>) -> Syntax<()>) -> Syntax<()> {
    let t = text.as_bytes();
    let mut i = ws(t, at + 1);
    if t.get(i) == Some(&b']') {
        return Ok(());
    }
    loop {
        let end = value_end(t, i)?;
        each(i..end)?;
        i = ws(t, end);
        match t.get(i) {
            None => return Err(eof(t, "a list")),
            Some(b',') => {
                i = ws(t, i + 1);
                if t.get(i) == Some(&b']') {
                    return Err((i, "trailing comma".into()));
                }
            }
            Some(b']') => return Ok(()),
            Some(_) => return Err((i, "expected `,` or `]`".into())),
        }
    }
}

/// Checks the syntax of a piece not needed any more (after an error in the message),
/// level by level, never holding more than a small piece.
fn skip_piece(text: &str, range: Range<usize>) -> Syntax<()> {
    match text.as_bytes()[range.start] {
        b'{' => {
            for (_, value) in members(text, range.start)? {
                skip_piece(text, value)?;
            }
            Ok(())
        }
        b'[' => elements(text, range.start, &mut |item| skip_piece(text, item)),
        _ => piece(text, range).map(drop),
    }
}

/// A small piece of the text as a `Value`; a syntax error at its offset in the text.
fn piece(text: &str, range: Range<usize>) -> Syntax<Value> {
    let parsed = serde_json::from_str(&text[range.clone()]);
    // A piece cut short (`tru`) is an error about the byte after it, as in the whole.
    let range = match &parsed {
        Err(e) if e.is_eof() && range.end < text.len() => {
            let next = range.end + text[range.end..].chars().next().map_or(1, char::len_utf8);
            range.start..next
        }
        _ => range,
    };
    let parsed = match parsed {
        Err(e) if e.is_eof() => serde_json::from_str::<Value>(&text[range.clone()]).and(Err(e)),
        other => other,
    };
    parsed.map_err(|e| {
        // serde_json counts lines and columns in the piece: back to an offset.
        let piece = &text.as_bytes()[range.clone()];
        let line_start = piece
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(e.line().saturating_sub(2))
            .map_or(0, |(i, _)| if e.line() >= 2 { i + 1 } else { 0 });
        let at = range.start + line_start + e.column().saturating_sub(1);
        (at.min(text.len()), what(&e))
    })
}

#[cfg(test)]
mod tests {
    use kafka_elect_leaders::{parse_request, parse_response};
    use serde_json::Value;

    use crate::json::print::Message;
    use crate::json::read::tests::Trickle;
    use crate::json::read::{Json, JsonStream};
    use crate::json::sources::encode_value;

    /// Every value of `input` encoded as `encode` does (frames, then the first error),
    /// values of `large_value` bytes or more read piece by piece.
    fn encode_all(input: &[u8], large_value: usize) -> (Vec<Vec<u8>>, Option<String>) {
        let trickle = Trickle {
            bytes: input,
            step: 0,
        };
        let mut stream = JsonStream::with_large_value(trickle, large_value);
        let mut frames = Vec::new();
        loop {
            let (value, (first, last)) = match stream.next() {
                Ok(Some(next)) => next,
                Ok(None) => return (frames, None),
                Err(e) => return (frames, Some(e)),
            };
            let frame = match value {
                Json::Value(value) => encode_value(&value),
                Json::Large(frame) => frame,
            };
            match frame {
                Ok(frame) => frames.push(frame),
                Err(e) => return (frames, Some(format!("lines {first}-{last}: {e}"))),
            }
        }
    }

    /// The corpus frames as `decode` prints them, pretty-printed too, so that large values
    /// read piece by piece meet every field, null and tagged field there is.
    fn corpus_json() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let mut lines = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".bin") {
                continue;
            }
            let frame = std::fs::read(&path).unwrap();
            let line = if name.starts_with("request") {
                Message::Request(parse_request(&frame).unwrap()).text(None)
            } else {
                let version = i16::from(name.as_bytes()["response-v".len()] - b'0');
                Message::Response(parse_response(&frame, version).unwrap()).text(None)
            };
            let value: Value = serde_json::from_str(&line).unwrap();
            lines.push(serde_json::to_string_pretty(&value).unwrap());
            lines.push(line);
        }
        assert!(lines.len() >= 20);
        lines
    }

    #[test]
    fn large_values_read_piece_by_piece_encode_as_small_ones_do() {
        let all = corpus_json().join("\n");
        let whole = encode_all(all.as_bytes(), usize::MAX);
        let pieces = encode_all(all.as_bytes(), 0);
        assert_eq!(whole.1, None);
        assert_eq!(whole.0.len(), corpus_json().len());
        assert_eq!(pieces, whole);
    }

    #[test]
    fn large_values_refused_as_small_ones_are() {
        let request = r#"{"kind":"request","api_version":2,"topic_partitions":[{"topic":"a","partitions":[1,2]},{"topic":"b","partitions":[3]}]}"#;
        let response = r#"{"kind":"response","api_version":1,"replica_election_results":[{"topic":"a","partition_result":[{"partition_id":1,"error_code":0,"error_message":null}]}]}"#;
        let cases: Vec<String> = vec![
            // What the writer or the checks refuse, at every level.
            request.replace("\"api_version\":2,", ""),
            request.replace("\"api_version\":2", "\"api_version\":7"),
            request.replace("\"kind\":\"request\",", "\"bogus\":1,\"kind\":\"request\","),
            request.replace("[1,2]", "[1,\"x\"]"),
            request.replace("[1,2]", "[1,2147483648]"),
            request.replace("[1,2]", "null"),
            request.replace("[1,2]", "{}"),
            request.replace("[3]", "[3],\"extra\":true"),
            request.replace("{\"topic\":\"b\"", "{\"topic\":null"),
            request.replace("{\"topic\":\"b\",\"partitions\":[3]}", "7"),
            request
                .replace(":[{\"topic\":\"a\"", ":{\"x\":[{\"topic\":\"a\"")
                .replace("]}]}", "]}]}}"),
            request.replace(
                "\"topic_partitions\":[",
                "\"client_id\":5,\"topic_partitions\":[",
            ),
            request.replace("[1,2]", "[1,\"x\"],\"topic\":{\"hex\":\"zz\"}"),
            request.replace("\"kind\":\"request\"", "\"kind\":\"neither\""),
            response.to_owned(),
            response.replace("\"error_code\":0", "\"error_code\":\"NOT_A_CODE\""),
            response.replace("\"error_message\":null", "\"error_message\":null,\"x\":1"),
            response.replace("\"partition_id\":1,", ""),
            response.replace("[{\"partition_id\"", "[7,{\"partition_id\""),
            response.replace(
                "\"partition_result\":[",
                "\"partition_result\":null,\"p\":[",
            ),
            response.replace(
                "\"replica_election_results\":[",
                "\"replica_election_results\":null,\"r\":[",
            ),
            response.replace("\"api_version\":1", "\"api_version\":0,\"error_code\":3"),
            // Not JSON, at the levels walked piece by piece and inside the pieces.
            request.replace("[1,2]", "[1 2]"),
            // Refused, and not JSON further on: the syntax error is named.
            request.replace("[1,2]", "[1 2],\"zz\":1"),
            request
                .replace("[1,2]", "[1,\"x\"]")
                .replace("[3]", "[3 4]"),
            response.replace("\"partition_id\":1", "\"partition_id\":1 2"),
            response
                .replace("\"topic\":\"a\"", "\"topic\":\"a\",\"zz\":0")
                .replace("null}", "nul}"),
            request.replace("[1,2]", "[1,2,]"),
            request.replace("[1,2]", "[1,tru]"),
            request.replace("\"topic\":\"a\"", "\"topic\" \"a\""),
            request.replace("\"topic\":\"a\",", "\"topic\":\"a\" "),
            request.replace("{\"topic\":\"b\"", "{topic:\"b\""),
            request.replace("[3]}]}", "[3]},]}"),
            request.replace("\"a\"", "\"a\\q\""),
            format!("{request}\n  {}", &request[..request.len() - 9]),
            response.replace("\"error_message\":null", "\"error_message\":nul"),
        ];
        for case in &cases {
            for text in [case.clone(), format!("{{}}\n\n  {case}\n")] {
                let whole = encode_all(text.as_bytes(), usize::MAX);
                let pieces = encode_all(text.as_bytes(), 0);
                assert_eq!(pieces, whole, "{text}");
            }
        }
        // The cases are refusals, but for the valid response and the one whose missing
        // partition_id defaults to 0: the comparison above compared errors, not successes.
        let accepted: Vec<&String> = cases
            .iter()
            .filter(|c| encode_all(c.as_bytes(), 0).1.is_none())
            .collect();
        assert_eq!(accepted.len(), 2, "{accepted:#?}");
    }
}
