//! Reading JSON values one after the other from a byte stream, as `encode` reads its
//! input: small values whole, large ones handed to [`large`] as they are found.

use std::io::Read;

use serde_json::Value;

use super::large;

/// JSON values read one after the other from a byte stream, whatever whitespace is between
/// them (none, newlines, the indentation of a pretty-printer), with the lines each one
/// spans.
///
/// The input is read 64 KiB at a time (more only for a larger value) into a window of text,
/// and each value is parsed from the window with serde_json's `&str` parser, about twice
/// as fast as its byte-at-a-time reader. A value cut by the window's end is parsed again
/// once more text is in. Lines are counted over the text consumed, once.
pub struct JsonStream<R> {
    inner: R,
    /// The window; `text[start..]` is not read yet.
    text: String,
    start: usize,
    /// Bytes read but not in `text`: a character cut by the end of a read, or (when
    /// `invalid`) bytes that are not UTF-8, where the text stops for good.
    pending: Vec<u8>,
    invalid: bool,
    eof: bool,
    /// The line of `text[start]` (from 1) and how many bytes precede it on that line.
    line: usize,
    column: usize,
    /// Values this long or longer are read piece by piece ([`super::large`]).
    large_value: usize,
}

const JSON_WINDOW: usize = 64 * 1024;

/// The first and last line of a value.
pub type Lines = (usize, usize);

/// A value read by [`JsonStream`]: small ones whole, large ones already encoded (or
/// refused) piece by piece.
pub enum Json {
    Value(Value),
    Large(Result<Vec<u8>, String>),
}

impl<R: Read> JsonStream<R> {
    pub fn new(inner: R) -> Self {
        JsonStream {
            inner,
            text: String::new(),
            start: 0,
            pending: Vec::new(),
            invalid: false,
            eof: false,
            line: 1,
            column: 0,
            large_value: large::LARGE_VALUE,
        }
    }

    /// A stream that reads values of `large_value` bytes or more piece by piece: for tests
    /// that compare both ways of reading on small values.
    #[cfg(test)]
    pub fn with_large_value(inner: R, large_value: usize) -> Self {
        JsonStream {
            large_value,
            ..JsonStream::new(inner)
        }
    }

    /// The next value and its first and last lines; `None` at the end of the input. The
    /// error says where the text stops being JSON (line and column).
    pub fn next(&mut self) -> Result<Option<(Json, Lines)>, String> {
        loop {
            let text = &self.text[self.start..];
            // Whether more text can come: not past the end of the input, nor past bytes
            // that are not UTF-8.
            let can_grow = !self.eof && !self.invalid;
            // A large value is found by its delimiters and read piece by piece, never as
            // one `Value`; until its end is in, more is read without parsing it.
            let t = text.as_bytes();
            let first = large::ws(t, 0);
            match large::value_end(t, first) {
                Ok(end) if end - first >= self.large_value => {
                    let delimited = matches!(t[end - 1], b'}' | b']' | b'"');
                    if end < t.len() || delimited || !can_grow {
                        if let Some(frame) = large::encode(&text[..end]) {
                            let first_line = self.line + newlines(&t[..first]);
                            let last_line = first_line + newlines(&t[first..end]);
                            let frame = match frame {
                                Ok(frame) => Ok(frame),
                                Err(large::Refused::Message(e)) => Err(e),
                                Err(large::Refused::Syntax(at, what)) => {
                                    let before = &t[..at];
                                    let (line, column) =
                                        match before.iter().rposition(|&b| b == b'\n') {
                                            Some(nl) => (self.line + newlines(before), at - nl),
                                            None => (self.line, self.column + at + 1),
                                        };
                                    return Err(format!(
                                        "line {line}, column {column}: not JSON: {what}"
                                    ));
                                }
                            };
                            self.consume(end);
                            return Ok(Some((Json::Large(frame), (first_line, last_line))));
                        }
                    }
                }
                Err(_) if t.len() - first >= self.large_value && can_grow => {
                    self.fill()?;
                    continue;
                }
                _ => {}
            }
            let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
            match values.next() {
                None => {
                    // Whitespace only: consumed.
                    let len = text.len();
                    self.consume(len);
                    if !can_grow {
                        return match self.invalid {
                            true => Err(self.not_utf8()),
                            false => Ok(None),
                        };
                    }
                }
                Some(Ok(value)) => {
                    let end = values.byte_offset();
                    // A number (or true, false, null) at the end of the window may go on.
                    let delimited = matches!(text.as_bytes()[end - 1], b'}' | b']' | b'"');
                    if end < text.len() || delimited || !can_grow {
                        let first = text.len() - text.trim_start().len();
                        let first_line = self.line + newlines(&text.as_bytes()[..first]);
                        let last_line = first_line + newlines(&text.as_bytes()[first..end]);
                        self.consume(end);
                        return Ok(Some((Json::Value(value), (first_line, last_line))));
                    }
                }
                Some(Err(e)) if e.is_eof() && can_grow => {}
                Some(Err(e)) if e.is_eof() && self.invalid => return Err(self.not_utf8()),
                Some(Err(e)) => {
                    let line = self.line + e.line() - 1;
                    let column = e.column() + if e.line() == 1 { self.column } else { 0 };
                    let what = what(&e);
                    return Err(format!("line {line}, column {column}: not JSON: {what}"));
                }
            }
            self.fill()?;
        }
    }

