//! `copilot-bridge validate`: is the LLM backend usable?
//!
//! Selects the backend exactly as the daemon will, then checks auth by
//! listing the models and sends one tiny chat request, printing a status
//! table. Exit 0 when the chat answered, 1 when the backend is unusable (or
//! none is found), 3 when an explicitly chosen provider lacks a setting.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bridge_config::BridgeConfig;
use bridge_llm::{ChatRequest, LlmError, Message, Role, Selected, collect, select_backend};

use crate::exit::{self, Failure};

/// How many model names the table shows.
const MODELS_SHOWN: usize = 5;
/// A ping must not keep a user waiting on a stuck upstream.
const PING_TIMEOUT: Duration = Duration::from_secs(30);

pub async fn run(config: &BridgeConfig) -> Result<ExitCode, Failure> {
    let settings = bridge_compose::backend_settings(config);
    let explicit = settings.provider.is_some();
    let selected = select_backend(settings).await.map_err(|err| match err {
        // A chosen provider missing its settings is a configuration mistake;
        // finding nothing at all means there is no usable backend.
        LlmError::NotConfigured(message) if explicit => {
            Failure::new(exit::CONFIG, format!("configuration error: {message}"))
        }
        other => Failure::new(exit::FAILED, other.to_string()),
    })?;
    let report = ping(&selected).await;
    let table = report.table(&selected);
    std::io::stdout()
        .lock()
        .write_all(table.as_bytes())
        .map_err(|err| Failure::internal(format!("cannot write to stdout: {err}")))?;
    match report.chat {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(reason) => Err(Failure::new(
            exit::FAILED,
            format!(
                "FAILED: the {} backend is unusable: {reason}",
                selected.kind
            ),
        )),
    }
}

struct PingReport {
    models: Result<Vec<String>, LlmError>,
    /// The round trip of the chat request.
    chat: Result<Duration, LlmError>,
}

fn timed_out(selected: &Selected) -> LlmError {
    LlmError::Timeout {
        backend: selected.kind.as_str().to_owned(),
        after: PING_TIMEOUT,
    }
}

/// An upstream refusing the credentials: 401/403 or the backend's own verdict.
pub(crate) fn is_auth_failure(error: &LlmError) -> bool {
    matches!(error, LlmError::Auth { .. })
        || matches!(
            error,
            LlmError::Http {
                status: 401 | 403,
                ..
            }
        )
}

async fn ping(selected: &Selected) -> PingReport {
    let backend = &selected.backend;
    let models = match tokio::time::timeout(PING_TIMEOUT, backend.models()).await {
        Ok(result) => result,
        Err(_) => Err(timed_out(selected)),
    };
    let request = ChatRequest {
        model: selected.model.clone(),
        messages: vec![Message::text(Role::User, "ping")],
        max_tokens: Some(5),
        ..ChatRequest::default()
    };
    let started = Instant::now();
    let answer = async { collect(backend.stream(&request).await?).await };
    let chat = match tokio::time::timeout(PING_TIMEOUT, answer).await {
        Ok(Ok(_)) => Ok(started.elapsed()),
        Ok(Err(err)) => Err(err),
        Err(_) => Err(timed_out(selected)),
    };
    PingReport { models, chat }
}

impl PingReport {
    fn table(&self, selected: &Selected) -> String {
        let rejected = [self.models.as_ref().err(), self.chat.as_ref().err()]
            .into_iter()
            .flatten()
            .find(|err| is_auth_failure(err));
        let auth = match rejected {
            Some(err) => format!("failed ({err})"),
            None if self.models.is_ok() || self.chat.is_ok() => "ok".to_owned(),
            None => "unknown (upstream not reached)".to_owned(),
        };
        let models = match &self.models {
            Ok(models) => {
                let shown: Vec<&str> = models
                    .iter()
                    .take(MODELS_SHOWN)
                    .map(String::as_str)
                    .collect();
                let more = if models.len() > MODELS_SHOWN {
                    ", …"
                } else {
                    ""
                };
                format!("{} ({}{more})", models.len(), shown.join(", "))
            }
            Err(err) => format!("error: {err}"),
        };
        let chat = match &self.chat {
            Ok(elapsed) => format!("ok in {} ms", elapsed.as_millis()),
            Err(err) => format!("error: {err}"),
        };
        let status = if self.chat.is_ok() { "OK" } else { "FAILED" };
        let rows = [
            ("backend", selected.kind.as_str().to_owned()),
            ("selected because", selected.source.clone()),
            ("base URL", selected.base_url.clone()),
            (
                "model",
                selected
                    .model
                    .clone()
                    .unwrap_or_else(|| "(backend default)".into()),
            ),
            ("auth", auth),
            ("models", models),
            ("chat", chat),
            ("status", status.to_owned()),
        ];
        let width = rows.iter().map(|(key, _)| key.len()).max().unwrap_or(0);
        rows.iter()
            .map(|(key, value)| format!("{key:<width$}  {value}\n"))
            .collect()
    }
}
