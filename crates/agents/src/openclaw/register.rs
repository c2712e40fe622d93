//! What `openclaw register` changes and `unregister` takes back (see the
//! module above): OpenClaw's `openclaw.json`, the plugin's directory, and
//! the token line in OpenClaw's `.env`.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use bridge_config::BridgeConfig;
use serde_json::{Value, json};

use super::dotenv;
use crate::error::AgentsError;
use crate::json_edit::{self, back_up, read_if_present, write_atomically};
use crate::program::Program;

/// Our plugin's id, our MCP server's name and our `plugins.entries` key.
pub const ID: &str = "copilot-bridge";
/// The variable OpenClaw substitutes into our MCP entry's header.
pub const TOKEN_VARIABLE: &str = "COPILOT_BRIDGE_TOKEN";
/// How long OpenClaw waits for one MCP request (a whole coding task):
/// OpenClaw's default, 60 s, ends most tasks half way.
pub const REQUEST_TIMEOUT_MS: u64 = 30 * 60 * 1000;

const SERVER_PATH: [&str; 3] = ["mcp", "servers", ID];
const ENTRY_PATH: [&str; 3] = ["plugins", "entries", ID];
const LOAD_PATHS: [&str; 3] = ["plugins", "load", "paths"];

/// The plugin's files, shipped inside the binary.
const PLUGIN_FILES: [(&str, &str); 4] = [
    (
        "openclaw.plugin.json",
        include_str!("../../assets/openclaw-plugin/openclaw.plugin.json"),
    ),
    (
        "package.json",
        include_str!("../../assets/openclaw-plugin/package.json"),
    ),
    (
        "index.js",
        include_str!("../../assets/openclaw-plugin/index.js"),
    ),
    (
        "daemon.js",
        include_str!("../../assets/openclaw-plugin/daemon.js"),
    ),
];

/// The daemon that answers now, as its `gateway.json` names it: its
/// address is the one registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunningDaemon<'a> {
    pub host: &'a str,
    pub port: u16,
}

/// Everything a registration touches, decided before anything is written.
pub struct Plan {
    config_file: PathBuf,
    dotenv_file: PathBuf,
    plugin_dir: PathBuf,
    server: Value,
    plugin_entry: Value,
    workspace_note: String,
    dry_run: bool,
}

impl Plan {
    /// `config_file`: OpenClaw's configuration when given (`--config-file`);
    /// `running`: the daemon of this home, if one answers.
    pub fn new(
        config: &BridgeConfig,
        program: &Program,
        config_file: Option<PathBuf>,
        running: Option<RunningDaemon<'_>>,
        dry_run: bool,
    ) -> Self {
        // The flag, else OPENCLAW_CONFIG_PATH, else the state directory's
        // openclaw.json (bridge-config resolves the last two).
        let config_file = config_file.unwrap_or_else(|| config.openclaw.config_path.clone());
        let (workspace, found_by) = config.openclaw.workspace_for(None);
        let server = match running {
            Some(daemon) => server_entry(daemon.host, daemon.port, &workspace),
            None => server_entry(&config.bind_address.to_string(), config.port, &workspace),
        };
        Self {
            config_file,
            dotenv_file: super::dotenv_file(&config.openclaw.state_dir),
            plugin_dir: config.home.join("openclaw-plugin"),
            server,
            plugin_entry: json!({
                "enabled": true,
                "config": {"binary": program.path, "home": program.home},
            }),
            workspace_note: format!("{} ({found_by})", workspace.display()),
            dry_run,
        }
    }

