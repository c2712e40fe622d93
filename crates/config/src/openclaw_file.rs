//! Reading OpenClaw's own configuration file, `openclaw.json` (JSON5), for
//! the few values the bridge takes from it: `gateway.port`,
//! `gateway.auth.token`, `agents.defaults.workspace` and the agents
//! (`agents.list`, or the keyed `agents.entries`). String values may use
//! OpenClaw's `${VAR}` substitution (`$${VAR}` is a literal `${VAR}`), the
//! variables taken from the process environment (never a repository's
//! `.env`), then `<state>/.env`, then the file's own `env.vars`; the token
//! may also be an `{source: "env", id}` secret reference. A file that
//! cannot be read or parsed, or a value of the wrong shape, is a warning,
//! never an error: OpenClaw's file is OpenClaw's business, and the bridge
//! then uses its defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bridge_util::Secret;
use serde_json::{Map, Value};

use crate::file::read_small_file;
use crate::json5;
use crate::keys;
use crate::loader::{Builder, ConfigLoader};
use crate::openclaw::{
    AutoSwitch, OpenClawAgent, OpenClawConfig, WorkspaceRank, normalize_agent_id,
};
use crate::{Source, value};

impl ConfigLoader {
    /// The `openclaw.*` keys, with what the bridge's own sources leave unset
    /// taken from openclaw.json; and the warnings reading that file gave.
    pub(crate) fn openclaw_section(
        &self,
        builder: &mut Builder<'_>,
    ) -> (OpenClawConfig, Vec<String>) {
        let state_dir = builder
            .parse(keys::OPENCLAW_STATE_DIR, |t| Ok(self.absolute(t)))
            .unwrap_or_else(|| self.absolute("~/.openclaw"));
        let mut config = OpenClawConfig::in_state_dir(state_dir);
        if let Some(path) = builder.parse(keys::OPENCLAW_CONFIG_PATH, |t| Ok(self.absolute(t))) {
            config.config_path = path;
        }
        if let Some(host) = builder.parse(keys::OPENCLAW_HOST, value::parse_host) {
            config.host = host;
        }
        let port = builder.parse(keys::OPENCLAW_PORT, |t| value::parse_port(t, false));
        config.gateway_url = builder.parse(keys::OPENCLAW_GATEWAY_URL, value::parse_ws_url);
        config.gateway_token = builder.parse(keys::OPENCLAW_GATEWAY_TOKEN, |t| Ok(Secret::new(t)));
        config.gateway_mode = builder
            .parse(keys::OPENCLAW_GATEWAY, str::parse::<AutoSwitch>)
            .unwrap_or_default();
        config.memory_mode = builder
            .parse(keys::OPENCLAW_MEMORY, str::parse::<AutoSwitch>)
            .unwrap_or_default();
        config.workspace = builder.parse(keys::OPENCLAW_WORKSPACE, |t| Ok(self.absolute(t)));
        if builder.sources.get(keys::OPENCLAW_WORKSPACE)
            == Some(&Source::Env("OPENCLAW_WORKSPACE_DIR".to_owned()))
        {
            config.workspace_rank = WorkspaceRank::OpenClawEnv;
        }

        let file = read(
            &config.config_path,
            &config.state_dir,
            // Not the repository's `.env`: it must not choose OpenClaw's values.
            &|name| self.process_variable(name),
            &|text| self.absolute(text),
        );
        let from_file = Source::OpenClaw(config.config_path.clone());
        config.config_exists = file.exists;
        config.port = match (port, file.port) {
            (Some(port), _) => port,
            (None, Some(port)) => {
                builder
                    .sources
                    .insert(keys::OPENCLAW_PORT, from_file.clone());
                port
            }
            (None, None) => config.port,
        };
        if config.gateway_token.is_none() && file.token.is_some() {
            builder
                .sources
                .insert(keys::OPENCLAW_GATEWAY_TOKEN, from_file);
            config.gateway_token = file.token;
        }
        config.defaults_workspace = file.defaults_workspace;
        config.agents = file.agents;
        (config, file.warnings)
    }
}

/// What openclaw.json says, as far as the bridge is concerned.
#[derive(Debug, Default)]
pub(crate) struct OpenClawFile {
    pub(crate) exists: bool,
    pub(crate) port: Option<u16>,
    pub(crate) token: Option<Secret>,
    pub(crate) defaults_workspace: Option<PathBuf>,
    pub(crate) agents: Vec<OpenClawAgent>,
    pub(crate) warnings: Vec<String>,
}

