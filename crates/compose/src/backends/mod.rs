//! The chat backends of a daemon (what the facade serves, what its tasks
//! run on), which one answers a request, and whether each is up.
//!
//! Routing a request (docs/facade.md, "Model routing"):
//! 1. `model` is `NAME/MODEL` where `NAME` is a backend's name → that
//!    backend, `MODEL`;
//! 2. the `[models]` routes for classes of requests: `long_context` (an
//!    input estimated over `long_context_tokens`), `background` (a
//!    haiku-class model asked for), `think` (thinking asked for);
//! 3. `[models.map]`: the requested name, exactly, then by glob;
//! 4. a model a backend lists (configured `models`, or learnt from its
//!    model listing) → that backend;
//! 5. `[models] default`, else the default backend: with the requested
//!    model if it serves it, else with its own configured model (unless
//!    `[models] strict_models`), see `serving.rs`.
//!
//! Model ids may contain `/` themselves (`meta-llama/Llama-3`), so rule 1
//! applies only when the prefix names a backend.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bridge_config::{ModelRoutes, ModelTarget};
use bridge_llm::ChatBackend;

mod build;
mod serving;

pub use build::build_backends;

/// How a backend takes a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptStyle {
    /// Messages pass through natively, tools and unknown fields included.
    #[default]
    Chat,
    /// One prompt: the latest system message and the last `turns`
    /// user/assistant turns in the `[SYSTEM]` / `[DIALOG]` layout.
    SinglePrompt { turns: usize },
}

/// One configured backend.
pub struct BackendEntry {
    /// The name clients route by (`openai`, or the `[backends.NAME]` key).
    pub name: String,
    /// `openai`, `azure`, `anthropic`, `copilot`, `ollama`.
    pub kind: bridge_llm::BackendKind,
    pub backend: Arc<dyn ChatBackend>,
    /// Where it is reached (no credentials in it).
    pub base_url: String,
    /// The model used when a request names none.
    pub default_model: Option<String>,
    /// Models known without asking the backend (configuration).
    pub models: Vec<String>,
    pub style: PromptStyle,
    /// For a backend that exists only while something is connected (the
    /// `vscode` backend: an editor): whether it is there now. Status and
    /// health list only backends that are there; routing to one that is not
    /// answers with its own error.
    pub presence: Option<Presence>,
}

/// Whether a backend is there now.
pub type Presence = Arc<dyn Fn() -> bool + Send + Sync>;

impl BackendEntry {
    /// Whether the backend knows its availability at once, without asking
    /// an upstream (the `vscode` backend: an editor is connected or not).
    /// Its health is never served from the probe cache.
    pub fn answers_locally(&self) -> bool {
        self.kind == bridge_llm::BackendKind::Vscode
    }

    /// Listed in status and health now (see [`Self::presence`]).
    pub fn is_listed(&self) -> bool {
        self.presence.as_ref().is_none_or(|present| present())
    }
}

impl std::fmt::Debug for BackendEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendEntry")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("default_model", &self.default_model)
            .field("models", &self.models)
            .field("style", &self.style)
            .finish_non_exhaustive()
    }
}

/// Where a request goes.
#[derive(Debug, Clone)]
pub struct Route {
    pub entry: Arc<BackendEntry>,
    /// The model to ask for (`None`: the backend's default).
    pub model: Option<String>,
    /// Which rule chose it (`map "claude-*"`, `think`, …), for the log.
    pub rule: String,
    /// The requested model was passed on by the last rule without knowing
    /// whether the backend serves it; [`Backends::settle`] finds out.
    pub unsettled: bool,
}

/// What routing looks at in a request.
#[derive(Debug, Clone, Copy, Default)]
pub struct RouteRequest<'a> {
    pub model: Option<&'a str>,
    /// The client asked for thinking (Anthropic `thinking`, OpenAI
    /// `reasoning` / `reasoning_effort`).
    pub thinking: bool,
    /// The input's size, estimated.
    pub input_tokens: u64,
}

/// Why a request cannot be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error(
        "no chat backend is configured; see docs/backends/ (COPILOT_BYOK_PROVIDER, OPENAI_API_KEY, [backends.NAME] in config.toml, …)"
    )]
    NoBackend,
    #[error(
        "the model route {rule} sends the request to the backend {backend:?}, which this daemon does not have"
    )]
    MissingBackend { rule: String, backend: String },
}

