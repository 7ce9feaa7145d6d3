//! The words presets are made of, compiled: conditions on an update, texts read out of it,
//! and the byte markers that let frames which cannot match pass unparsed.
//!
//! Pointers are JSON pointers into the object a preset looks at: a `session/update`'s
//! `update`, or a permission request's `toolCall` (`/title`, `/_meta/claudeCode/toolName`,
//! `/rawInput/prompt`, `/rawOutput/details/activity`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use regex::Regex;
use serde_json::value::RawValue;
use serde_json::Value;

use super::spec::{Block, CondSpec, Markers, RuleSpec, SourceSpec};

mod raw;
pub use raw::first_text_raw;

/// A problem in a preset, with the key that holds it (`subagents.preset[0].spawn[1].when[0]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct PresetError {
    pub key: String,
    pub problem: String,
}

impl PresetError {
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> PresetError {
        PresetError {
            key: key.into(),
            problem: problem.into(),
        }
    }
}

/// Markers shorter than this would make nearly every frame take the slow path.
pub const MIN_MARKER_BYTES: usize = 3;

/// Compiled regexes are bounded so that a user's pattern cannot take much memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A regex from a preset, checked when the preset is read and compiled when first used: a
/// compiled regex can take hundreds of KiB, and a connection uses only its own presets.
#[derive(Debug, Clone)]
pub struct Pattern(Arc<PatternData>);

#[derive(Debug)]
struct PatternData {
    text: String,
    /// Where it was written, for the message if it cannot be compiled.
    key: String,
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// Check the pattern's syntax (cheap: nothing is compiled yet).
    pub fn parse(text: &str, key: &str) -> Result<Pattern, PresetError> {
        regex_syntax::Parser::new().parse(text).map_err(|e| {
            let first = e.to_string();
            let msg = first.lines().last().unwrap_or("invalid").trim().to_owned();
            PresetError::new(key, format!("invalid regex `{text}`: {msg}"))
        })?;
        Ok(Pattern(Arc::new(PatternData {
            text: text.to_owned(),
            key: key.to_owned(),
            compiled: OnceLock::new(),
        })))
    }

    pub fn text(&self) -> &str {
        &self.0.text
    }

    fn build(&self) -> Result<Regex, PresetError> {
        regex::RegexBuilder::new(&self.0.text)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| {
                let first = e.to_string();
                let msg = first.lines().last().unwrap_or("invalid").trim().to_owned();
                PresetError::new(
                    self.0.key.clone(),
                    format!("invalid regex `{}`: {msg}", self.0.text),
                )
            })
    }

    /// Compile now (as `check-config` and the config reader do for the user's patterns).
    pub fn compile_now(&self) -> Result<(), PresetError> {
        match self.0.compiled.get() {
            Some(Some(_)) => Ok(()),
            Some(None) => self.build().map(drop),
            None => {
                let re = self.build()?;
                let _ = self.0.compiled.set(Some(re));
                Ok(())
            }
        }
    }

    /// The compiled regex. One that cannot be compiled (too big) matches nothing, and says
    /// so once.
    pub fn regex(&self) -> Option<&Regex> {
        self.0
            .compiled
            .get_or_init(|| match self.build() {
                Ok(re) => Some(re),
                Err(e) => {
                    tracing::warn!("subagent preset: {e}: the pattern matches nothing");
                    None
                }
            })
            .as_ref()
    }
}

/// Check that `ptr` is a JSON pointer (`""` or starting with `/`).
pub fn check_pointer(ptr: &str, key: &str) -> Result<(), PresetError> {
    if ptr.is_empty() || ptr.starts_with('/') {
        Ok(())
    } else {
        Err(PresetError::new(
            key,
            format!("`{ptr}` is not a JSON pointer (write `/{ptr}`: pointers start with `/`)"),
        ))
    }
}

/// The keys along a pointer, unescaped (`~1` is `/`, `~0` is `~`).
pub fn pointer_keys(ptr: &str) -> impl Iterator<Item = String> + '_ {
    ptr.split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
}

fn is_key(k: &str) -> bool {
    !k.is_empty() && !k.bytes().all(|b| b.is_ascii_digit())
}

/// The last key of a pointer that is an object key, not an array index.
pub fn last_key(ptr: &str) -> Option<String> {
    pointer_keys(ptr).filter(|k| is_key(k)).last()
}

