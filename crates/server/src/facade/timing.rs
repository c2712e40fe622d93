//! `x-bridge-overhead-ms`: the time a request spent in the bridge itself,
//! that is the time to the response head minus the time spent waiting on
//! the upstream (its response head, and for non-streaming answers its whole
//! body).

use std::future::Future;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue};

pub const OVERHEAD_HEADER: &str = "x-bridge-overhead-ms";

/// A request's clock: started when the handler starts, with the upstream's
/// share kept apart.
#[derive(Debug)]
pub struct Overhead {
    started: Instant,
    upstream: Duration,
}

impl Overhead {
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            upstream: Duration::ZERO,
        }
    }

    /// Awaits `future` as upstream time.
    pub async fn upstream<T>(&mut self, future: impl Future<Output = T>) -> T {
        let began = Instant::now();
        let out = future.await;
        self.upstream += began.elapsed();
        out
    }

    /// The bridge's own time so far.
    pub fn own(&self) -> Duration {
        self.started.elapsed().saturating_sub(self.upstream)
    }

    /// Sets the header on a response's headers, in milliseconds with three
    /// decimals (`0.142`).
    pub fn stamp(&self, headers: &mut HeaderMap) {
        let ms = self.own().as_secs_f64() * 1000.0;
        if let Ok(value) = HeaderValue::from_str(&format!("{ms:.3}")) {
            headers.insert(OVERHEAD_HEADER, value);
        }
    }
}

/// Seconds since the Unix epoch, for the `created` fields of answers.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}
