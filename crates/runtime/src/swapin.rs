//! Folio swap-in (mTHP swap-in's role): when swap-in faults stream through
//! memory, each brings the rest of its folio from the pool, and from the
//! swap file (as the kernel's VMA readahead reads a fault's virtual
//! neighbours), so a stream reading its memory back pays one fault per
//! folio instead of one per page.
//!
//! The readahead bypass for pooled pages (docs/seeds.md) reads nothing
//! ahead for pages in the pool, and this keeps that rule for faults that
//! do not stream: a random access takes its one page.
//! A fault streams when its page is right next to the pages of one of the
//! last [`RECENT`] swap-ins, and that swap-in was itself next to the one
//! before it: three pages in a row (more while folios go unused, below),
//! or the first page after (or before) a folio brought whole. Two
//! neighbouring pages are no stream: an object that spans a page
//! boundary faults on both, and `sort` under a tight
//! limit took 7k folios that way for next to no fewer faults. Each folio
//! brought and not read costs an eviction (a compression) and the
//! resident room of its pages, so the evidence must be strong. A few
//! streams at once (a merge, threads reading their own halves) each keep
//! their place.
//!
//! How strong the evidence must be follows what the folios brought turned
//! out to be: a folio is *continued* when a later fault lands right after
//! (or before) it, the stream going on; a run of faults that stops at its
//! first folio brought the rest of it for nothing. Each window of
//! [`JUDGE_FOLIOS`] folios, fewer than a quarter continued doubles the
//! run a fault must extend before its folio comes (up to a folio's
//! pages); half or more continued brings it back to three. sqlite under
//! 8M ran short runs of three to a few pages: one folio in eight was
//! continued, and the rest of each was evicted again unread (0.83x the
//! time with the longer runs, as with folio swap-in off; streams read
//! back from the pool or the file: unchanged).
//!
//! Faults are served in their own threads by default, so several may
//! record at once: the record is relaxed atomics without a lock, and a
//! race loses a sample (a span overwritten, a count missed), never a
//! page: the answer only says how many neighbours to load.
//! The design lab's replay (`lab` crate) asks the same questions of it.

use crate::protocol::PAGE;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Swap-ins remembered.
pub(crate) const RECENT: usize = 4;

/// Faults in a row a run needs before its folio comes, while folios are
/// continued.
pub(crate) const MIN_RUN: usize = 3;

/// Folios brought per judgement of how many were continued.
pub(crate) const JUDGE_FOLIOS: usize = 64;

/// The pages `[lo, hi]` one swap-in mapped (`lo == usize::MAX`: none),
/// the faults in a row its run has reached (1: no run), and whether it
/// brought a folio.
struct Span {
    lo: AtomicUsize,
    hi: AtomicUsize,
    run: AtomicUsize,
    folio: AtomicBool,
}

impl Span {
    fn get(&self) -> Option<(usize, usize)> {
        let lo = self.lo.load(Ordering::Relaxed);
        (lo != usize::MAX).then(|| (lo, self.hi.load(Ordering::Relaxed)))
    }

    fn set(&self, lo: usize, hi: usize, run: usize, folio: bool) {
        self.lo.store(lo, Ordering::Relaxed);
        self.hi.store(hi, Ordering::Relaxed);
        self.run.store(run, Ordering::Relaxed);
        self.folio.store(folio, Ordering::Relaxed);
    }
}

/// Which swap-in faults bring their whole folio.
pub struct FolioSwapin {
    /// Folio size in pages (a power of two).
    folio_pages: usize,
    recent: [Span; RECENT],
    next: AtomicUsize,
    /// Faults in a row a run needs now before its folio comes.
    min_run: AtomicUsize,
    /// Folios brought, and of them continued, in the window under way.
    brought: AtomicUsize,
    continued: AtomicUsize,
}

