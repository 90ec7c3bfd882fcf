//! Why a command failed, and the exit status that says so.

use std::io;
use std::process::ExitCode;

/// A command's failure. Reported once, by `main`, after standard output was flushed.
#[derive(Debug)]
pub enum Failure {
    /// Exit 2: bad arguments, or a file that cannot be opened. `command` names the
    /// subcommand whose `--help` to point at, when its text would help.
    Usage {
        command: Option<&'static str>,
        message: String,
        hint: bool,
    },
    /// Exit 1: malformed or unreadable input. One line, naming the field and the offset.
    Input(String),
    /// Exit 1 (or 2 when `usage`): already reported on stderr, as it happened (inspect goes
    /// on with its other inputs after a bad one).
    Reported { usage: bool },
    /// Writing standard output failed. A closed pipe (`decode | head`) is not an error.
    Output(io::Error),
}

impl Failure {
    pub fn usage(command: &'static str, message: impl Into<String>) -> Failure {
        Failure::Usage {
            command: Some(command),
            message: message.into(),
            hint: true,
        }
    }

    /// A file argument that cannot be opened: exit 2, no pointer to `--help`.
    pub fn cannot_open(message: impl Into<String>) -> Failure {
        Failure::Usage {
            command: None,
            message: message.into(),
            hint: false,
        }
    }

    /// Prints the failure on stderr and returns the exit status.
    pub fn report(self) -> ExitCode {
        match self {
            Failure::Usage {
                command,
                message,
                hint,
            } => {
                eprintln!("elect-leaders: {message}");
                match command {
                    _ if !hint => {}
                    Some(command) => eprintln!("Try 'elect-leaders {command} --help'."),
                    None => eprintln!("Try 'elect-leaders --help'."),
                }
                ExitCode::from(2)
            }
            Failure::Input(message) => {
                eprintln!("elect-leaders: {message}");
                ExitCode::from(1)
            }
            Failure::Reported { usage } => ExitCode::from(if usage { 2 } else { 1 }),
            Failure::Output(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Failure::Output(e) => {
                eprintln!("elect-leaders: cannot write standard output: {e}");
                ExitCode::from(1)
            }
        }
    }
}

impl From<clap::Error> for Failure {
    /// A usage error found while parsing the command line, in clap's words (with the
    /// command's usage line and where to find its help), after the tool's name.
    fn from(e: clap::Error) -> Failure {
        let text = e.render().to_string();
        let text = text.strip_prefix("error: ").unwrap_or(&text);
        Failure::Usage {
            command: None,
            message: text.trim_end().to_owned(),
            hint: false,
        }
    }
}

impl From<io::Error> for Failure {
    /// Errors writing standard output (reading errors are turned into `Input` where they
    /// happen, with the input's name).
    fn from(e: io::Error) -> Failure {
        Failure::Output(e)
    }
}

/// A line on stderr, after what came before it on stdout: a problem with one input of
/// several, the others still read.
pub fn warn(out: &mut dyn std::io::Write, message: &str) -> io::Result<()> {
    out.flush()?;
    eprintln!("elect-leaders: {message}");
    Ok(())
}

/// The one line that reports a malformed frame: where the frame starts in the input, and
/// the library's error (field, offset within the frame, what was wrong).
pub fn malformed(
    source: &str,
    index: usize,
    frame_offset: u64,
    error: &kafka_elect_leaders::Error,
) -> String {
    let at = frame_offset + error.offset as u64;
    format!(
        "{source}: frame {index} (input byte {frame_offset}): {field} at frame byte {offset} \
         (input byte {at}): {kind}",
        field = error.field,
        offset = error.offset,
        kind = error.kind,
    )
}

/// What to add to the error line of a frame read as a request that is no request of any
/// API Kafka defines: it may well be a response.
pub fn not_a_request_hint(frame: &[u8]) -> &'static str {
    match kafka_elect_leaders::peek_request(frame) {
        Ok(peek) if peek.api_key != kafka_elect_leaders::API_KEY => {
            " (not a request of any Kafka API; if the input holds responses, read it with \
             --response --version N)"
        }
        _ => "",
    }
}

/// The one line for a frame that failed to parse, `have` bytes of it read: a frame shorter
/// than its size prefix is reported as truncated, with how much of it there is; anything
/// else as [`malformed`] reports it.
pub fn frame_failure(
    source: &str,
    index: usize,
    frame_offset: u64,
    have: usize,
    error: &kafka_elect_leaders::Error,
) -> String {
    match error.kind {
        kafka_elect_leaders::ErrorKind::Incomplete { .. }
            if have < kafka_elect_leaders::SIZE_PREFIX_LEN =>
        {
            format!(
                "{source}: frame {index} (input byte {frame_offset}): frame truncated inside \
                 its size prefix: {have} of its 4 bytes"
            )
        }
        kafka_elect_leaders::ErrorKind::Incomplete { needed } => format!(
            "{source}: frame {index} (input byte {frame_offset}): frame truncated: {have} of \
             {} bytes ({needed} missing at input byte {})",
            have + needed,
            frame_offset + have as u64
        ),
        _ => malformed(source, index, frame_offset, error),
    }
}
