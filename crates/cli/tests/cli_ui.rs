//! The dashboard's doors, with the built binary: `copilot-bridge ui
//! --no-open` prints one login URL; the code logs in once; without the
//! session cookie every data route and the live stream answer 401; a
//! request from another origin (another local port included), without the
//! CSRF token, or for a method the dashboard may not call is refused; the
//! page cannot be framed and carries no secret.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::cli_serve::Served;

/// A client that never follows redirects (the login answers one).
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `copilot-bridge ui --no-open`'s one line.
pub(crate) async fn login_url(served: &Served) -> String {
    let output = served
        .cli()
        .args(["ui", "--no-open"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one URL: {stdout:?}");
    let url = lines[0].to_owned();
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{}/ui/login?code=", served.port)),
        "{url}"
    );
    url
}

/// Logs in with `url`: the session cookie (`name=value`).
async fn log_in(url: &str) -> String {
    let response = client().get(url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], "/ui/overview");
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/ui"),
        "{cookie}"
    );
    cookie.split(';').next().unwrap().to_owned()
}

fn with(cookie: &str, extra: &[(&str, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("cookie", HeaderValue::from_str(cookie).unwrap());
    for (name, value) in extra {
        headers.insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    headers
}

async fn csrf_of(served: &Served, cookie: &str) -> String {
    let session: Value = client()
        .get(served.url("/ui/api/session"))
        .headers(with(cookie, &[]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    session["csrf"].as_str().unwrap().to_owned()
}

async fn rpc(served: &Served, headers: HeaderMap, method: &str) -> reqwest::Response {
    client()
        .post(served.url("/ui/api/rpc"))
        .headers(headers)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_login_code_works_once_and_every_data_route_needs_the_cookie() {
    let served = Served::start();
    let http = client();
    // Without a cookie: 401 everywhere but the shell and the login.
    for path in ["/ui/api/session", "/ui/api/stream"] {
        let response = http.get(served.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let response = rpc(&served, HeaderMap::new(), "approvals.list").await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let shell = http.get(served.url("/ui/overview")).send().await.unwrap();
    assert_eq!(shell.status(), StatusCode::OK);

    let url = login_url(&served).await;
    let cookie = log_in(&url).await;
    assert!(cookie.starts_with(&format!("copilot_bridge_ui_{}=", served.port)));
    // The code is used up.
    let again = http.get(&url).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::UNAUTHORIZED);
    let wrong = http
        .get(served.url("/ui/login?code=0123"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    let csrf = csrf_of(&served, &cookie).await;
    let listed = rpc(
        &served,
        with(&cookie, &[("x-csrf-token", &csrf)]),
        "approvals.list",
    )
    .await;
    assert_eq!(listed.status(), StatusCode::OK);
    let listed: Value = listed.json().await.unwrap();
    assert_eq!(listed["result"]["asks"], json!([]), "{listed}");

    // Logging out ends the session.
    let out = http
        .post(served.url("/ui/logout"))
        .headers(with(&cookie, &[("x-csrf-token", &csrf)]))
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), StatusCode::NO_CONTENT);
    let after = http
        .get(served.url("/ui/api/session"))
        .headers(with(&cookie, &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn other_origins_missing_csrf_tokens_and_other_methods_are_refused() {
    let served = Served::start();
    let cookie = log_in(&login_url(&served).await).await;
    let csrf = csrf_of(&served, &cookie).await;
    let other_port = format!("http://127.0.0.1:{}", served.port.wrapping_add(1));
    for (extra, why) in [
        (vec![], "no CSRF token"),
        (vec![("x-csrf-token", "0000")], "a wrong CSRF token"),
        (
            vec![
                ("x-csrf-token", csrf.as_str()),
                ("origin", other_port.as_str()),
            ],
            "another local port's page",
        ),
        (
            vec![
                ("x-csrf-token", csrf.as_str()),
                ("origin", "https://evil.example"),
            ],
            "another site's page",
        ),
        (
            vec![
                ("x-csrf-token", csrf.as_str()),
                ("sec-fetch-site", "same-site"),
            ],
            "a same-site page",
        ),
    ] {
        let response = rpc(&served, with(&cookie, &extra), "approvals.list").await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{why}");
    }
    // The stream too, from another local port's page.
    let stream = client()
        .get(served.url("/ui/api/stream"))
        .headers(with(&cookie, &[("origin", other_port.as_str())]))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::FORBIDDEN);
    // Its own origin is fine; a method beyond the dashboard's is not.
    let own = format!("http://127.0.0.1:{}", served.port);
    let ok = rpc(
        &served,
        with(&cookie, &[("x-csrf-token", &csrf), ("origin", &own)]),
        "approvals.list",
    )
    .await;
    assert_eq!(ok.status(), StatusCode::OK);
    // The configuration is the person's to see, not an agent's.
    let config = rpc(
        &served,
        with(&cookie, &[("x-csrf-token", &csrf)]),
        "bridge.config",
    )
    .await;
    assert_eq!(config.status(), StatusCode::OK);
    let config: Value = config.json().await.unwrap();
    assert!(config["result"]["config"]["values"].is_array(), "{config}");
    let as_agent = served.rpc_raw("bridge.config", json!({})).await;
    assert_eq!(as_agent["error"]["code"], -32010, "{as_agent}");
    let beyond = rpc(
        &served,
        with(&cookie, &[("x-csrf-token", &csrf)]),
        "session.tools.call",
    )
    .await;
    assert_eq!(beyond.status(), StatusCode::FORBIDDEN);
    // Malformed and oversized bodies get a clear refusal, and it goes on.
    let malformed = client()
        .post(served.url("/ui/api/rpc"))
        .headers(with(&cookie, &[("x-csrf-token", &csrf)]))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    let huge = client()
        .post(served.url("/ui/api/rpc"))
        .headers(with(&cookie, &[("x-csrf-token", &csrf)]))
        .body(vec![b' '; 200 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(huge.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let still = rpc(
        &served,
        with(&cookie, &[("x-csrf-token", &csrf)]),
        "bridge.status",
    )
    .await;
    assert_eq!(still.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_page_cannot_be_framed_caches_right_and_holds_no_secret() {
    let served = Served::start();
    let http = client();
    let shell = http.get(served.url("/ui/approvals")).send().await.unwrap();
    let headers = shell.headers().clone();
    assert_eq!(headers["cache-control"], "no-store");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let page = shell.text().await.unwrap();
    let approver = std::fs::read_to_string(served.state().join("approver-token")).unwrap();
    let mut seen = page.clone();
    let assets: Vec<String> = page
        .split('"')
        .filter(|part| part.starts_with("/ui/assets/"))
        .map(str::to_owned)
        .collect();
    assert_eq!(assets.len(), 2, "{page}");
    for asset in &assets {
        let response = http.get(served.url(asset)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert_eq!(
            response.headers()["cache-control"],
            "public, max-age=31536000, immutable"
        );
        seen.push_str(&response.text().await.unwrap());
    }
    assert!(!seen.contains(&served.token), "the daemon's token");
    assert!(!seen.contains(approver.trim()), "the approver token");
}

/// This machine's address on its network, when it has one (no packet is
/// sent: connecting a UDP socket only picks the route).
fn network_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.255.255.255:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn the_dashboard_answers_this_machine_only_even_bound_beyond_loopback() {
    let Some(address) = network_address() else {
        eprintln!("skipped: this machine has no address beyond loopback");
        return;
    };
    let allowed = address.to_string();
    let served = Served::start_in(
        crate::support::Bridge::new(),
        bridge_testkit::TempWorkspace::new(),
        &[
            ("COPILOT_BRIDGE_BIND", "0.0.0.0"),
            (
                "COPILOT_BRIDGE_TOKEN",
                "btk-a-token-long-enough-to-bind-beyond-loopback",
            ),
            ("COPILOT_BRIDGE_ALLOWED_HOSTS", allowed.as_str()),
        ],
    );
    let from_network = |path: &str| format!("http://{address}:{}{path}", served.port);
    // The daemon does answer on that address…
    let health = client().get(from_network("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    // …but not the dashboard, not even its shell, its assets or a login.
    let login = login_url(&served).await;
    let code = login.split_once("/ui/").unwrap().1.to_owned();
    for path in [
        "/ui/overview".to_owned(),
        "/ui/api/session".to_owned(),
        "/ui/api/stream".to_owned(),
        format!("/ui/{code}"),
    ] {
        let answer = client().get(from_network(&path)).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::FORBIDDEN, "{path}");
        let body = answer.text().await.unwrap();
        assert!(body.contains("answers this machine only"), "{path}: {body}");
    }
    // The code was not used up by the refused attempt.
    let cookie = log_in(&login).await;
    assert!(cookie.starts_with(&format!("copilot_bridge_ui_{}=", served.port)));
}