    /// Registers copilot-bridge (or, with `dry_run`, says what would
    /// change): what to tell the user. `token` gives the token OpenClaw is
    /// to send (the configured one, else the one the daemon keeps in its
    /// state directory); a dry run does not ask for it.
    pub fn register(
        &self,
        token: impl FnOnce() -> Result<String, AgentsError>,
    ) -> Result<String, AgentsError> {
        let old = read_if_present(&self.config_file)?;
        let mut text = old.clone().unwrap_or_default();
        let plugin_dir = self.plugin_dir.display().to_string();
        let paths = load_paths(&self.config_file, &text)?;
        let mut edited = false;
        if !paths.contains(&plugin_dir) {
            let mut paths = paths;
            paths.push(plugin_dir.clone());
            edited |= self.apply(&mut text, |text| {
                json_edit::set_at(text, &LOAD_PATHS, &json!(paths))
            })?;
        }
        edited |= self.apply(&mut text, |text| {
            json_edit::set_at(text, &ENTRY_PATH, &self.plugin_entry)
        })?;
        edited |= self.apply(&mut text, |text| {
            json_edit::set_at(text, &SERVER_PATH, &self.server)
        })?;
        let mut out = String::new();
        let shown = self.config_file.display();
        if self.dry_run {
            let _ = writeln!(
                out,
                "Would write the plugin to {plugin_dir}, set {TOKEN_VARIABLE} in {}, and {}",
                self.dotenv_file.display(),
                self.file_change(edited, &text)
            );
            return Ok(out);
        }
        let plugin_changed = write_plugin(&self.plugin_dir)?;
        let token = token()?;
        let token_changed = dotenv::set(&self.dotenv_file, TOKEN_VARIABLE, &token)?;
        let backup = if edited {
            self.write(old.as_deref(), &text)?
        } else {
            None
        };
        if !(edited || plugin_changed || token_changed) {
            let _ = writeln!(
                out,
                "copilot-bridge is already registered in {shown}; nothing changed."
            );
            return Ok(out);
        }
        let _ = writeln!(
            out,
            "Registered copilot-bridge in {shown}:\n\
             - plugin {ID} ({plugin_dir}): tools copilot_code, copilot_code_verbose, copilot_orchestrate\n\
             - MCP server mcp.servers.{ID}: {} in the workspace {}\n\
             - {TOKEN_VARIABLE} in {} (the daemon keeps using this token across restarts)",
            self.server["url"].as_str().unwrap_or_default(),
            self.workspace_note,
            self.dotenv_file.display(),
        );
        if let Some(backup) = backup {
            let _ = writeln!(out, "Backup of the previous file: {}", backup.display());
        }
        let _ = writeln!(
            out,
            "Restart the OpenClaw gateway to apply. Note: OpenClaw rewrites openclaw.json as plain JSON when it writes it itself (comments are lost then)."
        );
        Ok(out)
    }

    /// Takes out what `register` put in (or, with `dry_run`, says what
    /// would change): what to tell the user.
    pub fn unregister(&self) -> Result<String, AgentsError> {
        let old = read_if_present(&self.config_file)?;
        let mut text = old.clone().unwrap_or_default();
        let mut edited = false;
        if old.is_some() {
            let plugin_dir = self.plugin_dir.display().to_string();
            let paths = load_paths(&self.config_file, &text)?;
            if paths.contains(&plugin_dir) {
                let rest: Vec<String> = paths.into_iter().filter(|p| *p != plugin_dir).collect();
                edited |= self.apply(&mut text, |text| {
                    if rest.is_empty() {
                        json_edit::remove_at(text, &LOAD_PATHS)
                    } else {
                        json_edit::set_at(text, &LOAD_PATHS, &json!(rest))
                    }
                })?;
            }
            for path in [&ENTRY_PATH, &SERVER_PATH] {
                edited |= self.apply(&mut text, |text| json_edit::remove_at(text, path))?;
            }
            // Containers that only held our entries go with them.
            for path in [
                &["plugins", "load"][..],
                &["plugins", "entries"],
                &["plugins"],
                &["mcp", "servers"],
                &["mcp"],
            ] {
                if is_empty_object(&text, path) {
                    edited |= self.apply(&mut text, |text| json_edit::remove_at(text, path))?;
                }
            }
        }
        let mut out = String::new();
        let shown = self.config_file.display();
        // What else of OpenClaw's configuration uses the token (the model
        // provider `setup --agent openclaw` prints) keeps it: removing it
        // would turn the next model request into a 401.
        let still_used = text.contains(&format!("${{{TOKEN_VARIABLE}}}"));
        if self.dry_run {
            let _ = writeln!(
                out,
                "Would remove {}, {}and {}",
                self.plugin_dir.display(),
                if still_used {
                    String::new()
                } else {
                    format!("{TOKEN_VARIABLE} from {}, ", self.dotenv_file.display())
                },
                self.file_change(edited, &text)
            );
            return Ok(out);
        }
        let backup = if edited {
            self.write(old.as_deref(), &text)?
        } else {
            None
        };
        let token_removed = !still_used && dotenv::remove(&self.dotenv_file, TOKEN_VARIABLE)?;
        let plugin_removed = remove_plugin(&self.plugin_dir)?;
        if still_used {
            let _ = writeln!(
                out,
                "Kept {TOKEN_VARIABLE} in {}: {shown} still names ${{{TOKEN_VARIABLE}}} (the copilot-bridge model provider of `copilot-bridge setup --agent openclaw`). Remove that provider, then run `copilot-bridge openclaw unregister` again to remove the token too.",
                self.dotenv_file.display()
            );
        }
        if !(edited || token_removed || plugin_removed) {
            let _ = writeln!(
                out,
                "copilot-bridge is not registered in {shown}; nothing changed."
            );
            return Ok(out);
        }
        let _ = writeln!(
            out,
            "Removed copilot-bridge from {shown} (plugin {ID}, mcp.servers.{ID}{}).",
            if token_removed {
                format!(", {TOKEN_VARIABLE} in {}", self.dotenv_file.display())
            } else {
                String::new()
            }
        );
        if let Some(backup) = backup {
            let _ = writeln!(out, "Backup of the previous file: {}", backup.display());
        }
        let _ = writeln!(out, "Restart the OpenClaw gateway to apply.");
        Ok(out)
    }

