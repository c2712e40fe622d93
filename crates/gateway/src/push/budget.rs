//! Push loop prevention for one (provider, session): the per-second push
//! budget and the inject gate (one inject in flight, a bounded FIFO of held
//! injects, and the pause after too many consecutive inject cycles).
//!
//! Pure state machines: the caller passes the clock and the session's
//! user-message count, so every rule is unit-tested without a session.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::Value;

const WINDOW: Duration = Duration::from_secs(1);

/// At most `limit` admitted pushes in any one-second window.
#[derive(Debug, Default)]
pub(crate) struct RateWindow {
    admitted: VecDeque<Instant>,
}

impl RateWindow {
    /// Admits a push at `now`, or refuses it (a refused push does not count).
    pub(crate) fn admit(&mut self, now: Instant, limit: u32) -> bool {
        while self
            .admitted
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
        {
            self.admitted.pop_front();
        }
        if self.admitted.len() >= limit as usize {
            return false;
        }
        self.admitted.push_back(now);
        true
    }
}

/// An inject waiting for the session to go idle.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeldInject {
    pub stream: String,
    /// The stream's `stream@provider` key and the entry's sequence number,
    /// so a held inject that ends up paused can be re-labelled `keep`.
    pub stream_key: String,
    pub seq: u64,
    pub text: String,
    pub metadata: Option<Value>,
}

/// What to do with a new inject.
#[derive(Debug, PartialEq)]
pub(crate) enum InjectDecision {
    /// Start the turn now.
    Deliver,
    /// Another inject of this provider is in flight: hold it until idle.
    Hold,
    /// Injects are paused: store it as `keep`. `just_paused` is set when
    /// this inject is the one that crossed the limit (warn once).
    Paused { just_paused: bool },
    /// The hold queue is full: refuse it (`RATE_LIMITED`).
    QueueFull,
}

/// What to do when the session went idle.
#[derive(Debug, PartialEq)]
pub(crate) enum IdleAction {
    Nothing,
    Deliver(HeldInject),
    /// Injects are paused: these held injects become `keep`.
    Paused {
        held: Vec<HeldInject>,
        just_paused: bool,
    },
}

#[derive(Debug, Default)]
pub(crate) struct InjectGate {
    in_flight: bool,
    queue: VecDeque<HeldInject>,
    /// Injects delivered since the last user message.
    delivered: u32,
    paused: bool,
    /// The session's user-message count when `delivered` was last reset.
    user_epoch: u64,
}

impl InjectGate {
    /// A user message arrived since the last look: the chain is broken and
    /// a pause ends.
    fn sync(&mut self, user_epoch: u64) {
        if user_epoch != self.user_epoch {
            self.user_epoch = user_epoch;
            self.delivered = 0;
            self.paused = false;
        }
    }

    #[cfg(test)]
    fn is_paused(&mut self, user_epoch: u64) -> bool {
        self.sync(user_epoch);
        self.paused
    }

    /// A delivery is one more inject → idle → inject cycle once an earlier
    /// inject of the chain was delivered; the chain may have at most
    /// `cycle_limit` cycles (so `cycle_limit + 1` injects per user message).
    fn try_start(&mut self, cycle_limit: u32) -> bool {
        if self.delivered > cycle_limit {
            self.paused = true;
            return false;
        }
        self.delivered += 1;
        self.in_flight = true;
        true
    }

    pub(crate) fn on_inject(
        &mut self,
        user_epoch: u64,
        cycle_limit: u32,
        queue_limit: usize,
    ) -> InjectDecision {
        self.sync(user_epoch);
        if self.paused {
            return InjectDecision::Paused { just_paused: false };
        }
        if self.in_flight {
            return if self.queue.len() >= queue_limit {
                InjectDecision::QueueFull
            } else {
                InjectDecision::Hold
            };
        }
        if self.try_start(cycle_limit) {
            InjectDecision::Deliver
        } else {
            InjectDecision::Paused { just_paused: true }
        }
    }

    /// Queues an inject after [`InjectDecision::Hold`].
    pub(crate) fn hold(&mut self, inject: HeldInject) {
        self.queue.push_back(inject);
    }

    pub(crate) fn on_idle(&mut self, user_epoch: u64, cycle_limit: u32) -> IdleAction {
        self.sync(user_epoch);
        self.in_flight = false;
        if self.queue.is_empty() {
            return IdleAction::Nothing;
        }
        if self.paused {
            return IdleAction::Paused {
                held: self.queue.drain(..).collect(),
                just_paused: false,
            };
        }
        if self.try_start(cycle_limit) {
            match self.queue.pop_front() {
                Some(next) => IdleAction::Deliver(next),
                None => IdleAction::Nothing,
            }
        } else {
            IdleAction::Paused {
                held: self.queue.drain(..).collect(),
                just_paused: true,
            }
        }
    }

