//! Scenarios a fake agent plays through the engine in Zed mode, judged by the Zed model under
//! both rule sets (Zed 1.18 and Zed's main branch).

use acp_proxy::engine::EngineConfig;
use acp_proxy::subagents::ids::{child_session_id, synthesized_spawn_id};
use serde_json::{json, Value};

use crate::support;
use crate::support::engine::{entry_lines, zed_config, Harness, StoreModel};
use crate::support::frames;
use crate::support::zed_model::{initialize_params, Entry, ZedModel, ZedRules};

const S: &str = "sess-1";

/// initialize (as the given Zed sends it) + session/new; the agent supports load unless told
/// otherwise.
fn start(h: &mut Harness, rules: ZedRules, agent_loads: bool) {
    h.zed = ZedModel::new(rules);
    let id = h.request("initialize", initialize_params(rules));
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": agent_loads}, "agentInfo": {"name": "fake"}}}),
    );
    let init = h.response(id).expect("initialize answered");
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"],
        json!(true)
    );
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
}

fn spawn(h: &mut Harness, session: &str, id: &str, parent_tool: Option<&str>, task: &str) {
    let meta = frames::spawn_meta(parent_tool);
    h.update(session, frames::spawn_call(id, &meta));
    h.update(
        session,
        frames::spawn_task(id, task, &format!("do {task}"), &meta),
    );
}

fn child_tool(h: &mut Harness, spawn: &str, id: &str, title: &str) {
    h.update(S, frames::child_tool(spawn, id, title, "pending"));
    // Post-tool hook update: no parent id (attributed by tool call id).
    h.update(
        S,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
        "_meta": {"claudeCode": {"toolResponse": {}, "toolName": "Read"}}}),
    );
    h.update(
        S,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
        "_meta": {"claudeCode": {"toolName": "Read", "parentToolUseId": spawn}}}),
    );
}

fn child_text(h: &mut Harness, spawn: &str, text: &str) {
    h.update(S, frames::child_text(spawn, text));
}

fn complete(h: &mut Harness, session: &str, spawn: &str, status: &str) {
    h.update(
        session,
        frames::spawn_result(spawn, status, &format!("result of {spawn}")),
    );
}

fn child_entries(h: &mut Harness, child: &str) -> Vec<String> {
    h.load_child(child);
    entry_lines(&h.zed.threads[child].entries)
}

#[test]
fn two_parallel_subagents_with_interleaved_events_stay_apart() {
    ZedRules::ALL
        .into_iter()
        .for_each(two_parallel_subagents_with_interleaved_events_stay_apart_under);
}

fn two_parallel_subagents_with_interleaved_events_stay_apart_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "spawn-a", None, "alpha");
    spawn(&mut h, S, "spawn-b", None, "beta");
    h.update(S, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "parent says hi"}}));
    child_tool(&mut h, "spawn-a", "a1", "Read a");
    child_tool(&mut h, "spawn-b", "b1", "Read b");
    child_text(&mut h, "spawn-b", "beta done");
    child_tool(&mut h, "spawn-a", "a2", "Read a2");
    child_text(&mut h, "spawn-a", "alpha done");
    complete(&mut h, S, "spawn-b", "completed");
    complete(&mut h, S, "spawn-a", "completed");

    let parent = &h.zed.threads[S];
    let cards = parent.cards();
    assert_eq!(cards.len(), 2);
    assert!(
        parent.tool_calls().all(|t| t.id.starts_with("spawn-")),
        "no child tool call in the parent"
    );
    assert!(
        matches!(parent.entries.iter().find(|e| matches!(e, Entry::Assistant(_))), Some(Entry::Assistant(t)) if t == "parent says hi")
    );
    for c in &cards {
        assert_eq!(c.status, "completed");
    }
    let a = child_session_id(S, "spawn-a");
    let b = child_session_id(S, "spawn-b");
    assert_eq!(
        child_entries(&mut h, &a),
        vec![
            "user:do alpha",
            "tool:a1:completed",
            "tool:a2:completed",
            "agent:alpha done"
        ]
    );
    assert_eq!(
        child_entries(&mut h, &b),
        vec!["user:do beta", "tool:b1:completed", "agent:beta done"]
    );
    let card_a = h.zed.threads[S].card("spawn-a").cloned().expect("card a");
    let info = card_a.subagent.expect("info");
    assert_eq!((info.start, info.end), (0, Some(3)));
    assert_eq!(
        card_a.title, "alpha",
        "progress title reset to the task when done"
    );
    h.assert_zed_clean();
}

