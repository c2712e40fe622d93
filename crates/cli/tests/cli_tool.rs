use bridge_testkit::TempWorkspace;
use predicates::prelude::*;
use serde_json::json;

use crate::support::{Bridge, stdout_json};

fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    // Computed with the system's sha256sum so the test does not trust our own code.
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut hex = String::new();
    write!(hex, "{}", text.split_whitespace().next().unwrap()).unwrap();
    hex
}

#[test]
fn read_file_prints_content_and_sha256() {
    let ws = TempWorkspace::new();
    ws.write("src/lib.rs", "fn one() {}\nfn two() {}\nfn three() {}\n");
    let bridge = Bridge::new();
    let output = bridge
        .tool(
            &ws,
            "read_file",
            &json!({"path": "src/lib.rs", "startLine": 2, "endLine": 3}),
        )
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = stdout_json(&output);
    assert_eq!(result["content"], "fn two() {}\nfn three() {}\n");
    assert_eq!(result["totalLines"], 3);
    assert_eq!(
        result["sha256"],
        sha256_hex(b"fn one() {}\nfn two() {}\nfn three() {}\n")
    );
}

#[test]
fn search_code_reads_arguments_from_stdin() {
    let ws = TempWorkspace::new();
    ws.write("a.py", "def payment_client():\n    pass\n");
    ws.write("b.py", "print('nothing here')\n");
    let bridge = Bridge::new();
    let output = bridge
        .cmd()
        .args(["tool", "search_code", "--args", "-", "--cwd"])
        .arg(ws.path())
        .write_stdin(json!({"query": "payment_client"}).to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let hits = stdout_json(&output)["hits"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["file"], "a.py");
    assert_eq!(hits[0]["line"], 1);
}

#[test]
fn writes_are_refused_in_read_only_mode_and_allowed_with_writable() {
    let ws = TempWorkspace::new();
    let bridge = Bridge::new();
    let args = json!({"path": "notes/todo.md", "content": "- ship it\n"});
    let output = bridge.tool(&ws, "create_file", &args).output().unwrap();
    assert_eq!(output.status.code(), Some(4), "read-only is the default");
    assert_eq!(stdout_json(&output)["error"]["code"], "policy_denied");
    assert!(String::from_utf8_lossy(&output.stderr).contains("read-only"));
    assert!(!ws.path().join("notes/todo.md").exists());

    let output = bridge
        .tool(&ws, "create_file", &args)
        .arg("--writable")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(ws.read("notes/todo.md"), "- ship it\n");
}

#[test]
fn the_workspace_policy_file_grants_and_denies_writes() {
    let ws = TempWorkspace::new();
    ws.write(
        ".agent-policy.yaml",
        "writes:\n  allow: [\"src/**\"]\n  deny: [\"src/generated/**\"]\n",
    );
    let bridge = Bridge::new();
    bridge
        .tool(
            &ws,
            "create_file",
            &json!({"path": "src/ok.rs", "content": "// ok\n"}),
        )
        .assert()
        .success();
    bridge
        .tool(
            &ws,
            "create_file",
            &json!({"path": "src/generated/x.rs", "content": "x"}),
        )
        .assert()
        .code(4)
        .stderr(predicate::str::contains("writes.deny"));
    bridge
        .tool(
            &ws,
            "create_file",
            &json!({"path": "README.md", "content": "x"}),
        )
        .assert()
        .code(4);
    assert!(!ws.path().join("README.md").exists());
}

#[test]
fn a_malformed_workspace_policy_file_is_a_configuration_error() {
    let ws = TempWorkspace::new();
    ws.write(".agent-policy.yaml", "writes: [unclosed\n");
    Bridge::new()
        .tool(&ws, "list_files", &json!({}))
        .assert()
        .code(3)
        .stderr(predicate::str::contains(".agent-policy.yaml"));
}

#[test]
fn path_escapes_are_denied_with_exit_4() {
    let ws = TempWorkspace::new();
    Bridge::new()
        .tool(&ws, "read_file", &json!({"path": "../../etc/passwd"}))
        .assert()
        .code(4)
        .stdout(predicate::str::contains("policy_denied"));
}

#[test]
fn a_conflicting_patch_exits_1_and_changes_nothing() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "one\ntwo\nthree\n");
    ws.write("b.txt", "alpha\nbeta\n");
    let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n\
                --- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n alpha\n-gamma\n+GAMMA\n";
    let output = Bridge::new()
        .tool(&ws, "apply_patch", &json!({"unifiedDiff": diff}))
        .arg("--writable")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let result = stdout_json(&output);
    assert_eq!(result["ok"], false);
    assert_eq!(result["conflicts"][0]["file"], "b.txt");
    assert_eq!(ws.read("a.txt"), "one\ntwo\nthree\n");
    assert_eq!(ws.read("b.txt"), "alpha\nbeta\n");
}

