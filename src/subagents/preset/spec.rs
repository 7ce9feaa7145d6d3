//! A preset as written in TOML: the shipped files under `presets/` and `[[subagents.preset]]`
//! in `proxy.toml` share this schema (documented key by key in `docs/presets.md`).
//!
//! Everything here is plain data, checked only for types by serde; [`super`] compiles
//! it and reports every semantic problem with the key that holds it.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A file of presets: `[[preset]]` tables.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PresetFile {
    #[serde(default)]
    pub preset: Vec<PresetSpec>,
}

/// One preset. Every key but `name` is optional; with `extends`, a key left out keeps the
/// extended preset's value.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PresetSpec {
    pub name: String,
    /// Start from this preset (shipped, or an earlier one of yours) and replace only the keys
    /// given here.
    pub extends: Option<String>,
    /// One line saying what the preset is for (shown by `acp-proxy presets`).
    pub about: Option<String>,
    /// The agents it is chosen for, by `initialize` → `agentInfo`.
    pub agents: Option<Vec<AgentSpec>>,
    /// Used when the agent names no preset (unknown, or no `agentInfo`).
    pub fallback: Option<bool>,
    /// Attribute unmarked events to the only open spawn (opt-in, inferred).
    pub timing: Option<bool>,
    pub spawn: Option<Vec<SpawnSpec>>,
    pub parent: Option<Vec<String>>,
    /// Where a child event names the agent's own id for its child (not the spawn): the id is
    /// bound to a spawn by `agent_child_id` or, marked inferred, to the only open spawn.
    pub child_ref: Option<Vec<String>>,
    pub title: Option<Sources>,
    pub description: Option<Sources>,
    pub prompt: Option<Sources>,
    pub result: Option<Sources>,
    /// Regexes matching what the agent appends to a child's answer for itself (Claude's
    /// `agentId: … (use SendMessage …)` footer): left out where the proxy shows the answer
    /// as text (the folded card).
    pub boilerplate: Option<Vec<String>>,
    pub progress: Option<Sources>,
    pub agent_child_id: Option<Sources>,
    pub child_replay: Option<ChildReplay>,
    /// A background child the agent replays: fetched at its launch, and the events the agent
    /// then streams live on the child's session are the child's.
    pub follow_background: Option<bool>,
    /// A background child nothing on the wire ends: taken as ended when the agent starts a
    /// turn of its own on the parent (no prompt of the client's pending) while it is the only
    /// such child open (inferred).
    pub end_on_agent_turn: Option<bool>,
    /// The agent's own record of each child on disk, read for what the wire leaves out.
    pub child_record: Option<ChildRecord>,
    pub background: Option<Vec<RuleSpec>>,
    pub end: Option<Vec<EndSpec>>,
    pub sibling: Option<Vec<SiblingSpec>>,
    pub spawn_event: Option<Vec<SpawnEventSpec>>,
    pub transcript: Option<TranscriptSpec>,
    pub announce: Option<AnnounceSpec>,
}

impl PresetSpec {
    /// This spec over `base`: every key given here replaces the base's.
    pub fn over(self, base: &PresetSpec) -> PresetSpec {
        let b = base.clone();
        PresetSpec {
            name: self.name,
            extends: None,
            about: self.about.or(b.about),
            agents: self.agents.or(b.agents),
            fallback: self.fallback.or(b.fallback),
            timing: self.timing.or(b.timing),
            spawn: self.spawn.or(b.spawn),
            parent: self.parent.or(b.parent),
            child_ref: self.child_ref.or(b.child_ref),
            title: self.title.or(b.title),
            description: self.description.or(b.description),
            prompt: self.prompt.or(b.prompt),
            result: self.result.or(b.result),
            boilerplate: self.boilerplate.or(b.boilerplate),
            progress: self.progress.or(b.progress),
            agent_child_id: self.agent_child_id.or(b.agent_child_id),
            child_replay: self.child_replay.or(b.child_replay),
            follow_background: self.follow_background.or(b.follow_background),
            end_on_agent_turn: self.end_on_agent_turn.or(b.end_on_agent_turn),
            child_record: self.child_record.or(b.child_record),
            background: self.background.or(b.background),
            end: self.end.or(b.end),
            sibling: self.sibling.or(b.sibling),
            spawn_event: self.spawn_event.or(b.spawn_event),
            transcript: self.transcript.or(b.transcript),
            announce: self.announce.or(b.announce),
        }
    }
}

