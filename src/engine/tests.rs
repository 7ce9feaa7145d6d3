use super::*;

fn run_agent(engine: &mut Engine, line: &str) -> Vec<Action> {
    let mut out = Vec::new();
    engine.from_agent(&Bytes::copy_from_slice(line.as_bytes()), None, 0, &mut out);
    out
}

fn run_client(engine: &mut Engine, line: &str) -> Vec<Action> {
    let mut out = Vec::new();
    engine.from_client(Bytes::copy_from_slice(line.as_bytes()), 0, &mut out);
    out
}

/// The pure relay reads only frames that may answer a pending client request: an agent
/// request holding an `"id"` passes without a parse, a response (by `result` or `error`) is
/// still seen.
#[test]
fn pure_relay_reads_only_what_may_answer_the_client() {
    let mut e = Engine::new(EngineConfig {
        display: SubagentDisplay::Off,
        ..EngineConfig::default()
    });
    run_client(
        &mut e,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n",
    );
    run_client(
        &mut e,
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\"}\n",
    );
    let request = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/request_permission\",\"params\":{\"text\":\"not json \\u00e9\"}}\n";
    assert_eq!(
        run_agent(&mut e, request),
        [Action::Untouched(Bytes::copy_from_slice(
            request.as_bytes()
        ))]
    );
    assert_eq!(e.pending_client_requests(), 2);
    run_agent(&mut e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    run_agent(
        &mut e,
        "{\"id\":2,\"jsonrpc\":\"2.0\",\"error\":{\"code\":-1,\"message\":\"no\"}}\n",
    );
    assert_eq!(e.pending_client_requests(), 0);
}

#[test]
fn forwards_unchanged_and_errors_pending_on_exit() {
    let mut e = Engine::default();
    let a = run_client(
        &mut e,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n",
    );
    assert_eq!(
        a.last(),
        Some(&Action::ToAgent(Bytes::from_static(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n"
        )))
    );
    run_client(
        &mut e,
        "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"session/new\"}\n",
    );
    run_agent(&mut e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    assert_eq!(e.pending_client_requests(), 1);
    let mut out = Vec::new();
    e.agent_gone("exit status 3", &mut out);
    let [Action::ToClient(line)] = out.as_slice() else {
        panic!("{out:?}")
    };
    let v: serde_json::Value = serde_json::from_slice(line).expect("json");
    assert_eq!(v["id"], "s");
    assert_eq!(v["error"]["code"], -32603);
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("exit status 3"));
}
