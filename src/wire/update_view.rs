//! A `session/update` notification taken apart in one pass over its bytes: the session id, the
//! fields of the update the router reads, its `_meta`, and the exact JSON text of the update
//! (what a child's transcript records and replays).
//!
//! The walk validates every value as serde_json would while skipping it (`wire::skip`),
//! decodes only the few small strings the router needs, and takes the update's text as the
//! span from its `{` to its `}`. Anything unusual (escaped keys in the update, a missing or
//! duplicated field, invalid JSON anywhere) gives `None`, and the caller takes the general path.

use std::borrow::Cow;

use super::skip::{literal_end, skip_ws, string_end, value_end};

/// The fields of an update the router reads, with the update's text, borrowed from the frame.
#[derive(Debug)]
pub struct UpdateParts<'a> {
    /// The update object's exact JSON text.
    pub raw: &'a str,
    /// `sessionUpdate`.
    pub kind: Cow<'a, str>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub title: Option<Cow<'a, str>>,
    pub has_status: bool,
    /// The raw text of the update's `_meta`, if any.
    pub meta: Option<&'a str>,
}

/// A whole `session/update` notification, taken apart.
#[derive(Debug)]
pub struct UpdateFrame<'a> {
    pub session_id: Cow<'a, str>,
    pub update: UpdateParts<'a>,
}

impl<'a> UpdateFrame<'a> {
    /// Take apart a frame's text (`{"method":"session/update","params":{...}}`). `None` when
    /// it is anything else, or unusual enough (escaped keys in the update, an empty update) that
    /// the caller should take the general path.
    pub fn parse(text: &'a str) -> Option<UpdateFrame<'a>> {
        let mut method = false;
        let mut params = None;
        let end = members(text, skip_ws(text.as_bytes(), 0), |key, at| {
            match &*key.decoded()? {
                "method" if !method => {
                    let (name, end) = string_at(text, at)?;
                    method = name == "session/update";
                    method.then_some(end)
                }
                "params" if params.is_none() => {
                    let (frame, end) = read_params(text, at, 1)?;
                    params = Some(frame);
                    Some(end)
                }
                // A second `method` or `params` is refused, as a derived struct refuses it.
                "method" | "params" => None,
                _ => value_end(text.as_bytes(), at, 1),
            }
        })?;
        let frame = params.filter(|_| method)?;
        only_whitespace_after(text, end).then_some(frame)
    }

    /// Take apart the text of a `session/update`'s `params` object.
    pub fn parse_params(params: &'a str) -> Option<UpdateFrame<'a>> {
        let (frame, end) = read_params(params, skip_ws(params.as_bytes(), 0), 0)?;
        only_whitespace_after(params, end).then_some(frame)
    }
}

/// The `params` object at `at` and the index after it; `outer` arrays and objects enclose it.
fn read_params(text: &str, at: usize, outer: usize) -> Option<(UpdateFrame<'_>, usize)> {
    let mut session_id = None;
    let mut update = None;
    let end = members(text, at, |key, at| match &*key.decoded()? {
        "sessionId" if session_id.is_none() => {
            let (id, end) = string_at(text, at)?;
            session_id = Some(id);
            Some(end)
        }
        "update" if update.is_none() => {
            let (parts, end) = read_update(text, at, outer + 1)?;
            update = Some(parts);
            Some(end)
        }
        "sessionId" | "update" => None,
        _ => value_end(text.as_bytes(), at, outer + 1),
    })?;
    let frame = UpdateFrame {
        session_id: session_id?,
        update: update?,
    };
    Some((frame, end))
}

/// The update object at `at` and the index after it; `outer` arrays and objects enclose it.
/// A key written with an escape refuses it (as the serde reading did); of a repeated field the
/// last one counts.
fn read_update(text: &str, at: usize, outer: usize) -> Option<(UpdateParts<'_>, usize)> {
    let depth = outer + 1;
    let mut kind = None;
    let mut tool_call_id = None;
    let mut title = None;
    let mut has_status = false;
    let mut meta = None;
    let end = members(text, at, |key, at| {
        let field = match key.plain()? {
            "sessionUpdate" => &mut kind,
            "toolCallId" => &mut tool_call_id,
            "title" => &mut title,
            "status" => {
                let (status, end) = nullable_string_at(text, at)?;
                has_status = status.is_some();
                return Some(end);
            }
            "_meta" => {
                let end = value_end(text.as_bytes(), at, depth)?;
                meta = Some(text.get(at..end)?);
                return Some(end);
            }
            _ => return value_end(text.as_bytes(), at, depth),
        };
        let (value, end) = nullable_string_at(text, at)?;
        *field = value;
        Some(end)
    })?;
    let parts = UpdateParts {
        raw: text.get(at..end)?,
        kind: kind?,
        tool_call_id,
        title,
        has_status,
        meta,
    };
    Some((parts, end))
}

/// A member's key, quotes included, as it is in the input.
pub(super) struct Key<'a>(&'a str);

impl<'a> Key<'a> {
    /// The name, if it has no escapes.
    pub(super) fn plain(&self) -> Option<&'a str> {
        let name = unquote(self.0)?;
        (!has_backslash(name.as_bytes())).then_some(name)
    }

