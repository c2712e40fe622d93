//! `[backends.NAME]`, the daemon's token and host names, and the variables
//! auto-selection reads (`OPENAI_API_KEY`, `OLLAMA_HOST`, …): all through the
//! loader, so an injected environment is all a test sees.

use std::fs;

use bridge_config::{BackendKind, BackendStyle, BridgeConfig, ConfigError, ConfigLoader};
use tempfile::TempDir;

fn load_with(
    config_toml: &str,
    env: &[(&str, &str)],
    dotenv: Option<&str>,
) -> Result<BridgeConfig, ConfigError> {
    let home = TempDir::new().unwrap();
    fs::write(home.path().join("config.toml"), config_toml).unwrap();
    if let Some(text) = dotenv {
        fs::write(home.path().join(".env"), text).unwrap();
    }
    let mut vars = vec![(
        "COPILOT_BRIDGE_HOME".to_owned(),
        home.path().display().to_string(),
    )];
    vars.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    ConfigLoader::with_env(vars).cwd(home.path()).load()
}

fn load(config_toml: &str) -> Result<BridgeConfig, ConfigError> {
    load_with(config_toml, &[], None)
}

fn error_text(config_toml: &str) -> String {
    load(config_toml)
        .expect_err("configuration must be refused")
        .to_string()
}

#[test]
fn backend_tables_load_with_defaults_and_keys_from_named_variables() {
    let config = load_with(
        r#"
default_backend = "local"

[backends.local]
provider = "ollama"
base_url = "http://127.0.0.1:11434/"
models = ["llama3.2", "qwen2.5-coder:7b"]
style = "single-prompt"
history_turns = 5

[backends.work]
provider = "openai"
base_url = "https://llm.example.com/v1"
api_key_env = "WORK_LLM_KEY"
model = "gpt-4o"
headers = { "OpenAI-Organization" = "org-1" }
"#,
        &[("WORK_LLM_KEY", "sk-work-secret")],
        None,
    )
    .unwrap();
    assert_eq!(config.default_backend.as_deref(), Some("local"));
    let [local, work] = config.backends.as_slice() else {
        panic!("two backends: {:?}", config.backends);
    };
    assert_eq!(local.name, "local");
    assert_eq!(local.provider, BackendKind::Ollama);
    assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:11434"));
    assert_eq!(local.models, ["llama3.2", "qwen2.5-coder:7b"]);
    assert_eq!(local.style, BackendStyle::SinglePrompt);
    assert_eq!(local.history_turns, 5);
    assert_eq!(local.api_key, None);
    assert_eq!(work.provider, BackendKind::OpenAi);
    assert_eq!(work.style, BackendStyle::Chat);
    assert_eq!(work.history_turns, 3);
    assert_eq!(
        work.api_key.as_ref().map(|k| k.expose()),
        Some("sk-work-secret")
    );
    assert_eq!(work.missing_key(), None);
    // Shown without the key, with where it comes from.
    let shown = config.to_redacted_json().to_string();
    assert!(!shown.contains("sk-work-secret"), "{shown}");
    assert!(shown.contains("WORK_LLM_KEY"), "{shown}");
    assert_eq!(
        config.to_redacted_json()["backends"]["work"]["api_key"],
        "[REDACTED]"
    );
}

#[test]
fn an_unset_key_variable_leaves_the_backend_configured_but_says_why() {
    let config = load(
        r#"
[backends.work]
provider = "anthropic"
api_key_env = "WORK_ANTHROPIC_KEY"
"#,
    )
    .unwrap();
    let reason = config.backends[0].missing_key().unwrap();
    assert!(reason.contains("WORK_ANTHROPIC_KEY"), "{reason}");
    assert!(reason.contains("not set"), "{reason}");
}

#[test]
fn a_dotenv_may_hold_backend_keys_and_provider_keys() {
    let config = load_with(
        "[backends.work]\nprovider = \"openai\"\napi_key_env = \"WORK_KEY\"\n",
        &[],
        Some("WORK_KEY=sk-from-dotenv\nOPENAI_API_KEY=sk-openai-dotenv\n"),
    )
    .unwrap();
    assert_eq!(
        config.backends[0].api_key.as_ref().map(|k| k.expose()),
        Some("sk-from-dotenv")
    );
    assert_eq!(
        config.openai_api_key.as_ref().map(|k| k.expose()),
        Some("sk-openai-dotenv")
    );
}

