//! The secret patterns, after gitleaks' rules for the formats an agent is
//! likely to meet in tool output.
//!
//! Every pattern marks what to replace with a group named `secret`;
//! key/value rules also name the `key`. Patterns are compiled as ASCII byte
//! regexes (no Unicode classes): faster, and every match still starts and
//! ends on an ASCII character, so on `char` boundaries.
//!
//! Text is often JSON that holds other text, so a line break may be the two
//! characters `\n` (or `\\n`, one level deeper): patterns that care about
//! where a key starts accept an escaped `\n`, `\r` or `\t` there, where `\b`
//! does not hold, and a bare value ends at one.

/// How a match is turned into a replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Replace the `secret` span.
    Token,
    /// A private key header: replace it with the block it starts, up to its
    /// `-----END … -----` footer, or up to where the base64 body stops when
    /// the output was cut short. Searched by code, once per block: a lazy
    /// "anything up to the footer" in the regex rescans the rest of the text
    /// for every header that has no footer.
    PrivateKeyBlock,
    /// A `-----END … PRIVATE KEY-----` footer: replace the last line of the
    /// key body before it (shorter than the others, so not found as a body
    /// line), when the header was not seen.
    PrivateKeyFooter,
    /// The header of an armored block that is not a private key
    /// (`CERTIFICATE`, `PUBLIC KEY`): its body lines, up to its footer, are
    /// public and kept. (Body lines are found by code after the regex
    /// scan: a counted base64 run in the regex would cost every word.)
    PublicBlockHeader,
    /// `Bearer <token>`: keep the scheme; only token-like words count.
    Bearer,
    /// `key=value` and friends: replace the value (inside its quotes),
    /// unless it is a placeholder, a type or a function call.
    KeyValue,
    /// `SOME_KEY=value` for a key that may or may not be secret
    /// (`SIGNING_KEY`, `SORT_KEY`): as [`Kind::KeyValue`], but only when the
    /// value looks randomly generated.
    RandomKeyValue,
    /// `scheme://user:password@host`: replace the password.
    UrlPassword,
    /// `-u user:password` of curl: replace the password, when the line
    /// runs curl and the password is not a `$VARIABLE`.
    CurlPassword,
    /// A `Cookie:` / `Set-Cookie:` value: replaced whole when it holds
    /// `name=value` pairs.
    Cookie,
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
            kind: Kind::PrivateKeyBlock,
            // Only the header: the body and footer are found by code (see
            // `Kind::PrivateKeyBlock`).
            pattern: r"(?P<secret>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)",
        },
        Rule {
            name: "private key footer",
            kind: Kind::PrivateKeyFooter,
            pattern: r"(?P<secret>-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)",
        },
        Rule {
            name: "public armored block header",
            kind: Kind::PublicBlockHeader,
            // After the private key header, which wins at the same start.
            pattern: r"(?P<secret>-----BEGIN [A-Z0-9 ]{1,40}-----)",
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
            // The user may be empty: `redis://:password@host`.
            pattern: r#"\b(?i:[a-z][a-z0-9+.-]{0,20})://[^\s/?#@:'"<>]*:(?P<secret>[^\s/?#@'"<>]+)@"#,
        },
        Rule {
            name: ".netrc entry",
            kind: Kind::KeyValue,
            // `machine host login bob password hunter2`, on one line or
            // spread over several. Only the netrc keywords may come between
            // `machine` and `password`, so prose ("the default password is")
            // does not match.
            pattern: r#"(?:\b|\\+[nrt])(?i:machine(?:\s|\\+[nrt])+[^\s"'\\]+(?:(?:\s|\\+[nrt])+(?:login|account|port)(?:\s|\\+[nrt])+[^\s"'\\]+)*|default(?:(?:\s|\\+[nrt])+(?:login|account|port)(?:\s|\\+[nrt])+[^\s"'\\]+)+)(?:\s|\\+[nrt])+(?P<key>(?i:password|passwd))(?:\s|\\+[nrt])+(?P<secret>[^\s"'\\]+)"#,
        },
        Rule {
            name: "docker config auth",
            kind: Kind::KeyValue,
            // `"auth": "base64(user:password)"`; only as a quoted JSON key,
            // the bare word `auth` is too common.
            pattern: r#"(?:"|\\")(?P<key>(?i:auth))(?:"|\\")\s*:\s*(?P<secret>"(?:[^"\\\n]|\\.)*"|\\"(?:[^"\\]|\\[^"])*\\")"#,
        },
        Rule {
            name: "cookie header",
            kind: Kind::Cookie,
            pattern: r#"(?P<key>(?:\b|\\+[nrt])(?i:(?:[a-z0-9_.-]*[_.-])?cookie))\\?["']?[ \t]*[:=][ \t]*(?:\\?["'])?(?P<secret>[^\s"'`\\][^\r\n"'`\\]*)"#,
        },
        Rule {
            name: "curl user password",
            kind: Kind::CurlPassword,
            pattern: r#"(?:(?m:^)|[ \t"'=]|\\+[nrt])(?:-u[ \t]*|--user(?:[ \t]+|=)|-U[ \t]*|--proxy-user(?:[ \t]+|=))\\?["']?[^\s:"'\\]*:(?P<secret>[^\s"'\\]+)"#,
        },
        Rule {
            name: "key/value secret",
            kind: Kind::KeyValue,
            pattern: KEY_VALUE,
        },
        Rule {
            name: "key with a random value",
            kind: Kind::RandomKeyValue,
            pattern: RANDOM_KEY_VALUE,
        },
        Rule {
            name: "Bearer token",
            kind: Kind::Bearer,
            pattern: r"\b(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)",
        },
    ]
}

