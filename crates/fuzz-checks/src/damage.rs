//! Damage done to an answer built whole, shared by the checks of the guard's address
//! rewrites (`addresses`, `endpoints`).

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
