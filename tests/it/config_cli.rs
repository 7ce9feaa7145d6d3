//! A bad config stops the proxy before anything is spawned, with a message naming the key;
//! `acp-proxy check-config PATH` validates a file.

use std::process::{Command, Stdio};

use crate::support::proxy::{Scratch, BIN};

/// Bad configs and the text the error must name.
const BAD: [(&str, &str); 6] = [
    ("dispaly = \"zed\"\n", "dispaly"),       // unknown key
    ("[dump]\nredact = \"yes\"\n", "redact"), // wrong type
    ("[shutdown]\nterm_grace_ms = -1\n", "term_grace_ms"), // wrong type
    ("display = \"fancy\"\n", "display"),     // bad value
    ("max_frame_bytes = 10\n", "max_frame_bytes"), // out of range
    ("[dump]\nqueue_frames = 0\n", "queue_frames"), // out of range
];

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

#[test]
fn a_bad_config_stops_the_proxy_before_spawning_the_agent() {
    let s = Scratch::new();
    let marker = s.p("agent-ran");
    for (text, key) in BAD {
        let config = s.write("bad.toml", text);
        let (code, stdout, stderr) = run(
            &s,
            &[
                "--config",
                &config,
                "--",
                "sh",
                "-c",
                &format!("touch '{marker}'"),
            ],
        );
        assert_ne!(code, 0, "{text:?} accepted");
        assert!(
            stderr.contains(key),
            "{text:?}: error names `{key}`:\n{stderr}"
        );
        assert!(
            stderr.contains("bad.toml"),
            "{text:?}: error names the file:\n{stderr}"
        );
        assert_eq!(stdout, "", "nothing on the protocol channel");
    }
    // Had any run spawned the agent, it would have created the marker long before now.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        !s.path("agent-ran").exists(),
        "an agent was spawned despite a bad config"
    );
}

#[test]
fn a_bad_proxy_toml_in_the_working_directory_is_refused_too() {
    let s = Scratch::new();
    s.write("proxy.toml", "[dump]\nredcat = true\n");
    let (code, _, stderr) = run(&s, &["--", "sh", "-c", "exit 0"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("redcat"), "{stderr}");
}

#[test]
fn check_config_validates_a_file() {
    let s = Scratch::new();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/proxy.toml");
    let (code, stdout, stderr) = run(&s, &["check-config", example]);
    assert_eq!(code, 0, "the shipped proxy.toml is valid:\n{stderr}");
    assert!(stdout.contains("ok"), "{stdout}");

    let good = s.write(
        "good.toml",
        "display = \"off\"\n[shutdown]\nterm_grace_ms = 500\n",
    );
    let (code, stdout, _) = run(&s, &["check-config", &good]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("term_grace_ms: 500"),
        "prints the effective settings:\n{stdout}"
    );

    for (text, key) in BAD {
        let bad = s.write("bad.toml", text);
        let (code, _, stderr) = run(&s, &["check-config", &bad]);
        assert_ne!(code, 0, "{text:?} passed check-config");
        assert!(stderr.contains(key), "{text:?}: names `{key}`:\n{stderr}");
    }

    let (code, _, stderr) = run(&s, &["check-config", &s.p("missing.toml")]);
    assert_ne!(code, 0);
    assert!(stderr.contains("missing.toml"), "{stderr}");
}
