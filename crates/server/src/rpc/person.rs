//! Methods for the person at the machine beyond the approval queue, each
//! answered only to the approver token: the dashboard's login link
//! (`ui.login`) and the configuration in force (`bridge.config`).

use serde_json::json;

use super::approvals::approver_only;
use super::{MethodTable, Params, RpcResult};
use crate::app::ServerContext;

pub fn register(table: &mut MethodTable) {
    table.insert("ui.login", ui_login);
    table.insert("bridge.config", bridge_config);
}

/// `ui.login`: a one-time URL that logs a browser in to the dashboard
/// (`copilot-bridge ui`). Approver only: the dashboard answers approvals.
async fn ui_login(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "ui.login")?;
    params.only(&[])?;
    let code = ctx.ui.mint_code();
    let host = match ctx.facts.connect_host {
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    Ok(json!({
        "url": format!("http://{host}:{}/ui/login?code={code}", ctx.facts.port),
        "expiresInSecs": crate::ui::auth::CODE_TTL.as_secs(),
    }))
}

/// `bridge.config`: the configuration in force, as `config show --json`
/// prints it (every value with its source, secrets redacted), and the
/// state of its file. Approver only: the paths and rules it shows are the
/// person's to see, not an agent's.
async fn bridge_config(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "bridge.config")?;
    params.only(&[])?;
    Ok(ctx.config.redacted())
}
