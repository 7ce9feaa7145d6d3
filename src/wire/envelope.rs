//! Borrowed JSON-RPC envelope: what a frame is, without copying or re-serialising it.
//!
//! Only the top-level keys the router needs are looked at; `params`, `result` and `id` stay raw
//! JSON slices of the input, so a frame that is not rewritten is never touched.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::line_body;

/// The top-level shape of a JSON-RPC message, borrowed from the frame's bytes.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

/// What kind of message a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    /// Valid JSON that is not a JSON-RPC message we route (arrays, scalars, odd objects).
    Other,
}

impl Envelope<'_> {
    pub fn kind(&self) -> Kind {
        match (&self.method, self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, Some(_)) if self.result.is_some() || self.error.is_some() => Kind::Response,
            _ => Kind::Other,
        }
    }

    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The id as its raw JSON text (`1`, `"abc"`), usable as a map key: JSON-RPC ids are
    /// compared by value, and peers echo the id they received, so the text is stable.
    pub fn id_text(&self) -> Option<&str> {
        self.id.map(RawValue::get)
    }
}

/// Outcome of classifying one frame.
#[derive(Debug)]
pub enum Parsed<'a> {
    Message(Envelope<'a>),
    /// Empty or whitespace-only line.
    Blank,
    /// Not valid UTF-8 JSON of an object shape (includes batches and garbage).
    NotJsonRpc,
}

/// Classify a frame (terminator included or not).
pub fn parse(raw: &[u8]) -> Parsed<'_> {
    let body = line_body(raw);
    let trimmed = body.trim_ascii();
    if trimmed.is_empty() {
        return Parsed::Blank;
    }
    if trimmed[0] != b'{' {
        return Parsed::NotJsonRpc;
    }
    // serde_json skips the values of keys it is not asked for without checking their UTF-8:
    // check the whole line, or a frame with invalid bytes in such a key passes as a message.
    let Ok(text) = std::str::from_utf8(body) else {
        return Parsed::NotJsonRpc;
    };
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(env) => Parsed::Message(env),
        Err(_) => Parsed::NotJsonRpc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(raw: &str) -> Envelope<'_> {
        match parse(raw.as_bytes()) {
            Parsed::Message(e) => e,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn classifies_messages() {
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#).kind(),
            Kind::Request
        );
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#).kind(),
            Kind::Notification
        );
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#).kind(),
            Kind::Response
        );
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#).kind(),
            Kind::Response
        );
        assert_eq!(env(r#"{"foo":1}"#).kind(), Kind::Other);
    }

    #[test]
    fn keeps_ids_and_params_raw() {
        let e = env(r#"{"id":"a\/b","method":"m\u0065","params":{"n":1.0e3}}"#);
        assert_eq!(e.id_text(), Some(r#""a\/b""#));
        assert_eq!(e.method(), Some("me"));
        assert_eq!(e.params.map(RawValue::get), Some(r#"{"n":1.0e3}"#));
    }

    #[test]
    fn rejects_non_messages() {
        assert!(matches!(parse(b"[1,2]\n"), Parsed::NotJsonRpc));
        assert!(matches!(parse(b"{broken\n"), Parsed::NotJsonRpc));
        assert!(matches!(parse(b"\xff\xfe\n"), Parsed::NotJsonRpc));
        // Invalid UTF-8 in a key the envelope does not read.
        assert!(matches!(
            parse(b"{\"id\":5,\"result\":{},\"x\":\"\xff\"}\n"),
            Parsed::NotJsonRpc
        ));
        assert!(matches!(parse(b"  \r\n"), Parsed::Blank));
    }
}
