//! OpenClaw's memory in every session the hub creates (docs/openclaw.md,
//! "Memory in every session"): with an OpenClaw workspace, `run`'s first
//! request to the model offers `openclaw_memory_search`,
//! `openclaw_memory_read` and `openclaw_user_prefs`, each answers from the
//! workspace (redacted, audited); `openclaw.memory = "off"`, no workspace,
//! or a `blocked_tools` rule take them away; the daemon's sessions have
//! them; and the Copilot CLI gets them as an MCP server in its session.

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use serde_json::{Value, json};

use crate::cli_run::{chats, configure, run_against, text, tool_messages};
use crate::support::Bridge;

const MEMORY_TOOLS: [&str; 3] = [
    "openclaw_memory_read",
    "openclaw_memory_search",
    "openclaw_user_prefs",
];

/// An OpenClaw workspace as OpenClaw keeps it: `MEMORY.md`, a daily note
/// and `USER.md` (with a token in it, which no tool may return).
fn openclaw_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "MEMORY.md",
        "# MEMORY\n\n- The staging cluster deploys with helm.\n",
    );
    write(
        "memory/2026-11-20.md",
        "# 2026-11-20\n\n- Rotated the quokka certificates on the edge proxies.\n",
    );
    write(
        "USER.md",
        "# USER\n\nLikes answers in British English.\nGitHub: ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
    );
    dir
}