/// An agent a preset is chosen for: `agentInfo.name` (any case) and, where shapes changed
/// between versions, a semver requirement on `agentInfo.version`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: String,
    pub versions: Option<String>,
}

/// A tool call that starts a subagent: every condition holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpawnSpec {
    pub when: Vec<CondSpec>,
    /// The tool's name as the client is told (`_meta.tool_name`); default: the string the
    /// first condition tested.
    pub tool_name: Option<String>,
    /// Strings one of which every frame matching this rule contains, for the byte search
    /// that lets other frames pass unparsed (derived from the conditions when left out).
    pub marker: Option<Markers>,
}

/// Conditions that all hold (optionally with the markers of [`SpawnSpec::marker`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub when: Vec<CondSpec>,
    pub marker: Option<Markers>,
}

/// One marker, or a list of them (any one of which a matching frame contains).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Markers {
    One(String),
    Any(Vec<String>),
}

impl Markers {
    pub fn as_slice(&self) -> &[String] {
        match self {
            Markers::One(m) => std::slice::from_ref(m),
            Markers::Any(ms) => ms,
        }
    }
}

/// One test on the value a JSON pointer designates in an update. Exactly one of `equals`,
/// `one_of`, `prefix`, `regex`, `exists` is given.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CondSpec {
    pub at: String,
    pub equals: Option<toml::Value>,
    pub one_of: Option<Vec<toml::Value>>,
    pub prefix: Option<String>,
    pub regex: Option<String>,
    pub exists: Option<bool>,
}

/// Where a text is read, tried in order: the first source that gives a non-empty text wins.
pub type Sources = Vec<SourceSpec>;

/// A text read from an update: the value at `at` (a string, a content block or an array of
/// them), then refined.
#[derive(Debug, Clone, Default)]
pub struct SourceSpec {
    pub at: String,
    /// Keep what this matches: its `text` group, else group 1, else the whole match. No match:
    /// this source gives nothing.
    pub regex: Option<String>,
    /// Keep the first non-empty line.
    pub first_line: bool,
    /// Cut to at most this many characters, the last one then being `…`.
    pub max_chars: Option<usize>,
    /// Of an array of blocks: the `first`, the `last`, or `all` joined by newlines (default).
    pub block: Block,
    /// Strip whitespace at both ends.
    pub trim: bool,
    /// Read only from updates where these conditions hold.
    pub when: Vec<CondSpec>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Block {
    First,
    Last,
    #[default]
    All,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceTable {
    at: String,
    regex: Option<String>,
    #[serde(default)]
    first_line: bool,
    max_chars: Option<usize>,
    #[serde(default)]
    block: Block,
    #[serde(default)]
    trim: bool,
    #[serde(default)]
    when: Vec<CondSpec>,
}

/// A source is a table, or just its pointer as a string.
impl<'de> Deserialize<'de> for SourceSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SourceSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON pointer string or a table with `at`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<SourceSpec, E> {
                Ok(SourceSpec {
                    at: s.to_owned(),
                    ..SourceSpec::default()
                })
            }
            fn visit_map<M: MapAccess<'de>>(self, m: M) -> Result<SourceSpec, M::Error> {
                let t = SourceTable::deserialize(de::value::MapAccessDeserializer::new(m))?;
                Ok(SourceSpec {
                    at: t.at,
                    regex: t.regex,
                    first_line: t.first_line,
                    max_chars: t.max_chars,
                    block: t.block,
                    trim: t.trim,
                    when: t.when,
                })
            }
            fn visit_seq<S: SeqAccess<'de>>(self, _: S) -> Result<SourceSpec, S::Error> {
                Err(de::Error::custom(
                    "a source is a pointer string or a table, not a list",
                ))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether the agent can replay a child's real work itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildReplay {
    /// Only the proxy knows the child's work.
    #[default]
    None,
    /// `session/load` of the agent's child id (see `agent_child_id`) replays it.
    SessionLoad,
    /// The same, but only once the parent session's turn (or load) is over: the agent
    /// cannot serve a load of a child while it works on the parent (Droid).
    SessionLoadAfterTurn,
}

