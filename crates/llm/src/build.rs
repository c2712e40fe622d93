//! The one builder of chat backends: a [`BackendSpec`] (what the
//! configuration says about one backend) in, a ready backend wrapped in
//! [`RetryingBackend`] out. Auto-selection (`select`) and the daemon's
//! `[backends.NAME]` tables both come here, so a backend is built the same
//! way whichever door configured it.

use std::sync::Arc;

use bridge_util::Secret;

use crate::kind::{AZURE_DEFAULT_API_VERSION, BackendKind};
use crate::{
    AnthropicBackend, AnthropicConfig, AzureBackend, AzureConfig, ChatBackend, CopilotAccountType,
    CopilotBackend, CopilotConfig, LlmError, OllamaBackend, OllamaConfig, OpenAiBackend,
    OpenAiConfig, RetryConfig, RetryingBackend,
};

/// Everything needed to build one backend, as plain values.
#[derive(Debug, Clone)]
pub struct BackendSpec {
    pub kind: BackendKind,
    /// The backend's name in logs, errors and model routing (`openai`, or a
    /// `[backends.NAME]` table's name).
    pub name: String,
    /// Where it is reached; the kind's default when `None` (Copilot: the
    /// token exchange's answer, else the account type's host).
    pub base_url: Option<String>,
    /// The model used when a request names none; the kind's default when
    /// `None` (Azure: the deployment, required).
    pub model: Option<String>,
    /// The API key; Copilot's is the GitHub token it exchanges.
    pub api_key: Option<Secret>,
    /// Sent with every request; for Copilot they replace its integration
    /// headers of the same name.
    pub headers: Vec<(String, Secret)>,
    /// Azure's `api-version`; [`AZURE_DEFAULT_API_VERSION`] when `None`.
    pub azure_api_version: Option<String>,
    pub copilot_account_type: CopilotAccountType,
    pub retry: RetryConfig,
}

impl BackendSpec {
    pub fn new(kind: BackendKind, name: impl Into<String>) -> Self {
        Self {
            kind,
            name: name.into(),
            base_url: None,
            model: None,
            api_key: None,
            headers: Vec::new(),
            azure_api_version: None,
            copilot_account_type: CopilotAccountType::default(),
            retry: RetryConfig::default(),
        }
    }

    /// Where the backend is reached, for status tables: the configured URL,
    /// else the kind's default (empty for an Azure without an endpoint).
    pub fn shown_base_url(&self) -> String {
        self.base_url
            .clone()
            .or_else(|| {
                self.kind
                    .default_base_url(self.copilot_account_type)
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }

    /// The model used when a request names none.
    pub fn default_model(&self) -> Option<&str> {
        non_empty(self.model.as_deref()).or(self.kind.default_model())
    }

    fn missing(&self, what: &str) -> LlmError {
        LlmError::NotConfigured(format!(
            "backend {} ({}) needs {what}",
            self.name, self.kind
        ))
    }
}

/// Builds the backend `spec` describes, wrapped in [`RetryingBackend`].
pub fn build(spec: &BackendSpec) -> Result<Arc<dyn ChatBackend>, LlmError> {
    let key = spec.api_key.clone();
    let model = spec.default_model().unwrap_or_default().to_owned();
    let base_url = spec.shown_base_url();
    let backend: Arc<dyn ChatBackend> = match spec.kind {
        BackendKind::Vscode => {
            return Err(spec.missing(crate::select::VSCODE_NOT_BUILT));
        }
        BackendKind::OpenAi => {
            let mut config = OpenAiConfig::new(&spec.name, base_url, model);
            config.api_key = key;
            config.extra_headers = spec.headers.clone();
            retrying(OpenAiBackend::new(config)?, spec)
        }
        BackendKind::Azure => {
            let key = key.ok_or_else(|| spec.missing("an API key"))?;
            let endpoint = non_empty(spec.base_url.as_deref())
                .ok_or_else(|| spec.missing("a resource endpoint (base URL)"))?;
            let deployment = non_empty(spec.model.as_deref())
                .ok_or_else(|| spec.missing("a deployment (model)"))?;
            let version = spec
                .azure_api_version
                .as_deref()
                .unwrap_or(AZURE_DEFAULT_API_VERSION);
            let mut config = AzureConfig::new(endpoint, deployment, version, key);
            config.name = spec.name.clone();
            retrying(AzureBackend::new(config)?, spec)
        }
        BackendKind::Anthropic => {
            let mut config = AnthropicConfig::new(&spec.name, model);
            config.base_url = base_url;
            config.api_key = key;
            config.extra_headers = spec.headers.clone();
            retrying(AnthropicBackend::new(config)?, spec)
        }
        BackendKind::Ollama => {
            let mut config = OllamaConfig::new(model);
            config.name = spec.name.clone();
            config.base_url = base_url;
            retrying(OllamaBackend::new(config)?, spec)
        }
        BackendKind::Copilot => {
            let token = key.ok_or_else(|| spec.missing("a GitHub token"))?;
            let mut config = CopilotConfig::new(token, model);
            config.name = spec.name.clone();
            config.account_type = spec.copilot_account_type;
            config.api_base = spec.base_url.clone();
            for (name, value) in &spec.headers {
                config
                    .integration_headers
                    .retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
                config
                    .integration_headers
                    .push((name.clone(), value.expose().to_owned()));
            }
            retrying(CopilotBackend::new(config)?, spec)
        }
    };
    Ok(backend)
}

fn retrying<B: ChatBackend + 'static>(backend: B, spec: &BackendSpec) -> Arc<dyn ChatBackend> {
    Arc::new(RetryingBackend::new(backend, spec.retry))
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|text| !text.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_header_values_stay_out_of_debug_output() {
        let mut spec = BackendSpec::new(BackendKind::OpenAi, "proxy");
        spec.api_key = Some("sk-key-value".into());
        spec.headers = vec![("X-Proxy-Auth".into(), "proxy-credential".into())];
        let mut openai = OpenAiConfig::new("proxy", "http://127.0.0.1:9/v1", "m");
        openai.api_key = spec.api_key.clone();
        openai.extra_headers = spec.headers.clone();
        let mut anthropic = AnthropicConfig::new("proxy", "m");
        anthropic.api_key = spec.api_key.clone();
        anthropic.extra_headers = spec.headers.clone();
        let shown = [
            format!("{spec:?}"),
            format!("{openai:?}"),
            format!("{:?}", OpenAiBackend::new(openai).unwrap()),
            format!("{anthropic:?}"),
            format!("{:?}", AnthropicBackend::new(anthropic).unwrap()),
        ];
        for shown in shown {
            assert!(
                shown.contains("X-Proxy-Auth") || shown.contains("x-proxy-auth"),
                "{shown}"
            );
            assert!(!shown.contains("sk-key-value"), "{shown}");
            assert!(!shown.contains("proxy-credential"), "{shown}");
        }
    }
}
