//! Each chat backend the daemon would serve (`bridge_compose::build_backends`:
//! the auto-selected one and every `[backends.NAME]`), asked for its model
//! listing within [`bridge_compose::backends::PROBE_TIMEOUT`] as the
//! daemon's own health probe does (crates/compose/src/backends/mod.rs):
//! reachable, and taking its key.

use std::sync::Arc;

use bridge_compose::backends::{BackendEntry, PROBE_TIMEOUT};
use bridge_config::BridgeConfig;
use bridge_llm::LlmError;

use super::{Check, NETWORK_TIMEOUT};
use crate::commands::validate::is_auth_failure;

pub(super) async fn checks(config: &BridgeConfig) -> Vec<Check> {
    let built = tokio::time::timeout(
        NETWORK_TIMEOUT,
        bridge_compose::build_backends(config, Vec::new()),
    )
    .await;
    let Ok(backends) = built else {
        return vec![Check::fail(
            "backends",
            format!(
                "choosing the chat backend took over {} s",
                NETWORK_TIMEOUT.as_secs()
            ),
            "copilot-bridge validate (it shows which backend is chosen and why)",
        )];
    };
    if backends.is_empty() {
        return vec![Check::warn(
            "backends",
            "no chat backend: the facade, `run` and `chat` have no model to ask",
            "set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add a [backends.NAME] table to config.toml (see docs/backends/)",
        )];
    }
    let default = backends.default_entry().map(|entry| entry.name.clone());
    let probes: Vec<_> = backends
        .entries()
        .iter()
        .map(|entry| {
            let entry = Arc::clone(entry);
            let configured = config.backends.iter().find(|b| b.name == entry.name);
            let fix = key_fix(&entry, configured);
            let is_default = default.as_deref() == Some(entry.name.as_str());
            tokio::spawn(async move { probe(&entry, is_default, fix).await })
        })
        .collect();
    let mut checks = Vec::new();
    for probe in probes {
        if let Ok(check) = probe.await {
            checks.push(check);
        }
    }
    checks
}

/// Where the key of `entry` is set: its `[backends.NAME]` table, or the
/// variable it was auto-selected by.
fn key_fix(entry: &BackendEntry, configured: Option<&bridge_config::BackendConfig>) -> String {
    match configured {
        Some(table) => match &table.api_key_env {
            Some(variable) => format!(
                "set {variable} to a valid key for {} ([backends.{}] api_key_env in config.toml)",
                entry.base_url, entry.name
            ),
            None => format!(
                "set a valid api_key (or api_key_env) in [backends.{}] of config.toml",
                entry.name
            ),
        },
        None => format!(
            "set a valid key in the variable the {} backend was chosen by (`copilot-bridge validate` says which; see docs/backends/)",
            entry.kind.as_str()
        ),
    }
}

async fn probe(entry: &BackendEntry, is_default: bool, fix: String) -> Check {
    let name = format!("backend {}", entry.name);
    let what = format!(
        "{} at {}{}",
        entry.kind.as_str(),
        entry.base_url,
        if is_default { " (default)" } else { "" }
    );
    match tokio::time::timeout(PROBE_TIMEOUT, entry.backend.models()).await {
        Ok(Ok(models)) => Check::ok(name, format!("{what}: answers, {} model(s)", models.len())),
        Ok(Err(err)) if is_auth_failure(&err) => Check::fail(
            name,
            format!("{what}: the upstream refused the key: {err}"),
            fix,
        ),
        // It answered on the merits: reachable, and the key was taken.
        Ok(Err(err @ LlmError::Http { status, .. }))
            if (400..500).contains(&status) && status != 429 =>
        {
            Check::warn(
                name,
                format!("{what}: reachable, but its model listing failed: {err}"),
                "copilot-bridge validate (one tiny chat through it)",
            )
        }
        Ok(Err(err)) => Check::fail(
            name,
            format!("{what}: unreachable: {err}"),
            format!(
                "start the upstream at {} or correct its base_url (see docs/backends/)",
                entry.base_url
            ),
        ),
        Err(_) => Check::fail(
            name,
            format!("{what}: no answer within {} s", PROBE_TIMEOUT.as_secs()),
            format!(
                "start the upstream at {} or correct its base_url (see docs/backends/)",
                entry.base_url
            ),
        ),
    }
}
