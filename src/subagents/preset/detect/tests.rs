use super::*;
use crate::subagents::preset::set::PresetSet;
use crate::wire::keys::kind;
use serde_json::json;

/// Today's default set (the fallback presets).
fn fallback() -> Detector {
    Detector::new(PresetSet::builtin().fallback())
}

/// A detector with exactly these shipped presets.
fn with(names: &[&str]) -> Detector {
    let set = PresetSet::builtin();
    Detector::new(
        names
            .iter()
            .map(|n| set.get(n).unwrap_or_else(|| panic!("preset {n}")).clone())
            .collect(),
    )
}

#[test]
fn recognises_claude_spawn_and_child_events() {
    let d = fallback();
    let spawn = json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"Task","kind":"think",
        "rawInput":{},"_meta":{"claudeCode":{"toolName":"Agent"}}});
    assert_eq!(d.spawn_tool_name(&spawn).as_deref(), Some("Agent"));
    let child = json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"Find",
        "_meta":{"claudeCode":{"toolName":"Glob","parentToolUseId":"t"}}});
    assert_eq!(d.spawn_tool_name(&child), None);
    assert_eq!(d.parent_ref(&child), Some("t"));
    let meta = child["_meta"].to_string();
    let text = child.to_string();
    assert_eq!(d.parent_ref_raw(&text, Some(&meta)).as_deref(), Some("t"));
    assert_eq!(d.parent_ref_raw(&text, None), None, "no _meta, no parent");
    let spaced = r#"{"claudeCode": {"parentToolUseId" : "t9"}}"#;
    assert_eq!(d.parent_ref_raw("", Some(spaced)).as_deref(), Some("t9"));
    let two = r#"{"parentToolCallId":"a","claudeCode":{"parentToolUseId":"b"}}"#;
    assert_eq!(
        d.parent_ref_raw("", Some(two)),
        None,
        "ambiguous: parse instead"
    );
    assert!(d.scan(child.to_string().as_bytes()).has(kind::PARENT));
    assert!(!d.scan(spawn.to_string().as_bytes()).has(kind::PARENT));
    assert!(d.scan(spawn.to_string().as_bytes()).has(kind::SPAWN));
    let read = json!({"sessionUpdate":"tool_call","toolCallId":"r","title":"Read","kind":"read"});
    assert!(!d.scan(read.to_string().as_bytes()).has(kind::SPAWN));
}

#[test]
fn recognises_opencode_and_qwen_shapes() {
    let d = fallback();
    let oc = json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"task","kind":"think","rawInput":{}});
    assert_eq!(d.spawn_tool_name(&oc).as_deref(), Some("task"));
    let oc2 = json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"Explore",
        "rawInput":{"description":"d","prompt":"p","subagent_type":"explore"}});
    assert!(d.spawn_tool_name(&oc2).is_some());
    assert_eq!(d.prompt(&oc2), Some("p"));
    let qwen =
        json!({"sessionUpdate":"tool_call","toolCallId":"c","_meta":{"parentToolCallId":"t"}});
    assert_eq!(d.parent_ref(&qwen), Some("t"));
    let plain =
        json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"Read file","kind":"read"});
    assert_eq!(d.spawn_tool_name(&plain), None);
}

#[test]
fn the_fallback_set_keeps_todays_markers() {
    let d = fallback();
    let m = d.markers();
    assert_eq!(m.parent, ["\"parentToolCallId\"", "\"parentToolUseId\""]);
    assert_eq!(
        m.spawn,
        [
            "\"Agent\"",
            "\"Task\"",
            "\"agent\"",
            "\"prompt\"",
            "\"subagent_type\"",
            "\"task\""
        ],
        "the same patterns as before the presets were data"
    );
}

#[test]
fn presets_not_in_force_match_nothing() {
    let d = with(&["claude"]);
    let qwen =
        json!({"sessionUpdate":"tool_call","toolCallId":"c","_meta":{"parentToolCallId":"t"}});
    assert_eq!(d.parent_ref(&qwen), None);
    let oc = json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"task","kind":"think","rawInput":{}});
    assert_eq!(d.spawn_tool_name(&oc), None);
    assert!(!d.scan(qwen.to_string().as_bytes()).has(kind::PARENT));
}

