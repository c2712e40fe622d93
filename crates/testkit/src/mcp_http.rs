//! A minimal MCP client over streamable HTTP for tests of the daemon's
//! `/mcp/*`: initialize, then calls, each answer read from JSON or from the
//! SSE stream the server may choose, with the daemon's bearer token.

// A test helper: a daemon that does not answer fails the test.
#![allow(clippy::expect_used)]

use serde_json::{Value, json};

pub struct McpHttp {
    url: String,
    token: String,
    session: String,
    next_id: u64,
    http: reqwest::Client,
}

impl McpHttp {
    /// Connects to `url` (`http://…/mcp/code?…`) with `token`.
    pub async fn connect(url: &str, token: &str) -> Self {
        let mut client = Self {
            url: url.to_owned(),
            token: token.to_owned(),
            session: String::new(),
            next_id: 1,
            http: reqwest::Client::new(),
        };
        let (answer, session) = client
            .post(json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bridge-testkit", "version": "1"}}
            }))
            .await;
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        client.session = session.expect("the server names its MCP session");
        client
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn post(&self, body: Value) -> (Value, Option<String>) {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session);
        }
        let response = request.send().await.expect("the daemon answers");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap_or_default();
        let json_text = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.starts_with('{'))
            .unwrap_or(text.trim());
        (
            serde_json::from_str(json_text).unwrap_or(Value::Null),
            session,
        )
    }

    /// `tools/call`: the whole JSON-RPC answer, as text.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> String {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        self.post(body).await.0.to_string()
    }

    /// `tools/call` with `_meta` (e.g. a `traceparent`): the whole answer.
    pub async fn call_with_meta(&mut self, tool: &str, arguments: Value, meta: Value) -> String {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments, "_meta": meta}});
        self.post(body).await.0.to_string()
    }

    /// `tools/list`: the tools' names.
    pub async fn tool_names(&mut self) -> Vec<String> {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/list"});
        let answer = self.post(body).await.0;
        answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {answer}"))
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect()
    }
}
