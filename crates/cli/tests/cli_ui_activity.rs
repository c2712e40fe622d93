//! The dashboard's Activity page in headless Chromium against the built
//! daemon: the audit log of real tool calls (allowed and denied), paged
//! from disk 50 at a time, filtered by decision through the page's form
//! (the filter in the URL), and the facade's request log.

use bridge_testkit::browser::Browser;
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::json;

use crate::agents::serve_with_env;
use crate::cli_ui_browser::{logged_in_tab, screenshots};

/// Rows of the page's table.
const ROWS: &str = "document.querySelectorAll('#activity tbody tr').length";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_and_request_logs_are_paged_and_filtered_on_the_activity_page() {
    let mock = MockLlm::start(vec![MockReply::text("hello from the mock")]).await;
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "pineapple\n");
    let served = serve_with_env(&mock, workspace, &[("COPILOT_BRIDGE_REQUEST_LOG", "1")]);
    // 60 allowed reads, and one call the policy refuses.
    for _ in 0..60 {
        let read = served
            .rpc(
                "session.tools.call",
                json!({"session": "default", "name": "read_file", "arguments": {"path": "notes.txt"}}),
            )
            .await;
        assert!(read.to_string().contains("pineapple"), "{read}");
    }
    let refused = served
        .rpc_raw(
            "session.tools.call",
            json!({"session": "default", "name": "shell", "arguments": {"command": "sudo rm -rf /tmp/x"}}),
        )
        .await;
    assert!(refused["error"].is_object(), "{refused}");
    // One model request through the facade.
    let answer = reqwest::Client::new()
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .json(&json!({"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
    drop(answer);

    let run = tempfile::tempdir().unwrap();
    let Some(browser) = Browser::start(run.path()).await.unwrap() else {
        return;
    };
    let mut tab = logged_in_tab(&browser, &served, "/ui/activity", "Activity").await;
    // The audit log, newest first, one page of 50.
    tab.wait_until(&format!("{ROWS} === 50")).await.unwrap();
    let first = tab
        .eval("document.querySelector('#activity tbody tr').innerText")
        .await
        .unwrap();
    let first = first.as_str().unwrap();
    assert!(
        first.contains("denied") && first.contains("shell"),
        "{first}"
    );
    tab.click_button("main", "Older entries").await.unwrap();
    tab.wait_until(&format!("{ROWS} === 61")).await.unwrap();
    tab.wait_until("document.querySelector('main button:not([type=submit])')?.hidden === true")
        .await
        .unwrap();
    tab.screenshot(&screenshots().join("activity.png"))
        .await
        .unwrap();

    // Filtered by decision through the form: the filter is in the URL.
    tab.eval("document.querySelector('select[name=decision]').value = 'deny'")
        .await
        .unwrap();
    tab.click_button("form", "Filter").await.unwrap();
    tab.wait_until(&format!(
        "location.search.includes('decision=deny') && {ROWS} === 1"
    ))
    .await
    .unwrap();
    let denied = tab
        .eval("document.querySelector('#activity tbody tr').innerText")
        .await
        .unwrap();
    assert!(denied.as_str().unwrap().contains("sudo rm"), "{denied}");

    // The request log: the model request, its status and model.
    tab.navigate(&served.url("/ui/activity?log=requests"))
        .await
        .unwrap();
    tab.wait_until(&format!("{ROWS} >= 1")).await.unwrap();
    let request = tab
        .eval("document.querySelector('#activity tbody tr').innerText")
        .await
        .unwrap();
    let request = request.as_str().unwrap();
    assert!(
        request.contains("200")
            && request.contains("/v1/chat/completions")
            && request.contains("mock-model"),
        "{request}"
    );
    tab.screenshot(&screenshots().join("activity-requests.png"))
        .await
        .unwrap();

    // A phone-sized window in dark mode: nothing wider than the screen.
    tab.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
    )
    .await
    .unwrap();
    tab.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    )
    .await
    .unwrap();
    for (page, shot) in [
        ("/ui/overview", "overview-phone-dark.png"),
        ("/ui/activity", "activity-phone-dark.png"),
    ] {
        tab.navigate(&served.url(page)).await.unwrap();
        tab.wait_until(
            "document.querySelector('h1') && !document.body.innerText.includes('Loading')",
        )
        .await
        .unwrap();
        let fits = tab
            .eval("document.documentElement.scrollWidth <= window.innerWidth + 1")
            .await
            .unwrap();
        let dark = tab
            .eval("getComputedStyle(document.documentElement).backgroundColor")
            .await
            .unwrap();
        tab.screenshot(&screenshots().join(shot)).await.unwrap();
        assert_eq!(fits, true, "{page} is wider than a phone");
        assert_eq!(dark, "rgb(13, 17, 23)", "{page} in dark mode");
    }
}
