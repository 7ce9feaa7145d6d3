//! Secret redaction for everything the proxy writes to disk (dump, store).
//!
//! Rules: every string under an `env` or `headers` key (MCP server environments and HTTP
//! headers, in object or `[{name, value}]` form); every string in the params of an
//! `authenticate` request except the method id; and any string whose key looks like a
//! credential (token, secret, password, api key, authorization, cookie, ...); in an `args`
//! list of strings (an MCP server's command line), what [`redact_command`] hides. Numbers and
//! booleans are never secrets (`inputTokens: 1234` stays readable).

use serde_json::Value;

pub(crate) const REDACTED: &str = "[redacted]";

/// Redact a whole JSON-RPC message in place. Returns whether any value was replaced, so a
/// caller can keep the original text of a message that holds nothing secret.
pub(crate) fn redact(msg: &mut Value) -> bool {
    let mut changed = false;
    let is_authenticate = msg.get("method").and_then(Value::as_str) == Some("authenticate");
    if is_authenticate {
        if let Some(params) = msg.get_mut("params") {
            redact_all_strings(params, &["methodId"], &mut changed);
        }
    }
    walk(msg, &mut changed);
    changed
}

fn walk(v: &mut Value, changed: &mut bool) {
    match v {
        Value::Object(map) => {
            for (key, val) in map.iter_mut() {
                if key == "env" || key == "headers" {
                    redact_all_strings(val, &["name"], changed);
                } else if key == "args" {
                    redact_args(val, changed);
                } else if is_secret_key(key) {
                    redact_all_strings(val, &[], changed);
                } else {
                    walk(val, changed);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| walk(i, changed)),
        _ => {}
    }
}

/// A list of strings is a command line: its credential-looking arguments are hidden.
fn redact_args(v: &mut Value, changed: &mut bool) {
    let Value::Array(items) = v else {
        return walk(v, changed);
    };
    let Some(argv) = items
        .iter()
        .map(|i| i.as_str().map(str::to_owned))
        .collect::<Option<Vec<String>>>()
    else {
        return walk(v, changed);
    };
    let shown = redact_command(&argv);
    if shown != argv {
        *items = shown.into_iter().map(Value::String).collect();
        *changed = true;
    }
}

fn redact_all_strings(v: &mut Value, keep_keys: &[&str], changed: &mut bool) {
    match v {
        Value::String(s) => {
            *s = REDACTED.to_owned();
            *changed = true;
        }
        Value::Object(map) => {
            for (key, val) in map.iter_mut() {
                if !keep_keys.contains(&key.as_str()) {
                    redact_all_strings(val, keep_keys, changed);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| redact_all_strings(i, keep_keys, changed)),
        _ => {}
    }
}

/// A command line with credential-looking arguments hidden: the value after a flag whose name
/// looks like a credential (`--api-key X`, `--token=X`), and `NAME=VALUE` pairs whose name
/// does (`GITHUB_TOKEN=...`).
pub(crate) fn redact_command(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for arg in argv {
        if std::mem::take(&mut hide_next) {
            out.push(REDACTED.to_owned());
            continue;
        }
        if let Some((name, _)) = arg.split_once('=') {
            if is_secret_key(name.trim_start_matches('-')) {
                out.push(format!("{name}={REDACTED}"));
                continue;
            }
        } else if arg.starts_with('-') && is_secret_key(arg.trim_start_matches('-')) {
            hide_next = true;
        }
        out.push(arg.clone());
    }
    out
}

/// Whether a key names a credential. Lowercased, `-`/`_` ignored.
pub(crate) fn is_secret_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    const PARTS: [&str; 9] = [
        "token",
        "secret",
        "password",
        "passwd",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "privatekey",
    ];
    PARTS.iter().any(|p| k.contains(p)) || k == "key" || k.ends_with("accesskey")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_credentials_in_a_command_line() {
        let argv: Vec<String> = [
            "npx",
            "agent",
            "--api-key",
            "sk-1",
            "--token=t2",
            "GITHUB_TOKEN=g3",
            "--model",
            "m",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let shown = redact_command(&argv).join(" ");
        for secret in ["sk-1", "t2", "g3"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.contains("--model m") && shown.contains("--api-key"),
            "{shown}"
        );
    }

    #[test]
    fn redacts_env_headers_auth_and_tokens() {
        let mut v = json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{
            "cwd":"/p",
            "mcpServers":[{"name":"gh","command":"x","args":[],
                "env":[{"name":"GITHUB_TOKEN","value":"ghp_abc"}]},
                {"type":"http","name":"h","url":"u","headers":[{"name":"Authorization","value":"Bearer s3"}]}],
            "_meta":{"apiKey":"sk-1","inputTokens":12,"refresh_token":"r"}}});
        assert!(redact(&mut v));
        let s = v.to_string();
        for secret in ["ghp_abc", "Bearer s3", "sk-1", "\"r\""] {
            assert!(!s.contains(secret), "{secret} leaked: {s}");
        }
        assert!(s.contains("GITHUB_TOKEN"), "names stay: {s}");
        assert_eq!(v["params"]["_meta"]["inputTokens"], 12);
        assert_eq!(v["params"]["cwd"], "/p");

        let mut auth = json!({"jsonrpc":"2.0","id":1,"method":"authenticate",
            "params":{"methodId":"api-key","_meta":{"value":"hunter2"}}});
        assert!(redact(&mut auth));
        assert_eq!(auth["params"]["methodId"], "api-key");
        assert_eq!(auth["params"]["_meta"]["value"], REDACTED);
    }

    #[test]
    fn redacts_credentials_in_an_mcp_servers_args() {
        let mut v = json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/p",
            "mcpServers":[{"name":"s","command":"x","args":["--token","sk-live-abc123",
                "--api-key=k2","--password=p3","--stdio"]}]}});
        assert!(redact(&mut v));
        assert_eq!(
            v["params"]["mcpServers"][0]["args"],
            json!([
                "--token",
                REDACTED,
                format!("--api-key={REDACTED}"),
                format!("--password={REDACTED}"),
                "--stdio"
            ])
        );
        // Args without a credential keep the message as it was.
        let mut plain = json!({"params":{"mcpServers":[{"args":["-y","server","--stdio"]}]}});
        assert!(!redact(&mut plain));
    }

    #[test]
    fn reports_when_nothing_was_redacted() {
        let mut v = json!({"jsonrpc":"2.0","id":3,"method":"session/prompt",
            "params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}],
                "_meta":{"inputTokens":5,"env":{}}}});
        let before = v.clone();
        assert!(!redact(&mut v));
        assert_eq!(v, before);
    }
}