/// A detector over presets written here.
fn from_toml(text: &str) -> Detector {
    let file: crate::subagents::preset::spec::PresetFile = toml::from_str(text).expect("parses");
    let set = PresetSet::builtin()
        .with_user(&file.preset, "preset")
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = file.preset.iter().map(|p| p.name.as_str()).collect();
    Detector::new(names.iter().filter_map(|n| set.get(n)).cloned().collect())
}

#[test]
fn a_spawn_says_everything_its_preset_reads() {
    let d = with(&["opencode", "pi"]);
    let pi = json!({"sessionUpdate":"tool_call","toolCallId":"call_a","title":"Agent","kind":"other",
        "rawInput":{"prompt":"P","description":"Survey a.txt","subagent_type":"general-purpose","run_in_background":true}});
    let s = d.spawn(&pi).expect("a spawn");
    // OpenCode's input rule would claim it too: the first preset in force wins.
    assert_eq!(
        d.preset(s.preset).map(|p| p.name.as_str()),
        Some("opencode")
    );
    let d = with(&["pi"]);
    let s = d.spawn(&pi).expect("a spawn");
    assert_eq!(
        s,
        Spawn {
            preset: PresetId(0),
            tool_name: "Agent".into(),
            title: Some("Survey a.txt".into()),
            prompt: Some("P".into()),
            description: Some("general-purpose".into()),
            background: true,
            agent_child_id: None,
            sibling_key: None,
        }
    );
    let spinner = json!({"sessionUpdate":"tool_call_update","toolCallId":"call_a","status":"in_progress",
        "rawOutput":{"details":{"activity":"reading a.txt\nand more","status":"running"}}});
    assert_eq!(
        d.progress_of(s.preset, &spinner).as_deref(),
        Some("reading a.txt")
    );
    assert!(!d.background_of(s.preset, &spinner));
    assert_eq!(d.progress_of(PresetId(7), &spinner), None, "no such preset");
}

#[test]
fn agent_child_ids_and_replay_from_the_agent() {
    let d = with(&["opencode"]);
    let done = json!({"sessionUpdate":"tool_call_update","toolCallId":"call_3","status":"completed",
        "content":[{"type":"content","content":{"type":"text","text":"<task id=\"ses_B\" state=\"completed\">\n<task_result>\nok\n</task_result>\n</task>"}}],
        "rawOutput":{"metadata":{"sessionId":"ses_A"}}});
    let id = PresetId(0);
    assert_eq!(d.agent_child_id_of(id, &done).as_deref(), Some("ses_A"));
    let mut no_meta = done.clone();
    no_meta["rawOutput"] = json!({});
    assert_eq!(
        d.agent_child_id_of(id, &no_meta).as_deref(),
        Some("ses_B"),
        "else the id in the result text"
    );
    assert_eq!(d.result_of(id, &done).as_deref(), Some("ok"));
    assert_eq!(d.child_replay_of(id), ChildReplay::SessionLoad);
    assert_eq!(with(&["qwen"]).child_replay_of(id), ChildReplay::None);
}

#[test]
fn background_launches_and_the_frames_that_end_them() {
    let d = with(&["qwen"]);
    let launch = json!({"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"completed",
        "rawOutput":{"type":"task_execution","executionMode":"background"}});
    assert!(d.is_background(&launch) && d.background_of(PresetId(0), &launch));
    let fg = json!({"rawOutput":{"executionMode":"foreground"}});
    assert!(!d.is_background(&fg));
    let notice = |source: &str, status: &str| {
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"},
            "_meta":{"source":source,"backgroundTask":{"toolUseId":"call_2","status":status}}})
    };
    let end = |u: &Value| {
        d.end_signal(u).map(|e| match e.names {
            EndNames::Spawn(id) => (id, e.status),
            EndNames::AgentChild(id) => (format!("agent:{id}"), e.status),
        })
    };
    assert_eq!(
        end(&notice("background_task_completed", "completed")),
        Some(("call_2".into(), EndStatus::Completed))
    );
    assert_eq!(
        end(&notice("background_task_failed", "error")),
        Some(("call_2".into(), EndStatus::Failed("error".into())))
    );
    assert_eq!(
        end(&notice("background_task_progress", "running")),
        Some(("call_2".into(), EndStatus::Running))
    );
    assert_eq!(
        end(&notice("background_notification_response", "completed")),
        None,
        "the follow-up turn names the task but ends nothing"
    );
    assert_eq!(d.markers().end, ["\"background_task_"]);
    assert!(with(&["claude"])
        .end_signal(&notice("background_task_completed", "completed"))
        .is_none());
    // Claude's background marker is a boolean.
    let claude = with(&["claude"]);
    let async_done = json!({"_meta":{"claudeCode":{"toolResponse":{"isAsync":true}}}});
    assert!(claude.is_background(&async_done));
    assert!(
        !claude.is_background(&json!({"_meta":{"claudeCode":{"toolResponse":{"isAsync":"true"}}}}))
    );
}

