//! The agent kits (`tests/e2e/agents/<kit>/`, described in tests/e2e/README.md) and what the
//! suite expects of each: one row per kit in [`EXPECT`].

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::checks::Failure;
use serde::Deserialize;

/// What Zed should end up showing for one agent. Placeholders: `{tag}` is the subagent's tag
/// (`alpha`, `beta`), `{Tag}` the same capitalised.
#[derive(Debug)]
pub(crate) struct Expect {
    /// The kit folder under tests/e2e/agents/.
    pub(crate) kit: &'static str,
    /// The card's title once its child ended (while it runs, the proxy shows progress).
    pub(crate) card_title: &'static str,
    /// The proxy cuts the title to this many characters (the last one `…`); 0: not cut.
    pub(crate) title_max_chars: usize,
    /// `_meta.tool_name` on the card's `tool_call`.
    pub(crate) tool_name: &'static str,
    /// Scenarios in which the agent puts the child's own tool calls on the wire, so that the
    /// child thread must hold them.
    pub(crate) child_tools_in: &'static [&'static str],
    /// Scenarios in which the agent puts the child's final words on the wire (as the child's
    /// text, or as the spawn's result), so that the child thread must end with them.
    pub(crate) child_answer_in: &'static [&'static str],
    /// In the background scenario the main agent answers again (`MAIN-DONE`) once the child is
    /// done; otherwise its last words are `MAIN-WAITING`.
    pub(crate) background_followup: bool,
    /// In the background scenario the agent sends nothing that ends the child, so its card
    /// stays open (`in_progress`, no end index) after the launch.
    pub(crate) background_open: bool,
    /// Where a child's event names its spawn on the parent's session (JSON pointers into the
    /// update), for agents whose history replays the children's events with the parent's: the
    /// proxy serves the child threads from its store instead, so on reopen these are not
    /// counted (each child thread must open as it did live).
    pub(crate) child_event_keys: &'static [&'static str],
    /// How the ids of calls beside a spawn that carry its child's work start (AgentPool's
    /// `subagent:` box): the proxy makes them the child's thread, so they are not owed to Zed
    /// as sent (the child checks see their work); empty: none.
    pub(crate) sibling_calls: &'static str,
    /// Product bugs this suite shows and that are not fixed yet. The named check must still
    /// fail (the run says so loudly); once it passes, the run fails until the row is removed.
    pub(crate) known_bugs: &'static [KnownBug],
}

#[derive(Debug)]
pub(crate) struct KnownBug {
    /// A scenario, or `*` for all.
    pub(crate) scenario: &'static str,
    /// The check's name, as a failed run prints it (`[check] ...`).
    pub(crate) check: &'static str,
    /// A piece of the failure's text that tells this bug from other failures of the check
    /// (empty: any).
    pub(crate) detail: &'static str,
    pub(crate) note: &'static str,
    /// It shows in some runs only: its absence does not fail the run.
    pub(crate) sometimes: bool,
}

impl KnownBug {
    pub(crate) fn applies(&self, scenario: &str) -> bool {
        self.scenario == "*" || self.scenario == scenario
    }

    pub(crate) fn matches(&self, scenario: &str, f: &Failure) -> bool {
        self.applies(scenario) && self.check == f.check && f.detail.contains(self.detail)
    }
}

/// A known bug: `check` fails in `scenario` (`*`: all) with a message containing `detail`.
const fn bug(
    scenario: &'static str,
    check: &'static str,
    detail: &'static str,
    note: &'static str,
) -> KnownBug {
    KnownBug {
        scenario,
        check,
        detail,
        note,
        sometimes: false,
    }
}

/// A known bug that shows in some runs only (its absence does not fail the run).
const fn sometimes(
    scenario: &'static str,
    check: &'static str,
    detail: &'static str,
    note: &'static str,
) -> KnownBug {
    KnownBug {
        sometimes: true,
        ..bug(scenario, check, detail, note)
    }
}

// Product bugs, with what shows them (docs/agents/*.md quote the frames).

// What the agents themselves do, which no proxy can change.

const GEMINI_NO_PROMPT: &str =
    "gemini: the spawn carries no task prompt (no rawInput): the child thread holds only the proxy's note of what is known";
const GEMINI_NO_SESSION: &str =
    "gemini 0.61.0: session/load often answers \"No previous sessions found for this project.\" though the chat files exist";
