//! Fault matrix, engine level: an agent that breaks the subagent conventions (reused tool call
//! ids, child events before the spawn or after the parent closed, a spawn completed twice,
//! standard children out of order), judged by the Zed model. docs/reliability.md lists the
//! expected behaviour of each case.

use acp_proxy::subagents::ids::{child_session_id, synthesized_spawn_id};
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, line, update_msg, Harness};
use crate::support::frames;

const S: &str = "sess-1";

fn start() -> Harness {
    Harness::zed_session("fake", S)
}

fn spawn(h: &mut Harness, id: &str) {
    let meta = frames::spawn_meta(None);
    h.update(S, frames::spawn_call(id, &meta));
    let task = format!("task {id}");
    h.update(S, frames::spawn_task(id, &task, &format!("do {id}"), &meta));
}

fn child_tool(h: &mut Harness, spawn: &str, id: &str) {
    h.update(
        S,
        frames::child_tool(spawn, id, &format!("Read {id}"), "completed"),
    );
}

fn child_text(h: &mut Harness, spawn: &str, text: &str) -> Value {
    let msg = update_msg(S, frames::child_text(spawn, text));
    h.agent(msg.clone());
    msg
}

fn complete(h: &mut Harness, spawn: &str, status: &str, result: &str) {
    h.update(S, frames::spawn_result(spawn, status, result));
}

fn entries(h: &mut Harness, child: &str) -> Vec<String> {
    h.load_child(child);
    entry_lines(&h.zed.threads[child].entries)
}

fn parent_entries(h: &Harness) -> Vec<String> {
    entry_lines(&h.zed.threads[S].entries)
}

/// Every client-facing line is valid for Zed: no unknown kinds, no updates for sessions Zed
/// does not know, no updates for tool calls it does not have.
fn assert_zed_clean(h: &Harness) {
    assert!(h.zed.rejected.is_empty(), "rejected: {:?}", h.zed.rejected);
    assert!(h.zed.dropped.is_empty(), "dropped: {:?}", h.zed.dropped);
    assert!(
        h.zed.orphan_tool_updates.is_empty(),
        "updates for unknown tool calls: {:?}",
        h.zed.orphan_tool_updates
    );
}

#[test]
fn child_event_before_its_spawn_stays_in_the_parent_later_ones_go_to_the_child() {
    let mut h = start();
    let early = child_text(&mut h, "sp", "too early");
    assert_eq!(
        h.to_client.last(),
        Some(&line(&early)),
        "forwarded unchanged to the parent"
    );
    assert!(
        h.notes.iter().any(|n| n.contains("sp")),
        "noted: {:?}",
        h.notes
    );
    spawn(&mut h, "sp");
    child_text(&mut h, "sp", "on time");
    complete(&mut h, "sp", "completed", "result");
    assert_eq!(parent_entries(&h), ["agent:too early", "tool:sp:completed"]);
    assert_eq!(
        entries(&mut h, &child_session_id(S, "sp")),
        ["user:do sp", "agent:on time"]
    );
    assert_zed_clean(&h);
}

#[test]
fn spawn_completed_twice_keeps_one_result_and_the_first_final_state() {
    let mut h = start();
    spawn(&mut h, "sp");
    child_tool(&mut h, "sp", "c1");
    complete(&mut h, "sp", "completed", "first result");
    let card = h.zed.threads[S].card("sp").expect("card").clone();
    complete(&mut h, "sp", "completed", "second result");
    let again = h.zed.threads[S].card("sp").expect("card").clone();
    assert_eq!(
        again.subagent, card.subagent,
        "the index range does not move"
    );
    assert_eq!(again.status, "completed");
    // A contradicting second completion is shown as the agent sent it (the card is the
    // agent's tool call), but the child thread and its state keep the first outcome.
    complete(&mut h, "sp", "failed", "late failure");
    assert_eq!(h.zed.threads[S].card("sp").expect("card").status, "failed");
    let child = child_session_id(S, "sp");
    assert_eq!(
        entries(&mut h, &child),
        ["user:do sp", "tool:c1:completed", "agent:first result"],
        "the result is recorded once"
    );
    assert_eq!(
        h.store.child(&child).expect("stored child").state.as_str(),
        "completed"
    );
    assert_zed_clean(&h);
}

