//! The command line: every flag defined once ([`defs`]), the texts of `--help`, how flag
//! values are read, and [`parse()`], which turns the arguments into a [`Command`].

mod defs;
mod help;
mod parse;
mod values;

#[cfg(feature = "proxy")]
pub use defs::ProxyArgs;
pub use defs::{AuditCommand, VerifyArgs};
pub use defs::{
    ColorWhen, Command, DecodeArgs, EncodeArgs, FilterFlags, FrameKind, FuzzArgs, GenArgs,
    InspectArgs, LiveFlags, MutateArgs, ReadFlags, ScanArgs, SummaryArgs,
};
pub use parse::{parse, Parsed};
