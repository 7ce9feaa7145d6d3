//! Deterministic child session ids.
//!
//! A child's id is derived from (parent session id, spawn tool call id) only, so a replay after
//! a restart yields the same id and the durable store can answer for it.

use std::borrow::Borrow;
use std::fmt;

/// The client-facing id of a child session the proxy made: it names a child, never a session
/// of the agent's (functions that take one cannot be handed a session id by mistake). Its
/// text is [`ChildId::as_str`]; a session id the client names becomes one only through the
/// registry (`Children::resolve`) or the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ChildId(String);

impl ChildId {
    /// The id of the child spawned by `spawn_tool_call_id` in `parent_session_id`.
    pub fn derive(parent_session_id: &str, spawn_tool_call_id: &str) -> ChildId {
        ChildId(child_session_id(parent_session_id, spawn_tool_call_id))
    }

    /// The id of the child spawned by `spawn_tool_call_id` in `parent_session_id`, or the id
    /// an earlier version gave that child (`acpx-sub-…`) if `known` holds it and not the
    /// current one: a child stored under the old prefix keeps its id, so the store, and the
    /// client that already shows it, still find it.
    pub fn derive_known(
        parent_session_id: &str,
        spawn_tool_call_id: &str,
        known: impl Fn(&str) -> bool,
    ) -> ChildId {
        let current = ChildId::derive(parent_session_id, spawn_tool_call_id);
        if known(current.as_str()) {
            return current;
        }
        legacy_child_ids(parent_session_id, spawn_tool_call_id)
            .into_iter()
            .find(|id| known(id.as_str()))
            .unwrap_or(current)
    }

