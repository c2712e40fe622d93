//! The flags of `copilot-bridge doctor` (docs/cli.md, "doctor").

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print `{"checks": [{"name", "status", "message", "fix"}]}` instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The project whose .agent-policy.yaml and project hooks are checked (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
