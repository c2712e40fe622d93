//! The native agentic loop at engine level: a real `NativeRunner` over the
//! OpenAI-compatible backend talking HTTP to `MockLlm`, real sessions on a
//! temporary workspace, provider-like tools registered into the session,
//! with and without an event log. What `copilot-bridge run` end-to-end
//! tests (crates/cli/tests/cli_run.rs) already cover is not repeated.

mod limits;
mod prompt;
mod tools;
mod upstream;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_engine::log::{EventLog, LoggedEvent, replay};
use bridge_engine::runner::native::{NativeRunner, NativeSettings};
use bridge_engine::runner::{RunContext, RunReport, RunRequest, Runner};
use bridge_engine::{
    RegistrySettings, Session, SessionDefaults, SessionRegistry, SessionSpec, ToolEntry,
    ToolFailure, ToolHandler, ToolInvocation, ToolOwner,
};
use bridge_llm::{ChatBackend, OpenAiBackend, OpenAiConfig};
use bridge_protocol::{ToolEffect, ToolSpec};
use bridge_testkit::{MockLlm, TempWorkspace};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// The OpenAI-compatible backend aimed at the mock, without the retrying
/// wrapper: tests of the loop's own retries must not see the backend's.
pub(crate) fn backend(mock: &MockLlm) -> Arc<dyn ChatBackend> {
    let mut config = OpenAiConfig::new("mock", format!("{}/v1", mock.base_url()), "gpt-4o-mini");
    config.request_timeout = Duration::from_secs(2);
    config.idle_timeout = Duration::from_secs(2);
    Arc::new(OpenAiBackend::new(config).unwrap())
}

/// Short limits, so a test that goes wrong fails in seconds.
pub(crate) fn fast_settings() -> NativeSettings {
    NativeSettings {
        tool_timeout: Duration::from_secs(2),
        model_idle_timeout: Duration::from_secs(2),
        retry_base_delay: Duration::from_millis(5),
        ..NativeSettings::default()
    }
}

fn runner(mock: &MockLlm, settings: NativeSettings) -> NativeRunner {
    NativeRunner::new(backend(mock), settings)
}

/// A session on `workspace`; the registry is returned so it outlives the
/// test's use of the session.
pub(crate) fn new_session(workspace: &TempWorkspace) -> (SessionRegistry, Arc<Session>) {
    let registry = SessionRegistry::new(
        SessionDefaults::restrictive().unwrap(),
        RegistrySettings {
            gate_timeout: Duration::from_millis(500),
            transform_timeout: Duration::from_millis(500),
            shutdown_deadline: Duration::from_millis(500),
        },
    );
    let session = registry
        .create(SessionSpec {
            id: Some("native-test".to_owned()),
            label: "native".to_owned(),
            cwd: workspace.path().to_path_buf(),
            foreground: true,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap();
    (registry, session)
}

fn request(task: &str) -> RunRequest {
    RunRequest {
        task: task.to_owned(),
        model: None,
        max_turns: 10,
        timeout: Some(Duration::from_secs(10)),
    }
}

async fn run(runner: &NativeRunner, session: &Arc<Session>, request: RunRequest) -> RunReport {
    runner
        .run(
            Arc::clone(session),
            request,
            RunContext::new(CancellationToken::new()),
        )
        .await
}

/// A session log in a temporary directory.
struct Logged {
    _dir: TempDir,
    log: EventLog,
}

impl Logged {
    async fn new() -> Self {
        let dir = TempDir::new().unwrap();
        let log = EventLog::create(&dir.path().join("sessions"), "native-test", json!({}))
            .await
            .unwrap();
        Self { _dir: dir, log }
    }

    fn context(&self, cancel: CancellationToken) -> RunContext {
        RunContext::new(cancel).with_log(self.log.clone())
    }

    fn path(&self) -> PathBuf {
        self.log.path().to_path_buf()
    }

    /// Every durable event as the file holds it; each line must parse.
    async fn events(&self) -> Vec<LoggedEvent> {
        self.log.flush().await.unwrap();
        replay(&self.path())
            .unwrap()
            .map(|event| event.unwrap_or_else(|err| panic!("unreadable log line: {err}")))
            .collect()
    }
}

fn kinds(events: &[LoggedEvent]) -> Vec<&str> {
    events.iter().map(|event| event.kind.as_str()).collect()
}

fn of_kind<'a>(events: &'a [LoggedEvent], kind: &str) -> Vec<&'a LoggedEvent> {
    events.iter().filter(|event| event.kind == kind).collect()
}

/// `hook.end` data of `hook`, in order.
fn hook_ends<'a>(events: &'a [LoggedEvent], hook: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event.kind == "hook.end" && event.data["hook"] == hook)
        .map(|event| &event.data)
        .collect()
}

/// The chat request bodies the mock received, in order.
fn chats(mock: &MockLlm) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|request| request.path.ends_with("/chat/completions"))
        .map(|request| request.body)
        .collect()
}

/// `(tool_call_id, content)` of every tool message of a chat request.
fn tool_messages(chat: &Value) -> Vec<(String, String)> {
    chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The text of the system message of a chat request.
fn system_text(chat: &Value) -> String {
    let first = &chat["messages"][0];
    assert_eq!(first["role"], "system", "{chat}");
    first["content"].as_str().unwrap().to_owned()
}

type Behaviour =
    Arc<dyn Fn(ToolInvocation) -> BoxFuture<'static, Result<Value, ToolFailure>> + Send + Sync>;

/// A provider-like tool whose behaviour is a closure.
struct FnTool(Behaviour);

#[async_trait]
impl ToolHandler for FnTool {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        (self.0)(invocation).await
    }
}

/// Registers `name` as a tool of provider "probe" in `session`.
fn register<F, Fut>(session: &Session, name: &str, effect: ToolEffect, behaviour: F)
where
    F: Fn(ToolInvocation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolFailure>> + Send + 'static,
{
    let behaviour: Behaviour = Arc::new(move |invocation| Box::pin(behaviour(invocation)));
    session
        .register_tools(
            &ToolOwner::Provider("probe".to_owned()),
            vec![ToolEntry {
                spec: ToolSpec {
                    name: name.to_owned(),
                    description: format!("test tool {name}"),
                    input_schema: json!({"type": "object"}),
                    effect,
                },
                owner: ToolOwner::Provider("probe".to_owned()),
                handler: Arc::new(FnTool(behaviour)),
            }],
        )
        .unwrap();
}
