//! Tests of paths: containment on real directories and real symlinks.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::fs;

use bridge_policy::{PathError, WorkspaceRoot};
use bridge_testkit::TempWorkspace;
use serde_json::json;

fn root_of(ws: &TempWorkspace) -> WorkspaceRoot {
    WorkspaceRoot::new(ws.path()).expect("workspace root")
}

/// A directory outside every workspace the test creates.
fn outside_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("outside temp dir")
}

#[test]
fn root_must_exist_and_be_a_directory() {
    let ws = TempWorkspace::new();
    let missing = WorkspaceRoot::new(&ws.path().join("nope")).unwrap_err();
    assert!(matches!(missing, PathError::BadRoot { .. }), "{missing:?}");
    let file = ws.write("plain.txt", "x");
    let not_dir = WorkspaceRoot::new(&file).unwrap_err();
    assert!(not_dir.to_string().contains("not a directory"), "{not_dir}");
}

#[test]
fn root_is_canonicalized() {
    let ws = TempWorkspace::new();
    ws.mkdir("sub");
    let root = WorkspaceRoot::new(&ws.path().join("sub/..")).expect("root");
    assert_eq!(root.path(), ws.path());
}

#[test]
fn relative_and_absolute_paths_inside_resolve() {
    let ws = TempWorkspace::new();
    let file = ws.write("src/main.rs", "fn main() {}");
    let root = root_of(&ws);
    assert_eq!(root.resolve("src/main.rs").unwrap(), file);
    assert_eq!(root.resolve("./src/../src/main.rs").unwrap(), file);
    assert_eq!(root.resolve(file.to_str().unwrap()).unwrap(), file);
    assert_eq!(root.resolve(".").unwrap(), ws.path());
}

#[test]
fn not_yet_existing_paths_resolve_under_their_real_parent() {
    let ws = TempWorkspace::new();
    ws.mkdir("src");
    let root = root_of(&ws);
    assert_eq!(
        root.resolve("src/new/deeper/file.rs").unwrap(),
        ws.path().join("src/new/deeper/file.rs")
    );
}

#[test]
fn dot_dot_inside_the_workspace_is_fine() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    assert_eq!(root.resolve("a/../b").unwrap(), ws.path().join("b"));
}

#[test]
fn dot_dot_escaping_the_workspace_is_refused() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    for candidate in ["a/../../x", "../x", "..", "src/../../../../etc/passwd"] {
        let err = root.resolve(candidate).unwrap_err();
        assert!(
            matches!(err, PathError::OutsideWorkspace { .. }),
            "{candidate}: {err:?}"
        );
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }
}

#[test]
fn absolute_path_outside_is_refused() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    let err = root.resolve("/etc/passwd").unwrap_err();
    assert!(matches!(err, PathError::OutsideWorkspace { .. }), "{err:?}");
}

#[test]
fn sibling_directory_sharing_the_name_prefix_is_refused() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    let sibling = parent.path().join("ws2");
    fs::create_dir(&ws).unwrap();
    fs::create_dir(&sibling).unwrap();
    fs::write(sibling.join("secret"), "s").unwrap();
    let root = WorkspaceRoot::new(&ws).unwrap();
    let canonical_sibling = fs::canonicalize(&sibling).unwrap();
    let err = root
        .resolve(canonical_sibling.join("secret").to_str().unwrap())
        .unwrap_err();
    assert!(matches!(err, PathError::OutsideWorkspace { .. }), "{err:?}");
    let err = root.resolve("../ws2/secret").unwrap_err();
    assert!(matches!(err, PathError::OutsideWorkspace { .. }), "{err:?}");
}

#[test]
fn empty_and_null_byte_paths_are_refused() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    assert!(matches!(
        root.resolve("").unwrap_err(),
        PathError::Invalid { .. }
    ));
    assert!(matches!(
        root.resolve("   ").unwrap_err(),
        PathError::Invalid { .. }
    ));
    let err = root.resolve("src/a\0b").unwrap_err();
    assert!(matches!(err, PathError::NullByte { .. }), "{err:?}");
    assert!(err.to_string().contains("null byte"), "{err}");
}

#[cfg(unix)]
mod symlinks {
    use super::*;

    #[test]
    fn symlink_inside_the_workspace_is_followed() {
        let ws = TempWorkspace::new();
        let real = ws.write("real/data.txt", "d");
        ws.symlink(ws.path().join("real"), "alias");
        ws.symlink("real/data.txt", "file-alias");
        let root = root_of(&ws);
        assert_eq!(root.resolve("alias/data.txt").unwrap(), real);
        assert_eq!(root.resolve("file-alias").unwrap(), real);
        // A new file under a linked directory lands in the real directory.
        assert_eq!(
            root.resolve("alias/new.txt").unwrap(),
            ws.path().join("real/new.txt")
        );
    }

