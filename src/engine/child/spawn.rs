//! A spawn tool call of a legacy wire (Claude's `Task`, Qwen's and OpenCode's `task`, pi's
//! `Agent`, Gemini's `invoke_agent`, ...): the child it creates, and its card in the parent's
//! thread. Every later update of the card is read through the preset that claimed the spawn.

use serde_json::{json, Value};

use crate::engine::{str_field, Action, Engine};
use crate::subagents::ids::ChildId;
use crate::subagents::model::{Card, Child, ChildState, SpawnSite};
use crate::subagents::preset::detect::{PresetId, SpawnEvent};
use crate::subagents::render::{self, CardChange};

/// What one update of a spawn card changes, read before the card is touched.
struct Reading {
    preset_title: Option<String>,
    description: Option<String>,
    prompt: Option<String>,
    background: bool,
    progress: Option<String>,
    event: Option<SpawnEvent>,
}

/// What a frame of the spawn card does to the child's life, decided by [`spawn_step`] from
/// the frame's status and the child as it is (titles, progress and the child's thread are
/// read beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpawnStep {
    /// The agent completed the card at the launch of a background child that it reports
    /// later: the card shows the launch as running, the child runs on.
    Launched,
    /// The card ends, the child in this state.
    Finished(ChildState),
    /// The first sign that an announced child runs.
    Started,
    /// Nothing of the child's life changes (a title, a description, progress).
    Refined,
}

/// What the status of a spawn card's frame (`completed`, `failed`, `pending`, …) means for
/// `child`; `keeps_open`: its preset reports a background child's end later.
fn spawn_step(child: &Child, status: Option<&str>, keeps_open: bool) -> SpawnStep {
    let completed = status == Some("completed");
    match status {
        Some("completed" | "failed") if !child.card_is_final() => {
            if child.is_background() && keeps_open && completed {
                // Only the launch (its notice stays the card's content).
                SpawnStep::Launched
            } else if child.is_background() && (completed || !keeps_open) {
                // The agent completed the card at launch; the child runs on.
                SpawnStep::Finished(ChildState::Running)
            } else if child.cancel_asked() {
                SpawnStep::Finished(ChildState::Cancelled)
            } else if completed {
                SpawnStep::Finished(ChildState::Completed)
            } else {
                SpawnStep::Finished(ChildState::Failed)
            }
        }
        Some("pending" | "in_progress") if child.state() == ChildState::Announced => {
            SpawnStep::Started
        }
        _ => SpawnStep::Refined,
    }
}

impl Engine {
    /// A spawn tool call: create (or find, after a restart or in a replay) its child.
    pub(in crate::engine) fn new_spawn(
        &mut self,
        site: SpawnSite,
        tool_name: String,
        preset: PresetId,
        update: Value,
        out: &mut Vec<Action>,
    ) {
        let id = ChildId::derive_known(site.parent.as_str(), &site.spawn_id, |id| {
            self.reg.is_child(id)
        });
        match self.reg.get_mut(&id) {
            Some(existing) => {
                existing.tool_name = tool_name;
                existing.preset = Some(preset);
            }
            None => {
                let mut child = Child::new(id.clone(), site, tool_name);
                child.start();
                child.preset = Some(preset);
                self.reg.insert(child);
                self.persist_child(&id, out);
            }
        }
        if let Some(key) = self.detector.sibling_key_of(preset, &update) {
            self.siblings.set_key(&id, key);
        }
        self.spawn_event(&id, "tool_call", Some(update), out);
    }

    /// What the child's preset reads in an update of its spawn card (the engine's older,
    /// preset-blind readings for a child whose preset is not known).
    fn read_spawn_update(&self, preset: Option<PresetId>, update: &Value) -> Reading {
        let d = &self.detector;
        match preset {
            Some(p) => Reading {
                preset_title: d.title_of(p, update).filter(|t| !t.is_empty()),
                description: d.description_of(p, update),
                prompt: d.prompt_of(p, update),
                background: d.background_of(p, update),
                progress: d.progress_of(p, update),
                event: d.spawn_event_of(p, update),
            },
            None => Reading {
                preset_title: None,
                description: None,
                prompt: d.prompt(update).map(str::to_owned),
                background: d.is_background(update),
                progress: None,
                event: None,
            },
        }
    }

