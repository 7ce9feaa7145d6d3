//! Children whose agent keeps a record of them on disk (`child_record`): Claude on Node 20
//! (claude-agent-acp 0.49.0, Claude Code 2.1.185) sends a background child's tool calls but
//! never its answer or its end; Claude Code writes them to `subagents/agent-<id>.jsonl`. The
//! engine asks the shell to follow that record and takes what it lacks from it. Real frames:
//! `tests/fixtures/e2e/claude-agent-acp-0.49.0-*.dump.jsonl` and the record Claude Code wrote
//! in the background run (`…-background.agent.jsonl`).

use acp_proxy::subagents::ids::AgentSessionId;
use acp_proxy::subagents::preset::spec::ChildRecord;
use acp_proxy::subagents::records::{self, Record, RecordWatch};
use serde_json::Value;

use crate::support::engine::{
    dump_fixture, entry_lines, play as play_dump, zed_config, Harness, StoreModel,
};
use crate::support::zed_model::ZedRules;

const AGENT_ID: &str = "ac27ffe934379da0d";

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/e2e")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {} readable: {e}", path.display()))
}

/// The client's and the agent's frames of a dump, in order (from_client, message), without
/// the client's loads of children and their answers (the tests load children themselves).
fn frames(name: &str) -> Vec<(bool, Value)> {
    let mut out = Vec::new();
    for l in fixture(name).lines().skip(1) {
        let rec: Value = serde_json::from_str(l).expect("dump line is JSON");
        let from_client = match rec["dir"].as_str() {
            Some("client→proxy") => true,
            Some("agent→proxy") => false,
            _ => continue,
        };
        let Ok(msg) = serde_json::from_str::<Value>(rec["frame"].as_str().unwrap_or("")) else {
            continue;
        };
        let child_load = from_client
            && msg["method"] == "session/load"
            && msg["params"]["sessionId"]
                .as_str()
                .is_some_and(|s| s.starts_with("acpx-sub-"));
        if child_load {
            continue;
        }
        out.push((from_client, msg));
    }
    out
}

fn play(frames: &[(bool, Value)]) -> Harness {
    let mut h = Harness::zed();
    h.zed = crate::support::zed_model::ZedModel::new(ZedRules::Main);
    for (from_client, msg) in frames {
        h.advance(10);
        if *from_client {
            h.client(msg.clone());
        } else {
            h.agent(msg.clone());
        }
    }
    h.advance(5_000);
    h
}

/// The one card of the parent: (child id, status, end index).
fn the_card(h: &Harness) -> (String, String, Option<u64>) {
    let cards: Vec<_> = h
        .zed
        .threads
        .iter()
        .filter(|(s, _)| !s.starts_with("acpx-sub-"))
        .flat_map(|(_, t)| t.cards())
        .filter_map(|c| {
            let info = c.subagent.as_ref()?;
            Some((info.session_id.clone(), c.status.clone(), info.end))
        })
        .collect();
    assert_eq!(cards.len(), 1, "one card: {cards:?}");
    cards[0].clone()
}

fn child_thread(h: &mut Harness, child: &str) -> Vec<String> {
    h.load_child(child);
    entry_lines(&h.zed.threads[child].entries)
}

fn claude_watch(agent_id: &str) -> RecordWatch {
    RecordWatch {
        child: String::new(),
        session: AgentSessionId::new(String::new()),
        agent_id: agent_id.to_owned(),
        task: None,
        spawn: String::new(),
        format: ChildRecord::ClaudeCode,
        live: false,
        within_ms: 0,
    }
}

fn the_record() -> Record {
    records::parse(
        &claude_watch(AGENT_ID),
        fixture("claude-agent-acp-0.49.0-background.agent.jsonl").as_bytes(),
    )
}

