//! Reading subagent signals out of an update, driven by the [`presets`](super::presets) tables.

use serde_json::Value;

use super::presets::Preset;
use crate::wire::keys::{string_after_key, Found, Signals};

/// The active presets, plus the byte markers that let the engine skip frames cheaply.
#[derive(Debug, Clone)]
pub(crate) struct Detector {
    presets: Vec<Preset>,
    /// Searchers (built once) for the keys whose presence in a frame means it may name a
    /// parent tool call (`"parentToolUseId"`, ...).
    markers: Vec<memchr::memmem::Finder<'static>>,
    /// The engine's fixed keys, the parent keys and the strings without which a tool call
    /// cannot be a spawn of any preset, searched in one pass.
    signals: Signals,
    /// Every preset's parent pointer starts at the update's `_meta`.
    parents_under_meta: bool,
}

impl Detector {
    pub(crate) fn new(presets: Vec<Preset>) -> Detector {
        let mut markers: Vec<String> = presets
            .iter()
            .flat_map(|p| p.parent_pointers.iter())
            .filter_map(|ptr| ptr.rsplit('/').next())
            .map(|key| format!("\"{key}\""))
            .collect();
        markers.sort();
        markers.dedup();
        let mut spawn_markers: Vec<String> = presets
            .iter()
            .flat_map(|p| {
                p.spawn_tool_names
                    .iter()
                    .chain(p.spawn_titles)
                    .chain(p.spawn_input_keys)
            })
            .map(|s| format!("\"{s}\""))
            .collect();
        spawn_markers.sort();
        spawn_markers.dedup();
        let parents_under_meta = presets
            .iter()
            .flat_map(|p| p.parent_pointers.iter())
            .all(|ptr| ptr.starts_with("/_meta/"));
        Detector {
            parents_under_meta,
            presets,
            signals: Signals::new(&markers, &spawn_markers),
            markers: markers
                .iter()
                .map(|m| memchr::memmem::Finder::new(m.as_bytes()).into_owned())
                .collect(),
        }
    }

    /// Which keys (fixed ones, parent keys, spawn markers) occur in a raw frame: one pass.
    /// A frame without [`kind::SPAWN`](crate::wire::keys::kind::SPAWN) cannot hold a spawn,
    /// one without [`kind::PARENT`](crate::wire::keys::kind::PARENT) names no parent.
    pub(crate) fn scan(&self, raw: &[u8]) -> Found {
        self.signals.scan(raw)
    }

    /// The byte searches behind [`Detector::scan`], for reading frames ahead elsewhere.
    pub(crate) fn signals(&self) -> &Signals {
        &self.signals
    }

    /// The tool call id of the spawn this child event belongs to, if any preset names one.
    pub(crate) fn parent_ref<'v>(&self, update: &'v Value) -> Option<&'v str> {
        self.presets
            .iter()
            .flat_map(|p| p.parent_pointers.iter())
            .find_map(|ptr| update.pointer(ptr).and_then(Value::as_str))
    }

    /// The parent reference read from the raw JSON of an update, without parsing it: the
    /// string value of a preset's parent key, if exactly one value appears. `None` when there
    /// is none, several, or one with escapes (the caller then parses).
    ///
    /// When every preset's parent key lives under the update's `_meta` (as all do today), only
    /// `meta` (that object's text, if the update has one) is searched, not the whole update.
    pub(crate) fn parent_ref_raw(&self, raw: &str, meta: Option<&str>) -> Option<String> {
        let raw = if self.parents_under_meta { meta? } else { raw };
        let mut found: Option<&str> = None;
        for finder in &self.markers {
            let key_len = finder.needle().len();
            for pos in finder.find_iter(raw.as_bytes()) {
                // The key is ASCII: the byte after it starts a character.
                let value = string_after_key(raw.get(pos + key_len..)?)?;
                match found {
                    Some(f) if f != value => return None,
                    _ => found = Some(value),
                }
            }
        }
        found.map(str::to_owned)
    }

    /// If this `tool_call` (or first update) starts a subagent: the agent's tool name for it.
    pub(crate) fn spawn_tool_name(&self, update: &Value) -> Option<String> {
        for p in &self.presets {
            for ptr in p.tool_name_pointers {
                if let Some(name) = update.pointer(ptr).and_then(Value::as_str) {
                    if p.spawn_tool_names.contains(&name) {
                        return Some(name.to_owned());
                    }
                }
            }
            let title = update.get("title").and_then(Value::as_str);
            let kind = update.get("kind").and_then(Value::as_str);
            if let Some(t) = title {
                if p.spawn_titles.contains(&t) && kind.is_none_or(|k| k == "think") {
                    return Some(t.to_owned());
                }
            }
            if !p.spawn_input_keys.is_empty() {
                if let Some(Value::Object(input)) = update.get("rawInput") {
                    if p.spawn_input_keys.iter().all(|k| input.contains_key(*k)) {
                        return Some(p.spawn_titles.first().copied().unwrap_or(p.name).to_owned());
                    }
                }
            }
        }
        None
    }

    /// The task prompt a spawn carries.
    pub(crate) fn prompt<'v>(&self, update: &'v Value) -> Option<&'v str> {
        self.first_str(update, |p| p.prompt_pointers)
    }

    /// A short description of the task (used as the card's title when the agent has none).
    pub(crate) fn description<'v>(&self, update: &'v Value) -> Option<&'v str> {
        self.first_str(update, |p| p.description_pointers)
    }

    /// Whether this spawn update says the child runs in the background.
    pub(crate) fn is_background(&self, update: &Value) -> bool {
        self.presets
            .iter()
            .flat_map(|p| p.background_pointers.iter())
            .any(|ptr| update.pointer(ptr).and_then(Value::as_bool) == Some(true))
    }

    /// The child's final answer carried by a completed spawn, as plain text.
    pub(crate) fn result_text(&self, update: &Value) -> Option<String> {
        let from_preset = self
            .presets
            .iter()
            .flat_map(|p| p.result_pointers.iter())
            .find_map(|ptr| update.pointer(ptr))
            .and_then(blocks_text);
        from_preset.or_else(|| {
            // Fall back to the tool call's own content: [{type: content, content: {text}}].
            let items = update.get("content")?.as_array()?;
            let texts: Vec<&str> = items
                .iter()
                .filter_map(|i| i.pointer("/content/text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        })
    }

    fn first_str<'v>(
        &self,
        update: &'v Value,
        pick: impl Fn(&Preset) -> &'static [&'static str],
    ) -> Option<&'v str> {
        self.presets
            .iter()
            .flat_map(|p| pick(p).iter())
            .find_map(|ptr| update.pointer(ptr).and_then(Value::as_str))
            .filter(|s| !s.is_empty())
    }
}

