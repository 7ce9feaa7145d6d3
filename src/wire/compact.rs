//! Whether a JSON text is already what serde_json writes for the value it reads from it: the
//! compact form, so the text can be copied where the parsed value would be serialized again,
//! or spliced into (a member set after its last one), and give the same bytes.
//!
//! The answer is `true` only when it is sure: no whitespace between tokens; strings whose
//! escapes are the ones serde_json writes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`: no `\/`,
//! and no `\u` at all, since serde_json writes non-ASCII as it is and a lone surrogate does
//! not parse); numbers that are integers in `i64`/`u64` written plainly (no fraction, no
//! exponent, no `-0`: those are read as floats and written otherwise); no key twice in an
//! object (a parsed object keeps one). Anything else is `false`, and the caller parses.

use memchr::memchr;

use super::skip::{string_end, MAX_DEPTH};
use super::update_view::has_backslash;

/// Past this many keys in one object the check for repeated keys (each key against those
/// before it) would cost more than it saves: such an object is not taken as compact.
const MAX_KEYS: usize = 32;

/// An open container, innermost last.
enum Open {
    /// An object, with where its keys start in the list of keys seen.
    Object(usize),
    Array,
}

/// Whether `text` is serde_json's compact writing of the value it parses to (see the module).
pub fn is_compact(text: &str) -> bool {
    check(text.as_bytes()).is_some()
}

fn check(b: &[u8]) -> Option<()> {
    let mut open: Vec<Open> = Vec::with_capacity(8);
    let mut keys: Vec<&[u8]> = Vec::with_capacity(MAX_KEYS);
    let mut i = 0;
    loop {
        // A value starts at `i`.
        match *b.get(i)? {
            b'{' => {
                if b.get(i + 1) == Some(&b'}') {
                    i += 2;
                } else {
                    let start = keys.len();
                    open.push(Open::Object(start));
                    deep(&open)?;
                    i = key(b, i + 1, &mut keys, start)?;
                    continue;
                }
            }
            b'[' => {
                if b.get(i + 1) == Some(&b']') {
                    i += 2;
                } else {
                    open.push(Open::Array);
                    deep(&open)?;
                    i += 1;
                    continue;
                }
            }
            b'"' => i = string(b, i)?,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            _ => i = integer(b, i)?,
        }
        // A value ended at `i`: close what it ends, up to the next value.
        loop {
            match open.last() {
                None => return (i == b.len()).then_some(()),
                Some(&Open::Object(start)) => match *b.get(i)? {
                    b',' => {
                        i = key(b, i + 1, &mut keys, start)?;
                        break;
                    }
                    b'}' => {
                        keys.truncate(start);
                        open.pop();
                        i += 1;
                    }
                    _ => return None,
                },
                Some(Open::Array) => match *b.get(i)? {
                    b',' => {
                        i += 1;
                        break;
                    }
                    b']' => {
                        open.pop();
                        i += 1;
                    }
                    _ => return None,
                },
            }
        }
    }
}

/// A key at `i` of the object whose keys start at `start` in `keys`, and its colon: the index
/// of the value. `None` if it repeats one of the object's keys (compared as written: with only
/// serde_json's escapes, equal keys are written alike).
fn key<'a>(b: &'a [u8], i: usize, keys: &mut Vec<&'a [u8]>, start: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = string(b, i)?;
    let k = b.get(i..end)?;
    let same = &keys[start..];
    if same.len() >= MAX_KEYS || same.contains(&k) {
        return None;
    }
    keys.push(k);
    (b.get(end) == Some(&b':')).then_some(end + 1)
}

/// The string whose opening quote is at `i`: the index after its closing quote, if its escapes
/// are serde_json's.
fn string(b: &[u8], i: usize) -> Option<usize> {
    let end = string_end(b, i + 1)?;
    if !has_backslash(b.get(i + 1..end)?) {
        return Some(end + 1);
    }
    let mut at = i + 1;
    while let Some(k) = memchr(b'\\', b.get(at..end)?) {
        let escaped = at + k + 1;
        if !matches!(
            b.get(escaped)?,
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't'
        ) {
            return None;
        }
        at = escaped + 1;
    }
    Some(end + 1)
}

