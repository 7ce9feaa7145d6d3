//! The standard output (`display = "acp"`) with the real agents: each kit's scenarios run
//! through the proxy for a client that speaks standard ACP subagents (it advertises
//! `clientCapabilities.subagents`), judged by the standard client model the unit tests use
//! (`tests/it/support/standard.rs`: every frame against the ACP schema, children announced
//! before their traffic, messages and session references that name known sessions).
//!
//! What must hold, per scenario: no problem the model lists, beyond what the agent's own
//! frames carry (`ALLOWED`); the main agent's words and the end of the turn; one child per
//! subagent of the scenario, each titled and ended (`idle`, or `running` for a background
//! child the wire never ends); where the kit's expectations say the agent sends them, the
//! child's own tool calls in its session and its answer to the parent as a message.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::clients::{Agent, Setup};
use crate::kits::{self, Kit};

// The model is the integration tests' own; this crate uses part of it.
#[allow(dead_code, unreachable_pub)]
#[path = "../it/support/standard.rs"]
mod model;

const PROXY: &str = env!("CARGO_BIN_EXE_acp-proxy");
const QUIET: Duration = Duration::from_millis(1500);

/// Problems of the agent's own frames that the model lists for any client (the proxy relays
/// them as they are): a piece of the problem's text.
const ALLOWED: &[&str] = &[
    // Claude 0.23.1's usage_update with `used: null`.
    "usage_update",
    // Extension notifications and methods the schema does not know (Qwen's
    // `craft/drainMidTurnQueue`, `qwen/notify/…`).
    "unknown method",
    // Codex 2.6.0's own announcement (relayed as sent) says `cancel: null`.
    r#""capabilities":{"cancel":null}"#,
];

/// Problems of one kit's own frames, as [`ALLOWED`] but for that kit alone: (kit, a piece of
/// the problem's text).
const ALLOWED_FOR: &[(&str, &str)] = &[
    // Cline 3.0.65 sends a spawn's `tool_call_update` (with its permission request) before the
    // `tool_call`; the standard output relays the agent's own tool calls as sent.
    ("cline", "before its tool_call"),
    // Copilot 1.0.102 sends `available_commands_update` before its `session/new` answer.
    (
        "copilot",
        "`available_commands_update` for a session the client was not told of",
    ),
];

