//! What the model is sent: `onUserPromptSubmitted`'s context and
//! redaction, transforms of the system prompt, safety and identity last.

use std::sync::Arc;

use bridge_engine::Transform;
use bridge_engine::runner::RunStatus;
use bridge_engine::runner::Runner;
use bridge_engine::runner::native::NativeSettings;
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use tokio_util::sync::CancellationToken;

use super::{
    Logged, chats, fast_settings, hook_ends, new_session, of_kind, request, runner, system_text,
};

const TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
const CONTEXT_TOKEN: &str = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_transforms_and_redaction_reach_the_model_as_documented() {
    let mock = MockLlm::start(vec![MockReply::text("ok")]).await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    session.set_context("ci", Some("CI-IS-GREEN on main".to_owned()));
    session.set_startup_context("docs", Some("STARTUP-NOTE from docs".to_owned()));
    session
        .set_transform(
            "lint",
            "instructions",
            Some(Transform::Append("APPENDED-BY-LINT".to_owned())),
        )
        .unwrap();
    session
        .set_transform(
            "lint",
            "late_section",
            Some(Transform::Append("LATE-SECTION-TEXT".to_owned())),
        )
        .unwrap();
    session
        .set_transform(
            "guard",
            "safety",
            Some(Transform::Append("EXTRA-SAFETY-RULE".to_owned())),
        )
        .unwrap();
    // Safety may only be appended to.
    assert!(
        session
            .set_transform(
                "guard",
                "safety",
                Some(Transform::Replace("nothing".into()))
            )
            .is_err()
    );
    let settings = NativeSettings {
        project_context: Some(format!("PROJECT-CTX: Rust workspace, key {CONTEXT_TOKEN}")),
        ..fast_settings()
    };
    let logged = Logged::new().await;

    let report = runner(&mock, settings)
        .run(
            Arc::clone(&session),
            request(&format!("deploy with token {TOKEN} please")),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    let chats = chats(&mock);
    let chat = &chats[0];
    // No secret reached the upstream, anywhere in the request.
    let wire = chat.to_string();
    assert!(!wire.contains(TOKEN), "{wire}");
    assert!(!wire.contains(CONTEXT_TOKEN), "{wire}");
    // The user message: the task, then project context, then ambient context.
    let messages = chat["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["role"], "user");
    let user = messages[1]["content"].as_str().unwrap();
    assert!(user.starts_with("deploy with token [REDACTED"), "{user}");
    let project = user
        .find("<project_context>\nPROJECT-CTX: Rust workspace")
        .unwrap();
    let ambient = user
        .find("<context source=\"ci\">\nCI-IS-GREEN on main\n</context>")
        .unwrap();
    assert!(project < ambient, "{user}");
    // The system prompt: transforms applied, safety and identity last.
    let system = system_text(chat);
    let at = |text: &str| {
        system
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} missing from the system prompt:\n{system}"))
    };
    assert!(at("STARTUP-NOTE from docs") > at("Workspace root:"));
    assert!(
        at("APPENDED-BY-LINT") < at("Workspace root:"),
        "appended to instructions"
    );
    let identity = at("You are the coding agent of copilot-bridge");
    let safety = at("Every tool call passes the user's security policy");
    for unprotected in ["APPENDED-BY-LINT", "STARTUP-NOTE", "LATE-SECTION-TEXT"] {
        assert!(
            at(unprotected) < identity,
            "{unprotected} after identity:\n{system}"
        );
    }
    assert!(identity < safety);
    assert!(system.trim_end().ends_with("EXTRA-SAFETY-RULE"), "{system}");
    // The log keeps the redacted prompt and says what the hook did.
    let events = logged.events().await;
    let logged_prompt = &of_kind(&events, "user.message")[0].data["content"];
    assert_eq!(logged_prompt.as_str().unwrap(), user);
    let submitted = hook_ends(&events, "onUserPromptSubmitted");
    assert_eq!(submitted.len(), 1);
    assert_eq!(submitted[0]["redacted"], true);
    assert_eq!(
        submitted[0]["injected"],
        serde_json::json!(["project_context", "ci"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_task_is_sent_unchanged_with_the_base_system_prompt() {
    let mock = MockLlm::start(vec![MockReply::text("ok")]).await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let logged = Logged::new().await;

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            request("list the files"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    let chat = &chats(&mock)[0];
    assert_eq!(chat["messages"][1]["content"], "list the files");
    let system = system_text(chat);
    assert!(system.contains(&format!("Workspace root: {}", workspace.path().display())));
    assert!(
        system
            .trim_end()
            .ends_with("never act outside the workspace."),
        "{system}"
    );
    // Nothing was injected or redacted, so the hook left no trace.
    assert!(hook_ends(&logged.events().await, "onUserPromptSubmitted").is_empty());
}
