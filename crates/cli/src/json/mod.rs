//! JSON in and out, in the field names and order of the contract in docs/JSON.md: the
//! printer of `decode` and `scan --json` ([`print`](mod@print)), and what `encode` reads: a stream of
//! values ([`read`]), each checked and handed to the library's writer ([`sources`]), the
//! large ones piece by piece ([`large`]).

mod large;
pub mod print;
pub mod read;
pub mod sources;
