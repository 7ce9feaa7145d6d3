//! Zed's `settings.json`: where it is, and merging an `agent_servers` entry into it.
//!
//! The file is JSON with comments and trailing commas, kept by hand. It is edited through a
//! concrete syntax tree that holds every comment and blank, so only the entry's own text
//! changes; everything else the user wrote stays byte for byte.

use std::path::PathBuf;

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

/// Zed's user settings file, as Zed's `paths` crate finds it: on Linux
/// `$FLATPAK_XDG_CONFIG_HOME/zed/settings.json` inside a Flatpak, else
/// `$XDG_CONFIG_HOME/zed/settings.json` (an absolute value only), else
/// `~/.config/zed/settings.json`; on macOS always `~/.config/zed/settings.json`; on Windows
/// `%APPDATA%\Zed\settings.json` ([`acp_proxy::platform::paths`]).
pub fn default_path() -> Option<PathBuf> {
    use acp_proxy::platform::paths::{zed_config_dir, Env, Os};
    zed_config_dir(Os::CURRENT, &Env::current()).map(|d| d.join("settings.json"))
}

/// What a merge found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    /// The entry was there already (under this name): nothing to write.
    Unchanged { name: String },
    /// A new entry.
    Added,
    /// An entry of this name existed; these of its keys were set, the others kept.
    Updated { changes: Vec<Change> },
}

/// One key of an existing entry that a merge set: what it held and what it holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub key: String,
    pub before: Option<Value>,
    pub after: Value,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("it is not valid JSON with comments: {0}")]
    Parse(String),
    #[error("its top level is not an object")]
    RootNotObject,
    #[error("its `agent_servers` is not an object")]
    ServersNotObject,
    #[error("its `agent_servers` entry `{0}` is not an object")]
    EntryNotObject(String),
}

/// What Zed accepts (its parser takes comments, trailing commas and the `\v` / `\x` escapes):
/// anything looser is refused rather than guessed at.
fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_extended_string_escapes: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
    }
}

/// The keys of an entry the proxy owns; any other key of an existing entry is the user's.
const OWNED_KEYS: [&str; 3] = ["type", "command", "args"];

/// Merge `agent_servers.<name> = entry` into `text` (a settings file's contents; empty for a
/// new file). Returns what happened and, unless nothing changed, the new text.
///
/// An existing entry of that name gets the proxy's keys (`type`, `command`, `args`) set and
/// keeps the others (`env`, `default_model`, ...). An entry under another name that already has
/// the same `type`, `command` and `args` counts as done.
pub fn merge(text: &str, name: &str, entry: &Value) -> Result<(Merge, Option<String>), MergeError> {
    let root =
        CstRootNode::parse(text, &parse_options()).map_err(|e| MergeError::Parse(e.to_string()))?;
    if root.value().is_some() && root.object_value().is_none() {
        return Err(MergeError::RootNotObject);
    }
    let top = root.object_value_or_set();
    let servers = match top.get("agent_servers") {
        None => None,
        Some(prop) => Some(prop.object_value().ok_or(MergeError::ServersNotObject)?),
    };
    let Some(servers) = servers else {
        top.append("agent_servers", to_cst(&serde_json::json!({ name: entry })));
        return Ok((Merge::Added, Some(finish(&root, text))));
    };
    let Some(existing) = servers.get(name) else {
        if let Some(other) = same_command_elsewhere(&servers, entry) {
            return Ok((Merge::Unchanged { name: other }, None));
        }
        servers.append(name, to_cst(entry));
        return Ok((Merge::Added, Some(finish(&root, text))));
    };
    let existing = existing
        .object_value()
        .ok_or_else(|| MergeError::EntryNotObject(name.to_owned()))?;
    let mut changes = Vec::new();
    for key in OWNED_KEYS {
        let Some(want) = entry.get(key) else { continue };
        let before = existing
            .get(key)
            .and_then(|p| p.value())
            .and_then(|v| v.to_serde_value());
        let want = match (key, &before) {
            ("args", Some(old)) => keep_user_flags(old, want),
            _ => want.clone(),
        };
        match existing.get(key) {
            Some(_) if before.as_ref() == Some(&want) => continue,
            Some(prop) => prop.set_value(to_cst(&want)),
            None => {
                existing.append(key, to_cst(&want));
            }
        }
        changes.push(Change {
            key: key.to_owned(),
            before,
            after: want,
        });
    }
    if changes.is_empty() {
        return Ok((
            Merge::Unchanged {
                name: name.to_owned(),
            },
            None,
        ));
    }
    // Keys the entry brings that the user's entry lacks (`env`), without touching theirs.
    if let Some(obj) = entry.as_object() {
        for (key, value) in obj {
            if !OWNED_KEYS.contains(&key.as_str()) && existing.get(key).is_none() {
                existing.append(key, to_cst(value));
            }
        }
    }
    Ok((Merge::Updated { changes }, Some(finish(&root, text))))
}

