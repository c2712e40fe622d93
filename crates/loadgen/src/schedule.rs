//! When each request of an open-loop run is due, and the pacer thread that
//! hands them out on time.
//!
//! tokio's timer has a resolution of one millisecond, three intervals at
//! 3,000 requests/s, so due times are kept by a plain OS thread sleeping
//! with `nanosleep` (tens of microseconds late at worst on Linux); how late
//! each request really left is measured and reported (`start_lag_us`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

/// `count` requests at `rate` per second from `start`.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub start: Instant,
    pub rate: f64,
    pub count: u64,
}

impl Schedule {
    /// `rate` requests per second for `duration`, starting at `start`.
    pub fn at_rate(start: Instant, rate: f64, duration: Duration) -> Result<Schedule, String> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("the rate must be a positive number, not {rate}"));
        }
        if rate > 1e8 {
            return Err(format!("the rate {rate} requests/s is too high"));
        }
        // Rounded, so 10 s at 3,000/s is exactly 30,000 requests.
        let count = (rate * duration.as_secs_f64()).round() as u64;
        Ok(Schedule { start, rate, count })
    }

    /// When request `index` is due. Computed from the start and the rate
    /// each time (not by adding a rounded interval), so rounding never
    /// accumulates over a long run.
    pub fn due(&self, index: u64) -> Instant {
        let nanos = (index as f64 * 1e9 / self.rate).round();
        self.start + Duration::from_nanos(nanos as u64)
    }

    /// When the last request is due (the start for an empty schedule).
    pub fn end(&self) -> Instant {
        self.due(self.count.saturating_sub(1))
    }
}

/// Starts the pacer: sends each request's due time on `due` when it comes
/// (all the overdue ones at once if the thread was held up), until the
/// schedule is done or `stop` is set. The channel closes when it ends.
pub fn spawn_pacer(
    schedule: Schedule,
    stop: Arc<AtomicBool>,
    due: UnboundedSender<Instant>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("loadgen-pacer".to_owned())
        .spawn(move || {
            for index in 0..schedule.count {
                let at = schedule.due(index);
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                if stop.load(Ordering::Relaxed) || due.send(at).is_err() {
                    return;
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_becomes_evenly_spaced_due_times() {
        let start = Instant::now();
        let schedule = Schedule::at_rate(start, 3000.0, Duration::from_secs(10)).unwrap();
        assert_eq!(schedule.count, 30_000);
        assert_eq!(schedule.due(0), start);
        assert_eq!(
            schedule.due(3).duration_since(start),
            Duration::from_millis(1)
        );
        // No drift after many intervals: 29,999 / 3,000 s.
        let last = schedule.end().duration_since(start);
        assert_eq!(last, Duration::from_nanos(9_999_666_667));
    }

    #[test]
    fn a_rate_that_is_not_positive_is_refused() {
        let start = Instant::now();
        for rate in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            assert!(Schedule::at_rate(start, rate, Duration::from_secs(1)).is_err());
        }
    }

    #[test]
    fn the_pacer_hands_out_every_due_time_in_order_and_not_early() {
        let start = Instant::now() + Duration::from_millis(5);
        let schedule = Schedule::at_rate(start, 2000.0, Duration::from_millis(50)).unwrap();
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let pacer = spawn_pacer(schedule, Arc::new(AtomicBool::new(false)), sender).unwrap();
        let mut received = Vec::new();
        while let Some(due) = receiver.blocking_recv() {
            assert!(Instant::now() >= due, "handed out before it was due");
            received.push(due);
        }
        pacer.join().unwrap();
        let expected: Vec<Instant> = (0..schedule.count).map(|i| schedule.due(i)).collect();
        assert_eq!(received, expected);
    }

    #[test]
    fn a_stopped_pacer_ends_early() {
        let schedule = Schedule::at_rate(Instant::now(), 1000.0, Duration::from_secs(60)).unwrap();
        let stop = Arc::new(AtomicBool::new(true));
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        spawn_pacer(schedule, stop, sender).unwrap().join().unwrap();
        assert_eq!(receiver.blocking_recv(), None);
    }
}
