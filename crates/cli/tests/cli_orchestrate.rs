//! `copilot-bridge orchestrate` end to end: the built binary against the
//! mock LLM (each sub-task's answers routed by its id), real git worktrees,
//! the orchestration's log on disk, Ctrl-C.

use std::path::Path;
use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply, RecordedRequest, TempWorkspace};
use serde_json::{Value, json};

use crate::support::{Bridge, stdout_json};

pub(crate) fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}")
}

/// `copilot-bridge orchestrate ARGS --cwd WS` aimed at the mock.
pub(crate) fn orchestrate(
    bridge: &Bridge,
    mock: &MockLlm,
    ws: &Path,
    args: &[&str],
) -> assert_cmd::Command {
    let mut cmd = orchestrate_anywhere(bridge, mock, args);
    cmd.arg("--cwd").arg(ws);
    cmd
}

/// `copilot-bridge orchestrate ARGS` aimed at the mock.
pub(crate) fn orchestrate_anywhere(
    bridge: &Bridge,
    mock: &MockLlm,
    args: &[&str],
) -> assert_cmd::Command {
    let mut cmd = bridge.cmd();
    cmd.env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("COPILOT_BYOK_API_KEY", "x")
        .env("COPILOT_BYOK_MODEL", "m")
        .arg("orchestrate")
        .args(args)
        .timeout(Duration::from_secs(120));
    cmd
}

pub(crate) async fn output(mut cmd: assert_cmd::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

pub(crate) fn marker(id: &str) -> String {
    format!("Your sub-task ({id})")
}

/// The chat requests of sub-task `id`.
pub(crate) fn requests_of<'a>(
    requests: &'a [RecordedRequest],
    id: &str,
) -> Vec<&'a RecordedRequest> {
    requests
        .iter()
        .filter(|r| r.body.to_string().contains(&marker(id)))
        .collect()
}

/// A mock answering sub-tasks `t1` and `t2` ("t1 done", "t2 done") and a
/// plan file of them, `t2` after `t1`.
pub(crate) async fn two_task_plan(ws: &TempWorkspace) -> (MockLlm, std::path::PathBuf) {
    let mock = MockLlm::start(vec![]).await;
    for id in ["t1", "t2"] {
        mock.route(marker(id), MockReply::text(format!("{id} done")));
    }
    let plan = plan_file(
        ws,
        "plan.json",
        &json!({"tasks": [{"id": "t1", "description": "first"}, {"id": "t2", "description": "after t1"}],
                "dependencies": {"t2": ["t1"]}}),
    );
    (mock, plan)
}

pub(crate) fn plan_file(ws: &TempWorkspace, name: &str, plan: &Value) -> std::path::PathBuf {
    let dir = tempfile::tempdir().unwrap().keep();
    let file = dir.join(name);
    std::fs::write(&file, plan.to_string()).unwrap();
    let _ = ws;
    file
}

