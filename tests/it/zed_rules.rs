//! One test per rule of Zed's that the proxy's output depends on (docs/subagents.md, "Zed's
//! rules"), each judged by the Zed model under Zed 1.18's rules and its main branch's.

use acp_proxy::subagents::ids::{child_session_id, synthesized_spawn_id};
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, Harness};
use crate::support::frames;
use crate::support::zed_model::ZedRules;

const S: &str = "sess-1";

/// Zed (as `rules` says) after its `initialize` and a `session/new`.
fn start(rules: ZedRules) -> Harness {
    Harness::zed_session_under(rules, S)
}

fn spawn(h: &mut Harness, id: &str, task: &str) {
    let meta = frames::spawn_meta(None);
    h.update(S, frames::spawn_call(id, &meta));
    h.update(
        S,
        frames::spawn_task(id, task, &format!("do {task}"), &meta),
    );
}

fn text(t: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}})
}

fn parent_entries(h: &Harness) -> Vec<String> {
    entry_lines(&h.zed.threads[S].entries)
}

/// A standard child `kid` of `S`, announced and given its task.
fn standard_child(h: &mut Harness) -> String {
    h.update(
        S,
        json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "Kid",
        "capabilities": {"cancel": {}}, "state": {"state": "running"}}),
    );
    h.update(
        S,
        json!({"sessionUpdate": "session_message", "messageId": "m1", "senderSessionId": S,
        "recipientSessionId": "kid", "content": [{"type": "text", "text": "do it"}]}),
    );
    child_session_id(S, &synthesized_spawn_id("kid"))
}

fn end_standard_child(h: &mut Harness) {
    h.update(
        S,
        json!({"sessionUpdate": "subagent_update", "sessionId": "kid",
        "state": {"state": "idle", "stopReason": "end_turn"}}),
    );
}

/// The card's range after the child finished, checked against the child thread Zed builds
/// when it loads the child: the end index is its last entry.
fn card_range_matches_the_loaded_thread(h: &mut Harness, spawn: &str, child: &str) -> (u64, u64) {
    let info = h.zed.threads[S]
        .card(spawn)
        .and_then(|c| c.subagent.clone())
        .expect("a card");
    let end = info.end.expect("a finished card has an end index");
    h.load_child(child);
    let entries = &h.zed.threads[child].entries;
    assert_eq!(
        end as usize + 1,
        entries.len(),
        "{:?}: end index {end} is the last of {:#?}",
        h.zed.rules,
        entries
    );
    (info.start, end)
}

#[test]
fn a_tool_call_without_a_title_is_given_one() {
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        h.update(
            S,
            json!({"sessionUpdate": "tool_call", "toolCallId": "b1", "kind": "execute",
            "_meta": {"claudeCode": {"toolName": "Bash"}}}),
        );
        h.update(
            S,
            json!({"sessionUpdate": "tool_call", "toolCallId": "r1", "kind": "read"}),
        );
        // The same tool call announced again without a title: an update of it.
        h.update(
            S,
            json!({"sessionUpdate": "tool_call", "toolCallId": "b1", "status": "completed"}),
        );
        let parent = &h.zed.threads[S];
        assert_eq!(parent.card("b1").expect("b1").title, "Bash");
        assert_eq!(parent.card("b1").expect("b1").status, "completed");
        assert_eq!(parent.card("r1").expect("r1").title, "Read");
        // In a child's thread too.
        spawn(&mut h, "sp", "task");
        h.update(
            S,
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "kind": "search",
            "_meta": {"claudeCode": {"toolName": "Glob", "parentToolUseId": "sp"}}}),
        );
        let child = child_session_id(S, "sp");
        h.load_child(&child);
        assert_eq!(
            h.zed.threads[&child].card("c1").expect("c1").title,
            "Glob",
            "{rules:?}"
        );
        let notes: Vec<&String> = h.notes.iter().filter(|n| n.contains("title")).collect();
        assert_eq!(notes.len(), 2, "each repair noted once: {notes:?}");
        h.assert_zed_clean();
    }
}

#[test]
fn an_update_before_its_tool_call_becomes_the_tool_call() {
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        h.update(S, text("Looking. "));
        // A post-tool hook update for a tool call the agent never announced.
        h.update(
            S,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "h1", "status": "completed",
            "_meta": {"claudeCode": {"toolName": "Glob", "toolResponse": {}}}}),
        );
        h.update(S, text("Done."));
        // Once shown, its further updates pass as they are.
        let later = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S,
            "update": {"sessionUpdate": "tool_call_update", "toolCallId": "h1", "status": "failed"}}});
        h.agent(later.clone());
        assert_eq!(
            h.to_client.last(),
            Some(&crate::support::engine::line(&later))
        );
        assert_eq!(
            parent_entries(&h),
            ["agent:Looking. ", "tool:h1:failed", "agent:Done."],
            "{rules:?}: shown as the tool call it updates, not as a failed stand-in"
        );
        assert_eq!(h.zed.threads[S].card("h1").expect("h1").title, "Glob");
        // In a standard child's thread, whose indices must stay right.
        let child = standard_child(&mut h);
        h.update("kid", json!({"sessionUpdate": "tool_call_update", "toolCallId": "k1", "status": "completed", "title": "List"}));
        h.update("kid", text("kid done"));
        end_standard_child(&mut h);
        let spawn = synthesized_spawn_id("kid");
        assert_eq!(
            card_range_matches_the_loaded_thread(&mut h, &spawn, &child),
            (0, 2)
        );
        assert_eq!(
            entry_lines(&h.zed.threads[&child].entries),
            ["user:do it", "tool:k1:completed", "agent:kid done"]
        );
        h.assert_zed_clean();
    }
}