/// `None` when the containers open are more than serde_json reads (kept one below its limit).
fn deep(open: &[Open]) -> Option<()> {
    (open.len() < MAX_DEPTH).then_some(())
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

/// An integer at `i` that serde_json reads as one (`u64`, or `i64` below zero) and writes as
/// it is: the index after it.
fn integer(b: &[u8], i: usize) -> Option<usize> {
    let negative = b.get(i) == Some(&b'-');
    let digits = i + usize::from(negative);
    let mut end = digits;
    let mut n: u64 = 0;
    while let Some(&c) = b.get(end).filter(|c| c.is_ascii_digit()) {
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        end += 1;
    }
    let plain = end > digits
        && (b.get(digits) != Some(&b'0') || end == digits + 1)
        && !matches!(b.get(end), Some(b'.' | b'e' | b'E'));
    // Below zero, down to `i64::MIN`; `-0` is read as a float.
    let exact = !negative || (1..=1 << 63).contains(&n);
    (plain && exact).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::skip::tests::json_value;
    use proptest::prelude::*;
    use serde_json::Value;

    /// serde_json's own writing of what it reads from `text`, if it reads it.
    fn rewritten(text: &str) -> Option<String> {
        let v: Value = serde_json::from_str(text).ok()?;
        serde_json::to_string(&v).ok()
    }

    /// Whether serde_json writes `v` with a float or a `\u` escape (the check refuses both).
    fn has_float_or_u_escape(v: &Value) -> bool {
        match v {
            Value::Number(n) => n.is_f64(),
            Value::String(s) => s
                .chars()
                .any(|c| c < ' ' && !matches!(c, '\u{8}' | '\u{c}' | '\n' | '\r' | '\t')),
            Value::Array(items) => items.iter().any(has_float_or_u_escape),
            Value::Object(m) => m.iter().any(|(k, v)| {
                has_float_or_u_escape(&Value::String(k.clone())) || has_float_or_u_escape(v)
            }),
            _ => false,
        }
    }

    /// Variants of a compact text that serde_json may read alike but write otherwise.
    fn variants(text: &str) -> Vec<String> {
        let mut out = vec![
            text.to_owned(),
            text.replacen(':', ": ", 1),
            text.replacen(',', " ,", 1),
            text.replacen('/', "\\/", 1),
            text.replacen("\\n", "\\u000a", 1),
            format!(" {text}"),
            format!("{text} "),
        ];
        // A key given twice, in the first object.
        if let Some(at) = text.find("{\"") {
            if let Some(colon) = text[at..].find("\":").map(|c| at + c + 2) {
                let k = &text[at + 1..colon];
                out.push(format!("{}{k}0,{}", &text[..=at], &text[at + 1..]));
            }
        }
        out
    }

    proptest! {
        /// Whatever the check takes as compact, serde_json writes back byte for byte; and it
        /// takes serde_json's own writing of any value without floats or `\u` escapes.
        #[test]
        fn compact_is_what_serde_json_writes_back(v in json_value()) {
            let text = serde_json::to_string(&v).expect("serializes");
            prop_assert_eq!(is_compact(&text), !has_float_or_u_escape(&v), "{}", text);
            for t in variants(&text) {
                if is_compact(&t) {
                    prop_assert_eq!(rewritten(&t), Some(t));
                }
            }
        }
    }

    #[test]
    fn refuses_what_serde_json_writes_otherwise() {
        for t in [
            r#"{"a":1,"b":[true,false,null,"x\"\\\n\t\b\f\r"],"c":{},"d":[],"e":-5}"#,
            "18446744073709551615",
            "-9223372036854775808",
            "0",
            r#""é ☃""#,
        ] {
            assert!(is_compact(t), "{t}");
            assert_eq!(rewritten(t).as_deref(), Some(t));
        }
        for t in [
            r#"{"a": 1}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"o":{"a":1,"b":{"a":2},"a":3}}"#,
            r#"["a\/b"]"#,
            r#"["\u00e9"]"#,
            "1.5",
            "1e3",
            "-0",
            "01",
            "18446744073709551616",
            "-9223372036854775809",
            "[1,]",
            "{\"a\":1",
            "[1] ",
            "tru",
            "",
        ] {
            assert!(!is_compact(t), "{t}");
        }
        let nested = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(!is_compact(&nested), "deeper than serde_json reads");
        // Keys repeated in different objects are no repetition.
        assert!(is_compact(r#"{"a":{"a":1},"b":{"a":2}}"#));
        let many: Vec<String> = (0..MAX_KEYS + 1).map(|k| format!("\"k{k}\":{k}")).collect();
        assert!(
            !is_compact(&format!("{{{}}}", many.join(","))),
            "too many keys to check"
        );
    }
}
