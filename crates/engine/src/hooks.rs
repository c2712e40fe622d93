//! Provider hook rules (`onPreToolUse`): deny, context and gate, evaluated
//! after the policy allowed a call and before it runs.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use globset::{Glob, GlobMatcher};
use regex::Regex;
use serde_json::Value;

use crate::tools::ToolOwner;

/// Longest `match.args` pattern, and the compiled-size bound: a rule is a
/// provider's input, so its regex must not cost the gateway memory or time.
const MAX_PATTERN_CHARS: usize = 4096;
const MAX_COMPILED_BYTES: usize = 1 << 20;

/// What a rule matches; every present part must match.
#[derive(Debug, Clone, Default)]
pub struct RuleMatch {
    tool: Option<GlobMatcher>,
    args: Option<Regex>,
    provider: Option<String>,
    file: Option<GlobMatcher>,
}

/// A rule that cannot be installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("invalid {field} pattern {pattern:?}: {reason}")]
    Pattern {
        field: &'static str,
        pattern: String,
        reason: String,
    },
    #[error("a gate rule needs a gateId")]
    MissingGateId,
}

impl RuleMatch {
    /// Compiles the parts of a rule. `args` is a regex (linear time: the
    /// `regex` crate never backtracks, which is how the spec's 1 ms
    /// per-match bound is kept); `tool` and `file` are globs.
    pub fn new(
        tool: Option<&str>,
        args: Option<&str>,
        provider: Option<&str>,
        file: Option<&str>,
    ) -> Result<Self, RuleError> {
        Ok(Self {
            tool: tool.map(|p| glob("match.tool", p)).transpose()?,
            args: args.map(compile_regex).transpose()?,
            provider: provider.map(str::to_owned),
            file: file.map(|p| glob("match.file", p)).transpose()?,
        })
    }

    /// `args_json` is the arguments as compact JSON, computed once per call.
    pub fn matches(&self, tool: &str, owner: &ToolOwner, args: &Value, args_json: &str) -> bool {
        if let Some(glob) = &self.tool
            && !glob.is_match(tool)
        {
            return false;
        }
        if let Some(provider) = &self.provider
            && owner.provider_name() != Some(provider.as_str())
        {
            return false;
        }
        if let Some(regex) = &self.args
            && !regex.is_match(args_json)
        {
            return false;
        }
        if let Some(glob) = &self.file
            && !path_arguments(args).any(|path| glob.is_match(path))
        {
            return false;
        }
        true
    }
}

/// Compiles a provider-supplied regex with size bounds (also used by
/// stream filters).
pub fn compile_regex(pattern: &str) -> Result<Regex, RuleError> {
    let error = |reason: String| RuleError::Pattern {
        field: "regex",
        pattern: bridge_policy::redact::preview(pattern, 200),
        reason,
    };
    if pattern.len() > MAX_PATTERN_CHARS {
        return Err(error(format!("longer than {MAX_PATTERN_CHARS} characters")));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(MAX_COMPILED_BYTES)
        .dfa_size_limit(MAX_COMPILED_BYTES)
        .build()
        .map_err(|err| error(err.to_string()))
}

fn glob(field: &'static str, pattern: &str) -> Result<GlobMatcher, RuleError> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|err| RuleError::Pattern {
            field,
            pattern: bridge_policy::redact::preview(pattern, 200),
            reason: err.to_string(),
        })
}

/// The string values of path-like keys, at the top level of the arguments.
fn path_arguments(args: &Value) -> impl Iterator<Item = &str> {
    const KEYS: [&str; 6] = [
        "path",
        "file",
        "filePath",
        "file_path",
        "target_file",
        "filename",
    ];
    KEYS.iter()
        .filter_map(move |key| args.get(*key).and_then(Value::as_str))
}

/// What a matching rule does.
#[derive(Clone)]
pub enum RuleAction {
    Deny {
        reason: String,
    },
    Context {
        content: String,
    },
    Gate {
        gate_id: String,
        fail_open: bool,
        handler: Arc<dyn GateHandler>,
    },
}

