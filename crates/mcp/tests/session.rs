//! The `session` server in-process: a real gateway with real WebSocket
//! providers, the server over streamable HTTP (as the daemon nests it) and
//! over a byte stream (as stdio), and the stdio proxy, driven by the rmcp
//! client.

use std::sync::Arc;
use std::time::Duration;

use bridge_engine::{SessionDefaults, SessionRegistry, SessionSpec};
use bridge_gateway::{Gateway, GatewaySettings};
use bridge_mcp::session::{
    DaemonEndpoint, DaemonLocator, SessionLookup, SessionProxy, SessionServer, http_service,
};
use bridge_testkit::{ProviderClient, TempWorkspace};
use rmcp::model::{CallToolRequestParams, CallToolResult, ErrorCode, Tool};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long a test waits for a notification that must come.
const WAIT: Duration = Duration::from_secs(5);

struct Fixture {
    gateway: Gateway,
    ws_url: String,
    base_url: String,
    stop: CancellationToken,
    server: tokio::task::JoinHandle<()>,
    _workspace: TempWorkspace,
    _state: tempfile::TempDir,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop.cancel();
        self.server.abort();
    }
}

impl Fixture {
    /// A gateway with the session `default` (and `other`), its provider
    /// endpoint at `/` and the session server at `/mcp/session`.
    async fn start() -> Self {
        let workspace = TempWorkspace::new();
        let state = tempfile::tempdir().unwrap();
        let registry =
            SessionRegistry::new(SessionDefaults::restrictive().unwrap(), Default::default());
        let gateway = Gateway::new(
            registry.clone(),
            GatewaySettings::default(),
            state.path().to_path_buf(),
        );
        for id in ["default", "other"] {
            let cwd = workspace.path().join(id);
            std::fs::create_dir_all(&cwd).unwrap();
            registry
                .create(SessionSpec {
                    id: Some(id.to_owned()),
                    label: id.to_owned(),
                    cwd,
                    foreground: id == "default",
                    door: bridge_engine::Door::Rpc,
                })
                .unwrap();
        }
        let lookup_registry = registry.clone();
        let lookup: SessionLookup = Arc::new(move |requested: Option<&str>| {
            let id = requested.unwrap_or("default");
            lookup_registry
                .get(id)
                .ok_or_else(|| format!("no session '{id}'"))
        });
        let stop = CancellationToken::new();
        let app = gateway
            .router()
            .nest_service("/mcp/session", http_service(lookup, stop.clone(), None));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            gateway,
            ws_url: format!("ws://127.0.0.1:{port}/"),
            base_url: format!("http://127.0.0.1:{port}"),
            stop,
            server,
            _workspace: workspace,
            _state: state,
        }
    }

    /// A project provider of `session` registered with `fields`.
    async fn provider(&self, session: &str, name: &str, fields: Value) -> ProviderClient {
        let token = self.gateway.issue_project_token(session).unwrap();
        ProviderClient::register(&self.ws_url, &token, name, fields)
            .await
            .unwrap()
            .0
    }

    fn session(&self, id: &str) -> Arc<bridge_engine::Session> {
        self.gateway.registry().get(id).unwrap()
    }

    /// An MCP client over streamable HTTP, `query` appended to the path.
    async fn http_client(&self, query: &str) -> Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = format!("{}/mcp/session{query}", self.base_url);
        Client::connect(StreamableHttpClientTransport::from_uri(url)).await
    }
}

/// A tool as providers declare it.
fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("test tool {name}"),
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }
    })
}

/// The rmcp client, recording `notifications/tools/list_changed`.
#[derive(Clone)]
struct Watcher {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

struct Client {
    running: RunningService<RoleClient, Watcher>,
    changed: mpsc::UnboundedReceiver<()>,
}

impl Client {
    async fn connect<T, E, A>(transport: T) -> Self
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let (tx, changed) = mpsc::unbounded_channel();
        let running = Watcher { changed: tx }.serve(transport).await.unwrap();
        Self { running, changed }
    }

    async fn tools(&self) -> Vec<Tool> {
        self.running.list_all_tools().await.unwrap()
    }

    async fn tool_names(&self) -> Vec<String> {
        self.tools()
            .await
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect()
    }

    async fn call(&self, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
        self.running.call_tool(params).await
    }

    /// Waits for one list-changed notification.
    async fn list_changed(&mut self) {
        tokio::time::timeout(WAIT, self.changed.recv())
            .await
            .expect("no notifications/tools/list_changed arrived")
            .unwrap();
    }

    /// Forgets notifications so far.
    fn drain(&mut self) {
        while self.changed.try_recv().is_ok() {}
    }
}

