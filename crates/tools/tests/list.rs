//! Tests of list_files on real temp workspaces.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_engine::ToolFailure;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use bridge_policy::PermissionRules;
use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use serde_json::{Value, json};

use crate::common::{runner, runner_with};

async fn list(ws: &TempWorkspace, args: Value) -> Result<Value, ToolFailure> {
    runner(ws, false).call("list_files", args).await
}

fn files(result: &Value) -> Vec<&str> {
    result["files"]
        .as_array()
        .expect("files array")
        .iter()
        .map(|file| file.as_str().expect("file is a string"))
        .collect()
}

fn sample_workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write("README.md", "# demo\n");
    ws.write("src/main.rs", "fn main() {}\n");
    ws.write("src/lib.rs", "pub fn lib() {}\n");
    ws.write("src/util/strings.rs", "pub fn s() {}\n");
    ws.write("web/app.ts", "export {}\n");
    ws.write(".env", "SECRET=1\n");
    ws.write(".github/workflows/ci.yml", "on: push\n");
    ws.write(".git/config", "[core]\n");
    ws.write(".git/HEAD", "ref: refs/heads/main\n");
    ws
}

#[tokio::test]
async fn lists_all_visible_files_sorted() {
    let ws = sample_workspace();
    let result = list(&ws, json!({})).await.unwrap();
    assert_eq!(
        files(&result),
        [
            "README.md",
            "src/lib.rs",
            "src/main.rs",
            "src/util/strings.rs",
            "web/app.ts"
        ]
    );
    assert_eq!(result["truncated"], false);
}

#[tokio::test]
async fn hidden_files_on_request_but_never_git_internals() {
    let ws = sample_workspace();
    let result = list(&ws, json!({"includeHidden": true})).await.unwrap();
    assert_eq!(
        files(&result),
        [
            ".env",
            ".github/workflows/ci.yml",
            "README.md",
            "src/lib.rs",
            "src/main.rs",
            "src/util/strings.rs",
            "web/app.ts"
        ]
    );
}

#[tokio::test]
async fn a_hidden_directory_named_as_path_is_listed() {
    let ws = sample_workspace();
    let result = list(&ws, json!({"path": ".github"})).await.unwrap();
    assert_eq!(files(&result), [".github/workflows/ci.yml"]);
}

#[tokio::test]
async fn globs_match_file_names_or_relative_paths() {
    let ws = sample_workspace();

    let by_name = list(&ws, json!({"glob": "*.rs"})).await.unwrap();
    assert_eq!(
        files(&by_name),
        ["src/lib.rs", "src/main.rs", "src/util/strings.rs"]
    );

    // With a '/', '*' does not cross directories.
    let shallow = list(&ws, json!({"glob": "src/*.rs"})).await.unwrap();
    assert_eq!(files(&shallow), ["src/lib.rs", "src/main.rs"]);

    let anchored = list(&ws, json!({"glob": "/src/*.rs"})).await.unwrap();
    assert_eq!(files(&anchored), ["src/lib.rs", "src/main.rs"]);

    let deep = list(&ws, json!({"glob": "src/**/*.rs"})).await.unwrap();
    assert_eq!(
        files(&deep),
        ["src/lib.rs", "src/main.rs", "src/util/strings.rs"]
    );

    let alternatives = list(&ws, json!({"glob": "*.{md,ts}"})).await.unwrap();
    assert_eq!(files(&alternatives), ["README.md", "web/app.ts"]);
}

