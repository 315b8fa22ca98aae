//! How many pages a swap-in from the swap file reads: a window that
//! follows how much of the earlier readahead was used, as the kernel's
//! swap readahead sizes its window from the hits since the last fault.
//!
//! * Each readahead page that a later fault (or fault-around) takes from
//!   the swap cache is a *hit*.
//! * At a fault that reads from the file, the window is the hits since the
//!   last such fault plus 2, rounded up to a power of two, at most the
//!   cluster (`2^page_cluster`). With no hits, a fault right next to the
//!   last one (a stream starting) still reads 2 pages; any other fault
//!   reads its page alone.
//! * The window shrinks at most by half per fault, so one miss in a stream
//!   does not stop its readahead.
//!
//! So random access reads about the pages it uses, and a stream grows its
//! window to the whole cluster within a few faults.

use common::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The window's state, shared by every thread that swaps in.
#[derive(Debug, Default)]
pub(crate) struct RaWindow {
    /// Readahead pages used since the last window was computed.
    hits: AtomicU64,
    last: Mutex<Last>,
}

#[derive(Debug, Default)]
struct Last {
    offset: Option<u64>,
    pages: u64,
}

impl RaWindow {
    /// A page read ahead was used.
    pub(crate) fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// Pages to read (the faulting one included) for a fault at `offset`
    /// that reads from the file; at most `max` (a power of two).
    pub(crate) fn pages(&self, offset: u64, max: u64) -> u64 {
        let hits = self.hits.swap(0, Ordering::Relaxed);
        let mut last = self.last.lock();
        let next_to_last = last
            .offset
            .is_some_and(|o| offset == o + 1 || offset + 1 == o);
        let mut pages = match hits {
            0 if next_to_last => 2,
            0 => 1,
            h => (h + 2).next_power_of_two(),
        };
        pages = pages.min(max).max(last.pages / 2).max(1);
        *last = Last {
            offset: Some(offset),
            pages,
        };
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_faults_read_their_page_alone() {
        let w = RaWindow::default();
        for offset in [900u64, 17, 4000, 333, 12] {
            assert_eq!(w.pages(offset, 8), 1, "{offset}");
        }
    }

    #[test]
    fn a_stream_grows_to_the_cluster_and_one_miss_halves_it() {
        let w = RaWindow::default();
        assert_eq!(w.pages(100, 8), 1);
        assert_eq!(w.pages(101, 8), 2, "next to the last fault");
        w.hit();
        assert_eq!(w.pages(103, 8), 4);
        for _ in 0..3 {
            w.hit();
        }
        assert_eq!(w.pages(107, 8), 8);
        for _ in 0..7 {
            w.hit();
        }
        assert_eq!(w.pages(115, 8), 8, "never past the cluster");
        // Nothing of the last readahead used: half, then half again.
        assert_eq!(w.pages(5000, 8), 4);
        assert_eq!(w.pages(9000, 8), 2);
        assert_eq!(w.pages(1, 8), 1);
        assert_eq!(w.pages(7777, 8), 1);
    }
}
