//! `proxy.toml`: every option, its default, and validation that names the offending key.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::engine::{EngineConfig, Limits, SubagentDisplay, ZedOptions};
use crate::subagents::presets;
use crate::transport::relay::ShutdownConfig;

/// Default maximum size of one frame held in memory (64 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid config file {path}: `{key}` {problem}")]
    Value {
        path: PathBuf,
        key: &'static str,
        problem: String,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// How subagents are shown to the client.
    pub display: SubagentDisplay,
    /// Lines longer than this are relayed in pieces without being parsed.
    pub max_frame_bytes: usize,
    /// Log filter for stderr (`error`, `warn`, `info`, `debug`, `trace`, or a tracing filter).
    pub log_level: String,
    pub dump: DumpConfig,
    pub shutdown: ShutdownConfig,
    pub zed: ZedOptions,
    pub subagents: SubagentsConfig,
    pub limits: Limits,
    /// Durable child transcripts (`[store]`).
    pub store: crate::store::StoreConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            display: SubagentDisplay::Auto,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            log_level: "info".to_owned(),
            dump: DumpConfig::default(),
            shutdown: ShutdownConfig::default(),
            zed: ZedOptions::default(),
            subagents: SubagentsConfig::default(),
            limits: Limits::default(),
            store: crate::store::StoreConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DumpConfig {
    /// Write a JSONL traffic dump here (no dump when unset).
    pub path: Option<PathBuf>,
    /// Redact secrets (env values, headers, authenticate params, token-like keys).
    pub redact: bool,
    /// Frames the dump may have queued before it starts counting losses.
    pub queue_frames: usize,
}

impl Default for DumpConfig {
    fn default() -> Self {
        DumpConfig {
            path: None,
            redact: true,
            queue_frames: 4096,
        }
    }
}

/// `[subagents]`: which agents' subagent signatures are recognised.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubagentsConfig {
    pub presets: Vec<String>,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        SubagentsConfig {
            presets: presets::ALL.iter().map(|p| p.name.to_owned()).collect(),
        }
    }
}

impl Config {
    /// The engine's settings.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            display: self.display,
            zed: self.zed.clone(),
            presets: self
                .subagents
                .presets
                .iter()
                .filter_map(|n| presets::by_name(n))
                .collect(),
            limits: self.limits,
        }
    }

    /// Load from an explicit path, else `./proxy.toml` if present, else defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        match explicit {
            Some(path) => Self::from_file(path),
            None => {
                let local = Path::new("proxy.toml");
                if local.is_file() {
                    Self::from_file(local)
                } else {
                    Ok(Config::default())
                }
            }
        }
    }

    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |key: &'static str, problem: String| ConfigError::Value {
            path: path.to_owned(),
            key,
            problem,
        };
        if self.max_frame_bytes < 1024 {
            return Err(bad("max_frame_bytes", "must be at least 1024".into()));
        }
        if self.dump.queue_frames == 0 {
            return Err(bad("dump.queue_frames", "must be at least 1".into()));
        }
        if let Some(bad_name) = self
            .subagents
            .presets
            .iter()
            .find(|n| presets::by_name(n).is_none())
        {
            let known: Vec<&str> = presets::ALL.iter().map(|p| p.name).collect();
            return Err(bad(
                "subagents.presets",
                format!(
                    "has unknown preset `{bad_name}` (known: {})",
                    known.join(", ")
                ),
            ));
        }
        if self.limits.max_depth == 0 {
            return Err(bad("limits.max_depth", "must be at least 1".into()));
        }
        if self.limits.max_subagents_per_session == 0 {
            return Err(bad(
                "limits.max_subagents_per_session",
                "must be at least 1".into(),
            ));
        }
        if self.limits.max_transcript_bytes < 1024 {
            return Err(bad(
                "limits.max_transcript_bytes",
                "must be at least 1024".into(),
            ));
        }
        if self.zed.permission_hold_ms > 60_000 {
            return Err(bad(
                "zed.permission_hold_ms",
                "must be at most 60000".into(),
            ));
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log_level).is_err() {
            return Err(bad(
                "log_level",
                format!(
                    "`{}` is not a log level (use error, warn, info, debug or trace)",
                    self.log_level
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::{StoreConfig, StoreLocation};

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml(text, Path::new("t.toml"))
    }

    #[test]
    fn defaults_and_example_file_agree() {
        let example = include_str!("../proxy.toml");
        let cfg = parse(example).expect("example config parses");
        let def = Config::default();
        assert_eq!(cfg.display, def.display);
        assert_eq!(cfg.max_frame_bytes, def.max_frame_bytes);
        assert_eq!(cfg.dump.redact, def.dump.redact);
        assert_eq!(cfg.dump.queue_frames, def.dump.queue_frames);
        assert_eq!(cfg.shutdown.stdin_grace_ms, def.shutdown.stdin_grace_ms);
        assert_eq!(cfg.shutdown.term_grace_ms, def.shutdown.term_grace_ms);
        assert_eq!(cfg.zed, def.zed);
        assert_eq!(cfg.limits, def.limits);
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse("dispaly = \"zed\"")
            .expect_err("unknown key")
            .to_string();
        assert!(e.contains("dispaly"), "{e}");
        let e = parse("[dump]\nredact = \"yes\"")
            .expect_err("wrong type")
            .to_string();
        assert!(e.contains("redact"), "{e}");
        let e = parse("display = \"fancy\"")
            .expect_err("bad value")
            .to_string();
        assert!(e.contains("fancy"), "{e}");
        let e = parse("max_frame_bytes = 3")
            .expect_err("too small")
            .to_string();
        assert!(e.contains("max_frame_bytes"), "{e}");
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
        let cfg = parse(include_str!("../proxy.toml")).expect("example config parses");
        let def = StoreConfig::default();
        assert_eq!(cfg.store.location, def.location);
        assert_eq!(cfg.store.max_age, def.max_age);
        assert_eq!(cfg.store.max_bytes, def.max_bytes);
        assert_eq!(cfg.store.queue_ops, def.queue_ops);
    }
}
