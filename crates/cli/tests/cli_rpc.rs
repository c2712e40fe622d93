//! `/rpc` of a real daemon: auth, the JSON-RPC envelope over POST and
//! WebSocket, the session and gateway methods, and `copilot-bridge tool
//! --session`, `provider-token` and `pair` against it.

use bridge_testkit::ProviderClient;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::cli_serve::{PATIENCE, Served};

async fn post(served: &Served, token: Option<&str>, body: &str) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(served.url("/rpc"))
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("not JSON ({err}): {text}"))
}

#[tokio::test]
async fn rpc_over_post_requires_the_bearer_token() {
    let served = Served::start();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"session.list"}"#;
    let (status, body) = post(&served, None, list).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(json_of(&body)["error"]["code"], "unauthorized");
    let (status, _) = post(&served, Some("btk-wrong"), list).await;
    assert_eq!(status, 401);
    let provider_token = served.provider_token();
    let (status, _) = post(&served, Some(&provider_token), list).await;
    assert_eq!(status, 401, "a provider token is not the /rpc token");
    let (status, body) = post(&served, Some(&served.token), list).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json_of(&body)["result"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn malformed_requests_get_the_json_rpc_error_codes() {
    let served = Served::start();
    let token = Some(served.token.as_str());

    let (status, body) = post(&served, token, "{not json").await;
    assert_eq!(status, 200);
    let body = json_of(&body);
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);

    let (_, body) = post(&served, token, r#"{"id":7,"method":"session.list"}"#).await;
    let body = json_of(&body);
    assert_eq!(body["error"]["code"], -32600, "no jsonrpc member");
    assert_eq!(body["id"], 7);

    let (_, body) = post(
        &served,
        token,
        r#"{"jsonrpc":"2.0","id":"a","method":"fs.nope"}"#,
    )
    .await;
    let body = json_of(&body);
    assert_eq!(body["error"]["code"], -32601);
    assert_eq!(body["id"], "a");

    let (_, body) = post(
        &served,
        token,
        r#"{"jsonrpc":"2.0","id":2,"method":"session.create","params":{"cwd":"relative/dir"}}"#,
    )
    .await;
    let body = json_of(&body);
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(body["error"]["data"]["field"], "cwd");

    let (_, body) = post(
        &served,
        token,
        r#"{"jsonrpc":"2.0","id":3,"method":"session.tools.list","params":{}}"#,
    )
    .await;
    let body = json_of(&body);
    assert_eq!(body["error"]["code"], -32602);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`session`")
    );

    let (_, body) = post(&served, token, "[]").await;
    assert_eq!(json_of(&body)["error"]["code"], -32600, "empty batch");

    // A batch: answers for requests only, in any order, matched by id.
    let batch = r#"[
        {"jsonrpc":"2.0","id":1,"method":"session.list"},
        {"jsonrpc":"2.0","method":"session.list"},
        {"jsonrpc":"2.0","id":2,"method":"no.such"},
        42
    ]"#;
    let (status, body) = post(&served, token, batch).await;
    assert_eq!(status, 200);
    let answers = json_of(&body);
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 3, "{answers:?}");
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).unwrap().clone();
    assert!(by_id(json!(1))["result"].is_array());
    assert_eq!(by_id(json!(2))["error"]["code"], -32601);
    assert_eq!(by_id(Value::Null)["error"]["code"], -32600);

    // Only notifications: nothing to say.
    let (status, body) = post(
        &served,
        token,
        r#"{"jsonrpc":"2.0","method":"session.list"}"#,
    )
    .await;
    assert_eq!(status, 204);
    assert!(body.is_empty());

    // Over the body limit: refused before parsing, as JSON-RPC.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"p":"{}"}}}}"#,
        "a".repeat(17 * 1024 * 1024)
    );
    let (status, body) = post(&served, token, &huge).await;
    assert_eq!(status, 413);
    assert_eq!(json_of(&body)["error"]["code"], -32600);

    // The daemon is fine after all that.
    assert_eq!(
        served
            .rpc("session.list", json!({}))
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

async fn ws_recv(
    ws: &mut (impl StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin),
) -> Value {
    loop {
        let message = tokio::time::timeout(PATIENCE, ws.next())
            .await
            .expect("no answer on the /rpc websocket")
            .expect("websocket closed")
            .unwrap();
        if let Message::Text(text) = message {
            return json_of(text.as_str());
        }
    }
}

#[tokio::test]
async fn rpc_over_websocket_survives_garbage_and_other_clients_are_unaffected() {
    let served = Served::start();
    let base = format!("ws://127.0.0.1:{}/rpc", served.port);
    let refused = tokio_tungstenite::connect_async(base.as_str()).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 401);
        }
        other => panic!("expected 401, got {other:?}"),
    }
    let url = format!("{base}?token={}", served.token);
    let (mut first, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    let (mut second, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();

    first.send(Message::text("this is not json")).await.unwrap();
    let answer = ws_recv(&mut first).await;
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
    first.send(Message::binary(vec![0xff, 0x00])).await.unwrap();
    assert_eq!(ws_recv(&mut first).await["error"]["code"], -32700);

    second
        .send(Message::text(
            json!({"jsonrpc": "2.0", "id": 9, "method": "gateway.status"}).to_string(),
        ))
        .await
        .unwrap();
    let status = ws_recv(&mut second).await;
    assert_eq!(status["id"], 9);
    assert_eq!(status["result"]["pid"], served.child.id());

    first
        .send(Message::text(
            json!([{"jsonrpc": "2.0", "id": 1, "method": "session.list"}]).to_string(),
        ))
        .await
        .unwrap();
    let answer = ws_recv(&mut first).await;
    assert_eq!(answer[0]["id"], 1);
    assert_eq!(answer[0]["result"][0]["default"], true);

    // The Authorization header works for WebSocket clients that can set it.
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = base.as_str().into_client_request().unwrap();
    request.headers_mut().insert(
        "Authorization",
        format!("Bearer {}", served.token).parse().unwrap(),
    );
    assert!(tokio_tungstenite::connect_async(request).await.is_ok());
}

#[tokio::test]
async fn sessions_are_created_listed_and_ended() {
    let served = Served::start();
    let other = bridge_testkit::TempWorkspace::new();
    other.write("notes.txt", "second workspace\n");

    let missing = other.path().join("missing");
    let error = served
        .rpc_raw("session.create", json!({"cwd": missing}))
        .await;
    assert_eq!(error["error"]["code"], -32602);
    assert_eq!(error["error"]["data"]["field"], "cwd");

    let created = served
        .rpc(
            "session.create",
            json!({"label": "review", "cwd": other.path()}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["label"], "review");
    assert_eq!(created["default"], false);
    assert_eq!(created["state"], "idle");

    let list = served.rpc("session.list", json!({})).await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let default = list.iter().find(|s| s["default"] == true).unwrap();
    assert_eq!(default["id"], served.file["defaultSession"]);
    assert_eq!(
        default["cwd"].as_str().unwrap(),
        served.workspace.path().to_str().unwrap()
    );

    let tools = served
        .rpc("session.tools.list", json!({"session": id}))
        .await;
    let read_file = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_file")
        .unwrap();
    assert_eq!(read_file["owner"], "workspace");
    assert!(read_file["inputSchema"].is_object());

    let read = served
        .rpc(
            "session.tools.call",
            json!({"session": id, "name": "read_file", "arguments": {"path": "notes.txt"}}),
        )
        .await;
    assert_eq!(read["result"]["content"], "second workspace\n");
    assert!(read["callId"].is_string());

    let ended = served
        .rpc("session.end", json!({"session": id, "deadlineMs": 100}))
        .await;
    assert_eq!(ended["ended"], id);
    assert_eq!(
        served
            .rpc("session.list", json!({}))
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let gone = served.rpc_raw("session.end", json!({"session": id})).await;
    assert_eq!(gone["error"]["code"], -32004);
    let gone = served
        .rpc_raw("session.tools.list", json!({"session": "s-nope"}))
        .await;
    assert_eq!(gone["error"]["code"], -32004);
}

#[tokio::test]
async fn the_tool_command_calls_workspace_tools_through_the_daemon() {
    let served = Served::start();
    served
        .workspace
        .write("src/lib.rs", "fn one() {}\nfn two() {}\n");
    let output = served
        .cli()
        .args([
            "tool",
            "read_file",
            "--session",
            "default",
            "--compact",
            "--args",
        ])
        .arg(json!({"path": "src/lib.rs", "startLine": 2}).to_string())
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = json_of(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(result["content"], "fn two() {}\n");

    // The daemon's policy: read-only by default, so a write is denied (4),
    // the file is not written, and the error is the local command's shape.
    let output = served
        .cli()
        .args(["tool", "create_file", "--session", "default", "--args"])
        .arg(json!({"path": "new.txt", "content": "x"}).to_string())
        .output()
        .await
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let error = json_of(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(error["error"]["code"], "policy_denied");
    assert!(!served.workspace.path().join("new.txt").exists());
    let denied = served
        .rpc_raw(
            "session.tools.call",
            json!({"session": "default", "name": "create_file", "arguments": {"path": "new.txt", "content": "x"}}),
        )
        .await;
    assert_eq!(denied["error"]["code"], -32002);
    assert_eq!(denied["error"]["data"]["code"], "policy_denied");

    // A tool failure is 1, an unknown tool or session 2.
    let output = served
        .cli()
        .args([
            "tool",
            "read_file",
            "--session",
            "default",
            "--args",
            r#"{"path":"absent.rs"}"#,
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let output = served
        .cli()
        .args(["tool", "no_such_tool", "--session", "default"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        json_of(&String::from_utf8_lossy(&output.stdout))["error"]["code"],
        "unknown_tool"
    );
    let output = served
        .cli()
        .args([
            "tool",
            "read_file",
            "--session",
            "s-nope",
            "--args",
            r#"{"path":"src/lib.rs"}"#,
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test]
async fn provider_tools_are_callable_from_the_command_line() {
    let served = Served::start();
    // A fresh token from the CLI works like the one in gateway.json.
    let output = served.cli().arg("provider-token").output().await.unwrap();
    assert!(output.status.success());
    let token = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(token.starts_with("ptk-") && token != served.provider_token());

    let tool = json!({"name": "greet", "description": "Greets", "parameters": {"type": "object", "properties": {"who": {"type": "string"}}}});
    let (mut provider, _) = ProviderClient::register(
        &served.ws_url(),
        &token,
        "greeter",
        json!({"tools": [tool]}),
    )
    .await
    .unwrap();
    let tools = served
        .rpc("session.tools.list", json!({"session": "default"}))
        .await;
    let greet = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "greet")
        .unwrap();
    assert_eq!(greet["owner"], "provider:greeter");

    let call = served
        .cli()
        .args([
            "tool",
            "greet",
            "--session",
            "default",
            "--compact",
            "--args",
            r#"{"who":"world"}"#,
        ])
        .output();
    let answer = async {
        let request = provider.expect("tool.call").await.unwrap();
        assert_eq!(request["args"], json!({"who": "world"}));
        provider
            .send(json!({"type": "tool.result", "id": request["id"], "data": {"greeting": "Hello, world!"}}))
            .await
            .unwrap();
    };
    let (output, ()) = tokio::join!(call, answer);
    let output = output.unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        json_of(&String::from_utf8_lossy(&output.stdout)),
        json!({"greeting": "Hello, world!"})
    );

    let status = served
        .cli()
        .args(["daemon", "status"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("providers: 1") && text.contains("greeter"),
        "{text}"
    );
    let health: Value = reqwest::get(served.url("/healthz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["providers"], 1);

    let output = served
        .cli()
        .args(["provider-token", "--session", "s-nope"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test]
async fn pair_lists_waiting_pairing_codes() {
    let served = Served::start();
    let output = served.cli().arg("pair").output().await.unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "no pairing requests are waiting\n"
    );

    let mut browser = ProviderClient::connect(&served.ws_url()).await.unwrap();
    browser
        .send(json!({"type": "auth", "mode": "pair", "name": "dashboard-tab"}))
        .await
        .unwrap();
    let prompt = browser.expect("auth.pairing").await.unwrap();
    assert!(
        prompt.get("code").is_none(),
        "the code never goes to the provider"
    );

    let output = served.cli().arg("pair").output().await.unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(text.contains("dashboard-tab"), "{text}");
    assert!(
        text.contains(served.file["defaultSession"].as_str().unwrap()),
        "{text}"
    );
    let code = text
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().next())
        .unwrap()
        .to_owned();
    assert_eq!(code.len(), 6, "{text}");

    // The code the user read from `pair` is the one the gateway accepts.
    browser
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    let sessions = browser.expect("sessions").await.unwrap();
    assert!(sessions["token"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_from_the_configuration_serve_every_daemon_session() {
    let bridge = crate::support::Bridge::new();
    let server = bridge_testkit::built_binary("mcp-test-server");
    std::fs::write(
        bridge.state.path().join("config.toml"),
        format!(
            "[mcp.servers.test]\ncommand = {:?}\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let served = Served::start_in(bridge, bridge_testkit::TempWorkspace::new(), &[]);
    let tools = served
        .rpc("session.tools.list", json!({"session": "default"}))
        .await;
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "test__echo")
        .unwrap_or_else(|| panic!("no test__echo in {tools}"));
    assert_eq!(echo["owner"], "mcp:test");
    let output = served
        .cli()
        .args(["tool", "test__echo", "--session", "default", "--args"])
        .arg(r#"{"text":"through the daemon"}"#)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("through the daemon"), "{stdout}");
    // A session created later gets the server's tools too.
    let dir = tempfile::tempdir().unwrap();
    let created = served
        .rpc(
            "session.create",
            json!({"cwd": dir.path(), "label": "second"}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let tools = served
        .rpc("session.tools.list", json!({"session": id}))
        .await;
    assert!(tools.to_string().contains("test__echo"), "{tools}");
}
