//! Which versions exist and which fields each carries: the version rules, in one place.

use crate::error::{Error, ErrorKind};

/// ElectLeaders' API key.
pub const API_KEY: i16 = 43;
/// The oldest ElectLeaders version.
pub const MIN_VERSION: i16 = 0;
/// The newest ElectLeaders version.
pub const MAX_VERSION: i16 = 2;

/// Refuses a version outside [`MIN_VERSION`]..=[`MAX_VERSION`].
pub(crate) const fn check(version: i16, field: &'static str, offset: usize) -> Result<(), Error> {
    if version < MIN_VERSION || version > MAX_VERSION {
        Err(Error::new(
            ErrorKind::UnsupportedVersion(version),
            field,
            offset,
        ))
    } else {
        Ok(())
    }
}

/// Version 2 is the first flexible version: compact strings and arrays, tagged fields on
/// every struct, request header v2 and response header v1.
pub(crate) const fn is_flexible(version: i16) -> bool {
    version >= 2
}

/// `ElectionType` (request) is carried from version 1 on.
pub(crate) const fn has_election_type(version: i16) -> bool {
    version >= 1
}

/// The response's top-level `ErrorCode` is carried from version 1 on.
pub(crate) const fn has_top_level_error_code(version: i16) -> bool {
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
