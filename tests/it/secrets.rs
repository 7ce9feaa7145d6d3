//! Secrets: what tests/it/dump.rs does not cover yet. Realistic credentials in `authenticate`,
//! MCP server environments and HTTP headers (both the `[{name, value}]` and the object form,
//! `http` and `sse` servers, `session/new` and `session/load`) never reach the dump; nothing
//! secret is logged at info level; files the proxy writes are 0600 and every directory it
//! creates is 0700.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{json, Value};

use crate::support::proxy::{Proxy, Scratch};

/// Realistic values, each unique so a leak names itself.
const ANTHROPIC_KEY: &str = "sk-ant-api03-LEAK1aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const OAUTH_CODE: &str = "LEAK2-oauth-authorization-code";
const PKCE_VERIFIER: &str = "LEAK3-pkce-code-verifier-value";
const GITHUB_PAT: &str = "github_pat_LEAK4bbbbbbbbbbbbbbbbbbbbbb";
const AWS_SECRET: &str = "LEAK5wJalrXUtnFEMIK7MDENGbPxRfiCY";
const BEARER: &str = "Bearer LEAK6.eyJhbGciOiJIUzI1NiJ9.payload";
const API_KEY_HEADER: &str = "LEAK7-x-api-key-value";
const COOKIE: &str = "session=LEAK8-cookie";
const SSE_TOKEN: &str = "LEAK9-sse-authorization";
const DB_PASSWORD: &str = "LEAK10-postgres-password";
const ARG_TOKEN: &str = "sk-live-LEAK11abc123";
const ARG_API_KEY: &str = "LEAK12-api-key-in-args";
const ARG_PASSWORD: &str = "LEAK13-password-in-args";

const SECRETS: [&str; 13] = [
    ANTHROPIC_KEY,
    OAUTH_CODE,
    PKCE_VERIFIER,
    GITHUB_PAT,
    AWS_SECRET,
    BEARER,
    API_KEY_HEADER,
    COOKIE,
    SSE_TOKEN,
    DB_PASSWORD,
    ARG_TOKEN,
    ARG_API_KEY,
    ARG_PASSWORD,
];

fn mcp_servers() -> Value {
    json!([
        {"name": "github", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
         "env": [{"name": "GITHUB_PERSONAL_ACCESS_TOKEN", "value": GITHUB_PAT},
                 {"name": "AWS_SECRET_ACCESS_KEY", "value": AWS_SECRET}]},
        {"name": "search", "command": "search-mcp",
         "args": ["--token", ARG_TOKEN, format!("--api-key={ARG_API_KEY}"),
                  format!("--password={ARG_PASSWORD}"), "--verbose"]},
        {"name": "postgres", "command": "pg-mcp", "args": [],
         "env": {"PGPASSWORD": DB_PASSWORD, "PGHOST": "localhost"}},
        {"type": "http", "name": "linear", "url": "https://mcp.linear.app/mcp",
         "headers": [{"name": "Authorization", "value": BEARER},
                     {"name": "X-Api-Key", "value": API_KEY_HEADER}]},
        {"type": "http", "name": "internal", "url": "https://mcp.internal/v1",
         "headers": {"Cookie": COOKIE}},
        {"type": "sse", "name": "legacy", "url": "https://sse.example/events",
         "headers": [{"name": "Authorization", "value": SSE_TOKEN}]}
    ])
}

/// The client's side of a session whose frames carry every secret above.
fn client_frames() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true}, "terminal": true},
            "clientInfo": {"name": "zed", "version": "1.18"},
            "_meta": {"anthropicApiKey": ANTHROPIC_KEY}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "authenticate", "params": {"methodId": "oauth-personal",
            "_meta": {"code": OAUTH_CODE, "codeVerifier": PKCE_VERIFIER}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/new",
            "params": {"cwd": "/home/user/project", "mcpServers": mcp_servers()}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/load",
            "params": {"sessionId": "s1", "cwd": "/home/user/project", "mcpServers": mcp_servers()}}),
    ]
}

fn agent_steps() -> Vec<Value> {
    vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true},
            "authMethods": [{"id": "oauth-personal", "name": "Log in"}]}}),
        json!({"expect": "authenticate"}),
        json!({"reply": {}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "s1"}}),
        json!({"expect": "session/load"}),
        json!({"reply": {}}),
    ]
}