/// The new `args` for an entry that had `old`: the proxy flags the user added before `--`
/// (`--dump PATH`, `--log-level debug`, ...) stay, in front, unless `new` sets the same flag;
/// the agent's command after `--` is `new`'s. Anything that is not a list of strings is
/// replaced.
fn keep_user_flags(old: &Value, new: &Value) -> Value {
    let words = |v: &Value| -> Option<Vec<String>> {
        v.as_array()?
            .iter()
            .map(|w| w.as_str().map(str::to_owned))
            .collect()
    };
    let (Some(old), Some(new)) = (words(old), words(new)) else {
        return new.clone();
    };
    let flags = |args: &[String]| -> Vec<Vec<String>> {
        let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
        let mut groups: Vec<Vec<String>> = Vec::new();
        for word in &args[..end] {
            match groups.last_mut() {
                // Every proxy flag takes one value: `--flag VALUE` or `--flag=VALUE`.
                Some(g) if g.len() == 1 && !g[0].contains('=') && !word.starts_with('-') => {
                    g.push(word.clone())
                }
                _ => groups.push(vec![word.clone()]),
            }
        }
        groups
    };
    let name =
        |group: &[String]| -> String { group[0].split('=').next().unwrap_or_default().to_owned() };
    let set_by_new: Vec<String> = flags(&new).iter().map(|g| name(g)).collect();
    let mut args: Vec<String> = flags(&old)
        .into_iter()
        .filter(|g| !set_by_new.contains(&name(g)))
        .flatten()
        .collect();
    args.extend(new);
    Value::from(args)
}

/// The name of another entry with the same type, command and args, if any.
fn same_command_elsewhere(servers: &CstObject, entry: &Value) -> Option<String> {
    servers.properties().into_iter().find_map(|prop| {
        let value = prop.value()?.to_serde_value()?;
        let same = OWNED_KEYS.iter().all(|k| value.get(*k) == entry.get(*k));
        same.then(|| prop.name()?.decoded_value().ok()).flatten()
    })
}

