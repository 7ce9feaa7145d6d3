//! What Zed shows for each agent's subagents, played through the engine from the agents' real
//! traffic (`tests/fixtures/agents/` captures, and the `tests/fixtures/e2e/` proxy dumps whose
//! client and agent frames are fed in again) or from the hand-written traces of agents that
//! cannot be installed here (named `*-written-*`; Gemini's policy refusal is written below from
//! its documented frame): the cards in the parent, what each child thread holds once Zed loads
//! it, how each ends, and the same after a reopen by a proxy with the store and without it.
//! Every case is judged under Zed 1.18's rules and its main branch's.

use std::collections::BTreeMap;

use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, zed_config, Harness, StoreModel};
use crate::support::zed_model::{ZedModel, ZedRules};

/// One record of a capture or a dump: who sent it, when (ms from the start), the message.
#[derive(Clone)]
struct Rec {
    from_client: bool,
    at_ms: u64,
    msg: Value,
}

/// A capture (`agents/…jsonl`: `t`, `dir`, `msg`) or a proxy dump (`e2e/…dump.jsonl`: the
/// client's and the agent's frames as they reached the proxy).
fn records(name: &str) -> Vec<Rec> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {} readable: {e}", path.display()));
    let mut out = Vec::new();
    let mut t0: Option<f64> = None;
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(l).expect("fixture line is JSON");
        let (from_client, t, msg) = match (rec.get("dir").and_then(Value::as_str), rec.get("msg")) {
            (Some(d @ ("in" | "out")), Some(m)) => {
                (d == "out", rec["t"].as_f64().unwrap_or(0.0), m.clone())
            }
            (Some(d @ ("client→proxy" | "agent→proxy")), None) => {
                let frame = rec["frame"].as_str().unwrap_or("");
                let Ok(m) = serde_json::from_str::<Value>(frame) else {
                    continue;
                };
                (d == "client→proxy", rec["ts"].as_f64().unwrap_or(0.0), m)
            }
            _ => continue,
        };
        let t0 = *t0.get_or_insert(t);
        out.push(Rec {
            from_client,
            at_ms: ((t - t0).max(0.0) * 1000.0).round() as u64,
            msg,
        });
    }
    out
}

/// A played recording: the harness, and what the client got about each card over time.
struct Run {
    h: Harness,
    /// Card id → (time, title) of every update of the card Zed received.
    card_updates: BTreeMap<String, Vec<(u64, Option<String>)>>,
    /// Titles each card showed, in order, without repeats.
    titles: BTreeMap<String, Vec<String>>,
    seen: usize,
    /// Records the engine asked the shell to follow that were reported.
    records_read: usize,
}

impl Run {
    fn new(rules: ZedRules, store: StoreModel) -> Run {
        let mut h = Harness::with_store(zed_config(), store);
        h.zed = ZedModel::new(rules);
        Run {
            h,
            card_updates: BTreeMap::new(),
            titles: BTreeMap::new(),
            seen: 0,
            records_read: 0,
        }
    }

    /// Play records, the engine's clock following theirs (offset by `base` ms).
    fn play(&mut self, recs: &[Rec], base: u64) {
        for r in recs {
            let at = base + r.at_ms;
            if at > self.h.now {
                self.h.advance(at - self.h.now);
                self.observe();
            }
            if r.from_client {
                self.h.client(r.msg.clone());
            } else {
                self.h.agent(r.msg.clone());
            }
            self.observe();
        }
        // Time goes on after the last frame: whatever is held is delivered.
        self.h.advance(5_000);
        self.observe();
        // No agent's record of a child is on this disk: each one asked for is reported as not
        // found, as the shell does once the time to follow it is up.
        while let Some(watch) = self.h.records.get(self.records_read).cloned() {
            self.records_read += 1;
            self.h.record_read(&watch.child, Default::default());
            self.observe();
        }
    }

