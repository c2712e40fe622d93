//! Secret redaction of text and JSON before it leaves a tool: tokens of
//! well-known services, private key blocks, JWTs, bearer tokens,
//! `key=value` secrets and passwords in URLs become [`REDACTED`].
//!
//! All rules are compiled into one regex, so clean text costs one scan and
//! is returned borrowed. Redaction is idempotent: [`REDACTED`] never matches.

mod rules;

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::bytes::{CaptureLocations, Regex, RegexBuilder};
use serde_json::Value;

use rules::Kind;
pub use rules::is_secret_key;

pub const REDACTED: &str = "[REDACTED]";

/// One rule inside the combined regex: its kind and the indices of its groups.
struct CompiledRule {
    kind: Kind,
    whole_group: usize,
    secret_group: usize,
    key_group: Option<usize>,
}

struct Engine {
    regex: Regex,
    rules: Vec<CompiledRule>,
}

#[derive(Debug, thiserror::Error)]
#[error("secret redaction rule {rule:?} does not compile: {source}")]
pub struct RuleError {
    rule: &'static str,
    #[source]
    source: Box<regex::Error>,
}

static ENGINE: LazyLock<Result<Engine, RuleError>> = LazyLock::new(compile);

fn compile() -> Result<Engine, RuleError> {
    let rules = rules::rules();
    let mut alternatives = Vec::with_capacity(rules.len());
    for (index, rule) in rules.iter().enumerate() {
        let pattern = rule
            .pattern
            .replace("(?P<secret>", &format!("(?P<s{index}>"))
            .replace("(?P<key>", &format!("(?P<k{index}>"));
        // Compiled alone first, so that an error names the rule.
        build(&pattern).map_err(|source| RuleError {
            rule: rule.name,
            source: Box::new(source),
        })?;
        alternatives.push(format!("(?P<r{index}>{pattern})"));
    }
    let regex = build(&alternatives.join("|")).map_err(|source| RuleError {
        rule: "combined",
        source: Box::new(source),
    })?;
    let group = |name: String| {
        regex
            .capture_names()
            .position(|found| found == Some(name.as_str()))
    };
    let compiled = rules
        .iter()
        .enumerate()
        .filter_map(|(index, rule)| {
            Some(CompiledRule {
                kind: rule.kind,
                whole_group: group(format!("r{index}"))?,
                secret_group: group(format!("s{index}"))?,
                key_group: group(format!("k{index}")),
            })
        })
        .collect();
    Ok(Engine {
        regex,
        rules: compiled,
    })
}

fn build(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(32 * 1024 * 1024)
        .dfa_size_limit(32 * 1024 * 1024)
        .build()
}

/// Checks that the rules compile; [`redact`] fails closed if they do not.
pub fn check_rules() -> Result<(), &'static RuleError> {
    ENGINE.as_ref().map(|_| ())
}

/// Redacts secrets in `text`; borrowed when there was nothing to redact.
///
/// Should the rules fail to compile (a bug caught by the tests), the whole
/// text is withheld rather than passed through unredacted.
pub fn redact(text: &str) -> Cow<'_, str> {
    let Ok(engine) = ENGINE.as_ref() else {
        return Cow::Owned(REDACTED.to_owned());
    };
    let haystack = text.as_bytes();
    let mut locations = engine.regex.capture_locations();
    let mut output: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while at <= haystack.len() {
        let Some(found) = engine.regex.captures_read_at(&mut locations, haystack, at) else {
            break;
        };
        at = if found.end() > found.start() {
            found.end()
        } else {
            found.end() + 1
        };
        let (start, end) = match replacement_span(engine, &locations, text) {
            Outcome::Replace { start, end } => (start, end),
            Outcome::Keep => continue,
            Outcome::KeepAndSearchFrom(resume) => {
                // A value that is not a secret as a whole (`"<ghp_...>"`)
                // may still contain one.
                at = resume.max(found.start() + 1);
                continue;
            }
        };
        let (start, end) = widen_to_char_boundaries(text, start, end);
        if start < copied {
            continue;
        }
        let output = output.get_or_insert_with(|| String::with_capacity(text.len()));
        output.push_str(&text[copied..start]);
        output.push_str(REDACTED);
        copied = end;
    }
    match output {
        None => Cow::Borrowed(text),
        Some(mut output) => {
            output.push_str(&text[copied..]);
            Cow::Owned(output)
        }
    }
}

enum Outcome {
    Replace {
        start: usize,
        end: usize,
    },
    Keep,
    /// Keep the match, but look for secrets again from this offset.
    KeepAndSearchFrom(usize),
}

/// What to do with the current match.
fn replacement_span(engine: &Engine, locations: &CaptureLocations, text: &str) -> Outcome {
    let Some(rule) = engine
        .rules
        .iter()
        .find(|rule| locations.get(rule.whole_group).is_some())
    else {
        return Outcome::Keep;
    };
    let Some((start, end)) = locations.get(rule.secret_group) else {
        return Outcome::Keep;
    };
    let secret = text.get(start..end).unwrap_or_default();
    let replace = match rule.kind {
        Kind::Token => true,
        Kind::Bearer => looks_like_token(secret),
        Kind::UrlPassword => secret != REDACTED,
        Kind::KeyValue => {
            let key = rule
                .key_group
                .and_then(|group| locations.get(group))
                .and_then(|(key_start, key_end)| text.get(key_start..key_end))
                .unwrap_or_default();
            return match key_value_span(key, text, start, end) {
                Some((start, end)) => Outcome::Replace { start, end },
                None => Outcome::KeepAndSearchFrom(start + 1),
            };
        }
    };
    if replace {
        Outcome::Replace { start, end }
    } else {
        Outcome::Keep
    }
}

