//! Folio swap-in (mTHP swap-in's role): when swap-in faults stream through
//! memory, each brings the rest of its folio from the pool, so a stream
//! reading its memory back pays one userfaultfd round trip per folio
//! instead of one per page.
//!
//! The readahead bypass for pooled pages (docs/seeds.md) reads nothing
//! ahead for pages in the pool, and this keeps that rule for faults that
//! do not stream: a random access takes its one page.
//! A fault streams when its page is right next to the pages of one of the
//! last [`RECENT`] swap-ins, and that swap-in was itself next to the one
//! before it: three pages in a row, or the first page after (or before) a
//! folio brought whole. Two neighbouring pages are no stream: an object
//! that spans a page boundary faults on both, and `sort` under a tight
//! limit took 7k folios that way for next to no fewer faults. Each folio
//! brought and not read costs an eviction (a compression) and the
//! resident room of its pages, so the evidence must be strong. A few
//! streams at once (a merge, threads reading their own halves) each keep
//! their place.
//!
//! Only the fault handler loads (one thread per process), so the record
//! needs no lock; relaxed atomics keep it `Sync` and cost nothing more.
//! The design lab's replay (`lab` crate) asks the same questions of it.

use crate::protocol::PAGE;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Swap-ins remembered.
pub(crate) const RECENT: usize = 4;

/// The pages `[lo, hi]` one swap-in mapped (`lo == usize::MAX`: none),
/// and whether it continued a run (it was next to the swap-in before it).
struct Span {
    lo: AtomicUsize,
    hi: AtomicUsize,
    run: AtomicBool,
}

impl Span {
    fn get(&self) -> Option<(usize, usize)> {
        let lo = self.lo.load(Ordering::Relaxed);
        (lo != usize::MAX).then(|| (lo, self.hi.load(Ordering::Relaxed)))
    }

    fn set(&self, lo: usize, hi: usize, run: bool) {
        self.lo.store(lo, Ordering::Relaxed);
        self.hi.store(hi, Ordering::Relaxed);
        self.run.store(run, Ordering::Relaxed);
    }
}

/// Which swap-in faults bring their whole folio.
pub struct FolioSwapin {
    /// Folio size in pages (a power of two).
    folio_pages: usize,
    recent: [Span; RECENT],
    next: AtomicUsize,
}

impl FolioSwapin {
    pub fn new(folio_pages: usize) -> Self {
        Self {
            folio_pages: folio_pages.max(1).next_power_of_two(),
            recent: std::array::from_fn(|_| Span {
                lo: AtomicUsize::new(usize::MAX),
                hi: AtomicUsize::new(0),
                run: AtomicBool::new(false),
            }),
            next: AtomicUsize::new(0),
        }
    }

    /// Records a swap-in fault at `addr`; returns whether the rest of its
    /// folio should come along (the fault streams).
    pub fn wants_folio(&self, addr: usize) -> bool {
        let page = addr / PAGE;
        let streams = |(lo, hi): (usize, usize)| page.checked_add(1) == Some(lo) || page == hi + 1;
        match self.recent.iter().find(|s| s.get().is_some_and(streams)) {
            Some(span) if span.run.load(Ordering::Relaxed) => {
                // The stream goes on: remember the folio it brings.
                let lo = page & !(self.folio_pages - 1);
                span.set(lo, lo + self.folio_pages - 1, true);
                true
            }
            Some(span) => {
                // Two pages in a row: maybe a stream, maybe one object
                // across a page boundary. One page, and watch.
                span.set(page, page, true);
                false
            }
            None => {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % RECENT;
                self.recent[i].set(page, page, false);
                false
            }
        }
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