    #[cfg(test)]
    fn held(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(n: u64) -> HeldInject {
        HeldInject {
            stream: "s".into(),
            stream_key: "s@p".into(),
            seq: n,
            text: format!("inject {n}"),
            metadata: None,
        }
    }

    #[test]
    fn rate_window_admits_the_limit_per_second_and_refills() {
        let start = Instant::now();
        let mut window = RateWindow::default();
        for i in 0..10 {
            assert!(
                window.admit(start + Duration::from_millis(i), 10),
                "push {i}"
            );
        }
        assert!(!window.admit(start + Duration::from_millis(500), 10));
        // A refused push does not count: one second after the first, one
        // slot is free again.
        assert!(window.admit(start + Duration::from_millis(1000), 10));
        assert!(!window.admit(start + Duration::from_millis(1000), 10));
        assert!(window.admit(start + Duration::from_millis(2100), 10));
    }

    #[test]
    fn one_inject_in_flight_others_are_held_in_order_and_delivered_one_per_idle() {
        let mut gate = InjectGate::default();
        assert_eq!(gate.on_inject(0, 3, 10), InjectDecision::Deliver);
        assert_eq!(gate.on_inject(0, 3, 10), InjectDecision::Hold);
        gate.hold(held(1));
        assert_eq!(gate.on_inject(0, 3, 10), InjectDecision::Hold);
        gate.hold(held(2));
        assert_eq!(gate.on_idle(0, 3), IdleAction::Deliver(held(1)));
        // Still one in flight (the one just delivered).
        assert_eq!(gate.on_inject(0, 3, 10), InjectDecision::Hold);
        gate.hold(held(3));
        assert_eq!(gate.on_idle(0, 3), IdleAction::Deliver(held(2)));
        assert_eq!(gate.held(), 1);
    }

    #[test]
    fn the_hold_queue_is_bounded() {
        let mut gate = InjectGate::default();
        assert_eq!(gate.on_inject(0, 3, 2), InjectDecision::Deliver);
        for n in 0..2 {
            assert_eq!(gate.on_inject(0, 3, 2), InjectDecision::Hold);
            gate.hold(held(n));
        }
        assert_eq!(gate.on_inject(0, 3, 2), InjectDecision::QueueFull);
    }

    #[test]
    fn injects_pause_after_the_cycle_limit_until_a_user_message() {
        let mut gate = InjectGate::default();
        // inject 1, then three inject → idle → inject cycles.
        assert_eq!(gate.on_inject(0, 3, 10), InjectDecision::Deliver);
        for _ in 0..3 {
            assert_eq!(gate.on_idle(0, 3), IdleAction::Nothing);
            assert_eq!(gate.on_inject(0, 3, 10), InjectDecision::Deliver);
        }
        assert_eq!(gate.on_idle(0, 3), IdleAction::Nothing);
        assert_eq!(
            gate.on_inject(0, 3, 10),
            InjectDecision::Paused { just_paused: true }
        );
        assert_eq!(
            gate.on_inject(0, 3, 10),
            InjectDecision::Paused { just_paused: false }
        );
        assert!(gate.is_paused(0));
        // A user message (the session's count moved) resumes.
        assert!(!gate.is_paused(1));
        assert_eq!(gate.on_inject(1, 3, 10), InjectDecision::Deliver);
    }

    #[test]
    fn held_injects_that_cross_the_limit_are_released_as_paused() {
        let mut gate = InjectGate::default();
        assert_eq!(gate.on_inject(0, 1, 10), InjectDecision::Deliver);
        assert_eq!(gate.on_inject(0, 1, 10), InjectDecision::Hold);
        gate.hold(held(1));
        assert_eq!(gate.on_inject(0, 1, 10), InjectDecision::Hold);
        gate.hold(held(2));
        assert_eq!(gate.on_idle(0, 1), IdleAction::Deliver(held(1)));
        assert_eq!(
            gate.on_idle(0, 1),
            IdleAction::Paused {
                held: vec![held(2)],
                just_paused: true
            }
        );
        assert_eq!(gate.held(), 0);
    }

    #[test]
    fn a_user_message_between_injects_keeps_the_chain_short() {
        let mut gate = InjectGate::default();
        for epoch in 0..10 {
            assert_eq!(gate.on_inject(epoch, 1, 10), InjectDecision::Deliver);
            assert_eq!(gate.on_idle(epoch, 1), IdleAction::Nothing);
        }
    }
}
