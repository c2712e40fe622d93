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
use crate::cli_ui::login_url;
use crate::support::Bridge;

/// `serve` whose asks wait a minute for an answer from the page.
fn served_waiting_for_people() -> Served {
    Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    )
}

pub(crate) fn screenshots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots")
}

/// A tab logged in through `ui --no-open`'s URL, then showing `path`
/// (whose heading is `heading`).
pub(crate) async fn logged_in_tab(
    browser: &Browser,
    served: &Served,
    path: &str,
    heading: &str,
) -> Tab {
    let mut tab = browser.open(&login_url(served).await).await.unwrap();
    tab.wait_until("location.pathname === '/ui/overview'")
        .await
        .unwrap();
    tab.navigate(&served.url(path)).await.unwrap();
    tab.wait_until(&format!(
        "document.querySelector('h1')?.textContent === {heading:?}"
    ))
    .await
    .unwrap();
    tab
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
    let served = served_waiting_for_people();
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

    // Configuration: every setting with where it came from.
    first
        .navigate(&served.url("/ui/configuration"))
        .await
        .unwrap();
    first
        .wait_until("[...document.querySelectorAll('tr')].some((row) => row.innerText.includes('approvals.timeout_secs') && row.innerText.includes('60') && row.innerText.includes('COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS'))")
        .await
        .unwrap();
    first
        .screenshot(&screenshots().join("configuration.png"))
        .await
        .unwrap();
}

