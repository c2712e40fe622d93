//! Tests of guard: the permission rules, path containment and the workspace
//! policy file working together on a real workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_policy::workspace_policy::POLICY_FILE_NAME;
use bridge_policy::{Guard, PermissionPolicy, PermissionRules, WorkspacePolicy, WorkspaceRoot};
use bridge_protocol::DecisionKind;
use bridge_testkit::TempWorkspace;
use serde_json::json;

fn guard(ws: &TempWorkspace, rules: PermissionRules, read_only: bool) -> Guard {
    let root = WorkspaceRoot::new(ws.path()).expect("root");
    let permission = PermissionPolicy::compile(&rules).expect("rules");
    let workspace = WorkspacePolicy::load(ws.path()).expect("policy file");
    Guard::new(root, permission, workspace, read_only)
}

fn reason(decision: &bridge_protocol::Decision) -> String {
    decision.reason.clone().unwrap_or_default()
}

#[test]
fn check_call_denies_a_blocked_tool_before_looking_at_paths() {
    let ws = TempWorkspace::new();
    let rules = PermissionRules {
        blocked_tools: vec!["delete_file".to_owned()],
        ..Default::default()
    };
    let guard = guard(&ws, rules, false);
    let decision = guard.check_call("delete_file", &json!({"path": "ok.txt"}));
    assert!(decision.is_deny());
    assert!(reason(&decision).contains("blocked_tools"), "{decision:?}");
    assert!(
        guard
            .check_call("read_file", &json!({"path": "ok.txt"}))
            .is_allow()
    );
}

#[test]
fn check_call_denies_a_path_escape_in_arguments() {
    let ws = TempWorkspace::new();
    let guard = guard(&ws, PermissionRules::default(), false);
    let decision = guard.check_call(
        "apply_edits",
        &json!({"edits": [{"filePath": "src/a.rs"}, {"filePath": "../../etc/passwd"}]}),
    );
    assert!(decision.is_deny());
    assert!(
        reason(&decision).contains("outside the workspace"),
        "{decision:?}"
    );
}

#[cfg(unix)]
#[test]
fn check_call_denies_a_symlink_escape_in_arguments() {
    let ws = TempWorkspace::new();
    ws.symlink("/etc", "etc-link");
    let guard = guard(&ws, PermissionRules::default(), false);
    let decision = guard.check_call("read_file", &json!({"path": "etc-link/passwd"}));
    assert!(decision.is_deny());
    assert!(reason(&decision).contains("symlink"), "{decision:?}");
}

#[test]
fn check_call_keeps_ask_verdict_of_permission_rules() {
    let ws = TempWorkspace::new();
    let rules = PermissionRules {
        ask_tools: vec!["write_file".to_owned()],
        ..Default::default()
    };
    let guard = guard(&ws, rules, false);
    assert_eq!(
        guard
            .check_call("write_file", &json!({"path": "a"}))
            .decision,
        DecisionKind::Ask
    );
}

#[test]
fn resolve_write_under_read_only_without_policy_is_denied() {
    let ws = TempWorkspace::new();
    let guard = guard(&ws, PermissionRules::default(), true);
    let denied = guard.resolve_write("src/main.rs").unwrap_err();
    assert!(reason(&denied).contains("read-only"), "{denied:?}");
    // Reading is still fine.
    assert_eq!(
        guard.resolve_read("src/main.rs").unwrap(),
        ws.path().join("src/main.rs")
    );
}

#[test]
fn resolve_write_under_read_only_with_allow_glob_is_allowed_for_matches_only() {
    let ws = TempWorkspace::new();
    ws.write(POLICY_FILE_NAME, "writes:\n  allow: [\"src/**\"]\n");
    let guard = guard(&ws, PermissionRules::default(), true);
    assert_eq!(
        guard.resolve_write("src/deep/main.rs").unwrap(),
        ws.path().join("src/deep/main.rs")
    );
    let denied = guard.resolve_write("README.md").unwrap_err();
    assert!(reason(&denied).contains("writes.allow"), "{denied:?}");
}

#[test]
fn resolve_write_deny_glob_beats_allow_glob() {
    let ws = TempWorkspace::new();
    ws.write(
        POLICY_FILE_NAME,
        "writes:\n  allow: [\"src/**\"]\n  deny: [\"src/generated/**\"]\n",
    );
    let guard = guard(&ws, PermissionRules::default(), false);
    assert!(guard.resolve_write("src/lib.rs").is_ok());
    let denied = guard.resolve_write("src/generated/api.rs").unwrap_err();
    assert!(reason(&denied).contains("writes.deny"), "{denied:?}");
}

#[test]
fn resolve_write_checks_containment_before_policy() {
    let ws = TempWorkspace::new();
    ws.write(POLICY_FILE_NAME, "writes:\n  allow: [\"**\"]\n");
    let guard = guard(&ws, PermissionRules::default(), false);
    let denied = guard.resolve_write("../outside.txt").unwrap_err();
    assert!(
        reason(&denied).contains("outside the workspace"),
        "{denied:?}"
    );
}

#[cfg(unix)]
#[test]
fn resolve_write_judges_the_real_path_behind_a_symlink() {
    let ws = TempWorkspace::new();
    ws.write(
        POLICY_FILE_NAME,
        "writes:\n  allow: [\"src/**\"]\n  deny: [\"vendor/**\"]\n",
    );
    ws.mkdir("vendor");
    // An allowed-looking path that really lands in a denied directory.
    ws.symlink(ws.path().join("vendor"), "src/v");
    let guard = guard(&ws, PermissionRules::default(), false);
    let denied = guard.resolve_write("src/v/lib.rs").unwrap_err();
    assert!(reason(&denied).contains("writes.deny"), "{denied:?}");
}

#[test]
fn the_policy_file_cannot_be_rewritten_through_the_guard() {
    let ws = TempWorkspace::new();
    ws.write(POLICY_FILE_NAME, "writes:\n  allow: [\"**\"]\n");
    let guard = guard(&ws, PermissionRules::default(), false);
    assert!(guard.resolve_write(POLICY_FILE_NAME).is_err());
    assert!(guard.resolve_write("./sub/../.agent-policy.yaml").is_err());
}

#[test]
fn approval_never_lifts_path_containment() {
    let ws = bridge_testkit::TempWorkspace::new();
    let rules = bridge_policy::PermissionRules {
        ask_tools: vec!["read_file".to_owned()],
        ..Default::default()
    };
    let guard = bridge_policy::Guard::new(
        bridge_policy::WorkspaceRoot::new(ws.path()).unwrap(),
        bridge_policy::PermissionPolicy::compile(&rules).unwrap(),
        bridge_policy::WorkspacePolicy::default(),
        false,
    );
    let inside = guard.check_call("read_file", &serde_json::json!({"path": "a.txt"}));
    assert_eq!(inside.decision, bridge_protocol::DecisionKind::Ask);
    let outside = guard.check_call("read_file", &serde_json::json!({"path": "../a.txt"}));
    assert!(outside.is_deny(), "{outside:?}");
}
