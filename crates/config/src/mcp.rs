//! `[mcp.servers.NAME]`: the MCP servers whose tools every session gets.
//!
//! Validated at load: unknown keys, the server name (it becomes the prefix
//! of every tool name the model sees), the transport's required keys, tool
//! filter patterns and the `${VAR}` syntax of env and header values. The
//! references themselves are expanded when the server starts (so an unset
//! variable fails that one server with a clear reason, not every command).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// The longest tool name model APIs accept (OpenAI, Anthropic: 64).
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// Separator between the server name and the tool name.
pub const TOOL_NAME_SEPARATOR: &str = "__";
/// Default seconds a tool call may take.
pub const DEFAULT_MCP_TIMEOUT_SECS: u64 = 60;
/// Default seconds a server has to start and list its tools.
pub const DEFAULT_MCP_STARTUP_TIMEOUT_SECS: u64 = 30;

/// How the bridge reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout (`local` is
    /// accepted as Copilot CLI's name for it).
    #[serde(alias = "local")]
    Stdio,
    /// Streamable HTTP at `url`.
    Http,
}

impl McpTransport {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
        }
    }
}

/// One `[mcp.servers.NAME]` table as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// `stdio` or `http`; inferred from `command` / `url` when absent.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub transport: Option<McpTransport>,
    /// stdio: the program (a bare name is looked up on PATH).
    pub command: Option<String>,
    pub args: Vec<String>,
    /// stdio: set on top of a minimal inherited environment; values may
    /// reference `${VAR}` of the bridge's environment.
    pub env: BTreeMap<String, String>,
    /// stdio: working directory (default: the bridge's).
    pub cwd: Option<PathBuf>,
    /// http: the endpoint, e.g. `https://example.com/mcp`.
    pub url: Option<String>,
    /// http: sent with every request; values may reference `${VAR}`.
    pub headers: BTreeMap<String, String>,
    /// Tools to offer (exact names or globs); empty means all.
    pub tools: Vec<String>,
    /// Tools never offered (exact names or globs); wins over `tools`.
    pub exclude_tools: Vec<String>,
    /// Seconds one tool call may take.
    pub timeout_secs: u64,
    /// Seconds the server has to start, initialize and list its tools.
    pub startup_timeout_secs: u64,
    /// `false` keeps the entry but never starts the server.
    pub enabled: bool,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            transport: None,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            tools: Vec::new(),
            exclude_tools: Vec::new(),
            timeout_secs: DEFAULT_MCP_TIMEOUT_SECS,
            startup_timeout_secs: DEFAULT_MCP_STARTUP_TIMEOUT_SECS,
            enabled: true,
        }
    }
}

impl McpServerConfig {
    /// The transport, explicit or inferred (`url` means http).
    pub fn transport(&self) -> McpTransport {
        self.transport
            .unwrap_or(if self.url.is_some() && self.command.is_none() {
                McpTransport::Http
            } else {
                McpTransport::Stdio
            })
    }

    /// This entry as `config show` prints it: env and header values that
    /// are more than `${VAR}` references are redacted.
    pub fn redacted(&self) -> serde_json::Value {
        let mut shown = self.clone();
        for value in shown.env.values_mut().chain(shown.headers.values_mut()) {
            if !is_reference_only(value) {
                *value = "[REDACTED]".to_owned();
            }
        }
        for arg in &mut shown.args {
            *arg = bridge_policy::redact(arg).into_owned();
        }
        let mut json = serde_json::to_value(&shown).unwrap_or(serde_json::Value::Null);
        json["type"] = serde_json::Value::from(self.transport().as_str());
        json
    }
}

/// `[mcp]` as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// Whether `name` may prefix tool names: `[A-Za-z0-9_-]+`, short enough to
/// leave room for `__` and a tool name.
pub fn valid_server_name(name: &str) -> Result<(), String> {
    let max = MAX_TOOL_NAME_CHARS - TOOL_NAME_SEPARATOR.len() - 1;
    if name.is_empty() {
        return Err("the server name is empty".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "server name {name:?} contains {bad:?}; use only letters, digits, '_' and '-' (it prefixes tool names, which model APIs restrict to [A-Za-z0-9_-])"
        ));
    }
    if name.contains(TOOL_NAME_SEPARATOR) {
        return Err(format!(
            "server name {name:?} contains \"__\", the separator of server and tool in tool names"
        ));
    }
    if name.chars().count() > max {
        return Err(format!(
            "server name {name:?} is longer than {max} characters; `{name}__<tool>` must fit the {MAX_TOOL_NAME_CHARS}-character limit of tool names"
        ));
    }
    Ok(())
}

/// A `${NAME}` reference in `text`: `Ok(names)` or the syntax error.
pub fn env_references(text: &str) -> Result<Vec<&str>, String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!(
                "unterminated \"${{\" in {:?}",
                bridge_policy::redact::shorten(text, crate::file::QUOTED_CHARS)
            ));
        };
        let name = &after[..end];
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "\"${{{name}}}\" is not a variable reference; names are [A-Za-z_][A-Za-z0-9_]*"
            ));
        }
        names.push(name);
        rest = &after[end + 1..];
    }
    Ok(names)
}