/// A backend's availability as last seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    Ok,
    Unavailable,
}

impl Availability {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Unavailable => "unavailable",
        }
    }
}

/// The backends of a daemon. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct Backends {
    entries: Vec<Arc<BackendEntry>>,
    default: Option<usize>,
    /// `[models]`; replaced while the daemon runs when config.toml changes
    /// (`set_routes`), so a request reads it once and routes by one copy.
    routes: RwLock<Arc<ModelRoutes>>,
    /// Models learnt from each backend's listing, by backend name.
    learnt: Mutex<BTreeMap<String, Vec<String>>>,
    /// Last probe of each backend, by name.
    probes: Mutex<BTreeMap<String, (Instant, Availability)>>,
    /// A background refresh of the probes is running.
    refreshing: std::sync::atomic::AtomicBool,
}

/// How long a health probe's answer is reused.
pub const PROBE_TTL: Duration = Duration::from_secs(10);
/// How long a health probe or model listing may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

impl Backends {
    /// `default` names the entry used when routing finds no better one.
    pub fn new(entries: Vec<BackendEntry>, default: Option<&str>) -> Self {
        let entries: Vec<Arc<BackendEntry>> = entries.into_iter().map(Arc::new).collect();
        let default = default.and_then(|name| entries.iter().position(|e| e.name == name));
        Self {
            entries,
            default,
            ..Self::default()
        }
    }

    pub fn entries(&self) -> &[Arc<BackendEntry>] {
        &self.entries
    }