/// The pointer's final key, if it is an object key (not an array index).
pub fn final_key(ptr: &str) -> Option<String> {
    pointer_keys(ptr).last().filter(|k| is_key(k))
}

/// A key or value as it appears in JSON text, quoted; `None` for one an encoder may write
/// with escapes (non-ASCII, quotes, backslashes, `/`, and the `<>&` some encoders escape), so
/// that a marker is always found in a frame that matches.
pub fn quoted(s: &str) -> Option<String> {
    let plain = s
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && !b"\"\\/<>&".contains(&b));
    plain.then(|| format!("\"{s}\""))
}

/// What a condition tests.
#[derive(Debug, Clone)]
pub enum Test {
    Equals(Value),
    OneOf(Vec<Value>),
    Prefix(String),
    Regex(Pattern),
    /// The pointer designates a value other than `null` (`true`), or none (`false`).
    Exists(bool),
}

/// A test on the value at a pointer.
#[derive(Debug, Clone)]
pub struct Cond {
    pub at: String,
    pub test: Test,
}

/// How strongly a condition's markers pin a frame down: values beat keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum MarkerClass {
    Key,
    Value,
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

impl Cond {
    pub fn compile(spec: &CondSpec, key: &str) -> Result<Cond, PresetError> {
        check_pointer(&spec.at, &format!("{key}.at"))?;
        let given = [
            spec.equals.is_some(),
            spec.one_of.is_some(),
            spec.prefix.is_some(),
            spec.regex.is_some(),
            spec.exists.is_some(),
        ]
        .iter()
        .filter(|g| **g)
        .count();
        if given != 1 {
            return Err(PresetError::new(
                key,
                format!(
                    "give exactly one of `equals`, `one_of`, `prefix`, `regex`, `exists` (found {given})"
                ),
            ));
        }
        let test = if let Some(v) = &spec.equals {
            Test::Equals(scalar(v, &format!("{key}.equals"))?)
        } else if let Some(vs) = &spec.one_of {
            if vs.is_empty() {
                return Err(PresetError::new(format!("{key}.one_of"), "is empty"));
            }
            let vs = vs
                .iter()
                .enumerate()
                .map(|(i, v)| scalar(v, &format!("{key}.one_of[{i}]")))
                .collect::<Result<_, _>>()?;
            Test::OneOf(vs)
        } else if let Some(p) = &spec.prefix {
            if p.is_empty() {
                return Err(PresetError::new(
                    format!("{key}.prefix"),
                    "is empty (use `exists = true`)",
                ));
            }
            Test::Prefix(p.clone())
        } else if let Some(r) = &spec.regex {
            Test::Regex(Pattern::parse(r, &format!("{key}.regex"))?)
        } else {
            Test::Exists(spec.exists.unwrap_or(true))
        };
        Ok(Cond {
            at: spec.at.clone(),
            test,
        })
    }

    pub fn holds(&self, update: &Value) -> bool {
        let v = pointer(update, &self.at).filter(|v| !v.is_null());
        match (&self.test, v) {
            (Test::Exists(want), v) => v.is_some() == *want,
            (_, None) => false,
            (Test::Equals(e), Some(v)) => same(e, v),
            (Test::OneOf(es), Some(v)) => es.iter().any(|e| same(e, v)),
            (Test::Prefix(p), Some(v)) => v.as_str().is_some_and(|s| s.starts_with(p.as_str())),
            (Test::Regex(r), Some(v)) => v
                .as_str()
                .is_some_and(|s| r.regex().is_some_and(|r| r.is_match(s))),
        }
    }

