//! The folded view (`transcript`) of a reopened parent with a real agent, as a client that
//! shows a `session/load` replay reads it: the suite's client (`client.rs`) with an
//! `initialize` that advertises no subagents and is not Zed's, so `auto` picks the folded
//! view. One turn, then a fresh process (the client restarted) loads the parent; the same
//! with and without the proxy, side by side.
//!
//! What must hold: through the proxy the reopened parent shows every tool call it showed
//! live (each child's card with its answer once and its log, each child's step attributed to
//! it), and every tool call the agent alone replays, with the same status.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::client::Client;
use crate::clients::{Agent, Setup};
use crate::kits;
use crate::zed::ZedRules;

const PROXY: &str = env!("CARGO_BIN_EXE_acp-proxy");
const TIMEOUT: Duration = Duration::from_secs(120);
const QUIET: Duration = Duration::from_millis(1500);

/// A tool call of the parent's thread as the client last saw it: id, title, status, text.
pub(crate) type Shown = (String, String, String, String);

/// The parent's tool calls after the turn, and after a fresh process reopened the parent.
pub(crate) struct Reopened {
    pub(crate) live: Vec<Shown>,
    pub(crate) reopened: Vec<Shown>,
}

fn initialize_params() -> Value {
    json!({"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true},
        "clientInfo": {"name": "e2e-folded-client", "version": "1"}})
}

fn start(setup: &Setup, kit: &str, proxied: bool, phase: &str) -> Result<Client> {
    let side = if proxied { "proxy" } else { "raw" };
    let launch = kits::root().join("agents").join(kit).join("launch.sh");
    let path = |name: &str| -> PathBuf { setup.dir.path().join(format!("folded-{side}-{name}")) };
    let mut cmd = if proxied {
        let mut c = Command::new(PROXY);
        c.arg("--dump")
            .arg(path(&format!("dump-{phase}.jsonl")))
            .arg("--store")
            .arg(path("store.sqlite3"))
            .arg("--")
            .arg("bash")
            .arg(&launch);
        c
    } else {
        let mut c = Command::new("bash");
        c.arg(&launch);
        c
    };
    // The agent's home is the side's, across both phases (the agent finds its session there).
    let home = setup.home.join(format!("folded-{side}"));
    std::fs::create_dir_all(&home)?;
    cmd.current_dir(setup.dir.path())
        .env("E2E_CACHE", &setup.cache)
        .env("E2E_HOME", &home)
        .env("E2E_WORKSPACE", &setup.workspace)
        .env("E2E_SCENARIO", &setup.scenario);
    if let Some(url) = &setup.model_url {
        cmd.env("E2E_MODEL_URL", url);
    }
    let mut c = Client::start(
        cmd,
        &path(&format!("stderr-{phase}.log")),
        &path(&format!("client-{phase}.jsonl")),
        ZedRules::V1_18,
        &setup.workspace,
    )?;
    let r = c
        .call("initialize", initialize_params(), Instant::now() + TIMEOUT)
        .with_context(|| format!("initialize ({side}, {phase})"))?;
    if r.pointer("/agentCapabilities/loadSession") != Some(&Value::Bool(true)) {
        bail!("the agent does not load sessions ({side}): {r}");
    }
    Ok(c)
}

fn shown(c: &Client, parent: &str) -> Vec<Shown> {
    let mut calls: Vec<Shown> = c
        .zed
        .threads
        .get(parent)
        .map(|t| {
            t.tool_calls()
                .map(|t| {
                    (
                        t.id.clone(),
                        t.title.clone(),
                        t.status.clone(),
                        t.text.clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    calls.sort();
    calls
}

/// The scenario's turn, then the parent reopened by a fresh process.
pub(crate) fn turn_and_reopen(setup: &Setup, kit: &str, proxied: bool) -> Result<Reopened> {
    let deadline = Instant::now() + TIMEOUT;
    let mut c = start(setup, kit, proxied, "live")?;
    let new = c.call(
        "session/new",
        json!({"cwd": setup.workspace, "mcpServers": []}),
        deadline,
    )?;
    let parent = new["sessionId"]
        .as_str()
        .context("session/new gave no sessionId")?
        .to_owned();
    let prompt = json!({"sessionId": parent, "prompt": [{"type": "text",
        "text": format!("SCENARIO:{} survey the text files", setup.scenario)}]});
    let r = c.call("session/prompt", prompt, deadline)?;
    if r["stopReason"] != "end_turn" {
        bail!("the turn ended with {r}");
    }
    c.pump_quiet(QUIET, deadline)?;
    let live = shown(&c, &parent);
    // The client quits; an agent that outlives its stdin goes with the process group.
    let _ = c.close(Instant::now() + Duration::from_secs(5));
    let mut c = start(setup, kit, proxied, "reopen")?;
    let load = json!({"sessionId": parent, "cwd": setup.workspace, "mcpServers": []});
    c.call("session/load", load, deadline)?;
    c.pump_quiet(QUIET, deadline)?;
    let reopened = shown(&c, &parent);
    let _ = c.close(Instant::now() + Duration::from_secs(5));
    Ok(Reopened { live, reopened })
}

/// Problems with the reopened parent through the proxy, against its live turn and the agent
/// alone; `tags`: the scenario's subagents (each answer shown once).
pub(crate) fn compare(raw: &Reopened, proxied: &Reopened, tags: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for call in &proxied.live {
        if !proxied.reopened.contains(call) {
            problems.push(format!("shown live, not once reopened: {call:?}"));
        }
    }
    // By title: the two sides' tool call ids need not match (the model stand-in numbers them
    // across both).
    for (_, title, status, _) in &raw.reopened {
        if !proxied
            .reopened
            .iter()
            .any(|c| &c.1 == title && &c.2 == status)
        {
            problems.push(format!(
                "`{title}` ({status}) is replayed without the proxy, not with it"
            ));
        }
    }
    for tag in tags {
        let answer = format!("SUB-ANSWER {tag}:");
        let n: usize = proxied
            .reopened
            .iter()
            .map(|c| c.3.matches(&answer).count())
            .sum();
        if n != 1 {
            problems.push(format!("`{answer}` shown {n} times in the reopened parent"));
        }
    }
    let steps = proxied
        .reopened
        .iter()
        .filter(|c| c.1.contains(" › "))
        .count();
    if steps < tags.len() {
        problems.push(format!(
            "{steps} attributed steps in the reopened parent, {} subagents",
            tags.len()
        ));
    }
    problems
}

/// Both sides of one kit's scenario.
pub(crate) fn check(kit: &'static str, scenario: &str, tags: &[&str]) -> Result<()> {
    let setup = Setup::new(Agent::Kit(kit), scenario)?;
    let raw = turn_and_reopen(&setup, kit, false)?;
    let proxied = turn_and_reopen(&setup, kit, true)?;
    let problems = compare(&raw, &proxied, tags);
    let show = |what: &str, calls: &[Shown]| {
        eprintln!("===== {what}");
        for c in calls {
            eprintln!("{c:?}");
        }
    };
    if std::env::var("E2E_SHOW").as_deref() == Ok("1") || !problems.is_empty() {
        show("raw, reopened", &raw.reopened);
        show("proxied, live", &proxied.live);
        show("proxied, reopened", &proxied.reopened);
    }
    if problems.is_empty() {
        eprintln!("folded view reopened ({kit} {scenario}): ok");
        Ok(())
    } else {
        bail!(
            "folded view reopened ({kit} {scenario}):\n  {}",
            problems.join("\n  ")
        )
    }
}
