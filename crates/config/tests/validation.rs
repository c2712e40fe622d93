use std::fs;

use bridge_config::{ConfigError, ConfigLoader};
use tempfile::TempDir;

pub(crate) fn load(
    env: &[(&str, &str)],
    config_toml: Option<&str>,
) -> Result<bridge_config::BridgeConfig, ConfigError> {
    let home = TempDir::new().unwrap();
    if let Some(text) = config_toml {
        fs::write(home.path().join("config.toml"), text).unwrap();
    }
    let mut vars: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    vars.push((
        "COPILOT_BRIDGE_HOME".into(),
        home.path().display().to_string(),
    ));
    ConfigLoader::with_env(vars).cwd(home.path()).load()
}

fn error_text(env: &[(&str, &str)], config_toml: Option<&str>) -> String {
    load(env, config_toml)
        .expect_err("configuration must be refused")
        .to_string()
}

#[test]
fn bad_environment_values_name_key_value_and_what_is_allowed() {
    let cases = [
        (
            "COPILOT_LOG_LEVEL",
            "loud",
            "log_level",
            "debug, info, warning, error, none, all",
        ),
        (
            "COPILOT_BYOK_PROVIDER",
            "gemini",
            "byok.provider",
            "openai, azure, anthropic, ollama",
        ),
        ("COPILOT_BRIDGE_PORT", "70000", "port", "0 to 65535"),
        ("COPILOT_BRIDGE_PORT", "http", "port", "0 to 65535"),
        ("OPENCLAW_PORT", "0", "openclaw.port", "1 to 65535"),
        ("COPILOT_MAX_RETRIES", "-1", "max_retries", "0 to 100"),
        (
            "COPILOT_TRANSIENT_RETRIES",
            "two",
            "transient_retries",
            "0 to 100",
        ),
        (
            "COPILOT_BRIDGE_READ_ONLY",
            "maybe",
            "read_only",
            "true or false",
        ),
        (
            "COPILOT_BRIDGE_BIND",
            "localhost:80",
            "bind_address",
            "IP address",
        ),
        (
            "COPILOT_BYOK_BASE_URL",
            "api.openai.com",
            "byok.base_url",
            "http:// or https:// URL",
        ),
    ];
    for (var, value, key, expected) in cases {
        let mut env = vec![(var, value)];
        if var == "COPILOT_BYOK_BASE_URL" {
            env.push(("COPILOT_BYOK_PROVIDER", "openai"));
        }
        let text = error_text(&env, None);
        assert!(text.contains(key), "{var}: {text}");
        assert!(text.contains(&format!("{value:?}")), "{var}: {text}");
        assert!(text.contains(expected), "{var}: {text}");
        assert!(text.contains(&format!("env {var}")), "{var}: {text}");
    }
}

#[test]
fn all_problems_are_reported_together() {
    let text = error_text(
        &[("COPILOT_LOG_LEVEL", "loud"), ("COPILOT_BRIDGE_PORT", "-5")],
        None,
    );
    assert!(
        text.contains("log_level") && text.contains("port"),
        "{text}"
    );
}

#[test]
fn secret_values_never_appear_in_errors() {
    // A BYOK key without a provider is refused, and the key stays hidden.
    let text = error_text(&[("COPILOT_BYOK_API_KEY", "very-secret-key-value")], None);
    assert!(text.contains("byok.provider"), "{text}");
    assert!(!text.contains("very-secret-key-value"), "{text}");
}

#[test]
fn malformed_toml_names_the_file_and_the_place() {
    let text = error_text(&[], Some("log_level = \"info\"\n[byok\n"));
    assert!(text.contains("config.toml"), "{text}");
    assert!(text.contains("line 2"), "{text}");
}

#[test]
fn unknown_keys_are_refused_with_the_known_ones() {
    let text = error_text(&[], Some("prot = 9400\n"));
    assert!(text.contains("unknown key \"prot\""), "{text}");
    assert!(text.contains("port"), "{text}");
    let text = error_text(&[], Some("[byok]\nprovder = \"openai\"\n"));
    assert!(text.contains("byok.provder"), "{text}");
    let text = error_text(&[], Some("[tools]\nshell_timeout = 3\n"));
    assert!(text.contains("shell_timeout"), "{text}");
}

#[test]
fn the_state_directory_cannot_be_set_from_inside_itself() {
    let text = error_text(&[], Some("home = \"/elsewhere\"\n"));
    assert!(text.contains("unknown key \"home\""), "{text}");
}

#[test]
fn wrong_types_in_the_file_are_refused() {
    let text = error_text(&[], Some("port = [1, 2]\n"));
    assert!(
        text.contains("port must be a string, number or boolean"),
        "{text}"
    );
    let text = error_text(&[], Some("port = 123456\n"));
    assert!(
        text.contains("\"123456\"") && text.contains("file "),
        "{text}"
    );
}

#[test]
fn invalid_permission_patterns_are_config_errors() {
    let text = error_text(
        &[],
        Some("[permissions]\nblocked_patterns = [\"(unclosed\"]\n"),
    );
    assert!(text.contains("blocked_patterns"), "{text}");
    assert!(text.contains("(unclosed"), "{text}");
}

