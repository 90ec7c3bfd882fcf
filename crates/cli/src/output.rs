//! Where frames go: binary, back to back, or hex text, one line per frame, with a `# ...`
//! comment line before it when there is something to say (a response's version, a
//! mutation).

use std::io::{self, Write};

use crate::input::to_hex;

/// Writes one frame; `comment` only with `hex` (binary frames have nowhere to put it).
pub fn write_frame(
    out: &mut dyn Write,
    hex: bool,
    comment: Option<&str>,
    frame: &[u8],
) -> io::Result<()> {
    if !hex {
        return out.write_all(frame);
    }
    if let Some(comment) = comment {
        writeln!(out, "# {comment}")?;
    }
    writeln!(out, "{}", to_hex(frame))
}
