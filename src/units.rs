//! Durations and sizes as `proxy.toml` and the command line spell them (`"12h"`, `"512MiB"`,
//! or plain seconds and bytes), read and written back the same way.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

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

pub fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    match IntOrText::deserialize(d)? {
        IntOrText::Int(secs) => Ok(Duration::from_secs(secs)),
        IntOrText::Text(t) => parse_duration(&t).map_err(serde::de::Error::custom),
    }
}

pub fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match IntOrText::deserialize(d)? {
        IntOrText::Int(n) => Ok(n),
        IntOrText::Text(t) => parse_bytes(&t).map_err(serde::de::Error::custom),
    }
}

// Written back in the units `proxy.toml` uses, largest exact unit first ("30d", "512MiB").

pub fn ser_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    let secs = d.as_secs();
    let unit = [(86_400, "d"), (3600, "h"), (60, "m")]
        .into_iter()
        .find(|(scale, _)| secs > 0 && secs.is_multiple_of(*scale));
    match unit {
        Some((scale, name)) => s.collect_str(&format_args!("{}{name}", secs / scale)),
        None => s.collect_str(&format_args!("{secs}s")),
    }
}

pub fn ser_bytes<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
    let unit = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .into_iter()
        .find(|(scale, _)| *n > 0 && n.is_multiple_of(*scale));
    match unit {
        Some((scale, name)) => s.collect_str(&format_args!("{}{name}", n / scale)),
        None => s.collect_str(&format_args!("{n}B")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
