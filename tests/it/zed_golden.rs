//! Golden tests: real captures from unmodified claude-agent-acp versions, played through the
//! engine in Zed mode, judged by a model of Zed (Zed 1.18 and Zed's main branch).

use acp_proxy::subagents::ids::{child_session_id, synthesized_spawn_id};
use serde_json::{json, Value};

use crate::support;
use crate::support::engine::{fixture, play, Harness};
use crate::support::zed_model::{initialize_params, Entry, ZedRules};

fn parent_session(records: &[(String, Value)]) -> String {
    records
        .iter()
        .find_map(|(_, m)| m.pointer("/result/sessionId").and_then(Value::as_str))
        .expect("capture has a session/new response")
        .to_owned()
}

/// The capture as that Zed would have played it: its client's `initialize` is Zed's.
fn as_zed(records: &[(String, Value)], rules: ZedRules) -> Vec<(String, Value)> {
    records
        .iter()
        .map(|(dir, msg)| {
            let mut msg = msg.clone();
            if dir == "out" && msg["method"] == "initialize" {
                msg["params"] = initialize_params(rules);
            }
            (dir.clone(), msg)
        })
        .collect()
}

/// Common checks: one card with the right id, Zed never got a kind it cannot decode, nothing
/// was dropped for an unknown session, and the child's events are not in the parent.
fn check_parent(h: &Harness, parent: &str, child: &str, child_markers: &[&str]) {
    assert!(
        h.zed.rejected.is_empty(),
        "{:?}: Zed rejected kinds: {:?}",
        h.zed.rules,
        h.zed.rejected
    );
    assert!(
        h.zed.orphan_tool_updates.is_empty() && h.zed.refused_requests.is_empty(),
        "{:?}: updates before their tool call {:?}, refused requests {:?}",
        h.zed.rules,
        h.zed.orphan_tool_updates,
        h.zed.refused_requests
    );
    assert!(
        h.zed.dropped.is_empty(),
        "updates for unknown sessions: {:?}",
        h.zed.dropped
    );
    let thread = &h.zed.threads[parent];
    let cards = thread.cards();
    assert_eq!(cards.len(), 1, "exactly one subagent card: {cards:#?}");
    let info = cards[0]
        .subagent
        .as_ref()
        .expect("card carries subagent_session_info");
    assert_eq!(info.session_id, child);
    assert_eq!(cards[0].status, "completed");
    for e in &thread.entries {
        let text = match e {
            Entry::User(t) | Entry::Assistant(t) => t.clone(),
            Entry::Tool(t) => format!("{} {}", t.id, t.title),
            other => other.to_string(),
        };
        for m in child_markers {
            assert!(
                !text.contains(m),
                "child event `{m}` leaked into the parent: {e:?}"
            );
        }
    }
    for tc in thread.tool_calls() {
        if tc.id != cards[0].id {
            assert!(tc.subagent.is_none(), "only the spawn is a card: {tc:?}");
        }
    }
}

/// Load the child the way Zed does and return its entries, checking the card's range slices
/// exactly the child's thread.
fn load_and_check_range(h: &mut Harness, parent: &str, child: &str) -> Vec<Entry> {
    let id = h.load_child(child);
    let resp = h.response(id).expect("child load answered");
    assert_eq!(
        resp["result"],
        json!({}),
        "child load answered by the proxy: {resp}"
    );
    assert!(
        !h.to_agent
            .iter()
            .any(|m| m.pointer("/params/sessionId").and_then(Value::as_str) == Some(child)),
        "the child load never reaches the agent"
    );
    let card = h.zed.threads[parent].cards()[0].clone();
    let info = card.subagent.expect("info");
    let thread = &h.zed.threads[child];
    assert_eq!(info.start, 0);
    let end = info.end.expect("completed card has an end index");
    assert_eq!(
        end as usize,
        thread.entries.len() - 1,
        "end index is the last entry: {:#?}",
        thread.entries
    );
    thread.slice(info.start, info.end).to_vec()
}

#[test]
fn legacy_claude_0_23_subagent_becomes_a_card_with_its_own_thread() {
    ZedRules::ALL.into_iter().for_each(legacy_claude_0_23);
}