impl FolioSwapin {
    pub fn new(folio_pages: usize) -> Self {
        Self {
            folio_pages: folio_pages.max(1).next_power_of_two(),
            recent: std::array::from_fn(|_| Span {
                lo: AtomicUsize::new(usize::MAX),
                hi: AtomicUsize::new(0),
                run: AtomicUsize::new(0),
                folio: AtomicBool::new(false),
            }),
            next: AtomicUsize::new(0),
            min_run: AtomicUsize::new(MIN_RUN),
            brought: AtomicUsize::new(0),
            continued: AtomicUsize::new(0),
        }
    }

    /// Faults in a row a run needs now before its folio comes.
    pub fn min_run(&self) -> usize {
        self.min_run.load(Ordering::Relaxed)
    }

    /// Records a swap-in fault at `addr`; returns whether the rest of its
    /// folio should come along (the fault streams).
    pub fn wants_folio(&self, addr: usize) -> bool {
        let page = addr / PAGE;
        let streams = |(lo, hi): (usize, usize)| page.checked_add(1) == Some(lo) || page == hi + 1;
        let Some(span) = self.recent.iter().find(|s| s.get().is_some_and(streams)) else {
            let i = self.next.fetch_add(1, Ordering::Relaxed) % RECENT;
            self.recent[i].set(page, page, 1, false);
            return false;
        };
        let continues_folio = span.folio.load(Ordering::Relaxed);
        if continues_folio {
            self.continued.fetch_add(1, Ordering::Relaxed);
        }
        let run = span.run.load(Ordering::Relaxed).saturating_add(1);
        if run < self.min_run() && !continues_folio {
            // Two pages in a row may be one object across a page
            // boundary: one page, and watch.
            span.set(page, page, run, false);
            return false;
        }
        // The stream goes on: remember the folio it brings.
        let lo = page & !(self.folio_pages - 1);
        span.set(lo, lo + self.folio_pages - 1, run, true);
        self.judge();
        true
    }