    /// A frame of the spawn tool call itself: keep the card current on the parent.
    pub(in crate::engine) fn spawn_event(
        &mut self,
        cid: &ChildId,
        kind: &str,
        update: Option<Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(mut update) = update else { return };
        let is_new = kind == "tool_call";
        if self.reg.get(cid).is_some_and(|c| c.preset.is_none()) {
            // A child restored from the store: its replayed spawn says which preset it is,
            // and the tool's name (the store keeps neither).
            if let Some(spawn) = self.detector.spawn(&update) {
                if let Some(c) = self.reg.get_mut(cid) {
                    c.preset = Some(spawn.preset);
                    c.tool_name = spawn.tool_name;
                }
            }
        }
        let Some(preset) = self.reg.get(cid).map(|c| c.preset) else {
            return;
        };
        self.note_record_id(cid, preset, &update);
        self.keep_agent_id(cid, preset, &update, out);
        let status = str_field(&update, "status").map(str::to_owned);
        self.spawn_frame_bind(cid, status.as_deref(), &update, out);
        // A reopened parent shows the card again: the child's recorded work with it, read
        // before the card is (the folded view's log), shown before a card that ends at once.
        let replayed = self.replayed_spawn(cid);
        let replayed_first = matches!(status.as_deref(), Some("completed" | "failed"));
        // After the folded view took its first look at the replayed card: the card is back.
        if is_new {
            if let Some(top) = self.reg.get(cid).map(|c| c.top_session.clone()) {
                self.reopen.spawn_replayed(top.as_str(), cid);
            }
        }
        let reading = self.read_spawn_update(preset, &update);
        let keeps_open = preset.is_some_and(|p| self.detector.keeps_background_open(p));
        let unseen = preset.is_some_and(|p| self.detector.child_unseen(p));
        let answer = match preset {
            Some(p) => self.detector.answer_of(p, &update),
            None => self.detector.result_text(&update),
        };
        let agent_name = self.agent_name.clone();
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        // What the child thread gets before the card's transcript (if any) is read.
        let mut to_record: Vec<Value> = Vec::new();
        let agents_title = str_field(&update, "title")
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        // A replay of a child the store kept keeps the title it had (dsh replays no label).
        let keep_title = child.history_known() && !child.title.is_empty();
        match &reading.preset_title {
            // The preset knows where the task's title is: it wins over the agent's own, which
            // can be the same for every tool (AgentPool's `Calling task`) or wrap the task
            // (Qwen's `Agent: Survey text files`, Gemini's `Delegating to agent '…'`).
            Some(t) => {
                if !keep_title {
                    child.title = t.clone();
                }
            }
            None => {
                if let Some(t) = &agents_title {
                    // Claude first titles the card with the tool's name, then with the task.
                    if !keep_title && (child.title.is_empty() || *t != child.tool_name) {
                        child.title = t.clone();
                    }
                }
            }
        }
        if child.title.is_empty() || child.title == child.tool_name {
            if let Some(d) = self.detector.description(&update) {
                child.title = d.to_owned();
            }
        }
        if is_new && unseen && child.thread.is_empty() && !child.history_known() {
            to_record.push(render::agent_text(&unseen_note(&agent_name, &child.title)));
        }
        if child.prompt_awaited() {
            if let Some(prompt) = &reading.prompt {
                child.mark_prompt_recorded();
                if !child.history_known() {
                    to_record.push(render::user_text(prompt));
                }
            }
        }
        if let Some(d) = &reading.description {
            child.description = Some(d.clone());
        }
        if reading.background {
            child.run_in_background();
        }
        let completed = status.as_deref() == Some("completed");
        let ended = matches!(status.as_deref(), Some("completed" | "failed"));
        let step = spawn_step(child, status.as_deref(), keeps_open);
        if step == SpawnStep::Started {
            child.start();
        }
        let (finished, launched) = (
            matches!(step, SpawnStep::Finished(_)),
            step == SpawnStep::Launched,
        );
        let fresh = !child.history_known();
        let mut progress = false;
        if !finished && !child.card_is_final() {
            if let Some(activity) = reading.progress {
                child.note_activity(activity);
                progress = true;
            }
        }
        if launched {
            update["status"] = json!("in_progress");
        }
        let had_title = update.get("title").is_some();
        let recorded = !to_record.is_empty();
        // The client learns of the child (and of a new title) before anything of it.
        self.announce_child(cid, out);
        for u in &to_record {
            self.record_in(cid, u, out);
        }
        // The child's work folded into the card (dsh): into the child thread; the card keeps
        // only the child's answer.
        let folded = self.spawn_transcript(cid, &mut update, status.as_deref(), out);
        // The agent replays this child itself (OpenCode): its real work is fetched, and the
        // answer is only what the thread gets if that fails. A replayed completion (the parent
        // reopened) fetches too when the thread lacks the work.
        let fetch = (ended && (!launched || self.follows_launch(cid)))
            .then(|| self.replay_to_fetch(cid, &update))
            .flatten();
        // How the child ended, in its thread.
        let mut ending: Option<Value> = None;
        if finished || fetch.is_some() {
            let Some(child) = self.reg.get(cid) else {
                return;
            };
            if unseen && fresh && finished {
                ending = Some(render::agent_text(&unseen_end(completed, &update)));
            } else if completed && !child.is_background() && (fetch.is_some() || fresh) {
                // Agents that do not stream the child's prose still report its answer: it
                // closes the child thread.
                // The child's prose taken from its record while it ran is not the end: the
                // answer waits for the rest of the record.
                let after_prose = child.entries.last_is_assistant()
                    && !self.child_records.followed_live(cid.as_str());
                let text = match &folded {
                    // A folded transcript's last prose is not always the answer (dsh settles
                    // with a block of its own); after the child's own last words it would
                    // run on in the same message.
                    Some(folded_answer) => {
                        let last_folded = child.fold.as_ref().and_then(|f| f.last_text());
                        folded_answer
                            .clone()
                            .filter(|a| Some(a.as_str()) != last_folded)
                            .map(|a| if after_prose { format!("\n\n{a}") } else { a })
                    }
                    None if !after_prose => answer,
                    None => None,
                };
                ending = text.map(|t| render::agent_text(&t));
            }
        }
        match (&fetch, ending) {
            (Some(_), ending) => self.agent_replays.fallback(cid, ending),
            (None, Some(u)) => {
                // The agent's record of the child, when its preset reads one and the wire
                // brought none of its work, goes in the answer's place; while the child's
                // events wait for the record to tie their id, the answer waits behind them.
                if !self.await_tie(cid, &u) && !self.await_record(cid, &u, out) {
                    self.record_in(cid, &u, out);
                }
            }
            (None, None) => {}
        }
        if let Some(event) = &reading.event {
            if !finished && self.reg.get(cid).is_some_and(|c| !c.history_known()) {
                self.spawn_event_entry(cid, event, out);
                progress = true;
            }
        }
        if finished {
            self.close_spawn_events(cid, completed, out);
        }
        if launched || step == SpawnStep::Finished(ChildState::Running) {
            // The child runs on: its agent's record of it may tell its end.
            self.follow_record(cid, out);
        } else if !finished {
            // A foreground child runs: its record may show its work as it goes.
            self.follow_live(cid, out);
        } else if !self.child_records.awaited(cid.as_str()) {
            // It ended without waiting for its record (failed, cancelled): no more of it.
            self.stop_live(cid, out);
        }
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let mut retitle = false;
        if let SpawnStep::Finished(state) = step {
            // A card that showed live progress gets the task's title back.
            retitle = child.finish_card(state);
        } else if progress && self.render.live_progress() {
            child.show_progress();
        }
        // A card update that only carried the folded transcript has nothing left to show.
        let empty = folded.is_some()
            && !finished
            && !is_new
            && !had_title
            && !progress
            && ["status", "content"]
                .iter()
                .all(|k| update.get(*k).is_none());
        if retitle || agents_title.is_some() || reading.preset_title.is_some() || is_new || progress
        {
            // The title the card shows: the task's, or its live progress.
            let shown = match child.card() {
                Card::Progress => self.render.progress_title(child),
                _ => None,
            };
            let title = match shown {
                Some(t) => t,
                None if child.title.is_empty() => child.tool_name.clone(),
                None => child.title.clone(),
            };
            update["title"] = json!(title);
        }
        self.render.spawn_update(child, &mut update, is_new);
        let parent = child.parent.clone();
        if finished {
            // The title it ended with, for a reopen whose replay lacks it.
            self.persist_child(cid, out);
        }
        if finished || recorded {
            self.persist_state(cid, out);
        }
        // Updates that only report progress are paced; any other goes out at once, after
        // what progress the card held.
        let paced = progress && !is_new && !finished && !launched && status_is_running(&status);
        let replayed_after = if replayed_first {
            self.show_replayed(cid, replayed, out);
            Vec::new()
        } else {
            replayed
        };
        if paced {
            self.pace_progress(cid, parent, CardChange::Update(update), out);
        } else if finished {
            self.end_progress(cid);
            self.emit(parent.as_str(), update, out);
        } else if !empty {
            self.settle_progress(cid, out);
            self.emit(parent.as_str(), update, out);
        }
        self.show_replayed(cid, replayed_after, out);
        if let Some(agent_child) = fetch {
            self.fetch_replay(cid, &agent_child, out);
        }
        // What the frame changed of the child (its task, its end), after the frame itself.
        self.sync_child(cid, out);
        if finished {
            self.retire(cid);
        }
    }

