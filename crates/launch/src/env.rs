//! The environment a child process gets: one policy, two bases.
//!
//! - [`ChildEnv::minimal`] for programs the hub starts for itself (MCP
//!   servers, project providers, agent CLIs): only what every program needs
//!   (see [`BASE_NAMES`]); anything else it needs is named by its
//!   configuration ([`ChildEnv::set`]) or passed by name
//!   ([`ChildEnv::inherit`]).
//! - [`ChildEnv::scrubbed`] for commands the user's policy lets a model run
//!   in the workspace (the shell tool, tasks, formatters): the daemon's
//!   environment, so builds find their toolchains, minus every variable that
//!   holds a secret or changes what a read-only command does.
//!
//! Whatever the base, an inherited variable never passes when its name marks
//! a secret ([`is_secret_env_name`]: our tokens, BYOK and cloud keys,
//! anything named like a token or password) or its value looks like one (the
//! redactor would mask it), and names that are not UTF-8 never pass (they
//! cannot be checked). Only [`ChildEnv::set`] gives a child a secret: the
//! Copilot CLI its GitHub token, a provider its own token, an MCP server the
//! keys its configuration names.

use std::ffi::{OsStr, OsString};

/// What every program may need and no secret hides in: the search path,
/// who and where the user is, locale, terminal, time zone, temp dirs (and
/// their Windows counterparts).
pub const BASE_NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TMP",
    "TEMP",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
];

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
/// without them, so children never inherit them.
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

/// Whether a variable of this name must never be inherited by a child (a
/// secret, or one that changes what a read-only command does).
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

/// Whether an inherited variable may pass: a checkable name that marks no
/// secret, and a value the redactor leaves alone.
fn may_inherit(name: &OsStr, value: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    if is_secret_env_name(name) {
        return false;
    }
    let value = value.to_string_lossy();
    bridge_policy::redact(&value) == value
}

/// Which inherited variables a child starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Minimal,
    Scrubbed,
}

/// A child's environment, built from the policy above.
#[derive(Debug, Clone)]
pub struct ChildEnv {
    base: Base,
    /// Names inherited beyond the base, when present and not secret.
    inherit: Vec<String>,
    /// Names never inherited (a test's sandbox, or a variable the caller
    /// wants the child to set itself).
    remove: Vec<String>,
    /// Explicit variables: always passed, last one of a name wins.
    set: Vec<(OsString, OsString)>,
    /// Where inherited variables come from; `None`: this process.
    source: Option<Vec<(OsString, OsString)>>,
}

impl ChildEnv {
    /// [`BASE_NAMES`] only.
    pub fn minimal() -> Self {
        Self {
            base: Base::Minimal,
            inherit: Vec::new(),
            remove: Vec::new(),
            set: Vec::new(),
            source: None,
        }
    }

    /// The daemon's environment minus secrets and behaviour-changing
    /// variables.
    pub fn scrubbed() -> Self {
        Self {
            base: Base::Scrubbed,
            ..Self::minimal()
        }
    }

    /// Also inherit these names when present (and not secret).
    pub fn inherit<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inherit.extend(names.into_iter().map(Into::into));
        self
    }

    /// Never inherit these names.
    pub fn remove<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.remove.extend(names.into_iter().map(Into::into));
        self
    }

    /// A variable the child is meant to get, whatever its name.
    pub fn set(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.set.push((name.into(), value.into()));
        self
    }

    /// Several variables the child is meant to get.
    pub fn set_all<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.set
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Inherit from `vars` instead of this process's environment (a
    /// configuration's view of the environment, or a test's).
    pub fn inherited_from(mut self, vars: Vec<(OsString, OsString)>) -> Self {
        self.source = Some(vars);
        self
    }

    /// The variables, from this process's environment (or the one given
    /// to [`inherited_from`](Self::inherited_from)).
    pub fn build(&self) -> Vec<(OsString, OsString)> {
        match &self.source {
            Some(vars) => self.build_from(vars.iter().cloned()),
            None => self.build_from(std::env::vars_os()),
        }
    }

    /// The variables, from `inherited` (the daemon's environment, or a
    /// test's).
    pub fn build_from<I>(&self, inherited: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let wanted = |name: &OsStr| {
            let Some(name) = name.to_str() else {
                return false;
            };
            if self.remove.iter().any(|removed| removed == name) {
                return false;
            }
            match self.base {
                Base::Scrubbed => true,
                Base::Minimal => {
                    BASE_NAMES.contains(&name) || self.inherit.iter().any(|extra| extra == name)
                }
            }
        };
        let mut vars: Vec<(OsString, OsString)> = inherited
            .into_iter()
            .filter(|(name, value)| wanted(name) && may_inherit(name, value))
            .collect();
        for (name, value) in &self.set {
            vars.retain(|(existing, _)| existing != name);
            vars.push((name.clone(), value.clone()));
        }
        vars
    }
}
