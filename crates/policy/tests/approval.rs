//! Approvals in the policy: the keys a grant is given for, the rules kept
//! per workspace, and what a caller reads when nobody allowed its call.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions: a failed setup must stop the test"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use bridge_policy::approval::grants::unix_now;
use bridge_policy::shell;
use bridge_policy::{Approval, GrantKey, RuleStore, Scope, Surface};

fn keys(command: &str) -> Option<Vec<String>> {
    let workspace = tempfile::tempdir().unwrap();
    let analysis = shell::analyze(command, workspace.path(), None);
    assert_eq!(
        analysis.verdict,
        bridge_policy::ShellVerdict::NeedsApproval,
        "{command}: {analysis:?}"
    );
    analysis.approval_keys
}

fn some(keys: &[&str]) -> Option<Vec<String>> {
    Some(keys.iter().map(|k| (*k).to_owned()).collect())
}

#[test]
fn a_command_is_keyed_by_its_program_and_subcommand_as_it_will_run() {
    assert_eq!(keys("cargo test"), some(&["cargo test"]));
    assert_eq!(
        keys("cargo test --lib -- --nocapture"),
        some(&["cargo test"])
    );
    assert_eq!(keys("cargo +nightly test"), some(&["cargo +nightly test"]));
    assert_eq!(keys("python3 -m pytest"), some(&["python3 -m pytest"]));
    assert_eq!(keys("npm run build"), some(&["npm run build"]));
    assert_eq!(keys("npm test"), some(&["npm test"]));
    assert_eq!(keys("make"), some(&["make"]));
    assert_eq!(keys("make -C sub build"), some(&["make -C sub build"]));
    assert_eq!(keys("./gradlew test --info"), some(&["./gradlew test"]));
    // A line is keyed by every command that asks; safe ones add nothing.
    assert_eq!(keys("cargo test 2>&1 | tail -n 20"), some(&["cargo test"]));
    assert_eq!(
        keys("cargo test && cargo publish"),
        some(&["cargo publish", "cargo test"])
    );
    assert_eq!(
        keys("timeout 60 cargo test"),
        some(&["cargo test", "timeout 60"])
    );
}

#[test]
fn what_no_one_command_explains_can_only_be_allowed_once() {
    assert_eq!(
        keys("FOO=1 cargo test"),
        None,
        "a variable set for the command"
    );
    assert_eq!(keys("$TOOL test"), None, "a computed program");
    assert_eq!(keys("cargo \"$SUB\""), None, "a computed subcommand");
    assert_eq!(
        keys("cargo -a -b -c -d -e -f -g test"),
        None,
        "no subcommand in sight"
    );
}

#[test]
fn the_guard_keys_a_tool_the_rules_ask_for_and_each_command_that_asks() {
    use bridge_policy::{
        Access, Guard, PermissionPolicy, PermissionRules, WorkspacePolicy, WorkspaceRoot,
    };
    let workspace = tempfile::tempdir().unwrap();
    let rules = PermissionRules {
        ask_tools: vec!["deploy".into()],
        ..PermissionRules::default()
    };
    let guard = Guard::new(
        WorkspaceRoot::new(workspace.path()).unwrap(),
        PermissionPolicy::compile(&rules).unwrap(),
        WorkspacePolicy::load(workspace.path()).unwrap(),
        false,
    );
    let run = |command: &str| Access::Run {
        command: command.into(),
        cwd: None,
    };
    assert_eq!(
        guard.grant_keys("deploy", true, &[]),
        Some(vec![GrantKey::Tool {
            tool: "deploy".into()
        }])
    );
    assert_eq!(
        guard.grant_keys("run_command", false, &[run("cargo test"), run("ls")]),
        Some(vec![GrantKey::Run {
            command: "cargo test".into()
        }])
    );
    assert_eq!(
        guard.grant_keys("run_command", false, &[run("FOO=1 make")]),
        None
    );
    assert_eq!(
        guard.grant_keys("read_file", false, &[]),
        None,
        "nothing asks"
    );
    // A file tool is granted per file, as containment resolves the path.
    std::fs::create_dir(workspace.path().join("src")).unwrap();
    let file = |tool: &str, path: &str| GrantKey::File {
        tool: tool.into(),
        path: path.into(),
    };
    assert_eq!(
        guard.grant_keys(
            "deploy",
            true,
            &[
                Access::Write("./src/../src/lib.rs".into()),
                Access::Read("notes.md".into())
            ]
        ),
        Some(vec![
            file("deploy", "notes.md"),
            file("deploy", "src/lib.rs")
        ])
    );
    assert_ne!(
        guard.grant_keys("deploy", true, &[Access::Write("Cargo.toml".into())]),
        guard.grant_keys("deploy", true, &[Access::Write("src/lib.rs".into())]),
        "another file is another grant"
    );
}

