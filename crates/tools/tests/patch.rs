//! Tests of apply_patch on real temp workspaces: parsing, preimage
//! verification, all-or-nothing writes and the write policy.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a failed setup must stop the test"
)]

use bridge_engine::ToolFailure;
use std::path::Path;

use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

use crate::common::runner;

mod compat;
mod corpus;
mod malformed;

/// A diff from its lines (joined with `\n`, with a final newline), so that
/// the leading space of context lines survives.
fn diff(lines: &[&str]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

async fn apply(ws: &TempWorkspace, diff: &str) -> Result<Value, ToolFailure> {
    runner(ws, false)
        .call("apply_patch", json!({"unifiedDiff": diff}))
        .await
}

fn bytes(ws: &TempWorkspace, relative: &str) -> Vec<u8> {
    std::fs::read(ws.path().join(relative)).unwrap()
}

/// Every file under `dir`, relative, sorted: to see that nothing extra
/// (temp files, half-created directories) was left.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.push(format!("{relative}/"));
                walk(base, &path, out);
            } else {
                out.push(relative);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn numbered(count: usize) -> String {
    (1..=count).map(|n| format!("line {n}\n")).collect()
}

#[tokio::test]
async fn modifies_one_file_with_two_hunks() {
    let ws = TempWorkspace::new();
    ws.write("src/lib.rs", numbered(20));
    let patch = diff(&[
        "--- a/src/lib.rs",
        "+++ b/src/lib.rs",
        "@@ -2,3 +2,3 @@",
        " line 2",
        "-line 3",
        "+line three",
        " line 4",
        "@@ -17,3 +17,4 @@ fn context_is_ignored()",
        " line 17",
        " line 18",
        "+line 18.5",
        " line 19",
    ]);

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], true);
    assert_eq!(
        result["files"],
        json!([{"path": "src/lib.rs", "status": "modified", "hunks": 2}])
    );
    assert_eq!(result["conflicts"], json!([]));
    let expected = numbered(20)
        .replace("line 3\n", "line three\n")
        .replace("line 18\n", "line 18\nline 18.5\n");
    assert_eq!(ws.read("src/lib.rs"), expected);
    assert_eq!(tree(&ws.path().join("src")), vec!["lib.rs"]);
}

#[tokio::test]
async fn creates_modifies_and_deletes_files_in_one_git_patch() {
    let ws = TempWorkspace::new();
    ws.write("keep.txt", "a\nb\nc\n");
    ws.write("old/gone.txt", "bye\nnow\n");
    let patch = diff(&[
        "diff --git a/keep.txt b/keep.txt",
        "index 1111111..2222222 100644",
        "--- a/keep.txt",
        "+++ b/keep.txt",
        "@@ -1,3 +1,3 @@",
        " a",
        "-b",
        "+B",
        " c",
        "diff --git a/new/dir/made.rs b/new/dir/made.rs",
        "new file mode 100644",
        "index 0000000..3333333",
        "--- /dev/null",
        "+++ b/new/dir/made.rs",
        "@@ -0,0 +1,2 @@",
        "+fn made() {}",
        "+// end",
        "diff --git a/old/gone.txt b/old/gone.txt",
        "deleted file mode 100644",
        "index 4444444..0000000",
        "--- a/old/gone.txt",
        "+++ /dev/null",
        "@@ -1,2 +0,0 @@",
        "-bye",
        "-now",
        "diff --git a/empty.txt b/empty.txt",
        "new file mode 100644",
        "index 0000000..e69de29",
    ]);

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(
        result["files"],
        json!([
            {"path": "keep.txt", "status": "modified", "hunks": 1},
            {"path": "new/dir/made.rs", "status": "created", "hunks": 1},
            {"path": "old/gone.txt", "status": "deleted", "hunks": 1},
            {"path": "empty.txt", "status": "created", "hunks": 0},
        ])
    );
    assert_eq!(ws.read("keep.txt"), "a\nB\nc\n");
    assert_eq!(ws.read("new/dir/made.rs"), "fn made() {}\n// end\n");
    assert!(!ws.path().join("old/gone.txt").exists());
    assert_eq!(ws.read("empty.txt"), "");
}