    /// The backends status and health show: every one that is there now.
    pub fn listed(&self) -> impl Iterator<Item = &Arc<BackendEntry>> {
        self.entries.iter().filter(|entry| entry.is_listed())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn default_entry(&self) -> Option<&Arc<BackendEntry>> {
        self.default.and_then(|i| self.entries.get(i))
    }

    pub fn get(&self, name: &str) -> Option<&Arc<BackendEntry>> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// With the `[models]` routes.
    pub fn with_routes(self, routes: ModelRoutes) -> Self {
        self.set_routes(routes);
        self
    }

    /// The `[models]` routes in force.
    pub fn routes(&self) -> Arc<ModelRoutes> {
        bridge_util::sync::read(&self.routes).clone()
    }

    /// Puts `routes` in force from the next request on (config.toml was
    /// edited); a target naming no backend of this daemon is said in the
    /// log, as at start, and refuses the requests it routes.
    pub fn set_routes(&self, routes: ModelRoutes) {
        for (key, target) in routes.targets() {
            if self.get(&target.backend).is_none() {
                tracing::warn!(
                    "{key} = {:?}: this daemon has no backend {:?} (not selected or not configured); requests it routes are refused",
                    target.to_string(),
                    target.backend
                );
            }
        }
        *bridge_util::sync::write(&self.routes) = Arc::new(routes);
    }

    /// The backend and model for a request's `model` alone, settled.
    pub async fn route(&self, requested: Option<&str>) -> Result<Route, RouteError> {
        let route = self.route_request(&RouteRequest {
            model: requested,
            ..RouteRequest::default()
        })?;
        Ok(self.settle(route).await)
    }

    /// [`Self::route_request`], settled, for a request whose size is costly
    /// to estimate: `estimate_input_tokens` runs only when a `long_context`
    /// route needs it.
    pub async fn route_estimating(
        &self,
        model: Option<&str>,
        thinking: bool,
        estimate_input_tokens: impl FnOnce() -> u64,
    ) -> Result<Route, RouteError> {
        let input_tokens = if self.routes().long_context.is_some() {
            estimate_input_tokens()
        } else {
            0
        };
        let route = self.route_request(&RouteRequest {
            model,
            thinking,
            input_tokens,
        })?;
        Ok(self.settle(route).await)
    }

    /// The backend and model for a request (see the module docs).
    pub fn route_request(&self, request: &RouteRequest<'_>) -> Result<Route, RouteError> {
        let requested = request.model.map(str::trim).filter(|m| !m.is_empty());
        if let Some(model) = requested
            && let Some((prefix, rest)) = model.split_once('/')
            && let Some(entry) = self.get(prefix)
        {
            let rest = rest.trim();
            return Ok(Route {
                entry: entry.clone(),
                model: (!rest.is_empty()).then(|| rest.to_owned()),
                rule: "backend/model".to_owned(),
                unsettled: false,
            });
        }
        let routes = self.routes();
        let class = [
            (
                "long_context",
                &routes.long_context,
                request.input_tokens > routes.long_context_tokens,
            ),
            (
                "background",
                &routes.background,
                requested.is_some_and(|m| m.to_ascii_lowercase().contains("haiku")),
            ),
            ("think", &routes.think, request.thinking),
        ];
        for (rule, target, applies) in class {
            if let (Some(target), true) = (target, applies) {
                return self.to_target(rule.to_owned(), target);
            }
        }
        if let Some(model) = requested {
            if let Some(mapping) = routes.map.iter().find(|m| m.matches(model)) {
                return self.to_target(format!("map {:?}", mapping.pattern), &mapping.target);
            }
            if let Some(entry) = self.listing(model) {
                return Ok(Route {
                    entry,
                    model: Some(model.to_owned()),
                    rule: "listed".to_owned(),
                    unsettled: false,
                });
            }
        }
        if let Some(target) = &routes.default {
            return self.to_target("default".to_owned(), target);
        }
        let entry = self.default_entry().ok_or(RouteError::NoBackend)?;
        Ok(Route {
            entry: entry.clone(),
            model: requested.map(str::to_owned),
            rule: "default backend".to_owned(),
            unsettled: requested.is_some(),
        })
    }

    fn to_target(&self, rule: String, target: &ModelTarget) -> Result<Route, RouteError> {
        let Some(entry) = self.get(&target.backend) else {
            return Err(RouteError::MissingBackend {
                rule,
                backend: target.backend.clone(),
            });
        };
        Ok(Route {
            entry: entry.clone(),
            model: target.model.clone(),
            rule,
            unsettled: false,
        })
    }

    /// The backend that lists `model`, configured lists first.
    fn listing(&self, model: &str) -> Option<Arc<BackendEntry>> {
        if let Some(entry) = self
            .entries
            .iter()
            .find(|e| e.models.iter().any(|m| m == model))
        {
            return Some(entry.clone());
        }
        // In the daemon's order (the daemon's own backends last), and only
        // backends that are there: an editor that left takes its models
        // with it.
        let learnt = self.learnt.lock().ok()?;
        self.listed()
            .find(|entry| {
                learnt
                    .get(&entry.name)
                    .is_some_and(|models| models.iter().any(|m| m == model))
            })
            .cloned()
    }

    /// Every backend's models: the configured ones, else its listing
    /// (remembered for routing). A backend that cannot list its models
    /// contributes its configured default model, if any.
    pub async fn list_models(&self) -> Vec<(Arc<BackendEntry>, Vec<String>)> {
        let listings = self.entries.iter().map(|entry| async move {
            if !entry.models.is_empty() {
                return (entry.clone(), entry.models.clone());
            }
            let listed = tokio::time::timeout(PROBE_TIMEOUT, entry.backend.models()).await;
            let models = match listed {
                Ok(Ok(models)) => {
                    self.remember(&entry.name, &models, Availability::Ok);
                    models
                }
                _ => {
                    self.record(&entry.name, Availability::Unavailable);
                    entry.default_model.iter().cloned().collect()
                }
            };
            (entry.clone(), models)
        });
        futures::future::join_all(listings).await
    }

    /// Each backend's availability: a model listing within
    /// [`PROBE_TIMEOUT`], reused for [`PROBE_TTL`].
    pub async fn health(&self) -> BTreeMap<String, Availability> {
        let probes = self.listed().map(|entry| async move {
            if !entry.answers_locally()
                && let Some(seen) = self.recent(&entry.name)
            {
                return (entry.name.clone(), seen);
            }
            let listed = tokio::time::timeout(PROBE_TIMEOUT, entry.backend.models()).await;
            let seen = match listed {
                // A configured list is what routes to this backend (and what
                // `/v1/models` shows); the upstream's own is not learnt.
                Ok(Ok(models)) if entry.models.is_empty() => {
                    self.remember(&entry.name, &models, Availability::Ok);
                    Availability::Ok
                }
                Ok(Ok(_)) => Availability::Ok,
                _ => Availability::Unavailable,
            };
            self.record(&entry.name, seen);
            (entry.name.clone(), seen)
        });
        futures::future::join_all(probes)
            .await
            .into_iter()
            .collect()
    }

    /// Each backend's availability, at once from what was last seen; stale
    /// answers are refreshed in the background for the next call. Only a
    /// backend never probed is waited for, at most `wait` (then it counts
    /// as unavailable until its probe ends). Keeps `/healthz` fast whatever
    /// an upstream does.
    pub async fn health_within(self: &Arc<Self>, wait: Duration) -> BTreeMap<String, Availability> {
        let (mut known, all_fresh) = self.last_seen();
        if known.len() == self.listed().count() {
            if !all_fresh {
                self.refresh_in_background();
            }
            for entry in self.listed().filter(|e| e.answers_locally()) {
                known.insert(entry.name.clone(), self.probe_now(entry).await);
            }
            return known;
        }
        // Not deduplicated with a background refresh: this caller must be
        // able to wait for its answer. Only happens before first answers.
        let probing = tokio::spawn({
            let backends = Arc::clone(self);
            async move { backends.health().await }
        });
        if let Ok(Ok(seen)) = tokio::time::timeout(wait, probing).await {
            return seen;
        }
        let (known, _) = self.last_seen();
        self.listed()
            .map(|entry| {
                let seen = known
                    .get(&entry.name)
                    .copied()
                    .unwrap_or(Availability::Unavailable);
                (entry.name.clone(), seen)
            })
            .collect()
    }

    /// A backend that answers locally, asked now.
    async fn probe_now(&self, entry: &BackendEntry) -> Availability {
        let seen = match tokio::time::timeout(PROBE_TIMEOUT, entry.backend.models()).await {
            Ok(Ok(models)) => {
                self.remember(&entry.name, &models, Availability::Ok);
                Availability::Ok
            }
            _ => Availability::Unavailable,
        };
        self.record(&entry.name, seen);
        seen
    }

    /// What each probed backend was last seen as, and whether all of those
    /// answers are fresh.
    fn last_seen(&self) -> (BTreeMap<String, Availability>, bool) {
        let Ok(probes) = self.probes.lock() else {
            return (BTreeMap::new(), false);
        };
        let mut fresh = true;
        let seen = self
            .listed()
            .filter_map(|entry| {
                let (at, seen) = probes.get(&entry.name)?;
                fresh &= at.elapsed() < PROBE_TTL;
                Some((entry.name.clone(), *seen))
            })
            .collect();
        (seen, fresh)
    }

    /// Probes in a task of its own, unless one is already running.
    fn refresh_in_background(
        self: &Arc<Self>,
    ) -> Option<tokio::task::JoinHandle<BTreeMap<String, Availability>>> {
        use std::sync::atomic::Ordering;
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return None;
        }
        let backends = Arc::clone(self);
        Some(tokio::spawn(async move {
            let seen = backends.health().await;
            backends.refreshing.store(false, Ordering::Release);
            seen
        }))
    }

