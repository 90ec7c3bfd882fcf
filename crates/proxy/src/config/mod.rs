//! What the guard is told: every setting and its default ([`settings`]), the TOML file
//! that fills them ([`file`]), a file's settings merged with the command line's
//! ([`merge`]), and a new configuration put in force while the guard runs ([`reload`]),
//! which refuses rules that drop a protection unless told to ([`weakening`]).

pub mod file;
pub mod merge;
pub mod reload;
pub mod settings;
pub mod weakening;
