//! What git needs on top of the launcher's scrubbed environment (see
//! bridge-launch's `env`) when the shell tool runs it.

use std::ffi::OsString;

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