#[test]
fn a_background_childs_answer_and_end_come_from_the_agents_record() {
    let mut h = play(&frames("claude-agent-acp-0.49.0-background.dump.jsonl"));
    // The launch asked for the record, with the agent's id of the child and its session.
    assert_eq!(h.records.len(), 1, "one record followed");
    let watch = h.records[0].clone();
    assert_eq!(watch.agent_id, AGENT_ID);
    assert_eq!(watch.format, ChildRecord::ClaudeCode);
    let (child, _, _) = the_card(&h);
    assert_eq!(watch.child, child);
    // What the wire alone gives: the task and the tool call, no answer.
    let before = child_thread(&mut h, &child);
    assert_eq!(before.len(), 2, "{before:?}");
    assert!(before[0].starts_with("user:SUBAGENT:alpha"), "{before:?}");
    assert!(before[1].starts_with("tool:"), "{before:?}");

    h.record_read(&child, the_record());
    let after = entry_lines(&h.zed.threads[&child].entries);
    assert_eq!(after.len(), 3, "{after:?}");
    assert_eq!(
        after[2],
        "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt."
    );
    let (_, status, end) = the_card(&h);
    assert_eq!((status.as_str(), end), ("completed", Some(2)));
    h.assert_zed_clean();
    // The store holds it, for a reopen.
    let stored = h.store.child(&child).expect("stored");
    assert!(
        stored
            .updates
            .iter()
            .any(|u| u.contains("SUB-ANSWER alpha")),
        "stored: {:?}",
        stored.updates
    );
    // A second report changes nothing (the child ended).
    h.record_read(&child, the_record());
    assert_eq!(entry_lines(&h.zed.threads[&child].entries).len(), 3);
}

#[test]
fn with_nothing_of_the_child_on_the_wire_the_record_is_its_thread() {
    // The same run without the child's tool calls (as an adapter that sends nothing of a
    // background child would): the record's whole thread, after the task.
    let frames: Vec<(bool, Value)> = frames("claude-agent-acp-0.49.0-background.dump.jsonl")
        .into_iter()
        .filter(|(_, m)| {
            m.pointer("/params/update/_meta/claudeCode/parentToolUseId")
                .is_none()
                && m.pointer("/params/update/toolCallId") != Some(&Value::from("toolu_0002"))
        })
        .collect();
    let mut h = play(&frames);
    let (child, _, _) = the_card(&h);
    assert_eq!(child_thread(&mut h, &child).len(), 1);
    h.record_read(&child, the_record());
    let after = entry_lines(&h.zed.threads[&child].entries);
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after[1], "agent:Subagent alpha looking around.");
    assert!(
        after[2].starts_with("tool:toolu_0002:completed"),
        "{after:?}"
    );
    assert!(after[3].starts_with("agent:SUB-ANSWER alpha"), "{after:?}");
    let (_, status, end) = the_card(&h);
    assert_eq!((status.as_str(), end), ("completed", Some(3)));
    h.assert_zed_clean();
}

#[test]
fn a_record_that_has_not_ended_or_a_foreground_child_changes_nothing() {
    let mut h = play(&frames("claude-agent-acp-0.49.0-background.dump.jsonl"));
    let (child, _, _) = the_card(&h);
    let before = child_thread(&mut h, &child);
    let mut running = the_record();
    running.answer = None;
    h.record_read(&child, running);
    assert_eq!(entry_lines(&h.zed.threads[&child].entries), before);
    // A foreground child ends with its spawn: no record is followed.
    let h = play(&frames("claude-agent-acp-0.49.0-one.dump.jsonl"));
    assert!(h.records.is_empty(), "{:?}", h.records);
}