const CODEX_V2_NO_PROMPT: &str =
    "codex multi-agent V2: the announcement names the task (`task_name`, as the title) but \
     carries no task, and no frame does (the model hands it to the child as encrypted content): \
     the child thread opens with the preset's note saying so";
const GEMINI_REPLAY_TITLE: &str = "gemini: a replayed spawn is titled `Invoke Subagent`";
const DROID_BACKGROUND_REPLAY: &str =
    "droid 0.225.2: session/load replays a background Task's spawn `completed` in its first frame \
     (the launch notice follows): the reopened card completes with the prompt only, though the \
     store holds the child as running";
const COPILOT_EARLY_COMMANDS: &str =
    "copilot 1.0.102 sends `available_commands_update` before its `session/new` answer, for a \
     session Zed does not know yet: Zed drops it (the proxy passes it on as sent)";
const COPILOT_NO_TIE: &str =
    "copilot 1.0.102: a child's words come on the parent with nothing naming the child (no id, \
     unlike its tool calls, whose agentId the proxy ties to the spawn from Copilot's session \
     log): with two children open, timing cannot attribute them, so they stay in the parent; \
     each child thread holds the task, the child's tool calls and its answer";
const CLINE_UPDATE_FIRST: &str =
    "cline 3.0.65 sends a spawn's `tool_call_update` (with its permission request) before the \
     `tool_call`: the proxy sends that update as the tool call (Zed refuses an update of an \
     unknown call), so Zed gets the tool call twice (the second an upsert), and the card's \
     progress update reads as a second `in_progress`";
const CLINE_NO_TIE: &str =
    "cline 3.0.65: a child's words and tool calls come on the parent with nothing naming the \
     spawn: with two children open, timing cannot attribute them and they stay in the parent \
     (Cline stores each child as `<parent>__agent_<id>`, an id never on the wire); a child \
     whose thread then holds only its task gets its work from Cline's record of it when its \
     spawn completes, so its tool calls show in its thread and, as sent, in the parent";
const CLINE_RECORD_AFTER_TURN: &str =
    "cline 3.0.65: a child whose words stayed in the parent (two open) has its spawn's answer \
     wait up to 2 s for Cline's record of it; when the parent's turn ends first, a standard \
     client is told the child's answer (its `session_message` reply) only after `end_turn`, \
     and the suite's standard client stops reading at `end_turn` (depends on whether the \
     child's answer came while the other child ran)";
const AGENTPOOL_REPLAYS_NOTHING: &str =
    "AgentPool 2.9.18: session/load replays nothing of the parent: the reopened thread holds \
     the cards the proxy restores from its store, not the user's prompt or the answer";

const VIBE_EARLY_USAGE: &str =
    "Vibe: a usage_update for the new session comes before the session/new answer; Zed does not \
     know the session yet and drops it (the proxy relays it in order)";

