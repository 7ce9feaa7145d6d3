//! DeepSeek Harness (`dsh-acp-interactive` 1.3) behind the proxy, as Zed shows it. A
//! `subagent` (or `subagent_fork`) tool call carrying `_meta.dsh_subagent` is a card; its
//! content is the child's folded Markdown transcript, re-sent whole on every step, then
//! `[transcript, answer]` when it settles. The transcript becomes the child thread (diffed
//! version by version); the card keeps only the answer.
//!
//! The agent cannot be installed here: `tests/fixtures/agents/dsh-1.3-written-two-subagents.jsonl`
//! and the frames built below are realistic traces written by hand from the agent's source and
//! tests (`src/subagents.ts`, `src/index.ts`, `tests/subagents.spec.ts`), not captures.

use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, fixture, play, zed_config, Harness, StoreModel};

pub(crate) const TRACE: &str = "agents/dsh-1.3-written-two-subagents.jsonl";
pub(crate) const PARENT: &str = "dsh-parent-1";

struct Card {
    spawn: &'static str,
    title: &'static str,
    tool_name: &'static str,
    status: &'static str,
    /// What the card shows as its content (the answer, or how the child ended).
    text: &'static str,
    /// The same after a reopen: what dsh's replay of the card holds.
    replayed_text: &'static str,
    thread: &'static [&'static str],
    /// (tool call, title, content) of the child's tool calls.
    tools: &'static [(&'static str, &'static str, &'static str)],
}

const CARDS: &[Card] = &[
    Card {
        spawn: "call_c1",
        title: "Auth scout",
        tool_name: "subagent",
        status: "completed",
        text: "Auth is handled in src/auth.rs; its 12 tests pass.",
        replayed_text: "Auth is handled in src/auth.rs; its 12 tests pass.",
        thread: &[
            "user:Look for the auth code and check its tests.",
            "tool:call_c1-fold-0:completed",
            "agent:Auth lives in src/auth.rs.",
            "tool:call_c1-fold-2:completed",
            "agent:Auth is in src/auth.rs and tested.\n\nAuth is handled in src/auth.rs; its 12 tests pass.",
        ],
        tools: &[
            ("call_c1-fold-0", "Found 2 files", ""),
            (
                "call_c1-fold-2",
                "Subagent `spawn`: Check the tests",
                "✓ Bash cargo test\n· All 12 tests pass.\n✓ Subagent completed",
            ),
        ],
    },
    Card {
        spawn: "call_c2",
        title: "Try a fix",
        tool_name: "subagent_fork",
        status: "failed",
        text: "✗ Subagent aborted",
        replayed_text: "",
        thread: &[
            "user:Try the fix in a fork.",
            "tool:call_c2-fold-0:failed",
            "agent:✗ Subagent aborted",
        ],
        tools: &[("call_c2-fold-0", "Edit src/auth.rs", "")],
    },
];

fn check_cards(h: &mut Harness, name: &str, reopened: bool) {
    for c in CARDS {
        let card = h.zed.threads[PARENT].card(c.spawn).cloned().expect("card");
        assert_eq!(
            (
                card.title.as_str(),
                card.status.as_str(),
                card.tool_name.as_deref()
            ),
            (c.title, c.status, Some(c.tool_name)),
            "{name} {}",
            c.spawn
        );
        let text = if reopened { c.replayed_text } else { c.text };
        assert_eq!(
            card.text, text,
            "{name} {}: the card keeps the answer",
            c.spawn
        );
        let child = child_session_id(PARENT, c.spawn);
        let info = card.subagent.expect("info");
        assert_eq!(
            (info.session_id.as_str(), info.end),
            (child.as_str(), Some(c.thread.len() as u64 - 1))
        );
        h.load_child(&child);
        let thread = &h.zed.threads[&child];
        assert_eq!(entry_lines(&thread.entries), c.thread, "{name} {}", c.spawn);
        let tools: Vec<(String, String, String)> = thread
            .tool_calls()
            .map(|t| (t.id.clone(), t.title.clone(), t.text.clone()))
            .collect();
        let want: Vec<(String, String, String)> = c
            .tools
            .iter()
            .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
            .collect();
        assert_eq!(tools, want, "{name} {}: the child's tool calls", c.spawn);
    }
}

#[test]
fn the_folded_transcript_is_the_child_thread_and_the_card_keeps_the_answer() {
    for scan_ahead in [false, true] {
        let name = format!("scan ahead: {scan_ahead}");
        let mut h = Harness::zed();
        h.scan_ahead = scan_ahead;
        play(&mut h, &fixture(TRACE));
        assert_eq!(
            entry_lines(&h.zed.threads[PARENT].entries),
            [
                "agent:Delegating. ",
                "tool:call_c1:completed",
                "tool:call_c2:failed",
                "agent:Done."
            ],
            "{name}"
        );
        // The transcript never reaches the parent; the card's title showed the child's steps.
        let mut titles = Vec::new();
        for line in &h.to_client {
            let text = String::from_utf8_lossy(line);
            assert!(
                !text.contains("· session `child-"),
                "{name}: transcript sent: {text}"
            );
            let v: Value = serde_json::from_slice(line).expect("json");
            if v.pointer("/params/update/toolCallId") == Some(&json!("call_c1")) {
                if let Some(t) = v.pointer("/params/update/title").and_then(Value::as_str) {
                    titles.push(t.to_owned());
                }
            }
        }
        assert!(
            titles
                .iter()
                .any(|t| t == "Auth scout · Grep auth · 1 step"),
            "{name}: {titles:?}"
        );
        assert_eq!(
            titles.last().map(String::as_str),
            Some("Auth scout"),
            "{name}"
        );
        check_cards(&mut h, &name, false);
        assert!(
            h.zed.dropped.is_empty()
                && h.zed.rejected.is_empty()
                && h.zed.orphan_tool_updates.is_empty()
        );
    }
}