#[test]
fn dangerous_shell_commands_are_denied() {
    let ws = TempWorkspace::new();
    Bridge::new()
        .tool(&ws, "shell", &json!({"command": "rm -rf /"}))
        .arg("--writable")
        .assert()
        .code(4)
        .stderr(predicate::str::contains("dangerous"));
}

#[test]
fn bad_arguments_are_usage_errors_with_a_json_body() {
    let ws = TempWorkspace::new();
    let bridge = Bridge::new();
    let output = bridge
        .cmd()
        .args(["tool", "read_file", "--args", "{not json", "--cwd"])
        .arg(ws.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout_json(&output)["error"]["code"], "invalid_arguments");

    let output = bridge
        .tool(&ws, "no_such_tool", &json!({}))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout_json(&output)["error"]["code"], "unknown_tool");

    let output = bridge
        .tool(&ws, "read_file", &json!({"path": 42}))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout_json(&output)["error"]["code"], "invalid_arguments");

    let output = bridge
        .tool(&ws, "read_file", &json!([1, 2]))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn every_call_is_audited_with_secrets_redacted() {
    let ws = TempWorkspace::new();
    let token = format!("ghp_{}", "Q7".repeat(18));
    ws.write("config.txt", format!("token in file: {token}\n"));
    let bridge = Bridge::new();
    let output = bridge
        .tool(&ws, "read_file", &json!({"path": "config.txt"}))
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains(&token),
        "tool output is redacted"
    );
    let audit_dir = bridge.state.path().join("audit");
    let files: Vec<_> = std::fs::read_dir(&audit_dir).unwrap().collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    assert!(!text.contains(&token));
    let entry: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(entry["tool"], "read_file");
    assert_eq!(entry["decision"], "allow");
    assert_eq!(entry["sessionId"], "cli");
}

#[test]
fn the_tools_command_lists_every_tool() {
    let output = Bridge::new()
        .cmd()
        .args(["tools", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let specs = stdout_json(&output);
    let names: Vec<&str> = specs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for expected in [
        "read_file",
        "list_files",
        "search_code",
        "symbols",
        "create_file",
        "edit_file",
        "apply_patch",
        "format",
        "organize_imports",
        "shell",
        "run_task",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
}

#[test]
fn debug_logs_never_show_a_secret() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "hello\n");
    let token = format!("ghp_{}", "k3".repeat(18));
    let output = Bridge::new()
        .tool(&ws, "search_code", &json!({"query": token}))
        .arg("--log-level")
        .arg("debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("running tool"),
        "the debug line is there: {stderr}"
    );
    assert!(stderr.contains("[REDACTED]"), "{stderr}");
    assert!(!stderr.contains(&token), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no colour codes into a pipe: {stderr:?}"
    );
}

/// The decision's verdict table (the same as every door of the daemon and
/// the engine gets, see crates/server/tests/one_decision.rs) through the
/// `tool` command: exit 0 when allowed, 4 with the reason when denied.
#[test]
fn the_tool_command_gives_the_verdicts_every_door_gives() {
    let ws = TempWorkspace::new();
    ws.write("README.md", "# Hello\n");
    let bridge = Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "read_only = true\n[permissions]\nblocked_patterns = ['\\.ssh/']\n",
    )
    .unwrap();
    for (tool, args, denied) in [
        ("read_file", json!({"path": "README.md"}), None),
        (
            "read_file",
            json!({"path": "../outside.txt"}),
            Some("outside the workspace"),
        ),
        (
            "shell",
            json!({"command": "rm -rf ~"}),
            Some("dangerous command"),
        ),
        (
            "create_file",
            json!({"path": "new.txt", "content": "x"}),
            Some("read-only"),
        ),
        (
            "read_file",
            json!({"path": ".ssh/id_rsa"}),
            Some("blocked_patterns"),
        ),
    ] {
        let output = bridge.tool(&ws, tool, &args).output().unwrap();
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        match denied {
            None => assert!(output.status.success(), "{tool} {args}: {shown}"),
            Some(fragment) => {
                assert_eq!(output.status.code(), Some(4), "{tool} {args}: {shown}");
                assert!(shown.contains(fragment), "{tool} {args}: {shown}");
            }
        }
    }
    assert!(!ws.path().join("new.txt").exists());
}