/// Play the session through a proxy with `args`; return its stderr.
fn play(s: &Scratch, args: &[&str], envs: &[(&str, &Path)]) -> String {
    let agent = s.agent(&agent_steps());
    let mut cmd_args: Vec<&str> = args.to_vec();
    cmd_args.extend(["--log-level", "info"]);
    let mut proxy = Proxy::start_with_env(s.dir.path(), &cmd_args, &agent, envs);
    for (n, frame) in client_frames().iter().enumerate() {
        proxy.send_json(frame);
        let answer = proxy.next_json();
        assert_eq!(answer["id"], n + 1, "answered: {answer}");
    }
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    proxy.stderr()
}

#[test]
fn the_dump_redacts_realistic_credentials_in_every_place_they_travel() {
    let s = Scratch::new();
    let dump = s.p("dump.jsonl");
    play(&s, &["--dump", &dump], &[]);
    let text = std::fs::read_to_string(&dump).expect("dump");
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} leaked into the dump");
    }
    // The rest stays readable: names, URLs, method ids.
    for kept in [
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "https://mcp.linear.app/mcp",
        "oauth-personal",
        "PGHOST",
    ] {
        assert!(text.contains(kept), "{kept} kept in the dump");
    }
    let sent: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("dump line"))
        .filter(|r: &Value| r["dir"] == "client→proxy")
        .collect();
    assert_eq!(sent.len(), 4);
    assert!(
        sent.iter().all(|r| r["redacted"] == true),
        "every frame with a secret is marked: {sent:?}"
    );
}

#[test]
fn nothing_secret_is_logged_at_info_level() {
    let s = Scratch::new();
    let stderr = play(&s, &[], &[]);
    assert!(
        stderr.contains("INFO"),
        "info logging is on (the test can see a leak):\n{stderr}"
    );
    for secret in SECRETS {
        assert!(
            !stderr.contains(secret),
            "{secret} logged at info:\n{stderr}"
        );
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// Every directory under `root` not in `existing` is 0700, every file 0600.
fn assert_private_tree(root: &Path, existing: &[std::path::PathBuf]) -> usize {
    let mut checked = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                if !existing.contains(&path) {
                    assert_eq!(mode(&path), 0o700, "directory {}", path.display());
                    checked += 1;
                }
                stack.push(path);
            } else if !existing.contains(&path) {
                assert_eq!(mode(&path), 0o600, "file {}", path.display());
                checked += 1;
            }
        }
    }
    checked
}

/// The proxy runs with HOME and XDG_STATE_HOME in a scratch tree and a dump in there: whatever
/// it creates there (the dump today; a state directory once the store writes one) is private.
/// The usual umask (022) would give 0644 / 0755, so 0600 / 0700 means the proxy set the modes.
#[test]
fn files_the_proxy_writes_are_0600_and_directories_it_creates_0700() {
    let s = Scratch::new();
    let home = s.path("home");
    let state = s.path("state");
    std::fs::create_dir(&home).expect("home");
    std::fs::create_dir(&state).expect("state");
    let existing = vec![home.clone(), state.clone()];
    let dump = state.join("dump.jsonl");
    // A dump file that already exists with a loose mode is tightened.
    std::fs::write(&dump, "old").expect("old dump");
    std::fs::set_permissions(&dump, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let dump_arg = dump.to_string_lossy().into_owned();
    play(
        &s,
        &["--dump", &dump_arg],
        &[("HOME", &home), ("XDG_STATE_HOME", &state)],
    );
    assert_eq!(mode(&dump), 0o600, "dump file");
    let checked = assert_private_tree(&home, &existing) + assert_private_tree(&state, &existing);
    assert!(checked >= 1, "the dump was checked");
}

/// A dump path in a directory that does not exist: the proxy does not create it (nor
/// anything else) and stops before starting the agent.
#[test]
fn a_dump_in_a_missing_directory_is_refused_and_nothing_is_created() {
    let s = Scratch::new();
    let missing = s.path("no/such/dir");
    let dump = missing.join("dump.jsonl");
    let dump_arg = dump.to_string_lossy().into_owned();
    let pid_file = s.p("agent.pid");
    let agent = s.agent(&[json!({"pid_file": pid_file})]);
    let mut proxy = Proxy::start(s.dir.path(), &["--dump", &dump_arg], &agent);
    assert_eq!(proxy.exit_code(), 2, "stderr:\n{}", proxy.stderr());
    assert!(
        proxy.stderr().contains("cannot create dump file"),
        "{}",
        proxy.stderr()
    );
    assert!(!s.path("no").exists(), "no directory created");
    assert!(!s.path("agent.pid").exists(), "the agent was not started");
}
