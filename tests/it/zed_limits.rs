//! Limits: past each one the proxy relays the agent's frames unchanged and says so; finished
//! children leave memory and are served from the store.

use acp_proxy::engine::{EngineConfig, Limits};
use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, line, zed_config, Harness};

const S: &str = "s";

fn harness(limits: Limits) -> Harness {
    let mut h = Harness::new(EngineConfig {
        limits,
        ..zed_config()
    });
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "zed"}}),
    );
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}));
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
    h
}

fn upd(update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S, "update": update}})
}

fn spawn_msg(id: &str, parent: Option<&str>) -> Value {
    let mut meta = json!({"claudeCode": {"toolName": "Agent"}});
    if let Some(p) = parent {
        meta["claudeCode"]["parentToolUseId"] = json!(p);
    }
    upd(
        json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": "Task", "kind": "think",
        "rawInput": {"prompt": format!("task {id}")}, "_meta": meta}),
    )
}

fn child_msg(spawn: &str, n: usize) -> Value {
    upd(
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("{spawn} says {n}")},
        "_meta": {"claudeCode": {"parentToolUseId": spawn}}}),
    )
}

fn done_msg(id: &str) -> Value {
    upd(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed", "_meta": {"claudeCode": {"toolName": "Agent"}}}),
    )
}

fn passed_through(h: &Harness, msg: &Value) -> bool {
    h.to_client.contains(&line(msg))
}

#[test]
fn spawns_over_the_per_session_limit_pass_through() {
    let mut h = harness(Limits {
        max_subagents_per_session: 2,
        ..Limits::default()
    });
    for id in ["a", "b", "c"] {
        h.agent(spawn_msg(id, None));
    }
    assert!(
        !passed_through(&h, &spawn_msg("a", None)),
        "within the limit: rewritten"
    );
    assert!(
        passed_through(&h, &spawn_msg("c", None)),
        "over the limit: unchanged"
    );
    let c_event = child_msg("c", 1);
    h.agent(c_event.clone());
    assert!(
        passed_through(&h, &c_event),
        "the degraded child's events are not dropped"
    );
    assert_eq!(h.zed.threads[S].cards().len(), 2);
    assert_eq!(
        h.notes
            .iter()
            .filter(|n| n.contains("max_subagents_per_session"))
            .count(),
        1,
        "{:?}",
        h.notes
    );
}

#[test]
fn nesting_beyond_max_depth_stays_an_ordinary_tool_call() {
    let mut h = harness(Limits {
        max_depth: 1,
        ..Limits::default()
    });
    h.agent(spawn_msg("outer", None));
    h.agent(spawn_msg("inner", Some("outer")));
    let inner_event = child_msg("inner", 1);
    h.agent(inner_event.clone());
    assert!(passed_through(&h, &inner_event));
    let outer = child_session_id(S, "outer");
    h.load_child(&outer);
    let outer_thread = &h.zed.threads[&outer];
    assert!(
        outer_thread
            .card("inner")
            .is_some_and(|t| t.subagent.is_none()),
        "{:#?}",
        outer_thread.entries
    );
    assert!(h.notes.iter().any(|n| n.contains("max_depth")));
}

#[test]
fn a_transcript_over_its_size_limit_degrades_to_pass_through() {
    let mut h = harness(Limits {
        max_transcript_bytes: 1024,
        ..Limits::default()
    });
    h.agent(spawn_msg("a", None));
    let events: Vec<Value> = (0..40).map(|n| child_msg("a", n)).collect();
    for e in &events {
        h.agent(e.clone());
    }
    let passed = events.iter().filter(|e| passed_through(&h, e)).count();
    assert!(
        passed > 0 && passed < events.len(),
        "the first events are recorded, the rest pass: {passed}"
    );
    assert!(h.notes.iter().any(|n| n.contains("max_transcript_bytes")));
}

#[test]
fn finished_children_leave_memory_and_load_from_the_store() {
    let mut h = harness(Limits {
        max_finished_in_memory: 3,
        ..Limits::default()
    });
    for n in 0..50 {
        let id = format!("sp{n}");
        h.agent(spawn_msg(&id, None));
        h.agent(child_msg(&id, n));
        h.agent(done_msg(&id));
    }
    assert!(
        h.engine.children_in_memory() <= 3,
        "{} children in memory",
        h.engine.children_in_memory()
    );
    let first = child_session_id(S, "sp0");
    let id = h.load_child(&first);
    assert_eq!(h.response(id).expect("answered")["result"], json!({}));
    let texts: Vec<String> = h.zed.threads[&first]
        .entries
        .iter()
        .map(|e| format!("{e:?}"))
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[1].contains("sp0 says 0"));
}