#[test]
fn reused_spawn_id_continues_the_same_child() {
    let mut h = start();
    spawn(&mut h, "sp");
    child_text(&mut h, "sp", "one");
    complete(&mut h, "sp", "completed", "r1");
    // The agent starts a "new" subagent under the same tool call id.
    spawn(&mut h, "sp");
    child_text(&mut h, "sp", "two");
    complete(&mut h, "sp", "completed", "r2");
    let cards = h.zed.threads[S].cards();
    assert_eq!(cards.len(), 1, "one card: Zed upserts tool calls by id");
    let child = child_session_id(S, "sp");
    assert_eq!(
        h.store.children().len(),
        1,
        "one child for one (session, id)"
    );
    assert_eq!(
        entries(&mut h, &child),
        ["user:do sp", "agent:onetwo"],
        "later events join the same thread; the prompt is recorded once"
    );
    assert_zed_clean(&h);
}

#[test]
fn reused_child_tool_id_stays_with_the_child_that_used_it_first() {
    let mut h = start();
    spawn(&mut h, "sp");
    child_tool(&mut h, "sp", "t1");
    // The parent (no parent id) sends a tool call under the id the child used: attribution
    // by id keeps it with the child, never in both places.
    h.update(
        S,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"}),
    );
    h.update(
        S,
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "parent"}}),
    );
    complete(&mut h, "sp", "completed", "done");
    assert_eq!(parent_entries(&h), ["tool:sp:completed", "agent:parent"]);
    assert_eq!(
        entries(&mut h, &child_session_id(S, "sp")),
        ["user:do sp", "tool:t1:failed", "agent:done"]
    );
    assert_zed_clean(&h);
}

#[test]
fn two_spawns_with_one_child_tool_id_each_keep_their_own_events() {
    let mut h = start();
    spawn(&mut h, "a");
    spawn(&mut h, "b");
    // Both children use tool id "x"; each tagged event goes where its tag says.
    child_tool(&mut h, "a", "x");
    h.update(
        S,
        json!({"sessionUpdate": "tool_call", "toolCallId": "x", "title": "Read x", "kind": "read",
        "status": "failed", "_meta": {"claudeCode": {"toolName": "Read", "parentToolUseId": "b"}}}),
    );
    complete(&mut h, "a", "completed", "ra");
    complete(&mut h, "b", "completed", "rb");
    assert_eq!(
        entries(&mut h, &child_session_id(S, "a")),
        ["user:do a", "tool:x:completed", "agent:ra"]
    );
    assert_eq!(
        entries(&mut h, &child_session_id(S, "b")),
        ["user:do b", "tool:x:failed", "agent:rb"]
    );
    assert_zed_clean(&h);
}

#[test]
fn child_events_after_the_parent_session_closed_still_reach_the_child_thread() {
    let mut h = start();
    spawn(&mut h, "sp");
    let id = h.request("session/close", json!({"sessionId": S}));
    assert_eq!(
        h.to_agent.last().expect("forwarded")["method"],
        "session/close",
        "closing the parent is the agent's business"
    );
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    let before = h.to_client.len();
    child_text(&mut h, "sp", "still working");
    complete(&mut h, "sp", "completed", "late result");
    let child = child_session_id(S, "sp");
    assert!(
        h.to_client[before..]
            .iter()
            .all(|l| !String::from_utf8_lossy(l).contains("still working")),
        "not shown in the closed parent"
    );
    assert_eq!(
        entries(&mut h, &child),
        ["user:do sp", "agent:still working"],
        "kept in the child's thread, which the client can still open"
    );
    assert_eq!(
        h.store.child(&child).expect("stored child").state.as_str(),
        "completed"
    );
}