    #[test]
    fn symlink_to_a_file_outside_is_refused() {
        let ws = TempWorkspace::new();
        let outside = outside_dir();
        let secret = outside.path().join("secret");
        fs::write(&secret, "s").unwrap();
        ws.symlink(&secret, "innocent.txt");
        let root = root_of(&ws);
        let err = root.resolve("innocent.txt").unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err:?}");
        assert!(err.to_string().contains("symlink"), "{err}");
    }

    #[test]
    fn symlink_to_etc_is_refused() {
        let ws = TempWorkspace::new();
        ws.symlink("/etc", "config");
        let root = root_of(&ws);
        let err = root.resolve("config/passwd").unwrap_err();
        match err {
            PathError::SymlinkEscape { resolved, .. } => {
                assert!(resolved.ends_with("passwd"), "{resolved}")
            }
            other => panic!("expected SymlinkEscape, got {other:?}"),
        }
        // Writing a new file through the link is refused too.
        assert!(root.resolve("config/new-file").is_err());
    }

    #[test]
    fn chain_of_directory_links_escaping_is_refused() {
        let ws = TempWorkspace::new();
        let outside = outside_dir();
        fs::create_dir(outside.path().join("loot")).unwrap();
        // deep/er/a -> ../../b (relative hop), b -> c/loot, c -> outside dir.
        ws.symlink(outside.path(), "c");
        ws.symlink("c/loot", "b");
        ws.mkdir("deep/er");
        ws.symlink("../../b", "deep/er/a");
        let root = root_of(&ws);
        let err = root.resolve("deep/er/a/x.txt").unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err:?}");
    }

    #[test]
    fn relative_link_climbing_out_is_refused() {
        let ws = TempWorkspace::new();
        ws.mkdir("sub");
        ws.symlink("../..", "sub/up");
        let root = root_of(&ws);
        let err = root.resolve("sub/up").unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err:?}");
    }

    #[test]
    fn dangling_link_pointing_outside_is_refused() {
        let ws = TempWorkspace::new();
        let outside = outside_dir();
        ws.symlink(outside.path().join("not-yet-created"), "out.txt");
        let root = root_of(&ws);
        let err = root.resolve("out.txt").unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err:?}");
        ws.symlink("/nonexistent-dir/for-sure", "gone");
        let err = root.resolve("gone/child").unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err:?}");
    }

    #[test]
    fn dangling_link_pointing_inside_resolves_to_its_target() {
        let ws = TempWorkspace::new();
        ws.symlink("will-exist.txt", "pending");
        let root = root_of(&ws);
        assert_eq!(
            root.resolve("pending").unwrap(),
            ws.path().join("will-exist.txt")
        );
    }

    #[test]
    fn symlink_loop_is_an_error_not_a_hang() {
        let ws = TempWorkspace::new();
        ws.symlink("loop-b", "loop-a");
        ws.symlink("loop-a", "loop-b");
        let root = root_of(&ws);
        let err = root.resolve("loop-a/x").unwrap_err();
        assert!(matches!(err, PathError::SymlinkLoop { .. }), "{err:?}");
    }

    #[test]
    fn workspace_reached_through_an_outside_alias_is_accepted() {
        let ws = TempWorkspace::new();
        let file = ws.write("f.txt", "x");
        let outside = outside_dir();
        let alias = outside.path().join("alias");
        std::os::unix::fs::symlink(ws.path(), &alias).unwrap();
        let root = root_of(&ws);
        assert_eq!(
            root.resolve(alias.join("f.txt").to_str().unwrap()).unwrap(),
            file
        );
    }

    #[test]
    fn non_utf8_names_on_disk_do_not_break_resolution() {
        use std::os::unix::ffi::OsStrExt;
        let ws = TempWorkspace::new();
        let name = std::ffi::OsStr::from_bytes(b"bad-\xff-name");
        let created = ws.path().join(name);
        if fs::create_dir(&created).is_err() {
            // Some filesystems refuse non-UTF-8 names; nothing to test there.
            return;
        }
        std::os::unix::fs::symlink("/etc", created.join("link")).unwrap();
        let root = root_of(&ws);
        assert_eq!(root.relative(&created), "bad-\u{fffd}-name");
        // The link lives under a non-UTF-8 directory; reached via an absolute
        // alias that is valid UTF-8 (a link to it).
        std::os::unix::fs::symlink(&created, ws.path().join("plain")).unwrap();
        let err = root.resolve("plain/link/passwd").unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err:?}");
        assert!(root.resolve("plain/new.txt").unwrap().starts_with(&created));
    }
}

#[test]
fn relative_uses_forward_slashes_and_dot_for_root() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    assert_eq!(root.relative(ws.path()), ".");
    assert_eq!(root.relative(&ws.path().join("a").join("b.txt")), "a/b.txt");
}

#[test]
fn check_arguments_finds_nested_path_keys() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    let err = root
        .check_arguments(&json!({"edits": [{"filePath": "../x", "text": "t"}]}))
        .unwrap_err();
    assert!(matches!(err, PathError::OutsideWorkspace { .. }), "{err:?}");
    let err = root
        .check_arguments(&json!({"options": {"deeper": {"outputPath": "/etc/out"}}}))
        .unwrap_err();
    assert!(matches!(err, PathError::OutsideWorkspace { .. }), "{err:?}");
}

#[test]
fn check_arguments_resolves_arrays_of_paths() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    assert!(
        root.check_arguments(&json!({"path": ["a.txt", "b/c.txt"]}))
            .is_ok()
    );
    let err = root
        .check_arguments(&json!({"path": ["a.txt", "../../etc/passwd"]}))
        .unwrap_err();
    assert!(err.to_string().contains("../../etc/passwd"), "{err}");
}

#[test]
fn check_arguments_ignores_non_path_keys_and_non_string_values() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    let args = json!({
        "query": "../../etc/passwd",
        "content": "/etc/shadow",
        "path": "src/ok.rs",
        "dir": 42,
        "target": null,
        "nested": [{"pattern": "../x"}, "../y"]
    });
    assert_eq!(root.check_arguments(&args), Ok(()));
}

#[test]
fn check_arguments_reports_the_first_failure() {
    let ws = TempWorkspace::new();
    let root = root_of(&ws);
    let err = root
        .check_arguments(&json!({"file": ["../first-bad", "second\0bad"]}))
        .unwrap_err();
    assert!(matches!(err, PathError::OutsideWorkspace { .. }), "{err:?}");
}
