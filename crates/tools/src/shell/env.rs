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

/// Variables that change what a read-only command does: they point tools at
/// configuration, repositories or code of the caller's choosing (rg's config
/// file can add `--pre`, bash sources `BASH_ENV`, `GIT_DIR` moves the
/// repository outside the workspace). The shell analysis judges commands
/// without them, so children never get them.
const BEHAVIOUR_CHANGING_NAMES: &[&str] = &[
    "RIPGREP_CONFIG_PATH",
    "BASH_ENV",
    "ENV",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_EXTERNAL_DIFF",
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_PARAMETERS",
    "GREP_OPTIONS",
    "LESSOPEN",
    "LESSCLOSE",
];

/// Whether a variable of this name must not reach a child process (a secret,
/// or one that changes what a read-only command does).
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    BEHAVIOUR_CHANGING_NAMES.contains(&upper.as_str())
        || upper.starts_with("GIT_CONFIG_")
        || SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
        // AUTH marks credentials (GH_AUTH, OAUTH_TOKEN, AUTHORIZATION) but
        // also GIT_AUTHOR_NAME, which commits need.
        || upper
            .split('_')
            .any(|segment| segment.contains("AUTH") && segment != "AUTHOR")
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

/// Settings that keep git from running programs named by the repository's
/// own configuration when a command only reads: an fsmonitor hook runs on
/// `git status`, a pager on anything that pages, hooks on commits. The agent
/// cannot write `.git/` (the write policy refuses it), but a workspace may
/// arrive with a hostile `.git/config`. Passed as `GIT_CONFIG_*` overrides,
/// which win over every config file (git >= 2.31).
pub fn git_hardening_env() -> Vec<(OsString, OsString)> {
    const OVERRIDES: &[(&str, &str)] = &[
        ("core.fsmonitor", "false"),
        ("core.pager", "cat"),
        ("core.hooksPath", "/dev/null"),
        ("core.sshCommand", "ssh"),
        ("credential.helper", ""),
    ];
    let mut vars: Vec<(OsString, OsString)> = vec![
        (
            "GIT_CONFIG_COUNT".into(),
            OVERRIDES.len().to_string().into(),
        ),
        ("GIT_PAGER".into(), "cat".into()),
        ("PAGER".into(), "cat".into()),
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
    ];
    for (index, (key, value)) in OVERRIDES.iter().enumerate() {
        vars.push((format!("GIT_CONFIG_KEY_{index}").into(), (*key).into()));
        vars.push((format!("GIT_CONFIG_VALUE_{index}").into(), (*value).into()));
    }
    vars
}
