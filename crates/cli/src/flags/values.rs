//! How the values of flags are read, each with a message that says what was expected.

use std::net::{SocketAddr, ToSocketAddrs};

use kafka_elect_leaders::is_supported;

use crate::versions;

/// An ElectLeaders version.
pub fn version(text: &str) -> Result<i16, String> {
    match text.parse::<i16>() {
        Ok(version) if is_supported(version) => Ok(version),
        _ => Err(format!(
            "expected {} (the versions ElectLeaders has)",
            versions::list()
        )),
    }
}

/// `host:port`, resolved: the first address.
pub fn address(text: &str) -> Result<SocketAddr, String> {
    match text.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(addr)) => Ok(addr),
        _ => Err("expected host:port (e.g. 127.0.0.1:9092)".into()),
    }
}

/// A broker address as given: resolved, and its host name when it is not an IP address
/// (what its TLS certificate is checked against).
#[cfg(feature = "proxy")]
pub use kafka_elect_leaders_proxy::file::Upstream;

/// `host:port` of a broker, resolved, keeping the host name.
#[cfg(feature = "proxy")]
pub fn upstream(text: &str) -> Result<Upstream, String> {
    Upstream::parse(text)
}

/// `--dynamic-listen IP:FIRST-LAST`.
#[cfg(feature = "proxy")]
pub fn dynamic_listen(
    text: &str,
) -> Result<kafka_elect_leaders_proxy::addresses::DynamicListen, String> {
    kafka_elect_leaders_proxy::addresses::DynamicListen::parse(text)
}

/// A whole number of at least `MIN`.
#[cfg(feature = "proxy")]
/// An API key the guard's table of Kafka's APIs does not know (`--forward-unknown-api`).
#[cfg(feature = "proxy")]
pub fn unknown_api_key(text: &str) -> Result<i16, String> {
    let key: i16 = text
        .parse()
        .map_err(|_| "expected an API key (a whole number)".to_owned())?;
    match kafka_elect_leaders_proxy::apis::door_of(key) {
        Some(door) => Err(format!(
            "api key {key} is {}, which the guard knows ({}): only keys Kafka 4.4 does not \
             define can be forwarded",
            door.name,
            door.class.name()
        )),
        None => Ok(key),
    }
}

pub fn count<const MIN: usize>(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= MIN => Ok(n),
        _ => Err(format!("expected a whole number of at least {MIN}")),
    }
}

/// `--min-replication`: 1 to 32767 (a replication factor is an int16).
#[cfg(feature = "proxy")]
pub fn replication(text: &str) -> Result<i16, String> {
    match text.parse::<i16>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number from 1 to 32767".into()),
    }
}

/// A frame size limit: at least the 8 bytes of a request header's first fields, at most
/// what a size prefix (an int32) can say.
#[cfg(feature = "proxy")]
pub fn frame_size(text: &str) -> Result<usize, String> {
    let size = count::<{ kafka_elect_leaders_proxy::file::MIN_FRAME_SIZE }>(text)?;
    if size > i32::MAX as usize {
        return Err(format!("at most {} (a size prefix is an int32)", i32::MAX));
    }
    Ok(size)
}

/// `--max-buffered-bytes`: bytes, or a number with `KiB`, `MiB` or `GiB`.
#[cfg(feature = "proxy")]
pub fn buffered_bytes(text: &str) -> Result<usize, String> {
    kafka_elect_leaders_proxy::file::parse_bytes(
        text,
        kafka_elect_leaders_proxy::file::MIN_BUFFERED_BYTES,
    )
}

/// `--refusal-text`: see `kafka_elect_leaders_proxy::elect::check_refusal_text`.
#[cfg(feature = "proxy")]
pub fn refusal_text(text: &str) -> Result<String, String> {
    kafka_elect_leaders_proxy::elect::check_refusal_text(text).map(|()| text.to_owned())
}

/// `--proxy-protocol-from`: an address or a range.
#[cfg(feature = "proxy")]
pub fn source_range(text: &str) -> Result<kafka_elect_leaders_proxy::IpNet, String> {
    kafka_elect_leaders_proxy::parse_source_range(text)
}

/// `--refused-bytes-per-second`: bytes, or a number with `KiB`, `MiB` or `GiB`; 0 for none.
#[cfg(feature = "proxy")]
pub fn bytes_per_second(text: &str) -> Result<usize, String> {
    kafka_elect_leaders_proxy::file::parse_bytes(text, 0)
}

/// `--audit-queue-bytes`: bytes, or a number with `KiB`, `MiB` or `GiB`.
#[cfg(feature = "proxy")]
pub fn audit_queue_bytes(text: &str) -> Result<usize, String> {
    kafka_elect_leaders_proxy::file::parse_bytes(
        text,
        kafka_elect_leaders_proxy::file::MIN_AUDIT_QUEUE_BYTES,
    )
}

/// The smallest `--buffer-size`: one slot for the largest loopback packet.
pub const MIN_CAPTURE_BUFFER: usize = 256 << 10;

/// `--buffer-size` (libpcap's buffer): bytes, or a number with `KiB`, `MiB` or `GiB`; at
/// least [`MIN_CAPTURE_BUFFER`], at most what libpcap takes (an `int`).
pub fn capture_buffer(text: &str) -> Result<usize, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let shift = match unit {
        "" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return Err("expected bytes, or a number with KiB, MiB or GiB (2MiB)".into()),
    };
    let size = digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or("expected bytes, or a number with KiB, MiB or GiB (2MiB)")?;
    if size < MIN_CAPTURE_BUFFER {
        return Err(format!("at least {}KiB", MIN_CAPTURE_BUFFER >> 10));
    }
    if size > i32::MAX as usize {
        return Err("at most 2047MiB (libpcap takes an int)".into());
    }
    Ok(size)
}

/// A duration: a number and a unit (`500ms`, `2s`, `10m`, `1h`), more than zero.
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("expected a duration above zero".into()),
        Err(e) => Err(format!(
            "expected a duration such as 500ms, 30s or 10m ({e})"
        )),
    }
}

/// A positive rate, per second.
pub fn rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
        _ => Err("expected a positive number".into()),
    }
}

#[cfg(test)]
mod capture_buffer_tests {
    use super::capture_buffer;

    #[test]
    fn capture_buffer_sizes() {
        assert_eq!(capture_buffer("2MiB"), Ok(2 << 20));
        assert_eq!(capture_buffer("262144"), Ok(256 << 10));
        assert_eq!(capture_buffer("2047MiB"), Ok(2047 << 20));
        for bad in [
            "",
            "MiB",
            "2mib",
            "2MB",
            "-1",
            "1.5MiB",
            "255KiB",
            "2GiB",
            "99999999999999999999GiB",
        ] {
            assert!(capture_buffer(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(all(test, feature = "proxy"))]
mod tests {
    use kafka_elect_leaders_proxy::file::parse_bytes;

    #[test]
    fn amounts_of_memory() {
        assert_eq!(parse_bytes("65536", 1), Ok(65536));
        assert_eq!(parse_bytes("64KiB", 1), Ok(65536));
        assert_eq!(parse_bytes("512MiB", 1), Ok(512 << 20));
        assert_eq!(parse_bytes("2GiB", 1), Ok(2 << 30));
        for bad in [
            "",
            "GiB",
            "1gib",
            "1GB",
            "-1",
            "1.5GiB",
            "99999999999999999999",
        ] {
            assert!(parse_bytes(bad, 1).is_err(), "{bad:?}");
        }
        assert!(parse_bytes("65535", 65536).is_err());
        assert!(super::buffered_bytes("65535").is_err());
    }
}
