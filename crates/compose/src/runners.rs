//! The runner of a task, by kind: the native loop over the backend
//! `validate` selects, or the Copilot CLI.

use std::sync::Arc;

use bridge_config::BridgeConfig;
use bridge_engine::runner::copilot::CopilotRunner;
use bridge_engine::runner::native::NativeRunner;
use bridge_engine::runner::{Runner, RunnerKind};
use bridge_llm::{LlmError, select_backend};

use crate::ComposeError;
use crate::settings::{backend_settings, copilot_cli_config, native_settings};

/// A runner and the name of what it talks to (the backend's kind, or
/// `copilot-cli`), for the task's log.
pub struct BuiltRunner {
    pub runner: Arc<dyn Runner>,
    pub backend: String,
}

/// The runner of `kind`; for the native one, the backend exactly as
/// `validate` picks it, failing at once when there is none.
pub async fn runner(config: &BridgeConfig, kind: RunnerKind) -> Result<BuiltRunner, ComposeError> {
    match kind {
        RunnerKind::Native => {
            let settings = backend_settings(config);
            let explicit = settings.provider.is_some();
            let selected = select_backend(settings)
                .await
                .map_err(|err| no_backend(&err, explicit))?;
            Ok(BuiltRunner {
                backend: selected.kind.as_str().to_owned(),
                runner: Arc::new(NativeRunner::new(selected.backend, native_settings(config))),
            })
        }
        RunnerKind::Copilot => {
            let cli = copilot_cli_config(config).map_err(ComposeError::Config)?;
            Ok(BuiltRunner {
                runner: Arc::new(CopilotRunner::new(cli)),
                backend: "copilot-cli".to_owned(),
            })
        }
        RunnerKind::Nested => Err(ComposeError::Unsupported(
            "a nested agent CLI runs orchestrated sub-tasks only (see docs/orchestrator.md)"
                .to_owned(),
        )),
    }
}

/// No usable backend: the message names the settings and the command that
/// checks them.
fn no_backend(err: &LlmError, explicit: bool) -> ComposeError {
    let message = match err {
        // This message already lists every setting and suggests `validate`.
        LlmError::NotConfigured(message) if !explicit => message.clone(),
        other => format!(
            "{other}. Fix the setting, then check the backend with `copilot-bridge validate`."
        ),
    };
    ComposeError::NoBackend(message)
}