/// Runs `call` while `provider` answers its `tool.call` with `reply`
/// (fields of `tool.result`); returns the result and the arguments the
/// provider received.
async fn call_answered(
    client: &Client,
    provider: &mut ProviderClient,
    name: &str,
    args: Value,
    reply: Value,
) -> (CallToolResult, Value) {
    let call = client.call(name, args);
    let answer = async {
        let request = provider.expect("tool.call").await.unwrap();
        assert_eq!(request["tool"], name);
        let mut result = json!({"type": "tool.result", "id": request["id"]});
        result
            .as_object_mut()
            .unwrap()
            .extend(reply.as_object().unwrap().clone());
        provider.send(result).await.unwrap();
        request["args"].clone()
    };
    let (result, received) = tokio::join!(call, answer);
    (result.unwrap(), received)
}

fn text_of(result: &CallToolResult) -> String {
    let value = serde_json::to_value(&result.content).unwrap();
    value
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn invalid_params(outcome: Result<CallToolResult, ServiceError>) -> String {
    match outcome {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
            error.message.into_owned()
        }
        other => panic!("expected an invalid-params error, got {other:?}"),
    }
}

fn properties(tool: &Tool) -> Map<String, Value> {
    tool.input_schema["properties"].as_object().unwrap().clone()
}

#[tokio::test]
async fn lists_only_provider_tools_with_depth_and_calls_them_over_http() {
    let fx = Fixture::start().await;
    let mut weather = fx
        .provider("default", "weather", json!({"tools": [tool("forecast")]}))
        .await;
    let client = fx.http_client("").await;

    let tools = client.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["forecast"], "workspace tools are not served here");
    let forecast = &tools[0];
    assert_eq!(forecast.description.as_deref(), Some("test tool forecast"));
    let props = properties(forecast);
    assert_eq!(props["city"], json!({"type": "string"}));
    assert_eq!(props["_depth"]["type"], "integer");
    assert_eq!(forecast.input_schema["required"], json!(["city"]));

    let (result, received) = call_answered(
        &client,
        &mut weather,
        "forecast",
        json!({"city": "Oslo", "_depth": 1}),
        json!({"data": {"temp": 21, "sky": "clear"}}),
    )
    .await;
    assert_eq!(received, json!({"city": "Oslo"}), "_depth is not forwarded");
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"temp": 21, "sky": "clear"}))
    );
    let text: Value = serde_json::from_str(&text_of(&result)).unwrap();
    assert_eq!(text, json!({"temp": 21, "sky": "clear"}));

    // A string result is plain text.
    let (result, _) = call_answered(
        &client,
        &mut weather,
        "forecast",
        json!({"city": "Rome"}),
        json!({"data": "sunny"}),
    )
    .await;
    assert_eq!(text_of(&result), "sunny");
    assert_eq!(result.structured_content, None);
}

#[tokio::test]
async fn a_provider_failure_is_an_error_result_with_its_code() {
    let fx = Fixture::start().await;
    let mut weather = fx
        .provider("default", "weather", json!({"tools": [tool("forecast")]}))
        .await;
    let client = fx.http_client("").await;
    let (result, _) = call_answered(
        &client,
        &mut weather,
        "forecast",
        json!({"city": "Atlantis"}),
        json!({"error": "no such city: Atlantis", "errorCode": "NOT_FOUND"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), "NOT_FOUND: no such city: Atlantis");
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["error"]["code"], "NOT_FOUND");
}

#[tokio::test]
async fn bad_input_is_refused_and_the_server_keeps_serving() {
    let fx = Fixture::start().await;
    let mut weather = fx
        .provider("default", "weather", json!({"tools": [tool("forecast")]}))
        .await;
    let client = fx.http_client("").await;

    let too_deep = client
        .call("forecast", json!({"city": "Oslo", "_depth": 3}))
        .await
        .unwrap();
    assert_eq!(too_deep.is_error, Some(true));
    assert!(
        text_of(&too_deep).contains("call depth 3 reaches the limit of 3"),
        "{}",
        text_of(&too_deep)
    );

    let message = invalid_params(
        client
            .call("forecast", json!({"city": "Oslo", "_depth": "2"}))
            .await,
    );
    assert!(
        message.contains("`_depth` must be a non-negative integer, not a string"),
        "{message}"
    );
    let message = invalid_params(client.call("nowcast", json!({"city": "Oslo"})).await);
    assert!(message.contains("unknown tool 'nowcast'"), "{message}");
    let message = invalid_params(client.call("read_file", json!({"path": "x"})).await);
    assert!(
        message.contains("unknown tool 'read_file'"),
        "workspace tools are not served: {message}"
    );
    let message = invalid_params(client.call("forecast", json!({"city": 7})).await);
    assert_eq!(
        message,
        "forecast: argument `city` must be string, not integer"
    );
    let message = invalid_params(client.call("forecast", json!({})).await);
    assert_eq!(message, "forecast: missing required argument `city`");
    let huge = "x".repeat(bridge_mcp::session::MAX_ARGUMENT_BYTES + 1);
    let message = invalid_params(client.call("forecast", json!({"city": huge})).await);
    assert!(message.contains("the limit is 1048576 bytes"), "{message}");

    // None of that reached the provider; the next call works.
    let (result, received) = call_answered(
        &client,
        &mut weather,
        "forecast",
        json!({"city": "Oslo"}),
        json!({"data": "ok"}),
    )
    .await;
    assert_eq!(received, json!({"city": "Oslo"}));
    assert_eq!(text_of(&result), "ok");
}

