//! Waking a background thread: a flag and a condition variable, so that a
//! kick between two waits is never lost. std's primitives (a futex in the
//! object itself), not a global parking table: a fork copies them safely.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Wakeup {
    kicked: Mutex<bool>,
    cv: Condvar,
}

impl Wakeup {
    /// Wakes the waiter (now, or at its next wait).
    pub fn kick(&self) {
        *self.kicked.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_one();
    }

    /// Waits for a kick, at most `timeout`; returns whether one came.
    pub fn wait(&self, timeout: Duration) -> bool {
        let mut k = self.kicked.lock().unwrap_or_else(PoisonError::into_inner);
        if !*k {
            k = self
                .cv
                .wait_timeout(k, timeout)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        std::mem::take(&mut *k)
    }
}
