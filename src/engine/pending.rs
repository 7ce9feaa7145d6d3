//! Requests in flight, keyed by their raw JSON id, remembered in arrival order.

use std::collections::HashMap;

use serde_json::value::RawValue;

/// A request still waiting for its response.
#[derive(Debug, Clone)]
pub(super) struct PendingRequest {
    pub id: Box<RawValue>,
    pub method: String,
    /// The session the request names, when the router needs it for the response.
    pub session: Option<String>,
    seq: u64,
}

/// Pending requests of one direction of one connection.
#[derive(Debug, Default)]
pub(super) struct PendingRequests {
    by_id: HashMap<String, PendingRequest>,
    next_seq: u64,
}

impl PendingRequests {
    pub(super) fn insert(&mut self, id: &RawValue, method: &str, session: Option<&str>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_id.insert(
            id.get().to_owned(),
            PendingRequest {
                id: id.to_owned(),
                method: method.to_owned(),
                session: session.map(str::to_owned),
                seq,
            },
        );
    }

    pub(super) fn remove(&mut self, id: &RawValue) -> Option<PendingRequest> {
        self.by_id.remove(id.get())
    }

    /// Whether a request with this id (its JSON text) is pending.
    pub(super) fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Whether a `method` request naming `session` is pending.
    pub(super) fn has(&self, method: &str, session: &str) -> bool {
        self.by_id
            .values()
            .any(|r| r.method == method && r.session.as_deref() == Some(session))
    }

    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Take every pending request, oldest first.
    pub(super) fn drain_in_order(&mut self) -> Vec<PendingRequest> {
        let mut all: Vec<PendingRequest> = self.by_id.drain().map(|(_, r)| r).collect();
        all.sort_by_key(|r| r.seq);
        all
    }
}
