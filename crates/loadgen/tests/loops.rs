use std::sync::Arc;
use std::time::Duration;

use bridge_loadgen::options::body_with_stream;
use bridge_loadgen::{Connection, Phase, RequestTemplate, Target, closed_loop, open_loop};
use bridge_testkit::MockLlm;
use bytes::Bytes;

const CHAT: &str = r#"{"model":"mock-model","messages":[{"role":"user","content":"pong"}]}"#;

pub(crate) async fn template(url: &str, stream: bool) -> Arc<RequestTemplate> {
    Arc::new(RequestTemplate {
        target: Arc::new(Target::resolve(url).await.unwrap()),
        headers: vec![bridge_loadgen::client::parse_header("Authorization: Bearer k").unwrap()],
        body: body_with_stream(CHAT, stream).unwrap(),
        stream,
        end_marker: Bytes::from(bridge_loadgen::client::DONE_MARKER),
        expect: Some(Bytes::from_static(b"pong")),
    })
}

pub(crate) fn pool(template: &RequestTemplate, size: usize) -> Vec<Connection> {
    (0..size)
        .map(|_| Connection::new(&template.target))
        .collect()
}

pub(crate) fn phase(millis: u64) -> Phase {
    Phase {
        duration: Duration::from_millis(millis),
        drain: Duration::from_secs(2),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_sends_every_due_request_and_checks_each_answer() {
    let mock = MockLlm::start(Vec::new()).await;
    let template = template(&format!("{}/v1/chat/completions", mock.base_url()), false).await;
    let (connections, report) = open_loop(pool(&template, 8), template, 400.0, phase(500))
        .await
        .unwrap();
    assert_eq!(connections.len(), 8);
    assert_eq!(report.requests, 200);
    assert_eq!(
        (report.ok, report.errors, report.unsent),
        (200, 0, 0),
        "{report:?}"
    );
    assert_eq!(report.latency_us.count, 200);
    assert!(report.latency_us.p50 > 0 && report.latency_us.p50 <= report.latency_us.p99);
    // Latency counts from the due time, so it is never below the service time.
    assert!(report.latency_us.p50 >= report.service_us.p50);
    let rps = report.achieved_rps;
    assert!(
        (300.0..=410.0).contains(&rps),
        "{rps} requests/s for a 400/s schedule"
    );
    let recorded = mock.requests();
    assert_eq!(recorded.len(), 200);
    assert_eq!(recorded[0].body["stream"], false);
    assert!(
        recorded[0]
            .headers
            .iter()
            .any(|(n, v)| n == "authorization" && v == "Bearer k")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_open_loop_reads_each_answer_to_done() {
    let mock = MockLlm::start(Vec::new()).await;
    let template = template(&format!("{}/v1/chat/completions", mock.base_url()), true).await;
    let (_, report) = open_loop(pool(&template, 4), template, 200.0, phase(250))
        .await
        .unwrap();
    assert_eq!((report.ok, report.errors), (50, 0), "{report:?}");
    assert_eq!(report.ttfb_us.count, 50);
    assert!(report.ttfb_us.p50 <= report.latency_us.p50);
    assert_eq!(mock.requests()[0].body["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_answers_are_counted_by_kind_and_never_as_successes() {
    let mock = MockLlm::start(Vec::new()).await;
    let template = template(&format!("{}/v1/nowhere", mock.base_url()), false).await;
    let (_, report) = open_loop(pool(&template, 2), template, 100.0, phase(100))
        .await
        .unwrap();
    assert_eq!(report.ok, 0);
    assert_eq!(report.errors, 10);
    assert_eq!(report.error_kinds.get("status_404"), Some(&10));
    let first = report.first_error.unwrap();
    assert!(
        first.starts_with("status 404:") && first.contains("no route"),
        "{first}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_does_not_answer_leaves_timeouts_and_unsent_requests() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let template = template(&format!("http://{address}/v1/chat/completions"), false).await;
    let phase = Phase {
        duration: Duration::from_millis(200),
        drain: Duration::from_millis(100),
    };
    let (_, report) = open_loop(pool(&template, 2), template, 100.0, phase)
        .await
        .unwrap();
    assert_eq!(report.requests, 20);
    assert_eq!(report.ok, 0);
    assert_eq!(report.error_kinds.get("timeout"), Some(&2));
    assert_eq!(report.unsent, 18);
    assert_eq!(report.error_kinds.get("unsent"), Some(&18));
    // Every request is in the latency histogram, at no less than its wait.
    assert_eq!(report.latency_us.count, 20);
    assert!(report.latency_us.max >= 280_000, "{:?}", report.latency_us);
    silent.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_measures_throughput_at_a_fixed_concurrency() {
    let mock = MockLlm::start(Vec::new()).await;
    let template = template(&format!("{}/v1/chat/completions", mock.base_url()), false).await;
    let (connections, report) = closed_loop(pool(&template, 4), template, phase(300))
        .await
        .unwrap();
    assert_eq!(connections.len(), 4);
    assert_eq!(report.mode, "closed");
    assert_eq!(report.concurrency, Some(4));
    assert_eq!(report.errors, 0, "{report:?}");
    assert!(report.ok > 20, "{report:?}");
    assert_eq!(report.requests, report.ok);
    assert_eq!(mock.requests().len() as u64, report.ok);
    // duration_s is rounded to the millisecond in the report.
    let expected = report.ok as f64 / report.duration_s;
    assert!(
        (report.achieved_rps - expected).abs() / expected < 0.01,
        "{report:?}"
    );
}