#[tokio::test]
async fn path_narrows_the_listing_and_results_stay_workspace_relative() {
    let ws = sample_workspace();
    let result = list(&ws, json!({"path": "src", "glob": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(
        files(&result),
        ["src/lib.rs", "src/main.rs", "src/util/strings.rs"]
    );

    let err = list(&ws, json!({"path": "nope"})).await.unwrap_err();
    assert!(
        err.code == "not_found" && err.message == "not found: nope",
        "{err:?}"
    );
}

#[tokio::test]
async fn limit_keeps_the_first_paths_in_order_and_flags_truncation() {
    let ws = TempWorkspace::new();
    for n in (0..30).rev() {
        ws.write(&format!("f{n:02}.txt"), "x");
    }
    let result = list(&ws, json!({"limit": 5})).await.unwrap();
    assert_eq!(
        files(&result),
        ["f00.txt", "f01.txt", "f02.txt", "f03.txt", "f04.txt"]
    );
    assert_eq!(result["truncated"], true);

    let exact = list(&ws, json!({"limit": 30})).await.unwrap();
    assert_eq!(files(&exact).len(), 30);
    assert_eq!(exact["truncated"], false);
}

#[tokio::test]
async fn limit_is_capped_by_the_settings() {
    let ws = TempWorkspace::new();
    for n in 0..10 {
        ws.write(&format!("f{n}.txt"), "x");
    }
    let settings = ToolSettings {
        list_max_results: 4,
        ..ToolSettings::default()
    };
    let runner = runner_with(&ws, false, settings, PermissionRules::default());
    let result = runner
        .call("list_files", json!({"limit": 1000}))
        .await
        .unwrap();
    assert_eq!(files(&result), ["f0.txt", "f1.txt", "f2.txt", "f3.txt"]);
    assert_eq!(result["truncated"], true);
}

#[tokio::test]
async fn gitignored_files_are_not_listed_even_without_a_git_repository() {
    let ws = TempWorkspace::new();
    ws.write(".gitignore", "target/\n*.log\n");
    ws.write("src/lib.rs", "");
    ws.write("debug.log", "");
    ws.write("target/debug/app", "");
    ws.write("docs/.ignore", "draft.md\n");
    ws.write("docs/draft.md", "");
    ws.write("docs/final.md", "");

    let result = list(&ws, json!({})).await.unwrap();
    assert_eq!(files(&result), ["docs/final.md", "src/lib.rs"]);

    // The root .gitignore still applies when listing a subdirectory.
    ws.write("src/trace.log", "");
    let sub = list(&ws, json!({"path": "src"})).await.unwrap();
    assert_eq!(files(&sub), ["src/lib.rs"]);

    // Naming an ignored directory explicitly lists it.
    let explicit = list(&ws, json!({"path": "target"})).await.unwrap();
    assert_eq!(files(&explicit), ["target/debug/app"]);
}

#[tokio::test]
async fn non_utf8_file_names_are_listed_lossily() {
    let ws = TempWorkspace::new();
    ws.write("ok.txt", "");
    let raw = ws.path().join(OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&raw, "x").unwrap();

    let result = list(&ws, json!({})).await.unwrap();
    assert_eq!(files(&result), ["caf\u{FFFD}.txt", "ok.txt"]);
    assert_eq!(result["nonUtf8"], json!(["caf\u{FFFD}.txt"]));
}

#[tokio::test]
async fn symlinks_are_not_followed() {
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
    ws.write("real.txt", "");
    ws.symlink(outside.path(), "escape");

    let result = list(&ws, json!({})).await.unwrap();
    assert_eq!(files(&result), ["real.txt"]);
}

#[tokio::test]
async fn bad_arguments_are_refused() {
    let ws = sample_workspace();
    for (args, needle) in [
        (json!({"limit": 0}), "limit"),
        (json!({"glob": "src/[a"}), "src/[a"),
        (json!({"recursive": true}), "recursive"),
        (json!({"limit": "ten"}), "list_files"),
    ] {
        let err = list(&ws, args.clone()).await.unwrap_err();
        assert_eq!(err.code, "invalid_arguments", "{args}: {err}");
        assert!(err.to_string().contains(needle), "{args}: {err}");
    }
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_denied() {
    let ws = sample_workspace();
    let err = list(&ws, json!({"path": "../"})).await.unwrap_err();
    assert!(err.code == "policy_denied", "{err:?}");
    assert_eq!(err.code, "policy_denied");
}

/// Directories nested past PATH_MAX cannot be opened by path: the listing
/// must say it is incomplete rather than look complete.
#[tokio::test]
async fn entries_that_cannot_be_read_are_counted() {
    let ws = TempWorkspace::new();
    ws.write("top.txt", "needle\n");
    // Built relative to open directories (a shell's `cd` refuses paths past
    // PATH_MAX): 20 levels of 250-byte names is about 5,000 bytes.
    let script = "import os\n\
        fd = os.open('.', os.O_RDONLY)\n\
        for _ in range(20):\n\
        \x20   os.mkdir('d' * 250, dir_fd=fd)\n\
        \x20   fd = os.open('d' * 250, os.O_RDONLY, dir_fd=fd)\n\
        out = os.open('deep.txt', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)\n\
        os.write(out, b'needle\\n')\n";
    let made = std::process::Command::new("python3")
        .args(["-c", script])
        .current_dir(ws.path())
        .status()
        .unwrap();
    assert!(made.success());

    let listing = runner(&ws, false)
        .call("list_files", json!({}))
        .await
        .unwrap();
    assert_eq!(listing["files"], json!(["top.txt"]));
    assert!(listing["unreadable"].as_u64().unwrap() >= 1, "{listing}");

    let search = runner(&ws, false)
        .call("search_code", json!({"query": "needle"}))
        .await
        .unwrap();
    assert_eq!(search["hits"].as_array().unwrap().len(), 1);
    assert!(search["unreadable"].as_u64().unwrap() >= 1, "{search}");

    let clean = TempWorkspace::new();
    clean.write("a.txt", "needle\n");
    let search = runner(&clean, false)
        .call("search_code", json!({"query": "needle"}))
        .await
        .unwrap();
    assert!(search.get("unreadable").is_none(), "{search}");
}

/// The walker reads directories by path: while a thread keeps exchanging a
/// workspace directory with a symlink to one outside, a walk can descend
/// into the outside one. No name from there may be listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_outside_name_is_listed_under_the_swap_race() {
    let ws = TempWorkspace::new();
    for n in 0..50 {
        ws.write(&format!("sub/inside-{n}.md"), "x\n");
    }
    let mut swap = bridge_testkit::SwapRace::start(ws.path());
    let runner = runner(&ws, false);
    let started = std::time::Instant::now();
    let (mut calls, mut served) = (0, 0);
    while started.elapsed() < std::time::Duration::from_secs(2) {
        let listed = runner.call("list_files", json!({})).await.unwrap();
        let names = files(&listed);
        assert!(
            !names.iter().any(|name| name.contains("outside-only")),
            "call {calls} listed an outside name: {names:?}"
        );
        served += usize::from(names.iter().any(|name| name.contains("inside-")));
        calls += 1;
    }
    assert!(swap.stop() > 1000, "the race barely ran");
    assert!(
        served > 0,
        "never listed the inside directory in {calls} calls"
    );
}
