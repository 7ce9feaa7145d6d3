//! The preset language: per-agent subagent signatures as data (the TOML files in `presets/`).
//! `spec` is a preset as written, `vocab` its building blocks compiled, this module one preset
//! compiled and checked (every problem reported with the key that holds it), `set` the
//! shipped and user presets together, `select` the choice per agent, `detect` the matcher the
//! engine asks, `transcript` a folded transcript's grammar and its reading back into child
//! updates.

pub mod detect;
pub mod select;
pub mod set;
pub mod spec;
pub mod transcript;
pub mod vocab;

use std::sync::Arc;

use self::spec::{
    ChildRecord, ChildReplay, PresetSpec, SiblingContent, SourceSpec, SpawnEventKind, SpawnSpec,
};
use self::transcript::grammar::Grammar;
use self::vocab::{check_pointer, final_key, quoted, Pattern, PresetError, Rule, Source};

/// Where a preset comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file shipped in the binary (`presets/<file>`).
    Shipped(&'static str),
    /// `[[subagents.preset]]` in the config, by index.
    Config(usize),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Shipped(file) => write!(f, "shipped ({file})"),
            Origin::Config(i) => write!(f, "config (subagents.preset[{i}])"),
        }
    }
}

/// An agent a preset is chosen for.
#[derive(Debug, Clone)]
pub struct AgentMatch {
    /// `agentInfo.name` as written in the preset (compared without regard to case).
    pub name: String,
    pub versions: Option<semver::VersionReq>,
}

/// A spawn rule: its conditions, and the tool name it reports.
#[derive(Debug, Clone)]
pub struct SpawnRule {
    pub rule: Rule,
    pub tool_name: Option<String>,
}

/// A later frame that ends a (background) child.
#[derive(Debug, Clone)]
pub struct EndRule {
    pub rule: Rule,
    pub spawn_id: Vec<Source>,
    /// The agent's own child id, when the frame names that instead of the spawn.
    pub child_id: Vec<Source>,
    pub status: Vec<Source>,
    pub completed: Vec<String>,
    pub running: Vec<String>,
}

/// A sibling call carrying a child's work.
#[derive(Debug, Clone)]
pub struct SiblingRule {
    pub rule: Rule,
    pub key: Vec<Source>,
    pub spawn_key: Vec<Source>,
    pub content: SiblingContent,
}

/// An update of the spawn card carrying a child event.
#[derive(Debug, Clone)]
pub struct SpawnEventRule {
    pub rule: Rule,
    pub kind: SpawnEventKind,
    pub title: Vec<Source>,
}

/// What standard announcements lack.
#[derive(Debug, Clone, Default)]
pub struct Announce {
    pub title: Vec<Source>,
    pub prompt: Vec<Source>,
    pub no_prompt: Option<String>,
}

/// A compiled preset (cheap to clone).
#[derive(Debug, Clone)]
pub struct Preset(Arc<PresetData>);

#[derive(Debug)]
pub struct PresetData {
    pub name: String,
    pub about: String,
    pub origin: Origin,
    pub agents: Vec<AgentMatch>,
    pub fallback: bool,
    pub timing: bool,
    pub spawn: Vec<SpawnRule>,
    pub parent: Vec<String>,
    /// Where a child event names the agent's own child id (`child_ref`).
    pub child_ref: Vec<String>,
    pub title: Vec<Source>,
    pub description: Vec<Source>,
    pub prompt: Vec<Source>,
    pub result: Vec<Source>,
    /// What the agent appends to a child's answer for itself (`boilerplate`).
    pub boilerplate: Vec<Pattern>,
    pub progress: Vec<Source>,
    pub agent_child_id: Vec<Source>,
    pub child_replay: ChildReplay,
    /// Fetch a background child at its launch and keep its live events (`follow_background`).
    pub follow_background: bool,
    /// A background child ends when the agent starts a turn of its own on the parent
    /// (`end_on_agent_turn`).
    pub end_on_agent_turn: bool,
    pub child_record: ChildRecord,
    pub background: Vec<Rule>,
    pub end: Vec<EndRule>,
    pub sibling: Vec<SiblingRule>,
    pub spawn_event: Vec<SpawnEventRule>,
    pub transcript: Option<Grammar>,
    pub announce: Announce,
    /// The spec it was compiled from (what `extends` starts from).
    pub spec: PresetSpec,
}

impl std::ops::Deref for Preset {
    type Target = PresetData;
    fn deref(&self) -> &PresetData {
        &self.0
    }
}