#[tokio::test]
async fn keeps_crlf_line_endings_whatever_the_diff_uses() {
    let ws = TempWorkspace::new();
    ws.write("lf-diff.txt", "one\r\ntwo\r\nthree\r\n");
    ws.write("crlf-diff.txt", "one\r\ntwo\r\nthree\r\n");
    let lf_diff = diff(&[
        "--- a/lf-diff.txt",
        "+++ b/lf-diff.txt",
        "@@ -1,3 +1,4 @@",
        " one",
        "-two",
        "+2",
        "+2.5",
        " three",
    ]);
    // The same change, with the whole diff in CRLF as a Windows tool writes it.
    let crlf_diff = lf_diff
        .replace("lf-diff.txt", "crlf-diff.txt")
        .replace('\n', "\r\n");

    apply(&ws, &lf_diff).await.unwrap();
    apply(&ws, &crlf_diff).await.unwrap();

    assert_eq!(bytes(&ws, "lf-diff.txt"), b"one\r\n2\r\n2.5\r\nthree\r\n");
    assert_eq!(bytes(&ws, "crlf-diff.txt"), b"one\r\n2\r\n2.5\r\nthree\r\n");
}

#[tokio::test]
async fn honours_no_newline_at_end_of_file_both_ways() {
    let ws = TempWorkspace::new();
    ws.write("add-newline.txt", "a\nb");
    ws.write("drop-newline.txt", "a\nb\n");
    ws.write("append.txt", "x\ny");
    let patch = diff(&[
        "--- a/add-newline.txt",
        "+++ b/add-newline.txt",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "\\ No newline at end of file",
        "+b",
        "--- a/drop-newline.txt",
        "+++ b/drop-newline.txt",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "+B",
        "\\ No newline at end of file",
        "--- a/append.txt",
        "+++ b/append.txt",
        "@@ -1,2 +1,3 @@",
        " x",
        "-y",
        "\\ No newline at end of file",
        "+y",
        "+z",
        "\\ No newline at end of file",
    ]);

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(ws.read("add-newline.txt"), "a\nb\n");
    assert_eq!(ws.read("drop-newline.txt"), "a\nB");
    assert_eq!(ws.read("append.txt"), "x\ny\nz");
}

#[tokio::test]
async fn a_conflict_in_the_second_file_writes_nothing_and_lists_every_conflicting_hunk() {
    let ws = TempWorkspace::new();
    ws.write("first.txt", "1\n2\n3\n");
    ws.write("second.txt", numbered(30));
    let before_first = bytes(&ws, "first.txt");
    let before_second = bytes(&ws, "second.txt");
    let patch = diff(&[
        "--- a/first.txt",
        "+++ b/first.txt",
        "@@ -1,3 +1,3 @@",
        " 1",
        "-2",
        "+two",
        " 3",
        "--- a/second.txt",
        "+++ b/second.txt",
        "@@ -2,3 +2,3 @@",
        " line 2",
        "-line 3 (as the model remembered it)",
        "+line 3 fixed",
        " line 4",
        "@@ -10,3 +10,3 @@",
        " line 10",
        "-line 11",
        "+line eleven",
        " line 12",
        "@@ -20,2 +20,2 @@",
        " line 20",
        "-line 99",
        "+line 21 fixed",
        "--- /dev/null",
        "+++ b/created-too.txt",
        "@@ -0,0 +1 @@",
        "+new",
    ]);

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], false);
    assert_eq!(result["files"], json!([]));
    let conflicts = result["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 2, "{result}");
    assert_eq!(conflicts[0]["file"], "second.txt");
    assert_eq!(conflicts[0]["hunk"], 1);
    assert_eq!(conflicts[0]["line"], 2);
    assert_eq!(
        conflicts[0]["expected"],
        json!(["line 2", "line 3 (as the model remembered it)", "line 4"])
    );
    assert_eq!(
        conflicts[0]["actual"],
        json!(["line 2", "line 3", "line 4"])
    );
    assert!(
        conflicts[0]["reason"]
            .as_str()
            .unwrap()
            .contains("does not contain")
    );
    assert_eq!(conflicts[1]["hunk"], 3);
    assert_eq!(conflicts[1]["line"], 20);
    assert_eq!(conflicts[1]["actual"], json!(["line 20", "line 21"]));
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .contains("nothing was written")
    );

    assert_eq!(bytes(&ws, "first.txt"), before_first);
    assert_eq!(bytes(&ws, "second.txt"), before_second);
    assert!(!ws.path().join("created-too.txt").exists());
    assert_eq!(tree(ws.path()), vec!["first.txt", "second.txt"]);
}