#[test]
fn an_update_is_judged_by_its_own_id_whatever_id_comes_first() {
    // The hot path reads a tool call update's first `"toolCallId"` only when the key search
    // counted one: here the first is a known call's, named in the content, and the update's
    // own (unknown) comes after it.
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        h.update(
            S,
            json!({"sessionUpdate": "tool_call", "toolCallId": "k1", "title": "Read", "status": "completed"}),
        );
        h.update(
            S,
            json!({"sessionUpdate": "tool_call_update", "content": [{"type": "content", "content": {"type": "text", "text": "x"}, "toolCallId": "k1"}],
            "toolCallId": "u1", "status": "completed", "title": "Grep"}),
        );
        assert!(
            h.zed.threads[S].card("u1").is_some(),
            "{rules:?}: the update was shown as its tool call"
        );
        h.assert_zed_clean();
    }
}

#[test]
fn a_cards_own_name_does_not_hide_it() {
    // On Zed's main branch a `name` wins over `_meta.tool_name`: the card is a card through
    // `subagent_session_info` alone, on every frame of it.
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        let meta = frames::spawn_meta(None);
        let mut call = frames::spawn_call("sp", &meta);
        call["name"] = json!("Agent");
        h.update(S, call);
        h.update(S, frames::spawn_task("sp", "survey", "do survey", &meta));
        h.update(S, frames::spawn_result("sp", "completed", "all done"));
        let card = h.zed.threads[S].card("sp").expect("card").clone();
        assert!(card.is_subagent(), "{rules:?}: {card:?}");
        assert_eq!(card.status, "completed");
        let info = card.subagent.expect("info");
        assert_eq!(info.session_id, child_session_id(S, "sp"));
        assert!(info.end.is_some());
        for line in &h.to_client {
            let v: Value = serde_json::from_slice(line).expect("JSON");
            if v.pointer("/params/update/toolCallId") == Some(&json!("sp")) {
                assert!(
                    v.pointer("/params/update/_meta/subagent_session_info")
                        .is_some_and(Value::is_object),
                    "every frame of the card carries its info: {v}"
                );
            }
        }
        h.assert_zed_clean();
    }
}

#[test]
fn user_messages_split_by_message_id_are_counted_as_the_zed_in_use_counts_them() {
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        let child = standard_child(&mut h);
        let user = |text: &str, id: &str| {
            json!({"sessionUpdate": "user_message_chunk", "messageId": id,
                "content": {"type": "text", "text": text}})
        };
        h.update("kid", user("and also", "u2"));
        h.update("kid", user(" this", "u2"));
        h.update("kid", user("finally", "u3"));
        h.update("kid", text("kid done"));
        end_standard_child(&mut h);
        let spawn = synthesized_spawn_id("kid");
        let (start, end) = card_range_matches_the_loaded_thread(&mut h, &spawn, &child);
        let want = match rules {
            // do it + and also this + finally, merged; then the answer.
            ZedRules::V1_18 => 1,
            // The proxy's own task message has no id, so it merges with u2; u3 is its own.
            ZedRules::Main => 2,
        };
        assert_eq!((start, end), (0, want), "{rules:?}");
        h.assert_zed_clean();
    }
}

#[test]
fn a_compaction_in_a_child_is_an_entry_on_main() {
    let mut h = start(ZedRules::Main);
    let child = standard_child(&mut h);
    h.update("kid", text("working"));
    h.update("kid", json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"}));
    h.update(
        "kid",
        json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
        "content": {"type": "text", "text": "so far"}}),
    );
    h.update(
        "kid",
        json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"}),
    );
    h.update("kid", text("kid done"));
    end_standard_child(&mut h);
    let spawn = synthesized_spawn_id("kid");
    // user, agent, compaction, agent.
    assert_eq!(
        card_range_matches_the_loaded_thread(&mut h, &spawn, &child),
        (0, 3)
    );
    h.assert_zed_clean();
}