/// Preset names: short, and safe in a list on one line.
fn check_name(name: &str, key: &str) -> Result<(), PresetError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(PresetError::new(
            key,
            format!("`{name}` is not a preset name (letters, digits, `-`, `_`, `.`; at most 64)"),
        ))
    }
}

fn sources(s: &Option<Vec<SourceSpec>>, key: &str) -> Result<Vec<Source>, PresetError> {
    Source::compile_all(s.as_deref().unwrap_or_default(), key)
}

fn required(s: &[SourceSpec], key: &str) -> Result<Vec<Source>, PresetError> {
    if s.is_empty() {
        return Err(PresetError::new(key, "is empty: give at least one source"));
    }
    Source::compile_all(s, key)
}

fn spawn_rule(s: &SpawnSpec, key: &str) -> Result<SpawnRule, PresetError> {
    let rule = Rule::compile(&s.when, s.marker.as_ref(), key, true)?;
    if s.tool_name.is_none() && !rule.when[0].tests_a_string() {
        return Err(PresetError::new(
            format!("{key}.tool_name"),
            "is required when the first condition does not test a string (the tool name is that string by default)",
        ));
    }
    if s.tool_name.as_deref() == Some("") {
        return Err(PresetError::new(format!("{key}.tool_name"), "is empty"));
    }
    Ok(SpawnRule {
        rule,
        tool_name: s.tool_name.clone(),
    })
}