/// The edited text, ending with a newline when the original did (or was empty).
fn finish(root: &CstRootNode, original: &str) -> String {
    let mut out = root.to_string();
    if (original.trim().is_empty() || original.ends_with('\n')) && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn to_cst(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_cst).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), to_cst(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Value {
        json!({
            "type": "custom",
            "command": "/opt/acp-proxy",
            "args": ["--", "npx", "@agentclientprotocol/claude-agent-acp"],
            "env": {}
        })
    }

    const NAME: &str = "Claude (subagents)";

    #[test]
    fn a_new_file_gets_the_entry() {
        let (merge, text) = merge("", NAME, &entry()).expect("merge");
        assert_eq!(merge, Merge::Added);
        let text = text.expect("text");
        let parsed: Value = serde_json::from_str(&text).expect("plain JSON");
        assert_eq!(parsed["agent_servers"][NAME], entry());
        assert!(text.ends_with("}\n"), "{text}");
    }

    #[test]
    fn comments_and_trailing_commas_stay() {
        let original = "// my settings\n{\n  \"theme\": \"One Dark\", // dark\n  /* keep */\n  \"vim_mode\": true,\n}\n";
        let (merge, text) = merge(original, NAME, &entry()).expect("merge");
        assert_eq!(merge, Merge::Added);
        let text = text.expect("text");
        assert!(
            text.starts_with("// my settings\n{\n  \"theme\": \"One Dark\", // dark\n  /* keep */\n  \"vim_mode\": true,\n"),
            "{text}"
        );
        assert!(
            text.ends_with("},\n}\n"),
            "trailing-comma style kept:\n{text}"
        );
    }

    #[test]
    fn an_entry_of_the_same_name_is_updated_and_keeps_the_users_keys() {
        let original = r#"{
  "agent_servers": {
    "Claude (subagents)": {
      "command": "/old/acp-proxy", // moved since
      "args": ["--", "npx", "@agentclientprotocol/claude-agent-acp"],
      "env": {"ANTHROPIC_LOG": "debug"},
      "default_mode": "plan",
    },
  },
}
"#;
        let (merge, text) = merge(original, NAME, &entry()).expect("merge");
        assert_eq!(
            merge,
            Merge::Updated {
                changes: vec![
                    Change {
                        key: "type".into(),
                        before: None,
                        after: json!("custom")
                    },
                    Change {
                        key: "command".into(),
                        before: Some(json!("/old/acp-proxy")),
                        after: json!("/opt/acp-proxy")
                    },
                ]
            }
        );
        let text = text.expect("text");
        assert!(
            text.contains("\"command\": \"/opt/acp-proxy\", // moved since"),
            "{text}"
        );
        assert!(
            text.contains(r#""env": {"ANTHROPIC_LOG": "debug"}"#),
            "{text}"
        );
        assert!(text.contains(r#""default_mode": "plan""#), "{text}");
        // A second merge changes nothing.
        let (again, none) = super::merge(&text, NAME, &entry()).expect("merge");
        assert_eq!(again, Merge::Unchanged { name: NAME.into() });
        assert_eq!(none, None);
    }

    #[test]
    fn the_same_command_under_another_name_counts_as_done() {
        let original = r#"{"agent_servers": {"My Claude": {"type": "custom", "command": "/opt/acp-proxy",
            "args": ["--", "npx", "@agentclientprotocol/claude-agent-acp"]}}}"#;
        let (merge, text) = merge(original, NAME, &entry()).expect("merge");
        assert_eq!(
            merge,
            Merge::Unchanged {
                name: "My Claude".into()
            }
        );
        assert_eq!(text, None);
        // Without `"type": "custom"` current Zed does not start it: not the same entry.
        let untyped = r#"{"agent_servers": {"My Claude": {"command": "/opt/acp-proxy",
            "args": ["--", "npx", "@agentclientprotocol/claude-agent-acp"]}}}"#;
        let (merge, _) = super::merge(untyped, NAME, &entry()).expect("merge");
        assert_eq!(merge, Merge::Added);
    }

    #[test]
    fn what_cannot_be_merged_is_refused() {
        for (text, want) in [
            ("{\n  \"a\": 1\n  \"b\": 2\n}\n", "Parse"),
            ("{\"a\": ", "Parse"),
            ("{'a': 1}", "Parse"),
            ("[1, 2]", "RootNotObject"),
            ("{\"agent_servers\": []}", "ServersNotObject"),
            (
                "{\"agent_servers\": {\"Claude (subagents)\": \"x\"}}",
                "EntryNotObject",
            ),
        ] {
            let err = merge(text, NAME, &entry()).expect_err(text);
            assert!(format!("{err:?}").starts_with(want), "{text}: {err:?}");
        }
        let err = merge("{\n  \"a\": 1\n  \"b\": 2\n}\n", NAME, &entry()).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn the_users_proxy_flags_stay_and_the_agent_command_is_replaced() {
        let old = json!([
            "--dump",
            "/tmp/d.jsonl",
            "--log-level=debug",
            "--config",
            "/a.toml",
            "--",
            "npx",
            "@agentclientprotocol/claude-agent-acp",
            "--verbose"
        ]);
        let new = json!([
            "--config",
            "/b.toml",
            "--",
            "npx",
            "--yes",
            "@agentclientprotocol/claude-agent-acp"
        ]);
        assert_eq!(
            keep_user_flags(&old, &new),
            json!([
                "--dump",
                "/tmp/d.jsonl",
                "--log-level=debug",
                "--config",
                "/b.toml",
                "--",
                "npx",
                "--yes",
                "@agentclientprotocol/claude-agent-acp"
            ])
        );
        // Not a list of strings: replaced as a whole.
        assert_eq!(keep_user_flags(&json!("x"), &new), new);
    }
}
