//! Each agent's preset against its real traffic (tests/fixtures/agents/), or a trace written
//! from its documented shapes where it cannot be installed here (DeepSeek Harness, Goose,
//! Cursor: the fixture's name says `written`). The preset set is chosen from the capture's
//! own `initialize` answer, as the proxy chooses it; the test then reads every agent frame
//! through the detector and compares what it found with what the agent is known to send.

use std::collections::BTreeMap;

use crate::support::engine::fixture;
use acp_proxy::subagents::preset::detect::{
    sibling_owner, Detector, EndNames, EndStatus, SiblingOwner,
};
use acp_proxy::subagents::preset::select::{AgentInfo, PresetChoice};
use acp_proxy::subagents::preset::spec::{ChildReplay, TranscriptOn};
use serde_json::Value;

/// What the detector found in a capture.
#[derive(Debug, Default)]
struct Seen {
    presets: Vec<String>,
    /// By spawn tool call id, in order of appearance.
    spawns: Vec<SpawnSeen>,
    /// Child events naming each spawn.
    child_events: BTreeMap<String, usize>,
    ends: Vec<(String, EndStatus)>,
    /// Sibling calls: (tool call id, key, owner spawn id or why none).
    siblings: Vec<(String, String, String)>,
    /// Standard announcements: (child session id, title, prompt), first of each child.
    announced: Vec<(String, Option<String>, Option<String>)>,
}

#[derive(Debug, Default, Clone)]
struct SpawnSeen {
    id: String,
    preset: String,
    tool_name: String,
    title: Option<String>,
    prompt: Option<String>,
    background: bool,
    progress: Vec<String>,
    result: Option<String>,
    legacy_result: Option<String>,
    agent_child_id: Option<String>,
    replay: bool,
    sibling_key: Option<String>,
    /// Entries of the last folded transcript (spawn card or sibling call): kind, text, status.
    transcript: Vec<String>,
    events: Vec<String>,
}

