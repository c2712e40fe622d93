//! Reading the configuration files: config.toml (scalars by dotted key, and
//! the structured `[permissions]`, `[tools]`, `[copilot]`, `[mcp]` tables) and the
//! small-file rules both config.toml and `.env` obey.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use bridge_policy::{PermissionPolicy, PermissionRules};
use bridge_tools::ToolSettings;

use crate::keys::{self, KEYS};
use crate::loader::Raw;
use crate::value;
use crate::{ConfigError, Source};

pub(crate) const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;
const STRUCTURED_TABLES: &[&str] = &[
    "permissions",
    "tools",
    "copilot",
    "mcp",
    "backends",
    "models",
    "workspaces",
];

pub(crate) type FileContents = (BTreeMap<String, Raw>, toml::Table);

/// Reads config.toml into scalar values (by dotted key) and the structured
/// tables. A missing file is fine unless it was named explicitly.
pub(crate) fn read_config_file(
    path: &Path,
    explicit: bool,
) -> Result<Option<FileContents>, ConfigError> {
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
pub(crate) fn copilot_section(
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

/// Reads a configuration file of at most [`MAX_CONFIG_FILE_BYTES`]. It is
/// opened non-blocking and the open handle must be a regular file: opening a
/// FIFO the normal way would block the command forever.
pub(crate) fn read_small_file(path: &Path) -> Result<Vec<u8>, String> {
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

/// Characters of a configuration file an error quotes at most: error
/// texts quote the offending line, and a hostile file makes it huge.
pub(crate) const QUOTED_CHARS: usize = 300;

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
    if let Some(spec) = keys::spec(key).filter(|spec| spec.secret && !spec.in_file) {
        errors.push(format!(
            "{key} cannot be set in config.toml: keys are never kept in config files; set {} in the environment (or .env) instead",
            spec.env
        ));
        return;
    }
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
        // A list key (`allowed_hosts`) may be written as a TOML array.
        toml::Value::Array(items)
            if spec.key == keys::ALLOWED_HOSTS && items.iter().all(toml::Value::is_str) =>
        {
            items
                .iter()
                .filter_map(toml::Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        }
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
/// `[workspaces] roots`: the directories (and everything below them) that
/// may be a workspace when it is named by a client (docs/policy.md,
/// "Which directories may be a workspace").
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct WorkspacesTable {
    roots: Vec<String>,
}

/// The `roots` of `[workspaces]`, made absolute by `absolute`.
pub(crate) fn workspace_roots(
    structured: &toml::Table,
    path: &Path,
    absolute: impl Fn(&str) -> std::path::PathBuf,
    errors: &mut Vec<ConfigError>,
) -> Vec<std::path::PathBuf> {
    let table = match structured
        .get("workspaces")
        .cloned()
        .map(|v| v.try_into::<WorkspacesTable>())
    {
        None => return Vec::new(),
        Some(Ok(table)) => table,
        Some(Err(err)) => {
            errors.push(ConfigError::File {
                path: path.to_path_buf(),
                message: format!("[workspaces]: {}", err.message()),
            });
            return Vec::new();
        }
    };
    let mut roots = Vec::new();
    for (index, root) in table.roots.iter().enumerate() {
        if root.trim().is_empty() {
            errors.push(ConfigError::File {
                path: path.to_path_buf(),
                message: format!("workspaces.roots[{index}]: an empty path"),
            });
            continue;
        }
        roots.push(absolute(root));
    }
    roots
}

pub(crate) fn structured_sections(
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
        Some(Ok(rules)) => {
            // The file's rules compiled once to find a bad pattern now; the
            // defaults need no check (every process that loads the
            // configuration, each hook call among them, would pay it).
            if let Err(err) = PermissionPolicy::compile(&rules) {
                errors.push(file_error(err.to_string()));
            }
            rules
        }
        Some(Err(err)) => {
            errors.push(file_error(format!("[permissions]: {}", err.message())));
            PermissionRules::default()
        }
    };
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
