//! `elect-leaders`: a command-line tool for people who look at Kafka traffic. It reads and
//! writes ElectLeaders (API key 43) frames with the library's own parser and writer; nothing
//! here decodes the wire a second way.
//!
//! This file only runs the command the flags ([`flags`]) name and maps failures to exit
//! statuses: 0 success, 1 malformed or unreadable input, 2 usage error.

mod commands;
mod fail;
mod flags;
mod input;
mod notes;
mod output;
mod selection;
mod versions;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use fail::Failure;
use flags::{Command, Parsed};
use kafka_elect_leaders_capture as capture;

fn main() -> ExitCode {
    // Not locked: the proxy writes standard output from several threads.
    let mut out = BufWriter::new(io::stdout());
    let result = flags::parse(std::env::args_os()).and_then(|parsed| match parsed {
        Parsed::Print(text) => out.write_all(text.as_bytes()).map_err(Failure::Output),
        Parsed::Run(command) => run(*command, &mut out),
    });
    // Whatever was good is printed before the error is reported.
    let flushed = out.flush();
    let result = result.and(flushed.map_err(Failure::Output));
    report_peak_memory();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

fn run(command: Command, out: &mut dyn Write) -> Result<(), Failure> {
    match command {
        Command::Inspect(args) => commands::inspect::run(&args, out),
        Command::Decode(args) => commands::decode::run(&args, out),
        Command::Encode(args) => commands::encode::run(&args, out),
        Command::Scan(args) => commands::scan::run(&args, out),
        Command::Summary(args) => commands::summary::run(&args, out),
        Command::Gen(args) => commands::gen::run(&args, out),
        Command::Mutate(args) => commands::mutate::run(&args, out),
        Command::Fuzz(args) => commands::fuzz::run(&args, out),
        Command::Audit(args) => match &args.command {
            flags::AuditCommand::Verify(args) => commands::audit::verify::run(args, out),
        },
        #[cfg(feature = "proxy")]
        Command::Proxy(args) => commands::proxy::run(&args),
    }
}

/// With `ELECT_LEADERS_PEAK_RSS` set, the process's peak resident memory (Linux's
/// `VmHWM`) on standard error as it ends: what the memory bounds in crates/cli/README.md
/// are checked against.
fn report_peak_memory() {
    if std::env::var_os("ELECT_LEADERS_PEAK_RSS").is_none() {
        return;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    match status.lines().find_map(|l| l.strip_prefix("VmHWM:")) {
        Some(peak) => eprintln!("elect-leaders: peak RSS {}", peak.trim()),
        None => eprintln!("elect-leaders: peak RSS unknown"),
    }
}
