use predicates::prelude::*;

use crate::support::{Bridge, stdout_json};

#[test]
fn help_lists_the_commands_and_exit_codes() {
    Bridge::new()
        .cmd()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("config"))
        .stdout(predicate::str::contains("tool"))
        .stdout(predicate::str::contains("Exit codes"));
}

#[test]
fn config_show_prints_sources_and_hides_secrets() {
    let bridge = Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "log_level = \"debug\"\n[byok]\nprovider = \"ollama\"\n",
    )
    .unwrap();
    let secret = format!("ghp_{}", "Z9".repeat(18));
    let output = bridge
        .cmd()
        .env("COPILOT_GITHUB_TOKEN", &secret)
        .args(["--port", "9555", "config", "show"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains(&secret), "{text}");
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} line in {text}"))
            .to_owned()
    };
    assert!(line("github_token").contains("[REDACTED]"));
    assert!(line("github_token").contains("env COPILOT_GITHUB_TOKEN"));
    assert!(line("port").contains("9555") && line("port").contains("flag --port"));
    assert!(line("log_level").contains("debug") && line("log_level").contains("file "));
    assert!(line("byok.provider").contains("ollama"));
    assert!(line("bind_address").contains("127.0.0.1") && line("bind_address").contains("default"));
}

#[test]
fn config_show_json_is_machine_readable() {
    let bridge = Bridge::new();
    let output = bridge
        .cmd()
        .env("OPENCLAW_GATEWAY_TOKEN", "oc-token-value-123")
        .args(["config", "show", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let json = stdout_json(&output);
    let values = json["values"].as_array().unwrap();
    let gateway = values
        .iter()
        .find(|v| v["key"] == "openclaw.gateway_token")
        .unwrap();
    assert_eq!(gateway["value"], "[REDACTED]");
    assert!(!json.to_string().contains("oc-token-value-123"));
}

#[test]
fn bad_configuration_exits_3_with_the_reason() {
    let bridge = Bridge::new();
    bridge
        .cmd()
        .env("COPILOT_BYOK_PROVIDER", "gemini")
        .args(["config", "show"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("byok.provider"))
        .stderr(predicate::str::contains("gemini"))
        .stderr(predicate::str::contains("openai, azure, anthropic, ollama"));

    std::fs::write(
        bridge.state.path().join("config.toml"),
        "port = \"x\"\nnope = 1\n",
    )
    .unwrap();
    bridge
        .cmd()
        .args(["config", "show"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("unknown key \"nope\""));
}

#[test]
fn flags_are_validated_like_every_other_source() {
    Bridge::new()
        .cmd()
        .args(["--port", "99999", "config", "show"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("flag --port"))
        .stderr(predicate::str::contains("99999"));
    Bridge::new()
        .cmd()
        .args(["--log-level", "chatty", "config", "show"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("log_level"));
}

#[test]
fn unknown_commands_are_usage_errors() {
    Bridge::new().cmd().arg("frobnicate").assert().code(2);
}

#[cfg(unix)]
#[test]
fn non_utf8_paths_are_refused_not_read_as_other_paths() {
    use std::os::unix::ffi::OsStrExt;
    let bridge = Bridge::new();
    let not_utf8 = std::ffi::OsStr::from_bytes(b"/tmp/copilot-bridge-\xff-home");
    bridge
        .cmd()
        .env("COPILOT_BRIDGE_HOME", not_utf8)
        .args(["config", "show"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("COPILOT_BRIDGE_HOME"))
        .stderr(predicate::str::contains("not valid UTF-8"));
    bridge
        .cmd()
        .arg("--home")
        .arg(not_utf8)
        .args(["config", "show"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("not valid UTF-8"));
}

#[test]
fn the_tool_list_works_while_the_configuration_is_broken() {
    Bridge::new()
        .cmd()
        .env("COPILOT_LOG_LEVEL", "loud")
        .arg("tools")
        .assert()
        .success()
        .stdout(predicate::str::contains("apply_patch"));
}