/// Cline 3.0.65 with two children open: their events come on the parent tied to neither, so
/// the first to end has only its task in its thread; its spawn's answer waits for Cline's
/// record of it (found by the task), whose thread goes in its place.
#[test]
fn clines_parallel_child_gets_its_work_from_clines_record() {
    const TASK: &str = "SUBAGENT:alpha list the text files in the project and report what you find";
    let frames = frames("cline-3.0.65-two.dump.jsonl");
    let mut h = play(&frames);
    assert_eq!(h.records.len(), 1, "{:?}", h.records);
    let watch = h.records[0].clone();
    assert_eq!(watch.format, ChildRecord::Cline);
    assert_eq!(watch.task.as_deref(), Some(TASK));
    let alpha = watch.child.clone();
    // Until the record comes, the thread holds the task only (the answer waits).
    assert_eq!(child_thread(&mut h, &alpha), [format!("user:{TASK}")]);
    let record = records::parse(
        &watch,
        fixture("cline-3.0.65-two.agent-alpha.messages.json").as_bytes(),
    );
    assert!(record.ended());
    h.record_read(&alpha, record);
    let thread = entry_lines(&h.zed.threads[&alpha].entries);
    assert_eq!(thread.len(), 4, "{thread:?}");
    assert_eq!(thread[1], "agent:Subagent alpha looking around.");
    assert!(thread[2].starts_with("tool:call_"), "{thread:?}");
    assert_eq!(
        thread[3],
        "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt."
    );
    h.assert_zed_clean();

    // No record in time: the answer the spawn gave.
    let mut h = play(&frames);
    let alpha = h.records[0].child.clone();
    h.record_read(&alpha, Record::default());
    assert_eq!(
        child_thread(&mut h, &alpha),
        [
            format!("user:{TASK}"),
            "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.".to_owned()
        ]
    );
}

/// Kimi 1.51.0 runs each child inside its `Agent` tool and puts none of its work on the wire;
/// the spawn's result names the child (`agent_id: …`), whose own wire Kimi keeps in
/// `subagents/<agent_id>/wire.jsonl`. When the spawn completes, its answer waits for that
/// record (`child_record = "kimi"`), whose run goes in its place: the child's words, its tool
/// call with its result, Kimi's ask for a fuller answer and the answer. The frames are the
/// kit's `two` run; the record is alpha's of a later run of the same kit.
#[test]
fn kimis_child_gets_its_work_from_kimis_record() {
    const TASK: &str = "SUBAGENT:alpha list the text files in the project and report what you find";
    const ANSWER: &str = "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.";
    let frames = dump_fixture("e2e/kimi-1.51.0-two-live.dump.jsonl");
    let run = |read_alpha: bool| {
        let mut h = Harness::with_store(zed_config(), StoreModel::default());
        play_dump(&mut h, &frames);
        // The records followed while the children ran (by their task) are another test's.
        let mut watches: Vec<RecordWatch> = h.records.iter().filter(|w| !w.live).cloned().collect();
        watches.sort_by_key(|w| w.agent_id.clone());
        let got: Vec<(&str, ChildRecord, Option<&str>)> = watches
            .iter()
            .map(|w| (w.agent_id.as_str(), w.format, w.task.as_deref()))
            .collect();
        let beta = TASK.replace("alpha", "beta");
        assert_eq!(
            got,
            [
                ("a5f66423b", ChildRecord::Kimi, Some(beta.as_str())),
                ("a73d69b0c", ChildRecord::Kimi, Some(TASK)),
            ],
            "each child's record, by Kimi's id of it"
        );
        let (beta, alpha) = (watches[0].clone(), watches[1].clone());
        // Until the record comes, the thread holds the task only (the answer waits).
        assert_eq!(child_thread(&mut h, &alpha.child), [format!("user:{TASK}")]);
        let record = if read_alpha {
            records::parse(
                &alpha,
                fixture("kimi-1.51.0-two.agent-alpha.wire.jsonl").as_bytes(),
            )
        } else {
            Record::default()
        };
        h.record_read(&alpha.child, record);
        // Beta's record is not found: the answer its spawn gave.
        h.record_read(&beta.child, Record::default());
        let beta_thread = child_thread(&mut h, &beta.child);
        assert_eq!(beta_thread.len(), 2, "{beta_thread:?}");
        assert!(beta_thread[1].starts_with("agent:SUB-ANSWER beta"));
        h.assert_zed_clean();
        let card = h
            .zed
            .threads
            .values()
            .flat_map(|t| t.cards())
            .find(|c| {
                c.subagent
                    .as_ref()
                    .is_some_and(|i| i.session_id == alpha.child)
            })
            .map(|c| (c.status.clone(), c.subagent.as_ref().and_then(|i| i.end)))
            .expect("alpha's card");
        (child_thread(&mut h, &alpha.child), card)
    };
    let (thread, card) = run(true);
    assert_eq!(
        thread,
        [
            format!("user:{TASK}"),
            "agent:Subagent alpha looking around.".to_owned(),
            "tool:a73d69b0c-1/call_0004:completed".to_owned(),
            ANSWER.to_owned(),
            "user:Your previous response was too brief. Please provide a more comprehensive summary that includes:\n\n1. Specific technical details and implementations\n2. Detailed findings and analysis\n3. All important information that the parent agent should know".to_owned(),
            ANSWER.to_owned(),
        ]
    );
    assert_eq!(card, ("completed".to_owned(), Some(5)));
    // No record in time: the answer the spawn gave.
    let (thread, card) = run(false);
    assert_eq!(thread, [format!("user:{TASK}"), ANSWER.to_owned()]);
    assert_eq!(card, ("completed".to_owned(), Some(1)));
}

