//! What the guard tells its operators: the audit log of decisions ([`audit`]), the
//! diagnostics through the `log` facade ([`diag`]), the Prometheus metrics ([`metrics`])
//! and the listener that serves them with the status page ([`listener`]).

pub mod audit;
pub mod diag;
pub mod listener;
pub mod metrics;
