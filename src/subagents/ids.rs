//! Deterministic child session ids.
//!
//! A child's id is derived from (parent session id, spawn tool call id) only, so a replay after
//! a restart yields the same id and the durable store can answer for it.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

/// The client-facing id of a child session the proxy made: it names a child, never a session
/// of the agent's (functions that take one cannot be handed a session id by mistake). Derefs
/// to the id's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ChildId(String);

impl ChildId {
    /// The id of the child spawned by `spawn_tool_call_id` in `parent_session_id`.
    pub fn derive(parent_session_id: &str, spawn_tool_call_id: &str) -> ChildId {
        ChildId(child_session_id(parent_session_id, spawn_tool_call_id))
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

impl Deref for ChildId {
    type Target = str;

    fn deref(&self) -> &str {
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

/// Prefix of every child session id the proxy hands out.
pub const CHILD_ID_PREFIX: &str = "acpx-sub-";

/// The client-facing id of the child spawned by `spawn_tool_call_id` in `parent_session_id`.
pub fn child_session_id(parent_session_id: &str, spawn_tool_call_id: &str) -> String {
    use sha2::{Digest, Sha256};
    // SHA-256 over "parent \0 spawn", first 128 bits: stable across versions and platforms,
    // and unrelated inputs never look alike.
    let digest = Sha256::new()
        .chain_update(parent_session_id.as_bytes())
        .chain_update([0u8])
        .chain_update(spawn_tool_call_id.as_bytes())
        .finalize();
    let mut id = String::with_capacity(CHILD_ID_PREFIX.len() + 32);
    id.push_str(CHILD_ID_PREFIX);
    for b in &digest[..16] {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// Whether a session id has the shape of a proxy-made child id.
pub fn looks_like_child_id(id: &str) -> bool {
    id.len() == CHILD_ID_PREFIX.len() + 32
        && id.starts_with(CHILD_ID_PREFIX)
        && id[CHILD_ID_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
}

/// The spawn tool call id the proxy gives the card it synthesizes for a standard-ACP child
/// (the agent sends no spawn tool call of its own in that case).
pub fn synthesized_spawn_id(agent_child_session_id: &str) -> String {
    format!("acpx-spawn-{agent_child_session_id}")
}

/// The agent's child session id back from a synthesized spawn id.
pub fn agent_child_of_spawn(spawn_id: &str) -> Option<&str> {
    spawn_id.strip_prefix("acpx-spawn-")
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
            "acpx-sub-fe0c6cd6568fbe9287c05f5d2f21efc6"
        );
    }
}