pub(crate) const EXPECT: &[Expect] = &[
    Expect {
        kit: "claude-legacy",
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "Agent",
        // A background `Agent` sends nothing of the child's work over ACP in 0.23.1.
        child_tools_in: &["one", "two"],
        child_answer_in: &["one", "two"],
        background_followup: true,
        background_open: false,
        child_event_keys: &["/_meta/claudeCode/parentToolUseId"],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "claude-acp",
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        // The agent sends no spawn tool call: the card is the proxy's, named as Zed's own.
        tool_name: "spawn_agent",
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: true,
        background_open: false,
        child_event_keys: &["/_meta/claudeCode/parentToolUseId"],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "claude-node20",
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "Agent",
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: true,
        background_open: false,
        child_event_keys: &["/_meta/claudeCode/parentToolUseId"],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "codex",
        // codex-acp sends no title: the proxy names the card after the spawn message's first
        // line, cut short (the `codex` preset's `announce.title`).
        card_title: "SUBAGENT:{tag} list the text files in the project and report what you find",
        title_max_chars: 60,
        tool_name: "spawn_agent",
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: false,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "codex-v2",
        // V2 announces the child with its task name, capitalised, as the title.
        card_title: "{Tag}",
        title_max_chars: 0,
        tool_name: "spawn_agent",
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: false,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[bug("*", "child-prompt", "", CODEX_V2_NO_PROMPT)],
    },
    Expect {
        kit: "qwen",
        // The `qwen` preset titles the card with the spawn's description.
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "agent",
        // A background child (Qwen's default) sends nothing of its work.
        child_tools_in: &["one", "two"],
        child_answer_in: &["one", "two"],
        background_followup: true,
        background_open: false,
        child_event_keys: &["/_meta/parentToolCallId"],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "opencode",
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "task",
        // No child events live: the proxy fetches the child's replay when the task completes,
        // so the thread holds the child's own work.
        child_tools_in: &["one", "two"],
        child_answer_in: &["one", "two"],
        background_followup: true,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "gemini",
        // Titled by the agent's name, from "Delegating to agent 'codebase_investigator'".
        card_title: "codebase_investigator",
        title_max_chars: 0,
        tool_name: "invoke_agent",
        child_tools_in: &[],
        child_answer_in: &[],
        background_followup: true,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[
            bug("*", "child-prompt", "", GEMINI_NO_PROMPT),
            sometimes(
                "*",
                "reopen",
                "No previous sessions found",
                GEMINI_NO_SESSION,
            ),
            sometimes("*", "cards", "Invoke Subagent", GEMINI_REPLAY_TITLE),
        ],
    },
    Expect {
        kit: "pi",
        // The `pi` preset titles the card with `rawInput.description`.
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "Agent",
        // No child events: the thread holds the prompt and the result (a background child:
        // the prompt only; its follow-up lands in the parent, naming neither the child nor
        // the spawn, so the card stays open).
        child_tools_in: &[],
        child_answer_in: &["one", "two"],
        background_followup: true,
        background_open: true,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "agentpool",
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "task",
        child_tools_in: &["one", "two"],
        child_answer_in: &["one", "two"],
        background_followup: true,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "subagent:",
        known_bugs: &[bug(
            "*",
            "reopen",
            "lacks the user's prompt",
            AGENTPOOL_REPLAYS_NOTHING,
        )],
    },
    Expect {
        kit: "droid",
        // The `droid` preset titles the card with the Task's description.
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "Task",
        // No child events live: the proxy fetches the child's replay once the parent's turn is
        // over. A background Task (Droid's default) is not ended on the wire: Droid hands
        // the report to its model in a turn it does not send over ACP.
        child_tools_in: &["one", "two"],
        child_answer_in: &["one", "two"],
        background_followup: false,
        background_open: true,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[
            bug(
                "background",
                "cards",
                "reopen: card `Survey text files (alpha)`",
                DROID_BACKGROUND_REPLAY,
            ),
            bug("background", "indices", "reopen:", DROID_BACKGROUND_REPLAY),
        ],
    },
    Expect {
        kit: "kilo",
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "task",
        // A background child is loaded at its launch and followed live: its thread gets its
        // work as Kilo streams it; Kilo's own follow-up turn on the parent ends it (inferred).
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: true,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "copilot",
        // The `copilot` preset titles the card with the task's description.
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "task",
        // The child's tool calls carry Copilot's own agentId: bound to its spawn by Copilot's
        // session log (which the proxy reads), by a background launch's result, or to a lone
        // sync spawn by inference; its words go by timing (two at once: they stay in the
        // parent). A background child ends with `read_agent`'s result.
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: true,
        background_open: false,
        child_event_keys: &["/_meta/github.com~1copilot/agentId"],
        sibling_calls: "",
        known_bugs: &[
            bug(
                "*",
                "zed-model",
                "`available_commands_update` for session",
                COPILOT_EARLY_COMMANDS,
            ),
            bug(
                "*",
                "delivered-once",
                "available_commands_update",
                COPILOT_EARLY_COMMANDS,
            ),
            bug(
                "two",
                "parent-clean",
                "live: a child's words",
                COPILOT_NO_TIE,
            ),
        ],
    },
    Expect {
        kit: "cline",
        // The `cline` preset titles the card with the task's first line, cut short.
        card_title: "SUBAGENT:{tag} list the text files in the project and report what you find",
        title_max_chars: 60,
        tool_name: "spawn_agent",
        // A lone child's events are attributed by timing; two at once stay in the parent.
        child_tools_in: &["one"],
        child_answer_in: &["one", "two"],
        background_followup: true,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[
            bug(
                "*",
                "delivered-once",
                "\"title\":\"spawn_agent: ",
                CLINE_UPDATE_FIRST,
            ),
            sometimes(
                "*",
                "delivered-once",
                "\"status\":\"in_progress\"}",
                CLINE_UPDATE_FIRST,
            ),
            bug("two", "parent-clean", "live: a child's words", CLINE_NO_TIE),
            sometimes(
                "two",
                "parent-clean",
                "is also in the parent thread",
                CLINE_NO_TIE,
            ),
            sometimes(
                "two",
                "standard",
                "answer is no message",
                CLINE_RECORD_AFTER_TURN,
            ),
        ],
    },
    Expect {
        kit: "fast-agent",
        // The `fast-agent` preset titles the card with the subagent's label (letters, digits,
        // spaces, `_` and `-` only).
        card_title: "Survey text files {tag}",
        title_max_chars: 0,
        tool_name: "subagent",
        // The child runs inside the tool: none of its tool calls or words reach the wire, only
        // its answer as the spawn's result.
        child_tools_in: &[],
        child_answer_in: &["one", "two"],
        background_followup: true,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "kimi",
        // The `kimi` preset titles the card with the spawn's description (`Agent: <it>`).
        card_title: "Survey text files ({tag})",
        title_max_chars: 0,
        tool_name: "Agent",
        // Kimi's ACP layer drops the child's events; the proxy reads them from Kimi's record
        // of the child (`subagents/<agent_id>/wire.jsonl`): its words, tool calls and answer
        // when the spawn completes, and a background child's end (on the wire it is a notice
        // in a later user turn naming Kimi's task id, not the spawn).
        child_tools_in: &["one", "two", "background"],
        child_answer_in: &["one", "two", "background"],
        background_followup: false,
        background_open: false,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[],
    },
    Expect {
        kit: "vibe",
        // Titled by the child's name (`Starting <name>`), which the model chose.
        card_title: "{tag}",
        title_max_chars: 0,
        tool_name: "agents.spawn",
        // Every spawn is a launch: the child's work, answer and end never reach the wire (the
        // answer goes to the main agent's model only), so the card stays open with the task.
        child_tools_in: &[],
        child_answer_in: &[],
        background_followup: true,
        background_open: true,
        child_event_keys: &[],
        sibling_calls: "",
        known_bugs: &[
            bug(
                "*",
                "zed-model",
                "`usage_update` for session",
                VIBE_EARLY_USAGE,
            ),
            bug(
                "*",
                "delivered-once",
                "\"used\":0,\"size\":",
                VIBE_EARLY_USAGE,
            ),
        ],
    },
];

