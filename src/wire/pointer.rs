//! JSON pointers read straight off a value's text with the validating walker: the span of the
//! value a pointer names (one, or several in one walk), a string's value, an array's items.
//! Nothing is built but what is asked for.
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
    if ptr.is_empty() {
        let end = value_end(json.as_bytes(), start, 0)?;
        return Some(json.get(start..end));
    }
    // Only the values on the way are walked to their end.
    let mut at = json.get(start..)?;
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

/// The most pointers a [`PointerSet`] finds in one walk: a group of them is a bit mask.
const MAX_POINTERS: usize = 64;

/// Pointers split into their tokens once, to be found together ([`Spans::find`]).
#[derive(Debug, Clone, Default)]
pub struct PointerSet {
    ptrs: Vec<String>,
    /// Each pointer's tokens, unescaped; `None` for one that names nothing (no leading `/`).
    paths: Vec<Option<Vec<String>>>,
}

impl PointerSet {
    pub fn new<'p>(ptrs: impl IntoIterator<Item = &'p str>) -> PointerSet {
        let mut set = PointerSet::default();
        for p in ptrs {
            if set.ptrs.iter().any(|q| q == p) {
                continue;
            }
            set.ptrs.push(p.to_owned());
            set.paths.push(p.strip_prefix('/').map(|rest| {
                rest.split('/')
                    .map(|t| t.replace("~1", "/").replace("~0", "~"))
                    .collect()
            }));
        }
        set
    }
}

/// The values the pointers of a [`PointerSet`] name in a JSON text, found in one walk that
/// skips every member no pointer goes through; with the keys of the text's object, in order.
/// A pointer's value is that of the last of repeated keys, as in a parsed `Value`.
#[derive(Debug)]
pub struct Spans<'s, 'a> {
    set: &'s PointerSet,
    found: Vec<Option<&'a str>>,
    keys: Vec<&'a str>,
}

impl<'s, 'a> Spans<'s, 'a> {
    /// Walk `json` once for the pointers of `set`; `None` when it cannot be read so (a key
    /// whose escapes do not decode, invalid JSON, more than 64 pointers).
    pub fn find(json: &'a str, set: &'s PointerSet) -> Option<Spans<'s, 'a>> {
        if set.ptrs.len() > MAX_POINTERS {
            return None;
        }
        let mut found = vec![None; set.ptrs.len()];
        // Room for the keys of most updates without growing.
        let mut keys = Vec::with_capacity(16);
        let start = skip_ws(json.as_bytes(), 0);
        let mut group: Group = 0;
        for (i, p) in set.ptrs.iter().enumerate() {
            if p.is_empty() {
                let end = value_end(json.as_bytes(), start, 0)?;
                found[i] = json.get(start..end);
            }
            if set.paths[i].is_some() {
                group |= 1 << i;
            }
        }
        let mut walk = Walk {
            text: json,
            paths: &set.paths,
            found: &mut found,
        };
        if json.as_bytes().get(start) == Some(&b'{') {
            // The object's own keys are seen on the way.
            members(json, start, |key, at| {
                keys.push(key.raw());
                walk.member(key, at, 1, group, 0)
            })?;
        } else if group != 0 {
            walk.value(start, 0, group, 0)?;
        }
        Some(Spans { set, found, keys })
    }

    /// The value `ptr` names, if it is one of the set's (`None` if not).
    pub fn get(&self, ptr: &str) -> Option<Option<&'a str>> {
        let i = self.set.ptrs.iter().position(|p| p == ptr)?;
        Some(self.found[i])
    }

    /// The keys of the text's object as written (quotes included), in order; empty for any
    /// other value.
    pub fn keys(&self) -> &[&'a str] {
        &self.keys
    }
}

/// Pointers of a set (bit `p` for its pointer `p`): those a walk still follows.
type Group = u64;

/// The pointers of a group, in order.
fn each(mut group: Group) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let p = group.trailing_zeros() as usize;
        group &= group.checked_sub(1)?;
        Some(p)
    })
}

/// One walk of [`Spans::find`].
struct Walk<'w, 'a> {
    text: &'a str,
    paths: &'w [Option<Vec<String>>],
    found: &'w mut [Option<&'a str>],
}

