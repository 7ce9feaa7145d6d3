use super::*;

fn run_agent(engine: &mut Engine, line: &str) -> Vec<Action> {
    let mut out = Vec::new();
    engine.from_agent(Bytes::copy_from_slice(line.as_bytes()), 0, &mut out);
    out
}

fn run_client(engine: &mut Engine, line: &str) -> Vec<Action> {
    let mut out = Vec::new();
    engine.from_client(Bytes::copy_from_slice(line.as_bytes()), 0, &mut out);
    out
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
