//! The ElectLeaders versions as texts name them (the JSON reader's messages, the tool's
//! messages and help), built from the codec's constants so that a new version changes the
//! texts with it.

use kafka_elect_leaders::{MAX_VERSION, MIN_VERSION, VERSIONS};

/// `0-2`: the versions as a range.
pub fn range() -> String {
    format!("{MIN_VERSION}-{MAX_VERSION}")
}

/// `0, 1 or 2`: the versions one by one.
pub fn list() -> String {
    let names: Vec<String> = VERSIONS.map(|v| v.to_string()).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use kafka_elect_leaders::{MAX_VERSION, MIN_VERSION, VERSIONS};

    #[test]
    fn names_every_version() {
        let list = super::list();
        let mut versions = VERSIONS;
        assert!(versions.all(|v| list.contains(&v.to_string())), "{list}");
        assert!(list.ends_with(&format!(" or {MAX_VERSION}")), "{list}");
        let range = format!("{MIN_VERSION}-{MAX_VERSION}");
        assert_eq!(super::range(), range);
    }
}
