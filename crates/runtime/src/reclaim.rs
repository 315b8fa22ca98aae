//! Reclaim: the reclaim thread (kswapd's role) evicts the oldest pages
//! while residency is over the limit; a fault that finds residency far
//! over it (past 125% plus one batch) waits until reclaim has caught up
//! (`memory.high` throttling). Aging runs before eviction, at most every
//! `aging_interval`. Policy only: what an eviction does is
//! [`crate::protocol::Evict`].

use crate::protocol::{Age, Evict};
use crate::runtime::{InjectPanic, Inner};
use std::time::{Duration, Instant};

/// How long a throttled fault waits for reclaim before looking again.
const THROTTLE_WAIT: Duration = Duration::from_millis(10);

impl Inner {
    /// Residency past which faults wait for reclaim.
    fn ceiling(&self) -> usize {
        self.high_pages + self.high_pages / 4 + self.cfg.reclaim_batch
    }

    pub(crate) fn reclaim_loop(&self) {
        self.register_runtime_thread();
        while !self.stopping() {
            self.reclaim_wake.wait(Duration::from_millis(20));
            self.sweep_shared();
            while !self.stopping() && self.charged() > self.high_pages {
                if self.cfg.inject_panic == Some(InjectPanic::Reclaimer) {
                    panic!("injected panic in the reclaimer");
                }
                let n = self.evict(self.cfg.reclaim_batch);
                let mut p = self.progress.lock();
                p.passes += 1;
                p.stalled = n == 0;
                self.progress_cv.notify_all();
                if n == 0 {
                    break;
                }
            }
        }
    }

    /// Ages (when due), then evicts up to `n` pages; returns how many.
    pub(crate) fn evict(&self, n: usize) -> usize {
        self.maybe_age();
        let mut op = Evict::new(n);
        self.drive(|cx| op.step(cx))
    }

    /// After a fault: wakes reclaim if over the limit; past the ceiling,
    /// holds the fault until reclaim brings residency back under it (or
    /// can do no more).
    pub(crate) fn throttle(&self) {
        let charged = self.charged();
        if charged <= self.high_pages {
            return;
        }
        self.reclaim_wake.kick();
        if charged <= self.ceiling() {
            return;
        }
        self.env
            .counters
            .throttles
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut p = self.progress.lock();
        while !self.stopping() && self.charged() > self.ceiling() {
            let seen = p.passes;
            self.reclaim_wake.kick();
            self.progress_cv.wait_for(&mut p, THROTTLE_WAIT);
            if p.passes != seen && p.stalled {
                break;
            }
        }
    }

    /// One aging pass, at most every `aging_interval`, where writes are
    /// tracked.
    fn maybe_age(&self) {
        if self.env.pagemap.is_none() {
            return;
        }
        {
            let mut last = self.last_aging.lock();
            if last.is_some_and(|t| t.elapsed() < self.cfg.aging_interval) {
                return;
            }
            *last = Some(Instant::now());
        }
        self.age();
    }

    /// One aging pass now.
    pub(crate) fn age(&self) {
        if self.env.pagemap.is_some() {
            let mut op = Age::new();
            self.drive(|cx| op.step(cx));
        }
    }

    /// Clears the shared limit's slots of dead processes, every 100 ms.
    fn sweep_shared(&self) {
        let Some(shared) = &self.shared else {
            return;
        };
        let mut last = self.last_sweep.lock();
        if last.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
            *last = Some(Instant::now());
            shared.sweep();
        }
    }
}
