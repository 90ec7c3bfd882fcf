//! JSON in and out, in the field names and order of the contract in docs/JSON.md: the
//! printer of `decode` and `scan --json` ([`print`](mod@print)), and what `encode` reads: a
//! stream of objects ([`stream`]), each read piece by piece, its lists packed as they are
//! read ([`packed`]), checked and handed to the library's writer ([`sources`]).

mod packed;
pub mod print;
pub mod sources;
pub mod stream;