#[test]
fn standard_child_events_before_the_announcement_are_forwarded_as_sent() {
    let mut h = start();
    let early = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "kid",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "early"}}}});
    h.agent(early.clone());
    assert_eq!(h.to_client.last(), Some(&line(&early)), "unchanged");
    assert_eq!(
        h.zed.dropped,
        [("kid".to_owned(), "agent_message_chunk".to_owned())],
        "Zed drops it: the agent broke the announce-first rule"
    );
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "Kid", "state": {"state": "running"}}));
    h.update(
        "kid",
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}}),
    );
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "state": {"state": "idle", "stopReason": "end_turn"}}));
    h.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "state": {"state": "idle", "stopReason": "end_turn"}}));
    let child = child_session_id(S, &synthesized_spawn_id("kid"));
    assert_eq!(entries(&mut h, &child), ["agent:late"]);
    let cards = h.zed.threads[S].cards();
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].status, "completed");
    assert!(h.zed.rejected.is_empty(), "no subagent_update reaches Zed");
}

#[test]
fn subagent_update_without_a_child_id_is_reported_once_and_not_forwarded() {
    let mut h = start();
    let before = h.to_client.len();
    for _ in 0..3 {
        h.update(
            S,
            json!({"sessionUpdate": "subagent_update", "state": {"state": "running"}}),
        );
    }
    assert_eq!(h.to_client.len(), before, "Zed would reject the kind");
    let reports = h
        .notes
        .iter()
        .filter(|n| n.contains("without a child session id"))
        .count();
    assert_eq!(reports, 1, "{:?}", h.notes);
}

#[test]
fn permission_for_a_child_tool_that_never_comes_is_released_after_the_hold() {
    let mut h = start();
    spawn(&mut h, "sp");
    let req = json!({"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission",
        "params": {"sessionId": S, "toolCall": {"toolCallId": "never"}, "options": []}});
    h.agent(req.clone());
    assert!(
        !h.to_client.contains(&line(&req)),
        "held while it may belong to the child"
    );
    h.advance(10_000);
    // Released to the parent, whose thread does not hold the tool call: Zed would refuse it
    // without a title, so it gets one (and nothing else changes).
    let mut titled = req.clone();
    titled["params"]["toolCall"]["title"] = json!("Tool call");
    assert_eq!(h.to_client.last(), Some(&line(&titled)), "released, titled");
    assert_eq!(
        h.zed.requests,
        [("session/request_permission".to_owned(), S.to_owned())]
    );
    h.client(
        json!({"jsonrpc": "2.0", "id": "p1", "result": {"outcome": {"outcome": "cancelled"}}}),
    );
    assert_eq!(h.to_agent.last().expect("answer")["id"], "p1");
}

#[test]
fn client_cannot_prompt_load_or_cancel_children_it_was_never_given() {
    let mut h = start();
    let sent = h.to_agent.len();
    let bogus = child_session_id("elsewhere", "toolu_x");
    let id = h.load_child(&bogus);
    assert_eq!(h.response(id).expect("answered")["error"]["code"], -32002);
    let id = h.request("session/prompt", json!({"sessionId": bogus, "prompt": []}));
    assert_eq!(h.response(id).expect("answered")["error"]["code"], -32002);
    h.client(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": bogus}}));
    assert_eq!(h.to_agent.len(), sent, "nothing reached the agent");
    assert!(h
        .notes
        .iter()
        .any(|n| n.contains("unknown subagent session")));
}

/// Found by fuzzing the envelope parse: a response with invalid UTF-8 in a key the proxy does
/// not read passed as a valid response and cleared the pending request, although the client
/// (whose decoder rejects the line) never gets an answer. Such a line is not JSON: it is
/// forwarded untouched, and the request still gets its error if the agent dies.
#[test]
fn a_response_that_is_not_valid_utf8_does_not_answer_the_request() {
    let mut h = start();
    let id = h.request("session/prompt", json!({"sessionId": S, "prompt": []}));
    let mut bad =
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}},\"x\":\"?\"}}\n").into_bytes();
    let q = bad.iter().rposition(|b| *b == b'?').expect("placeholder");
    bad[q] = 0xff;
    let mut out = Vec::new();
    h.engine
        .from_agent(&bytes::Bytes::from(bad.clone()), None, 0, &mut out);
    assert_eq!(
        out,
        [acp_proxy::engine::Action::Untouched(bytes::Bytes::from(
            bad
        ))],
        "forwarded untouched"
    );
    assert_eq!(h.engine.pending_client_requests(), 1, "still pending");
    let mut out = Vec::new();
    h.engine.agent_gone("exit status 1", &mut out);
    assert_eq!(out.len(), 1, "the request gets its error");
}
