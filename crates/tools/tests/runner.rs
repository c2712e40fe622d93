//! Tests of ToolRunner: errors before a tool runs, permission rules and
//! approval, redaction of results, and the audit log.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a failed setup must stop the test"
)]

use bridge_policy::{AuditLog, PermissionRules};
use bridge_protocol::ToolEffect;
use bridge_testkit::TempWorkspace;
use bridge_tools::{ToolRegistry, ToolSettings};
use serde_json::{Value, json};

use crate::common::{FixedApprover, runner, runner_with};

/// Every audit line written under `dir`, parsed.
pub(crate) fn audit_entries(dir: &std::path::Path) -> Vec<Value> {
    // The log's writer thread writes behind the call: wait for it.
    bridge_policy::audit::flush_all().unwrap();
    let mut entries = Vec::new();
    for file in std::fs::read_dir(dir).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                entries.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    entries
}

fn fake_token() -> String {
    format!("ghp_{}", "a".repeat(36))
}

#[tokio::test]
async fn an_unknown_tool_is_an_unknown_tool_error() {
    let ws = TempWorkspace::new();
    let err = runner(&ws, false)
        .call("launch_missiles", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "unknown_tool");
    assert!(err.to_string().contains("launch_missiles"), "{err}");
}

#[tokio::test]
async fn arguments_must_be_a_json_object() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "a\n");
    let runner = runner(&ws, false);
    for (args, kind) in [
        (json!(["a.txt"]), "an array"),
        (json!("a.txt"), "a string"),
        (json!(7), "a number"),
    ] {
        let err = runner.call("create_file", args).await.unwrap_err();
        assert_eq!(err.code, "invalid_arguments");
        assert!(err.to_string().contains("must be a JSON object"), "{err}");
        assert!(err.to_string().contains(kind), "{err}");
    }
    // No arguments at all (null) is an empty object: the tool names what
    // is missing.
    let err = runner.call("create_file", Value::Null).await.unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.to_string().contains("missing field `path`"), "{err}");
    assert_eq!(ws.read("a.txt"), "a\n");
}

#[tokio::test]
async fn every_call_writes_one_audit_entry_with_its_decision() {
    let ws = TempWorkspace::new();
    let audit_dir = tempfile::tempdir().unwrap();
    let runner = runner(&ws, false).with_audit(AuditLog::new(audit_dir.path()), "session-42");

    runner
        .call(
            "create_file",
            json!({"path": "made.txt", "content": "hi\n"}),
        )
        .await
        .unwrap();
    runner
        .call(
            "create_file",
            json!({"path": "../escape.txt", "content": "x"}),
        )
        .await
        .unwrap_err();

    let entries = audit_entries(audit_dir.path());
    assert_eq!(entries.len(), 2, "{entries:?}");
    let allowed = entries
        .iter()
        .find(|entry| entry["input"]["path"] == "made.txt")
        .unwrap();
    assert_eq!(allowed["tool"], "create_file");
    assert_eq!(allowed["sessionId"], "session-42");
    assert_eq!(allowed["hook"], "toolCall:cli");
    assert_eq!(allowed["decision"], "allow");
    assert_eq!(allowed["output"]["created"], true);
    assert!(allowed["elapsedMs"].is_u64());
    assert!(allowed["timestamp"].as_str().unwrap().ends_with('Z'));

    let denied = entries
        .iter()
        .find(|entry| entry["input"]["path"] == "../escape.txt")
        .unwrap();
    assert_eq!(denied["decision"], "deny");
    assert_eq!(denied["output"]["error"]["code"], "policy_denied");
}

#[tokio::test]
async fn secrets_in_results_are_redacted_in_the_answer_and_the_audit_log() {
    let ws = TempWorkspace::new();
    ws.write(".agent-policy.yaml", "shell:\n  allow: [\"cat\"]\n");
    let token = fake_token();
    ws.write("leaky.env", format!("TOKEN={token}\n"));
    let audit_dir = tempfile::tempdir().unwrap();
    let runner = runner(&ws, false).with_audit(AuditLog::new(audit_dir.path()), "s");

    let result = runner
        .call("shell", json!({"command": "cat leaky.env"}))
        .await
        .unwrap();

    let stdout = result["stdout"].as_str().unwrap();
    assert!(!stdout.contains(&token), "{stdout}");
    assert!(stdout.contains("[REDACTED]"), "{stdout}");
    let audit = serde_json::to_string(&audit_entries(audit_dir.path())).unwrap();
    assert!(!audit.contains(&token), "{audit}");
}

