//! The dashboard in real headless Chromium (Debian's `chromium`, driven
//! over DevTools by `bridge_testkit::browser`) against the built daemon:
//! log in through `copilot-bridge ui --no-open`'s URL, see an ask raised
//! through `/rpc` appear live in two tabs, answer it in one (it leaves the
//! other), and the waiting call gets the answer: allowed once, or denied
//! with the reason typed in the page. Screenshots of each page are kept in
//! target/ui-screenshots/.

use std::path::PathBuf;
use std::time::Instant;

use bridge_testkit::TempWorkspace;
use bridge_testkit::browser::{Browser, Tab};

use crate::cli_approvals::{answered, shell_call};
use crate::cli_serve::Served;
use crate::support::Bridge;

fn screenshots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots")
}

async fn login_url(served: &Served) -> String {
    let output = served
        .cli()
        .args(["ui", "--no-open"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The ask for `command` as the tab shows it.
fn shown(command: &str) -> String {
    format!(
        "[...document.querySelectorAll('[data-ask]')].some((card) => card.textContent.includes({command:?}))"
    )
}

async fn approvals_tab(browser: &Browser, served: &Served) -> Tab {
    let mut tab = browser.open(&served.url("/ui/approvals")).await.unwrap();
    tab.wait_until(
        "document.querySelector('h1') && document.querySelector('h1').textContent === 'Approvals'",
    )
    .await
    .unwrap();
    tab
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_answered_from_the_dashboard_and_leaves_every_tab() {
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    );
    let run = tempfile::tempdir().unwrap();
    let Some(browser) = Browser::start(run.path()).await.unwrap() else {
        return;
    };
    // Log in: the one-time URL lands on Overview with the cookie set.
    let mut overview = browser.open(&login_url(&served).await).await.unwrap();
    overview
        .wait_until("location.pathname === '/ui/overview' && document.querySelector('h1')?.textContent === 'Overview'")
        .await
        .unwrap();
    overview
        .wait_until("document.body.innerText.includes('calls wait for an answer')")
        .await
        .unwrap();
    overview
        .screenshot(&screenshots().join("overview.png"))
        .await
        .unwrap();
    // The cookie is HttpOnly: the page's script cannot read it.
    assert_eq!(overview.eval("document.cookie").await.unwrap(), "");

    let mut first = approvals_tab(&browser, &served).await;
    let mut second = approvals_tab(&browser, &served).await;

    // Allow once, from the first tab.
    let command = "python3 -c 'print(6*7)'";
    let raised = Instant::now();
    let call = shell_call(&served, command);
    first.wait_until(&shown(command)).await.unwrap();
    let to_first = raised.elapsed();
    second.wait_until(&shown(command)).await.unwrap();
    first
        .screenshot(&screenshots().join("approvals-pending.png"))
        .await
        .unwrap();
    let clicked = Instant::now();
    first
        .click_button("[data-ask]", "Allow once")
        .await
        .unwrap();
    let ran = answered(call).await;
    let round_trip = clicked.elapsed();
    assert_eq!(ran["result"]["result"]["stdout"], "42\n", "{ran}");
    // Answered in one tab, gone from the other.
    second
        .wait_until(&format!("!{}", shown(command)))
        .await
        .unwrap();
    eprintln!("ask shown after {to_first:?}; click to the call's result {round_trip:?}");
    assert!(
        to_first.as_millis() < 5_000,
        "a new ask shows without reloading: {to_first:?}"
    );

    // Deny with a reason, from the second tab.
    let denied_command = "python3 -c 'print(7*8)'";
    let call = shell_call(&served, denied_command);
    second.wait_until(&shown(denied_command)).await.unwrap();
    second
        .eval("document.querySelector('[data-ask] input').value = 'not on a Friday'")
        .await
        .unwrap();
    second.click_button("[data-ask]", "Deny").await.unwrap();
    let refused = answered(call).await;
    let text = refused.to_string();
    assert!(text.contains("not on a Friday"), "{text}");
    first
        .wait_until(&format!("!{}", shown(denied_command)))
        .await
        .unwrap();
    second
        .screenshot(&screenshots().join("approvals-empty.png"))
        .await
        .unwrap();
}