pub(crate) fn statuses(result: &Value) -> Vec<(String, String)> {
    result["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// The events of an orchestration's log: (type, taskId).
fn logged(bridge: &Bridge, id: &str) -> Vec<(String, Option<String>)> {
    let text =
        std::fs::read_to_string(bridge.state.path().join(format!("sessions/{id}.jsonl"))).unwrap();
    text.lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap();
            (
                event["type"].as_str().unwrap().to_owned(),
                event["data"]["taskId"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_plan_runs_in_waves_at_the_asked_concurrency_with_results_passed_on() {
    let mock = MockLlm::start(vec![]).await;
    let plan = json!({"tasks": [
        {"id": "t1", "description": "Read the parser", "estimatedComplexity": "S", "files": [], "readOnly": true},
        {"id": "t2", "description": "Read the lexer", "estimatedComplexity": "S", "files": [], "readOnly": true},
        {"id": "t3", "description": "Read the docs", "estimatedComplexity": "S", "files": [], "readOnly": true},
        {"id": "t4", "description": "Compare parser and lexer", "estimatedComplexity": "M", "files": [], "readOnly": true},
        {"id": "t5", "description": "Compare lexer and docs", "estimatedComplexity": "M", "files": [], "readOnly": true}],
        "dependencies": {"t4": ["t1", "t2"], "t5": ["t2", "t3"]}});
    mock.push(MockReply::text(format!("```json\n{plan}\n```")));
    for id in ["t1", "t2", "t3", "t4", "t5"] {
        mock.route(
            marker(id),
            MockReply::Slow {
                chunks: vec![format!("{id} found its answer")],
                delay_ms: 400,
            },
        );
    }
    let ws = TempWorkspace::new();
    let bridge = Bridge::new();
    let out = output({
        let mut cmd = orchestrate(
            &bridge,
            &mock,
            ws.path(),
            &["Review the front end", "--max-concurrency", "2", "--json"],
        );
        cmd.env("NO_COLOR", "1");
        cmd
    })
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result = stdout_json(&out);
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["waves"], json!([["t1", "t2", "t3"], ["t4", "t5"]]));
    assert_eq!(result["source"], json!({"kind": "model", "repairs": 0}));
    // The plan was asked for with the TaskPlan schema as structured output.
    let requests = mock.requests();
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    assert_eq!(
        requests[0].body["response_format"]["json_schema"]["name"],
        "TaskPlan"
    );
    // Never more than two sub-tasks at the model at once.
    assert_eq!(mock.most_open_chat_bodies(), 2);
    let first = |id: &str| requests_of(&requests, id)[0].received_at;
    let answer = Duration::from_millis(400);
    // t3 waited for a place; the second wave waited for its dependencies.
    assert!(first("t3") >= first("t1").min(first("t2")) + answer);
    for (late, deps) in [("t4", ["t1", "t2"]), ("t5", ["t2", "t3"])] {
        for dep in deps {
            assert!(
                first(late) >= first(dep) + answer,
                "{late} asked before {dep} answered"
            );
            let prompt = requests_of(&requests, late)[0].body.to_string();
            assert!(
                prompt.contains(&format!("{dep} found its answer")),
                "{late}: {prompt}"
            );
        }
    }
    // Live progress on stderr, like cargo's.
    assert!(
        stderr.contains("Planned 5 sub-tasks in 2 waves"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Running t4 (wave 2, native, workspace)"),
        "{stderr}"
    );
    assert!(stderr.contains("Finished t5 in "), "{stderr}");
    // The log holds the plan and each task's start and end, by id.
    let id = result["id"].as_str().unwrap();
    let events = logged(&bridge, id);
    assert_eq!(events[1].0, "plan");
    for task in ["t1", "t2", "t3", "t4", "t5"] {
        for kind in ["task_start", "task_complete"] {
            let found = events
                .iter()
                .filter(|(k, t)| k == kind && t.as_deref() == Some(task))
                .count();
            assert_eq!(found, 1, "{kind} {task}: {events:?}");
        }
    }
    assert_eq!(events.last().unwrap().0, "plan_complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_sub_task_skips_exactly_its_transitive_dependents() {
    let mock = MockLlm::start(vec![]).await;
    mock.route(
        marker("t1"),
        MockReply::error(400, "this model cannot do t1"),
    );
    let ws = TempWorkspace::new();
    let plan = plan_file(
        &ws,
        "plan.json",
        &json!({"tasks": [
        {"id": "t1", "description": "first"}, {"id": "t2", "description": "second"},
        {"id": "t3", "description": "after t1"}, {"id": "t4", "description": "after t3"},
        {"id": "t5", "description": "after t2"}],
        "dependencies": {"t3": ["t1"], "t4": ["t3"], "t5": ["t2"]}}),
    );
    let bridge = Bridge::new();
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", plan.to_str().unwrap(), "--json"],
    ))
    .await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout_json(&out);
    assert_eq!(
        statuses(&result),
        pairs(&[
            ("t1", "failed"),
            ("t2", "completed"),
            ("t3", "skipped"),
            ("t4", "skipped"),
            ("t5", "completed")
        ])
    );
    assert_eq!(result["status"], "partial");
    assert!(
        result["tasks"][0]["error"]
            .as_str()
            .unwrap()
            .contains("this model cannot do t1"),
        "{result:#}"
    );
    assert_eq!(
        result["tasks"][3]["error"],
        "it depends on t3, which was skipped"
    );
    let requests = mock.requests();
    assert!(requests_of(&requests, "t3").is_empty() && requests_of(&requests, "t4").is_empty());
    assert_eq!(result["source"]["kind"], "file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_model_plans_are_repaired_once_then_fall_back_to_one_task() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    // A cycle, then no JSON at all: the whole task runs as one.
    let mock = MockLlm::start(vec![
        MockReply::text(r#"{"tasks": [{"id": "a", "description": "x"}, {"id": "b", "description": "y"}], "dependencies": {"a": ["b"], "b": ["a"]}}"#),
        MockReply::text("Sorry, I cannot plan that."),
        MockReply::text("Did it as one task."),
    ])
    .await;
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["Do the thing", "--json"],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout_json(&out);
    assert_eq!(result["source"]["kind"], "fallback");
    let reason = result["source"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("after one repair") && reason.contains("no JSON object"),
        "{reason}"
    );
    assert_eq!(statuses(&result), pairs(&[("t1", "completed")]));
    assert_eq!(result["plan"]["tasks"][0]["description"], "Do the thing");
    let requests = mock.requests();
    let repair = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .to_string();
    assert!(
        repair.contains("cycle: a → b → a") || repair.contains("cycle: b → a → b"),
        "{repair}"
    );

    // An unknown id, then a good plan: the repaired plan is used.
    let mock = MockLlm::start(vec![
        MockReply::text(r#"{"tasks": [{"id": "t1", "description": "x"}], "dependencies": {"t1": ["t9"]}}"#),
        MockReply::text(r#"{"tasks": [{"id": "t1", "description": "x"}, {"id": "t2", "description": "y"}], "dependencies": {"t2": ["t1"]}}"#),
    ])
    .await;
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["Do the thing", "--plan-only"],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = stdout_json(&out);
    assert_eq!(plan["dependencies"], json!({"t2": ["t1"]}));
    let repair = mock.requests()[1].body.to_string();
    assert!(
        repair.contains("unknown task") && repair.contains("t9"),
        "{repair}"
    );
    // Malformed JSON twice also falls back, and says so.
    let mock = MockLlm::start(vec![
        MockReply::text("{\"tasks\": [}"),
        MockReply::text("{not json"),
    ])
    .await;
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["Do the thing", "--plan-only"],
    ))
    .await;
    assert!(out.status.success());
    assert_eq!(stdout_json(&out)["tasks"][0]["id"], "t1");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Fallback"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_files_with_a_cycle_or_an_unknown_id_are_refused_by_name() {
    let mock = MockLlm::start(vec![]).await;
    let ws = TempWorkspace::new();
    let bridge = Bridge::new();
    let cyclic = plan_file(
        &ws,
        "cyclic.json",
        &json!({"tasks": [
        {"id": "t1", "description": "x"}, {"id": "t2", "description": "y"}],
        "dependencies": {"t1": ["t2"], "t2": ["t1"]}}),
    );
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", cyclic.to_str().unwrap()],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cyclic.json") && stderr.contains("cycle: t1 → t2 → t1"),
        "{stderr}"
    );
    let unknown = plan_file(
        &ws,
        "unknown.yaml",
        &json!({"tasks": [{"id": "t1", "description": "x"}], "dependencies": {"t1": ["nope"]}}),
    );
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", unknown.to_str().unwrap()],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown task \"nope\""));
    // YAML with a variable; a missing variable is named.
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("plan.yaml");
    std::fs::write(
        &yaml,
        "tasks:\n  - id: t1\n    description: Fix {{module}}\n",
    )
    .unwrap();
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", yaml.to_str().unwrap(), "--plan-only"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("{{module}}"));
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &[
            "--plan",
            yaml.to_str().unwrap(),
            "--set",
            "module=parser.rs",
            "--json",
        ],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        mock.requests()[0]
            .body
            .to_string()
            .contains("Fix parser.rs")
    );
    // Bad flags.
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["x", "--max-concurrency", "0"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["x", "--runner", "emacs"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_reruns_only_what_had_not_completed() {
    let mock = MockLlm::start(vec![]).await;
    mock.route(marker("t1"), MockReply::text("t1 is done"));
    mock.route(marker("t2"), MockReply::error(400, "not now"));
    let ws = TempWorkspace::new();
    let plan = plan_file(
        &ws,
        "plan.json",
        &json!({"tasks": [
        {"id": "t1", "description": "first"}, {"id": "t2", "description": "then"}, {"id": "t3", "description": "last"}],
        "dependencies": {"t2": ["t1"], "t3": ["t2"]}}),
    );
    let bridge = Bridge::new();
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", plan.to_str().unwrap(), "--json"],
    ))
    .await;
    let first = stdout_json(&out);
    assert_eq!(
        statuses(&first),
        pairs(&[("t1", "completed"), ("t2", "failed"), ("t3", "skipped")])
    );
    let id = first["id"].as_str().unwrap().to_owned();
    mock.route(marker("t2"), MockReply::text("t2 is done"));
    mock.route(marker("t3"), MockReply::text("t3 is done"));
    let before = requests_of(&mock.requests(), "t1").len();
    // The log knows where it ran: no --cwd.
    let cmd = orchestrate_anywhere(&bridge, &mock, &["--resume", &id, "--json"]);
    let out = output(cmd).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resumed = stdout_json(&out);
    assert_eq!(resumed["id"], id.as_str());
    assert_eq!(
        statuses(&resumed),
        pairs(&[
            ("t1", "completed"),
            ("t2", "completed"),
            ("t3", "completed")
        ])
    );
    assert_eq!(resumed["tasks"][0]["reused"], true);
    assert_eq!(resumed["tasks"][0]["output"], "t1 is done");
    let requests = mock.requests();
    assert_eq!(requests_of(&requests, "t1").len(), before, "t1 ran again");
    // t2 still got t1's result from the log.
    assert!(
        requests_of(&requests, "t2")
            .last()
            .unwrap()
            .body
            .to_string()
            .contains("t1 is done")
    );
    let events = logged(&bridge, &id);
    assert_eq!(
        events.iter().filter(|(k, _)| k == "plan_complete").count(),
        2
    );
    // `sessions show` tells the orchestration's story: the plan, each
    // sub-task's start, end and log, the skipped, the outcome of each run.
    let shown = bridge
        .cmd()
        .args(["sessions", "show", &id])
        .output()
        .unwrap();
    assert!(shown.status.success(), "{shown:?}");
    let story = String::from_utf8_lossy(&shown.stdout);
    for expected in [
        "# Orchestration",
        "3 sub-task(s) in 3 wave(s), plan file",
        "t1 started (wave 0, native); `sessions show ",
        "t1 completed in",
        "t2 failed in",
        "not now",
        "t3 skipped:",
        "t3 completed in",
    ] {
        assert!(
            story.contains(expected),
            "missing {expected:?} in:\n{story}"
        );
    }
    // A log that is not an orchestration is refused.
    let out = output({
        let mut c = bridge.cmd();
        c.args(["orchestrate", "--resume", "no-such-id"]);
        c
    })
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-id"));
}