/// Reads `path`. `variable` looks a name up in the bridge's environment;
/// `expand` turns a path text into an absolute path (`~` expanded).
pub(crate) fn read(
    path: &Path,
    state_dir: &Path,
    variable: &dyn Fn(&str) -> Option<String>,
    expand: &dyn Fn(&str) -> PathBuf,
) -> OpenClawFile {
    let mut file = OpenClawFile::default();
    match std::fs::metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return file,
        _ => file.exists = true,
    }
    let ignored = |why: String| {
        format!(
            "OpenClaw's config file {}: {why}; none of its settings are used",
            path.display()
        )
    };
    let root = read_small_file(path)
        .and_then(|bytes| {
            String::from_utf8(bytes).map_err(|err| {
                format!(
                    "not valid UTF-8 (at byte {})",
                    err.utf8_error().valid_up_to()
                )
            })
        })
        .and_then(|text| json5::parse_value(&text).map_err(|err| format!("not JSON5: {err}")));
    let root = match root {
        Ok(Value::Object(root)) => root,
        Ok(_) => {
            file.warnings
                .push(ignored("the document is not an object".to_owned()));
            return file;
        }
        Err(why) => {
            file.warnings.push(ignored(why));
            return file;
        }
    };
    let mut reader = Reader {
        path,
        variables: Variables {
            variable,
            state_env: read_state_env(state_dir),
            inline: inline_vars(&root),
        },
        warnings: Vec::new(),
    };
    file.port = reader.port(at(&root, &["gateway", "port"]));
    file.token = reader.token(at(&root, &["gateway", "auth", "token"]));
    file.defaults_workspace = reader
        .text(
            "agents.defaults.workspace",
            at(&root, &["agents", "defaults", "workspace"]),
        )
        .map(|text| expand(&text));
    file.agents = reader.agents(root.get("agents"), expand);
    file.warnings = reader.warnings;
    file
}

fn at<'a>(root: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(root.get(*first)?, |value, key| value.get(key))
}

/// `<state>/.env`: OpenClaw's own fallback environment (never a repository's).
fn read_state_env(state_dir: &Path) -> BTreeMap<String, String> {
    let path = state_dir.join(".env");
    let Ok(bytes) = read_small_file(&path) else {
        return BTreeMap::new();
    };
    dotenvy::from_read_iter(bytes.as_slice())
        .filter_map(Result::ok)
        .collect()
}

/// The file's `env.vars`.
fn inline_vars(root: &Map<String, Value>) -> BTreeMap<String, String> {
    at(root, &["env", "vars"])
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_owned())))
        .collect()
}

struct Variables<'a> {
    variable: &'a dyn Fn(&str) -> Option<String>,
    state_env: BTreeMap<String, String>,
    inline: BTreeMap<String, String>,
}

impl Variables<'_> {
    fn get(&self, name: &str) -> Option<String> {
        (self.variable)(name)
            .or_else(|| self.state_env.get(name).cloned())
            .or_else(|| self.inline.get(name).cloned())
            .filter(|value| !value.is_empty())
    }

    /// `text` with every `${NAME}` replaced; `Err(NAME)` for one unset.
    fn substitute(&self, text: &str) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at..];
            if let Some(literal) = after.strip_prefix("$${") {
                out.push_str("${");
                rest = literal;
            } else if let Some((name, tail)) = after
                .strip_prefix("${")
                .and_then(|inner| inner.split_once('}'))
                .filter(|(name, _)| is_variable_name(name))
            {
                out.push_str(&self.get(name).ok_or_else(|| name.to_owned())?);
                rest = tail;
            } else {
                out.push('$');
                rest = &after[1..];
            }
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// OpenClaw substitutes upper-case names only: `[A-Z_][A-Z0-9_]*`.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

struct Reader<'a> {
    path: &'a Path,
    variables: Variables<'a>,
    warnings: Vec<String>,
}

