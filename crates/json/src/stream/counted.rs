//! `encode`'s input, buffered, with the lines read counted for the messages that name a
//! line, and where an object ends found by its delimiters alone (so that one that fits in
//! the buffer is parsed from a slice). No JSON is read here beyond the delimiters.

use std::io::{self, Read};

/// The input, buffered, with the lines of what has been read counted (lazily: only when
/// asked, over what was read since).
pub(super) struct Counted<R> {
    inner: R,
    pub(super) buf: Box<[u8]>,
    /// `buf[pos..end]` is read from the input and not yet handed out.
    pub(super) pos: usize,
    end: usize,
    /// `buf[..counted]` is counted in `line` and `column`.
    counted: usize,
    /// The line (from 1) of `buf[counted]`, and how many bytes precede it on that line.
    line: usize,
    column: usize,
}

impl<R: Read> Counted<R> {
    pub(super) fn new(inner: R, capacity: usize) -> Self {
        Counted {
            inner,
            buf: vec![0; capacity].into_boxed_slice(),
            pos: 0,
            end: 0,
            counted: 0,
            line: 1,
            column: 0,
        }
    }

    /// Reads more of the input once all of the buffer is handed out; false at its end.
    fn refill(&mut self) -> io::Result<bool> {
        self.count_to(self.end);
        self.pos = 0;
        self.end = 0;
        self.counted = 0;
        self.read_more()
    }

    /// Reads more of the input after `buf[..end]`; false at its end (or when the buffer
    /// is full).
    fn read_more(&mut self) -> io::Result<bool> {
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The length of the object or array that starts at the next byte, found by its
    /// delimiters alone (what is between them is checked when it is parsed), once all of
    /// it is in the buffer; `None` when it is longer than the buffer, or the input ends
    /// first, or the next value is not an object or an array.
    pub(super) fn delimited(&mut self) -> io::Result<Option<usize>> {
        if !matches!(self.buf[self.pos], b'{' | b'[') {
            return Ok(None);
        }
        loop {
            if let Some(len) = object_end(&self.buf[self.pos..self.end]) {
                return Ok(Some(len));
            }
            if self.pos > 0 {
                // Room for the rest after what is held of the object.
                self.count_to(self.pos);
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
                self.counted = 0;
            }
            if self.end == self.buf.len() || !self.read_more()? {
                return Ok(None);
            }
        }
    }

    fn count_to(&mut self, to: usize) {
        let bytes = &self.buf[self.counted..to];
        match memchr::memrchr(b'\n', bytes) {
            Some(last) => {
                self.line += memchr::memchr_iter(b'\n', bytes).count();
                self.column = bytes.len() - last - 1;
            }
            None => self.column += bytes.len(),
        }
        self.counted = to;
    }

    /// The line (from 1) and column (bytes before it on the line) of the next byte.
    pub(super) fn position(&mut self) -> (usize, usize) {
        self.count_to(self.pos);
        (self.line, self.column)
    }

    /// Moves past JSON whitespace; false at the end of the input.
    pub(super) fn skip_whitespace(&mut self) -> io::Result<bool> {
        loop {
            while self.pos < self.end {
                if !matches!(self.buf[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
                    return Ok(true);
                }
                self.pos += 1;
            }
            if !self.refill()? {
                return Ok(false);
            }
        }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.end && !self.refill()? {
            return Ok(0);
        }
        // serde_json reads one byte at a time.
        if let [byte] = out {
            *byte = self.buf[self.pos];
            self.pos += 1;
            return Ok(1);
        }
        let n = out.len().min(self.end - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// The length of the object or array at the start of `t` by its delimiters, if it ends
/// in `t`.
fn object_end(t: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        match t[i] {
            b'"' => {
                // To the closing quote, past escaped characters.
                i += 1;
                loop {
                    match t.get(i)? {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}