    /// Moves past `n` bytes of the window, counting their lines.
    fn consume(&mut self, n: usize) {
        let bytes = &self.text.as_bytes()[self.start..self.start + n];
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                self.line += newlines(bytes);
                self.column = n - last - 1;
            }
            None => self.column += n,
        }
        self.start += n;
    }

    /// Reads more of the input after the unread text: at least 64 KiB, and as much as is
    /// unread already, so that a large value is parsed again only a few times.
    fn fill(&mut self) -> Result<(), String> {
        self.text.drain(..self.start);
        self.start = 0;
        let want = JSON_WINDOW.max(self.text.len());
        // Read straight after the pending bytes: no other buffer as large as the text.
        let start = self.pending.len();
        self.pending.resize(start + want, 0);
        let n = loop {
            match self.inner.read(&mut self.pending[start..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.pending.truncate(start);
                    return Err(e.to_string());
                }
            }
        };
        self.pending.truncate(start + n);
        if n == 0 {
            self.eof = true;
            // A character cut by the end of the input.
            self.invalid = !self.pending.is_empty();
            return Ok(());
        }
        let ok = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) => {
                // A character cut by the end of this read is completed by the next one.
                self.invalid = e.error_len().is_some();
                e.valid_up_to()
            }
        };
        let valid = std::str::from_utf8(&self.pending[..ok]).expect("checked above");
        self.text.reserve_exact(ok);
        self.text.push_str(valid);
        self.pending.drain(..ok);
        self.pending.shrink_to(JSON_WINDOW);
        Ok(())
    }

    /// Where the bytes that are not UTF-8 begin: right after the window's text.
    fn not_utf8(&self) -> String {
        let before = &self.text.as_bytes()[self.start..];
        let (line, column) = match before.iter().rposition(|&b| b == b'\n') {
            Some(last) => (self.line + newlines(before), before.len() - last),
            None => (self.line, self.column + before.len() + 1),
        };
        format!("line {line}, column {column}: not JSON: not UTF-8 text")
    }
}

/// serde_json's message without its position (which is given in the input's terms).
pub fn what(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

fn newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Read;

    use super::{Json, JsonStream, Lines, Value};

    /// Hands out its bytes a few at a time (1, 2, 3, 1, ...), so that values, characters
    /// and lines are cut by every read's end.
    pub struct Trickle<'a> {
        pub bytes: &'a [u8],
        pub step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            // 1, 2, 3, 1, ...
            self.step = if self.step == 3 { 1 } else { self.step + 1 };
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn read_all(input: &[u8]) -> (Vec<(Value, Lines)>, Option<String>) {
        let mut stream = JsonStream::new(Trickle {
            bytes: input,
            step: 0,
        });
        let mut values = Vec::new();
        loop {
            match stream.next() {
                Ok(Some((Json::Value(value), lines))) => values.push((value, lines)),
                Ok(Some((Json::Large(_), _))) => panic!("no value here is large"),
                Ok(None) => return (values, None),
                Err(e) => return (values, Some(e)),
            }
        }
    }

    #[test]
    fn values_with_their_lines_across_reads() {
        let input = "{\"a\":\"trädgård 🚀\"}{\"b\":[1,\n2]}\n\n  {\n \"c\": 12345\n}\n  7 \"x\" ";
        let (values, error) = read_all(input.as_bytes());
        assert_eq!(error, None);
        let lines: Vec<_> = values.iter().map(|(_, lines)| *lines).collect();
        assert_eq!(lines, [(1, 1), (1, 2), (4, 6), (7, 7), (7, 7)]);
        assert_eq!(values[0].0["a"], "trädgård 🚀");
        assert_eq!(values[2].0["c"], 12345);
        // A number cut by a read is read whole.
        assert_eq!(values[3].0, 7);
    }

    #[test]
    fn a_value_larger_than_the_window() {
        let big = format!("{{\"s\":\"{}\"}}\n{{}}", "x".repeat(300 * 1024));
        let mut stream = JsonStream::new(big.as_bytes());
        let Ok(Some((Json::Value(value), lines))) = stream.next() else {
            panic!("a value, read whole");
        };
        assert_eq!(value["s"].as_str().unwrap().len(), 300 * 1024);
        assert_eq!(lines, (1, 1));
        assert_eq!(stream.next().unwrap().unwrap().1, (2, 2));
        assert!(matches!(stream.next(), Ok(None)));
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
                b"{}\n {\"a\":\"\xff\"}",
                1,
                "line 2, column 8: not JSON: not UTF-8 text",
            ),
            (
                b"{}\n\xe2\x82",
                1,
                "line 2, column 1: not JSON: not UTF-8 text",
            ),
            (b"{} x", 1, "line 1, column 4: not JSON: expected value"),
        ];
        for &(input, good, expected) in cases {
            let (values, error) = read_all(input);
            assert_eq!(values.len(), good, "{expected}");
            let error = error.expect("an error");
            assert!(error.starts_with(expected), "{error:?} is not {expected:?}");
        }
    }
}
