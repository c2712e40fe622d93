//! Tests of format and organize_imports with real commands configured.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a failed setup must stop the test"
)]

use std::collections::BTreeMap;

use bridge_policy::PermissionRules;
use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;

use crate::common::Runner;
use serde_json::json;

use crate::common::{runner, runner_with};

/// A runner whose `.txt` formatter uppercases the file (a real script), and
/// whose `.py` import organizer sorts the lines (`sort -o {file} {file}`).
fn configured(ws: &TempWorkspace) -> Runner {
    let script = ws.write(
        "tools/upper.sh",
        "#!/bin/sh\nset -e\ntr 'a-z' 'A-Z' < \"$1\" > \"$1.tmp\"\nmv \"$1.tmp\" \"$1\"\n",
    );
    let formatters = BTreeMap::from([
        (
            "txt".to_owned(),
            vec!["sh".to_owned(), script.to_string_lossy().into_owned()],
        ),
        (
            "fail".to_owned(),
            vec![
                "sh".to_owned(),
                "-c".to_owned(),
                "echo \"cannot parse $0\" >&2; exit 3".to_owned(),
            ],
        ),
        (
            "rs".to_owned(),
            vec![
                "bridge-no-such-formatter-binary".to_owned(),
                "--check".to_owned(),
            ],
        ),
        (
            "slow".to_owned(),
            vec!["sh".to_owned(), "-c".to_owned(), "sleep 30".to_owned()],
        ),
    ]);
    let import_organizers = BTreeMap::from([(
        "py".to_owned(),
        vec![
            "sort".to_owned(),
            "-o".to_owned(),
            "{file}".to_owned(),
            "{file}".to_owned(),
        ],
    )]);
    let settings = ToolSettings {
        formatters,
        import_organizers,
        shell_timeout_secs: 1,
        ..ToolSettings::default()
    };
    runner_with(ws, false, settings, PermissionRules::default())
}

#[tokio::test]
async fn format_runs_the_configured_command_and_reports_the_change() {
    let ws = TempWorkspace::new();
    ws.write("notes/a.txt", "hello world\n");
    let runner = configured(&ws);

    let result = runner
        .call("format", json!({"path": "notes/a.txt"}))
        .await
        .unwrap();

    assert_eq!(ws.read("notes/a.txt"), "HELLO WORLD\n");
    assert_eq!(result["ok"], true);
    assert_eq!(result["path"], "notes/a.txt");
    assert_eq!(result["changed"], true);
    let command = result["command"].as_array().unwrap();
    assert_eq!(command[0], "sh");
    assert_eq!(
        command.last().unwrap(),
        "notes/a.txt",
        "the file is appended"
    );

    let again = runner
        .call("format", json!({"path": "notes/a.txt"}))
        .await
        .unwrap();
    assert_eq!(again["changed"], false, "already formatted");
}

#[tokio::test]
async fn organize_imports_substitutes_the_file_placeholder() {
    let ws = TempWorkspace::new();
    ws.write("app.py", "import sys\nimport abc\nimport os\n");
    let result = configured(&ws)
        .call("organize_imports", json!({"path": "app.py"}))
        .await
        .unwrap();
    assert_eq!(ws.read("app.py"), "import abc\nimport os\nimport sys\n");
    assert_eq!(result["changed"], true);
    assert_eq!(result["command"], json!(["sort", "-o", "app.py", "app.py"]));
}

#[tokio::test]
async fn an_unconfigured_extension_names_the_config_key() {
    let ws = TempWorkspace::new();
    ws.write("main.go", "package main\n");
    ws.write("Makefile", "all:\n");
    let runner = runner(&ws, false);

    let err = runner
        .call("format", json!({"path": "main.go"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "not_configured");
    let message = err.to_string();
    assert!(message.contains(".go"), "{message}");
    assert!(message.contains("[tools.formatters] go = "), "{message}");

    let err = runner
        .call("organize_imports", json!({"path": "main.go"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("[tools.import_organizers]"),
        "{err}"
    );

    let err = runner
        .call("format", json!({"path": "Makefile"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "not_configured");
    assert!(err.to_string().contains("no file extension"), "{err}");
}

#[tokio::test]
async fn a_missing_formatter_binary_is_reported_as_not_installed() {
    let ws = TempWorkspace::new();
    ws.write("src/lib.rs", "fn  x(){}\n");
    let err = configured(&ws)
        .call("format", json!({"path": "src/lib.rs"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "not_configured");
    assert!(
        err.to_string()
            .contains("bridge-no-such-formatter-binary is not installed or not on PATH"),
        "{err}"
    );
    assert_eq!(ws.read("src/lib.rs"), "fn  x(){}\n");
}

#[tokio::test]
async fn a_failing_formatter_reports_its_exit_status_and_stderr() {
    let ws = TempWorkspace::new();
    ws.write("broken.fail", "(((\n");
    let err = configured(&ws)
        .call("format", json!({"path": "broken.fail"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "failed");
    let message = err.to_string();
    assert!(message.contains("exited with status 3"), "{message}");
    assert!(message.contains("cannot parse"), "{message}");
}

#[tokio::test]
async fn a_hanging_formatter_times_out() {
    let ws = TempWorkspace::new();
    ws.write("a.slow", "x\n");
    let started = std::time::Instant::now();
    let err = configured(&ws)
        .call("format", json!({"path": "a.slow"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "timeout");
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

#[tokio::test]
async fn format_respects_the_write_policy_and_missing_files() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "hello\n");
    let err = configured(&ws)
        .call("format", json!({"path": "../a.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "policy_denied");

    let err = configured(&ws)
        .call("format", json!({"path": "missing.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "not_found");

    let ws_read_only = TempWorkspace::new();
    ws_read_only.write("a.txt", "hello\n");
    let err = runner(&ws_read_only, true)
        .call("format", json!({"path": "a.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert_eq!(ws_read_only.read("a.txt"), "hello\n");
}
