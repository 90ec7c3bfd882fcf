//! The connection core: what every connection needs whatever the filters decide. The
//! listeners and their connections ([`server`], on [`connection_threads`]), each
//! connection's frames in and out in request order ([`conn`]), the memory and connection
//! budgets ([`budget`], per client address: [`clients`]; answers the guard writes itself:
//! [`heavy`]; refusals paced per client: [`refusal_pace`]), what the broker owes a request
//! ([`response_due`]), why a connection closes ([`close`]), the certificates on both sides
//! ([`tls`]), and what all connections share ([`shared`]).

pub mod budget;
pub mod clients;
pub mod close;
pub mod conn;
pub mod connection_threads;
pub mod heavy;
pub mod proxy_protocol;
pub mod refusal_pace;
pub mod response_due;
pub mod server;
pub mod shared;
pub mod tls;
