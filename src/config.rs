//! `proxy.toml`: every option, its default, and validation that names the offending key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::{ChildCancel, EngineConfig, Limits, LiveChildEvents};
use crate::subagents::presets::PresetSet;
use crate::subagents::select::PresetChoice;
use crate::subagents::spec::PresetSpec;

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

/// How subagents are shown to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Display {
    /// `acp` if the client advertised subagents, else `zed` if the client is Zed, else
    /// `transcript`.
    #[default]
    Auto,
    Zed,
    Acp,
    Transcript,
    Off,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// How subagents are shown to the client.
    pub display: Display,
    /// Lines longer than this are relayed in pieces without being parsed.
    pub max_frame_bytes: usize,
    /// Log filter for stderr (`error`, `warn`, `info`, `debug`, `trace`, or a tracing filter).
    pub log_level: String,
    pub dump: DumpConfig,
    pub shutdown: ShutdownConfig,
    pub zed: ZedConfig,
    pub subagents: SubagentsConfig,
    pub limits: LimitsConfig,
    /// Durable child transcripts (`[store]`).
    pub store: crate::store::StoreConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            display: Display::Auto,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            log_level: "info".to_owned(),
            dump: DumpConfig::default(),
            shutdown: ShutdownConfig::default(),
            zed: ZedConfig::default(),
            subagents: SubagentsConfig::default(),
            limits: LimitsConfig::default(),
            store: crate::store::StoreConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
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

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShutdownConfig {
    /// After closing the agent's stdin, wait this long before SIGTERM to its process group.
    pub stdin_grace_ms: u64,
    /// After SIGTERM, wait this long before SIGKILL.
    pub term_grace_ms: u64,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        ShutdownConfig {
            stdin_grace_ms: 1000,
            term_grace_ms: 2000,
        }
    }
}

/// `[zed]`: how subagents are shown to Zed.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZedConfig {
    /// Add `clientCapabilities.subagents` and the child-transcript flag to the `initialize`
    /// sent to the agent, so it reports subagents exactly.
    pub opt_in: bool,
    /// `hide`: child events appear only in the child thread; `flat`: also live in the parent.
    pub live_child_events: LiveChildEvents,
    /// Show the child's latest activity in the spawn card's title while it runs.
    pub live_progress: bool,
    /// Stop on a child the agent cannot cancel alone: `parent` cancels the parent's turn,
    /// `ignore` does nothing.
    pub child_cancel: ChildCancel,
    /// How long a permission request that may belong to a child waits for attribution.
    pub permission_hold_ms: u64,
    /// Permission requests held at once; further ones go out unattributed.
    pub max_held_permissions: usize,
}

impl Default for ZedConfig {
    fn default() -> Self {
        let e = EngineConfig::default();
        ZedConfig {
            opt_in: e.opt_in,
            live_child_events: e.live_child_events,
            live_progress: e.live_progress,
            child_cancel: e.child_cancel,
            permission_hold_ms: e.permission_hold_ms,
            max_held_permissions: e.max_held_permissions,
        }
    }
}

/// `[limits]`: bounds against runaway agents. Past a limit the proxy stops modelling that
/// subagent and relays its frames unchanged (and says so); no frame is ever dropped.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    pub max_subagents_per_session: usize,
    pub max_depth: usize,
    pub max_transcript_bytes: usize,
    pub max_finished_in_memory: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let l = Limits::default();
        LimitsConfig {
            max_subagents_per_session: l.max_subagents_per_session,
            max_depth: l.max_depth,
            max_transcript_bytes: l.max_transcript_bytes,
            max_finished_in_memory: l.max_finished_in_memory,
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
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            display: self.display,
            opt_in: self.zed.opt_in,
            live_child_events: self.zed.live_child_events,
            live_progress: self.zed.live_progress,
            child_cancel: self.zed.child_cancel,
            permission_hold_ms: self.zed.permission_hold_ms,
            max_held_permissions: self.zed.max_held_permissions,
            presets: self.subagents.choice(),
            limits: Limits {
                max_subagents_per_session: self.limits.max_subagents_per_session,
                max_depth: self.limits.max_depth,
                max_transcript_bytes: self.limits.max_transcript_bytes,
                max_finished_in_memory: self.limits.max_finished_in_memory,
            },
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
                "built-in defaults (neither XDG_CONFIG_HOME nor HOME is set)"
            ),
        }
    }
}

/// `$XDG_CONFIG_HOME/acp-proxy/proxy.toml`, or `~/.config/acp-proxy/proxy.toml`.
pub fn user_config_path() -> Option<PathBuf> {
    config_path(
        std::env::var_os("XDG_CONFIG_HOME"),
        std::env::var_os("HOME"),
    )
}

fn config_path(
    xdg_config_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let base = match xdg_config_home
        .map(PathBuf::from)
        // The XDG spec: a relative value is invalid and must be ignored.
        .filter(|p| p.is_absolute())
    {
        Some(dir) => dir,
        None => PathBuf::from(home.filter(|h| !h.is_empty())?).join(".config"),
    };
    Some(base.join("acp-proxy").join("proxy.toml"))
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
    use super::*;

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
    fn the_user_config_path_follows_xdg() {
        let p =
            |x: Option<&str>, h: Option<&str>| config_path(x.map(Into::into), h.map(Into::into));
        let at = |s: &str| Some(PathBuf::from(s));
        assert_eq!(
            p(Some("/cfg"), Some("/home/u")),
            at("/cfg/acp-proxy/proxy.toml")
        );
        assert_eq!(
            p(Some("relative"), Some("/home/u")),
            at("/home/u/.config/acp-proxy/proxy.toml")
        );
        assert_eq!(
            p(None, Some("/home/u")),
            at("/home/u/.config/acp-proxy/proxy.toml")
        );
        assert_eq!(p(None, Some("")), None);
        assert_eq!(p(None, None), None);
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
}
