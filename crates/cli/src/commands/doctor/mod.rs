//! `copilot-bridge doctor [--json] [--dir DIR]`: is this machine set up for
//! the hub? Each check says ok, warn or fail, why, and the command (or
//! configuration line) that fixes it; exit 1 when one fails (docs/cli.md,
//! "doctor").
//!
//! The checks, one module each: the configuration and the state directory
//! (`state`), the daemon, its version and the port (`daemon`, `upgrade`),
//! the chat backends (`backends`), the agents (`agents`), the VS Code
//! extension and OpenClaw's registration (`addons`), `.agent-policy.yaml`
//! (`policy`). They run side by side; each one that goes over the network
//! or runs a program is bounded by [`NETWORK_TIMEOUT`], so a machine
//! offline gets its answer within 10 s. A message never holds a secret:
//! they name files and binaries, never a token or key, and the output is
//! redacted once more on its way out.

mod addons;
mod agents;
mod backends;
mod daemon;
mod policy;
mod state;
pub(crate) mod upgrade;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use bridge_agents::AgentEnv;
use bridge_config::BridgeConfig;
use serde_json::{Value, json};

use super::tool::{print_json, write_stdout};
use crate::args::{DoctorArgs, GlobalArgs};
use crate::exit::{self, Failure};

/// How long one network check (or a program asked its version) may take.
pub(crate) const NETWORK_TIMEOUT: Duration = Duration::from_secs(3);

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

/// One check: its name, verdict, what was found, and what fixes it.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub name: String,
    pub status: Status,
    pub message: String,
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: Status::Ok,
            message: message.into(),
            fix: None,
        }
    }

    pub fn warn(
        name: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            status: Status::Warn,
            fix: Some(fix.into()),
            ..Self::ok(name, message)
        }
    }

    pub fn fail(
        name: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            status: Status::Fail,
            fix: Some(fix.into()),
            ..Self::ok(name, message)
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "status": self.status.as_str(),
            "message": redacted(&self.message),
            "fix": self.fix.as_deref().map(redacted),
        })
    }
}

fn redacted(text: &str) -> String {
    bridge_policy::redact(text).into_owned()
}

/// How the fixes name this program: `copilot-bridge`, with the state
/// directory and port when they are not the defaults, so the command
/// reaches the same daemon.
pub(crate) fn invocation(config: &BridgeConfig) -> String {
    let mut words = vec!["copilot-bridge".to_owned()];
    if super::is_configured(config, bridge_config::keys::HOME) {
        words.push(format!("--home {}", shell_word(&config.home)));
    }
    if super::is_configured(config, bridge_config::keys::PORT) {
        words.push(format!("--port {}", config.port));
    }
    words.join(" ")
}

/// `path` as one word for `sh`.
pub(crate) fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The first line `path --version` prints (printable, redacted, cut),
/// within [`NETWORK_TIMEOUT`]; `None` when it fails or says nothing.
pub(crate) async fn program_version(path: &Path) -> Option<String> {
    let mut command = tokio::process::Command::new(path);
    command
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(NETWORK_TIMEOUT, command.output())
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    output
        .status
        .success()
        .then(|| bridge_policy::redact::printable(line, 80))
}

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: DoctorArgs,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let project = super::project_dir(args.dir.as_deref())?;
    let (mut checks, daemon, backends, agents) = tokio::join!(
        async { state::checks(global, config) },
        daemon::checks(config),
        backends::checks(config),
        agents::checks(config, env, &project),
    );
    checks.extend(daemon);
    checks.extend(backends);
    checks.extend(agents);
    checks.extend(addons::checks(config, env));
    checks.push(policy::check(&project));
    let worst = checks.iter().map(|check| check.status).max();
    if args.json {
        let checks: Vec<Value> = checks.iter().map(Check::to_json).collect();
        print_json(&json!({ "checks": checks }), false)?;
    } else {
        write_stdout(&redacted(&table(&checks)))?;
    }
    Ok(if worst == Some(Status::Fail) {
        ExitCode::from(exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn table(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for check in checks {
        out.push_str(&format!(
            "{:4}  {:width$}  {}\n",
            check.status.as_str(),
            check.name,
            check.message
        ));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("      {:width$}  fix: {fix}\n", ""));
        }
    }
    let count = |status| checks.iter().filter(|c| c.status == status).count();
    out.push_str(&format!(
        "\n{} ok, {} warn, {} fail\n",
        count(Status::Ok),
        count(Status::Warn),
        count(Status::Fail)
    ));
    out
}