impl<'a> Walk<'_, 'a> {
    fn token(&self, p: usize, level: usize) -> Option<&str> {
        self.paths[p].as_ref()?.get(level).map(String::as_str)
    }

    fn len(&self, p: usize) -> usize {
        self.paths[p].as_ref().map_or(0, Vec::len)
    }

    /// The pointers of `group` whose token at `level` passes `test`.
    fn through(&self, group: Group, level: usize, test: impl Fn(&str) -> bool) -> Group {
        each(group)
            .filter(|&p| self.token(p, level).is_some_and(&test))
            .fold(0, |g, p| g | 1 << p)
    }

    /// The value at `i` (inside `depth` containers), walked for the pointers of `group`, each
    /// with tokens left from `level`; the index after it.
    fn value(&mut self, i: usize, depth: usize, group: Group, level: usize) -> Option<usize> {
        let (text, b) = (self.text, self.text.as_bytes());
        match b.get(i)? {
            b'{' => members(text, i, |key, at| {
                self.member(key, at, depth + 1, group, level)
            }),
            b'[' => {
                let mut j = skip_ws(b, i + 1);
                if b.get(j) == Some(&b']') {
                    return Some(j + 1);
                }
                let mut n = 0usize;
                loop {
                    let sub = self.through(group, level, |t| index(t) == Some(n));
                    let end = if sub != 0 {
                        self.enter(sub, j, depth + 1, level)?
                    } else {
                        value_end(b, j, depth + 1)?
                    };
                    j = skip_ws(b, end);
                    match b.get(j)? {
                        b',' => j = skip_ws(b, j + 1),
                        b']' => return Some(j + 1),
                        _ => return None,
                    }
                    n += 1;
                }
            }
            _ => value_end(b, i, depth),
        }
    }

    /// A member's value at `at`: entered if a pointer goes through its key, else skipped.
    fn member(
        &mut self,
        key: super::update_view::Key<'a>,
        at: usize,
        depth: usize,
        group: Group,
        level: usize,
    ) -> Option<usize> {
        if group == 0 {
            return value_end(self.text.as_bytes(), at, depth);
        }
        let name = key.decoded()?;
        let sub = self.through(group, level, |t| t == name);
        if sub == 0 {
            return value_end(self.text.as_bytes(), at, depth);
        }
        self.enter(sub, at, depth, level)
    }

    /// The value at `at` that the pointers of `sub` go through at `level`.
    fn enter(&mut self, sub: Group, at: usize, depth: usize, level: usize) -> Option<usize> {
        // Of repeated keys the last counts: what an earlier one gave is forgotten.
        for p in each(sub) {
            self.found[p] = None;
        }
        let deeper = each(sub)
            .filter(|&p| self.len(p) > level + 1)
            .fold(0, |g, p| g | 1 << p);
        let end = if deeper == 0 {
            value_end(self.text.as_bytes(), at, depth)?
        } else {
            self.value(at, depth, deeper, level + 1)?
        };
        for p in each(sub) {
            if self.len(p) == level + 1 {
                self.found[p] = self.text.get(at..end);
            }
        }
        Some(end)
    }
}

/// An array index as `Value::pointer` reads one: no sign, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::skip::tests::json_value;
    use proptest::prelude::*;
    use serde_json::Value;

    /// Every pointer to a value inside `v`, below `at`.
    fn paths(v: &Value, at: &str, out: &mut Vec<String>) {
        let mut below = |token: &str, child: &Value| {
            let p = format!("{at}/{}", token.replace('~', "~0").replace('/', "~1"));
            out.push(p.clone());
            paths(child, &p, out);
        };
        match v {
            Value::Object(m) => m.iter().for_each(|(k, c)| below(k, c)),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .for_each(|(i, c)| below(&i.to_string(), c)),
            _ => {}
        }
    }

    proptest! {
        /// On any document, written compact or with whitespace, each pointer (one of its
        /// values, or one that names nothing) gives the text of what `Value::pointer` finds.
        #[test]
        fn spans_find_what_value_pointer_finds(
            v in json_value(),
            pretty in any::<bool>(),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&v)
            } else {
                serde_json::to_string(&v)
            }
            .expect("serializes");
            // Numbers as this parser reads them, on both sides.
            let doc: Value = serde_json::from_str(&text).expect("parses");
            let mut all = vec![String::new()];
            paths(&doc, "", &mut all);
            let mut ptrs: Vec<String> = picks.iter().map(|i| i.get(&all).clone()).collect();
            ptrs.extend(["/nope".to_owned(), "/0/x".to_owned(), "x".to_owned()]);
            let set = PointerSet::new(ptrs.iter().map(String::as_str));
            let spans = Spans::find(&text, &set).expect("readable");
            for p in &ptrs {
                let want = doc.pointer(p).cloned();
                let read = |t: Option<&str>| {
                    t.map(|t| serde_json::from_str::<Value>(t).expect("a value"))
                };
                let one_walk = read(spans.get(p).expect("looked for"));
                let alone = read(find(&text, p).expect("readable"));
                prop_assert_eq!(&one_walk, &want, "{}", p);
                prop_assert_eq!(&alone, &want, "{}", p);
            }
        }
    }

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
    fn one_walk_finds_what_each_pointer_finds() {
        let ptrs = [
            "",
            "/a",
            "/a/b",
            "/a/b/1",
            "/a/b/1/c",
            "/a/b/0",
            "/a/b/01",
            "/a/x",
            "/s",
            "/n",
            "/s/0",
            "/a/b/0/c",
            "/a/d~1~0e",
            "x",
            "/a/b/1/c",
        ];
        let set = PointerSet::new(ptrs);
        let spans = Spans::find(DOC, &set).expect("readable");
        for ptr in ptrs {
            assert_eq!(spans.get(ptr), find(DOC, ptr), "{ptr}");
        }
        assert_eq!(spans.get("/other"), None, "not looked for");
        assert_eq!(spans.keys(), ["\"a\"", "\"a\"", "\"s\"", "\"n\""]);
        let none = PointerSet::new([]);
        let spans = Spans::find(DOC, &none).expect("readable");
        assert_eq!(spans.keys().len(), 4, "the keys without any pointer");
        assert!(
            Spans::find("{\"a\":[1,}", &PointerSet::new(["/a/0"])).is_none(),
            "invalid JSON"
        );
        let many: Vec<String> = (0..=MAX_POINTERS).map(|k| format!("/a/{k}")).collect();
        let set = PointerSet::new(many.iter().map(String::as_str));
        assert!(
            Spans::find(DOC, &set).is_none(),
            "more pointers than a walk follows"
        );
    }

    #[test]
    fn strings_decode_and_items_keep_their_order() {
        let s = find(DOC, "/s").expect("readable").expect("found");
        assert_eq!(string(s).as_deref(), Some("pé"));
        assert_eq!(string("12"), None);
        assert_eq!(items("[1, [2,3] ,{}]"), Some(vec!["1", "[2,3]", "{}"]));
        assert_eq!(items("{}"), None);
    }
}