#[test]
fn live_progress_shows_in_the_card_title_while_running() {
    ZedRules::ALL
        .into_iter()
        .for_each(live_progress_shows_in_the_card_title_while_running_under);
}

fn live_progress_shows_in_the_card_title_while_running_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "Survey");
    child_tool(&mut h, "sp", "t1", "Find `*.txt`");
    child_tool(&mut h, "sp", "t2", "Read a.txt");
    // Progress is paced: the second step within the interval shows when it is over.
    let card = h.zed.threads[S].card("sp").cloned().expect("card");
    assert_eq!(card.title, "Survey · Find `*.txt` · 1 step");
    h.advance(250);
    let card = h.zed.threads[S].card("sp").cloned().expect("card");
    assert_eq!(card.title, "Survey · Read a.txt · 2 steps");
    assert_eq!(
        card.subagent.expect("info").end,
        None,
        "running: no end index yet"
    );

    let mut quiet = Harness::new(EngineConfig {
        zed: acp_proxy::engine::ZedOptions {
            live_progress: false,
            ..Default::default()
        },
        ..zed_config()
    });
    start(&mut quiet, rules, true);
    spawn(&mut quiet, S, "sp", None, "Survey");
    child_tool(&mut quiet, "sp", "t1", "Find `*.txt`");
    assert_eq!(
        quiet.zed.threads[S].card("sp").expect("card").title,
        "Survey"
    );
    h.assert_zed_clean();
    quiet.assert_zed_clean();
}

#[test]
fn nested_subagent_gets_a_card_in_its_parent_child_thread() {
    ZedRules::ALL
        .into_iter()
        .for_each(nested_subagent_gets_a_card_in_its_parent_child_thread_under);
}

fn nested_subagent_gets_a_card_in_its_parent_child_thread_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "outer", None, "outer task");
    spawn(&mut h, S, "inner", Some("outer"), "inner task");
    child_tool(&mut h, "inner", "i1", "Read deep");
    complete(&mut h, S, "inner", "completed");
    child_text(&mut h, "outer", "outer done");
    complete(&mut h, S, "outer", "completed");

    assert_eq!(
        h.zed.threads[S].cards().len(),
        1,
        "only the outer card in the parent"
    );
    let outer = child_session_id(S, "outer");
    let inner = child_session_id(&outer, "inner");
    h.load_child(&outer);
    let outer_thread = h.zed.threads[&outer].clone();
    let cards = outer_thread.cards();
    assert_eq!(cards.len(), 1, "{:#?}", outer_thread.entries);
    assert_eq!(
        cards[0].subagent.as_ref().map(|i| i.session_id.clone()),
        Some(inner.clone())
    );
    assert_eq!(cards[0].status, "completed");
    assert!(!outer_thread.tool_calls().any(|t| t.id == "i1"));
    assert_eq!(
        child_entries(&mut h, &inner),
        vec![
            "user:do inner task",
            "tool:i1:completed",
            "agent:result of inner"
        ]
    );
    h.assert_zed_clean();
}

#[test]
fn background_subagent_finishing_after_the_turn_extends_its_card() {
    ZedRules::ALL
        .into_iter()
        .for_each(background_subagent_finishing_after_the_turn_extends_its_card_under);
}

fn background_subagent_finishing_after_the_turn_extends_its_card_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    let prompt = h.request(
        "session/prompt",
        json!({"sessionId": S, "prompt": [{"type": "text", "text": "go"}]}),
    );
    spawn(&mut h, S, "bg", None, "background job");
    h.update(S, json!({"sessionUpdate": "tool_call_update", "toolCallId": "bg",
        "_meta": {"claudeCode": {"toolName": "Agent", "toolResponse": {"isAsync": true, "status": "async_launched"}}}}));
    complete(&mut h, S, "bg", "completed");
    h.agent(json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn"}}));
    // After the turn: the child works on.
    child_tool(&mut h, "bg", "late1", "Read late");
    child_text(&mut h, "bg", "background finished");
    let child = child_session_id(S, "bg");
    let card = h.zed.threads[S].card("bg").cloned().expect("card");
    let info = card.subagent.expect("info");
    assert_eq!(info.end, Some(2), "end index follows late entries");
    assert_eq!(
        child_entries(&mut h, &child),
        vec![
            "user:do background job",
            "tool:late1:completed",
            "agent:background finished"
        ]
    );
    // Once loaded, later events go live under the child id.
    child_text(&mut h, "bg", " and more");
    assert!(
        matches!(h.zed.threads[&child].entries.last(), Some(Entry::Assistant(t)) if t.ends_with("and more"))
    );
    assert!(!h.zed.threads[S]
        .entries
        .iter()
        .any(|e| matches!(e, Entry::Assistant(t) if t.contains("more"))));
    h.assert_zed_clean();
}