impl ChildReplay {
    /// Whether the agent replays a child at all.
    pub fn replays(self) -> bool {
        self != ChildReplay::None
    }
}

/// A record the agent keeps of each child on local disk, found by the agent's child id (see
/// `agent_child_id`) or by the child's task: the proxy reads it (read-only, off the relay
/// path) for what the wire leaves out. Each value names a reader of one agent's format (`subagents::records`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildRecord {
    /// No record is read.
    #[default]
    None,
    /// Claude Code's `projects/<project>/<session>/subagents/agent-<agent id>.jsonl` under
    /// its config folder (`CLAUDE_CONFIG_DIR`, else `~/.claude`).
    ClaudeCode,
    /// Cline's `~/.cline/data/sessions/<session>/agent_<id>.messages.json`, found by the
    /// child's task (its first message); the id is never on the wire.
    Cline,
    /// GitHub Copilot CLI's session log, `session-state/<session>/events.jsonl` under its
    /// home (`COPILOT_HOME`, else `~/.copilot`): its `subagent.started` line ties the spawn's
    /// tool call id to the agent's own id of the child (`child_ref`); nothing else is read.
    Copilot,
    /// Kimi Code CLI's `sessions/<hash>/<session>/subagents/<agent id>/wire.jsonl` under its
    /// share folder (`KIMI_SHARE_DIR`, else `~/.kimi`): the child's own wire; its run is the
    /// one of the child's task.
    Kimi,
}

/// How the proxy finds a child in its agent's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKey {
    /// By the agent's own id of the child (`agent_child_id`).
    AgentId,
    /// By the child's task.
    Task,
    /// By the spawn's tool call id.
    Spawn,
}

impl ChildRecord {
    /// How a child is found in the record; none when no record is read.
    pub fn key(self) -> Option<RecordKey> {
        match self {
            ChildRecord::None => None,
            ChildRecord::ClaudeCode => Some(RecordKey::AgentId),
            ChildRecord::Cline => Some(RecordKey::Task),
            ChildRecord::Copilot => Some(RecordKey::Spawn),
            ChildRecord::Kimi => Some(RecordKey::AgentId),
        }
    }

    /// Whether the record ties the agent's own id of a child to its spawn (then asked for as
    /// soon as the spawn appears, so that the child's events find their thread), rather than
    /// telling the child's work.
    pub fn ties_ids(self) -> bool {
        self == ChildRecord::Copilot
    }

    /// How a child is found in the record while its spawn runs, when the record is followed
    /// then (its work shown live): the key the spawn gives only when it ends (Kimi's
    /// `agent_id`) is not known yet. None: the record is read once the spawn ended.
    pub fn live_key(self) -> Option<RecordKey> {
        match self {
            ChildRecord::Kimi => Some(RecordKey::Task),
            _ => None,
        }
    }
}

/// A later frame that ends a background child: it names the spawn and a status.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndSpec {
    pub when: Vec<CondSpec>,
    pub marker: Option<Markers>,
    /// The spawn's tool call id (or give `child_id`).
    #[serde(default)]
    pub spawn_id: Sources,
    /// The agent's own id for the child (bound by `agent_child_id` or `child_ref`), where the
    /// frame names that instead of the spawn.
    #[serde(default)]
    pub child_id: Sources,
    /// The child's final status; a value in `completed` ends it well, one in `running` does
    /// not end it, any other fails it.
    #[serde(default)]
    pub status: Sources,
    pub completed: Option<Vec<String>>,
    pub running: Option<Vec<String>>,
}

