//! Reading subagent signals out of an update, driven by the [presets](super::set) in force.
//!
//! The first group of methods ([`Detector::spawn_tool_name`], [`Detector::parent_ref`], ...)
//! look at every preset in order, as the engine asks them without knowing which preset a
//! spawn came from. The second group ([`Detector::spawn`] and the `*_of` methods) answer for
//! the preset that claimed a spawn, named by a [`PresetId`]; they carry the signals the engine
//! does not act on yet (progress, end signals, sibling calls, transcripts, replays).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::spec::{ChildRecord, ChildReplay, SiblingContent, SpawnEventKind, TranscriptOn};
use super::transcript::grammar::{Grammar, ParsedTranscript};
use super::vocab::{first_text, first_text_raw, pointer, pointers_overlap, value_text, Source};
use super::{EndRule, Preset};
use crate::wire::keys::{string_after_key, Found, KeySet};
use crate::wire::pointer::{self, PointerSet, Spans};

/// The active presets, plus the byte markers that let the engine skip frames cheaply.
/// Cheap to clone (the reader thread has its own).
#[derive(Debug, Clone)]
pub struct Detector(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    presets: Vec<Preset>,
    /// Searchers (built once) for the keys whose presence in a frame means it may name a
    /// parent tool call (`"parentToolUseId"`, ...).
    parent_finders: Vec<memchr::memmem::Finder<'static>>,
    /// The engine's fixed keys, the parent keys and the strings without which a tool call
    /// cannot be a spawn of any preset, searched in one pass.
    key_set: KeySet,
    /// Every preset's parent pointer starts at the update's `_meta`.
    parents_under_meta: bool,
    /// Some preset allows attributing unmarked events by timing.
    any_timing: bool,
    /// Whether any preset in force has `child_ref` pointers.
    any_child_ref: bool,
    /// Some preset ends a background child by the agent's own turn (`end_on_agent_turn`).
    any_agent_turn_end: bool,
    markers: ByteMarkers,
    /// Per preset, what [`Detector::card_frame_raw`] looks for in a spawn card's update;
    /// `None` for a preset that reads more of the card.
    card_reads: Vec<Option<PointerSet>>,
}

/// The byte markers of the presets in force, by what a frame holding one may be. Every frame
/// a rule matches holds one of that rule's markers, so a frame with none of a kind cannot be
/// that kind and may pass unparsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ByteMarkers {
    /// May name a spawn as a child event's parent (searched by the engine today).
    pub parent: Vec<String>,
    /// May start a spawn (searched by the engine today).
    pub spawn: Vec<String>,
    /// May end a background child from a frame of its own (Qwen's `backgroundTask`; searched
    /// by the engine).
    pub end: Vec<String>,
    /// May be a sibling call carrying a child's work (AgentPool's `subagent:` box; searched
    /// by the engine).
    pub sibling: Vec<String>,
}

/// Which of a detector's presets (its index among them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PresetId(pub usize);

/// A tool call that starts a subagent, as its preset reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn {
    pub preset: PresetId,
    /// The tool's name for the client (`_meta.tool_name`).
    pub tool_name: String,
    pub title: Option<String>,
    pub prompt: Option<String>,
    pub description: Option<String>,
    /// The child runs in the background: the spawn's completion is only its launch.
    pub background: bool,
    /// The agent's own id for the child, if this update carries it.
    pub agent_child_id: Option<String>,
    /// What a sibling call of this child names it by.
    pub sibling_key: Option<String>,
}

/// How a frame that ends a child says it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndStatus {
    Completed,
    /// Any status not listed as completed or running (the agent's word for it).
    Failed(String),
    /// Not an end after all: the child still runs.
    Running,
}

/// A frame that ends a (background) child, naming its spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndSignal {
    pub preset: PresetId,
    /// What the frame names the child by.
    pub names: EndNames,
    pub status: EndStatus,
}

