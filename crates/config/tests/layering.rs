use std::fs;
use std::path::Path;

use bridge_config::{BackendKind, ConfigLoader, LogLevel, Source, keys};
use tempfile::TempDir;

fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

/// A state directory with a config.toml and a working directory with a .env.
struct Setup {
    home: TempDir,
    cwd: TempDir,
}

impl Setup {
    fn new(config_toml: &str, dotenv: &str) -> Self {
        let setup = Self {
            home: TempDir::new().unwrap(),
            cwd: TempDir::new().unwrap(),
        };
        write(setup.home.path(), "config.toml", config_toml);
        if !dotenv.is_empty() {
            write(setup.cwd.path(), ".env", dotenv);
        }
        setup
    }

    fn loader(&self, env: &[(&str, &str)]) -> ConfigLoader {
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        env.push((
            "COPILOT_BRIDGE_HOME".to_owned(),
            self.home.path().display().to_string(),
        ));
        ConfigLoader::with_env(env).cwd(self.cwd.path())
    }
}

#[test]
fn defaults_apply_when_nothing_is_set() {
    let home = TempDir::new().unwrap();
    let config = ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", home.path().to_str().unwrap())])
        .cwd(home.path())
        .load()
        .unwrap();
    assert_eq!(config.port, 9400);
    assert_eq!(config.bind_address.to_string(), "127.0.0.1");
    assert!(config.read_only);
    assert_eq!(config.log_level, LogLevel::Info);
    assert_eq!(config.max_retries, 3);
    assert_eq!(config.transient_retries, 2);
    assert_eq!(config.openclaw.port, 18789);
    assert_eq!(config.audit_log_dir, home.path().join("audit"));
    assert_eq!(config.source_of(keys::PORT), Source::Default);
    assert_eq!(
        config.source_of(keys::HOME),
        Source::Env("COPILOT_BRIDGE_HOME".into())
    );
    assert!(config.config_file.is_none());
}

#[test]
fn default_home_is_under_the_user_home() {
    let user = TempDir::new().unwrap();
    let config = ConfigLoader::with_env(Vec::<(String, String)>::new())
        .cwd(user.path())
        .user_home(Some(user.path().to_path_buf()))
        .load()
        .unwrap();
    assert_eq!(config.home, user.path().join(".copilot-bridge"));
    assert_eq!(
        config.gateway_file(),
        user.path().join(".copilot-bridge/gateway.json")
    );
}

#[test]
fn precedence_is_flag_env_dotenv_file_default() {
    let setup = Setup::new(
        "port = 1111\nlog_level = \"error\"\nmax_retries = 7\nread_only = false\n[byok]\nmodel = \"file-model\"\n",
        "COPILOT_BRIDGE_PORT=2222\nCOPILOT_LOG_LEVEL=debug\nCOPILOT_MAX_RETRIES=5\n",
    );
    let config = setup
        .loader(&[
            ("COPILOT_BRIDGE_PORT", "3333"),
            ("COPILOT_LOG_LEVEL", "warning"),
        ])
        .flag(keys::PORT, "4444", "--port")
        .load()
        .unwrap();
    assert_eq!(config.port, 4444);
    assert_eq!(config.source_of(keys::PORT), Source::Flag("--port".into()));
    assert_eq!(config.log_level, LogLevel::Warning);
    assert_eq!(
        config.source_of(keys::LOG_LEVEL),
        Source::Env("COPILOT_LOG_LEVEL".into())
    );
    assert_eq!(config.max_retries, 5);
    assert_eq!(
        config.source_of(keys::MAX_RETRIES),
        Source::DotEnv(setup.cwd.path().join(".env"))
    );
    assert!(!config.read_only);
    assert_eq!(config.byok.model.as_deref(), Some("file-model"));
    assert_eq!(
        config.source_of(keys::BYOK_MODEL),
        Source::File(setup.home.path().join("config.toml"))
    );
    assert_eq!(config.source_of(keys::TRANSIENT_RETRIES), Source::Default);
}

