//! A stream of frames cut one at a time, so a large input is never held whole; and hex
//! text read as the bytes it spells.

use std::io::{self, BufRead, Read};

use kafka_elect_leaders::{split_frame, Error, SIZE_PREFIX_LEN};

/// One frame as read: its offset in the input and its bytes, size prefix included. The
/// last frame of an input that ends too early is shorter than its size prefix says; the
/// parser then names the field that was cut.
pub struct RawFrame {
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// Why no frame could be read.
pub enum ReadFailure {
    /// The input could not be read (or its hex text is not hex).
    Io(io::Error),
    /// The size prefix is negative or over the library's maximum frame size: the library's
    /// error, with the prefix and where it starts.
    Size {
        offset: u64,
        prefix: [u8; SIZE_PREFIX_LEN],
        error: Error,
    },
}

/// Cuts a byte stream into frames, one at a time: the 4-byte size prefix, then that many
/// bytes. Sizes over [`DEFAULT_MAX_FRAME_SIZE`](kafka_elect_leaders::DEFAULT_MAX_FRAME_SIZE) are refused (by the library's
/// `split_frame`); a frame's buffer grows as its bytes arrive, never sized from the wire's
/// count up front.
pub struct FrameReader<R> {
    inner: R,
    offset: u64,
    finished: bool,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        FrameReader {
            inner,
            offset: 0,
            finished: false,
        }
    }

    /// The next frame; `Ok(None)` at the end of the input.
    pub fn next_frame(&mut self) -> Result<Option<RawFrame>, ReadFailure> {
        if self.finished {
            return Ok(None);
        }
        let offset = self.offset;
        let mut prefix = [0u8; SIZE_PREFIX_LEN];
        let got = read_full(&mut self.inner, &mut prefix).map_err(ReadFailure::Io)?;
        if got < SIZE_PREFIX_LEN {
            self.finished = true;
            if got == 0 {
                return Ok(None);
            }
            // A cut size prefix: the parser reports it as `size` ending too early.
            return Ok(Some(RawFrame {
                offset,
                bytes: prefix[..got].to_vec(),
            }));
        }
        // The library reads the prefix: a 4-byte buffer is `Incomplete` by exactly the
        // frame's size, or a malformed size.
        let size = match split_frame(&prefix) {
            Ok(_) => 0,
            Err(error) => match error.needed() {
                Some(size) => size,
                None => {
                    self.finished = true;
                    return Err(ReadFailure::Size {
                        offset,
                        prefix,
                        error,
                    });
                }
            },
        };
        let mut bytes = Vec::with_capacity(SIZE_PREFIX_LEN + size.min(64 * 1024));
        bytes.extend_from_slice(&prefix);
        (&mut self.inner)
            .take(size as u64)
            .read_to_end(&mut bytes)
            .map_err(ReadFailure::Io)?;
        if bytes.len() < SIZE_PREFIX_LEN + size {
            self.finished = true;
        }
        self.offset += bytes.len() as u64;
        Ok(Some(RawFrame { offset, bytes }))
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
pub(super) fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Decodes hex text as it is read, a line at a time: pairs of hex digits are bytes;
/// whitespace is ignored (a pair may even be split by it), and so is everything from `#`
/// to the end of the line, so the corpus's annotated `.hex` sources can be read directly.
pub struct HexReader<R> {
    inner: R,
    line: Vec<u8>,
    pos: usize,
    line_no: usize,
    /// A first digit waiting for its pair, with its line and column (for the message
    /// when the input ends there).
    high: Option<(u8, usize, usize)>,
}

impl<R: BufRead> HexReader<R> {
    pub fn new(inner: R) -> Self {
        HexReader {
            inner,
            line: Vec::new(),
            pos: 0,
            line_no: 0,
            high: None,
        }
    }
}

impl<R: BufRead> Read for HexReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < out.len() {
            let Some(&c) = self.line.get(self.pos) else {
                if n > 0 {
                    break;
                }
                self.line.clear();
                self.pos = 0;
                if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                    if let Some((_, line, column)) = self.high {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "hex input: odd number of hex digits: the last one (line \
                                 {line}, column {column}) has no pair, so the last byte is cut"
                            ),
                        ));
                    }
                    return Ok(0);
                }
                self.line_no += 1;
                continue;
            };
            self.pos += 1;
            let nibble = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                b'#' => {
                    self.pos = self.line.len();
                    continue;
                }
                c if c.is_ascii_whitespace() => continue,
                _ => {
                    let shown = String::from_utf8_lossy(&self.line[self.pos - 1..])
                        .chars()
                        .next()
                        .unwrap_or('?');
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "hex input: {shown:?} is not a hex digit (line {}, column {})",
                            self.line_no, self.pos
                        ),
                    ));
                }
            };
            match self.high.take() {
                None => self.high = Some((nibble, self.line_no, self.pos)),
                Some((high, ..)) => {
                    out[n] = (high << 4) | nibble;
                    n += 1;
                }
            }
        }
        Ok(n)
    }
}