    pub fn patterns<'a>(&'a self, out: &mut Vec<&'a Pattern>) {
        if let Test::Regex(p) = &self.test {
            out.push(p);
        }
    }

    /// The string the condition matched, when it tests a string.
    pub fn matched_str<'v>(&self, update: &'v Value) -> Option<&'v str> {
        match self.test {
            Test::Exists(_) => None,
            _ => pointer(update, &self.at).and_then(Value::as_str),
        }
    }

    /// Whether a match always tests a string (so its value can name a tool).
    pub fn tests_a_string(&self) -> bool {
        match &self.test {
            Test::Equals(v) => v.is_string(),
            Test::OneOf(vs) => vs.iter().all(Value::is_string),
            Test::Prefix(_) | Test::Regex(_) => true,
            Test::Exists(_) => false,
        }
    }

    /// Strings one of which every matching frame contains, and how telling they are; `None`
    /// when the condition gives none (a regex, an absence).
    fn markers(&self) -> Option<(MarkerClass, Vec<String>)> {
        let key = || {
            last_key(&self.at)
                .and_then(|k| quoted(&k))
                .map(|k| (MarkerClass::Key, vec![k]))
        };
        let value = |v: &Value| match v {
            Value::String(s) => quoted(s),
            _ => None,
        };
        match &self.test {
            Test::Equals(v) => value(v).map(|m| (MarkerClass::Value, vec![m])).or_else(key),
            Test::OneOf(vs) => {
                let ms: Option<Vec<String>> = vs.iter().map(value).collect();
                ms.map(|ms| (MarkerClass::Value, ms)).or_else(key)
            }
            Test::Prefix(p) => quoted(p)
                .map(|q| (MarkerClass::Value, vec![q[..q.len() - 1].to_owned()]))
                .or_else(key),
            Test::Exists(true) => key(),
            Test::Exists(false) | Test::Regex(_) => None,
        }
    }
}

fn scalar(v: &toml::Value, key: &str) -> Result<Value, PresetError> {
    match v {
        toml::Value::String(s) => Ok(Value::from(s.as_str())),
        toml::Value::Integer(i) => Ok(Value::from(*i)),
        toml::Value::Float(f) => Ok(Value::from(*f)),
        toml::Value::Boolean(b) => Ok(Value::from(*b)),
        other => Err(PresetError::new(
            key,
            format!(
                "must be a string, number or boolean, not {}",
                other.type_str()
            ),
        )),
    }
}

/// Conditions that all hold, and the markers one of which every matching frame contains.
#[derive(Debug, Clone)]
pub struct Rule {
    pub when: Vec<Cond>,
    pub markers: Vec<String>,
}

impl Rule {
    /// `needs_marker`: the rule is tested on frames the engine would otherwise pass unparsed,
    /// so it must yield a marker (its own, or one derived from its conditions).
    pub fn compile(
        when: &[CondSpec],
        marker: Option<&Markers>,
        key: &str,
        needs_marker: bool,
    ) -> Result<Rule, PresetError> {
        if when.is_empty() {
            return Err(PresetError::new(
                format!("{key}.when"),
                "is empty: a rule needs at least one condition",
            ));
        }
        let when: Vec<Cond> = when
            .iter()
            .enumerate()
            .map(|(i, c)| Cond::compile(c, &format!("{key}.when[{i}]")))
            .collect::<Result<_, _>>()?;
        let markers = match marker.map(Markers::as_slice) {
            Some([]) => {
                return Err(PresetError::new(format!("{key}.marker"), "is empty"));
            }
            Some(ms) => {
                if let Some(m) = ms.iter().find(|m| m.len() < MIN_MARKER_BYTES) {
                    return Err(PresetError::new(
                        format!("{key}.marker"),
                        format!(
                            "`{m}` is too short: a marker needs at least {MIN_MARKER_BYTES} bytes"
                        ),
                    ));
                }
                ms.to_vec()
            }
            // The first condition with value markers, else the first with key markers:
            // authors put the most telling condition first.
            None => {
                let mut best: Option<(MarkerClass, Vec<String>)> = None;
                for m in when.iter().filter_map(Cond::markers) {
                    if best.as_ref().is_none_or(|b| m.0 > b.0) {
                        best = Some(m);
                    }
                }
                match best {
                    Some((_, ms)) => ms,
                    None if needs_marker => {
                        return Err(PresetError::new(
                            format!("{key}.when"),
                            "no condition gives a literal string to look for in raw frames (only regexes or absences): add `marker = \"...\"`, a string that every matching frame contains",
                        ))
                    }
                    None => Vec::new(),
                }
            }
        };
        Ok(Rule { when, markers })
    }

    pub fn compile_spec(
        spec: &RuleSpec,
        key: &str,
        needs_marker: bool,
    ) -> Result<Rule, PresetError> {
        Rule::compile(&spec.when, spec.marker.as_ref(), key, needs_marker)
    }

