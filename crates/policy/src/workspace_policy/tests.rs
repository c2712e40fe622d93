//! The write rules under each filesystem's name rules, forced through
//! [`WorkspacePolicy::from_yaml_for`] so that every platform's behaviour is
//! checked on whatever machine runs the tests.

use super::globs::FileNames;
use super::{POLICY_FILE_NAME, WorkspacePolicy};

const POLICY: &str = "writes:\n  allow: [\"**\"]\n  deny: [\"secret\", \"/Config/*.yml\"]\n";

fn policy(file_names: FileNames) -> WorkspacePolicy {
    WorkspacePolicy::from_yaml_for(POLICY, "test.yaml", file_names).expect("valid policy")
}

fn denied(policy: &WorkspacePolicy, relative: &str) -> bool {
    policy.write_decision(relative, false).is_deny()
}

#[test]
fn case_insensitive_filesystems_protect_every_spelling_of_the_policy_file_and_git() {
    for file_names in [FileNames::MacOs, FileNames::Windows] {
        let policy = policy(file_names);
        for relative in [
            ".AGENT-POLICY.YAML",
            ".Agent-Policy.yaml",
            ".GIT/config",
            ".Git",
            "vendor/lib/.gIt/hooks/pre-commit",
        ] {
            assert!(denied(&policy, relative), "{file_names:?}: {relative}");
        }
        assert!(
            !denied(&policy, ".github/workflows/ci.yml"),
            "{file_names:?}"
        );
        assert!(
            !denied(&policy, "docs/.agent-policy.yaml"),
            "{file_names:?}"
        );
    }
}

#[test]
fn case_insensitive_filesystems_match_deny_globs_in_any_case() {
    for file_names in [FileNames::MacOs, FileNames::Windows] {
        let policy = policy(file_names);
        let decision = policy.write_decision("SECRET/x", false);
        assert!(decision.is_deny(), "{file_names:?}");
        assert!(
            decision
                .reason
                .as_deref()
                .unwrap_or("")
                .contains("\"secret\""),
            "{decision:?}"
        );
        assert!(denied(&policy, "a/Secret"), "{file_names:?}");
        assert!(denied(&policy, "config/PROD.YML"), "{file_names:?}");
        assert!(!denied(&policy, "secrets/x"), "{file_names:?}");
    }
}

#[test]
fn allow_globs_stay_exact_so_an_other_spelling_is_refused() {
    let policy = WorkspacePolicy::from_yaml_for(
        "writes:\n  allow: [\"/src/**\"]\n",
        "test.yaml",
        FileNames::MacOs,
    )
    .expect("valid policy");
    assert!(policy.write_decision("src/a.rs", true).is_allow());
    assert!(policy.write_decision("SRC/a.rs", true).is_deny());
}

#[test]
fn hfs_ignorable_code_points_do_not_hide_git_on_macos() {
    let macos = policy(FileNames::MacOs);
    assert!(denied(&macos, ".g\u{200c}it/config"));
    assert!(denied(&macos, "\u{feff}.git/hooks/post-checkout"));
    assert!(!denied(&policy(FileNames::Exact), ".g\u{200c}it/config"));
}

#[test]
fn ntfs_aliases_do_not_hide_git_or_the_policy_file_on_windows() {
    let policy = policy(FileNames::Windows);
    for relative in [
        ".git./config",
        ".git /config",
        "GIT~1/config",
        "sub/git~1/hooks/pre-commit",
        ".git::$INDEX_ALLOCATION/config",
        ".agent-policy.yaml.",
        ".agent-policy.yaml::$DATA",
        "secret./x",
    ] {
        assert!(denied(&policy, relative), "{relative}");
    }
    let decision = policy.write_decision("GIT~1/config", false);
    assert!(
        decision.reason.as_deref().unwrap_or("").contains(".git/"),
        "{decision:?}"
    );
}

#[test]
fn exact_filesystems_keep_case() {
    let policy = policy(FileNames::Exact);
    assert!(denied(&policy, POLICY_FILE_NAME));
    assert!(denied(&policy, ".git/config"));
    assert!(denied(&policy, "secret/x"));
    assert!(!denied(&policy, ".AGENT-POLICY.YAML"));
    assert!(!denied(&policy, ".GIT/config"));
    assert!(!denied(&policy, "SECRET/x"));
    assert!(!denied(&policy, "config/PROD.YML"));
}
