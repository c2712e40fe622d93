//! Several chat backends from `[backends.NAME]`: routing by `NAME/MODEL`
//! and by configured models, `/v1/models`, availability in `/healthz` and
//! `bridge.status`, and binding beyond loopback (token required, Host still
//! checked).

use std::time::{Duration, Instant};

use bridge_llm::{ChatRequest, Message, Role, collect};
use bridge_testkit::MockLlm;
use serde_json::{Value, json};

use crate::support::{Setup, TestDaemon};

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn two_backends(alpha: &MockLlm, beta: &MockLlm, extra: &str) -> Setup {
    Setup::default()
        .env("BETA_KEY", "sk-beta-upstream-key")
        .config_toml(format!(
            r#"
default_backend = "alpha"
{extra}
[backends.alpha]
provider = "openai"
base_url = "{alpha}/v1"
models = ["alpha-large", "alpha-small"]
headers = {{ "X-Team" = "bridge" }}

[backends.beta]
provider = "openai"
base_url = "{beta}/v1"
api_key_env = "BETA_KEY"
model = "beta-default"
style = "single-prompt"
history_turns = 2
"#,
            alpha = alpha.base_url(),
            beta = beta.base_url(),
        ))
}

async fn ask(daemon: &TestDaemon, model: Option<&str>) -> (String, Option<String>) {
    let route = daemon.ctx.backends.route(model).await.unwrap();
    let request = ChatRequest {
        model: route.model.clone(),
        messages: vec![Message::text(Role::User, "ping")],
        ..ChatRequest::default()
    };
    let answer = collect(route.entry.backend.stream(&request).await.unwrap())
        .await
        .unwrap();
    assert_eq!(answer.text, "ping", "the mock echoes");
    (route.entry.name.clone(), route.model)
}

#[tokio::test]
async fn requests_route_by_backend_prefix_by_configured_models_and_to_the_default() {
    let alpha = MockLlm::start(Vec::new()).await;
    let beta = MockLlm::start(Vec::new()).await;
    let daemon = TestDaemon::with(two_backends(&alpha, &beta, "")).await;

    assert_eq!(
        ask(&daemon, Some("beta/gpt-4o")).await,
        ("beta".to_owned(), Some("gpt-4o".to_owned()))
    );
    assert_eq!(
        ask(&daemon, Some("alpha-small")).await,
        ("alpha".to_owned(), Some("alpha-small".to_owned()))
    );
    // A model no backend serves: the default backend, with the model it
    // answers with when none is named (alpha's configured list does not
    // have the name; `provider = "openai"` without `model` has OpenAI's).
    assert_eq!(
        ask(&daemon, Some("meta-llama/Llama-3")).await,
        ("alpha".to_owned(), Some("gpt-4o-mini".to_owned()))
    );
    // `beta/` alone: beta's own default model.
    assert_eq!(ask(&daemon, Some("beta/")).await, ("beta".to_owned(), None));

    let to_alpha = alpha.requests();
    let to_beta = beta.requests();
    let models = |requests: &[bridge_testkit::RecordedRequest]| -> Vec<Value> {
        requests
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body["model"].clone())
            .collect()
    };
    assert_eq!(
        models(&to_alpha),
        [json!("alpha-small"), json!("gpt-4o-mini")]
    );
    assert_eq!(models(&to_beta), [json!("gpt-4o"), json!("beta-default")]);
    // Each upstream gets its own key and headers, never the other's.
    let chat_to_beta = to_beta
        .iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(
        chat_to_beta.header("authorization"),
        Some("Bearer sk-beta-upstream-key")
    );
    assert_eq!(chat_to_beta.header("x-team"), None);
    let chat_to_alpha = to_alpha
        .iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(chat_to_alpha.header("authorization"), None);
    assert_eq!(chat_to_alpha.header("x-team"), Some("bridge"));
    daemon.stop().await;
}

