//! Where frames go: binary, back to back, or hex text, one line per frame, with a `# ...`
//! comment line before it when there is something to say (a response's version, a
//! mutation).

use std::io::{self, IsTerminal, Write};

use kafka_elect_leaders_json::hex::to_hex;

use crate::fail::Failure;

/// Binary frames are not written to a terminal (`encode`, `gen`, `mutate` alike): they
/// would garble it, and nobody reads them there. A usage error (exit 2) that says what to
/// do instead.
pub fn refuse_binary_to_terminal(command: &'static str, hex: bool) -> Result<(), Failure> {
    if !hex && io::stdout().is_terminal() {
        return Err(Failure::usage(
            command,
            "refusing to write binary frames to a terminal: use --hex for hex text, or \
             redirect standard output to a file or a pipe",
        ));
    }
    Ok(())
}

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

/// Standard output flushed at the end of every line, for live input: the input arrives as
/// it is written (a capture piped in), and what was read of it must show at once, not when
/// a buffer fills. Other input is written without it, left to buffer.
pub struct LineFlushed<'a> {
    out: &'a mut dyn Write,
}

impl<'a> LineFlushed<'a> {
    pub fn new(out: &'a mut dyn Write) -> Self {
        LineFlushed { out }
    }
}

impl Write for LineFlushed<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)?;
        if buf.ends_with(b"\n") {
            self.out.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
