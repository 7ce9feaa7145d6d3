//! AgentPool 2.9.18 behind the proxy, as Zed shows it. A `task` spawn (`rawInput
//! {agent_or_team, prompt, description}`) is a card; the child's work arrives in a sibling
//! "box" (`subagent:<name>:<depth>`, titled `🤖 <name>`) whose content is the child's whole
//! transcript so far, re-sent on every update. The box goes to the one open spawn naming that
//! agent: hidden from the parent, its text diffed into the child's thread (prose as chunks,
//! `🔧`/`✅`/`❌` lines as tool calls). Two open spawns naming the same agent make it
//! ambiguous: it stays in the parent, with one note.
//!
//! The agent frames are the real agent's: the captures
//! `tests/fixtures/agents/agentpool-2.9.18-tool_box-*.jsonl` and the `agent→proxy` records of
//! the proxy dumps `tests/fixtures/e2e/agentpool-2.9.18-*`.

use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{
    dump_fixture, entry_lines, fixture, play, update_msg, zed_config, Harness, StoreModel,
};
use crate::support::zed_model::{ZedModel, ZedRules};

struct Run {
    file: &'static str,
    parent: &'static str,
    /// The parent thread in Zed.
    parent_thread: &'static [&'static str],
    /// (spawn, card title, the child thread, the output of its first tool call).
    cards: &'static [(
        &'static str,
        &'static str,
        &'static [&'static str],
        Option<&'static str>,
    )],
    /// A note the proxy must make (once).
    note: Option<&'static str>,
}

const LISTING: &str = "## /home/user/project\n\n| Name | Type | Size |\n|------|------|------|\n| a.txt | file | 13 B |\n| b.txt | file | 13 B |\n\n*0 directories, 2 files*";

fn survey(tag: &str) -> [String; 4] {
    [
        format!("user:SUBAGENT:{tag} list the text files in the project and report what you find"),
        format!("agent:Subagent {tag} looking around."),
        String::new(),
        format!("agent:SUB-ANSWER {tag}: the project holds a.txt, b.txt."),
    ]
}

const RUNS: &[Run] = &[
    Run {
        file: "agents/agentpool-2.9.18-tool_box-one-subagent.jsonl",
        parent: "ses_230abb520001JlJpHAGk4tGzVW",
        parent_thread: &[
            "agent:I will delegate this.",
            "tool:call_task_1:completed",
            "agent:All subagents finished: The file a.txt says: hello from a",
        ],
        cards: &[(
            "call_task_1",
            "Read a.txt",
            &[
                "user:Read the file a.txt and tell me what it says.",
                "agent:Reading a.txt.",
                "tool:call_task_1-box-1:completed",
                "agent:The file a.txt says: hello from a",
            ],
            Some("hello from a"),
        )],
        note: None,
    },
    Run {
        file: "agents/agentpool-2.9.18-tool_box-two-subagents.jsonl",
        parent: "ses_230abecea001Flqnib5LcSlGX7",
        parent_thread: &[
            "agent:I will delegate this.",
            "tool:call_task_1:completed",
            "tool:call_task_2:completed",
            "agent:All subagents finished: The file a.txt says: hello from a; The file b.txt says: hello from b",
        ],
        cards: &[
            (
                "call_task_1",
                "Read a.txt",
                &[
                    "user:Read the file a.txt and tell me what it says.",
                    "agent:Reading a.txt.",
                    "tool:call_task_1-box-1:completed",
                    "agent:The file a.txt says: hello from a",
                ],
                Some("hello from a"),
            ),
            (
                "call_task_2",
                "Read b.txt",
                &[
                    "user:Read the file b.txt and tell me what it says.",
                    "agent:Reading b.txt.",
                    "tool:call_task_2-box-1:completed",
                    "agent:The file b.txt says: hello from b",
                ],
                Some("hello from b"),
            ),
        ],
        note: None,
    },
    // Both tasks go to `helper`: its one box interleaves both runs, completes, and opens
    // again under the same id. Nobody can tell whose it is.
    Run {
        file: "agents/agentpool-2.9.18-tool_box-same-agent-twice.jsonl",
        parent: "ses_230b11fe5001KPoF7gHbRB3JZo",
        parent_thread: &[
            "agent:I will delegate this.",
            "tool:call_task_1:completed",
            "tool:call_task_2:completed",
            "tool:subagent:helper:1:completed",
            "agent:All subagents finished: The file a.txt says: hello from a; The file b.txt says: hello from b",
        ],
        cards: &[
            (
                "call_task_1",
                "Read a.txt",
                &[
                    "user:Read the file a.txt and tell me what it says.",
                    "agent:The file a.txt says: hello from a",
                ],
                None,
            ),
            (
                "call_task_2",
                "Read b.txt",
                &[
                    "user:Read the file b.txt and tell me what it says.",
                    "agent:The file b.txt says: hello from b",
                ],
                None,
            ),
        ],
        note: Some("`subagent:helper:1` carries the work of `helper`, which 2 open spawns (call_task_1, call_task_2) delegate to"),
    },
];

