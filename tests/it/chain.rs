//! Proxy-chain mode through the binary: a scripted conductor sends `proxy/initialize`, and
//! everything towards the agent travels wrapped in `proxy/successor`.
//! The `two_links_under_conductor_…` tests run the real reference conductors (ignored here;
//! `scripts/chain-e2e.sh` installs them and runs these).

use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::proxy::{Proxy, Scratch};

fn successor(msg: Value) -> Value {
    let mut inner = json!({"method": msg["method"], "params": msg["params"]});
    if inner["params"].is_null() {
        inner.as_object_mut().map(|o| o.remove("params"));
    }
    let mut wrapped = json!({"jsonrpc": "2.0", "method": "proxy/successor", "params": inner});
    if let Some(id) = msg.get("id") {
        wrapped["id"] = id.clone();
    }
    wrapped
}

fn update(session: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})
}

#[test]
fn a_chain_link_rewrites_subagents_and_routes_both_ways() {
    let s = Scratch::new();
    let mut p = Proxy::start(
        s.dir.path(),
        &["--store", "memory", "--log-level", "warn"],
        &[],
    );

    // proxy/initialize from the conductor: passed on as a wrapped initialize (with the opt-in).
    p.send_json(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "proxy/initialize",
        "params": {"protocolVersion": 1, "clientInfo": {"name": "zed"}, "clientCapabilities": {}}}),
    );
    let wrapped = p.next_json();
    assert_eq!(wrapped["method"], "proxy/successor");
    assert_eq!(wrapped["params"]["method"], "initialize");
    assert_eq!(
        wrapped["params"]["params"]["clientCapabilities"]["subagents"],
        json!({})
    );
    let ours = wrapped["id"].clone();
    assert_ne!(
        ours,
        json!(1),
        "the link's own requests get ids of their own"
    );
    // The successor's result answers the proxy/initialize, protocol version unchanged.
    p.send_json(
        &json!({"jsonrpc": "2.0", "id": ours, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": false}}}),
    );
    let init = p.next_json();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);

    // session/new from the editor side goes on wrapped; its answer comes back unwrapped.
    p.send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}));
    let wrapped = p.next_json();
    assert_eq!(wrapped["params"]["method"], "session/new");
    p.send_json(&json!({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"sessionId": "s1"}}));
    assert_eq!(
        p.next_json(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}})
    );

    // The agent's subagent traffic arrives wrapped: the spawn becomes a card, the child's
    // event stays out of the parent.
    p.send_json(&successor(update(
        "s1",
        json!({"sessionUpdate": "tool_call", "toolCallId": "sp",
        "title": "Task", "kind": "think", "rawInput": {"prompt": "look around"},
        "_meta": {"claudeCode": {"toolName": "Agent"}}}),
    )));
    let card = p.next_json();
    assert_eq!(card["method"], "session/update");
    assert_eq!(
        card["params"]["update"]["_meta"]["subagent_session_info"]["session_id"],
        child_session_id("s1", "sp")
    );
    p.send_json(&successor(update("s1", json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "child words"}, "_meta": {"claudeCode": {"parentToolUseId": "sp"}}}))));
    // A permission request of the agent: sent to the editor with the link's own id, answered
    // back on the wrapped request's id.
    p.send_json(&successor(
        json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
        "params": {"sessionId": "s1", "toolCall": {"toolCallId": "p1"}, "options": []}}),
    ));
    let perm = p.next_json();
    assert_eq!(
        perm["method"], "session/request_permission",
        "the child's words were not forwarded: {perm}"
    );
    assert_ne!(perm["id"], json!(7));
    p.send_json(&json!({"jsonrpc": "2.0", "id": perm["id"], "result": {"outcome": {"outcome": "cancelled"}}}));
    assert_eq!(
        p.next_json(),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "cancelled"}}})
    );

    // Cancellation requests never cross a hop.
    p.send_json(
        &json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}}),
    );
    p.close_stdin();
    assert_eq!(p.rest(), b"", "nothing else was sent");
    assert_eq!(p.exit_code(), 0, "stderr: {}", p.stderr());
}

/// Start a link, let the conductor initialize it and leave; return its stderr.
fn chain_link_log(s: &Scratch, agent: &[String]) -> String {
    let mut p = Proxy::start(
        s.dir.path(),
        &["--store", "memory", "--log-level", "info"],
        agent,
    );
    p.send_json(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "proxy/initialize",
        "params": {"protocolVersion": 1, "clientInfo": {"name": "zed"}, "clientCapabilities": {}}}),
    );
    assert_eq!(p.next_json()["method"], "proxy/successor");
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "stderr: {}", p.stderr());
    p.stderr()
}

