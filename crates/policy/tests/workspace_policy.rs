//! Tests of workspace_policy: the `.agent-policy.yaml` file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_policy::PolicyError;
use bridge_policy::WorkspacePolicy;
use bridge_policy::workspace_policy::{MAX_POLICY_FILE_BYTES, POLICY_FILE_NAME};
use bridge_testkit::TempWorkspace;

const SPEC_EXAMPLE: &str = r#"
writes:
  allow: ["src/**/*.ts", "test/**/*.ts"]
  deny:  ["**/node_modules/**", "**/dist/**"]
shell:
  allow: ["npm test", "dotnet test"]
"#;

fn policy(text: &str) -> WorkspacePolicy {
    WorkspacePolicy::from_yaml(text, "test.yaml").expect("valid policy")
}

fn invalid_reason(text: &str) -> String {
    match WorkspacePolicy::from_yaml(text, "/ws/.agent-policy.yaml") {
        Err(err @ PolicyError::InvalidPolicyFile { .. }) => {
            let message = err.to_string();
            assert!(message.contains("/ws/.agent-policy.yaml"), "{message}");
            message
        }
        other => panic!("expected InvalidPolicyFile, got {other:?}"),
    }
}

fn reason(decision: &bridge_protocol::Decision) -> &str {
    decision.reason.as_deref().unwrap_or("")
}

#[test]
fn missing_file_is_the_empty_policy() {
    let ws = TempWorkspace::new();
    let loaded = WorkspacePolicy::load(ws.path()).expect("missing file is fine");
    assert!(loaded.write_decision("src/a.ts", false).is_allow());
    assert!(loaded.write_decision("src/a.ts", true).is_deny());
    assert!(!loaded.shell_allowed("npm test"));
}

#[test]
fn loads_the_file_from_the_workspace_root() {
    let ws = TempWorkspace::new();
    ws.write(POLICY_FILE_NAME, SPEC_EXAMPLE);
    let loaded = WorkspacePolicy::load(ws.path()).expect("loads");
    assert!(loaded.write_decision("src/app/main.ts", true).is_allow());
    assert!(loaded.shell_allowed("npm test"));
    let summary = loaded.to_summary();
    assert_eq!(summary["writes"]["allow"][1], "test/**/*.ts");
    assert_eq!(summary["writes"]["deny"][0], "**/node_modules/**");
    assert_eq!(summary["shell"]["allow"][1], "dotnet test");
    assert!(
        summary["file"]
            .as_str()
            .unwrap()
            .ends_with(POLICY_FILE_NAME)
    );
}

#[test]
fn empty_or_comment_only_file_is_the_empty_policy() {
    for text in ["", "# nothing yet\n", "writes:\nshell:\n"] {
        let parsed = policy(text);
        assert!(parsed.write_decision("a.txt", false).is_allow(), "{text:?}");
    }
}

#[test]
fn unknown_top_level_key_is_rejected_with_its_name() {
    let message = invalid_reason("writes:\n  allow: []\nshel:\n  allow: [ls]\n");
    assert!(message.contains("shel"), "{message}");
}

#[test]
fn unknown_nested_key_is_rejected() {
    let message = invalid_reason("writes:\n  alow: [\"src/**\"]\n");
    assert!(message.contains("alow"), "{message}");
}

#[test]
fn malformed_yaml_is_rejected() {
    let message = invalid_reason("writes: [unclosed\n");
    assert!(
        message.contains("invalid workspace policy file"),
        "{message}"
    );
    let message = invalid_reason("writes:\n  allow: src/**\n");
    assert!(message.contains("allow"), "{message}");
}

#[test]
fn bad_glob_is_rejected_naming_key_and_pattern() {
    let message = invalid_reason("writes:\n  deny: [\"ok/**\", \"src/[unclosed\"]\n");
    assert!(message.contains("writes.deny[1]"), "{message}");
    assert!(message.contains("src/[unclosed"), "{message}");
}

#[test]
fn empty_pattern_and_empty_shell_entry_are_rejected() {
    let message = invalid_reason("writes:\n  allow: [\"\"]\n");
    assert!(message.contains("writes.allow[0]"), "{message}");
    let message = invalid_reason("shell:\n  allow: [\"  \"]\n");
    assert!(message.contains("shell.allow[0]"), "{message}");
}

