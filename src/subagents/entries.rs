//! Zed's thread-entry rules, used to compute `message_start_index` / `message_end_index`.
//!
//! Entries are built from a thread's updates: consecutive user chunks form one user entry;
//! consecutive agent message/thought chunks form one assistant entry; each `tool_call` with a
//! new id is one entry; everything else (updates of known tool calls, plans, usage, modes,
//! commands, info) adds nothing.

use std::collections::HashSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Last {
    #[default]
    Nothing,
    User,
    Assistant,
    Tool,
}

/// Counts the entries a client builds from a sequence of updates.
#[derive(Debug, Clone, Default)]
pub struct EntryCounter {
    count: u32,
    last: Last,
    tool_ids: HashSet<String>,
}

impl EntryCounter {
    /// Account for one update of kind `kind` (the `sessionUpdate` value).
    pub fn push(&mut self, kind: &str, tool_call_id: Option<&str>) {
        match kind {
            "user_message_chunk" => self.open(Last::User),
            "agent_message_chunk" | "agent_thought_chunk" => self.open(Last::Assistant),
            "tool_call" => {
                if let Some(id) = tool_call_id {
                    if self.tool_ids.insert(id.to_owned()) {
                        self.count += 1;
                        self.last = Last::Tool;
                    }
                }
            }
            _ => {}
        }
    }

    fn open(&mut self, kind: Last) {
        if self.last != kind {
            self.count += 1;
            self.last = kind;
        }
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
        let mut c = EntryCounter::default();
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
