//! Sending what a connection's queue holds with as few writes as possible:
//! the writer task of every WebSocket the daemon serves (providers at `/`,
//! JSON-RPC clients at `/rpc`).
//!
//! Everything already queued is fed to the sink before one flush, so a
//! burst costs one write system call, not one per message; a last message
//! (a close frame) goes out after everything queued before it.
//!
//! Before flushing, the writer yields once: the callers woken by the same
//! burst of answers are usually runnable right now, and what they queue
//! next then shares this flush. On loopback a `send` costs more than
//! anything else in a round trip (the kernel delivers the segment inside
//! the call); in the gateway's round-trip bench at 10 calls in flight this
//! cut the `send`s per call from 0.62 to 0.23 (docs/benchmarks.md). Alone,
//! it costs one scheduler pass.

use futures::{Sink, SinkExt};
use tokio::sync::mpsc;

/// One queued item, as the sink takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing<M> {
    /// Fed now, flushed with whatever else is queued.
    Feed(M),
    /// Sent after everything before it (a close frame); nothing after it is.
    Last(M),
}

/// How [`send_batched`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every sender of the queue is gone: the sink was closed.
    QueueClosed,
    /// A [`Outgoing::Last`] message was sent (or tried).
    LastSent,
    /// The sink refused a message or a flush (the peer is gone).
    SinkFailed,
}

/// Sends what `queue` yields on `sink`, each item turned into a message by
/// `encode`, until the queue closes, a last message is sent, or the sink
/// fails.
pub async fn send_batched<T, M, S>(
    sink: &mut S,
    queue: &mut mpsc::Receiver<T>,
    mut encode: impl FnMut(T) -> Outgoing<M>,
) -> Ended
where
    S: Sink<M> + Unpin,
{
    while let Some(first) = queue.recv().await {
        let mut next = Some(first);
        let mut yielded = false;
        loop {
            while let Some(item) = next.take() {
                match encode(item) {
                    Outgoing::Feed(message) => {
                        if sink.feed(message).await.is_err() {
                            return Ended::SinkFailed;
                        }
                    }
                    Outgoing::Last(message) => {
                        // `send` flushes what was fed before it.
                        let _ = sink.send(message).await;
                        return Ended::LastSent;
                    }
                }
                next = queue.try_recv().ok();
            }
            if yielded {
                break;
            }
            yielded = true;
            tokio::task::yield_now().await;
            next = queue.try_recv().ok();
            if next.is_none() {
                break;
            }
        }
        if sink.flush().await.is_err() {
            return Ended::SinkFailed;
        }
    }
    let _ = sink.close().await;
    Ended::QueueClosed
}
