//! Children the agent keeps a record of on local disk (`child_record`: Claude Code's
//! `subagents/agent-<id>.jsonl`, Cline's `agent_<id>.messages.json`). The engine does no I/O:
//! it asks the shell to follow the child's record ([`Action::FollowRecord`]); the shell reads
//! it off the relay path and hands back what it says once the child ended, or an empty record
//! when it gave up ([`Engine::record_read`]). When:
//! - a background child launches (its spawn completed at once, the child runs on): the
//!   record tells its end and answer, which the wire may never send (Claude on Node 20);
//! - a foreground child's spawn completes and its thread holds only its task (the wire
//!   brought none of its work, or none the proxy could tie to it: Cline's parallel
//!   children): the answer waits [`FOREGROUND_WAIT_MS`] at most for the record, whose thread
//!   then goes in its place.
//!
//! - a foreground child runs and its record is found while it runs ([`ChildRecord::live_key`]:
//!   Kimi's, by the child's task): the record is followed from the spawn on and what settles
//!   in it goes into the child thread as it comes, stepping the card's live progress like the
//!   child's own events would; the spawn's end then waits for the record as above, and adds
//!   only what was not taken yet, so the thread ends as it would without the live reading.
//!
//! The wire stays the first source: the record adds only what the child thread lacks, and a
//! child whose work came on the wire is left alone.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::child::events::settled_card_grown;
use crate::engine::{Action, Engine};
use crate::subagents::ids::ChildId;
use crate::subagents::model::ChildState;
use crate::subagents::preset::detect::PresetId;
use crate::subagents::preset::spec::{ChildRecord, RecordKey};
use crate::subagents::records::{Record, RecordWatch};
use crate::subagents::render;

/// Agent child ids remembered, at most (the map is cleared past it: only the following of
/// records not asked for yet is lost).
const MAX_KNOWN: usize = 4096;
/// How long a foreground child's answer waits for its record (Cline has written it by the
/// time the spawn completes; a record that is not there by then is missing, not late).
pub(in crate::engine) const FOREGROUND_WAIT_MS: u64 = 2_000;
/// How long a background child's record is followed.
const BACKGROUND_WAIT_MS: u64 = 6 * 3600 * 1000;

/// The agent's own ids of children whose preset reads a record, until the record is asked for.
#[derive(Debug, Default)]
pub(in crate::engine) struct ChildRecords {
    agent_ids: HashMap<ChildId, String>,
    /// Foreground children whose thread waits for their record, with the answer their spawn
    /// gave (what the thread gets if no record comes).
    awaiting: HashMap<ChildId, Value>,
    /// Children whose record is followed while they run, with how many of its updates their
    /// thread took (its copy of the task counted).
    live: HashMap<ChildId, usize>,
}

impl ChildRecords {
    pub(in crate::engine) fn forget(&mut self, child: &str) {
        if !self.agent_ids.is_empty() {
            self.agent_ids.remove(child);
        }
        if !self.live.is_empty() {
            self.live.remove(child);
        }
    }

    /// Whether the child's thread waits for its record.
    pub(in crate::engine) fn awaited(&self, child: &str) -> bool {
        !self.awaiting.is_empty() && self.awaiting.contains_key(child)
    }

    /// Whether the child's record is followed while it runs.
    pub(in crate::engine) fn followed_live(&self, child: &str) -> bool {
        !self.live.is_empty() && self.live.contains_key(child)
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 3] {
        [
            ("record_agent_ids", self.agent_ids.len()),
            ("records_awaited", self.awaiting.len()),
            ("records_live", self.live.len()),
        ]
    }
}

impl Engine {
    /// A spawn card's update: remember the agent's id of the child if its preset reads the
    /// agent's record of it.
    pub(in crate::engine) fn note_record_id(
        &mut self,
        cid: &ChildId,
        preset: Option<PresetId>,
        update: &Value,
    ) {
        let Some(p) = preset else { return };
        if self.detector.child_record_of(p) == ChildRecord::None {
            return;
        }
        let Some(id) = self
            .detector
            .agent_child_id_of(p, update)
            .filter(|id| !id.is_empty())
        else {
            return;
        };
        let ids = &mut self.child_records.agent_ids;
        if ids.len() >= MAX_KNOWN {
            ids.clear();
        }
        ids.insert(cid.clone(), id);
    }

    /// A background child launched: follow the agent's record of it, if its preset reads one.
    pub(in crate::engine) fn follow_record(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        if let Some(watch) = self.record_watch(cid, BACKGROUND_WAIT_MS, false) {
            out.push(Action::FollowRecord(watch));
        }
    }

