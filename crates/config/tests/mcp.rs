//! `[mcp.servers.NAME]`: parsed, validated at load with errors naming the
//! server and key, and shown with secrets redacted.

use std::fs;

use bridge_config::{ConfigError, ConfigLoader, McpTransport};
use tempfile::TempDir;

fn load(config_toml: &str) -> Result<bridge_config::BridgeConfig, ConfigError> {
    let home = TempDir::new().unwrap();
    fs::write(home.path().join("config.toml"), config_toml).unwrap();
    ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", home.path().display().to_string())])
        .cwd(home.path())
        .load()
}

fn error_text(config_toml: &str) -> String {
    load(config_toml)
        .expect_err("configuration must be refused")
        .to_string()
}

#[test]
fn stdio_and_http_servers_load_with_defaults_and_inferred_types() {
    let config = load(
        r#"
[mcp.servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }
tools = ["list_issues", "search_*"]

[mcp.servers.docs]
url = "https://docs.example.com/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
exclude_tools = ["delete_*"]
timeout_secs = 5
enabled = false

[mcp.servers.legacy]
type = "local"
command = "server"
cwd = "sub/dir"
"#,
    )
    .unwrap();
    let servers = &config.mcp.servers;
    assert_eq!(servers.len(), 3);
    let github = &servers["github"];
    assert_eq!(github.transport(), McpTransport::Stdio);
    assert_eq!(github.timeout_secs, 60);
    assert!(github.enabled);
    assert_eq!(github.tools, ["list_issues", "search_*"]);
    let docs = &servers["docs"];
    assert_eq!(docs.transport(), McpTransport::Http);
    assert_eq!(docs.timeout_secs, 5);
    assert!(!docs.enabled);
    let legacy = &servers["legacy"];
    assert_eq!(legacy.transport(), McpTransport::Stdio);
    let cwd = legacy.cwd.as_ref().unwrap();
    assert!(cwd.is_absolute() && cwd.ends_with("sub/dir"), "{cwd:?}");
}

#[test]
fn bad_server_entries_are_refused_naming_server_and_key() {
    let cases = [
        (
            "[mcp.servers.\"my.server\"]\ncommand = \"x\"\n",
            "mcp.servers.my.server: server name \"my.server\" contains '.'",
        ),
        ("[mcp.servers.a__b]\ncommand = \"x\"\n", "contains \"__\""),
        (
            &format!("[mcp.servers.{}]\ncommand = \"x\"\n", "s".repeat(62)),
            "longer than 61 characters",
        ),
        (
            "[mcp.servers.x]\nargs = [\"a\"]\n",
            "a stdio server needs `command`",
        ),
        (
            "[mcp.servers.x]\ntype = \"http\"\n",
            "an http server needs `url`",
        ),
        (
            "[mcp.servers.x]\nurl = \"ftp://host\"\n",
            "mcp.servers.x.url \"ftp://host\": expected an http:// or https:// URL",
        ),
        (
            "[mcp.servers.x]\ntype = \"http\"\nurl = \"http://h/mcp\"\ncommand = \"c\"\n",
            "belong to stdio servers",
        ),
        (
            "[mcp.servers.x]\ntype = \"sse\"\nurl = \"http://h\"\n",
            "unknown variant `sse`",
        ),
        (
            "[mcp.servers.x]\ncommand = \"c\"\nport = 3\n",
            "unknown field `port`",
        ),
        (
            "[mcp.servers.x]\ncommand = \"c\"\nenv = { A = \"${not valid}\" }\n",
            "mcp.servers.x.env.A: \"${not valid}\" is not a variable reference",
        ),
        (
            "[mcp.servers.x]\ncommand = \"c\"\nenv = { A = \"${OPEN\" }\n",
            "unterminated",
        ),
        (
            "[mcp.servers.x]\ncommand = \"c\"\ntools = [\"a[\"]\n",
            "mcp.servers.x.tools: \"a[\" is not a valid pattern",
        ),
        (
            "[mcp.servers.x]\ncommand = \"c\"\ntimeout_secs = 0\n",
            "mcp.servers.x.timeout_secs = 0: expected 1 to 86400 seconds",
        ),
        (
            "[mcp.servers.x]\nurl = \"http://h/mcp\"\nheaders = { \"Bad Header\" = \"v\" }\n",
            "\"Bad Header\" is not a header name",
        ),
        ("[mcp]\nserver = {}\n", "unknown field `server`"),
    ];
    for (toml, expected) in cases {
        let text = error_text(toml);
        assert!(
            text.contains(expected),
            "{toml}\n=> {text}\nexpected {expected:?}"
        );
        assert!(text.contains("config.toml"), "names the file: {text}");
    }
}

#[test]
fn every_bad_server_is_reported_together() {
    let text =
        error_text("[mcp.servers.\"a b\"]\ncommand = \"x\"\n[mcp.servers.y]\ntype = \"http\"\n");
    assert!(text.contains("\"a b\""), "{text}");
    assert!(
        text.contains("mcp.servers.y: an http server needs `url`"),
        "{text}"
    );
}

#[test]
fn config_show_redacts_literal_secrets_and_keeps_references() {
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let config = load(&format!(
        r#"
[mcp.servers.gh]
command = "server"
args = ["--token", "{secret}"]
env = {{ GITHUB_TOKEN = "{secret}", FROM_ENV = "${{GITHUB_TOKEN}}", PLAIN = "debug" }}

[mcp.servers.web]
url = "https://example.com/mcp"
headers = {{ Authorization = "Bearer ${{WEB_TOKEN}}", "X-Api-Key" = "k-123" }}
"#
    ))
    .unwrap();
    let shown = config.to_redacted_json();
    let text = shown.to_string();
    assert!(!text.contains(secret), "{text}");
    assert!(!text.contains("k-123"), "{text}");
    let gh = &shown["mcp"]["servers"]["gh"];
    assert_eq!(gh["env"]["GITHUB_TOKEN"], "[REDACTED]");
    assert_eq!(gh["env"]["FROM_ENV"], "${GITHUB_TOKEN}");
    assert_eq!(
        gh["env"]["PLAIN"], "[REDACTED]",
        "literal env values are never shown"
    );
    assert_eq!(gh["type"], "stdio");
    let web = &shown["mcp"]["servers"]["web"];
    assert_eq!(web["headers"]["Authorization"], "Bearer ${WEB_TOKEN}");
    assert_eq!(web["headers"]["X-Api-Key"], "[REDACTED]");
    assert_eq!(web["type"], "http");
}

#[test]
fn env_references_expand_from_a_lookup_and_unset_ones_are_named() {
    use bridge_config::mcp::expand_env_references;
    let lookup = |name: &str| (name == "A").then(|| "1".to_owned());
    assert_eq!(expand_env_references("x${A}y${A}", lookup).unwrap(), "x1y1");
    assert_eq!(
        expand_env_references("$A and $", lookup).unwrap(),
        "$A and $"
    );
    let err = expand_env_references("${B}", lookup).unwrap_err();
    assert!(err.contains("${B} is not set"), "{err}");
}
