//! Tool calls of one answer: parallel reads, writes alone, the model's order
//! of results, and `onPostToolUse`'s cut of big results.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_engine::runner::RunStatus;
use bridge_engine::runner::native::NativeSettings;
use bridge_protocol::ToolEffect;
use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use serde_json::{Value, json};
use tokio::sync::{Barrier, watch};
use tokio_util::sync::CancellationToken;

use super::{
    Logged, chats, fast_settings, hook_ends, new_session, of_kind, register, request, run, runner,
    tool_messages,
};
use bridge_engine::ToolFailure;
use bridge_engine::runner::Runner;

/// Where each step happened, in the order it happened.
#[derive(Clone, Default)]
struct Timeline(Arc<Mutex<Vec<String>>>);

impl Timeline {
    fn push(&self, step: String) {
        self.0.lock().unwrap().push(step);
    }

    fn position(&self, step: &str) -> usize {
        let steps = self.0.lock().unwrap();
        steps
            .iter()
            .position(|s| s == step)
            .unwrap_or_else(|| panic!("{step} never happened: {steps:?}"))
    }

    fn steps(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn call(id: &str, name: &str, arguments: Value) -> MockToolCall {
    MockToolCall::new(id, name, arguments.to_string())
}

/// Waits at `barrier`, failing the call (not hanging the test) when the
/// other calls of the batch never come: that is, when they did not run at
/// the same time.
async fn meet(barrier: &Barrier, who: u64) -> Result<(), ToolFailure> {
    tokio::time::timeout(Duration::from_secs(1), barrier.wait())
        .await
        .map(|_| ())
        .map_err(|_| ToolFailure::new("not_parallel", format!("read {who} waited alone")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_run_together_a_write_runs_alone_and_results_keep_the_models_order() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![
                call("c1", "probe_read", json!({"n": 1})),
                call("c2", "probe_read", json!({"n": 2})),
                call("c3", "probe_read", json!({"n": 3})),
                call("c4", "probe_write", json!({})),
                call("c5", "probe_read", json!({"n": 5})),
                call("c6", "probe_read", json!({"n": 6})),
            ],
        },
        MockReply::text("done"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let timeline = Timeline::default();
    let before_write = Arc::new(Barrier::new(3));
    let after_write = Arc::new(Barrier::new(2));
    let (ended_tx, ended_rx) = watch::channel(0_u32);
    let ended_tx = Arc::new(ended_tx);
    {
        let timeline = timeline.clone();
        register(
            &session,
            "probe_read",
            ToolEffect::Read,
            move |invocation| {
                let timeline = timeline.clone();
                let before_write = Arc::clone(&before_write);
                let after_write = Arc::clone(&after_write);
                let ended_tx = Arc::clone(&ended_tx);
                let mut ended_rx = ended_rx.clone();
                async move {
                    let n = invocation.args["n"].as_u64().unwrap();
                    timeline.push(format!("start r{n}"));
                    let barrier = if n <= 3 { &before_write } else { &after_write };
                    meet(barrier, n).await?;
                    if n == 1 {
                        // The first call finishes last, so the results arrive
                        // out of the model's order.
                        tokio::time::timeout(
                            Duration::from_secs(1),
                            ended_rx.wait_for(|&e| e >= 2),
                        )
                        .await
                        .map_err(|_| ToolFailure::new("stuck", "r2 and r3 never ended"))?
                        .map_err(|_| ToolFailure::new("stuck", "watch closed"))?;
                    }
                    timeline.push(format!("end r{n}"));
                    ended_tx.send_modify(|ended| *ended += 1);
                    Ok(json!({"read": n}))
                }
            },
        );
    }
    {
        let timeline = timeline.clone();
        register(&session, "probe_write", ToolEffect::Write, move |_| {
            let timeline = timeline.clone();
            async move {
                timeline.push("start w".to_owned());
                // Room for a wrongly concurrent read to slip in between.
                for _ in 0..10 {
                    tokio::task::yield_now().await;
                }
                timeline.push("end w".to_owned());
                Ok(json!({"wrote": true}))
            }
        });
    }

    let report = run(
        &runner(&mock, fast_settings()),
        &session,
        request("read and write"),
    )
    .await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "done");
    let at = |step: &str| timeline.position(step);
    let steps = timeline.steps();
    // The first three reads all started before any of them ended.
    let first_end = ["end r1", "end r2", "end r3"]
        .map(at)
        .into_iter()
        .min()
        .unwrap();
    for start in ["start r1", "start r2", "start r3"] {
        assert!(at(start) < first_end, "{steps:?}");
    }
    assert!(
        at("end r1") > at("end r2") && at("end r1") > at("end r3"),
        "{steps:?}"
    );
    // The write waited for every read before it and ran alone.
    assert_eq!(at("start w"), at("end r1") + 1, "{steps:?}");
    assert_eq!(at("end w"), at("start w") + 1, "{steps:?}");
    // The reads after it started only once it was done, and together.
    for start in ["start r5", "start r6"] {
        assert!(at(start) > at("end w"), "{steps:?}");
        assert!(at(start) < at("end r5").min(at("end r6")), "{steps:?}");
    }
    // The model gets the results in its own order, each with its result.
    let chats = chats(&mock);
    assert_eq!(chats.len(), 2);
    let results = tool_messages(&chats[1]);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5", "c6"]);
    let contents: Vec<Value> = results
        .iter()
        .map(|(_, content)| serde_json::from_str(content).unwrap())
        .collect();
    let expected = [1, 2, 3]
        .map(|n| json!({"ok": true, "result": {"read": n}}))
        .into_iter()
        .chain([json!({"ok": true, "result": {"wrote": true}})])
        .chain([5, 6].map(|n| json!({"ok": true, "result": {"read": n}})))
        .collect::<Vec<_>>();
    assert_eq!(contents, expected);
    let reported: Vec<(&str, bool)> = report
        .tool_calls
        .iter()
        .map(|record| (record.name.as_str(), record.ok))
        .collect();
    assert_eq!(
        reported,
        [
            ("probe_read", true),
            ("probe_read", true),
            ("probe_read", true),
            ("probe_write", true),
            ("probe_read", true),
            ("probe_read", true),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_reads_run_at_once_than_the_setting_allows() {
    let calls = (1..=4)
        .map(|n| call(&format!("c{n}"), "probe_read", json!({"n": n})))
        .collect();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls { text: None, calls },
        MockReply::text("done"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    // Pairs meet: two at once are needed, more must never be.
    let pair = Arc::new(Barrier::new(2));
    {
        let (running, most) = (Arc::clone(&running), Arc::clone(&most));
        register(
            &session,
            "probe_read",
            ToolEffect::Read,
            move |invocation| {
                let (running, most, pair) =
                    (Arc::clone(&running), Arc::clone(&most), Arc::clone(&pair));
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let met = meet(&pair, invocation.args["n"].as_u64().unwrap()).await;
                    // Let a third call, if one were allowed, start now.
                    for _ in 0..10 {
                        tokio::task::yield_now().await;
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    met.map(|()| json!({"ok": 1}))
                }
            },
        );
    }
    let settings = NativeSettings {
        max_parallel_tools: 2,
        ..fast_settings()
    };

    let report = run(&runner(&mock, settings), &session, request("read four")).await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert!(
        report.tool_calls.iter().all(|record| record.ok),
        "{report:?}"
    );
    assert_eq!(most.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_ten_kilobytes_is_cut_for_the_model_only() {
    // Distinct lines, so a cut in the wrong place would show.
    let big: String = (0..3000).map(|i| format!("line {i:05}\n")).collect();
    let small = "short result".to_owned();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![
                call("big", "probe_dump", json!({"size": "big"})),
                call("small", "probe_dump", json!({"size": "small"})),
            ],
        },
        MockReply::text("read it"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let handed_out = Arc::new(Mutex::new(Vec::<Value>::new()));
    {
        let (big, small, handed_out) = (big.clone(), small.clone(), Arc::clone(&handed_out));
        register(
            &session,
            "probe_dump",
            ToolEffect::Read,
            move |invocation| {
                let text = if invocation.args["size"] == "big" {
                    &big
                } else {
                    &small
                };
                let value = json!({"text": text});
                handed_out.lock().unwrap().push(value.clone());
                async move { Ok(value) }
            },
        );
    }
    let logged = Logged::new().await;
    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            request("dump"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    let full = json!({"ok": true, "result": {"text": big}}).to_string();
    let limit = bridge_engine::runner::native::TOOL_RESULT_LIMIT;
    assert_eq!(limit, 10 * 1024);
    let cut = full.len() - limit;
    let results = tool_messages(&chats(&mock)[1]);
    let (_, shown) = &results[0];
    assert!(
        shown.starts_with(&full[..limit]),
        "the kept part is the start of the result"
    );
    let note = &shown[limit..];
    assert!(
        note.contains(&format!("{cut} of {} bytes not shown", full.len())),
        "{note}"
    );
    assert!(note.len() < 300, "only a short note follows: {note}");
    // A result under the limit is passed whole.
    assert_eq!(
        serde_json::from_str::<Value>(&results[1].1).unwrap(),
        json!({"ok": true, "result": {"text": small}})
    );
    // The tool's own result was not touched: the report summarizes it
    // from the full value, and the handler's value is intact.
    assert_eq!(handed_out.lock().unwrap()[0]["text"], big);
    assert!(report.tool_calls[0].summary.contains("line 00000"));
    // The log says what was cut.
    let events = logged.events().await;
    let cuts = hook_ends(&events, "onPostToolUse");
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    assert_eq!(cuts[0]["toolCallId"], "big");
    assert_eq!(cuts[0]["truncatedBytes"], cut);
    let completes = of_kind(&events, "tool.execution_complete");
    assert_eq!(completes.len(), 2);
    let big_complete = completes
        .iter()
        .find(|event| event.data["toolCallId"] == "big")
        .unwrap();
    assert_eq!(big_complete.data["truncatedBytes"], cut);
}