    /// Note what reached the client since the last look.
    fn observe(&mut self) {
        let now = self.h.now;
        for bytes in &self.h.to_client[self.seen..] {
            for l in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let Ok(v) = serde_json::from_slice::<Value>(l) else {
                    continue;
                };
                let u = &v["params"]["update"];
                let is_card = u.pointer("/_meta/subagent_session_info").is_some();
                if let (true, Some(id)) = (is_card, u["toolCallId"].as_str()) {
                    self.card_updates
                        .entry(id.to_owned())
                        .or_default()
                        .push((now, u["title"].as_str().map(str::to_owned)));
                }
            }
        }
        self.seen = self.h.to_client.len();
        for (p, thread) in &self.h.zed.threads {
            if p.starts_with("acp-proxy-") {
                continue;
            }
            for c in thread.cards() {
                let t = self.titles.entry(c.id.clone()).or_default();
                if t.last() != Some(&c.label) {
                    t.push(c.label.clone());
                }
            }
        }
    }

    /// The top-level threads' cards: (parent, card id, status, label, child id).
    fn cards(&self) -> Vec<(String, String, String, String, Option<String>)> {
        let mut parents: Vec<&String> = self
            .h
            .zed
            .threads
            .keys()
            .filter(|s| !s.starts_with("acp-proxy-"))
            .collect();
        parents.sort();
        parents
            .into_iter()
            .flat_map(|p| {
                self.h.zed.threads[p].cards().into_iter().map(|c| {
                    (
                        p.clone(),
                        c.id.clone(),
                        c.status.clone(),
                        c.label.clone(),
                        c.subagent.as_ref().map(|i| i.session_id.clone()),
                    )
                })
            })
            .collect()
    }

    /// What Zed shows in a child thread once it loads it (as it does on opening the card).
    fn child_thread(&mut self, child: &str) -> Vec<String> {
        self.h.load_child(child);
        entry_lines(&self.h.zed.threads[child].entries)
    }
}

/// A card as Zed must show it, and its child thread (an entry ending in `…` is a prefix).
struct CardWant {
    id: &'static str,
    status: &'static str,
    title: &'static str,
    child: &'static [&'static str],
}

const fn card(
    id: &'static str,
    status: &'static str,
    title: &'static str,
    child: &'static [&'static str],
) -> CardWant {
    CardWant {
        id,
        status,
        title,
        child,
    }
}

fn entries_match(got: &[String], want: &[&str]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| match w.strip_suffix('…') {
                Some(prefix) => g.starts_with(prefix),
                None => g == w,
            })
}

/// Play `fixture` under both Zed rule sets and check the cards, their child threads, that no
/// child event reached the parent and that Zed accepted every frame; then reopen: a new proxy
/// over the same store serves every child thread the same; one without it knows none.
/// Returns the run under Zed 1.18 for more checks.
fn check(fixture: &str, want: &[CardWant]) -> Run {
    let recs = records(fixture);
    let mut first: Option<Run> = None;
    for rules in [ZedRules::V1_18, ZedRules::Main] {
        let store = StoreModel::default();
        let mut run = Run::new(rules, store.clone());
        run.play(&recs, 0);
        let cards = run.cards();
        let got: Vec<(&str, &str, &str)> = cards
            .iter()
            .map(|(_, id, st, label, _)| (id.as_str(), st.as_str(), label.as_str()))
            .collect();
        let wanted: Vec<(&str, &str, &str)> =
            want.iter().map(|w| (w.id, w.status, w.title)).collect();
        assert_eq!(got, wanted, "{fixture} ({rules:?}): cards");
        let mut threads = Vec::new();
        for ((parent, id, _, _, child), w) in cards.iter().zip(want) {
            let child = child
                .clone()
                .unwrap_or_else(|| panic!("{fixture}: card {id} opens a child"));
            let entries = run.child_thread(&child);
            assert!(
                entries_match(&entries, w.child),
                "{fixture} ({rules:?}): child of {id}: {entries:#?}"
            );
            // Attribution: none of the child's tool calls is in the parent's thread.
            let child_tools: Vec<String> = run.h.zed.threads[&child]
                .tool_calls()
                .map(|t| t.id.clone())
                .collect();
            assert!(
                !run.h.zed.threads[parent]
                    .tool_calls()
                    .any(|t| child_tools.contains(&t.id)),
                "{fixture}: a tool call of {id}'s child is in the parent"
            );
            threads.push((child, entries));
        }
        let z = &run.h.zed;
        assert!(
            z.rejected.is_empty(),
            "{fixture}: rejected {:?}",
            z.rejected
        );
        assert!(
            z.orphan_tool_updates.is_empty(),
            "{fixture}: orphans {:?}",
            z.orphan_tool_updates
        );
        assert!(
            z.unknown_session_requests.is_empty(),
            "{fixture}: {:?}",
            z.unknown_session_requests
        );

        // Reopened by a proxy that restarted: each child thread from the store, as it was.
        let mut again = Run::new(rules, store);
        start_zed(&mut again.h);
        for (child, entries) in &threads {
            assert_eq!(
                &again.child_thread(child),
                entries,
                "{fixture}: {child} from the store"
            );
        }
        // Without the store: the child is unknown, and Zed is told so.
        let mut blind = Run::new(rules, StoreModel::default());
        start_zed(&mut blind.h);
        for (child, _) in &threads {
            let id = blind.h.load_child(child);
            let answer = blind.h.response(id).expect("the child load is answered");
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("no subagent session")),
                "{answer}"
            );
        }
        first.get_or_insert(run);
    }
    first.expect("played")
}

