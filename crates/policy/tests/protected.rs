//! Files that make agents run commands, protected through every way a
//! write can be spelled: the guard of workspace tools and agents' own
//! edits, and shell commands (write, move, delete, globs).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_policy::shell::{self, ShellVerdict};
use bridge_policy::{
    Guard, PermissionPolicy, PermissionRules, ProtectedFiles, WorkspacePolicy, WorkspaceRoot,
};

/// Every built-in place, as an agent would name it.
const PROTECTED: &[&str] = &[
    ".git/hooks/pre-commit",
    ".git",
    ".agent-policy.yaml",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/hooks/guard.sh",
    ".claude/copilot-bridge-hooks.json",
    ".mcp.json",
    ".github/hooks/copilot-bridge.json",
    ".github/hooks/mine.json",
    ".github/copilot-bridge-hooks.json",
    ".github/extensions/evil/extension.mjs",
    ".github/copilot/settings.json",
    ".github/copilot/settings.local.json",
    ".codex/config.toml",
    ".codex/hooks.json",
    ".vscode/tasks.json",
    ".vscode/launch.json",
    ".vscode/settings.json",
    ".vscode/mcp.json",
    ".envrc",
    ".husky/pre-commit",
    // In a project of a subdirectory: the next agent may start there.
    "packages/web/.claude/settings.json",
    "packages/web/.envrc",
    "packages/web/.vscode/tasks.json",
];

/// Near misses that stay writable.
const WRITABLE: &[&str] = &[
    "src/main.rs",
    ".claude/commands/review.md",
    ".claude/CLAUDE.md",
    ".github/workflows-notes.md",
    ".github/copilot-instructions.md",
    ".vscode/extensions.json",
    "docs/.agent-policy.yaml",
    "envrc",
    "settings.json",
    ".mcp.json.example",
];

#[test]
fn every_built_in_place_is_protected_at_any_depth_and_near_misses_are_not() {
    let protected = ProtectedFiles::default();
    for path in PROTECTED {
        let reason = protected
            .reason(path)
            .unwrap_or_else(|| panic!("{path} must be protected"));
        assert!(reason.contains("protected file"), "{reason}");
        assert!(reason.contains(path), "{reason}");
    }
    for path in WRITABLE {
        assert_eq!(protected.reason(path), None, "{path}");
    }
}

#[test]
fn the_configuration_adds_places_gitignore_style() {
    let protected =
        ProtectedFiles::compile(&["Makefile".to_owned(), "/scripts/deploy/".to_owned()]).unwrap();
    for path in [
        "Makefile",
        "sub/Makefile",
        "scripts/deploy/run.sh",
        ".envrc",
    ] {
        let reason = protected.reason(path).unwrap_or_else(|| panic!("{path}"));
        assert!(reason.contains("protected file"), "{reason}");
    }
    assert!(protected.reason("sub/scripts/deploy/run.sh").is_none());
    assert!(ProtectedFiles::compile(&[String::new()]).is_err());
}

fn guard(workspace: &std::path::Path, rules: &PermissionRules) -> Guard {
    std::fs::write(
        workspace.join(".agent-policy.yaml"),
        // A repository's policy allows every write: it cannot lift this.
        "writes:\n  allow: [\"**\"]\n",
    )
    .unwrap();
    let root = WorkspaceRoot::new(workspace).unwrap();
    let policy = WorkspacePolicy::load(root.path()).unwrap();
    Guard::new(
        root,
        PermissionPolicy::compile(rules).unwrap(),
        policy,
        false,
    )
}

#[test]
fn the_guard_refuses_every_protected_write_whatever_the_workspace_policy_allows() {
    let dir = tempfile::tempdir().unwrap();
    let guard = guard(dir.path(), &PermissionRules::default());
    for path in PROTECTED {
        let denied = guard.resolve_write(path).unwrap_err();
        assert!(denied.is_deny(), "{path}");
        let reason = denied.reason.unwrap_or_default();
        assert!(
            reason.contains("protected file")
                || reason.contains(".git/")
                || reason.contains("its own policy"),
            "{path}: {reason}"
        );
    }
    for path in ["src/main.rs", ".claude/commands/review.md"] {
        assert!(guard.resolve_write(path).is_ok(), "{path}");
    }
    let configured = PermissionRules {
        protected_files: vec!["Makefile".to_owned()],
        ..PermissionRules::default()
    };
    let guard = self::guard(dir.path(), &configured);
    let denied = guard.resolve_write("Makefile").unwrap_err();
    assert!(denied.reason.unwrap_or_default().contains("protected file"));
}

fn verdict(workspace: &std::path::Path, command: &str) -> (ShellVerdict, String) {
    let analysis = shell::analyze(command, workspace, None);
    (analysis.verdict, analysis.reasons.join("; "))
}

#[test]
fn a_shell_command_that_writes_moves_or_deletes_a_protected_file_is_dangerous() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path();
    for made in [".claude", ".github/hooks", ".vscode", "pkg/.claude"] {
        std::fs::create_dir_all(workspace.join(made)).unwrap();
    }
    std::fs::write(workspace.join(".claude/settings.json"), "{}").unwrap();
    std::fs::write(workspace.join(".vscode/tasks.json"), "{}").unwrap();
    for command in [
        "echo '{\"hooks\":{}}' > .claude/settings.json",
        "printf x >> .envrc",
        "tee .github/hooks/evil.json < /dev/null",
        "cp /dev/null .mcp.json",
        "cat evil > pkg/.claude/settings.json",
        "mv .vscode/tasks.json tasks.bak",
        "mv .claude old-claude",
        "rm .claude/settings.json",
        "rm -rf .claude",
        "rm -rf .github",
        "rm -rf .cl*",
        "touch .husky/pre-commit",
        "sed -i s/a/b/ .claude/settings.json",
        "bash -c 'echo x > .codex/hooks.json'",
        "ln -sf /tmp/x .envrc",
    ] {
        let (verdict, reasons) = verdict(workspace, command);
        assert_eq!(verdict, ShellVerdict::Dangerous, "{command}: {reasons}");
        assert!(reasons.contains("protected file"), "{command}: {reasons}");
    }
    for command in [
        "mkdir -p .claude/commands",
        "echo hi > notes.txt",
        "rm -f build.log",
        "rm -rf *.log",
        "cat .claude/settings.json",
    ] {
        let (verdict, reasons) = verdict(workspace, command);
        assert_ne!(verdict, ShellVerdict::Dangerous, "{command}: {reasons}");
    }
}