#[test]
fn stop_on_a_child_cancels_the_parent_turn_and_shows_cancelled_after_confirmation() {
    ZedRules::ALL.into_iter().for_each(
        stop_on_a_child_cancels_the_parent_turn_and_shows_cancelled_after_confirmation_under,
    );
}

fn stop_on_a_child_cancels_the_parent_turn_and_shows_cancelled_after_confirmation_under(
    rules: ZedRules,
) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    let prompt = h.request("session/prompt", json!({"sessionId": S, "prompt": []}));
    spawn(&mut h, S, "sp", None, "long task");
    let child = child_session_id(S, "sp");
    h.load_child(&child);
    h.client(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": child}}));
    let cancel = h.to_agent.last().cloned().expect("cancel sent");
    assert_eq!(cancel["method"], "session/cancel");
    assert_eq!(
        cancel["params"]["sessionId"], S,
        "legacy child: the parent turn is cancelled"
    );
    assert_eq!(
        h.zed.threads[S].card("sp").expect("card").status,
        "pending",
        "not shown stopped before the agent confirms"
    );
    h.agent(json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "cancelled"}}));
    let card = h.zed.threads[S].card("sp").cloned().expect("card");
    assert_eq!(card.status, "failed");
    assert_eq!(card.text, "Cancelled");

    // child_cancel = "ignore": nothing goes to the agent.
    let mut h = Harness::new(EngineConfig {
        zed: acp_proxy::engine::ZedOptions {
            child_cancel: acp_proxy::engine::ChildCancel::Ignore,
            ..Default::default()
        },
        ..zed_config()
    });
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "long task");
    let before = h.to_agent.len();
    h.client(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": child_session_id(S, "sp")}}));
    assert_eq!(h.to_agent.len(), before);
    h.assert_zed_clean();
}

#[test]
fn standard_child_cancel_goes_to_the_child_when_the_agent_can() {
    ZedRules::ALL
        .into_iter()
        .for_each(standard_child_cancel_goes_to_the_child_when_the_agent_can_under);
}

fn standard_child_cancel_goes_to_the_child_when_the_agent_can_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    h.update(
        S,
        json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "Kid",
        "capabilities": {"cancel": {}}, "state": {"state": "running"}}),
    );
    let child = child_session_id(S, &synthesized_spawn_id("kid"));
    h.client(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": child}}));
    assert_eq!(
        h.to_agent.last().expect("sent")["params"]["sessionId"],
        "kid"
    );
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "state": {"state": "idle", "stopReason": "cancelled"}}));
    let card = h.zed.threads[S]
        .card(&synthesized_spawn_id("kid"))
        .cloned()
        .expect("card");
    assert_eq!(card.status, "failed");
    assert!(h.zed.rejected.is_empty());
    h.assert_zed_clean();
}

#[test]
fn child_permission_before_its_tool_call_is_held_then_routed() {
    ZedRules::ALL
        .into_iter()
        .for_each(child_permission_before_its_tool_call_is_held_then_routed_under);
}