impl Reader<'_> {
    fn skip(&mut self, key: &str, why: &str) {
        self.warnings.push(format!(
            "OpenClaw's config file {}: {key} {why}; ignored",
            self.path.display()
        ));
    }

    /// A string setting, substituted; `None` (with a warning) otherwise.
    fn text(&mut self, key: &str, value: Option<&Value>) -> Option<String> {
        match value? {
            Value::String(text) => match self.variables.substitute(text) {
                Ok(text) if text.trim().is_empty() => None,
                Ok(text) => Some(text.trim().to_owned()),
                Err(name) => {
                    self.skip(key, &format!("uses ${{{name}}}, which is not set"));
                    None
                }
            },
            Value::Null => None,
            _ => {
                self.skip(key, "is not a string");
                None
            }
        }
    }

    fn port(&mut self, value: Option<&Value>) -> Option<u16> {
        const KEY: &str = "gateway.port";
        let port = match value? {
            Value::Number(n) => n.as_u64(),
            // A string is substituted first; its own problems are warned of there.
            Value::String(_) => match self.text(KEY, value) {
                Some(text) => text.parse().ok(),
                None => return None,
            },
            Value::Null => return None,
            _ => None,
        };
        match port
            .and_then(|port| u16::try_from(port).ok())
            .filter(|p| *p > 0)
        {
            Some(port) => Some(port),
            None => {
                self.skip(KEY, "is not a port number from 1 to 65535");
                None
            }
        }
    }

    /// The token as a string (substituted) or an `env` secret reference.
    /// Never quoted in a warning.
    fn token(&mut self, value: Option<&Value>) -> Option<Secret> {
        const KEY: &str = "gateway.auth.token";
        match value? {
            Value::Object(reference) => {
                let source = reference.get("source").and_then(Value::as_str);
                let id = reference.get("id").and_then(Value::as_str);
                match (source, id) {
                    (Some("env"), Some(name)) => match self.variables.get(name) {
                        Some(token) => Some(Secret::new(token.trim())),
                        None => {
                            self.skip(KEY, &format!("refers to ${name}, which is not set"));
                            None
                        }
                    },
                    _ => {
                        self.skip(
                            KEY,
                            "is a secret reference the bridge cannot resolve (only {source: \"env\", id} is read); set OPENCLAW_GATEWAY_TOKEN instead",
                        );
                        None
                    }
                }
            }
            other => self.text(KEY, Some(other)).map(Secret::new),
        }
    }

    /// `agents.list` (an array of objects) or `agents.entries` (objects by id).
    fn agents(
        &mut self,
        agents: Option<&Value>,
        expand: &dyn Fn(&str) -> PathBuf,
    ) -> Vec<OpenClawAgent> {
        let entries: Vec<(Option<String>, &Map<String, Value>)> = match (
            agents.and_then(|a| a.get("entries")),
            agents.and_then(|a| a.get("list")),
        ) {
            (Some(Value::Object(entries)), _) => entries
                .iter()
                .filter_map(|(id, entry)| Some((Some(id.clone()), entry.as_object()?)))
                .collect(),
            (None | Some(Value::Null), Some(Value::Array(list))) => list
                .iter()
                .filter_map(|entry| {
                    let entry = entry.as_object()?;
                    let id = entry.get("id").and_then(Value::as_str).map(str::to_owned);
                    Some((id, entry))
                })
                .collect(),
            (None | Some(Value::Null), None | Some(Value::Null)) => return Vec::new(),
            _ => {
                self.skip("agents.list", "is not a list of agents");
                return Vec::new();
            }
        };
        let mut out: Vec<OpenClawAgent> = Vec::new();
        for (id, entry) in entries {
            let id = normalize_agent_id(id.as_deref().unwrap_or_default());
            if out.iter().any(|agent| agent.id == id) {
                // OpenClaw takes the first entry of an id.
                continue;
            }
            let key = format!("agents.list[{id}].workspace");
            let workspace = self
                .text(&key, entry.get("workspace"))
                .map(|text| expand(&text));
            out.push(OpenClawAgent {
                id,
                workspace,
                default: entry.get("default") == Some(&Value::Bool(true)),
            });
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn variables(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn substitution_follows_openclaw_s_rules() {
        let lookup = variables(&[("BASE", "/srv"), ("lower", "x")]);
        let vars = Variables {
            variable: &lookup,
            state_env: BTreeMap::from([("FROM_STATE".to_owned(), "s".to_owned())]),
            inline: BTreeMap::from([("INLINE".to_owned(), "i".to_owned())]),
        };
        assert_eq!(vars.substitute("${BASE}/ws").unwrap(), "/srv/ws");
        assert_eq!(vars.substitute("$${BASE}").unwrap(), "${BASE}");
        assert_eq!(vars.substitute("${FROM_STATE}-${INLINE}").unwrap(), "s-i");
        // Lower-case names are not substituted; a lone `$` stays.
        assert_eq!(vars.substitute("${lower} $5").unwrap(), "${lower} $5");
        assert_eq!(vars.substitute("${MISSING}").unwrap_err(), "MISSING");
    }
}
