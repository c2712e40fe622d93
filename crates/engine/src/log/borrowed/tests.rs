use serde_json::json;

use super::*;
use crate::log::LoggedEvent;

/// The plain reading of `line` agrees with the full one: whatever it
/// accepts, `LoggedEvent` accepts too, with the same seq, id and folded
/// data. Returns whether the plain reading accepted it.
fn agrees(line: &[u8]) -> bool {
    let Ok(plain) = read_plain(line) else {
        return false;
    };
    let shown = String::from_utf8_lossy(line);
    let full = serde_json::from_slice::<LoggedEvent>(line)
        .unwrap_or_else(|err| panic!("accepted a line LoggedEvent refuses ({err}): {shown}"));
    assert_eq!(plain.seq, full.seq, "{shown}");
    assert_eq!(plain.id, full.id, "{shown}");
    assert_eq!(
        plain.folded,
        Folded::from_value(&full.kind, full.data),
        "{shown}"
    );
    true
}

fn line(kind: &str, data: &str) -> String {
    format!(
        r#"{{"seq":7,"id":"ev-1","parentId":"ev-0","timestamp":"2026-11-21T10:00:00.000Z","type":"{kind}","data":{data}}}"#
    )
}

const KINDS: [&str; 7] = [
    types::SESSION_START,
    types::USER_MESSAGE,
    types::ASSISTANT_MESSAGE,
    types::TOOL_EXECUTION_COMPLETE,
    types::SESSION_USAGE,
    types::HOOK_END,
    types::ASSISTANT_TURN_START,
];

/// Data of every shape the conversation's fields can take.
const DATA: [&str; 34] = [
    r#"{"content":"hello","toolRequests":[{"toolCallId":"c1","name":"read","arguments":{"path":"a"}}]}"#,
    r#"{"content":null,"toolRequests":[]}"#,
    r#"{"content":"a","content":"b"}"#,
    r#"{"content":5}"#,
    r#"{"content":{"nested":true}}"#,
    r#"{"content":"\u00e9\n\"q\""}"#,
    r#"{"toolRequests":[{"name":"no id"}]}"#,
    r#"{"toolRequests":"not a list"}"#,
    r#"{"toolRequests":[{"toolCallId":"c","name":"n","arguments":"raw"}],"toolRequests":[]}"#,
    r#"{"toolCallId":"c1","toolName":"read","success":true,"result":{"content":"the file"}}"#,
    r#"{"toolCallId":"c1","success":false,"error":{"message":"denied","code":"x"}}"#,
    r#"{"toolCallId":"c1","success":false,"error":{"message":null}}"#,
    r#"{"toolCallId":"c1","success":false}"#,
    r#"{"toolCallId":"c1","success":"yes","result":{"content":"x"}}"#,
    r#"{"toolCallId":"c1","success":true,"result":["content"]}"#,
    r#"{"toolCallId":"c1","success":true,"result":{"content":"a","content":"b"}}"#,
    r#"{"toolCallId":"c1","success":true,"result":{"content":{"a":1}}}"#,
    r#"{"toolCallId":"c1","success":true,"success":false,"result":{"content":"x"},"result":5}"#,
    r#"{"toolCallId":7}"#,
    r#"{"promptTokens":12,"completionTokens":3,"model":"m"}"#,
    r#"{"promptTokens":-1,"completionTokens":1.5}"#,
    r#"{"promptTokens":"12","completionTokens":null}"#,
    r#"{"promptTokens":12,"promptTokens":[1]}"#,
    r#"{"promptTokens":18446744073709551615,"completionTokens":18446744073709551616}"#,
    r#"{"hook":"policy","decision":"allow","detail":{"a":[1,2,{"b":null}]}}"#,
    r#"{"turn":3}"#,
    r#"[1,2,3]"#,
    r#""text""#,
    r#"null"#,
    r#"{}"#,
    r#"{"s":"\ud800x"}"#,
    r#"{"n":1e400}"#,
    r#"{"$serde_json::private::RawValue":"[1,"}"#,
    r#"{"a":{"$serde_json::private::RawValue":"1"}}"#,
];

#[test]
fn every_shape_of_data_reads_as_the_full_reading_does() {
    let mut accepted = 0;
    for kind in KINDS {
        for data in DATA {
            accepted += usize::from(agrees(line(kind, data).as_bytes()));
        }
    }
    // The usual shapes take the plain way (the test would pass vacuously
    // if it gave up on everything).
    assert!(accepted > KINDS.len() * DATA.len() / 2, "{accepted}");
    let usual = line(types::TOOL_EXECUTION_COMPLETE, DATA[9]);
    assert!(agrees(usual.as_bytes()));
}

