//! What the guard tells its operators: the audit log of decisions ([`audit`]), the
//! diagnostics through the `log` facade ([`diag`]), the Prometheus metrics ([`metrics`]),
//! the listener that serves them with the status page ([`listener`]), and the readiness
//! its probes read ([`health`]).

pub mod audit;
pub mod diag;
pub mod health;
pub mod listener;
pub mod metrics;
