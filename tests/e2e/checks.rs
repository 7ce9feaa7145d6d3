//! What a run asserts, as named checks that collect failures instead of stopping at the first:
//! what Zed shows (cards, child threads, indices, statuses) and, from the proxy's dump, that
//! every frame the agent sent reached Zed exactly once.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::client::Accepted;
use crate::kits::Expect;
use crate::zed::{Entry, Thread, ToolCall, ZedModel};

/// One failed expectation.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) check: &'static str,
    pub(crate) detail: String,
}

#[derive(Default)]
pub(crate) struct Checks {
    pub(crate) failures: Vec<Failure>,
}

impl Checks {
    pub(crate) fn fail(&mut self, check: &'static str, detail: impl Into<String>) {
        self.failures.push(Failure {
            check,
            detail: detail.into(),
        });
    }

    pub(crate) fn expect(
        &mut self,
        check: &'static str,
        ok: bool,
        detail: impl FnOnce() -> String,
    ) {
        if !ok {
            self.fail(check, detail());
        }
    }
}

/// A short form of a JSON value for messages.
pub(crate) fn short(v: &impl std::fmt::Display) -> String {
    let s = v.to_string();
    if s.len() > 400 {
        let mut cut = 400;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}…", &s[..cut])
    } else {
        s
    }
}

/// Nothing Zed would have refused, dropped or failed to place.
pub(crate) fn zed_model(c: &mut Checks, phase: &str, zed: &ZedModel, problems: &[String]) {
    for kind in &zed.rejected {
        c.fail(
            "zed-model",
            format!("{phase}: Zed's decoder rejects `{kind}` updates"),
        );
    }
    for (sid, kind) in &zed.dropped {
        c.fail(
            "zed-model",
            format!("{phase}: `{kind}` for session {sid}, which Zed does not know: dropped"),
        );
    }
    for (method, why) in &zed.refused_requests {
        c.fail(
            "zed-model",
            format!("{phase}: Zed refuses `{method}`: {why}"),
        );
    }
    for id in &zed.orphan_tool_updates {
        c.fail(
            "zed-model",
            format!("{phase}: tool_call_update for unknown tool call {id}"),
        );
    }
    for p in problems {
        c.fail("zed-model", format!("{phase}: {}", short(p)));
    }
}

