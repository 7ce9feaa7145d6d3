//! What the user-facing subcommands print: `check-config` the effective settings as TOML that
//! reads back, `completions` a script for the shell.

use std::process::{Command, Stdio};

use crate::support::proxy::{Scratch, BIN};

fn run(s: &Scratch, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .current_dir(s.dir.path())
        .env("XDG_STATE_HOME", s.path("state"))
        // The user's own config must not leak into what the test sees.
        .env("XDG_CONFIG_HOME", s.path("config"))
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

#[test]
fn check_config_prints_toml_that_reads_back() {
    let s = Scratch::new();
    let config = s.write(
        "mine.toml",
        "display = \"zed\"\n[store]\nmax_age = \"12h\"\n[subagents]\npresets = [\"qwen\"]\n",
    );
    let (code, stdout, stderr) = run(&s, &["check-config", &config]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with(&format!("# {config} (given on the command line): ok\n")),
        "{stdout}"
    );
    let table: toml::Table = toml::from_str(&stdout).expect("stdout is TOML");
    assert_eq!(table["display"].as_str(), Some("zed"));
    assert_eq!(table["store"]["max_age"].as_str(), Some("12h"));
    assert_eq!(
        table["store"]["max_bytes"].as_str(),
        Some("512MiB"),
        "defaults filled in"
    );
    let store = s.path("state/acp-proxy/store.sqlite3");
    assert_eq!(
        table["store"]["path"].as_str(),
        Some(&*store.to_string_lossy()),
        "where the store goes"
    );
    assert_eq!(
        table["subagents"]["presets"].as_array().map(Vec::len),
        Some(1)
    );

    // Fed back as a config, it gives the same settings.
    let again = s.write("again.toml", &stdout);
    let (code, stdout2, stderr) = run(&s, &["check-config", &again]);
    assert_eq!(code, 0, "{stderr}");
    let body = |t: &str| t.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&stdout2), body(&stdout));

    // Global flags are part of the effective settings; without a file, the defaults.
    let (code, stdout, _) = run(
        &s,
        &["--store", "memory", "--log-level", "debug", "check-config"],
    );
    assert_eq!(code, 0);
    assert!(stdout.starts_with("# built-in defaults (no "), "{stdout}");
    let table: toml::Table = toml::from_str(&stdout).expect("TOML");
    assert_eq!(table["store"]["path"].as_str(), Some("memory"));
    assert_eq!(table["log_level"].as_str(), Some("debug"));
}

#[test]
fn completions_cover_the_subcommands() {
    let s = Scratch::new();
    for shell in ["bash", "zsh", "fish"] {
        let (code, stdout, stderr) = run(&s, &["completions", shell]);
        assert_eq!(code, 0, "{shell}: {stderr}");
        for word in ["setup", "doctor", "check-config", "settings", "timeout"] {
            assert!(stdout.contains(word), "{shell} script lacks {word}");
        }
    }
    let (code, _, stderr) = run(&s, &["completions", "tcsh"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("tcsh"), "{stderr}");
    // A reader that stops early is not a crash.
    let out = Command::new("sh")
        .args([
            "-c",
            &format!("'{BIN}' completions bash | head -c 10 >/dev/null; echo ok"),
        ])
        .output()
        .expect("sh");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each command's help lists only the flags that mean something to it, and a flag given
/// before a command that does not take it is refused by name.
#[test]
fn each_command_shows_only_the_flags_it_takes() {
    let s = Scratch::new();
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (
            &["completions"],
            &[],
            &["--config", "--log-level", "--store"],
        ),
        (&["presets"], &["--config"], &["--log-level", "--store"]),
        (
            &["dump", "html"],
            &["--config"],
            &["--log-level", "--store"],
        ),
        (&["replay"], &["--config"], &["--log-level", "--store"]),
        (&["doctor"], &["--config", "--store"], &["--log-level"]),
        (
            &["setup", "zed"],
            &["--config"],
            &["--log-level", "--store"],
        ),
        (
            &["store", "stats"],
            &["--config", "--log-level", "--store"],
            &[],
        ),
        (
            &["check-config"],
            &["--config", "--log-level", "--store"],
            &[],
        ),
        (&["demo"], &[], &["--config", "--log-level", "--store"]),
    ];
    for (command, shown, hidden) in cases {
        let mut args = command.to_vec();
        args.push("--help");
        let (code, help, _) = run(&s, &args);
        assert_eq!(code, 0, "{args:?}");
        for flag in *shown {
            assert!(
                help.contains(&format!("{flag} <")),
                "{command:?} lacks {flag}:\n{help}"
            );
        }
        for flag in *hidden {
            assert!(
                !help.contains(&format!("{flag} <")),
                "{command:?} shows {flag}:\n{help}"
            );
        }
    }
    let (code, _, err) = run(&s, &["--store", "memory", "completions", "bash"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--store means nothing to `acp-proxy completions`"),
        "{err}"
    );
    // The flags a command takes may still come before it.
    let (code, out, err) = run(&s, &["--store", "memory", "store", "stats"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("store: memory"), "{out}");
    let (code, out, err) = run(&s, &["store", "stats", "--store", "memory"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("store: memory"), "{out}");
}

/// The usage line names the commands first; running an agent comes second.
#[test]
fn the_usage_line_puts_the_command_before_the_agent() {
    let s = Scratch::new();
    let (code, help, _) = run(&s, &["--help"]);
    assert_eq!(code, 0);
    assert!(
        help.contains(
            "Usage: acp-proxy <COMMAND> [OPTIONS]\n       acp-proxy [OPTIONS] [-- <AGENT COMMAND>...]\n"
        ),
        "{help}"
    );
}
