use super::*;
use crate::engine::scan::kind;
use crate::subagents::presets::PresetSet;
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
            "\"task\""
        ],
        "today's spawn markers less `\"subagent_type\"`, which only ever came with `\"prompt\"`"
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
