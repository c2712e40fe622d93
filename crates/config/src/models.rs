//! `[models]`: which backend and model answer a requested model name (see
//! docs/facade.md, "Model routing"). Exact names and globs map to
//! `BACKEND/MODEL`; the routes `default`, `background`, `think` and
//! `long_context` send whole classes of requests, as claude-code-router
//! does. Validated at load: every target's form, every glob; that each
//! target names a backend is checked with the backends (loader).

use std::path::Path;

use globset::{Glob, GlobMatcher};
use serde::Serialize;

use crate::ConfigError;

/// Requests estimated over this many input tokens take `long_context`.
pub const DEFAULT_LONG_CONTEXT_TOKENS: u64 = 60_000;

/// Where a routed request goes: a backend, and the model to ask it for
/// (`None`: the backend's default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelTarget {
    pub backend: String,
    pub model: Option<String>,
}

impl ModelTarget {
    /// `BACKEND/MODEL` or `BACKEND`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (backend, model) = match text.split_once('/') {
            Some((backend, model)) => (backend.trim(), Some(model.trim())),
            None => (text, None),
        };
        crate::backends::valid_backend_name(backend)?;
        if model.is_some_and(str::is_empty) {
            return Err(format!("{text:?} names no model after the '/'"));
        }
        Ok(Self {
            backend: backend.to_owned(),
            model: model.map(str::to_owned),
        })
    }
}

impl std::fmt::Display for ModelTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.model {
            Some(model) => write!(f, "{}/{model}", self.backend),
            None => f.write_str(&self.backend),
        }
    }
}

/// One `[models.map]` entry: a requested name or glob and its target.
#[derive(Debug, Clone, Serialize)]
pub struct ModelMapping {
    pub pattern: String,
    pub target: ModelTarget,
    #[serde(skip)]
    matcher: Option<GlobMatcher>,
}

impl PartialEq for ModelMapping {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern && self.target == other.target
    }
}

impl Eq for ModelMapping {}

impl ModelMapping {
    /// Whether the pattern is a glob (`claude-*`) rather than a name.
    pub fn is_glob(&self) -> bool {
        self.matcher.is_some()
    }

    pub fn matches(&self, model: &str) -> bool {
        match &self.matcher {
            Some(glob) => glob.is_match(model),
            None => self.pattern == model,
        }
    }
}

/// The validated `[models]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelRoutes {
    /// Exact names first, then globs, longest first: the most specific
    /// mapping wins.
    pub map: Vec<ModelMapping>,
    /// Requests for a model nothing else routes.
    pub default: Option<ModelTarget>,
    /// Background requests: a haiku-class model asked for.
    pub background: Option<ModelTarget>,
    /// Requests that ask for thinking (reasoning).
    pub think: Option<ModelTarget>,
    /// Requests estimated over `long_context_tokens` input tokens.
    pub long_context: Option<ModelTarget>,
    pub long_context_tokens: u64,
    /// Pass every requested model name on as asked, even to a backend that
    /// does not serve it (default: such a request gets the backend's
    /// configured model).
    pub strict_models: bool,
}

impl Default for ModelRoutes {
    fn default() -> Self {
        Self {
            map: Vec::new(),
            default: None,
            background: None,
            think: None,
            long_context: None,
            long_context_tokens: DEFAULT_LONG_CONTEXT_TOKENS,
            strict_models: false,
        }
    }
}

impl ModelRoutes {
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
            && self.default.is_none()
            && self.background.is_none()
            && self.think.is_none()
            && self.long_context.is_none()
    }

    /// Every target, with where it is configured (`models.think`,
    /// `models.map."claude-*"`).
    pub fn targets(&self) -> Vec<(String, &ModelTarget)> {
        let mut targets = Vec::new();
        for (name, target) in [
            ("default", &self.default),
            ("background", &self.background),
            ("think", &self.think),
            ("long_context", &self.long_context),
        ] {
            if let Some(target) = target {
                targets.push((format!("models.{name}"), target));
            }
        }
        for mapping in &self.map {
            targets.push((format!("models.map.{:?}", mapping.pattern), &mapping.target));
        }
        targets
    }
}

const ROUTE_KEYS: [&str; 4] = ["default", "background", "think", "long_context"];

