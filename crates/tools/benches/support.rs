//! The benches call tools the way every door does: through a session's
//! one decision path (`Session::call_tool`), over a real temp workspace.

use std::sync::Arc;

use bridge_engine::{
    CallOrigin, RegistrySettings, Session, SessionDefaults, SessionRegistry, SessionSpec,
    ToolFailure,
};
use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use serde_json::Value;

/// One session over a workspace, kept alive with its registry.
pub struct BenchSession {
    session: Arc<Session>,
    _registry: SessionRegistry,
}

impl BenchSession {
    pub fn new(ws: &TempWorkspace, read_only: bool, settings: ToolSettings) -> Self {
        let defaults = SessionDefaults {
            read_only,
            tool_settings: Arc::new(settings),
            home: Some(None),
            ..SessionDefaults::restrictive().unwrap_or_else(|err| panic!("{err}"))
        };
        let registry = SessionRegistry::new(defaults, RegistrySettings::default());
        let session = registry
            .create(SessionSpec {
                id: Some("bench".to_owned()),
                label: "bench".to_owned(),
                cwd: ws.path().to_path_buf(),
                foreground: true,
                door: bridge_engine::Door::Rpc,
            })
            .unwrap_or_else(|err| panic!("{err}"));
        Self {
            session,
            _registry: registry,
        }
    }

    pub async fn call(&self, name: &str, args: Value) -> Result<Value, ToolFailure> {
        self.session
            .call_tool(name, args, CallOrigin::Cli)
            .await
            .result
    }
}