/// The tool names the request offered the model, sorted.
fn offered(chat: &Value) -> Vec<String> {
    let mut names: Vec<String> = chat["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

fn memory_tools_in(chat: &Value) -> Vec<String> {
    offered(chat)
        .into_iter()
        .filter(|name| MEMORY_TOOLS.contains(&name.as_str()))
        .collect()
}

/// Every audit record of the state directory.
fn audit(bridge: &Bridge) -> Vec<Value> {
    let dir = bridge.state.path().join("audit");
    let mut records = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        records.extend(text.lines().map(|line| serde_json::from_str(line).unwrap()));
    }
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_offers_openclaw_memory_and_each_tool_answers_from_the_workspace() {
    let memory = openclaw_workspace();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![
                MockToolCall::new(
                    "call_search",
                    "openclaw_memory_search",
                    r#"{"query": "quokka certificates"}"#,
                ),
                MockToolCall::new(
                    "call_read",
                    "openclaw_memory_read",
                    r#"{"file": "memory/2026-11-20.md"}"#,
                ),
                MockToolCall::new("call_prefs", "openclaw_user_prefs", "{}"),
                MockToolCall::new("call_whole", "openclaw_memory_read", "{}"),
            ],
        },
        MockReply::text("The certificates were rotated on 2026-11-20."),
    ])
    .await;
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let output = run_against(&bridge, &mock, &ws, "When did we rotate the certificates?")
        .env("OPENCLAW_WORKSPACE_DIR", memory.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("rotated on 2026-11-20"), "{stdout}");

    let requests = chats(&mock);
    assert_eq!(requests.len(), 2);
    assert_eq!(
        memory_tools_in(&requests[0]),
        MEMORY_TOOLS,
        "{:?}",
        offered(&requests[0])
    );
    let results = tool_messages(&requests[1]);
    assert_eq!(results.len(), 4, "{results:?}");
    let search: Value = serde_json::from_str(&results[0]).unwrap();
    let search = &search["result"];
    assert_eq!(search["source"], "local index", "{search}");
    assert_eq!(
        search["results"][0]["path"], "memory/2026-11-20.md",
        "{search}"
    );
    assert!(
        results[1].contains("Rotated the quokka certificates"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("British English"), "{}", results[2]);
    assert!(
        !results[2].contains("ghp_"),
        "USER.md is redacted: {}",
        results[2]
    );
    assert!(
        results[3].contains("deploys with helm"),
        "MEMORY.md by default: {}",
        results[3]
    );

    // Every memory read is in the audit log, redacted.
    let records = audit(&bridge);
    for tool in MEMORY_TOOLS {
        assert!(
            records
                .iter()
                .any(|r| r["tool"] == tool && r["decision"] == "allow"),
            "{tool} is audited: {records:?}"
        );
    }
    assert!(!serde_json::to_string(&records).unwrap().contains("ghp_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_workspace_or_memory_off_means_no_memory_tools() {
    let memory = openclaw_workspace();
    for (label, env) in [
        // HOME is the empty state directory: no ~/.openclaw.
        ("no OpenClaw workspace", vec![]),
        (
            "openclaw.memory off",
            vec![
                (
                    "OPENCLAW_WORKSPACE_DIR",
                    memory.path().display().to_string(),
                ),
                ("COPILOT_BRIDGE_OPENCLAW_MEMORY", "off".to_owned()),
            ],
        ),
    ] {
        let mock = MockLlm::start(vec![MockReply::text("No memory here.")]).await;
        let bridge = Bridge::new();
        let ws = TempWorkspace::new();
        let mut command = run_against(&bridge, &mock, &ws, "What do you remember?");
        command.envs(env);
        let output = command.output().unwrap();
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{label}: {stdout}\n{stderr}");
        let first = &chats(&mock)[0];
        assert!(offered(first).contains(&"read_file".to_owned()), "{label}");
        assert!(
            memory_tools_in(first).is_empty(),
            "{label}: {:?}",
            offered(first)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_tools_rule_removes_a_memory_tool_and_on_offers_an_empty_memory() {
    let memory = openclaw_workspace();
    let mock = MockLlm::start(vec![
        MockReply::tool_call("call_prefs", "openclaw_user_prefs", &json!({})),
        MockReply::text("Blocked."),
    ])
    .await;
    let bridge = Bridge::new();
    configure(
        &bridge,
        "[permissions]\nblocked_tools = [\"openclaw_user_*\"]\n",
    );
    let ws = TempWorkspace::new();
    let output = run_against(&bridge, &mock, &ws, "What do I like?")
        .env("OPENCLAW_WORKSPACE_DIR", memory.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let requests = chats(&mock);
    assert_eq!(
        memory_tools_in(&requests[0]),
        ["openclaw_memory_read", "openclaw_memory_search"]
    );
    // Named anyway, it is refused as blocked, and USER.md is not read.
    let refused = &tool_messages(&requests[1])[0];
    assert!(refused.contains("blocked_tools"), "{refused}");
    assert!(!refused.contains("British"), "{refused}");

    // `on` offers the tools where no workspace holds memory yet; they say so.
    let empty = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        MockReply::tool_call("call_read", "openclaw_memory_read", &json!({})),
        MockReply::text("Nothing yet."),
    ])
    .await;
    let bridge = Bridge::new();
    configure(&bridge, "[openclaw]\nmemory = \"on\"\n");
    let output = run_against(&bridge, &mock, &ws, "What do you remember?")
        .env("OPENCLAW_WORKSPACE_DIR", empty.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{:?}", text(&output));
    let requests = chats(&mock);
    assert_eq!(memory_tools_in(&requests[0]), MEMORY_TOOLS);
    let answer = &tool_messages(&requests[1])[0];
    assert!(answer.contains("MEMORY.md"), "{answer}");
}

/// The real Copilot CLI 1.0.102 (pinned in scripts/install-test-deps.sh),
/// unmodified and offline, started by the daemon for a chat turn with the
/// mock as its model (BYOK): its session has the memory server, its model
/// is offered the memory tools, and a call of one reaches the workspace
/// through the daemon's session (decided, audited, redacted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_copilot_cli_gets_openclaw_memory_as_an_mcp_server() {
    let Some(copilot) = bridge_testkit::agent_cli("copilot", "copilot") else {
        return;
    };
    let memory = openclaw_workspace();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_read",
                "openclaw-openclaw_memory_read",
                r#"{"file": "memory/2026-11-20.md"}"#,
            )],
        },
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_prefs",
                "openclaw-openclaw_user_prefs",
                "{}",
            )],
        },
        MockReply::text("Rotated on 2026-11-20, in British English."),
    ])
    .await;
    let path = copilot.display().to_string();
    let workspace = memory.path().display().to_string();
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[
            ("COPILOT_CLI_PATH", path.as_str()),
            ("OPENCLAW_WORKSPACE_DIR", workspace.as_str()),
        ],
    );
    let (code, stdout, stderr) = crate::cli_chat::chat(
        &served,
        &[
            "--runner",
            "copilot",
            "-p",
            "When did we rotate the certificates?",
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}\n{}", served.log());
    assert_eq!(stdout.trim(), "Rotated on 2026-11-20, in British English.");

    let requests = chats(&mock);
    assert_eq!(requests.len(), 3, "{requests:?}");
    let offered = offered(&requests[0]);
    for tool in MEMORY_TOOLS {
        let name = format!("openclaw-{tool}");
        assert!(offered.contains(&name), "{name} in {offered:?}");
    }
    // What the CLI's MCP calls got back, through the daemon's session.
    let note = tool_messages(&requests[1]).join("\n");
    assert!(note.contains("Rotated the quokka certificates"), "{note}");
    let prefs = tool_messages(&requests[2]).join("\n");
    assert!(prefs.contains("British English"), "{prefs}");
    assert!(!prefs.contains("ghp_"), "USER.md is redacted: {prefs}");
    // Decided and audited once each, as the session's own tools.
    let audit = std::fs::read_dir(served.state().join("audit"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect::<String>();
    let records: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    for tool in ["openclaw_memory_read", "openclaw_user_prefs"] {
        let of_tool: Vec<&Value> = records.iter().filter(|r| r["tool"] == tool).collect();
        assert_eq!(of_tool.len(), 1, "{tool}: {audit}");
        assert_eq!(of_tool[0]["decision"], "allow", "{tool}: {audit}");
    }
    assert!(!audit.contains("ghp_"), "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_orchestrated_sub_task_is_offered_openclaw_memory() {
    use crate::cli_orchestrate::{orchestrate, output, requests_of, two_task_plan};
    let memory = openclaw_workspace();
    let ws = TempWorkspace::new();
    let (mock, plan) = two_task_plan(&ws).await;
    let bridge = Bridge::new();
    let mut command = orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", plan.to_str().unwrap(), "--json"],
    );
    command.env("OPENCLAW_WORKSPACE_DIR", memory.path());
    let out = output(command).await;
    assert!(out.status.success(), "{:?}", text(&out));
    let requests = mock.requests();
    for id in ["t1", "t2"] {
        let of_task = requests_of(&requests, id);
        assert!(!of_task.is_empty(), "{id}");
        assert_eq!(memory_tools_in(&of_task[0].body), MEMORY_TOOLS, "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_setup_say_that_sessions_get_openclaw_memory_and_how_to_turn_it_off() {
    let memory = openclaw_workspace();
    let mock = MockLlm::start(vec![]).await;
    let workspace = memory.path().display().to_string();
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("OPENCLAW_WORKSPACE_DIR", workspace.as_str())],
    );
    for args in [vec!["status"], vec!["setup", "--agent", "claude"]] {
        let output = served.cli().args(&args).output().await.unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{args:?}: {stdout}");
        assert!(
            stdout.contains("every session gets OpenClaw's memory")
                && stdout.contains(&workspace)
                && stdout.contains("memory = \"off\""),
            "{args:?}: {stdout}"
        );
    }
    let status = served.rpc("bridge.status", json!({})).await;
    assert_eq!(status["openclawMemory"]["offered"], true, "{status}");
}