    /// What `--dry-run` says about the configuration file.
    fn file_change(&self, edited: bool, text: &str) -> String {
        let shown = self.config_file.display();
        if edited {
            format!("make {shown} read:\n\n{}", bridge_policy::redact(text))
        } else {
            format!("leave {shown} as it is.")
        }
    }

    /// Applies one edit to `text`: whether it changed anything.
    fn apply(
        &self,
        text: &mut String,
        change: impl FnOnce(&str) -> Result<Option<String>, json_edit::EditError>,
    ) -> Result<bool, AgentsError> {
        match change(text) {
            Ok(Some(edited)) => {
                *text = edited;
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(source) => Err(AgentsError::EditOpenclaw {
                path: self.config_file.clone(),
                source,
            }),
        }
    }

    /// Writes `text` over the configuration, the old one backed up first.
    fn write(&self, old: Option<&str>, text: &str) -> Result<Option<PathBuf>, AgentsError> {
        let backup = match old {
            Some(old) => Some(back_up(&self.config_file, old)?),
            None => None,
        };
        if let Some(parent) = self.config_file.parent() {
            std::fs::create_dir_all(parent).map_err(|source| AgentsError::CreateDir {
                path: parent.to_owned(),
                source,
            })?;
        }
        write_atomically(&self.config_file, text)?;
        Ok(backup)
    }
}

/// Our `mcp.servers` entry: the daemon's code server over streamable HTTP
/// in `workspace`, the token from OpenClaw's environment.
fn server_entry(host: &str, port: u16, workspace: &Path) -> Value {
    // A daemon bound to every interface is still reached on loopback.
    let host = match host {
        "0.0.0.0" | "::" => "127.0.0.1",
        host => host,
    };
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("workspace", &workspace.display().to_string())
        .finish();
    json!({
        "url": format!("http://{host}:{port}/mcp/code?{query}"),
        "transport": "streamable-http",
        "headers": {"Authorization": format!("Bearer ${{{TOKEN_VARIABLE}}}")},
        "requestTimeoutMs": REQUEST_TIMEOUT_MS,
    })
}

/// `plugins.load.paths` as strings; anything else there is refused rather
/// than overwritten.
fn load_paths(file: &Path, text: &str) -> Result<Vec<String>, AgentsError> {
    let document = json_edit::parse(text).map_err(|source| AgentsError::EditOpenclaw {
        path: file.to_owned(),
        source,
    })?;
    match json_edit::get_at(&document, &LOAD_PATHS) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| AgentsError::LoadPathsNotPaths {
                path: file.to_owned(),
            }),
        Some(_) => Err(AgentsError::LoadPathsNotList {
            path: file.to_owned(),
        }),
    }
}

fn is_empty_object(text: &str, path: &[&str]) -> bool {
    json_edit::parse(text)
        .ok()
        .and_then(|document| json_edit::get_at(&document, path).cloned())
        .is_some_and(|value| value.as_object().is_some_and(serde_json::Map::is_empty))
}

/// Writes the plugin's files into `dir`: whether any changed.
fn write_plugin(dir: &Path) -> Result<bool, AgentsError> {
    std::fs::create_dir_all(dir).map_err(|source| AgentsError::CreateDir {
        path: dir.to_owned(),
        source,
    })?;
    let mut changed = false;
    for (name, contents) in PLUGIN_FILES {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|old| old == contents) {
            continue;
        }
        write_atomically(&path, contents)?;
        changed = true;
    }
    Ok(changed)
}

fn remove_plugin(dir: &Path) -> Result<bool, AgentsError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(AgentsError::Remove {
            path: dir.to_owned(),
            source,
        }),
    }
}