/// What an end signal names the child by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndNames {
    /// The spawn's tool call id.
    Spawn(String),
    /// The agent's own id for the child (`child_id`), bound to a spawn earlier.
    AgentChild(String),
}

/// A tool call beside a spawn that carries a child's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiblingCall {
    pub preset: PresetId,
    /// To be matched with an open spawn's [`Spawn::sibling_key`].
    pub key: String,
    pub content: SiblingContent,
}

/// Which open spawn a sibling call belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiblingOwner<'a> {
    One(&'a str),
    /// No open spawn has that key: the call stays in the parent.
    None,
    /// Several do: no safe attribution, the call stays in the parent.
    Ambiguous(Vec<&'a str>),
}

/// A child event carried by an update of the spawn card itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnEvent {
    pub kind: SpawnEventKind,
    pub title: String,
}

/// What an update of a spawn card tells, as [`Detector::card_frame_raw`] reads it: what
/// `title_of`, `description_of`, `progress_of` and `background_of` read on the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardFrame {
    pub title: Option<String>,
    pub description: Option<String>,
    pub progress: Option<String>,
    pub background: bool,
    /// The update's `status`: `Some(None)` when it is there but no string.
    pub status: Option<Option<String>>,
    /// Where each of the update's keys is in its text (offset, length), in order.
    pub keys: Vec<(usize, usize)>,
}

/// What a standard `subagent_update` announcement lacks, from the preset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnnounceRead {
    pub title: Option<String>,
    pub prompt: Option<String>,
    /// The note the child thread opens with when no task is known (`announce.no_prompt`).
    pub no_prompt: Option<String>,
}

/// The pointers a spawn card's update is read at by [`Detector::card_frame_raw`] (its status,
/// the preset's title, description and progress, its background rules); `None` when the
/// preset reads more of the card (the agent's child id, a transcript, child events, ids it
/// binds).
fn card_reads(p: &Preset) -> Option<PointerSet> {
    let binds = !p.child_ref.is_empty() || p.end.iter().any(|e| !e.child_id.is_empty());
    if !p.agent_child_id.is_empty() || binds || p.transcript.is_some() || !p.spawn_event.is_empty()
    {
        return None;
    }
    let mut ptrs = vec!["/status"];
    for s in p.title.iter().chain(&p.description).chain(&p.progress) {
        s.pointers(&mut ptrs);
    }
    for rule in &p.background {
        rule.pointers(&mut ptrs);
    }
    Some(PointerSet::new(ptrs))
}

fn owned(t: Option<Cow<'_, str>>) -> Option<String> {
    t.map(Cow::into_owned)
}

impl Detector {
    pub fn new(presets: Vec<Preset>) -> Detector {
        let collect = |f: &dyn Fn(&Preset) -> Vec<String>| {
            let mut v: Vec<String> = presets.iter().flat_map(f).collect();
            v.sort();
            v.dedup();
            v
        };
        let markers = ByteMarkers {
            parent: collect(&|p| p.parent_markers().collect()),
            spawn: collect(&|p| p.spawn_markers().map(str::to_owned).collect()),
            end: collect(&|p| p.end_markers().map(str::to_owned).collect()),
            sibling: collect(&|p| p.sibling_markers().map(str::to_owned).collect()),
        };
        // A frame naming an agent's own child id is read like one naming a parent: the same
        // byte signal keeps it off the untouched path (the values are looked up apart).
        let mut refs = markers.parent.clone();
        refs.extend(collect(&|p| p.child_ref_markers().collect()));
        refs.sort();
        refs.dedup();
        let any_child_ref = presets.iter().any(|p| !p.child_ref.is_empty());
        let parents_under_meta = presets
            .iter()
            .flat_map(|p| p.parent.iter())
            .all(|ptr| ptr.starts_with("/_meta/"));
        let any_timing = presets.iter().any(|p| p.timing);
        let card_reads = presets.iter().map(card_reads).collect();
        let any_agent_turn_end = presets.iter().any(|p| p.end_on_agent_turn);
        Detector(Arc::new(Inner {
            card_reads,
            parents_under_meta,
            any_timing,
            any_agent_turn_end,
            any_child_ref,
            key_set: KeySet::new(&refs, &markers.spawn, &markers.end, &markers.sibling),
            parent_finders: markers
                .parent
                .iter()
                .map(|m| memchr::memmem::Finder::new(m.as_bytes()).into_owned())
                .collect(),
            presets,
            markers,
        }))
    }

