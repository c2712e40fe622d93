//! `[backends.NAME]`: the chat backends the daemon serves besides the one it
//! selects on its own (see docs/backends/multiple.md).
//!
//! Validated at load in one pass (every problem is reported): the name
//! (clients route by `NAME/MODEL`, so no `/`), the provider, URLs, the
//! style and history window, header names. API keys never live in
//! config.toml: a table names the environment variable holding its key
//! (`api_key_env`), which is read here, through the loader's environment
//! (and `.env`), so tests stay hermetic. An unset variable does not fail the
//! load: that one backend is reported unavailable with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use bridge_llm::BackendKind;

use crate::ConfigError;
use bridge_util::Secret;

/// The longest backend name: it prefixes model ids (`NAME/MODEL`).
pub const MAX_BACKEND_NAME_CHARS: usize = 64;
pub const DEFAULT_HISTORY_TURNS: usize = 3;
pub const MAX_HISTORY_TURNS: usize = 50;

/// How a backend takes a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendStyle {
    /// Messages pass through natively.
    #[default]
    Chat,
    /// One prompt: the latest system message and the last `history_turns`
    /// turns, for backends that take a single prompt.
    SinglePrompt,
}

impl BackendStyle {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::SinglePrompt => "single-prompt",
        }
    }
}

/// One `[backends.NAME]` table, validated, its key resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendConfig {
    pub name: String,
    pub provider: BackendKind,
    /// Where it is reached; the provider's default when `None`.
    pub base_url: Option<String>,
    /// The variable that holds the API key (GitHub token for copilot).
    pub api_key_env: Option<String>,
    /// That variable's value, from the environment or `.env`.
    pub api_key: Option<Secret>,
    /// The model used when a request names none (azure: the deployment).
    pub model: Option<String>,
    /// Models served without asking the upstream (and routed here).
    pub models: Vec<String>,
    pub style: BackendStyle,
    /// Turns kept by the single-prompt style (1 to 50).
    pub history_turns: usize,
    /// Sent with every request (openai, anthropic, copilot).
    pub headers: BTreeMap<String, String>,
}

impl BackendConfig {
    /// Why this backend cannot be used as configured, if it cannot.
    pub fn missing_key(&self) -> Option<String> {
        let var = self.api_key_env.as_deref()?;
        self.api_key.is_none().then(|| {
            format!(
                "backends.{}: api_key_env names {var}, which is not set (in the environment or .env)",
                self.name
            )
        })
    }

    /// This entry as `config show` prints it: no key, header values redacted.
    pub fn redacted(&self) -> Value {
        let headers: serde_json::Map<String, Value> = self
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.clone(),
                    Value::from(bridge_policy::redact(value).into_owned()),
                )
            })
            .collect();
        json!({
            "provider": self.provider.as_str(),
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "api_key": self.api_key.as_ref().map(|_| "[REDACTED]"),
            "model": self.model,
            "models": self.models,
            "style": self.style.as_str(),
            "history_turns": self.history_turns,
            "headers": headers,
        })
    }
}

/// `[backends]` as written (one table per backend).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackendTable {
    provider: BackendKind,
    base_url: Option<String>,
    api_key_env: Option<String>,
    model: Option<String>,
    #[serde(default)]
    models: Vec<String>,
    #[serde(default)]
    style: BackendStyle,
    history_turns: Option<i64>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

const TABLE_KEYS: &str =
    "provider, base_url, api_key_env, model, models, style, history_turns, headers";

/// Whether `name` may name a backend: `[A-Za-z0-9_.-]+`, no `/` (it would
/// make `NAME/MODEL` ambiguous).
pub fn valid_backend_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the backend name is empty".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "backend name {name:?} contains {bad:?}; use only letters, digits, '_', '-' and '.' (clients address it as NAME/MODEL)"
        ));
    }
    if name.chars().count() > MAX_BACKEND_NAME_CHARS {
        return Err(format!(
            "backend name {name:?} is longer than {MAX_BACKEND_NAME_CHARS} characters"
        ));
    }
    Ok(())
}

fn valid_env_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses and validates `[backends]`; `lookup` reads a variable from the
/// loader's environment, then `.env`.
pub(crate) fn backends_section(
    structured: &toml::Table,
    path: &Path,
    lookup: impl Fn(&str) -> Option<String>,
    errors: &mut Vec<ConfigError>,
) -> Vec<BackendConfig> {
    let mut problems = Vec::new();
    let mut entries = Vec::new();
    match structured.get("backends") {
        None => {}
        Some(toml::Value::Table(tables)) => {
            for (name, value) in tables {
                if let Some(entry) = backend_table(name, value, &lookup, &mut problems) {
                    entries.push(entry);
                }
            }
        }
        Some(other) => problems.push(format!(
            "backends must be tables [backends.NAME], not a {}",
            other.type_str()
        )),
    }
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for entry in &entries {
        if let Some(first) = seen.insert(entry.name.to_ascii_lowercase(), &entry.name) {
            problems.push(format!(
                "backends.{first} and backends.{} differ only in case; backend names must be unique",
                entry.name
            ));
        }
    }
    errors.extend(problems.into_iter().map(|message| ConfigError::File {
        path: path.to_path_buf(),
        message,
    }));
    entries
}

