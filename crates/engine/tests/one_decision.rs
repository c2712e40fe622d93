//! The same call gets the same verdict through every door the engine has:
//! `Session::call_tool` (which `/rpc`, the tool bus, our MCP servers and the
//! `tool` command call), a provider's tool, the native agent loop (the
//! model asks), and the Copilot CLI runner (the CLI asks in its
//! `preToolUse` hook, under its own tool names, MCP tools as
//! `server-tool`). crates/server/tests/one_decision.rs drives the daemon's
//! doors with the same table.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bridge_engine::runner::copilot::{CopilotCliConfig, McpServer, run_copilot};
use bridge_engine::runner::native::{NativeRunner, NativeSettings};
use bridge_engine::runner::{RunContext, RunRequest, Runner};
use bridge_engine::{
    CallOrigin, RegistrySettings, Session, SessionDefaults, SessionRegistry, SessionSpec,
    ToolEntry, ToolFailure, ToolHandler, ToolInvocation, ToolOwner,
};
use bridge_llm::{ChatBackend, OpenAiBackend, OpenAiConfig};
use bridge_policy::{PermissionPolicy, PermissionRules};
use bridge_protocol::{ToolEffect, ToolSpec};
use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One call and the verdict every door must give it: `None` allowed,
/// `Some(fragment)` denied with a reason containing `fragment`.
struct Case {
    /// Our tool and arguments.
    tool: &'static str,
    args: Value,
    /// The Copilot CLI's own tool for the same action.
    cli_tool: &'static str,
    cli_args: Value,
    denied: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            tool: "read_file",
            args: json!({"path": "README.md"}),
            cli_tool: "view",
            cli_args: json!({"path": "README.md"}),
            denied: None,
        },
        Case {
            tool: "read_file",
            args: json!({"path": "../outside.txt"}),
            cli_tool: "view",
            cli_args: json!({"path": "../outside.txt"}),
            denied: Some("outside the workspace"),
        },
        Case {
            tool: "shell",
            args: json!({"command": "rm -rf ~"}),
            cli_tool: "bash",
            cli_args: json!({"command": "rm -rf ~"}),
            denied: Some("dangerous command"),
        },
        Case {
            tool: "create_file",
            args: json!({"path": "new.txt", "content": "x"}),
            cli_tool: "create",
            cli_args: json!({"path": "new.txt", "file_text": "x"}),
            denied: Some("read-only"),
        },
        Case {
            tool: "read_file",
            args: json!({"path": ".ssh/id_rsa"}),
            cli_tool: "view",
            cli_args: json!({"path": ".ssh/id_rsa"}),
            denied: Some("blocked_patterns"),
        },
    ]
}

fn rules() -> PermissionRules {
    PermissionRules {
        blocked_tools: vec!["bridgecode__*".to_owned()],
        blocked_patterns: vec![r"\.ssh/".to_owned()],
        ..PermissionRules::default()
    }
}

struct Fixture {
    _registry: SessionRegistry,
    workspace: TempWorkspace,
    session: Arc<Session>,
}

fn fixture() -> Fixture {
    let defaults = SessionDefaults {
        permission: PermissionPolicy::compile(&rules()).unwrap(),
        read_only: true,
        home: Some(Some(PathBuf::from("/home/nobody"))),
        ..SessionDefaults::restrictive().unwrap()
    };
    let registry = SessionRegistry::new(defaults, RegistrySettings::default());
    let workspace = TempWorkspace::new();
    workspace.write("README.md", "# Hello\n");
    let session = registry
        .create(SessionSpec {
            id: Some("one-decision".to_owned()),
            label: "one decision".to_owned(),
            cwd: workspace.path().to_path_buf(),
            foreground: false,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap();
    Fixture {
        _registry: registry,
        workspace,
        session,
    }
}

fn check(door: &str, case: &Case, allowed: bool, reason: &str) {
    match case.denied {
        None => assert!(allowed, "{door}: {} was refused: {reason}", case.tool),
        Some(fragment) => {
            assert!(!allowed, "{door}: {} {} was allowed", case.tool, case.args);
            assert!(
                reason.contains(fragment),
                "{door}: {} {}: {reason:?} lacks {fragment:?}",
                case.tool,
                case.args
            );
        }
    }
}

#[tokio::test]
async fn call_tool_gives_each_case_its_verdict() {
    let fixture = fixture();
    for case in cases() {
        let outcome = fixture
            .session
            .call_tool(case.tool, case.args.clone(), CallOrigin::Rpc)
            .await;
        let reason = match &outcome.result {
            Ok(_) => String::new(),
            Err(failure) => failure.message.clone(),
        };
        check("call_tool", &case, outcome.result.is_ok(), &reason);
        if let Err(failure) = &outcome.result {
            assert!(failure.is_denied(), "{failure}");
        }
    }
}

/// Answers with its arguments.
struct Echo(Mutex<usize>);

#[async_trait]
impl ToolHandler for Echo {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        *self.0.lock().unwrap() += 1;
        Ok(invocation.args)
    }
}

/// A provider's tool gets the permission rules, not containment: its
/// arguments are not paths of this workspace.
#[tokio::test]
async fn a_provider_tool_gets_the_same_rules() {
    let fixture = fixture();
    let echo = Arc::new(Echo(Mutex::new(0)));
    for name in ["fetch_doc", "bridgecode__list"] {
        let owner = ToolOwner::Provider("docs".to_owned());
        fixture
            .session
            .register_tools(
                &owner,
                vec![ToolEntry {
                    spec: ToolSpec {
                        name: name.to_owned(),
                        description: "test".to_owned(),
                        input_schema: json!({"type": "object"}),
                        effect: ToolEffect::Read,
                    },
                    owner: owner.clone(),
                    handler: echo.clone(),
                }],
            )
            .unwrap();
    }
    let call = |name: &'static str, args: Value| {
        let session = fixture.session.clone();
        async move { session.call_tool(name, args, CallOrigin::Gateway).await }
    };
    let blocked = call("fetch_doc", json!({"path": "~/.ssh/id_rsa"})).await;
    assert!(
        blocked
            .result
            .unwrap_err()
            .message
            .contains("blocked_patterns")
    );
    let blocked = call("bridgecode__list", json!({})).await;
    assert!(
        blocked
            .result
            .unwrap_err()
            .message
            .contains("blocked_tools")
    );
    let allowed = call("fetch_doc", json!({"path": "../elsewhere"})).await;
    assert!(allowed.result.is_ok(), "{allowed:?}");
    assert_eq!(*echo.0.lock().unwrap(), 1);
}

