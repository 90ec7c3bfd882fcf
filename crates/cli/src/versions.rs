//! The ElectLeaders versions in the tool's help texts. The versions as texts name them
//! ([`range`], [`list`]) are the JSON crate's, whose messages name them too.

pub use kafka_elect_leaders_json::versions::{list, range};

/// `text` with `{versions}` replaced by [`range`]: for help texts.
pub fn fill(text: &str) -> String {
    text.replace("{versions}", &range())
}

#[cfg(test)]
mod tests {
    use kafka_elect_leaders::{MAX_VERSION, MIN_VERSION};

    #[test]
    fn fills_in_the_versions() {
        let range = format!("{MIN_VERSION}-{MAX_VERSION}");
        assert_eq!(super::fill("v ({versions})"), format!("v ({range})"));
    }
}
