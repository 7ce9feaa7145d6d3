//! `[store]` settings: where the store lives and how much it keeps.
//!
//! ```toml
//! [store]
//! path = "memory"        # or a file path; unset: $XDG_STATE_HOME/acp-proxy/store.sqlite3
//! max_age = "30d"        # seconds as an integer, or a number followed by s, m, h or d
//! max_bytes = "512MiB"   # bytes as an integer, or a number followed by B, KiB, MiB or GiB
//! queue_ops = 4096
//! ```

use std::convert::Infallible;
use std::ffi::OsString;
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
    #[serde(deserialize_with = "de_duration", serialize_with = "ser_duration")]
    pub max_age: Duration,
    /// The oldest children are removed until the database is under this size. Zero: no limit.
    #[serde(deserialize_with = "de_bytes", serialize_with = "ser_bytes")]
    pub max_bytes: u64,
    /// Writes the queue holds before `Store::submit` waits for the disk (at least 1).
    #[serde(deserialize_with = "de_queue_ops")]
    pub queue_ops: usize,
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
            background_prune: true,
        }
    }
}

/// `$XDG_STATE_HOME/acp-proxy/store.sqlite3`, else `~/.local/state/acp-proxy/store.sqlite3`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    state_path(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
        .ok_or(StoreError::NoStateDir)
}

fn state_path(xdg_state_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let base = match xdg_state_home
        .map(PathBuf::from)
        // The XDG spec: a relative value is invalid and must be ignored.
        .filter(|p| p.is_absolute())
    {
        Some(dir) => dir,
        None => PathBuf::from(home.filter(|h| !h.is_empty())?)
            .join(".local")
            .join("state"),
    };
    Some(base.join("acp-proxy").join("store.sqlite3"))
}

/// Parse a duration: whole seconds (`3600`), or a number followed by `s`, `m`, `h` or `d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a duration: use seconds (3600) or a number followed by s, m, h or d \
             (\"90m\", \"12h\", \"30d\")"
        )
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(scale)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

/// Parse a size: bytes (`536870912`), or a number followed by `B`, `KiB`, `MiB` or `GiB`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a size: use bytes (536870912) or a number followed by B, KiB, MiB \
             or GiB (\"512MiB\")"
        )
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(scale).ok_or_else(bad)
}

/// A TOML value that may be written as an integer or as a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum IntOrText {
    Int(u64),
    Text(String),
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

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    match IntOrText::deserialize(d)? {
        IntOrText::Int(secs) => Ok(Duration::from_secs(secs)),
        IntOrText::Text(t) => parse_duration(&t).map_err(serde::de::Error::custom),
    }
}

fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match IntOrText::deserialize(d)? {
        IntOrText::Int(n) => Ok(n),
        IntOrText::Text(t) => parse_bytes(&t).map_err(serde::de::Error::custom),
    }
}

// Written back in the units `proxy.toml` uses, largest exact unit first ("30d", "512MiB").

fn ser_location<S: Serializer>(l: &Option<StoreLocation>, s: S) -> Result<S::Ok, S::Error> {
    match l {
        Some(l) => s.collect_str(l),
        None => s.serialize_none(),
    }
}

fn ser_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    let secs = d.as_secs();
    let unit = [(86_400, "d"), (3600, "h"), (60, "m")]
        .into_iter()
        .find(|(scale, _)| secs > 0 && secs % scale == 0);
    match unit {
        Some((scale, name)) => s.collect_str(&format_args!("{}{name}", secs / scale)),
        None => s.collect_str(&format_args!("{secs}s")),
    }
}

fn ser_bytes<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
    let unit = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .into_iter()
        .find(|(scale, _)| *n > 0 && n % scale == 0);
    match unit {
        Some((scale, name)) => s.collect_str(&format_args!("{}{name}", n / scale)),
        None => s.collect_str(&format_args!("{n}B")),
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
    use crate::config::Config;
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, crate::config::ConfigError> {
        Config::from_toml(text, Path::new("t.toml"))
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(90 * 60)));
        assert_eq!(parse_duration("45s"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("3600"), Ok(Duration::from_secs(3600)));
        for bad in ["", "d", "3w", "1.5h", "-1d", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("10KiB"), Ok(10 << 10));
        assert_eq!(parse_bytes("100B"), Ok(100));
        assert_eq!(parse_bytes("100"), Ok(100));
        for bad in ["", "MiB", "5MB", "5 TiB", "1.5GiB"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn store_section_parses_all_spellings() {
        let cfg = parse("[store]\npath = \"memory\"\nmax_age = \"12h\"\nmax_bytes = \"1MiB\"")
            .expect("parses");
        assert_eq!(cfg.store.location, Some(StoreLocation::Memory));
        assert_eq!(cfg.store.max_age, Duration::from_secs(12 * 3600));
        assert_eq!(cfg.store.max_bytes, 1 << 20);
        assert!(cfg.store.background_prune);
        let cfg =
            parse("[store]\npath = \"/x/s.db\"\nmax_age = 60\nmax_bytes = 4096\nqueue_ops = 2")
                .expect("parses");
        assert_eq!(
            cfg.store.location,
            Some(StoreLocation::Path("/x/s.db".into()))
        );
        assert_eq!(cfg.store.max_age, Duration::from_secs(60));
        assert_eq!(cfg.store.max_bytes, 4096);
        assert_eq!(cfg.store.queue_ops, 2);
    }

    #[test]
    fn store_errors_name_the_key() {
        for (text, key) in [
            ("[store]\nmax_age = \"30 days\"", "max_age"),
            ("[store]\nmax_bytes = \"lots\"", "max_bytes"),
            ("[store]\nqueue_ops = 0", "queue_ops"),
            ("[store]\npaht = \"x\"", "paht"),
            ("[store]\npath = \"\"", "path"),
        ] {
            let e = parse(text).expect_err(text).to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn example_file_matches_defaults() {
        let cfg = parse(include_str!("../../proxy.toml")).expect("example config parses");
        let def = StoreConfig::default();
        assert_eq!(cfg.store.location, def.location);
        assert_eq!(cfg.store.max_age, def.max_age);
        assert_eq!(cfg.store.max_bytes, def.max_bytes);
        assert_eq!(cfg.store.queue_ops, def.queue_ops);
    }

    #[test]
    fn default_path_follows_xdg() {
        let p = |x: Option<&str>, h: Option<&str>| state_path(x.map(Into::into), h.map(Into::into));
        assert_eq!(
            p(Some("/state"), Some("/home/u")),
            Some(PathBuf::from("/state/acp-proxy/store.sqlite3"))
        );
        assert_eq!(
            p(Some("relative"), Some("/home/u")),
            Some(PathBuf::from(
                "/home/u/.local/state/acp-proxy/store.sqlite3"
            ))
        );
        assert_eq!(
            p(None, Some("/home/u")),
            Some(PathBuf::from(
                "/home/u/.local/state/acp-proxy/store.sqlite3"
            ))
        );
        assert_eq!(p(None, Some("")), None);
        assert_eq!(p(None, None), None);
    }

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
