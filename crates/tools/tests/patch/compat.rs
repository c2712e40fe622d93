//! apply_patch on diffs written by real tools (GNU diff, git) and on the
//! header variants they produce.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a failed setup must stop the test"
)]

use std::process::Command;

use bridge_testkit::TempWorkspace;

use super::{apply, bytes, diff, numbered};

#[tokio::test]
async fn applies_what_gnu_diff_produces() {
    let ws = TempWorkspace::new();
    let scratch = tempfile::tempdir().unwrap();
    let old: String = (1..=200).map(|n| format!("row {n}\n")).collect();
    let new = old
        .replace("row 7\n", "row seven\n")
        .replace("row 100\n", "")
        .replace("row 150\n", "row 150\nrow 150b\n")
        + "tail without newline";
    std::fs::write(scratch.path().join("old"), &old).unwrap();
    std::fs::write(scratch.path().join("new"), &new).unwrap();
    let output = Command::new("diff")
        .args([
            "-u",
            "--label",
            "a/data.txt",
            "--label",
            "b/data.txt",
            "old",
            "new",
        ])
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "diff found differences");
    let patch = String::from_utf8(output.stdout).unwrap();
    ws.write("data.txt", &old);

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], true, "{result}\n{patch}");
    assert_eq!(ws.read("data.txt"), new);
}

#[tokio::test]
async fn applies_what_git_diff_produces() {
    let ws = TempWorkspace::new();
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "-c",
                "core.autocrlf=false",
            ])
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    let files = [
        (
            "src/main.rs",
            "fn main() {\n    println!(\"hello\");\n}\n".to_owned(),
        ),
        ("docs/old.md", "# Old\n\nremove me\n".to_owned()),
        ("win.txt", "a\r\nb\r\nc\r\n".to_owned()),
        ("big.txt", numbered(300)),
    ];
    git(&["init", "-q"]);
    for (path, content) in &files {
        let full = repo.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, content).unwrap();
        ws.write(path, content);
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    std::fs::write(
        repo.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hello, patch\");\n}\n",
    )
    .unwrap();
    std::fs::remove_file(repo.path().join("docs/old.md")).unwrap();
    std::fs::create_dir_all(repo.path().join("docs/new")).unwrap();
    std::fs::write(repo.path().join("docs/new/guide.md"), "# Guide\n").unwrap();
    std::fs::write(repo.path().join("win.txt"), "a\r\nB\r\nc\r\n").unwrap();
    let big = numbered(300)
        .replace("line 10\n", "line ten\n")
        .replace("line 200\n", "line 200\nline 200.5\n");
    std::fs::write(repo.path().join("big.txt"), &big).unwrap();
    git(&["add", "-A"]);
    let patch = String::from_utf8(git(&["diff", "--cached"])).unwrap();

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], true, "{result}\n{patch}");
    for path in ["src/main.rs", "docs/new/guide.md", "win.txt", "big.txt"] {
        assert_eq!(
            bytes(&ws, path),
            std::fs::read(repo.path().join(path)).unwrap(),
            "{path}"
        );
    }
    assert!(!ws.path().join("docs/old.md").exists());
}

#[tokio::test]
async fn accepts_the_header_variants_of_common_tools() {
    let ws = TempWorkspace::new();
    ws.write("stamped.txt", "a\nb\n");
    ws.write("plain.txt", "one\n");
    ws.write("sp ace.txt", "x\n");
    ws.write("café.txt", "y\n");
    ws.write("blank-context.txt", "first\n\nlast\n");
    let patch = diff(&[
        "From 1234 Mon Sep 17 00:00:00 2001",
        "Subject: [PATCH] a mail with prose before the diff",
        "",
        "---",
        " 5 files changed",
        "",
        "--- a/stamped.txt\t2024-01-01 10:00:00.000000000 +0000",
        "+++ b/stamped.txt\t2024-01-02 11:00:00.000000000 +0000",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "+B",
        "--- plain.txt",
        "+++ plain.txt",
        "@@ -1 +1 @@",
        "-one",
        "+ONE",
        "diff --git \"a/sp ace.txt\" \"b/sp ace.txt\"",
        "--- \"a/sp ace.txt\"",
        "+++ \"b/sp ace.txt\"",
        "@@ -1 +1 @@",
        "-x",
        "+X",
        "diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"",
        "--- \"a/caf\\303\\251.txt\"",
        "+++ \"b/caf\\303\\251.txt\"",
        "@@ -1 +1 @@",
        "-y",
        "+Y",
        "--- a/blank-context.txt",
        "+++ b/blank-context.txt",
        "@@ -1,3 +1,3 @@",
        " first",
        "",
        "-last",
        "+LAST",
        "-- ",
        "2.47.3",
    ]);

    let result = apply(&ws, &patch).await.unwrap();

    assert_eq!(result["ok"], true, "{result}");
    let paths: Vec<&str> = result["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "stamped.txt",
            "plain.txt",
            "sp ace.txt",
            "café.txt",
            "blank-context.txt"
        ]
    );
    assert_eq!(ws.read("stamped.txt"), "a\nB\n");
    assert_eq!(ws.read("plain.txt"), "ONE\n");
    assert_eq!(ws.read("sp ace.txt"), "X\n");
    assert_eq!(ws.read("café.txt"), "Y\n");
    assert_eq!(ws.read("blank-context.txt"), "first\n\nLAST\n");
}