/// A real run through the proxy (a dump): its parent, and (spawn, agent) of each card, whose
/// child thread `survey` describes.
type DumpRun = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const DUMPS: &[DumpRun] = &[
    (
        "e2e/agentpool-2.9.18-one.dump.jsonl",
        "ses_2310854d3001wh2vHfMiq81Gvz",
        &[("call_0001", "alpha")],
    ),
    (
        "e2e/agentpool-2.9.18-two.dump.jsonl",
        "ses_23109ca8d001qSEa1G3cULyzru",
        &[("call_0001", "alpha"), ("call_0002", "beta")],
    ),
    (
        "e2e/agentpool-2.9.18-one-box.dump.jsonl",
        "ses_23176a9b4001oAhcSWehQCCib6",
        &[("call_0001", "alpha")],
    ),
];

fn records(file: &str) -> Vec<(String, Value)> {
    if file.starts_with("e2e/") {
        dump_fixture(file)
    } else {
        fixture(file)
    }
}

fn check_card(
    h: &mut Harness,
    name: &str,
    parent: &str,
    spawn: &str,
    title: &str,
    thread: &[String],
    output: Option<&str>,
) {
    let card = h.zed.threads[parent].card(spawn).cloned().expect("card");
    let child = child_session_id(parent, spawn);
    assert_eq!(card.title, title, "{name} {spawn}: the card's title");
    assert_eq!(card.status, "completed", "{name} {spawn}");
    assert_eq!(card.tool_name.as_deref(), Some("task"), "{name} {spawn}");
    let info = card.subagent.expect("subagent info");
    assert_eq!(
        (info.session_id.as_str(), info.start, info.end),
        (child.as_str(), 0, Some(thread.len() as u64 - 1)),
        "{name} {spawn}: the card's range"
    );
    h.load_child(&child);
    let got = entry_lines(&h.zed.threads[&child].entries);
    assert_eq!(got, thread, "{name} {spawn}: the child thread");
    let first_tool = h.zed.threads[&child]
        .tool_calls()
        .next()
        .map(|t| t.text.clone());
    assert_eq!(
        first_tool.as_deref(),
        output,
        "{name} {spawn}: the child's tool output"
    );
}

#[test]
fn boxes_become_their_childs_thread_unless_ambiguous() {
    for run in RUNS {
        for scan_ahead in [false, true] {
            let name = format!("{} (scan ahead: {scan_ahead})", run.file);
            let mut h = Harness::zed();
            h.scan_ahead = scan_ahead;
            play(&mut h, &records(run.file));
            assert_eq!(
                entry_lines(&h.zed.threads[run.parent].entries),
                run.parent_thread,
                "{name}: the parent thread"
            );
            for (spawn, title, thread, output) in run.cards {
                let thread: Vec<String> = thread.iter().map(|s| (*s).to_owned()).collect();
                check_card(&mut h, &name, run.parent, spawn, title, &thread, *output);
            }
            let notes: Vec<&String> = h
                .notes
                .iter()
                .filter(|n| n.contains("carries the work"))
                .collect();
            match run.note {
                Some(n) => {
                    assert_eq!(notes.len(), 1, "{name}: one note: {notes:?}");
                    assert!(notes[0].contains(n), "{name}: {notes:?}");
                }
                None => assert!(notes.is_empty(), "{name}: {notes:?}"),
            }
            assert!(
                h.zed.dropped.is_empty() && h.zed.rejected.is_empty(),
                "{name}"
            );
            assert!(
                h.zed.orphan_tool_updates.is_empty(),
                "{name}: {:?}",
                h.zed.orphan_tool_updates
            );
        }
    }
    for (file, parent, cards) in DUMPS {
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        play(&mut h, &dump_fixture(file));
        let thread = &h.zed.threads[*parent];
        assert_eq!(thread.cards().len(), cards.len(), "{file}");
        assert!(
            thread.tool_calls().all(|t| !t.id.starts_with("subagent:")),
            "{file}: no box in the parent"
        );
        for (spawn, tag) in *cards {
            let mut want = survey(tag);
            want[2] = format!("tool:{spawn}-box-1:completed");
            let title = format!("Survey text files ({tag})");
            check_card(&mut h, file, parent, spawn, &title, &want, Some(LISTING));
            let stored = store
                .child(&child_session_id(parent, spawn))
                .expect("stored");
            assert_eq!(stored.entry_count, 4, "{file} {spawn}");
        }
    }
}