/// One scenario of a kit, as a standard client: the problems found.
fn scenario(kit: &Kit, name: &'static str, scenario: &str) -> Result<Vec<String>> {
    let mut setup = Setup::new(Agent::Kit(name), scenario)?;
    // Kept unless the run passes (a failure says where).
    setup.dir.disable_cleanup(true);
    eprintln!("standard {name} {scenario}: {}", setup.dir.path().display());
    std::fs::write(
        setup.dir.path().join("proxy.toml"),
        "display = \"acp\"\n[dump]\nredact = false\n",
    )?;
    let home = setup.home.join("standard");
    std::fs::create_dir_all(&home)?;
    let mut cmd = Command::new(PROXY);
    cmd.arg("--config")
        .arg(setup.dir.path().join("proxy.toml"))
        .arg("--dump")
        .arg(setup.dir.path().join("dump.jsonl"))
        .arg("--store")
        .arg(setup.dir.path().join("store.sqlite3"))
        .arg("--")
        .arg("bash")
        .arg(kit.dir.join("launch.sh"))
        .current_dir(setup.dir.path())
        .env("E2E_CACHE", &setup.cache)
        .env("E2E_HOME", &home)
        .env("E2E_WORKSPACE", &setup.workspace)
        .env("E2E_SCENARIO", scenario)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(setup.dir.path().join("stderr.log"))?);
    if let Some(url) = &setup.model_url {
        cmd.env("E2E_MODEL_URL", url);
    }
    if kit.toml.proxy_home {
        cmd.env("HOME", &home);
    }
    let mut proxy = cmd.spawn().context("start the proxy")?;
    let mut stdin = proxy.stdin.take().context("stdin")?;
    let stdout = proxy.stdout.take().context("stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut client = model::StandardClient::default();
    let terminals = std::cell::RefCell::new(HashMap::new());
    let mut send = |client: &mut model::StandardClient, msg: Value| -> Result<()> {
        client.client_sent(&msg);
        writeln!(stdin, "{msg}")?;
        Ok(stdin.flush()?)
    };
    let deadline = Instant::now() + Duration::from_secs(kit.toml.timeout_secs);
    let mut answers: Vec<Value> = Vec::new();
    let pump = |client: &mut model::StandardClient,
                send: &mut dyn FnMut(&mut model::StandardClient, Value) -> Result<()>,
                until: &dyn Fn(&[Value]) -> bool,
                answers: &mut Vec<Value>,
                quiet: Option<Duration>|
     -> Result<()> {
        let mut last = Instant::now();
        loop {
            if until(answers) {
                return Ok(());
            }
            let now = Instant::now();
            if now > deadline {
                bail!("no answer within {}s", kit.toml.timeout_secs);
            }
            let wait = match quiet {
                Some(q) if now >= last + q => return Ok(()),
                Some(q) => last + q - now,
                None => deadline - now,
            };
            let Ok(line) = rx.recv_timeout(wait) else {
                if quiet.is_some() {
                    return Ok(());
                }
                continue;
            };
            last = Instant::now();
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                client
                    .problems
                    .push(format!("a line that is not JSON: {line}"));
                continue;
            };
            client.received(&msg);
            match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                (Some(method), Some(id)) => {
                    let reply = serve(&setup, &mut terminals.borrow_mut(), method, &msg["params"]);
                    let answer = match reply {
                        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
                        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
                    };
                    send(client, answer)?;
                }
                (None, Some(_)) => answers.push(msg),
                _ => {}
            }
        }
    };
    let answered = |id: u64| move |a: &[Value]| a.iter().any(|m| m["id"] == id);
    send(
        &mut client,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true, "subagents": {}},
            "clientInfo": {"name": "standard-client", "version": "1"}}}),
    )?;
    pump(&mut client, &mut send, &answered(1), &mut answers, None)?;
    send(
        &mut client,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
            "params": {"cwd": setup.workspace, "mcpServers": []}}),
    )?;
    pump(&mut client, &mut send, &answered(2), &mut answers, None)?;
    let sid = answers
        .iter()
        .find(|a| a["id"] == 2)
        .and_then(|a| a.pointer("/result/sessionId"))
        .and_then(Value::as_str)
        .context("session/new answered without a session")?
        .to_owned();
    send(
        &mut client,
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid,
            "prompt": [{"type": "text", "text": format!("SCENARIO:{scenario} survey the text files")}]}}),
    )?;
    pump(&mut client, &mut send, &answered(3), &mut answers, None)?;
    // After the turn: a background child's work and the main agent's follow-up.
    let background = scenario == "background";
    let extra = if background {
        Duration::from_secs(8)
    } else {
        QUIET
    };
    pump(
        &mut client,
        &mut send,
        &|_: &[Value]| false,
        &mut answers,
        Some(extra),
    )?;
    let _ = proxy.kill();
    let _ = proxy.wait();

    let mut problems: Vec<String> = client
        .problems
        .iter()
        .filter(|p| !ALLOWED.iter().any(|a| p.contains(a)))
        .filter(|p| !ALLOWED_FOR.iter().any(|(k, a)| *k == name && p.contains(a)))
        .cloned()
        .collect();
    let stop = answers
        .iter()
        .find(|a| a["id"] == 3)
        .and_then(|a| a.pointer("/result/stopReason"))
        .and_then(Value::as_str);
    if stop != Some("end_turn") {
        problems.push(format!("the turn ended with {stop:?}"));
    }
    let parent = client.session(&sid).lines().join("\n");
    if !parent.contains("MAIN-") {
        problems.push(format!("no MAIN- words in the parent: {parent}"));
    }
    let tags = kits::tags(scenario);
    let children = client.children_of(&sid);
    if children.len() != tags.len() {
        problems.push(format!(
            "{} children announced, {} subagents in the scenario",
            children.len(),
            tags.len()
        ));
    }
    let e = kit.expect;
    for c in &children {
        let s = client.session(c);
        let lines = s.lines();
        let state = s.state_line();
        let open_ok = background && (state == "running" || e.background_open);
        if state != "idle:end_turn" && !open_ok {
            problems.push(format!("child {c} ended as {state}: {lines:?}"));
        }
        // Codex announces its children with a description and no title.
        if s.title
            .as_deref()
            .or(s.description.as_deref())
            .is_none_or(str::is_empty)
        {
            problems.push(format!("child {c} has neither title nor description"));
        }
        if e.child_tools_in.contains(&scenario) && !lines.iter().any(|l| l.starts_with("tool:")) {
            problems.push(format!("child {c} shows none of its tool calls: {lines:?}"));
        }
        // As a message to the parent (a translated wire), or in the child's own session (an
        // agent that speaks standard subagents sends what it sends).
        let answered = client
            .session(&sid)
            .lines()
            .iter()
            .any(|l| l.starts_with(&format!("message:{c}->")) && l.contains("SUB-ANSWER"))
            || lines.iter().any(|l| l.contains("SUB-ANSWER"));
        if e.child_answer_in.contains(&scenario) && !background && !answered {
            problems.push(format!(
                "child {c}'s answer is no message to the parent: {parent}"
            ));
        }
    }
    // What the kit's rows name with the check `standard` and mark as showing in some runs only
    // (two children's words interleave differently from run to run) does not fail the run.
    problems.retain(|p| {
        let known = e.known_bugs.iter().find(|b| {
            b.sometimes && b.check == "standard" && b.applies(scenario) && p.contains(b.detail)
        });
        if let Some(b) = known {
            eprintln!("known bug [standard] {name} {scenario}: {p} ({})", b.note);
        }
        known.is_none()
    });
    if problems.is_empty() {
        setup.dir.disable_cleanup(false);
    }
    Ok(problems)
}