pub(crate) fn assistant_text(t: &Thread) -> String {
    t.entries
        .iter()
        .filter_map(|e| match e {
            Entry::Assistant(s) => Some(s.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The cards of the parent thread, one per expected tag, with their titles and statuses
/// (`open`: still running, without an end index). Returns the cards found, matched to tags by
/// title where possible.
pub(crate) fn cards<'t>(
    c: &mut Checks,
    phase: &str,
    expect: &Expect,
    parent: &'t Thread,
    tags: &[&str],
    open: bool,
) -> Vec<&'t ToolCall> {
    let cards = parent.cards();
    c.expect("cards", cards.len() == tags.len(), || {
        format!(
            "{phase}: {} card(s) in the parent thread, expected {} ({}); tool calls there: {}",
            cards.len(),
            tags.len(),
            tags.join(", "),
            describe_tools(parent)
        )
    });
    let mut ids: Vec<&str> = Vec::new();
    for card in &cards {
        let Some(info) = &card.subagent else {
            c.fail(
                "cards",
                format!(
                    "{phase}: card {} has no subagent_session_info (Zed cannot open it)",
                    card.id
                ),
            );
            continue;
        };
        c.expect("cards", !ids.contains(&info.session_id.as_str()), || {
            format!("{phase}: two cards open the same child {}", info.session_id)
        });
        ids.push(&info.session_id);
        let want = if open { "in_progress" } else { "completed" };
        c.expect("cards", card.status == want, || {
            format!(
                "{phase}: card `{}` is `{}`, expected {want}",
                card.title, card.status
            )
        });
        c.expect(
            "cards",
            card.tool_name.as_deref() == Some(expect.tool_name),
            || {
                format!(
                    "{phase}: card `{}` has tool_name {:?}, expected {:?}",
                    card.title, card.tool_name, expect.tool_name
                )
            },
        );
        c.expect("cards", info.end.is_some() != open, || {
            format!(
                "{phase}: card `{}` has message_end_index {:?}",
                card.title, info.end
            )
        });
    }
    let mut want: Vec<String> = tags.iter().map(|t| expect.title(t)).collect();
    let mut got: Vec<String> = cards.iter().map(|t| t.title.clone()).collect();
    want.sort();
    got.sort();
    c.expect("cards", want == got, || {
        format!("{phase}: card titles {got:?}, expected {want:?}")
    });
    cards
}

fn describe_tools(t: &Thread) -> String {
    let v: Vec<String> = t
        .tool_calls()
        .map(|tc| format!("{} `{}` {}", tc.id, tc.title, tc.status))
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join("; ")
    }
}

/// What one child thread holds once Zed loaded it, and that the card's indices slice exactly
/// that work. Returns the ids of the child's own tool calls.
pub(crate) fn child_thread(
    c: &mut Checks,
    phase: &str,
    expect: &Expect,
    scenario: &str,
    card: &ToolCall,
    thread: Option<&Thread>,
    parent: &Thread,
) -> Vec<String> {
    let Some(info) = &card.subagent else {
        return Vec::new();
    };
    let Some(thread) = thread else {
        c.fail(
            "child-thread",
            format!(
                "{phase}: child {} has no thread after session/load",
                info.session_id
            ),
        );
        return Vec::new();
    };
    let label = format!("{phase}: child of `{}`", card.title);
    let tag = match thread.entries.first() {
        Some(Entry::User(prompt)) => prompt
            .split("SUBAGENT:")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .map(str::to_owned),
        _ => None,
    };
    let tag = match tag {
        Some(tag) => {
            c.expect("child-thread", card.title == expect.title(&tag), || {
                format!(
                    "{label}: the card of `{tag}` is titled `{}`, expected `{}`",
                    card.title,
                    expect.title(&tag)
                )
            });
            tag
        }
        None => {
            c.fail(
                "child-prompt",
                format!(
                    "{label}: does not start with the task prompt (`SUBAGENT:<tag> …`): {}",
                    describe(thread)
                ),
            );
            // Go on with the tag the card's title names.
            let by_title = ["alpha", "beta"]
                .into_iter()
                .find(|t| card.title == expect.title(t));
            match by_title {
                Some(t) => t.to_owned(),
                None => return Vec::new(),
            }
        }
    };
    let tools: Vec<&ToolCall> = thread.tool_calls().collect();
    if expect.child_tools_in.contains(&scenario) {
        c.expect("child-thread", !tools.is_empty(), || {
            format!(
                "{label}: none of the child's own tool calls: {}",
                describe(thread)
            )
        });
        for t in &tools {
            c.expect("child-thread", t.status == "completed", || {
                format!(
                    "{label}: its tool call `{}` is `{}`, expected completed",
                    t.title, t.status
                )
            });
            c.expect("child-thread", !t.is_subagent(), || {
                format!(
                    "{label}: its tool call `{}` is marked as a subagent card",
                    t.title
                )
            });
        }
    }
    if expect.child_answer_in.contains(&scenario) {
        let last = thread.entries.last();
        let text = match last {
            Some(Entry::Assistant(s)) => s.clone(),
            Some(Entry::Tool(t)) => t.text.clone(),
            _ => String::new(),
        };
        let answer = format!("SUB-ANSWER {tag}:");
        c.expect("child-thread", text.contains(&answer), || {
            format!(
                "{label}: does not end with the child's answer `{answer} …`: {}",
                describe(thread)
            )
        });
        c.expect("child-thread", text.contains(".txt"), || {
            format!(
                "{label}: the answer names no file of the project (did a real tool run?): {text:?}"
            )
        });
    }
    // The child's work stays out of the parent thread.
    for t in &tools {
        c.expect("parent-clean", parent.card(&t.id).is_none(), || {
            format!(
                "{label}: its tool call {} `{}` is also in the parent thread",
                t.id, t.title
            )
        });
    }
    let n = thread.entries.len() as u64;
    // An empty child thread has no index to end at; an open card none yet.
    let open = scenario == "background" && expect.background_open;
    let end = if open {
        None
    } else {
        Some(n.saturating_sub(1))
    };
    c.expect(
        "indices",
        n > 0 && info.start == 0 && info.end == end,
        || {
            format!(
                "{label}: message indices {}..={:?}, but the child's work is entries 0..={} ({})",
                info.start,
                info.end,
                n.saturating_sub(1),
                describe(thread)
            )
        },
    );
    tools.iter().map(|t| t.id.clone()).collect()
}

pub(crate) fn describe(t: &Thread) -> String {
    let v: Vec<String> = t
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| match e {
            Entry::User(s) => format!("#{i} user {:?}", clip(s)),
            Entry::Assistant(s) => format!("#{i} assistant {:?}", clip(s)),
            Entry::Tool(tc) => format!("#{i} tool `{}` {}", tc.title, tc.status),
            other => format!("#{i} {}", clip(&other.to_string())),
        })
        .collect();
    format!("[{}]", v.join(", "))
}

fn clip(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_owned()
    }
}

/// Kinds of the standard subagent wire: the proxy turns them into cards and child threads,
/// they never reach Zed as such.
const TRANSLATED: &[&str] = &[
    "subagent_update",
    "session_message",
    "session_message_chunk",
    "subagent_spawned",
    "subagent_state_update",
];