/// A spawn of `agent` on session `S`, and its completion.
fn task(id: &str, agent: &str) -> Value {
    json!({"sessionUpdate": "tool_call", "toolCallId": id, "kind": "other", "status": "pending",
        "title": "Calling task",
        "rawInput": {"agent_or_team": agent, "prompt": format!("work of {id}"), "description": format!("Task {id}")}})
}

fn task_done(id: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": format!("done {id}")}}],
        "rawOutput": format!("done {id}")})
}

fn box_open(name: &str) -> Value {
    json!({"sessionUpdate": "tool_call", "toolCallId": format!("subagent:{name}:1"), "kind": "other",
        "status": "pending", "title": format!("🤖 {name}"), "rawInput": {}})
}

fn box_text(name: &str, text: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("subagent:{name}:1"),
        "status": "in_progress", "title": format!("🤖 {name}"),
        "content": [{"type": "content", "content": {"type": "text", "text": text}}]})
}

fn box_done(name: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("subagent:{name}:1"), "status": "completed"})
}

const S: &str = "ses_ap";

#[test]
fn a_box_that_opens_again_goes_on_in_its_child_and_never_makes_a_card() {
    // (what happens between the two runs of the box, its second run's owner)
    let cases: [(&str, Option<&str>); 3] = [
        ("the spawn still open", Some("t1")),
        (
            "the first spawn done, another open for the agent",
            Some("t2"),
        ),
        ("no spawn open for the agent", None),
    ];
    for (name, second_owner) in cases {
        let mut h = Harness::zed_session("agentpool", S);
        h.update(S, task("t1", "helper"));
        h.update(S, box_open("helper"));
        h.update(S, box_text("helper", "Reading "));
        h.update(S, box_text("helper", "Reading a.\n🔧 Using tool: read\n"));
        h.update(
            S,
            box_text("helper", "Reading a.\n🔧 Using tool: read\n✅ read: A\n"),
        );
        h.update(S, box_done("helper"));
        let still_open: &[&str] = match second_owner {
            Some("t2") => {
                h.update(S, task_done("t1"));
                h.update(S, task("t2", "helper"));
                &["t2"]
            }
            None => {
                h.update(S, task_done("t1"));
                &[]
            }
            _ => &["t1"],
        };
        h.update(S, box_open("helper"));
        h.update(S, box_text("helper", "Again "));
        h.update(S, box_text("helper", "Again \n🔧 Using tool: grep\n"));
        h.update(S, box_done("helper"));
        for t in still_open {
            h.update(S, task_done(t));
        }
        let parent = &h.zed.threads[S];
        let wanted_cards = if second_owner == Some("t2") { 2 } else { 1 };
        assert_eq!(parent.cards().len(), wanted_cards, "{name}: cards");
        let boxes = parent
            .tool_calls()
            .filter(|t| t.id.starts_with("subagent:"))
            .count();
        assert_eq!(
            boxes,
            usize::from(second_owner.is_none()),
            "{name}: the box in the parent"
        );
        let t1 = child_session_id(S, "t1");
        h.load_child(&t1);
        let mut want = vec![
            "user:work of t1".to_owned(),
            "agent:Reading a.".to_owned(),
            "tool:t1-box-1:completed".to_owned(),
        ];
        if second_owner == Some("t1") {
            want.extend([
                "agent:Again ".to_owned(),
                "tool:t1-box-3:in_progress".to_owned(),
            ]);
        }
        want.push("agent:done t1".to_owned());
        assert_eq!(
            entry_lines(&h.zed.threads[&t1].entries),
            want,
            "{name}: t1's thread"
        );
        if second_owner == Some("t2") {
            let t2 = child_session_id(S, "t2");
            h.load_child(&t2);
            assert_eq!(
                entry_lines(&h.zed.threads[&t2].entries),
                [
                    "user:work of t2",
                    "agent:Again ",
                    "tool:t2-box-1:in_progress",
                    "agent:done t2"
                ],
                "{name}: t2's thread"
            );
        }
        assert!(h.zed.orphan_tool_updates.is_empty(), "{name}");
    }
}

