//! The agent kits (`tests/e2e/agents/<kit>/`, described in tests/e2e/README.md) and what the
//! suite expects of each: one row per kit in [`EXPECT`].

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// What Zed should end up showing for one agent. Placeholders: `{tag}` is the subagent's tag
/// (`alpha`, `beta`).
#[derive(Debug)]
pub struct Expect {
    /// The kit folder under tests/e2e/agents/.
    pub kit: &'static str,
    /// The card's title once its child ended (while it runs, the proxy shows progress).
    pub card_title: &'static str,
    /// `_meta.tool_name` on the card's `tool_call`.
    pub tool_name: &'static str,
    /// Scenarios in which the agent puts the child's own tool calls on the wire, so that the
    /// child thread must hold them.
    pub child_tools_in: &'static [&'static str],
    /// Scenarios in which the agent puts the child's final words on the wire (as the child's
    /// text, or as the spawn's result), so that the child thread must end with them.
    pub child_answer_in: &'static [&'static str],
    /// In the background scenario the main agent answers again (`MAIN-DONE`) once the child is
    /// done; otherwise its last words are `MAIN-WAITING`.
    pub background_followup: bool,
    /// Product bugs this suite shows and that are not fixed yet. The named check must still
    /// fail (the run says so loudly); once it passes, the run fails until the row is removed.
    pub known_bugs: &'static [KnownBug],
}

#[derive(Debug)]
pub struct KnownBug {
    pub scenario: &'static str,
    /// The check's name, as a failed run prints it (`[check] ...`).
    pub check: &'static str,
    pub note: &'static str,
}

/// codex-acp sends the task only as the announcement's `description` (no `session_message`
/// to the child); the proxy starts the child thread with a user message only from a
/// `session_message`, so the thread opens without the task prompt.
const CODEX_NO_PROMPT: &str =
    "codex child thread opens without its task prompt (no session_message; `description` unused)";

pub const EXPECT: &[Expect] = &[
    Expect {
        kit: "claude-legacy",
        card_title: "Survey text files ({tag})",
        tool_name: "Agent",
        // A background `Agent` sends nothing of the child's work over ACP in 0.23.1.
        child_tools_in: &["one", "two"],
        child_answer_in: &["one", "two"],
        background_followup: true,
        known_bugs: &[],
    },
    Expect {
        kit: "claude-acp",
        card_title: "Survey text files ({tag})",
        // The agent sends no spawn tool call: the card is the proxy's, named as Zed's own.
        tool_name: "spawn_agent",
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: true,
        known_bugs: &[],
    },
    Expect {
        kit: "codex",
        card_title: "SUBAGENT:{tag} list the text files in the project",
        tool_name: "spawn_agent",
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: false,
        known_bugs: &[
            KnownBug {
                scenario: "one",
                check: "child-prompt",
                note: CODEX_NO_PROMPT,
            },
            KnownBug {
                scenario: "two",
                check: "child-prompt",
                note: CODEX_NO_PROMPT,
            },
            KnownBug {
                scenario: "background",
                check: "child-prompt",
                note: CODEX_NO_PROMPT,
            },
        ],
    },
];

impl Expect {
    pub fn find(kit: &str) -> Result<&'static Expect> {
        EXPECT.iter().find(|e| e.kit == kit).with_context(|| {
            format!("kit `{kit}` has no row in EXPECT (tests/e2e/kits.rs): say what Zed should show for it")
        })
    }

    pub fn title(&self, tag: &str) -> String {
        self.card_title.replace("{tag}", tag)
    }

    pub fn known_bug(&self, scenario: &str, check: &str) -> Option<&KnownBug> {
        self.known_bugs
            .iter()
            .find(|b| b.scenario == scenario && b.check == check)
    }
}

/// `kit.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KitToml {
    pub name: String,
    pub version: String,
    pub model_server: bool,
    pub scenarios: Vec<String>,
    pub timeout_secs: u64,
}

pub const SCENARIOS: &[&str] = &["one", "two", "background"];

/// The subagents a scenario delegates to (as in tests/e2e/standin/scenario.py).
pub fn tags(scenario: &str) -> &'static [&'static str] {
    match scenario {
        "two" => &["alpha", "beta"],
        _ => &["alpha"],
    }
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e")
}

pub struct Kit {
    pub dir: PathBuf,
    pub toml: KitToml,
    pub expect: &'static Expect,
}

impl Kit {
    pub fn load(name: &str) -> Result<Kit> {
        let dir = root().join("agents").join(name);
        let path = dir.join("kit.toml");
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let toml: KitToml =
            toml::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
        if toml.name != name {
            bail!(
                "{}: name is `{}`, the folder `{name}`",
                path.display(),
                toml.name
            );
        }
        for s in &toml.scenarios {
            if !SCENARIOS.contains(&s.as_str()) {
                bail!("{}: unknown scenario `{s}`", path.display());
            }
        }
        for f in ["install.sh", "launch.sh", "model.py"] {
            if !dir.join(f).is_file() {
                bail!("kit `{name}` has no {f}");
            }
        }
        Ok(Kit {
            dir,
            toml,
            expect: Expect::find(name)?,
        })
    }

    /// Every kit folder.
    pub fn names() -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(root().join("agents")).context("list tests/e2e/agents")? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }
}