fn legacy_claude_0_23(rules: ZedRules) {
    let records = fixture("claude-agent-acp-0.23.1-legacy-one-subagent.jsonl");
    let mut h = Harness::zed_under(rules);
    play(&mut h, &as_zed(&records, rules));
    let parent = parent_session(&records);
    let child = child_session_id(&parent, "toolu_0002");
    check_parent(&h, &parent, &child, &["toolu_0004", "Find `*.txt`"]);
    let card = h.zed.threads[&parent].cards()[0].clone();
    assert_eq!(card.id, "toolu_0002");
    assert_eq!(card.tool_name.as_deref(), Some("Agent"));
    assert_eq!(
        card.title, "Survey text files",
        "the card ends with the plain task title"
    );

    let entries = load_and_check_range(&mut h, &parent, &child);
    assert_eq!(entries.len(), 3, "{entries:#?}");
    assert!(matches!(&entries[0], Entry::User(t) if t == "SUBAGENT:alpha list the text files"));
    let glob = entries[1].tool().expect("the child's Glob tool call");
    assert_eq!(glob.id, "toolu_0004");
    assert_eq!(
        glob.status, "completed",
        "the post-hook update without parent id was attributed too"
    );
    assert!(glob.subagent.is_none());
    assert!(
        matches!(&entries[2], Entry::Assistant(t) if t.contains("Subagent alpha found the files"))
    );
    // The agent was asked for the exact stream on Zed's behalf.
    let init = &h.to_agent[0];
    assert_eq!(init["params"]["clientCapabilities"]["subagents"], json!({}));
    assert_eq!(
        init["params"]["clientCapabilities"]["_meta"]["subagent-transcript"],
        json!(true)
    );
}

#[test]
fn native_acp_subagents_get_a_synthesized_card() {
    ZedRules::ALL.into_iter().for_each(native_acp_subagents);
}

fn native_acp_subagents(rules: ZedRules) {
    let records = fixture("claude-agent-acp-0.101.0-native-one-subagent.jsonl");
    let mut h = Harness::zed_under(rules);
    play(&mut h, &as_zed(&records, rules));
    let parent = parent_session(&records);
    let spawn = synthesized_spawn_id("a01e0f6a77d87f64b");
    let child = child_session_id(&parent, &spawn);
    check_parent(&h, &parent, &child, &["Subagent alpha found the files"]);
    let card = h.zed.threads[&parent].cards()[0].clone();
    assert_eq!(card.id, spawn);
    assert_eq!(card.title, "Survey text files");
    assert_eq!(card.tool_name.as_deref(), Some("spawn_agent"));

    let entries = load_and_check_range(&mut h, &parent, &child);
    assert_eq!(entries.len(), 2, "{entries:#?}");
    assert!(matches!(&entries[0], Entry::User(t) if t == "SUBAGENT:alpha list the text files"));
    assert!(
        matches!(&entries[1], Entry::Assistant(t) if t == "Subagent alpha found the files; reporting back.")
    );
}

#[test]
fn background_subagent_text_after_the_card_completed_lands_in_the_child() {
    ZedRules::ALL.into_iter().for_each(background_subagent_text);
}

fn background_subagent_text(rules: ZedRules) {
    let records = fixture("claude-agent-acp-0.101.0-transcript-flag.jsonl");
    let mut h = Harness::zed_under(rules);
    play(&mut h, &as_zed(&records, rules));
    let parent = parent_session(&records);
    let child = child_session_id(&parent, "toolu_0069");
    check_parent(&h, &parent, &child, &["Subagent alpha found the files"]);
    let entries = load_and_check_range(&mut h, &parent, &child);
    assert_eq!(entries.len(), 2, "{entries:#?}");
    assert!(matches!(&entries[0], Entry::User(t) if t == "SUBAGENT:alpha list the text files"));
    assert!(
        matches!(&entries[1], Entry::Assistant(t) if t == "Subagent alpha found the files; reporting back.")
    );
}

#[test]
fn every_capture_keeps_parent_frames_byte_identical() {
    // Frames that are not about subagents pass through as the exact input bytes.
    for name in [
        "claude-agent-acp-0.23.1-legacy-one-subagent.jsonl",
        "claude-agent-acp-0.101.0-native-one-subagent.jsonl",
        "claude-agent-acp-0.101.0-transcript-flag.jsonl",
    ] {
        let records = fixture(name);
        let mut h = Harness::zed();
        play(&mut h, &records);
        let sent: Vec<bytes::Bytes> = records
            .iter()
            .filter(|(d, m)| {
                d == "in"
                    && m.pointer("/params/update/sessionUpdate")
                        .and_then(Value::as_str)
                        == Some("agent_message_chunk")
                    && m.pointer("/params/update/_meta").is_none()
            })
            .map(|(_, m)| support::engine::line(m))
            .collect();
        assert!(!sent.is_empty());
        for frame in sent {
            assert!(
                h.to_client.contains(&frame),
                "{name}: parent chunk not passed through unchanged"
            );
        }
    }
}
