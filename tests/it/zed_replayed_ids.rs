//! A reopened parent whose agent replays each spawn under a new tool call id (Kimi Code CLI
//! 1.51.0: a new turn uuid per replay), over the kit's real `two` run: live, then the parent
//! reopened by a new proxy over the same store. The spawn's end names Kimi's `agent_id` (the
//! preset's `agent_child_id`), stable across the replay and kept in the store: the stored
//! child takes the replayed spawn, so each reopened card opens the child thread it opened
//! live.
//!
//! The frames: `tests/fixtures/e2e/kimi-1.51.0-two-{live,reopen}.dump.jsonl`.

use acp_proxy::subagents::records::{self, Record};

use crate::support::engine::{
    assert_task_then_answer, dump_fixture, entry_lines, play, zed_config, Harness, StoreModel,
};

/// The parent thread's cards: (tool call id, child session id).
fn cards(h: &Harness) -> (String, Vec<(String, String)>) {
    let (parent, thread) = h
        .zed
        .threads
        .iter()
        .find(|(_, t)| !t.cards().is_empty())
        .expect("a thread with cards");
    let mut cards: Vec<(String, String)> = thread
        .cards()
        .iter()
        .map(|c| {
            let info = c.subagent.as_ref().expect("a subagent card");
            (c.id.clone(), info.session_id.clone())
        })
        .collect();
    cards.sort_by(|a, b| a.1.cmp(&b.1));
    (parent.clone(), cards)
}

fn thread_of(h: &mut Harness, child: &str) -> Vec<String> {
    h.load_child(child);
    entry_lines(&h.zed.threads[child].entries)
}

#[test]
fn a_spawn_replayed_under_a_new_id_opens_the_stored_child_its_agent_id_names() {
    let store = StoreModel::default();
    let mut live = Harness::with_store(zed_config(), store.clone());
    play(
        &mut live,
        &dump_fixture("e2e/kimi-1.51.0-two-live.dump.jsonl"),
    );
    read_records(&mut live);
    let (parent, live_cards) = cards(&live);
    assert_eq!(live_cards.len(), 2);
    let mut live_threads = Vec::new();
    for (_, child) in &live_cards {
        let lines = thread_of(&mut live, child);
        assert_task_then_answer(&lines);
        let tools = lines.iter().filter(|l| l.starts_with("tool:")).count();
        let alpha = lines[0].contains("alpha");
        assert_eq!(tools, usize::from(alpha), "{lines:?}");
        // Kimi's agent id is stored with the child.
        let stored = store.child(child).expect("stored");
        assert!(
            stored
                .agent_child_id
                .as_deref()
                .is_some_and(|id| !id.is_empty()),
            "{stored:?}"
        );
        live_threads.push(lines);
    }

    let mut h = Harness::with_store(zed_config(), store);
    play(
        &mut h,
        &dump_fixture("e2e/kimi-1.51.0-two-reopen.dump.jsonl"),
    );
    let (reparent, reopened) = cards(&h);
    assert_eq!(reparent, parent);
    assert_eq!(reopened.len(), 2, "{reopened:?}");
    for ((live_call, live_child), (call, child)) in live_cards.iter().zip(&reopened) {
        assert_ne!(live_call, call, "Kimi replays the spawn under a new id");
        assert_eq!(live_child, child, "the card opens the stored child");
    }
    for ((_, child), before) in reopened.iter().zip(&live_threads) {
        assert_eq!(
            &thread_of(&mut h, child),
            before,
            "{child} opens as it did live"
        );
    }
    assert!(
        h.notes
            .iter()
            .filter(|n| n.contains("names the agent's id") && n.contains("of this stored child"))
            .count()
            == 2,
        "{:?}",
        h.notes
    );
    assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    assert!(
        h.records.is_empty(),
        "a stored child's record is not read again"
    );

    // Without the store nothing is held: the replayed spawns are new children, with the task
    // and the answer from the replay, and what Kimi's record of each adds (its `agent_id` is
    // the replay's too).
    let mut blind = Harness::with_store(zed_config(), StoreModel::default());
    play(
        &mut blind,
        &dump_fixture("e2e/kimi-1.51.0-two-reopen.dump.jsonl"),
    );
    read_records(&mut blind);
    let (_, fresh) = cards(&blind);
    assert_eq!(fresh.len(), 2);
    let mut fresh_threads = Vec::new();
    for (_, child) in &fresh {
        assert!(!live_cards.iter().any(|(_, c)| c == child));
        let lines = thread_of(&mut blind, child);
        assert_task_then_answer(&lines);
        fresh_threads.push(lines);
    }
    fresh_threads.sort();
    live_threads.sort();
    assert_eq!(fresh_threads, live_threads);
}

/// Kimi's record of alpha (`child_record = "kimi"`) fills alpha's thread; beta's is not found
/// (the answer its spawn gave).
fn read_records(h: &mut Harness) {
    let alpha_record = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/e2e/kimi-1.51.0-two.agent-alpha.wire.jsonl"),
    )
    .expect("the record fixture");
    for watch in h.records.clone() {
        let alpha = watch.task.as_deref().is_some_and(|t| t.contains("alpha"));
        let record = if alpha {
            records::parse(&watch, &alpha_record)
        } else {
            Record::default()
        };
        h.record_read(&watch.child, record);
    }
}