/// Zed's `initialize`, answered by an agent that loads sessions.
fn start_zed(h: &mut Harness) {
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "zed", "version": "1.18"}}),
    );
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "agent"}}}),
    );
}

/// The parent's own entries, as lines.
fn parent_lines(run: &Run) -> Vec<String> {
    let parent = run.cards().first().map(|c| c.0.clone()).expect("a card");
    entry_lines(&run.h.zed.threads[&parent].entries)
}

/// A reload capture (a fresh agent process replaying the parent on `session/load`), aimed at
/// the session of `live`: both captures ran the same scenario, so the replayed spawn has the
/// live spawn's tool call id; only the session ids differ.
fn reload_for(reload: &str, live: &[Rec]) -> Vec<Rec> {
    let recs = records(reload);
    let session_of = |recs: &[Rec]| {
        recs.iter()
            .find_map(|r| r.msg.pointer("/params/sessionId").and_then(Value::as_str))
            .map(str::to_owned)
            .expect("a session")
    };
    let (from, to) = (session_of(&recs), session_of(live));
    recs.into_iter()
        .map(|r| Rec {
            msg: serde_json::from_str(&r.msg.to_string().replace(&from, &to)).expect("JSON"),
            ..r
        })
        .collect()
}

/// A reopened parent's cards (id, status, title), their child threads and tool names.
type Reopened = (
    Vec<(String, String, String)>,
    Vec<Vec<String>>,
    Vec<Option<String>>,
);

/// Play the live run, then reopen its parent with a fresh agent's replay: through a proxy
/// over the same store, and through one without. Returns both reopened runs' cards and child
/// threads.
fn reopen(live: &str, reload: &str) -> [Reopened; 2] {
    let recs = records(live);
    let replay = reload_for(reload, &recs);
    let store = StoreModel::default();
    let mut run = Run::new(ZedRules::V1_18, store.clone());
    run.play(&recs, 0);
    [store, StoreModel::default()].map(|store| {
        let mut again = Run::new(ZedRules::V1_18, store);
        again.play(&replay, 0);
        let cards = again.cards();
        let tools = cards
            .iter()
            .map(|c| {
                again.h.zed.threads[&c.0]
                    .card(&c.1)
                    .and_then(|t| t.tool_name.clone())
            })
            .collect();
        let threads = cards
            .iter()
            .map(|c| again.child_thread(c.4.as_deref().expect("a child")))
            .collect();
        let cards = cards.into_iter().map(|c| (c.1, c.2, c.3)).collect();
        (cards, threads, tools)
    })
}

fn child_of(parent: &str, spawn: &str) -> String {
    child_session_id(parent, spawn)
}