fn child_permission_before_its_tool_call_is_held_then_routed_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    let child = child_session_id(S, "sp");
    // Loaded child: the permission must reach Zed under the child id.
    h.load_child(&child);
    let perm = json!({"jsonrpc": "2.0", "id": 77, "method": "session/request_permission", "params": {"sessionId": S,
        "toolCall": {"toolCallId": "w1", "title": "Write"}, "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}});
    h.agent(perm.clone());
    assert!(
        h.zed.requests.is_empty(),
        "held until its tool call shows whose it is"
    );
    child_tool(&mut h, "sp", "w1", "Write file");
    assert_eq!(
        h.zed.requests,
        vec![("session/request_permission".to_owned(), child.clone())]
    );
    // The client's answer goes back unchanged.
    h.client(json!({"jsonrpc": "2.0", "id": 77, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
    assert_eq!(h.to_agent.last().expect("answer")["id"], 77);

    // Unattributable: released to the parent after the hold time.
    h.agent(json!({"jsonrpc": "2.0", "id": 78, "method": "session/request_permission", "params": {"sessionId": S,
        "toolCall": {"toolCallId": "x9"}, "options": []}}));
    assert_eq!(h.zed.requests.len(), 1);
    h.advance(10_000);
    assert_eq!(
        h.zed.requests.last(),
        Some(&("session/request_permission".to_owned(), S.to_owned()))
    );
    assert!(h.zed.unknown_session_requests.is_empty());
    h.assert_zed_clean();
}

#[test]
fn child_permission_goes_to_the_parent_until_the_child_is_loaded() {
    ZedRules::ALL
        .into_iter()
        .for_each(child_permission_goes_to_the_parent_until_the_child_is_loaded_under);
}

fn child_permission_goes_to_the_parent_until_the_child_is_loaded_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    child_tool(&mut h, "sp", "w1", "Write file");
    h.agent(json!({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {"sessionId": S,
        "toolCall": {"toolCallId": "w1"}, "options": []}}));
    assert_eq!(
        h.zed.requests,
        vec![("session/request_permission".to_owned(), S.to_owned())]
    );
    // Standard child: its own session id is unknown to Zed and must be rewritten.
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "Kid", "state": {"state": "running"}}));
    h.agent(json!({"jsonrpc": "2.0", "id": 6, "method": "fs/read_text_file", "params": {"sessionId": "kid", "path": "/p/a"}}));
    assert_eq!(
        h.zed.requests.last(),
        Some(&("fs/read_text_file".to_owned(), S.to_owned()))
    );
    let kid = child_session_id(S, &synthesized_spawn_id("kid"));
    h.load_child(&kid);
    h.agent(json!({"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {"sessionId": "kid", "path": "/p/b"}}));
    assert_eq!(
        h.zed.requests.last(),
        Some(&("fs/read_text_file".to_owned(), kid))
    );
    assert!(h.zed.unknown_session_requests.is_empty());
    h.assert_zed_clean();
}

#[test]
fn replayed_parent_load_shows_the_same_cards_and_ids() {
    ZedRules::ALL
        .into_iter()
        .for_each(replayed_parent_load_shows_the_same_cards_and_ids_under);
}

fn replayed_parent_load_shows_the_same_cards_and_ids_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    child_tool(&mut h, "sp", "c1", "Read");
    child_text(&mut h, "sp", "done");
    complete(&mut h, S, "sp", "completed");
    let live_card = h.zed.threads[S].card("sp").cloned().expect("card");
    let child = child_session_id(S, "sp");
    let live_child = child_entries(&mut h, &child);

    // The same connection reopens the parent: the agent replays the whole history. The
    // store answers nothing here: memory alone must keep the replay from doubling the child.
    h.store_blind = true;
    let id = h.request(
        "session/load",
        json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
    );
    spawn(&mut h, S, "sp", None, "task");
    child_tool(&mut h, "sp", "c1", "Read");
    child_text(&mut h, "sp", "done");
    complete(&mut h, S, "sp", "completed");
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    let replay_card = h.zed.threads[S].card("sp").cloned().expect("card");
    assert_eq!(replay_card.subagent, live_card.subagent);
    assert_eq!(replay_card.status, "completed");
    assert_eq!(h.zed.threads[S].cards().len(), 1);
    assert_eq!(
        child_entries(&mut h, &child),
        live_child,
        "the replay did not double the child"
    );

    // After a restart (new engine, same store), an agent whose replay lacks the child's events.
    let store: StoreModel = h.store.clone();
    let mut h2 = Harness::with_store(zed_config(), store);
    start(&mut h2, rules, true);
    let id = h2.request(
        "session/load",
        json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
    );
    spawn(&mut h2, S, "sp", None, "task");
    complete(&mut h2, S, "sp", "completed");
    h2.agent(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    let card = h2.zed.threads[S].card("sp").cloned().expect("card");
    assert_eq!(
        card.subagent, live_card.subagent,
        "same child id and indices after a restart"
    );
    assert_eq!(child_entries(&mut h2, &child), live_child);
    h.assert_zed_clean();
    h2.assert_zed_clean();
}

#[test]
fn child_load_after_restart_is_served_from_the_store() {
    ZedRules::ALL
        .into_iter()
        .for_each(child_load_after_restart_is_served_from_the_store_under);
}

fn child_load_after_restart_is_served_from_the_store_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    child_text(&mut h, "sp", "done");
    complete(&mut h, S, "sp", "completed");
    let child = child_session_id(S, "sp");
    let mut h2 = Harness::with_store(zed_config(), h.store.clone());
    start(&mut h2, rules, true);
    assert_eq!(
        child_entries(&mut h2, &child),
        vec!["user:do task", "agent:done"]
    );
    // An id of our shape the store does not know gets a clear error.
    let bogus = child_session_id("nope", "nope");
    let id = h2.load_child(&bogus);
    assert_eq!(h2.response(id).expect("answered")["error"]["code"], -32002);
    h.assert_zed_clean();
    h2.assert_zed_clean();
}

#[test]
fn child_sessions_refuse_prompts_and_answer_close() {
    ZedRules::ALL
        .into_iter()
        .for_each(child_sessions_refuse_prompts_and_answer_close_under);
}

fn child_sessions_refuse_prompts_and_answer_close_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    let child = child_session_id(S, "sp");
    let sent = h.to_agent.len();
    let id = h.request("session/prompt", json!({"sessionId": child, "prompt": []}));
    let err = h.response(id).expect("answered");
    assert_eq!(err["error"]["code"], -32602);
    assert!(err["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("subagent"));
    let id = h.request("session/close", json!({"sessionId": child}));
    assert_eq!(h.response(id).expect("answered")["result"], json!({}));
    assert_eq!(
        h.to_agent.len(),
        sent,
        "nothing about the child reached the agent"
    );
    h.assert_zed_clean();
}

#[test]
fn agent_without_load_refuses_parent_loads_but_serves_children() {
    ZedRules::ALL
        .into_iter()
        .for_each(agent_without_load_refuses_parent_loads_but_serves_children_under);
}

fn agent_without_load_refuses_parent_loads_but_serves_children_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, false);
    spawn(&mut h, S, "sp", None, "task");
    complete(&mut h, S, "sp", "completed");
    let id = h.request(
        "session/load",
        json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
    );
    assert!(h.response(id).expect("answered")["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("session/load"));
    let child = child_session_id(S, "sp");
    assert_eq!(
        child_entries(&mut h, &child),
        vec!["user:do task", "agent:result of sp"]
    );
    h.assert_zed_clean();
}

#[test]
fn session_list_hides_child_sessions() {
    ZedRules::ALL
        .into_iter()
        .for_each(session_list_hides_child_sessions_under);
}

fn session_list_hides_child_sessions_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "Kid", "state": {"state": "running"}}));
    let id = h.request("session/list", json!({}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessions": [
        {"sessionId": S, "cwd": "/p"}, {"sessionId": "kid", "cwd": "/p"}]}}));
    let list = h.response(id).expect("answered");
    let ids: Vec<&str> = list["result"]["sessions"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, vec![S]);
    h.assert_zed_clean();
}

