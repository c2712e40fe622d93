//! `tap.config.json`: read without trusting the file (bounded, non-blocking,
//! regular files only), parsed strictly, and resolved into launches whose
//! working directories stay inside the workspace.

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

use bridge_policy::redact::shorten;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;

/// Characters of the file an error quotes at most: a hostile file makes
/// an error that quotes it huge.
const QUOTED_CHARS: usize = 300;

/// The project config file, at the root of a session's workspace.
pub const PROJECT_CONFIG_FILE: &str = "tap.config.json";

/// A config file larger than this is refused unread: it is not a config.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;
/// More providers than this in one workspace is refused (each is a process).
const MAX_PROVIDERS: usize = 16;
const MAX_NAME_CHARS: usize = 64;
/// Variables the gateway sets itself; a config may not override them.
pub(crate) const RESERVED_ENV: &[&str] =
    &["TAP_PROVIDER_TOKEN", "TAP_GATEWAY_URL", "TAP_SESSION_ID"];

/// `tap.config.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectProviderConfig {
    #[serde(default)]
    pub providers: Vec<ProjectProviderSpec>,
}

/// One provider to spawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectProviderSpec {
    pub name: String,
    /// A program on `PATH`, or a path (relative ones are taken from the
    /// provider's `cwd`).
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment (the provider otherwise gets a minimal one).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory relative to the workspace (default: its root).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// A provider ready to start: everything checked and resolved.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
}

/// Whether the workspace has a config file at all (whatever it holds).
pub(crate) async fn config_present(workspace: &Path) -> bool {
    tokio::fs::symlink_metadata(workspace.join(PROJECT_CONFIG_FILE))
        .await
        .is_ok()
}

/// Reads and parses the workspace's config; `Ok(None)` when there is none.
pub(crate) async fn read_config(workspace: &Path) -> Result<Option<ProjectProviderConfig>, String> {
    let path = workspace.join(PROJECT_CONFIG_FILE);
    let mut options = tokio::fs::OpenOptions::new();
    options.read(true);
    // A FIFO opened the normal way blocks until a writer appears; the
    // repository decides what this path is.
    #[cfg(unix)]
    options.custom_flags(libc::O_NONBLOCK);
    let mut file = match options.open(&path).await {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("cannot open: {err}")),
    };
    let metadata = file
        .metadata()
        .await
        .map_err(|err| format!("cannot open: {err}"))?;
    if !metadata.is_file() {
        return Err("not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|err| format!("cannot read: {err}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!("larger than {MAX_CONFIG_BYTES} bytes"));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|err| shorten(&err.to_string(), QUOTED_CHARS))
}

/// Checks every provider and resolves its working directory; the first
/// problem refuses the whole file, so a half-started project never runs.
pub(crate) async fn resolve(
    workspace: &Path,
    config: ProjectProviderConfig,
) -> Result<Vec<Launch>, String> {
    if config.providers.len() > MAX_PROVIDERS {
        return Err(format!(
            "{} providers declared; at most {MAX_PROVIDERS} are allowed",
            config.providers.len()
        ));
    }
    let mut names = HashSet::new();
    let mut launches = Vec::with_capacity(config.providers.len());
    for (index, spec) in config.providers.into_iter().enumerate() {
        check_name(&spec.name).map_err(|err| format!("providers[{index}].name: {err}"))?;
        if !names.insert(spec.name.clone()) {
            return Err(format!(
                "providers[{index}]: the name {:?} is declared twice",
                spec.name
            ));
        }
        let at = |field: &str| format!("provider {:?}: {field}", spec.name);
        if spec.command.trim().is_empty() {
            return Err(format!("{} must not be empty", at("command")));
        }
        if spec.command.contains('\0') || spec.args.iter().any(|a| a.contains('\0')) {
            return Err(format!("{} contains a NUL byte", at("command or args")));
        }
        for (key, value) in &spec.env {
            check_env(key, value).map_err(|err| format!("{}: {err}", at("env")))?;
        }
        let cwd = resolve_cwd(workspace, spec.cwd.as_deref())
            .await
            .map_err(|err| format!("{}: {err}", at("cwd")))?;
        let program = if spec.command.contains('/') {
            cwd.join(&spec.command)
        } else {
            PathBuf::from(&spec.command)
        };
        launches.push(Launch {
            name: spec.name,
            program,
            args: spec.args,
            cwd,
            env: spec.env,
        });
    }
    Ok(launches)
}

fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{:?} must be 1 to {MAX_NAME_CHARS} letters, digits, '-', '_' or '.'",
            shorten(name, QUOTED_CHARS)
        ))
    }
}

fn check_env(key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() || key.contains(['=', '\0']) {
        return Err(format!("{key:?} is not a valid variable name"));
    }
    if RESERVED_ENV.contains(&key) {
        return Err(format!(
            "{key} is set by the gateway and cannot be overridden"
        ));
    }
    if value.contains('\0') {
        return Err(format!("the value of {key} contains a NUL byte"));
    }
    Ok(())
}

/// `relative` inside the (canonical) workspace, symlinks resolved: `..` or a
/// symlink leading out is refused, like an absolute path.
async fn resolve_cwd(workspace: &Path, relative: Option<&str>) -> Result<PathBuf, String> {
    let Some(relative) = relative else {
        return Ok(workspace.to_path_buf());
    };
    let path = Path::new(relative);
    if path.is_absolute() || path.components().any(|c| matches!(c, Component::Prefix(_))) {
        return Err(format!(
            "{relative:?} must be relative to the workspace, not absolute"
        ));
    }
    let root = tokio::fs::canonicalize(workspace).await.map_err(|err| {
        format!(
            "cannot resolve the workspace {}: {err}",
            workspace.display()
        )
    })?;
    let resolved = tokio::fs::canonicalize(root.join(path))
        .await
        .map_err(|err| format!("{relative:?} cannot be resolved: {err}"))?;
    if !resolved.starts_with(&root) {
        return Err(format!(
            "{relative:?} leads outside the workspace (to {})",
            resolved.display()
        ));
    }
    let metadata = tokio::fs::metadata(&resolved)
        .await
        .map_err(|err| format!("{relative:?}: {err}"))?;
    if !metadata.is_dir() {
        return Err(format!("{relative:?} is not a directory"));
    }
    Ok(resolved)
}
