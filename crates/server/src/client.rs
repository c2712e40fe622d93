//! Finding a running daemon and calling its `/rpc`, for the CLI and for a
//! second `serve` that must not start twice.

use std::path::Path;
use std::time::Duration;

use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};

use crate::process;
use crate::state_file::GatewayFile;

/// What `/healthz` calls this daemon, to tell it from other programs.
pub const SERVICE: &str = "copilot-bridge";

/// How long a health probe may take before the daemon counts as not running.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a call to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum RpcCallError {
    #[error("cannot reach the gateway at {address}: {reason}")]
    Unreachable { address: String, reason: String },
    #[error("the gateway answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("{}", .0.message)]
    Rpc(ErrorObject),
    #[error("the gateway sent an answer that is not JSON-RPC: {0}")]
    BadResponse(String),
}

/// A running daemon, as described by its `gateway.json`.
#[derive(Debug, Clone)]
pub struct GatewayClient {
    file: GatewayFile,
    http: reqwest::Client,
}

/// The daemon of `home`, if one is running: `gateway.json` exists, its pid is
/// alive and `/healthz` on its port answers as that pid.
pub async fn find_running(home: &Path) -> Option<GatewayClient> {
    // A file of a few hundred bytes, read at once: a thread of the
    // blocking pool to read it cost a `hook` call more than the read.
    let file = GatewayFile::read(home)?;
    if !process::is_alive(file.pid) {
        return None;
    }
    let client = GatewayClient::new(file).ok()?;
    let health = client.identity().await.ok()?;
    // Another program may have the port now and answer `/healthz` too; only
    // our own daemon, answering as the pid of the file, counts. Anything
    // less and `daemon stop` could signal an unrelated process that reused
    // the pid, and every command would send the bearer token to a stranger.
    (is_our_daemon(&health) && health["pid"].as_u64() == Some(u64::from(client.file.pid)))
        .then_some(client)
}

/// `/healthz` as the copilot-bridge daemon answers it.
pub(crate) fn is_our_daemon(health: &Value) -> bool {
    health["ok"] == true && health["service"] == SERVICE
}

impl GatewayClient {
    pub fn new(file: GatewayFile) -> Result<Self, RpcCallError> {
        // The daemon is plain HTTP on loopback: a proxy from the environment
        // must not see the token, nor a redirect take it elsewhere, and no
        // certificate store need be built (every `hook` call paid for one).
        let http = reqwest::Client::builder()
            .no_proxy()
            .tls_built_in_root_certs(false)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|err| RpcCallError::Unreachable {
                address: file.address(),
                reason: err.to_string(),
            })?;
        Ok(Self { file, http })
    }

    /// The same daemon, called with `token` instead of `gateway.json`'s
    /// (the approver token, docs/approvals.md).
    pub fn with_token(mut self, token: String) -> Self {
        self.file.token = token;
        self
    }

    pub fn file(&self) -> &GatewayFile {
        &self.file
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        self.file.address()
    }

    fn unreachable(&self, err: &reqwest::Error) -> RpcCallError {
        RpcCallError::Unreachable {
            address: self.address(),
            reason: err.to_string(),
        }
    }

    /// `GET /healthz` without the backends' health: who answers on the
    /// port (`service`, `pid`, `version`), not waiting for a backend's
    /// probe nor starting one.
    pub async fn identity(&self) -> Result<Value, RpcCallError> {
        let url = self.file.http_url("/healthz?backends=false");
        self.json_of(self.http.get(url).timeout(HEALTH_TIMEOUT))
            .await
    }

    /// `GET /v1/models`: each model the facade serves, with the backend
    /// that serves it.
    pub async fn models(&self) -> Result<Vec<(String, String)>, RpcCallError> {
        let url = self.file.http_url("/v1/models");
        let body = self
            .json_of(self.http.get(url).bearer_auth(&self.file.token))
            .await?;
        let listed = body["data"].as_array().cloned().unwrap_or_default();
        Ok(listed
            .iter()
            .filter_map(|model| {
                let id = model["id"].as_str()?;
                let backend = model["owned_by"].as_str().unwrap_or_default();
                Some((id.to_owned(), backend.to_owned()))
            })
            .collect())
    }

    /// The JSON answer to `request`; an error status is an error.
    async fn json_of(&self, request: reqwest::RequestBuilder) -> Result<Value, RpcCallError> {
        let response = request.send().await.map_err(|err| self.unreachable(&err))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|err| RpcCallError::BadResponse(err.to_string()))?;
        if !status.is_success() {
            return Err(RpcCallError::Http {
                status: status.as_u16(),
                message: body.to_string(),
            });
        }
        Ok(body)
    }

    /// One JSON-RPC call over `POST /rpc`.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, RpcCallError> {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = self
            .http
            .post(self.file.http_url("/rpc"))
            .bearer_auth(&self.file.token)
            .json(&request)
            .send()
            .await
            .map_err(|err| self.unreachable(&err))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|err| self.unreachable(&err))?;
        let body: Value = serde_json::from_str(&text).map_err(|_| {
            if status.is_success() {
                RpcCallError::BadResponse(bridge_policy::redact::shorten(&text, 200))
            } else {
                RpcCallError::Http {
                    status: status.as_u16(),
                    message: bridge_policy::redact::shorten(&text, 200),
                }
            }
        })?;
        if let Some(error) = body
            .get("error")
            .filter(|e| e.get("code").is_some_and(Value::is_i64))
        {
            let error: ErrorObject = serde_json::from_value(error.clone())
                .map_err(|err| RpcCallError::BadResponse(err.to_string()))?;
            return Err(RpcCallError::Rpc(error));
        }
        if !status.is_success() {
            let message = body["error"]["message"]
                .as_str()
                .map_or_else(|| body.to_string(), str::to_owned);
            return Err(RpcCallError::Http {
                status: status.as_u16(),
                message,
            });
        }
        body.get("result")
            .cloned()
            .ok_or_else(|| RpcCallError::BadResponse(body.to_string()))
    }
}