#[test]
fn empty_environment_values_fall_through_to_lower_layers() {
    let setup = Setup::new("log_level = \"debug\"\n", "");
    let config = setup.loader(&[("COPILOT_LOG_LEVEL", "")]).load().unwrap();
    assert_eq!(config.log_level, LogLevel::Debug);
}

#[test]
fn every_design_doc_variable_is_read() {
    let setup = Setup::new("", "");
    let config = setup
        .loader(&[
            ("COPILOT_GITHUB_TOKEN", "gh-secret-value"),
            ("COPILOT_BYOK_PROVIDER", "Anthropic"),
            ("COPILOT_BYOK_API_KEY", "byok-secret-value"),
            ("COPILOT_BYOK_BASE_URL", "https://api.example.test/v1/"),
            ("COPILOT_BYOK_MODEL", "claude-x"),
            ("COPILOT_CLI_PATH", "/opt/copilot/bin/copilot"),
            ("COPILOT_LOG_LEVEL", "all"),
            ("OPENCLAW_HOST", "localhost"),
            ("OPENCLAW_PORT", "18800"),
            ("OPENCLAW_GATEWAY_TOKEN", "oc-secret-value"),
            ("COPILOT_AUDIT_LOG_DIR", "/var/tmp/bridge-audit"),
            ("COPILOT_PROJECT_CONTEXT", "Use Rust 2024."),
            ("COPILOT_MAX_RETRIES", "0"),
            ("COPILOT_BRIDGE_PORT", "0"),
            ("COPILOT_BRIDGE_BIND", "::1"),
        ])
        .load()
        .unwrap();
    assert_eq!(
        config.github_token.as_ref().unwrap().expose(),
        "gh-secret-value"
    );
    assert_eq!(config.byok.provider, Some(BackendKind::Anthropic));
    assert_eq!(
        config.byok.api_key.as_ref().unwrap().expose(),
        "byok-secret-value"
    );
    assert_eq!(
        config.byok.base_url.as_deref(),
        Some("https://api.example.test/v1")
    );
    assert_eq!(config.byok.model.as_deref(), Some("claude-x"));
    assert_eq!(
        config.cli_path.as_deref(),
        Some(Path::new("/opt/copilot/bin/copilot"))
    );
    assert_eq!(config.log_level, LogLevel::All);
    assert_eq!(config.openclaw.host, "localhost");
    assert_eq!(config.openclaw.port, 18800);
    assert_eq!(
        config.openclaw.gateway_token.as_ref().unwrap().expose(),
        "oc-secret-value"
    );
    assert_eq!(config.audit_log_dir, Path::new("/var/tmp/bridge-audit"));
    assert_eq!(config.project_context.as_deref(), Some("Use Rust 2024."));
    assert_eq!(config.max_retries, 0);
    assert_eq!(config.port, 0);
    assert_eq!(config.bind_address.to_string(), "::1");
}

#[test]
fn show_redacts_secrets_and_names_sources() {
    let setup = Setup::new("[openclaw]\ngateway_token = \"file-secret-value\"\n", "");
    let config = setup
        .loader(&[("COPILOT_GITHUB_TOKEN", "env-secret-value")])
        .load()
        .unwrap();
    let rows = config.show();
    let token = rows.iter().find(|r| r.key == keys::GITHUB_TOKEN).unwrap();
    assert_eq!(token.value.as_deref(), Some("[REDACTED]"));
    assert_eq!(token.source, "env COPILOT_GITHUB_TOKEN");
    let gateway = rows
        .iter()
        .find(|r| r.key == keys::OPENCLAW_GATEWAY_TOKEN)
        .unwrap();
    assert_eq!(gateway.value.as_deref(), Some("[REDACTED]"));
    assert!(gateway.source.starts_with("file "));
    let unset = rows.iter().find(|r| r.key == keys::BYOK_MODEL).unwrap();
    assert_eq!(unset.value, None);
    assert_eq!(unset.source, "unset");

    let everything = format!("{} {:?}", config.to_redacted_json(), config);
    assert!(!everything.contains("env-secret-value"), "{everything}");
    assert!(!everything.contains("file-secret-value"), "{everything}");
}