/// Serves `html` to every request on a port of its own: another origin
/// of this machine, which the browser counts as the same site as the
/// daemon (cookies ignore ports).
async fn serve_page(html: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let html = html.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buffer = [0u8; 4096];
                let _ = socket.read(&mut buffer).await;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
                    html.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_local_port_can_neither_act_nor_listen_nor_frame() {
    let served = served_waiting_for_people();
    let run = tempfile::tempdir().unwrap();
    let Some(browser) = Browser::start(run.path()).await.unwrap() else {
        return;
    };
    // The browser holds a logged-in session cookie.
    let mut own = browser.open(&login_url(&served).await).await.unwrap();
    own.wait_until("document.querySelector('h1')?.textContent === 'Overview'")
        .await
        .unwrap();
    let command = "python3 -c 'print(1)'";
    let call = shell_call(&served, command);
    own.navigate(&served.url("/ui/approvals")).await.unwrap();
    own.wait_until(&shown(command)).await.unwrap();
    let id = own
        .eval("document.querySelector('[data-ask]').dataset.ask")
        .await
        .unwrap();
    let id = id.as_str().unwrap().to_owned();

    // The strongest attacker page knows the ask's id.
    let daemon = format!("http://127.0.0.1:{}", served.port);
    let evil = serve_page(format!(
        r#"<!doctype html><title>evil</title><iframe id="frame" src="{daemon}/ui/approvals"></iframe>
<script>
window.results = {{}};
const answer = JSON.stringify({{jsonrpc: '2.0', id: 1, method: 'approvals.answer',
  params: {{id: '{id}', decision: 'allow'}}}});
fetch('{daemon}/ui/api/rpc', {{method: 'POST', mode: 'no-cors', credentials: 'include',
  headers: {{'content-type': 'text/plain'}}, body: answer}})
  .then((r) => window.results.post = 'sent ' + r.type).catch((e) => window.results.post = 'failed ' + e);
fetch('{daemon}/ui/api/session', {{credentials: 'include'}})
  .then((r) => r.text()).then((t) => window.results.session = t).catch((e) => window.results.session = 'failed ' + e);
const events = new EventSource('{daemon}/ui/api/stream', {{withCredentials: true}});
events.addEventListener('approval', () => window.results.streamed = true);
events.onerror = () => {{ window.results.streamError = true; events.close(); }};
</script>"#
    ))
    .await;
    let mut attacker = browser
        .open(&format!("http://127.0.0.1:{evil}/"))
        .await
        .unwrap();
    attacker
        .wait_until("window.results.post && window.results.session && window.results.streamError")
        .await
        .unwrap();
    let results = attacker.eval("window.results").await.unwrap();
    // It could not read the session (and so never the CSRF token), nor
    // hear the stream.
    assert!(
        results["session"].as_str().unwrap().starts_with("failed"),
        "{results}"
    );
    assert_ne!(results["streamed"], true, "{results}");
    // The frame stayed empty: the dashboard cannot be framed.
    let framed = attacker
        .eval("(() => { try { return document.getElementById('frame').contentDocument?.body?.innerText ?? 'blocked'; } catch (e) { return 'blocked'; } })()")
        .await
        .unwrap();
    assert!(!framed.to_string().contains("Approvals"), "{framed}");
    attacker
        .screenshot(&screenshots().join("another-origin.png"))
        .await
        .unwrap();
    // The ask is still waiting: the attacker's answer never counted.
    own.wait_until(&shown(command)).await.unwrap();
    own.click_button("[data-ask]", "Deny").await.unwrap();
    let refused = answered(call).await;
    assert!(refused.to_string().contains("denied by web"), "{refused}");
}

/// An orchestration started through `/rpc` with a given plan (two tasks,
/// then one after both), its sub-tasks answered by the mock slowly enough
/// to be seen running: the Orchestrations page lists it by itself and
/// shows its DAG, wave by wave, until every task completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrations_dag_shows_its_tasks_running_and_completing() {
    let mock = bridge_testkit::MockLlm::start(vec![]).await;
    // Long enough to be seen running even on a loaded machine.
    for (id, delay_ms) in [("look", 12_000), ("count", 12_000), ("conclude", 200)] {
        mock.route(
            format!("Your sub-task ({id})"),
            bridge_testkit::MockReply::Slow {
                chunks: vec![format!("{id} done")],
                delay_ms,
            },
        );
    }
    let served = crate::agents::serve_with(&mock, TempWorkspace::new());
    let run = tempfile::tempdir().unwrap();
    let Some(browser) = Browser::start(run.path()).await.unwrap() else {
        return;
    };
    let mut tab = logged_in_tab(&browser, &served, "/ui/orchestrations", "Orchestrations").await;
    let plan = serde_json::json!({
        "tasks": [{"id": "look", "description": "Look around", "readOnly": true},
                  {"id": "count", "description": "Count the files", "readOnly": true},
                  {"id": "conclude", "description": "Say what was found", "readOnly": true}],
        "dependencies": {"conclude": ["look", "count"]}});
    let started = served
        .rpc(
            "orchestrate.start",
            serde_json::json!({"plan": plan, "maxConcurrency": 2}),
        )
        .await;
    let id = started["id"]
        .as_str()
        .unwrap_or_else(|| panic!("started: {started}"))
        .to_owned();
    // Listed by itself, then opened.
    tab.wait_until(&format!("!!document.querySelector('[data-plan=\"{id}\"]')"))
        .await
        .unwrap();
    tab.navigate(&served.url(&format!("/ui/orchestrations/{id}")))
        .await
        .unwrap();
    let state =
        |task: &str| format!("document.querySelector('[data-task=\"{task}\"]')?.dataset.state");
    tab.wait_until(&format!("{} === 'running'", state("look")))
        .await
        .unwrap();
    let waves = tab
        .eval("[...document.querySelectorAll('.wave')].map((wave) => [...wave.querySelectorAll('[data-task]')].map((task) => task.dataset.task).join(','))")
        .await
        .unwrap();
    assert_eq!(waves, serde_json::json!(["look,count", "conclude"]));
    assert_eq!(
        tab.eval(&format!("{} ?? null", state("conclude")))
            .await
            .unwrap(),
        "waiting"
    );
    tab.screenshot(&screenshots().join("orchestration-running.png"))
        .await
        .unwrap();
    for task in ["look", "count", "conclude"] {
        tab.wait_until(&format!("{} === 'completed'", state(task)))
            .await
            .unwrap();
    }
    tab.wait_until("document.getElementById('plan-status').innerText.startsWith('completed')")
        .await
        .unwrap();
    let card = tab
        .eval("document.querySelector('[data-task=\"conclude\"]').innerText")
        .await
        .unwrap();
    let card = card.as_str().unwrap();
    assert!(
        card.contains("after look, count") && card.contains("completed in"),
        "{card}"
    );
    tab.screenshot(&screenshots().join("orchestration.png"))
        .await
        .unwrap();
}