#[test]
fn envelopes_read_as_the_full_reading_does() {
    let data = r#"{"content":"x"}"#;
    for envelope in [
        format!(r#"{{"seq":1,"id":"e1","timestamp":"t","type":"user.message","data":{data}}}"#),
        format!(
            r#"{{"seq":1,"id":"e\u0031","parentId":null,"timestamp":"t","type":"user.message","data":{data},"extra":{{"x":"\ud800"}}}}"#
        ),
        format!(
            r#"{{"seq":1,"id":"e1","parentId":"\ud800","timestamp":"t","type":"user.message","data":{data}}}"#
        ),
        format!(
            r#"{{"seq":1,"id":"e1","parentId":5,"timestamp":"t","type":"user.message","data":{data}}}"#
        ),
        r#"{"seq":1,"id":"e1","timestamp":"t","type":"user.message"}"#.to_owned(),
        format!(r#"{{"seq":1,"id":"e1","type":"user.message","data":{data}}}"#),
        format!(r#"{{"seq":-1,"id":"e1","timestamp":"t","type":"user.message","data":{data}}}"#),
        format!(r#"{{"seq":1.0,"id":"e1","timestamp":"t","type":"user.message","data":{data}}}"#),
        format!(
            r#"{{"seq":1,"seq":2,"id":"e1","timestamp":"t","type":"user.message","data":{data}}}"#
        ),
        format!(r#"{{"seq":1,"id":"e1","timestamp":"t","data":{data},"type":"user.message"}}"#),
        format!(
            r#"{{"s\u0065q":1,"id":"e1","timestamp":"t","type":"user.message","data":{data}}}"#
        ),
        format!(
            r#"{{"seq":1,"id":"e1","timestamp":"t","type":"user\u002emessage","data":{data}}}"#
        ),
        format!(r#"[1,"e1",null,"t","user.message",{data}]"#),
        format!(r#"{{"seq":1,"id":"e1","timestamp":"t","type":"user.message","data":{data}}} x"#),
        format!(r#" {{"seq":1,"id":"e1","timestamp":"t","type":"user.message","data":{data}}} "#),
        format!("{}1{}", "[".repeat(200), "]".repeat(200)),
    ] {
        agrees(envelope.as_bytes());
    }
    let nested = |depth: usize| {
        line(
            types::HOOK_END,
            &format!("{}1{}", "[".repeat(depth), "]".repeat(depth)),
        )
    };
    for depth in [10, 63, 64, 100, 126, 127, 128, 300] {
        agrees(nested(depth).as_bytes());
    }
    assert!(agrees(nested(10).as_bytes()));
}

/// Every line a byte away from real ones: the plain reading never accepts
/// what the full one refuses, nor reads it differently.
#[test]
fn lines_a_byte_off_read_as_the_full_reading_does() {
    let events = [
        (
            types::USER_MESSAGE,
            json!({"content": "fix the test \u{e9}"}),
        ),
        (
            types::ASSISTANT_MESSAGE,
            json!({"content": "reading", "toolRequests": [{"toolCallId": "c1", "name": "read_file", "arguments": {"path": "a.rs"}}]}),
        ),
        (
            types::TOOL_EXECUTION_COMPLETE,
            json!({"toolCallId": "c1", "toolName": "read_file", "success": true, "result": {"content": "fn main() {}\n"}, "durationMs": 3}),
        ),
        (
            types::TOOL_EXECUTION_COMPLETE,
            json!({"toolCallId": "c1", "success": false, "error": {"message": "denied", "code": "denied"}}),
        ),
        (
            types::SESSION_USAGE,
            json!({"model": "m", "promptTokens": 10, "completionTokens": 2}),
        ),
        (
            types::HOOK_END,
            json!({"hook": "policy", "decision": "allow", "n": [1.5, -2, null, true]}),
        ),
    ];
    let replacements = b"\"\\{}[],:0-e. an\xc3\x00";
    for (kind, data) in events {
        let event = LoggedEvent {
            seq: 3,
            id: "ev-3".into(),
            parent_id: Some("ev-2".into()),
            timestamp: "2026-11-21T10:00:00.000Z".into(),
            kind: kind.into(),
            data,
        };
        let original = serde_json::to_vec(&event).unwrap();
        assert!(agrees(&original));
        for at in 0..original.len() {
            let mut cut = original.clone();
            cut.remove(at);
            agrees(&cut);
            let mut doubled = original.clone();
            doubled.insert(at, original[at]);
            agrees(&doubled);
            for &byte in replacements {
                let mut changed = original.clone();
                changed[at] = byte;
                agrees(&changed);
            }
        }
    }
}
