//! The bytes of a frame, 16 to a row, as on the reference page.

use std::io::{self, Write};

use kafka_elect_leaders::Error;

use super::style::{Palette, Region};

/// The frame's bytes, 16 to a row, with an offset column and the ASCII alongside; coloured
/// by region on a terminal. A malformed frame's failing byte is marked under its row.
pub fn hex_layout(
    out: &mut dyn Write,
    p: &Palette,
    bytes: &[u8],
    regions: &[Option<Region>],
    error: Option<&Error>,
) -> io::Result<()> {
    let len = bytes.len();
    let width = format!("{:x}", len.saturating_sub(1)).len().max(4);
    writeln!(out, "byte layout ({len} bytes, 16 bytes per row)")?;
    if p.on {
        writeln!(
            out,
            "{}frame{} {}header{} {}body{} {}tagged_fields{}",
            p.region(Some(Region::Frame)),
            p.reset(),
            p.region(Some(Region::Header)),
            p.reset(),
            p.region(Some(Region::Body)),
            p.reset(),
            p.region(Some(Region::Tagged)),
            p.reset()
        )?;
    }
    let columns: Vec<String> = (0..16).map(|c| format!("{c:X} ")).collect();
    writeln!(out, "{:width$}  {}", "", columns.join(" ").trim_end())?;
    let error_at = error.map(|e| e.offset);
    let rows = len.div_ceil(16).max(1);
    for row in 0..rows {
        let start = row * 16;
        let end = (start + 16).min(len);
        let mut hex = String::new();
        let mut ascii = String::new();
        for (i, &b) in bytes.iter().enumerate().take(end).skip(start) {
            if i > start {
                hex.push(' ');
            }
            let colour = if Some(i) == error_at {
                p.error_byte()
            } else {
                p.region(regions.get(i).copied().flatten())
            };
            hex.push_str(&format!("{colour}{b:02x}{}", p.reset()));
            ascii.push(if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            });
        }
        let missing = 16 - (end - start);
        let pad = " ".repeat(3 * missing);
        if ascii.is_empty() {
            writeln!(out, "{start:0width$x}")?;
        } else {
            writeln!(out, "{start:0width$x}  {hex}{pad}  {ascii}")?;
        }
        // The marker goes under the failing byte, or just past the last byte when the
        // input ended too early.
        if let (Some(e), Some(at)) = (error, error_at) {
            let marked_row = if at >= len { rows - 1 } else { at / 16 };
            if marked_row == row {
                let column = at.min(len) - start;
                writeln!(
                    out,
                    "{:indent$}{}^^ {}{}",
                    "",
                    p.error(),
                    e.field,
                    p.reset(),
                    indent = width + 2 + 3 * column
                )?;
            }
        }
    }
    Ok(())
}