    /// The presets in force, in the order they are tried.
    pub fn presets(&self) -> &[Preset] {
        &self.0.presets
    }

    pub fn preset(&self, id: PresetId) -> Option<&Preset> {
        self.0.presets.get(id.0)
    }

    /// The byte markers derived from the presets, by kind.
    pub fn markers(&self) -> &ByteMarkers {
        &self.0.markers
    }

    /// Which keys (fixed ones, parent keys, spawn markers) occur in a raw frame: one pass.
    /// A frame without [`kind::SPAWN`](crate::wire::keys::kind::SPAWN) cannot hold a spawn,
    /// one without [`kind::PARENT`](crate::wire::keys::kind::PARENT) names no parent.
    pub fn scan(&self, raw: &[u8]) -> Found {
        self.0.key_set.scan(raw)
    }

    /// The byte searches behind [`Detector::scan`], for reading frames ahead elsewhere.
    pub(crate) fn key_set(&self) -> &KeySet {
        &self.0.key_set
    }

    /// The tool call id of the spawn this child event belongs to, if any preset names one.
    pub fn parent_ref<'v>(&self, update: &'v Value) -> Option<&'v str> {
        self.0
            .presets
            .iter()
            .flat_map(|p| p.parent.iter())
            .find_map(|ptr| pointer(update, ptr).and_then(Value::as_str))
    }

    /// The agent's own child id a child event names (`child_ref`), with the preset that says
    /// where it is.
    pub fn child_ref<'v>(&self, update: &'v Value) -> Option<(PresetId, &'v str)> {
        self.0.presets.iter().enumerate().find_map(|(i, p)| {
            p.child_ref
                .iter()
                .find_map(|ptr| pointer(update, ptr).and_then(Value::as_str))
                .filter(|id| !id.is_empty())
                .map(|id| (PresetId(i), id))
        })
    }

    /// Whether any preset in force reads agent child ids off events (`child_ref`).
    pub fn any_child_ref(&self) -> bool {
        self.0.any_child_ref
    }

    /// Whether this preset's agent marks its children's events with its own child id: then
    /// a tool call without one is not a child's.
    pub fn marks_child_events(&self, id: PresetId) -> bool {
        self.preset(id).is_some_and(|p| !p.child_ref.is_empty())
    }

    /// Whether this preset binds the agent's own child ids to spawns: it reads them off
    /// events (`child_ref`) or ends children by them (`end` with `child_id`).
    pub fn binds_child_ids(&self, id: PresetId) -> bool {
        self.preset(id).is_some_and(|p| {
            !p.child_ref.is_empty() || p.end.iter().any(|e| !e.child_id.is_empty())
        })
    }

    /// The parent reference read from the raw JSON of an update, without parsing it: the
    /// string value of a preset's parent key, if exactly one value appears. `None` when there
    /// is none, several, or one with escapes (the caller then parses).
    ///
    /// When every preset's parent key lives under the update's `_meta` (as all do today), only
    /// `meta` (that object's text, if the update has one) is searched, not the whole update.
    pub fn parent_ref_raw(&self, raw: &str, meta: Option<&str>) -> Option<String> {
        let raw = if self.0.parents_under_meta {
            meta?
        } else {
            raw
        };
        let mut found: Option<&str> = None;
        for finder in &self.0.parent_finders {
            let key_len = finder.needle().len();
            for pos in finder.find_iter(raw.as_bytes()) {
                // The key is ASCII: the byte after it starts a character.
                let value = string_after_key(raw.get(pos + key_len..)?)?;
                match found {
                    Some(f) if f != value => return None,
                    _ => found = Some(value),
                }
            }
        }
        found.map(str::to_owned)
    }

    /// The first preset and rule that claim this tool call as a spawn, with its tool name.
    fn claim(&self, update: &Value) -> Option<(PresetId, String)> {
        self.0.presets.iter().enumerate().find_map(|(i, p)| {
            p.spawn.iter().find_map(|s| {
                if !s.rule.holds(update) {
                    return None;
                }
                let name = match &s.tool_name {
                    Some(n) => n.clone(),
                    None => s.rule.when[0].matched_str(update)?.to_owned(),
                };
                Some((PresetId(i), name))
            })
        })
    }

    /// If this `tool_call` (or first update) starts a subagent: the agent's tool name for it.
    pub fn spawn_tool_name(&self, update: &Value) -> Option<String> {
        self.claim(update).map(|(_, name)| name)
    }

    /// The first text any preset reads with `pick`, borrowed from the update (a source that
    /// has to build its text is passed over: these are the engine's borrowed fields).
    fn first_borrowed<'v>(
        &self,
        update: &'v Value,
        pick: fn(&Preset) -> &[Source],
    ) -> Option<&'v str> {
        self.0
            .presets
            .iter()
            .flat_map(|p| pick(p).iter())
            .find_map(|s| match s.text(update) {
                Some(Cow::Borrowed(t)) => Some(t),
                _ => None,
            })
    }

    /// The task prompt a spawn carries.
    pub fn prompt<'v>(&self, update: &'v Value) -> Option<&'v str> {
        self.first_borrowed(update, |p| &p.prompt)
    }

    /// A short description of the task (used as the card's title when the agent has none).
    pub fn description<'v>(&self, update: &'v Value) -> Option<&'v str> {
        self.first_borrowed(update, |p| &p.title)
    }

    /// Whether this spawn update says the child runs in the background.
    pub fn is_background(&self, update: &Value) -> bool {
        self.0
            .presets
            .iter()
            .flat_map(|p| p.background.iter())
            .any(|r| r.holds(update))
    }

    /// The child's final answer carried by a completed spawn, as plain text: a preset's
    /// `result`, else the tool call's own content.
    pub fn result_text(&self, update: &Value) -> Option<String> {
        self.0
            .presets
            .iter()
            .find_map(|p| first_text(&p.result, update))
            .or_else(|| {
                update
                    .get("content")
                    .and_then(|c| value_text(c, super::spec::Block::All))
            })
            .map(Cow::into_owned)
    }

    // ---- For the preset that claimed a spawn -------------------------------------------

    /// If this tool call starts a subagent: which preset claims it and all it says.
    pub fn spawn(&self, update: &Value) -> Option<Spawn> {
        let (id, tool_name) = self.claim(update)?;
        Some(Spawn {
            preset: id,
            tool_name,
            title: self.title_of(id, update),
            prompt: self.prompt_of(id, update),
            description: self.description_of(id, update),
            background: self.background_of(id, update),
            agent_child_id: self.agent_child_id_of(id, update),
            sibling_key: self.sibling_key_of(id, update),
        })
    }

    fn read(&self, id: PresetId, update: &Value, pick: fn(&Preset) -> &[Source]) -> Option<String> {
        owned(first_text(pick(self.preset(id)?), update))
    }

    /// The card's title from a spawn update.
    pub fn title_of(&self, id: PresetId, update: &Value) -> Option<String> {
        self.read(id, update, |p| &p.title)
    }

    pub fn prompt_of(&self, id: PresetId, update: &Value) -> Option<String> {
        self.read(id, update, |p| &p.prompt)
    }

    pub fn description_of(&self, id: PresetId, update: &Value) -> Option<String> {
        self.read(id, update, |p| &p.description)
    }

    /// The child's final answer from a completed spawn update (no fallback to the content).
    pub fn result_of(&self, id: PresetId, update: &Value) -> Option<String> {
        self.read(id, update, |p| &p.result)
    }

    /// The child's final answer from a completed spawn update: the preset's `result`, else the
    /// tool call's own content, as plain text.
    pub fn answer_of(&self, id: PresetId, update: &Value) -> Option<String> {
        self.result_of(id, update).or_else(|| {
            update
                .get("content")
                .and_then(|c| value_text(c, super::spec::Block::All))
                .map(Cow::into_owned)
        })
    }

    /// What an update of a spawn card tells (its title, description, live activity, whether
    /// the child runs in the background), read from the update's JSON text without a tree.
    /// `None` when the preset reads more off its card (the agent's child id, a transcript,
    /// child events) or a reading needs the parsed update: the caller then parses.
    pub fn card_frame_raw(&self, id: PresetId, json: &str) -> Option<CardFrame> {
        let p = self.preset(id)?;
        let set = self.0.card_reads.get(id.0)?.as_ref()?;
        // One walk of the text for every value read.
        let spans = Spans::find(json, set)?;
        let text = |sources: &[Source]| first_text_raw(sources, &spans).map(owned);
        let mut background = false;
        for rule in &p.background {
            background |= rule.holds_raw(&spans)?;
        }
        let status = match spans.get("/status")? {
            None | Some("null") => None,
            Some(s) => Some(pointer::string(s).map(Cow::into_owned)),
        };
        let base = json.as_ptr() as usize;
        Some(CardFrame {
            title: text(&p.title)?,
            description: text(&p.description)?,
            progress: text(&p.progress)?,
            background,
            status,
            keys: spans
                .keys()
                .iter()
                .map(|k| (k.as_ptr() as usize - base, k.len()))
                .collect(),
        })
    }

    /// The child's live activity from a spawn update, for the card's title while it runs.
    pub fn progress_of(&self, id: PresetId, update: &Value) -> Option<String> {
        self.read(id, update, |p| &p.progress)
    }

    /// The agent's own id for the child.
    /// Whether the preset reads the agent's own id for a child from its spawn.
    pub fn reads_agent_child_id(&self, id: PresetId) -> bool {
        self.preset(id)
            .is_some_and(|p| !p.agent_child_id.is_empty())
    }

    pub fn agent_child_id_of(&self, id: PresetId, update: &Value) -> Option<String> {
        self.read(id, update, |p| &p.agent_child_id)
    }

    pub fn background_of(&self, id: PresetId, update: &Value) -> bool {
        self.preset(id)
            .is_some_and(|p| p.background.iter().any(|r| r.holds(update)))
    }

    /// Whether a background child's card stays open after its launch: the preset can end it
    /// later (`end`), or the child has no stream of its own whose events would show it
    /// running (no `parent` pointers), so a completed card would be the only sign of it.
    pub fn keeps_background_open(&self, id: PresetId) -> bool {
        self.preset(id)
            .is_some_and(|p| !p.end.is_empty() || p.parent.is_empty())
    }

    /// Whether the agent sends nothing of the child but the spawn card itself: no prompt, no
    /// result, no child events, no transcript, no replay (Gemini's `invoke_agent`).
    pub fn child_unseen(&self, id: PresetId) -> bool {
        self.preset(id).is_some_and(|p| {
            p.prompt.is_empty()
                && p.result.is_empty()
                && p.parent.is_empty()
                && p.sibling.is_empty()
                && p.spawn_event.is_empty()
                && p.transcript.is_none()
                && p.child_replay == ChildReplay::None
                && p.child_record == ChildRecord::None
        })
    }

    /// Whether the agent replays the child itself (`session/load` of its child id).
    pub fn child_replay_of(&self, id: PresetId) -> ChildReplay {
        self.preset(id)
            .map_or(ChildReplay::None, |p| p.child_replay)
    }

    /// Whether a background child of this preset is fetched at its launch and followed live.
    pub fn follows_background(&self, id: PresetId) -> bool {
        self.preset(id)
            .is_some_and(|p| p.follow_background && p.child_replay.replays())
    }

    /// Whether a background child of this preset ends when the agent starts a turn of its own
    /// on the parent (`end_on_agent_turn`).
    pub fn ends_on_agent_turn(&self, id: PresetId) -> bool {
        self.preset(id).is_some_and(|p| p.end_on_agent_turn)
    }

    /// Whether any preset in force ends background children by the agent's own turn
    /// (checked on the parent's frames while a child is open, so kept as one flag).
    pub fn any_agent_turn_end(&self) -> bool {
        self.0.any_agent_turn_end
    }

    /// The agent's own record of a child that the proxy reads, if any.
    pub fn child_record_of(&self, id: PresetId) -> ChildRecord {
        self.preset(id)
            .map_or(ChildRecord::None, |p| p.child_record)
    }

    /// Whether unmarked events may be attributed by timing (opt-in per preset).
    /// Whether any preset in force attributes unmarked events by timing (checked on frames
    /// that name no spawn, so kept as one flag).
    pub fn any_timing(&self) -> bool {
        self.0.any_timing
    }

    pub fn timing_of(&self, id: PresetId) -> bool {
        self.preset(id).is_some_and(|p| p.timing)
    }

    /// What a sibling call of the child this spawn starts names it by.
    pub fn sibling_key_of(&self, id: PresetId, spawn_update: &Value) -> Option<String> {
        let p = self.preset(id)?;
        p.sibling
            .iter()
            .find_map(|s| first_text(&s.spawn_key, spawn_update))
            .map(Cow::into_owned)
    }

    /// A child event carried by this update of the spawn card (Goose's tool requests).
    pub fn spawn_event_of(&self, id: PresetId, update: &Value) -> Option<SpawnEvent> {
        self.preset(id)?.spawn_event.iter().find_map(|e| {
            if !e.rule.holds(update) {
                return None;
            }
            Some(SpawnEvent {
                kind: e.kind,
                title: first_text(&e.title, update)?.into_owned(),
            })
        })
    }

    /// Which call carries this preset's folded transcript, if it has one.
    pub fn transcript_on(&self, id: PresetId) -> Option<TranscriptOn> {
        self.preset(id)?.transcript.as_ref().map(|g| g.on)
    }

    /// The folded transcript in this update (of the spawn or the sibling call, as
    /// [`Detector::transcript_on`] says), taken apart by the preset's grammar.
    pub fn transcript_of(&self, id: PresetId, update: &Value) -> Option<ParsedTranscript> {
        let g = self.preset(id)?.transcript.as_ref()?;
        let text = first_text(&g.from, update)?;
        Some(g.parse(&text))
    }

    /// The folded transcript's text in this update, and the grammar that reads it.
    pub fn transcript_text_of<'v>(
        &self,
        id: PresetId,
        update: &'v Value,
    ) -> Option<(&Grammar, Cow<'v, str>)> {
        let g = self.preset(id)?.transcript.as_ref()?;
        Some((g, first_text(&g.from, update)?))
    }

    /// This preset's transcript grammar.
    pub fn transcript_grammar(&self, id: PresetId) -> Option<&Grammar> {
        self.preset(id)?.transcript.as_ref()
    }

    /// The one source of this preset's transcript when an update's other bytes tell nothing
    /// about it: no preset's sibling rule or key reads it, nor does the router (kind, tool
    /// call id, status). Then an update that differs from the last only inside that string
    /// differs only in the transcript ([`crate::subagents::preset::vocab::Source::span_in`]).
    pub fn transcript_source_alone(&self, id: PresetId) -> Option<&Source> {
        let g = self.preset(id)?.transcript.as_ref()?;
        let [source] = g.from.as_slice() else {
            return None;
        };
        let at = source.at.as_str();
        let routed = ["/sessionUpdate", "/toolCallId", "/status"]
            .iter()
            .any(|f| pointers_overlap(f, at));
        let read = self.0.presets.iter().flat_map(|p| &p.sibling).any(|s| {
            s.rule.reads_at(at) || s.key.iter().chain(&s.spawn_key).any(|k| k.reads_at(at))
        });
        (!routed && !read).then_some(source)
    }

    /// Take a transcript text apart with this preset's grammar.
    pub fn parse_transcript(&self, id: PresetId, text: &str) -> Option<ParsedTranscript> {
        Some(self.preset(id)?.transcript.as_ref()?.parse(text))
    }

    // ---- Frames that are not the spawn but name it --------------------------------------

    /// A frame that ends a background child: which spawn, and how it ended.
    pub fn end_signal(&self, update: &Value) -> Option<EndSignal> {
        self.0.presets.iter().enumerate().find_map(|(i, p)| {
            p.end
                .iter()
                .find_map(|e| end_of(e, update))
                .map(|(names, status)| EndSignal {
                    preset: PresetId(i),
                    names,
                    status,
                })
        })
    }

    /// A tool call (or update) that carries a child's work beside its spawn.
    pub fn sibling(&self, update: &Value) -> Option<SiblingCall> {
        self.0.presets.iter().enumerate().find_map(|(i, p)| {
            p.sibling.iter().find_map(|s| {
                if !s.rule.holds(update) {
                    return None;
                }
                Some(SiblingCall {
                    preset: PresetId(i),
                    key: first_text(&s.key, update)?.into_owned(),
                    content: s.content,
                })
            })
        })
    }

    /// The announcement's missing title and prompt, from the first preset that reads one.
    pub fn announce(&self, update: &Value) -> AnnounceRead {
        let read = |pick: fn(&Preset) -> &[Source]| {
            self.0
                .presets
                .iter()
                .find_map(|p| first_text(pick(p), update))
                .map(Cow::into_owned)
        };
        let prompt = read(|p| &p.announce.prompt);
        let no_prompt = if prompt.is_none() {
            self.0
                .presets
                .iter()
                .find_map(|p| p.announce.no_prompt.clone())
        } else {
            None
        };
        AnnounceRead {
            title: read(|p| &p.announce.title),
            prompt,
            no_prompt,
        }
    }
}

