//! The environment a child process gets: the bridge's own, minus anything
//! that looks like a credential. Commands are chosen by a model; they must not
//! be able to read the tokens the bridge itself runs with.

use std::ffi::OsString;

/// Name fragments (case-insensitive) of variables that hold secrets.
const SECRET_NAME_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
    "AUTH",
    "SESSION",
    "COOKIE",
];

/// Name prefixes (case-insensitive) of provider and cloud variables, which
/// hold keys even when their names do not say so.
const SECRET_NAME_PREFIXES: &[&str] = &[
    "COPILOT_",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "OPENAI_",
    "ANTHROPIC_",
    "AWS_",
    "AZURE_",
    "OPENCLAW_GATEWAY_TOKEN",
    "TAP_PROVIDER_TOKEN",
];

/// Whether a variable of this name must not reach a child process.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
        || SECRET_NAME_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix))
}

/// `vars` without secrets: secret-like names, values the redactor would
/// mask (a token pasted into an innocuous name), and names that are not
/// UTF-8 (which cannot be checked, so fail closed).
pub fn scrub_env<I>(vars: I) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    vars.into_iter()
        .filter(|(name, value)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            if is_secret_env_name(name) {
                return false;
            }
            let value = value.to_string_lossy();
            bridge_policy::redact(&value) == value
        })
        .collect()
}

/// The bridge's environment, scrubbed: what tools pass to the commands they
/// run (after `env_clear`).
pub fn scrubbed_env() -> Vec<(OsString, OsString)> {
    scrub_env(std::env::vars_os())
}