/// What a standard client answers to a request from the agent side: permissions allowed
/// once, files of the project read and written; anything else unsupported.
/// A client's answer to the agent's request: permissions allowed once, files of the project,
/// terminals run to their end with `sh -c` (as the Zed client of the kits does).
fn serve(
    setup: &Setup,
    terminals: &mut HashMap<String, crate::client::Terminal>,
    method: &str,
    p: &Value,
) -> std::result::Result<Value, Value> {
    let path = || -> std::result::Result<std::path::PathBuf, Value> {
        let path = std::path::PathBuf::from(p["path"].as_str().unwrap_or(""));
        if path.starts_with(&setup.workspace) {
            Ok(path)
        } else {
            Err(json!({"code": -32602, "message": "outside the project"}))
        }
    };
    match method {
        "session/request_permission" => {
            let options = p["options"].as_array().cloned().unwrap_or_default();
            let pick = options
                .iter()
                .find(|o| o["kind"] == "allow_once")
                .or_else(|| options.iter().find(|o| o["kind"] == "allow_always"))
                .or_else(|| options.first());
            match pick.and_then(|o| o["optionId"].as_str()) {
                Some(id) => Ok(json!({"outcome": {"outcome": "selected", "optionId": id}})),
                None => Err(json!({"code": -32602, "message": "no options"})),
            }
        }
        "fs/read_text_file" => std::fs::read_to_string(path()?)
            .map(|content| json!({"content": content}))
            .map_err(|e| json!({"code": -32603, "message": e.to_string()})),
        "fs/write_text_file" => std::fs::write(path()?, p["content"].as_str().unwrap_or(""))
            .map(|()| json!({}))
            .map_err(|e| json!({"code": -32603, "message": e.to_string()})),
        "terminal/create" => {
            let id = format!("term-{}", terminals.len() + 1);
            terminals.insert(id.clone(), crate::client::run_terminal(p, &setup.workspace));
            Ok(json!({"terminalId": id}))
        }
        "terminal/output" | "terminal/wait_for_exit" => {
            let id = p["terminalId"].as_str().unwrap_or("");
            let Some(t) = terminals.get(id) else {
                return Err(json!({"code": -32602, "message": format!("no terminal {id}")}));
            };
            let exit = json!({"exitCode": t.exit_code, "signal": null});
            if method == "terminal/output" {
                Ok(json!({"output": t.output, "truncated": false, "exitStatus": exit}))
            } else {
                Ok(exit)
            }
        }
        "terminal/kill" => Ok(json!({})),
        "terminal/release" => {
            terminals.remove(p["terminalId"].as_str().unwrap_or(""));
            Ok(json!({}))
        }
        _ => Err(json!({"code": -32601, "message": format!("{method} is not supported")})),
    }
}

/// The scenarios a standard client runs: the kit's `two` (two children to tell apart), else
/// its first, so that the suite stays short; `E2E_STANDARD_SCENARIOS=all` runs every one.
fn standard_scenarios(kit: &Kit) -> Vec<String> {
    let all = kit.toml.scenarios.clone();
    if std::env::var("E2E_STANDARD_SCENARIOS").is_ok_and(|v| v == "all") {
        return all;
    }
    let pick = all.iter().find(|s| *s == "two").or(all.first()).cloned();
    pick.into_iter().collect()
}

/// A kit's scenarios as a standard client (see [`standard_scenarios`]).
pub(crate) fn kit(name: &'static str) {
    let result = (|| -> Result<Vec<String>> {
        crate::run::isolated()?;
        let kit = Kit::load(name)?;
        let mut failures = Vec::new();
        for s in standard_scenarios(&kit) {
            for p in scenario(&kit, name, &s).with_context(|| format!("scenario {s}"))? {
                failures.push(format!("[{s}] {p}"));
            }
            eprintln!("standard {name} {s}: done");
        }
        Ok(failures)
    })();
    match result {
        Ok(f) if f.is_empty() => {}
        Ok(f) => panic!("e2e standard {name}:\n  {}", f.join("\n  ")),
        Err(e) => panic!("e2e standard {name}: {e:#}"),
    }
}
