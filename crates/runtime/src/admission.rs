//! Pool admission: whether evicted pages pass through the compressed pool
//! on their way to the swap file, or go straight to the file (zswap's
//! reject path, taken by choice: `Swap::swap_out_to_file`).
//!
//! Where the pool writes back most of what it stores, each page stored
//! pays a compression, and each page written back a decompression, for
//! the few that are loaded from the pool before their turn comes. Per page
//! stored, against a store straight to the file:
//!
//! * the pool costs `S_pool - S_file + w * WB` more: the store into the
//!   pool over the file's, and the writeback (a decompression and the
//!   file's write) of the share `w` written back;
//! * it saves `h * (L_file - L_pool) + f * F`: the share `h` loaded from
//!   the pool would have been read from the file, and the share `f` that
//!   folio swap-in brought beside another page's fault would each have
//!   taken a fault of their own ([`FAULT_ROUND_TRIP_NS`]).
//!
//! Pages that go on to the file either way are read back from it either
//! way, so they weigh the same on both sides. Loads are weighed as the
//! budget split weighs them (`split.rs`). Where the swap file lives in
//! memory a read is a copy, and a pool that writes back most of what it
//! stores is mostly cost (xz under 9M with its swap file in /dev/shm: 86%
//! of the pages stored written back, 14% loaded; the compression and
//! decompression a fifth of the CPU). On a disk the pool is never
//! bypassed: there the bypass's extra writes and reads are device time
//! whose cost varies more than the formula can see, and bypassing pools
//! that loaded back a tenth of what they stored or less (scans in sqlite
//! and sort under their limits, 2-3% of their pages) measured nothing
//! better (0.95-0.98x the time in two sets of 2 interleaved runs).
//!
//! `w`, `h` and `f` are measured while the pool takes everything: after
//! the pool has filled again (it writes back), over a span of evictions,
//! from its counters (`zswpout`, `zswpin`, `written_back_pages`) and the
//! folio swap-ins'. The pool is bypassed only where at least
//! [`BYPASS_MIN_WRITTEN_BACK`] of the pages stored are written back, at
//! most [`BYPASS_MAX_LOADED`] loaded, and its cost is more than twice
//! what it saves; then for [`BYPASS_SPANS`] spans, after which it takes
//! everything again to be measured again. A program that turns to reading
//! back what it evicted lately ends the bypass sooner: while bypassed,
//! the refaults from the file of pages evicted within the pool's reach
//! (the age of what it wrote back when judged) are counted, and a span
//! with many more of them per eviction than the pool's loads were
//! ([`NEAR_REFAULTS_OVER_LOADS`]) gives the pool everything again.
//!
//! The phases move on the reclaim thread only (each tick, with the split's
//! eviction count), under a lock no other thread takes; evicting and
//! faulting threads (in their SIGBUS handlers too) read one relaxed flag
//! and add to relaxed counters and averages, lock-free. A race costs a
//! sample or sends a run one way where the other was just decided: never
//! a page, since both ways store it.

use crate::split::average;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Least share of the pages stored that the pool writes back before it can
/// be bypassed.
pub(crate) const BYPASS_MIN_WRITTEN_BACK: f64 = 0.5;
/// Most share of the pages stored that the pool loads back for it to be
/// bypassed.
pub(crate) const BYPASS_MAX_LOADED: f64 = 1.0 / 3.0;
/// A bypass ends early once the refaults from the file within the pool's
/// reach, per eviction, pass this many times the pool's loads per eviction
/// when it was judged (and at least [`NEAR_REFAULTS_AT_LEAST`]): the
/// program has turned to reading back what it evicted lately, which the
/// pool would serve (python-list under 24M, swap file in /dev/shm: a list
/// built, then read back at 0.3-0.85 near refaults an eviction against
/// 0.04-0.3 loads when judged; xz steady at 0.2-0.45 against 0.1-0.3).
pub(crate) const NEAR_REFAULTS_OVER_LOADS: f64 = 2.0;
pub(crate) const NEAR_REFAULTS_AT_LEAST: f64 = 0.5;
/// How many times what it saves the pool must cost to be bypassed.
pub(crate) const BYPASS_MARGIN: f64 = 2.0;
/// Spans of evictions the pool stays bypassed before it is measured again.
pub(crate) const BYPASS_SPANS: u64 = 16;
/// Least evictions in a span.
pub(crate) const MIN_SPAN: u64 = 1024;
/// Spans after which a pool that has not written back since it was
/// admitted again is measured anyway (it holds what it is given).
const SETTLE_SPANS_AT_MOST: u64 = 16;

