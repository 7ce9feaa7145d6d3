use super::*;
use crate::wire::line_body;

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

/// A frame read once gives the envelope `envelope::parse` gives, and, when it gives a view,
/// the view `RequestView::read` gives. Returns whether it gave a view.
fn check_once(text: &str) -> bool {
    let (parsed, view) = RequestView::read_message(text.as_bytes());
    let apart = envelope::parse(text.as_bytes());
    assert_eq!(format!("{parsed:?}"), format!("{apart:?}"), "{text}");
    if let Some(view) = &view {
        assert_eq!(
            Some(view),
            RequestView::read(line_body(text.as_bytes())).as_ref(),
            "{text}"
        );
    }
    view.is_some()
}

#[test]
fn reads_a_request_once_as_it_reads_it_twice() {
    for text in [
        r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1","rawInput":{"content":"a\nb \"q\" \u00e9"},"title":"Write `a`"},"options":[]}}"#,
        // Params before the method, escapes in values, `null` and absent params.
        r#"{"params":{"toolCall":{"title":null,"toolCallId":"t\u0031"},"sessionId":"s\"2"},"id":3,"method":"session/request_permission"}"#,
        r#"{"id":1,"method":"m\u0065","params":null}"#,
        r#"{"id":1,"method":"x"}"#,
        r#"{"id":1,"result":{"sessionId":"s"}}"#,
        "{\"id\":1,\"method\":\"x\",\"params\":{\"sessionId\":\"s\"}}\r\n",
    ] {
        assert!(check_once(text), "one pass should read {text}");
    }
    let (_, view) = RequestView::read_message(
        br#"{"params":{"toolCall":{"toolCallId":"t\u0031"},"sessionId":"s\"2"},"id":3,"method":"session/request_permission"}"#,
    );
    let params = view.and_then(|v| v.params).expect("params read");
    assert_eq!(params.session_id.as_deref(), Some("s\"2"));
    assert_eq!(
        params.head.and_then(|h| h.tool_call_id).as_deref(),
        Some("t1")
    );
}

#[test]
fn leaves_the_view_of_an_unusual_request_to_be_read_apart() {
    for text in [
        // An escaped key (serde_json reads the envelope), a repeated key inside params or at
        // the top, params of another shape, a repeated id after params were read.
        r#"{"id":1,"m\u0065thod":"x","params":{"sessionId":"s"}}"#,
        r#"{"id":1,"method":"x","params":{"sessionId":"a","sessionId":"b"}}"#,
        r#"{"id":1,"method":"x","params":{"toolCall":{"title":"a","title":"b"}}}"#,
        r#"{"id":1,"method":"x","params":["s"]}"#,
        r#"{"id":1,"method":"x","params":{"sessionId":"s"},"id":2}"#,
        r#"{"id":1,"method":"x","params":{"sessionId":"s"}} x"#,
        "not json",
    ] {
        assert!(!check_once(text), "one pass should not read {text}");
    }
}

/// Every frame of the captures reads the same once as apart.
#[test]
fn reads_every_frame_of_the_captures_once_as_apart() {
    let mut viewed = 0;
    for (_, frame) in crate::wire::captures::frames() {
        viewed += usize::from(check_once(&frame));
    }
    assert!(viewed > 1000, "only {viewed} frames read in one pass");
}