fn backend_table(
    name: &str,
    value: &toml::Value,
    lookup: &impl Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) -> Option<BackendConfig> {
    let key = format!("backends.{name}");
    let before = problems.len();
    if let Err(reason) = valid_backend_name(name) {
        problems.push(format!("{key}: {reason}"));
    }
    let Some(table) = value.as_table() else {
        problems.push(format!(
            "{key} must be a table ([{key}] with keys {TABLE_KEYS}), not a {}",
            value.type_str()
        ));
        return None;
    };
    let mut table = table.clone();
    // Checked before the shape: its value must not end up in a message.
    if table.remove("api_key").is_some() {
        problems.push(format!(
            "{key}.api_key: API keys are never kept in config.toml; put the key in an environment variable (or .env) and name it with api_key_env = \"VARIABLE\""
        ));
    }
    if !table.contains_key("provider") {
        problems.push(format!(
            "{key}: `provider` is required ({})",
            BackendKind::ALLOWED
        ));
        return None;
    }
    let written: BackendTable = match toml::Value::Table(table).try_into() {
        Ok(written) => written,
        Err(err) => {
            let message = err.message().trim_end();
            let hint = if message.contains("unknown variant") && message.contains("chat") {
                "style is \"chat\" or \"single-prompt\"".to_owned()
            } else if message.contains("unknown variant") {
                format!("provider is {}", BackendKind::ALLOWED)
            } else {
                format!("keys: {TABLE_KEYS}")
            };
            problems.push(format!("{key}: {message} ({hint})"));
            return None;
        }
    };
    let provider = written.provider;
    if provider == BackendKind::Vscode {
        problems.push(format!(
            "{key}.provider: \"vscode\" is not configured: the daemon serves the backend `vscode` itself while a VS Code window with the Copilot Bridge extension is connected (docs/vscode.md); use models like \"vscode/gpt-4o\" ({})",
            BackendKind::ALLOWED
        ));
        return None;
    }
    let base_url = match written.base_url.as_deref() {
        None => None,
        Some(url) => match crate::value::parse_url(url) {
            Ok(url) => Some(url),
            Err(expected) => {
                problems.push(format!("{key}.base_url {url:?}: expected {expected}"));
                None
            }
        },
    };
    let api_key_env = written.api_key_env.map(|v| v.trim().to_owned());
    if let Some(var) = &api_key_env
        && !valid_env_name(var)
    {
        problems.push(format!(
            "{key}.api_key_env {var:?}: expected the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself"
        ));
    }
    let model = written.model.map(|m| m.trim().to_owned());
    if model.as_deref() == Some("") {
        problems.push(format!("{key}.model is empty"));
    }
    let mut listed = std::collections::BTreeSet::new();
    for model in &written.models {
        if model.trim().is_empty() {
            problems.push(format!("{key}.models: an empty model id"));
        } else if !listed.insert(model.trim()) {
            problems.push(format!("{key}.models: {model:?} is listed twice"));
        }
    }
    let history_turns = match written.history_turns {
        None => DEFAULT_HISTORY_TURNS,
        Some(n) => match usize::try_from(n) {
            Ok(n) if (1..=MAX_HISTORY_TURNS).contains(&n) => n,
            _ => {
                problems.push(format!(
                    "{key}.history_turns = {n}: expected 1 to {MAX_HISTORY_TURNS}"
                ));
                DEFAULT_HISTORY_TURNS
            }
        },
    };
    if provider == BackendKind::Azure {
        if base_url.is_none() && written.base_url.is_none() {
            problems.push(format!(
                "{key}: an azure backend needs base_url (the resource endpoint, https://NAME.openai.azure.com)"
            ));
        }
        if model.is_none() {
            problems.push(format!(
                "{key}: an azure backend needs model (the deployment name)"
            ));
        }
        if api_key_env.is_none() {
            problems.push(format!(
                "{key}: an azure backend needs api_key_env (the variable holding its key)"
            ));
        }
    }
    if !written.headers.is_empty() && !provider.takes_headers() {
        problems.push(format!(
            "{key}.headers: the {} backend sends no extra headers (openai, anthropic and copilot do)",
            provider.as_str()
        ));
    }
    for (header, value) in &written.headers {
        let valid_name = !header.is_empty()
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid_name {
            problems.push(format!("{key}.headers: {header:?} is not a header name"));
        }
        if value.contains(['\r', '\n', '\0']) {
            problems.push(format!(
                "{key}.headers.{header}: line breaks are not allowed"
            ));
        }
        if header.eq_ignore_ascii_case("authorization")
            || header.eq_ignore_ascii_case("api-key")
            || header.eq_ignore_ascii_case("x-api-key")
        {
            problems.push(format!(
                "{key}.headers.{header}: credentials are never kept in config.toml; use api_key_env"
            ));
        }
    }
    if problems.len() > before {
        return None;
    }
    let api_key = api_key_env
        .as_deref()
        .and_then(lookup)
        .filter(|v| !v.trim().is_empty())
        .map(|v| Secret::new(v.trim()));
    Some(BackendConfig {
        name: name.to_owned(),
        provider,
        base_url,
        api_key_env,
        api_key,
        model,
        models: written.models.iter().map(|m| m.trim().to_owned()).collect(),
        style: written.style,
        history_turns,
        headers: written.headers,
    })
}