#[test]
fn qwen_foreground_and_background_subagents() {
    // Foreground: child events re-emitted on the parent, tagged; the card titled by the task.
    const FG: &[&str] = &[
        "user:SUBAGENT:alpha list the text files",
        "agent:Subagent alpha looking around.",
        "tool:call_0005:completed",
        "agent:Subagent alpha reading a.txt.",
        "tool:call_0007:completed",
        "agent:Subagent alpha found the files; reporting back.",
    ];
    let run = check(
        "agents/qwen-0.24.4-foreground-one-subagent.jsonl",
        &[card("call_0002", "completed", "Survey text files", FG)],
    );
    let titles = &run.titles["call_0002"];
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("Survey text files · Glob: '*.txt'"))
            && titles
                .iter()
                .any(|t| t == "Survey text files · ReadFile: a.txt · 2 steps"),
        "live progress: {titles:?}"
    );
    assert_eq!(titles.last().map(String::as_str), Some("Survey text files"));
    check(
        "agents/qwen-0.24.4-foreground-two-subagents.jsonl",
        &[
            card(
                "call_0002",
                "completed",
                "First survey",
                &[
                    "user:SUBAGENT:alpha list the text files",
                    "agent:…",
                    "tool:…",
                    "agent:…",
                    "tool:…",
                    "agent:Subagent alpha found the files; reporting back.",
                ],
            ),
            card(
                "call_0003",
                "completed",
                "Second survey",
                &[
                    "user:SUBAGENT:beta list the text files",
                    "agent:…",
                    "tool:…",
                    "agent:…",
                    "tool:…",
                    "agent:Subagent beta found the files; reporting back.",
                ],
            ),
        ],
    );
    check(
        "e2e/qwen-0.24.4-one.dump.jsonl",
        &[card(
            "call_0001",
            "completed",
            "Survey text files (alpha)",
            &[
                "user:SUBAGENT:alpha list the text files in the project and report what you find",
                "agent:Subagent alpha looking around.",
                "tool:call_0002:completed",
                "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ],
        )],
    );

    // Background (Qwen's default): the launch does not end the card; the later notice does,
    // and goes into the child thread; the follow-up turn it starts stays in the parent.
    let run = check(
        "agents/qwen-0.24.4-background-one-subagent.jsonl",
        &[card(
            "call_0002",
            "completed",
            "Survey text files",
            &[
                "user:SUBAGENT:alpha list the text files",
                "agent:Background agent \"general-purpose: Survey text files\" completed.",
            ],
        )],
    );
    let updates = &run.card_updates["call_0002"];
    let launch_to_end: Vec<&Option<String>> = updates.iter().map(|(_, t)| t).collect();
    assert!(launch_to_end.len() >= 3, "{updates:?}");
    let parent = parent_lines(&run);
    assert!(
        parent
            .iter()
            .any(|l| l.contains("All delegated work is done.")),
        "the follow-up turn is the parent's: {parent:#?}"
    );
    // The notice went to the child; the follow-up turn Qwen starts repeats it in the parent.
    let notice = "Background agent \"general-purpose: Survey text files\" completed.";
    assert_eq!(parent.concat().matches(notice).count(), 1, "{parent:#?}");
    check(
        "agents/qwen-0.24.4-background-two-subagents.jsonl",
        &[
            card(
                "call_0002",
                "completed",
                "First survey",
                &[
                    "user:SUBAGENT:alpha list the text files",
                    "agent:Background agent \"general-purpose: First survey\" completed.",
                ],
            ),
            card(
                "call_0003",
                "completed",
                "Second survey",
                &[
                    "user:SUBAGENT:beta list the text files",
                    "agent:Background agent \"general-purpose: Second survey\" completed.",
                ],
            ),
        ],
    );
    check(
        "e2e/qwen-0.24.4-background.dump.jsonl",
        &[card(
            "call_0001",
            "completed",
            "Survey text files (alpha)",
            &[
                "user:SUBAGENT:alpha list the text files in the project and report what you find",
                "agent:Background agent \"general-purpose: Survey text files (alpha)\" completed.",
            ],
        )],
    );
}

#[test]
fn qwen_background_card_runs_until_the_notice() {
    let recs = records("agents/qwen-0.24.4-background-one-subagent.jsonl");
    let notice = recs
        .iter()
        .position(|r| r.msg.to_string().contains("background_task_completed"))
        .expect("the notice");
    let mut run = Run::new(ZedRules::V1_18, StoreModel::default());
    run.play(&recs[..notice], 0);
    let cards = run.cards();
    assert_eq!(
        cards[0].2, "in_progress",
        "launched, still running: {cards:?}"
    );
    run.play(&recs[notice..], recs[notice].at_ms);
    assert_eq!(run.cards()[0].2, "completed");
}

#[test]
fn qwen_reopen_with_and_without_the_store() {
    let [with, without] = reopen(
        "agents/qwen-0.24.4-foreground-one-subagent.jsonl",
        "agents/qwen-0.24.4-foreground-parent-reload.jsonl",
    );
    let card = (
        "call_0002".to_owned(),
        "completed".to_owned(),
        "Survey text files".to_owned(),
    );
    assert_eq!(with.0, std::slice::from_ref(&card));
    assert_eq!(
        with.1[0].len(),
        6,
        "the child's whole work, from the store: {:?}",
        with.1
    );
    assert_eq!(without.0, [card]);
    assert_eq!(
        without.1[0],
        [
            "user:SUBAGENT:alpha list the text files",
            "agent:Subagent alpha found the files; reporting back."
        ],
        "without the store: what the replay holds (prompt and result)"
    );
    // The store keeps no tool name: the replayed spawn gives it back.
    assert_eq!(with.2, [Some("agent".to_owned())]);
    assert_eq!(without.2, [Some("agent".to_owned())]);
}

