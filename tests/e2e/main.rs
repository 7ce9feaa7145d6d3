//! End-to-end tests with real agents: each kit under tests/e2e/agents/ (see the README there)
//! runs its scenarios through the real `acp-proxy` binary, driven as Zed drives it, offline.
//! The agent tests need the installed agents and a network namespace: `scripts/e2e.sh` runs
//! them (`cargo test --test e2e -- --ignored`); plain `cargo test` lists and skips them, and
//! runs the checks of the kits themselves.

// Network namespaces, Unix signals and `sh` (docs/platforms.md).
#![cfg(unix)]

mod by_hand;
mod checks;
mod client;
mod clients;
mod folded;
mod kits;
mod run;
mod standard;
mod zed;

/// One ignored test per kit: `name => "folder"`. A new kit adds a line here and a row in
/// `kits::EXPECT`.
macro_rules! kit_tests {
    ($($test:ident => $kit:literal),* $(,)?) => {
        $(
            #[test]
            #[ignore = "needs the real agents: scripts/e2e.sh"]
            fn $test() {
                run::kit($kit);
            }
        )*
        /// The same kits for a client of standard ACP subagents (`display = "acp"`).
        mod standard_client {
            $(
                #[test]
                #[ignore = "needs the real agents: scripts/e2e.sh"]
                fn $test() {
                    crate::standard::kit($kit);
                }
            )*
        }
        const KIT_TESTS: &[&str] = &[$($kit),*];
    };
}

kit_tests! {
    claude_legacy => "claude-legacy",
    claude_acp => "claude-acp",
    claude_node20 => "claude-node20",
    codex => "codex",
    codex_v2 => "codex-v2",
    qwen => "qwen",
    opencode => "opencode",
    gemini => "gemini",
    pi => "pi",
    agentpool => "agentpool",
    fast_agent => "fast-agent",
    kimi => "kimi",
    vibe => "vibe",
    droid => "droid",
    kilo => "kilo",
    copilot => "copilot",
    cline => "cline",
}

/// Every kit folder is complete, has a test above and a row of expectations: a kit nobody
/// runs would be a silent skip.
#[test]
fn every_kit_is_complete_and_tested() {
    let names = kits::Kit::names().expect("list the kits");
    assert!(!names.is_empty(), "no kits under tests/e2e/agents");
    let mut problems = Vec::new();
    for name in &names {
        if let Err(e) = kits::Kit::load(name) {
            problems.push(format!("{e:#}"));
        }
        if !KIT_TESTS.contains(&name.as_str()) {
            problems.push(format!(
                "kit `{name}` has no test in kit_tests! (tests/e2e/main.rs)"
            ));
        }
    }
    for kit in KIT_TESTS {
        if !names.iter().any(|n| n == kit) {
            problems.push(format!("kit_tests! names `{kit}`, which has no folder"));
        }
    }
    for row in kits::EXPECT {
        if !names.iter().any(|n| n == row.kit) {
            problems.push(format!(
                "EXPECT has a row for `{}`, which has no folder",
                row.kit
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