#[test]
fn flat_mode_keeps_a_live_copy_in_the_parent() {
    ZedRules::ALL
        .into_iter()
        .for_each(flat_mode_keeps_a_live_copy_in_the_parent_under);
}

fn flat_mode_keeps_a_live_copy_in_the_parent_under(rules: ZedRules) {
    let mut h = Harness::new(EngineConfig {
        zed: acp_proxy::engine::ZedOptions {
            live_child_events: acp_proxy::engine::LiveChildEvents::Flat,
            ..Default::default()
        },
        ..zed_config()
    });
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    child_tool(&mut h, "sp", "c1", "Read");
    let parent = &h.zed.threads[S];
    let flat = parent.card("c1").expect("flat copy in the parent");
    assert!(
        flat.subagent.is_none(),
        "a child's tool call never carries subagent info"
    );
    let child = child_session_id(S, "sp");
    assert_eq!(
        child_entries(&mut h, &child),
        vec!["user:do task", "tool:c1:completed"]
    );
    h.assert_zed_clean();
}

#[test]
fn other_clients_get_the_childs_work_folded_into_the_card() {
    let mut h = Harness::new(EngineConfig::default());
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "other-editor"}}),
    );
    assert_eq!(h.engine.mode(), Some(acp_proxy::engine::Mode::Transcript));
    assert_eq!(
        h.to_agent[0]["params"]["clientCapabilities"]["subagents"],
        json!({}),
        "opt-in on its behalf"
    );
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1, "agentCapabilities": {}}}));
    assert_eq!(
        h.response(id).expect("answered")["result"]["agentCapabilities"],
        json!({}),
        "no loadSession claim"
    );
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
    spawn(&mut h, S, "sp", None, "task");
    child_tool(&mut h, "sp", "c1", "Read a.txt");
    // The child's step is in the parent's thread as it happens, attributed to the card
    // (a client that prints a tool call only when it starts and ends shows it there).
    let step = h.zed.threads[S]
        .card("sp/c1")
        .expect("the step, attributed")
        .clone();
    assert_eq!(step.title, "task › Read a.txt");
    assert_eq!(step.status, "completed");
    assert!(step.subagent.is_none());
    child_text(&mut h, "sp", "All read.");
    complete(&mut h, S, "sp", "completed");
    let parent = &h.zed.threads[S];
    assert_eq!(
        parent.tool_calls().count(),
        2,
        "the spawn card and the child's step: {:#?}",
        parent.entries
    );
    let card = parent.card("sp").expect("card");
    assert!(card.subagent.is_none(), "no Zed meta for other clients");
    assert_eq!(card.status, "completed");
    assert!(card.text.contains("- ✓ Read a.txt"), "{}", card.text);
    assert!(card.text.contains("All read."), "{}", card.text);
    assert!(
        card.text.starts_with("result of sp"),
        "the agent's own result comes first: {}",
        card.text
    );
    assert_eq!(
        card.text.matches("result of sp").count(),
        1,
        "{}",
        card.text
    );
    assert!(
        !parent.entries.iter().any(
            |e| matches!(e, acp_proxy_tools::zed_model::Entry::Assistant(t) if t.contains("All read."))
        ),
        "the child's words are in the card, not in the parent's thread"
    );
    assert!(h.zed.rejected.is_empty());
}

