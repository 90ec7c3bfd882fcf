//! What the checks of the guard's address rewrites (`addresses`, `endpoints`) share: the
//! addresses an answer is built with, and the damage done to it afterwards.

use arbitrary::Unstructured;

/// Maybe damages the built frame: cut short, a byte changed, or four bytes replaced (a
/// count or length that lies); whether it did.
pub(crate) fn damage(u: &mut Unstructured<'_>, frame: &mut Vec<u8>) -> bool {
    let Ok(how) = u.int_in_range(0u8..=3) else {
        return false;
    };
    let Ok(at) = u.choose_index(frame.len()) else {
        return false;
    };
    match how {
        1 => frame.truncate(at.max(4)),
        2 => frame[at] = u.arbitrary().unwrap_or(0xff),
        3 => {
            let value: [u8; 4] = u.arbitrary().unwrap_or([0xff; 4]);
            for (i, b) in value.into_iter().enumerate() {
                if let Some(byte) = frame.get_mut(at + i) {
                    *byte = b;
                }
            }
        }
        _ => return false,
    }
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    true
}

/// An entry's address: the upstream, the guard's listener, or another.
pub(crate) fn address(u: &mut Unstructured<'_>) -> arbitrary::Result<(String, i32)> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 | 1 => ("10.0.0.1".to_owned(), 9092),
        2 => ("127.0.0.1".to_owned(), 19092),
        _ => {
            let len = u.int_in_range(0..=12)?;
            (
                String::from_utf8_lossy(u.bytes(len)?).into_owned(),
                u.arbitrary()?,
            )
        }
    })
}
