//! The guard's own filters (see [`crate::filter`]), one concern each, registered here in
//! the order they read a frame.

pub mod addresses;
pub mod api_versions;
pub mod doors;
pub mod elect;
mod follower;
pub mod leadership;
pub mod sasl;

pub use addresses::filter::Addresses;
pub use api_versions::ApiVersions;
pub use doors::Doors;
pub use elect::ElectLeaders;
pub use follower::FollowerFetch;
pub use leadership::Leadership;
pub use sasl::Sasl;

use std::sync::Arc;

use crate::filter::{Filter, Filters};

impl Filters {
    /// The guard's own filters, in the order they read: the closed doors (APIs only
    /// brokers send, keys without a decision: `crate::filters::doors::apis`; a Fetch sent as a follower
    /// replica), the SASL principal (every rule
    /// after it may name one), the leadership-change policy, the ElectLeaders policy
    /// (disjoint API keys), the ApiVersions cap and the broker-address rewrite (what
    /// changes the broker's answers). Defined here, with the filters, so that
    /// [`crate::filter`] names none of them.
    pub fn builtin() -> Filters {
        let builtin: Vec<Arc<dyn Filter>> = vec![
            Arc::new(doors::Doors),
            Arc::new(follower::FollowerFetch),
            Arc::new(sasl::Sasl),
            Arc::new(leadership::Leadership),
            Arc::new(elect::ElectLeaders),
            Arc::new(api_versions::ApiVersions),
            Arc::new(Addresses),
        ];
        Filters::from_list(builtin)
    }
}