#[test]
fn other_clients_see_a_card_closed_with_the_childs_work_when_the_turn_is_cancelled() {
    let mut h = Harness::new(EngineConfig::default());
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "acpx"}}),
    );
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1, "agentCapabilities": {}}}));
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
    let prompt = h.request(
        "session/prompt",
        json!({"sessionId": S, "prompt": [{"type": "text", "text": "go"}]}),
    );
    spawn(&mut h, S, "sp", None, "task");
    child_tool(&mut h, "sp", "c1", "Find *.txt");
    // The user stops the turn mid-subagent; the agent ends it without a word on the card.
    let before = h.to_client.len();
    h.agent(json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "cancelled"}}));
    let card = h.zed.threads[S].card("sp").expect("card");
    assert_eq!(card.status, "failed", "closed, not left pending");
    assert!(
        card.text.starts_with("Cancelled with the turn"),
        "{}",
        card.text
    );
    assert!(card.text.contains("- ✓ Find *.txt"), "{}", card.text);
    // Before the turn's answer: a client that stops reading there still shows it.
    let sent: Vec<Value> = h.to_client[before..]
        .iter()
        .filter_map(|b| serde_json::from_slice(b).ok())
        .collect();
    let closed_at = sent
        .iter()
        .position(|m| m["params"]["update"]["toolCallId"] == "sp")
        .expect("the card closed");
    let answer_at = sent
        .iter()
        .position(|m| m["id"] == json!(prompt))
        .expect("the turn answered");
    assert!(closed_at < answer_at, "{sent:#?}");
}

#[test]
fn display_off_is_a_pure_relay() {
    let mut h = Harness::new(EngineConfig {
        display: acp_proxy::engine::SubagentDisplay::Off,
        ..EngineConfig::default()
    });
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientInfo": {"name": "zed"}}});
    h.client(init.clone());
    assert_eq!(h.to_agent[0], init);
    let frame = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S,
        "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Task", "_meta": {"claudeCode": {"toolName": "Agent"}}}}});
    h.agent(frame.clone());
    assert_eq!(
        h.to_client.last().expect("sent"),
        &support::engine::line(&frame)
    );
}