    pub fn holds(&self, update: &Value) -> bool {
        self.when.iter().all(|c| c.holds(update))
    }

    /// Whether a condition reads the value at pointer `at`, or one inside or around it.
    pub fn reads_at(&self, at: &str) -> bool {
        self.when.iter().any(|c| pointers_overlap(&c.at, at))
    }

    pub fn patterns<'a>(&'a self, out: &mut Vec<&'a Pattern>) {
        self.when.iter().for_each(|c| c.patterns(out));
    }
}

/// A text read from an update (see [`SourceSpec`]).
#[derive(Debug, Clone)]
pub struct Source {
    pub at: String,
    regex: Option<Pattern>,
    first_line: bool,
    max_chars: Option<usize>,
    block: Block,
    trim: bool,
    when: Vec<Cond>,
}

impl Source {
    pub fn compile(spec: &SourceSpec, key: &str) -> Result<Source, PresetError> {
        check_pointer(&spec.at, &format!("{key}.at"))?;
        let regex = spec
            .regex
            .as_deref()
            .map(|r| Pattern::parse(r, &format!("{key}.regex")))
            .transpose()?;
        if spec.max_chars.is_some_and(|n| n < 2) {
            return Err(PresetError::new(
                format!("{key}.max_chars"),
                "must be at least 2 (one character and `…`)",
            ));
        }
        let when = spec
            .when
            .iter()
            .enumerate()
            .map(|(i, c)| Cond::compile(c, &format!("{key}.when[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Source {
            at: spec.at.clone(),
            regex,
            first_line: spec.first_line,
            max_chars: spec.max_chars,
            block: spec.block,
            trim: spec.trim,
            when,
        })
    }

    pub fn compile_all(specs: &[SourceSpec], key: &str) -> Result<Vec<Source>, PresetError> {
        specs
            .iter()
            .enumerate()
            .map(|(i, s)| Source::compile(s, &format!("{key}[{i}]")))
            .collect()
    }

    pub fn patterns<'a>(&'a self, out: &mut Vec<&'a Pattern>) {
        out.extend(&self.regex);
        self.when.iter().for_each(|c| c.patterns(out));
    }

    /// Whether the text is the value itself, unrefined.
    pub fn is_plain(&self) -> bool {
        self.regex.is_none() && !self.first_line && self.max_chars.is_none() && !self.trim
    }

    /// The text this source reads from `update`; borrowed from it unless it had to be joined
    /// or shortened. `None` when the value is missing, holds no text, the regex does not
    /// match, or nothing is left.
    pub fn text<'v>(&self, update: &'v Value) -> Option<Cow<'v, str>> {
        if !self.when.iter().all(|c| c.holds(update)) {
            return None;
        }
        match value_text(pointer(update, &self.at)?, self.block)? {
            Cow::Borrowed(s) => {
                let (part, shortened) = self.refine(s)?;
                Some(shortened.map_or(Cow::Borrowed(part), Cow::Owned))
            }
            Cow::Owned(s) => {
                let (part, shortened) = self.refine(&s)?;
                Some(Cow::Owned(shortened.unwrap_or_else(|| part.to_owned())))
            }
        }
    }

    /// Whether it reads the value at pointer `at`, or one inside or around it.
    pub fn reads_at(&self, at: &str) -> bool {
        pointers_overlap(&self.at, at) || self.when.iter().any(|c| pointers_overlap(&c.at, at))
    }

    /// Where this source's text is in an update's JSON text: the contents of one string,
    /// between its quotes. Only for a source that reads one whole string as it is (no
    /// condition, pattern, cut or trim, and not two blocks joined); `None` otherwise, or when
    /// it reads none here. The caller checks the span's text against what [`Source::text`]
    /// read.
    pub fn span_in(&self, json: &str) -> Option<Range<usize>> {
        let whole = self.regex.is_none()
            && !self.first_line
            && self.max_chars.is_none()
            && !self.trim
            && self.when.is_empty();
        if !whole {
            return None;
        }
        let mut at: &RawValue = serde_json::from_str(json).ok()?;
        for token in self.at.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            at = raw_child(at, &token)?;
        }
        let text = match at.get().as_bytes().first()? {
            b'"' => at,
            b'{' => raw_block_text(at)?,
            b'[' => {
                let items: Vec<&RawValue> = serde_json::from_str(at.get()).ok()?;
                let mut texts = items.into_iter().filter_map(raw_block_text);
                match self.block {
                    Block::First => texts.next()?,
                    Block::Last => texts.next_back()?,
                    // Joined from several blocks, it is no one string.
                    Block::All => {
                        let one = texts.next()?;
                        texts.next().is_none().then_some(one)?
                    }
                }
            }
            _ => return None,
        };
        let start = (text.get().as_ptr() as usize).checked_sub(json.as_ptr() as usize)? + 1;
        let end = start + text.get().len().checked_sub(2)?;
        (json.as_bytes().get(start - 1) == Some(&b'"')).then_some(start..end)
    }

    /// The refined part of `s`, and the shortened text when it had to be cut.
    fn refine<'s>(&self, s: &'s str) -> Option<(&'s str, Option<String>)> {
        let mut t = s;
        if let Some(re) = &self.regex {
            let caps = re.regex()?.captures(t)?;
            let m = caps
                .name("text")
                .or_else(|| caps.get(1))
                .or_else(|| caps.get(0))?;
            t = m.as_str();
        }
        if self.first_line {
            t = t.lines().map(str::trim).find(|l| !l.is_empty())?;
        }
        if self.trim {
            t = t.trim();
        }
        if t.is_empty() {
            return None;
        }
        // Longer than `n` characters: keep n - 1 and mark the cut.
        let cut = self
            .max_chars
            .filter(|n| t.chars().nth(*n).is_some())
            .map(|n| {
                let end = t.char_indices().nth(n - 1).map_or(t.len(), |(i, _)| i);
                format!("{}…", t[..end].trim_end())
            });
        Some((t, cut))
    }
}

