//! One module per command. Each takes its parsed flags ([`crate::flags`]) and standard
//! output, and returns a [`crate::fail::Failure`] for `main` to report.

pub mod decode;
pub mod encode;
pub mod fuzz;
pub mod gen;
pub mod inspect;
pub mod mutate;
#[cfg(feature = "proxy")]
pub mod proxy;
#[cfg(feature = "proxy")]
pub mod proxy_watch;
pub mod scan;
pub mod summary;
pub mod summary_html;