#[test]
fn a_literal_api_key_is_refused_without_echoing_it() {
    let text =
        error_text("[backends.work]\nprovider = \"openai\"\napi_key = \"sk-literal-secret\"\n");
    assert!(text.contains("backends.work.api_key"), "{text}");
    assert!(text.contains("api_key_env"), "{text}");
    assert!(!text.contains("sk-literal-secret"), "{text}");
}

#[test]
fn the_vscode_kind_is_the_daemons_own_and_cannot_be_configured() {
    let text = error_text("[backends.editor]\nprovider = \"vscode\"\n");
    assert!(text.contains("backends.editor.provider"), "{text}");
    assert!(text.contains("vscode/"), "{text}");
    let byok = error_text_with_env(&[("COPILOT_BYOK_PROVIDER", "vscode")]);
    assert!(byok.contains("COPILOT_BYOK_PROVIDER"), "{byok}");
    // Routes and the default may name it.
    let config = load(
        "default_backend = \"vscode\"\n[models.map]\n\"claude-*\" = \"vscode/claude-sonnet-4\"\n",
    )
    .unwrap();
    assert_eq!(config.default_backend.as_deref(), Some("vscode"));
}

fn error_text_with_env(env: &[(&str, &str)]) -> String {
    load_with("", env, None)
        .expect_err("configuration must be refused")
        .to_string()
}