#[test]
fn structured_sections_are_read() {
    let setup = Setup::new(
        r#"
[permissions]
blocked_tools = ["shell"]
blocked_patterns = ["rm\\s+-rf"]

[tools]
shell_timeout_secs = 5
formatters = { rs = ["rustfmt", "--edition", "2021"] }

[tools.tasks.test]
command = "cargo test"
"#,
        "",
    );
    let config = setup.loader(&[]).load().unwrap();
    assert_eq!(config.permissions.blocked_tools, vec!["shell".to_owned()]);
    assert_eq!(config.tools.shell_timeout_secs, 5);
    assert_eq!(config.tools.formatters["rs"][0], "rustfmt");
    assert_eq!(config.tools.tasks["test"].command, "cargo test");
    assert_eq!(
        config.tools.read_max_bytes,
        4 * 1024 * 1024,
        "unset keys keep defaults"
    );
}

#[test]
fn explicit_config_file_replaces_the_home_one() {
    let setup = Setup::new("port = 1111\n", "");
    let other = setup.cwd.path().join("other.toml");
    fs::write(&other, "port = 5555\n").unwrap();
    let config = setup.loader(&[]).config_file(&other).load().unwrap();
    assert_eq!(config.port, 5555);
    assert_eq!(config.config_file.as_deref(), Some(other.as_path()));
}

#[test]
fn skip_dotenv_ignores_the_file() {
    let setup = Setup::new("", "COPILOT_BRIDGE_PORT=2222\n");
    let config = setup.loader(&[]).skip_dotenv().load().unwrap();
    assert_eq!(config.port, 9400);
}

#[test]
fn openclaw_paths_follow_its_own_precedence_and_are_shown() {
    use std::path::PathBuf;
    let setup = Setup::new("", "");
    let load = |env: &[(&str, &str)]| {
        setup
            .loader(env)
            .user_home(Some(PathBuf::from("/h")))
            .load()
            .unwrap()
    };
    let home = load(&[]);
    assert_eq!(
        home.openclaw.config_path,
        PathBuf::from("/h/.openclaw/openclaw.json")
    );
    assert_eq!(home.openclaw.state_dir, PathBuf::from("/h/.openclaw"));
    assert_eq!(home.openclaw.workspace, None);
    let state = load(&[("OPENCLAW_STATE_DIR", "/s")]);
    assert_eq!(
        state.openclaw.config_path,
        PathBuf::from("/s/openclaw.json")
    );
    let both = load(&[
        ("OPENCLAW_STATE_DIR", "/s"),
        ("OPENCLAW_CONFIG_PATH", "/c.json5"),
        ("OPENCLAW_WORKSPACE", "/w"),
    ]);
    assert_eq!(both.openclaw.config_path, PathBuf::from("/c.json5"));
    assert_eq!(both.openclaw.workspace, Some(PathBuf::from("/w")));
    // `config show` names each with where it came from.
    let shown = both.show();
    let row = |key: &str| shown.iter().find(|row| row.key == key).unwrap().clone();
    assert_eq!(row(keys::OPENCLAW_WORKSPACE).value.as_deref(), Some("/w"));
    assert_eq!(row(keys::OPENCLAW_STATE_DIR).value.as_deref(), Some("/s"));
    assert_eq!(
        row(keys::OPENCLAW_STATE_DIR).source,
        "env OPENCLAW_STATE_DIR"
    );
    assert_eq!(
        row(keys::OPENCLAW_CONFIG_PATH).value.as_deref(),
        Some("/c.json5")
    );
}

#[test]
fn a_repository_env_file_cannot_move_openclaw_s_directories() {
    let setup = Setup::new("", "OPENCLAW_WORKSPACE=/repo-chose-this\n");
    let config = setup.loader(&[]).load();
    let err = config.expect_err("the .env may not set OPENCLAW_WORKSPACE");
    assert!(err.to_string().contains("OPENCLAW_WORKSPACE"), "{err}");
}