fn observe(name: &str) -> Seen {
    let records = fixture(name);
    let info = records
        .iter()
        .find(|(dir, m)| dir == "in" && m.pointer("/result/agentCapabilities").is_some())
        .and_then(|(_, m)| AgentInfo::from_initialize_response(m.to_string().as_bytes()));
    let chosen = PresetChoice::default().choose(info.as_ref());
    let d = Detector::new(chosen.presets);
    let mut seen = Seen {
        presets: d.presets().iter().map(|p| p.name.clone()).collect(),
        ..Seen::default()
    };
    let mut open: Vec<String> = Vec::new();
    for (dir, m) in &records {
        if dir != "in" || m.get("method").and_then(Value::as_str) != Some("session/update") {
            continue;
        }
        let u = &m["params"]["update"];
        let kind = u["sessionUpdate"].as_str().unwrap_or("");
        if kind == "subagent_update" {
            let child = u["sessionId"].as_str().unwrap_or("").to_owned();
            if !seen.announced.iter().any(|(c, _, _)| *c == child) {
                let a = d.announce(u);
                seen.announced.push((child, a.title, a.prompt));
            }
            continue;
        }
        if let Some(p) = d.parent_ref(u) {
            *seen.child_events.entry(p.to_owned()).or_default() += 1;
        }
        if let Some(e) = d.end_signal(u) {
            let named = match e.names {
                EndNames::Spawn(id) => id,
                EndNames::AgentChild(id) => format!("agent child {id}"),
            };
            seen.ends.push((named, e.status));
        }
        let id = u["toolCallId"].as_str().unwrap_or("").to_owned();
        if let Some(s) = d.sibling(u) {
            let keys: Vec<(String, Option<String>)> = seen
                .spawns
                .iter()
                .filter(|sp| open.contains(&sp.id))
                .map(|sp| (sp.id.clone(), sp.sibling_key.clone()))
                .collect();
            let owner =
                match sibling_owner(&s.key, keys.iter().map(|(i, k)| (i.as_str(), k.as_deref()))) {
                    SiblingOwner::One(o) => o.to_owned(),
                    SiblingOwner::None => "(none)".to_owned(),
                    SiblingOwner::Ambiguous(_) => "(ambiguous)".to_owned(),
                };
            if let Some(t) = d.transcript_of(s.preset, u) {
                if let Some(sp) = seen.spawns.iter_mut().find(|sp| sp.id == owner) {
                    sp.transcript = entries(&t);
                }
            }
            if !seen
                .siblings
                .iter()
                .any(|(i, _, o)| *i == id && *o == owner)
            {
                seen.siblings.push((id, s.key, owner));
            }
            continue;
        }
        let known = seen.spawns.iter().position(|s| s.id == id);
        let at = match known {
            Some(at) => at,
            None if kind == "tool_call" => match d.spawn(u) {
                Some(s) => {
                    open.push(id.clone());
                    let preset = d.preset(s.preset).expect("preset").name.clone();
                    seen.spawns.push(SpawnSeen {
                        id: id.clone(),
                        preset,
                        tool_name: s.tool_name,
                        title: s.title,
                        prompt: s.prompt,
                        background: s.background,
                        agent_child_id: s.agent_child_id,
                        replay: d.child_replay_of(s.preset) == ChildReplay::SessionLoad,
                        sibling_key: s.sibling_key,
                        ..SpawnSeen::default()
                    });
                    seen.spawns.len() - 1
                }
                None => continue,
            },
            None => continue,
        };
        let pid = d.spawn(u).map(|s| s.preset).unwrap_or_else(|| {
            let name = &seen.spawns[at].preset;
            acp_proxy::subagents::preset::detect::PresetId(
                d.presets()
                    .iter()
                    .position(|p| p.name == *name)
                    .expect("preset"),
            )
        });
        let sp = &mut seen.spawns[at];
        if let Some(t) = d.title_of(pid, u) {
            sp.title = Some(t);
        }
        if sp.prompt.is_none() {
            sp.prompt = d.prompt_of(pid, u);
        }
        sp.background |= d.background_of(pid, u);
        if let Some(p) = d.progress_of(pid, u) {
            if sp.progress.last() != Some(&p) {
                sp.progress.push(p);
            }
        }
        if let Some(c) = d.agent_child_id_of(pid, u) {
            sp.agent_child_id = Some(c);
        }
        if let Some(e) = d.spawn_event_of(pid, u) {
            sp.events.push(e.title);
        }
        if d.transcript_on(pid) == Some(TranscriptOn::Spawn) {
            if let Some(t) = d.transcript_of(pid, u) {
                sp.transcript = entries(&t);
            }
        }
        if matches!(u["status"].as_str(), Some("completed" | "failed")) {
            sp.result = d.result_of(pid, u);
            sp.legacy_result = d.result_text(u);
            open.retain(|o| *o != id);
        }
    }
    seen
}

