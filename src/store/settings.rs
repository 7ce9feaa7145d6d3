//! `[store]` settings: where the store lives and how much it keeps.
//!
//! ```toml
//! [store]
//! path = "memory"        # or a file path; unset: $XDG_STATE_HOME/acp-proxy/store.sqlite3
//! max_age = "30d"        # seconds as an integer, or a number followed by s, m, h or d
//! max_bytes = "512MiB"   # bytes as an integer, or a number followed by B, KiB, MiB or GiB
//! queue_ops = 4096
//! queue_bytes = "1MiB"   # bytes as an integer, or a number followed by B, KiB, MiB or GiB
//! ```

use std::convert::Infallible;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::StoreError;

/// Default retention by age: 30 days.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 86_400);
/// Default retention by size: 512 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 512 * 1024 * 1024;
/// Default number of writes the queue holds before `submit` waits for the disk.
pub const DEFAULT_QUEUE_OPS: usize = 4096;
/// Default bytes of transcript the queue holds before `submit` waits for the disk: 1 MiB.
pub const DEFAULT_QUEUE_BYTES: u64 = 1024 * 1024;

/// Where the store keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// In memory only: same API, nothing survives the process.
    Memory,
    /// An SQLite file.
    Path(PathBuf),
}

impl StoreLocation {
    /// Parse a `--store` / `[store] path` value: `memory`, or a path (a leading `~/` is the
    /// home directory).
    pub fn parse(text: &str) -> StoreLocation {
        if text == "memory" {
            return StoreLocation::Memory;
        }
        if let Some(rest) = text.strip_prefix("~/") {
            if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                return StoreLocation::Path(PathBuf::from(home).join(rest));
            }
        }
        StoreLocation::Path(PathBuf::from(text))
    }
}

impl FromStr for StoreLocation {
    type Err = Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(StoreLocation::parse(s))
    }
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Memory => f.write_str("memory"),
            StoreLocation::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// `[store]` in `proxy.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `path`: a file, or `memory`. `None`: the default path ([`default_path`]).
    #[serde(
        rename = "path",
        deserialize_with = "de_location",
        serialize_with = "ser_location",
        skip_serializing_if = "Option::is_none"
    )]
    pub location: Option<StoreLocation>,
    /// Children not updated for this long are removed. Zero: no age limit.
    #[serde(
        deserialize_with = "crate::units::de_duration",
        serialize_with = "crate::units::ser_duration"
    )]
    pub max_age: Duration,
    /// The oldest children are removed until the database is under this size. Zero: no limit.
    #[serde(
        deserialize_with = "crate::units::de_bytes",
        serialize_with = "crate::units::ser_bytes"
    )]
    pub max_bytes: u64,
    /// Writes the queue holds before `Store::submit` waits for the disk (at least 1).
    #[serde(deserialize_with = "de_queue_ops")]
    pub queue_ops: usize,
    /// Bytes of transcript updates the queue holds before `Store::submit` waits for the disk
    /// to take all of them (what a lagging disk costs in memory). Zero: no limit but
    /// `queue_ops`.
    #[serde(
        deserialize_with = "crate::units::de_bytes",
        serialize_with = "crate::units::ser_bytes"
    )]
    pub queue_bytes: u64,
    /// Run retention in the writer at open and every hour. Not a config key: the `store`
    /// subcommands turn it off so they report exactly what they see and do.
    #[serde(skip)]
    pub background_prune: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            location: None,
            max_age: DEFAULT_MAX_AGE,
            max_bytes: DEFAULT_MAX_BYTES,
            queue_ops: DEFAULT_QUEUE_OPS,
            queue_bytes: DEFAULT_QUEUE_BYTES,
            background_prune: true,
        }
    }
}

/// `store.sqlite3` in the platform's state folder: `$XDG_STATE_HOME/acp-proxy/`, else
/// `~/.local/state/acp-proxy/` (Linux) or `~/Library/Application Support/acp-proxy/` (macOS);
/// `%LOCALAPPDATA%\acp-proxy\` (Windows). See [`crate::platform::paths`].
pub fn default_path() -> Result<PathBuf, StoreError> {
    use crate::platform::paths::{proxy_state_dir, Env, Os};
    proxy_state_dir(Os::CURRENT, &Env::current())
        .map(|d| d.join("store.sqlite3"))
        .ok_or(StoreError::NoStateDir)
}

fn de_location<'de, D: Deserializer<'de>>(d: D) -> Result<Option<StoreLocation>, D::Error> {
    let text = String::deserialize(d)?;
    if text.is_empty() {
        return Err(serde::de::Error::custom(
            "must be a file path or \"memory\" (remove the key for the default path)",
        ));
    }
    Ok(Some(StoreLocation::parse(&text)))
}

fn ser_location<S: Serializer>(l: &Option<StoreLocation>, s: S) -> Result<S::Ok, S::Error> {
    match l {
        Some(l) => s.collect_str(l),
        None => s.serialize_none(),
    }
}

fn de_queue_ops<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = usize::deserialize(d)?;
    if n == 0 {
        return Err(serde::de::Error::custom("must be at least 1"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_spellings() {
        assert_eq!(StoreLocation::parse("memory"), StoreLocation::Memory);
        assert_eq!(
            StoreLocation::parse("./memory"),
            StoreLocation::Path("./memory".into())
        );
        assert_eq!(
            StoreLocation::parse("/a/b.sqlite3"),
            StoreLocation::Path("/a/b.sqlite3".into())
        );
    }
}
