//! `acp-proxy doctor -- <agent>`: the agent is started once with Zed's `initialize` as the
//! proxy forwards it, and the report says what Zed will get; a problem exits non-zero with
//! its fix.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::proxy::{Scratch, BIN};
use serde_json::{json, Value};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn doctor(s: &Scratch, args: &[&str], agent: &[String]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(s.dir.path())
        .env("XDG_STATE_HOME", s.path("state"))
        .env("HOME", s.dir.path())
        .env("XDG_CONFIG_HOME", s.path("config"))
        .arg("doctor")
        .args(args);
    if !agent.is_empty() {
        cmd.arg("--").args(agent);
    }
    let out: Output = cmd
        .stdin(Stdio::null())
        .output()
        .expect("run acp-proxy doctor");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The report line for `what`, with its tag (`ok`, `warn`, `FAIL`, `info`).
fn line<'a>(run: &'a Run, what: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| {
            l.trim_start()
                .split_once(' ')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(&format!("{what}:")))
        })
        .unwrap_or_else(|| panic!("no `{what}` line in:\n{}", run.stdout))
}

fn tag(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

#[test]
fn the_built_in_demo_agent_is_ready_for_zed() {
    let s = Scratch::new();
    let run = doctor(&s, &[], &[BIN.to_owned(), "demo-agent".to_owned()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let agent = line(&run, "agent");
    assert_eq!(tag(agent), "ok", "{agent}");
    assert!(
        agent.contains(&format!(
            "acp-proxy-demo-agent {}",
            env!("CARGO_PKG_VERSION")
        )),
        "name and version from agentInfo: {agent}"
    );
    assert_eq!(tag(line(&run, "protocol version")), "ok");
    assert!(line(&run, "loadSession").contains("yes"), "{}", run.stdout);
    let flavour = line(&run, "Zed gets");
    assert!(flavour.contains("subagent cards"), "{flavour}");
    assert!(flavour.contains("display = \"auto\""), "{flavour}");
    let store = line(&run, "store");
    let store_path = s.path("state/acp-proxy/store.sqlite3");
    assert!(store.contains(&*store_path.to_string_lossy()), "{store}");
    assert!(!store_path.exists(), "the doctor created the store");
    assert!(
        line(&run, "config").contains("built-in defaults"),
        "{}",
        run.stdout
    );
    assert!(line(&run, "dump").contains("off"), "{}", run.stdout);
    // The platform as built (the `portable` feature says so) and Zed's settings on it.
    let platform = line(&run, "platform");
    let expected = if cfg!(feature = "portable") {
        "linux (portable build)"
    } else {
        std::env::consts::OS
    };
    assert!(platform.contains(expected), "{platform}");
    let zed = line(&run, "Zed settings");
    assert!(
        zed.contains(&*s.path("config/zed/settings.json").to_string_lossy()),
        "{zed}"
    );
    assert!(run.stdout.contains("Ready for Zed"), "{}", run.stdout);
}

#[test]
fn the_agent_gets_zeds_initialize_as_the_proxy_forwards_it() {
    let s = Scratch::new();
    let received = s.p("received.jsonl");
    // The doctor's `initialize` has id 0 (recording the line consumes it, so the reply names
    // the id itself).
    let agent = s.agent(&[
        json!({"record": {"path": received, "lines": 1}}),
        json!({"send": {"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": 1,
            "agentInfo": {"name": "@agentclientprotocol/claude-agent-acp", "title": "Claude Agent", "version": "0.101.0"},
            "agentCapabilities": {"promptCapabilities": {}, "sessionCapabilities": {"subagents": {}}}
        }}}),
    ]);
    let run = doctor(&s, &[], &agent);
    assert_eq!(
        run.code, 0,
        "a missing loadSession is a warning:\n{}",
        run.stdout
    );
    let text = std::fs::read_to_string(&received).expect("the agent recorded its input");
    let init: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["clientInfo"]["name"], "zed");
    assert_eq!(init["params"]["protocolVersion"], 1);
    let caps = &init["params"]["clientCapabilities"];
    assert_eq!(
        caps["fs"],
        json!({"readTextFile": true, "writeTextFile": true})
    );
    assert_eq!(caps["terminal"], true);
    assert_eq!(caps["auth"], json!({"terminal": true}), "{init}");
    // What the proxy adds for Zed: the agent is asked for standard subagents.
    assert!(caps["subagents"].is_object(), "{init}");
    assert_eq!(caps["_meta"]["subagent-transcript"], true, "{init}");

    let agent = line(&run, "agent");
    assert!(
        agent.contains("@agentclientprotocol/claude-agent-acp 0.101.0 (\"Claude Agent\")"),
        "{agent}"
    );
    let load = line(&run, "loadSession");
    assert_eq!(tag(load), "warn", "{load}");
    assert!(run
        .stdout
        .contains("fix: use a version of the agent that supports session/load"));
    let subagents = line(&run, "subagents");
    assert_eq!(tag(subagents), "ok", "{subagents}");
    assert!(
        subagents.contains("standard ACP subagents: it advertises `sessionCapabilities.subagents`"),
        "{subagents}"
    );
    let presets = line(&run, "presets");
    assert_eq!(tag(presets), "ok", "{presets}");
    assert!(
        presets.contains("agent `@agentclientprotocol/claude-agent-acp` 0.101.0: subagent presets")
            && presets.contains("claude"),
        "{presets}"
    );
    assert!(run.stdout.contains("with 1 warning"), "{}", run.stdout);
}

#[test]
fn a_missing_agent_fails_with_how_to_install_it() {
    let s = Scratch::new();
    let run = doctor(
        &s,
        &[],
        &["acp-proxy-no-such-agent".to_owned(), "--acp".to_owned()],
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    let program = line(&run, "agent program");
    assert_eq!(tag(program), "FAIL");
    assert!(
        program.contains("`acp-proxy-no-such-agent` is not on PATH"),
        "{program}"
    );
    assert!(run.stdout.contains("1 problem found"), "{}", run.stdout);

    // A known agent's fix is its install command. PATH holds nothing but an empty folder.
    std::fs::create_dir(s.path("empty-bin")).expect("mkdir");
    let out = Command::new(BIN)
        .current_dir(s.dir.path())
        .env("PATH", s.path("empty-bin"))
        .env("XDG_STATE_HOME", s.path("state"))
        .args(["doctor", "--agent", "gemini"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("`gemini` is not on PATH"), "{stdout}");
    assert!(
        stdout.contains("fix: npm install -g @google/gemini-cli"),
        "{stdout}"
    );

    let run = doctor(&s, &["--agent", "nonesuch"], &[]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("unknown agent `nonesuch`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("claude"),
        "lists the known ones: {}",
        run.stderr
    );
}

#[test]
fn an_agent_that_never_answers_is_stopped_at_the_timeout() {
    let s = Scratch::new();
    let config = s.write("fast.toml", crate::support::proxy::FAST_SHUTDOWN);
    let pid_file = s.p("agent.pid");
    let agent = s.agent(&[
        json!({"pid_file": pid_file}),
        json!({"stderr": "loading the model list"}),
        json!({"hang": true}),
    ]);
    let started = Instant::now();
    let run = doctor(&s, &["--config", &config, "--timeout", "1s"], &agent);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let agent_line = line(&run, "agent");
    assert_eq!(tag(agent_line), "FAIL");
    assert!(
        agent_line.contains("no answer to `initialize` in time"),
        "{agent_line}"
    );
    assert!(
        run.stdout.contains("loading the model list"),
        "shows its stderr:\n{}",
        run.stdout
    );
    assert!(run.stdout.contains("--timeout"), "{}", run.stdout);
    crate::support::proxy::assert_gone(
        crate::support::proxy::read_pid(&s.path("agent.pid")),
        "the hung agent",
    );
}

#[test]
fn an_agent_that_exits_or_answers_badly_fails() {
    let s = Scratch::new();
    let run = doctor(
        &s,
        &[],
        &[
            "sh".to_owned(),
            "-c".to_owned(),
            "echo 'Usage: agent [--acp]'; echo 'error: unknown mode' >&2; exit 3".to_owned(),
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    let agent = line(&run, "agent");
    assert!(
        agent.contains("ended without answering `initialize` (exit status 3)"),
        "{agent}"
    );
    assert!(run.stdout.contains("error: unknown mode"), "{}", run.stdout);
    let stdout_line = line(&run, "stdout");
    assert_eq!(tag(stdout_line), "warn");
    assert!(
        stdout_line.contains("Usage: agent [--acp]"),
        "{stdout_line}"
    );

    let agent = s.agent(&[
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 2, "agentCapabilities": {"loadSession": true}}}),
    ]);
    let run = doctor(&s, &[], &agent);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(tag(line(&run, "protocol version")), "FAIL");
    assert_eq!(
        tag(line(&run, "agent")),
        "warn",
        "no agentInfo: {}",
        run.stdout
    );

    let agent = s.agent(&[
        json!({"expect": "initialize"}),
        json!({"reply_error": {"code": -32000, "message": "authentication required"}}),
    ]);
    let run = doctor(&s, &[], &agent);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let agent_line = line(&run, "agent");
    assert_eq!(tag(agent_line), "FAIL");
    assert!(
        agent_line.contains("authentication required"),
        "{agent_line}"
    );
}

#[test]
fn the_config_in_effect_is_reported_and_checked() {
    let s = Scratch::new();
    let demo = [BIN.to_owned(), "demo-agent".to_owned()];
    let config = s.write(
        "off.toml",
        "display = \"off\"\n[dump]\npath = \"/tmp/acp-dump.jsonl\"\nredact = false\n",
    );
    let run = doctor(&s, &["--config", &config], &demo);
    assert_eq!(run.code, 0, "warnings only:\n{}", run.stdout);
    assert!(line(&run, "config").contains(&config), "{}", run.stdout);
    let flavour = line(&run, "Zed gets");
    assert_eq!(tag(flavour), "warn");
    assert!(
        flavour.contains("no subagent cards (display = \"off\")"),
        "{flavour}"
    );
    assert!(line(&run, "store").contains("not used"), "{}", run.stdout);
    let dump = line(&run, "dump");
    assert_eq!(tag(dump), "warn");
    assert!(
        dump.contains("/tmp/acp-dump.jsonl with redaction OFF"),
        "{dump}"
    );

    // `--store memory` is what the proxy would use: reported as such.
    let run = doctor(&s, &["--store", "memory"], &demo);
    assert_eq!(tag(line(&run, "store")), "warn", "{}", run.stdout);

    let bad = s.write("bad.toml", "dispaly = \"zed\"\n");
    let run = doctor(&s, &["--config", &bad], &demo);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(tag(line(&run, "config")), "FAIL");
    assert!(
        run.stdout.contains("dispaly"),
        "names the key:\n{}",
        run.stdout
    );
}

/// `doctor --agent claude` with `npx` and `node` stand-ins first on PATH: npx runs a scripted
/// agent that answers as claude-agent-acp `version`, advertising standard subagents or not.
fn claude_through_npx(s: &Scratch, version: &str, advertises: bool, node: &str) -> Run {
    let caps = if advertises {
        json!({"loadSession": true, "sessionCapabilities": {"subagents": {}}})
    } else {
        json!({"loadSession": true})
    };
    let agent = s.agent(&[
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1,
            "agentInfo": {"name": "@agentclientprotocol/claude-agent-acp", "version": version},
            "agentCapabilities": caps}}),
    ]);
    let bin = s.path("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let script = |name: &str, body: String| {
        use std::os::unix::fs::PermissionsExt;
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    let quoted: Vec<String> = agent.iter().map(|w| format!("'{w}'")).collect();
    // What `setup zed` writes runs `npx --yes <package>`: the stand-in checks it was asked so.
    script(
        "npx",
        format!(
            "[ \"$1\" = --yes ] || {{ echo 'npx: not --yes' >&2; exit 3; }}\nexec {}",
            quoted.join(" ")
        ),
    );
    script("node", format!("echo {node}"));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(BIN)
        .current_dir(s.dir.path())
        .env("PATH", path)
        .env("XDG_STATE_HOME", s.path("state"))
        .env("XDG_CONFIG_HOME", s.path("config"))
        .args(["doctor", "--agent", "claude"])
        .stdin(Stdio::null())
        .output()
        .expect("run acp-proxy doctor");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn an_old_adapter_from_npx_on_an_old_node_is_told_apart() {
    let s = Scratch::new();
    let run = claude_through_npx(&s, "0.49.0", false, "v20.11.1");
    assert_eq!(
        run.code, 0,
        "warnings only:\n{}\n{}",
        run.stdout, run.stderr
    );
    let subagents = line(&run, "subagents");
    assert_eq!(tag(subagents), "warn", "{}", run.stdout);
    assert!(
        subagents.contains("it does not advertise `sessionCapabilities.subagents`"),
        "{subagents}"
    );
    assert!(
        run.stdout
            .contains("0.49.0 is older than 0.71.0, the first Claude adapter that speaks them"),
        "{}",
        run.stdout
    );
    let node = line(&run, "Node.js");
    assert_eq!(tag(node), "warn", "{node}");
    assert!(
        node.contains("v20.11.1: the current Claude adapter needs Node.js 22 or newer"),
        "{node}"
    );
    assert!(!run.stdout.contains("ok    subagents"), "{}", run.stdout);
    assert!(run.stdout.contains("with 2 warnings"), "{}", run.stdout);

    // The current adapter on Node 22: standard subagents, said as such.
    let run = claude_through_npx(&s, "0.101.0", true, "v22.12.0");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(tag(line(&run, "Node.js")), "ok", "{}", run.stdout);
    let subagents = line(&run, "subagents");
    assert_eq!(tag(subagents), "ok", "{subagents}");
    assert!(
        run.stdout.contains("Ready for Zed. Add it with"),
        "{}",
        run.stdout
    );
}

#[test]
fn without_an_agent_it_checks_the_demo_and_names_an_ignored_proxy_toml() {
    let s = Scratch::new();
    s.write("proxy.toml", "display = \"off\"\n");
    let run = doctor(&s, &[], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("no agent given, so the built-in demo agent"),
        "{}",
        run.stdout
    );
    assert!(
        line(&run, "agent").contains("acp-proxy-demo-agent"),
        "{}",
        run.stdout
    );
    let ignored = line(&run, "./proxy.toml");
    assert!(ignored.contains("proxy.toml is ignored"), "{ignored}");
    assert!(ignored.contains("--config ./proxy.toml"), "{ignored}");
    // The working directory's file did not apply: Zed still gets cards.
    assert!(
        line(&run, "Zed gets").contains("subagent cards"),
        "{}",
        run.stdout
    );
}
