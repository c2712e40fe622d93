//! The dashboard's Activity data over `/rpc` (`activity.audit`,
//! `activity.requests`, crates/server/src/rpc/activity.rs): a real
//! daemon's audit log and request log, paged newest first and filtered,
//! only for the approver token.

use std::io::Write as _;
use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::{Value, json};

use crate::cli_serve::{PATIENCE, Served};
use crate::support::Bridge;

async fn as_approver(served: &Served, method: &str, params: Value) -> Value {
    served.approver_rpc(method, params).await
}

/// The result of an approver's call that must succeed.
async fn page(served: &Served, method: &str, params: Value) -> Value {
    let response = as_approver(served, method, params.clone()).await;
    assert!(
        response.get("error").is_none(),
        "{method} {params}: {response}"
    );
    response["result"].clone()
}

/// The page once it holds `count` entries (the logs are written behind the
/// calls).
async fn page_of(served: &Served, method: &str, params: Value, count: usize) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let result = page(served, method, params.clone()).await;
        if result["entries"].as_array().unwrap().len() >= count {
            return result;
        }
        assert!(
            Instant::now() < deadline,
            "{method} never held {count} entries: {result}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn entries(result: &Value) -> &Vec<Value> {
    result["entries"].as_array().unwrap()
}

/// The refusal's code and field.
async fn refused(served: &Served, method: &str, params: Value) -> (i64, String) {
    let response = as_approver(served, method, params).await;
    let error = &response["error"];
    assert!(error.is_object(), "{response}");
    (
        error["code"].as_i64().unwrap(),
        error["data"]["field"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// An entry of an earlier day, as the audit log writes them.
fn old_entry(n: u32, decision: &str) -> String {
    json!({
        "timestamp": format!("2020-01-01T10:00:0{n}.000Z"),
        "sessionId": "old",
        "hook": "toolCall:cli",
        "tool": "read_file",
        "input": {"path": format!("old-{n}.txt")},
        "output": {},
        "decision": decision,
        "elapsedMs": 1,
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_pages_newest_first_across_days_and_filters() {
    let bridge = Bridge::new();
    // An earlier day's file, there before the daemon starts.
    let audit = bridge.state.path().join("audit");
    bridge_util::owner_only::create_dir(&audit).unwrap();
    let mut old =
        bridge_util::owner_only::open_append(&audit.join("audit-2020-01-01.jsonl")).unwrap();
    for (n, decision) in [(1, "allow"), (2, "deny"), (3, "allow")] {
        writeln!(old, "{}", old_entry(n, decision)).unwrap();
    }
    // Not an entry: skipped.
    writeln!(old, "not json").unwrap();
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "hello\n");
    let served = Served::start_in(bridge, workspace, &[]);

    // Today's: three reads allowed, then a command denied.
    for _ in 0..3 {
        served
            .rpc(
                "session.tools.call",
                json!({"session": "default", "name": "read_file", "arguments": {"path": "notes.txt"}}),
            )
            .await;
    }
    let denied = served
        .rpc_raw(
            "session.tools.call",
            json!({"session": "default", "name": "shell", "arguments": {"command": "rm -rf /"}}),
        )
        .await;
    assert!(denied["error"].is_object(), "{denied}");
    let today = json!({"since": "2021-01-01T00:00:00Z"});
    page_of(&served, "activity.audit", today.clone(), 4).await;

    // Three pages of three: newest first, across the change of day.
    let first = page(&served, "activity.audit", json!({"limit": 3})).await;
    assert_eq!(
        first["dir"],
        served.state().join("audit").display().to_string()
    );
    assert_eq!(entries(&first).len(), 3, "{first}");
    assert_eq!(entries(&first)[0]["tool"], "shell", "the newest: {first}");
    assert_eq!(entries(&first)[0]["decision"], "deny");
    let cursor = first["next"].as_str().unwrap().to_owned();
    let second = page(
        &served,
        "activity.audit",
        json!({"limit": 3, "cursor": cursor}),
    )
    .await;
    assert_eq!(entries(&second).len(), 3, "{second}");
    assert_eq!(entries(&second)[0]["tool"], "read_file");
    assert_eq!(
        entries(&second)[1]["input"]["path"],
        "old-3.txt",
        "{second}"
    );
    let third = page(
        &served,
        "activity.audit",
        json!({"limit": 3, "cursor": second["next"]}),
    )
    .await;
    assert_eq!(entries(&third).len(), 1, "{third}");
    assert_eq!(entries(&third)[0]["input"]["path"], "old-1.txt");
    assert!(third["next"].is_null(), "{third}");
    let stamps: Vec<&str> = [&first, &second, &third]
        .iter()
        .flat_map(|page| entries(page).iter())
        .map(|entry| entry["timestamp"].as_str().unwrap())
        .collect();
    let mut sorted = stamps.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(stamps, sorted, "newest first");

    // Filters.
    let count = |result: Value| entries(&result).len();
    let deny = page(&served, "activity.audit", json!({"decision": "deny"})).await;
    assert_eq!(count(deny.clone()), 2, "{deny}");
    assert_eq!(entries(&deny)[1]["input"]["path"], "old-2.txt");
    let cases = [
        (json!({"tool": "shell"}), 1),
        (json!({"session": "old"}), 3),
        (json!({"door": "toolCall:cli"}), 3),
        (json!({"text": "OLD-2.TXT"}), 1),
        (today, 4),
        (json!({"until": "2021-01-01T00:00:00Z"}), 3),
        (
            json!({"since": "2020-01-01T10:00:02Z", "until": "2020-01-01T10:00:03Z"}),
            1,
        ),
        (json!({"decision": "deny", "session": "old"}), 1),
    ];
    for (params, expected) in cases {
        let result = page(&served, "activity.audit", params.clone()).await;
        assert_eq!(count(result.clone()), expected, "{params}: {result}");
    }

    // Bad params: the JSON-RPC invalid params, naming the field.
    for (params, field) in [
        (json!({"cursor": "../../etc/passwd:0"}), "cursor"),
        (json!({"cursor": "audit-2020-01-01.jsonl:5:1"}), "cursor"),
        (json!({"limit": 0}), "limit"),
        (json!({"limit": 501}), "limit"),
        (json!({"limit": "ten"}), "limit"),
        (json!({"since": "yesterday"}), "since"),
        (json!({"tool": 3}), "tool"),
        (json!({"decisions": "deny"}), "decisions"),
    ] {
        assert_eq!(
            refused(&served, "activity.audit", params.clone()).await,
            (-32602, field.to_owned()),
            "{params}"
        );
    }

    // The agents' token sees none of it.
    for method in ["activity.audit", "activity.requests"] {
        let as_agent = served.rpc_raw(method, json!({})).await;
        assert_eq!(as_agent["error"]["code"], -32010, "{method}: {as_agent}");
    }
    // Without request_log there is no request log: said, not an error.
    let off = page(&served, "activity.requests", json!({"status": "5xx"})).await;
    assert_eq!(off["enabled"], false, "{off}");
    assert!(entries(&off).is_empty() && off["next"].is_null(), "{off}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_log_pages_newest_first_and_filters() {
    let mock = MockLlm::start(vec![MockReply::text("Hi!")]).await;
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_REQUEST_LOG", "true")],
    );
    let http = reqwest::Client::new();
    let answered = http
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .header("user-agent", "my-agent/1.0")
        .json(&json!({"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    answered.text().await.unwrap();
    let wrong_key = http
        .post(served.url("/v1/messages"))
        .header("x-api-key", "not-the-token")
        .header("user-agent", "other/2")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_key.status(), 401);
    wrong_key.text().await.unwrap();

    let all = page_of(&served, "activity.requests", json!({}), 2).await;
    assert_eq!(all["enabled"], true, "{all}");
    assert_eq!(
        all["path"],
        served.state().join("requests.jsonl").display().to_string()
    );
    assert_eq!(entries(&all).len(), 2, "{all}");
    assert_eq!(entries(&all)[0]["status"], 401, "the newest first: {all}");
    assert_eq!(entries(&all)[1]["status"], 200);
    assert!(all["next"].is_null());

    // One at a time.
    let first = page(&served, "activity.requests", json!({"limit": 1})).await;
    assert_eq!(entries(&first)[0]["status"], 401);
    let second = page(
        &served,
        "activity.requests",
        json!({"limit": 1, "cursor": first["next"]}),
    )
    .await;
    assert_eq!(entries(&second)[0]["status"], 200, "{second}");
    assert_eq!(entries(&second)[0]["model"], "mock-model");
    assert!(second["next"].is_null(), "{second}");

    let only = |params: Value, status: u64| {
        let served = &served;
        async move {
            let result = page(served, "activity.requests", params.clone()).await;
            let statuses: Vec<u64> = entries(&result)
                .iter()
                .map(|entry| entry["status"].as_u64().unwrap())
                .collect();
            assert_eq!(statuses, [status], "{params}: {result}");
        }
    };
    only(json!({"status": "4xx"}), 401).await;
    only(json!({"status": 200}), 200).await;
    only(json!({"status": "200"}), 200).await;
    only(json!({"model": "gpt-x"}), 200).await;
    only(json!({"model": "mock-model"}), 200).await;
    only(json!({"client": "MY-AGENT"}), 200).await;
    only(json!({"path": "/v1/messages"}), 401).await;
    let later = page(
        &served,
        "activity.requests",
        json!({"since": "2999-01-01T00:00:00Z"}),
    )
    .await;
    assert!(entries(&later).is_empty(), "{later}");

    for (params, field) in [
        (json!({"status": "4x"}), "status"),
        (json!({"status": 42}), "status"),
        (json!({"cursor": "../../etc/passwd:0"}), "cursor"),
        (json!({"until": "soon"}), "until"),
        (json!({"tool": "shell"}), "tool"),
    ] {
        assert_eq!(
            refused(&served, "activity.requests", params.clone()).await,
            (-32602, field.to_owned()),
            "{params}"
        );
    }
}