/// Replaces every `${NAME}` with `lookup(NAME)`; the first unset name is
/// the error.
pub fn expand_env_references(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| {
            format!(
                "unterminated \"${{\" in {:?}",
                bridge_policy::redact::shorten(text, crate::file::QUOTED_CHARS)
            )
        })?;
        let name = &after[..end];
        match lookup(name) {
            Some(value) => out.push_str(&value),
            None => {
                return Err(format!(
                    "${{{name}}} is not set in the bridge's environment"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether a value is only references (optionally after an auth scheme),
/// so that showing it reveals no secret.
fn is_reference_only(value: &str) -> bool {
    let rest = ["Bearer ", "Basic ", "token "]
        .iter()
        .find_map(|scheme| value.strip_prefix(scheme))
        .unwrap_or(value);
    let mut rest = rest.trim();
    if rest.is_empty() {
        return false;
    }
    while let Some(after) = rest.strip_prefix("${") {
        let Some(end) = after.find('}') else {
            return false;
        };
        rest = &after[end + 1..];
    }
    rest.is_empty() && env_references(value).is_ok()
}

/// Parses and validates `[mcp]`; relative `cwd`s resolve with `absolute`.
pub(crate) fn mcp_section(
    structured: &toml::Table,
    path: &Path,
    absolute: impl Fn(&str) -> PathBuf,
    errors: &mut Vec<ConfigError>,
) -> McpSettings {
    let mut problems = Vec::new();
    let mut settings = match structured.get("mcp").cloned() {
        None => return McpSettings::default(),
        Some(value) => match value.try_into::<McpSettings>() {
            Ok(settings) => settings,
            Err(err) => {
                errors.push(ConfigError::File {
                    path: path.to_path_buf(),
                    message: format!(
                        "[mcp]: {} (server tables are [mcp.servers.NAME] with keys: type, command, args, env, cwd, url, headers, tools, exclude_tools, timeout_secs, startup_timeout_secs, enabled)",
                        err.message().trim_end()
                    ),
                });
                return McpSettings::default();
            }
        },
    };
    for (name, server) in &mut settings.servers {
        validate_server(name, server, &mut problems);
        if let Some(cwd) = &server.cwd {
            server.cwd = Some(absolute(&cwd.to_string_lossy()));
        }
    }
    errors.extend(problems.into_iter().map(|message| ConfigError::File {
        path: path.to_path_buf(),
        message,
    }));
    settings
}

fn validate_server(name: &str, server: &McpServerConfig, problems: &mut Vec<String>) {
    let key = format!("mcp.servers.{name}");
    if let Err(reason) = valid_server_name(name) {
        problems.push(format!("{key}: {reason}"));
    }
    match server.transport() {
        McpTransport::Stdio => {
            if server
                .command
                .as_deref()
                .is_none_or(|c| c.trim().is_empty())
            {
                problems.push(format!(
                    "{key}: a stdio server needs `command` (or set `url` and type = \"http\")"
                ));
            }
            if server.url.is_some() || !server.headers.is_empty() {
                problems.push(format!(
                    "{key}: `url` and `headers` belong to http servers; this one is stdio"
                ));
            }
        }
        McpTransport::Http => {
            match server.url.as_deref() {
                None => problems.push(format!("{key}: an http server needs `url`")),
                Some(url) => {
                    if let Err(expected) = crate::value::parse_url(url) {
                        problems.push(format!("{key}.url {url:?}: expected {expected}"));
                    }
                }
            }
            if server.command.is_some()
                || !server.args.is_empty()
                || !server.env.is_empty()
                || server.cwd.is_some()
            {
                problems.push(format!(
                    "{key}: `command`, `args`, `env` and `cwd` belong to stdio servers; this one is http"
                ));
            }
        }
    }
    for (var, value) in &server.env {
        if var.is_empty() || var.contains('=') || var.contains('\0') {
            problems.push(format!("{key}.env: {var:?} is not a variable name"));
        }
        if let Err(reason) = env_references(value) {
            problems.push(format!("{key}.env.{var}: {reason}"));
        }
    }
    for (header, value) in &server.headers {
        if http_token_invalid(header) {
            problems.push(format!("{key}.headers: {header:?} is not a header name"));
        }
        if value.contains(['\r', '\n', '\0']) {
            problems.push(format!(
                "{key}.headers.{header}: line breaks are not allowed"
            ));
        }
        if let Err(reason) = env_references(value) {
            problems.push(format!("{key}.headers.{header}: {reason}"));
        }
    }
    for (list, patterns) in [
        ("tools", &server.tools),
        ("exclude_tools", &server.exclude_tools),
    ] {
        for pattern in patterns {
            if pattern.trim().is_empty() {
                problems.push(format!("{key}.{list}: an empty tool name"));
            } else if let Err(err) = globset::Glob::new(pattern) {
                problems.push(format!(
                    "{key}.{list}: {pattern:?} is not a valid pattern: {err}"
                ));
            }
        }
    }
    for (field, value) in [
        ("timeout_secs", server.timeout_secs),
        ("startup_timeout_secs", server.startup_timeout_secs),
    ] {
        if value == 0 || value > 86_400 {
            problems.push(format!(
                "{key}.{field} = {value}: expected 1 to 86400 seconds"
            ));
        }
    }
}

fn http_token_invalid(name: &str) -> bool {
    name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}
