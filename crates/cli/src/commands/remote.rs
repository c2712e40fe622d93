//! Commands that talk to the running daemon over `/rpc`: `provider-token`,
//! `pair`, and `tool --session`.

use std::process::ExitCode;

use bridge_config::BridgeConfig;
use bridge_protocol::jsonrpc::INVALID_PARAMS;
use bridge_server::rpc::{POLICY_DENIED, SESSION_NOT_FOUND};
use bridge_server::{GatewayClient, RpcCallError, find_running};
use serde_json::{Value, json};

use super::tool::{print_json, write_stdout};
use crate::args::ProviderTokenArgs;
use crate::exit::{self, Failure};

pub const NO_DAEMON: &str = "no gateway is running; start one with `copilot-bridge serve`";

/// The running daemon of this state directory, or the failure that says how
/// to start one.
pub async fn connect(config: &BridgeConfig) -> Result<GatewayClient, Failure> {
    find_running(&config.home)
        .await
        .ok_or_else(|| Failure::new(exit::FAILED, NO_DAEMON))
}

/// A failed call that is not a tool's own failure.
pub fn call_failure(method: &str, err: &RpcCallError) -> Failure {
    let code = match err {
        RpcCallError::Rpc(error)
            if error.code == INVALID_PARAMS || error.code == SESSION_NOT_FOUND =>
        {
            exit::USAGE
        }
        _ => exit::FAILED,
    };
    Failure::new(code, format!("{method}: {err}"))
}

pub async fn provider_token(
    config: &BridgeConfig,
    args: ProviderTokenArgs,
) -> Result<ExitCode, Failure> {
    let client = connect(config).await?;
    let params = match &args.session {
        Some(session) => json!({"session": session}),
        None => json!({}),
    };
    let minted = client
        .call("gateway.providerToken", params)
        .await
        .map_err(|err| call_failure("gateway.providerToken", &err))?;
    let token = minted["token"]
        .as_str()
        .ok_or_else(|| Failure::internal("gateway.providerToken returned no token"))?;
    write_stdout(&format!("{token}\n"))?;
    Ok(ExitCode::SUCCESS)
}

pub async fn pair(config: &BridgeConfig) -> Result<ExitCode, Failure> {
    let client = connect(config).await?;
    let pairings = client
        .call("gateway.pairings", json!({}))
        .await
        .map_err(|err| call_failure("gateway.pairings", &err))?;
    let pairings = pairings.as_array().cloned().unwrap_or_default();
    if pairings.is_empty() {
        write_stdout("no pairing requests are waiting\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!(
        "{:8} {:24} {:>6}  {}\n",
        "CODE", "SESSION", "AGE", "REQUESTED BY"
    );
    for pairing in &pairings {
        out.push_str(&format!(
            "{:8} {:24} {:>5}s  {}\n",
            pairing["code"].as_str().unwrap_or("?"),
            pairing["sessionId"].as_str().unwrap_or("?"),
            pairing["ageSecs"].as_u64().unwrap_or(0),
            pairing["requestedBy"].as_str().unwrap_or("?"),
        ));
    }
    out.push_str(
        "Type a code into the provider that asked for it only if you trust it with that session.\n",
    );
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `tool NAME --session ID`: the call goes through the daemon's session, so
/// provider tools, rules and gates apply. Output and exit codes match the
/// local `tool` command.
pub async fn tool(
    config: &BridgeConfig,
    session: &str,
    name: &str,
    arguments: Value,
    compact: bool,
) -> Result<ExitCode, Failure> {
    let client = connect(config).await?;
    let params = json!({"session": session, "name": name, "arguments": arguments});
    match client.call("session.tools.call", params).await {
        Ok(answer) => {
            for line in answer["context"].as_array().into_iter().flatten() {
                if let Some(text) = line.as_str() {
                    tracing::info!("context: {text}");
                }
            }
            let result = answer.get("result").cloned().unwrap_or(Value::Null);
            print_json(&result, compact)?;
            if result.get("ok") == Some(&Value::Bool(false)) {
                Ok(ExitCode::from(exit::FAILED))
            } else {
                Ok(ExitCode::SUCCESS)
            }
        }
        Err(RpcCallError::Rpc(error)) => {
            let data = error.data.clone().unwrap_or(Value::Null);
            let tool_code = data["code"].as_str().unwrap_or_default();
            let code = if error.code == POLICY_DENIED {
                exit::DENIED
            } else if matches!(tool_code, "unknown_tool" | "invalid_arguments")
                || error.code == INVALID_PARAMS
                || error.code == SESSION_NOT_FOUND
            {
                exit::USAGE
            } else {
                exit::FAILED
            };
            let mut body = json!({
                "code": if tool_code.is_empty() { json!(error.code) } else { json!(tool_code) },
                "message": data["message"].as_str().unwrap_or(&error.message),
            });
            if let Some(details) = data.get("details") {
                body["details"] = details.clone();
            }
            let hint = if tool_code == "unknown_tool" {
                format!(" (see the session's tools: session.tools.list, session {session})")
            } else {
                String::new()
            };
            Err(Failure::new(code, format!("{}{hint}", error.message))
                .with_json(json!({"error": body})))
        }
        Err(other) => Err(call_failure("session.tools.call", &other)),
    }
}
