//! Judging a matched value: is it a secret, or a placeholder, a type, a
//! piece of code, a variable reference? Rules match generously; these
//! checks keep the look-alikes out.

use super::REDACTED;

/// `Bearer` is also an English word: only a token-looking word after it counts.
pub(super) fn looks_like_token(word: &str) -> bool {
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
pub(super) fn key_value_span(
    key: &str,
    text: &str,
    start: usize,
    end: usize,
) -> Option<(usize, usize)> {
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
    if is_pass_constant(key, text, start, value) {
        return None;
    }
    if is_reference(value) || value.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.')) {
        return None;
    }
    if !quoted {
        // `token == ""`: a comparison; `syn::token::Brace`: a path.
        if value.starts_with(['=', ':']) || is_code_reference(value) || is_code_value(value) {
            return None;
        }
        let next = text.get(end..).and_then(|rest| rest.chars().next());
        // `token = get_token()`, `token = self.token`, `Token = Option<T>`:
        // code, not a value.
        if matches!(next, Some('(' | '.' | '<')) {
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
        // `const SIGNING_KEY: KeyUsage = 2;`: the type of a declaration.
        let rest = text
            .get(end..)
            .unwrap_or_default()
            .trim_start_matches([' ', '\t']);
        let declares = rest.starts_with('=') && !rest.starts_with("==") && !rest.starts_with("=>");
        if after_colon && declares && is_path(value) {
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

/// References to a secret are not the secret: `$TOKEN`, `${TOKEN}`,
/// `${{ secrets.TOKEN }}`, `%(password)s`, `<token>`, `{{ secret }}`.
pub(super) fn is_reference(value: &str) -> bool {
    value.starts_with(['$', '%', '<', '{'])
}

/// `pass` is also a verb and a stage (`DEFRAG_PASS = 3`, `Pass: 12`): a
/// number of a few digits under a `pass` key is a constant or a count when
/// the key is the bare word or the code spaces its `=`. An env file
/// (`DB_PASS=1234`) does not, and keeps it secret.
fn is_pass_constant(key: &str, text: &str, start: usize, value: &str) -> bool {
    // The key may start with the escaped line break before it (`\nPass`).
    let unescaped = key.trim_start_matches('\\');
    let key_name = if unescaped.len() < key.len() {
        unescaped.get(1..).unwrap_or(unescaped)
    } else {
        key
    };
    let lower = key_name.to_ascii_lowercase();
    if !lower.ends_with("pass") || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return false;
    }
    let before = text.get(..start).unwrap_or_default();
    let spaced_assignment =
        before.ends_with([' ', '\t']) && before.trim_end().ends_with('=') && value.len() <= 4;
    lower == "pass" || spaced_assignment
}

/// Rust and C types that follow a `name:` in code.
const PRIMITIVE_TYPES: [&str; 15] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64", "char",
];

/// Unquoted values that are code rather than data: primitive and raw
/// pointer types (`key: u32`, `key: *mut T`), paths
/// (`windows_sys::core::HRESULT`) and integer literals in code form (`2u32`,
/// `0x0400`).
fn is_code_value(value: &str) -> bool {
    PRIMITIVE_TYPES.contains(&value)
        || value == "*mut"
        || value == "*const"
        || (value.contains("::") && is_path(value))
        || is_integer_literal(value)
}

fn is_identifier(segment: &str) -> bool {
    !segment.is_empty()
        && !segment.starts_with(|c: char| c.is_ascii_digit())
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `Name`, `module::Name`.
fn is_path(value: &str) -> bool {
    value.split("::").all(is_identifier)
}

/// Longest hex literal taken for a constant (`0x80310054`); longer ones
/// (`0x` + 64 digits) are keys.
const MAX_CONSTANT_HEX_DIGITS: usize = 16;

/// `2u32`, `1_000i64`, `0x04`, `0x8029_041A_u32`.
fn is_integer_literal(value: &str) -> bool {
    const SUFFIXES: [&str; 12] = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
    ];
    let number = SUFFIXES
        .iter()
        .find_map(|suffix| value.strip_suffix(suffix))
        .map(|number| number.trim_end_matches('_'));
    let has_suffix = number.is_some();
    let number = number.unwrap_or(value);
    if let Some(hex) = number
        .strip_prefix("0x")
        .or_else(|| number.strip_prefix("0X"))
    {
        let digits = hex.bytes().filter(|&byte| byte != b'_').count();
        return digits > 0
            && digits <= MAX_CONSTANT_HEX_DIGITS
            && hex
                .bytes()
                .all(|byte| byte.is_ascii_hexdigit() || byte == b'_');
    }
    has_suffix
        && !number.is_empty()
        && number
            .bytes()
            .all(|byte| byte.is_ascii_digit() || byte == b'_')
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
    let root = value.split('.').next().unwrap_or_default();
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

/// Shortest value [`looks_random`] accepts.
const MIN_RANDOM_LENGTH: usize = 16;

/// Whether a value looks machine-generated (a key, not a name): long, made
/// of base64/hex characters, with letters and digits that alternate often.
/// Words and identifiers change character class only at word boundaries
/// (`user_profile_v2`), random strings about every other character.
pub(super) fn looks_random(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() < MIN_RANDOM_LENGTH
        || value.starts_with(['/', '~', '.'])
        || !bytes
            .iter()
            .all(|&byte| byte.is_ascii_alphanumeric() || b"+/=_.:~-".contains(&byte))
        || !bytes.iter().any(u8::is_ascii_digit)
        || !bytes.iter().any(u8::is_ascii_alphabetic)
    {
        return false;
    }
    let class = |byte: u8| match byte {
        b'a'..=b'z' => 1,
        b'A'..=b'Z' => 2,
        b'0'..=b'9' => 3,
        _ => 0,
    };
    let mut alphanumeric = 0;
    let mut changes = 0;
    let mut previous = 0;
    for &byte in bytes {
        let current = class(byte);
        if current != 0 {
            alphanumeric += 1;
            if previous != 0 && previous != current {
                changes += 1;
            }
        }
        previous = current;
    }
    changes * 4 >= alphanumeric
}

/// For a cookie header value, its span without trailing blanks; `None` unless
/// it starts with a `name=` pair (prose after `Cookie:` is no cookie).
pub(super) fn cookie_span(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let value = text.get(start..end)?.trim_end();
    if value.starts_with(REDACTED) {
        return None;
    }
    let (name, _) = value.split_once('=')?;
    let is_cookie_name = !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&*+.^_|~-".contains(&byte));
    is_cookie_name.then_some((start, start + value.len()))
}

/// How far back [`runs_curl`] looks for `curl` on the same line: bounded,
/// so that a hostile line full of `-u a:b` costs linear time.
const CURL_LOOKBACK: usize = 1024;

/// Whether `-u user:password` at `option_start` belongs to a curl command:
/// `curl` on the same line before it (`curl`, `/usr/bin/curl`,
/// `CURL_OPTS="-u …"`). A line too long to tell counts as curl (redacting
/// too much is the safe mistake); `docker run -u 1000:1000` and `git push -u
/// origin` are left alone.
pub(super) fn runs_curl(text: &str, option_start: usize) -> bool {
    let window_start = option_start.saturating_sub(CURL_LOOKBACK);
    let Some(window) = text.as_bytes().get(window_start..option_start) else {
        return true;
    };
    let (line, whole_line) = match window.iter().rposition(|&byte| byte == b'\n') {
        Some(newline) => (&window[newline + 1..], true),
        None => (window, window_start == 0),
    };
    let has_curl = line
        .windows(4)
        .any(|word| word.eq_ignore_ascii_case(b"curl"));
    has_curl || !whole_line
}
