//! The one name of a backend's kind: which wire protocol and sign-in it
//! uses. Configuration (`COPILOT_BYOK_PROVIDER`, `[backends.NAME] provider`),
//! selection, the builder, the facade's routing table and status all use
//! this type.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::copilot::CopilotAccountType;
use crate::ollama::OLLAMA_DEFAULT_BASE_URL;

pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";
/// Models used when the configuration names none.
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-3-5-haiku-latest";
pub const COPILOT_DEFAULT_MODEL: &str = "gpt-4o";
pub const OLLAMA_DEFAULT_MODEL: &str = "llama3.2";

/// Which wire protocol and authentication a backend uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    #[serde(rename = "openai")]
    OpenAi,
    Azure,
    Anthropic,
    Ollama,
    Copilot,
    /// Copilot Chat (or any model) of a VS Code window, through `vscode.lm`
    /// and the editor's provider connection: served by the daemon, never
    /// configured (docs/vscode.md).
    Vscode,
}

impl BackendKind {
    pub const ALLOWED: &'static str = "one of openai, azure, anthropic, ollama, copilot";
    /// What `COPILOT_BYOK_PROVIDER` takes: a key of your own, so not Copilot.
    pub const BYOK_ALLOWED: &'static str = "one of openai, azure, anthropic, ollama";
    /// What a configuration may name: every kind but `vscode`, which the
    /// daemon serves itself.
    pub const ALL: [BackendKind; 5] = [
        Self::OpenAi,
        Self::Azure,
        Self::Anthropic,
        Self::Ollama,
        Self::Copilot,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Azure => "azure",
            Self::Anthropic => "anthropic",
            Self::Ollama => "ollama",
            Self::Copilot => "copilot",
            Self::Vscode => "vscode",
        }
    }

    /// Parses a `COPILOT_BYOK_PROVIDER` value (any kind but Copilot).
    pub fn parse_byok(text: &str) -> Result<Self, UnknownBackendKind> {
        match text.parse::<Self>() {
            Ok(Self::Copilot | Self::Vscode) | Err(_) => Err(UnknownBackendKind {
                given: text.to_owned(),
                expected: Self::BYOK_ALLOWED,
            }),
            Ok(kind) => Ok(kind),
        }
    }

    /// Whether the backend's client can send extra headers.
    pub fn takes_headers(self) -> bool {
        matches!(self, Self::OpenAi | Self::Anthropic | Self::Copilot)
    }

    /// The model used when the configuration names none (Azure has none:
    /// its model is the deployment, which must be named).
    pub fn default_model(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some(OPENAI_DEFAULT_MODEL),
            Self::Azure => None,
            Self::Anthropic => Some(ANTHROPIC_DEFAULT_MODEL),
            Self::Ollama => Some(OLLAMA_DEFAULT_MODEL),
            Self::Copilot => Some(COPILOT_DEFAULT_MODEL),
            // The editor offers its models; none is assumed.
            Self::Vscode => None,
        }
    }

    /// Where the backend is reached when the configuration says nothing
    /// (Azure has none: the resource endpoint must be named; Copilot's
    /// depends on the account type).
    pub fn default_base_url(self, account: CopilotAccountType) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some(OPENAI_DEFAULT_BASE_URL),
            Self::Azure => None,
            Self::Anthropic => Some(crate::anthropic::DEFAULT_BASE_URL),
            Self::Ollama => Some(OLLAMA_DEFAULT_BASE_URL),
            Self::Copilot => Some(account.default_api_base()),
            Self::Vscode => None,
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kind name that is not one of ours (or not allowed where it was given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {given:?}: expected {expected}")]
pub struct UnknownBackendKind {
    pub given: String,
    /// The names allowed there.
    pub expected: &'static str,
}

impl FromStr for BackendKind {
    type Err = UnknownBackendKind;

    /// Case and surrounding space do not matter (`OpenAI`, ` ollama `).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str().eq_ignore_ascii_case(trimmed))
            .ok_or_else(|| UnknownBackendKind {
                given: text.to_owned(),
                expected: Self::ALLOWED,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_byok_excludes_copilot() {
        for kind in BackendKind::ALL {
            assert_eq!(kind.as_str().parse::<BackendKind>(), Ok(kind));
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
        }
        assert_eq!(" OpenAI ".parse::<BackendKind>(), Ok(BackendKind::OpenAi));
        let refused = BackendKind::parse_byok("copilot").unwrap_err();
        assert_eq!(refused.expected, BackendKind::BYOK_ALLOWED);
        assert_eq!(
            BackendKind::parse_byok("Anthropic"),
            Ok(BackendKind::Anthropic)
        );
        let unknown = "gemini".parse::<BackendKind>().unwrap_err();
        assert!(unknown.to_string().contains("\"gemini\""), "{unknown}");
    }
}
