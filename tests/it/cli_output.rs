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