#[test]
fn a_rule_reads_back_from_its_text() {
    for key in [
        GrantKey::Run {
            command: "cargo test".into(),
        },
        GrantKey::Tool {
            tool: "github__create_issue".into(),
        },
        GrantKey::File {
            tool: "apply_patch".into(),
            path: "src/my lib.rs".into(),
        },
    ] {
        assert_eq!(GrantKey::from_rule_text(&key.rule_text()), Some(key));
    }
    assert_eq!(
        GrantKey::from_rule_text("  run   cargo    test "),
        Some(GrantKey::Run {
            command: "cargo test".into()
        })
    );
    for bad in [
        "",
        "run",
        "run  ",
        "tool a b",
        "tool a on ",
        "tool  on x",
        "allow cargo",
        "cargo test",
    ] {
        assert_eq!(GrantKey::from_rule_text(bad), None, "{bad:?}");
    }
}

fn cargo_test() -> GrantKey {
    GrantKey::Run {
        command: "cargo test".into(),
    }
}

#[test]
fn rules_are_kept_per_workspace_in_a_private_file_read_by_every_process() {
    let state = tempfile::tempdir().unwrap();
    let path = state.path().join("approval-rules.json");
    let here = Path::new("/work/here");
    let store = RuleStore::open(&path).unwrap();
    assert!(!store.grants(here, &cargo_test()));
    let kept = store
        .add(here, &[cargo_test()], None, Surface::Cli)
        .unwrap();
    assert_eq!(kept[0].rule, "run cargo test");
    assert!(store.grants(here, &cargo_test()));
    assert!(!store.grants(Path::new("/work/elsewhere"), &cargo_test()));
    assert!(!store.grants(
        here,
        &GrantKey::Run {
            command: "cargo publish".into()
        }
    ));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Another process (another store on the same file) sees it, and its
    // revocation reaches the first.
    let other = RuleStore::open(&path).unwrap();
    assert!(other.grants(here, &cargo_test()));
    std::thread::sleep(Duration::from_millis(20));
    let removed = other.revoke("run cargo test", None).unwrap();
    assert_eq!(removed.len(), 1);
    assert!(!store.grants(here, &cargo_test()));
    assert!(store.list(None).unwrap().is_empty());
}

#[test]
fn an_expired_rule_grants_nothing_and_is_not_listed() {
    let store = RuleStore::in_memory();
    let here = Path::new("/w");
    store
        .add(here, &[cargo_test()], Some(unix_now() - 1), Surface::Rpc)
        .unwrap();
    assert!(!store.grants(here, &cargo_test()));
    assert!(store.list(Some(here)).unwrap().is_empty());
    store
        .add(here, &[cargo_test()], Some(unix_now() + 3600), Surface::Rpc)
        .unwrap();
    assert!(store.grants(here, &cargo_test()));
    assert_eq!(
        store.list(Some(here)).unwrap().len(),
        1,
        "replaced, not added"
    );
}

#[test]
fn a_rule_file_that_is_not_ours_or_not_rules_grants_nothing() {
    let state = tempfile::tempdir().unwrap();
    let path = state.path().join("approval-rules.json");
    std::fs::write(&path, "not json").unwrap();
    let err = RuleStore::open(&path).unwrap_err().to_string();
    assert!(err.contains("approval-rules.json"), "{err}");
    std::fs::remove_file(&path).unwrap();
    let elsewhere = state.path().join("planted.json");
    std::fs::write(&elsewhere, r#"{"rules": []}"#).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert!(
        RuleStore::open(&path).is_err(),
        "a planted symlink is refused"
    );
}

#[test]
fn the_caller_reads_what_became_of_its_question() {
    let reason = "command needs approval (cargo)";
    assert_eq!(
        Approval::Unanswerable.refusal(reason),
        "approval required and not given: command needs approval (cargo)",
        "nobody to ask: the words callers always had"
    );
    let timed_out = Approval::TimedOut {
        waited: Duration::from_secs(120),
    };
    assert!(
        timed_out
            .refusal(reason)
            .starts_with("approval_timeout: no answer within 120 s")
    );
    let denied = Approval::Denied {
        surface: Surface::Cli,
        reason: Some("not now".into()),
        waited: Duration::from_millis(5),
    };
    assert_eq!(denied.refusal(reason), "denied by cli: not now");
    let record = denied.record();
    assert_eq!(record["answer"], "deny");
    assert_eq!(record["surface"], "cli");
    let allowed = Approval::Allowed {
        scope: Scope::Session,
        surface: Surface::Rpc,
        waited: Duration::from_millis(1500),
    };
    let record = allowed.record();
    assert_eq!(
        (record["answer"].as_str(), record["scope"].as_str()),
        (Some("allow"), Some("session"))
    );
    assert_eq!(record["waitedMs"], 1500);
    assert_eq!(timed_out.record()["answer"], "approval_timeout");
}