#[test]
fn codex_children_get_their_task_and_a_short_title() {
    const TASK: &str = "SUBAGENT:alpha list the text files in the project";
    check(
        "agents/codex-2.6.0-standard-one-subagent.jsonl",
        &[card(
            "acp-proxy-spawn-01a230b0-b610-7293-86dd-e7ff2533c94e:subagent:01a230b0-b65b-7313-9a0e-e8ca88866ae0",
            "completed",
            TASK,
            &[
                "user:SUBAGENT:alpha list the text files in the project",
                "tool:call_7:completed",
                "agent:Subagent alpha found a.txt and b.txt.",
            ],
        )],
    );
    check(
        "agents/codex-2.6.0-standard-two-subagents.jsonl",
        &[
            card("acp-proxy-spawn-01a230b0-d47f-7802-9c54-87198bfe26b8:subagent:01a230b0-d4c0-7773-b1a3-bc602bcf8681", "completed", TASK, &["user:SUBAGENT:alpha list the text files in the project", "agent:Warning: Model metadata…", "tool:…", "agent:…"]),
            card("acp-proxy-spawn-01a230b0-d47f-7802-9c54-87198bfe26b8:subagent:01a230b0-d4e1-72a3-824a-a6eda89cff13", "completed", "SUBAGENT:beta list the text files in the project", &["user:SUBAGENT:beta list the text files in the project", "tool:…", "agent:…"]),
        ],
    );
    // Without the opt-in: a plain spawnAgent call, titled by its prompt's first line.
    check(
        "agents/codex-2.6.0-hidden-one-subagent.jsonl",
        &[card(
            "call_3",
            "completed",
            TASK,
            &["user:SUBAGENT:alpha list the text files in the project"],
        )],
    );
}

/// Multi-agent V2 (`codex-v2` kit): the announcement has the task's name as its title and no
/// task, nor does any other frame: the child thread opens with the preset's note saying so.
#[test]
fn codex_v2_children_say_that_codex_did_not_send_their_task() {
    check(
        "e2e/codex-acp-2.6.0-v2-one.dump.jsonl",
        &[card(
            "acp-proxy-spawn-01a2345e-60cc-7411-b387-9a50a411cc54:subagent:01a2345e-61f2-72f2-90a2-ac6957931996",
            "completed",
            "Alpha",
            &[
                "agent:Codex did not send this subagent's task: with its multi-agent V2 tools the task goes to the subagent as the model's encrypted content, and Codex announces only the task's name.\n\nWarning: Model metadata…",
                "tool:call_0003:completed",
                "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ],
        )],
    );
}

#[test]
fn codex_title_is_the_first_line_of_a_long_task_bounded() {
    let mut h = Harness::zed();
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "zed", "version": "1.18"}}),
    );
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true},
        "agentInfo": {"name": "@agentclientprotocol/codex-acp", "version": "2.6.0"}}}),
    );
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": "s"}}));
    let task =
        "Survey every text file in the project and report what each of them holds\nthen stop";
    h.update(
        "s",
        json!({"sessionUpdate": "subagent_update", "sessionId": "s:subagent:c1",
        "capabilities": {}, "description": task}),
    );
    h.update(
        "s:subagent:c1",
        json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "done"}}),
    );
    let card = h.zed.threads["s"].cards()[0].clone();
    assert!(card.label.chars().count() <= 60, "{}", card.label);
    assert!(card.label.starts_with("Survey every text file") && card.label.ends_with('…'));
    let child = card.subagent.expect("info").session_id;
    h.load_child(&child);
    assert_eq!(
        entry_lines(&h.zed.threads[&child].entries),
        [format!("user:{task}"), "agent:done".to_owned()]
    );
}

#[test]
fn gemini_cards_per_invoke_agent_titled_by_the_agent() {
    const NOTE: &str = "agent:Subagent `codebase_investigator`. gemini-cli runs it inside its own process and sends neither the task it gave it nor its answer: only that it ran and how it ended.\n\nIt completed.";
    let run = check(
        "agents/gemini-0.61.0-one-subagent.jsonl",
        &[card(
            "invoke_agent__invoke_agent_1796113065529_0",
            "completed",
            "codebase_investigator",
            &[NOTE],
        )],
    );
    assert_eq!(
        parent_lines(&run)
            .iter()
            .filter(|l| l.starts_with("tool:"))
            .count(),
        1
    );
    check(
        "agents/gemini-0.61.0-two-subagents-yolo.jsonl",
        &[
            card(
                "invoke_agent__invoke_agent_1796113076028_0",
                "completed",
                "codebase_investigator",
                &[NOTE],
            ),
            card(
                "invoke_agent__invoke_agent_1796113076076_1",
                "completed",
                "generalist",
                &["agent:Subagent `generalist`. gemini-cli runs it…"],
            ),
        ],
    );
    check(
        "e2e/gemini-0.61.0-one.dump.jsonl",
        &[card(
            "invoke_agent__invoke_agent_1796118643997_0",
            "completed",
            "codebase_investigator",
            &[NOTE],
        )],
    );
    check(
        "e2e/gemini-0.61.0-two.dump.jsonl",
        &[
            card(
                "invoke_agent__invoke_agent_1796118680204_0",
                "completed",
                "codebase_investigator",
                &[NOTE],
            ),
            card(
                "invoke_agent__invoke_agent_1796118680255_1",
                "completed",
                "codebase_investigator",
                &[NOTE],
            ),
        ],
    );
}

