//! Tests of permission: rule order, globs, hostile patterns.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_policy::{PermissionPolicy, PermissionRules, PolicyError};
use bridge_protocol::DecisionKind;
use serde_json::json;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn compile(rules: PermissionRules) -> PermissionPolicy {
    PermissionPolicy::compile(&rules).expect("rules compile")
}

fn reason(decision: &bridge_protocol::Decision) -> String {
    decision.reason.clone().unwrap_or_default()
}

#[test]
fn no_rules_allow_everything() {
    let policy = compile(PermissionRules::default());
    assert!(policy.evaluate("anything", &json!({})).is_allow());
}

#[test]
fn blocked_tool_is_denied_and_others_pass() {
    let policy = compile(PermissionRules {
        blocked_tools: strings(&["shell"]),
        ..Default::default()
    });
    let decision = policy.evaluate("shell", &json!({"command": "ls"}));
    assert!(decision.is_deny());
    assert!(
        reason(&decision).contains("permissions.blocked_tools"),
        "{decision:?}"
    );
    assert!(policy.evaluate("read_file", &json!({})).is_allow());
    // Exact names are exact: no prefix or case folding.
    assert!(policy.evaluate("shell2", &json!({})).is_allow());
    assert!(policy.evaluate("Shel", &json!({})).is_allow());
}

#[test]
fn blocked_tool_globs_match_families() {
    let policy = compile(PermissionRules {
        blocked_tools: strings(&["github__*"]),
        ..Default::default()
    });
    let decision = policy.evaluate("github__delete_repo", &json!({}));
    assert!(decision.is_deny());
    assert!(reason(&decision).contains("github__*"), "{decision:?}");
    assert!(
        policy
            .evaluate("gitlab__delete_repo", &json!({}))
            .is_allow()
    );
    assert!(policy.evaluate("my_github__x", &json!({})).is_allow());
}

#[test]
fn blocked_pattern_is_matched_against_serialized_arguments() {
    let policy = compile(PermissionRules {
        blocked_patterns: strings(&[r"rm\s+-rf", r"\.env\b"]),
        ..Default::default()
    });
    let decision = policy.evaluate("shell", &json!({"command": "rm  -rf /"}));
    assert!(decision.is_deny());
    assert!(
        reason(&decision).contains("permissions.blocked_patterns[0]"),
        "{decision:?}"
    );
    let decision = policy.evaluate("read_file", &json!({"nested": [{"path": "a/.env"}]}));
    assert!(
        reason(&decision).contains("permissions.blocked_patterns[1]"),
        "{decision:?}"
    );
    assert!(
        policy
            .evaluate("shell", &json!({"command": "ls -la"}))
            .is_allow()
    );
}

#[test]
fn blocked_pattern_sees_keys_too() {
    // The whole JSON text is matched, keys included, as the rule promises.
    let policy = compile(PermissionRules {
        blocked_patterns: strings(&[r#""force":true"#]),
        ..Default::default()
    });
    assert!(policy.evaluate("push", &json!({"force": true})).is_deny());
    assert!(policy.evaluate("push", &json!({"force": false})).is_allow());
}

#[test]
fn ask_tools_need_approval() {
    let policy = compile(PermissionRules {
        ask_tools: strings(&["write_file", "deploy_*"]),
        ..Default::default()
    });
    let decision = policy.evaluate("write_file", &json!({}));
    assert_eq!(decision.decision, DecisionKind::Ask);
    assert!(
        reason(&decision).contains("permissions.ask_tools"),
        "{decision:?}"
    );
    assert_eq!(
        policy.evaluate("deploy_prod", &json!({})).decision,
        DecisionKind::Ask
    );
    assert!(policy.evaluate("read_file", &json!({})).is_allow());
}

#[test]
fn allowlist_denies_everything_not_listed() {
    let policy = compile(PermissionRules {
        allowed_tools: strings(&["read_file", "search_*"]),
        ..Default::default()
    });
    assert!(policy.evaluate("read_file", &json!({})).is_allow());
    assert!(policy.evaluate("search_text", &json!({})).is_allow());
    let decision = policy.evaluate("write_file", &json!({}));
    assert!(decision.is_deny());
    assert!(
        reason(&decision).contains("permissions.allowed_tools"),
        "{decision:?}"
    );
}

#[test]
fn blocked_beats_allowed() {
    let policy = compile(PermissionRules {
        allowed_tools: strings(&["shell"]),
        blocked_tools: strings(&["shell"]),
        ..Default::default()
    });
    assert!(policy.evaluate("shell", &json!({})).is_deny());
}

#[test]
fn blocked_pattern_beats_ask() {
    let policy = compile(PermissionRules {
        ask_tools: strings(&["shell"]),
        blocked_patterns: strings(&["sudo"]),
        ..Default::default()
    });
    assert!(
        policy
            .evaluate("shell", &json!({"command": "sudo reboot"}))
            .is_deny()
    );
    assert_eq!(
        policy.evaluate("shell", &json!({"command": "ls"})).decision,
        DecisionKind::Ask
    );
}

#[test]
fn ask_beats_allowlist() {
    let policy = compile(PermissionRules {
        allowed_tools: strings(&["read_file"]),
        ask_tools: strings(&["shell"]),
        ..Default::default()
    });
    // Not on the allowlist, but ask comes first: the user may still approve.
    assert_eq!(
        policy.evaluate("shell", &json!({})).decision,
        DecisionKind::Ask
    );
    assert!(policy.evaluate("write_file", &json!({})).is_deny());
}

#[test]
fn invalid_pattern_is_a_clear_configuration_error() {
    let err = PermissionPolicy::compile(&PermissionRules {
        blocked_patterns: strings(&["fine", "(unclosed"]),
        ..Default::default()
    })
    .unwrap_err();
    match &err {
        PolicyError::InvalidPattern { key, pattern, .. } => {
            assert_eq!(key, "permissions.blocked_patterns[1]");
            assert_eq!(pattern, "(unclosed");
        }
        other => panic!("expected InvalidPattern, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("permissions.blocked_patterns[1]") && message.contains("unclosed"),
        "{message}"
    );
}

#[test]
fn giant_pattern_is_rejected_not_compiled() {
    // Small to write, huge once compiled: a memory-exhaustion attempt.
    let err = PermissionPolicy::compile(&PermissionRules {
        blocked_patterns: strings(&[r"\w{1000}{1000}"]),
        ..Default::default()
    })
    .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("permissions.blocked_patterns[0]"),
        "{message}"
    );
    assert!(message.contains("size limit"), "{message}");
}

#[test]
fn invalid_tool_glob_is_rejected_naming_the_key() {
    let err = PermissionPolicy::compile(&PermissionRules {
        ask_tools: strings(&["ok", "bad[glob"]),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("permissions.ask_tools[1]"),
        "{err}"
    );
    let err = PermissionPolicy::compile(&PermissionRules {
        blocked_tools: strings(&[""]),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("permissions.blocked_tools[0]"),
        "{err}"
    );
}

#[test]
fn rules_deserialize_from_config_and_reject_unknown_keys() {
    let rules: PermissionRules =
        serde_json::from_value(json!({"blocked_tools": ["shell"], "ask_tools": ["x"]})).unwrap();
    assert_eq!(rules.blocked_tools, vec!["shell"]);
    assert!(serde_json::from_value::<PermissionRules>(json!({"blocked_tool": ["x"]})).is_err());
}
