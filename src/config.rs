//! `proxy.toml`: every option, its default, and validation that names the offending key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::dump::DumpConfig;
use crate::engine::{EngineConfig, Limits, SubagentDisplay, ZedOptions};
use crate::subagents::preset::select::PresetChoice;
use crate::subagents::preset::set::PresetSet;
use crate::subagents::preset::spec::PresetSpec;
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
    /// A problem in `[subagents]`; `message` names the key (`subagents.preset[0].spawn[1]...`).
    #[error("invalid config file {path}: {message}")]
    Preset { path: PathBuf, message: String },
}

#[derive(Debug, Clone, Deserialize, Serialize)]
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

/// `[subagents]`: which agents' subagent signatures are recognised.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SubagentsConfig {
    /// Use these presets whatever the agent; unset: chosen from the agent's `initialize`.
    pub presets: Option<Vec<String>>,
    /// Presets of your own (`[[subagents.preset]]`): new ones, or replacements of shipped
    /// ones by name.
    #[serde(skip_serializing)]
    pub preset: Vec<PresetSpec>,
    /// The `[[subagents.preset]]` tables as written, so that the effective settings print
    /// back as the user wrote them (filled in by [`Config::from_toml`]).
    #[serde(
        skip_deserializing,
        rename = "preset",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub preset_source: Vec<toml::Table>,
    /// The shipped presets with these, compiled when the file is validated.
    #[serde(skip)]
    pub set: Option<Arc<PresetSet>>,
}

impl SubagentsConfig {
    /// Every known preset: shipped ones and the config's.
    pub fn preset_set(&self) -> Arc<PresetSet> {
        self.set.clone().unwrap_or_else(PresetSet::builtin)
    }

    /// The engine's presets: the named ones, or a choice per agent.
    pub fn choice(&self) -> PresetChoice {
        let set = self.preset_set();
        match &self.presets {
            // Names were checked when the file was read; an unknown one is left out.
            Some(names) => {
                let known: Vec<String> = names
                    .iter()
                    .filter(|n| set.get(n).is_some())
                    .cloned()
                    .collect();
                PresetChoice::named(set, &known).unwrap_or_default()
            }
            None => PresetChoice::auto(set),
        }
    }
}

impl Config {
    /// The engine's settings.
    /// The settings that decide what the engine and the relay do with frames, as `proxy.toml`
    /// spells them: a dump's header keeps them, and a replay reads them back with
    /// [`Config::from_settings`].
    pub fn engine_settings(&self) -> serde_json::Value {
        serde_json::json!({
            "display": self.display,
            "max_frame_bytes": self.max_frame_bytes,
            "zed": self.zed,
            "subagents": self.subagents,
            "limits": self.limits,
        })
    }

    /// A config from settings kept by [`Config::engine_settings`] (in a dump's header),
    /// validated like a file (its presets compiled).
    pub fn from_settings(settings: serde_json::Value) -> Result<Config, ConfigError> {
        let path = Path::new("the dump's header");
        let mut cfg: Config = serde_json::from_value(settings).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            display: self.display,
            zed: self.zed.clone(),
            presets: self.subagents.choice(),
            limits: self.limits,
        }
    }

    /// Load the config in effect (see [`ConfigSource::locate`]).
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_from(&ConfigSource::locate(explicit))
    }

    /// Load from where [`ConfigSource::locate`] pointed: the file, or the defaults.
    pub fn load_from(source: &ConfigSource) -> Result<Config, ConfigError> {
        match source.path() {
            Some(path) => Self::from_file(path),
            None => Ok(Config::default()),
        }
    }

    /// The config file the proxy reads (see [`ConfigSource::locate`]); `None`: the built-in
    /// defaults. Everything that reports the file asks this.
    pub fn file_in_effect(explicit: Option<&Path>) -> Option<PathBuf> {
        ConfigSource::locate(explicit).path().map(Path::to_owned)
    }

    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        if !cfg.subagents.preset.is_empty() {
            // The text parsed once already: reading it as a plain table cannot fail.
            if let Ok(table) = text.parse::<toml::Table>() {
                cfg.subagents.preset_source = table
                    .get("subagents")
                    .and_then(|s| s.get("preset"))
                    .and_then(toml::Value::as_array)
                    .map(|a| a.iter().filter_map(|v| v.as_table().cloned()).collect())
                    .unwrap_or_default();
            }
        }
        cfg.validate(path)?;
        Ok(cfg)
    }

    fn validate(&mut self, path: &Path) -> Result<(), ConfigError> {
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
        if !(1..=100).contains(&self.dump.max_files) {
            return Err(bad("dump.max_files", "must be between 1 and 100".into()));
        }
        let set = PresetSet::builtin()
            .with_user(&self.subagents.preset, "subagents.preset")
            .map_err(|e| ConfigError::Preset {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
        if let Some(names) = &self.subagents.presets {
            if let Some(bad_name) = names.iter().find(|n| set.get(n).is_none()) {
                return Err(bad(
                    "subagents.presets",
                    format!(
                        "has unknown preset `{bad_name}` (known: {})",
                        set.names().join(", ")
                    ),
                ));
            }
        }
        self.subagents.set = Some(Arc::new(set));
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

/// Where the config in effect comes from. Never the working directory: editors start agent
/// servers in the project's folder, and a cloned repository must not be able to turn redaction
/// off, choose the dump's path or move the store by shipping a `proxy.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config PATH`, as given.
    Flag(PathBuf),
    /// The user's config file, which exists.
    User(PathBuf),
    /// No file: the built-in defaults. `user` is the user's config file that does not exist
    /// (None when neither `XDG_CONFIG_HOME` nor `HOME` is set).
    Defaults { user: Option<PathBuf> },
}

impl ConfigSource {
    /// The config file in effect: `--config PATH`, else `$XDG_CONFIG_HOME/acp-proxy/proxy.toml`
    /// (`~/.config/acp-proxy/proxy.toml` without `XDG_CONFIG_HOME`) if it exists, else none.
    pub fn locate(explicit: Option<&Path>) -> ConfigSource {
        match explicit {
            Some(path) => ConfigSource::Flag(path.to_owned()),
            None => match user_config_path() {
                Some(path) if path.exists() => ConfigSource::User(path),
                user => ConfigSource::Defaults { user },
            },
        }
    }

    /// The file to read, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigSource::Flag(p) | ConfigSource::User(p) => Some(p),
            ConfigSource::Defaults { .. } => None,
        }
    }
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::Flag(p) => write!(f, "{} (given on the command line)", p.display()),
            ConfigSource::User(p) => write!(f, "{}", p.display()),
            ConfigSource::Defaults { user: Some(p) } => {
                write!(f, "built-in defaults (no {})", p.display())
            }
            ConfigSource::Defaults { user: None } => write!(
                f,
                "built-in defaults ({})",
                crate::platform::paths::Os::CURRENT.config_vars()
            ),
        }
    }
}

