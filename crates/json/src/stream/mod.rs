//! Reading `encode`'s input: JSON objects one after the other from a byte stream, each
//! read as it arrives and turned into a frame, never held whole.
//!
//! serde_json reads the text from a 64 KiB buffer, a byte at a time, through
//! `DeserializeSeed` visitors: the members of an object are read as small `Value`s, except
//! its list (`topic_partitions`, `replica_election_results`) and the lists of that list's
//! elements (`partitions`, `partition_result`), whose items are checked and packed
//! (`packed`) one at a time, as they are read. What `encode` holds is the packed
//! list and then the frame, whatever the shape of the JSON: many small topics as well as
//! few large ones.
//!
//! A refusal (a misspelt key, a wrong type, a value out of range) is kept and the rest of
//! the object is still read, so that text that is not JSON is named first, as it would be
//! were the object read whole; then the object's members are checked in the same order
//! as ever (`sources`), the list's first refusal in its place among them.
//!
//! Here, the stream of objects and its errors; in `counted`, the buffered input and its
//! lines; in `seeds`, the visitors that read a message piece by piece.

mod counted;
mod seeds;

use std::io::{self, Read};

use serde::de::DeserializeSeed;

use super::sources;
use counted::Counted;
use seeds::{MessageSeed, ReadMessage};

/// How much of the input is read at a time.
const READ_BUFFER: usize = 64 * 1024;

/// The first and last line of an object.
pub type Lines = (usize, usize);

/// JSON objects read one after the other from a byte stream, whatever whitespace is
/// between them (none, newlines, the indentation of a pretty-printer), each encoded as it
/// is read.
pub struct JsonStream<R> {
    input: Counted<R>,
}

impl<R: Read> JsonStream<R> {
    /// A stream of the objects in `inner`, read 64 KiB at a time.
    pub fn new(inner: R) -> Self {
        Self::with_buffer(inner, READ_BUFFER)
    }

    /// A stream whose read buffer holds `capacity` bytes: objects longer than that are
    /// read piece by piece. For tests that compare both ways of reading on small objects.
    pub fn with_buffer(inner: R, capacity: usize) -> Self {
        JsonStream {
            input: Counted::new(inner, capacity.max(1)),
        }
    }

    /// The next object's frame, or why it cannot be one, and the lines the object spans;
    /// `None` at the end of the input. The error: where the text stops being JSON (line
    /// and column), or why the input could not be read.
    // Not `Iterator::next`: an error ends the stream (no object can be found in text after
    // the point where it stops being JSON), which an iterator of results would not say.
    #[allow(clippy::type_complexity, clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<(Result<Vec<u8>, String>, Lines)>, String> {
        let io = |e: io::Error| e.to_string();
        if !self.input.skip_whitespace().map_err(io)? {
            return Ok(None);
        }
        let (line, column) = self.input.position();
        // An object that fits in the buffer is parsed there, from a slice: serde_json reads
        // a slice about twice as fast as it reads bytes one by one from a reader.
        if let Some(len) = self.input.delimited().map_err(io)? {
            let text = &self.input.buf[self.input.pos..self.input.pos + len];
            match MessageSeed.deserialize(&mut serde_json::Deserializer::from_slice(text)) {
                Ok(read) => {
                    self.input.pos += len;
                    return Ok(Some(self.encode(read, line)));
                }
                // Text cut short where the delimiters said it ended: not JSON, and where
                // it stops being JSON is found by reading on.
                Err(e) if e.is_eof() => {}
                Err(e) => return Err(syntax(&e, line, column)),
            }
        }
        let mut json = serde_json::Deserializer::from_reader(&mut self.input);
        match MessageSeed.deserialize(&mut json) {
            Ok(read) => Ok(Some(self.encode(read, line))),
            Err(e) => Err(syntax(&e, line, column)),
        }
    }

    /// The frame of an object read from `line` to the current position.
    fn encode(&mut self, read: ReadMessage, line: usize) -> (Result<Vec<u8>, String>, Lines) {
        let (last, _) = self.input.position();
        let frame = sources::encode_message(&read.value, &read.tags, read.list);
        (frame, (line, last))
    }
}