/// A tool call beside the spawn that carries the child's work (AgentPool's tool box).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiblingSpec {
    pub when: Vec<CondSpec>,
    pub marker: Option<Markers>,
    /// The key read from the sibling call (e.g. the agent's name in its id)...
    pub key: Sources,
    /// ... equal to this one read from the spawn it belongs to.
    pub spawn_key: Sources,
    #[serde(default)]
    pub content: SiblingContent,
}

/// How a sibling call's content relates to the previous update's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SiblingContent {
    /// Every update re-sends the whole transcript.
    #[default]
    Replace,
    /// Every update adds to it.
    Append,
}

/// An update of the spawn card itself that carries a child event (Goose's tool requests).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpawnEventSpec {
    pub when: Vec<CondSpec>,
    pub kind: SpawnEventKind,
    pub title: Sources,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpawnEventKind {
    /// The child asked to run a tool (no result follows on the wire).
    ToolRequest,
}

/// The child's work folded into text, with a line grammar.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptSpec {
    /// Which call carries it: the spawn card or the sibling call.
    pub on: TranscriptOn,
    pub from: Sources,
    /// One level of nesting (default: none).
    pub indent: Option<String>,
    #[serde(default)]
    pub line: Vec<LineSpec>,
    /// What a line no pattern matches is.
    #[serde(default)]
    pub other: OtherLines,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptOn {
    Spawn,
    Sibling,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtherLines {
    /// The child's prose: consecutive such lines make one text entry.
    #[default]
    Text,
    Ignore,
}

/// A line pattern and what a matching line is.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineSpec {
    /// A regex; groups `text`, `name` and `count` feed the entry.
    pub pattern: String,
    pub kind: LineKind,
    pub status: Option<EntryStatus>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// Names the transcript (its groups are kept as header fields).
    Header,
    /// A tool call entry titled `text`, with `status`.
    Tool,
    /// Ends the latest open tool call (named `name`, if given) with `status`; `text` is its
    /// output.
    ToolResult,
    /// One text entry.
    Text,
    /// `count` entries fell off the front.
    Omitted,
    /// The child ended with `status`.
    End,
    Ignore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    InProgress,
    Completed,
    Failed,
}

/// What standard ACP `subagent_update` announcements lack for this agent.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AnnounceSpec {
    #[serde(default)]
    pub title: Sources,
    #[serde(default)]
    pub prompt: Sources,
    /// What the child thread opens with when the announcement carries no task (none of
    /// `prompt` reads one) and no `session_message` brings it: why it is not there.
    pub no_prompt: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_a_pointer_or_a_table() {
        let f: PresetFile = toml::from_str(
            r#"
            [[preset]]
            name = "x"
            title = ["/a", { at = "/b", first_line = true, max_chars = 9 }]
            "#,
        )
        .expect("parses");
        let t = f.preset[0].title.as_ref().expect("title");
        assert_eq!(t[0].at, "/a");
        assert!(t[1].first_line && t[1].max_chars == Some(9));
        let e = toml::from_str::<PresetFile>(
            "[[preset]]\nname = \"x\"\ntitle = [{ at = \"/a\", frist_line = true }]\n",
        )
        .expect_err("unknown key")
        .to_string();
        assert!(e.contains("frist_line"), "{e}");
    }

    #[test]
    fn extends_keeps_what_is_not_given() {
        let base: PresetFile =
            toml::from_str("[[preset]]\nname = \"a\"\nabout = \"A\"\nparent = [\"/_meta/p\"]\n")
                .expect("base");
        let mine: PresetFile =
            toml::from_str("[[preset]]\nname = \"b\"\nextends = \"a\"\nabout = \"B\"\n")
                .expect("mine");
        let merged = mine.preset[0].clone().over(&base.preset[0]);
        assert_eq!(merged.name, "b");
        assert_eq!(merged.about.as_deref(), Some("B"));
        assert_eq!(merged.parent, Some(vec!["/_meta/p".to_owned()]));
    }
}
