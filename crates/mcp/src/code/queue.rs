//! The line `copilot_code_task` calls wait in: one task runs at a time (two
//! agents editing one workspace at once would trip over each other), the
//! rest wait in arrival order and can see how many are ahead of them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// A first-in, first-out line with one place at the front. Cheap to clone;
/// clones share the line.
#[derive(Clone)]
pub struct TaskQueue {
    inner: Arc<Inner>,
}

struct Inner {
    /// Tickets in arrival order; the front one runs.
    line: Mutex<Line>,
    /// Bumped whenever the line moves, so waiters re-read their place.
    moved: watch::Sender<u64>,
}

#[derive(Default)]
struct Line {
    next_ticket: u64,
    tickets: VecDeque<u64>,
}

impl Default for TaskQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for TaskQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskQueue")
            .field("in_line", &self.len())
            .finish()
    }
}

impl TaskQueue {
    pub fn new() -> Self {
        let (moved, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                line: Mutex::new(Line::default()),
                moved,
            }),
        }
    }

    /// Tasks running or waiting.
    pub fn len(&self) -> usize {
        self.lock().tickets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Joins the end of the line. Dropping the place (the task finished, or
    /// its caller gave up while waiting) lets the line move on.
    pub fn join(&self) -> Place {
        let ticket = {
            let mut line = self.lock();
            let ticket = line.next_ticket;
            line.next_ticket = line.next_ticket.wrapping_add(1);
            line.tickets.push_back(ticket);
            ticket
        };
        Place {
            queue: self.clone(),
            ticket,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
        // The line stays consistent across a panic: every edit is one call.
        bridge_util::sync::lock(&self.inner.line)
    }

    fn ahead_of(&self, ticket: u64) -> usize {
        self.lock()
            .tickets
            .iter()
            .position(|t| *t == ticket)
            .unwrap_or(0)
    }

    fn leave(&self, ticket: u64) {
        self.lock().tickets.retain(|t| *t != ticket);
        self.inner.moved.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// One task's place in the line.
pub struct Place {
    queue: TaskQueue,
    ticket: u64,
}

impl std::fmt::Debug for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Place")
            .field("ticket", &self.ticket)
            .finish()
    }
}

impl Place {
    /// Tasks ahead of this one (0: its turn).
    pub fn ahead(&self) -> usize {
        self.queue.ahead_of(self.ticket)
    }

    /// Waits for this task's turn; `on_move` hears the number of tasks
    /// ahead each time it changes (first with the starting number, when
    /// there is any wait at all).
    pub async fn wait_turn<F, Fut>(&self, mut on_move: F)
    where
        F: FnMut(usize) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let mut moved = self.queue.inner.moved.subscribe();
        let mut last_reported = None;
        loop {
            // Marking the value seen before reading the place means a move
            // between the read and the wait still wakes us.
            moved.borrow_and_update();
            let ahead = self.ahead();
            if ahead == 0 {
                return;
            }
            if last_reported != Some(ahead) {
                last_reported = Some(ahead);
                on_move(ahead).await;
            }
            if moved.changed().await.is_err() {
                // The sender lives as long as the queue, which we hold.
                return;
            }
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.queue.leave(self.ticket);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn places_are_served_in_arrival_order() {
        let queue = TaskQueue::new();
        let first = queue.join();
        let second = queue.join();
        let third = queue.join();
        assert_eq!((first.ahead(), second.ahead(), third.ahead()), (0, 1, 2));
        let waiting = tokio::spawn(async move {
            let mut heard = Vec::new();
            third
                .wait_turn(|ahead| {
                    heard.push(ahead);
                    std::future::ready(())
                })
                .await;
            heard
        });
        tokio::task::yield_now().await;
        drop(first);
        tokio::task::yield_now().await;
        drop(second);
        assert_eq!(waiting.await.unwrap().first(), Some(&2));
        assert!(queue.is_empty());
    }

    #[test]
    fn a_caller_giving_up_lets_the_line_move() {
        let queue = TaskQueue::new();
        let running = queue.join();
        let gave_up = queue.join();
        let last = queue.join();
        drop(gave_up);
        assert_eq!(last.ahead(), 1);
        drop(running);
        assert_eq!(last.ahead(), 0);
    }
}
