//! Layering: flags > environment > `.env` > config.toml > defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::BackendKind;
use crate::file::{
    QUOTED_CHARS, copilot_section, read_config_file, read_small_file, structured_sections,
};
use crate::keys::{self, KeySpec};
use crate::value::{self, LogLevel};
use crate::{BridgeConfig, ByokConfig, ConfigError, ConnectionSettings, Source};
use bridge_util::Secret;

/// Settings a `.env` in the working directory may not set: it comes with the
/// repository, and these choose which program runs (`COPILOT_CLI_PATH`),
/// where the trusted state and its `config.toml` live, where the audit goes,
/// whether writes are allowed, which address the daemon listens on, and
/// whether the repository's own providers are spawned.
/// Nor the daemon's token and the host names it accepts: a token the
/// repository chose is known to its authors. Nor OpenClaw's directories:
/// they choose which files the memory server serves and which file
/// `openclaw register` edits. Nor where the OpenClaw gateway is: the
/// gateway token (perhaps read from openclaw.json) is sent there. Nor where
/// telemetry goes, with which headers and whether it carries content: a
/// repository could otherwise send the traces of every agent to itself.
const DOTENV_REFUSED: [&str; 22] = [
    "COPILOT_BRIDGE_HOME",
    "COPILOT_BRIDGE_TOKEN",
    "COPILOT_BRIDGE_ALLOWED_HOSTS",
    "COPILOT_CLI_PATH",
    "COPILOT_BRIDGE_READ_ONLY",
    "COPILOT_BRIDGE_BIND",
    "COPILOT_AUDIT_LOG_DIR",
    "COPILOT_BRIDGE_TRUST_PROJECT_PROVIDERS",
    "OPENCLAW_WORKSPACE",
    "OPENCLAW_WORKSPACE_DIR",
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_CONFIG_PATH",
    "OPENCLAW_GATEWAY_URL",
    "OPENCLAW_HOST",
    "OPENCLAW_GATEWAY_PORT",
    "OPENCLAW_PORT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "COPILOT_BRIDGE_OTEL_CAPTURE_CONTENT",
];

pub const DEFAULT_PORT: u16 = 9400;
/// Spec: a detached gateway exits 30 s after its last session.
pub const DEFAULT_IDLE_EXIT_SECS: u64 = 30;
/// How long an agent session registered by its hooks lives without a hook.
pub const DEFAULT_AGENT_SESSION_IDLE_SECS: u64 = 30 * 60;
pub const DEFAULT_APPROVAL_TIMEOUT_SECS: u64 = 120;

/// Builds a [`BridgeConfig`] from its layers. The environment is a snapshot
/// handed in, so tests never race on the process environment.
#[derive(Debug, Clone, Default)]
pub struct ConfigLoader {
    flags: BTreeMap<&'static str, (String, String)>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    user_home: Option<PathBuf>,
    config_file: Option<PathBuf>,
    skip_dotenv: bool,
    /// Read no config.toml at all (see [`ConfigLoader::without_config_file`]).
    skip_file: bool,
    /// Our variables whose values are not UTF-8: each is a configuration error.
    not_utf8: Vec<String>,
}

/// A raw value and where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    pub(crate) value: String,
    pub(crate) source: Source,
}

impl ConfigLoader {
    /// A loader over the real process: its environment, working directory and
    /// the user's home directory.
    pub fn from_process() -> Self {
        let mut env = BTreeMap::new();
        let mut not_utf8 = Vec::new();
        for (name, value) in std::env::vars_os() {
            // A name that is not UTF-8 is none of ours.
            let Ok(name) = name.into_string() else {
                continue;
            };
            match value.into_string() {
                Ok(value) => {
                    env.insert(name, value);
                }
                // Never read such a value lossily: a path would silently
                // become another path, and its config.toml would be skipped.
                Err(_) if keys::spec_of_env(&name).is_some() => not_utf8.push(name),
                Err(_) => {}
            }
        }
        Self {
            env,
            not_utf8,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            user_home: std::env::var_os("HOME").map(PathBuf::from),
            ..Self::default()
        }
    }

