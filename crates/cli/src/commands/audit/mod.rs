//! `elect-leaders audit`: the guard's audit trail looked at. `verify` checks its hash
//! chain ([`trail`]: the records of each replica's chains; [`verify`]: reading the input
//! and printing what is wrong).

pub mod trail;
pub mod verify;
