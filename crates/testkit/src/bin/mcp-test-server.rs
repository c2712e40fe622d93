//! An MCP server for tests, built on the official SDK: well-behaved tools
//! (`echo`, `add`, `big`, `env`, `image`, `meta` (the request's `_meta`),
//! a tool with a dotted name) and
//! misbehaving ones (`slow`, `fail`, `crash`, `garbage`).
//!
//! Usage: `mcp-test-server [--http] [--exit-on-start CODE]
//! [--hang-on-start] [--banner TEXT] [--stderr TEXT]`.
//! Over stdio by default; with `--http` it serves streamable HTTP on
//! 127.0.0.1 (a free port) at `/mcp` and prints `LISTENING <url>` on stdout.

use std::process::ExitCode;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// Text to send back.
    text: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How long to think before answering.
    ms: u64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct FailArgs {
    message: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct CrashArgs {
    /// Exit status of the process.
    code: Option<i32>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GarbageArgs {
    /// Whether a proper reply follows the garbage.
    then_reply: Option<bool>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct BigArgs {
    /// Bytes of text to return.
    n: usize,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EnvArgs {
    name: String,
}

#[derive(Debug, Clone)]
struct TestServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TestServer {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echo the text back")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Add two integers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.saturating_add(b).to_string()
    }

    #[tool(description = "Answer after ms milliseconds")]
    async fn slow(&self, Parameters(SlowArgs { ms }): Parameters<SlowArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }

    #[tool(description = "Report a tool error (isError: true)")]
    fn fail(&self, Parameters(FailArgs { message }): Parameters<FailArgs>) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(
            message.unwrap_or_else(|| "it failed".to_owned()),
        )])
    }

    #[tool(description = "Exit the server process at once")]
    fn crash(&self, Parameters(CrashArgs { code }): Parameters<CrashArgs>) -> String {
        eprintln!("crashing on request");
        std::process::exit(code.unwrap_or(3));
    }

    #[tool(description = "Write non-JSON to stdout")]
    async fn garbage(
        &self,
        Parameters(GarbageArgs { then_reply }): Parameters<GarbageArgs>,
    ) -> String {
        write_stdout_line("this is not JSON-RPC, just garbage");
        if then_reply != Some(true) {
            std::future::pending::<()>().await;
        }
        "after garbage".to_owned()
    }

    #[tool(description = "Return n bytes of text")]
    fn big(&self, Parameters(BigArgs { n }): Parameters<BigArgs>) -> String {
        "x".repeat(n)
    }

    #[tool(description = "Read an environment variable of the server")]
    fn env(&self, Parameters(EnvArgs { name }): Parameters<EnvArgs>) -> String {
        std::env::var(&name).unwrap_or_else(|_| "(unset)".to_owned())
    }

    #[tool(description = "Return the request's _meta as JSON")]
    fn meta(&self, meta: RequestMetaObject) -> String {
        serde_json::Value::Object(meta.0.0).to_string()
    }

    #[tool(description = "Return a tiny PNG image and some text")]
    fn image(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("an image follows"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ])
    }

    #[tool(
        name = "dotted.name",
        description = "A tool whose name needs sanitising"
    )]
    fn dotted_name(&self) -> Result<String, ErrorData> {
        Ok("dotted".to_owned())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// One whole line on stdout, bypassing the transport (as a buggy server
/// that prints to stdout would).
fn write_stdout_line(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

struct Options {
    http: bool,
    exit_on_start: Option<u8>,
    hang_on_start: bool,
    banner: Option<String>,
    stderr: Option<String>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        http: false,
        exit_on_start: None,
        hang_on_start: false,
        banner: None,
        stderr: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--http" => options.http = true,
            "--hang-on-start" => options.hang_on_start = true,
            "--exit-on-start" => {
                let code = value("--exit-on-start")?;
                options.exit_on_start = Some(code.parse().map_err(|_| format!("bad code {code}"))?);
            }
            "--banner" => options.banner = Some(value("--banner")?),
            "--stderr" => options.stderr = Some(value("--stderr")?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(err) => {
            eprintln!("mcp-test-server: {err}");
            return ExitCode::from(2);
        }
    };
    if let Some(text) = &options.stderr {
        eprintln!("{text}");
    }
    if let Some(code) = options.exit_on_start {
        eprintln!("exiting on start with status {code}");
        return ExitCode::from(code);
    }
    if options.hang_on_start {
        std::future::pending::<()>().await;
    }
    if let Some(banner) = &options.banner {
        write_stdout_line(banner);
    }
    let outcome = if options.http {
        serve_http().await
    } else {
        serve_stdio().await
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-test-server: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_stdio() -> Result<(), String> {
    let service = TestServer::new()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| format!("cannot start over stdio: {err}"))?;
    service
        .waiting()
        .await
        .map_err(|err| format!("server task failed: {err}"))?;
    Ok(())
}

async fn serve_http() -> Result<(), String> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(TestServer::new()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|err| format!("cannot bind: {err}"))?;
    let addr = listener
        .local_addr()
        .map_err(|err| format!("no local address: {err}"))?;
    write_stdout_line(&format!("LISTENING http://{addr}/mcp"));
    axum::serve(listener, router)
        .await
        .map_err(|err| format!("HTTP server failed: {err}"))
}
