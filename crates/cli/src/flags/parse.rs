//! From the command line to a [`Command`], or to the text that `--help` or `--version`
//! asked for; every usage error as a [`Failure`] (exit status 2).

use std::ffi::OsString;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};

use super::defs::{Cli, Command};
use crate::fail::Failure;

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// Run a command.
    Run(Box<Command>),
    /// Print this (help or the version) on standard output, and succeed.
    Print(String),
}

/// Parses the whole command line (the program's name first), checking every rule between
/// flags.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Parsed, Failure> {
    let mut cli = Cli::command();
    let parsed = cli
        .try_get_matches_from_mut(args)
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches));
    let command = match parsed {
        Ok(parsed) => parsed.command,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return Ok(Parsed::Print(e.render().to_string()));
        }
        Err(e) => return Err(e.into()),
    };
    let broken = match &command {
        Command::Inspect(args) => args.check().map_err(|e| ("inspect", e.to_owned())),
        Command::Decode(args) => args.check().map_err(|e| ("decode", e.to_owned())),
        Command::Scan(args) => args.check().map_err(|e| ("scan", e.to_owned())),
        Command::Summary(args) => args.check().map_err(|e| ("summary", e.to_owned())),
        Command::Mutate(args) => args.check().map_err(|e| ("mutate", e.to_owned())),
        Command::Audit(args) => match &args.command {
            super::defs::AuditCommand::Verify(v) => {
                v.check().map_err(|e| ("audit verify", e.to_owned()))
            }
        },
        #[cfg(feature = "proxy")]
        Command::Proxy(args) => args.check().map_err(|e| ("proxy", e)),
        _ => Ok(()),
    };
    match broken {
        Ok(()) => Ok(Parsed::Run(Box::new(command))),
        Err((name, message)) => {
            // A command's path: `audit verify` is `verify` under `audit`.
            let mut sub = &mut cli;
            for word in name.split(' ') {
                sub = sub.find_subcommand_mut(word).expect("a subcommand of Cli");
            }
            Err(sub.error(ErrorKind::ArgumentConflict, message).into())
        }
    }
}
