//! Waking a background thread: a flag and a condition variable, so that a
//! kick between two waits is never lost. std's primitives (a futex in the
//! object itself), not a global parking table: a fork copies them safely.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// A kick for one waiting thread; kicks before the wait are kept (one).
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
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
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

    /// Waits for a kick, however long it takes.
    pub fn wait(&self) {
        let mut k = self.kicked.lock().unwrap_or_else(PoisonError::into_inner);
        while !*k {
            k = self.cv.wait(k).unwrap_or_else(PoisonError::into_inner);
        }
        *k = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_kick_before_the_wait_is_kept_once() {
        let w = Wakeup::default();
        w.kick();
        w.kick();
        assert!(w.wait_timeout(Duration::from_secs(5)));
        assert!(!w.wait_timeout(Duration::from_millis(1)));
        w.kick();
        w.wait();
    }

    #[test]
    fn wakes_a_waiting_thread() {
        let w = Arc::new(Wakeup::default());
        let t = {
            let w = w.clone();
            std::thread::spawn(move || w.wait())
        };
        std::thread::sleep(Duration::from_millis(10));
        w.kick();
        t.join().unwrap();
    }
}
