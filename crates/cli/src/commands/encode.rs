//! `encode`: JSON objects in, frames out, written by the library's writer.

use std::io::Write;

use crate::fail::Failure;
use crate::flags::EncodeArgs;
use crate::input::Source;
use crate::output::{refuse_binary_to_terminal, write_frame};
use kafka_elect_leaders_json::stream::JsonStream;

/// `encode`: JSON objects to frames. The objects may be one per line, spread over several
/// lines or back to back (`jq` without `-c`): they are read as a stream of JSON values,
/// each encoded as it is read (never held whole), and each error still names its line.
pub fn run(args: &EncodeArgs, out: &mut dyn Write) -> Result<(), Failure> {
    refuse_binary_to_terminal("encode", args.hex)?;
    let source = Source::from_arg_or_stdin(args.file.as_deref());
    let name = source.name();
    let mut values = JsonStream::new(source.open("encode", false)?);
    let mut objects = 0u64;
    loop {
        let (frame, lines) = match values.next() {
            Ok(None) if objects == 0 => {
                return Err(Failure::Input(format!(
                    "{name}: no JSON object in it: nothing to encode"
                )))
            }
            Ok(None) => return Ok(()),
            Ok(Some(next)) => next,
            Err(e) => return Err(Failure::Input(format!("{name}: {e}"))),
        };
        objects += 1;
        let frame = frame.map_err(|e| {
            let lines = match lines {
                (first, last) if first == last => format!("line {first}"),
                (first, last) => format!("lines {first}-{last}"),
            };
            Failure::Input(format!("{name}: {lines}: {e}"))
        })?;
        write_frame(out, args.hex, None, &frame)?;
    }
}
