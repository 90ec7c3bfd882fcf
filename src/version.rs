//! Which versions exist and which fields each carries: the version rules, in one place.
//!
//! Everything that depends on the set of versions (the parser, the writer, the generators
//! and mutator, the fuzz checks, the tool's options) asks here rather than writing `0..=2`
//! or `% 3` itself, so that a new version is added in this module. The workspace's
//! `tests/version_literals.rs` checks that no such literal creeps back in elsewhere.

use core::ops::RangeInclusive;

use crate::error::{Error, ErrorKind};

/// ElectLeaders' API key.
pub const API_KEY: i16 = 43;
/// The oldest ElectLeaders version.
pub const MIN_VERSION: i16 = 0;
/// The newest ElectLeaders version.
pub const MAX_VERSION: i16 = 2;
/// The newest ElectLeaders version: the one to write when there is no reason to pick another.
pub const LATEST_VERSION: i16 = MAX_VERSION;
/// Every ElectLeaders version this crate reads and writes, oldest first.
pub const VERSIONS: RangeInclusive<i16> = MIN_VERSION..=MAX_VERSION;
/// How many versions there are.
pub const VERSION_COUNT: u16 = (MAX_VERSION - MIN_VERSION + 1) as u16;
/// The first flexible version (compact strings and arrays, tagged fields, header v2/v1).
pub const FIRST_FLEXIBLE_VERSION: i16 = 2;

/// Whether this crate reads and writes `version`.
pub const fn is_supported(version: i16) -> bool {
    version >= MIN_VERSION && version <= MAX_VERSION
}

/// The version `n` steps after [`MIN_VERSION`], wrapping around after [`MAX_VERSION`]:
/// how generators, mutators and fuzz targets turn a number into a version.
pub const fn nth_version(n: u64) -> i16 {
    MIN_VERSION + (n % VERSION_COUNT as u64) as i16
}

/// Refuses a version outside [`MIN_VERSION`]..=[`MAX_VERSION`].
pub(crate) const fn check(version: i16, field: &'static str, offset: usize) -> Result<(), Error> {
    if !is_supported(version) {
        Err(Error::new(
            ErrorKind::UnsupportedVersion(version),
            field,
            offset,
        ))
    } else {
        Ok(())
    }
}

/// Whether `version` is flexible: compact strings and arrays, tagged fields on every
/// struct, request header v2 and response header v1 (from [`FIRST_FLEXIBLE_VERSION`] on).
pub const fn is_flexible(version: i16) -> bool {
    version >= FIRST_FLEXIBLE_VERSION
}

/// Whether a request of `version` carries `ElectionType` (from version 1 on).
pub const fn has_election_type(version: i16) -> bool {
    version >= 1
}

/// Whether a response of `version` carries the top-level `ErrorCode` (from version 1 on).
pub const fn has_top_level_error_code(version: i16) -> bool {
    version >= 1
}

/// The request header version that goes with an ElectLeaders version.
pub const fn request_header_version(version: i16) -> i16 {
    if is_flexible(version) {
        2
    } else {
        1
    }
}

/// The response header version that goes with an ElectLeaders version.
pub const fn response_header_version(version: i16) -> i16 {
    if is_flexible(version) {
        1
    } else {
        0
    }
}
