//! Waking a background thread: a flag and a condition variable, so that a
//! kick between two waits is never lost.

use parking_lot::{Condvar, Mutex};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Wakeup {
    kicked: Mutex<bool>,
    cv: Condvar,
}

impl Wakeup {
    /// Wakes the waiter (now, or at its next wait).
    pub fn kick(&self) {
        *self.kicked.lock() = true;
        self.cv.notify_one();
    }

    /// Waits for a kick, at most `timeout`; returns whether one came.
    pub fn wait(&self, timeout: Duration) -> bool {
        let mut k = self.kicked.lock();
        if !*k {
            self.cv.wait_for(&mut k, timeout);
        }
        std::mem::take(&mut *k)
    }
}