/// What a page loaded from the file costs beyond its load where the pool
/// would have brought it with its neighbours (folio swap-in): a fault of
/// its own (the signal, its return and a `UFFDIO_COPY` call: about half of
/// an in-thread swap-in fault's 8-10 µs p50, the rest its load and page).
pub(crate) const FAULT_ROUND_TRIP_NS: u64 = 5_000;

/// The pool's traffic over a span: pages stored, loaded back (of them,
/// brought beside another page's fault: `folio_pages`) and written back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PoolTraffic {
    pub stored: u64,
    pub loaded: u64,
    pub folio_pages: u64,
    pub written_back: u64,
}

impl PoolTraffic {
    fn since(self, start: PoolTraffic) -> PoolTraffic {
        PoolTraffic {
            stored: self.stored.saturating_sub(start.stored),
            loaded: self.loaded.saturating_sub(start.loaded),
            folio_pages: self.folio_pages.saturating_sub(start.folio_pages),
            written_back: self.written_back.saturating_sub(start.written_back),
        }
    }
}

/// What each step costs per page, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageCosts {
    /// A store into the pool (compression, allocation, the tree).
    pub pool_store: u64,
    /// A store straight to the swap file.
    pub file_store: u64,
    /// A load from the pool.
    pub pool_load: u64,
    /// A load from the swap file (as the split weighs it).
    pub file_load: u64,
    /// A writeback from the pool to the file.
    pub writeback: u64,
    /// The swap file lives in memory (tmpfs).
    pub file_in_memory: bool,
}

/// Whether the pool costs more than it saves on `t`'s traffic at costs `c`
/// (see the module's text).
pub(crate) fn bypass_pays(t: PoolTraffic, c: PageCosts) -> bool {
    if t.stored == 0 {
        return false;
    }
    let stored = t.stored as f64;
    let written_back = t.written_back as f64 / stored;
    let loaded = t.loaded as f64 / stored;
    let cost = c.pool_store as f64 - c.file_store as f64 + written_back * c.writeback as f64;
    let folio = t.folio_pages as f64 / stored;
    let saves = loaded * c.file_load.saturating_sub(c.pool_load) as f64
        + folio * FAULT_ROUND_TRIP_NS as f64;
    c.file_in_memory
        && written_back >= BYPASS_MIN_WRITTEN_BACK
        && loaded <= BYPASS_MAX_LOADED
        && cost > BYPASS_MARGIN * saves
}

/// Where admission stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// The pool takes everything and fills again: measured once it writes
    /// back (or after [`SETTLE_SPANS_AT_MOST`] spans).
    Settling {
        since_evicted: u64,
        written_back: u64,
    },
    /// The pool takes everything; its traffic since `start` is judged once
    /// a span of evictions has passed.
    Measuring {
        since_evicted: u64,
        start: PoolTraffic,
    },
    /// Stores go straight to the file until `until_evicted`, or until a
    /// span (from `since_evicted`, when `near` refaults had been counted)
    /// has more refaults from the file within the pool's reach per
    /// eviction than `end_rate` ([`NEAR_REFAULTS_OVER_LOADS`]).
    Bypassing {
        until_evicted: u64,
        since_evicted: u64,
        near: u64,
        end_rate: f64,
    },
}

