//! Layering: flags > environment > `.env` > config.toml > defaults.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use bridge_policy::{PermissionPolicy, PermissionRules};
use bridge_tools::ToolSettings;

use crate::keys::{self, KEYS, KeySpec};
use crate::value::{self, ByokProvider, LogLevel};
use crate::{BridgeConfig, ByokConfig, ConfigError, OpenClawConfig, Secret, Source};

pub const DEFAULT_PORT: u16 = 9400;
const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;
const STRUCTURED_TABLES: &[&str] = &["permissions", "tools", "copilot"];

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
    /// Our variables whose values are not UTF-8: each is a configuration error.
    not_utf8: Vec<String>,
}

/// A raw value and where it came from.
#[derive(Debug, Clone)]
struct Raw {
    value: String,
    source: Source,
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
                Err(_) if KEYS.iter().any(|spec| spec.env == name) => not_utf8.push(name),
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
                    key: KEYS
                        .iter()
                        .find(|spec| spec.env == name.as_str())
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
        let parsed = read_config_file(&file_path, self.config_file.is_some())?;
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
            provider: builder.parse(keys::BYOK_PROVIDER, |t| t.parse::<ByokProvider>()),
            api_key: builder.parse(keys::BYOK_API_KEY, |t| Ok(Secret::new(t))),
            base_url: builder.parse(keys::BYOK_BASE_URL, value::parse_url),
            model: builder.parse(keys::BYOK_MODEL, |t| Ok(t.trim().to_owned())),
        };
        let cli_path = builder.parse(keys::CLI_PATH, |t| Ok(self.absolute(t)));
        let log_level = builder
            .parse(keys::LOG_LEVEL, |t| t.parse::<LogLevel>())
            .unwrap_or(LogLevel::Info);
        let openclaw = OpenClawConfig {
            host: builder
                .parse(keys::OPENCLAW_HOST, value::parse_host)
                .unwrap_or_else(|| "127.0.0.1".to_owned()),
            port: builder
                .parse(keys::OPENCLAW_PORT, |t| value::parse_port(t, false))
                .unwrap_or(18789),
            gateway_token: builder.parse(keys::OPENCLAW_GATEWAY_TOKEN, |t| Ok(Secret::new(t))),
        };
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

        let (permissions, tools) =
            structured_sections(&structured, &file_path, &mut builder.errors);
        let copilot = copilot_section(&structured, &file_path, &mut builder.errors);

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
                    ByokProvider::ALLOWED
                ),
            });
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
            permissions,
            tools,
            copilot,
            sources,
            config_file,
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
            message: bounded(message),
        };
        let bytes = read_small_file(&path).map_err(dotenv_error)?;
        for item in dotenvy::from_read_iter(bytes.as_slice()) {
            let (name, value) = item.map_err(|err| dotenv_error(err.to_string()))?;
            if KEYS.iter().any(|spec| spec.env == name) {
                values.insert(name, (value, path.clone()));
            }
        }
        Ok(values)
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
        if let Some(value) = self.env.get(spec.env).filter(|v| non_empty(v)) {
            return Some(Raw {
                value: value.clone(),
                source: Source::Env(spec.env.to_owned()),
            });
        }
        if let Some((value, path)) = dotenv.get(spec.env).filter(|(v, _)| non_empty(v)) {
            return Some(Raw {
                value: value.clone(),
                source: Source::DotEnv(path.clone()),
            });
        }
        file.get(spec.key).cloned()
    }

    /// Expands `~/` and makes relative paths absolute against the cwd.
    fn absolute(&self, text: &str) -> PathBuf {
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
struct Builder<'a> {
    loader: &'a ConfigLoader,
    dotenv: &'a BTreeMap<String, (String, PathBuf)>,
    file: &'a BTreeMap<String, Raw>,
    errors: Vec<ConfigError>,
    sources: BTreeMap<&'static str, Source>,
}

impl Builder<'_> {
    fn parse<T>(
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

type FileContents = (BTreeMap<String, Raw>, toml::Table);

/// Reads config.toml into scalar values (by dotted key) and the structured
/// tables. A missing file is fine unless it was named explicitly.
fn read_config_file(path: &Path, explicit: bool) -> Result<Option<FileContents>, ConfigError> {
    let file_error = |message: String| ConfigError::File {
        path: path.to_path_buf(),
        message,
    };
    match std::fs::metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && !explicit => return Ok(None),
        _ => {}
    }
    let bytes = read_small_file(path).map_err(file_error)?;
    let text = String::from_utf8(bytes).map_err(|err| {
        file_error(format!(
            "not valid UTF-8 (at byte {})",
            err.utf8_error().valid_up_to()
        ))
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|err: toml::de::Error| file_error(err.to_string().trim_end().to_owned()))?;

    let mut scalars = BTreeMap::new();
    let mut structured = toml::Table::new();
    let mut errors = Vec::new();
    let source = Source::File(path.to_path_buf());
    for (name, item) in table {
        if STRUCTURED_TABLES.contains(&name.as_str()) {
            structured.insert(name, item);
            continue;
        }
        match item {
            toml::Value::Table(inner) if is_section(&name) => {
                for (sub, value) in inner {
                    let dotted = format!("{name}.{sub}");
                    collect_scalar(&dotted, value, &source, &mut scalars, &mut errors);
                }
            }
            value => collect_scalar(&name, value, &source, &mut scalars, &mut errors),
        }
    }
    if !errors.is_empty() {
        return Err(file_error(errors.join("; ")));
    }
    Ok(Some((scalars, structured)))
}

/// `[copilot]`: the account type must be one Copilot has, the API base a URL.
fn copilot_section(
    structured: &toml::Table,
    path: &Path,
    errors: &mut Vec<ConfigError>,
) -> crate::CopilotSettings {
    let file_error = |message: String| ConfigError::File {
        path: path.to_path_buf(),
        message,
    };
    let settings = match structured
        .get("copilot")
        .cloned()
        .map(|v| v.try_into::<crate::CopilotSettings>())
    {
        None => return crate::CopilotSettings::default(),
        Some(Ok(settings)) => settings,
        Some(Err(err)) => {
            errors.push(file_error(format!("[copilot]: {}", err.message())));
            return crate::CopilotSettings::default();
        }
    };
    if let Some(kind) = &settings.account_type
        && !matches!(kind.as_str(), "individual" | "business" | "enterprise")
    {
        errors.push(file_error(format!(
            "copilot.account_type {kind:?}: expected individual, business or enterprise"
        )));
    }
    if let Some(base) = &settings.api_base
        && let Err(expected) = value::parse_url(base)
    {
        errors.push(file_error(format!(
            "copilot.api_base {base:?}: expected {expected}"
        )));
    }
    settings
}

/// `Ok` when there is no error; otherwise the one error, or all of them.
fn all_or_none(mut errors: Vec<ConfigError>) -> Result<(), ConfigError> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(ConfigError::Many(errors)),
    }
}