#[test]
fn gemini_a_refused_subagent_without_a_tool_call_still_gets_a_card() {
    // Written from Gemini CLI 0.61.0's documented frame for a subagent its policy denies (the
    // default approval mode refuses `generalist`): a failed update of a tool call never
    // announced.
    for rules in [ZedRules::V1_18, ZedRules::Main] {
        let mut h = Harness::zed_session("gemini-cli", "g");
        h.zed = {
            let mut z = ZedModel::new(rules);
            z.threads.insert("g".into(), Default::default());
            z
        };
        let id = "invoke_agent__invoke_agent_1796112830160_1";
        h.update("g", json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
            "status": "failed", "kind": "think", "content": [{"type": "content",
            "content": {"type": "text", "text": "Tool execution for \"Generalist Agent\" denied by policy."}}]}));
        let card = h.zed.threads["g"].card(id).cloned().expect("a card");
        assert_eq!(card.status, "failed");
        assert!(h.zed.orphan_tool_updates.is_empty() && h.zed.rejected.is_empty());
        let child = card.subagent.expect("a subagent card").session_id;
        assert_eq!(child, child_of("g", id));
        h.load_child(&child);
        let lines = entry_lines(&h.zed.threads[&child].entries);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0]
                .ends_with("It failed: Tool execution for \"Generalist Agent\" denied by policy."),
            "{lines:?}"
        );
    }
    // An ordinary tool call's failure is no spawn.
    let mut h = Harness::zed_session("gemini-cli", "g");
    h.update(
        "g",
        json!({"sessionUpdate": "tool_call", "toolCallId": "read_file_1",
        "title": "ReadFile", "kind": "read", "status": "in_progress"}),
    );
    h.update(
        "g",
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "read_file_1",
        "status": "failed", "kind": "think"}),
    );
    assert!(h.zed.threads["g"].cards().is_empty());
}

