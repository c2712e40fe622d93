//! Tests of batched sending: what reaches the sink, in which writes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bridge_util::batch::{Ended, Outgoing, send_batched};
use futures::Sink;
use tokio::sync::mpsc;

/// What a sink was asked to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Item(String),
    Flush,
    Close,
}

/// A sink that records every item, flush and close; it refuses items
/// after `fail_after` of them.
#[derive(Clone, Default)]
struct Recorder {
    ops: Arc<Mutex<Vec<Op>>>,
    fail_after: Option<usize>,
}

impl Recorder {
    fn ops(&self) -> Vec<Op> {
        self.ops.lock().unwrap().clone()
    }

    fn flushes(&self) -> usize {
        self.ops().iter().filter(|op| **op == Op::Flush).count()
    }
}

impl Sink<String> for Recorder {
    type Error = &'static str;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, item: String) -> Result<(), Self::Error> {
        let mut ops = self.ops.lock().unwrap();
        let items = ops.iter().filter(|op| matches!(op, Op::Item(_))).count();
        if self.fail_after.is_some_and(|limit| items >= limit) {
            return Err("the peer is gone");
        }
        ops.push(Op::Item(item));
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.ops.lock().unwrap().push(Op::Flush);
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.ops.lock().unwrap().push(Op::Close);
        Poll::Ready(Ok(()))
    }
}

fn item(text: &str) -> Op {
    Op::Item(text.to_owned())
}

/// Plain items are fed; `close` is the last message.
fn encode(text: String) -> Outgoing<String> {
    if text == "close" {
        Outgoing::Last(text)
    } else {
        Outgoing::Feed(text)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_burst_already_queued_goes_out_with_one_flush_and_the_sink_closes_with_the_queue() {
    let (tx, mut rx) = mpsc::channel(16);
    for n in 0..5 {
        tx.try_send(format!("m{n}")).unwrap();
    }
    drop(tx);
    let mut sink = Recorder::default();
    let ended = send_batched(&mut sink, &mut rx, encode).await;
    assert_eq!(ended, Ended::QueueClosed);
    let mut expected: Vec<Op> = (0..5).map(|n| item(&format!("m{n}"))).collect();
    expected.extend([Op::Flush, Op::Close]);
    assert_eq!(sink.ops(), expected);
}

#[tokio::test(flavor = "current_thread")]
async fn what_a_task_woken_by_the_same_burst_queues_shares_the_flush() {
    let (tx, mut rx) = mpsc::channel(16);
    let mut sink = Recorder::default();
    let recorded = sink.clone();
    let writer = tokio::spawn(async move { send_batched(&mut sink, &mut rx, encode).await });
    tokio::task::yield_now().await;
    // The writer wakes for the first answer; a caller that runs after it
    // (scheduled behind it) queues the second before the writer flushes.
    tx.try_send("answer".to_owned()).unwrap();
    let next = tx.clone();
    tokio::spawn(async move { next.try_send("next call".to_owned()).unwrap() });
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    assert_eq!(
        recorded.ops(),
        [item("answer"), item("next call"), Op::Flush],
        "one flush for both"
    );
    // Alone, a message is still flushed at once.
    tx.try_send("alone".to_owned()).unwrap();
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    assert_eq!(recorded.flushes(), 2);
    drop(tx);
    assert_eq!(writer.await.unwrap(), Ended::QueueClosed);
}

#[tokio::test(flavor = "current_thread")]
async fn a_last_message_goes_after_what_was_queued_before_it_and_nothing_after() {
    let (tx, mut rx) = mpsc::channel(16);
    for text in ["a", "b", "close", "never"] {
        tx.try_send(text.to_owned()).unwrap();
    }
    let mut sink = Recorder::default();
    let ended = send_batched(&mut sink, &mut rx, encode).await;
    assert_eq!(ended, Ended::LastSent);
    assert_eq!(
        sink.ops(),
        [item("a"), item("b"), item("close"), Op::Flush],
        "sent and flushed, and nothing after it"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_sink_that_fails_ends_the_writer() {
    let (tx, mut rx) = mpsc::channel(16);
    for text in ["a", "b", "c"] {
        tx.try_send(text.to_owned()).unwrap();
    }
    let mut sink = Recorder {
        fail_after: Some(1),
        ..Recorder::default()
    };
    let ended = send_batched(&mut sink, &mut rx, encode).await;
    assert_eq!(ended, Ended::SinkFailed);
    assert_eq!(sink.ops(), [item("a")]);
}
