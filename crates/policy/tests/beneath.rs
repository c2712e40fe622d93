//! Tests of the kernel-contained opens: a path checked inside the workspace
//! that a symlink swap redirects afterwards is refused, and writes land in
//! the directory that was checked.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::fs;
use std::io::Read;
use std::os::unix::fs::symlink;

use bridge_policy::WorkspaceRoot;
use bridge_policy::paths::{OpenMode, is_escape};
use bridge_testkit::TempWorkspace;

fn read_through(root: &WorkspaceRoot, path: &std::path::Path) -> std::io::Result<String> {
    let mut text = String::new();
    root.open_file(path, OpenMode::Read)?
        .read_to_string(&mut text)?;
    Ok(text)
}

/// The swap the attack makes: `sub` (checked as a directory) becomes a
/// symlink to `target` after the check.
fn swap_for_symlink(ws: &TempWorkspace, target: &std::path::Path) {
    fs::rename(ws.path().join("sub"), ws.path().join("sub.real")).unwrap();
    symlink(target, ws.path().join("sub")).unwrap();
}

#[test]
fn a_directory_swapped_for_a_symlink_after_the_check_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("file.txt"), "OUTSIDE").unwrap();
    for target in [outside.path().to_path_buf(), "../..".into()] {
        let ws = TempWorkspace::new();
        ws.write("sub/file.txt", "inside");
        let root = WorkspaceRoot::new(ws.path()).unwrap();
        let checked = root.resolve("sub/file.txt").unwrap();
        assert_eq!(read_through(&root, &checked).unwrap(), "inside");

        swap_for_symlink(&ws, &target);
        let err = read_through(&root, &checked).unwrap_err();
        assert!(is_escape(&err), "{target:?}: {err}");
        assert!(err.to_string().contains("left the workspace"), "{err}");
        assert!(!root.reaches(&checked));
        assert!(root.symlink_metadata(&checked).is_err());
    }
}

#[test]
fn symlinks_that_stay_inside_still_work() {
    let ws = TempWorkspace::new();
    ws.write("sub/file.txt", "inside");
    let root = WorkspaceRoot::new(ws.path()).unwrap();
    let checked = root.resolve("sub/file.txt").unwrap();
    // Swapped for a link to another directory of the same workspace: still
    // beneath the root, so still served.
    swap_for_symlink(&ws, "sub.real".as_ref());
    assert_eq!(read_through(&root, &checked).unwrap(), "inside");
}

#[test]
fn a_final_symlink_swapped_in_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "OUTSIDE").unwrap();
    let ws = TempWorkspace::new();
    ws.write("note.txt", "inside");
    let root = WorkspaceRoot::new(ws.path()).unwrap();
    let checked = root.resolve("note.txt").unwrap();
    fs::remove_file(ws.path().join("note.txt")).unwrap();
    symlink(outside.path().join("secret"), ws.path().join("note.txt")).unwrap();
    let err = read_through(&root, &checked).unwrap_err();
    assert!(is_escape(&err), "{err}");
}

#[test]
fn paths_outside_the_root_are_never_opened() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "OUTSIDE").unwrap();
    let ws = TempWorkspace::new();
    let root = WorkspaceRoot::new(ws.path()).unwrap();
    let err = read_through(&root, &outside.path().join("secret")).unwrap_err();
    assert!(is_escape(&err), "{err}");
}

#[test]
fn a_write_lands_in_the_directory_that_was_checked() {
    let outside = tempfile::tempdir().unwrap();
    let ws = TempWorkspace::new();
    ws.write("sub/keep.txt", "x");
    let root = WorkspaceRoot::new(ws.path()).unwrap();
    let checked = root.resolve("sub/new.txt").unwrap();
    let (dir, name) = root.parent_dir(&checked).unwrap();

    swap_for_symlink(&ws, outside.path());
    dir.stage(&name, b"written", None)
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(
        fs::read_to_string(ws.path().join("sub.real/new.txt")).unwrap(),
        "written"
    );
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);

    // A parent looked up after the swap is refused outright.
    let err = root.parent_dir(&checked).unwrap_err();
    assert!(is_escape(&err), "{err}");
    let err = root.create_dir_all(&checked).unwrap_err();
    assert!(is_escape(&err), "{err}");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn staged_files_vanish_unless_committed_and_new_files_never_replace() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "old");
    let root = WorkspaceRoot::new(ws.path()).unwrap();
    let (dir, _) = root.parent_dir(&root.resolve("a.txt").unwrap()).unwrap();
    drop(dir.stage("b.txt".as_ref(), b"never", None).unwrap());
    let names: Vec<_> = fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a.txt"], "the temp file is gone");

    let err = dir
        .stage("a.txt".as_ref(), b"new", None)
        .unwrap()
        .commit_new()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(ws.read("a.txt"), "old");
}