pub(crate) fn models_section(
    structured: &toml::Table,
    path: &Path,
    errors: &mut Vec<ConfigError>,
) -> ModelRoutes {
    let mut problems = Vec::new();
    let mut routes = ModelRoutes::default();
    match structured.get("models") {
        None => {}
        Some(toml::Value::Table(table)) => {
            for (key, value) in table {
                match key.as_str() {
                    "map" => routes.map = map_table(value, &mut problems),
                    "strict_models" => match value.as_bool() {
                        Some(strict) => routes.strict_models = strict,
                        None => problems.push(format!(
                            "models.strict_models must be true or false, not {value}"
                        )),
                    },
                    "long_context_tokens" => match value.as_integer() {
                        Some(tokens) if tokens > 0 => routes.long_context_tokens = tokens as u64,
                        _ => problems.push(format!(
                            "models.long_context_tokens must be a positive integer, not {value}"
                        )),
                    },
                    route if ROUTE_KEYS.contains(&route) => {
                        let target = target(value, &format!("models.{route}"), &mut problems);
                        match route {
                            "default" => routes.default = target,
                            "background" => routes.background = target,
                            "think" => routes.think = target,
                            _ => routes.long_context = target,
                        }
                    }
                    other => problems.push(format!(
                        "models.{other} is not a setting; expected map, {}, long_context_tokens, strict_models",
                        ROUTE_KEYS.join(", ")
                    )),
                }
            }
        }
        Some(other) => problems.push(format!(
            "models must be a table, not a {}",
            other.type_str()
        )),
    }
    errors.extend(problems.into_iter().map(|message| ConfigError::File {
        path: path.to_path_buf(),
        message: bridge_policy::redact::shorten(&message, crate::file::QUOTED_CHARS),
    }));
    routes
}

fn target(value: &toml::Value, key: &str, problems: &mut Vec<String>) -> Option<ModelTarget> {
    let Some(text) = value.as_str() else {
        problems.push(format!(
            "{key} must be a string \"BACKEND/MODEL\" or \"BACKEND\""
        ));
        return None;
    };
    ModelTarget::parse(text)
        .map_err(|why| problems.push(format!("{key}: {why}")))
        .ok()
}

fn map_table(value: &toml::Value, problems: &mut Vec<String>) -> Vec<ModelMapping> {
    let Some(table) = value.as_table() else {
        problems
            .push("models.map must be a table of \"NAME or GLOB\" = \"BACKEND/MODEL\"".to_owned());
        return Vec::new();
    };
    let mut map = Vec::new();
    for (pattern, value) in table {
        let key = format!("models.map.{pattern:?}");
        let Some(target) = target(value, &key, problems) else {
            continue;
        };
        let matcher = if pattern.contains(['*', '?', '[', '{']) {
            match Glob::new(pattern) {
                Ok(glob) => Some(glob.compile_matcher()),
                Err(err) => {
                    problems.push(format!("{key}: not a valid glob: {err}"));
                    continue;
                }
            }
        } else {
            None
        };
        map.push(ModelMapping {
            pattern: pattern.clone(),
            target,
            matcher,
        });
    }
    // Names before globs; among globs, the longer (more specific) first.
    map.sort_by_key(|mapping| (mapping.is_glob(), std::cmp::Reverse(mapping.pattern.len())));
    map
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(text: &str) -> (ModelRoutes, Vec<ConfigError>) {
        let table: toml::Table = text.parse().unwrap();
        let mut errors = Vec::new();
        let routes = models_section(&table, Path::new("config.toml"), &mut errors);
        (routes, errors)
    }

    #[test]
    fn names_come_before_globs_and_longer_globs_before_shorter() {
        let (routes, errors) = parse(
            r#"
            [models]
            default = "copilot/gpt-4.1"
            think = "anthropic"
            long_context_tokens = 100000
            strict_models = true
            [models.map]
            "claude-*" = "copilot/gpt-4.1"
            "claude-opus-*" = "anthropic/claude-opus-4"
            "claude-opus-4-7" = "openai/o3"
            "#,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let patterns: Vec<&str> = routes.map.iter().map(|m| m.pattern.as_str()).collect();
        assert_eq!(patterns, ["claude-opus-4-7", "claude-opus-*", "claude-*"]);
        assert!(routes.map[2].matches("claude-haiku-4"));
        assert!(!routes.map[0].matches("claude-opus-4-8"));
        assert_eq!(routes.think.as_ref().unwrap().model, None);
        assert_eq!(
            routes.default.as_ref().unwrap().to_string(),
            "copilot/gpt-4.1"
        );
        assert_eq!(routes.long_context_tokens, 100_000);
        assert!(routes.strict_models);
        assert!(!parse("[models]").0.strict_models, "off by default");
    }

    #[test]
    fn every_mistake_is_named() {
        let (_, errors) = parse(
            r#"
            [models]
            default = 5
            think = "bad name/x"
            background = "copilot/"
            speedy = "a/b"
            long_context_tokens = -1
            strict_models = "yes"
            [models.map]
            "claude-[" = "copilot/x"
            "#,
        );
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let text = text.join("\n");
        for expected in [
            "models.default must be a string",
            "models.think: backend name \"bad name\"",
            "models.background: \"copilot/\" names no model",
            "models.speedy is not a setting",
            "models.long_context_tokens must be a positive integer",
            "models.strict_models must be true or false",
            "not a valid glob",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
    }
}