fn entries(t: &acp_proxy::subagents::preset::transcript::grammar::ParsedTranscript) -> Vec<String> {
    t.entries
        .iter()
        .map(|e| {
            format!(
                "{}{:?} {}{}{}",
                "  ".repeat(e.depth),
                e.kind,
                e.text,
                e.status.map(|s| format!(" [{s:?}]")).unwrap_or_default(),
                e.output
                    .as_ref()
                    .map(|o| format!(" => {o}"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// A spawn as the agent is known to send it.
struct Want {
    id: &'static str,
    tool: &'static str,
    title: Option<&'static str>,
    prompt: Option<&'static str>,
    background: bool,
    result: Option<&'static str>,
    child_id: Option<&'static str>,
}

const fn want(id: &'static str, tool: &'static str, title: &'static str) -> Want {
    Want {
        id,
        tool,
        title: Some(title),
        prompt: None,
        background: false,
        result: None,
        child_id: None,
    }
}

impl Want {
    const fn prompt(mut self, p: &'static str) -> Want {
        self.prompt = Some(p);
        self
    }
    const fn result(mut self, r: &'static str) -> Want {
        self.result = Some(r);
        self
    }
    const fn child(mut self, c: &'static str) -> Want {
        self.child_id = Some(c);
        self
    }
    const fn background(mut self) -> Want {
        self.background = true;
        self
    }
}

/// The capture's presets and spawns are as wanted; returns what was seen for more checks.
fn check(name: &str, presets: &[&str], spawns: &[Want]) -> Seen {
    let seen = observe(&format!("agents/{name}"));
    assert_eq!(seen.presets, presets, "{name}: presets chosen");
    let ids: Vec<&str> = seen.spawns.iter().map(|s| s.id.as_str()).collect();
    let wanted: Vec<&str> = spawns.iter().map(|w| w.id).collect();
    assert_eq!(ids, wanted, "{name}: spawns");
    for (s, w) in seen.spawns.iter().zip(spawns) {
        assert_eq!(s.tool_name, w.tool, "{name} {}: tool name", w.id);
        assert_eq!(s.title.as_deref(), w.title, "{name} {}: title", w.id);
        assert_eq!(s.prompt.as_deref(), w.prompt, "{name} {}: prompt", w.id);
        assert_eq!(s.background, w.background, "{name} {}: background", w.id);
        assert_eq!(s.result.as_deref(), w.result, "{name} {}: result", w.id);
        assert_eq!(
            s.agent_child_id.as_deref(),
            w.child_id,
            "{name} {}: agent child id",
            w.id
        );
    }
    seen
}

#[test]
fn opencode_spawns_results_unwrapped_and_child_ids_for_replay() {
    let seen = check(
        "opencode-1.18.33-one-subagent.jsonl",
        &["opencode"],
        &[want("call_0003", "task", "Survey text files")
            .prompt("SUBAGENT:alpha list the text files")
            .result("Subagent alpha found the files; reporting back.")
            .child("ses_dcf559239ffewZUp4EqV5n8EUr")],
    );
    assert!(
        seen.spawns[0].replay,
        "the agent replays the child on session/load"
    );
    assert_eq!(
        seen.spawns[0].legacy_result.as_deref(),
        Some("Subagent alpha found the files; reporting back."),
        "the engine's result_text unwraps <task_result> too"
    );
    assert!(
        seen.child_events.is_empty(),
        "no child event is on the wire"
    );
    check(
        "opencode-1.18.33-two-subagents.jsonl",
        &["opencode"],
        &[
            want("call_0003", "task", "First survey")
                .prompt("SUBAGENT:alpha list the text files")
                .result("Subagent alpha found the files; reporting back.")
                .child("ses_dcf55198effe1MWwzBIrBZE9Pa"),
            want("call_0004", "task", "Second survey")
                .prompt("SUBAGENT:beta list the text files")
                .result("Subagent beta found the files; reporting back.")
                .child("ses_dcf5518dfffeTzuJHFkO2xDHmu"),
        ],
    );
    // The replay under the child's own id has no spawn and no parent reference.
    let seen = check("opencode-1.18.33-child-load.jsonl", &["opencode"], &[]);
    assert!(seen.child_events.is_empty());
}

#[test]
fn qwen_foreground_children_and_background_ends() {
    let fg = |id, title, prompt| want(id, "agent", title).prompt(prompt);
    let seen = check(
        "qwen-0.24.4-foreground-one-subagent.jsonl",
        &["qwen"],
        &[fg(
            "call_0002",
            "Survey text files",
            "SUBAGENT:alpha list the text files",
        )],
    );
    assert_eq!(seen.child_events.get("call_0002"), Some(&22));
    assert_eq!(
        seen.spawns[0].progress,
        ["Glob: '*.txt'", "ReadFile: a.txt"]
    );
    assert_eq!(
        seen.spawns[0].legacy_result.as_deref(),
        Some("Subagent alpha found the files; reporting back.")
    );
    assert!(seen.ends.is_empty());
    let seen = check(
        "qwen-0.24.4-foreground-two-subagents.jsonl",
        &["qwen"],
        &[
            fg(
                "call_0002",
                "First survey",
                "SUBAGENT:alpha list the text files",
            ),
            fg(
                "call_0003",
                "Second survey",
                "SUBAGENT:beta list the text files",
            ),
        ],
    );
    assert_eq!(seen.child_events.get("call_0002"), Some(&22));
    assert_eq!(seen.child_events.get("call_0003"), Some(&22));
    check(
        "qwen-0.24.4-foreground-parent-reload.jsonl",
        &["qwen"],
        &[fg(
            "call_0002",
            "Survey text files",
            "SUBAGENT:alpha list the text files",
        )],
    );

    let seen = check(
        "qwen-0.24.4-background-one-subagent.jsonl",
        &["qwen"],
        &[fg(
            "call_0002",
            "Survey text files",
            "SUBAGENT:alpha list the text files",
        )
        .background()],
    );
    assert_eq!(
        seen.ends,
        [("call_0002".to_owned(), EndStatus::Completed)],
        "the later notice ends the child; the follow-up turn is no end"
    );
    let seen = check(
        "qwen-0.24.4-background-two-subagents.jsonl",
        &["qwen"],
        &[
            fg(
                "call_0002",
                "First survey",
                "SUBAGENT:alpha list the text files",
            )
            .background(),
            fg(
                "call_0003",
                "Second survey",
                "SUBAGENT:beta list the text files",
            )
            .background(),
        ],
    );
    assert_eq!(
        seen.ends,
        [
            ("call_0002".to_owned(), EndStatus::Completed),
            ("call_0003".to_owned(), EndStatus::Completed)
        ]
    );
}

#[test]
fn codex_announcements_get_a_prompt_and_a_short_title() {
    let seen = check("codex-2.6.0-standard-one-subagent.jsonl", &["codex"], &[]);
    let task = "SUBAGENT:alpha list the text files in the project";
    assert_eq!(
        seen.announced,
        [(
            "01a230b0-b610-7293-86dd-e7ff2533c94e:subagent:01a230b0-b65b-7313-9a0e-e8ca88866ae0"
                .to_owned(),
            Some(task.to_owned()),
            Some(task.to_owned())
        )]
    );
    let seen = check("codex-2.6.0-standard-two-subagents.jsonl", &["codex"], &[]);
    assert_eq!(seen.announced.len(), 2);
    assert_eq!(
        seen.announced[1].2.as_deref(),
        Some("SUBAGENT:beta list the text files in the project")
    );
    // Without the opt-in: a plain spawnAgent call, its child's thread id on completion.
    check(
        "codex-2.6.0-hidden-one-subagent.jsonl",
        &["codex"],
        &[want("call_3", "spawnAgent", task)
            .prompt(task)
            .child("01a230b0-1265-7991-b060-0a549bad7aa0")],
    );
    // The Rust adapter sends nothing of its subagents.
    let seen = check(
        "codex-0.16.0-zed-adapter-one-subagent.jsonl",
        &["codex"],
        &[],
    );
    assert!(seen.announced.is_empty());
}

#[test]
fn gemini_invoke_agent_calls_titled_by_the_agent() {
    check(
        "gemini-0.61.0-one-subagent.jsonl",
        &["gemini"],
        &[want(
            "invoke_agent__invoke_agent_1796113065529_0",
            "invoke_agent",
            "codebase_investigator",
        )],
    );
    check(
        "gemini-0.61.0-two-subagents-yolo.jsonl",
        &["gemini"],
        &[
            want(
                "invoke_agent__invoke_agent_1796113076028_0",
                "invoke_agent",
                "codebase_investigator",
            ),
            want(
                "invoke_agent__invoke_agent_1796113076076_1",
                "invoke_agent",
                "generalist",
            ),
        ],
    );
}

#[test]
fn pi_titles_progress_results_background_and_replay() {
    let answer = "SUB-ANSWER a: the folder holds a.txt and b.txt; a.txt was read.";
    let a = || {
        want("call_main_agent_a", "Agent", "Survey a.txt")
            .prompt("SUBAGENT:a List the folder, read a.txt and report.")
    };
    let seen = check(
        "pi-0.87.1-one-subagent.jsonl",
        &["pi"],
        &[a().result(answer)],
    );
    let progress = &seen.spawns[0].progress;
    assert_eq!(progress.first().map(String::as_str), Some("thinking…"));
    assert!(progress.iter().any(|p| p == "reading…"), "{progress:?}");
    assert!(progress.len() > 10, "the spinner's activity: {progress:?}");
    assert!(progress.iter().all(|p| p.chars().count() <= 80));
    assert_eq!(
        seen.spawns[0].legacy_result.as_deref(),
        Some(answer),
        "header stripped"
    );
    let seen = check(
        "pi-0.87.1-two-subagents.jsonl",
        &["pi"],
        &[
            a().result(answer),
            want("call_main_agent_b", "Agent", "Survey b.txt")
                .prompt("SUBAGENT:b List the folder, read b.txt and report.")
                .result("SUB-ANSWER b: the folder holds a.txt and b.txt; b.txt was read."),
        ],
    );
    assert!(seen.spawns[1].progress.iter().any(|p| p.contains("for b.")));
    // Launched in the background: no answer yet, the card must stay open.
    check(
        "pi-0.87.1-background.jsonl",
        &["pi"],
        &[want("call_main_agent_a", "Agent", "Survey a.txt")
            .prompt("SUBAGENT:a SLOW List the folder, read a.txt and report.")
            .background()],
    );
    // Replayed by a parent load: rawInput null, recognised by rawOutput.toolName.
    check(
        "pi-0.87.1-parent-reload.jsonl",
        &["pi"],
        &[want("call_main_agent_a", "Agent", "Survey a.txt").result(answer)],
    );
}

#[test]
fn agentpool_task_spawns_and_their_tool_boxes() {
    let helper = || {
        want("call_task_1", "task", "Read a.txt")
            .prompt("Read the file a.txt and tell me what it says.")
            .result("The file a.txt says: hello from a")
    };
    let seen = check(
        "agentpool-2.9.18-tool_box-one-subagent.jsonl",
        &["agentpool"],
        &[helper()],
    );
    assert_eq!(
        seen.siblings,
        [(
            "subagent:helper:1".to_owned(),
            "helper".to_owned(),
            "call_task_1".to_owned()
        )]
    );
    assert_eq!(
        seen.spawns[0].transcript,
        [
            "Text Reading a.txt.",
            "Tool read [Completed] => hello from a",
            "Text The file a.txt says: hello from a"
        ],
        "the box's last text, taken apart"
    );
    let helper2 = want("call_task_2", "task", "Read b.txt")
        .prompt("Read the file b.txt and tell me what it says.")
        .result("The file b.txt says: hello from b");
    let seen = check(
        "agentpool-2.9.18-tool_box-two-subagents.jsonl",
        &["agentpool"],
        &[helper(), helper2],
    );
    let owners: Vec<(&str, &str)> = seen
        .siblings
        .iter()
        .map(|(id, _, o)| (id.as_str(), o.as_str()))
        .collect();
    assert_eq!(
        owners,
        [
            ("subagent:helper:1", "call_task_1"),
            ("subagent:helper2:1", "call_task_2")
        ],
        "each box goes to the spawn naming its agent"
    );
    assert!(seen.spawns[1]
        .transcript
        .iter()
        .any(|e| e.starts_with("Tool read")));
    // The same agent twice: while both runs are open the box cannot be attributed.
    let seen = check(
        "agentpool-2.9.18-tool_box-same-agent-twice.jsonl",
        &["agentpool"],
        &[
            helper(),
            want("call_task_2", "task", "Read b.txt")
                .prompt("Read the file b.txt and tell me what it says.")
                .result("The file b.txt says: hello from b"),
        ],
    );
    assert_eq!(seen.siblings[0].2, "(ambiguous)");
    // Inline display (patched server): spawns still, the child's text is in the parent.
    for name in [
        "agentpool-2.9.18-inline-one-subagent.jsonl",
        "agentpool-2.9.18-inline-two-subagents.jsonl",
    ] {
        let seen = observe(&format!("agents/{name}"));
        assert!(
            !seen.spawns.is_empty() && seen.siblings.is_empty(),
            "{name}"
        );
    }
}

#[test]
fn dsh_spawns_and_their_folded_transcripts() {
    // A trace written from the agent's source and tests (it cannot be installed here).
    let seen = check(
        "dsh-1.3-written-two-subagents.jsonl",
        &["dsh"],
        &[
            want("call_c1", "subagent", "Auth scout")
                .prompt("Look for the auth code and check its tests.")
                .result("Auth is handled in src/auth.rs; its 12 tests pass.")
                .child("child-7"),
            want("call_c2", "subagent_fork", "Try a fix")
                .prompt("Try the fix in a fork.")
                .child("child-8"),
        ],
    );
    assert_eq!(
        seen.spawns[0].transcript,
        [
            "Tool Found 2 files [Completed]",
            "Text Auth lives in src/auth.rs.",
            "Tool Subagent `spawn`: Check the tests [Completed]",
            "  Tool Bash cargo test [Completed]",
            "  Text All 12 tests pass.",
            "  End - ✓ Subagent completed [Completed]",
            "Text Auth is in src/auth.rs and tested.",
            "End - ✓ Subagent completed [Completed]",
        ]
    );
    assert_eq!(
        seen.spawns[1].transcript,
        ["Tool Edit src/auth.rs [Failed]", "End aborted [Failed]"],
        "a cancelled child: no answer block, so no result"
    );
}

#[test]
fn goose_delegate_spawns_and_the_tool_requests_on_their_card() {
    // A trace written from Goose's documented shapes (it cannot be installed here).
    let seen = check(
        "goose-written-one-subagent.jsonl",
        &["goose"],
        &[want("tc-goose-1", "delegate", "Survey the text files")
            .prompt("Survey the text files\nand report what they hold.")],
    );
    assert_eq!(
        seen.spawns[0].events,
        ["developer__shell", "developer__text_editor"]
    );
    assert_eq!(
        seen.spawns[0].legacy_result.as_deref(),
        Some("a.txt says hello; b.txt is empty.")
    );
}

#[test]
fn cursor_task_spawns() {
    // A trace written from Cursor's documented shapes (it cannot be installed here).
    check(
        "cursor-written-two-subagents.jsonl",
        &["cursor"],
        &[
            want("call_task_1", "task", "Survey text files")
                .prompt("List the text files and say what they hold."),
            want("call_task_2", "task", "Watch the build")
                .prompt("Watch the build and report failures.")
                .background(),
        ],
    );
}

#[test]
fn every_capture_has_a_table_row() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents");
    let this = include_str!("presets_agents.rs");
    for e in std::fs::read_dir(dir).expect("fixtures") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(
            this.contains(&format!("\"{name}\"")),
            "{name} is checked here"
        );
    }
}

/// The cheap pass is sound: in every capture, every frame a rule of any shipped preset
/// matches holds one of that rule's markers, both as the agent wrote it and as compact JSON,
/// and the detector's one-pass scan flags each spawn and each parent reference.
#[test]
fn every_matching_frame_holds_a_marker_of_its_rule() {
    use acp_proxy::subagents::preset::set::PresetSet;
    use acp_proxy::wire::keys::kind;
    let set = PresetSet::builtin();
    let all = Detector::new(set.iter().cloned().collect());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for sub in [dir.clone(), dir.join("agents")] {
        for e in std::fs::read_dir(sub).expect("fixtures") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    let (mut spawns, mut ends, mut siblings, mut parents) = (0, 0, 0, 0);
    for path in files {
        let text = std::fs::read_to_string(&path).expect("fixture");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let rec: Value = serde_json::from_str(line).expect("JSON");
            let Some(u) = rec.pointer("/msg/params/update") else {
                continue;
            };
            let compact = rec["msg"].to_string();
            let holds_one = |markers: &[String]| {
                markers
                    .iter()
                    .any(|m| line.contains(m.as_str()) && compact.contains(m.as_str()))
            };
            for p in set.iter() {
                for r in &p.spawn {
                    if r.rule.holds(u) {
                        spawns += 1;
                        assert!(
                            holds_one(&r.rule.markers),
                            "{}: spawn rule of {} matched {line}",
                            path.display(),
                            p.name
                        );
                    }
                }
                for r in &p.end {
                    if r.rule.holds(u) {
                        ends += 1;
                        assert!(
                            holds_one(&r.rule.markers),
                            "{}: end rule of {} matched {line}",
                            path.display(),
                            p.name
                        );
                    }
                }
                for r in &p.sibling {
                    if r.rule.holds(u) {
                        siblings += 1;
                        assert!(
                            holds_one(&r.rule.markers),
                            "{}: sibling rule of {} matched {line}",
                            path.display(),
                            p.name
                        );
                    }
                }
            }
            if all.spawn(u).is_some() {
                assert!(all.scan(compact.as_bytes()).has(kind::SPAWN), "{line}");
            }
            if all.parent_ref(u).is_some() {
                parents += 1;
                assert!(all.scan(compact.as_bytes()).has(kind::PARENT), "{line}");
            }
            if all.end_signal(u).is_some() {
                assert!(all.scan(compact.as_bytes()).has(kind::END), "{line}");
            }
        }
    }
    assert!(
        spawns > 50 && ends >= 3 && siblings > 20 && parents > 40,
        "{spawns} {ends} {siblings} {parents}"
    );
}
