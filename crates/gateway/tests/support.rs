//! A real gateway on a real loopback port, for conformance tests.

use std::sync::Arc;
use std::time::Duration;

use bridge_engine::{
    CallOrigin, CallOutcome, RegistrySettings, Session, SessionDefaults, SessionRegistry,
    SessionSpec,
};
use bridge_gateway::{Gateway, GatewaySettings};
use bridge_testkit::{ProviderClient, TempWorkspace};
use serde_json::Value;

pub struct TestGateway {
    pub gateway: Gateway,
    pub url: String,
    pub workspace: TempWorkspace,
    pub state_dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Settings with the spec's limits and short timeouts, so timeout rows run
/// in milliseconds.
pub fn fast_settings() -> GatewaySettings {
    GatewaySettings {
        default_tool_timeout: Duration::from_secs(5),
        auth_timeout: Duration::from_secs(5),
        ..GatewaySettings::default()
    }
}

pub fn fast_registry_settings() -> RegistrySettings {
    RegistrySettings {
        gate_timeout: Duration::from_millis(300),
        transform_timeout: Duration::from_millis(300),
        shutdown_deadline: Duration::from_millis(500),
    }
}

impl TestGateway {
    pub async fn start() -> Self {
        Self::start_with(fast_settings(), fast_registry_settings()).await
    }

    pub async fn start_with(
        settings: GatewaySettings,
        registry_settings: RegistrySettings,
    ) -> Self {
        let workspace = TempWorkspace::new();
        let state_dir = tempfile::tempdir().unwrap();
        let registry =
            SessionRegistry::new(SessionDefaults::restrictive().unwrap(), registry_settings);
        let gateway = Gateway::new(registry.clone(), settings, state_dir.path().to_path_buf());
        registry
            .create(SessionSpec {
                id: Some("default".to_owned()),
                label: "default".to_owned(),
                cwd: workspace.path().to_path_buf(),
                foreground: true,
                door: bridge_engine::Door::Rpc,
            })
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = gateway.router();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            gateway,
            url: format!("ws://127.0.0.1:{port}/"),
            workspace,
            state_dir,
            server,
        }
    }

    pub fn session(&self, id: &str) -> Arc<Session> {
        self.gateway.registry().get(id).unwrap()
    }

    /// Creates another session in a fresh workspace directory.
    pub fn create_session(&self, id: &str) -> Arc<Session> {
        let dir = self.workspace.path().join(format!("ws-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        self.gateway
            .registry()
            .create(SessionSpec {
                id: Some(id.to_owned()),
                label: format!("session {id}"),
                cwd: dir,
                foreground: false,
                door: bridge_engine::Door::Rpc,
            })
            .unwrap()
    }

    pub fn project_token(&self, session: &str) -> String {
        self.gateway.issue_project_token(session).unwrap()
    }

    /// A project provider in the default session, registered with `fields`.
    pub async fn provider(&self, name: &str, fields: Value) -> (ProviderClient, Value) {
        let token = self.project_token("default");
        ProviderClient::register(&self.url, &token, name, fields)
            .await
            .unwrap()
    }

    /// Calls a tool of a session as any door would, in the background.
    pub fn call(
        &self,
        session: &str,
        tool: &str,
        args: Value,
    ) -> tokio::task::JoinHandle<CallOutcome> {
        let session = self.session(session);
        let tool = tool.to_owned();
        tokio::spawn(async move { session.call_tool(&tool, args, CallOrigin::Rpc).await })
    }
}

/// A tool definition as providers declare it.
pub fn tool(name: &str) -> Value {
    serde_json::json!({
        "name": name,
        "description": format!("test tool {name}"),
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}
    })
}