#[tokio::test]
async fn a_model_the_default_backend_does_not_serve_gets_its_model_unless_strict() {
    let upstream = MockLlm::start(Vec::new()).await;
    let config = |strict: &str| {
        Setup::default().config_toml(format!(
            r#"
default_backend = "local"
{strict}
[backends.local]
provider = "openai"
base_url = "{}/v1"
model = "served-default"
"#,
            upstream.base_url()
        ))
    };
    let daemon = TestDaemon::with(config("")).await;
    // No configured list: the upstream's own listing (fetched on first
    // need) says what it serves; the mock lists gpt-4o among others.
    assert_eq!(
        ask(&daemon, Some("gpt-4o")).await,
        ("local".to_owned(), Some("gpt-4o".to_owned()))
    );
    let substituted = daemon
        .ctx
        .backends
        .route(Some("claude-sonnet-4-5-20250929"))
        .await
        .unwrap();
    assert_eq!(substituted.model.as_deref(), Some("served-default"));
    assert!(
        substituted
            .rule
            .contains("serves no \"claude-sonnet-4-5-20250929\""),
        "the request log says why: {}",
        substituted.rule
    );
    let listings = || {
        upstream
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count()
    };
    let fetched = listings();
    assert!(fetched >= 1);
    let again = daemon.ctx.backends.route(Some("other-name")).await.unwrap();
    assert_eq!(again.model.as_deref(), Some("served-default"));
    assert_eq!(
        listings(),
        fetched,
        "the listing is kept, not fetched again"
    );
    daemon.stop().await;

    let strict = TestDaemon::with(config("[models]\nstrict_models = true")).await;
    assert_eq!(
        ask(&strict, Some("made-up-model")).await,
        ("local".to_owned(), Some("made-up-model".to_owned()))
    );
    strict.stop().await;
}