#[test]
fn oversized_file_is_rejected() {
    let ws = TempWorkspace::new();
    let mut text = String::from("writes:\n  allow:\n");
    while (text.len() as u64) <= MAX_POLICY_FILE_BYTES {
        text.push_str("    - \"src/some/long/path/pattern/**/*.ts\"\n");
    }
    ws.write(POLICY_FILE_NAME, &text);
    let err = WorkspacePolicy::load(ws.path()).unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
    assert!(err.to_string().contains(POLICY_FILE_NAME), "{err}");
}

#[test]
fn non_utf8_file_is_rejected() {
    let ws = TempWorkspace::new();
    ws.write(POLICY_FILE_NAME, b"writes:\n  allow: [\"\xff\"]\n");
    let err = WorkspacePolicy::load(ws.path()).unwrap_err();
    assert!(err.to_string().contains("UTF-8"), "{err}");
}

#[test]
fn policy_path_that_is_a_directory_is_an_error() {
    let ws = TempWorkspace::new();
    ws.mkdir(POLICY_FILE_NAME);
    assert!(WorkspacePolicy::load(ws.path()).is_err());
}

#[test]
fn star_stays_in_one_directory_and_double_star_crosses() {
    let parsed = policy("writes:\n  allow: [\"src/*.ts\", \"lib/**/*.rs\"]\n");
    assert!(parsed.write_decision("src/a.ts", true).is_allow());
    assert!(parsed.write_decision("src/deep/a.ts", true).is_deny());
    assert!(parsed.write_decision("lib/a.rs", true).is_allow());
    assert!(parsed.write_decision("lib/x/y/z.rs", true).is_allow());
}

#[test]
fn deny_glob_wins_over_allow_glob() {
    let parsed = policy(SPEC_EXAMPLE);
    let decision = parsed.write_decision("src/node_modules/pkg/index.ts", false);
    assert!(decision.is_deny());
    assert!(
        reason(&decision).contains("writes.deny pattern \"**/node_modules/**\""),
        "{decision:?}"
    );
    assert!(reason(&decision).contains(POLICY_FILE_NAME), "{decision:?}");
}

#[test]
fn deny_pattern_naming_a_directory_protects_its_contents() {
    let parsed = policy("writes:\n  deny: [\"secrets\", \"*.lock\"]\n");
    assert!(parsed.write_decision("secrets", false).is_deny());
    assert!(parsed.write_decision("secrets/key.pem", false).is_deny());
    assert!(parsed.write_decision("Cargo.lock", false).is_deny());
    assert!(parsed.write_decision("src/secrets.rs", false).is_allow());
}

#[test]
fn allow_list_lifts_read_only_only_for_matching_paths() {
    let parsed = policy(SPEC_EXAMPLE);
    assert!(parsed.write_decision("test/unit/a.ts", true).is_allow());
    let decision = parsed.write_decision("README.md", true);
    assert!(decision.is_deny());
    assert!(
        reason(&decision).contains("none of the writes.allow patterns"),
        "{decision:?}"
    );
    assert!(reason(&decision).contains("src/**/*.ts"), "{decision:?}");
    // Outside the allow list, writes are denied even when not read-only.
    assert!(parsed.write_decision("README.md", false).is_deny());
}

#[test]
fn without_allow_list_read_only_decides() {
    let parsed = policy("writes:\n  deny: [\"dist/**\"]\n");
    assert!(parsed.write_decision("src/a.rs", false).is_allow());
    let decision = parsed.write_decision("src/a.rs", true);
    assert!(decision.is_deny());
    assert!(
        reason(&decision).contains("workspace is read-only; set read_only = false in config.toml or add writes.allow in .agent-policy.yaml"),
        "{decision:?}"
    );
}

#[test]
fn the_policy_file_itself_is_never_writable() {
    let parsed = policy("writes:\n  allow: [\"**\"]\n");
    assert!(parsed.write_decision("src/x", true).is_allow());
    let decision = parsed.write_decision(POLICY_FILE_NAME, false);
    assert!(decision.is_deny(), "{decision:?}");
    assert!(
        WorkspacePolicy::default()
            .write_decision(POLICY_FILE_NAME, false)
            .is_deny()
    );
}