    /// Notes the outcome of a real request, so health follows what clients see.
    pub fn record(&self, name: &str, seen: Availability) {
        if let Ok(mut probes) = self.probes.lock() {
            probes.insert(name.to_owned(), (Instant::now(), seen));
        }
    }

    /// Notes what a failed request to `entry` says about it: an upstream
    /// that refused a request on its merits (4xx but 429) is up; one that
    /// could not be reached, timed out, was rate-limited, failed (5xx) or
    /// spoke nonsense is not.
    pub fn note_failure(&self, entry: &BackendEntry, err: &bridge_llm::LlmError) {
        let answered = matches!(err, bridge_llm::LlmError::Http { status, .. } if (400..500).contains(status) && *status != 429);
        let seen = if answered {
            Availability::Ok
        } else {
            Availability::Unavailable
        };
        self.record(&entry.name, seen);
    }

    fn recent(&self, name: &str) -> Option<Availability> {
        let probes = self.probes.lock().ok()?;
        probes
            .get(name)
            .filter(|(at, _)| at.elapsed() < PROBE_TTL)
            .map(|(_, seen)| *seen)
    }

    /// Keeps what backend `name` listed (at most
    /// [`serving::MAX_LISTED`] names: an upstream's listing is not trusted
    /// to be small).
    fn remember(&self, name: &str, models: &[String], seen: Availability) {
        if let Ok(mut learnt) = self.learnt.lock() {
            let kept = models.iter().take(serving::MAX_LISTED).cloned().collect();
            learnt.insert(name.to_owned(), kept);
        }
        self.record(name, seen);
    }
}