/// Reads a configuration file of at most [`MAX_CONFIG_FILE_BYTES`]. It is
/// opened non-blocking and the open handle must be a regular file: opening a
/// FIFO the normal way would block the command forever.
fn read_small_file(path: &Path) -> Result<Vec<u8>, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|err| format!("cannot open: {err}"))?;
    let metadata = file
        .metadata()
        .map_err(|err| format!("cannot open: {err}"))?;
    if !metadata.is_file() {
        return Err("not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read: {err}"))?;
    if bytes.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(format!(
            "larger than {MAX_CONFIG_FILE_BYTES} bytes; this is not a config file"
        ));
    }
    Ok(bytes)
}

/// Error texts quote the offending line; a hostile file makes that line huge.
fn bounded(mut text: String) -> String {
    const MAX_CHARS: usize = 300;
    if let Some((cut, _)) = text.char_indices().nth(MAX_CHARS) {
        text.truncate(cut);
        text.push('…');
    }
    text
}

fn is_section(name: &str) -> bool {
    KEYS.iter().any(|spec| {
        spec.key
            .split_once('.')
            .is_some_and(|(section, _)| section == name)
    })
}

fn collect_scalar(
    key: &str,
    value: toml::Value,
    source: &Source,
    scalars: &mut BTreeMap<String, Raw>,
    errors: &mut Vec<String>,
) {
    let Some(spec) = keys::spec(key).filter(|spec| spec.in_file) else {
        let known: Vec<&str> = KEYS
            .iter()
            .filter(|s| s.in_file)
            .map(|s| s.key)
            .chain(STRUCTURED_TABLES.iter().copied())
            .collect();
        errors.push(format!(
            "unknown key {key:?}; known keys: {}",
            known.join(", ")
        ));
        return;
    };
    let text = match value {
        toml::Value::String(s) => s,
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Float(f) => f.to_string(),
        other => {
            errors.push(format!(
                "{} must be a string, number or boolean, not {}",
                spec.key,
                other.type_str()
            ));
            return;
        }
    };
    scalars.insert(
        spec.key.to_owned(),
        Raw {
            value: text,
            source: source.clone(),
        },
    );
}

/// `[permissions]` and `[tools]`, validated (patterns compile, commands are
/// non-empty).
fn structured_sections(
    structured: &toml::Table,
    path: &Path,
    errors: &mut Vec<ConfigError>,
) -> (PermissionRules, ToolSettings) {
    let section = |name: &str| structured.get(name).cloned();
    let file_error = |message: String| ConfigError::File {
        path: path.to_path_buf(),
        message,
    };
    let permissions = match section("permissions").map(|v| v.try_into::<PermissionRules>()) {
        None => PermissionRules::default(),
        Some(Ok(rules)) => rules,
        Some(Err(err)) => {
            errors.push(file_error(format!("[permissions]: {}", err.message())));
            PermissionRules::default()
        }
    };
    if let Err(err) = PermissionPolicy::compile(&permissions) {
        errors.push(file_error(err.to_string()));
    }
    let tools = match section("tools").map(|v| v.try_into::<ToolSettings>()) {
        None => ToolSettings::default(),
        Some(Ok(tools)) => tools,
        Some(Err(err)) => {
            errors.push(file_error(format!("[tools]: {}", err.message())));
            ToolSettings::default()
        }
    };
    for (kind, table) in [
        ("tools.formatters", &tools.formatters),
        ("tools.import_organizers", &tools.import_organizers),
    ] {
        for (ext, argv) in table {
            if argv.first().is_none_or(|program| program.trim().is_empty()) {
                errors.push(file_error(format!(
                    "{kind}.{ext} must name a program, e.g. [\"rustfmt\"]"
                )));
            }
        }
    }
    for (name, task) in &tools.tasks {
        if task.command.trim().is_empty() {
            errors.push(file_error(format!("tools.tasks.{name}.command is empty")));
        }
    }
    (permissions, tools)
}