#[test]
fn orphan_child_events_stay_in_the_parent_and_are_noted() {
    ZedRules::ALL
        .into_iter()
        .for_each(orphan_child_events_stay_in_the_parent_and_are_noted_under);
}

fn orphan_child_events_stay_in_the_parent_and_are_noted_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    child_text(&mut h, "never-spawned", "lost?");
    assert!(matches!(h.zed.threads[S].entries.last(), Some(Entry::Assistant(t)) if t == "lost?"));
    assert!(
        h.notes.iter().any(|n| n.contains("never-spawned")),
        "{:?}",
        h.notes
    );
    let _ = Value::Null;
    h.assert_zed_clean();
}

fn standard_child_run(h: &mut Harness) {
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "Kid", "state": {"state": "running"}}));
    h.update(
        S,
        json!({"sessionUpdate": "session_message", "messageId": "toolu_9", "senderSessionId": S,
        "recipientSessionId": "kid", "content": [{"type": "text", "text": "do the kid thing"}]}),
    );
    h.update("kid", json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "kid done"}}));
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "state": {"state": "idle", "stopReason": "end_turn"}}));
}

#[test]
fn standard_children_keep_their_card_when_the_parent_is_reopened() {
    ZedRules::ALL
        .into_iter()
        .for_each(standard_children_keep_their_card_when_the_parent_is_reopened_under);
}

fn standard_children_keep_their_card_when_the_parent_is_reopened_under(rules: ZedRules) {
    let spawn = synthesized_spawn_id("kid");
    let child = child_session_id(S, &spawn);
    for agent_replays_announcements in [true, false] {
        let mut h = Harness::new(zed_config());
        start(&mut h, rules, true);
        standard_child_run(&mut h);
        let live = h.zed.threads[S].card(&spawn).cloned().expect("live card");
        let id = h.request(
            "session/load",
            json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
        );
        if agent_replays_announcements {
            standard_child_run(&mut h);
        }
        h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        let cards = h.zed.threads[S].cards();
        assert_eq!(
            cards.len(),
            1,
            "replayed={agent_replays_announcements}: {:#?}",
            h.zed.threads[S].entries
        );
        assert_eq!(cards[0].subagent, live.subagent);
        assert_eq!(cards[0].status, "completed");
        assert_eq!(
            child_entries(&mut h, &child),
            vec!["user:do the kid thing", "agent:kid done"]
        );
    }
    // After a restart, from the store, with a replay that lacks the announcement.
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    standard_child_run(&mut h);
    let mut h2 = Harness::with_store(zed_config(), h.store.clone());
    start(&mut h2, rules, true);
    let id = h2.request(
        "session/load",
        json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
    );
    h2.agent(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    assert_eq!(h2.zed.threads[S].cards().len(), 1);
    assert_eq!(
        child_entries(&mut h2, &child),
        vec!["user:do the kid thing", "agent:kid done"]
    );
    h.assert_zed_clean();
    h2.assert_zed_clean();
}

#[test]
fn the_parents_own_permission_requests_never_wait() {
    ZedRules::ALL
        .into_iter()
        .for_each(the_parents_own_permission_requests_never_wait_under);
}

fn the_parents_own_permission_requests_never_wait_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    // A parent tool call announced first, then its permission request, while a child runs.
    h.update(S, json!({"sessionUpdate": "tool_call", "toolCallId": "p1", "title": "Run tests", "kind": "execute"}));
    h.agent(json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission", "params": {"sessionId": S,
        "toolCall": {"toolCallId": "p1"}, "options": []}}));
    assert_eq!(
        h.zed.requests,
        vec![("session/request_permission".to_owned(), S.to_owned())]
    );
    assert!(h.engine.poll_timeout().is_none(), "nothing held");
    h.assert_zed_clean();
}

#[test]
fn the_parents_tool_call_updates_pass_byte_for_byte_while_a_child_runs() {
    ZedRules::ALL
        .into_iter()
        .for_each(the_parents_tool_call_updates_pass_byte_for_byte_while_a_child_runs_under);
}

