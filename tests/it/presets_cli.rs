//! Presets from the command line: `acp-proxy presets` lists them, `check-config` names the
//! key of a bad user preset, and a preset written only in a test's `proxy.toml` makes the
//! proxy recognise a made-up agent's subagents end to end.

use std::process::{Command, Stdio};

use crate::support::proxy::{Proxy, Scratch, BIN, FAST_SHUTDOWN};
use serde_json::{json, Value};

fn run(s: &Scratch, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .current_dir(s.dir.path())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run acp-proxy");
    (
        out.status.code().expect("exit code"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A preset for an agent that exists nowhere: its spawns carry `_meta.madeup.tool`, its
/// child events `_meta.madeup.spawnedBy`.
const MADEUP: &str = r#"
[[subagents.preset]]
name = "madeup"
about = "An agent made up for this test"
agents = [{ name = "madeup-agent", versions = ">=3" }]
parent = ["/_meta/madeup/spawnedBy"]
prompt = ["/rawInput/goal"]
result = [{ at = "/content", regex = '^Result: (?P<text>.*)$' }]
[[subagents.preset.spawn]]
when = [{ at = "/_meta/madeup/tool", equals = "handoff" }]
"#;

#[test]
fn presets_lists_shipped_and_configured_presets() {
    let s = Scratch::new();
    let (code, out, err) = run(&s, &["presets"]);
    assert_eq!(code, 0, "{err}");
    for name in [
        "claude",
        "qwen",
        "opencode",
        "codex",
        "gemini",
        "pi",
        "agentpool",
        "dsh",
        "goose",
        "cursor",
    ] {
        assert!(
            out.contains(&format!("\n{name}  (shipped (presets/{name}.toml)")),
            "{name} listed:\n{out}"
        );
    }
    assert!(out.contains("agents:  pi-acp"), "{out}");
    assert!(
        out.contains("spawn:   /toolCallId starts with \"invoke_agent__\" & /kind == \"think\""),
        "{out}"
    );

    let config = s.write(
        "proxy.toml",
        format!("[subagents]\npresets = [\"madeup\", \"pi\"]\n{MADEUP}"),
    );
    let (code, out, err) = run(&s, &["--config", &config, "presets"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("in use: madeup, pi (named"), "{out}");
    assert!(
        out.contains("\nmadeup  (config (subagents.preset[0]))\n  An agent made up for this test\n  agents:  madeup-agent >=3\n  spawn:   /_meta/madeup/tool == \"handoff\""),
        "{out}"
    );
}

#[test]
fn check_config_names_the_key_of_a_bad_preset() {
    let s = Scratch::new();
    let good = s.write("good.toml", MADEUP);
    let (code, out, err) = run(&s, &["check-config", &good]);
    assert_eq!(code, 0, "{err}");
    // The effective settings print the user's preset back as written.
    assert!(
        out.contains("[[subagents.preset]]") && out.contains("name = \"madeup\""),
        "{out}"
    );

    let bad = [
        (
            "[[subagents.preset]]\nname = \"x\"\n[[subagents.preset.spawn]]\nwhen = [{ at = \"/a\", exists = true }, { at = \"/t\", regex = \"(\" }]\ntool_name = \"t\"\n",
            "subagents.preset[0].spawn[0].when[1].regex: invalid regex",
        ),
        (
            "[[subagents.preset]]\nname = \"x\"\n[[subagents.preset.spawn]]\nwhen = [{ at = \"/title\", regex = \"^Delegating\" }]\n",
            "subagents.preset[0].spawn[0].when: no condition gives a literal string",
        ),
        (
            "[[subagents.preset]]\nname = \"x\"\nprompt = [\"rawInput/prompt\"]\n",
            "subagents.preset[0].prompt[0].at: `rawInput/prompt` is not a JSON pointer",
        ),
        (
            "[[subagents.preset]]\nname = \"x\"\nagents = [{ name = \"a\", versions = \"lots\" }]\n",
            "subagents.preset[0].agents[0].versions",
        ),
        (
            "[[subagents.preset]]\nname = \"x\"\nextends = \"nope\"\n",
            "subagents.preset[0].extends: no preset `nope`",
        ),
        ("[subagents]\npresets = [\"nope\"]\n", "subagents.presets"),
        // Caught by the TOML reader, with the line: an unknown key.
        ("[[subagents.preset]]\nname = \"x\"\nwhne = []\n", "whne"),
    ];
    for (text, want) in bad {
        let path = s.write("bad.toml", text);
        let (code, _, err) = run(&s, &["check-config", &path]);
        assert_ne!(code, 0, "{text:?} accepted");
        assert!(err.contains(want), "{text:?}: wants `{want}` in:\n{err}");
        assert!(err.contains("bad.toml"), "names the file: {err}");
    }
}

const ZED_INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{\"fs\":{\"readTextFile\":true,\"writeTextFile\":true},\"terminal\":true},\"clientInfo\":{\"name\":\"zed\",\"version\":\"1.18\"}}}\n";

fn update(u: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": u}})
}

/// Play the made-up agent (3.1.0) through the proxy; returns every message the client got
/// before the prompt's answer, and the proxy (still running).
fn madeup_session(s: &Scratch, config: &str) -> (Vec<Value>, Proxy) {
    let turn = vec![
        json!({"send": update(json!({"sessionUpdate": "tool_call", "toolCallId": "mk1",
            "title": "Hand off", "kind": "other", "status": "pending",
            "rawInput": {"goal": "Count the files"}, "_meta": {"madeup": {"tool": "handoff"}}}))}),
        json!({"send": update(json!({"sessionUpdate": "tool_call", "toolCallId": "mk-c1",
            "title": "ls", "kind": "execute", "status": "completed",
            "_meta": {"madeup": {"spawnedBy": "mk1"}}}))}),
        json!({"send": update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "CHILD-SAYS three files"},
            "_meta": {"madeup": {"spawnedBy": "mk1"}}}))}),
        json!({"send": update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "mk1",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "Result: 3 files"}}]}))}),
        json!({"send": update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "PARENT-SAYS done"}}))}),
    ];
    madeup_turn(s, config, "3.1.0", turn)
}