/// dsh's parent replay: each delegation as a plain settled card (`title: "subagent"`, the
/// result), without the transcript or `_meta.dsh_subagent` (written from its source).
pub(crate) fn parent_replay() -> Vec<(String, Value)> {
    let upd = |u: Value| {
        (
            "in".to_owned(),
            json!({"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": PARENT, "update": u}}),
        )
    };
    let text = |t: &str| json!([{"type": "content", "content": {"type": "text", "text": t}}]);
    vec![
        (
            "out".to_owned(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": true}}, "clientInfo": {"name": "zed", "version": "0.230.0"}}}),
        ),
        (
            "in".to_owned(),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1,
                "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "dsh-acp-interactive", "version": "1.3.x"}}}),
        ),
        (
            "out".to_owned(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/load",
                "params": {"sessionId": PARENT, "cwd": "/home/user/project", "mcpServers": []}}),
        ),
        upd(
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "SCENARIO:one survey the text files"}}),
        ),
        upd(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Delegating. "}}),
        ),
        upd(
            json!({"sessionUpdate": "tool_call", "toolCallId": "call_c1", "title": "subagent", "kind": "other",
            "status": "completed", "rawInput": {"description": "Find auth", "prompt": "Look for the auth code and check its tests."},
            "content": text("Auth is handled in src/auth.rs; its 12 tests pass.")}),
        ),
        upd(
            json!({"sessionUpdate": "tool_call", "toolCallId": "call_c2", "title": "subagent_fork", "kind": "other",
            "status": "failed", "rawInput": {"description": "Try a fix", "prompt": "Try the fix in a fork."}}),
        ),
        upd(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}),
        ),
        (
            "in".to_owned(),
            json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
        ),
    ]
}

#[test]
fn a_reopened_parent_gets_its_children_from_the_store_only() {
    let store = StoreModel::default();
    let mut live = Harness::with_store(zed_config(), store.clone());
    play(&mut live, &fixture(TRACE));
    // With the store: the same cards and children as live.
    let mut h = Harness::with_store(zed_config(), store);
    play(&mut h, &parent_replay());
    check_cards(&mut h, "with the store", true);
    // Without: dsh refuses to load a child, and its replay has no transcript: the child
    // thread is what the settled card says.
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    play(&mut h, &parent_replay());
    let c1 = child_session_id(PARENT, "call_c1");
    h.load_child(&c1);
    assert_eq!(
        entry_lines(&h.zed.threads[&c1].entries),
        [
            "user:Look for the auth code and check its tests.",
            "agent:Auth is handled in src/auth.rs; its 12 tests pass."
        ]
    );
    let card = h.zed.threads[PARENT]
        .card("call_c1")
        .cloned()
        .expect("card");
    assert_eq!(
        card.text,
        "Auth is handled in src/auth.rs; its 12 tests pass."
    );
    let c2 = child_session_id(PARENT, "call_c2");
    h.load_child(&c2);
    assert_eq!(
        entry_lines(&h.zed.threads[&c2].entries),
        ["user:Try the fix in a fork."]
    );
}

#[test]
fn a_long_transcript_whose_front_falls_off_loses_nothing() {
    // dsh keeps 48 entries: older ones fall into `… N earlier entries omitted`.
    let mut h = Harness::zed_session("dsh-acp-interactive", PARENT);
    h.update(
        PARENT,
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "subagent", "kind": "other",
            "status": "in_progress", "rawInput": {"description": "Long", "prompt": "Do 60 things."}}),
    );
    let meta =
        json!({"dsh_subagent": {"session_id": "child-9", "provider": "spawn", "label": "Long"}});
    let mut entries: Vec<String> = Vec::new();
    let send = |h: &mut Harness, entries: &[String], status: Option<&str>, answer: Option<&str>| {
        let keep = entries.len().saturating_sub(48);
        let mut text = "Subagent `spawn` · session `child-9`".to_owned();
        if keep > 0 {
            text.push_str(&format!("\n- … {keep} earlier entries omitted"));
        }
        for e in &entries[keep..] {
            text.push('\n');
            text.push_str(e);
        }
        let mut content =
            vec![json!({"type": "content", "content": {"type": "text", "text": text}})];
        if let Some(a) = answer {
            content.push(json!({"type": "content", "content": {"type": "text", "text": a}}));
        }
        let mut u = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": content, "_meta": meta});
        if let Some(s) = status {
            u["status"] = json!(s);
        }
        h.update(PARENT, u);
    };
    for n in 0..60 {
        entries.push(format!("- ▸ Step {n}"));
        send(&mut h, &entries, None, None);
        entries[n] = format!("- ✓ Step {n} done");
        send(&mut h, &entries, None, None);
    }
    entries.push("- ✓ Subagent completed".to_owned());
    send(&mut h, &entries, Some("completed"), Some("All 60 done."));
    let child = child_session_id(PARENT, "c1");
    h.load_child(&child);
    let thread = &h.zed.threads[&child];
    let titles: Vec<String> = thread
        .tool_calls()
        .map(|t| format!("{} {}", t.title, t.status))
        .collect();
    let want: Vec<String> = (0..60)
        .map(|n| format!("Step {n} done completed"))
        .collect();
    assert_eq!(titles, want, "every step once, finished");
    assert_eq!(
        entry_lines(&thread.entries).last().map(String::as_str),
        Some("agent:All 60 done.")
    );
    assert_eq!(thread.entries.len(), 62);
}