/// The admission of one process's pool.
#[derive(Debug)]
pub(crate) struct PoolAdmission {
    /// Stores go straight to the swap file.
    bypass: AtomicBool,
    /// Per-page store costs, ns (0: not measured yet).
    pool_store_ns: AtomicU64,
    file_store_ns: AtomicU64,
    /// Taken by the reclaim thread only.
    phase: Mutex<Phase>,
    /// While bypassing: the pool's reach when the bypass began (the age in
    /// evictions of the entries it wrote back then), and the refaults from
    /// the file evicted less than that ago.
    reach: AtomicU64,
    near_refaults: AtomicU64,
    /// Pages pool loads brought beside their fault's page (folio swap-in).
    folio_pages: AtomicU64,
    /// Times the pool was bypassed (for the tests).
    #[cfg(test)]
    bypasses: AtomicU64,
}

impl PoolAdmission {
    pub(crate) fn new() -> Self {
        PoolAdmission {
            bypass: AtomicBool::new(false),
            pool_store_ns: AtomicU64::new(0),
            file_store_ns: AtomicU64::new(0),
            phase: Mutex::new(Phase::Settling {
                since_evicted: 0,
                written_back: 0,
            }),
            #[cfg(test)]
            bypasses: AtomicU64::new(0),
            reach: AtomicU64::new(0),
            near_refaults: AtomicU64::new(0),
            folio_pages: AtomicU64::new(0),
        }
    }

    /// A swap-in fault's folio brought `pages` more pages from the pool.
    pub(crate) fn note_folio_pages(&self, pages: usize) {
        self.folio_pages.fetch_add(pages as u64, Ordering::Relaxed);
    }

    /// Pages folio swap-ins have brought from the pool so far.
    pub(crate) fn folio_pages(&self) -> u64 {
        self.folio_pages.load(Ordering::Relaxed)
    }