    /// The name with its escapes decoded (`None` if they do not decode, e.g. a lone surrogate).
    pub(super) fn decoded(&self) -> Option<Cow<'a, str>> {
        decode(self.0)
    }

    /// The key as written, quotes included.
    pub(super) fn raw(&self) -> &'a str {
        self.0
    }
}

/// Walk the object whose `{` is at `i`: for each member, `on_member` gets its key and the index
/// of its value and returns the index after the value. Returns the index after the `}`.
pub(super) fn members<'a>(
    text: &'a str,
    i: usize,
    mut on_member: impl FnMut(Key<'a>, usize) -> Option<usize>,
) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let close = string_end(b, i + 1)?;
        let key = Key(text.get(i..=close)?);
        i = skip_ws(b, close + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, on_member(key, skip_ws(b, i + 1))?);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The string at `i` (its opening quote), decoded, and the index after it.
pub(super) fn string_at(text: &str, i: usize) -> Option<(Cow<'_, str>, usize)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let close = string_end(b, i + 1)?;
    Some((decode(text.get(i..=close)?)?, close + 1))
}

/// A string or `null` at `i`, and the index after it.
pub(super) fn nullable_string_at(text: &str, i: usize) -> Option<(Option<Cow<'_, str>>, usize)> {
    match text.as_bytes().get(i)? {
        b'n' => Some((None, literal_end(text.as_bytes(), i, b"null")?)),
        _ => string_at(text, i).map(|(s, end)| (Some(s), end)),
    }
}

/// A quoted JSON string's value: borrowed when it has no escapes, else decoded by serde_json
/// (rare, and these strings are small).
fn decode(quoted: &str) -> Option<Cow<'_, str>> {
    let inner = unquote(quoted)?;
    if !has_backslash(inner.as_bytes()) {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
}

/// Whether `b` holds a backslash. Most strings read here are keys and ids of a few bytes,
/// where a plain loop costs less than setting up `memchr`'s vector search.
#[inline]
pub(super) fn has_backslash(b: &[u8]) -> bool {
    if b.len() < 32 {
        b.contains(&b'\\')
    } else {
        memchr::memchr(b'\\', b).is_some()
    }
}

/// The text between a quoted string's quotes.
fn unquote(quoted: &str) -> Option<&str> {
    quoted.strip_prefix('"')?.strip_suffix('"')
}

pub(super) fn only_whitespace_after(text: &str, end: usize) -> bool {
    skip_ws(text.as_bytes(), end) == text.len()
}