#[test]
fn sibling_calls_are_attributed_by_key_only_when_one_spawn_is_open() {
    let d = with(&["agentpool"]);
    let spawn = json!({"sessionUpdate":"tool_call","toolCallId":"call_task_1","title":"Calling task",
        "rawInput":{"agent_or_team":"helper","prompt":"p","description":"d"}});
    let s = d.spawn(&spawn).expect("spawn");
    assert_eq!(s.sibling_key.as_deref(), Some("helper"));
    let boxed = json!({"sessionUpdate":"tool_call_update","toolCallId":"subagent:helper:1","status":"in_progress",
        "content":[{"type":"content","content":{"type":"text","text":"Reading.\n🔧 Using tool: read\n"}}]});
    let sib = d.sibling(&boxed).expect("a sibling call");
    assert_eq!(sib.key, "helper");
    assert_eq!(sib.content, SiblingContent::Replace);
    assert!(d.sibling(&spawn).is_none());
    assert_eq!(d.markers().sibling, ["\"subagent:"]);
    let one = [
        ("call_task_1", Some("helper")),
        ("call_task_2", Some("helper2")),
    ];
    assert_eq!(
        sibling_owner("helper", one),
        SiblingOwner::One("call_task_1")
    );
    assert_eq!(sibling_owner("other", one), SiblingOwner::None);
    let two = [
        ("call_task_1", Some("helper")),
        ("call_task_3", Some("helper")),
    ];
    assert_eq!(
        sibling_owner("helper", two),
        SiblingOwner::Ambiguous(vec!["call_task_1", "call_task_3"])
    );
    assert_eq!(d.transcript_on(s.preset), Some(TranscriptOn::Sibling));
    let t = d.transcript_of(sib.preset, &boxed).expect("a transcript");
    assert_eq!(t.entries.len(), 2);
    assert_eq!(t.entries[1].name.as_deref(), Some("read"));
}

#[test]
fn events_carried_by_the_spawn_card() {
    let d = with(&["goose"]);
    let spawn = json!({"sessionUpdate":"tool_call","toolCallId":"g1","title":"Delegate",
        "rawInput":{"instructions":"Do it"},
        "_meta":{"goose":{"toolCall":{"toolName":"delegate","extensionName":"summon"}}}});
    let s = d.spawn(&spawn).expect("spawn");
    assert_eq!(s.tool_name, "delegate");
    let req = json!({"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"in_progress",
        "_meta":{"toolNotification":{"type":"message","params":{"data":{"type":"subagent_tool_request",
            "subagent_id":"sub","tool_call":{"name":"developer__shell"}}}}}});
    assert_eq!(
        d.spawn_event_of(s.preset, &req),
        Some(SpawnEvent {
            kind: SpawnEventKind::ToolRequest,
            title: "developer__shell".into()
        })
    );
    assert_eq!(d.spawn_event_of(s.preset, &spawn), None);
}

#[test]
fn announcements_get_what_they_lack() {
    let d = with(&["codex"]);
    let a = json!({"sessionUpdate":"subagent_update","sessionId":"p:subagent:t",
        "description":"Look at every file under src/ and list the ones that still use the old API\nthen stop"});
    let got = d.announce(&a);
    assert_eq!(
        got.prompt.as_deref(),
        Some(
            "Look at every file under src/ and list the ones that still use the old API\nthen stop"
        )
    );
    let title = got.title.expect("a title");
    assert!(
        title.ends_with('…') && title.chars().count() <= 60,
        "{title}"
    );
    let titled =
        json!({"sessionUpdate":"subagent_update","sessionId":"p:subagent:t","title":"Scout"});
    assert_eq!(d.announce(&titled).title.as_deref(), Some("Scout"));
    assert_eq!(
        fallback().announce(&a),
        AnnounceRead::default(),
        "not every preset fills them"
    );
}