#[test]
fn a_box_re_sent_whole_is_stored_once() {
    // A long child: 400 steps, each version the whole text so far (as AgentPool sends it),
    // ~3 MB on the wire for a 14 KB text.
    let mut h = Harness::zed_session("agentpool", S);
    let store = h.store.clone();
    h.update(S, task("t1", "helper"));
    h.update(S, box_open("helper"));
    let mut text = String::new();
    let mut wire = 0usize;
    for n in 0..400 {
        if n % 40 == 39 {
            text.push_str(&format!("\n🔧 Using tool: step{n}\n"));
        } else {
            text.push_str(&format!("word{n:04} of the child's long answer. "));
        }
        let frame = update_msg(S, box_text("helper", &text));
        wire += frame.to_string().len();
        h.agent(frame);
    }
    h.update(S, box_done("helper"));
    h.update(S, task_done("t1"));
    let stored = store.child(&child_session_id(S, "t1")).expect("stored");
    let bytes: usize = stored.updates.iter().map(String::len).sum();
    // Each version stores only what it added: the text once, plus each update's envelope.
    assert!(
        bytes < text.len() + 160 * stored.updates.len() && stored.updates.len() <= 402,
        "{bytes} bytes in {} updates for a {}-byte text",
        stored.updates.len(),
        text.len()
    );
    assert!(
        wire > 20 * bytes,
        "the wire carried {wire} bytes, the store {bytes}"
    );
    // What is stored is the thread Zed gets.
    let child = child_session_id(S, "t1");
    h.load_child(&child);
    let entries = entry_lines(&h.zed.threads[&child].entries);
    assert_eq!(entries.len(), 1 + 2 * 10 + 1, "{entries:?}");
}

#[test]
fn a_box_flood_reaches_the_card_paced() {
    // A version of the box every 20 ms for 4 s, a tool call every 10th: the card's live
    // title (the child's latest step) changes 40 times, but goes out at most every 250 ms,
    // and its last state is delivered.
    let mut h = Harness::zed_session("agentpool", S);
    h.update(S, task("t1", "helper"));
    h.update(S, box_open("helper"));
    let before = h.to_client.len();
    let mut text = String::new();
    for n in 0..200 {
        if n % 5 == 4 {
            text.push_str(&format!("\n🔧 Using tool: step{n}\n"));
        } else {
            text.push_str(&format!("word{n:03} "));
        }
        h.update(S, box_text("helper", &text));
        h.advance(20);
    }
    h.advance(300);
    let card_updates = h.to_client[before..]
        .iter()
        .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
        .filter(|v| v.pointer("/params/update/toolCallId") == Some(&json!("t1")))
        .count();
    assert!(
        (8..=20).contains(&card_updates),
        "{card_updates} card updates for 40 steps in 4 s"
    );
    let card = &h.zed.threads[S].cards()[0];
    assert!(card.title.contains("step199"), "{}", card.title);
    h.update(S, box_done("helper"));
    h.update(S, task_done("t1"));
    let card = &h.zed.threads[S].cards()[0];
    assert_eq!(
        (card.status.as_str(), card.title.as_str()),
        ("completed", "Task t1")
    );
}

#[test]
fn a_reopened_parent_gets_its_cards_back_from_the_store() {
    // AgentPool replays nothing on `session/load` of the parent (the reopen dump): the proxy
    // shows the cards of the children its store kept, before the load's answer, so Zed finds
    // the children again; without the store, the thread reopens empty.
    let live = dump_fixture("e2e/agentpool-2.9.18-one-box.dump.jsonl");
    let parent = "ses_23176a9b4001oAhcSWehQCCib6";
    let child = child_session_id(parent, "call_0001");
    for rules in ZedRules::ALL {
        for with_store in [true, false] {
            let store = StoreModel::default();
            let mut h = Harness::with_store(zed_config(), store.clone());
            play(&mut h, &live);
            let kept = if with_store {
                store
            } else {
                StoreModel::default()
            };
            let mut h = Harness::with_store(zed_config(), kept);
            h.zed = ZedModel::new(rules);
            play(
                &mut h,
                &dump_fixture("e2e/agentpool-2.9.18-one-reopen.dump.jsonl"),
            );
            let id = h.load_child(&child);
            let answer = h.response(id).expect("answered");
            if with_store {
                let thread = &h.zed.threads[parent];
                let cards = thread.cards();
                assert_eq!(cards.len(), 1, "{rules:?}: {:#?}", thread.entries);
                assert_eq!(
                    (cards[0].id.as_str(), cards[0].status.as_str()),
                    ("call_0001", "completed"),
                    "{rules:?}"
                );
                assert_eq!(cards[0].title, "Survey text files (alpha)", "{rules:?}");
                assert_eq!(answer["result"], json!({}));
                let mut want = survey("alpha").to_vec();
                want[2] = "tool:call_0001-box-1:completed".to_owned();
                assert_eq!(entry_lines(&h.zed.threads[&child].entries), want);
                h.assert_zed_clean();
            } else {
                assert!(
                    h.zed.threads[parent].entries.is_empty(),
                    "nothing replayed, nothing stored"
                );
                assert_eq!(answer["error"]["code"], json!(-32002), "{answer}");
            }
        }
    }
}