    /// A child event the agent put on the spawn card (Goose's tool requests): a tool call in
    /// the child's thread. No result follows on the wire; the previous request is done when
    /// the next one comes.
    fn spawn_event_entry(&mut self, cid: &ChildId, event: &SpawnEvent, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let n = child.spawn_events;
        child.spawn_events += 1;
        let spawn_id = child.spawn_id.clone();
        if self.render.live_progress() {
            child.show_step(Some(event.title.clone()));
        }
        if n > 0 {
            let done = json!({"sessionUpdate": "tool_call_update",
                "toolCallId": format!("{spawn_id}#{n}"), "status": "completed"});
            self.record_in(cid, &done, out);
        }
        let call = json!({"sessionUpdate": "tool_call", "toolCallId": format!("{spawn_id}#{}", n + 1),
            "title": event.title, "kind": "other", "status": "in_progress"});
        self.record_in(cid, &call, out);
    }

    /// The child ended: its last tool request ended with it.
    fn close_spawn_events(&mut self, cid: &ChildId, completed: bool, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        if child.spawn_events == 0 || child.history_known() {
            return;
        }
        let last = format!("{}#{}", child.spawn_id, child.spawn_events);
        let status = if completed { "completed" } else { "failed" };
        let done =
            json!({"sessionUpdate": "tool_call_update", "toolCallId": last, "status": status});
        self.record_in(cid, &done, out);
    }
}