    /// A foreground child runs (its spawn card updated, not ended): follow its record from
    /// now on, once, if its preset reads one that can be found while the child runs.
    pub(in crate::engine) fn follow_live(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        let records = &self.child_records;
        if records.live.len() >= MAX_KNOWN || records.live.contains_key(cid) {
            return;
        }
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        let format = child.preset.map(|p| self.detector.child_record_of(p));
        if format.and_then(ChildRecord::live_key).is_none() {
            return;
        }
        // Only a thread that holds just its task: work that came on the wire is left alone.
        if child.is_background() || child.state().is_final() || child.entries.count() != 1 {
            return;
        }
        if let Some(watch) = self.record_watch(cid, BACKGROUND_WAIT_MS, true) {
            self.child_records.live.insert(cid.clone(), 0);
            out.push(Action::FollowRecord(watch));
        }
    }

    /// A child followed live ended without waiting for its record (its spawn failed or was
    /// cancelled; a record that never tells an end would be read for hours): the shell
    /// follows it no more (a watch of the same child replaces the first, and this one gives
    /// up at once).
    pub(in crate::engine) fn stop_live(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        if self.child_records.live.is_empty() || self.child_records.live.remove(cid).is_none() {
            return;
        }
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        let Some(format) = child.preset.map(|p| self.detector.child_record_of(p)) else {
            return;
        };
        out.push(Action::FollowRecord(RecordWatch {
            child: cid.to_string(),
            session: child.agent_session.clone(),
            agent_id: String::new(),
            task: None,
            spawn: String::new(),
            format,
            live: false,
            within_ms: 0,
        }));
    }

    /// What a live record says so far: its settled updates not taken yet go into the child
    /// thread, each a step of the card's live progress. Nothing once the spawn ended (its
    /// end waits for the whole record) or for a child not followed live.
    pub(in crate::engine) fn record_grown(
        &mut self,
        cid: &ChildId,
        record: &Record,
        out: &mut Vec<Action>,
    ) {
        if self.child_records.awaited(cid.as_str()) {
            return;
        }
        let Some(&taken) = self.child_records.live.get(cid) else {
            return;
        };
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        if child.state().is_final() || child.card_is_final() || child.passes_through() {
            return;
        }
        let settled = if record.ended() {
            &record.updates[..]
        } else {
            record.settled()
        };
        let from = if taken == 0 {
            task_copy(child.entries.count(), record)
        } else {
            taken
        };
        if settled.len() <= from {
            return;
        }
        for u in &settled[from..] {
            self.record_step_in(cid, u, out);
        }
        self.child_records.live.insert(cid.clone(), settled.len());
    }

    /// A foreground child's spawn completed with `answer` while its thread holds only its
    /// task: if its preset reads the agent's record, the answer waits for the record, and
    /// true is returned; otherwise the caller records the answer.
    pub(in crate::engine) fn await_record(
        &mut self,
        cid: &ChildId,
        answer: &Value,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(child) = self.reg.get(cid) else {
            return false;
        };
        // Entries that came from the record while the child ran are no work of the wire's.
        let live = self.child_records.live.contains_key(cid);
        if child.is_background() || (child.entries.count() > 1 && !live) {
            return false;
        }
        let Some(watch) = self.record_watch(cid, FOREGROUND_WAIT_MS, false) else {
            return false;
        };
        let awaiting = &mut self.child_records.awaiting;
        if awaiting.len() >= MAX_KNOWN {
            return false;
        }
        awaiting.insert(cid.clone(), answer.clone());
        out.push(Action::FollowRecord(watch));
        true
    }

    /// A foreground child's spawn completed with `answer` while events wait for the agent's
    /// record to tie their id (`quirks::bind`): the answer waits for that record too, so that
    /// the events it ties go first; true is returned. Otherwise the caller goes on.
    pub(in crate::engine) fn await_tie(&mut self, cid: &ChildId, answer: &Value) -> bool {
        if self.child_records.awaiting.len() >= MAX_KNOWN || !self.tie_awaited(cid) {
            return false;
        }
        self.child_records
            .awaiting
            .insert(cid.clone(), answer.clone());
        true
    }

