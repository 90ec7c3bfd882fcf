//! `inspect`: the annotated tree of each frame and its bytes, 16 to a row, laid out like
//! the reference page (`shared/reference/ElectLeaders.txt`).
//!
//! The trees come from `fields`, drawn by `tree`; the bytes by `hexdump`. For a malformed
//! frame the library has no partial view, so the tree shows what it can still tell (the
//! size prefix and, for a request, `peek_request`'s header fields), then the error with its
//! field and offset.

mod fields;
mod frame;
mod hexdump;
mod run;
mod style;
mod tree;

pub use run::run;