/// An update as the agent meant it: without the keys the proxy adds for Zed
/// (`_meta.subagent_session_info`, `_meta.tool_name`, `_meta["acp-proxy"]`), keys sorted. The session id is not part
/// of it (children are re-addressed).
///
/// On a card (`cards`: their tool call ids) the title is left out too: while the child runs
/// the proxy shows its progress there, and it sets the plain title back when the child ends.
fn fingerprint(update: &Value, cards: &[String]) -> String {
    let mut u = update.clone();
    if let Some(o) = u.as_object_mut() {
        let id = o.get("toolCallId").and_then(Value::as_str);
        if id.is_some_and(|id| cards.iter().any(|c| c == id)) {
            // The proxy owns a card's title (the task's, or its live progress) and status (a
            // background launch keeps it open).
            o.remove("title");
            o.remove("status");
        }
        if let Some(meta) = o.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.remove("subagent_session_info");
            meta.remove("tool_name");
            // The proxy's mark on an event it attributed to a child by timing.
            meta.remove("acp-proxy");
            if meta.is_empty() {
                o.remove("_meta");
            }
        }
    }
    canonical(&u)
}

fn canonical(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let sorted: BTreeMap<&String, String> =
                o.iter().map(|(k, v)| (k, canonical(v))).collect();
            let inner: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// The agent's messages as the dump recorded them (`agent→proxy`), and any loss the dump
/// reported.
pub(crate) fn read_dump(c: &mut Checks, phase: &str, path: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("read the dump {}", path.display()))?;
    let answered = answered_by_the_proxy(&text);
    let fetched = loaded_by_the_proxy(&text);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let rec: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), i + 1))?;
        if rec.get("lost_frames").is_some() {
            c.fail("dump", format!("{phase}: the dump lost frames: {rec}"));
        }
        if rec["dir"] != "agent→proxy" {
            continue;
        }
        if rec.get("invalid_json").is_some() {
            c.fail(
                "dump",
                format!(
                    "{phase}: the agent sent a line that is not JSON: {}",
                    short(&rec["frame"])
                ),
            );
            continue;
        }
        let Some(frame) = rec["frame"].as_str() else {
            continue;
        };
        match serde_json::from_str::<Value>(frame) {
            // A request the proxy answered itself (one for a session Zed does not know yet)
            // was never Zed's to see.
            Ok(v)
                if v.get("method").is_some()
                    && v.get("id")
                        .is_some_and(|id| answered.contains(&id.to_string())) => {}
            // What the agent sent under a session the proxy loaded itself (a child replay it
            // fetched) is the proxy's: the child thread holds it, as the child checks see.
            Ok(v)
                if v.pointer("/params/sessionId")
                    .and_then(Value::as_str)
                    .is_some_and(|s| fetched.contains(s)) => {}
            Ok(v) => out.push(v),
            Err(e) => c.fail(
                "dump",
                format!("{phase}: dump frame not JSON ({e}): {}", short(&frame)),
            ),
        }
    }
    c.expect("dump", !text.is_empty(), || {
        format!("{phase}: the dump is empty")
    });
    Ok(out)
}

/// The ids of agent requests the proxy answered itself: its own errors (`acp-proxy: …`) sent
/// to the agent.
fn answered_by_the_proxy(dump: &str) -> std::collections::HashSet<String> {
    dump.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|rec| rec["dir"] == "proxy→agent")
        .filter_map(|rec| serde_json::from_str::<Value>(rec["frame"].as_str()?).ok())
        .filter(|f| {
            f.get("method").is_none()
                && f.pointer("/error/message")
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.starts_with("acp-proxy:"))
        })
        .filter_map(|f| f.get("id").map(Value::to_string))
        .collect()
}

/// The sessions the proxy loaded with requests of its own (`session/load` under an id the
/// client never sent): the child replays it fetches from the agent.
fn loaded_by_the_proxy(dump: &str) -> std::collections::HashSet<String> {
    let frames: Vec<(String, Value)> = dump
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|rec| {
            let dir = rec["dir"].as_str()?.to_owned();
            let frame = serde_json::from_str::<Value>(rec["frame"].as_str()?).ok()?;
            Some((dir, frame))
        })
        .collect();
    let client_ids: std::collections::HashSet<String> = frames
        .iter()
        .filter(|(dir, f)| dir == "client→proxy" && f.get("method").is_some())
        .filter_map(|(_, f)| f.get("id").map(Value::to_string))
        .collect();
    frames
        .iter()
        .filter(|(dir, f)| {
            dir == "proxy→agent"
                && f["method"] == "session/load"
                && f.get("id")
                    .is_some_and(|id| !client_ids.contains(&id.to_string()))
        })
        .filter_map(|(_, f)| f.pointer("/params/sessionId")?.as_str().map(str::to_owned))
        .collect()
}

