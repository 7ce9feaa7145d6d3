//! The few JSON-RPC lines the proxy writes itself.

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON value as one terminated line.
pub fn line(msg: &Value) -> Bytes {
    let mut text = msg.to_string();
    text.push('\n');
    text.into()
}

/// A JSON-RPC error response for the given raw id.
pub fn error(id: &RawValue, code: i64, message: &str) -> Bytes {
    let msg = serde_json::to_string(message).unwrap_or_else(|_| "\"error\"".to_owned());
    Bytes::from(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":{code},\"message\":{msg}}}}}\n",
        id.get()
    ))
}

/// A JSON-RPC result response for the given raw id.
pub fn result(id: &RawValue, result: &Value) -> Bytes {
    Bytes::from(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{result}}}\n",
        id.get()
    ))
}

/// A notification line.
pub fn notification(method: &str, params: &Value) -> Bytes {
    line(&serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// `session/update` notification line for a session.
pub fn session_update(session_id: &str, update: &Value) -> Bytes {
    // Written straight into the line: building the envelope as a `Value` would copy the
    // whole update first.
    session_update_with(session_id, 256, |line| {
        // Writing a `Value` into a Vec cannot fail.
        let _ = serde_json::to_writer(line, update);
    })
}

/// `session/update` line from an update already serialised (replays from memory or store).
pub fn session_update_raw(session_id: &str, update_json: &str) -> Bytes {
    session_update_with(session_id, update_json.len(), |line| {
        line.extend_from_slice(update_json.as_bytes())
    })
}

/// `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":…,"update":…}}\n` with
/// the update written by `update` (`size_hint`: its expected length).
pub fn session_update_with(
    session_id: &str,
    size_hint: usize,
    update: impl FnOnce(&mut Vec<u8>),
) -> Bytes {
    let mut line = Vec::with_capacity(size_hint + session_id.len() + 96);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"#);
    // A string serialises infallibly.
    let _ = serde_json::to_writer(&mut line, session_id);
    line.extend_from_slice(br#","update":"#);
    update(&mut line);
    line.extend_from_slice(b"}}\n");
    line.into()
}
