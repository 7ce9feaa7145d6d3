//! Zed's subagent convention, in one place so the proxy can follow Zed as it changes.
//!
//! A spawn tool call carries `_meta.tool_name` and `_meta.subagent_session_info` (a snake_case
//! object: `session_id`, `message_start_index`, optional `message_end_index`). Zed reads
//! `tool_name` from `tool_call` only and `subagent_session_info` from both kinds.

use std::fmt::Write as _;

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::{card_base, mark_cancelled, synthesized_base, CardChange, Render, SpawnPatch, Step};
use crate::subagents::ids::ChildId;
use crate::subagents::model::{Child, TurnRange};
use crate::wire::write::session_update_with;

/// Upper bound of a live-progress card title, in characters.
const MAX_TITLE_CHARS: usize = 120;
const MAX_ACTIVITY_CHARS: usize = 48;

/// `_meta.subagent_session_info` for the child's current turn.
pub fn session_info(child: &Child) -> Value {
    session_info_of(&child.id, child.current_turn())
}

/// `_meta.subagent_session_info` of the child `id` in its turn `turn`.
pub fn session_info_of(id: &ChildId, turn: TurnRange) -> Value {
    let mut info = json!({"session_id": id, "message_start_index": turn.start});
    if let Some(end) = turn.end {
        info["message_end_index"] = json!(end);
    }
    info
}

