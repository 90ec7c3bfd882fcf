//! Canonical form, told by a walk of the wire independent of the crate: every uvarint
//! minimal, every null written -1 (classic) or 0 (compact). Kafka writes nothing else, and
//! neither may our writer; a frame in that form must re-encode to exactly its bytes.

pub(crate) struct Walk<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) at: usize,
    pub(crate) canonical: bool,
}

impl<'a> Walk<'a> {
    fn new(frame: &'a [u8]) -> Option<Self> {
        Some(Walk {
            buf: frame.get(4..)?,
            at: 0,
            canonical: true,
        })
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let b = self.buf.get(self.at..end)?;
        self.at = end;
        Some(b)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn uvarint(&mut self) -> Option<u32> {
        let mut value: u64 = 0;
        for i in 0..5 {
            let b = *self.take(1)?.first()?;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && b == 0 {
                    self.canonical = false;
                }
                return u32::try_from(value).ok();
            }
        }
        None
    }

    /// A string's length: `None` for null; a non-canonical null is noted.
    fn string_len(&mut self, flexible: bool) -> Option<Option<usize>> {
        if flexible {
            let n = self.uvarint()?;
            return Some(n.checked_sub(1).map(|n| n as usize));
        }
        let n = self.i16()?;
        if n < -1 {
            self.canonical = false;
        }
        Some(usize::try_from(n).ok())
    }

    fn string(&mut self, flexible: bool) -> Option<()> {
        if let Some(n) = self.string_len(flexible)? {
            self.take(n)?;
        }
        Some(())
    }

    fn count(&mut self, flexible: bool) -> Option<Option<usize>> {
        if flexible {
            let n = self.uvarint()?;
            return Some(n.checked_sub(1).map(|n| n as usize));
        }
        let n = self.i32()?;
        if n < -1 {
            self.canonical = false;
        }
        Some(usize::try_from(n).ok())
    }

    fn tags(&mut self, flexible: bool) -> Option<()> {
        if !flexible {
            return Some(());
        }
        let n = self.uvarint()?;
        for _ in 0..n {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.take(size as usize)?;
        }
        Some(())
    }

    fn done(&self) -> Option<bool> {
        (self.at == self.buf.len()).then_some(self.canonical)
    }
}

/// Whether a request frame (one that parses) is in canonical form; `None` if this walk
/// cannot read it.
pub fn canonical_request(frame: &[u8]) -> Option<bool> {
    let mut w = Walk::new(frame)?;
    w.i16()?;
    let version = w.i16()?;
    let flexible = version >= 2;
    w.i32()?;
    w.string(false)?;
    w.tags(flexible)?;
    if version >= 1 {
        w.take(1)?;
    }
    if let Some(n) = w.count(flexible)? {
        for _ in 0..n {
            w.string(flexible)?;
            let partitions = w.count(flexible)?.unwrap_or(0);
            w.take(partitions.checked_mul(4)?)?;
            w.tags(flexible)?;
        }
    }
    w.i32()?;
    w.tags(flexible)?;
    w.done()
}

/// The response counterpart of [`canonical_request`].
pub fn canonical_response(frame: &[u8], version: i16) -> Option<bool> {
    let mut w = Walk::new(frame)?;
    let flexible = version >= 2;
    w.i32()?;
    w.tags(flexible)?;
    w.i32()?;
    if version >= 1 {
        w.i16()?;
    }
    let results = w.count(flexible)?.unwrap_or(0);
    for _ in 0..results {
        w.string(flexible)?;
        let partitions = w.count(flexible)?.unwrap_or(0);
        for _ in 0..partitions {
            w.take(6)?;
            w.string(flexible)?;
            w.tags(flexible)?;
        }
        w.tags(flexible)?;
    }
    w.tags(flexible)?;
    w.done()
}
