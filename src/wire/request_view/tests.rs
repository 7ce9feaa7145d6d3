use super::*;

/// The walk agrees with serde_json whenever it answers, and refuses what serde_json refuses.
fn check(text: &str) -> bool {
    let fast = RequestView::walk(text);
    match (&fast, RequestView::by_serde(text.as_bytes())) {
        (Some(f), Some(o)) => assert_eq!(f, &o, "{text}"),
        (Some(f), None) => panic!("the walk read what serde_json refuses: {text}: {f:?}"),
        (None, _) => {}
    }
    fast.is_some()
}

#[test]
fn reads_permission_requests_and_elicitations_as_serde_json_does() {
    for text in [
        r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1","rawInput":{"content":"a\nb \"q\" \u00e9"},"title":"Write `a`","kind":"edit","content":[]},"options":[{"kind":"allow_once","name":"Allow","optionId":"allow"}]}}"#,
        r#"{"id":3,"method":"session/request_permission","params":{"toolCall":{"title":null,"toolCallId":"t\u0031"},"sessionId":"s\"2"}}"#,
        r#"{"method":"elicitation/create","id":4,"params":{"sessionId":"s","toolCallId":"t","mode":"url","url":"https://example.com/x"}}"#,
        r#"{"method":"x","id":5}"#,
        r#"{"method":null,"id":5,"params":null}"#,
        r#"{"method":"x","id":5,"params":{"toolCall":"not an object"}}"#,
        r#"{"method":"x","id":5,"params":{"toolCall":{"title":1}}}"#,
        r#"{"method":"x","id":5,"params":{"toolCall":[1,{"a":[]}],"mode":"form"}}  "#,
        r#"  {"method":"x","params":{"sessionId":null,"toolCall":null}}"#,
    ] {
        assert!(check(text), "the walk should read {text}");
    }
}

#[test]
fn leaves_the_unusual_to_serde_json() {
    for text in [
        // Escaped keys, repeated fields, other types, positional params, trailing bytes,
        // invalid JSON, a repeated key inside the tool call.
        r#"{"m\u0065thod":"x","params":{}}"#,
        r#"{"method":"x","method":"y"}"#,
        r#"{"method":"x","params":{"sessionId":"a","sessionId":"b"}}"#,
        r#"{"method":"x","params":{"sessionId":1}}"#,
        r#"{"method":"x","params":["s"]}"#,
        r#"{"method":"x"} x"#,
        r#"{"method":"x","params":{"toolCall":{"a":tru}}}"#,
        r#"{"method":"x","params":{"toolCall":{"title":"a","title":"b"}}}"#,
        r#"{"method":"x","params":{"toolCall":{"t\u0069tle":"a"}}}"#,
        r#"{"method":"x","id":5,"params":{"toolCall":{"toolCallId":7,"title":"t"}}}"#,
        r#"[{"method":"x"}]"#,
    ] {
        assert!(!check(text), "the walk should leave {text} to serde_json");
    }
}

/// Every agent request of the captures reads the same both ways.
#[test]
fn agrees_on_every_request_of_the_captures() {
    let mut read = 0;
    for (path, frame) in crate::wire::captures::frames() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&frame) else {
            continue;
        };
        if msg.get("method").is_some() && msg.get("id").is_some() {
            assert!(check(&frame), "{}: {frame}", path.display());
            read += 1;
        }
    }
    assert!(read > 50, "only {read} requests in the captures");
}