#[test]
fn a_chain_link_says_that_it_runs_no_agent() {
    let s = Scratch::new();
    let log = chain_link_log(&s, &[]);
    assert!(!log.contains("demo agent"), "no demo agent is used: {log}");
    assert!(log.contains("the conductor runs the agent"), "{log}");

    // An agent command on the command line is not run, and the link says so.
    let marker = s.p("agent-ran");
    let agent = [
        "sh",
        "-c",
        &format!("touch '{marker}'"),
        "--api-key",
        "sk-hidden",
    ]
    .map(String::from);
    let log = chain_link_log(&s, &agent);
    assert!(!log.contains("demo agent"), "{log}");
    assert!(
        log.contains("is not started") && log.contains("touch"),
        "names the command it does not run: {log}"
    );
    assert!(!log.contains("sk-hidden"), "credentials stay hidden: {log}");
    assert!(!s.path("agent-ran").exists(), "the agent command was run");
}

/// The reference conductor `agent-client-protocol-conductor` at `version`, as
/// `scripts/chain-e2e.sh` installs it (under `$E2E_CACHE`, like the real-agent kits).
fn conductor(version: &str) -> std::path::PathBuf {
    let cache = std::env::var_os("E2E_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("XDG_CACHE_HOME")
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache"))
                })?;
            Some(home.join("acp-proxy-e2e"))
        })
        .expect("E2E_CACHE, XDG_CACHE_HOME or HOME");
    let bin = cache
        .join(format!("conductor-{version}"))
        .join("bin/agent-client-protocol-conductor");
    assert!(
        bin.exists(),
        "{} is missing: scripts/chain-e2e.sh installs it",
        bin.display()
    );
    bin
}

/// What Zed sees of one prompt of the demo agent (two Claude subagents) through `command`:
/// the number of frames it gets, and its parent and child threads after it opened every card.
fn zed_through(p: &mut Proxy) -> (usize, Vec<(String, Vec<String>)>) {
    use crate::support::engine::entry_lines;
    use acp_proxy_tools::zed_model::{initialize_params, ZedModel, ZedRules};
    let mut zed = ZedModel::new(ZedRules::V1_18);
    let mut frames = 0;
    let mut call = |p: &mut Proxy, zed: &mut ZedModel, msg: Value| -> Value {
        zed.client_sent(&msg);
        p.send_json(&msg);
        loop {
            let got = p.next_json();
            zed.received(&got);
            frames += 1;
            if got.get("id") == msg.get("id") && got.get("method").is_none() {
                return got;
            }
        }
    };
    call(
        p,
        &mut zed,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": initialize_params(ZedRules::V1_18)}),
    );
    let new = call(
        p,
        &mut zed,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": "/p", "mcpServers": []}}),
    );
    let sid = new["result"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_owned();
    call(
        p,
        &mut zed,
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "survey"}]}}),
    );
    let cards: Vec<String> = zed.threads[&sid]
        .cards()
        .iter()
        .filter_map(|c| c.subagent.as_ref().map(|s| s.session_id.clone()))
        .collect();
    assert_eq!(cards.len(), 2, "two subagent cards");
    for (n, child) in cards.iter().enumerate() {
        call(
            p,
            &mut zed,
            json!({"jsonrpc": "2.0", "id": 10 + n, "method": "session/load",
            "params": {"sessionId": child, "cwd": "/p", "mcpServers": []}}),
        );
    }
    let mut threads = vec![(sid.clone(), entry_lines(&zed.threads[&sid].entries))];
    for child in cards {
        threads.push((child.clone(), entry_lines(&zed.threads[&child].entries)));
    }
    assert!(zed.unknown_session_requests.is_empty() && zed.rejected.is_empty());
    p.close_stdin();
    (frames, threads)
}

/// Two acp-proxy links in one chain under a real conductor show Zed exactly what one proxy
/// shows: the same frames, the same parent thread, the same child threads in full.
fn two_links_show_what_one_shows(version: &str) {
    let s = Scratch::new();
    let bin = crate::support::proxy::BIN;
    let mut one = Proxy::start(
        s.dir.path(),
        &["--store", "memory"],
        &[bin.to_owned(), "demo-agent".to_owned()],
    );
    let want = zed_through(&mut one);
    let link = format!("{bin} --store memory");
    let mut chain = Proxy::start_program(
        s.dir.path(),
        &conductor(version),
        &[
            "agent".to_owned(),
            link.clone(),
            link,
            format!("{bin} demo-agent"),
        ],
    );
    let got = zed_through(&mut chain);
    assert_eq!(got, want, "conductor {version}: stderr {}", chain.stderr());
}

#[test]
#[ignore = "needs the reference conductors: scripts/chain-e2e.sh installs them and runs this"]
fn two_links_under_conductor_3_6_0_show_what_one_link_shows() {
    two_links_show_what_one_shows("3.6.0");
}

#[test]
#[ignore = "needs the reference conductors: scripts/chain-e2e.sh installs them and runs this"]
fn two_links_under_conductor_5_0_0_show_what_one_link_shows() {
    two_links_show_what_one_shows("5.0.0");
}
