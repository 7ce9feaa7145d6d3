//! What the engine asks the durable store to keep, and what it gets back after a restart:
//! plain data in the model's terms, so the engine stays free of I/O and the store
//! (`crate::store`) implements these, not the other way round.

use super::ids::{ChildId, ClientSessionId};
use super::model::{ChildState, TurnRange};

/// One child session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChild {
    /// Deterministic id the proxy gave the child.
    pub child_id: ChildId,
    /// The session whose thread holds the child's spawn card.
    pub parent_session_id: ClientSessionId,
    pub spawn_tool_call_id: String,
    /// Agent identity (agentInfo name or command).
    pub agent: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    /// The agent's name for the spawning tool (absent in rows of older stores).
    pub tool_name: Option<String>,
    /// The agent's own id for the child (`agent_child_id`), if it named one (absent in rows
    /// of older stores).
    pub agent_child_id: Option<String>,
    pub state: ChildState,
    /// The child's session/update `update` objects, exact JSON text, in order.
    pub updates: Vec<String>,
    pub entry_count: u32,
    /// Index ranges per turn.
    pub turns: Vec<TurnRange>,
    /// Unix seconds of the last write to this child.
    pub updated_at: i64,
}

/// Writes for the store; applied in order, batched in transactions.
///
/// A write naming a child that has no row yet creates a placeholder row (empty parent, agent
/// and tool call id, state `announced`) that a later `UpsertChild` completes: nothing is lost
/// to an ordering slip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOp {
    /// Create the child, or update its fields. `cwd`, `title` and `tool_name` given as `None`
    /// keep the stored value.
    UpsertChild {
        child_id: ChildId,
        parent_session_id: ClientSessionId,
        spawn_tool_call_id: String,
        agent: String,
        cwd: Option<String>,
        title: Option<String>,
        tool_name: Option<String>,
        state: ChildState,
    },
    /// One update, appended after the previous ones of that child.
    AppendUpdate {
        child_id: ChildId,
        /// Shared with the child's thread in memory: the text is not copied to be stored.
        update: std::sync::Arc<str>,
    },
    SetState {
        child_id: ChildId,
        state: ChildState,
    },
    SetIndices {
        child_id: ChildId,
        entry_count: u32,
        turns: Vec<TurnRange>,
    },
    /// The agent's own id for the child (`agent_child_id`).
    SetAgentChildId {
        child_id: ChildId,
        agent_child_id: String,
    },
}
