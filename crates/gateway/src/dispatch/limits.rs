//! `hello.concurrency`: at most `max` calls in flight per scope, further
//! calls queued in order (tokio's semaphore is FIFO-fair), and a full queue
//! refused at once so a flood cannot pile up behind a slow provider.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bridge_protocol::provider::{Concurrency, ConcurrencyScope};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::provider::lock;

/// Concurrency limiters by scope key.
#[derive(Default)]
pub(crate) struct Limiters {
    limiters: Mutex<HashMap<String, Arc<Limiter>>>,
}

pub(crate) struct Limiter {
    max: usize,
    semaphore: Arc<Semaphore>,
    queued: AtomicUsize,
}

/// The queue of a limiter is full.
#[derive(Debug)]
pub(crate) struct QueueFull {
    pub in_flight: usize,
    pub queued: usize,
}

/// A slot in flight; released (and the next queued call started) on drop.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    /// Keeps the limiter registered while the call runs.
    _limiter: Arc<Limiter>,
}

/// Decrements the queued count however the wait ends (granted, or the
/// caller gave up).
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The key of the limiter a call of `tool` on (`name`, `instance`) is
/// counted against. `tool` scope counts per instance and tool name.
pub(crate) fn scope_key(
    concurrency: &Concurrency,
    name: &str,
    instance: Option<&str>,
    tool: &str,
) -> String {
    let instance = instance.unwrap_or("");
    match concurrency.scope {
        ConcurrencyScope::Instance => format!("i\0{name}\0{instance}"),
        ConcurrencyScope::Provider => format!("p\0{name}"),
        ConcurrencyScope::Tool => format!("t\0{name}\0{instance}\0{tool}"),
    }
}

impl Limiters {
    /// The limiter of `key`, created with `max` slots (re-created if the
    /// provider reconnected with another `max`).
    pub(crate) fn get(&self, key: &str, max: usize) -> Arc<Limiter> {
        let max = max.max(1);
        let mut limiters = lock(&self.limiters);
        match limiters.get(key) {
            Some(limiter) if limiter.max == max => limiter.clone(),
            _ => {
                let limiter = Arc::new(Limiter {
                    max,
                    semaphore: Arc::new(Semaphore::new(max)),
                    queued: AtomicUsize::new(0),
                });
                limiters.insert(key.to_owned(), limiter.clone());
                limiter
            }
        }
    }

    /// Drops idle limiters of provider `name` (called when an instance
    /// leaves, so random instance ids do not accumulate).
    pub(crate) fn forget_idle(&self, name: &str) {
        let provider_key = format!("p\0{name}");
        let instance_prefix = format!("i\0{name}\0");
        let tool_prefix = format!("t\0{name}\0");
        lock(&self.limiters).retain(|key, limiter| {
            let ours = *key == provider_key
                || key.starts_with(&instance_prefix)
                || key.starts_with(&tool_prefix);
            !ours || Arc::strong_count(limiter) > 1
        });
    }
}

impl Limiter {
    /// Waits for a slot in FIFO order; refuses at once when `queue_limit`
    /// calls are already waiting.
    pub(crate) async fn acquire(self: &Arc<Self>, queue_limit: usize) -> Result<Slot, QueueFull> {
        if let Ok(permit) = self.semaphore.clone().try_acquire_owned() {
            return Ok(self.slot(permit));
        }
        let before = self.queued.fetch_add(1, Ordering::AcqRel);
        let _queued = Queued(&self.queued);
        if before >= queue_limit {
            return Err(QueueFull {
                in_flight: self.max,
                queued: before,
            });
        }
        match self.semaphore.clone().acquire_owned().await {
            Ok(permit) => Ok(self.slot(permit)),
            // The semaphore is never closed; treat it as full if it ever is.
            Err(_) => Err(QueueFull {
                in_flight: self.max,
                queued: before,
            }),
        }
    }

    fn slot(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> Slot {
        Slot {
            _permit: permit,
            _limiter: self.clone(),
        }
    }
}
