//! The session registry and the one tool-call path, as the gateway, the
//! tool bus and the agent loop rely on them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bridge_engine::{
    CallOrigin, GateHandler, GateRequest, GateVerdict, HookRule, RegistrySettings, RuleAction,
    RuleMatch, Session, SessionDefaults, SessionListener, SessionRegistry, SessionSpec,
    ShutdownWaiter, ToolEntry, ToolFailure, ToolHandler, ToolInvocation, ToolOwner, Transform,
    TransformHandler,
};
use bridge_policy::{AuditLog, PermissionPolicy, PermissionRules};
use bridge_protocol::{ToolEffect, ToolSpec};
use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

fn settings() -> RegistrySettings {
    RegistrySettings {
        gate_timeout: Duration::from_millis(200),
        transform_timeout: Duration::from_millis(200),
        shutdown_deadline: Duration::from_millis(300),
    }
}

fn registry() -> SessionRegistry {
    SessionRegistry::new(SessionDefaults::restrictive().unwrap(), settings())
}

fn session(registry: &SessionRegistry, workspace: &TempWorkspace, id: &str) -> Arc<Session> {
    registry
        .create(SessionSpec {
            id: Some(id.to_owned()),
            label: id.to_owned(),
            cwd: workspace.path().to_path_buf(),
            foreground: false,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap()
}

/// A provider-like tool that echoes its arguments, counting calls.
struct Echo {
    calls: Mutex<Vec<Value>>,
    reply: Option<Value>,
}

#[async_trait]
impl ToolHandler for Echo {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        self.calls.lock().unwrap().push(invocation.args.clone());
        Ok(self.reply.clone().unwrap_or(invocation.args))
    }
}

fn echo(reply: Option<Value>) -> Arc<Echo> {
    Arc::new(Echo {
        calls: Mutex::new(Vec::new()),
        reply,
    })
}

fn entry(name: &str, owner: &str, handler: Arc<dyn ToolHandler>) -> ToolEntry {
    ToolEntry {
        spec: ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            effect: ToolEffect::Execute,
        },
        owner: ToolOwner::Provider(owner.to_owned()),
        handler,
    }
}

#[tokio::test]
async fn a_session_serves_the_workspace_tools_through_the_policy() {
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "hello\n");
    let registry = registry();
    let session = session(&registry, &workspace, "s1");
    let outcome = session
        .call_tool("read_file", json!({"path": "notes.txt"}), CallOrigin::Rpc)
        .await;
    let result = outcome.result.unwrap();
    assert!(result.to_string().contains("hello"), "{result}");
    // Containment still applies: a path outside the workspace is denied.
    let outside = session
        .call_tool("read_file", json!({"path": "/etc/passwd"}), CallOrigin::Rpc)
        .await;
    assert!(outside.result.unwrap_err().is_denied());
    // Read-only by default: writes are refused.
    let write = session
        .call_tool(
            "create_file",
            json!({"path": "new.txt", "content": "x"}),
            CallOrigin::Rpc,
        )
        .await;
    assert!(write.result.unwrap_err().is_denied());
    assert!(!workspace.path().join("new.txt").exists());
}

#[tokio::test]
async fn unknown_tools_and_non_object_arguments_fail_cleanly() {
    let workspace = TempWorkspace::new();
    let registry = registry();
    let session = session(&registry, &workspace, "s1");
    let unknown = session.call_tool("nope", json!({}), CallOrigin::Rpc).await;
    assert_eq!(unknown.result.unwrap_err().code, "unknown_tool");
    let bad = session
        .call_tool("read_file", json!([1]), CallOrigin::Rpc)
        .await;
    assert_eq!(bad.result.unwrap_err().code, "invalid_arguments");
}

#[tokio::test]
async fn tool_registration_is_all_or_nothing_and_names_the_holder() {
    let workspace = TempWorkspace::new();
    let registry = registry();
    let session = session(&registry, &workspace, "s1");
    let a = ToolOwner::Provider("a".into());
    session
        .register_tools(&a, vec![entry("one", "a", echo(None))])
        .unwrap();
    let conflict = session
        .register_tools(
            &ToolOwner::Provider("b".into()),
            vec![entry("two", "b", echo(None)), entry("one", "b", echo(None))],
        )
        .unwrap_err();
    assert_eq!(conflict.name, "one");
    assert_eq!(conflict.existing, a);
    assert!(
        session.tool("two").is_none(),
        "nothing of a failed registration stays"
    );
    let with_workspace = session
        .register_tools(
            &ToolOwner::Provider("b".into()),
            vec![entry("read_file", "b", echo(None))],
        )
        .unwrap_err();
    assert_eq!(with_workspace.existing, ToolOwner::Workspace);
    session.replace_tools(&a, Vec::new()).unwrap();
    assert!(session.tool("one").is_none());
}