    /// A loader with exactly this environment and no home directory.
    pub fn with_env<K: Into<String>, V: Into<String>>(
        env: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            cwd: PathBuf::from("."),
            ..Self::default()
        }
    }

    /// The directory whose `.env` is read and against which relative paths resolve.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = dir.into();
        self
    }

    /// The user's home directory (for `~` and the default state directory).
    pub fn user_home(mut self, dir: Option<PathBuf>) -> Self {
        self.user_home = dir;
        self
    }

    /// Reads this config file instead of `$COPILOT_BRIDGE_HOME/config.toml`.
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_file = Some(path.into());
        self
    }

    /// Ignores `.env` (for commands that must not depend on the directory).
    pub fn skip_dotenv(mut self) -> Self {
        self.skip_dotenv = true;
        self
    }

    /// Reads no config.toml: for a command that must still find the running
    /// daemon (its state directory is never set by the file) while the
    /// file cannot be used, so that the daemon can say why.
    pub fn without_config_file(mut self) -> Self {
        self.skip_file = true;
        self
    }

    /// Sets `key` (a name from [`KEYS`]) as if given by command-line `flag`.
    pub fn flag(mut self, key: &'static str, value: impl Into<String>, flag: &str) -> Self {
        debug_assert!(keys::spec(key).is_some(), "unknown config key {key}");
        self.flags.insert(key, (value.into(), flag.to_owned()));
        self
    }

    /// Reads every layer and validates the result; all problems are reported
    /// together.
    pub fn load(&self) -> Result<BridgeConfig, ConfigError> {
        if !self.not_utf8.is_empty() {
            let errors: Vec<ConfigError> = self
                .not_utf8
                .iter()
                .map(|name| ConfigError::Invalid {
                    key: keys::spec_of_env(name)
                        .map_or_else(|| name.clone(), |spec| spec.key.to_owned()),
                    value: "(not valid UTF-8)".to_owned(),
                    origin: Source::Env(name.clone()),
                    expected: "UTF-8 text".to_owned(),
                })
                .collect();
            all_or_none(errors)?;
        }
        let dotenv = self.read_dotenv()?;
        let home_raw = self.lookup(&keys::HOME_SPEC, &dotenv, &BTreeMap::new());
        let home_raw_source = home_raw.as_ref().map(|raw| raw.source.clone());
        let home = match home_raw {
            Some(raw) => self.absolute(&raw.value),
            None => self
                .user_home
                .as_ref()
                .map(|h| h.join(".copilot-bridge"))
                .ok_or_else(|| ConfigError::Invalid {
                    key: keys::HOME.to_owned(),
                    value: "(unset)".to_owned(),
                    origin: Source::Default,
                    expected: "a state directory: set COPILOT_BRIDGE_HOME, since no home directory is known".to_owned(),
                })?,
        };
        let file_path = self
            .config_file
            .as_ref()
            .map(|p| self.cwd.join(p))
            .unwrap_or_else(|| home.join("config.toml"));
        let parsed = if self.skip_file {
            None
        } else {
            read_config_file(&file_path, self.config_file.is_some())?
        };
        let (file_values, structured, config_file) = match parsed {
            Some((values, structured)) => (values, structured, Some(file_path.clone())),
            None => (BTreeMap::new(), toml::Table::new(), None),
        };

        let mut builder = Builder {
            loader: self,
            dotenv: &dotenv,
            file: &file_values,
            errors: Vec::new(),
            sources: BTreeMap::new(),
        };
        builder
            .sources
            .insert(keys::HOME, home_raw_source.unwrap_or(Source::Default));

        let port = builder
            .parse(keys::PORT, |t| value::parse_port(t, true))
            .unwrap_or(DEFAULT_PORT);
        let bind_address = builder
            .parse(keys::BIND_ADDRESS, value::parse_ip)
            .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
        let read_only = builder
            .parse(keys::READ_ONLY, value::parse_bool)
            .unwrap_or(true);
        let github_token = builder.parse(keys::GITHUB_TOKEN, |t| Ok(Secret::new(t)));
        let byok = ByokConfig {
            provider: builder.parse(keys::BYOK_PROVIDER, |t| {
                BackendKind::parse_byok(t).map_err(|unknown| unknown.expected)
            }),
            api_key: builder.parse(keys::BYOK_API_KEY, |t| Ok(Secret::new(t))),
            base_url: builder.parse(keys::BYOK_BASE_URL, value::parse_url),
            model: builder.parse(keys::BYOK_MODEL, |t| Ok(t.trim().to_owned())),
        };
        let cli_path = builder.parse(keys::CLI_PATH, |t| Ok(self.absolute(t)));
        let log_level = builder
            .parse(keys::LOG_LEVEL, |t| t.parse::<LogLevel>())
            .unwrap_or(LogLevel::Info);
        let (openclaw, warnings) = self.openclaw_section(&mut builder);
        let audit_log_dir = builder
            .parse(keys::AUDIT_LOG_DIR, |t| Ok(self.absolute(t)))
            .unwrap_or_else(|| home.join("audit"));
        let project_context = builder.parse(keys::PROJECT_CONTEXT, |t| Ok(t.to_owned()));
        let max_retries = builder
            .parse(keys::MAX_RETRIES, value::parse_retries)
            .unwrap_or(3);
        let transient_retries = builder
            .parse(keys::TRANSIENT_RETRIES, value::parse_retries)
            .unwrap_or(2);
        let idle_exit_secs = builder
            .parse(keys::IDLE_EXIT_SECS, value::parse_idle_secs)
            .unwrap_or(DEFAULT_IDLE_EXIT_SECS);
        let agent_session_idle_secs = builder
            .parse(keys::AGENT_SESSION_IDLE_SECS, value::parse_idle_secs)
            .unwrap_or(DEFAULT_AGENT_SESSION_IDLE_SECS);
        let approval_timeout_secs = builder
            .parse(keys::APPROVAL_TIMEOUT_SECS, value::parse_idle_secs)
            .unwrap_or(DEFAULT_APPROVAL_TIMEOUT_SECS);
        let trust_project_providers = builder
            .parse(keys::TRUST_PROJECT_PROVIDERS, value::parse_bool)
            .unwrap_or(false);
        let request_log = builder
            .parse(keys::REQUEST_LOG, value::parse_bool)
            .unwrap_or(false);
        let keep_transcripts = builder
            .parse(keys::KEEP_TRANSCRIPTS, value::parse_bool)
            .unwrap_or(false);
        let telemetry = self.telemetry_section(&mut builder);
        let connections = ConnectionSettings {
            max_connections: builder.parse(keys::MAX_CONNECTIONS, value::parse_positive),
            header_timeout_ms: builder.parse(keys::HEADER_TIMEOUT_MS, value::parse_positive),
            body_timeout_ms: builder.parse(keys::BODY_TIMEOUT_MS, value::parse_positive),
        };

        let token = builder.parse(keys::TOKEN, |t| value::parse_token(t).map(Secret::new));
        let allowed_hosts = builder
            .parse(keys::ALLOWED_HOSTS, value::parse_host_names)
            .unwrap_or_default();
        let default_backend = builder.parse(keys::DEFAULT_BACKEND, |t| {
            crate::backends::valid_backend_name(t.trim())
                .map(|()| t.trim().to_owned())
                .map_err(|_| "a backend name: letters, digits, '_', '-' and '.'")
        });
        let openai_api_key = builder.parse(keys::OPENAI_API_KEY, |t| Ok(Secret::new(t.trim())));
        let anthropic_api_key =
            builder.parse(keys::ANTHROPIC_API_KEY, |t| Ok(Secret::new(t.trim())));
        let ollama_base_url = builder.parse(keys::OLLAMA_HOST, |t| Ok(value::ollama_base_url(t)));
        let no_gh = builder
            .parse(keys::NO_GH, value::parse_bool)
            .unwrap_or(false);

        let (permissions, tools) =
            structured_sections(&structured, &file_path, &mut builder.errors);
        let backends = crate::backends::backends_section(
            &structured,
            &file_path,
            |name| self.variable(name, &dotenv),
            &mut builder.errors,
        );
        let copilot = copilot_section(&structured, &file_path, &mut builder.errors);
        let models = crate::models::models_section(&structured, &file_path, &mut builder.errors);
        let mcp = crate::mcp::mcp_section(
            &structured,
            &file_path,
            |text| self.absolute(text),
            &mut builder.errors,
        );
        let workspace_roots = crate::file::workspace_roots(
            &structured,
            &file_path,
            |text| self.absolute(text),
            &mut builder.errors,
        );

        let Builder {
            mut errors,
            sources,
            ..
        } = builder;
        if byok.provider.is_none() && (byok.api_key.is_some() || byok.base_url.is_some()) {
            let origin = sources
                .get(keys::BYOK_API_KEY)
                .or_else(|| sources.get(keys::BYOK_BASE_URL))
                .cloned()
                .unwrap_or(Source::Default);
            errors.push(ConfigError::Invalid {
                key: keys::BYOK_PROVIDER.to_owned(),
                value: "(unset)".to_owned(),
                origin,
                expected: format!(
                    "{} when COPILOT_BYOK_API_KEY or COPILOT_BYOK_BASE_URL is set",
                    BackendKind::BYOK_ALLOWED
                ),
            });
        }
        // The daemon's own `vscode` backend is a name routes may use, too.
        let known_backend = |name: &str| {
            backends.iter().any(|b| b.name == name)
                || BackendKind::ALL.iter().any(|k| k.as_str() == name)
                || name == BackendKind::Vscode.as_str()
        };
        if let Some(name) = &default_backend {
            let known = known_backend(name);
            if !known {
                let mut names: Vec<&str> = backends.iter().map(|b| b.name.as_str()).collect();
                names.extend(BackendKind::ALL.iter().map(|k| k.as_str()));
                names.push(BackendKind::Vscode.as_str());
                errors.push(ConfigError::Invalid {
                    key: keys::DEFAULT_BACKEND.to_owned(),
                    value: format!("{name:?}"),
                    origin: sources
                        .get(keys::DEFAULT_BACKEND)
                        .cloned()
                        .unwrap_or(Source::Default),
                    expected: format!(
                        "the name of a [backends.NAME] table or of the auto-selected backend's kind: {}",
                        names.join(", ")
                    ),
                });
            }
        }
        for (key, target) in models.targets() {
            if !known_backend(&target.backend) {
                errors.push(ConfigError::File {
                    path: file_path.clone(),
                    message: format!(
                        "{key} = {:?} names the backend {:?}, which is neither a [backends.NAME] table nor a backend kind",
                        target.to_string(),
                        target.backend
                    ),
                });
            }
        }
        all_or_none(errors)?;
        Ok(BridgeConfig {
            home,
            port,
            bind_address,
            read_only,
            github_token,
            byok,
            cli_path,
            log_level,
            openclaw,
            audit_log_dir,
            project_context,
            max_retries,
            transient_retries,
            idle_exit_secs,
            agent_session_idle_secs,
            approval_timeout_secs,
            trust_project_providers,
            permissions,
            tools,
            copilot,
            mcp,
            workspace_roots,
            user_home: self.user_home.clone(),
            backends,
            request_log,
            keep_transcripts,
            telemetry,
            connections,
            default_backend,
            models,
            token,
            allowed_hosts,
            openai_api_key,
            anthropic_api_key,
            ollama_base_url,
            no_gh,
            sources,
            config_file,
            warnings,
        })
    }

    fn read_dotenv(&self) -> Result<BTreeMap<String, (String, PathBuf)>, ConfigError> {
        let path = self.cwd.join(".env");
        let mut values = BTreeMap::new();
        if self.skip_dotenv || !path.is_file() {
            return Ok(values);
        }
        let dotenv_error = |message: String| ConfigError::DotEnv {
            path: path.clone(),
            message: bridge_policy::redact::shorten(&message, QUOTED_CHARS),
        };
        let bytes = read_small_file(&path).map_err(dotenv_error)?;
        for item in dotenvy::from_read_iter(bytes.as_slice()) {
            let (name, value) = item.map_err(|err| dotenv_error(err.to_string()))?;
            if DOTENV_REFUSED.contains(&name.as_str()) {
                return Err(dotenv_error(format!(
                    "{name} cannot be set in a project's .env: the .env belongs to the repository, \
                     and this setting decides which programs, directories or protections the bridge \
                     trusts. Set it in your environment or in config.toml instead"
                )));
            }
            // Every variable is kept: `[backends.NAME] api_key_env` may
            // name any of them. Only our keys' names are looked up otherwise.
            values.insert(name, (value, path.clone()));
        }
        Ok(values)
    }

    /// A variable of the process environment (never of `.env`).
    pub(crate) fn process_variable(&self, name: &str) -> Option<String> {
        self.env.get(name).filter(|v| !v.trim().is_empty()).cloned()
    }

    /// A variable of the environment, else of `.env` (for `api_key_env`).
    fn variable(&self, name: &str, dotenv: &BTreeMap<String, (String, PathBuf)>) -> Option<String> {
        let non_empty = |v: &&String| !v.trim().is_empty();
        self.env
            .get(name)
            .filter(non_empty)
            .or_else(|| dotenv.get(name).map(|(value, _)| value).filter(non_empty))
            .cloned()
    }

    /// The highest-precedence non-empty raw value of `spec`.
    fn lookup(
        &self,
        spec: &KeySpec,
        dotenv: &BTreeMap<String, (String, PathBuf)>,
        file: &BTreeMap<String, Raw>,
    ) -> Option<Raw> {
        let non_empty = |v: &String| !v.trim().is_empty();
        if let Some((value, flag)) = self.flags.get(spec.key).filter(|(v, _)| non_empty(v)) {
            return Some(Raw {
                value: value.clone(),
                source: Source::Flag(flag.clone()),
            });
        }
        for name in spec.env_names() {
            if let Some(value) = self.env.get(name).filter(|v| non_empty(v)) {
                return Some(Raw {
                    value: value.clone(),
                    source: Source::Env(name.to_owned()),
                });
            }
        }
        for name in spec.env_names() {
            if let Some((value, path)) = dotenv.get(name).filter(|(v, _)| non_empty(v)) {
                return Some(Raw {
                    value: value.clone(),
                    source: Source::DotEnv(path.clone()),
                });
            }
        }
        file.get(spec.key).cloned()
    }

    /// Expands `~/` and makes relative paths absolute against the cwd.
    pub(crate) fn absolute(&self, text: &str) -> PathBuf {
        let text = text.trim();
        let expanded = match (text.strip_prefix("~/"), &self.user_home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ if text == "~" => self
                .user_home
                .clone()
                .unwrap_or_else(|| PathBuf::from(text)),
            _ => PathBuf::from(text),
        };
        if expanded.is_absolute() {
            expanded
        } else {
            self.cwd.join(expanded)
        }
    }
}