fn texts_in(msgs: &[Value], session: &str) -> Vec<String> {
    msgs.iter()
        .filter(|m| m.pointer("/params/sessionId").and_then(Value::as_str) == Some(session))
        .filter_map(|m| {
            m.pointer("/params/update/content/text")
                .and_then(Value::as_str)
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_preset_in_proxy_toml_recognises_a_made_up_agents_subagents() {
    let s = Scratch::new();
    let base = format!("display = \"zed\"\n[store]\npath = \"memory\"\n{FAST_SHUTDOWN}");
    let config = s.write("proxy.toml", format!("{base}{MADEUP}"));
    let (got, mut proxy) = madeup_session(&s, &config);
    let card = got
        .iter()
        .find(|m| m.pointer("/params/update/toolCallId") == Some(&json!("mk1")))
        .expect("the spawn reaches the client");
    let meta = &card["params"]["update"]["_meta"];
    assert_eq!(meta["tool_name"], "handoff", "{card}");
    let child = meta["subagent_session_info"]["session_id"]
        .as_str()
        .expect("the spawn is a subagent card")
        .to_owned();
    assert!(
        !got.iter().any(|m| m.to_string().contains("CHILD-SAYS")
            || m.pointer("/params/update/toolCallId") == Some(&json!("mk-c1"))),
        "the child's events stay out of the parent: {got:#?}"
    );
    assert_eq!(texts_in(&got, "s1"), ["PARENT-SAYS done"]);

    // Zed opens the card: the child thread holds the prompt, its work and its answer.
    proxy.send_json(&json!({"jsonrpc": "2.0", "id": 4, "method": "session/load",
        "params": {"sessionId": child, "cwd": "/p", "mcpServers": []}}));
    let mut thread = Vec::new();
    loop {
        let msg = proxy.next_json();
        let done = msg["id"] == 4;
        thread.push(msg);
        if done {
            break;
        }
    }
    assert_eq!(thread.last().map(|m| &m["result"]), Some(&json!({})));
    assert_eq!(
        texts_in(&thread, &child),
        ["Count the files", "CHILD-SAYS three files"],
        "{thread:#?}"
    );
    assert!(thread
        .iter()
        .any(|m| m.pointer("/params/update/toolCallId") == Some(&json!("mk-c1"))));
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0);
    let log = proxy.stderr();
    assert!(
        log.contains("agent `madeup-agent` 3.1.0: subagent presets madeup"),
        "the choice is logged:\n{log}"
    );

    // The same agent without the preset: nothing is recognised, everything stays flat.
    let s = Scratch::new();
    let config = s.write("proxy.toml", &base);
    let (got, mut proxy) = madeup_session(&s, &config);
    assert!(!got
        .iter()
        .any(|m| m.to_string().contains("subagent_session_info")));
    assert_eq!(
        texts_in(&got, "s1"),
        ["CHILD-SAYS three files", "PARENT-SAYS done"]
    );
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0);
    assert!(
        proxy.stderr().contains("no preset names it"),
        "{}",
        proxy.stderr()
    );
}

const TIMED: &str = r#"
[[subagents.preset]]
name = "timed"
about = "An agent whose children's events name no spawn"
agents = [{ name = "madeup-agent" }]
prompt = ["/rawInput/goal"]
timing = true
[[subagents.preset.spawn]]
when = [{ at = "/_meta/madeup/tool", equals = "handoff" }]
"#;

fn handoff(id: &str) -> Value {
    json!({"send": update(json!({"sessionUpdate": "tool_call", "toolCallId": id,
        "title": "Hand off", "kind": "other", "status": "pending",
        "rawInput": {"goal": format!("Goal {id}")}, "_meta": {"madeup": {"tool": "handoff"}}}))})
}

fn said(text: &str) -> Value {
    json!({"send": update(json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text}}))})
}

