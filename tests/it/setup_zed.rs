//! `acp-proxy setup zed`: the `agent_servers` entry, printed or merged into a Zed settings file
//! (JSON with comments) without disturbing what the user wrote; idempotent; refuses what it
//! cannot parse.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::proxy::{Scratch, BIN};
use serde_json::{json, Value};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn setup(s: &Scratch, args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(BIN)
        .current_dir(s.dir.path())
        .env_remove("FLATPAK_XDG_CONFIG_HOME")
        .env("XDG_CONFIG_HOME", s.path("config"))
        .envs(env.iter().copied())
        .args(["setup", "zed"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run acp-proxy setup zed");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A settings file read as Zed reads it (comments and trailing commas allowed).
fn parse_jsonc(text: &str) -> Value {
    jsonc_parser::cst::CstRootNode::parse(text, &Default::default())
        .expect("the file still parses")
        .to_serde_value()
        .expect("the file has a value")
}

/// The files beside `settings` whose names start with its name and `.bak`.
fn backups(settings: &Path) -> Vec<std::path::PathBuf> {
    let name = settings.file_name().unwrap().to_string_lossy().into_owned();
    let mut found: Vec<_> = std::fs::read_dir(settings.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{name}.bak")))
        })
        .collect();
    found.sort();
    found
}

fn claude_entry() -> Value {
    json!({
        "type": "custom",
        "command": BIN,
        "args": ["--", "npx", "--yes", "@agentclientprotocol/claude-agent-acp"],
        "env": {}
    })
}

/// What Zed writes for a new user, plus a few edits of theirs.
const ZED_SETTINGS: &str = r#"// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
//
// To see all of Zed's default settings without changing your
// custom settings, run `zed: open default settings` from the
// command palette (cmd-shift-p / ctrl-shift-p)
{
  "ui_font_size": 16,
  "buffer_font_size": 15,
  /* the theme follows the desktop */
  "theme": {
    "mode": "system",
    "light": "One Light",
    "dark": "One Dark", // trailing comma below
  },
  "vim_mode": true,
}
"#;

#[test]
fn merging_keeps_comments_and_trailing_commas_and_backs_up_first() {
    let s = Scratch::new();
    let settings = s.write("settings.json", ZED_SETTINGS);
    let run = setup(
        &s,
        &["--agent", "claude", "--write", "--settings", &settings],
        &[],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("Added \"Claude (subagents)\""),
        "{}",
        run.stdout
    );

    let text = std::fs::read_to_string(&settings).expect("read");
    // Everything the user wrote is still there, byte for byte, up to the end of their last
    // setting; the entry follows it.
    let kept = ZED_SETTINGS.trim_end().trim_end_matches('}');
    assert!(text.starts_with(kept), "user text changed:\n{text}");
    let value = parse_jsonc(&text);
    assert_eq!(value["agent_servers"]["Claude (subagents)"], claude_entry());
    assert_eq!(value["theme"]["dark"], "One Dark");
    assert!(text.contains("\"env\": {}"), "{text}");

    let saved = backups(Path::new(&settings));
    assert_eq!(saved.len(), 1, "one backup: {saved:?}");
    assert_eq!(std::fs::read_to_string(&saved[0]).unwrap(), ZED_SETTINGS);
    assert!(
        run.stdout.contains(&*saved[0].to_string_lossy()),
        "names the backup"
    );

    // Idempotent: the second run changes nothing and makes no backup.
    let again = setup(
        &s,
        &["--agent", "claude", "--write", "--settings", &settings],
        &[],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("nothing changed"), "{}", again.stdout);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    assert_eq!(backups(Path::new(&settings)).len(), 1);
}

#[test]
fn other_agents_stay_and_an_old_entry_is_brought_up_to_date() {
    let s = Scratch::new();
    let original = r#"{
    // agents I use
    "agent_servers": {
        "My agent": {
            "command": "my-agent",
            "args": ["--acp"], // keep this
        },
        "Claude (subagents)": {
            "type": "custom",
            "command": "/old/place/acp-proxy",
            "args": ["--dump", "/tmp/claude.jsonl", "--", "npx", "@agentclientprotocol/claude-agent-acp"],
            "env": {"ANTHROPIC_LOG": "debug"},
        },
    },
}
"#;
    let settings = s.write("settings.json", original);
    let run = setup(
        &s,
        &["--agent", "claude", "--write", "--settings", &settings],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("Updated \"Claude (subagents)\" in"),
        "{}",
        run.stdout
    );
    // Exactly what changed, key by key; the user's own `--dump` stays.
    let args_before =
        r#"["--dump","/tmp/claude.jsonl","--","npx","@agentclientprotocol/claude-agent-acp"]"#;
    let args_after = r#"["--dump","/tmp/claude.jsonl","--","npx","--yes","@agentclientprotocol/claude-agent-acp"]"#;
    assert!(
        run.stdout.contains(&format!(
            "  command: \"/old/place/acp-proxy\" -> \"{BIN}\"\n"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("  args: {args_before} -> {args_after}\n")),
        "{}",
        run.stdout
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    let value = parse_jsonc(&text);
    assert_eq!(
        value["agent_servers"]["Claude (subagents)"]["args"],
        serde_json::from_str::<Value>(args_after).unwrap()
    );
    assert_eq!(
        text.replace(&format!("\"{BIN}\""), "\"/old/place/acp-proxy\"")
            .replace("\"npx\", \"--yes\",", "\"npx\","),
        original,
        "only the command and the agent's words changed"
    );
    let value = parse_jsonc(&text);
    assert_eq!(value["agent_servers"]["My agent"]["args"], json!(["--acp"]));
    assert_eq!(
        value["agent_servers"]["Claude (subagents)"]["env"],
        json!({"ANTHROPIC_LOG": "debug"}),
        "the user's env is kept"
    );

    // A second agent goes beside them, in the file's own indentation.
    let run = setup(
        &s,
        &["--write", "--settings", &settings, "--", "opencode", "acp"],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(
        text.contains("\n        \"OpenCode (subagents)\": {\n            \"type\": \"custom\","),
        "{text}"
    );
    let value = parse_jsonc(&text);
    assert_eq!(
        value["agent_servers"]["OpenCode (subagents)"]["args"],
        json!(["--", "opencode", "acp"])
    );
    assert_eq!(value["agent_servers"].as_object().unwrap().len(), 3);
}

#[test]
fn an_unparsable_file_is_refused_and_left_alone() {
    let s = Scratch::new();
    for bad in [
        "{\n  \"theme\": \"One Dark\"\n  \"vim_mode\": true\n}\n",
        "{\n  \"agent_servers\": {\n",
        "[\"not\", \"an\", \"object\"]\n",
        "{\"agent_servers\": [\"x\"]}\n",
    ] {
        let settings = s.write("settings.json", bad);
        let run = setup(
            &s,
            &["--agent", "claude", "--write", "--settings", &settings],
            &[],
        );
        assert_ne!(run.code, 0, "{bad:?} accepted:\n{}", run.stdout);
        assert!(
            run.stderr.contains("settings.json was left as it is"),
            "{}",
            run.stderr
        );
        assert_eq!(
            std::fs::read_to_string(&settings).unwrap(),
            bad,
            "file changed"
        );
        assert!(
            backups(Path::new(&settings)).is_empty(),
            "backup made for {bad:?}"
        );
        // Without --write, the entry is printed, and --write is not offered for this file.
        let run = setup(&s, &["--agent", "claude", "--settings", &settings], &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stderr.contains("--write to merge"), "{}", run.stderr);
        assert!(
            run.stderr
                .contains("by hand: --write would leave that file alone, as "),
            "{}",
            run.stderr
        );
    }
    let settings = s.write("settings.json", "{\n  \"a\": 1\n  \"b\": 2\n}\n");
    let run = setup(
        &s,
        &["--agent", "claude", "--write", "--settings", &settings],
        &[],
    );
    assert!(
        run.stderr.contains("line 2 column 9"),
        "says where: {}",
        run.stderr
    );
}

#[test]
fn without_write_it_prints_the_entry_and_touches_nothing() {
    let s = Scratch::new();
    let run = setup(&s, &["--agent", "Claude"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let printed: Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    assert_eq!(
        printed,
        json!({"agent_servers": {"Claude (subagents)": claude_entry()}})
    );
    let default = s.path("config/zed/settings.json");
    assert!(
        run.stderr.contains(&*default.to_string_lossy()),
        "names the file: {}",
        run.stderr
    );
    assert!(!s.path("config").exists(), "nothing written");
}

#[test]
fn the_default_file_is_zeds_and_is_created_when_missing() {
    let s = Scratch::new();
    let run = setup(&s, &["--agent", "codex", "--write"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let file = s.path("config/zed/settings.json");
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("created"))
        .expect("plain JSON");
    assert_eq!(
        value["agent_servers"]["Codex (subagents)"]["args"],
        json!(["--", "npx", "--yes", "@agentclientprotocol/codex-acp"])
    );
    assert!(run.stdout.contains("a new file"), "{}", run.stdout);

    // Without XDG_CONFIG_HOME: ~/.config/zed/settings.json.
    let home = s.path("home");
    let out = Command::new(BIN)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("FLATPAK_XDG_CONFIG_HOME")
        .env("HOME", &home)
        .args(["setup", "zed", "--agent", "gemini"])
        .output()
        .expect("run");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&*home.join(".config/zed/settings.json").to_string_lossy()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_symlinked_settings_file_stays_a_symlink() {
    let s = Scratch::new();
    let real = s.write("dotfiles-settings.json", "{\n  \"vim_mode\": true\n}\n");
    let link = s.path("settings.json");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let run = setup(
        &s,
        &[
            "--agent",
            "claude",
            "--write",
            "--settings",
            &link.to_string_lossy(),
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let value = parse_jsonc(&std::fs::read_to_string(&real).unwrap());
    assert_eq!(value["agent_servers"]["Claude (subagents)"], claude_entry());
}

#[test]
fn list_shows_each_agent_and_how_to_install_what_is_missing() {
    let s = Scratch::new();
    let bin = s.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let gemini = bin.join("gemini");
    std::fs::write(&gemini, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gemini, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = setup(&s, &["--list"], &[("PATH", &bin.to_string_lossy())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for id in [
        "claude",
        "codex",
        "gemini",
        "opencode",
        "qwen",
        "pi",
        "agentpool",
    ] {
        assert!(
            run.stdout.lines().any(|l| l.trim_start().starts_with(id)),
            "{id} missing:\n{}",
            run.stdout
        );
    }
    let line = |id: &str| {
        run.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id}: {}", run.stdout))
            .to_owned()
    };
    assert!(line("gemini").contains(&format!("installed ({})", gemini.display())));
    assert!(line("opencode").contains("not installed: npm install -g opencode-ai"));
    assert!(line("claude").contains("npx --yes @agentclientprotocol/claude-agent-acp"));

    // Setting up a missing agent says how to install it, and still gives the entry.
    let run = setup(
        &s,
        &["--agent", "qwen"],
        &[("PATH", &bin.to_string_lossy())],
    );
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.contains("`qwen` is not on PATH"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("npm install -g @qwen-code/qwen-code"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("Qwen Code (subagents)"),
        "{}",
        run.stdout
    );
}

#[test]
fn names_commands_and_config_in_the_entry() {
    let s = Scratch::new();
    let run = setup(&s, &["--agent", "nonesuch"], &[]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("unknown agent `nonesuch`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("opencode"),
        "lists the known: {}",
        run.stderr
    );

    let run = setup(&s, &[], &[]);
    assert_ne!(run.code, 0, "no agent named");
    assert!(run.stderr.contains("--agent NAME"), "{}", run.stderr);

    // An agent not in the table: named after its program; --name overrides.
    let run = setup(&s, &["--", "npx", "-y", "@acme/coder-acp@2"], &[]);
    let printed: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(
        printed["agent_servers"]["coder-acp (subagents)"]["args"],
        json!(["--", "npx", "-y", "@acme/coder-acp@2"])
    );
    let run = setup(&s, &["--name", "Mine", "--", "my-agent"], &[]);
    let printed: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert!(printed["agent_servers"]["Mine"].is_object(), "{printed}");

    // A --config given to setup is passed on to the proxy Zed starts, as an absolute path.
    let config = s.write("my.toml", "display = \"zed\"\n");
    let out = Command::new(BIN)
        .current_dir(s.dir.path())
        .args(["--config", "my.toml", "setup", "zed", "--agent", "claude"])
        .output()
        .expect("run");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        printed["agent_servers"]["Claude (subagents)"]["args"],
        json!([
            "--config",
            config,
            "--",
            "npx",
            "--yes",
            "@agentclientprotocol/claude-agent-acp"
        ])
    );
}