    /// An id known to be a child's (the store's, or one the client named and the registry
    /// knows).
    pub fn known(id: String) -> ChildId {
        ChildId(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ChildId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A session id on the agent's side: the session a child's events arrive on (the top-level
/// session for legacy wires), or the session the agent gave to a child of its own (standard
/// ACP subagents, which the client never sees). It never names a child the proxy made
/// ([`ChildId`]). Looked up by its text where the wire names it (`Borrow<str>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentSessionId(String);

impl AgentSessionId {
    /// The id as the agent sent it.
    pub fn new(id: String) -> AgentSessionId {
        AgentSessionId(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for AgentSessionId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A session id as the client knows it: a top-level session (one the client created or
/// loaded) or a child the proxy made, as the session whose thread holds a spawn card. It is
/// what the store files children under and what updates for the client are sent to; an
/// agent's session id ([`AgentSessionId`]) cannot be passed where one is asked for. Looked up
/// by its text where the wire names it (`Borrow<str>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ClientSessionId(String);

impl ClientSessionId {
    /// The id as the client (or, for a top-level session, the agent) sent it.
    pub fn new(id: String) -> ClientSessionId {
        ClientSessionId(id)
    }

    /// A child the proxy made, as the session that holds its own children's cards.
    pub fn of_child(id: &ChildId) -> ClientSessionId {
        ClientSessionId(id.0.clone())
    }

    /// The same session on the agent's side: a top-level session has one id on both sides
    /// (the proxy renames none); a child's id names no session of the agent's.
    pub fn top_level_on_agent(&self) -> AgentSessionId {
        AgentSessionId(self.0.clone())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ClientSessionId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClientSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Prefix of every child session id the proxy hands out.
pub const CHILD_ID_PREFIX: &str = "acp-proxy-sub-";
/// The prefix earlier versions gave child ids (the name of another ACP tool, so it changed);
/// children stored under it still reopen.
pub const LEGACY_CHILD_ID_PREFIX: &str = "acpx-sub-";
/// Prefix of the spawn tool call ids of the cards the proxy draws itself, and the earlier one.
const SPAWN_ID_PREFIX: &str = "acp-proxy-spawn-";
const LEGACY_SPAWN_ID_PREFIX: &str = "acpx-spawn-";

/// The client-facing id of the child spawned by `spawn_tool_call_id` in `parent_session_id`.
pub fn child_session_id(parent_session_id: &str, spawn_tool_call_id: &str) -> String {
    prefixed_child_id(CHILD_ID_PREFIX, parent_session_id, spawn_tool_call_id)
}

/// The ids earlier versions gave the child spawned by `spawn_tool_call_id`: the same hash
/// under the old prefix.
fn legacy_child_ids(parent_session_id: &str, spawn_tool_call_id: &str) -> Vec<ChildId> {
    vec![ChildId(prefixed_child_id(
        LEGACY_CHILD_ID_PREFIX,
        parent_session_id,
        spawn_tool_call_id,
    ))]
}

fn prefixed_child_id(prefix: &str, parent_session_id: &str, spawn_tool_call_id: &str) -> String {
    use sha2::{Digest, Sha256};
    // SHA-256 over "parent \0 spawn", first 128 bits: stable across versions and platforms,
    // and unrelated inputs never look alike.
    // A card the proxy drew is hashed under the spawn id it had when ids were first pinned
    // (`acpx-spawn-…`): only the prefix of a child's id changed, never the hash.
    let drawn = spawn_tool_call_id
        .strip_prefix(SPAWN_ID_PREFIX)
        .map(|agent_child| format!("{LEGACY_SPAWN_ID_PREFIX}{agent_child}"));
    let digest = Sha256::new()
        .chain_update(parent_session_id.as_bytes())
        .chain_update([0u8])
        .chain_update(drawn.as_deref().unwrap_or(spawn_tool_call_id).as_bytes())
        .finalize();
    let mut id = String::with_capacity(prefix.len() + 32);
    id.push_str(prefix);
    for b in &digest[..16] {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// Whether a session id has the shape of a proxy-made child id (either prefix).
pub fn looks_like_child_id(id: &str) -> bool {
    [CHILD_ID_PREFIX, LEGACY_CHILD_ID_PREFIX].iter().any(|p| {
        id.strip_prefix(p)
            .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// The spawn tool call id the proxy gives the card it synthesizes for a standard-ACP child
/// (the agent sends no spawn tool call of its own in that case).
pub fn synthesized_spawn_id(agent_child_session_id: &str) -> String {
    format!("{SPAWN_ID_PREFIX}{agent_child_session_id}")
}

/// The agent's child session id back from a synthesized spawn id.
pub fn agent_child_of_spawn(spawn_id: &str) -> Option<&str> {
    spawn_id
        .strip_prefix(SPAWN_ID_PREFIX)
        .or_else(|| spawn_id.strip_prefix(LEGACY_SPAWN_ID_PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_distinct() {
        let a = child_session_id("s1", "toolu_1");
        assert_eq!(a, child_session_id("s1", "toolu_1"));
        assert_ne!(a, child_session_id("s1", "toolu_2"));
        assert_ne!(a, child_session_id("s2", "toolu_1"));
        // The separator keeps ("ab","c") and ("a","bc") apart.
        assert_ne!(child_session_id("ab", "c"), child_session_id("a", "bc"));
        assert!(looks_like_child_id(&a));
        assert!(!looks_like_child_id("demo-session-1"));
        assert_eq!(
            agent_child_of_spawn(&synthesized_spawn_id("a01")),
            Some("a01")
        );
    }

    #[test]
    fn id_is_stable_across_versions() {
        // Changing the derivation would orphan every stored transcript: this pins it.
        assert_eq!(
            child_session_id("1e036a18-9600-4de4-ad46-24ad9aa9a97a", "toolu_0002"),
            "acp-proxy-sub-fe0c6cd6568fbe9287c05f5d2f21efc6"
        );
    }

    #[test]
    fn a_child_stored_under_the_old_prefix_keeps_its_id() {
        let old = "acpx-sub-fe0c6cd6568fbe9287c05f5d2f21efc6";
        assert!(looks_like_child_id(old));
        let parent = "1e036a18-9600-4de4-ad46-24ad9aa9a97a";
        let id = ChildId::derive_known(parent, "toolu_0002", |id| id == old);
        assert_eq!(id.as_str(), old);
        // Nothing known under either: the current prefix.
        let id = ChildId::derive_known(parent, "toolu_0002", |_| false);
        assert_eq!(
            id.as_str(),
            "acp-proxy-sub-fe0c6cd6568fbe9287c05f5d2f21efc6"
        );
        // A card the proxy drew: its spawn id had the old prefix as well; the hash is the same.
        assert_eq!(
            child_session_id(parent, &synthesized_spawn_id("c1"))["acp-proxy-sub-".len()..],
            child_session_id(parent, "acpx-spawn-c1")["acp-proxy-sub-".len()..]
        );
        let old_drawn = prefixed_child_id(LEGACY_CHILD_ID_PREFIX, parent, "acpx-spawn-c1");
        let id = ChildId::derive_known(parent, &synthesized_spawn_id("c1"), |id| id == old_drawn);
        assert_eq!(id.as_str(), old_drawn);
        assert_eq!(agent_child_of_spawn("acpx-spawn-c1"), Some("c1"));
    }
}
