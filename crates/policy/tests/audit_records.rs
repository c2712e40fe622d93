//! Tests of redacted records: what `Redacted` and `redact_result` make is
//! what the log would have written had it redacted the raw value itself,
//! so the log can take them without a second pass.

use bridge_policy::audit::{AUDIT_MAX_STRING_BYTES, Redacted, redact_result, summarize_for_audit};
use bridge_policy::redact::redact_value;
use bridge_policy::{AuditEntry, AuditLog};
use serde_json::{Value, json};

use crate::audit::{read_lines, token};

/// Values a tool call records: secrets in short and long strings, in keys,
/// under secret-naming keys, around the cut, in long arrays.
fn corpus() -> Vec<Value> {
    let secret = token('r');
    let around_cut = format!(
        "{} {secret} and more",
        "x".repeat(AUDIT_MAX_STRING_BYTES - 12)
    );
    vec![
        json!({}),
        json!({"path": "src/main.rs", "line": 3}),
        json!({"command": format!("curl -H 'Authorization: Bearer {secret}' x")}),
        json!({"password": "hunter2", "apiKey": secret, "nested": {"token": [secret]}}),
        json!({ secret.clone(): "a key that is a secret" }),
        json!({ "stdout": around_cut }),
        json!({ "hits": (0..250).map(|i| json!({"snippet": format!("token={secret}{i}")})).collect::<Vec<_>>() }),
        json!(["plain", format!("x-api-key: {secret}"), null, true, 1.5]),
    ]
}

fn entry<T>(tool: &str, input: T, output: T) -> AuditEntry<T> {
    AuditEntry {
        timestamp: "2025-07-08T09:10:11.000Z".to_owned(),
        session_id: "session-1".to_owned(),
        hook: "toolCall:rpc".to_owned(),
        tool: tool.to_owned(),
        input,
        output,
        decision: "allow".to_owned(),
        elapsed_ms: 1,
        approval: None,
    }
}

#[test]
fn a_redacted_record_is_written_as_the_log_would_have_redacted_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let values = corpus();
    for value in &values {
        let record = Redacted::record_of(value);
        // What the log writes after redacting everything itself...
        log.append_owned(entry(
            "redacted-by-the-log",
            record.as_value().clone(),
            record.as_value().clone(),
        ))
        .unwrap();
        // ...and what it writes when told the records are redacted.
        log.append_redacted(entry("taken-as-is", record.clone(), record))
            .unwrap();
    }
    // The short fields are still the log's to redact.
    let secret_tool = token('t');
    log.append_redacted(entry(
        &secret_tool,
        Redacted::new(json!({})),
        Redacted::new(json!({})),
    ))
    .unwrap();
    log.flush().unwrap();
    let day = chrono::NaiveDate::from_ymd_opt(2025, 7, 8).unwrap();
    let text = std::fs::read_to_string(log.file_for(day)).unwrap();
    assert!(!text.contains(&token('r')), "a secret on disk");
    let lines = read_lines(&log.file_for(day));
    assert_eq!(lines.len(), values.len() * 2 + 1);
    for (index, pair) in lines[..values.len() * 2].chunks(2).enumerate() {
        assert_eq!(pair[0]["input"], pair[1]["input"], "value {index}");
        assert_eq!(pair[0]["output"], pair[1]["output"], "value {index}");
    }
    assert_eq!(lines[values.len() * 2]["tool"], "[REDACTED]");
}

#[test]
fn a_record_is_the_summary_of_the_redacted_value() {
    for value in corpus() {
        let mut redacted = value.clone();
        redact_value(&mut redacted);
        let record = Redacted::record_of(&value);
        assert_eq!(record.as_value(), &summarize_for_audit(&redacted));
        let mut again = record.as_value().clone();
        redact_value(&mut again);
        assert_eq!(record.as_value(), &again, "a record redacted twice changes");
    }
}

/// A result, its redacted self for the caller and its record, for plain
/// results and for file references, whose payload the caller gets as it
/// came and whose record redacts the payload's excerpt.
#[test]
fn a_result_is_redacted_for_its_caller_and_recorded_redacted() {
    let secret = token('p');
    // Wrapped the way MIME wraps base64, so the rule sees the token whole.
    let short_payload = format!("QUJD\n{secret}");
    let long_payload = format!(
        "{}\n{secret}",
        "QUJD".repeat(AUDIT_MAX_STRING_BYTES / 4 - 4)
    );
    let mut results: Vec<Value> = corpus();
    for payload in [&short_payload, &long_payload] {
        results.push(json!({
            "file": {"path": "out.bin", "note": format!("token={secret}")},
            "base64": payload,
            "size": 3,
        }));
    }
    for result in results {
        let mut for_caller = result.clone();
        let record = redact_result(&mut for_caller, true).unwrap();
        // The log's own reading of the caller's result, as it was before
        // records came redacted: summarize, then redact the summary.
        let mut expected = summarize_for_audit(&for_caller);
        redact_value(&mut expected);
        assert_eq!(record.as_value(), &expected, "record of {result:.100}");
        assert!(!record.as_value().to_string().contains(&secret));
        let is_file = result.get("base64").is_some();
        if is_file {
            assert_eq!(for_caller["base64"], result["base64"], "payload changed");
            assert_eq!(for_caller["file"]["note"], "token=[REDACTED]");
        } else {
            let mut redacted = result.clone();
            redact_value(&mut redacted);
            assert_eq!(for_caller, redacted);
        }
        let mut unrecorded = result.clone();
        assert!(redact_result(&mut unrecorded, false).is_none());
        assert_eq!(unrecorded, for_caller);
    }
}
