//! Whether a backend serves a model, and what a request for a model it does
//! not serve gets (docs/facade.md, "Which backend answers", rule 5).
//!
//! A backend serves its configured `model` and `models`, and what its own
//! model listing names; the listing is fetched on first need (within
//! [`PROBE_TIMEOUT`](super::PROBE_TIMEOUT), at most [`MAX_LISTED`] names
//! kept) and remembered like the one health probes learn. A backend whose
//! listing cannot be had serves only its configured models. A request the
//! default backend does not serve goes to its configured model instead:
//! agents send their own vendors' names (Claude Code's `claude-sonnet-…`),
//! which an Ollama or vLLM server refuses.

use super::{Availability, BackendEntry, Backends, PROBE_TIMEOUT, Route};

/// The most model names kept from one backend's listing.
pub const MAX_LISTED: usize = 10_000;

impl Backends {
    /// `route` with its model settled: a model passed on by the default
    /// rule that the backend does not serve becomes the backend's own
    /// configured model (the rule says so, for the request log), unless
    /// `[models] strict_models` keeps every name as asked.
    pub async fn settle(&self, mut route: Route) -> Route {
        if !route.unsettled || self.routes().strict_models {
            route.unsettled = false;
            return route;
        }
        route.unsettled = false;
        // Azure's deployment, in the URL, is what answers; the name in the
        // body changes nothing.
        if route.entry.kind == bridge_llm::BackendKind::Azure {
            return route;
        }
        let (Some(requested), Some(configured)) = (&route.model, &route.entry.default_model) else {
            return route;
        };
        if self.serves(&route.entry, requested).await {
            return route;
        }
        route.rule = format!("default backend; it serves no {requested:?}");
        route.model = Some(configured.clone());
        route
    }

    /// Whether `entry` serves `model` (see the module docs).
    pub async fn serves(&self, entry: &BackendEntry, model: &str) -> bool {
        if entry.default_model.as_deref() == Some(model) || entry.models.iter().any(|m| m == model)
        {
            return true;
        }
        if !entry.models.is_empty() {
            return false;
        }
        if let Some(listed) = self.listing_names(&entry.name, model) {
            return listed;
        }
        // Asked again only once a failed listing's answer is stale.
        if self.recent(&entry.name) == Some(Availability::Unavailable) {
            return false;
        }
        match tokio::time::timeout(PROBE_TIMEOUT, entry.backend.models()).await {
            Ok(Ok(listed)) => {
                self.remember(&entry.name, &listed, Availability::Ok);
                self.listing_names(&entry.name, model).unwrap_or(false)
            }
            Ok(Err(err)) => {
                tracing::debug!(backend = %entry.name, error = %err, "model listing failed");
                self.record(&entry.name, Availability::Unavailable);
                false
            }
            Err(_) => {
                self.record(&entry.name, Availability::Unavailable);
                false
            }
        }
    }

    /// Whether the listing learnt from backend `name` names `model`;
    /// `None` when none was learnt.
    fn listing_names(&self, name: &str, model: &str) -> Option<bool> {
        let learnt = self.learnt.lock().ok()?;
        learnt
            .get(name)
            .map(|listed| listed.iter().any(|m| m == model))
    }
}