#[test]
fn timing_attribution_is_opt_in_per_preset() {
    let d = from_toml(
        "[[preset]]\nname = \"guess\"\ntiming = true\n[[preset.spawn]]\nwhen = [{ at = \"/title\", equals = \"Spawn\" }]\n\
         [[preset]]\nname = \"exact\"\n",
    );
    assert!(d.timing_of(PresetId(0)));
    assert!(!d.timing_of(PresetId(1)));
    // Only agents whose wire ties a child's events to nothing guess, and their sync children
    // block the parent's turn (Copilot, Cline).
    let guessing: Vec<String> = PresetSet::builtin()
        .iter()
        .filter(|p| p.timing)
        .map(|p| p.name.clone())
        .collect();
    assert_eq!(guessing, ["copilot", "cline"]);
}

#[test]
fn regex_only_rules_search_their_explicit_marker() {
    let d = from_toml(
        "[[preset]]\nname = \"re\"\n[[preset.spawn]]\nwhen = [{ at = \"/title\", regex = \"^Delegate to (\\\\w+)$\" }]\nmarker = \"Delegate to \"\n",
    );
    assert_eq!(d.markers().spawn, ["Delegate to "]);
    let u = json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"Delegate to scout"});
    assert!(d.scan(u.to_string().as_bytes()).has(kind::SPAWN));
    assert_eq!(d.spawn_tool_name(&u).as_deref(), Some("Delegate to scout"));
    let other = json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"Read"});
    assert!(!d.scan(other.to_string().as_bytes()).has(kind::SPAWN));
}

#[test]
fn copilot_agent_child_ids_on_events_launches_and_read_agent() {
    let d = with(&["copilot"]);
    let child_call = json!({"sessionUpdate":"tool_call","toolCallId":"call_0003","title":"Finding files",
        "_meta":{"github.com/copilot":{"agentId":"1c51c94e-c24e"}}});
    let (p, id) = d.child_ref(&child_call).expect("child ref");
    assert_eq!(id, "1c51c94e-c24e");
    assert!(d.marks_child_events(p) && d.any_child_ref());
    assert!(d.scan(child_call.to_string().as_bytes()).has(kind::PARENT));
    assert_eq!(
        d.child_ref(&json!({"_meta":{"github.com/copilot":{"agentId":""}}})),
        None
    );
    assert_eq!(d.parent_ref(&child_call), None, "not a spawn's id");
    let launch = json!({"sessionUpdate":"tool_call_update","toolCallId":"call_0001","status":"completed",
        "content":[{"type":"content","content":{"type":"text","text":"Agent started in background with agent_id: 1c51c94e-c24e. You'll be notified"}}]});
    assert!(d.background_of(p, &launch));
    assert_eq!(
        d.agent_child_id_of(p, &launch).as_deref(),
        Some("1c51c94e-c24e")
    );
    let sync_end = json!({"sessionUpdate":"tool_call_update","toolCallId":"call_0001","status":"completed",
        "content":[{"type":"content","content":{"type":"text","text":"SUB-ANSWER: agent_id: 1 was here"}}]});
    assert_eq!(
        d.agent_child_id_of(p, &sync_end),
        None,
        "only a launch names the id"
    );
    let read = |state: &str| {
        json!({"sessionUpdate":"tool_call_update","toolCallId":"call_0002","status":"completed",
            "rawOutput":{"content":"…","detailedContent":format!("<agent 1c51c94e-c24e {state}>")}})
    };
    for (state, want) in [
        ("idle", EndStatus::Completed),
        ("running", EndStatus::Running),
        ("failed", EndStatus::Failed("failed".into())),
    ] {
        let e = d.end_signal(&read(state)).expect("an end");
        assert_eq!(e.names, EndNames::AgentChild("1c51c94e-c24e".into()));
        assert_eq!(e.status, want);
    }
    assert!(d.scan(read("idle").to_string().as_bytes()).has(kind::END));
}
