//! Where eviction runs: in the faulting thread (direct reclaim) or in the
//! reclaim thread (kswapd's role), decided from what eviction sees.
//!
//! Each write-protect and unmap that eviction makes flushes the TLB of
//! every CPU running the program, by inter-processor interrupt. From the
//! reclaim thread that is an interrupt of the program's CPU per call; from
//! the faulting thread of a program that runs one thread, a flush of its
//! own CPU. The calls are one per run of neighbouring victims (unmaps:
//! one per group of runs), so it is scattered victims, one page a run
//! (random access), that pay: randpage 512 MiB under 256M took half the
//! CPU in the faulting thread, for the same elapsed time. A stream's
//! victims are whole folios, 16 pages a call, and there the reclaim
//! thread's overlap with the program wins (a single stream takes 1.5x the
//! time evicting in the faulting thread). A program whose faults come
//! from several threads gets interrupts either way: the reclaim thread
//! keeps it.
//!
//! The choice is where faults over the limit evict. The reclaim thread
//! still evicts when its tick finds the charge over the limit, down to
//! the low watermark, and under steady pressure that loop goes on beside
//! the program for as long as the program refills what it frees: the
//! two share the work. Handing eviction back to the faulting thread
//! there instead was measured slower for single-threaded programs at
//! small limits, 3 interleaved runs each: sqlite 1.19x, sort 1.14x, xz
//! 1.08x, python-list 1.03x, randpage 0.98x (sqlite's CPU 0.88x): the
//! reclaim thread's overlap with the program on another CPU is worth
//! more than the interrupts it costs.
//!
//! [`DirectReclaim`] takes counter readings each reclaim tick and says
//! whether faults over the limit evict in their own thread. Policy only,
//! and pure.

/// Counter readings ([`crate::RuntimeStats`]' totals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    pub evicted_pages: u64,
    /// Runs those pages were evicted in (one write-protect call or check
    /// each).
    pub evict_runs: u64,
    /// Faults served in-thread by a thread other than the one before.
    pub fault_thread_switches: u64,
}

/// Fewest evictions a window needs to judge by.
pub(crate) const MIN_EVICTIONS: u64 = 256;
/// Victims per run below which they count as scattered.
pub(crate) const SCATTERED_PAGES_PER_RUN: u64 = 4;
/// Thread switches between faults in a window above which the program
/// counts as running several threads at once (a few come from a thread
/// that starts or ends).
pub(crate) const MAX_THREAD_SWITCHES: u64 = 8;

/// Decides, window by window, whether eviction runs in the faulting
/// thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirectReclaim {
    start: Reading,
    direct: bool,
}

impl DirectReclaim {
    /// Eviction in the reclaim thread until a window says otherwise.
    pub fn new(now: Reading) -> Self {
        Self {
            start: now,
            direct: false,
        }
    }

    /// Ends the window under way if it has seen enough evictions; returns
    /// whether faults over the limit evict in their own thread now.
    pub fn update(&mut self, now: Reading) -> bool {
        let pages = now.evicted_pages.saturating_sub(self.start.evicted_pages);
        if pages < MIN_EVICTIONS {
            return self.direct;
        }
        let runs = now.evict_runs.saturating_sub(self.start.evict_runs).max(1);
        let switches = now
            .fault_thread_switches
            .saturating_sub(self.start.fault_thread_switches);
        self.direct = pages < SCATTERED_PAGES_PER_RUN * runs && switches <= MAX_THREAD_SWITCHES;
        self.start = now;
        self.direct
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pages: u64, runs: u64, switches: u64) -> Reading {
        Reading {
            evicted_pages: pages,
            evict_runs: runs,
            fault_thread_switches: switches,
        }
    }

    #[test]
    fn scattered_victims_of_one_thread_evict_in_the_faulting_thread() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(d.update(reading(1000, 900, 0)));
    }

    #[test]
    fn a_streams_folios_stay_with_the_reclaim_thread() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(!d.update(reading(1024, 64, 0)));
    }

    #[test]
    fn faults_from_several_threads_stay_with_the_reclaim_thread() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(!d.update(reading(1000, 1000, 500)));
    }

    #[test]
    fn a_window_too_short_keeps_the_last_decision() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(d.update(reading(1000, 1000, 0)));
        // 100 pages more, all in one run: not enough to judge.
        assert!(d.update(reading(1100, 1001, 0)));
        // Then a window of long runs turns it back.
        assert!(!d.update(reading(2100, 1065, 0)));
    }

    #[test]
    fn counters_that_go_back_are_taken_as_no_change() {
        let mut d = DirectReclaim::new(reading(5000, 5000, 10));
        assert!(!d.update(reading(10, 10, 0)));
    }
}