    /// A swap-in read from the swap file a page evicted `distance`
    /// evictions ago (from a faulting thread: relaxed atomics only).
    pub(crate) fn note_file_refault(&self, distance: u64) {
        if self.bypassing() && distance < self.reach.load(Ordering::Relaxed) {
            self.near_refaults.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether stores go straight to the swap file now.
    pub(crate) fn bypassing(&self) -> bool {
        self.bypass.load(Ordering::Relaxed)
    }

    /// A store of `pages` pages took `ns`, into the pool or (`to_file`)
    /// straight to the file.
    pub(crate) fn note_store(&self, to_file: bool, pages: usize, ns: u64) {
        if pages == 0 {
            return;
        }
        let avg = match to_file {
            true => &self.file_store_ns,
            false => &self.pool_store_ns,
        };
        let sample = ns / pages as u64;
        if avg.load(Ordering::Relaxed) == 0 {
            avg.store(sample.max(1), Ordering::Relaxed);
        } else {
            average(avg, sample);
        }
    }

    /// The store costs measured, the file's estimated from a writeback's
    /// (a decompression, as a pool load, and a write) until measured.
    pub(crate) fn store_costs(&self, pool_load: u64, writeback: u64) -> (u64, u64) {
        let file = match self.file_store_ns.load(Ordering::Relaxed) {
            0 => writeback.saturating_sub(pool_load),
            measured => measured,
        };
        (self.pool_store_ns.load(Ordering::Relaxed), file)
    }

    /// The reclaim thread's tick: `evicted` pages evicted in all, the
    /// pool's traffic totals `traffic`, spans of `span` evictions, the
    /// pool's reach now (`reach`: the age in evictions of the entries it
    /// writes back), and what each step costs (`costs`, read only when a
    /// span is judged).
    pub(crate) fn tick(
        &self,
        evicted: u64,
        traffic: PoolTraffic,
        span: u64,
        reach: u64,
        costs: impl FnOnce() -> PageCosts,
    ) {
        let Ok(mut phase) = self.phase.try_lock() else {
            return;
        };
        let span = span.max(MIN_SPAN);
        let next = match *phase {
            Phase::Settling {
                since_evicted,
                written_back,
            } => {
                let passed = evicted.saturating_sub(since_evicted);
                let filled = traffic.written_back > written_back;
                (passed >= span && filled || passed >= SETTLE_SPANS_AT_MOST * span).then_some(
                    Phase::Measuring {
                        since_evicted: evicted,
                        start: traffic,
                    },
                )
            }
            Phase::Measuring {
                since_evicted,
                start,
            } => (evicted.saturating_sub(since_evicted) >= span).then(|| {
                let (t, c) = (traffic.since(start), costs());
                if t.stored >= span / 2 && bypass_pays(t, c) {
                    self.reach.store(reach, Ordering::Relaxed);
                    let loads = t.loaded as f64 / evicted.saturating_sub(since_evicted) as f64;
                    Phase::Bypassing {
                        until_evicted: evicted + BYPASS_SPANS * span,
                        since_evicted: evicted,
                        near: self.near_refaults.load(Ordering::Relaxed),
                        end_rate: (NEAR_REFAULTS_OVER_LOADS * loads).max(NEAR_REFAULTS_AT_LEAST),
                    }
                } else {
                    Phase::Measuring {
                        since_evicted: evicted,
                        start: traffic,
                    }
                }
            }),
            Phase::Bypassing {
                until_evicted,
                since_evicted,
                near,
                end_rate,
            } => {
                let passed = evicted.saturating_sub(since_evicted);
                let now_near = self.near_refaults.load(Ordering::Relaxed);
                let refaulting = (now_near - near) as f64 > end_rate * passed as f64;
                if evicted >= until_evicted || passed >= span && refaulting {
                    Some(Phase::Settling {
                        since_evicted: evicted,
                        written_back: traffic.written_back,
                    })
                } else if passed >= span {
                    Some(Phase::Bypassing {
                        until_evicted,
                        since_evicted: evicted,
                        near: now_near,
                        end_rate,
                    })
                } else {
                    None
                }
            }
        };
        if let Some(next) = next {
            let bypass = matches!(next, Phase::Bypassing { .. });
            #[cfg(test)]
            if bypass && !self.bypassing() {
                self.bypasses.fetch_add(1, Ordering::Relaxed);
            }
            self.bypass.store(bypass, Ordering::Relaxed);
            *phase = next;
        }
    }

    /// Times the pool has been bypassed.
    #[cfg(test)]
    pub(crate) fn bypasses(&self) -> u64 {
        self.bypasses.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xz under 9M with its swap file in /dev/shm, as measured.
    const IN_MEMORY: PageCosts = PageCosts {
        pool_store: 3_000,
        file_store: 2_500,
        pool_load: 2_500,
        file_load: 3_000,
        writeback: 4_500,
        file_in_memory: true,
    };

    /// The same on a disk: a read is a device read.
    const ON_DISK: PageCosts = PageCosts {
        file_load: 45_000,
        file_in_memory: false,
        ..IN_MEMORY
    };

    fn traffic(stored: u64, loaded: u64, written_back: u64) -> PoolTraffic {
        PoolTraffic {
            stored,
            loaded,
            written_back,
            folio_pages: 0,
        }
    }

    #[test]
    fn pages_the_pool_brings_by_folio_weigh_the_faults_they_save() {
        let t = traffic(1000, 330, 670);
        assert!(bypass_pays(t, IN_MEMORY));
        let by_folio = PoolTraffic {
            folio_pages: 330,
            ..t
        };
        assert!(!bypass_pays(by_folio, IN_MEMORY));
    }

    #[test]
    fn a_bypass_ends_early_when_the_program_reads_back_what_it_evicted_lately() {
        let a = PoolAdmission::new();
        let (mut t, mut evicted) = (PoolTraffic::default(), 0);
        run(&a, &mut t, &mut evicted, 2 * MIN_SPAN, 86, IN_MEMORY);
        assert!(a.bypassing());
        // Refaults from the file, evicted within the pool's reach (4096),
        // at a few per span: the bypass goes on.
        let mut next_span = |near: u64, distance: u64| {
            for _ in 0..near {
                a.note_file_refault(distance);
            }
            let until = evicted + MIN_SPAN;
            run(&a, &mut t, &mut evicted, until, 86, IN_MEMORY);
            a.bypassing()
        };
        assert!(next_span(100, 1000));
        // Many, but from further than the reach: it goes on.
        assert!(next_span(1000, 5000));
        // Many within the reach: over.
        assert!(!next_span(1000, 1000));
        assert_eq!(a.bypasses(), 1);
    }

    #[test]
    fn a_pass_through_pool_is_bypassed_where_the_file_is_as_fast() {
        assert!(bypass_pays(traffic(1000, 140, 860), IN_MEMORY));
        // On a disk the pool is kept, even where nothing stored is loaded
        // back and writes are dear (a device's costs vary too much).
        assert!(!bypass_pays(traffic(1000, 140, 860), ON_DISK));
        let dear_writes = PageCosts {
            writeback: 200_000,
            ..ON_DISK
        };
        assert!(!bypass_pays(traffic(1000, 0, 1000), dear_writes));
    }

    #[test]
    fn a_pool_that_serves_most_of_what_it_stores_is_kept() {
        // Most pages loaded back, few written back: kept even where the
        // file is as fast, since the pool costs little.
        assert!(!bypass_pays(traffic(1000, 900, 100), IN_MEMORY));
        // Under half written back: kept whatever the costs.
        let dear = PageCosts {
            pool_store: 50_000,
            ..IN_MEMORY
        };
        assert!(!bypass_pays(traffic(1000, 0, 499), dear));
        assert!(bypass_pays(traffic(1000, 0, 500), dear));
        assert!(!bypass_pays(traffic(0, 0, 0), dear));
    }

    /// Runs ticks of 256 evictions, the pool storing every page and
    /// writing back (or loading) the shares given, until `evicted`.
    fn run(
        a: &PoolAdmission,
        t: &mut PoolTraffic,
        evicted: &mut u64,
        until: u64,
        share_written_back: u64,
        costs: PageCosts,
    ) {
        while *evicted < until {
            *evicted += 256;
            if !a.bypassing() {
                t.stored += 256;
                t.written_back += 256 * share_written_back / 100;
                t.loaded += 256 * (100 - share_written_back) / 100;
            }
            a.tick(*evicted, *t, MIN_SPAN, 4096, || costs);
        }
    }

    #[test]
    fn bypassed_for_some_spans_then_measured_again() {
        let a = PoolAdmission::new();
        let (mut t, mut evicted) = (PoolTraffic::default(), 0);
        // Settling (a span, the pool writing back), then a span measured.
        run(&a, &mut t, &mut evicted, MIN_SPAN, 86, IN_MEMORY);
        assert!(!a.bypassing());
        run(&a, &mut t, &mut evicted, 2 * MIN_SPAN, 86, IN_MEMORY);
        assert!(a.bypassing(), "judged after its measured span");
        assert_eq!(a.bypasses(), 1);
        // Bypassed for its spans, then given everything again.
        let back = evicted + BYPASS_SPANS * MIN_SPAN;
        run(&a, &mut t, &mut evicted, back - 256, 86, IN_MEMORY);
        assert!(a.bypassing());
        run(&a, &mut t, &mut evicted, back, 86, IN_MEMORY);
        assert!(!a.bypassing());
        // The program changed: the pool now serves most pages. Measured
        // again, it stays.
        run(
            &a,
            &mut t,
            &mut evicted,
            back + 20 * MIN_SPAN,
            10,
            IN_MEMORY,
        );
        assert!(!a.bypassing());
        assert_eq!(a.bypasses(), 1);
    }

    #[test]
    fn a_pool_that_never_writes_back_is_measured_late_and_kept() {
        let a = PoolAdmission::new();
        let (mut t, mut evicted) = (PoolTraffic::default(), 0);
        run(&a, &mut t, &mut evicted, 40 * MIN_SPAN, 0, IN_MEMORY);
        assert!(!a.bypassing());
        assert_eq!(a.bypasses(), 0);
    }

    #[test]
    fn store_costs_come_from_the_writeback_until_measured() {
        let a = PoolAdmission::new();
        assert_eq!(a.store_costs(2_000, 5_000), (0, 3_000));
        a.note_store(false, 16, 48_000);
        a.note_store(true, 4, 8_000);
        assert_eq!(a.store_costs(2_000, 5_000), (3_000, 2_000));
        a.note_store(true, 0, 8_000);
        assert_eq!(a.store_costs(2_000, 5_000), (3_000, 2_000));
    }
}
