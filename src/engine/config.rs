//! The engine's settings. `proxy.toml` embeds these types as they are (`display`, `[zed]`,
//! `[limits]`), so a setting is declared, defaulted and documented once.

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::subagents::preset::select::PresetChoice;

/// How subagents are shown to the client (`display` in `proxy.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SubagentDisplay {
    /// `acp` if the client advertised subagents, else `zed` if the client is Zed, else
    /// `transcript`.
    #[default]
    Auto,
    Zed,
    Acp,
    Transcript,
    Off,
}

/// Where child events may also appear live in the parent thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LiveChildEvents {
    #[default]
    Hide,
    Flat,
}

/// What a client's Stop on a child does when the agent cannot cancel that child alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ChildCancel {
    #[default]
    Parent,
    Ignore,
}

/// `[zed]`: how subagents are shown to a client the proxy models them for.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZedOptions {
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
    pub permission_hold_ms: Millis,
    /// Permission requests held at once; further ones go out unattributed.
    pub max_held_permissions: usize,
}

impl Default for ZedOptions {
    fn default() -> Self {
        ZedOptions {
            opt_in: true,
            live_child_events: LiveChildEvents::Hide,
            live_progress: true,
            child_cancel: ChildCancel::Parent,
            permission_hold_ms: 500,
            max_held_permissions: 64,
        }
    }
}

/// `[limits]`: bounds against runaway or hostile agents. Past a limit the proxy stops
/// modelling that child and relays its frames unchanged (and says so); it never drops a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    pub max_subagents_per_session: usize,
    pub max_depth: usize,
    pub max_transcript_bytes: usize,
    /// Finished children kept in memory; older ones are served from the store.
    pub max_finished_in_memory: usize,
    /// Bytes of one child's thread kept in memory; its older updates are read back from the
    /// store when the thread is loaded or replayed. 0 keeps every update in memory.
    pub max_thread_bytes_in_memory: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_subagents_per_session: 1000,
            max_depth: 8,
            max_transcript_bytes: 16 * 1024 * 1024,
            max_finished_in_memory: 16,
            max_thread_bytes_in_memory: 16 * 1024,
        }
    }
}

/// Everything the engine is configured with.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub display: SubagentDisplay,
    pub zed: ZedOptions,
    /// Subagent presets: named by the config, or chosen from the agent's `initialize`.
    pub presets: PresetChoice,
    pub limits: Limits,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            display: SubagentDisplay::Auto,
            zed: ZedOptions::default(),
            presets: PresetChoice::default(),
            limits: Limits::default(),
        }
    }
}
