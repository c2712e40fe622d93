//! A streamable HTTP MCP server: the rmcp client transport with the
//! configured headers (`${VAR}` expanded).

use std::collections::HashMap;
use std::sync::Once;

use bridge_config::McpServerConfig;
use bridge_config::mcp::expand_env_references;
use http::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// rmcp's reqwest client is built without a TLS crypto provider (so aws-lc
/// is not compiled in); ring is installed as the process default unless
/// something else already installed one.
fn ensure_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub(crate) fn transport(
    config: &McpServerConfig,
    lookup_env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<impl rmcp::transport::Transport<rmcp::RoleClient> + 'static, String> {
    ensure_crypto_provider();
    let url = config.url.as_deref().ok_or("no url configured")?;
    let mut headers = HashMap::new();
    let mut auth_header = None;
    for (name, template) in &config.headers {
        let value = expand_env_references(template, lookup_env)
            .map_err(|reason| format!("header {name}: {reason}"))?;
        if name.eq_ignore_ascii_case("authorization") {
            // rmcp sends `Authorization: Bearer <token>` itself; a configured
            // value in another scheme goes out as written.
            if let Some(token) = value.strip_prefix("Bearer ") {
                auth_header = Some(token.to_owned());
                continue;
            }
        }
        let header =
            HeaderName::try_from(name.as_str()).map_err(|err| format!("header {name:?}: {err}"))?;
        let value = HeaderValue::try_from(value)
            .map_err(|err| format!("header {name}: not a valid header value ({err})"))?;
        headers.insert(header, value);
    }
    let mut settings = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    settings.custom_headers = headers;
    settings.auth_header = auth_header;
    Ok(StreamableHttpClientTransport::from_config(settings))
}