impl Preset {
    /// Compile `spec`; `key` is where it was written (`subagents.preset[0]`), for messages.
    pub fn compile(spec: PresetSpec, key: &str, origin: Origin) -> Result<Preset, PresetError> {
        check_name(&spec.name, &format!("{key}.name"))?;
        let agents = spec
            .agents
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let k = format!("{key}.agents[{i}]");
                if a.name.trim().is_empty() {
                    return Err(PresetError::new(format!("{k}.name"), "is empty"));
                }
                let versions = a
                    .versions
                    .as_deref()
                    .map(|v| {
                        semver::VersionReq::parse(v).map_err(|e| {
                            PresetError::new(
                                format!("{k}.versions"),
                                format!(
                                    "`{v}` is not a version requirement (e.g. \">=1.2, <2\"): {e}"
                                ),
                            )
                        })
                    })
                    .transpose()?;
                Ok(AgentMatch {
                    name: a.name.clone(),
                    versions,
                })
            })
            .collect::<Result<_, _>>()?;
        let spawn = spec
            .spawn
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, s)| spawn_rule(s, &format!("{key}.spawn[{i}]")))
            .collect::<Result<_, _>>()?;
        let parent: Vec<String> = spec.parent.clone().unwrap_or_default();
        let child_ref: Vec<String> = spec.child_ref.clone().unwrap_or_default();
        let pointers = parent
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("{key}.parent[{i}]"), p))
            .chain(
                child_ref
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (format!("{key}.child_ref[{i}]"), p)),
            );
        for (k, p) in pointers {
            check_pointer(p, &k)?;
            // The parent key is searched for in raw frames: it must be a plain object key.
            if final_key(p).and_then(|k| quoted(&k)).is_none() {
                return Err(PresetError::new(
                    k,
                    format!("`{p}` must end in an object key of plain ASCII (it is searched for in raw frames)"),
                ));
            }
        }
        let background = spec
            .background
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, r)| Rule::compile_spec(r, &format!("{key}.background[{i}]"), false))
            .collect::<Result<_, _>>()?;
        let end = spec
            .end
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let k = format!("{key}.end[{i}]");
                // The frame names the spawn or the agent's own child id: one of the two.
                let (spawn_id, child_id) = match (e.spawn_id.is_empty(), e.child_id.is_empty()) {
                    (false, true) => (required(&e.spawn_id, &format!("{k}.spawn_id"))?, Vec::new()),
                    (true, false) => (Vec::new(), required(&e.child_id, &format!("{k}.child_id"))?),
                    _ => return Err(PresetError::new(
                        format!("{k}.spawn_id"),
                        "give either `spawn_id` or `child_id` (what the frame names the child by)",
                    )),
                };
                Ok(EndRule {
                    rule: Rule::compile(&e.when, e.marker.as_ref(), &k, true)?,
                    spawn_id,
                    child_id,
                    status: Source::compile_all(&e.status, &format!("{k}.status"))?,
                    completed: e
                        .completed
                        .clone()
                        .unwrap_or_else(|| vec!["completed".into()]),
                    running: e
                        .running
                        .clone()
                        .unwrap_or_else(|| vec!["running".into(), "pending".into()]),
                })
            })
            .collect::<Result<_, PresetError>>()?;
        let sibling: Vec<SiblingRule> = spec
            .sibling
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let k = format!("{key}.sibling[{i}]");
                Ok(SiblingRule {
                    rule: Rule::compile(&s.when, s.marker.as_ref(), &k, true)?,
                    key: required(&s.key, &format!("{k}.key"))?,
                    spawn_key: required(&s.spawn_key, &format!("{k}.spawn_key"))?,
                    content: s.content,
                })
            })
            .collect::<Result<_, PresetError>>()?;
        let spawn_event = spec
            .spawn_event
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let k = format!("{key}.spawn_event[{i}]");
                Ok(SpawnEventRule {
                    // Updates of a known spawn are read anyway: no marker needed.
                    rule: Rule::compile(&s.when, None, &k, false)?,
                    kind: s.kind,
                    title: required(&s.title, &format!("{k}.title"))?,
                })
            })
            .collect::<Result<_, PresetError>>()?;
        let transcript = spec
            .transcript
            .as_ref()
            .map(|t| Grammar::compile(t, &format!("{key}.transcript")))
            .transpose()?;
        if transcript
            .as_ref()
            .is_some_and(|t| t.on == spec::TranscriptOn::Sibling)
            && sibling.is_empty()
        {
            return Err(PresetError::new(
                format!("{key}.transcript.on"),
                "is `sibling`, but the preset has no `sibling` rule",
            ));
        }
        let announce = match &spec.announce {
            Some(a) => Announce {
                title: Source::compile_all(&a.title, &format!("{key}.announce.title"))?,
                prompt: Source::compile_all(&a.prompt, &format!("{key}.announce.prompt"))?,
                no_prompt: a.no_prompt.clone().filter(|n| !n.trim().is_empty()),
            },
            None => Announce::default(),
        };
        Ok(Preset(Arc::new(PresetData {
            name: spec.name.clone(),
            about: spec.about.clone().unwrap_or_default(),
            origin,
            agents,
            fallback: spec.fallback.unwrap_or(false),
            timing: spec.timing.unwrap_or(false),
            spawn,
            title: sources(&spec.title, &format!("{key}.title"))?,
            description: sources(&spec.description, &format!("{key}.description"))?,
            prompt: sources(&spec.prompt, &format!("{key}.prompt"))?,
            result: sources(&spec.result, &format!("{key}.result"))?,
            boilerplate: spec
                .boilerplate
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, t)| Pattern::parse(t, &format!("{key}.boilerplate[{i}]")))
                .collect::<Result<_, _>>()?,
            progress: sources(&spec.progress, &format!("{key}.progress"))?,
            agent_child_id: sources(&spec.agent_child_id, &format!("{key}.agent_child_id"))?,
            child_replay: spec.child_replay.unwrap_or_default(),
            follow_background: spec.follow_background.unwrap_or(false),
            end_on_agent_turn: spec.end_on_agent_turn.unwrap_or(false),
            child_record: spec.child_record.unwrap_or_default(),
            parent,
            child_ref,
            background,
            end,
            sibling,
            spawn_event,
            transcript,
            announce,
            spec,
        })))
    }

    /// Every regex of the preset.
    pub fn patterns(&self) -> Vec<&Pattern> {
        let mut out = Vec::new();
        let sources = [
            &self.title,
            &self.description,
            &self.prompt,
            &self.result,
            &self.progress,
            &self.agent_child_id,
            &self.announce.title,
            &self.announce.prompt,
        ];
        for s in sources.into_iter().flatten() {
            s.patterns(&mut out);
        }
        out.extend(&self.boilerplate);
        self.spawn.iter().for_each(|r| r.rule.patterns(&mut out));
        self.background.iter().for_each(|r| r.patterns(&mut out));
        for e in &self.end {
            e.rule.patterns(&mut out);
            e.spawn_id
                .iter()
                .chain(&e.child_id)
                .chain(&e.status)
                .for_each(|s| s.patterns(&mut out));
        }
        for e in &self.sibling {
            e.rule.patterns(&mut out);
            e.key
                .iter()
                .chain(&e.spawn_key)
                .for_each(|s| s.patterns(&mut out));
        }
        for e in &self.spawn_event {
            e.rule.patterns(&mut out);
            e.title.iter().for_each(|s| s.patterns(&mut out));
        }
        if let Some(g) = &self.transcript {
            g.patterns(&mut out);
        }
        out
    }

    /// Compile every regex now, so that one too big to compile is refused with its key.
    pub fn compile_patterns(&self) -> Result<(), PresetError> {
        self.patterns()
            .into_iter()
            .try_for_each(Pattern::compile_now)
    }

    /// The keys whose presence in a frame means it may name a spawn as a child event's
    /// parent (`"parentToolUseId"`): the last key of each parent pointer, quoted.
    pub fn parent_markers(&self) -> impl Iterator<Item = String> + '_ {
        self.parent
            .iter()
            .filter_map(|p| final_key(p).and_then(|k| quoted(&k)))
    }

    /// The keys whose presence in a frame means it may name the agent's own child id
    /// (`"agentId"`): the last key of each `child_ref` pointer, quoted.
    pub fn child_ref_markers(&self) -> impl Iterator<Item = String> + '_ {
        self.child_ref
            .iter()
            .filter_map(|p| final_key(p).and_then(|k| quoted(&k)))
    }

    /// Strings without one of which a tool call cannot be a spawn of this preset.
    pub fn spawn_markers(&self) -> impl Iterator<Item = &str> + '_ {
        self.spawn
            .iter()
            .flat_map(|s| s.rule.markers.iter().map(String::as_str))
    }

    /// Strings without one of which a frame cannot be an end signal of this preset.
    pub fn end_markers(&self) -> impl Iterator<Item = &str> + '_ {
        self.end
            .iter()
            .flat_map(|s| s.rule.markers.iter().map(String::as_str))
    }

    /// Strings without one of which a tool call cannot be a sibling call of this preset.
    pub fn sibling_markers(&self) -> impl Iterator<Item = &str> + '_ {
        self.sibling
            .iter()
            .flat_map(|s| s.rule.markers.iter().map(String::as_str))
    }

    /// The agent names (with version requirements) this preset is chosen for, on one line.
    pub fn agents_line(&self) -> String {
        if self.agents.is_empty() {
            return "(none: named in the config, or as a fallback)".into();
        }
        self.agents
            .iter()
            .map(|a| match &a.versions {
                Some(v) => format!("{} {v}", a.name),
                None => a.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The other signals the preset reads, on one line.
    pub fn signals_line(&self) -> String {
        let mut s: Vec<&str> = Vec::new();
        let mut add = |on: bool, what: &'static str| {
            if on {
                s.push(what);
            }
        };
        add(!self.parent.is_empty(), "parent ids");
        add(!self.child_ref.is_empty(), "agent child ids on events");
        add(!self.title.is_empty(), "title");
        add(!self.prompt.is_empty(), "prompt");
        add(!self.description.is_empty(), "description");
        add(!self.result.is_empty(), "result");
        add(!self.progress.is_empty(), "progress");
        add(!self.agent_child_id.is_empty(), "agent child id");
        add(
            self.child_replay == ChildReplay::SessionLoad,
            "child replay (session/load)",
        );
        add(
            self.child_replay == ChildReplay::SessionLoadAfterTurn,
            "child replay (session/load, after the parent's turn)",
        );
        add(
            self.child_record == ChildRecord::ClaudeCode,
            "child record (Claude Code's subagent transcript)",
        );
        add(
            self.child_record == ChildRecord::Cline,
            "child record (Cline's subagent messages)",
        );
        add(
            self.child_record == ChildRecord::Copilot,
            "child record (Copilot's session log: the child ids of spawns)",
        );
        add(
            self.child_record == ChildRecord::Kimi,
            "child record (Kimi's subagent wire)",
        );
        add(!self.background.is_empty(), "background launches");
        add(self.follow_background, "background children followed live");
        add(
            self.end_on_agent_turn,
            "background end by the agent's own turn (inferred)",
        );
        add(!self.end.is_empty(), "end signals");
        add(!self.sibling.is_empty(), "sibling calls");
        add(!self.spawn_event.is_empty(), "events on the spawn card");
        add(self.transcript.is_some(), "folded transcript");
        add(
            !self.announce.title.is_empty() || !self.announce.prompt.is_empty(),
            "standard announcements",
        );
        add(self.timing, "timing attribution (inferred)");
        s.join(", ")
    }

    /// The spawn conditions, on one line (`|` between rules, `&` between conditions).
    pub fn spawn_line(&self) -> String {
        let spec_rules = self.spec.spawn.as_deref().unwrap_or_default();
        if spec_rules.is_empty() {
            return "(no spawn rule)".into();
        }
        spec_rules
            .iter()
            .map(|r| {
                r.when
                    .iter()
                    .map(|c| {
                        let shown = |v: &toml::Value| match v {
                            toml::Value::String(s) => format!("\"{s}\""),
                            other => other.to_string(),
                        };
                        if let Some(v) = &c.equals {
                            format!("{} == {}", c.at, shown(v))
                        } else if let Some(vs) = &c.one_of {
                            let vs: Vec<String> = vs.iter().map(shown).collect();
                            format!("{} in [{}]", c.at, vs.join(", "))
                        } else if let Some(p) = &c.prefix {
                            format!("{} starts with \"{p}\"", c.at)
                        } else if let Some(r) = &c.regex {
                            format!("{} =~ /{r}/", c.at)
                        } else if c.exists == Some(false) {
                            format!("no {}", c.at)
                        } else {
                            format!("has {}", c.at)
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" & ")
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::preset::spec::PresetFile;

    fn compile(text: &str) -> Result<Preset, PresetError> {
        let mut f: PresetFile = toml::from_str(text).expect("parses");
        Preset::compile(f.preset.remove(0), "subagents.preset[0]", Origin::Config(0))
    }

    #[test]
    fn errors_name_the_key() {
        let e = compile("[[preset]]\nname = \"a b\"\n").expect_err("bad name");
        assert_eq!(e.key, "subagents.preset[0].name");
        let e = compile(
            "[[preset]]\nname = \"x\"\n[[preset.spawn]]\nwhen = [{ at = \"/a\", exists = true }, { at = \"/t\", regex = \"[\" }]\ntool_name = \"t\"\n",
        )
        .expect_err("bad regex");
        assert_eq!(e.key, "subagents.preset[0].spawn[0].when[1].regex");
        let e = compile(
            "[[preset]]\nname = \"x\"\n[[preset.spawn]]\nwhen = [{ at = \"/a\", exists = true }]\n",
        )
        .expect_err("no tool name");
        assert_eq!(e.key, "subagents.preset[0].spawn[0].tool_name");
        let e = compile(
            "[[preset]]\nname = \"x\"\n[[preset.spawn]]\nwhen = [{ at = \"/t\", regex = \"^T\" }]\n",
        )
        .expect_err("no marker");
        assert_eq!(e.key, "subagents.preset[0].spawn[0].when");
        let e = compile("[[preset]]\nname = \"x\"\nparent = [\"/_meta/0\"]\n").expect_err("index");
        assert_eq!(e.key, "subagents.preset[0].parent[0]");
        let e =
            compile("[[preset]]\nname = \"x\"\nagents = [{ name = \"a\", versions = \"~>1\" }]\n")
                .expect_err("bad req");
        assert_eq!(e.key, "subagents.preset[0].agents[0].versions");
        let e = compile("[[preset]]\nname = \"x\"\n[[preset.end]]\nwhen = [{ at = \"/a\", exists = true }]\nspawn_id = []\n")
            .expect_err("no spawn id");
        assert_eq!(e.key, "subagents.preset[0].end[0].spawn_id");
        let e = compile("[[preset]]\nname = \"x\"\n[[preset.end]]\nwhen = [{ at = \"/a\", exists = true }]\nspawn_id = [\"/a\"]\nchild_id = [\"/b\"]\n")
            .expect_err("both spawn and child id");
        assert_eq!(e.key, "subagents.preset[0].end[0].spawn_id");
        compile("[[preset]]\nname = \"x\"\n[[preset.end]]\nwhen = [{ at = \"/a\", exists = true }]\nchild_id = [\"/b\"]\n")
            .expect("an end by the agent's child id");
        let e =
            compile("[[preset]]\nname = \"x\"\nchild_ref = [\"/_meta/0\"]\n").expect_err("index");
        assert_eq!(e.key, "subagents.preset[0].child_ref[0]");
        let e = compile("[[preset]]\nname = \"x\"\n[preset.transcript]\non = \"sibling\"\nfrom = [\"/content\"]\n")
            .expect_err("no sibling rule");
        assert_eq!(e.key, "subagents.preset[0].transcript.on");
        let e = compile("[[preset]]\nname = \"x\"\nresult = [{ at = \"/c\", max_chars = 1 }]\n")
            .expect_err("bound too small");
        assert_eq!(e.key, "subagents.preset[0].result[0].max_chars");
    }

    #[test]
    fn the_one_line_summaries() {
        let p = compile(
            r#"
            [[preset]]
            name = "x"
            agents = [{ name = "madeup", versions = ">=1.2" }, { name = "other" }]
            [[preset.spawn]]
            when = [{ at = "/title", equals = "task" }, { at = "/kind", exists = false }]
            [[preset.spawn]]
            when = [{ at = "/_meta/tool", one_of = ["a", "b"] }, { at = "/id", prefix = "x_" }]
            "#,
        )
        .expect("ok");
        assert_eq!(p.agents_line(), "madeup >=1.2, other");
        assert_eq!(
            p.spawn_line(),
            "/title == \"task\" & no /kind | /_meta/tool in [\"a\", \"b\"] & /id starts with \"x_\""
        );
    }
}
