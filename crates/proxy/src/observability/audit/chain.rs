//! The audit trail's hash chain (issue 45, item 2): every line a replica writes carries the
//! replica's id, the chain it belongs to (one per start), its sequence number in that chain
//! and the hash of the line before it, and ends with its own hash, so that a reader
//! (`elect-leaders audit verify`) can tell a removed, moved, duplicated or edited line
//! from a true trail.
//!
//! A line as written, its chain fields last, in this order:
//!
//! ```text
//! {...the record's own fields...,"replica":"guard-0","chain":"20261208T003522Z-5f1c0a9e3b7d2c41",
//!  "seq":7,"prev":"<64 hex digits>","hash":"<64 hex digits>"}
//! ```
//!
//! `hash` is SHA-256 (or HMAC-SHA-256 with the chain key) of the line's bytes without its
//! newline and without its last member: the bytes from the `{` up to the `"prev"` value
//! included, followed by `}`. `prev` is the `hash` of the line of the same chain with the
//! sequence number before (`null` for `seq` 0). Each start of the guard begins a new chain
//! at `seq` 0 with a line of its own, `"event":"chain-start"`, which names the chain and
//! the hash (`"algorithm"`: `sha256` or `hmac-sha256`). It cannot name the last hash of
//! the chain before: after a crash nobody knows which line was the last one written.
//!
//! The chain fields are added by the writer thread to each line just before its first
//! try ([`Chain::seal`]), in the order the lines are written: a line refused when queued
//! takes no sequence number, a line tried again (a full disk) is written again with the
//! same fields, and a line's own fields are shortened to [`super::MAX_LINE`] before, so
//! the chain fields are never cut.
//!
//! Without a key, anyone who can write the trail can also write a consistent chain over
//! what they changed (the hash is public): the chain then shows accidents and careless
//! edits only. With a key (HMAC), only its holders can.

use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};

use crate::observability::diag::{rfc3339, rfc3339_now};
use sha2::{Digest, Sha256};

/// The key of an HMAC chain. Never shown: its `Debug` says only that it is there.
#[derive(Clone)]
pub struct ChainKey(Vec<u8>);

impl std::fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChainKey(..)")
    }
}

/// The fewest bytes a chain key may have: 16 (128 bits).
pub const MIN_KEY_BYTES: usize = 16;

/// The longest replica id: 200 bytes, as the audit topic's events allow.
pub const MAX_REPLICA_BYTES: usize = 200;

impl ChainKey {
    /// The key in the file at `path`: its bytes, without the white space at their end (a
    /// newline an editor added). An error, which never quotes the file's bytes, when it
    /// cannot be read or holds fewer than [`MIN_KEY_BYTES`].
    pub fn from_file(path: &Path) -> io::Result<ChainKey> {
        let bytes = std::fs::read(path)?;
        ChainKey::new(bytes.trim_ascii_end())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// `bytes` as a key: at least [`MIN_KEY_BYTES`] of them.
    pub fn new(bytes: &[u8]) -> Result<ChainKey, &'static str> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err("a key needs at least 16 bytes");
        }
        Ok(ChainKey(bytes.to_vec()))
    }
}

/// Whether `id` can be a replica id: 1 to 200 bytes of letters, digits, `.`, `_`, `-` and
/// `:` (a host name, a pod name), as the audit topic's events need too.
pub fn check_replica(id: &str) -> Result<(), &'static str> {
    if id.is_empty() || id.len() > MAX_REPLICA_BYTES {
        return Err("a replica id has 1 to 200 bytes");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
    {
        return Err("a replica id holds only letters, digits, '.', '_', '-' and ':'");
    }
    Ok(())
}

/// The replica id when none is set: the host name (`HOSTNAME`, which Kubernetes sets to
/// the pod's name, else the kernel's), or `guard` when there is none that can be one.
pub fn default_replica() -> String {
    let kernel = || std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    [std::env::var("HOSTNAME").ok(), kernel()]
        .into_iter()
        .flatten()
        .map(|name| name.trim().to_owned())
        .find(|name| check_replica(name).is_ok())
        .unwrap_or_else(|| "guard".to_owned())
}