/// The member `token` of an object, or item of an array, as its JSON text. Of a key given
/// twice the last counts, as in a parsed [`Value`].
fn raw_child<'j>(v: &'j RawValue, token: &str) -> Option<&'j RawValue> {
    match v.get().as_bytes().first()? {
        b'{' => {
            let mut members: BTreeMap<Cow<'j, str>, &'j RawValue> =
                serde_json::from_str(v.get()).ok()?;
            members.remove(token)
        }
        b'[' => {
            // As `Value::pointer` reads an index: no sign, no leading zero.
            if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
                return None;
            }
            let i: usize = token.parse().ok()?;
            let items: Vec<&'j RawValue> = serde_json::from_str(v.get()).ok()?;
            items.get(i).copied()
        }
        _ => None,
    }
}

/// The string a content block's text is (`{text}` or a tool call's `{content: {text}}`), as
/// [`value_text`] reads it.
fn raw_block_text(v: &RawValue) -> Option<&RawValue> {
    let is_string = |v: &&RawValue| v.get().starts_with('"');
    raw_child(v, "text").filter(is_string).or_else(|| {
        let content = raw_child(v, "content")?;
        raw_child(content, "text").filter(is_string)
    })
}

/// [`Value::pointer`] without an allocation per token (the presets' pointers are read on
/// every frame that may concern a subagent).
pub fn pointer<'v>(v: &'v Value, at: &str) -> Option<&'v Value> {
    if at.is_empty() {
        return Some(v);
    }
    let rest = at.strip_prefix('/')?;
    rest.split('/').try_fold(v, |target, token| {
        let token = if token.contains('~') {
            Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
        } else {
            Cow::Borrowed(token)
        };
        match target {
            Value::Object(map) => map.get(token.as_ref()),
            Value::Array(list) => {
                // As `Value::pointer` reads an index: no sign, no leading zero.
                if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                    return None;
                }
                list.get(token.parse::<usize>().ok()?)
            }
            _ => None,
        }
    })
}

/// Whether two JSON pointers name the same value, or one a value inside the other's.
pub fn pointers_overlap(a: &str, b: &str) -> bool {
    let inside = |x: &str, outer: &str| {
        x.strip_prefix(outer)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    inside(a, b) || inside(b, a)
}

/// The first non-empty text the sources give.
pub fn first_text<'v>(sources: &[Source], update: &'v Value) -> Option<Cow<'v, str>> {
    sources.iter().find_map(|s| s.text(update))
}