#[test]
fn shell_allow_matches_exact_command_and_added_arguments() {
    let parsed = policy(SPEC_EXAMPLE);
    assert!(parsed.shell_allowed("npm test"));
    assert!(parsed.shell_allowed("  npm   test  "));
    assert!(parsed.shell_allowed("npm test -- --watch"));
    assert!(parsed.shell_allowed("dotnet\ttest"));
    assert!(!parsed.shell_allowed("npm testx"));
    assert!(!parsed.shell_allowed("npm"));
    assert!(!parsed.shell_allowed("npm run build"));
    assert!(!parsed.shell_allowed(""));
}

#[test]
fn shell_allow_never_covers_chained_commands() {
    let parsed = policy(SPEC_EXAMPLE);
    for command in [
        "npm test; rm -rf /",
        "npm test && rm -rf /",
        "npm test || rm -rf /",
        "npm test | sh",
        "npm test & rm -rf /",
        "npm test `rm -rf /`",
        "npm test $(rm -rf /)",
        "npm test\nrm -rf /",
        "npm test > /etc/passwd",
        "npm test < /dev/zero",
    ] {
        assert!(!parsed.shell_allowed(command), "{command:?} was allowed");
    }
}

#[test]
fn shell_allow_entry_whitespace_is_normalized() {
    let parsed = policy("shell:\n  allow: [\"cargo   test \"]\n");
    assert!(parsed.shell_allowed("cargo test --workspace"));
    assert_eq!(parsed.to_summary()["shell"]["allow"][0], "cargo test");
}

const GIT_REASON: &str =
    "writes to .git/ are never allowed (git config and hooks can execute code)";

#[test]
fn git_directories_are_never_writable_whatever_the_policy_says() {
    let everything = policy("writes:\n  allow: [\"**\", \".git/**\"]\n");
    for parsed in [WorkspacePolicy::default(), everything] {
        for relative in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            ".git/info/attributes",
            "vendor/lib/.git",
            "vendor/lib/.git/config",
            "a/b/.git/hooks/post-checkout",
        ] {
            for read_only in [false, true] {
                let decision = parsed.write_decision(relative, read_only);
                assert!(decision.is_deny(), "{relative} read_only={read_only}");
                assert!(reason(&decision).contains(GIT_REASON), "{decision:?}");
                assert!(reason(&decision).contains(relative), "{decision:?}");
            }
        }
    }
}

