//! Exit codes and how failures reach the terminal. Documented in docs/cli.md.

use std::io::Write;
use std::process::ExitCode;

/// The command ran and failed (a tool error, a patch conflict).
pub const FAILED: u8 = 1;
/// The command line or the arguments were wrong.
pub const USAGE: u8 = 2;
/// The configuration cannot be used.
pub const CONFIG: u8 = 3;
/// The policy denied the call.
pub const DENIED: u8 = 4;

/// A failure with its exit code, a message for stderr and, for commands that
/// print JSON, a JSON error body for stdout.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    pub json: Option<serde_json::Value>,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            json: None,
        }
    }

    pub fn config(err: bridge_config::ConfigError) -> Self {
        Self::new(CONFIG, format!("configuration error:\n{err}"))
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(USAGE, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(FAILED, message)
    }

    pub fn with_json(mut self, json: serde_json::Value) -> Self {
        self.json = Some(json);
        self
    }

    pub fn report(self) -> ExitCode {
        if let Some(json) = &self.json {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{json:#}");
        }
        let message = bridge_policy::redact(&self.message);
        let _ = writeln!(std::io::stderr().lock(), "copilot-bridge: {message}");
        ExitCode::from(self.code)
    }
}

/// An agent's configuration that could not be found or changed: what the
/// user must say or fix first is a usage error, anything else a failure.
impl From<bridge_agents::AgentsError> for Failure {
    fn from(err: bridge_agents::AgentsError) -> Self {
        use bridge_agents::AgentsError as E;
        let code = match &err {
            E::UnknownEditor(_)
            | E::NoHomeForEditor
            | E::CurrentDir(_)
            | E::NoHomeForUserScope
            | E::NoCopilotHome
            | E::NotAnExtensionList { .. }
            | E::RemoveOldExtension { .. }
            | E::RemoveExtension { .. } => USAGE,
            E::Read { .. }
            | E::Write { .. }
            | E::CreateDir { .. }
            | E::List { .. }
            | E::Remove { .. }
            | E::CreateBackup { .. }
            | E::WriteBackup { .. }
            | E::ChainNotJson { .. }
            | E::EditHooks { .. }
            | E::Unreadable { .. }
            | E::EditOpenclaw { .. }
            | E::LoadPathsNotPaths { .. }
            | E::LoadPathsNotList { .. }
            | E::KeepToken { .. }
            | E::NoShippedManifest
            | E::ShippedManifest(_)
            | E::NoShippedVersion
            | E::ShippedNotText { .. }
            | E::CodexStart { .. }
            | E::CodexTrust(_) => FAILED,
        };
        Self::new(code, err.to_string())
    }
}