#[test]
fn a_box_over_the_transcript_limit_goes_to_the_parent_whole() {
    let mut cfg = zed_config();
    cfg.limits.max_transcript_bytes = 600;
    let mut h = Harness::new(cfg);
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "zed"}}),
    );
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "agentpool"}}}),
    );
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
    h.update(S, task("t1", "helper"));
    h.update(S, box_open("helper"));
    let mut text = String::new();
    for n in 0..20 {
        text.push_str(&format!("word{n} "));
        h.update(S, box_text("helper", &text));
    }
    h.update(S, box_done("helper"));
    h.update(S, task_done("t1"));
    assert!(
        h.notes.iter().any(|n| n.contains("max_transcript_bytes")),
        "{:?}",
        h.notes
    );
    let parent = &h.zed.threads[S];
    let shown = parent
        .card("subagent:helper:1")
        .cloned()
        .expect("the box, shown in the parent");
    assert_eq!(
        (shown.status.as_str(), shown.text.as_str()),
        ("completed", text.as_str())
    );
    assert!(
        h.zed.orphan_tool_updates.is_empty(),
        "{:?}",
        h.zed.orphan_tool_updates
    );
    assert_eq!(parent.cards().len(), 1);
}

/// A box update as the agent writes it, its text given as JSON string contents (escapes and
/// all), the box's title beside it.
fn box_line(title: &str, text_json: &str) -> bytes::Bytes {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{s}","update":"#,
            r#"{{"sessionUpdate":"tool_call_update","toolCallId":"subagent:helper:1","status":"in_progress","#,
            r#""title":"{title}","content":[{{"type":"content","content":{{"type":"text","text":"{text}"}}}}]}}}}}}"#,
            "\n"
        ),
        s = S,
        title = title,
        text = text_json
    )
    .into()
}

#[test]
fn a_re_sent_box_is_read_by_what_changed_wherever_it_changed() {
    // Most versions of a box only append to its text, and are read as the piece they
    // append; every other change must still be told: the same bytes again, one byte changed
    // in the middle of the text, a piece of escapes, a field beside the text.
    let mut h = Harness::zed_session("agentpool", S);
    h.update(S, task("t1", "helper"));
    h.update(S, box_open("helper"));
    let title = "\u{1f916} helper";
    let v1 = r"Reading a.\n\ud83d\udd27 Using tool: read\n";
    h.agent_line(box_line(title, v1));
    h.agent_line(box_line(title, v1));
    let v2 = format!(r#"{v1}\u2705 read: \"caf\u00e9\"\n"#);
    h.agent_line(box_line(title, &v2));
    let v3 = format!("{v2}Done");
    h.agent_line(box_line(title, &v3));
    // Grown, with the box's title changed beside it.
    let busy = "\u{1f916} helper (busy)";
    let v4 = format!("{v3} now.");
    h.agent_line(box_line(busy, &v4));
    let v5 = format!(r"{v4}\n\ud83d\udd27 Using tool: grep\n");
    h.agent_line(box_line(busy, &v5));
    // One byte changed in the middle (the first tool's output), the box's last version.
    let v6 = v5.replacen("caf", "cof", 1);
    assert_eq!((v6.len(), v6 == v5), (v5.len(), false));
    h.agent_line(box_line(busy, &v6));
    h.update(S, box_done("helper"));
    h.update(S, task_done("t1"));
    let child = child_session_id(S, "t1");
    h.load_child(&child);
    let entries = &h.zed.threads[&child].entries;
    let lines = entry_lines(entries);
    assert_eq!(
        lines[..5],
        [
            "user:work of t1",
            "agent:Reading a.",
            "tool:t1-box-1:completed",
            "agent:Done now.",
            "tool:t1-box-3:in_progress"
        ],
        "{lines:?}"
    );
    let tools: Vec<(&str, &str, &str)> = entries
        .iter()
        .filter_map(|e| match e {
            crate::support::zed_model::Entry::Tool(t) => {
                Some((t.id.as_str(), t.title.as_str(), t.text.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("t1-box-1", "read", "\"cof\u{e9}\""),
            ("t1-box-3", "grep", "")
        ]
    );
    assert!(h.zed.orphan_tool_updates.is_empty());
    h.assert_zed_clean();
}