    /// What to follow for the child, if its preset reads a record of its work and the record
    /// can be found (by the agent's id of the child, its task or its spawn). A record that
    /// only ties ids is asked for at the spawn (`quirks::bind`), not here.
    /// Followed `live`, it is found by the key the format has while the child runs.
    fn record_watch(&mut self, cid: &ChildId, within_ms: u64, live: bool) -> Option<RecordWatch> {
        let child = self.reg.get(cid)?;
        let format = child.preset.map(|p| self.detector.child_record_of(p))?;
        if format == ChildRecord::None
            || format.ties_ids()
            || child.history_known()
            || child.passes_through()
        {
            return None;
        }
        let key = if live {
            format.live_key()
        } else {
            format.key()
        };
        let agent_id = if live {
            String::new()
        } else {
            self.child_records.agent_ids.remove(cid).unwrap_or_default()
        };
        let task = first_user_text(child.thread.first().map(|t| &**t));
        let findable = match key {
            None => false,
            Some(RecordKey::AgentId) => !agent_id.is_empty(),
            Some(RecordKey::Task) => task.is_some(),
            Some(RecordKey::Spawn) => !child.spawn_id.is_empty(),
        };
        if !findable {
            return None;
        }
        Some(RecordWatch {
            child: cid.to_string(),
            session: child.agent_session.clone(),
            agent_id,
            task,
            spawn: child.spawn_id.clone(),
            format,
            live,
            within_ms,
        })
    }

    /// What the agent's record says of a child that ended: the child thread gets what it
    /// lacks, and the child ends.
    pub(in crate::engine) fn record_arrived(
        &mut self,
        cid: &ChildId,
        record: Record,
        out: &mut Vec<Action>,
    ) {
        // A record that ties the child's id: the events that waited for it go first.
        self.tie_read(cid, record.agent_id.as_deref(), out);
        if let Some(answer) = self.child_records.awaiting.remove(cid) {
            self.awaited_record(cid, record, &answer, out);
            return;
        }
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        if !child.is_background() {
            // A live record that told the child's end before its spawn did: all of it now.
            self.record_grown(cid, &record, out);
            return;
        }
        // The wire ended it (or a replay holds it): the record has nothing to add.
        if child.state().is_final() || child.history_known() {
            return;
        }
        let Some(answer) = record.answer.clone() else {
            return;
        };
        let entries_before = child.entries.count();
        let taken = self.child_records.live.remove(cid);
        if entries_before <= 1 || taken.is_some() {
            // Nothing of the child's work came on the wire: the record's thread, after the
            // task the child thread already starts with (and what it took while it ran).
            self.record_thread_in(cid, &record, entries_before, taken, out);
        } else if !child.entries.last_is_assistant() {
            // Its tool calls came on the wire, its answer does not.
            self.record_in(cid, &render::agent_text(&answer), out);
        }
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.card_is_final() {
            // The card completed at the launch: its range grows to the end, the child ends.
            let card = settled_card_grown(&self.render, child, entries_before);
            child.settle(ChildState::Completed);
            let parent = child.parent.clone();
            self.card_changed(cid, parent, true, card, out);
            self.persist_state(cid, out);
            self.sync_child(cid, out);
            self.retire(cid);
        } else {
            self.finish_child(cid, ChildState::Completed, out);
        }
    }

    /// The record a foreground child's thread waited for: its thread after the task (the
    /// answer the spawn gave when none came), and the card's range grows to cover it.
    fn awaited_record(
        &mut self,
        cid: &ChildId,
        record: Record,
        answer: &Value,
        out: &mut Vec<Action>,
    ) {
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        let entries_before = child.entries.count();
        let taken = self.child_records.live.remove(cid);
        if record.ended() {
            self.record_thread_in(cid, &record, entries_before, taken, out);
        } else {
            self.record_in(cid, answer, out);
        }
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let card = settled_card_grown(&self.render, child, entries_before);
        let parent = child.parent.clone();
        self.card_changed(cid, parent, true, card, out);
        self.persist_state(cid, out);
        self.sync_child(cid, out);
    }

    /// The record's thread into the child's, after the task the child thread already starts
    /// with (the record's own copy of it is skipped) and the updates `taken` while it ran.
    fn record_thread_in(
        &mut self,
        cid: &ChildId,
        record: &Record,
        entries_before: u32,
        taken: Option<usize>,
        out: &mut Vec<Action>,
    ) {
        let skip = match taken {
            Some(n) if n > 0 => n,
            _ => task_copy(entries_before, record),
        };
        for u in record.updates.iter().skip(skip) {
            self.record_in(cid, u, out);
        }
    }
}

/// 1 when the record starts with its copy of the task a thread of `entries` entries (the
/// task alone) already holds, else 0.
fn task_copy(entries: u32, record: &Record) -> usize {
    usize::from(
        entries == 1
            && record
                .updates
                .first()
                .is_some_and(|u| u["sessionUpdate"] == "user_message_chunk"),
    )
}

/// The text of a thread line that is a user message (the child's task).
fn first_user_text(line: Option<&str>) -> Option<String> {
    let v: Value = serde_json::from_str(line?).ok()?;
    if v["sessionUpdate"] != "user_message_chunk" {
        return None;
    }
    v.pointer("/content/text")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}
