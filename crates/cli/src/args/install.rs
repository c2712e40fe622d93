//! The commands about copilot-bridge itself as an installed program:
//! shell completion, its version and build, and the user service that
//! keeps the daemon running (docs/install.md).

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell whose completion script to print.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print JSON: version, commit, build date, target.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write the user service (a systemd user unit on Linux, a launchd agent on macOS) that runs `serve`, and start it.
    Install(ServiceInstallArgs),
    /// Stop the user service and remove it.
    Uninstall,
    /// Whether the user service is installed, up to date and running.
    Status,
}

#[derive(Debug, Args)]
pub struct ServiceInstallArgs {
    /// Only write the unit (or agent) file; start nothing.
    #[arg(long)]
    pub no_start: bool,
    /// Spawn the providers a workspace's tap.config.json declares.
    #[arg(long)]
    pub trust_project_providers: bool,
}
