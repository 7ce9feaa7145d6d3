//! The same readings as on a parsed update, made on its JSON text with the walker
//! ([`crate::wire::pointer`]): a frame read for a few small fields needs no tree. The values
//! the readings look at are found first, in one walk ([`Spans`], of the pointers the readings
//! name: [`Source::pointers`], [`Rule::pointers`]).
//!
//! Every reading answers `Some(..)` with what the parsed reading gives, or `None` when it
//! cannot tell from the text alone (a number to compare, a key that does not decode): the
//! caller then parses the update and reads it the usual way.

use std::borrow::Cow;

use serde_json::Value;

use super::{Block, Cond, Rule, Source, Test};
#[cfg(test)]
use crate::wire::pointer::PointerSet;
use crate::wire::pointer::{self, Spans};

impl Source {
    /// The pointers the source reads at.
    pub fn pointers<'p>(&'p self, out: &mut Vec<&'p str>) {
        out.push(&self.at);
        out.extend(self.when.iter().map(|c| c.at.as_str()));
    }

    /// [`Source::text`] read from the values found in the update's JSON text.
    pub fn text_raw<'j>(&self, json: &Spans<'_, 'j>) -> Option<Option<Cow<'j, str>>> {
        for c in &self.when {
            if !c.holds_raw(json)? {
                return Some(None);
            }
        }
        let Some(value) = json.get(&self.at)? else {
            return Some(None);
        };
        let Some(text) = value_text_raw(value, self.block)? else {
            return Some(None);
        };
        Some(match text {
            Cow::Borrowed(s) => self
                .refine(s)
                .map(|(part, cut)| cut.map_or(Cow::Borrowed(part), Cow::Owned)),
            Cow::Owned(s) => self
                .refine(&s)
                .map(|(part, cut)| Cow::Owned(cut.unwrap_or_else(|| part.to_owned()))),
        })
    }
}

/// The first non-empty text the sources give, read from the update's JSON text.
pub fn first_text_raw<'j>(
    sources: &[Source],
    json: &Spans<'_, 'j>,
) -> Option<Option<Cow<'j, str>>> {
    for s in sources {
        if let Some(t) = s.text_raw(json)? {
            return Some(Some(t));
        }
    }
    Some(None)
}

impl Rule {
    /// The pointers the rule reads at.
    pub fn pointers<'p>(&'p self, out: &mut Vec<&'p str>) {
        out.extend(self.when.iter().map(|c| c.at.as_str()));
    }

    /// [`Rule::holds`] read from the values found in the update's JSON text.
    pub fn holds_raw(&self, json: &Spans<'_, '_>) -> Option<bool> {
        for c in &self.when {
            if !c.holds_raw(json)? {
                return Some(false);
            }
        }
        Some(true)
    }
}

/// A scalar value's text, as far as a test can compare it without parsing a number.
enum Scalar<'j> {
    Str(Cow<'j, str>),
    Bool(bool),
    /// An object or an array: equal to no scalar.
    Container,
}

fn scalar(text: &str) -> Option<Scalar<'_>> {
    match text.as_bytes().first()? {
        b'"' => pointer::string(text).map(Scalar::Str),
        b't' => Some(Scalar::Bool(true)),
        b'f' => Some(Scalar::Bool(false)),
        b'{' | b'[' => Some(Scalar::Container),
        // A number: its value is serde_json's to read.
        _ => None,
    }
}

/// A value's string, `Some(None)` when it is no string.
fn as_str(v: &str) -> Option<Option<Cow<'_, str>>> {
    if v.starts_with('"') {
        pointer::string(v).map(Some)
    } else {
        Some(None)
    }
}

/// `same(e, v)` of the parsed reading, for a value given as text.
fn same_raw(e: &Value, v: &str) -> Option<bool> {
    if e.is_number() {
        return None;
    }
    Some(match (e, scalar(v)?) {
        (Value::String(e), Scalar::Str(v)) => *e == v,
        (Value::Bool(e), Scalar::Bool(v)) => *e == v,
        _ => false,
    })
}

impl Cond {
    /// [`Cond::holds`] read from the values found in the update's JSON text.
    pub fn holds_raw(&self, json: &Spans<'_, '_>) -> Option<bool> {
        let v = json.get(&self.at)?.filter(|v| *v != "null");
        Some(match (&self.test, v) {
            (Test::Exists(want), v) => v.is_some() == *want,
            (_, None) => false,
            (Test::Equals(e), Some(v)) => same_raw(e, v)?,
            (Test::OneOf(es), Some(v)) => {
                let mut any = false;
                for e in es {
                    any |= same_raw(e, v)?;
                }
                any
            }
            (Test::Prefix(p), Some(v)) => as_str(v)?.is_some_and(|s| s.starts_with(p.as_str())),
            (Test::Regex(r), Some(v)) => {
                let s = as_str(v)?;
                let re = r.regex();
                s.is_some_and(|s| re.is_some_and(|r| r.is_match(&s)))
            }
        })
    }
}

