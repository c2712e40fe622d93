//! apply_patch on malformed diffs and bad arguments: clear errors with the
//! line, and nothing written.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a failed setup must stop the test"
)]

use bridge_testkit::TempWorkspace;
use serde_json::json;

use super::{apply, diff, tree};
use crate::common::runner;

#[tokio::test]
async fn malformed_diffs_are_refused_with_the_line_and_nothing_is_written() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "one\ntwo\nthree\n");
    let header = ["--- a/a.txt", "+++ b/a.txt"];
    let with_header = |body: &[&str]| {
        let mut lines = header.to_vec();
        lines.extend_from_slice(body);
        diff(&lines)
    };
    let cases: Vec<(String, &str)> = vec![
        (
            "just some prose\nno diff here\n".to_owned(),
            "line 1: no file headers",
        ),
        (
            diff(&["@@ -1 +1 @@", "-one", "+ONE"]),
            "line 1: hunk header before any file header",
        ),
        (
            with_header(&["@@ -1,x +1 @@", "-one", "+ONE"]),
            "line 3: malformed hunk header",
        ),
        // A byte order mark after the name: another reader trimming it
        // would write a file this check never saw.
        (
            diff(&[
                "--- a/a.txt\u{feff}",
                "+++ b/a.txt\u{feff}",
                "@@ -1 +1 @@",
                "-one",
                "+ONE",
            ]),
            "line 1: the file name \"a.txt\\u{feff}\" holds the invisible character U+FEFF",
        ),
        (
            diff(&[
                "--- a/a\u{200b}.txt",
                "+++ b/a\u{200b}.txt",
                "@@ -1 +1 @@",
                "-one",
                "+ONE",
            ]),
            "holds the invisible character U+200B",
        ),
        (
            with_header(&["@@ 1,1 1,1 @@", "-one", "+ONE"]),
            "line 3: malformed hunk header",
        ),
        (
            with_header(&["@@ -1,2 +1,2 @@", " one", "-two", "+TWO", "+extra"]),
            "line 7: hunk body is longer than its header",
        ),
        (
            with_header(&["@@ -1,3 +1,3 @@", " one", "-two", "+TWO"]),
            "hunk at line 3 ends early",
        ),
        (
            with_header(&["@@ -1,2 +1,2 @@", " one", "?two", "+TWO"]),
            "line 5: unexpected line in hunk body",
        ),
        (
            diff(&["--- a/a.txt", "@@ -1 +1 @@"]),
            "line 2: expected a '+++ b/path' line",
        ),
        (
            diff(&[
                "diff --git a/a.txt b/a.txt",
                "index 1..2 100644",
                "Binary files a/a.txt and b/a.txt differ",
            ]),
            "line 3: binary patches are not supported",
        ),
        (
            diff(&[
                "diff --git a/a.txt b/b.txt",
                "similarity index 90%",
                "rename from a.txt",
                "rename to b.txt",
            ]),
            "line 3: renames and copies are not supported",
        ),
        (
            diff(&[
                "--- a/a.txt",
                "+++ b/other.txt",
                "@@ -1 +1 @@",
                "-one",
                "+ONE",
            ]),
            "line 1: renames are not supported",
        ),
        (
            with_header(&[
                "@@ -2,1 +2,1 @@",
                "-two",
                "+TWO",
                "@@ -1,1 +1,1 @@",
                "-one",
                "+ONE",
            ]),
            "line 6: hunks are out of order or overlap",
        ),
        (
            diff(&[
                "--- a/a.txt",
                "+++ b/a.txt",
                "@@ -1 +1 @@",
                "-one",
                "+ONE",
                "--- a/a.txt",
                "+++ b/a.txt",
                "@@ -3 +3 @@",
                "-three",
                "+THREE",
            ]),
            "line 6: a.txt appears twice",
        ),
        (
            diff(&[
                "--- /dev/null",
                "+++ b/new.txt",
                "@@ -1,1 +1,1 @@",
                "-x",
                "+y",
            ]),
            "line 3: new.txt is created",
        ),
    ];

    for (patch, expected) in cases {
        let err = apply(&ws, &patch).await.unwrap_err();
        assert_eq!(err.code, "invalid_arguments", "{patch}\n{err}");
        let message = err.to_string();
        assert!(
            message.contains("apply_patch: malformed diff at"),
            "{message}"
        );
        assert!(
            message.contains(expected),
            "expected {expected:?} in {message:?}\nfor\n{patch}"
        );
    }
    assert_eq!(ws.read("a.txt"), "one\ntwo\nthree\n");
    assert_eq!(tree(ws.path()), vec!["a.txt"]);
}

#[tokio::test]
async fn rejects_bad_arguments() {
    let ws = TempWorkspace::new();
    let err = runner(&ws, false)
        .call("apply_patch", json!({"diff": "--- a/x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.to_string().contains("apply_patch"), "{err}");
    assert!(err.to_string().contains("diff"), "{err}");
}

#[tokio::test]
async fn absurd_line_numbers_are_refused_or_conflict_without_panicking() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "one\n");
    let overflow = diff(&[
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -18446744073709551615,2 +1 @@",
        "-one",
        "+ONE",
    ]);
    let err = apply(&ws, &overflow).await.unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(
        err.to_string().contains("line 3: malformed hunk header"),
        "{err}"
    );

    let far = diff(&[
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -18446744073709551614 +18446744073709551614 @@",
        "-one",
        "+ONE",
    ]);
    let strict = apply(&ws, &far).await.unwrap();
    assert_eq!(strict["ok"], false, "{strict}");
    assert_eq!(
        strict["conflicts"][0]["line"],
        18_446_744_073_709_551_614_u64
    );
    assert_eq!(strict["conflicts"][0]["actual"], json!([]));
    assert_eq!(ws.read("a.txt"), "one\n");
    // Without verification the lines are looked for anywhere: found once.
    let lenient = runner(&ws, false)
        .call("apply_patch", json!({"unifiedDiff": far, "verify": false}))
        .await
        .unwrap();
    assert_eq!(lenient["ok"], true, "{lenient}");
    assert_eq!(ws.read("a.txt"), "ONE\n");

    let endless = diff(&[
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,1000000000 +1,1000000000 @@",
        " one",
    ]);
    let err = apply(&ws, &endless).await.unwrap_err();
    assert!(err.to_string().contains("ends early"), "{err}");
    assert_eq!(ws.read("a.txt"), "ONE\n");
}
