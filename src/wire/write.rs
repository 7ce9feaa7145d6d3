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