/// The agent's messages without the updates of calls that carry a child's work (ids starting
/// with `prefix`; empty: none): the proxy makes them the child thread, which the child checks
/// judge.
pub(crate) fn without_sibling_calls(agent: Vec<Value>, prefix: &str) -> Vec<Value> {
    if prefix.is_empty() {
        return agent;
    }
    agent
        .into_iter()
        .filter(|m| {
            m.pointer("/params/update/toolCallId")
                .and_then(Value::as_str)
                .is_none_or(|id| !id.starts_with(prefix))
        })
        .collect()
}

/// Every `session/update` the agent sent reached Zed exactly once, in the parent or in one
/// child thread (the standard wire's own kinds are translated, never delivered); every request
/// the agent sent reached Zed once.
///
/// `only` (parent, child keys): count only what is addressed to the parent and is no child's
/// event (one of the child keys present). A reopened parent's replay may repeat its
/// children's events; the proxy serves the child threads from its store instead, which the
/// caller checks by comparing them with the live ones.
pub(crate) fn delivered_once(
    c: &mut Checks,
    phase: &str,
    agent: &[Value],
    accepted: &[Accepted],
    received: &[Value],
    only: Option<(&str, &[&str])>,
    cards: &[String],
) {
    let mut sent: BTreeMap<String, (usize, &Value)> = BTreeMap::new();
    let mut asked: BTreeMap<String, (usize, &Value)> = BTreeMap::new();
    let in_scope = |msg: &Value| {
        only.is_none_or(|(parent, child_keys)| {
            let to_parent =
                msg.pointer("/params/sessionId").and_then(Value::as_str) == Some(parent);
            let update = &msg["params"]["update"];
            to_parent && !child_keys.iter().any(|k| update.pointer(k).is_some())
        })
    };
    for msg in agent.iter().filter(|m| in_scope(m)) {
        let method = msg.get("method").and_then(Value::as_str);
        if method == Some("session/update") {
            let u = &msg["params"]["update"];
            sent.entry(fingerprint(u, cards)).or_insert((0, u)).0 += 1;
        } else if let (Some(m), Some(id)) = (method, msg.get("id")) {
            asked
                .entry(request_key(m, id, &msg["params"]))
                .or_insert((0, msg))
                .0 += 1;
        }
    }
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    for a in accepted
        .iter()
        .filter(|a| only.is_none_or(|(parent, _)| a.session == parent))
    {
        *got.entry(fingerprint(&a.update, cards)).or_default() += 1;
    }
    let mut wrong = 0;
    for (fp, (n, example)) in &sent {
        let kind = example
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("");
        let want = if TRANSLATED.contains(&kind) { 0 } else { *n };
        let have = got.get(fp).copied().unwrap_or(0);
        // A card's progress is paced: updates of a running card may be merged into a later
        // one (the cards check sees the last state), never delivered twice.
        let paced = kind == "tool_call_update"
            && example
                .get("toolCallId")
                .and_then(Value::as_str)
                .is_some_and(|id| cards.iter().any(|c| c == id))
            && !matches!(
                example.get("status").and_then(Value::as_str),
                Some("completed" | "failed")
            );
        if have != want && !(paced && have < want) {
            wrong += 1;
            if wrong <= 12 {
                c.fail(
                    "delivered-once",
                    format!("{phase}: the agent sent this {n} time(s), Zed got it {have} time(s), expected {want}: {}", short(example)),
                );
            }
        }
    }
    if wrong > 12 {
        c.fail(
            "delivered-once",
            format!("{phase}: … and {} more", wrong - 12),
        );
    }
    let mut reached: BTreeMap<String, usize> = BTreeMap::new();
    for msg in received.iter().filter(|m| in_scope(m)) {
        if let (Some(m), Some(id)) = (msg.get("method").and_then(Value::as_str), msg.get("id")) {
            *reached
                .entry(request_key(m, id, &msg["params"]))
                .or_default() += 1;
        }
    }
    for (key, (n, example)) in &asked {
        let have = reached.get(key).copied().unwrap_or(0);
        c.expect("delivered-once", have == *n, || {
            format!(
                "{phase}: the agent asked this {n} time(s), Zed was asked {have} time(s): {}",
                short(example)
            )
        });
    }
}

/// A request as the agent asked it, less what the proxy may change on its way to Zed: the
/// session (a child's request goes to the thread Zed knows) and a permission request's tool
/// call (titled when Zed's thread lacks it; on Zed main, the card of a child Zed has not
/// loaded). Its id, which the proxy keeps, tells such requests apart.
fn request_key(method: &str, id: &Value, params: &Value) -> String {
    let mut p = params.clone();
    if let Some(o) = p.as_object_mut() {
        o.remove("sessionId");
        if method == "session/request_permission" {
            o.remove("toolCall");
        }
    }
    format!("{method} {} {}", canonical(id), canonical(&p))
}