#[tokio::test]
async fn blocked_tools_never_run() {
    let ws = TempWorkspace::new();
    let rules = PermissionRules {
        blocked_tools: vec!["create_file".to_owned()],
        ..PermissionRules::default()
    };
    let err = runner_with(&ws, false, ToolSettings::default(), rules)
        .call("create_file", json!({"path": "a.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert!(!ws.path().join("a.txt").exists());
}

#[tokio::test]
async fn ask_tools_run_only_when_approved() {
    let ws = TempWorkspace::new();
    let rules = PermissionRules {
        ask_tools: vec!["create_file".to_owned()],
        ..PermissionRules::default()
    };
    let base = runner_with(&ws, false, ToolSettings::default(), rules);

    let refused = base
        .call("create_file", json!({"path": "a.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, "policy_denied");
    assert!(
        refused.to_string().contains("approval required"),
        "{refused}"
    );
    assert!(!ws.path().join("a.txt").exists());

    let no = FixedApprover::new(false);
    let err = base
        .clone()
        .with_approver(no.clone())
        .call("create_file", json!({"path": "a.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert!(err.message.starts_with("denied by cli"), "{err}");
    let asks = no.asks();
    assert_eq!(asks.len(), 1);
    assert_eq!(asks[0].tool, "create_file");
    // A file tool is granted per file.
    assert_eq!(
        asks[0].keys,
        Some(vec![bridge_policy::GrantKey::File {
            tool: "create_file".into(),
            path: "a.txt".into()
        }])
    );

    let yes = FixedApprover::new(true);
    base.with_approver(yes.clone())
        .call("create_file", json!({"path": "a.txt", "content": "x"}))
        .await
        .unwrap();
    assert_eq!(yes.asks().len(), 1);
    assert_eq!(ws.read("a.txt"), "x");
}

#[test]
fn the_write_and_execute_tools_have_strict_schemas_and_effects() {
    let registry = ToolRegistry::builtin();
    let expected = [
        ("create_file", ToolEffect::Write, vec!["path", "content"]),
        (
            "edit_file",
            ToolEffect::Write,
            vec!["path", "oldString", "newString"],
        ),
        ("apply_patch", ToolEffect::Write, vec!["unifiedDiff"]),
        ("format", ToolEffect::Write, vec!["path"]),
        ("organize_imports", ToolEffect::Write, vec!["path"]),
        ("shell", ToolEffect::Execute, vec!["command"]),
        ("run_task", ToolEffect::Execute, vec!["name"]),
    ];
    for (name, effect, required) in expected {
        let tool = registry
            .get(name)
            .unwrap_or_else(|| panic!("{name} is registered"));
        let spec = tool.spec();
        assert_eq!(spec.effect, effect, "{name}");
        assert!(!spec.description.is_empty());
        let schema = &spec.input_schema;
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        assert_eq!(schema["required"], json!(required), "{name}");
        for key in schema["required"].as_array().unwrap() {
            assert!(
                schema["properties"].get(key.as_str().unwrap()).is_some(),
                "{name}: {key} has no property"
            );
        }
    }
}

#[tokio::test]
async fn no_tool_runs_when_the_audit_log_cannot_be_written() {
    let ws = TempWorkspace::new();
    // A file where the audit directory should be: nothing can be created there.
    let blocker = ws.write("not-a-dir", "x");
    let runner = runner(&ws, false).with_audit(AuditLog::new(blocker.join("audit")), "s1");
    let err = runner
        .call("create_file", json!({"path": "new.txt", "content": "hi"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert!(err.to_string().contains("audit log"), "{err}");
    assert!(
        !ws.path().join("new.txt").exists(),
        "the write must not happen"
    );
}

#[tokio::test]
async fn errors_are_redacted_like_results() {
    let ws = TempWorkspace::new();
    let token = fake_token();
    // A task whose failure output quotes a secret, as a compiler quoting a
    // source line would.
    let settings = ToolSettings {
        formatters: [(
            "rs".to_owned(),
            vec![
                "sh".to_owned(),
                "-c".to_owned(),
                "cat \"$0\" >&2; exit 1".to_owned(),
                "{file}".to_owned(),
            ],
        )]
        .into_iter()
        .collect(),
        ..ToolSettings::default()
    };
    ws.write("bad.rs", format!("let t = \"{token}\" +++ ;\n"));
    let runner = runner_with(&ws, false, settings, PermissionRules::default());
    let err = runner
        .call("format", json!({"path": "bad.rs"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "failed", "{err}");
    let shown = format!("{err} {}", serde_json::to_value(&err).unwrap());
    assert!(
        shown.contains("+++"),
        "the error still says what failed: {shown}"
    );
    assert!(!shown.contains(&token), "{shown}");
}

#[tokio::test]
async fn huge_inputs_quoted_by_errors_are_cut_everywhere() {
    let ws = TempWorkspace::new();
    let audit_dir = tempfile::TempDir::new().unwrap();
    let runner = runner(&ws, false).with_audit(AuditLog::new(audit_dir.path()), "s1");
    // An invalid regex of 2 MB: the error quotes the pattern.
    let pattern = format!("({}", "x".repeat(2 * 1024 * 1024));
    let err = runner
        .call("search_code", json!({"query": pattern, "regex": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    let message = err.to_string();
    assert!(
        message.len() < bridge_tools::MAX_ERROR_TEXT_CHARS * 4 + 200,
        "{} bytes",
        message.len()
    );
    assert!(message.contains("more bytes]"), "says it was cut");
    bridge_policy::audit::flush_all().unwrap();
    let audit_bytes: u64 = std::fs::read_dir(audit_dir.path())
        .unwrap()
        .map(|f| f.unwrap().metadata().unwrap().len())
        .sum();
    assert!(
        audit_bytes < 64 * 1024,
        "audit entry is {audit_bytes} bytes"
    );
}