    /// Counts a folio brought; at the end of a window, sets the run the
    /// next folios need from how many of the window's were continued.
    fn judge(&self) {
        if self.brought.fetch_add(1, Ordering::Relaxed) + 1 < JUDGE_FOLIOS {
            return;
        }
        let continued = self.continued.swap(0, Ordering::Relaxed);
        self.brought.store(0, Ordering::Relaxed);
        let min_run = self.min_run();
        let next = if continued * 4 < JUDGE_FOLIOS {
            (min_run * 2).min(self.folio_pages.max(MIN_RUN))
        } else if continued * 2 >= JUDGE_FOLIOS {
            MIN_RUN
        } else {
            min_run
        };
        self.min_run.store(next, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLIO: usize = 16;

    fn at(page: usize) -> usize {
        page * PAGE
    }

    #[test]
    fn a_stream_brings_folios_forwards_and_backwards() {
        let f = FolioSwapin::new(FOLIO);
        // First fault of a stream: nothing known yet.
        assert!(!f.wants_folio(at(1600 + 3)));
        // The next page: maybe an object across a page boundary.
        assert!(!f.wants_folio(at(1600 + 4)));
        // A third in a row: a stream; its folio (1600..1616) comes along.
        assert!(f.wants_folio(at(1600 + 5)));
        // The next fault is the first page after that folio, and so on.
        assert!(f.wants_folio(at(1616)));
        assert!(f.wants_folio(at(1632)));
        // Backwards: the page before a folio brought whole.
        let g = FolioSwapin::new(FOLIO);
        assert!(!g.wants_folio(at(801)));
        assert!(!g.wants_folio(at(800)));
        assert!(g.wants_folio(at(799)));
        assert!(g.wants_folio(at(783)));
    }

    #[test]
    fn two_pages_in_a_row_are_no_stream() {
        let f = FolioSwapin::new(FOLIO);
        // Objects across page boundaries, here and there.
        for base in [1600usize, 9000, 30_000, 52_000, 77_000] {
            assert!(!f.wants_folio(at(base)));
            assert!(!f.wants_folio(at(base + 1)));
        }
    }

    #[test]
    fn faults_near_a_recent_one_but_not_next_to_it_take_one_page() {
        let f = FolioSwapin::new(FOLIO);
        assert!(!f.wants_folio(at(1600)));
        // Same folio, two pages on; the folio after; far away.
        assert!(!f.wants_folio(at(1602)));
        assert!(!f.wants_folio(at(1620)));
        assert!(!f.wants_folio(at(90_000)));
        // Address zero and the top of the address space are no edge case.
        assert!(!f.wants_folio(0));
        assert!(!f.wants_folio(usize::MAX - PAGE + 1));
    }

    /// Runs of three faults in a row, far apart, each stopping at its
    /// first folio; returns how many brought a folio.
    fn short_runs(f: &FolioSwapin, runs: usize, from: usize) -> usize {
        let mut folios = 0;
        for r in 0..runs {
            let base = from + r * 1000;
            for p in base..base + 3 {
                folios += usize::from(f.wants_folio(at(p)));
            }
        }
        folios
    }

    #[test]
    fn runs_that_stop_at_their_first_folio_need_longer_runs() {
        let f = FolioSwapin::new(FOLIO);
        assert_eq!(short_runs(&f, JUDGE_FOLIOS, 0), JUDGE_FOLIOS);
        // None of those was continued: a run needs six faults now.
        assert_eq!(f.min_run(), 2 * MIN_RUN);
        assert_eq!(short_runs(&f, 10, 100_000), 0);
        let base = 300_000;
        for p in base..base + 5 {
            assert!(!f.wants_folio(at(p)), "page {p}");
        }
        assert!(f.wants_folio(at(base + 5)));
        // Doubling stops at a folio's pages.
        for w in 0..4 {
            for r in 0..JUDGE_FOLIOS {
                let b = 1_000_000 * (w + 1) + r * 1000;
                for p in b..b + FOLIO {
                    f.wants_folio(at(p));
                }
            }
        }
        assert_eq!(f.min_run(), FOLIO);
    }

    #[test]
    fn streams_that_go_on_bring_back_the_short_run() {
        let f = FolioSwapin::new(FOLIO);
        short_runs(&f, JUDGE_FOLIOS, 0);
        assert_eq!(f.min_run(), 2 * MIN_RUN);
        // Long streams: each folio continued by the next.
        let mut brought = 0;
        for s in 0..8 {
            let base = 100_000 + s * 10_000;
            for p in base..base + 6 {
                brought += usize::from(f.wants_folio(at(p)));
            }
            let mut next = (base + 5) / FOLIO * FOLIO + FOLIO;
            for _ in 0..10 {
                assert!(f.wants_folio(at(next)), "stream {s} at {next}");
                brought += 1;
                next += FOLIO;
            }
        }
        assert!(brought >= JUDGE_FOLIOS, "{brought}");
        assert_eq!(f.min_run(), MIN_RUN);
        // A stream in progress is not cut by a longer run asked meanwhile.
        let g = FolioSwapin::new(FOLIO);
        for p in 500_000..500_003 {
            g.wants_folio(at(p));
        }
        g.min_run.store(2 * MIN_RUN, Ordering::Relaxed);
        assert!(g.wants_folio(at(500_016)), "the folio before was continued");
        assert!(!g.wants_folio(at(700_000)) && !g.wants_folio(at(700_001)));
        assert!(!g.wants_folio(at(700_002)), "a new run needs six faults");
    }

    #[test]
    fn a_few_interleaved_streams_keep_their_place() {
        let f = FolioSwapin::new(FOLIO);
        let starts = [0usize, 16_000, 32_000];
        for s in starts {
            assert!(!f.wants_folio(at(s)));
        }
        for s in starts {
            assert!(!f.wants_folio(at(s + 1)), "stream {s}: two in a row");
        }
        for s in starts {
            assert!(f.wants_folio(at(s + 2)), "stream {s} starts");
        }
        for step in 1..10 {
            for s in starts {
                assert!(
                    f.wants_folio(at(s + step * FOLIO)),
                    "stream {s} step {step}"
                );
            }
        }
        // Past RECENT other faults, a stream is forgotten.
        for s in [48_000usize, 64_000, 80_000, 96_000] {
            f.wants_folio(at(s));
        }
        assert!(!f.wants_folio(at(10 * FOLIO)));
    }
}
