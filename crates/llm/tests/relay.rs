//! Long answers relayed through the OpenAI backend from the mock upstream
//! over real HTTP: nothing lost or reordered, and events handed on as they
//! arrive rather than after the whole body.

use std::time::{Duration, Instant};

use bridge_llm::{ChatBackend, ChatEvent, FinishReason, OpenAiBackend};
use bridge_testkit::{MockLlm, MockReply};
use futures::StreamExt;

use crate::support::{ask, backend, texts};

const IDLE: Duration = Duration::from_secs(10);

fn backend_for(mock: &MockLlm) -> OpenAiBackend {
    backend(&format!("{}/v1", mock.base_url()), IDLE)
}

fn numbered_chunks(count: usize) -> Vec<String> {
    (0..count).map(|index| format!("tok{index} ")).collect()
}

#[tokio::test]
async fn ten_thousand_chunks_arrive_complete_and_in_order() {
    let chunks = numbered_chunks(10_000);
    let mock = MockLlm::start(vec![MockReply::Text {
        chunks: chunks.clone(),
    }])
    .await;
    let items: Vec<_> = backend_for(&mock)
        .stream(&ask("a long answer"))
        .await
        .unwrap()
        .collect()
        .await;
    let received = texts(&items);
    assert_eq!(received.len(), 10_000);
    if let Some(at) = received
        .iter()
        .zip(&chunks)
        .position(|(got, sent)| got != sent)
    {
        panic!(
            "delta {at} is {:?}, expected {:?}",
            received[at], chunks[at]
        );
    }
    assert_eq!(
        items.last().map(|item| item.as_ref().unwrap()),
        Some(&ChatEvent::Finish {
            reason: FinishReason::Stop
        })
    );
}

#[tokio::test]
async fn the_first_delta_is_relayed_long_before_the_upstream_finishes() {
    const CHUNKS: usize = 200;
    const DELAY_MS: u64 = 2;
    let chunks = numbered_chunks(CHUNKS);
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: chunks.clone(),
        delay_ms: DELAY_MS,
    }])
    .await;
    let backend = backend_for(&mock);
    let started = Instant::now();
    let mut stream = backend.stream(&ask("slowly")).await.unwrap();
    let mut first_delta_after = None;
    let mut received = Vec::new();
    while let Some(item) = stream.next().await {
        if let ChatEvent::TextDelta { text } = item.unwrap() {
            first_delta_after.get_or_insert_with(|| started.elapsed());
            received.push(text);
        }
    }
    let total = started.elapsed();
    assert_eq!(received, chunks);
    // The upstream sleeps before every chunk, so the whole answer takes at
    // least this long; a relay that buffered the body would show its first
    // delta only at the end.
    let upstream_duration = Duration::from_millis(DELAY_MS * CHUNKS as u64);
    assert!(total >= upstream_duration, "answer took only {total:?}");
    let first = first_delta_after.unwrap();
    assert!(
        first * 4 < total,
        "first delta after {first:?}, whole answer after {total:?}: the body was buffered"
    );
}
