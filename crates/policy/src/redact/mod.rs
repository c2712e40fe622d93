//! Secret redaction of text and JSON before it leaves a tool: tokens of
//! well-known services, private key blocks, JWTs, bearer tokens,
//! `key=value` secrets, passwords in URLs, `.netrc`, `.npmrc`, docker and
//! Azure credentials, curl `-u` passwords and cookies become [`REDACTED`].
//!
//! Text cut to a size is redacted before it is cut ([`redact_and_cut`],
//! [`redact_excerpt`]), so that no secret is shown in part.
//!
//! All rules are compiled into one regex, so clean text costs one scan and
//! is returned borrowed; what a regex cannot judge cheaply (is this value
//! code? random? does this line run curl?) is judged on the match only.
//! Redaction is idempotent: [`REDACTED`] is never taken for a secret.

mod armor;
mod body_lines;
mod cut;
mod key_blocks;
mod keys;
mod rules;
mod values;
mod verdicts;

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::LazyLock;

use regex::bytes::{CaptureLocations, Regex, RegexBuilder};
use serde_json::Value;

pub use cut::{
    CUT_CONTEXT_BYTES, Cut, char_offset, preview, printable, redact_and_cut, redact_excerpt,
    shorten,
};
pub use key_blocks::{KeyBlocks, LINE_VIEW, in_key_block};
pub use keys::is_secret_key;
use rules::Kind;
use verdicts::KeyVerdicts;

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
    let patterns: Vec<String> = rules
        .iter()
        .enumerate()
        .map(|(index, rule)| {
            rule.pattern
                .replace("(?P<secret>", &format!("(?P<s{index}>"))
                .replace("(?P<key>", &format!("(?P<k{index}>"))
        })
        .collect();
    let alternatives: Vec<String> = patterns
        .iter()
        .enumerate()
        .map(|(index, pattern)| format!("(?P<r{index}>{pattern})"))
        .collect();
    // One compilation: every process that redacts (each hook call among
    // them) pays it. Only when it fails is each rule compiled alone, so
    // that the error names the rule.
    let regex = build(&alternatives.join("|")).map_err(|combined| {
        rules
            .iter()
            .zip(&patterns)
            .find_map(|(rule, pattern)| {
                build(pattern).err().map(|source| RuleError {
                    rule: rule.name,
                    source: Box::new(source),
                })
            })
            .unwrap_or(RuleError {
                rule: "combined",
                source: Box::new(combined),
            })
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

/// How deep [`collect_spans`] looks into the text a match keeps (the part
/// before its secret). Real text needs one level; beyond the limit the
/// kept part is withheld too.
const MAX_NESTING: u8 = 4;

/// Redacts secrets in `text`; borrowed when there was nothing to redact.
///
/// Should the rules fail to compile (a bug caught by the tests), the whole
/// text is withheld rather than passed through unredacted.
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_excerpt(text, 0..text.len())
}

/// The spans of `text` to replace, ordered, possibly overlapping; `None`
/// when the rules do not compile.
fn secret_spans(text: &str) -> Option<Vec<(usize, usize)>> {
    let engine = ENGINE.as_ref().ok()?;
    let kept = CAPTURE_SLOTS.try_with(|slots| {
        let mut kept = slots.try_borrow_mut().ok()?;
        let locations = kept.get_or_insert_with(|| engine.regex.capture_locations());
        Some(spans_with(engine, text, locations))
    });
    // A fresh set when the thread's is in use (never reentered today) or
    // already destroyed (a log line from a thread-local destructor).
    Some(
        kept.ok()
            .flatten()
            .unwrap_or_else(|| spans_with(engine, text, &mut engine.regex.capture_locations())),
    )
}

thread_local! {
    /// The capture slots of the combined regex, two per group of every
    /// rule, kept per thread: allocating and clearing them for each string
    /// cost more than scanning a short one (a tool call redacts a dozen
    /// short strings). Each search overwrites what it reports.
    static CAPTURE_SLOTS: RefCell<Option<CaptureLocations>> = const { RefCell::new(None) };
}

fn spans_with(
    engine: &Engine,
    text: &str,
    locations: &mut CaptureLocations,
) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut state = ScanState::default();
    let scan = Scan {
        engine,
        text,
        from: 0,
        depth: MAX_NESTING,
    };
    collect_spans(&scan, locations, &mut spans, &mut state);
    // Spans found inside a match's context come before it, and a resumed
    // search may overlap an earlier one.
    spans.sort_unstable();
    let body_lines = body_lines::key_body_lines(text, &spans, &state.public_blocks);
    if !body_lines.is_empty() {
        spans.extend(body_lines);
        spans.sort_unstable();
    }
    spans
}

/// What one scan has learned about the text so far.
#[derive(Debug, Default)]
struct ScanState {
    /// The bodies of public armored blocks (certificates, public keys), in
    /// order: their lines are not key material.
    public_blocks: Vec<(usize, usize)>,
    /// The last search for `-----END`: from where, and where it was found
    /// (or the end of the text). Reused by the headers before it, so that
    /// many headers without a footer cost one search, not one each.
    next_footer: Option<(usize, usize)>,
}

impl ScanState {
    fn next_footer(&mut self, text: &str, from: usize) -> usize {
        if let Some((searched_from, found)) = self.next_footer
            && (searched_from..=found).contains(&from)
        {
            return found;
        }
        let found = text
            .get(from..)
            .and_then(|rest| rest.find("-----END"))
            .map_or(text.len(), |at| from + at);
        self.next_footer = Some((from, found));
        found
    }
}