#[test]
fn thousands_of_finished_subagents_leave_the_engine_bounded() {
    let mut h = harness(Limits {
        max_finished_in_memory: 8,
        ..Limits::default()
    });
    let mut peak: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for n in 0..3_000 {
        // New parent sessions now and then, as a long editor session does.
        let session = format!("s{}", n / 500);
        let sp = format!("sp{n}");
        let kid = format!("kid{n}");
        let on = |u: Value| json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": u}});
        h.agent(on(
            json!({"sessionUpdate": "tool_call", "toolCallId": sp, "title": "Task", "kind": "think",
            "rawInput": {"prompt": "p"}, "_meta": {"claudeCode": {"toolName": "Agent"}}}),
        ));
        h.agent(on(
            json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{n}"), "title": "Read",
            "_meta": {"claudeCode": {"toolName": "Read", "parentToolUseId": sp}}}),
        ));
        h.agent(on(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": sp, "status": "completed",
            "_meta": {"claudeCode": {"toolName": "Agent"}}}),
        ));
        h.agent(on(json!({"sessionUpdate": "subagent_update", "sessionId": kid, "title": "Kid", "state": {"state": "running"}})));
        h.agent(on(json!({"sessionUpdate": "session_message", "messageId": format!("m{n}"), "senderSessionId": session,
            "recipientSessionId": kid, "content": [{"type": "text", "text": "go"}]})));
        h.agent(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": kid,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}}}));
        h.agent(on(json!({"sessionUpdate": "subagent_update", "sessionId": kid, "state": {"state": "idle", "stopReason": "end_turn"}})));
        if n >= 500 {
            for (name, size) in h.engine.footprint() {
                let p = peak.entry(name).or_default();
                *p = (*p).max(size);
            }
        }
        h.to_client.clear();
    }
    for (name, size) in &peak {
        // Bounded by the limits, not by the 6 000 subagents seen; the tool calls of top-level
        // threads are two generations of 16 Ki by design.
        let bound = if *name == "thread_tools" { 2 << 14 } else { 64 };
        assert!(*size <= bound, "{name} reached {size} entries: {peak:?}");
    }
}

/// The soak's traffic at engine level (`tests/it/soak.rs`): per turn a prompt, a tool call with a
/// permission request the client answers, two legacy subagents and a standard one with a
/// `session_message`; every tenth turn a child thread opened, closed and sessions listed; a new
/// parent session every 200 turns. Whatever the engine keeps must stay bounded.
#[test]
fn a_long_session_like_the_soak_leaves_the_engine_bounded() {
    let mut h = harness(Limits {
        max_finished_in_memory: 8,
        ..Limits::default()
    });
    let mut session = S.to_owned();
    let mut children: Vec<String> = Vec::new();
    let mut peak: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for n in 0..2_000u64 {
        if n % 200 == 199 {
            let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
            session = format!("soak-{n}");
            h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session}}));
        }
        let s = session.clone();
        let prompt = h.request(
            "session/prompt",
            json!({"sessionId": s, "prompt": [{"type": "text", "text": "go"}]}),
        );
        let tool = format!("read-{n}");
        h.update(&s, json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": "Read", "kind": "read"}));
        h.agent(json!({"jsonrpc": "2.0", "id": format!("perm-{n}"), "method": "session/request_permission",
            "params": {"sessionId": s, "toolCall": {"toolCallId": tool}, "options": []}}));
        for j in 0..2 {
            let sp = format!("toolu-{n}-{j}");
            let meta = json!({"claudeCode": {"toolName": "Agent"}});
            let tagged = json!({"claudeCode": {"toolName": "Glob", "parentToolUseId": sp}});
            h.update(&s, json!({"sessionUpdate": "tool_call", "toolCallId": sp, "title": "Task", "kind": "think", "rawInput": {}, "_meta": meta}));
            h.update(&s, json!({"sessionUpdate": "tool_call", "toolCallId": format!("glob-{n}-{j}"), "title": "Find", "_meta": tagged}));
            h.update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("glob-{n}-{j}"), "_meta": {"claudeCode": {"toolName": "Glob", "toolResponse": {}}}}));
            h.update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": sp, "status": "completed", "_meta": meta}));
            children.push(acp_proxy::subagents::ids::child_session_id(&s, &sp));
        }
        let kid = format!("kid-{n}");
        h.update(&s, json!({"sessionUpdate": "subagent_update", "sessionId": kid, "title": "Kid", "state": {"state": "running"}}));
        let msg = json!({"sessionUpdate": "session_message", "messageId": format!("m{n}"), "senderSessionId": s,
            "recipientSessionId": kid, "content": [{"type": "text", "text": "go"}]});
        h.update(&s, msg.clone());
        h.update(&kid, msg);
        h.update(&kid, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}));
        h.update(&s, json!({"sessionUpdate": "subagent_update", "sessionId": kid, "state": {"state": "idle", "stopReason": "end_turn"}}));
        h.client(json!({"jsonrpc": "2.0", "id": format!("perm-{n}"), "result": {"outcome": {"outcome": "cancelled"}}}));
        if n % 10 == 0 {
            let child = children[(n as usize / 10) % children.len()].clone();
            h.load_child(&child);
            h.request("session/close", json!({"sessionId": child}));
            let list = h.request("session/list", json!({}));
            h.agent(json!({"jsonrpc": "2.0", "id": list, "result": {"sessions": [{"sessionId": s, "cwd": "/p"}]}}));
        }
        h.agent(json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn"}}));
        h.advance(10);
        if n >= 400 {
            for (name, size) in h.engine.footprint() {
                let p = peak.entry(name).or_default();
                *p = (*p).max(size);
            }
        }
        h.to_client.clear();
        h.to_agent.clear();
    }
    for (name, size) in &peak {
        // The recent parent tool calls are two generations of 4096 by design, the tool calls
        // of top-level threads two of 16 Ki; the rest follow the limits.
        let bound = match *name {
            "parent_tools" => 2 * 4096,
            "thread_tools" => 2 << 14,
            _ => 64,
        };
        assert!(*size <= bound, "{name} reached {size} entries: {peak:?}");
    }
}

