//! Zed's thread-entry rules, used to compute `message_start_index` / `message_end_index`.
//!
//! Entries are built from a thread's updates: adjacent user chunks form one user entry;
//! adjacent agent message/thought chunks form one assistant entry; each `tool_call` with a
//! new id is one entry; updates of known tool calls, plans, usage, modes, commands and info
//! add nothing. Zed's main branch adds to these ([`EntryRules::Main`]): user chunks with
//! different `messageId`s are separate entries, each context compaction is an entry, and so
//! is a session-scoped elicitation shown in the thread. docs/subagents.md says where each
//! rule is in Zed's source.

use std::collections::HashSet;

/// Which Zed's entry rules a counter follows (the client's `initialize` tells them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EntryRules {
    /// Zed 1.18: `messageId`s are ignored; compactions and elicitations make no entry.
    V1_18,
    /// Zed's main branch after 1.18. Never fewer entries than 1.18 for the same updates, so an
    /// end index counted by it is clamped, not cut short, by a Zed 1.18.
    #[default]
    Main,
}

impl EntryRules {
    /// The rules of the Zed that sent this `initialize` (its `params`): only builds after 1.18
    /// advertise `elicitation` and `session` capabilities.
    pub fn of_client(params: &serde_json::Value) -> EntryRules {
        let caps = params.get("clientCapabilities");
        let has = |key: &str| caps.and_then(|c| c.get(key)).is_some_and(|v| !v.is_null());
        if has("elicitation") || has("session") {
            EntryRules::Main
        } else {
            EntryRules::V1_18
        }
    }
}

/// The field of an update of `kind` that the entry rules read: the tool call's id, the user
/// message's id, the compaction's id.
pub(crate) fn key_field(kind: &str) -> Option<&'static str> {
    match kind {
        "tool_call" | "tool_call_update" => Some("toolCallId"),
        "user_message_chunk" => Some("messageId"),
        "compaction_update" | "compaction_summary_chunk" => Some("compactionId"),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Last {
    #[default]
    Nothing,
    User,
    Assistant,
    Tool,
    /// A compaction or an elicitation.
    Other,
}

/// Counts the entries a client builds from a sequence of updates.
#[derive(Debug, Clone, Default)]
pub struct EntryCounter {
    rules: EntryRules,
    count: u32,
    last: Last,
    /// The `messageId` of the user entry in progress (`Main`).
    user_message: Option<String>,
    tool_ids: HashSet<String>,
    compactions: HashSet<String>,
}

impl EntryCounter {
    pub fn new(rules: EntryRules) -> EntryCounter {
        EntryCounter {
            rules,
            ..EntryCounter::default()
        }
    }

    pub fn rules(&self) -> EntryRules {
        self.rules
    }

    /// Account for one update of kind `kind` (the `sessionUpdate` value); `key` is its
    /// [`key_field`], if it has one.
    pub fn push(&mut self, kind: &str, key: Option<&str>) {
        let main = self.rules == EntryRules::Main;
        match kind {
            "user_message_chunk" if main => {
                // `push_user_content_block_with_protocol_id`: a different id starts a new entry.
                let differs = matches!((&self.user_message, key), (Some(a), Some(b)) if a != b);
                if self.last != Last::User || differs {
                    self.entry(Last::User);
                    self.user_message = key.map(str::to_owned);
                } else if self.user_message.is_none() {
                    self.user_message = key.map(str::to_owned);
                }
            }
            "user_message_chunk" => self.open(Last::User),
            "agent_message_chunk" | "agent_thought_chunk" => self.open(Last::Assistant),
            "tool_call" => {
                if let Some(id) = key {
                    if self.tool_ids.insert(id.to_owned()) {
                        self.entry(Last::Tool);
                    }
                }
            }
            "compaction_update" | "compaction_summary_chunk" if main => {
                // One entry per compaction, made by whichever of its kinds comes first.
                let first = self.compactions.insert(key.unwrap_or("").to_owned());
                if first {
                    self.entry(Last::Other);
                }
            }
            _ => {}
        }
    }

    /// A session-scoped elicitation shown in this thread (an entry on Zed's main branch; Zed
    /// 1.18 refuses them).
    pub fn push_elicitation(&mut self) {
        if self.rules == EntryRules::Main {
            self.entry(Last::Other);
        }
    }

    fn open(&mut self, kind: Last) {
        if self.last != kind {
            self.entry(kind);
        }
    }

    fn entry(&mut self, kind: Last) {
        self.count += 1;
        self.last = kind;
    }

    /// Number of entries so far.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether the last entry is an assistant message.
    pub fn last_is_assistant(&self) -> bool {
        self.last == Last::Assistant
    }

    /// Whether a tool call with this id already has an entry.
    pub fn knows_tool(&self, id: &str) -> bool {
        self.tool_ids.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_zed_entry_rules() {
        for rules in [EntryRules::V1_18, EntryRules::Main] {
            let mut c = EntryCounter::new(rules);
            c.push("user_message_chunk", None);
            c.push("user_message_chunk", None);
            assert_eq!(c.count(), 1);
            c.push("agent_thought_chunk", None);
            c.push("agent_message_chunk", None);
            assert_eq!(c.count(), 2);
            c.push("tool_call", Some("t1"));
            c.push("tool_call_update", Some("t1"));
            c.push("tool_call", Some("t1"));
            assert_eq!(c.count(), 3);
            c.push("plan", None);
            c.push("usage_update", None);
            c.push("agent_message_chunk", None);
            assert_eq!(c.count(), 4);
            c.push("tool_call", Some("t2"));
            c.push("agent_message_chunk", None);
            assert_eq!(c.count(), 6);
            assert!(c.last_is_assistant());
        }
    }

    #[test]
    fn main_splits_user_messages_by_id_and_counts_compactions_and_elicitations() {
        let run = |rules| {
            let mut c = EntryCounter::new(rules);
            c.push("user_message_chunk", Some("u1"));
            c.push("user_message_chunk", None);
            c.push("user_message_chunk", Some("u1"));
            c.push("user_message_chunk", Some("u2"));
            c.push("agent_message_chunk", None);
            c.push("compaction_update", Some("c1"));
            c.push("compaction_summary_chunk", Some("c1"));
            c.push("agent_message_chunk", None);
            c.push_elicitation();
            c.push("agent_message_chunk", None);
            c.count()
        };
        // 1.18: one user entry, one assistant run (nothing in between counts).
        assert_eq!(run(EntryRules::V1_18), 2);
        // Main: u1, u2, agent, compaction, agent, elicitation, agent.
        assert_eq!(run(EntryRules::Main), 7);
    }

    #[test]
    fn the_client_initialize_tells_the_rules_apart() {
        let old = serde_json::json!({"clientCapabilities": {"fs": {}, "terminal": true}});
        let new = serde_json::json!({"clientCapabilities": {"elicitation": {"form": {}}}});
        assert_eq!(EntryRules::of_client(&old), EntryRules::V1_18);
        assert_eq!(EntryRules::of_client(&new), EntryRules::Main);
        assert_eq!(
            EntryRules::of_client(&serde_json::json!({})),
            EntryRules::V1_18
        );
    }
}
