//! Bytes as hex text and back: how the JSON writes bytes that are not text (`{"hex":"..."}`,
//! a tagged field's `"data"`) and reads them back; the tool also shows bytes with it.

/// Lowercase hex of `bytes`, no separators.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

/// Bytes from hex text with no separators (the `{"hex":"..."}` and tagged-field forms).
pub fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits = text.as_bytes();
    if digits.len() % 2 != 0 {
        return Err(format!(
            "odd number of hex digits ({}) in \"{text}\"",
            digits.len()
        ));
    }
    let nibble = |c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!("{:?} is not a hex digit", c as char)),
        }
    };
    digits
        .chunks_exact(2)
        .map(|pair| Ok((nibble(pair[0])? << 4) | nibble(pair[1])?))
        .collect()
}
