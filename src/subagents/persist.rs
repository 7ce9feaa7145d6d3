//! What the engine asks the durable store to keep, and what it gets back after a restart.

use super::model::TurnRange;

/// A write for the store, applied in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOp {
    UpsertChild {
        child_id: String,
        parent_session_id: String,
        spawn_tool_call_id: String,
        agent: String,
        cwd: Option<String>,
        title: Option<String>,
        state: String,
    },
    /// One update, appended after the previous ones of that child.
    AppendUpdate {
        child_id: String,
        update: String,
    },
    SetState {
        child_id: String,
        state: String,
    },
    SetIndices {
        child_id: String,
        entry_count: u32,
        turns: Vec<TurnRange>,
    },
}

/// One child session as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChild {
    pub child_id: String,
    pub parent_session_id: String,
    pub spawn_tool_call_id: String,
    pub agent: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub state: String,
    /// The child's `update` objects, exact JSON text, in order.
    pub updates: Vec<String>,
    pub entry_count: u32,
    pub turns: Vec<TurnRange>,
    pub updated_at: i64,
}
