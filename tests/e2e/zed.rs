//! Zed, as the suite plays it: the one place that names the library's Zed model, and the
//! `initialize` Zed sends, in the shapes of Zed 1.18 and of Zed's main branch after it.

pub use acp_proxy::zed_view::{Entry, Thread, ToolCall, ZedModel};
use serde_json::{json, Value};

/// Which Zed the client plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Zed 1.18: fs, terminal and the two `_meta` flags.
    V118,
    /// Zed after 1.18: also `auth`, `session.configOptions` and `elicitation`.
    Newer,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::V118 => "zed-1.18",
            Shape::Newer => "zed-newer",
        }
    }

    /// The params of Zed's `initialize`. Zed never advertises `clientCapabilities.subagents`.
    pub fn initialize_params(self) -> Value {
        let mut caps = json!({
            "fs": {"readTextFile": true, "writeTextFile": true},
            "terminal": true,
            "_meta": {"terminal_output": true, "terminal-auth": true},
        });
        let version = match self {
            Shape::V118 => "1.18.0",
            Shape::Newer => {
                caps["auth"] = json!({"terminal": true});
                caps["session"] = json!({"configOptions": {"boolean": {}}});
                caps["elicitation"] = json!({"form": {}, "url": {}});
                "1.19.0"
            }
        };
        json!({
            "protocolVersion": 1,
            "clientCapabilities": caps,
            "clientInfo": {"name": "zed", "version": version, "title": "Zed"},
        })
    }

    /// What this Zed refuses beyond the 1.18 model in `zed_view`: newer Zed rejects a new
    /// `tool_call` without a `title`.
    pub fn refuses(self, update: &Value) -> Option<String> {
        let kind = update.get("sessionUpdate").and_then(Value::as_str);
        if self == Shape::Newer
            && kind == Some("tool_call")
            && !update.get("title").is_some_and(Value::is_string)
        {
            return Some(format!(
                "tool_call without a title (newer Zed rejects it): {update}"
            ));
        }
        None
    }
}