/// `key` then `=`, `:`, `:=` or `=>` on the same line (the key possibly
/// quoted, also as escaped JSON `\"key\"`), then the value: double-quoted (with escapes),
/// single-quoted, escaped-quoted, or bare up to a delimiter. A bare value
/// may start with an HTTP auth scheme (`Authorization: Bearer xyz`).
///
/// Keys: anything ending in a secret word (`DB_PASSWORD`, `x-api-key`,
/// `AccountKey`, `SECRET_KEY_BASE`); `pass` only as a whole word or after a
/// separator or in camel case (`DB_PASS`, `smtpPass`, not `bypass` or
/// `compass`); npm's `_auth` only as a whole key or after `_`
/// (`npm_config__auth`), not `basic_auth` or `oauth`.
const KEY_VALUE: &str = concat!(
    r"(?P<key>(?i:[a-z0-9_.-]*",
    r"(?:pass(?:word|wd|phrase)|pwd|secret|token|(?:api|access|secret|private|account|encryption|signing|master)[_-]?key|apikey|authorization|secret[_-]?key[_-]?base)",
    r")|(?:\b|\\+[nrt])(?i:(?:[a-z0-9_.-]*[_.-])?pass|(?:[a-z0-9_.-]*_)?_auth)",
    r"|\b[A-Za-z0-9_.-]*[a-z0-9]Pass)",
    r#"\\?["']?[ \t]*(?::=|=>|[:=])[ \t]*"#,
    r#"(?P<secret>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\\"(?:[^"\\]|\\[^"])*\\"|(?:(?i:bearer|basic|token|digest)[ \t]+)?(?:[^\s"'`,;&<>{}\[\]()\\]|\\+[^\s"'`,;&<>{}\[\]()\\nrt])+)"#,
);

/// `*_KEY` / `*Key` with any value; the caller keeps only random-looking
/// values, so `PRIMARY_KEY=id` stays.
const RANDOM_KEY_VALUE: &str = concat!(
    r"(?P<key>(?i:[a-z0-9_.-]*[_.-]key)|[A-Za-z0-9_.-]*[a-z0-9]Key)",
    r#"\\?["']?[ \t]*(?::=|=>|[:=])[ \t]*"#,
    r#"(?P<secret>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\\"(?:[^"\\]|\\[^"])*\\"|(?:[^\s"'`,;&<>{}\[\]()\\]|\\+[^\s"'`,;&<>{}\[\]()\\nrt])+)"#,
);