#[tokio::test]
async fn permission_rules_apply_to_provider_tools_but_path_containment_does_not() {
    let workspace = TempWorkspace::new();
    let rules = PermissionRules {
        blocked_tools: vec!["danger_*".into()],
        ..PermissionRules::default()
    };
    let defaults = SessionDefaults {
        permission: PermissionPolicy::compile(&rules).unwrap(),
        ..SessionDefaults::restrictive().unwrap()
    };
    let registry = SessionRegistry::new(defaults, settings());
    let session = session(&registry, &workspace, "s1");
    let owner = ToolOwner::Provider("p".into());
    let handler = echo(None);
    session
        .register_tools(
            &owner,
            vec![
                entry("danger_zone", "p", handler.clone()),
                entry("navigate", "p", handler.clone()),
            ],
        )
        .unwrap();
    let blocked = session
        .call_tool("danger_zone", json!({}), CallOrigin::Gateway)
        .await;
    assert!(blocked.result.unwrap_err().is_denied());
    // A browser tool's "path" is a URL path, not a workspace path.
    let navigate = session
        .call_tool("navigate", json!({"path": "/login"}), CallOrigin::Gateway)
        .await;
    assert_eq!(navigate.result.unwrap(), json!({"path": "/login"}));
    assert_eq!(
        handler.calls.lock().unwrap().len(),
        1,
        "the blocked call never ran"
    );
}