/// The hash of a line's hashed bytes: SHA-256, or HMAC-SHA-256 under `key`.
pub fn line_hash(key: Option<&ChainKey>, bytes: &[u8]) -> [u8; 32] {
    match key {
        None => Sha256::digest(bytes).into(),
        Some(key) => {
            // HMAC takes a key of any length.
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key.0)
                .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
            mac.update(bytes);
            mac.finalize().into_bytes().into()
        }
    }
}

/// The name of the hash, as a chain's start says it.
pub fn algorithm(key: Option<&ChainKey>) -> &'static str {
    match key {
        None => "sha256",
        Some(_) => "hmac-sha256",
    }
}

/// One replica's chain since this start: what the next line's fields are.
#[derive(Debug)]
pub struct Chain {
    /// The replica id, as a JSON string.
    replica: String,
    /// The chain's id, as a JSON string.
    id: String,
    key: Option<ChainKey>,
    /// The next line's sequence number.
    seq: u64,
    /// The hash of the line before (none before the first).
    prev: Option<[u8; 32]>,
}

impl Chain {
    /// A new chain of `replica` (a checked id: [`check_replica`]), hashed under `key`, named
    /// by the time now and 64 random bits.
    pub fn new(replica: &str, key: Option<ChainKey>) -> Chain {
        let now = SystemTime::now();
        // std's hasher keys are random per process (and per RandomState): 64 bits no other
        // start of this replica will have.
        let mut random = std::collections::hash_map::RandomState::new().build_hasher();
        random.write_u128(
            now.duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        random.write_u32(std::process::id());
        let stamp: String = rfc3339(now)
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        // 2026-12-08T00:35:22.123Z -> 20261208T003522123Z.
        let id = format!("{stamp}-{:016x}", random.finish());
        Chain {
            replica: json_string(replica),
            id: json_string(&id),
            key,
            seq: 0,
            prev: None,
        }
    }

    /// The chain's first line, before its chain fields: a start of the guard, at `time`.
    pub fn start_line(&self) -> String {
        format!(
            "{{\"time\":{},\"event\":\"chain-start\",\"algorithm\":\"{}\"}}\n",
            json_string(&rfc3339_now()),
            algorithm(self.key.as_ref())
        )
    }

    /// Adds the chain fields to `line` (one JSON object and its newline, as the writer is
    /// handed it) and moves the chain on by one line. A line that is not a JSON object
    /// (an embedder's [`super::Audit::record_line`] can hand any) is written as the string
    /// `"line"` of an object of its own, so that every line carries the fields.
    pub fn seal(&mut self, line: &mut String) {
        let body = line.trim_end_matches(['\n', '\r']);
        let object = body.starts_with('{') && body.ends_with('}');
        let mut sealed = String::with_capacity(body.len() + 256);
        if object {
            sealed.push_str(&body[..body.len() - 1]);
            if body.trim_start_matches('{').trim_start().len() > 1 {
                sealed.push(',');
            }
        } else {
            sealed.push_str("{\"line\":");
            sealed.push_str(&json_string(body));
            sealed.push(',');
        }
        let _ = write!(
            sealed,
            "\"replica\":{},\"chain\":{},\"seq\":{},\"prev\":",
            self.replica, self.id, self.seq
        );
        match &self.prev {
            Some(prev) => {
                sealed.push('"');
                push_hex(&mut sealed, prev);
                sealed.push('"');
            }
            None => sealed.push_str("null"),
        }
        sealed.push('}');
        let hash = line_hash(self.key.as_ref(), sealed.as_bytes());
        sealed.pop();
        sealed.push_str(",\"hash\":\"");
        push_hex(&mut sealed, &hash);
        sealed.push_str("\"}\n");
        *line = sealed;
        // 2^64 lines are never written; a wrap would show as a second seq 0.
        self.seq = self.seq.wrapping_add(1);
        self.prev = Some(hash);
    }
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Appends `bytes` as lowercase hex digits.
fn push_hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        let mut out = String::new();
        push_hex(&mut out, bytes);
        out
    }