/// While Kimi's foreground child runs, its record (found by the child's task: the spawn names
/// the child only when it ends) is followed, and what settles in it goes into the child thread
/// as the record grows, stepping the card's title with the child's latest step. The spawn's
/// end then adds only what was not taken: the thread ends as when the record is read at the
/// end alone. The frames are the kit's `two` run, cut before alpha's spawn completes; the
/// record is alpha's, read line by line as Kimi writes it.
#[test]
fn kimis_running_child_shows_its_work_from_kimis_record_as_it_grows() {
    const TASK: &str = "SUBAGENT:alpha list the text files in the project and report what you find";
    const AGENT: &str = "a73d69b0c";
    let frames = dump_fixture("e2e/kimi-1.51.0-two-live.dump.jsonl");
    let ends_alpha = |m: &Value| {
        m["params"]["update"]["status"] == "completed"
            && m["params"]["update"]["content"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("agent_id: {AGENT}")))
    };
    let end = frames
        .iter()
        .position(|(dir, m)| dir == "in" && ends_alpha(m))
        .expect("alpha's spawn completes in the run");
    let whole = fixture("kimi-1.51.0-two.agent-alpha.wire.jsonl");
    let lines: Vec<&str> = whole.lines().collect();
    // Today's thread: the record read once the spawn ended.
    let at_end = {
        let mut h = Harness::with_store(zed_config(), StoreModel::default());
        play_dump(&mut h, &frames);
        let alpha = h
            .records
            .iter()
            .find(|w| !w.live && w.agent_id == AGENT)
            .cloned()
            .expect("alpha's record asked for at its end");
        h.record_read(&alpha.child, records::parse(&alpha, whole.as_bytes()));
        child_thread(&mut h, &alpha.child)
    };
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    play_dump(&mut h, &frames[..end]);
    let live: Vec<RecordWatch> = h.records.iter().filter(|w| w.live).cloned().collect();
    assert_eq!(
        live.len(),
        2,
        "each running child's record followed: {live:?}"
    );
    let mut alpha = live
        .iter()
        .find(|w| w.task.as_deref() == Some(TASK))
        .cloned()
        .expect("alpha's record followed by its task");
    assert_eq!(
        (alpha.agent_id.as_str(), alpha.format),
        ("", ChildRecord::Kimi)
    );
    // The shell finds the file in the folder named by Kimi's id of the child.
    alpha.agent_id = AGENT.to_owned();
    let card_title = |h: &Harness| {
        h.zed
            .threads
            .values()
            .flat_map(|t| t.cards())
            .find(|c| {
                c.subagent
                    .as_ref()
                    .is_some_and(|i| i.session_id == alpha.child)
            })
            .map(|c| (c.title.clone(), c.status.clone()))
            .expect("alpha's card")
    };
    let mut seen_tool_title = false;
    let mut thread_lens = Vec::new();
    // The record as it grows, line by line (the last one torn, as while Kimi writes it),
    // until just before its end.
    let last = lines
        .iter()
        .rposition(|l| l.contains("TurnEnd"))
        .expect("an end");
    for n in 1..last {
        let mut text = lines[..n].join("\n");
        text.push('\n');
        text.push_str(&lines[n][..lines[n].len() / 2]);
        let record = records::parse(&alpha, text.as_bytes());
        assert!(!record.ended(), "not ended at line {n}");
        h.record_grew(&alpha.child, record);
        let thread = child_thread(&mut h, &alpha.child);
        let (title, status) = card_title(&h);
        assert_eq!(status, "in_progress", "the card runs on");
        seen_tool_title |= title.contains("Glob: *.txt");
        thread_lens.push(thread.len());
        // What shows is always the start of the thread the record gives at the end (a tool
        // call's status aside: it completes with its result).
        let call = |l: &String| {
            l.rsplit_once(':')
                .filter(|_| l.starts_with("tool:"))
                .map_or(l.clone(), |(c, _)| c.to_owned())
        };
        let shown: Vec<String> = thread.iter().map(call).collect();
        let ends: Vec<String> = at_end[..thread.len()].iter().map(call).collect();
        assert_eq!(shown, ends, "at line {n}");
    }
    let most = thread_lens.iter().copied().max().unwrap_or(0);
    assert!(
        most >= 4,
        "the child's words, tool call and answer showed while it ran: {thread_lens:?}"
    );
    assert!(
        thread_lens.windows(2).any(|w| w[0] < w[1]),
        "it grew in steps: {thread_lens:?}"
    );
    assert!(seen_tool_title, "the card showed the child's latest step");
    // The spawn completes: its answer waits for the record, now by Kimi's id of the child.
    play_dump(&mut h, &frames[end..]);
    let asked = h
        .records
        .iter()
        .filter(|w| !w.live && w.agent_id == AGENT)
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(asked.len(), 1, "asked once at the end: {asked:?}");
    h.record_read(&asked[0].child, records::parse(&asked[0], whole.as_bytes()));
    // A late report of the live record changes nothing either.
    h.record_grew(&alpha.child, records::parse(&alpha, whole.as_bytes()));
    assert_eq!(
        child_thread(&mut h, &alpha.child),
        at_end,
        "no entry twice, none lost"
    );
    let (title, status) = card_title(&h);
    assert_eq!(status, "completed");
    assert!(
        !title.contains("Glob"),
        "the card has its task's title back: {title}"
    );
    h.assert_zed_clean();
}