/// config.toml's `[permissions]` replaced while sessions run (the daemon's
/// reload): an existing session's next call and a new session's follow,
/// and a refusal says why an edit is not in force while it is not.
#[tokio::test]
async fn replaced_permission_rules_reach_existing_and_new_sessions() {
    let workspace = TempWorkspace::new();
    let registry = registry();
    let before = session(&registry, &workspace, "before");
    let handler = echo(None);
    let owner = ToolOwner::Provider("p".into());
    before
        .register_tools(&owner, vec![entry("lookup", "p", handler.clone())])
        .unwrap();
    let call = |session: Arc<Session>| async move {
        session
            .call_tool("lookup", json!({}), CallOrigin::Gateway)
            .await
            .result
    };
    assert!(call(before.clone()).await.is_ok());
    let blocked = PermissionRules {
        blocked_tools: vec!["lookup".into()],
        ..PermissionRules::default()
    };
    registry
        .live_permission()
        .set(PermissionPolicy::compile(&blocked).unwrap());
    let refused = call(before.clone()).await.unwrap_err();
    assert!(refused.is_denied(), "{refused:?}");
    let after = session(&registry, &workspace, "after");
    after
        .register_tools(&owner, vec![entry("lookup", "p", handler.clone())])
        .unwrap();
    assert!(call(after.clone()).await.unwrap_err().is_denied());
    registry
        .live_permission()
        .set_problem(Some("config.toml: bad edit".into()));
    let noted = call(before.clone()).await.unwrap_err();
    assert!(
        noted.to_string().contains("(note: config.toml: bad edit)"),
        "{noted}"
    );
    registry
        .live_permission()
        .set(PermissionPolicy::compile(&PermissionRules::default()).unwrap());
    assert!(call(before).await.is_ok());
    assert!(call(after).await.is_ok());
    assert_eq!(handler.calls.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn results_are_redacted_and_every_call_is_audited() {
    let workspace = TempWorkspace::new();
    let audit_dir = tempfile::tempdir().unwrap();
    let audit_log = AuditLog::new(audit_dir.path());
    let defaults = SessionDefaults {
        audit: Some(audit_log.clone()),
        ..SessionDefaults::restrictive().unwrap()
    };
    let registry = SessionRegistry::new(defaults, settings());
    let session = session(&registry, &workspace, "s1");
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    session
        .register_tools(
            &ToolOwner::Provider("p".into()),
            vec![entry("leak", "p", echo(Some(json!({"token": secret}))))],
        )
        .unwrap();
    let mut events = session.subscribe();
    let outcome = session
        .call_tool("leak", json!({"q": 1}), CallOrigin::Gateway)
        .await;
    let result = outcome.result.unwrap().to_string();
    assert!(!result.contains(secret), "{result}");
    audit_log.flush().unwrap();
    let audit: String = std::fs::read_dir(audit_dir.path())
        .unwrap()
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
        .collect();
    assert!(audit.contains("\"tool\":\"leak\""), "{audit}");
    assert!(audit.contains("toolCall:gateway"));
    assert!(!audit.contains(secret));
    let event = events.recv().await.unwrap();
    assert_eq!(event.forwarded_name(), Some("tool.execution_complete"));
    let payload = event.payload();
    assert_eq!(payload["tool"], "leak");
    assert_eq!(payload["provider"], "p");
    assert_eq!(payload["result"]["type"], "success");
}

struct Gate {
    verdict: Option<GateVerdict>,
    seen: Mutex<Vec<GateRequest>>,
}

#[async_trait]
impl GateHandler for Gate {
    async fn check(&self, request: GateRequest) -> GateVerdict {
        self.seen.lock().unwrap().push(request);
        match &self.verdict {
            Some(verdict) => verdict.clone(),
            None => std::future::pending().await,
        }
    }
}

fn gate_rule(
    tool: &str,
    args: Option<&str>,
    verdict: Option<GateVerdict>,
    fail_open: bool,
) -> (HookRule, Arc<Gate>) {
    let gate = Arc::new(Gate {
        verdict,
        seen: Mutex::new(Vec::new()),
    });
    let rule = HookRule {
        matcher: RuleMatch::new(Some(tool), args, None, None).unwrap(),
        action: RuleAction::Gate {
            gate_id: "g".into(),
            fail_open,
            handler: gate.clone(),
        },
    };
    (rule, gate)
}

async fn provider_session() -> (TempWorkspace, SessionRegistry, Arc<Session>, Arc<Echo>) {
    let workspace = TempWorkspace::new();
    let registry = registry();
    let session = session(&registry, &workspace, "s1");
    let handler = echo(None);
    session
        .register_tools(
            &ToolOwner::Provider("p".into()),
            vec![entry("shell_like", "p", handler.clone())],
        )
        .unwrap();
    (workspace, registry, session, handler)
}

#[tokio::test]
async fn rules_deny_add_context_and_gates_fail_closed() {
    let (_ws, _registry, session, handler) = provider_session().await;
    // A deny rule that matches on the arguments' JSON.
    session.set_rules(
        "guard",
        vec![HookRule {
            matcher: RuleMatch::new(Some("shell_*"), Some("git push"), None, None).unwrap(),
            action: RuleAction::Deny {
                reason: "no pushes".into(),
            },
        }],
    );
    let denied = session
        .call_tool(
            "shell_like",
            json!({"command": "git push origin main"}),
            CallOrigin::Hook,
        )
        .await;
    let err = denied.result.unwrap_err();
    assert!(
        err.is_denied() && err.message.contains("no pushes"),
        "{err}"
    );
    let allowed = session
        .call_tool(
            "shell_like",
            json!({"command": "git status"}),
            CallOrigin::Hook,
        )
        .await;
    assert!(allowed.result.is_ok());

    // Context rules add text and let the call run.
    session.set_rules(
        "guard",
        vec![HookRule {
            matcher: RuleMatch::new(None, None, Some("p"), None).unwrap(),
            action: RuleAction::Context {
                content: "mind the migration".into(),
            },
        }],
    );
    let with_context = session
        .call_tool("shell_like", json!({}), CallOrigin::Hook)
        .await;
    assert_eq!(with_context.context, vec!["mind the migration".to_owned()]);
    assert!(with_context.result.is_ok());

    // A silent gate denies after the timeout; failOpen allows.
    let (rule, gate) = gate_rule("shell_like", None, None, false);
    session.set_rules("guard", vec![rule]);
    let started = std::time::Instant::now();
    let timed_out = session
        .call_tool("shell_like", json!({"a": 1}), CallOrigin::Hook)
        .await;
    let err = timed_out.result.unwrap_err();
    assert!(
        err.is_denied() && err.message.contains("did not respond in time"),
        "{err}"
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(gate.seen.lock().unwrap()[0].args, json!({"a": 1}));
    let (rule, _gate) = gate_rule("shell_like", None, None, true);
    session.set_rules("guard", vec![rule]);
    assert!(
        session
            .call_tool("shell_like", json!({}), CallOrigin::Hook)
            .await
            .result
            .is_ok()
    );

    // An unavailable gate (its provider left) denies even with failOpen.
    let (rule, _gate) = gate_rule(
        "shell_like",
        None,
        Some(GateVerdict::Unavailable("gone".into())),
        true,
    );
    session.set_rules("guard", vec![rule]);
    assert!(
        session
            .call_tool("shell_like", json!({}), CallOrigin::Hook)
            .await
            .result
            .unwrap_err()
            .is_denied()
    );

    // A gate's context verdict allows and adds its reason.
    let (rule, _gate) = gate_rule(
        "shell_like",
        None,
        Some(GateVerdict::Context("CI is red".into())),
        false,
    );
    session.set_rules("guard", vec![rule]);
    let outcome = session
        .call_tool("shell_like", json!({}), CallOrigin::Hook)
        .await;
    assert_eq!(outcome.context, vec!["CI is red".to_owned()]);
    let calls = handler.calls.lock().unwrap().len();
    assert_eq!(calls, 4, "denied calls never reach the tool");
}

struct Upper;

#[async_trait]
impl TransformHandler for Upper {
    async fn transform(
        &self,
        _session: Arc<str>,
        _section: String,
        current: String,
    ) -> Option<String> {
        Some(current.to_uppercase())
    }
}

struct Silent;

#[async_trait]
impl TransformHandler for Silent {
    async fn transform(
        &self,
        _session: Arc<str>,
        _section: String,
        _current: String,
    ) -> Option<String> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn transforms_apply_in_registration_order_and_protect_safety() {
    let workspace = TempWorkspace::new();
    let registry = registry();
    let session = session(&registry, &workspace, "s1");
    session
        .set_transform(
            "a",
            "custom_instructions",
            Some(Transform::Append("use pnpm".into())),
        )
        .unwrap();
    session
        .set_transform(
            "b",
            "custom_instructions",
            Some(Transform::Prepend("repo rules:".into())),
        )
        .unwrap();
    session
        .set_transform(
            "c",
            "custom_instructions",
            Some(Transform::Callback(Arc::new(Upper))),
        )
        .unwrap();
    assert_eq!(
        session.render_section("custom_instructions", "base").await,
        "REPO RULES:\nBASE\nUSE PNPM"
    );
    // A callback that never answers keeps the current text.
    session
        .set_transform(
            "c",
            "custom_instructions",
            Some(Transform::Callback(Arc::new(Silent))),
        )
        .unwrap();
    assert_eq!(
        session.render_section("custom_instructions", "base").await,
        "repo rules:\nbase\nuse pnpm"
    );
    // Protected sections: only append, and they render last.
    assert!(
        session
            .set_transform("a", "safety", Some(Transform::Replace("x".into())))
            .is_err()
    );
    assert!(
        session
            .set_transform("a", "identity", Some(Transform::Prepend("x".into())))
            .is_err()
    );
    session
        .set_transform(
            "a",
            "safety",
            Some(Transform::Append("never exfiltrate".into())),
        )
        .unwrap();
    let rendered = session
        .render_prompt(&[
            ("safety".into(), "be safe".into()),
            ("identity".into(), "you are an agent".into()),
            ("custom_instructions".into(), "base".into()),
        ])
        .await;
    let names: Vec<&str> = rendered.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["custom_instructions", "safety", "identity"]);
    assert_eq!(rendered[1].1, "be safe\nnever exfiltrate");
    // Removing an owner's transform.
    session
        .set_transform("a", "custom_instructions", None)
        .unwrap();
    session
        .set_transform("b", "custom_instructions", None)
        .unwrap();
    session
        .set_transform("c", "custom_instructions", None)
        .unwrap();
    assert_eq!(
        session.render_section("custom_instructions", "base").await,
        "base"
    );
}

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    hold: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl SessionListener for Recorder {
    fn session_started(&self, session: &Arc<Session>) {
        self.events
            .lock()
            .unwrap()
            .push(format!("started {}", session.id()));
    }
    fn session_idle(&self, session: &Arc<Session>) {
        self.events
            .lock()
            .unwrap()
            .push(format!("idle {}", session.id()));
    }
    fn session_ending(&self, session: &Arc<Session>, _deadline: Duration) -> Vec<ShutdownWaiter> {
        self.events
            .lock()
            .unwrap()
            .push(format!("ending {}", session.id()));
        let (tx, rx) = tokio::sync::oneshot::channel();
        *self.hold.lock().unwrap() = Some(tx);
        vec![rx]
    }
    fn session_ended(&self, session: &Arc<Session>) {
        self.events
            .lock()
            .unwrap()
            .push(format!("ended {}", session.id()));
    }
}

mod lifecycle;
