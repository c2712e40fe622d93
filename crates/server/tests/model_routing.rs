//! `[models]`: requested names and classes of requests routed to a backend
//! and model, for every facade, listed by `/v1/models` and shown by
//! `bridge.status`.

use bridge_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::support::{Setup, TestDaemon};

fn posted_models(mock: &MockLlm) -> Vec<String> {
    mock.requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body["model"].as_str().unwrap_or("").to_owned())
        .collect()
}

async fn daemon(main: &MockLlm, local: &MockLlm) -> TestDaemon {
    TestDaemon::with(Setup::default().config_toml(format!(
        r#"
[backends.main]
provider = "openai"
base_url = "{main}/v1"

[backends.local]
provider = "openai"
base_url = "{local}/v1"

[models]
default = "main/main-default"
background = "local/small"
think = "local/thinker"
long_context = "main/long"
long_context_tokens = 2000

[models.map]
"claude-*" = "main/mapped-claude"
"claude-opus-4-7" = "local/opus-exact"
"fast" = "local/llama"
"#,
        main = main.base_url(),
        local = local.base_url()
    )))
    .await
}

async fn anthropic(daemon: &TestDaemon, body: Value) -> u16 {
    daemon
        .http()
        .post(daemon.url("/v1/messages"))
        .header("x-api-key", &daemon.token)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn chat(daemon: &TestDaemon, body: Value) -> u16 {
    daemon
        .http()
        .post(daemon.url("/v1/chat/completions"))
        .bearer_auth(&daemon.token)
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn names_globs_and_classes_of_requests_reach_their_backend() {
    let replies = || (0..8).map(|_| MockReply::text("ok")).collect::<Vec<_>>();
    let main = MockLlm::start(replies()).await;
    let local = MockLlm::start(replies()).await;
    let daemon = daemon(&main, &local).await;
    let hi = json!([{"role": "user", "content": "hi"}]);

    // A glob, and the exact name that is more specific than it.
    assert_eq!(
        anthropic(
            &daemon,
            json!({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": hi})
        )
        .await,
        200
    );
    assert_eq!(
        anthropic(
            &daemon,
            json!({"model": "claude-opus-4-7", "max_tokens": 5, "messages": hi})
        )
        .await,
        200
    );
    // Claude Code's background requests name a haiku model.
    assert_eq!(
        anthropic(
            &daemon,
            json!({"model": "claude-haiku-4-5", "max_tokens": 5, "messages": hi})
        )
        .await,
        200
    );
    // Thinking asked for, in Anthropic's and in OpenAI's terms.
    assert_eq!(
        anthropic(
            &daemon,
            json!({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": hi,
        "thinking": {"type": "enabled", "budget_tokens": 1024}})
        )
        .await,
        200
    );
    assert_eq!(
        chat(
            &daemon,
            json!({"model": "gpt-4o", "reasoning_effort": "high", "messages": hi})
        )
        .await,
        200
    );
    // A long input.
    let long = json!([{"role": "user", "content": "word ".repeat(3000)}]);
    assert_eq!(
        chat(&daemon, json!({"model": "fast", "messages": long})).await,
        200
    );
    // An exact name, an unknown name (the default route), and BACKEND/MODEL.
    assert_eq!(
        chat(&daemon, json!({"model": "fast", "messages": hi})).await,
        200
    );
    assert_eq!(
        chat(&daemon, json!({"model": "who-knows", "messages": hi})).await,
        200
    );
    assert_eq!(
        chat(&daemon, json!({"model": "local/explicit", "messages": hi})).await,
        200
    );

    assert_eq!(
        posted_models(&main),
        ["mapped-claude", "long", "main-default"]
    );
    assert_eq!(
        posted_models(&local),
        [
            "opus-exact",
            "small",
            "thinker",
            "thinker",
            "llama",
            "explicit"
        ]
    );

    // The names clients can pick, and the table in the status.
    let list: Value = daemon.get_json("/v1/models").await;
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"fast") && ids.contains(&"claude-opus-4-7"),
        "{ids:?}"
    );
    assert!(!ids.contains(&"claude-*"), "globs are not names: {ids:?}");
    let status = daemon.rpc("bridge.status", json!({})).await;
    let rules: Vec<&str> = status["result"]["modelRoutes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules[0], "long_context (over 2000 tokens)");
    assert_eq!(*rules.last().unwrap(), "default");
    daemon.stop().await;
}