#[cfg(test)]
mod oracle;
#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_update_text_is_exactly_the_object_in_the_frame() {
        let text = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update": { "_meta":{"claudeCode":{"parentToolUseId":"t0"}},"toolCallId":"t1","sessionUpdate":"tool_call","title":"Read","status":"pending","rawInput":{"a":[1,{"b":"}"}]} } }}"#;
        let f = UpdateFrame::parse(text).expect("parsed");
        assert_eq!(f.session_id, "s1");
        let u = &f.update;
        assert_eq!(
            u.raw,
            r#"{ "_meta":{"claudeCode":{"parentToolUseId":"t0"}},"toolCallId":"t1","sessionUpdate":"tool_call","title":"Read","status":"pending","rawInput":{"a":[1,{"b":"}"}]} }"#
        );
        assert_eq!(u.kind, "tool_call");
        assert_eq!(u.tool_call_id.as_deref(), Some("t1"));
        assert_eq!(u.title.as_deref(), Some("Read"));
        assert!(u.has_status);
        assert_eq!(u.meta, Some(r#"{"claudeCode":{"parentToolUseId":"t0"}}"#));
        let v: serde_json::Value = serde_json::from_str(u.raw).expect("the text is JSON");
        assert_eq!(v["rawInput"]["a"][1]["b"], "}");
    }

    #[test]
    fn agrees_with_a_full_parse_on_params() {
        let params = r#"{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"h\u00e9 \"x\""},"status":null},"sessionId":"s\"2"}"#;
        let f = UpdateFrame::parse_params(params).expect("parsed");
        assert_eq!(f.session_id, "s\"2");
        assert_eq!(f.update.kind, "agent_message_chunk");
        assert!(!f.update.has_status, "a null status is no status");
        let full: serde_json::Value = serde_json::from_str(params).expect("json");
        let ours: serde_json::Value = serde_json::from_str(f.update.raw).expect("json");
        assert_eq!(ours, full["update"]);
    }

    #[test]
    fn unusual_updates_are_left_to_the_general_path() {
        for text in [
            r#"{"method":"session/update","params":{"sessionId":"s","update":{}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"\u0073essionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"content":1}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":7}}}"#,
            r#"{"method":"session/other","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":[1]}}"#,
        ] {
            assert!(UpdateFrame::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn the_last_of_a_repeated_update_field_counts() {
        let text = r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":null,"status":"done","title":"a","_meta":1,"sessionUpdate":"tool_call","status":null,"title":"b","_meta":{"k":2},"toolCallId":"t1","toolCallId":"t2"}}}"#;
        let f = UpdateFrame::parse(text).expect("parsed");
        assert_eq!(f.update.kind, "tool_call");
        assert!(!f.update.has_status, "the last status is null");
        assert_eq!(f.update.title.as_deref(), Some("b"));
        assert_eq!(f.update.meta, Some(r#"{"k":2}"#));
        assert_eq!(f.update.tool_call_id.as_deref(), Some("t2"));
    }

    #[test]
    fn frame_and_params_keys_are_read_decoded_and_once() {
        let escaped = r#"{"m\u0065thod":"session\/update","par\u0061ms":{"session\u0049d":"s\u00e9","update":{"sessionUpdate":"x"}}}"#;
        let f = UpdateFrame::parse(escaped).expect("escaped frame keys are decoded");
        assert_eq!(f.session_id, "sé");
        assert!(matches!(f.session_id, Cow::Owned(_)));
        let plain = r#"{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"x"}}}"#;
        let f = UpdateFrame::parse(plain).expect("parsed");
        assert!(
            matches!(f.session_id, Cow::Borrowed("s1")),
            "no escape, no copy"
        );
        for text in [
            r#"{"method":"session/update","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x"}},"params":{}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","sessionId":"s","update":{"sessionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x"},"update":{"sessionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"update":{"sessionUpdate":"x"}}}"#,
            r#"{"params":{"sessionId":"s","update":{"sessionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"\ud800","update":{"sessionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":null,"update":{"sessionUpdate":"x"}}}"#,
        ] {
            assert!(UpdateFrame::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn only_whitespace_may_follow_the_frame() {
        let frame = r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}}"#;
        assert!(UpdateFrame::parse(&format!(" \t{frame} \r\n")).is_some());
        for junk in ["x", ",", "}", "{}", "\u{b}", "\u{a0}"] {
            assert!(
                UpdateFrame::parse(&format!("{frame}{junk}")).is_none(),
                "{junk:?}"
            );
        }
        let params = r#"{"sessionId":"s","update":{"sessionUpdate":"x"}}"#;
        assert!(UpdateFrame::parse_params(&format!("\n{params}\n")).is_some());
        assert!(UpdateFrame::parse_params(&format!("{params}]")).is_none());
    }

    #[test]
    fn invalid_or_too_deep_values_anywhere_refuse_the_frame() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for extra in [
            r#""a\x""#,
            "\"tab\there\"",
            "01",
            "[1,]",
            "{\"a\":1,}",
            "tru",
            deep.as_str(),
        ] {
            for text in [
                format!(
                    r#"{{"id":{extra},"method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"x"}}}}}}"#
                ),
                format!(
                    r#"{{"method":"session/update","params":{{"x":{extra},"sessionId":"s","update":{{"sessionUpdate":"x"}}}}}}"#
                ),
                format!(
                    r#"{{"method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"x","content":{extra}}}}}}}"#
                ),
            ] {
                assert!(UpdateFrame::parse(&text).is_none(), "{text}");
            }
        }
    }

    #[test]
    fn positional_forms_are_left_to_the_general_path() {
        // A derived struct would also read these by position; JSON-RPC notifications and ACP's
        // params are objects, so the walk does not.
        for text in [
            r#"["session/update",{"sessionId":"s","update":{"sessionUpdate":"x"}}]"#,
            r#"{"method":"session/update","params":["s",{"sessionUpdate":"x"}]}"#,
        ] {
            assert!(UpdateFrame::parse(text).is_none(), "{text}");
        }
    }
}
