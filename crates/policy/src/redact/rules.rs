//! The secret patterns, after gitleaks' rules for the formats an agent is
//! likely to meet in tool output, and the names of secret-holding keys.
//!
//! Every pattern marks what to replace with a group named `secret`;
//! key/value rules also name the `key`. Patterns are compiled as ASCII byte
//! regexes (no Unicode classes): faster, and every match still starts and
//! ends on an ASCII character, so on `char` boundaries.

/// How a match is turned into a replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Replace the `secret` span.
    Token,
    /// `Bearer <token>`: keep the scheme; only token-like words count.
    Bearer,
    /// `key=value` and friends: replace the value (inside its quotes),
    /// unless it is a placeholder, a type or a function call.
    KeyValue,
    /// `scheme://user:password@host`: replace the password.
    UrlPassword,
}

pub(super) struct Rule {
    pub name: &'static str,
    pub kind: Kind,
    pub pattern: &'static str,
}

pub(super) fn rules() -> Vec<Rule> {
    vec![
        Rule {
            name: "private key block",
            kind: Kind::Token,
            // A block cut short (truncated output) is redacted up to where
            // the base64 body ends.
            pattern: r"(?P<secret>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:(?s:.)*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,\\-]*))",
        },
        Rule {
            name: "GitHub token",
            kind: Kind::Token,
            pattern: r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{80,255})",
        },
        Rule {
            name: "AWS access key id",
            kind: Kind::Token,
            pattern: r"\b(?P<secret>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
        },
        Rule {
            name: "OpenAI / Anthropic / Stripe key",
            kind: Kind::Token,
            pattern: r"\b(?P<secret>sk-(?:ant-(?:api|admin|oat)[0-9]{2}|proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20,}(?:[-_][A-Za-z0-9_-]+)?|[sr]k_(?:live|test)_[A-Za-z0-9]{16,})",
        },
        Rule {
            name: "Slack token",
            kind: Kind::Token,
            pattern: r"\b(?P<secret>xox[baprse]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})",
        },
        Rule {
            name: "Slack webhook",
            kind: Kind::Token,
            pattern: r"hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9_/-]{20,})",
        },
        Rule {
            name: "other service token",
            kind: Kind::Token,
            pattern: r"\b(?P<secret>AIza[A-Za-z0-9_-]{35}|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z]{34,}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})",
        },
        Rule {
            name: "JSON web token",
            kind: Kind::Token,
            pattern: r"\b(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)",
        },
        Rule {
            name: "URL credentials",
            kind: Kind::UrlPassword,
            pattern: r#"\b(?i:[a-z][a-z0-9+.-]{0,20})://[^\s/?#@:'"<>]+:(?P<secret>[^\s/?#@'"<>]+)@"#,
        },
        Rule {
            name: "key/value secret",
            kind: Kind::KeyValue,
            pattern: KEY_VALUE,
        },
        Rule {
            name: "Bearer token",
            kind: Kind::Bearer,
            pattern: r"\b(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)",
        },
    ]
}

/// `key` then `=`, `:`, `:=` or `=>` (the key possibly quoted, also as
/// escaped JSON `\"key\"`), then the value: double-quoted (with escapes),
/// single-quoted, escaped-quoted, or bare up to a delimiter. A bare value
/// may start with an HTTP auth scheme (`Authorization: Bearer xyz`).
const KEY_VALUE: &str = concat!(
    r"(?P<key>(?i:[a-z0-9_.-]*",
    r"(?:pass(?:word|wd|phrase)|pwd|secret|token|(?:api|access|secret|private)[_-]?key|apikey|authorization)",
    r"))",
    r#"\\?["']?\s*(?::=|=>|[:=])\s*"#,
    r#"(?P<secret>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\\"(?:[^"\\]|\\[^"])*\\"|(?:(?i:bearer|basic|token|digest)[ \t]+)?[^\s"'`,;&<>{}\[\]()]+)"#,
);

/// JSON object keys whose whole value is a secret, normalized (lower case,
/// only letters and digits): exact names, then suffixes.
const SECRET_KEYS: [&str; 8] = [
    "authorization",
    "proxyauthorization",
    "cookie",
    "setcookie",
    "credentials",
    "credential",
    "passwd",
    "secret",
];
const SECRET_KEY_SUFFIXES: [&str; 10] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "clientsecret",
];
/// Words of a key that make it a count or a setting about secrets rather
/// than a secret (`max_token`, `tokenLimit`, `token_ttl`).
const NOT_SECRET_WORDS: [&str; 12] = [
    "max", "min", "count", "limit", "used", "total", "length", "size", "ttl", "type", "expiry",
    "expires",
];

/// Splits `apiKey`, `api_key`, `API-KEY` into lower-case words.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in key.chars() {
        if !ch.is_ascii_alphanumeric() {
            previous_lower = false;
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if ch.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
        current.push(ch.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Whether a JSON object key names a secret: `password`, `apiKey`,
/// `client_secret`, `X-Api-Key`, `GITHUB_TOKEN`, but not `tokens_used`,
/// `max_tokens`, `token_type` or `public_key`.
pub fn is_secret_key(key: &str) -> bool {
    let normalized: String = key
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if normalized.is_empty()
        || key_words(key)
            .iter()
            .any(|word| NOT_SECRET_WORDS.contains(&word.as_str()))
    {
        return false;
    }
    SECRET_KEYS.contains(&normalized.as_str())
        || SECRET_KEY_SUFFIXES
            .iter()
            .any(|suffix| normalized.ends_with(suffix))
}