/// Parses scalar keys one by one, collecting every error.
pub(crate) struct Builder<'a> {
    loader: &'a ConfigLoader,
    dotenv: &'a BTreeMap<String, (String, PathBuf)>,
    file: &'a BTreeMap<String, Raw>,
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) sources: BTreeMap<&'static str, Source>,
}

impl Builder<'_> {
    pub(crate) fn parse<T>(
        &mut self,
        key: &'static str,
        parse: impl FnOnce(&str) -> Result<T, &'static str>,
    ) -> Option<T> {
        let spec = keys::spec(key)?;
        let raw = self.loader.lookup(spec, self.dotenv, self.file)?;
        self.sources.insert(key, raw.source.clone());
        match parse(&raw.value) {
            Ok(value) => Some(value),
            Err(expected) => {
                let shown = if spec.secret {
                    "[REDACTED]".to_owned()
                } else {
                    format!("{:?}", raw.value)
                };
                self.errors.push(ConfigError::Invalid {
                    key: key.to_owned(),
                    value: shown,
                    origin: raw.source,
                    expected: expected.to_owned(),
                });
                None
            }
        }
    }
}

/// `Ok` when there is no error; otherwise the one error, or all of them.
fn all_or_none(mut errors: Vec<ConfigError>) -> Result<(), ConfigError> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(ConfigError::Many(errors)),
    }
}