fn status_is_running(status: &Option<String>) -> bool {
    matches!(status.as_deref(), None | Some("pending" | "in_progress"))
}

/// The child thread of a subagent the agent runs out of sight: what is known, and what is not.
fn unseen_note(agent: &str, title: &str) -> String {
    format!(
        "Subagent `{title}`. {agent} runs it inside its own process and sends neither the task it gave it nor its answer: only that it ran and how it ended."
    )
}

/// How an unseen child ended, with the agent's words if it gave any.
fn unseen_end(completed: bool, update: &Value) -> String {
    let text = update
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.pointer("/content/text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    match (completed, text.trim()) {
        (true, "") => "\n\nIt completed.".to_owned(),
        (true, t) => format!("\n\nIt completed: {t}"),
        (false, "") => "\n\nIt failed.".to_owned(),
        (false, t) => format!("\n\nIt failed: {t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::ids::{AgentSessionId, ClientSessionId};
    use crate::subagents::model::Run;

    fn child(state: ChildState, run: Run) -> Child {
        let site = SpawnSite {
            agent_session: AgentSessionId::new("s".into()),
            parent: ClientSessionId::new("s".into()),
            top_session: ClientSessionId::new("s".into()),
            spawn_id: "t".into(),
        };
        let mut c = Child::new(ChildId::derive("s", "t"), site, "Task".into());
        if state == ChildState::Running {
            c.start();
        }
        if run == Run::Background {
            c.run_in_background();
        }
        c
    }

    #[test]
    fn a_spawn_cards_status_decides_one_step() {
        use SpawnStep::*;
        let running = child(ChildState::Running, Run::Foreground);
        let background = child(ChildState::Running, Run::Background);
        let announced = child(ChildState::Announced, Run::Foreground);
        let cases = [
            (
                &running,
                Some("completed"),
                false,
                Finished(ChildState::Completed),
            ),
            (&running, Some("failed"), true, Finished(ChildState::Failed)),
            (&running, Some("in_progress"), false, Refined),
            (&running, None, false, Refined),
            (&background, Some("completed"), true, Launched),
            (
                &background,
                Some("completed"),
                false,
                Finished(ChildState::Running),
            ),
            (
                &background,
                Some("failed"),
                false,
                Finished(ChildState::Running),
            ),
            (
                &background,
                Some("failed"),
                true,
                Finished(ChildState::Failed),
            ),
            (&announced, Some("pending"), false, Started),
            (&announced, Some("in_progress"), false, Started),
        ];
        for (c, status, keeps_open, want) in cases {
            assert_eq!(
                spawn_step(c, status, keeps_open),
                want,
                "{status:?} keeps_open={keeps_open} {:?}",
                c.run()
            );
        }
        let mut cancelled = child(ChildState::Running, Run::Foreground);
        cancelled.ask_cancel();
        assert_eq!(
            spawn_step(&cancelled, Some("failed"), false),
            Finished(ChildState::Cancelled)
        );
        let mut settled = child(ChildState::Running, Run::Foreground);
        settled.finish_card(ChildState::Completed);
        assert_eq!(spawn_step(&settled, Some("completed"), false), Refined);
    }
}
