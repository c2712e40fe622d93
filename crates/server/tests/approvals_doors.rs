//! The approval queue at the doors beyond `session.tools.call`: a Copilot
//! CLI hook that waits with `approvals.wait`, Claude Code's permission
//! prompt, the tool bus, a provider's tool, an orchestrated sub-task, and
//! the WebSocket that pushes every ask (docs/approvals.md).

use std::time::Duration;

use serde_json::{Value, json};

use crate::approvals::{
    PRINT_42, answer, approver, pending, response_json, shell_call, waiting_daemon,
};
use crate::support::{Setup, TestDaemon};

#[tokio::test]
async fn a_deferred_hook_gets_the_ask_at_once_and_its_answer_by_waiting() {
    let daemon = waiting_daemon(30).await;
    let hook = |command: &str, defer: Value| {
        json!({"agent": "copilot-cli", "agentSession": "s1", "cwd": daemon.workspace.path(),
               "event": "pre-tool-use", "tool": "bash", "arguments": {"command": command},
               "defer": defer})
    };
    // Nothing to ask: answered as without defer.
    let plain = daemon.rpc("agent.hook", hook("ls", json!(true))).await;
    assert_eq!(plain["result"]["decision"], "allow", "{plain}");
    let dangerous = daemon
        .rpc("agent.hook", hook("rm -rf /", json!(true)))
        .await;
    assert_eq!(dangerous["result"]["decision"], "deny", "{dangerous}");

    let pending = daemon.rpc("agent.hook", hook(PRINT_42, json!(true))).await;
    assert_eq!(pending["result"]["decision"], "pending", "{pending}");
    let id = pending["result"]["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(pending["result"]["approval"]["timeoutSecs"], 30);
    let waiting = daemon.post_in_background(
        "/rpc",
        json!({"jsonrpc": "2.0", "id": 2, "method": "approvals.wait", "params": {"id": id}}),
    );
    let ask = pending_ask_of(&daemon, &id).await;
    assert_eq!(ask["session"], "copilot-cli-s1", "{ask}");
    answer(&daemon, json!({"id": id, "decision": "allow"})).await;
    let answered = response_json(waiting).await;
    assert_eq!(answered["result"]["decision"], "allow", "{answered}");
    assert_eq!(
        answered["result"]["session"], "copilot-cli-s1",
        "{answered}"
    );
    // Asked again for the same id: the same answer, kept a while.
    let again = daemon.rpc("approvals.wait", json!({"id": id})).await;
    assert_eq!(again["result"]["decision"], "allow", "{again}");

    for (params, field) in [(hook(PRINT_42, json!("yes")), "defer")] {
        let refused = daemon.rpc("agent.hook", params).await;
        assert_eq!(refused["error"]["data"]["field"], field, "{refused}");
    }
    let unknown = daemon
        .rpc("approvals.wait", json!({"id": "ask-nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32011, "{unknown}");

    // Without a person to wait for, the agent asks its own user, as before.
    let at_once = waiting_daemon(0).await;
    let asked = at_once
        .rpc(
            "agent.hook",
            json!({"agent": "copilot-cli", "agentSession": "s1", "cwd": at_once.workspace.path(),
                   "event": "pre-tool-use", "tool": "bash", "arguments": {"command": PRINT_42},
                   "defer": true}),
        )
        .await;
    assert_eq!(asked["result"]["decision"], "ask", "{asked}");
}

async fn pending_ask_of(daemon: &TestDaemon, id: &str) -> Value {
    for _ in 0..300 {
        let listed = approver(daemon, "approvals.list", json!({})).await;
        if let Some(ask) = listed["result"]["asks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|ask| ask["id"] == id)
        {
            return ask.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("ask {id} was not listed");
}

/// The text answer of the `approve` tool (Claude Code's permission prompt).
fn prompt_answer(answer: &str) -> Value {
    let answer: Value = serde_json::from_str(answer).unwrap();
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"));
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn the_permission_prompt_tool_relays_to_a_person_and_answers_in_claudes_shape() {
    let daemon = waiting_daemon(30).await;
    let mut mcp = crate::support::McpHttp::connect(&daemon, "/mcp/session").await;
    assert!(mcp.tool_names().await.contains(&"approve".to_owned()));

    // What the policy denies is denied without a question.
    let denied = prompt_answer(
        &mcp.call(
            "approve",
            json!({"tool_name": "Bash", "input": {"command": "rm -rf /"}, "tool_use_id": "t1"}),
        )
        .await,
    );
    assert_eq!(denied["behavior"], "deny", "{denied}");
    assert!(denied["message"].is_string(), "{denied}");

    // What the policy allows is still put to a person (the agent asked),
    // once only; the answer comes back as Claude Code reads it.
    let url = daemon.url("/mcp/session");
    let token = daemon.token.clone();
    let asking = tokio::spawn(async move {
        let mut mcp = bridge_testkit::mcp_http::McpHttp::connect(&url, &token).await;
        mcp.call(
            "approve",
            json!({"tool_name": "Bash", "input": {"command": "ls -la"}, "tool_use_id": "t2"}),
        )
        .await
    });
    let ask = pending(&daemon, "ls -la").await;
    assert_eq!(ask["choices"], json!(["once"]), "{ask}");
    assert!(
        ask["reason"]
            .as_str()
            .unwrap()
            .contains("Claude Code asks permission to run Bash"),
        "{ask}"
    );
    answer(&daemon, json!({"id": ask["id"], "decision": "allow"})).await;
    let allowed = prompt_answer(&asking.await.unwrap());
    assert_eq!(
        allowed,
        json!({"behavior": "allow", "updatedInput": {"command": "ls -la"}})
    );

    let url = daemon.url("/mcp/session");
    let token = daemon.token.clone();
    let asking = tokio::spawn(async move {
        let mut mcp = bridge_testkit::mcp_http::McpHttp::connect(&url, &token).await;
        mcp.call(
            "approve",
            json!({"tool_name": "Bash", "input": {"command": "make"}}),
        )
        .await
    });
    let ask = pending(&daemon, "make").await;
    answer(
        &daemon,
        json!({"id": ask["id"], "decision": "deny", "reason": "not today"}),
    )
    .await;
    let refused = prompt_answer(&asking.await.unwrap());
    assert_eq!(refused["behavior"], "deny", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("denied by rpc: not today"),
        "{refused}"
    );

    // Malformed prompts are refused by field, in MCP's error shape.
    for (arguments, field) in [
        (json!({"input": {}}), "tool_name"),
        (json!({"tool_name": "Bash", "input": "ls"}), "input"),
        (
            json!({"tool_name": "Bash", "input": {}, "tool_use_id": 7}),
            "tool_use_id",
        ),
    ] {
        let refused: Value =
            serde_json::from_str(&mcp.call("approve", arguments.clone()).await).unwrap();
        assert_eq!(refused["error"]["code"], -32602, "{arguments}: {refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains(field),
            "{refused}"
        );
    }
}

#[tokio::test]
async fn the_tool_bus_and_a_provider_tool_the_rules_ask_about_wait_for_a_person() {
    let daemon = TestDaemon::with(
        Setup::default()
            .env("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "30")
            .config_toml("[permissions]\nask_tools = [\"echo\"]\n"),
    )
    .await;
    // The tool bus's shell.
    let bus = daemon.post_in_background(
        "/rpc",
        json!({"jsonrpc": "2.0", "id": 3, "method": "mcp.shell.run",
               "params": {"cmd": PRINT_42}}),
    );
    let ask = pending(&daemon, PRINT_42).await;
    answer(&daemon, json!({"id": ask["id"], "decision": "allow"})).await;
    let ran = response_json(bus).await;
    assert!(ran["result"].to_string().contains("42"), "{ran}");

    // A provider's tool that `ask_tools` names.
    let minted = daemon.rpc("gateway.providerToken", json!({})).await;
    let token = minted["result"]["token"].as_str().unwrap().to_owned();
    let tools = json!({"tools": [{"name": "echo", "description": "Answers with its arguments.",
                                  "parameters": {"type": "object"}}]});
    let (mut provider, _) =
        bridge_testkit::ProviderClient::register(&daemon.ws_url("/"), &token, "echoes", tools)
            .await
            .unwrap();
    let call = daemon.post_in_background(
        "/rpc",
        json!({"jsonrpc": "2.0", "id": 4, "method": "session.tools.call",
               "params": {"session": "default", "name": "echo", "arguments": {"text": "hi"}}}),
    );
    let mut ask = None;
    for _ in 0..300 {
        let listed = approver(&daemon, "approvals.list", json!({})).await;
        if let Some(found) = listed["result"]["asks"].as_array().unwrap().first() {
            ask = Some(found.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ask = ask.expect("the provider's call is asked about");
    assert_eq!(ask["tool"], "echo", "{ask}");
    assert_eq!(ask["rules"], json!(["tool echo"]), "{ask}");
    answer(
        &daemon,
        json!({"id": ask["id"], "decision": "allow", "scope": "session"}),
    )
    .await;
    let (received, _) = provider.expect_skipping("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": received["id"], "data": "hi back"}))
        .await
        .unwrap();
    let answered = response_json(call).await;
    assert_eq!(answered["result"]["result"], "hi back", "{answered}");
}

#[tokio::test]
async fn a_websocket_subscriber_is_told_of_every_ask_and_its_answer() {
    let daemon = waiting_daemon(30).await;
    let mut bus = crate::toolbus::Bus::connect_with(&daemon, &daemon.ctx.approver_token).await;
    let subscribed = bus.call("approvals.subscribe", json!({})).await;
    assert_eq!(subscribed["subscribed"], true, "{subscribed}");
    let call = shell_call(&daemon, "default", PRINT_42);
    let requested = bus.recv().await;
    assert_eq!(requested["method"], "approvals.event", "{requested}");
    assert!(requested.get("id").is_none(), "a notification: {requested}");
    assert_eq!(requested["params"]["type"], "requested", "{requested}");
    assert_eq!(requested["params"]["ask"]["arguments"]["command"], PRINT_42);
    let id = requested["params"]["id"].clone();
    answer(
        &daemon,
        json!({"id": id, "decision": "allow", "surface": "web"}),
    )
    .await;
    let resolved = bus.recv().await;
    assert_eq!(resolved["params"]["type"], "resolved", "{resolved}");
    assert_eq!(resolved["params"]["outcome"], "allow", "{resolved}");
    assert_eq!(resolved["params"]["surface"], "web", "{resolved}");
    response_json(call).await;

    // Over HTTP there is nowhere to push; the agents' token may not listen.
    let http = approver(&daemon, "approvals.subscribe", json!({})).await;
    assert!(
        http["error"]["message"]
            .as_str()
            .unwrap()
            .contains("WebSocket"),
        "{http}"
    );
    let mut agent = crate::toolbus::Bus::connect(&daemon).await;
    let refused = agent.error("approvals.subscribe", json!({})).await;
    assert_eq!(refused["code"], -32010, "{refused}");
    bus.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrated_sub_task_waits_for_a_person_too() {
    use bridge_testkit::{MockLlm, MockReply, MockToolCall};
    let mock = MockLlm::start(vec![]).await;
    mock.route(
        "Your sub-task (x)",
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_py",
                "shell",
                json!({"command": PRINT_42}).to_string(),
            )],
        },
    );
    mock.route("Your sub-task (x)", MockReply::text("computed"));
    let daemon = TestDaemon::with(
        Setup::default()
            .openai_backend(&mock.base_url())
            .env("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60"),
    )
    .await;
    let plan = json!({"tasks": [{"id": "x", "description": "compute", "readOnly": true}],
                      "dependencies": {}});
    let started = daemon
        .rpc(
            "orchestrate.start",
            json!({"plan": plan, "timeoutSecs": 120}),
        )
        .await;
    let id = started["result"]["id"].as_str().unwrap().to_owned();
    let ask = pending(&daemon, PRINT_42).await;
    assert_ne!(ask["session"], daemon.ctx.facts.default_session, "{ask}");
    answer(&daemon, json!({"id": ask["id"], "decision": "allow"})).await;
    let mut outcome = Value::Null;
    let mut since = 0;
    for _ in 0..100 {
        let watched = daemon
            .rpc(
                "orchestrate.watch",
                json!({"id": id, "since": since, "waitMs": 5000}),
            )
            .await;
        since = watched["result"]["next"].as_u64().unwrap();
        if watched["result"]["done"] == true {
            outcome = watched["result"]["result"].clone();
            break;
        }
    }
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(outcome["tasks"][0]["toolCalls"][0]["ok"], true, "{outcome}");
    let told = mock
        .requests()
        .iter()
        .map(|request| request.body["messages"].to_string())
        .find(|messages| messages.contains("call_py"))
        .unwrap_or_default();
    assert!(told.contains("42"), "the sub-task's command ran: {told}");
    daemon.stop().await;
}