#[tokio::test]
async fn v1_models_lists_every_backend_and_learnt_models_route_there() {
    let alpha = MockLlm::start(Vec::new()).await;
    let beta = MockLlm::start(Vec::new()).await;
    let daemon = TestDaemon::with(two_backends(&alpha, &beta, "")).await;
    let listing: Value = daemon.get_json("/v1/models").await;
    let owned: Vec<(String, String)> = listing["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["owned_by"].as_str().unwrap().to_owned(),
                m["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // alpha: its configured list (the mock would list others); beta: its
    // upstream's list.
    let expected: Vec<(String, String)> = [
        ("alpha", "alpha-large"),
        ("alpha", "alpha-small"),
        ("beta", "gpt-4o-mini"),
        ("beta", "gpt-4o"),
        ("beta", "claude-sonnet-4"),
    ]
    .iter()
    .map(|(b, m)| ((*b).to_owned(), (*m).to_owned()))
    .collect();
    assert_eq!(owned, expected);
    // A model learnt from beta's listing now routes to beta.
    assert_eq!(
        daemon
            .ctx
            .backends
            .route(Some("claude-sonnet-4"))
            .await
            .unwrap()
            .entry
            .name,
        "beta"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn healthz_and_bridge_status_show_each_backend_available_or_not_quickly() {
    let alpha = MockLlm::start(Vec::new()).await;
    let dead = closed_port();
    let setup = Setup::default()
        .env("OPENAI_API_KEY", "sk-auto-detected")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", alpha.base_url()))
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .config_toml(format!(
            r#"
[backends.gone]
provider = "openai"
base_url = "http://127.0.0.1:{dead}/v1"
models = ["gone-model"]

[backends.nokey]
provider = "anthropic"
api_key_env = "UNSET_ANTHROPIC_KEY"
"#
        ));
    let daemon = TestDaemon::with(setup).await;
    let started = Instant::now();
    let health = daemon.health().await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(health["ok"], true);
    assert_eq!(health["service"], "copilot-bridge");
    assert_eq!(health["sessions"], 1);
    assert_eq!(health["providers"], 0);
    assert_eq!(
        health["backends"],
        json!({"openai": "ok", "gone": "unavailable", "nokey": "unavailable"})
    );

    let status = daemon.rpc("bridge.status", json!({})).await;
    let status = &status["result"];
    let backends = status["backends"].as_array().unwrap();
    let names: Vec<&str> = backends
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["openai", "gone", "nokey"]);
    assert_eq!(backends[0]["default"], true);
    assert_eq!(backends[0]["kind"], "openai");
    assert_eq!(backends[0]["availability"], "ok");
    assert_eq!(backends[0]["baseUrl"], format!("{}/v1", alpha.base_url()));
    assert_eq!(backends[1]["availability"], "unavailable");
    assert_eq!(backends[1]["models"], json!(["gone-model"]));
    assert_eq!(backends[2]["kind"], "anthropic");
    assert_eq!(backends[2]["style"], "chat");
    let port = daemon.port;
    assert_eq!(
        status["endpoints"]["openai"],
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(
        status["endpoints"]["rpc"]["websocket"],
        format!("ws://127.0.0.1:{port}/rpc")
    );
    assert_eq!(
        status["endpoints"]["mcp"]["session"],
        format!("http://127.0.0.1:{port}/mcp/session")
    );
    assert_eq!(status["sessions"]["count"], 1);
    assert_eq!(status["providers"], json!({"count": 0, "names": []}));
    assert_eq!(status["policy"]["readOnly"], true);
    assert_eq!(status["policy"]["workspacePolicy"], Value::Null);
    let text = status.to_string();
    assert!(!text.contains("sk-auto-detected"), "{text}");
    daemon.stop().await;
}

#[tokio::test]
async fn policy_state_shows_writable_and_the_workspace_policy_file() {
    let daemon = TestDaemon::with(
        Setup::default()
            .env("COPILOT_BRIDGE_READ_ONLY", "false")
            .file(".agent-policy.yaml", "writes:\n  allow: [\"src/**\"]\n"),
    )
    .await;
    let status = daemon.rpc("bridge.status", json!({})).await;
    let policy = &status["result"]["policy"];
    assert_eq!(policy["readOnly"], false);
    assert!(
        policy["workspacePolicy"]
            .as_str()
            .unwrap()
            .ends_with(".agent-policy.yaml"),
        "{policy}"
    );
    assert_eq!(policy["writesAllow"], json!(["src/**"]));
    assert_eq!(status["result"]["backends"], json!([]));
    daemon.stop().await;
}

struct Started {
    daemon: bridge_server::Daemon,
    state: tempfile::TempDir,
    _workspace: bridge_testkit::TempWorkspace,
}

async fn start_beyond_loopback(token: Option<&str>) -> Result<Started, String> {
    let state = tempfile::TempDir::new().unwrap();
    let workspace = bridge_testkit::TempWorkspace::new();
    let mut env = vec![
        (
            "COPILOT_BRIDGE_HOME".to_owned(),
            state.path().display().to_string(),
        ),
        ("COPILOT_BRIDGE_PORT".to_owned(), "0".to_owned()),
        ("COPILOT_BRIDGE_BIND".to_owned(), "0.0.0.0".to_owned()),
        ("COPILOT_BRIDGE_NO_GH".to_owned(), "1".to_owned()),
        ("OLLAMA_HOST".to_owned(), "http://127.0.0.1:9".to_owned()),
        (
            "COPILOT_BRIDGE_ALLOWED_HOSTS".to_owned(),
            "bridge.lan".to_owned(),
        ),
    ];
    if let Some(token) = token {
        env.push(("COPILOT_BRIDGE_TOKEN".to_owned(), token.to_owned()));
    }
    let config = bridge_config::ConfigLoader::with_env(env)
        .cwd(workspace.path())
        .skip_dotenv()
        .load()
        .unwrap();
    let started = bridge_server::Daemon::start(bridge_server::DaemonOptions {
        config,
        cwd: workspace.path().to_path_buf(),
        detached: false,
        trust_project_providers: false,
        limits: Default::default(),
    })
    .await;
    started
        .map(|daemon| Started {
            daemon,
            state,
            _workspace: workspace,
        })
        .map_err(|err| err.to_string())
}

#[tokio::test]
async fn binding_beyond_loopback_needs_a_token() {
    let refused = match start_beyond_loopback(None).await {
        Ok(_) => panic!("a daemon bound to 0.0.0.0 without a token must not start"),
        Err(refused) => refused,
    };
    assert!(refused.starts_with("configuration error: "), "{refused}");
    assert!(refused.contains("bind_address 0.0.0.0"), "{refused}");
    assert!(refused.contains("COPILOT_BRIDGE_TOKEN"), "{refused}");
}

#[tokio::test]
async fn beyond_loopback_the_chosen_token_is_used_and_only_ip_or_listed_hosts_pass() {
    let token = "tok-0123456789abcdef-explicit";
    let Ok(Started {
        daemon,
        state,
        _workspace,
    }) = start_beyond_loopback(Some(token)).await
    else {
        panic!("a daemon with a token may bind 0.0.0.0");
    };
    let port = daemon.port();
    let shutdown = daemon.context().shutdown.clone();
    let file = bridge_server::GatewayFile::read(state.path()).unwrap();
    assert_eq!(file.token, token);
    let run = tokio::spawn(daemon.run());

    let client = reqwest::Client::new();
    let send = |host: &'static str, path: &'static str| {
        let client = client.clone();
        async move {
            client
                .get(format!("http://127.0.0.1:{port}{path}"))
                .header("host", host)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
        }
    };
    let rebound = send("evil.example", "/healthz").await;
    assert_eq!(rebound.status(), 403);
    let body: Value = rebound.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden_host");
    assert_eq!(send("127.0.0.1", "/healthz").await.status(), 200);
    assert_eq!(send("192.168.7.7:9400", "/healthz").await.status(), 200);
    assert_eq!(send("bridge.lan:9400", "/healthz").await.status(), 200);
    // The chosen token opens the facade; nothing else does.
    assert_eq!(send("127.0.0.1", "/v1/models").await.status(), 200);
    let wrong = client
        .get(format!("http://127.0.0.1:{port}/v1/models"))
        .bearer_auth("tok-not-it-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), run).await;
}
