//! Names of JSON object keys whose values are secrets.

/// Keys whose whole value is a secret, normalized (lower case, only letters
/// and digits): exact names, then suffixes.
const SECRET_KEYS: [&str; 9] = [
    "authorization",
    "proxyauthorization",
    "cookie",
    "setcookie",
    "credentials",
    "credential",
    "passwd",
    "secret",
    // docker's config.json and npm's `_auth`: base64 of `user:password`.
    "auth",
];
const SECRET_KEY_SUFFIXES: [&str; 15] = [
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
    "accountkey",
    "encryptionkey",
    "signingkey",
    "masterkey",
    "secretkeybase",
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
/// `client_secret`, `X-Api-Key`, `GITHUB_TOKEN`, `DB_PASS`, `auth`, but not
/// `tokens_used`, `max_tokens`, `token_type`, `public_key` or `bypass`.
pub fn is_secret_key(key: &str) -> bool {
    let normalized: String = key
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if normalized.is_empty() {
        return false;
    }
    let words = key_words(key);
    if words
        .iter()
        .any(|word| NOT_SECRET_WORDS.contains(&word.as_str()))
    {
        return false;
    }
    // `pass` is a secret only as a word of its own (`smtp_pass`, `dbPass`):
    // as a suffix it would take `bypass` and `compass` too.
    SECRET_KEYS.contains(&normalized.as_str())
        || words.last().is_some_and(|word| word == "pass")
        || SECRET_KEY_SUFFIXES
            .iter()
            .any(|suffix| normalized.ends_with(suffix))
}

/// Whether a key names a key of some sort (`WEBHOOK_KEY`, `signingKey`):
/// its value is a secret when it looks randomly generated, unlike
/// `sort_key: name`. Public keys are meant to be shared.
pub(super) fn names_a_key(key: &str) -> bool {
    let words = key_words(key);
    words.len() >= 2
        && words.last().is_some_and(|word| word == "key")
        && !words.iter().any(|word| word == "public" || word == "pub")
}
