use super::*;

fn sh(dir: &Path, args: &[&str]) -> String {
    let out = git(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    sh(dir.path(), &["init", "-q"]);
    std::fs::write(
        dir.path().join("lib.txt"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    )
    .unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    sh(dir.path(), &["add", "-A"]);
    sh(dir.path(), &["commit", "-q", "-m", "start"]);
    dir
}

fn edit(sandbox: &Sandbox, file: &str, from: &str, to: &str) {
    let path = sandbox.cwd.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

fn two_writers(
    workspace: &Path,
    scratch: &Path,
    a: (&str, &str),
    b: (&str, &str),
) -> (Snapshot, Merged, Merged) {
    let snapshot = Snapshot::take(workspace, scratch).unwrap();
    let first = snapshot.sandbox(&scratch.join("t1")).unwrap();
    let second = snapshot.sandbox(&scratch.join("t2")).unwrap();
    edit(&first, "lib.txt", a.0, a.1);
    edit(&second, "lib.txt", b.0, b.1);
    std::fs::write(second.cwd.join("new.txt"), "added by t2\n").unwrap();
    let root = WorkspaceRoot::new(workspace).unwrap();
    let first_changes = snapshot.changes(&first).unwrap();
    let second_changes = snapshot.changes(&second).unwrap();
    let merged_first = merge_back(&root, &snapshot, "t1", &first_changes).unwrap();
    let merged_second = merge_back(&root, &snapshot, "t2", &second_changes).unwrap();
    snapshot.remove(&first);
    snapshot.remove(&second);
    (snapshot, merged_first, merged_second)
}

#[test]
fn two_worktrees_editing_different_lines_merge_cleanly() {
    let ws = repo();
    // Uncommitted and untracked work is part of the snapshot.
    std::fs::write(ws.path().join("draft.txt"), "mine\n").unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let (snapshot, first, second) = two_writers(
        ws.path(),
        scratch.path(),
        ("one", "ONE"),
        ("seven", "SEVEN"),
    );
    assert!(matches!(snapshot, Snapshot::Git { .. }));
    assert!(first.conflicts.is_empty() && second.conflicts.is_empty());
    assert_eq!(first.changed, ["lib.txt"]);
    assert_eq!(second.changed, ["lib.txt", "new.txt"]);
    let text = std::fs::read_to_string(ws.path().join("lib.txt")).unwrap();
    assert_eq!(text, "ONE\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("draft.txt")).unwrap(),
        "mine\n"
    );
    // The user's index, branch and worktree list are as they were.
    assert_eq!(sh(ws.path(), &["status", "--porcelain"]).lines().count(), 3);
    assert_eq!(sh(ws.path(), &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn the_repositorys_hooks_do_not_run_when_worktrees_are_made() {
    let ws = repo();
    let hook = ws.path().join(".git/hooks/post-checkout");
    let marker = ws.path().join("hook-ran");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let snapshot = Snapshot::take(ws.path(), scratch.path()).unwrap();
    let sandbox = snapshot.sandbox(&scratch.path().join("t1")).unwrap();
    assert!(sandbox.cwd.join("lib.txt").exists());
    assert!(!marker.exists(), "post-checkout ran");
    snapshot.remove(&sandbox);
}

#[test]
fn two_worktrees_editing_one_line_report_the_conflict_and_change_nothing() {
    let ws = repo();
    let scratch = tempfile::tempdir().unwrap();
    let (_, first, second) = two_writers(
        ws.path(),
        scratch.path(),
        ("three", "THREE"),
        ("three", "3"),
    );
    assert!(first.conflicts.is_empty());
    assert_eq!(second.conflicts.len(), 1, "{second:?}");
    let conflict = &second.conflicts[0];
    assert_eq!(conflict.file, "lib.txt");
    assert_eq!(conflict.hunks.len(), 1);
    let hunk = &conflict.hunks[0];
    assert!(
        hunk.starts_with("<<<<<<< workspace\n") && hunk.ends_with(">>>>>>> t2\n"),
        "{hunk}"
    );
    assert!(hunk.contains("THREE") && hunk.contains("\n3\n"), "{hunk}");
    assert!(second.changed.is_empty());
    // t2's other file was not applied either: all or nothing.
    assert!(!ws.path().join("new.txt").exists());
    assert!(
        std::fs::read_to_string(ws.path().join("lib.txt"))
            .unwrap()
            .contains("THREE")
    );
}

#[test]
fn a_plain_directory_gets_copies_that_merge_the_same_way() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("lib.txt"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    )
    .unwrap();
    std::fs::write(ws.path().join("gone.txt"), "x\n").unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let snapshot = Snapshot::take(ws.path(), &scratch.path().join("wave")).unwrap();
    assert!(matches!(snapshot, Snapshot::Copy { .. }));
    let first = snapshot.sandbox(&scratch.path().join("t1")).unwrap();
    edit(&first, "lib.txt", "two", "TWO");
    std::fs::remove_file(first.cwd.join("gone.txt")).unwrap();
    std::fs::create_dir_all(first.cwd.join(SCRATCH_DIR)).unwrap();
    std::fs::write(first.cwd.join(SCRATCH_DIR).join("context.md"), "x").unwrap();
    let changes = snapshot.changes(&first).unwrap();
    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["gone.txt", "lib.txt"]);
    let root = WorkspaceRoot::new(ws.path()).unwrap();
    let merged = merge_back(&root, &snapshot, "t1", &changes).unwrap();
    assert_eq!(merged.changed, ["gone.txt", "lib.txt"]);
    assert!(!ws.path().join("gone.txt").exists());
    assert!(
        std::fs::read_to_string(ws.path().join("lib.txt"))
            .unwrap()
            .contains("TWO")
    );
    assert!(!ws.path().join(SCRATCH_DIR).exists());
    snapshot.remove(&first);
    snapshot.discard();
    assert!(!scratch.path().join("t1").exists());
}

#[test]
fn a_symlink_in_the_workspace_does_not_carry_a_merge_outside() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let snapshot = Snapshot::take(ws.path(), &scratch.path().join("wave")).unwrap();
    let first = snapshot.sandbox(&scratch.path().join("t1")).unwrap();
    std::fs::create_dir_all(first.cwd.join("sub")).unwrap();
    std::fs::write(first.cwd.join("sub/file.txt"), "x").unwrap();
    let changes = snapshot.changes(&first).unwrap();
    // Meanwhile the workspace's directory became a link out of it.
    std::fs::remove_dir(ws.path().join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("sub")).unwrap();
    let root = WorkspaceRoot::new(ws.path()).unwrap();
    assert!(merge_back(&root, &snapshot, "t1", &changes).is_err());
    assert!(!outside.path().join("file.txt").exists());
}