fn child_tool(spawn: &str, n: usize) -> Value {
    upd(
        json!({"sessionUpdate": "tool_call", "toolCallId": format!("{spawn}-t{n}"), "title": format!("Read file {n}"),
        "kind": "read", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "x".repeat(300)}}],
        "_meta": {"claudeCode": {"toolName": "Read", "parentToolUseId": spawn}}}),
    )
}

/// What Zed shows of a child loaded mid-run (then updated live), and loaded again after its
/// end, with `keep` bytes of its thread in memory; and the most updates memory held.
fn loads_with(keep: usize) -> (Vec<String>, Vec<String>, Vec<String>, usize) {
    let mut h = harness(Limits {
        max_thread_bytes_in_memory: keep,
        ..Limits::default()
    });
    let child = child_session_id(S, "sp");
    let mut held = 0;
    h.agent(spawn_msg("sp", None));
    let mut mid = Vec::new();
    for n in 0..40 {
        h.agent(child_tool("sp", n));
        h.agent(child_msg("sp", n));
        held = held.max(h.engine.thread_updates_in_memory());
        if n == 20 {
            let id = h.load_child(&child);
            assert_eq!(h.response(id).expect("answered")["result"], json!({}));
            mid = entry_lines(&h.zed.threads[&child].entries);
        }
    }
    let live = entry_lines(&h.zed.threads[&child].entries);
    h.agent(done_msg("sp"));
    let id = h.load_child(&child);
    assert_eq!(h.response(id).expect("answered")["result"], json!({}));
    let ended = entry_lines(&h.zed.threads[&child].entries);
    h.assert_zed_clean();
    (mid, live, ended, held)
}

#[test]
fn a_child_whose_older_updates_left_memory_still_loads_whole() {
    let (mid, live, ended, held) = loads_with(1);
    let (whole_mid, whole_live, whole_ended, whole_held) = loads_with(0);
    // Memory held the task and the newest update only; kept whole, all of them.
    assert!(held <= 3, "{held} updates held");
    assert_eq!(whole_held, 81);
    // Loaded mid-run: the task and 21 tool calls with their messages, as a whole thread shows.
    assert_eq!(mid, whole_mid);
    assert_eq!(mid.len(), 1 + 2 * 21, "{mid:#?}");
    assert_eq!(mid[1], "tool:sp-t0:completed", "{mid:#?}");
    // Then the rest live, and the same again when loaded after the end.
    assert_eq!(live, whole_live);
    assert_eq!(live.len(), 1 + 2 * 40);
    assert_eq!(ended, whole_ended);
    assert_eq!(ended, live);
}

#[test]
fn a_child_whose_older_updates_the_store_cannot_give_back_loads_what_memory_holds() {
    let mut h = harness(Limits {
        max_thread_bytes_in_memory: 1,
        ..Limits::default()
    });
    h.agent(spawn_msg("sp", None));
    for n in 0..5 {
        h.agent(child_tool("sp", n));
    }
    h.store_blind = true;
    let child = child_session_id(S, "sp");
    let id = h.load_child(&child);
    assert_eq!(h.response(id).expect("answered")["result"], json!({}));
    // The task and the newest update, and a warning that says why the rest is missing.
    assert_eq!(
        entry_lines(&h.zed.threads[&child].entries),
        ["user:task sp", "tool:sp-t4:completed"]
    );
    assert!(
        h.notes
            .iter()
            .any(|n| n.contains("could not give back all of its thread")),
        "{:?}",
        h.notes
    );
}
