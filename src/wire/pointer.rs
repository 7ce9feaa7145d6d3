//! JSON pointers read straight off a value's text with the validating walker: the span of the
//! value a pointer names, a string's value, an object's keys. Nothing is built but what is
//! asked for.
//!
//! Meant for text the walker already accepted (an update taken apart by
//! [`update_view`](super::update_view)). Each answer is `Some(..)` when it is the one a parsed
//! [`serde_json::Value`] would give, and `None` when the text is read otherwise there (a key
//! whose escapes do not decode, invalid JSON): the caller then parses.

use std::borrow::Cow;

use super::skip::{skip_ws, value_end};
use super::update_view::{members, string_at};

/// The text of the value `ptr` (an RFC 6901 pointer) names in `json`: `Some(None)` when there
/// is none. Of a key given twice the last counts, as in a parsed `Value`.
pub fn find<'a>(json: &'a str, ptr: &str) -> Option<Option<&'a str>> {
    let start = skip_ws(json.as_bytes(), 0);
    let end = value_end(json.as_bytes(), start, 0)?;
    let mut at = json.get(start..end)?;
    if ptr.is_empty() {
        return Some(Some(at));
    }
    let Some(rest) = ptr.strip_prefix('/') else {
        return Some(None);
    };
    for token in rest.split('/') {
        let token = if token.contains('~') {
            Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
        } else {
            Cow::Borrowed(token)
        };
        let child = match at.as_bytes().first() {
            Some(b'{') => member(at, &token)?,
            Some(b'[') => item(at, &token)?,
            _ => None,
        };
        match child {
            Some(c) => at = c,
            None => return Some(None),
        }
    }
    Some(Some(at))
}

/// The value of the member `key` of the object `obj` (its whole text), the last if repeated.
fn member<'a>(obj: &'a str, key: &str) -> Option<Option<&'a str>> {
    let b = obj.as_bytes();
    let mut found = None;
    let mut failed = false;
    members(obj, 0, |k, at| {
        let end = value_end(b, at, 1)?;
        match k.decoded() {
            Some(name) if name == key => found = obj.get(at..end),
            Some(_) => {}
            None => failed = true,
        }
        Some(end)
    })?;
    (!failed).then_some(found)
}

/// The item at index `token` of the array `arr` (its whole text).
fn item<'a>(arr: &'a str, token: &str) -> Option<Option<&'a str>> {
    // As `Value::pointer` reads an index: no sign, no leading zero.
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return Some(None);
    }
    let Ok(want) = token.parse::<usize>() else {
        return Some(None);
    };
    Some(items(arr)?.into_iter().nth(want))
}

/// The items of the array `arr` (its whole text), each as its text.
pub fn items(arr: &str) -> Option<Vec<&str>> {
    let b = arr.as_bytes();
    if b.first() != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, 1);
    if b.get(i) == Some(&b']') {
        return Some(out);
    }
    loop {
        let end = value_end(b, i, 1)?;
        out.push(arr.get(i..end)?);
        i = skip_ws(b, end);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b']' => return Some(out),
            _ => return None,
        }
    }
}

/// The value of a string's text (quotes included), decoded; `None` if it is no string.
pub fn string(text: &str) -> Option<Cow<'_, str>> {
    if !text.starts_with('"') {
        return None;
    }
    string_at(text, 0).map(|(s, _)| s)
}

/// The keys of the object `obj` (its whole text), in order, as written (quotes included).
pub fn keys(obj: &str) -> Option<Vec<&str>> {
    let b = obj.as_bytes();
    let start = skip_ws(b, 0);
    let mut out = Vec::new();
    members(obj, start, |k, at| {
        out.push(k.raw());
        value_end(b, at, 1)
    })?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const DOC: &str = r#" {"a":{"b":[1,{"c":"x\"y"},[]],"d~/e":true,"a":null},"a":{"b":[0,{"c":"last"}]},"s":"p\u00e9","n":null} "#;

    #[test]
    fn finds_what_a_parsed_value_finds() {
        let v: Value = serde_json::from_str(DOC).expect("json");
        for ptr in [
            "",
            "/a",
            "/a/b",
            "/a/b/1",
            "/a/b/1/c",
            "/a/b/01",
            "/a/b/+1",
            "/a/b/9",
            "/a/x",
            "/s",
            "/n",
            "/s/0",
            "/a/b/0/c",
            "/a/d~1~0e",
            "x",
        ] {
            let raw = find(DOC, ptr).expect("readable");
            let parsed = raw.map(|t| serde_json::from_str::<Value>(t).expect("a value"));
            assert_eq!(parsed.as_ref(), v.pointer(ptr), "{ptr}");
        }
    }

    #[test]
    fn strings_decode_and_keys_keep_their_order() {
        let s = find(DOC, "/s").expect("readable").expect("found");
        assert_eq!(string(s).as_deref(), Some("pé"));
        assert_eq!(string("12"), None);
        assert_eq!(keys(DOC), Some(vec!["\"a\"", "\"a\"", "\"s\"", "\"n\""]));
        assert_eq!(items("[1, [2,3] ,{}]"), Some(vec!["1", "[2,3]", "{}"]));
        assert_eq!(items("{}"), None);
    }
}