#[tokio::test]
async fn file_level_conflicts_are_reported_too() {
    let ws = TempWorkspace::new();
    ws.write("exists.txt", "already here\n");
    ws.write("blob.bin", b"\0\x01\x02\n");
    let patch = diff(&[
        "--- /dev/null",
        "+++ b/exists.txt",
        "@@ -0,0 +1 @@",
        "+new",
        "--- a/missing.txt",
        "+++ b/missing.txt",
        "@@ -1 +1 @@",
        "-a",
        "+b",
        "--- a/blob.bin",
        "+++ b/blob.bin",
        "@@ -1 +1 @@",
        "-x",
        "+y",
    ]);

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], false);
    let reasons: Vec<(&str, &str)> = result["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["file"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(reasons.len(), 3, "{result}");
    assert!(reasons[0].1.contains("already exists"), "{reasons:?}");
    assert_eq!(reasons[1].0, "missing.txt");
    assert!(reasons[1].1.contains("does not exist"), "{reasons:?}");
    assert!(reasons[2].1.contains("binary"), "{reasons:?}");
    assert_eq!(result["conflicts"][0]["hunk"], Value::Null);
    assert_eq!(ws.read("exists.txt"), "already here\n");
}

#[tokio::test]
async fn a_deletion_that_does_not_cover_the_whole_file_conflicts() {
    let ws = TempWorkspace::new();
    ws.write("grown.txt", "a\nb\nadded later\n");
    let patch = diff(&[
        "--- a/grown.txt",
        "+++ /dev/null",
        "@@ -1,2 +0,0 @@",
        "-a",
        "-b",
    ]);
    let result = apply(&ws, &patch).await.unwrap();
    assert_eq!(result["ok"], false);
    assert!(
        result["conflicts"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("1 of its lines are not in the diff"),
        "{result}"
    );
    assert_eq!(ws.read("grown.txt"), "a\nb\nadded later\n");
}

#[tokio::test]
async fn verify_requires_the_stated_line_and_verify_false_finds_a_unique_offset() {
    let ws = TempWorkspace::new();
    let original = format!("header 1\nheader 2\n{}", numbered(10));
    ws.write("shifted.txt", &original);
    // Written against the file before its two header lines were added.
    let patch = diff(&[
        "--- a/shifted.txt",
        "+++ b/shifted.txt",
        "@@ -4,3 +4,3 @@",
        " line 4",
        "-line 5",
        "+line five",
        " line 6",
    ]);

    let strict = apply(&ws, &patch).await.unwrap();
    assert_eq!(strict["ok"], false);
    let reason = strict["conflicts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("line 6 (offset +2)"), "{reason}");
    assert!(reason.contains("verify: false"), "{reason}");
    assert_eq!(ws.read("shifted.txt"), original);

    let lenient = runner(&ws, false)
        .call(
            "apply_patch",
            json!({"unifiedDiff": patch, "verify": false}),
        )
        .await
        .unwrap();
    assert_eq!(lenient["ok"], true, "{lenient}");
    assert_eq!(
        lenient["files"][0]["offsets"],
        json!([{"hunk": 1, "offset": 2}])
    );
    assert_eq!(
        ws.read("shifted.txt"),
        original.replace("line 5\n", "line five\n")
    );
}

#[tokio::test]
async fn verify_false_still_refuses_ambiguous_context() {
    let ws = TempWorkspace::new();
    ws.write("dup.txt", "x\n}\ny\n}\nz\n");
    let patch = diff(&[
        "--- a/dup.txt",
        "+++ b/dup.txt",
        "@@ -9,1 +9,1 @@",
        "-}",
        "+};",
    ]);
    let result = runner(&ws, false)
        .call(
            "apply_patch",
            json!({"unifiedDiff": patch, "verify": false}),
        )
        .await
        .unwrap();
    assert_eq!(result["ok"], false);
    let reason = result["conflicts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("lines 2, 4"), "{reason}");
    assert_eq!(ws.read("dup.txt"), "x\n}\ny\n}\nz\n");
}

#[tokio::test]
async fn a_patch_touching_a_path_outside_the_workspace_is_denied_whole() {
    let ws = TempWorkspace::new();
    ws.write("inside.txt", "in\n");
    let outside_name = format!(
        "{}-outside.txt",
        ws.path().file_name().unwrap().to_string_lossy()
    );
    let patch = diff(&[
        "--- a/inside.txt",
        "+++ b/inside.txt",
        "@@ -1 +1 @@",
        "-in",
        "+IN",
        "--- /dev/null",
        &format!("+++ b/../{outside_name}"),
        "@@ -0,0 +1 @@",
        "+escaped",
    ]);

    let err = apply(&ws, &patch).await.unwrap_err();

    assert_eq!(err.code, "policy_denied", "{err}");
    assert_eq!(ws.read("inside.txt"), "in\n");
    assert!(!ws.path().parent().unwrap().join(&outside_name).exists());
}

#[cfg(unix)]
#[tokio::test]
async fn a_patch_through_a_symlink_out_of_the_workspace_is_denied() {
    let ws = TempWorkspace::new();
    let outside = TempWorkspace::new();
    outside.write("victim.txt", "safe\n");
    ws.symlink(outside.path(), "linked");
    let patch = diff(&[
        "--- a/linked/victim.txt",
        "+++ b/linked/victim.txt",
        "@@ -1 +1 @@",
        "-safe",
        "+owned",
    ]);
    let err = apply(&ws, &patch).await.unwrap_err();
    assert_eq!(err.code, "policy_denied", "{err}");
    assert_eq!(outside.read("victim.txt"), "safe\n");
}

#[tokio::test]
async fn read_only_mode_denies_patches() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "a\n");
    let patch = diff(&["--- a/a.txt", "+++ b/a.txt", "@@ -1 +1 @@", "-a", "+b"]);
    let err = runner(&ws, true)
        .call("apply_patch", json!({"unifiedDiff": patch}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert!(err.to_string().contains("read-only"), "{err}");
    assert_eq!(ws.read("a.txt"), "a\n");
}

#[tokio::test]
async fn the_workspace_policy_globs_decide_per_file_and_a_denial_stops_the_whole_patch() {
    let ws = TempWorkspace::new();
    ws.write(
        ".agent-policy.yaml",
        "writes:\n  allow: [\"src/**/*.ts\"]\n  deny: [\"**/dist/**\"]\n",
    );
    ws.write("src/app.ts", "let a = 1;\n");
    ws.write("src/dist/app.js", "var a = 1;\n");
    let allowed = diff(&[
        "--- a/src/app.ts",
        "+++ b/src/app.ts",
        "@@ -1 +1 @@",
        "-let a = 1;",
        "+let a = 2;",
    ]);
    let mixed = diff(&[
        "--- a/src/app.ts",
        "+++ b/src/app.ts",
        "@@ -1 +1 @@",
        "-let a = 2;",
        "+let a = 3;",
        "--- a/src/dist/app.js",
        "+++ b/src/dist/app.js",
        "@@ -1 +1 @@",
        "-var a = 1;",
        "+var a = 3;",
    ]);
    let policy_file = diff(&[
        "--- a/.agent-policy.yaml",
        "+++ b/.agent-policy.yaml",
        "@@ -1 +1 @@",
        "-writes:",
        "+wrote:",
    ]);

    assert_eq!(apply(&ws, &allowed).await.unwrap()["ok"], true);
    assert_eq!(ws.read("src/app.ts"), "let a = 2;\n");

    let err = apply(&ws, &mixed).await.unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert!(err.to_string().contains("writes.deny"), "{err}");
    assert_eq!(
        ws.read("src/app.ts"),
        "let a = 2;\n",
        "the allowed file is not written either"
    );
    assert_eq!(ws.read("src/dist/app.js"), "var a = 1;\n");

    let err = apply(&ws, &policy_file).await.unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert!(ws.read(".agent-policy.yaml").starts_with("writes:"));
}

#[tokio::test]
async fn pure_insertions_at_the_start_and_end_of_a_file() {
    let ws = TempWorkspace::new();
    ws.write("list.txt", "b\nc\n");
    let patch = diff(&[
        "--- a/list.txt",
        "+++ b/list.txt",
        "@@ -0,0 +1 @@",
        "+a",
        "@@ -2,0 +4 @@",
        "+d",
    ]);
    let result = apply(&ws, &patch).await.unwrap();
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(ws.read("list.txt"), "a\nb\nc\nd\n");
}