#[test]
fn an_elicitation_shown_in_a_loaded_child_counts_on_main() {
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        let child = standard_child(&mut h);
        h.load_child(&child);
        h.update("kid", text("need input"));
        h.agent(
            json!({"jsonrpc": "2.0", "id": 40, "method": "elicitation/create",
            "params": {"sessionId": "kid", "mode": "form", "message": "Which branch?",
                "requestedSchema": {"type": "object", "properties": {}}}}),
        );
        h.update("kid", text("thanks"));
        end_standard_child(&mut h);
        let info = h.zed.threads[S]
            .card(&synthesized_spawn_id("kid"))
            .and_then(|c| c.subagent.clone())
            .expect("card");
        let entries = &h.zed.threads[&child].entries;
        assert_eq!(
            info.end.map(|e| e as usize + 1),
            Some(entries.len()),
            "{rules:?}: {entries:#?}"
        );
        match rules {
            ZedRules::V1_18 => {
                // The answer merges with the words before the refused elicitation.
                assert_eq!(entries.len(), 2);
                // 1.18 has no elicitation handler: the request is refused, nothing else.
                assert_eq!(h.zed.refused_requests.len(), 1);
            }
            ZedRules::Main => {
                assert_eq!(entries.len(), 4);
                h.assert_zed_clean();
            }
        }
    }
}

#[test]
fn a_continued_child_starts_its_second_task_at_the_entry_count_of_the_zed_in_use() {
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        let child = standard_child(&mut h);
        for (id, words) in [("u2", "more context"), ("u3", "and a detail")] {
            // Two user messages: one entry on 1.18, two on Zed's main branch.
            h.update(
                "kid",
                json!({"sessionUpdate": "user_message_chunk", "messageId": id,
                "content": {"type": "text", "text": words}}),
            );
        }
        h.update("kid", text("first done"));
        end_standard_child(&mut h);
        h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "state": {"state": "running"}}));
        h.update(
            S,
            json!({"sessionUpdate": "session_message", "messageId": "m2", "senderSessionId": S,
            "recipientSessionId": "kid", "content": [{"type": "text", "text": "now this"}]}),
        );
        h.update("kid", text("second done"));
        end_standard_child(&mut h);
        let info = h.zed.threads[S]
            .card(&synthesized_spawn_id("kid"))
            .and_then(|c| c.subagent.clone())
            .expect("card");
        h.load_child(&child);
        let entries = entry_lines(&h.zed.threads[&child].entries);
        let slice: Vec<String> = entry_lines(h.zed.threads[&child].slice(info.start, info.end));
        assert_eq!(
            slice,
            ["user:now this", "agent:second done"],
            "{rules:?}: the card shows the second task only, of {entries:?}"
        );
        h.assert_zed_clean();
    }
}

#[test]
fn a_childs_permission_request_shown_in_the_parent_carries_the_childs_title() {
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        spawn(&mut h, "sp", "task");
        h.update(
            S,
            frames::child_tool("sp", "w1", "Write notes.txt", "pending"),
        );
        h.agent(
            json!({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission",
            "params": {"sessionId": S, "toolCall": {"toolCallId": "w1"},
                "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}}),
        );
        let sent: Value = serde_json::from_slice(h.to_client.last().expect("sent")).expect("JSON");
        assert_eq!(sent["params"]["sessionId"], S, "the child is not loaded");
        if rules == ZedRules::Main {
            // Zed upserts it: the request names the child's card, titled with what is asked,
            // so that the child's tool call stays out of the parent thread.
            assert_eq!(
                sent["params"]["toolCall"],
                json!({"toolCallId": "sp", "title": "task · Write notes.txt"})
            );
            assert!(!parent_entries(&h).iter().any(|e| e.contains("w1")));
        } else {
            assert_eq!(sent["params"]["toolCall"]["title"], "Write notes.txt");
        }
        // Once the child is loaded, its thread holds the tool call: the request goes as sent.
        let child = child_session_id(S, "sp");
        h.load_child(&child);
        let req = json!({"jsonrpc": "2.0", "id": 6, "method": "session/request_permission",
            "params": {"sessionId": S, "toolCall": {"toolCallId": "w1"}, "options": []}});
        h.agent(req);
        let sent: Value = serde_json::from_slice(h.to_client.last().expect("sent")).expect("JSON");
        assert_eq!(sent["params"]["sessionId"], json!(child));
        assert!(sent["params"]["toolCall"].get("title").is_none());
        h.assert_zed_clean();
    }
}

#[test]
fn subagent_kinds_never_reach_zed() {
    for rules in ZedRules::ALL {
        let mut h = start(rules);
        let _ = standard_child(&mut h);
        h.update(
            S,
            json!({"sessionUpdate": "session_message_chunk", "messageId": "m1",
            "content": {"type": "text", "text": "…"}}),
        );
        end_standard_child(&mut h);
        h.update(
            S,
            json!({"sessionUpdate": "subagent_spawned", "subagentSessionId": "old",
            "name": "Old", "task": "old task"}),
        );
        h.update(
            S,
            json!({"sessionUpdate": "subagent_state_update", "subagentSessionId": "old", "state": "completed"}),
        );
        for line in &h.to_client {
            let v: Value = serde_json::from_slice(line).expect("JSON");
            let kind = v
                .pointer("/params/update/sessionUpdate")
                .and_then(Value::as_str)
                .unwrap_or("");
            assert!(
                rules.known_kinds().contains(&kind) || kind.is_empty(),
                "{kind} reached Zed"
            );
        }
        assert_eq!(h.zed.threads[S].cards().len(), 2, "both shapes are cards");
        h.assert_zed_clean();
    }
}