/// `"_meta":{"subagent_session_info":…}` of the child `id` in its turn `turn`, as serde_json
/// writes the member [`inject_meta`] adds to an update without `_meta`: written, not built.
pub fn write_meta_member(id: &ChildId, turn: TurnRange, out: &mut Vec<u8>) {
    out.extend_from_slice(br#""_meta":{"subagent_session_info":{"session_id":"#);
    // Strings and numbers serialise infallibly into a Vec.
    let _ = serde_json::to_writer(&mut *out, id.as_str());
    out.extend_from_slice(br#","message_start_index":"#);
    let _ = serde_json::to_writer(&mut *out, &turn.start);
    if let Some(end) = turn.end {
        out.extend_from_slice(br#","message_end_index":"#);
        let _ = serde_json::to_writer(&mut *out, &end);
    }
    out.extend_from_slice(b"}}");
}

/// Merge Zed's keys into an update's `_meta`, keeping every key the agent put there.
/// `with_tool_name` is for `tool_call` (Zed ignores `tool_name` on updates).
pub fn inject_meta(update: &mut Value, child: &Child, with_tool_name: bool) {
    let Some(obj) = update.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        // A non-object `_meta` violates the schema; Zed would drop it anyway.
        *meta = Value::Object(Map::new());
    }
    if let Some(m) = meta.as_object_mut() {
        if with_tool_name {
            m.insert("tool_name".into(), json!(child.tool_name));
        }
        m.insert("subagent_session_info".into(), session_info(child));
    }
}

/// Remove Zed subagent keys from a child's own tool call (never render it as a subagent).
pub fn strip_meta(update: &mut Value) {
    if let Some(m) = update.get_mut("_meta").and_then(Value::as_object_mut) {
        m.remove("subagent_session_info");
    }
}

/// The spawn card the proxy creates for a child the agent announced without a tool call.
pub fn synthesized_card(child: &Child) -> Value {
    let mut card = synthesized_base(child);
    inject_meta(&mut card, child, true);
    card
}

/// A card update: status (if given), title (if given) and the current index range.
pub fn card_update(child: &Child, status: Option<&str>, title: Option<&str>) -> Value {
    let mut upd = card_base(child, status, title);
    inject_meta(&mut upd, child, false);
    upd
}

/// `session/update` on `session` giving the child's card a new title: the same line as
/// `session_update(session, &card_update(child, None, Some(title)))`, written directly (it
/// is sent at every step of every child).
pub fn progress_notification(session: &str, child: &Child, title: &str) -> Bytes {
    let turn = child.current_turn();
    session_update_with(
        session,
        192 + title.len() + child.id.as_str().len(),
        |line| {
            // Strings and integers serialise into a Vec infallibly.
            line.extend_from_slice(br#"{"sessionUpdate":"tool_call_update","toolCallId":"#);
            let _ = serde_json::to_writer(&mut *line, &child.spawn_id);
            line.extend_from_slice(br#","title":"#);
            let _ = serde_json::to_writer(&mut *line, title);
            line.extend_from_slice(br#","_meta":{"subagent_session_info":{"session_id":"#);
            let _ = serde_json::to_writer(&mut *line, &child.id);
            line.extend_from_slice(br#","message_start_index":"#);
            let _ = serde_json::to_writer(&mut *line, &turn.start);
            if let Some(end) = turn.end {
                line.extend_from_slice(br#","message_end_index":"#);
                let _ = serde_json::to_writer(&mut *line, &end);
            }
            line.extend_from_slice(b"}}}");
        },
    )
}

/// The live-progress title: `Task · latest activity · N steps`, bounded (no step count
/// where the agent reports its child's activity but no steps of it).
pub fn progress_title(child: &Child) -> String {
    // Written into one string: a title per progress frame of every child.
    let mut title = String::with_capacity(child.title.len() + MAX_ACTIVITY_CHARS * 3 + 24);
    title.push_str(&child.title);
    if let Some(activity) = &child.progress().activity {
        title.push_str(" · ");
        push_truncated(&mut title, activity, MAX_ACTIVITY_CHARS);
    }
    let steps = child.progress().steps;
    if steps > 0 {
        let s = if steps == 1 { "" } else { "s" };
        // Writing into a String cannot fail.
        let _ = write!(title, " · {steps} step{s}");
    }
    if fits(&title, MAX_TITLE_CHARS) {
        return title;
    }
    truncate(&title, MAX_TITLE_CHARS)
}

/// Whether `s` is one line of at most `max` characters: [`truncate`] leaves it as it is.
fn fits(s: &str, max: usize) -> bool {
    !s.contains(['\n', '\r']) && s.chars().count() <= max
}

fn truncate(s: &str, max: usize) -> String {
    let mut out = String::new();
    push_truncated(&mut out, s, max);
    out
}

/// `s`'s first line, cut to `max` characters (the last an ellipsis) if it is longer or `s`
/// has more lines.
fn push_truncated(out: &mut String, s: &str, max: usize) {
    let one_line = s.lines().next().unwrap_or("");
    if one_line.chars().count() <= max && one_line.len() == s.len() {
        out.push_str(one_line);
        return;
    }
    out.extend(one_line.chars().take(max.saturating_sub(1)));
    out.push('…');
}

/// A change [`repair_tool_frame`] made so that Zed accepts a tool call frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolRepair {
    /// A new `tool_call` without a title got one (Zed rejects it otherwise).
    Titled,
    /// A `tool_call` without a title for a tool call the thread holds became an update of it.
    AsUpdate,
    /// A `tool_call_update` for a tool call the thread does not hold became the tool call
    /// (Zed's main branch would show a failed "Tool call not found" entry instead).
    AsToolCall,
}

/// Make a `tool_call` / `tool_call_update` one Zed accepts, given whether the thread it goes
/// to already holds that tool call: a tool call carries a title, an update comes after its
/// tool call. Returns the repair made, if any.
pub fn repair_tool_frame(update: &mut Value, known: bool) -> Option<ToolRepair> {
    let kind = update.get("sessionUpdate").and_then(Value::as_str)?;
    let titled = update.get("title").is_some_and(Value::is_string);
    let repair = match (kind, known, titled) {
        ("tool_call", false, false) => ToolRepair::Titled,
        ("tool_call", true, false) => ToolRepair::AsUpdate,
        ("tool_call_update", false, _) => ToolRepair::AsToolCall,
        _ => return None,
    };
    let title = (!titled).then(|| fallback_title(update));
    let obj = update.as_object_mut()?;
    match repair {
        ToolRepair::AsUpdate => {
            obj.insert("sessionUpdate".into(), json!("tool_call_update"));
            // A non-string title would not decode either.
            obj.remove("title");
        }
        ToolRepair::Titled | ToolRepair::AsToolCall => {
            obj.insert("sessionUpdate".into(), json!("tool_call"));
            if let Some(t) = title {
                obj.insert("title".into(), json!(t));
            }
        }
    }
    Some(repair)
}

/// A title for a tool call (or a permission request's tool call) that came without one: its
/// `name`, else the tool name an agent keeps under `_meta` (`_meta.claudeCode.toolName`),
/// else its kind, else "Tool call" (Zed's own label for a tool call without a title).
pub fn fallback_title(tool_call: &Value) -> String {
    let non_blank = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    if let Some(name) = non_blank(tool_call.get("name")) {
        return name;
    }
    let meta_name = tool_call
        .get("_meta")
        .and_then(Value::as_object)
        .and_then(|m| m.values().find_map(|v| non_blank(v.get("toolName"))));
    if let Some(name) = meta_name {
        return name;
    }
    match tool_call.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != "other" => {
            let mut chars = k.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_else(|| "Tool call".to_owned())
        }
        _ => "Tool call".to_owned(),
    }
}

/// Zed's cards: `_meta` with the child's session and index range, the title showing the
/// child's latest step while it runs (`live_progress`).
#[derive(Debug, Clone)]
pub struct Zed {
    live_progress: bool,
}

impl Zed {
    pub fn new(live_progress: bool) -> Zed {
        Zed { live_progress }
    }
}

impl Render for Zed {
    fn synthesized_card(&self, child: &Child) -> Value {
        synthesized_card(child)
    }

    fn card_update(&self, child: &Child, status: Option<&str>, title: Option<&str>) -> Value {
        let mut card = card_update(child, status, title);
        mark_cancelled(child, status, &mut card);
        card
    }

    fn spawn_update(&self, child: &Child, update: &mut Value, is_new: bool) {
        inject_meta(update, child, is_new);
    }

    fn spawn_patch(&self, child: &Child) -> Option<SpawnPatch> {
        // What `inject_meta` does to an update without `_meta`.
        Some(SpawnPatch::ZedSessionInfo(child.current_turn()))
    }

    fn progress_title(&self, child: &Child) -> Option<String> {
        self.live_progress.then(|| progress_title(child))
    }

    fn live_progress(&self) -> bool {
        self.live_progress
    }

    fn child_step(&mut self, child: &Child, step: &Step<'_>) -> Option<CardChange> {
        if !(step.new_tool_call && self.live_progress) {
            return None;
        }
        // The engine counted the step (`Child::show_step`): the title shows it.
        let title = progress_title(child);
        Some(if step.nested {
            CardChange::Update(card_update(child, None, Some(&title)))
        } else {
            // The common case, once per step of every child: the card's new title goes
            // straight to the client, written without building a tree first.
            CardChange::Line(progress_notification(child.parent.as_str(), child, &title))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child() -> Child {
        let site = SpawnSite {
            agent_session: AgentSessionId::new("p".into()),
            parent: ClientSessionId::new("p".into()),
            top_session: ClientSessionId::new("p".into()),
            spawn_id: "t1".into(),
        };
        let mut c = Child::new(
            ChildId::known("acp-proxy-sub-x".into()),
            site,
            "Agent".into(),
        );
        c.title = "Survey text files".into();
        c
    }

    use crate::subagents::ids::{AgentSessionId, ChildId, ClientSessionId};
    use crate::subagents::model::SpawnSite;
    use crate::wire::write::session_update;

    #[test]
    fn progress_notification_is_the_card_update_line() {
        let mut c = child();
        c.spawn_id = "toolu_\"q\"".into();
        let title = "Survey · Read \"a.txt\" é · 2 steps";
        let direct = progress_notification("sess-1", &c, title);
        assert_eq!(
            direct,
            session_update("sess-1", &card_update(&c, None, Some(title)))
        );
        c.entries.push("user_message_chunk", None);
        c.entries.push("tool_call", Some("a"));
        c.end_turn();
        let direct = progress_notification("sess-1", &c, title);
        assert_eq!(
            direct,
            session_update("sess-1", &card_update(&c, None, Some(title)))
        );
        assert!(String::from_utf8_lossy(&direct).contains("message_end_index"));
    }

    #[test]
    fn the_written_meta_member_is_the_one_inject_meta_sets() {
        let mut c = child();
        c.id = ChildId::known("sub-\"é\"".into());
        for ended in [false, true] {
            if ended {
                c.entries.push("user_message_chunk", None);
                c.entries.push("tool_call", Some("a"));
                c.end_turn();
            }
            let mut upd = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1"});
            inject_meta(&mut upd, &c, false);
            let mut written = br#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","#.to_vec();
            write_meta_member(&c.id, c.current_turn(), &mut written);
            written.push(b'}');
            assert_eq!(
                String::from_utf8(written).expect("utf-8"),
                upd.to_string(),
                "ended: {ended}"
            );
        }
    }

    #[test]
    fn meta_is_snake_case_object_and_keeps_agent_keys() {
        let mut c = child();
        let mut upd = json!({"sessionUpdate":"tool_call","toolCallId":"t1","_meta":{"claudeCode":{"toolName":"Agent"}}});
        inject_meta(&mut upd, &c, true);
        assert_eq!(upd["_meta"]["claudeCode"]["toolName"], "Agent");
        assert_eq!(upd["_meta"]["tool_name"], "Agent");
        assert_eq!(
            upd["_meta"]["subagent_session_info"],
            json!({"session_id":"acp-proxy-sub-x","message_start_index":0})
        );
        c.entries.push("user_message_chunk", None);
        c.entries.push("tool_call", Some("a"));
        c.end_turn();
        let upd = card_update(&c, Some("completed"), None);
        assert_eq!(
            upd["_meta"]["subagent_session_info"]["message_end_index"],
            1
        );
        assert!(upd["_meta"].get("tool_name").is_none());
    }

    #[test]
    fn tool_frames_are_repaired_into_what_zed_accepts() {
        let mut untitled = json!({"sessionUpdate": "tool_call", "toolCallId": "t", "kind": "read",
            "_meta": {"claudeCode": {"toolName": "Glob"}}});
        assert_eq!(
            repair_tool_frame(&mut untitled.clone(), false),
            Some(ToolRepair::Titled)
        );
        repair_tool_frame(&mut untitled, false);
        assert_eq!(untitled["title"], "Glob");
        let mut repeat =
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "status": "completed"});
        assert_eq!(
            repair_tool_frame(&mut repeat, true),
            Some(ToolRepair::AsUpdate)
        );
        assert_eq!(repeat["sessionUpdate"], "tool_call_update");
        let mut early =
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "kind": "edit"});
        assert_eq!(
            repair_tool_frame(&mut early, false),
            Some(ToolRepair::AsToolCall)
        );
        assert_eq!(
            (early["sessionUpdate"].as_str(), early["title"].as_str()),
            (Some("tool_call"), Some("Edit"))
        );
        let mut fine = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t"});
        assert_eq!(repair_tool_frame(&mut fine, true), None);
        let mut titled = json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"});
        assert_eq!(repair_tool_frame(&mut titled, false), None);
        assert_eq!(fallback_title(&json!({"kind": "other"})), "Tool call");
        assert_eq!(
            fallback_title(&json!({"name": "Grep", "kind": "search"})),
            "Grep"
        );
    }

    #[test]
    fn progress_title_is_bounded() {
        let mut c = child();
        c.show_step(None);
        c.show_step(None);
        c.show_step(Some("Find `*.txt`".into()));
        assert_eq!(
            progress_title(&c),
            "Survey text files · Find `*.txt` · 3 steps"
        );
        c.note_activity("x".repeat(500));
        assert!(progress_title(&c).chars().count() <= MAX_TITLE_CHARS);
        c.note_activity("line one\nline two".into());
        assert!(progress_title(&c).contains("line one…"));
    }
}
