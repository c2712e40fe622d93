//! Tests of read_file on real temp workspaces.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_engine::ToolFailure;
use bridge_policy::PermissionRules;
use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::{runner, runner_with};

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn read(ws: &TempWorkspace, args: Value) -> Result<Value, ToolFailure> {
    runner(ws, false).call("read_file", args).await
}

#[tokio::test]
async fn reads_a_whole_file_with_its_hash_and_line_count() {
    let ws = TempWorkspace::new();
    let text = "fn main() {\n    println!(\"hi\");\n}\n";
    ws.write("src/main.rs", text);

    let result = read(&ws, json!({"path": "src/main.rs"})).await.unwrap();

    assert_eq!(result["path"], "src/main.rs");
    assert_eq!(result["content"], text);
    assert_eq!(result["sha256"], sha256_hex(text.as_bytes()));
    assert_eq!(result["totalLines"], 3);
    assert_eq!(result["startLine"], 1);
    assert_eq!(result["endLine"], 3);
    assert!(result.get("lossy").is_none());
    assert!(result.get("truncated").is_none());
}

#[tokio::test]
async fn reads_a_line_range_but_hashes_the_whole_file() {
    let ws = TempWorkspace::new();
    let text: String = (1..=10).map(|n| format!("line {n}\r\n")).collect();
    ws.write("notes.txt", &text);

    let result = read(
        &ws,
        json!({"path": "notes.txt", "startLine": 3, "endLine": 5}),
    )
    .await
    .unwrap();

    assert_eq!(result["content"], "line 3\r\nline 4\r\nline 5\r\n");
    assert_eq!(result["startLine"], 3);
    assert_eq!(result["endLine"], 5);
    assert_eq!(result["totalLines"], 10);
    assert_eq!(result["sha256"], sha256_hex(text.as_bytes()));
}

#[tokio::test]
async fn a_range_past_the_end_is_clamped_and_a_start_past_it_is_refused() {
    let ws = TempWorkspace::new();
    ws.write("short.txt", "a\nb\nc");

    let tail = read(
        &ws,
        json!({"path": "short.txt", "startLine": 2, "endLine": 99}),
    )
    .await
    .unwrap();
    assert_eq!(tail["content"], "b\nc");
    assert_eq!(tail["endLine"], 3);
    assert_eq!(tail["totalLines"], 3);

    let only_start = read(&ws, json!({"path": "short.txt", "startLine": 3}))
        .await
        .unwrap();
    assert_eq!(only_start["content"], "c");

    let err = read(&ws, json!({"path": "short.txt", "startLine": 4}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.to_string().contains("past the end"), "{err}");
}

#[tokio::test]
async fn bad_line_numbers_are_invalid_arguments() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "x\ny\n");
    for args in [
        json!({"path": "a.txt", "startLine": 0}),
        json!({"path": "a.txt", "endLine": 0}),
        json!({"path": "a.txt", "startLine": 2, "endLine": 1}),
        json!({"path": "a.txt", "startLine": -1}),
        json!({"path": "a.txt", "startLine": "1"}),
    ] {
        let err = read(&ws, args.clone()).await.unwrap_err();
        assert!(err.code == "invalid_arguments", "{args}: {err:?}");
        assert!(err.to_string().contains("read_file"), "{err}");
    }
}

#[tokio::test]
async fn unknown_and_missing_arguments_are_refused_by_name() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "x");
    let err = read(&ws, json!({"path": "a.txt", "lines": 3}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.to_string().contains("lines"), "{err}");

    let err = read(&ws, json!({})).await.unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.to_string().contains("path"), "{err}");
}

