//! The guard's own filters (see [`crate::filter`]), one concern each, registered here in
//! the order they read a frame.

mod addresses;
mod api_versions;
mod elect;
mod leadership;
mod sasl;

use std::sync::Arc;

use crate::filter::Filter;

/// The built-in filters, in order: the principal first (every rule after it may name
/// one), then the two policies (disjoint API keys), then what changes the broker's
/// answers.
pub(crate) fn builtin() -> Vec<Arc<dyn Filter>> {
    vec![
        Arc::new(sasl::Sasl),
        Arc::new(leadership::Leadership),
        Arc::new(elect::ElectLeaders),
        Arc::new(api_versions::ApiVersions),
        Arc::new(addresses::Addresses),
    ]
}
