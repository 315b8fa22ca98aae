//! At most once every interval: a lock-free gate that threads share, as
//! the kernel's `__ratelimit` or a `time_after(jiffies, last + interval)`
//! check. One atomic word, so a fork copies it in a consistent state.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Lets one caller through at most once every `interval`; the first call
/// always passes.
#[derive(Debug)]
pub struct RateLimit {
    origin: Instant,
    interval_ms: u64,
    /// One more than the milliseconds since `origin` of the last pass;
    /// 0: never.
    last_ms: AtomicU64,
}

impl RateLimit {
    /// A limit of once every `interval` (millisecond resolution).
    pub fn new(interval: Duration) -> Self {
        Self {
            origin: Instant::now(),
            interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
            last_ms: AtomicU64::new(0),
        }
    }

    /// Whether the caller may act now. Of callers racing on one due
    /// moment, exactly one gets `true`.
    pub fn ready(&self) -> bool {
        self.ready_at(self.origin.elapsed())
    }

    /// [`ready`](Self::ready) with `interval` for this call instead of
    /// the limit's own (a caller that sometimes may act sooner).
    pub fn ready_every(&self, interval: Duration) -> bool {
        let interval_ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        self.ready_at_every(self.origin.elapsed(), interval_ms)
    }

    /// [`ready`](Self::ready) at `since_origin` after this limit was made
    /// (a clock of the caller's, for tests).
    pub fn ready_at(&self, since_origin: Duration) -> bool {
        self.ready_at_every(since_origin, self.interval_ms)
    }

    fn ready_at_every(&self, since_origin: Duration, interval_ms: u64) -> bool {
        let now = u64::try_from(since_origin.as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let last = self.last_ms.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= interval_ms;
        due && self
            .last_ms
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn first_call_passes_then_once_per_interval() {
        let r = RateLimit::new(100 * MS);
        assert!(r.ready_at(Duration::ZERO));
        assert!(!r.ready_at(Duration::ZERO));
        assert!(!r.ready_at(99 * MS));
        assert!(r.ready_at(100 * MS));
        assert!(!r.ready_at(150 * MS));
        assert!(!r.ready_at(199 * MS));
        assert!(r.ready_at(250 * MS));
        assert!(!r.ready_at(349 * MS));
        assert!(r.ready_at(350 * MS));
    }

    #[test]
    fn a_shorter_interval_for_one_call_counts_from_the_same_last_pass() {
        let r = RateLimit::new(100 * MS);
        assert!(r.ready_at(Duration::ZERO));
        // Sooner for this call: 20 ms after the last pass, whoever let it.
        assert!(!r.ready_at_every(19 * MS, 20));
        assert!(r.ready_at_every(20 * MS, 20));
        // The limit's own interval counts from that pass.
        assert!(!r.ready_at(119 * MS));
        assert!(r.ready_at(120 * MS));
        assert!(!r.ready_at_every(139 * MS, 20));
    }

    #[test]
    fn a_zero_interval_always_passes() {
        let r = RateLimit::new(Duration::ZERO);
        assert!((0..5).all(|_| r.ready_at(7 * MS)));
    }

    #[test]
    fn the_real_clock_passes_the_first_call_only() {
        let r = RateLimit::new(Duration::from_secs(3600));
        assert!(r.ready());
        assert!(!r.ready());
    }

    #[test]
    fn one_of_racing_callers_passes() {
        let r = RateLimit::new(Duration::from_secs(3600));
        let passed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        if r.ready_at(5 * MS) {
                            passed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(passed.load(Ordering::Relaxed), 1);
    }
}
