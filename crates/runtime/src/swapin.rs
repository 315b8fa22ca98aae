//! Folio swap-in (mTHP swap-in's role): when a swap-in fault lands next to
//! a recent one, the rest of its folio comes from the pool in the same
//! fault, so a stream reading its memory back pays one userfaultfd round
//! trip per folio instead of one per page.
//!
//! Seed 002 reads nothing ahead for pages in the pool, and this keeps that
//! rule for faults without locality: a random access takes its one page.
//! Locality is judged by address, as the kernel's VMA readahead does: the
//! fault's folio is the folio of one of the last [`RECENT`] swap-ins, or a
//! neighbour of it. A few streams at once (a merge, threads reading their
//! own halves) each keep their locality.
//!
//! Only the fault handler loads (one thread per process), so the record
//! needs no lock; relaxed atomics keep it `Sync` and cost nothing more.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Swap-in addresses remembered.
pub(crate) const RECENT: usize = 4;

/// Which swap-in faults bring their whole folio.
pub(crate) struct FolioSwapin {
    /// Folio size in bytes (a power of two).
    folio_bytes: usize,
    /// Folio numbers of the last swap-ins, `usize::MAX` for none.
    recent: [AtomicUsize; RECENT],
    next: AtomicUsize,
}

impl FolioSwapin {
    pub(crate) fn new(folio_pages: usize) -> Self {
        let folio_bytes = folio_pages.max(1).next_power_of_two() * crate::protocol::PAGE;
        Self {
            folio_bytes,
            recent: std::array::from_fn(|_| AtomicUsize::new(usize::MAX)),
            next: AtomicUsize::new(0),
        }
    }

    /// Records a swap-in fault at `addr`; returns whether the rest of its
    /// folio should come along (a recent swap-in was in the same folio or
    /// a neighbouring one).
    pub(crate) fn wants_folio(&self, addr: usize) -> bool {
        let folio = addr / self.folio_bytes;
        let near = self.recent.iter().any(|r| {
            let f = r.load(Ordering::Relaxed);
            f != usize::MAX && f.abs_diff(folio) <= 1
        });
        if !self
            .recent
            .iter()
            .any(|r| r.load(Ordering::Relaxed) == folio)
        {
            let i = self.next.fetch_add(1, Ordering::Relaxed) % RECENT;
            self.recent[i].store(folio, Ordering::Relaxed);
        }
        near
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::PAGE;

    #[test]
    fn a_stream_brings_folios_and_random_faults_do_not() {
        let f = FolioSwapin::new(16);
        let folio = 16 * PAGE;
        // First fault of a stream: nothing known yet.
        assert!(!f.wants_folio(100 * folio));
        // The next page, same folio: locality.
        assert!(f.wants_folio(100 * folio + PAGE));
        // The next folio, and the one before: neighbours.
        assert!(f.wants_folio(101 * folio));
        assert!(f.wants_folio(99 * folio + 5 * PAGE));
        // Far away: no.
        assert!(!f.wants_folio(500 * folio));
        assert!(!f.wants_folio(900 * folio));
    }

    #[test]
    fn a_few_interleaved_streams_keep_their_locality() {
        let f = FolioSwapin::new(16);
        let folio = 16 * PAGE;
        let starts = [0usize, 1000, 2000];
        for s in starts {
            f.wants_folio(s * folio);
        }
        for step in 1..10 {
            for s in starts {
                assert!(f.wants_folio((s + step) * folio), "stream {s} step {step}");
            }
        }
        // Past RECENT streams, the oldest is forgotten.
        for s in [3000usize, 4000, 5000, 6000] {
            f.wants_folio(s * folio);
        }
        assert!(!f.wants_folio(11 * folio));
    }
}