fn done(id: &str) -> Value {
    json!({"send": update(json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
        "status": "completed"}))})
}

/// One prompt of the made-up agent (`version`) playing `turn`; every message the client got
/// until the prompt's answer, and the proxy (still running).
fn madeup_turn(s: &Scratch, config: &str, version: &str, turn: Vec<Value>) -> (Vec<Value>, Proxy) {
    let mut steps = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true},
            "agentInfo": {"name": "madeup-agent", "version": version}}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "s1"}}),
        json!({"expect": "session/prompt"}),
    ];
    steps.extend(turn);
    steps.push(json!({"reply": {"stopReason": "end_turn"}}));
    let mut proxy = Proxy::start(s.dir.path(), &["--config", config], &s.agent(&steps));
    proxy.send(ZED_INITIALIZE.as_bytes());
    assert_eq!(proxy.next_json()["id"], 1, "initialize answered");
    proxy.send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": "/p", "mcpServers": []}}));
    assert_eq!(proxy.next_json()["result"]["sessionId"], "s1");
    proxy.send_json(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": []}}),
    );
    let mut got = Vec::new();
    loop {
        let msg = proxy.next_json();
        let last = msg["id"] == 3;
        got.push(msg);
        if last {
            break;
        }
    }
    (got, proxy)
}

#[test]
fn timing_attribution_is_opt_in_and_only_while_one_spawn_is_open() {
    let s = Scratch::new();
    let base = format!("display = \"zed\"\n[store]\npath = \"memory\"\n{FAST_SHUTDOWN}");
    let config = s.write("proxy.toml", format!("{base}{TIMED}"));

    // One open spawn: what names no spawn meanwhile is its child's, marked as a guess.
    let turn = vec![
        handoff("h1"),
        said("CHILD-SAYS hi"),
        done("h1"),
        said("PARENT-SAYS done"),
    ];
    let (got, mut proxy) = madeup_turn(&s, &config, "1.0.0", turn.clone());
    assert_eq!(texts_in(&got, "s1"), ["PARENT-SAYS done"], "{got:#?}");
    let child = got
        .iter()
        .find_map(|m| m.pointer("/params/update/_meta/subagent_session_info/session_id"))
        .and_then(Value::as_str)
        .expect("a card")
        .to_owned();
    proxy.send_json(&json!({"jsonrpc": "2.0", "id": 4, "method": "session/load",
        "params": {"sessionId": child, "cwd": "/p", "mcpServers": []}}));
    let mut thread = Vec::new();
    loop {
        let msg = proxy.next_json();
        let last = msg["id"] == 4;
        thread.push(msg);
        if last {
            break;
        }
    }
    assert_eq!(
        texts_in(&thread, &child),
        ["Goal h1", "CHILD-SAYS hi"],
        "{thread:#?}"
    );
    let inferred = thread
        .iter()
        .find(|m| m.to_string().contains("CHILD-SAYS"))
        .expect("the child's words");
    assert_eq!(
        inferred.pointer("/params/update/_meta/acp-proxy/attribution"),
        Some(&json!("timing")),
        "{inferred}"
    );
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0);
    assert!(
        proxy.stderr().contains("attributed to it by timing"),
        "{}",
        proxy.stderr()
    );

    // Two open spawns: nobody can tell whose it is; it stays in the parent.
    let s2 = Scratch::new();
    let config2 = s2.write("proxy.toml", format!("{base}{TIMED}"));
    let two = vec![
        handoff("h1"),
        handoff("h2"),
        said("WHOSE"),
        done("h1"),
        done("h2"),
    ];
    let (got, mut proxy) = madeup_turn(&s2, &config2, "1.0.0", two);
    assert_eq!(texts_in(&got, "s1"), ["WHOSE"], "{got:#?}");
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0);

    // Without the opt-in the same turn leaves the words in the parent.
    let s3 = Scratch::new();
    let config3 = s3.write(
        "proxy.toml",
        format!("{base}{}", TIMED.replace("timing = true\n", "")),
    );
    let (got, mut proxy) = madeup_turn(&s3, &config3, "1.0.0", turn);
    assert_eq!(
        texts_in(&got, "s1"),
        ["CHILD-SAYS hi", "PARENT-SAYS done"],
        "{got:#?}"
    );
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0);
}