/// Text of an array of content blocks (`[{type: "text", text}]`), or of a single string.
fn blocks_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let texts: Vec<&str> = items
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::presets::ALL;
    use crate::wire::keys::kind;
    use serde_json::json;

    #[test]
    fn recognises_claude_spawn_and_child_events() {
        let d = Detector::new(ALL.to_vec());
        let spawn = json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"Task","kind":"think",
            "rawInput":{},"_meta":{"claudeCode":{"toolName":"Agent"}}});
        assert_eq!(d.spawn_tool_name(&spawn).as_deref(), Some("Agent"));
        let child = json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"Find",
            "_meta":{"claudeCode":{"toolName":"Glob","parentToolUseId":"t"}}});
        assert_eq!(d.spawn_tool_name(&child), None);
        assert_eq!(d.parent_ref(&child), Some("t"));
        let meta = child["_meta"].to_string();
        let text = child.to_string();
        assert_eq!(d.parent_ref_raw(&text, Some(&meta)).as_deref(), Some("t"));
        assert_eq!(d.parent_ref_raw(&text, None), None, "no _meta, no parent");
        let spaced = r#"{"claudeCode": {"parentToolUseId" : "t9"}}"#;
        assert_eq!(d.parent_ref_raw("", Some(spaced)).as_deref(), Some("t9"));
        let two = r#"{"parentToolCallId":"a","claudeCode":{"parentToolUseId":"b"}}"#;
        assert_eq!(
            d.parent_ref_raw("", Some(two)),
            None,
            "ambiguous: parse instead"
        );
        assert!(d.scan(child.to_string().as_bytes()).has(kind::PARENT));
        assert!(!d.scan(spawn.to_string().as_bytes()).has(kind::PARENT));
        assert!(d.scan(spawn.to_string().as_bytes()).has(kind::SPAWN));
        let read =
            json!({"sessionUpdate":"tool_call","toolCallId":"r","title":"Read","kind":"read"});
        assert!(!d.scan(read.to_string().as_bytes()).has(kind::SPAWN));
    }

    #[test]
    fn recognises_opencode_and_qwen_shapes() {
        let d = Detector::new(ALL.to_vec());
        let oc = json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"task","kind":"think","rawInput":{}});
        assert_eq!(d.spawn_tool_name(&oc).as_deref(), Some("task"));
        let oc2 = json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"Explore",
            "rawInput":{"description":"d","prompt":"p","subagent_type":"explore"}});
        assert!(d.spawn_tool_name(&oc2).is_some());
        assert_eq!(d.prompt(&oc2), Some("p"));
        let qwen =
            json!({"sessionUpdate":"tool_call","toolCallId":"c","_meta":{"parentToolCallId":"t"}});
        assert_eq!(d.parent_ref(&qwen), Some("t"));
        let plain =
            json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"Read file","kind":"read"});
        assert_eq!(d.spawn_tool_name(&plain), None);
    }
}