#[test]
fn names_that_only_look_like_git_stay_writable() {
    let parsed = policy("writes:\n  allow: [\"**\"]\n");
    for relative in [
        ".github/workflows/ci.yml",
        ".gitignore",
        ".gitattributes",
        ".gitmodules",
        "docs/.git-blame-ignore-revs",
        "repo.git/HEAD",
        "src/git/config.rs",
    ] {
        assert!(
            parsed.write_decision(relative, true).is_allow(),
            "{relative}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_into_git_is_judged_by_where_it_lands() {
    use bridge_policy::{Guard, PermissionPolicy, PermissionRules, WorkspaceRoot};
    let ws = TempWorkspace::new();
    ws.mkdir(".git/hooks");
    ws.symlink(".git/hooks", "hooks");
    ws.write(POLICY_FILE_NAME, "writes:\n  allow: [\"**\"]\n");
    let guard = Guard::new(
        WorkspaceRoot::new(ws.path()).unwrap(),
        PermissionPolicy::compile(&PermissionRules::default()).unwrap(),
        WorkspacePolicy::load(ws.path()).unwrap(),
        false,
    );
    let decision = guard.resolve_write("hooks/pre-commit").unwrap_err();
    assert!(reason(&decision).contains(GIT_REASON), "{decision:?}");
    assert!(
        reason(&decision).contains(".git/hooks/pre-commit"),
        "{decision:?}"
    );
    assert!(guard.resolve_write("src/main.rs").is_ok());
}

#[test]
fn patterns_without_a_slash_match_the_name_at_any_depth() {
    let parsed = policy("writes:\n  deny: [\"*.pem\", \"secrets\", \"build/\"]\n");
    for relative in [
        "key.pem",
        "certs/deep/key.pem",
        "secrets",
        "secrets/a.txt",
        "config/secrets",
        "config/secrets/prod/db.yml",
        "build/out.js",
        "pkg/a/build/out.js",
    ] {
        let decision = parsed.write_decision(relative, false);
        assert!(decision.is_deny(), "{relative}");
        assert!(
            reason(&decision).contains("writes.deny pattern"),
            "{decision:?}"
        );
    }
    for relative in [
        "key.pem.txt",
        "src/secrets.rs",
        "my-secrets/a",
        "builder/x.js",
    ] {
        assert!(
            parsed.write_decision(relative, false).is_allow(),
            "{relative}"
        );
    }
}

#[test]
fn patterns_with_a_slash_stay_anchored_to_the_root() {
    let parsed = policy("writes:\n  deny: [\"/build\", \"config/prod.yml\", \"/dist/\"]\n");
    for relative in ["build", "build/x.js", "config/prod.yml", "dist/a.js"] {
        assert!(
            parsed.write_decision(relative, false).is_deny(),
            "{relative}"
        );
    }
    for relative in [
        "src/build/x.js",
        "other/config/prod.yml",
        "pkg/dist/a.js",
        "config/prod.yml.bak",
    ] {
        assert!(
            parsed.write_decision(relative, false).is_allow(),
            "{relative}"
        );
    }
}

#[test]
fn allow_patterns_follow_the_same_gitignore_rules() {
    let parsed = policy("writes:\n  allow: [\"*.md\", \"/Makefile\", \"scripts/\"]\n");
    // `scripts/` has no `/` but the trailing one: as in `.gitignore`, it
    // names a directory at any depth.
    for relative in [
        "README.md",
        "docs/guide/intro.md",
        "Makefile",
        "scripts/build.sh",
        "scripts/ci/x.sh",
        "tools/scripts/x.sh",
    ] {
        assert!(
            parsed.write_decision(relative, true).is_allow(),
            "{relative}"
        );
    }
    for relative in ["src/main.rs", "sub/Makefile", "scripts", "README.md.bak"] {
        let decision = parsed.write_decision(relative, true);
        assert!(decision.is_deny(), "{relative}");
        assert!(
            reason(&decision).contains("none of the writes.allow patterns"),
            "{decision:?}"
        );
    }
    // The summary quotes the patterns as the user wrote them.
    assert_eq!(parsed.to_summary()["writes"]["allow"][0], "*.md");
}

#[test]
fn a_pattern_that_is_only_slashes_is_rejected() {
    let message = invalid_reason("writes:\n  deny: [\"/\"]\n");
    assert!(message.contains("writes.deny[0]"), "{message}");
    assert!(message.contains("empty pattern"), "{message}");
}

/// Linux filesystems tell `SECRET` from `secret`: the rules keep exact
/// case there (case-insensitive matching is checked per platform in the
/// crate's unit tests).
#[cfg(target_os = "linux")]
#[test]
fn linux_matching_keeps_exact_case() {
    let parsed = policy("writes:\n  deny: [\"secret\", \"*.PEM\"]\n");
    assert!(parsed.write_decision("secret/x", false).is_deny());
    assert!(parsed.write_decision("SECRET/x", false).is_allow());
    assert!(parsed.write_decision("a/key.PEM", false).is_deny());
    assert!(parsed.write_decision("a/key.pem", false).is_allow());
    assert!(
        parsed
            .write_decision(".AGENT-POLICY.YAML", false)
            .is_allow()
    );
    assert!(parsed.write_decision(".GIT/config", false).is_allow());
    assert!(parsed.write_decision(POLICY_FILE_NAME, false).is_deny());
    assert!(parsed.write_decision(".git/config", false).is_deny());
}

#[test]
fn a_policy_file_anyone_may_edit_or_another_user_owns_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let workspace = TempWorkspace::new();
    let file = workspace.write(POLICY_FILE_NAME, "writes:\n  allow: [\"**\"]\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let err = WorkspacePolicy::load(workspace.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("writable by every user"), "{err}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(WorkspacePolicy::load(workspace.path()).is_ok());
    // Another user's file (needs root to plant one; CI runs as root).
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let err = WorkspacePolicy::load(workspace.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("owned by uid 65534"), "{err}");
    }
}

#[test]
fn a_fifo_named_like_the_policy_file_fails_instead_of_hanging() {
    let workspace = TempWorkspace::new();
    let path = workspace.path().join(POLICY_FILE_NAME);
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    let err = WorkspacePolicy::load(workspace.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a regular file"), "{err}");
}
