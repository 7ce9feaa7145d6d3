//! A child's permission request while Zed has not loaded the child: it goes to the thread Zed
//! knows (the parent's). Zed's main branch upserts a request's tool call into that thread, so
//! there the request names the child's card instead of the child's own tool call; Zed 1.18
//! gets it as the agent sent it.

use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, line, Harness};
use crate::support::frames;
use crate::support::zed_model::ZedRules;

const S: &str = "sess-1";

fn spawn(h: &mut Harness, id: &str, parent_tool: Option<&str>, task: &str) {
    let meta = frames::spawn_meta(parent_tool);
    h.update(S, frames::spawn_call(id, &meta));
    h.update(
        S,
        frames::spawn_task(id, task, &format!("do {task}"), &meta),
    );
}

fn permission(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission", "params": {"sessionId": S,
        "toolCall": {"toolCallId": tool, "title": "ls *.txt", "kind": "execute",
            "rawInput": {"command": "ls *.txt"}},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}})
}

fn title_of(h: &Harness, id: &str) -> String {
    h.zed.threads[S].card(id).expect("card").title.clone()
}

#[test]
fn a_childs_permission_names_its_card_on_zed_main_and_goes_as_sent_to_zed_1_18() {
    for rules in ZedRules::ALL {
        let mut h = Harness::zed_session_under(rules, S);
        spawn(&mut h, "sp", None, "Survey");
        h.update(S, frames::child_tool("sp", "w1", "ls *.txt", "pending"));
        let before = title_of(&h, "sp");
        let perm = permission(5, "w1");
        h.agent(perm.clone());
        assert_eq!(
            h.zed.requests,
            [("session/request_permission".to_owned(), S.to_owned())],
            "{rules:?}"
        );
        match rules {
            ZedRules::V1_18 => {
                assert_eq!(
                    h.to_client.last(),
                    Some(&line(&perm)),
                    "as the agent sent it"
                );
            }
            ZedRules::Main => {
                let sent: Value =
                    serde_json::from_slice(h.to_client.last().expect("sent")).expect("json");
                assert_eq!(
                    sent["params"]["toolCall"],
                    json!({"toolCallId": "sp", "title": "Survey · ls *.txt"})
                );
                assert_eq!(sent["id"], json!(5));
                assert_eq!(
                    title_of(&h, "sp"),
                    "Survey · ls *.txt",
                    "what is asked shows"
                );
            }
        }
        assert!(
            h.zed.threads[S].card("w1").is_none(),
            "{rules:?}: the child's tool call is not in the parent: {:#?}",
            h.zed.threads[S].entries
        );
        // Zed answers: the answer goes to the agent unchanged, the card gets its title back.
        let answer = json!({"jsonrpc": "2.0", "id": 5, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
        h.client(answer.clone());
        assert_eq!(h.to_agent.last(), Some(&answer), "{rules:?}");
        assert_eq!(title_of(&h, "sp"), before, "{rules:?}");
        h.update(S, frames::child_tool("sp", "w1", "ls *.txt", "completed"));
        h.update(S, frames::child_text("sp", "a.txt b.txt"));
        h.update(S, frames::spawn_result("sp", "completed", "a.txt b.txt"));
        assert_eq!(title_of(&h, "sp"), "Survey", "{rules:?}");
        assert!(h.zed.threads[S].card("w1").is_none(), "{rules:?}");
        let child = child_session_id(S, "sp");
        h.load_child(&child);
        assert_eq!(
            entry_lines(&h.zed.threads[&child].entries),
            ["user:do Survey", "tool:w1:completed", "agent:a.txt b.txt"],
            "{rules:?}"
        );
        h.assert_zed_clean();
    }
}

#[test]
fn a_nested_childs_permission_names_the_card_zed_holds_on_zed_main() {
    let mut h = Harness::zed_session_under(ZedRules::Main, S);
    spawn(&mut h, "sp", None, "Outer");
    // The child spawns a child of its own; neither is loaded.
    spawn(&mut h, "inner", Some("sp"), "Inner");
    h.update(S, frames::child_tool("inner", "w2", "ls *.txt", "pending"));
    h.agent(permission(6, "w2"));
    let sent: Value = serde_json::from_slice(h.to_client.last().expect("sent")).expect("json");
    assert_eq!(sent["params"]["sessionId"], json!(S));
    assert_eq!(sent["params"]["toolCall"]["toolCallId"], json!("sp"));
    assert!(h.zed.threads[S].card("w2").is_none());
    assert!(h.zed.threads[S].card("inner").is_none());
    // Once the outer child is loaded, the inner child's card is in its thread: the request
    // names that card there.
    let outer = child_session_id(S, "sp");
    h.load_child(&outer);
    h.update(S, frames::child_tool("inner", "w3", "cat a.txt", "pending"));
    h.agent(permission(7, "w3"));
    let sent: Value = serde_json::from_slice(h.to_client.last().expect("sent")).expect("json");
    assert_eq!(sent["params"]["sessionId"], json!(outer));
    assert_eq!(sent["params"]["toolCall"]["toolCallId"], json!("inner"));
    assert!(h.zed.threads[&outer].card("w3").is_none());
    h.assert_zed_clean();
}

/// A child's permission request for a tool call the proxy has not seen is tied to its child
/// by the parent key inside the tool call (the frame is searched for it, then the tool call).
#[test]
fn a_childs_permission_for_an_unseen_tool_call_finds_its_card_by_the_parent_key() {
    let mut h = Harness::zed_session_under(ZedRules::Main, S);
    spawn(&mut h, "sp", None, "Survey");
    let mut perm = permission(6, "w9");
    perm["params"]["toolCall"]["_meta"] = json!({"claudeCode": {"parentToolUseId": "sp"}});
    h.agent(perm);
    let sent: Value = serde_json::from_slice(h.to_client.last().expect("sent")).expect("json");
    assert_eq!(sent["id"], json!(6), "sent at once, not held");
    assert_eq!(
        sent["params"]["toolCall"],
        json!({"toolCallId": "sp", "title": "Survey · ls *.txt"})
    );
}