fn the_parents_tool_call_updates_pass_byte_for_byte_while_a_child_runs_under(rules: ZedRules) {
    let mut h = Harness::new(zed_config());
    start(&mut h, rules, true);
    spawn(&mut h, S, "sp", None, "task");
    child_tool(&mut h, "sp", "c1", "Read c");
    h.update(S, json!({"sessionUpdate": "tool_call", "toolCallId": "p1", "title": "Run tests", "kind": "execute"}));
    // The parent's own updates, one quoting a child's tool call id deep in its output (the
    // byte test cannot tell where a key sits: that one is parsed, and still stays the parent's).
    let plain = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S,
        "update": {"sessionUpdate": "tool_call_update", "toolCallId": "p1", "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "ok \u{e9} \"q\""}}]}}});
    let quoting = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S,
        "update": {"sessionUpdate": "tool_call_update", "toolCallId": "p1",
        "rawOutput": {"log": [{"toolCallId": "c1"}]}}}});
    for msg in [&plain, &quoting] {
        let sent = support::engine::line(msg);
        h.agent(msg.clone());
        assert_eq!(h.to_client.last(), Some(&sent), "passed unchanged");
    }
    // A child's post-hook update (no parent id) is still attributed by its tool call id.
    let before = h.to_client.len();
    h.update(
        S,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed",
        "_meta": {"claudeCode": {"toolName": "Read"}}}),
    );
    assert_eq!(
        h.to_client.len(),
        before,
        "the child's update stays out of the parent"
    );
    let child = child_session_id(S, "sp");
    assert_eq!(
        child_entries(&mut h, &child),
        vec!["user:do task", "tool:c1:failed"]
    );
    let parent = &h.zed.threads[S];
    assert!(parent.tool_calls().all(|t| t.id != "c1"));
    h.assert_zed_clean();
}

#[test]
fn a_child_stored_under_the_old_id_prefix_still_reopens() {
    use acp_proxy::subagents::ids::{ChildId, ClientSessionId};
    use acp_proxy::subagents::model::{ChildState, TurnRange};
    use acp_proxy::subagents::persist::StoreOp;
    // A store written by a version that named children `acpx-sub-…`.
    let new = child_session_id(S, "sp");
    let old = new.replace("acp-proxy-sub-", "acpx-sub-");
    let store = StoreModel::default();
    store.apply(StoreOp::UpsertChild {
        child_id: ChildId::known(old.clone()),
        parent_session_id: ClientSessionId::new(S.into()),
        spawn_tool_call_id: "sp".into(),
        agent: "claude".into(),
        cwd: None,
        title: Some("task".into()),
        tool_name: Some("Agent".into()),
        state: ChildState::Completed,
    });
    for update in [
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "do task"}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "status": "completed"}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}),
    ] {
        store.apply(StoreOp::AppendUpdate {
            child_id: ChildId::known(old.clone()),
            update: update.to_string().into(),
        });
    }
    store.apply(StoreOp::SetIndices {
        child_id: ChildId::known(old.clone()),
        entry_count: 3,
        turns: vec![TurnRange {
            start: 0,
            end: Some(2),
        }],
    });
    let stored = ["user:do task", "tool:c1:completed", "agent:done"];
    for rules in ZedRules::ALL {
        // The parent reopened: the replayed spawn finds its child under the id it was
        // stored with, and the card names that id.
        let mut h = Harness::with_store(zed_config(), store.clone());
        start(&mut h, rules, true);
        let id = h.request(
            "session/load",
            json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
        );
        spawn(&mut h, S, "sp", None, "task");
        complete(&mut h, S, "sp", "completed");
        h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        let cards = h.zed.threads[S].cards();
        assert_eq!(cards.len(), 1, "{:#?}", h.zed.threads[S].entries);
        let info = cards[0].subagent.clone().expect("a subagent card");
        assert_eq!(info.session_id, old);
        assert_eq!(child_entries(&mut h, &old), stored);
        h.assert_zed_clean();
        // A client that kept the old id opens it directly, without the parent.
        let mut h = Harness::with_store(zed_config(), store.clone());
        start(&mut h, rules, true);
        assert_eq!(child_entries(&mut h, &old), stored);
        h.assert_zed_clean();
    }
    // A new child of the same parent gets the new prefix.
    let mut h = Harness::with_store(zed_config(), store.clone());
    start(&mut h, ZedRules::Main, true);
    spawn(&mut h, S, "sp2", None, "task two");
    let card = h.zed.threads[S].card("sp2").expect("card");
    let info = card.subagent.clone().expect("a subagent card");
    assert!(info.session_id.starts_with("acp-proxy-sub-"), "{info:?}");
}