/// Text of a value: a string; a content block (`{text}` or a tool call's `{content: {text}}`);
/// or an array of blocks, as `block` says.
pub fn value_text(v: &Value, block: Block) -> Option<Cow<'_, str>> {
    fn item(i: &Value) -> Option<&str> {
        i.get("text")
            .and_then(Value::as_str)
            .or_else(|| i.get("content")?.get("text")?.as_str())
    }
    let text = match v {
        Value::String(s) => Cow::Borrowed(s.as_str()),
        Value::Object(_) => Cow::Borrowed(item(v)?),
        Value::Array(items) => {
            let mut texts = items.iter().filter_map(item);
            match block {
                Block::First => Cow::Borrowed(texts.next()?),
                Block::Last => Cow::Borrowed(texts.next_back()?),
                Block::All => {
                    let first = texts.next()?;
                    match texts.next() {
                        None => Cow::Borrowed(first),
                        Some(second) => {
                            let mut joined = format!("{first}\n{second}");
                            for t in texts {
                                joined.push('\n');
                                joined.push_str(t);
                            }
                            Cow::Owned(joined)
                        }
                    }
                }
            }
        }
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(super) fn cond(toml_text: &str) -> Result<Cond, PresetError> {
        let spec: CondSpec = toml::from_str(toml_text).expect("cond spec parses");
        Cond::compile(&spec, "c")
    }

    pub(super) fn source(toml_text: &str) -> Source {
        #[derive(serde::Deserialize)]
        struct W {
            s: SourceSpec,
        }
        let w: W = toml::from_str(toml_text).expect("source spec parses");
        Source::compile(&w.s, "s").expect("source compiles")
    }

    #[test]
    fn pointers_read_as_serde_json_reads_them() {
        let u = json!({"a": {"b/c": [1, {"~d": 2}]}, "": {"": 3}, "e": [4]});
        for at in [
            "",
            "/a",
            "/a/b~1c",
            "/a/b~1c/1/~0d",
            "/a/b~1c/01",
            "/a/b~1c/+1",
            "/a/b~1c/2",
            "/",
            "//",
            "/e/0",
            "/e/-",
            "/x/y",
            "a",
        ] {
            assert_eq!(pointer(&u, at), u.pointer(at), "{at}");
        }
        assert!(pointers_overlap("/content", "/content/0/text"));
        assert!(pointers_overlap("", "/x"));
        assert!(!pointers_overlap("/content", "/contents"));
        assert!(!pointers_overlap("/toolCallId", "/content"));
    }

    #[test]
    fn a_source_finds_the_string_it_reads_in_the_bytes() {
        let span = |toml_text: &str, json: &str| {
            let s = source(toml_text);
            let v: Value = serde_json::from_str(json).expect("json");
            let span = s.span_in(json)?;
            let read = s.text(&v)?;
            assert_eq!(
                serde_json::from_str::<String>(&json[span.start - 1..span.end + 1]).ok(),
                Some(read.into_owned())
            );
            Some(json[span].to_owned())
        };
        let block =
            r#"{"x":"no","content":[{"type":"content","content":{"type":"text","text":"a\"b"}}]}"#;
        assert_eq!(span("s = \"/content\"", block).as_deref(), Some(r#"a\"b"#));
        let two = r#"{"content":[{"text":"a"},{"text":"b"}]}"#;
        // Two blocks joined are no one string; the first or the last is.
        assert_eq!(span("s = \"/content\"", two), None);
        assert_eq!(
            span("s = { at = \"/content\", block = \"last\" }", two).as_deref(),
            Some("b")
        );
        // A key given twice: the last counts, as in a parsed value.
        let twice = r#"{"t":"old","t":"new"}"#;
        assert_eq!(span("s = \"/t\"", twice).as_deref(), Some("new"));
        // A cut or a pattern reads part of a string: no span.
        assert_eq!(span("s = { at = \"/t\", max_chars = 2 }", twice), None);
        assert_eq!(span("s = \"/t/x\"", twice), None);
    }

    #[test]
    fn conditions_on_the_update_its_meta_and_raw_fields() {
        let u = json!({"title":"Delegating to agent 'x'","toolCallId":"invoke_agent__1",
            "_meta":{"toolName":"agent","subagentProgress":true},
            "rawInput":{"prompt":"p","n":null},"rawOutput":{"executionMode":"background","n":2}});
        let holds = |t: &str| cond(t).expect("compiles").holds(&u);
        assert!(holds("at = \"/_meta/toolName\"\nequals = \"agent\""));
        assert!(!holds("at = \"/_meta/toolName\"\nequals = \"Agent\""));
        assert!(holds("at = \"/_meta/subagentProgress\"\nequals = true"));
        assert!(holds("at = \"/rawOutput/n\"\nequals = 2"));
        assert!(holds("at = \"/rawOutput/n\"\nequals = 2.0"));
        assert!(holds(
            "at = \"/_meta/toolName\"\none_of = [\"task\", \"agent\"]"
        ));
        assert!(!holds("at = \"/_meta/toolName\"\none_of = [\"task\"]"));
        assert!(holds("at = \"/toolCallId\"\nprefix = \"invoke_agent__\""));
        assert!(!holds("at = \"/title\"\nprefix = \"invoke_agent__\""));
        assert!(holds(
            "at = \"/title\"\nregex = \"^Delegating to agent '[^']+'$\""
        ));
        assert!(
            !holds("at = \"/rawOutput/n\"\nregex = \"2\""),
            "regex tests strings only"
        );
        assert!(holds("at = \"/rawInput/prompt\"\nexists = true"));
        assert!(
            !holds("at = \"/rawInput/n\"\nexists = true"),
            "null is absent"
        );
        assert!(holds("at = \"/rawInput/n\"\nexists = false"));
        assert!(holds("at = \"/kind\"\nexists = false"));
        assert!(!holds("at = \"/kind\"\nequals = \"think\""));
    }

    #[test]
    fn bad_conditions_name_their_key() {
        let e = cond("at = \"/t\"\nregex = \"(\"").expect_err("bad regex");
        assert_eq!(e.key, "c.regex");
        assert!(e.problem.contains("invalid regex"), "{e}");
        let e = cond("at = \"t\"\nexists = true").expect_err("not a pointer");
        assert_eq!(e.key, "c.at");
        let e = cond("at = \"/t\"").expect_err("no test");
        assert!(e.problem.contains("exactly one"), "{e}");
        let e = cond("at = \"/t\"\nequals = \"a\"\nprefix = \"b\"").expect_err("two tests");
        assert!(e.problem.contains("found 2"), "{e}");
        let e = cond("at = \"/t\"\none_of = [[1]]").expect_err("not a scalar");
        assert_eq!(e.key, "c.one_of[0]");
    }

    #[test]
    fn patterns_compile_when_first_used() {
        let p = Pattern::parse("^a+$", "k").expect("valid");
        assert!(p.regex().is_some_and(|r| r.is_match("aaa")));
        let e = Pattern::parse("(", "k.regex").expect_err("syntax");
        assert_eq!(e.key, "k.regex");
        // Valid, but too big to compile: it matches nothing rather than failing later.
        let big = Pattern::parse(r"\w{2000}", "k").expect("syntax is fine");
        assert!(big.regex().is_none());
        assert!(big.compile_now().is_err());
    }

    #[test]
    fn markers_come_from_literal_values_else_keys_else_the_author() {
        let rule = |when: &str, marker: Option<&Markers>| {
            #[derive(serde::Deserialize)]
            struct W {
                when: Vec<CondSpec>,
            }
            let w: W = toml::from_str(when).expect("when parses");
            Rule::compile(&w.when, marker, "r", true)
        };
        let r = rule(
            "when = [{ at = \"/_meta/claudeCode/toolName\", one_of = [\"Task\", \"Agent\"] }]",
            None,
        )
        .expect("ok");
        assert_eq!(r.markers, ["\"Task\"", "\"Agent\""]);
        let r = rule(
            "when = [{ at = \"/rawInput/prompt\", exists = true }, { at = \"/title\", equals = \"task\" }]",
            None,
        )
        .expect("ok");
        assert_eq!(r.markers, ["\"task\""], "a value beats a key");
        let r = rule(
            "when = [{ at = \"/toolCallId\", prefix = \"invoke_agent__\" }]",
            None,
        )
        .expect("ok");
        assert_eq!(r.markers, ["\"invoke_agent__"]);
        let r = rule("when = [{ at = \"/title\", equals = \"🤖 helper\" }]", None).expect("ok");
        assert_eq!(
            r.markers,
            ["\"title\""],
            "a value an encoder may escape gives its key"
        );
        let r = rule("when = [{ at = \"/content/0/text\", exists = true }]", None).expect("ok");
        assert_eq!(r.markers, ["\"text\""], "array indexes are skipped");
        let e = rule(
            "when = [{ at = \"/title\", regex = \"^Delegating\" }]",
            None,
        )
        .expect_err("regex only");
        assert_eq!(e.key, "r.when");
        assert!(e.problem.contains("marker"), "{e}");
        let r = rule(
            "when = [{ at = \"/title\", regex = \"^Delegating\" }]",
            Some(&Markers::One("Delegating".into())),
        )
        .expect("explicit marker");
        assert_eq!(r.markers, ["Delegating"]);
        let e = rule(
            "when = [{ at = \"/t\", exists = true }]",
            Some(&Markers::Any(vec!["abc".into(), "ab".into()])),
        )
        .expect_err("short");
        assert_eq!(e.key, "r.marker");
        let e = rule("when = []", None).expect_err("empty");
        assert_eq!(e.key, "r.when");
    }

    #[test]
    fn text_extraction_capture_first_line_bound_and_blocks() {
        let u = json!({
            "content":[{"type":"content","content":{"type":"text","text":"<task id=\"ses_1\" state=\"completed\">\n<task_result>\nAll done.\n</task_result>\n</task>"}}],
            "pi":[{"type":"content","content":{"type":"text","text":"Agent completed in 0.4s (2 tool uses, 360 token).\n\nSUB-ANSWER a."}}],
            "two":[{"type":"text","text":"transcript"},{"type":"text","text":"answer"}],
            "description":"SUBAGENT:alpha list the text files in the project\nand more",
            "title":"Task: Survey"
        });
        let s = source("s = { at = \"/content\", regex = '(?s)<task_result>\\s*(?P<text>.*?)\\s*</task_result>' }");
        assert_eq!(s.text(&u).as_deref(), Some("All done."));
        assert!(
            matches!(s.text(&u), Some(Cow::Borrowed(_))),
            "a capture borrows"
        );
        let s = source("s = { at = \"/content\", regex = '<task id=\"([^\"]+)\"' }");
        assert_eq!(s.text(&u).as_deref(), Some("ses_1"));
        let s =
            source("s = { at = \"/pi\", regex = '(?s)^Agent completed in [^\\n]*\\n\\n(.*)$' }");
        assert_eq!(s.text(&u).as_deref(), Some("SUB-ANSWER a."));
        let s = source("s = { at = \"/title\", regex = '^nothing' }");
        assert_eq!(s.text(&u), None, "no match, no text");
        let s = source("s = { at = \"/description\", first_line = true, max_chars = 20 }");
        assert_eq!(s.text(&u).as_deref(), Some("SUBAGENT:alpha list…"));
        assert_eq!(s.text(&u).map(|t| t.chars().count()), Some(20));
        let s = source("s = { at = \"/title\", max_chars = 12 }");
        assert_eq!(
            s.text(&u).as_deref(),
            Some("Task: Survey"),
            "exactly at the bound: kept"
        );
        let s = source("s = { at = \"/title\", max_chars = 11 }");
        assert_eq!(s.text(&u).as_deref(), Some("Task: Surv…"));
        let s = source("s = \"/two\"");
        assert_eq!(s.text(&u).as_deref(), Some("transcript\nanswer"));
        let s = source("s = { at = \"/two\", block = \"last\" }");
        assert_eq!(s.text(&u).as_deref(), Some("answer"));
        let s = source("s = { at = \"/two\", block = \"first\" }");
        assert_eq!(s.text(&u).as_deref(), Some("transcript"));
        let s = source("s = { at = \"/title\", when = [{ at = \"/nope\", exists = true }] }");
        assert_eq!(s.text(&u), None, "conditions on a source");
        let s = source("s = \"/missing\"");
        assert_eq!(s.text(&u), None);
        assert!(value_text(&json!([]), Block::All).is_none());
        assert_eq!(value_text(&json!(""), Block::All), None, "empty is no text");
    }
}