/// serde_json's error, its position (counted from the object's first byte, at `line` and
/// `column`) in the input's terms.
fn syntax(e: &serde_json::Error, line: usize, column: usize) -> String {
    if e.is_io() {
        return e.to_string();
    }
    let at_line = line + e.line().saturating_sub(1);
    let at_column = e.column() + if e.line() <= 1 { column } else { 0 };
    let what = match what(e) {
        // serde_json's word for bytes that are not UTF-8 in a string.
        w if w == "invalid unicode code point" => "not UTF-8 text".to_owned(),
        w => w,
    };
    format!("line {at_line}, column {at_column}: not JSON: {what}")
}

/// serde_json's message without its position (which is given in the input's terms).
fn what(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use kafka_elect_leaders::{parse_request, parse_response};
    use serde_json::Value;

    use super::super::packed::Packed;
    use super::super::sources;
    use super::{JsonStream, Lines};
    use crate::print::Message;

    /// Hands out its bytes a few at a time (1, 2, 3, 1, ...), so that values, characters
    /// and lines are cut by every read's end.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.step = if self.step == 3 { 1 } else { self.step + 1 };
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    type Encoded = (Result<Vec<u8>, String>, Lines);

    /// Every object of `input` as `encode` reads it, then the syntax error if any.
    fn read_all(input: &[u8]) -> (Vec<Encoded>, Option<String>) {
        let (objects, error) = read_with(input, super::READ_BUFFER);
        // The same with a buffer too small for any object: all read piece by piece.
        assert_eq!(read_with(input, 8), (objects.clone(), error.clone()));
        (objects, error)
    }

    fn read_with(input: &[u8], buffer: usize) -> (Vec<Encoded>, Option<String>) {
        let trickle = Trickle {
            bytes: input,
            step: 0,
        };
        let mut stream = JsonStream::with_buffer(trickle, buffer);
        let mut objects = Vec::new();
        loop {
            match stream.next() {
                Ok(Some(next)) => objects.push(next),
                Ok(None) => return (objects, None),
                Err(e) => return (objects, Some(e)),
            }
        }
    }

    /// The oracle: a message read whole into one `Value` first, then its list checked and
    /// packed by the same functions, element after element.
    fn encode_whole(value: &Value) -> Result<Vec<u8>, String> {
        let response = value["kind"] == "response";
        let (key, inner) = match response {
            true => ("replica_election_results", "partition_result"),
            false => ("topic_partitions", "partitions"),
        };
        let Some(Value::Array(items)) = value.get(key) else {
            return sources::encode_message(value, &[], None);
        };
        let mut out = Packed::default();
        let mut refused = None;
        for (i, item) in items.iter().enumerate() {
            let path = format!("{key}[{i}]");
            let record = out.begin();
            let (entry, packed) = match item.get(inner) {
                Some(Value::Array(list)) => {
                    let mut packed = Ok(0);
                    for (j, p) in list.iter().enumerate() {
                        let path = format!("{path}.{inner}[{j}]");
                        let one = match response {
                            true => sources::pack_partition_result(&mut out, p, &[], path),
                            false => sources::pack_partition(&mut out, p, || path),
                        };
                        if let Err(e) = one {
                            packed = Err(e);
                            break;
                        }
                        packed = packed.map(|n| n + 1);
                    }
                    let mut entry = item.clone();
                    entry[inner] = Value::Array(Vec::new());
                    (entry, packed)
                }
                _ => (item.clone(), Ok(0)),
            };
            let entry = (&entry, &[][..]);
            let ended = sources::end_element(&mut out, record, response, entry, path, packed);
            if let Err(e) = ended {
                refused = Some(e);
                break;
            }
        }
        let mut message = value.clone();
        message[key] = Value::Array(Vec::new());
        sources::encode_message(&message, &[], Some(refused.map_or(Ok(out), Err)))
    }

    /// Every value of `input` read whole and encoded by the oracle: what `encode` must
    /// give, with `read_all`'s lines.
    fn oracle(input: &str) -> (Vec<Encoded>, Option<String>) {
        let (streamed, error) = read_all(input.as_bytes());
        let whole: Vec<Value> = serde_json::Deserializer::from_str(input)
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect();
        let encoded = whole
            .iter()
            .zip(&streamed)
            .map(|(value, (_, lines))| (encode_whole(value), *lines))
            .collect();
        (encoded, error)
    }

    fn request(topics: &str) -> String {
        format!(r#"{{"kind":"request","api_version":2,"topic_partitions":{topics}}}"#)
    }

    #[test]
    fn objects_with_their_lines_across_reads() {
        let one = request(r#"[{"topic":"trädgård 🚀","partitions":[1,2]}]"#);
        let pretty =
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(&one).unwrap()).unwrap();
        let input = format!("{one}{one}\n\n  {pretty}\n  {one} {one}");
        let (objects, error) = read_all(input.as_bytes());
        assert_eq!(error, None);
        let lines: Vec<Lines> = objects.iter().map(|(_, lines)| *lines).collect();
        let pretty_lines = pretty.lines().count();
        assert_eq!(
            lines,
            [
                (1, 1),
                (1, 1),
                (3, 2 + pretty_lines),
                (3 + pretty_lines, 3 + pretty_lines),
                (3 + pretty_lines, 3 + pretty_lines),
            ]
        );
        let first = objects[0].0.as_ref().unwrap();
        assert!(objects.iter().all(|(frame, _)| frame.as_ref() == Ok(first)));
        let parsed = parse_request(first).unwrap();
        let topic = parsed.topic_partitions().unwrap().iter().next().unwrap();
        assert_eq!(topic.topic(), "trädgård 🚀".as_bytes());
    }

    #[test]
    fn a_string_larger_than_the_read_buffer() {
        let name = "x".repeat(100 * 1024);
        let input = format!(
            "{}\n{}",
            request(&format!(r#"[{{"topic":"{name}","partitions":[1]}}]"#)),
            request("null")
        );
        let (objects, error) = read_all(input.as_bytes());
        assert_eq!(error, None);
        assert_eq!(objects[0].1, (1, 1));
        assert_eq!(objects[1].1, (2, 2));
        // Longer than a topic name can be: refused by the writer, naming the field.
        let refused = objects[0].0.as_ref().unwrap_err();
        assert!(refused.starts_with("topic_partitions[].topic"), "{refused}");
        assert!(objects[1].0.is_ok());
    }

    #[test]
    fn errors_name_line_and_column() {
        let cases: &[(&[u8], usize, &str)] = &[
            (
                b"{}\n{\"a\" 1}",
                1,
                "line 2, column 6: not JSON: expected `:`",
            ),
            (
                b"{}  {\"a\":",
                1,
                "line 1, column 9: not JSON: EOF while parsing",
            ),
            (
                b"{}\n {\"client_id\":\"\xff\"}",
                1,
                "line 2, column 16: not JSON: not UTF-8 text",
            ),
            (b"{} x", 1, "line 1, column 4: not JSON: expected value"),
        ];
        for &(input, good, expected) in cases {
            let (objects, error) = read_all(input);
            assert_eq!(objects.len(), good, "{expected}");
            let error = error.expect("an error");
            assert!(error.starts_with(expected), "{error:?} is not {expected:?}");
        }
    }

    /// The corpus frames as `decode` prints them, pretty-printed too, so that the reader
    /// meets every field, null and tagged field there is.
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
    fn the_corpus_encodes_back_to_its_frames() {
        let all = corpus_json().join("\n");
        let (objects, error) = read_all(all.as_bytes());
        assert_eq!(error, None);
        assert_eq!(objects.len(), corpus_json().len());
        assert!(objects.iter().all(|(frame, _)| frame.is_ok()));
        assert_eq!((objects, error), oracle(&all));
    }

    #[test]
    fn objects_read_piece_by_piece_are_refused_as_whole_ones_are() {
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
            request.replace("{\"topic\":\"b\",\"partitions\":[3]}", "[3]"),
            request
                .replace(":[{\"topic\":\"a\"", ":{\"x\":[{\"topic\":\"a\"")
                .replace("]}]}", "]}]}}"),
            request.replace(
                "\"topic_partitions\":[",
                "\"client_id\":5,\"topic_partitions\":[",
            ),
            request.replace("[1,2]", "[1,\"x\"],\"topic\":{\"hex\":\"zz\"}"),
            request.replace("\"kind\":\"request\"", "\"kind\":\"neither\""),
            // The list before the kind, given twice, or the other kind's list.
            request.replace("\"kind\":\"request\",", "") + "\n" + "{\"topic_partitions\":[],\"kind\":\"request\",\"api_version\":0}",
            request.replace("\"topic_partitions\":[", "\"topic_partitions\":null,\"topic_partitions\":["),
            request.replace("]}]}", "]}],\"topic_partitions\":5}"),
            request.replace("\"partitions\":[3]", "\"partitions\":[3],\"partitions\":[4,5]"),
            request.replace("\"partitions\":[3]", "\"partitions\":[3],\"partitions\":null"),
            request.replace("\"topic_partitions\"", "\"replica_election_results\""),
            request.replace("\"kind\":\"request\"", "\"kind\":\"response\""),
            // Tagged fields at every level, read item by item, and refused there.
            request.replace("\"api_version\":2", "\"api_version\":2,\"tagged_fields\":[{\"tag\":1,\"data\":\"00ff\"},{\"tag\":3}],\"header_tagged_fields\":[{\"tag\":0,\"data\":\"\"}]"),
            request.replace("[1,2]", "[1,2],\"tagged_fields\":[{\"tag\":7,\"data\":\"01\"}]"),
            request.replace("[1,2]", "[1,2],\"tagged_fields\":[{\"tag\":7,\"data\":\"0\"}]"),
            request.replace("[1,2]", "[1,2],\"tagged_fields\":[{\"tag\":-1}]"),
            request.replace("[1,2]", "[1,2],\"tagged_fields\":[{\"tag\":1,\"x\":0}],\"tagged_fields\":[]"),
            request.replace("[1,2]", "[1,2],\"tagged_fields\":[],\"tagged_fields\":[{\"tag\":1,\"x\":0}]"),
            request.replace("[1,2]", "[1,2],\"tagged_fields\":5"),
            request.replace("\"api_version\":2", "\"api_version\":1,\"tagged_fields\":[{\"tag\":1}]"),
            request.replace("\"api_version\":2", "\"api_version\":2,\"header_tagged_fields\":[7]"),
            // A key not allowed, whatever its value, and wrong values of every size.
            request.replace("[1,2]", "[1,2],\"bogus\":[[[1,2,{\"a\":[]}]]]"),
            request.replace("\"api_version\":2", "\"api_version\":2,\"client_id\":[1,2,3]"),
            request.replace("\"api_version\":2", "\"api_version\":2,\"timeout_ms\":{\"a\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}"),
            // Not an object at all.
            "[1,2]".to_owned(),
            "\"x\"".to_owned(),
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
            response.replace("\"api_version\":1", "\"api_version\":2").replace("null}", "null,\"tagged_fields\":[{\"tag\":4,\"data\":\"abcd\"}]}"),
            response.replace("\"api_version\":1", "\"api_version\":2").replace("null}", "null,\"tagged_fields\":[{\"data\":\"abcd\"}]}"),
            response.replace("null}", "null,\"bogus\":{}}"),
            response.replace("\"partition_id\":1,", "\"partition_id\":[1],"),
            // Not JSON, in the lists and inside their items.
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
                let streamed = read_all(text.as_bytes());
                assert_eq!(streamed, oracle(&text), "{text}");
            }
        }
        // All are refusals but for the valid response, the one whose missing partition_id
        // defaults to 0, the two whose later list counts, and the four with valid tagged
        // fields: the comparison above compared errors, not successes.
        let accepted: Vec<&String> = cases
            .iter()
            .filter(|c| {
                let (objects, error) = read_all(c.as_bytes());
                error.is_none() && objects.iter().all(|(frame, _)| frame.is_ok())
            })
            .collect();
        assert_eq!(accepted.len(), 8, "{accepted:#?}");
    }
}