#[tokio::test]
async fn a_file_over_the_limit_is_refused_unless_a_range_is_given() {
    let ws = TempWorkspace::new();
    let text: String = (1..=200).map(|n| format!("row {n:04}\n")).collect();
    ws.write("big.log", &text);
    let settings = ToolSettings {
        read_max_bytes: 256,
        ..ToolSettings::default()
    };
    let runner = runner_with(&ws, false, settings, PermissionRules::default());

    let err = runner
        .call("read_file", json!({"path": "big.log"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "big.log is {} bytes, over the limit of 256 bytes",
            text.len()
        )
    );
    assert_eq!(err.code, "too_large");

    let result = runner
        .call(
            "read_file",
            json!({"path": "big.log", "startLine": 100, "endLine": 102}),
        )
        .await
        .unwrap();
    assert_eq!(result["content"], "row 0100\nrow 0101\nrow 0102\n");
    assert_eq!(result["totalLines"], 200);
    assert_eq!(result["sha256"], sha256_hex(text.as_bytes()));

    // A range wider than the cap returns whole lines up to the cap, and says so.
    let capped = runner
        .call("read_file", json!({"path": "big.log", "startLine": 1}))
        .await
        .unwrap();
    let content = capped["content"].as_str().unwrap();
    assert!(content.len() <= 256, "{} bytes", content.len());
    assert!(content.ends_with('\n'));
    assert_eq!(capped["truncated"], true);
    let lines_returned = content.lines().count() as u64;
    assert_eq!(capped["endLine"], lines_returned);
    assert_eq!(
        content,
        text.lines()
            .take(lines_returned as usize)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
}

#[tokio::test]
async fn a_single_line_longer_than_the_cap_is_cut_on_a_character_boundary() {
    let ws = TempWorkspace::new();
    let line = "é".repeat(100); // 200 bytes
    ws.write("one.txt", format!("{line}\n"));
    let settings = ToolSettings {
        read_max_bytes: 51,
        ..ToolSettings::default()
    };
    let runner = runner_with(&ws, false, settings, PermissionRules::default());

    let result = runner
        .call(
            "read_file",
            json!({"path": "one.txt", "startLine": 1, "endLine": 1}),
        )
        .await
        .unwrap();
    assert_eq!(result["content"], "é".repeat(25));
    assert_eq!(result["truncated"], true);
    assert!(result.get("lossy").is_none());
}

#[tokio::test]
async fn binary_files_are_refused() {
    let ws = TempWorkspace::new();
    ws.write("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR");

    let err = read(&ws, json!({"path": "image.png"})).await.unwrap_err();
    assert!(err.message == "image.png is a binary file", "{err:?}");
    assert_eq!(err.code, "binary_file");
}

#[tokio::test]
async fn invalid_utf8_is_returned_lossily_and_flagged() {
    let ws = TempWorkspace::new();
    let bytes = b"caf\xe9 latin-1\n";
    ws.write("latin1.txt", bytes);

    let result = read(&ws, json!({"path": "latin1.txt"})).await.unwrap();
    assert_eq!(result["content"], "caf\u{FFFD} latin-1\n");
    assert_eq!(result["lossy"], true);
    assert_eq!(result["sha256"], sha256_hex(bytes));
}

#[tokio::test]
async fn an_empty_file_has_no_lines() {
    let ws = TempWorkspace::new();
    ws.write("empty.txt", "");
    let result = read(&ws, json!({"path": "empty.txt"})).await.unwrap();
    assert_eq!(result["content"], "");
    assert_eq!(result["totalLines"], 0);
    assert_eq!(result["sha256"], sha256_hex(b""));
}

#[tokio::test]
async fn missing_files_and_directories_are_reported_clearly() {
    let ws = TempWorkspace::new();
    ws.mkdir("src");

    let err = read(&ws, json!({"path": "src/nope.rs"})).await.unwrap_err();
    assert!(
        err.code == "not_found" && err.message == "not found: src/nope.rs",
        "{err:?}"
    );

    let err = read(&ws, json!({"path": "src"})).await.unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.to_string().contains("directory"), "{err}");
}

#[tokio::test]
async fn paths_outside_the_workspace_are_denied() {
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    ws.symlink(outside.path().join("secret.txt"), "link.txt");

    for path in ["../secret.txt", "/etc/passwd", "link.txt"] {
        let err = read(&ws, json!({"path": path})).await.unwrap_err();
        assert!(err.code == "policy_denied", "{path}: {err:?}");
        assert_eq!(err.code, "policy_denied");
    }
}

#[tokio::test]
async fn a_range_after_a_huge_first_line_is_read_without_that_line() {
    let ws = TempWorkspace::new();
    // 50 MB first line, far over read_max_bytes: it is skipped while streaming,
    // yet still hashed and counted.
    let mut bytes = vec![b'a'; 50 * 1024 * 1024];
    bytes.extend_from_slice(b"\nsecond\nthird\n");
    ws.write("huge-line.txt", &bytes);

    let result = read(&ws, json!({"path": "huge-line.txt", "startLine": 2}))
        .await
        .unwrap();
    assert_eq!(result["content"], "second\nthird\n");
    assert_eq!(result["startLine"], 2);
    assert_eq!(result["endLine"], 3);
    assert_eq!(result["totalLines"], 3);
    assert_eq!(result["sha256"], sha256_hex(&bytes));
    assert!(result.get("truncated").is_none(), "{result}");

    // Asking for the huge line itself gives its first read_max_bytes.
    let first = read(&ws, json!({"path": "huge-line.txt", "endLine": 1}))
        .await
        .unwrap();
    let limit = ToolSettings::default().read_max_bytes as usize;
    assert_eq!(first["content"].as_str().unwrap().len(), limit);
    assert_eq!(first["endLine"], 1);
    assert_eq!(first["truncated"], true);
}

/// A named pipe where a file should be: refused at once, never a hang
/// (opening a FIFO for reading blocks until a writer comes).
#[tokio::test]
async fn fifos_are_refused_without_blocking() {
    let ws = TempWorkspace::new();
    let fifo = ws.path().join("pipe.rs");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let runner = runner(&ws, false);
    for tool in ["read_file", "symbols"] {
        let call = runner.call(tool, json!({"path": "pipe.rs"}));
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(20), call)
            .await
            .unwrap_or_else(|_| panic!("{tool} blocked on a FIFO"));
        let err = outcome.unwrap_err();
        assert_eq!(err.code, "invalid_arguments", "{tool}: {err}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}