#[test]
fn each_invalid_table_is_reported_in_one_pass() {
    let text = error_text(
        r#"
[backends."a/b"]
provider = "openai"

[backends.noprovider]
model = "x"

[backends.badprovider]
provider = "gemini"

[backends.badstyle]
provider = "openai"
style = "prompt"

[backends.badturns]
provider = "openai"
history_turns = 51

[backends.badurl]
provider = "openai"
base_url = "llm.example.com"

[backends.badenv]
provider = "openai"
api_key_env = "sk-abc"

[backends.azure]
provider = "azure"

[backends.ollamaheaders]
provider = "ollama"
headers = { "X-A" = "1" }

[backends.authheader]
provider = "openai"
headers = { Authorization = "Bearer x" }

[backends.unknownkey]
provider = "openai"
temperature = 1

[backends.twice]
provider = "openai"
models = ["m", "m"]
"#,
    );
    for expected in [
        "backends.a/b: backend name \"a/b\" contains '/'",
        "backends.noprovider: `provider` is required",
        "backends.badprovider: unknown variant `gemini`",
        "backends.badstyle: unknown variant `prompt`",
        "\"chat\" or \"single-prompt\"",
        "backends.badturns.history_turns = 51: expected 1 to 50",
        "backends.badurl.base_url \"llm.example.com\": expected an http:// or https:// URL",
        "backends.badenv.api_key_env \"sk-abc\": expected the NAME of an environment variable",
        "backends.azure: an azure backend needs base_url",
        "backends.azure: an azure backend needs model",
        "backends.azure: an azure backend needs api_key_env",
        "backends.ollamaheaders.headers: the ollama backend sends no extra headers",
        "backends.authheader.headers.Authorization: credentials are never kept in config.toml",
        "backends.unknownkey: unknown field `temperature`",
        "backends.twice.models: \"m\" is listed twice",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn duplicate_backend_names_are_refused() {
    // The same table twice is a TOML error; names differing only in case
    // would route ambiguously.
    let twice =
        error_text("[backends.a]\nprovider = \"openai\"\n[backends.a]\nprovider = \"ollama\"\n");
    assert!(twice.contains("duplicate key"), "{twice}");
    let cased = error_text(
        "[backends.Work]\nprovider = \"openai\"\n[backends.work]\nprovider = \"ollama\"\n",
    );
    assert!(cased.contains("differ only in case"), "{cased}");
}

#[test]
fn default_backend_must_name_a_table_or_a_kind() {
    let config = load("default_backend = \"copilot\"\n").unwrap();
    assert_eq!(config.default_backend.as_deref(), Some("copilot"));
    let text =
        error_text("default_backend = \"nowhere\"\n[backends.local]\nprovider = \"ollama\"\n");
    assert!(text.contains("invalid value for default_backend"), "{text}");
    assert!(text.contains("local, openai"), "{text}");
}

#[test]
fn token_and_allowed_hosts_are_validated_and_never_shown() {
    let config = load_with(
        "allowed_hosts = [\"Bridge.LAN\", \"devbox\"]\n",
        &[("COPILOT_BRIDGE_TOKEN", "0123456789abcdef0123")],
        None,
    )
    .unwrap();
    assert_eq!(
        config.token.as_ref().map(|t| t.expose()),
        Some("0123456789abcdef0123")
    );
    assert_eq!(config.allowed_hosts, ["bridge.lan", "devbox"]);
    let shown = config.to_redacted_json().to_string();
    assert!(!shown.contains("0123456789abcdef0123"), "{shown}");
    let short = load_with("", &[("COPILOT_BRIDGE_TOKEN", "short")], None)
        .unwrap_err()
        .to_string();
    assert!(short.contains("invalid value for token"), "{short}");
    assert!(short.contains("16 to 512"), "{short}");
    assert!(!short.contains("short\""), "{short}");
    let hosts = error_text("allowed_hosts = \"http://bridge.lan:9400\"\n");
    assert!(hosts.contains("invalid value for allowed_hosts"), "{hosts}");
}

#[test]
fn a_project_dotenv_may_not_choose_the_token_or_hosts() {
    for line in [
        "COPILOT_BRIDGE_TOKEN=0123456789abcdef0123\n",
        "COPILOT_BRIDGE_ALLOWED_HOSTS=evil.example\n",
    ] {
        let text = load_with("", &[], Some(line)).unwrap_err().to_string();
        assert!(text.contains("cannot be set in a project's .env"), "{text}");
    }
}

#[test]
fn provider_keys_come_from_the_environment_never_from_config_toml() {
    let config = load_with(
        "",
        &[
            ("OPENAI_API_KEY", "sk-o"),
            ("ANTHROPIC_API_KEY", "sk-a"),
            ("OLLAMA_HOST", "127.0.0.1:9"),
            ("COPILOT_BRIDGE_NO_GH", "1"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(
        config.openai_api_key.as_ref().map(|k| k.expose()),
        Some("sk-o")
    );
    assert_eq!(
        config.anthropic_api_key.as_ref().map(|k| k.expose()),
        Some("sk-a")
    );
    assert_eq!(
        config.ollama_base_url.as_deref(),
        Some("http://127.0.0.1:9")
    );
    assert!(config.no_gh);
    // Nothing of the developer's machine leaks into an injected environment.
    let bare = load("").unwrap();
    assert_eq!(bare.openai_api_key, None);
    assert!(!bare.no_gh);
    let text = error_text("openai_api_key = \"sk-in-file\"\n");
    assert!(
        text.contains("openai_api_key cannot be set in config.toml"),
        "{text}"
    );
    assert!(text.contains("OPENAI_API_KEY"), "{text}");
    assert!(!text.contains("sk-in-file"), "{text}");
}

#[test]
fn model_routes_must_name_a_backend_the_daemon_can_have() {
    let config = load(
        r#"
[backends.main]
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
[models]
default = "main/gpt-4.1"
think = "anthropic/claude-opus-4"
[models.map]
"claude-*" = "main"
"#,
    )
    .unwrap();
    assert_eq!(config.models.map[0].target.backend, "main");
    assert_eq!(config.models.map[0].target.model, None);
    assert_eq!(
        config.models.default.as_ref().unwrap().to_string(),
        "main/gpt-4.1"
    );
    let shown = config.to_redacted_json();
    assert_eq!(shown["models"]["think"]["backend"], "anthropic");

    let text = error_text("[models]\ndefault = \"nowhere/x\"\n");
    assert!(
        text.contains("models.default = \"nowhere/x\" names the backend \"nowhere\""),
        "{text}"
    );
}