/// The model asks for each case's call; the tool result the loop sends
/// back says what the decision said.
#[tokio::test]
async fn the_native_loop_gives_each_case_its_verdict() {
    let cases = cases();
    let calls = cases
        .iter()
        .enumerate()
        .map(|(i, case)| MockToolCall::new(format!("c{i}"), case.tool, case.args.to_string()))
        .collect();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls { text: None, calls },
        MockReply::text("done"),
    ])
    .await;
    let fixture = fixture();
    let mut config = OpenAiConfig::new("mock", format!("{}/v1", mock.base_url()), "m");
    config.request_timeout = Duration::from_secs(5);
    let backend: Arc<dyn ChatBackend> = Arc::new(OpenAiBackend::new(config).unwrap());
    let report = NativeRunner::new(backend, NativeSettings::default())
        .run(
            fixture.session.clone(),
            RunRequest {
                task: "try everything".to_owned(),
                model: None,
                max_turns: 3,
                timeout: Some(Duration::from_secs(20)),
            },
            RunContext::new(CancellationToken::new()),
        )
        .await;
    assert_eq!(report.final_text, "done", "{report:?}");
    let second = mock
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .nth(1)
        .unwrap()
        .body;
    for (i, case) in cases.iter().enumerate() {
        let result = second["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == format!("c{i}"))
            .unwrap_or_else(|| panic!("no result for c{i}"));
        let text = result["content"].as_str().unwrap_or_default();
        let allowed = !text.contains("policy_denied");
        check("native loop", case, allowed, text);
    }
}

/// The Copilot CLI asks its `preToolUse` hook about its own tools.
#[tokio::test]
async fn the_copilot_runner_gives_each_case_its_verdict() {
    let fixture = fixture();
    let mut cases = cases();
    cases.push(Case {
        tool: "bridgecode__copilot_list_files",
        args: json!({}),
        cli_tool: "bridgecode-copilot_list_files",
        cli_args: json!({}),
        denied: Some("blocked_tools"),
    });
    for case in cases {
        let record = fixture.workspace.path().join(".record.jsonl");
        let _ = std::fs::remove_file(&record);
        let config = CopilotCliConfig {
            cli_path: Some(bridge_testkit::built_binary("fake-copilot-cli")),
            mcp_servers: [(
                "bridgecode".to_owned(),
                McpServer::Stdio {
                    command: "true".to_owned(),
                    args: Vec::new(),
                    env: Default::default(),
                    cwd: None,
                    tools: vec!["*".to_owned()],
                },
            )]
            .into_iter()
            .collect(),
            env: vec![
                (
                    "FAKE_COPILOT_RECORD".to_owned(),
                    record.display().to_string(),
                ),
                (
                    "FAKE_COPILOT_TOOL_NAME".to_owned(),
                    case.cli_tool.to_owned(),
                ),
                (
                    "FAKE_COPILOT_TOOL_ARGS".to_owned(),
                    case.cli_args.to_string(),
                ),
            ],
            request_timeout: Duration::from_secs(5),
            ..CopilotCliConfig::default()
        };
        let request = RunRequest {
            task: "try".to_owned(),
            model: None,
            max_turns: 5,
            timeout: Some(Duration::from_secs(20)),
        };
        run_copilot(&fixture.session, &request, &config).await;
        let recorded = std::fs::read_to_string(&record).unwrap();
        let answer: Value = recorded
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find(|message| message["method"] == "_hook_answer")
            .unwrap_or_else(|| panic!("{}: no hook answer in {recorded}", case.cli_tool))["params"]
            ["output"]
            .clone();
        let allowed = answer["permissionDecision"] == "allow";
        let reason = answer["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default();
        check("copilot runner", &case, allowed, reason);
    }
}