/// `proxy.toml` in the platform's config folder: `$XDG_CONFIG_HOME/acp-proxy/`, else
/// `~/.config/acp-proxy/` (Linux, macOS); `%APPDATA%\acp-proxy\` (Windows). See
/// [`crate::platform::paths`].
pub fn user_config_path() -> Option<PathBuf> {
    use crate::platform::paths::{proxy_config_dir, Env, Os};
    proxy_config_dir(Os::CURRENT, &Env::current()).map(|d| d.join("proxy.toml"))
}

/// If the working directory holds a `proxy.toml` that is not the config in effect, a notice
/// saying that it is ignored and how to use it.
pub fn ignored_local_config(source: &ConfigSource) -> Option<String> {
    let local = Path::new("proxy.toml");
    if !local.is_file() {
        return None;
    }
    let same = |p: &Path| match (local.canonicalize(), p.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if source.path().is_some_and(same) {
        return None;
    }
    let cwd = std::env::current_dir()
        .map(|d| d.join("proxy.toml").display().to_string())
        .unwrap_or_else(|_| "./proxy.toml".to_owned());
    Some(format!(
        "{cwd} is ignored: the config is never read from the working directory (config in \
         effect: {source}); to use that file, start acp-proxy with `--config ./proxy.toml`"
    ))
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
        assert_eq!(cfg.dump.max_bytes, def.dump.max_bytes);
        assert_eq!(cfg.dump.max_files, def.dump.max_files);
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
    fn an_explicit_path_is_used_as_given() {
        let source = ConfigSource::locate(Some(Path::new("./proxy.toml")));
        assert_eq!(source, ConfigSource::Flag(PathBuf::from("./proxy.toml")));
        assert_eq!(source.path(), Some(Path::new("./proxy.toml")));
        assert_eq!(
            source.to_string(),
            "./proxy.toml (given on the command line)"
        );
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

    #[test]
    fn engine_settings_read_back_as_the_same_config() {
        let text = "display = \"zed\"\nmax_frame_bytes = 4096\n[zed]\nlive_child_events = \"flat\"\n\
                    child_cancel = \"ignore\"\npermission_hold_ms = 7\n[subagents]\npresets = [\"qwen\", \"mine\"]\n\
                    [[subagents.preset]]\nname = \"mine\"\n[[subagents.preset.spawn]]\n\
                    when = [{ at = \"/title\", equals = \"Hand off\" }]\ntool_name = \"handoff\"\n\
                    [limits]\nmax_depth = 3\n";
        let cfg = parse(text).expect("config");
        let back = Config::from_settings(cfg.engine_settings()).expect("settings read back");
        assert_eq!(
            format!("{:?}", back.engine_config()),
            format!("{:?}", cfg.engine_config())
        );
        assert_eq!(back.max_frame_bytes, 4096);
        assert!(
            back.subagents.preset_set().get("mine").is_some(),
            "the user's preset"
        );
    }
}