impl std::fmt::Debug for RuleAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Deny { reason } => f.debug_struct("Deny").field("reason", reason).finish(),
            Self::Context { content } => {
                f.debug_struct("Context").field("content", content).finish()
            }
            Self::Gate {
                gate_id, fail_open, ..
            } => f
                .debug_struct("Gate")
                .field("gate_id", gate_id)
                .field("fail_open", fail_open)
                .finish_non_exhaustive(),
        }
    }
}

/// One installed rule.
#[derive(Debug, Clone)]
pub struct HookRule {
    pub matcher: RuleMatch,
    pub action: RuleAction,
}

/// A gate round trip, as the engine asks for it.
#[derive(Debug, Clone)]
pub struct GateRequest {
    pub session_id: Arc<str>,
    pub gate_id: String,
    pub tool: String,
    pub args: Value,
}

/// A gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateVerdict {
    Allow,
    Deny(String),
    /// Allow, and add this text as context.
    Context(String),
    /// The gate's owner is gone (disconnected): always a deny, whatever
    /// `failOpen` says.
    Unavailable(String),
}

/// Evaluates a gate. The engine bounds the wait; a handler need not.
#[async_trait]
pub trait GateHandler: Send + Sync {
    async fn check(&self, request: GateRequest) -> GateVerdict;
}

/// The result of running every matching rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RulesVerdict {
    pub denied: Option<String>,
    pub context: Vec<String>,
}

/// Runs `rules` (in registration order, each with its owner's name) against
/// one call. The first deny ends evaluation.
pub(crate) async fn evaluate(
    rules: &[(String, Arc<[HookRule]>)],
    session_id: &Arc<str>,
    tool: &str,
    owner: &ToolOwner,
    args: &Value,
    gate_timeout: Duration,
) -> RulesVerdict {
    let mut verdict = RulesVerdict::default();
    if rules.is_empty() {
        return verdict;
    }
    let args_json = serde_json::to_string(args).unwrap_or_default();
    for (rule_owner, owner_rules) in rules {
        for rule in owner_rules.iter() {
            if !rule.matcher.matches(tool, owner, args, &args_json) {
                continue;
            }
            match &rule.action {
                RuleAction::Deny { reason } => {
                    verdict.denied = Some(format!("denied by provider '{rule_owner}': {reason}"));
                    return verdict;
                }
                RuleAction::Context { content } => verdict.context.push(content.clone()),
                RuleAction::Gate {
                    gate_id,
                    fail_open,
                    handler,
                } => {
                    let request = GateRequest {
                        session_id: session_id.clone(),
                        gate_id: gate_id.clone(),
                        tool: tool.to_owned(),
                        args: args.clone(),
                    };
                    match tokio::time::timeout(gate_timeout, handler.check(request)).await {
                        Ok(GateVerdict::Allow) => {}
                        Ok(GateVerdict::Context(text)) => verdict.context.push(text),
                        Ok(GateVerdict::Deny(reason)) => {
                            verdict.denied = Some(format!(
                                "denied by gate '{gate_id}' of provider '{rule_owner}': {reason}"
                            ));
                            return verdict;
                        }
                        Ok(GateVerdict::Unavailable(why)) => {
                            verdict.denied = Some(format!(
                                "gate '{gate_id}' of provider '{rule_owner}' is unavailable ({why}); failing closed"
                            ));
                            return verdict;
                        }
                        Err(_) if *fail_open => {
                            tracing::warn!(gate = %gate_id, provider = %rule_owner, "gate timed out; rule is failOpen, allowing");
                        }
                        Err(_) => {
                            verdict.denied = Some(format!(
                                "Gate provider '{rule_owner}' did not respond in time (gate '{gate_id}', {} ms).",
                                gate_timeout.as_millis()
                            ));
                            return verdict;
                        }
                    }
                }
            }
        }
    }
    verdict
}
