//! Tests of create_file and edit_file on real temp workspaces.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a failed setup must stop the test"
)]

use bridge_engine::ToolFailure;
use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::runner;

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn call(ws: &TempWorkspace, tool: &str, args: Value) -> Result<Value, ToolFailure> {
    runner(ws, false).call(tool, args).await
}

/// Names in `dir` other than the expected ones: leftover temp files.
fn entries(ws: &TempWorkspace, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(ws.path().join(dir))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn create_file_writes_content_and_parent_directories() {
    let ws = TempWorkspace::new();
    let content = "pub fn answer() -> u32 {\n    42\n}\n";

    let result = call(
        &ws,
        "create_file",
        json!({"path": "src/deep/er/lib.rs", "content": content}),
    )
    .await
    .unwrap();

    assert_eq!(result["path"], "src/deep/er/lib.rs");
    assert_eq!(result["bytes"], content.len());
    assert_eq!(result["sha256"], sha256_hex(content.as_bytes()));
    assert_eq!(result["created"], true);
    assert_eq!(ws.read("src/deep/er/lib.rs"), content);
    assert_eq!(
        entries(&ws, "src/deep/er"),
        vec!["lib.rs"],
        "no temp file left behind"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn create_file_gives_new_files_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let ws = TempWorkspace::new();
    call(
        &ws,
        "create_file",
        json!({"path": "new.txt", "content": "x"}),
    )
    .await
    .unwrap();
    let mode = std::fs::metadata(ws.path().join("new.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "not the 0600 of a temp file");
}

#[tokio::test]
async fn create_file_refuses_to_replace_an_existing_file_without_overwrite() {
    let ws = TempWorkspace::new();
    ws.write("notes.md", "keep me\n");

    let err = call(
        &ws,
        "create_file",
        json!({"path": "notes.md", "content": "clobber"}),
    )
    .await
    .unwrap_err();

    assert_eq!(err.code, "conflict");
    assert!(err.to_string().contains("notes.md already exists"), "{err}");
    assert!(err.to_string().contains("overwrite"), "{err}");
    assert_eq!(
        err.details.as_ref().unwrap()["sha256"],
        sha256_hex(b"keep me\n")
    );
    assert_eq!(ws.read("notes.md"), "keep me\n");
}

#[cfg(unix)]
#[tokio::test]
async fn create_file_overwrites_atomically_and_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let ws = TempWorkspace::new();
    let script = ws.write("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let result = call(
        &ws,
        "create_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n", "overwrite": true}),
    )
    .await
    .unwrap();

    assert_eq!(result["created"], false);
    assert_eq!(ws.read("run.sh"), "#!/bin/sh\necho new\n");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(entries(&ws, "."), vec!["run.sh"]);
}

#[tokio::test]
async fn create_file_refuses_a_directory_target() {
    let ws = TempWorkspace::new();
    ws.mkdir("src");
    let err = call(
        &ws,
        "create_file",
        json!({"path": "src", "content": "x", "overwrite": true}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, "conflict");
    assert!(err.to_string().contains("is a directory"), "{err}");
    assert!(ws.path().join("src").is_dir());
}

#[tokio::test]
async fn create_file_rejects_unknown_and_missing_arguments() {
    let ws = TempWorkspace::new();
    let unknown = call(
        &ws,
        "create_file",
        json!({"path": "a", "content": "", "mode": 7}),
    )
    .await
    .unwrap_err();
    assert_eq!(unknown.code, "invalid_arguments");
    assert!(unknown.to_string().contains("create_file"), "{unknown}");
    assert!(unknown.to_string().contains("mode"), "{unknown}");

    let missing = call(&ws, "create_file", json!({"path": "a"}))
        .await
        .unwrap_err();
    assert_eq!(missing.code, "invalid_arguments");
    assert!(missing.to_string().contains("content"), "{missing}");
    assert!(!ws.path().join("a").exists());
}

#[tokio::test]
async fn create_file_outside_the_workspace_is_denied() {
    let ws = TempWorkspace::new();
    let outside = TempWorkspace::new();
    let target = outside.path().join("escaped.txt");

    for path in [
        "../escaped.txt".to_owned(),
        target.to_string_lossy().into_owned(),
    ] {
        let err = call(&ws, "create_file", json!({"path": path, "content": "x"}))
            .await
            .unwrap_err();
        assert_eq!(err.code, "policy_denied", "{path}: {err}");
    }
    assert!(!target.exists());
    assert!(!ws.path().parent().unwrap().join("escaped.txt").exists());
}

#[tokio::test]
async fn create_file_in_read_only_mode_is_denied_with_the_reason() {
    let ws = TempWorkspace::new();
    let err = runner(&ws, true)
        .call("create_file", json!({"path": "a.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert!(err.to_string().contains("read-only"), "{err}");
    assert!(!ws.path().join("a.txt").exists());
}

#[tokio::test]
async fn edit_file_replaces_the_unique_occurrence() {
    let ws = TempWorkspace::new();
    ws.write(
        "src/lib.rs",
        "fn a() -> u8 {\n    1\n}\n\nfn b() -> u8 {\n    2\n}\n",
    );

    let result = call(
        &ws,
        "edit_file",
        json!({"path": "src/lib.rs", "oldString": "fn b() -> u8 {\n    2", "newString": "fn b() -> u8 {\n    20"}),
    )
    .await
    .unwrap();

    let expected = "fn a() -> u8 {\n    1\n}\n\nfn b() -> u8 {\n    20\n}\n";
    assert_eq!(ws.read("src/lib.rs"), expected);
    assert_eq!(result["path"], "src/lib.rs");
    assert_eq!(result["replacements"], 1);
    assert_eq!(result["sha256"], sha256_hex(expected.as_bytes()));
    assert_eq!(entries(&ws, "src"), vec!["lib.rs"]);
}

#[tokio::test]
async fn edit_file_reports_a_missing_old_string_as_a_conflict() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "alpha\nbeta\n");
    let err = call(
        &ws,
        "edit_file",
        json!({"path": "a.txt", "oldString": "gamma", "newString": "delta"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, "conflict");
    assert!(err.to_string().contains("not found"), "{err}");
    assert_eq!(ws.read("a.txt"), "alpha\nbeta\n");
}

#[tokio::test]
async fn edit_file_refuses_an_ambiguous_old_string_and_says_where_it_occurs() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "x = 1\ny = 2\nx = 1\n");
    let err = call(
        &ws,
        "edit_file",
        json!({"path": "a.txt", "oldString": "x = 1", "newString": "x = 3"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, "conflict");
    let message = err.to_string();
    assert!(message.contains("occurs 2 times"), "{message}");
    assert!(message.contains("include more context"), "{message}");
    assert_eq!(err.details.as_ref().unwrap()["lines"], json!([1, 3]));
    assert_eq!(ws.read("a.txt"), "x = 1\ny = 2\nx = 1\n");
}

#[tokio::test]
async fn edit_file_rejects_an_empty_old_string() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "abc\n");
    let err = call(
        &ws,
        "edit_file",
        json!({"path": "a.txt", "oldString": "", "newString": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(
        err.to_string().contains("oldString must not be empty"),
        "{err}"
    );
    assert_eq!(ws.read("a.txt"), "abc\n");
}

#[tokio::test]
async fn edit_file_checks_the_expected_hash() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "version 1\n");
    let stale = sha256_hex(b"version 0\n");

    let err = call(
        &ws,
        "edit_file",
        json!({"path": "a.txt", "oldString": "1", "newString": "2", "expectedSha256": stale}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, "conflict");
    assert!(err.to_string().contains("has changed"), "{err}");
    assert_eq!(ws.read("a.txt"), "version 1\n");

    let current = sha256_hex(b"version 1\n").to_uppercase();
    call(
        &ws,
        "edit_file",
        json!({"path": "a.txt", "oldString": "1", "newString": "2", "expectedSha256": current}),
    )
    .await
    .unwrap();
    assert_eq!(ws.read("a.txt"), "version 2\n");
}

#[tokio::test]
async fn edit_file_keeps_crlf_line_endings_when_the_old_string_uses_lf() {
    let ws = TempWorkspace::new();
    ws.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    call(
        &ws,
        "edit_file",
        json!({"path": "win.txt", "oldString": "one\ntwo", "newString": "one\n2\n2b"}),
    )
    .await
    .unwrap();
    assert_eq!(ws.read("win.txt"), "one\r\n2\r\n2b\r\nthree\r\n");
}

#[tokio::test]
async fn edit_file_refuses_binary_and_missing_files() {
    let ws = TempWorkspace::new();
    ws.write("blob.bin", b"head\0tail\n");
    let binary = call(
        &ws,
        "edit_file",
        json!({"path": "blob.bin", "oldString": "head", "newString": "HEAD"}),
    )
    .await
    .unwrap_err();
    assert_eq!(binary.code, "binary_file");
    assert_eq!(
        std::fs::read(ws.path().join("blob.bin")).unwrap(),
        b"head\0tail\n"
    );

    let missing = call(
        &ws,
        "edit_file",
        json!({"path": "nope.txt", "oldString": "a", "newString": "b"}),
    )
    .await
    .unwrap_err();
    assert_eq!(missing.code, "not_found");
    assert!(!ws.path().join("nope.txt").exists());
}

#[tokio::test]
async fn edit_file_respects_the_workspace_write_globs() {
    let ws = TempWorkspace::new();
    ws.write(
        ".agent-policy.yaml",
        "writes:\n  allow: [\"src/**\"]\n  deny: [\"src/generated/**\"]\n",
    );
    ws.write("src/ok.rs", "let a = 1;\n");
    ws.write("src/generated/out.rs", "let a = 1;\n");
    ws.write("README.md", "let a = 1;\n");
    let runner = runner(&ws, false);
    let edit = |path: &str| {
        runner.call(
            "edit_file",
            json!({"path": path, "oldString": "1", "newString": "2"}),
        )
    };

    edit("src/ok.rs").await.unwrap();
    assert_eq!(ws.read("src/ok.rs"), "let a = 2;\n");

    let denied = edit("src/generated/out.rs").await.unwrap_err();
    assert_eq!(denied.code, "policy_denied");
    assert!(denied.to_string().contains("writes.deny"), "{denied}");
    let outside_allow = edit("README.md").await.unwrap_err();
    assert_eq!(outside_allow.code, "policy_denied");
    assert!(
        outside_allow.to_string().contains("writes.allow"),
        "{outside_allow}"
    );
    assert_eq!(ws.read("src/generated/out.rs"), "let a = 1;\n");
    assert_eq!(ws.read("README.md"), "let a = 1;\n");
}

#[cfg(unix)]
#[tokio::test]
async fn writes_through_a_symlink_that_leaves_the_workspace_are_denied() {
    let ws = TempWorkspace::new();
    let outside = TempWorkspace::new();
    outside.write("victim.txt", "original\n");
    ws.symlink(outside.path(), "escape");
    ws.symlink(outside.path().join("victim.txt"), "victim-link.txt");

    let create = call(
        &ws,
        "create_file",
        json!({"path": "escape/new.txt", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(create.code, "policy_denied", "{create}");
    let edit = call(
        &ws,
        "edit_file",
        json!({"path": "victim-link.txt", "oldString": "original", "newString": "owned"}),
    )
    .await
    .unwrap_err();
    assert_eq!(edit.code, "policy_denied", "{edit}");
    let overwrite = call(
        &ws,
        "create_file",
        json!({"path": "escape/victim.txt", "content": "owned", "overwrite": true}),
    )
    .await
    .unwrap_err();
    assert_eq!(overwrite.code, "policy_denied", "{overwrite}");

    assert_eq!(outside.read("victim.txt"), "original\n");
    assert!(!outside.path().join("new.txt").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn edits_through_a_symlink_inside_the_workspace_change_its_target() {
    let ws = TempWorkspace::new();
    ws.write("real/config.toml", "level = 1\n");
    ws.symlink(ws.path().join("real/config.toml"), "config.toml");

    let result = call(
        &ws,
        "edit_file",
        json!({"path": "config.toml", "oldString": "1", "newString": "2"}),
    )
    .await
    .unwrap();

    assert_eq!(result["path"], "real/config.toml");
    assert_eq!(ws.read("real/config.toml"), "level = 2\n");
    assert!(
        std::fs::symlink_metadata(ws.path().join("config.toml"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
}

/// A named pipe where a file should be: edit and patch refuse it at once
/// instead of blocking a worker thread forever.
#[tokio::test]
async fn fifos_are_refused_by_writers_without_blocking() {
    let ws = TempWorkspace::new();
    let made = std::process::Command::new("mkfifo")
        .arg(ws.path().join("pipe.txt"))
        .status()
        .unwrap();
    assert!(made.success());
    let runner = runner(&ws, false);
    let edit = runner.call(
        "edit_file",
        json!({"path": "pipe.txt", "oldString": "a", "newString": "b"}),
    );
    let err = tokio::time::timeout(std::time::Duration::from_secs(20), edit)
        .await
        .expect("edit_file blocked on a FIFO")
        .unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");

    let diff = "--- a/pipe.txt\n+++ b/pipe.txt\n@@ -1 +1 @@\n-a\n+b\n";
    let patch = runner.call("apply_patch", json!({"unifiedDiff": diff}));
    let result = tokio::time::timeout(std::time::Duration::from_secs(20), patch)
        .await
        .expect("apply_patch blocked on a FIFO")
        .unwrap();
    assert_eq!(result["ok"], false, "{result}");
    assert!(
        result.to_string().contains("not a regular file"),
        "{result}"
    );
}