/// A Kimi child whose spawn fails is not waited for: the record followed while it ran is
/// followed no more (a watch of the same child that gives up at once replaces it).
#[test]
fn a_failed_kimi_spawn_stops_the_following_of_its_record() {
    const TASK: &str = "SUBAGENT:alpha list the text files in the project and report what you find";
    let mut frames = dump_fixture("e2e/kimi-1.51.0-two-live.dump.jsonl");
    let end = frames
        .iter()
        .position(|(dir, m)| {
            dir == "in"
                && m["params"]["update"]["status"] == "completed"
                && m["params"]["update"]["content"][0]["content"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("SUB-ANSWER alpha"))
        })
        .expect("alpha's spawn completes in the run");
    frames[end].1["params"]["update"]["status"] = "failed".into();
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    play_dump(&mut h, &frames);
    let alpha: Vec<&RecordWatch> = h
        .records
        .iter()
        .filter(|w| {
            w.task.as_deref() == Some(TASK)
                || (w.task.is_none()
                    && h.records
                        .iter()
                        .any(|l| l.live && l.child == w.child && l.task.as_deref() == Some(TASK)))
        })
        .collect();
    let kinds: Vec<(bool, u64)> = alpha.iter().map(|w| (w.live, w.within_ms)).collect();
    assert_eq!(kinds.len(), 2, "followed live, then stopped: {alpha:?}");
    assert!(kinds[0].0, "followed live first");
    assert_eq!(
        kinds[1],
        (false, 0),
        "then replaced by a watch that gives up at once"
    );
    let child = alpha[0].child.clone();
    // What the shell then reports (nothing) changes nothing; the thread has the failure.
    let before = child_thread(&mut h, &child);
    h.record_read(&child, Record::default());
    assert_eq!(child_thread(&mut h, &child), before);
    h.assert_zed_clean();
}
