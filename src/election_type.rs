//! `ElectionType`: which kind of leader election a request asks for.

use core::fmt;

/// The election a request asks for (`ElectionType`, int8, request versions 1+).
///
/// An open newtype: values Kafka does not define pass through unchanged, as Kafka's own
/// reader accepts them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct ElectionType(pub i8);

impl ElectionType {
    /// 0: elect the preferred replica. The only election version 0 can ask for, and the
    /// default.
    pub const PREFERRED: ElectionType = ElectionType(0);
    /// 1: elect the first live replica when no in-sync replica is left (KIP-460).
    pub const UNCLEAN: ElectionType = ElectionType(1);

    /// Kafka's name for a known value (`PREFERRED`, `UNCLEAN`).
    pub const fn name(self) -> Option<&'static str> {
        match self.0 {
            0 => Some("PREFERRED"),
            1 => Some("UNCLEAN"),
            _ => None,
        }
    }

    /// The election Kafka names `name` (`"PREFERRED"`, `"UNCLEAN"`), the inverse of
    /// [`name`](Self::name); `None` for any other string (the match is exact).
    ///
    /// ```
    /// use kafka_elect_leaders::ElectionType;
    /// assert_eq!(ElectionType::from_name("UNCLEAN"), Some(ElectionType::UNCLEAN));
    /// assert_eq!(ElectionType::from_name("unclean"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<ElectionType> {
        match name {
            "PREFERRED" => Some(Self::PREFERRED),
            "UNCLEAN" => Some(Self::UNCLEAN),
            _ => None,
        }
    }
}

impl fmt::Debug for ElectionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "ElectionType({} {name})", self.0),
            None => write!(f, "ElectionType({})", self.0),
        }
    }
}

impl fmt::Display for ElectionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "unknown election type {}", self.0),
        }
    }
}

impl From<i8> for ElectionType {
    fn from(v: i8) -> Self {
        ElectionType(v)
    }
}

impl From<ElectionType> for i8 {
    fn from(v: ElectionType) -> Self {
        v.0
    }
}

#[cfg(test)]
mod tests {
    use super::ElectionType;

    #[test]
    fn from_name_inverts_name() {
        for raw in i8::MIN..=i8::MAX {
            let election = ElectionType(raw);
            if let Some(name) = election.name() {
                assert_eq!(ElectionType::from_name(name), Some(election));
            }
        }
        assert_eq!(ElectionType::from_name("Preferred"), None);
        assert_eq!(ElectionType::from_name("0"), None);
    }
}
