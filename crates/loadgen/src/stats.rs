//! Latency histograms (HDR, microseconds) and counters of one run, merged
//! over the workers, and the JSON report made of them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::client::{Exchange, Failure};

/// Largest latency a histogram holds exactly: one hour, in µs. Larger
/// values are clamped (and still counted).
const MAX_MICROS: u64 = 3_600_000_000;

// The bounds are constants hdrhistogram accepts (low >= 1, high >= 2 × low,
// 3 significant digits), so this cannot fail.
#[allow(clippy::expect_used)]
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("valid histogram bounds")
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// What one worker (or a whole run, once merged) saw.
pub struct Recorder {
    /// Due time (or send time in a closed loop) to the end of the answer.
    pub latency: Histogram<u64>,
    /// Send time to the end of the answer: what the server alone took.
    pub service: Histogram<u64>,
    /// Due time to the first byte of the answer's body.
    pub first_byte: Histogram<u64>,
    /// Due time to the send time: the generator's own lateness plus the
    /// wait for a free connection.
    pub start_lag: Histogram<u64>,
    pub ok: u64,
    pub failures: BTreeMap<String, u64>,
    pub first_failure: Option<String>,
    /// The latest end of an answer, for a closed loop's elapsed time.
    pub last_done: Option<Instant>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            latency: new_histogram(),
            service: new_histogram(),
            first_byte: new_histogram(),
            start_lag: new_histogram(),
            ok: 0,
            failures: BTreeMap::new(),
            first_failure: None,
            last_done: None,
        }
    }
}

impl Recorder {
    /// A successful exchange of a request due at `due`.
    pub fn success(&mut self, due: Instant, exchange: &Exchange) {
        self.ok += 1;
        self.latency
            .saturating_record(micros(exchange.done.saturating_duration_since(due)));
        self.service.saturating_record(micros(
            exchange.done.saturating_duration_since(exchange.sent),
        ));
        self.start_lag
            .saturating_record(micros(exchange.sent.saturating_duration_since(due)));
        if let Some(first) = exchange.first_byte {
            self.first_byte
                .saturating_record(micros(first.saturating_duration_since(due)));
        }
        self.last_done = self.last_done.max(Some(exchange.done));
    }

    /// A failed request. Its latency, as far as it is known (`waited`: at
    /// least that long), goes into the latency histogram too, so failures
    /// cannot make the figures look better.
    pub fn failure(&mut self, failure: &Failure, waited: Duration) {
        *self.failures.entry(failure.kind()).or_insert(0) += 1;
        if self.first_failure.is_none() {
            self.first_failure = Some(failure.describe());
        }
        self.latency.saturating_record(micros(waited));
    }

    pub fn failed(&self) -> u64 {
        self.failures.values().sum()
    }

    pub fn merge(&mut self, other: Recorder) {
        // Same bounds on both sides, so `add` cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.first_byte.add(&other.first_byte);
        let _ = self.start_lag.add(&other.start_lag);
        self.ok += other.ok;
        for (kind, count) in other.failures {
            *self.failures.entry(kind).or_insert(0) += count;
        }
        if self.first_failure.is_none() {
            self.first_failure = other.first_failure;
        }
        self.last_done = self.last_done.max(other.last_done);
    }
}

/// Percentiles of one histogram, in microseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    pub fn of(histogram: &Histogram<u64>) -> Percentiles {
        if histogram.is_empty() {
            return Percentiles {
                count: 0,
                mean: 0.0,
                p50: 0,
                p90: 0,
                p99: 0,
                p999: 0,
                max: 0,
            };
        }
        Percentiles {
            count: histogram.len(),
            mean: (histogram.mean() * 10.0).round() / 10.0,
            p50: histogram.value_at_quantile(0.50),
            p90: histogram.value_at_quantile(0.90),
            p99: histogram.value_at_quantile(0.99),
            p999: histogram.value_at_quantile(0.999),
            max: histogram.max(),
        }
    }
}