#[test]
fn pi_titles_progress_results_and_background_launches() {
    const ANSWER: &str = "agent:SUB-ANSWER a: the folder holds a.txt and b.txt; a.txt was read.";
    const A: &[&str] = &[
        "user:SUBAGENT:a List the folder, read a.txt and report.",
        ANSWER,
    ];
    let run = check(
        "agents/pi-0.87.1-one-subagent.jsonl",
        &[card("call_main_agent_a", "completed", "Survey a.txt", A)],
    );
    let titles = &run.titles["call_main_agent_a"];
    let live: Vec<&String> = titles
        .iter()
        .filter(|t| t.starts_with("Survey a.txt · "))
        .collect();
    assert!(live.len() >= 2, "live progress: {titles:?}");
    assert_eq!(titles.last().map(String::as_str), Some("Survey a.txt"));
    // The spinner sends an update every 80 ms: the card gets at most one per 250 ms.
    assert_paced(&run, "call_main_agent_a");
    check(
        "agents/pi-0.87.1-two-subagents.jsonl",
        &[
            card("call_main_agent_a", "completed", "Survey a.txt", A),
            card(
                "call_main_agent_b",
                "completed",
                "Survey b.txt",
                &[
                    "user:SUBAGENT:b List the folder, read b.txt and report.",
                    "agent:SUB-ANSWER b: the folder holds a.txt and b.txt; b.txt was read.",
                ],
            ),
        ],
    );
    let run = check(
        "e2e/pi-0.87.1-two.dump.jsonl",
        &[
            card(
                "call_0001",
                "completed",
                "Survey text files (alpha)",
                &["user:SUBAGENT:alpha…", "agent:SUB-ANSWER alpha…"],
            ),
            card(
                "call_0002",
                "completed",
                "Survey text files (beta)",
                &["user:SUBAGENT:beta…", "agent:SUB-ANSWER beta…"],
            ),
        ],
    );
    assert_paced(&run, "call_0001");
    assert_paced(&run, "call_0002");
    check(
        "e2e/pi-0.87.1-one.dump.jsonl",
        &[card(
            "call_0001",
            "completed",
            "Survey text files (alpha)",
            &[
                "user:SUBAGENT:alpha list the text files in the project and report what you find",
                "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ],
        )],
    );
    // Launched in the background: the card stays open (pi sends nothing that ends it).
    check(
        "agents/pi-0.87.1-background.jsonl",
        &[card(
            "call_main_agent_a",
            "in_progress",
            "Survey a.txt",
            &["user:SUBAGENT:a SLOW List the folder, read a.txt and report."],
        )],
    );
    check(
        "e2e/pi-0.87.1-background.dump.jsonl",
        &[card(
            "call_0001",
            "in_progress",
            "Survey text files (alpha)",
            &["user:SUBAGENT:alpha…"],
        )],
    );
}

/// No two progress updates of the card (titled `task · activity`) reached Zed within the
/// pacing interval, and there were some.
fn assert_paced(run: &Run, id: &str) {
    let updates = &run.card_updates[id];
    let times: Vec<u64> = updates
        .iter()
        .filter(|(_, t)| t.as_deref().is_some_and(|t| t.contains(" · ")))
        .map(|(t, _)| *t)
        .collect();
    assert!(!times.is_empty(), "{id}: {updates:?}");
    for w in times.windows(2) {
        assert!(w[1] - w[0] >= 250, "{id}: {updates:?}");
    }
}

#[test]
fn pi_reopen_with_and_without_the_store() {
    let [with, without] = reopen(
        "agents/pi-0.87.1-one-subagent.jsonl",
        "agents/pi-0.87.1-parent-reload.jsonl",
    );
    let card = (
        "call_main_agent_a".to_owned(),
        "completed".to_owned(),
        "Survey a.txt".to_owned(),
    );
    let answer = "agent:SUB-ANSWER a: the folder holds a.txt and b.txt; a.txt was read.";
    assert_eq!(
        with.0,
        std::slice::from_ref(&card),
        "the replayed spawn (rawInput null) is recognised"
    );
    assert_eq!(
        with.1[0],
        [
            "user:SUBAGENT:a List the folder, read a.txt and report.",
            answer
        ]
    );
    assert_eq!(without.0, [card]);
    assert_eq!(
        without.1[0],
        [answer],
        "without the store: the replay has no prompt"
    );
    assert_eq!(with.2, [Some("Agent".to_owned())]);
    assert_eq!(without.2, [Some("Agent".to_owned())]);
}

/// Kimi 1.51.0 (preset `kimi`): no child event reaches the wire; the card is titled from
/// `Agent: <description>`, its thread holds the task (read out of the arguments' JSON text in
/// the card's content) and the answer after Kimi's `[summary]` header.
#[test]
fn kimi_agent_cards_hold_the_task_and_the_summary() {
    check(
        "e2e/kimi-1.51.0-one.dump.jsonl",
        &[card(
            "19f76fc9-9e49-461c-bfee-8cb0ef92cefc/call_0001",
            "completed",
            "Survey text files (alpha)",
            &[
                "user:SUBAGENT:alpha list the text files in the project and report what you find",
                "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ],
        )],
    );
}

/// fast-agent 0.10.48 (preset `fast-agent`): two built-in `subagent` calls in parallel, each
/// titled by its label; the child runs inside the tool, so its thread holds the task and the
/// answer (the call's result).
#[test]
fn fast_agent_subagent_cards_titled_by_their_labels() {
    check(
        "e2e/fast-agent-0.10.48-two.dump.jsonl",
        &[
            card(
                "0cffdefc846242aea84696bdd14562dc",
                "completed",
                "Survey text files alpha",
                &[
                    "user:SUBAGENT:alpha list the text files in the project and report what you find",
                    "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
                ],
            ),
            card(
                "d30fcc21896a46aca20d9259ffbb61c9",
                "completed",
                "Survey text files beta",
                &[
                    "user:SUBAGENT:beta list the text files in the project and report what you find",
                    "agent:SUB-ANSWER beta: the project holds a.txt, b.txt.",
                ],
            ),
        ],
    );
}

/// Mistral Vibe 3.0.3 (preset `vibe`): an `agents.spawn` effect completes at the launch
/// (`Started alpha`) and nothing on the wire ends the child, so its card stays running with the
/// task; the `self.wait` effect beside it is no card.
#[test]
fn vibe_spawn_effects_stay_running_with_their_task() {
    check(
        "e2e/vibe-3.0.3-background.dump.jsonl",
        &[card(
            "effect-b7044ea2-87d6-577d-be0d-4b32726f3d6d",
            "in_progress",
            "alpha",
            &["user:SUBAGENT:alpha list the text files in the project and report what you find"],
        )],
    );
}

#[test]
fn cursor_background_hand_offs_stay_open() {
    // A trace written from Cursor's documented shapes.
    check(
        "agents/cursor-written-two-subagents.jsonl",
        &[
            card(
                "call_task_1",
                "completed",
                "Survey text files",
                &[
                    "user:List the text files and say what they hold.",
                    "agent:a.txt and b.txt; a.txt says hello.",
                ],
            ),
            card(
                "call_task_2",
                "in_progress",
                "Watch the build",
                &["user:Watch the build and report failures."],
            ),
        ],
    );
}

#[test]
fn goose_tool_requests_become_the_childs_tool_calls() {
    // A trace written from Goose's documented shapes.
    let run = check(
        "agents/goose-written-one-subagent.jsonl",
        &[card(
            "tc-goose-1",
            "completed",
            "Survey the text files",
            &[
                "user:Survey the text files\nand report what they hold.",
                "tool:tc-goose-1#1:completed",
                "tool:tc-goose-1#2:completed",
                "agent:a.txt says hello; b.txt is empty.",
            ],
        )],
    );
    let mut run = run;
    let child = child_of("goose-parent-1", "tc-goose-1");
    run.child_thread(&child);
    let titles: Vec<String> = run.h.zed.threads[&child]
        .tool_calls()
        .map(|t| t.label.clone())
        .collect();
    assert_eq!(titles, ["developer__shell", "developer__text_editor"]);
    let shown = &run.titles["tc-goose-1"];
    assert!(
        shown
            .iter()
            .any(|t| t.starts_with("Survey the text files · developer__")),
        "the requests show as live progress: {shown:?}"
    );
}

#[test]
fn a_flood_of_progress_is_paced_and_its_last_state_delivered() {
    // A pi-like child reporting every 80 ms for 4 s: about 50 updates from the agent.
    let mut h = Harness::zed_session("pi-acp", "p");
    h.update(
        "p",
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Agent",
        "kind": "other", "status": "pending", "rawInput": {"prompt": "go", "description": "Task",
        "subagent_type": "general-purpose"}}),
    );
    let sent_before = h.to_client.len();
    for n in 0..50u64 {
        h.advance(80);
        h.update("p", json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
            "status": "in_progress", "content": [{"type": "content", "content": {"type": "text",
            "text": format!("{n} tool uses...")}}], "rawOutput": {"details": {"activity": format!("step {n}"),
            "status": "running"}}}));
    }
    let sent = h.to_client.len() - sent_before;
    assert!(
        sent <= 4 * 4 + 1,
        "{sent} card updates for 50 reports in 4 s"
    );
    let card = h.zed.threads["p"].card("c1").cloned().expect("card");
    // The last report is held (it came within the interval) until the interval ends.
    h.advance(250);
    let card_after = h.zed.threads["p"].card("c1").cloned().expect("card");
    assert_eq!(card_after.label, "Task · step 49", "before: {}", card.label);
    assert_eq!(
        card_after.text, "49 tool uses...",
        "the held update's content too"
    );
    assert!(h.engine.poll_timeout().is_none(), "nothing more held");
    // The end supersedes what is held: no progress after the final state.
    h.advance(10);
    h.update(
        "p",
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
        "status": "in_progress", "rawOutput": {"details": {"activity": "late"}}}),
    );
    h.update(
        "p",
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
        "status": "completed", "content": [{"type": "content", "content": {"type": "text",
        "text": "Agent completed in 4s (1 tool uses, 3 token).\n\nanswer"}}]}),
    );
    h.advance(1000);
    let card = h.zed.threads["p"].card("c1").cloned().expect("card");
    assert_eq!(
        (card.status.as_str(), card.label.as_str()),
        ("completed", "Task")
    );
    assert!(h.engine.poll_timeout().is_none());
    let paced = h
        .engine
        .footprint()
        .into_iter()
        .find(|(k, _)| *k == "paced_cards");
    assert_eq!(
        paced,
        Some(("paced_cards", 0)),
        "a finished card is let go of"
    );
}