    #[test]
    fn the_hashes_are_sha256_and_hmac_sha256() {
        // FIPS 180-2's "abc", and RFC 4231's test case 2 ("Jefe" is too short to be a
        // chain key, so case 3's 20 bytes of 0xaa).
        assert_eq!(
            hex(&line_hash(None, b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let key = ChainKey::new(&[0xaa; 20]).unwrap();
        assert_eq!(
            hex(&line_hash(Some(&key), &[0xdd; 50])),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        );
        let other = ChainKey::new(&[0xab; 20]).unwrap();
        assert_ne!(
            line_hash(Some(&key), b"abc"),
            line_hash(Some(&other), b"abc")
        );
        assert_ne!(line_hash(Some(&key), b"abc"), line_hash(None, b"abc"));
    }

    #[test]
    fn a_key_is_never_shown_and_short_keys_are_refused() {
        let key = ChainKey::new(b"correct horse battery staple").unwrap();
        assert_eq!(format!("{key:?}"), "ChainKey(..)");
        assert!(ChainKey::new(b"short").is_err());
        let dir = std::env::temp_dir().join(format!("chain-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        std::fs::write(&path, b"tiny-secret\n").unwrap();
        let e = ChainKey::from_file(&path).unwrap_err().to_string();
        assert!(!e.contains("tiny-secret"), "{e}");
        std::fs::write(&path, b"0123456789abcdef0123\n").unwrap();
        let from_file = ChainKey::from_file(&path).unwrap();
        let direct = ChainKey::new(b"0123456789abcdef0123").unwrap();
        assert_eq!(
            line_hash(Some(&from_file), b"x"),
            line_hash(Some(&direct), b"x")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn each_line_names_the_hash_of_the_one_before() {
        let mut chain = Chain::new("guard-0", None);
        let mut lines = vec![
            chain.start_line(),
            "{\"verdict\":\"allowed\"}\n".to_owned(),
            "{}\n".to_owned(),
            "not json\n".to_owned(),
        ];
        for line in &mut lines {
            chain.seal(line);
        }
        let mut prev = serde_json::Value::Null;
        for (seq, line) in lines.iter().enumerate() {
            assert!(line.ends_with("\"}\n"), "{line}");
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(value["replica"], "guard-0");
            assert_eq!(value["seq"], seq);
            assert_eq!(value["prev"], prev);
            // The hash covers the line up to `prev`, closed.
            let cut = line.rfind(",\"hash\":").unwrap();
            let hashed = format!("{}}}", &line[..cut]);
            let hash = hex(&line_hash(None, hashed.as_bytes()));
            assert_eq!(value["hash"], hash.as_str());
            prev = value["hash"].clone();
        }
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&lines[0]).unwrap()["event"],
            "chain-start"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&lines[3]).unwrap()["line"],
            "not json"
        );
        // Two starts are two chains.
        assert_ne!(Chain::new("guard-0", None).id, chain.id);
    }

    /// The longest chain fields: a replica id of 200 bytes, the largest seq, a `prev`.
    #[test]
    fn the_chain_fields_take_at_most_max_chain_fields() {
        let mut chain = Chain::new(&"r".repeat(MAX_REPLICA_BYTES), None);
        chain.prev = Some([0; 32]);
        chain.seq = u64::MAX;
        let mut line = "{\"a\":1}\n".to_owned();
        chain.seal(&mut line);
        assert_eq!(
            line.len() - "{\"a\":1}\n".len(),
            super::super::MAX_CHAIN_FIELDS
        );
    }

    #[test]
    fn replica_ids_are_host_names() {
        assert!(check_replica("guard-0").is_ok());
        assert!(check_replica("ip-10-0-0-1.ec2.internal").is_ok());
        assert!(check_replica("").is_err());
        assert!(check_replica("a b").is_err());
        assert!(check_replica("\"x\"").is_err());
        assert!(check_replica(&"a".repeat(201)).is_err());
        assert!(check_replica(&default_replica()).is_ok());
    }
}