/// [`super::value_text`] of a value given as text.
fn value_text_raw(v: &str, block: Block) -> Option<Option<Cow<'_, str>>> {
    fn item(i: &str) -> Option<Option<Cow<'_, str>>> {
        if !i.starts_with('{') {
            return Some(None);
        }
        if let Some(t) = pointer::find(i, "/text")?.and_then(pointer::string) {
            return Some(Some(t));
        }
        Some(pointer::find(i, "/content/text")?.and_then(pointer::string))
    }
    let text = match v.as_bytes().first()? {
        b'"' => pointer::string(v)?,
        b'{' => match item(v)? {
            Some(t) => t,
            None => return Some(None),
        },
        b'[' => {
            let mut texts = Vec::new();
            for i in pointer::items(v)? {
                if let Some(t) = item(i)? {
                    texts.push(t);
                }
            }
            let mut texts = texts.into_iter();
            let picked = match block {
                Block::First => texts.next(),
                Block::Last => texts.next_back(),
                Block::All => texts.next().map(|first| match texts.next() {
                    None => first,
                    Some(second) => {
                        let mut joined = format!("{first}\n{second}");
                        for t in texts {
                            joined.push('\n');
                            joined.push_str(&t);
                        }
                        Cow::Owned(joined)
                    }
                }),
            };
            match picked {
                Some(t) => t,
                None => return Some(None),
            }
        }
        _ => return Some(None),
    };
    Some((!text.is_empty()).then_some(text))
}

#[cfg(test)]
mod tests {
    use super::super::first_text;
    use super::super::tests::source;
    use super::*;

    fn cond(toml_text: &str) -> Cond {
        super::super::tests::cond(toml_text).expect("cond compiles")
    }

    const UPDATES: &[&str] = &[
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"3 tool uses..."}}],"rawOutput":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b\nc"}],"details":{"description":"Survey \"x\"","activity":"\n  running bash…\nnext","status":"running","n":3,"on":true}}}"#,
        r#"{"rawOutput":{"details":{"activity":"","status":null,"n":3.0}},"content":"plain","title":"Agent"}"#,
        r#"{"rawOutput":{"details":{"activity":"a very long activity line that goes on and on well past the cut of eighty characters, to be cut"}},"content":{"text":7,"content":{"text":"inner"}}}"#,
        r#"{"rawOutput":[],"content":[{"text":""},{"content":{"text":"x"}}, 3]}"#,
    ];

    #[test]
    fn sources_read_the_text_as_they_read_the_tree() {
        let sources = [
            r#"s = { at = "/rawOutput/details/activity", first_line = true, max_chars = 12 }"#,
            r#"s = { at = "/rawOutput/details/activity", trim = true }"#,
            r#"s = "/rawOutput/details/description""#,
            r#"s = "/content""#,
            r#"s = { at = "/content", block = "first" }"#,
            r#"s = { at = "/content", block = "last" }"#,
            r#"s = { at = "/rawOutput/content", regex = '(?s)^(?P<text>\w)' }"#,
            r#"s = { at = "/title", when = [{ at = "/rawOutput/details/status", equals = "running" }] }"#,
            r#"s = { at = "/title", when = [{ at = "/rawOutput/details/status", exists = false }] }"#,
        ];
        for s in sources {
            let s = source(s);
            for u in UPDATES {
                let v: Value = serde_json::from_str(u).expect("json");
                let want = first_text(std::slice::from_ref(&s), &v);
                let mut ptrs = Vec::new();
                s.pointers(&mut ptrs);
                let set = PointerSet::new(ptrs);
                let spans = Spans::find(u, &set).expect("readable");
                let got = first_text_raw(std::slice::from_ref(&s), &spans).expect("readable");
                assert_eq!(got, want, "{s:?} on {u}");
            }
        }
    }

    #[test]
    fn conditions_hold_on_the_text_as_on_the_tree() {
        let conds = [
            r#"at = "/rawOutput/details/status"
equals = "running""#,
            r#"at = "/rawOutput/details/on"
equals = true"#,
            r#"at = "/rawOutput/details/status"
one_of = ["done", "running"]"#,
            r#"at = "/rawOutput/details/description"
prefix = "Survey""#,
            r#"at = "/rawOutput/details/activity"
regex = 'bash'"#,
            r#"at = "/rawOutput/details/status"
exists = true"#,
            r#"at = "/rawOutput"
equals = "x""#,
        ];
        for c in conds {
            let c = cond(c);
            for u in UPDATES {
                let v: Value = serde_json::from_str(u).expect("json");
                let set = PointerSet::new([c.at.as_str()]);
                let spans = Spans::find(u, &set).expect("readable");
                assert_eq!(c.holds_raw(&spans), Some(c.holds(&v)), "{c:?} on {u}");
            }
        }
        // A number is serde_json's to read: the text reading declines.
        let n = cond("at = \"/rawOutput/details/n\"\nequals = 3");
        let set = PointerSet::new([n.at.as_str()]);
        let spans = Spans::find(UPDATES[0], &set).expect("readable");
        assert_eq!(n.holds_raw(&spans), None);
    }
}