#[test]
fn empty_formatter_commands_are_refused() {
    let text = error_text(&[], Some("[tools.formatters]\nrs = []\n"));
    assert!(text.contains("tools.formatters.rs"), "{text}");
}

#[test]
fn oversized_and_binary_config_files_are_refused() {
    let big = format!("project_context = \"{}\"\n", "x".repeat(2 * 1024 * 1024));
    let text = error_text(&[], Some(&big));
    assert!(text.contains("larger than"), "{text}");

    let home = TempDir::new().unwrap();
    fs::write(home.path().join("config.toml"), [0xff, 0xfe, b'=', 0x00]).unwrap();
    let err = ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", home.path().to_str().unwrap())])
        .cwd(home.path())
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");
}

#[test]
fn malformed_dotenv_is_an_error_naming_the_file() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join(".env"), "COPILOT_LOG_LEVEL='unterminated\n").unwrap();
    let err = ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", dir.path().to_str().unwrap())])
        .cwd(dir.path())
        .load()
        .unwrap_err();
    assert!(matches!(err, ConfigError::DotEnv { .. }), "{err}");
    assert!(err.to_string().contains(".env"), "{err}");
}

#[test]
fn a_named_config_file_must_exist() {
    let dir = TempDir::new().unwrap();
    let err = ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", dir.path().to_str().unwrap())])
        .cwd(dir.path())
        .config_file(dir.path().join("missing.toml"))
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("missing.toml"), "{err}");
    assert!(err.to_string().contains("cannot open"), "{err}");
}

#[test]
fn without_any_home_the_error_says_what_to_set() {
    let err = ConfigLoader::with_env(Vec::<(String, String)>::new())
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("COPILOT_BRIDGE_HOME"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_config_file_that_is_a_fifo_is_refused_without_blocking() {
    let home = TempDir::new().unwrap();
    let fifo = home.path().join("config.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let err = ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", home.path().to_str().unwrap())])
        .cwd(home.path())
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn an_oversized_dotenv_is_refused_and_its_errors_stay_short() {
    let dir = TempDir::new().unwrap();
    let env = || {
        ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", dir.path().to_str().unwrap())])
            .cwd(dir.path())
    };
    fs::write(
        dir.path().join(".env"),
        format!("COPILOT_PROJECT_CONTEXT={}\n", "x".repeat(2 * 1024 * 1024)),
    )
    .unwrap();
    let err = env().load().unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");

    fs::write(
        dir.path().join(".env"),
        format!("COPILOT_PROJECT_CONTEXT='{}\n", "y".repeat(500_000)),
    )
    .unwrap();
    let err = env().load().unwrap_err().to_string();
    assert!(err.len() < 2000, "error of {} bytes", err.len());
}

#[test]
fn the_copilot_section_is_read_and_checked() {
    let config = load(
        &[],
        Some("[copilot]\naccount_type = \"business\"\napi_base = \"https://copilot.example\"\n[copilot.headers]\nEditor-Version = \"vscode/9.9.9\"\n"),
    )
    .unwrap();
    assert_eq!(config.copilot.account_type.as_deref(), Some("business"));
    assert_eq!(config.copilot.headers["Editor-Version"], "vscode/9.9.9");

    let text = error_text(&[], Some("[copilot]\naccount_type = \"team\"\n"));
    assert!(
        text.contains("individual, business or enterprise"),
        "{text}"
    );
    let text = error_text(&[], Some("[copilot]\napi_base = \"copilot.example\"\n"));
    assert!(text.contains("copilot.api_base"), "{text}");
    let text = error_text(&[], Some("[copilot]\nheader = {}\n"));
    assert!(text.contains("[copilot]"), "{text}");
}

#[test]
fn a_projects_dotenv_cannot_choose_programs_state_or_protections() {
    for (name, value) in [
        ("COPILOT_CLI_PATH", "./evil"),
        ("COPILOT_BRIDGE_HOME", "./state"),
        ("COPILOT_BRIDGE_READ_ONLY", "false"),
        ("COPILOT_BRIDGE_BIND", "0.0.0.0"),
        ("COPILOT_AUDIT_LOG_DIR", "/dev/null"),
        ("COPILOT_BRIDGE_TRUST_PROJECT_PROVIDERS", "true"),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://attacker.example:4318",
        ),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://attacker.example/t",
        ),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x=y"),
        ("COPILOT_BRIDGE_OTEL_CAPTURE_CONTENT", "true"),
    ] {
        let dir = TempDir::new().unwrap();
        fs::write(dir.path().join(".env"), format!("{name}={value}\n")).unwrap();
        let err = ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", dir.path().to_str().unwrap())])
            .cwd(dir.path())
            .load()
            .unwrap_err();
        assert!(matches!(err, ConfigError::DotEnv { .. }), "{name}: {err}");
        assert!(err.to_string().contains(name), "{err}");
    }
    // Keys for backends stay allowed in .env.
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join(".env"), "COPILOT_BYOK_MODEL=gpt-4o\n").unwrap();
    let config = ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", dir.path().to_str().unwrap())])
        .cwd(dir.path())
        .load()
        .unwrap();
    assert_eq!(config.byok.model.as_deref(), Some("gpt-4o"));
}