fn end_of(e: &EndRule, update: &Value) -> Option<(EndNames, EndStatus)> {
    if !e.rule.holds(update) {
        return None;
    }
    let names = if e.child_id.is_empty() {
        EndNames::Spawn(first_text(&e.spawn_id, update)?.into_owned())
    } else {
        EndNames::AgentChild(first_text(&e.child_id, update)?.into_owned())
    };
    let status = match first_text(&e.status, update) {
        // No status given: the frame's presence is the end.
        None => EndStatus::Completed,
        Some(s) if e.completed.iter().any(|c| *c == s) => EndStatus::Completed,
        Some(s) if e.running.iter().any(|c| *c == s) => EndStatus::Running,
        Some(s) => EndStatus::Failed(s.into_owned()),
    };
    Some((names, status))
}

/// Which of the open spawns a sibling call with `key` belongs to: the only one whose
/// [`Spawn::sibling_key`] equals it. `open` lists (spawn tool call id, its sibling key).
pub fn sibling_owner<'a>(
    key: &str,
    open: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> SiblingOwner<'a> {
    let hits: Vec<&str> = open
        .into_iter()
        .filter(|(_, k)| *k == Some(key))
        .map(|(id, _)| id)
        .collect();
    match hits.as_slice() {
        [] => SiblingOwner::None,
        [one] => SiblingOwner::One(one),
        _ => SiblingOwner::Ambiguous(hits),
    }
}

#[cfg(test)]
mod tests;