impl Expect {
    pub(crate) fn find(kit: &str) -> Result<&'static Expect> {
        EXPECT.iter().find(|e| e.kit == kit).with_context(|| {
            format!("kit `{kit}` has no row in EXPECT (tests/e2e/kits.rs): say what Zed should show for it")
        })
    }

    pub(crate) fn title(&self, tag: &str) -> String {
        let mut cap = tag.chars();
        let capitalised: String = cap
            .next()
            .map(|c| c.to_uppercase().chain(cap).collect())
            .unwrap_or_default();
        let title = self
            .card_title
            .replace("{tag}", tag)
            .replace("{Tag}", &capitalised);
        match self.title_max_chars {
            n if n > 0 && title.chars().count() > n => {
                let mut cut: String = title.chars().take(n - 1).collect();
                cut.push('…');
                cut
            }
            _ => title,
        }
    }

    pub(crate) fn known_bug(&self, scenario: &str, f: &Failure) -> Option<&KnownBug> {
        self.known_bugs.iter().find(|b| b.matches(scenario, f))
    }
}

/// `kit.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KitToml {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) model_server: bool,
    pub(crate) scenarios: Vec<String>,
    pub(crate) timeout_secs: u64,
    /// Zed (and so the proxy) runs with the agent's home as `HOME`, as a user's does: for
    /// agents whose files on disk the proxy reads (`child_record`).
    #[serde(default)]
    pub(crate) proxy_home: bool,
}

pub(crate) const SCENARIOS: &[&str] = &["one", "two", "background"];

/// The subagents a scenario delegates to (as in tests/e2e/standin/delegation.py).
pub(crate) fn tags(scenario: &str) -> &'static [&'static str] {
    match scenario {
        "two" => &["alpha", "beta"],
        _ => &["alpha"],
    }
}

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e")
}

pub(crate) struct Kit {
    pub(crate) dir: PathBuf,
    pub(crate) toml: KitToml,
    pub(crate) expect: &'static Expect,
}

impl Kit {
    pub(crate) fn load(name: &str) -> Result<Kit> {
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
    pub(crate) fn names() -> Result<Vec<String>> {
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
