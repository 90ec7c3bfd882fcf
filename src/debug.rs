//! `Debug` helpers for byte strings: text when it is UTF-8, hex when it is not.

use core::fmt;

/// Shows bytes as a quoted string when they are UTF-8, else as `hex:…`.
pub(crate) struct Bytes<'a>(pub &'a [u8]);

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match core::str::from_utf8(self.0) {
            Ok(s) => fmt::Debug::fmt(s, f),
            Err(_) => fmt::Debug::fmt(&Hex(self.0), f),
        }
    }
}

/// Shows an optional byte string: `None` for null.
pub(crate) struct OptBytes<'a>(pub Option<&'a [u8]>);

impl fmt::Debug for OptBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(b) => fmt::Debug::fmt(&Bytes(b), f),
            None => f.write_str("None"),
        }
    }
}

/// Shows bytes as `hex:0a0b…`.
pub(crate) struct Hex<'a>(pub &'a [u8]);

impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("hex:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}