/// One (possibly nested) search: the text, where to start, how much
/// deeper a match's context may be searched.
struct Scan<'a> {
    engine: &'a Engine,
    text: &'a str,
    from: usize,
    depth: u8,
}

/// Finds the spans to replace in the scan's text from its start on,
/// appending them to `spans` (on char boundaries, possibly overlapping).
///
/// A match reaches from its context (`machine … login … password`,
/// `https://user:`, `-u user:`) to its secret, and the search resumes after
/// it; the context is searched on its own, so that a token in it (`curl -u
/// ghp_…:x`) is not passed over.
fn collect_spans(
    scan: &Scan<'_>,
    locations: &mut CaptureLocations,
    spans: &mut Vec<(usize, usize)>,
    state: &mut ScanState,
) {
    let Scan {
        engine,
        text,
        from,
        depth,
    } = *scan;
    let haystack = text.as_bytes();
    let mut at = from;
    while at <= haystack.len() {
        let Some(found) = engine.regex.captures_read_at(locations, haystack, at) else {
            break;
        };
        let (secret_start, outcome) = judge(engine, locations, text, state);
        at = match outcome {
            Outcome::Replace { start, end } => {
                spans.push(widen_to_char_boundaries(text, start, end));
                // A private key block reaches past the match.
                end.max(found.end()).max(found.start() + 1)
            }
            Outcome::Keep => found.end().max(found.start() + 1),
            // A value that is not a secret as a whole (`"<ghp_...>"`) may
            // still contain one.
            Outcome::KeepAndSearchFrom(resume) => resume.max(found.start() + 1),
        };
        let context_end = secret_start.map_or(found.start(), |start| start.min(found.end()));
        if context_end > found.start() {
            let (context_start, context_end) =
                widen_to_char_boundaries(text, found.start(), context_end);
            if depth == 0 {
                spans.push((context_start, context_end));
            } else {
                let context = Scan {
                    engine,
                    text: &text[..context_end],
                    from: context_start,
                    depth: depth - 1,
                };
                // The context's own state: it is a part already scanned.
                collect_spans(&context, locations, spans, &mut ScanState::default());
            }
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

/// Where the current match's secret starts, and what to do with the match.
fn judge(
    engine: &Engine,
    locations: &CaptureLocations,
    text: &str,
    state: &mut ScanState,
) -> (Option<usize>, Outcome) {
    let Some(rule) = engine
        .rules
        .iter()
        .find(|rule| locations.get(rule.whole_group).is_some())
    else {
        return (None, Outcome::Keep);
    };
    let Some((start, end)) = locations.get(rule.secret_group) else {
        return (None, Outcome::Keep);
    };
    let secret = text.get(start..end).unwrap_or_default();
    let key = || {
        rule.key_group
            .and_then(|group| locations.get(group))
            .and_then(|(key_start, key_end)| text.get(key_start..key_end))
            .unwrap_or_default()
    };
    let span = match rule.kind {
        Kind::Token => Some((start, end)),
        Kind::PrivateKeyBlock => Some((start, armor::private_key_block_end(text, end))),
        Kind::PrivateKeyFooter => armor::last_body_line_before(text, start),
        Kind::PublicBlockHeader => {
            let footer = state.next_footer(text, end);
            state.public_blocks.push((end, footer));
            None
        }
        Kind::Bearer => values::looks_like_token(secret).then_some((start, end)),
        Kind::UrlPassword => (secret != REDACTED).then_some((start, end)),
        Kind::CurlPassword => {
            let option_start = locations.get(rule.whole_group).map_or(start, |(at, _)| at);
            (!secret.starts_with(REDACTED)
                && !values::is_reference(secret)
                && values::runs_curl(text, option_start))
            .then_some((start, end))
        }
        Kind::Cookie => values::cookie_span(text, start, end),
        Kind::KeyValue => values::key_value_span(key(), text, start, end),
        Kind::RandomKeyValue if !keys::names_a_key(key()) => None,
        Kind::RandomKeyValue => {
            values::key_value_span(key(), text, start, end).filter(|&(value_start, value_end)| {
                text.get(value_start..value_end)
                    .is_some_and(values::looks_random)
            })
        }
    };
    let outcome = match (span, rule.kind) {
        (Some((start, end)), _) => Outcome::Replace { start, end },
        (
            None,
            Kind::Token
            | Kind::PrivateKeyBlock
            | Kind::PrivateKeyFooter
            | Kind::PublicBlockHeader
            | Kind::Bearer
            | Kind::UrlPassword,
        ) => Outcome::Keep,
        // From the value's start, not after it: the value may begin with a
        // secret of its own (`TLS_KEY=-----BEGIN … PRIVATE KEY-----`).
        (None, _) => Outcome::KeepAndSearchFrom(start),
    };
    (Some(start), outcome)
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
/// the whole value of keys that name a secret (see [`is_secret_key`]), and
/// the random-looking string value of any other `*_key` (`"WEBHOOK_KEY":
/// "q8Zt…"`, not `"sort_key": "name"`). `null` and booleans under such keys
/// are kept: they hold no secret.
pub fn redact_value(value: &mut Value) {
    let mut verdicts = KeyVerdicts::default();
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
                if map.keys().any(|key| verdicts.of(key).redact_name) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(key, value)| (redact(&key).into_owned(), value))
                        .collect();
                }
                for (key, child) in map.iter_mut() {
                    let verdict = verdicts.of(key);
                    let secret = if verdict.secret {
                        !matches!(child, Value::Null | Value::Bool(_))
                    } else {
                        verdict.names_a_key && child.as_str().is_some_and(values::looks_random)
                    };
                    if secret {
                        *child = Value::String(REDACTED.to_owned());
                    } else {
                        pending.push(child);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}