#[tokio::test]
async fn tools_appearing_and_disappearing_are_announced() {
    let fx = Fixture::start().await;
    let mut ci = fx
        .provider("default", "ci", json!({"tools": [tool("status")]}))
        .await;
    let mut client = fx.http_client("").await;
    assert_eq!(client.tool_names().await, ["status"]);

    ci.send(json!({"type": "tools.update", "requestId": "r1", "tools": [tool("logs")]}))
        .await
        .unwrap();
    ci.expect("ack").await.unwrap();
    client.list_changed().await;
    assert_eq!(client.tool_names().await, ["logs", "status"]);

    ci.send(json!({"type": "tools.update", "requestId": "r2", "remove": ["logs"]}))
        .await
        .unwrap();
    ci.expect("ack").await.unwrap();
    client.list_changed().await;
    assert_eq!(client.tool_names().await, ["status"]);

    // A second provider arriving, then the first leaving.
    let deploy = fx
        .provider("default", "deploy", json!({"tools": [tool("ship")]}))
        .await;
    client.list_changed().await;
    assert_eq!(client.tool_names().await, ["ship", "status"]);
    ci.close().await;
    client.list_changed().await;
    assert_eq!(client.tool_names().await, ["ship"]);

    // Another session's providers are not this client's business.
    client.drain();
    let _elsewhere = fx
        .provider("other", "elsewhere", json!({"tools": [tool("far")]}))
        .await;
    assert!(
        tokio::time::timeout(Duration::from_millis(300), client.changed.recv())
            .await
            .is_err(),
        "a change in another session was announced"
    );
    drop(deploy);
}

#[tokio::test]
async fn the_session_is_chosen_by_query_and_an_unknown_one_is_an_error() {
    let fx = Fixture::start().await;
    let mut far = fx
        .provider("other", "elsewhere", json!({"tools": [tool("far")]}))
        .await;
    let _near = fx
        .provider("default", "near", json!({"tools": [tool("close_by")]}))
        .await;
    let other = fx.http_client("?session=other").await;
    assert_eq!(other.tool_names().await, ["far"]);
    let (result, _) = call_answered(
        &other,
        &mut far,
        "far",
        json!({"city": "x"}),
        json!({"data": "there"}),
    )
    .await;
    assert_eq!(text_of(&result), "there");
    let default = fx.http_client("").await;
    assert_eq!(default.tool_names().await, ["close_by"]);

    let nowhere = fx.http_client("?session=nope").await;
    match nowhere.running.list_all_tools().await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(error.message, "no session 'nope'");
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn multi_instance_tools_take_target_and_list_instances_is_served() {
    let fx = Fixture::start().await;
    let mut tab_a = fx
        .provider(
            "default",
            "browser",
            json!({"instance": "tab-a", "metadata": {"title": "Inbox"}, "tools": [tool("screenshot")]}),
        )
        .await;
    let mut tab_b = fx
        .provider(
            "default",
            "browser",
            json!({"instance": "tab-b", "metadata": {"title": "Docs"}, "tools": [tool("screenshot")]}),
        )
        .await;
    let client = fx.http_client("").await;
    let tools = client.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["list_browser_instances", "screenshot"]);
    let props = properties(&tools[1]);
    let target = props["target"]["description"].as_str().unwrap();
    assert!(
        target.contains("tab-a (Inbox)") && target.contains("tab-b (Docs)"),
        "{target}"
    );
    assert!(properties(&tools[0]).contains_key("_depth"));

    let listed = client
        .call("list_browser_instances", json!({}))
        .await
        .unwrap();
    assert_eq!(listed.is_error, Some(false));
    let text = text_of(&listed);
    assert!(text.contains("tab-a") && text.contains("tab-b"), "{text}");

    let (result, received) = call_answered(
        &client,
        &mut tab_b,
        "screenshot",
        json!({"city": "x", "target": "tab-b"}),
        json!({"data": "from b"}),
    )
    .await;
    assert_eq!(text_of(&result), "from b");
    assert_eq!(received, json!({"city": "x"}), "the gateway strips target");
    tab_a
        .expect_silence(Duration::from_millis(100))
        .await
        .unwrap();
}

mod proxy;