/// `Bearer` is also an English word: only a token-looking word after it counts.
fn looks_like_token(word: &str) -> bool {
    word.len() >= 16 || word.bytes().any(|byte| byte.is_ascii_digit())
}

const AUTH_SCHEMES: [&str; 4] = ["bearer", "basic", "token", "digest"];

/// Words that are placeholders, types or literals rather than secret values.
const NOT_VALUES: [&str; 16] = [
    "null",
    "none",
    "nil",
    "true",
    "false",
    "undefined",
    "yes",
    "no",
    "string",
    "str",
    "bool",
    "int",
    "number",
    "required",
    "optional",
    "redacted",
];

/// For `key=value`, the span of the value proper: inside its quotes, after an
/// auth scheme. `None` when the value is not a secret after all.
fn key_value_span(key: &str, text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let raw = text.get(start..end)?;
    let (quoted, inner_start, inner_end) =
        if raw.len() >= 4 && raw.starts_with("\\\"") && raw.ends_with("\\\"") {
            (true, start + 2, end - 2)
        } else if raw.len() >= 2
            && ((raw.starts_with('"') && raw.ends_with('"'))
                || (raw.starts_with('\'') && raw.ends_with('\'')))
        {
            (true, start + 1, end - 1)
        } else {
            (false, start, end)
        };
    let inner = text.get(inner_start..inner_end)?;
    let scheme_length = auth_scheme_length(inner);
    let value = &inner[scheme_length..];
    let value_start = inner_start + scheme_length;
    if value.is_empty() || value.starts_with(REDACTED) {
        return None;
    }
    let lower = value.to_ascii_lowercase();
    if NOT_VALUES.contains(&lower.as_str())
        || (scheme_length == 0 && AUTH_SCHEMES.contains(&lower.as_str()))
    {
        return None;
    }
    // References to a secret are not the secret: `$TOKEN`, `${TOKEN}`, `%(password)s`, `<token>`, `{{ secret }}`.
    if value.starts_with(['$', '%', '<', '{'])
        || value.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.'))
    {
        return None;
    }
    if !quoted {
        // `token == ""`: a comparison.
        if value.starts_with('=') || is_code_reference(value) {
            return None;
        }
        let next = text.get(end..).and_then(|rest| rest.chars().next());
        // `token = get_token()`, `token = self.token`: code, not a value.
        if matches!(next, Some('(' | '.')) {
            return None;
        }
        // `self.token = token`: a variable named like the field.
        let key_tail = key.rsplit(['.', '-', '>', ' ']).next().unwrap_or(key);
        if value.eq_ignore_ascii_case(key_tail) {
            return None;
        }
        // `token: Token`, `password: String`: a type annotation.
        let type_like = value.starts_with(|c: char| c.is_ascii_uppercase())
            && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !value.chars().any(|c| c.is_ascii_digit());
        let after_colon = text
            .get(..start)
            .is_some_and(|before| before.trim_end().ends_with(':'));
        if type_like && after_colon {
            return None;
        }
    }
    // `PWD=/home/me` is the working directory, not a password.
    let key_lower = key.to_ascii_lowercase();
    if key_lower.ends_with("pwd") && value.starts_with(['/', '~']) {
        return None;
    }
    Some((value_start, inner_end))
}

/// Objects that configuration is read from in code: `process.env.API_KEY`,
/// `self.config.token`, `settings.SECRET_KEY` are references, not values.
const CODE_ROOTS: [&str; 20] = [
    "process",
    "os",
    "env",
    "self",
    "this",
    "config",
    "cfg",
    "settings",
    "options",
    "opts",
    "args",
    "ctx",
    "context",
    "secrets",
    "vars",
    "props",
    "params",
    "window",
    "system",
    "environment",
];

fn is_code_reference(value: &str) -> bool {
    let mut segments = value.split('.');
    let root = segments.next().unwrap_or_default();
    let is_identifier = |segment: &str| {
        !segment.is_empty()
            && !segment.starts_with(|c: char| c.is_ascii_digit())
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    CODE_ROOTS.contains(&root.to_ascii_lowercase().as_str())
        && value.contains('.')
        && value.split('.').all(is_identifier)
}

/// Length of a leading `Bearer ` (any scheme, any case) with its blanks.
fn auth_scheme_length(value: &str) -> usize {
    let Some((first, _)) = value.split_once([' ', '\t']) else {
        return 0;
    };
    if !AUTH_SCHEMES.contains(&first.to_ascii_lowercase().as_str()) {
        return 0;
    }
    let rest = &value[first.len()..];
    first.len() + (rest.len() - rest.trim_start_matches([' ', '\t']).len())
}

fn widen_to_char_boundaries(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end)
}

/// Redacts every string in a JSON tree, object keys included, and replaces
/// the whole value of keys that name a secret (see [`is_secret_key`]).
/// `null` and booleans under such keys are kept: they hold no secret.
pub fn redact_value(value: &mut Value) {
    // Iterative: a hostile tree may be deeper than the stack.
    let mut pending: Vec<&mut Value> = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => {
                if let Cow::Owned(redacted) = redact(text) {
                    *text = redacted;
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(map) => {
                if map.keys().any(|key| matches!(redact(key), Cow::Owned(_))) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(key, value)| (redact(&key).into_owned(), value))
                        .collect();
                }
                for (key, child) in map.iter_mut() {
                    if !is_secret_key(key) {
                        pending.push(child);
                    } else if !matches!(child, Value::Null | Value::Bool(_)) {
                        *child = Value::String(REDACTED.to_owned());
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}