/// The one JSON line a run prints.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub label: String,
    /// `open` or `closed`.
    pub mode: &'static str,
    pub stream: bool,
    /// Requests/s asked for (open loop).
    pub rate: Option<f64>,
    /// Workers (closed loop).
    pub concurrency: Option<usize>,
    pub connections: usize,
    pub threads: usize,
    pub duration_s: f64,
    /// Requests due (open loop) or sent (closed loop).
    pub requests: u64,
    pub ok: u64,
    /// Every failed or unsent request.
    pub errors: u64,
    pub error_kinds: BTreeMap<String, u64>,
    pub first_error: Option<String>,
    /// Open loop: requests still unsent when the drain time ran out (the
    /// target could not keep up); counted in `errors` as `unsent`.
    pub unsent: u64,
    /// Successful answers per second of measured time.
    pub achieved_rps: f64,
    pub latency_us: Percentiles,
    pub service_us: Percentiles,
    pub ttfb_us: Percentiles,
    pub start_lag_us: Percentiles,
    pub warmup_errors: u64,
    /// Successful answers during the warm-up (for costs per request that
    /// are measured over warm-up and run together, like a server's CPU time).
    pub warmup_ok: u64,
}

impl Report {
    /// The report of a merged recorder over `elapsed`.
    pub fn new(recorder: &Recorder, elapsed: Duration, requests: u64, unsent: u64) -> Report {
        let seconds = elapsed.as_secs_f64();
        let achieved_rps = if seconds > 0.0 {
            (recorder.ok as f64 / seconds * 10.0).round() / 10.0
        } else {
            0.0
        };
        Report {
            label: String::new(),
            mode: "open",
            stream: false,
            rate: None,
            concurrency: None,
            connections: 0,
            threads: 0,
            duration_s: (seconds * 1000.0).round() / 1000.0,
            requests,
            ok: recorder.ok,
            errors: recorder.failed(),
            error_kinds: recorder.failures.clone(),
            first_error: recorder.first_failure.clone(),
            unsent,
            achieved_rps,
            latency_us: Percentiles::of(&recorder.latency),
            service_us: Percentiles::of(&recorder.service),
            ttfb_us: Percentiles::of(&recorder.first_byte),
            start_lag_us: Percentiles::of(&recorder.start_lag),
            warmup_errors: 0,
            warmup_ok: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(due: Instant, send_after_us: u64, done_after_us: u64) -> Exchange {
        Exchange {
            sent: due + Duration::from_micros(send_after_us),
            first_byte: Some(due + Duration::from_micros(done_after_us / 2)),
            done: due + Duration::from_micros(done_after_us),
        }
    }

    #[test]
    fn latency_counts_from_the_due_time_and_service_from_the_send() {
        let due = Instant::now();
        let mut recorder = Recorder::default();
        // Kept waiting 900 µs for a connection, then answered in 100 µs.
        recorder.success(due, &exchange(due, 900, 1000));
        assert_eq!(
            recorder.latency.max(),
            recorder.latency.highest_equivalent(1000)
        );
        assert_eq!(recorder.service.max(), 100);
        assert_eq!(recorder.start_lag.max(), 900);
    }

    #[test]
    fn percentiles_are_read_from_the_merged_histograms() {
        let due = Instant::now();
        let mut total = Recorder::default();
        for worker in 0..4u64 {
            let mut recorder = Recorder::default();
            for i in 1..=250u64 {
                recorder.success(due, &exchange(due, 0, worker * 250 + i));
            }
            total.merge(recorder);
        }
        let latency = Percentiles::of(&total.latency);
        assert_eq!(latency.count, 1000);
        assert_eq!(latency.p50, 500);
        assert_eq!(latency.p99, 990);
        assert_eq!(latency.max, 1000);
        assert_eq!(latency.mean, 500.5);
    }

    #[test]
    fn failures_are_counted_and_their_wait_is_a_latency() {
        let mut recorder = Recorder::default();
        recorder.failure(
            &Failure::Status(501, "no".to_owned()),
            Duration::from_millis(2),
        );
        recorder.failure(
            &Failure::Status(501, "no".to_owned()),
            Duration::from_millis(3),
        );
        recorder.failure(&Failure::NoDone, Duration::from_millis(4));
        assert_eq!(recorder.failed(), 3);
        assert_eq!(recorder.failures["status_501"], 2);
        assert_eq!(recorder.first_failure.as_deref(), Some("status 501: no"));
        assert_eq!(recorder.latency.len(), 3);
        let report = Report::new(&recorder, Duration::from_secs(1), 3, 0);
        assert_eq!(report.errors, 3);
        assert_eq!(report.ok, 0);
        assert_eq!(report.achieved_rps, 0.0);
    }
}
