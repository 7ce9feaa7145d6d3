//! Children the agent keeps a record of on local disk (`child_record`, Claude Code's
//! `subagents/agent-<id>.jsonl`). The engine does no I/O: when a background child launches
//! (its spawn completed at once, the child runs on) it asks the shell to follow the child's
//! record ([`Action::FollowRecord`]); the shell reads it off the relay path and hands back
//! what it says once the child ended ([`Engine::record_read`]). The wire stays the first
//! source: the record adds only what the child thread lacks (the child's answer; its whole
//! work when the wire brought none of it), and a child the wire already ended is left alone.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::child::events::settled_card_grown;
use crate::engine::{Action, Engine};
use crate::subagents::detect::PresetId;
use crate::subagents::ids::ChildId;
use crate::subagents::model::ChildState;
use crate::subagents::records::{Record, RecordWatch};
use crate::subagents::render;
use crate::subagents::spec::ChildRecord;

/// Agent child ids remembered, at most (the map is cleared past it: only the following of
/// records not asked for yet is lost).
const MAX_KNOWN: usize = 4096;

/// The agent's own ids of children whose preset reads a record, until the record is asked for.
#[derive(Debug, Default)]
pub(in crate::engine) struct ChildRecords {
    agent_ids: HashMap<ChildId, String>,
}

impl ChildRecords {
    pub(in crate::engine) fn forget(&mut self, child: &str) {
        if !self.agent_ids.is_empty() {
            self.agent_ids.remove(child);
        }
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 1] {
        [("record_agent_ids", self.agent_ids.len())]
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

    /// A background child launched: follow the agent's record of it, if its preset reads one
    /// and the agent's id of the child is known.
    pub(in crate::engine) fn follow_record(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        let Some(format) = child.preset.map(|p| self.detector.child_record_of(p)) else {
            return;
        };
        if format == ChildRecord::None || child.history_known() || child.passes_through() {
            return;
        }
        let Some(agent_id) = self.child_records.agent_ids.remove(cid) else {
            return;
        };
        out.push(Action::FollowRecord(RecordWatch {
            child: cid.to_string(),
            session: child.agent_session.clone(),
            agent_id,
            format,
        }));
    }

    /// What the agent's record says of a child that ended: the child thread gets what it
    /// lacks, and the child ends.
    pub(in crate::engine) fn record_arrived(
        &mut self,
        cid: &ChildId,
        record: Record,
        out: &mut Vec<Action>,
    ) {
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        // The wire ended it (or a replay holds it): the record has nothing to add.
        if !child.is_background() || child.state.is_final() || child.history_known() {
            return;
        }
        let Some(answer) = record.answer else {
            return;
        };
        let entries_before = child.entries.count();
        if entries_before <= 1 {
            // Nothing of the child's work came on the wire: the record's thread, after the
            // task the child thread already starts with.
            let skip = usize::from(
                entries_before == 1
                    && record
                        .updates
                        .first()
                        .is_some_and(|u| u["sessionUpdate"] == "user_message_chunk"),
            );
            for u in record.updates.iter().skip(skip) {
                self.record_in(cid, u, out);
            }
        } else if !child.entries.last_is_assistant() {
            // Its tool calls came on the wire, its answer does not.
            self.record_in(cid, &render::agent_text(&answer), out);
        }
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.card_is_final() {
            // The card completed at the launch: its range grows to the end, the child ends.
            let card = settled_card_grown(self.render.as_ref(), child, entries_before);
            child.state = ChildState::Completed;
            let parent = child.parent.clone();
            self.card_changed(cid, parent, true, card, out);
            self.persist_state(cid, out);
            self.sync_child(cid, out);
            self.retire(cid);
        } else {
            self.finish_child(cid, ChildState::Completed, out);
        }
    }
}
