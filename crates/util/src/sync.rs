//! The one way the hub locks a `std::sync::Mutex` or `RwLock`.
//!
//! A holder that panicked poisons the mutex. Every critical section in the
//! hub is short and leaves its data consistent at each step (an assignment,
//! a push, a removal), so the data is still good: one failed call must not
//! turn every later call of the daemon into a panic.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, taking the data even if a holder panicked.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads `lock`, even if a writer panicked.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `lock`, even if a writer panicked.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_still_hands_out_its_data() {
        let mutex = std::sync::Arc::new(Mutex::new(vec![1]));
        let holder = std::sync::Arc::clone(&mutex);
        let panicked = std::thread::spawn(move || {
            let mut data = holder.lock().unwrap();
            data.push(2);
            panic!("a holder fails");
        })
        .join();
        assert!(panicked.is_err() && mutex.is_poisoned());
        assert_eq!(*lock(&mutex), vec![1, 2]);
    }
}
