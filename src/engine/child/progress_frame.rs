//! A spawn card's update that only reports its child's progress (pi's spinner: every 80 ms
//! per child, the whole card each time), read by its text. The preset's readings are made on
//! the frame's JSON text with the walker, and the card's update is built only if it goes out
//! ([`FrameCard`]): a frame the next one replaces within the pacing interval is never parsed.
//! Anything else a frame could do sends it the usual way ([`Engine::spawn_event`]), decided
//! before anything changes.

use std::borrow::Cow;

use crate::engine::child::pace::FrameCard;
use crate::engine::{Action, Engine};
use crate::subagents::ids::ChildId;
use crate::subagents::model::{Card, ChildState};
use crate::wire::update_view::UpdateParts;

impl Engine {
    /// An update of `cid`'s spawn card: handled here (true) when it only reports progress of
    /// the running child, with what [`Engine::spawn_event`] would do with it; false, with
    /// nothing changed, when it may do more.
    pub(in crate::engine) fn progress_frame(
        &mut self,
        cid: &ChildId,
        fields: &UpdateParts<'_>,
        out: &mut Vec<Action>,
    ) -> bool {
        #[cfg(test)]
        if tests::TREES_ONLY.with(std::cell::Cell::get) {
            return false;
        }
        let raw = fields.raw;
        // The output adds a `_meta` of its own (merged into the agent's: read on the tree);
        // a `\u` escape may be a lone surrogate, which the tree reading refuses.
        if fields.meta.is_some() || memchr::memmem::find(raw.as_bytes(), b"\\u").is_some() {
            return false;
        }
        let Some(child) = self.reg.get(cid) else {
            return false;
        };
        let Some(preset) = child.preset else {
            return false;
        };
        // A replayed, announced, ending or ended child, or one whose task the thread awaits:
        // the frame may change more than the card.
        if child.history_known()
            || child.card_is_final()
            || child.state() != ChildState::Running
            || child.prompt_awaited()
        {
            return false;
        }
        let Some(frame) = self.detector.card_frame_raw(preset, raw) else {
            return false;
        };
        let running = match &frame.status {
            None => true,
            Some(s) => matches!(s.as_deref(), Some("pending" | "in_progress")),
        };
        if !running {
            return false;
        }
        let Some(activity) = frame.progress else {
            return false;
        };
        // The card's title as `spawn_event` keeps it: the preset's, else the agent's unless
        // it is the tool's name.
        let agents_title = fields.title.as_ref().filter(|t| !t.is_empty());
        let title = match (&frame.title, agents_title) {
            (Some(t), _) => t.clone(),
            (None, Some(t)) if child.title.is_empty() || **t != child.tool_name => {
                Cow::clone(t).into_owned()
            }
            (None, _) => child.title.clone(),
        };
        // Without a title of its own the card takes a description any preset reads: the tree's.
        if title.is_empty() || title == child.tool_name {
            return false;
        }
        let Some(patch) = self.render.spawn_patch(child) else {
            return false;
        };
        let live = self.render.live_progress();
        let Some(child) = self.reg.get_mut(cid) else {
            return false;
        };
        child.title = title;
        if let Some(d) = frame.description {
            child.description = Some(d);
        }
        if frame.background {
            child.run_in_background();
        }
        child.note_activity(activity);
        if live {
            child.show_progress();
        }
        let shown = match child.card() {
            Card::Progress => self.render.progress_title(child),
            _ => None,
        };
        let card_title = shown.unwrap_or_else(|| child.title.clone());
        let parent = child.parent.clone();
        // The card learns its update only when it goes out.
        let card = FrameCard::new(raw, frame.keys, card_title, patch);
        self.announce_child(cid, out);
        self.pace_frame(cid, parent, card, out);
        self.sync_child(cid, out);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use bytes::Bytes;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use crate::engine::{Action, Engine, EngineConfig, SubagentDisplay};
    use crate::subagents::preset::select::PresetChoice;
    use crate::subagents::preset::set::PresetSet;

    thread_local! {
        /// Every spawn card's frame read as a tree, as before the text reading: the reference
        /// the text reading must agree with.
        pub(super) static TREES_ONLY: Cell<bool> = const { Cell::new(false) };
    }

    #[derive(Debug, Clone)]
    enum Op {
        Spawn(usize),
        /// A spinner frame of child `k` in one of several shapes, with an activity, written
        /// in one of several forms ([`written`]).
        Spinner {
            k: usize,
            shape: u8,
            activity: u8,
            n: u16,
            form: u8,
        },
        Advance(u16),
        End(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => (0..3usize).prop_map(Op::Spawn),
            12 => (0..3usize, 0..9u8, 0..4u8, any::<u16>(), 0..8u8)
                .prop_map(|(k, shape, activity, n, form)| Op::Spinner { k, shape, activity, n, form }),
            6 => (0..400u16).prop_map(Op::Advance),
            1 => (0..3usize).prop_map(Op::End),
        ]
    }

    fn update(u: Value) -> String {
        update_text(&u.to_string())
    }

    fn update_text(u: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{u}}}}}"#
        ) + "\n"
    }

    /// An update's compact text as `form` writes it: as serde_json does (0–2), or in a form
    /// serde_json reads alike but writes otherwise, so a line spliced from it would differ
    /// from the tree's: spaces between tokens, `\/`, numbers read as floats, a key given twice
    /// in the update or deeper.
    fn written(text: &str, form: u8, n: u16) -> String {
        // Each character outside strings, inside strings, as the form writes it.
        let retoken = |outside: &dyn Fn(char) -> String, inside: &dyn Fn(char) -> String| {
            let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
            for c in text.chars() {
                if in_string {
                    if escaped || matches!(c, '\\' | '"') {
                        out.push(c);
                        in_string = escaped || c != '"';
                        escaped = !escaped && c == '\\';
                    } else {
                        out += &inside(c);
                    }
                } else {
                    out += &outside(c);
                    in_string = c == '"';
                }
            }
            out
        };
        let same = |c: char| c.to_string();
        match form {
            3 => retoken(
                &|c| {
                    if matches!(c, ':' | ',') {
                        format!("{c} ")
                    } else {
                        c.to_string()
                    }
                },
                &same,
            ),
            4 => retoken(&same, &|c| {
                if c == '/' {
                    "\\/".into()
                } else {
                    c.to_string()
                }
            }),
            5 => {
                let number = ["1.50", "1e2", "-0", "18446744073709551616"][usize::from(n % 4)];
                text.replacen(
                    r#""details":{"#,
                    &format!(r#""details":{{"ratio":{number},"#),
                    1,
                )
            }
            6 => text.replacen(r#""details":{"#, r#""details":{"activity":"first","#, 1),
            7 => text.replacen('{', r#"{"status":"pending","#, 1),
            _ => text.to_owned(),
        }
    }

    fn frame(op: &Op) -> Option<String> {
        Some(match *op {
            Op::Spawn(k) => update(
                json!({"sessionUpdate": "tool_call", "toolCallId": format!("c{k}"),
                "title": "Agent", "kind": "other", "status": "pending",
                "rawInput": {"prompt": "go", "description": format!("Task {k}"), "subagent_type": "general-purpose"}}),
            ),
            Op::End(k) => update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("c{k}"),
                "status": "completed", "content": [{"type": "content", "content": {"type": "text",
                "text": "Agent completed in 1s (1 tool uses, 3 token).\n\nanswer"}}]}),
            ),
            Op::Spinner {
                k,
                shape,
                activity,
                n,
                form,
            } => {
                let activity =
                    ["thinking…", "reading\nsrc/a.rs", "", "running \"bash\""][activity as usize];
                let details = json!({"description": format!("Task {k}"), "toolUses": n,
                    "durationMs": u32::from(n) * 7, "status": "running", "activity": activity,
                    "spinnerFrame": n % 10});
                let content = json!([{"type": "content", "content": {"type": "text", "text": format!("{n} tool uses...")}}]);
                let id = format!("c{k}");
                let mut u = match shape {
                    // Content and output, as pi sends them.
                    0 | 1 => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "status": "in_progress", "content": content, "rawOutput": {"details": details}}),
                    // The output alone: a held frame with content is merged, not replaced.
                    2 => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "rawOutput": {"details": details}}),
                    // The same keys in another order.
                    3 => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "rawOutput": {"details": details}, "status": "pending", "content": content}),
                    // A title of the agent's.
                    4 => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "title": "Agent", "status": "in_progress", "rawOutput": {"details": details}}),
                    // A `_meta` of the agent's, an escape: read as trees.
                    5 => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "_meta": {"x": 1}, "rawOutput": {"details": details}}),
                    6 => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "rawOutput": {"details": details, "note": "caf\u{e9}\u{1}"}}),
                    // Another description and subagent type.
                    7 => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "rawOutput": {"details": {"description": format!("Other {n}"), "activity": activity,
                        "subagentType": "explore"}}}),
                    // The child goes on in the background; the card stays running.
                    _ => json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                        "status": "in_progress", "rawOutput": {"details": {"status": "background",
                        "activity": activity}}}),
                };
                if shape == 1 {
                    u["rawOutput"]["content"] = json!([{"type": "text", "text": format!("{n}")}]);
                }
                update_text(&written(&u.to_string(), form, n))
            }
            Op::Advance(_) => return None,
        })
    }

    /// Everything the engine did over `ops`, with the time flowing as they say.
    fn run(ops: &[Op], trees_only: bool) -> Vec<Action> {
        TREES_ONLY.with(|t| t.set(trees_only));
        let presets = PresetChoice::named(PresetSet::builtin(), &["pi".into()]).expect("pi");
        let mut e = Engine::new(EngineConfig {
            display: SubagentDisplay::Zed,
            presets,
            ..EngineConfig::default()
        });
        let mut out = Vec::new();
        let handshake = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"zed"}}}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#,
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
                r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}"#,
            ),
        ];
        for (c, a) in handshake {
            e.from_client(Bytes::from(format!("{c}\n")), 0, &mut out);
            e.from_agent(&Bytes::from(format!("{a}\n")), None, 0, &mut out);
        }
        let mut now = 0;
        for op in ops {
            if let Op::Advance(ms) = op {
                now += u64::from(*ms);
                if e.poll_timeout().is_some_and(|t| t <= now) {
                    e.handle_timeout(now, &mut out);
                }
            } else if let Some(f) = frame(op) {
                e.from_agent(&Bytes::from(f), None, now, &mut out);
            }
        }
        now += 10_000;
        e.handle_timeout(now, &mut out);
        TREES_ONLY.with(|t| t.set(false));
        out
    }

    fn client_updates(actions: &[Action]) -> Vec<Value> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::ToClient(b) => serde_json::from_slice::<Value>(b).ok(),
                _ => None,
            })
            .filter_map(|m| m.pointer("/params/update").cloned())
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Read by their text, spinner frames give the client and the store exactly what the
        /// tree reading gives, byte for byte, however frames of other shapes come between and
        /// whether or not their text is what serde_json would write (the lines spliced from
        /// it).
        #[test]
        fn progress_frames_read_by_text_do_what_trees_do(ops in prop::collection::vec(op(), 1..120)) {
            let mut ops = ops;
            ops.insert(0, Op::Spawn(0));
            prop_assert_eq!(run(&ops, false), run(&ops, true));
        }
    }

    #[test]
    fn a_held_frame_gives_way_to_the_latest_and_keeps_what_only_it_said() {
        let spinner = |shape, activity, n| Op::Spinner {
            k: 0,
            shape,
            activity,
            n,
            form: 0,
        };
        let ops = [
            Op::Spawn(0),
            Op::Advance(80),
            // The first report goes out; the next two are held, the second replacing the first.
            spinner(0, 0, 1),
            Op::Advance(80),
            spinner(0, 1, 2),
            Op::Advance(80),
            spinner(0, 3, 3),
            Op::Advance(200),
        ];
        let sent = client_updates(&run(&ops, false));
        let last = sent.last().expect("a card update");
        assert_eq!(
            last["title"], "Task 0 · running \"bash\"",
            "the latest activity titles the card"
        );
        assert_eq!(last["rawOutput"]["details"]["toolUses"], 3, "{last}");
        assert_eq!(
            sent.len(),
            3,
            "spawn, first report, one held report: {sent:?}"
        );
        // A held frame the next one does not replace whole: its content stays.
        let ops = [
            Op::Spawn(0),
            Op::Advance(80),
            spinner(0, 0, 1),
            Op::Advance(80),
            spinner(0, 0, 2),
            Op::Advance(80),
            spinner(2, 1, 3),
            Op::Advance(200),
        ];
        let sent = client_updates(&run(&ops, false));
        let last = sent.last().expect("a card update");
        assert_eq!(
            last["content"][0]["content"]["text"], "2 tool uses...",
            "{last}"
        );
        assert_eq!(last["rawOutput"]["details"]["toolUses"], 3, "{last}");
        assert_eq!(last["title"], "Task 0 · reading", "{last}");
    }
}
