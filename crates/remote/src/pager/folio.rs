//! Folio swap-in from outside: when the target's swap-in faults stream
//! through its memory, a fault brings back the stored pages around it in
//! its folio with one `UFFDIO_COPY`, so that a stream pays one round trip
//! with the pager per folio instead of one per page. Which faults stream
//! is the in-process runtime's rule (`runtime::FolioSwapin`: three pages
//! in a row, or the first page past a folio brought whole); a random
//! access takes its one page (the readahead bypass for pooled pages).
//!
//! Without it, a static Go program that fills and hashes 128 MiB under a
//! 32M limit took 488k swap-in faults from outside where the runtime's
//! protocol, replayed on its trace (`uzswap replay`), took 100k.

use super::{Page, Pager, PagerError};
use common::PAGE_SIZE;
use std::collections::BTreeMap;

/// Pages of a folio brought back at once (the runtime's 64K folio).
pub(super) const FOLIO_PAGES: usize = 16;

impl Pager {
    /// The stored pages around `addr` in its folio, `[lo, hi)`, if the
    /// fault at `addr` (a stored page) streams and more than it would
    /// come; `None`: the one page.
    pub(super) fn folio_to_bring(&mut self, addr: usize) -> Option<(usize, usize)> {
        if !self.folio.wants_folio(addr) || !self.in_flight.spans.is_empty() {
            return None;
        }
        let (lo, hi) = stored_run(&self.pages, addr);
        (hi - lo > PAGE_SIZE).then_some((lo, hi))
    }

    /// Brings the stored pages `[lo, hi)` back (the fault at `addr` among
    /// them) with one copy; a copy refused as a whole goes page by page.
    pub(super) fn swap_in_folio(
        &mut self,
        addr: usize,
        lo: usize,
        hi: usize,
    ) -> Result<(), PagerError> {
        let mut bytes = vec![0u8; hi - lo];
        for (a, page) in (lo..hi)
            .step_by(PAGE_SIZE)
            .zip(bytes.chunks_exact_mut(PAGE_SIZE))
        {
            let Some(Page::Stored(slot)) = self.pages.get(&a).copied() else {
                return Err(PagerError::Kernel {
                    op: "folio swap-in of a page not stored",
                    addr: a,
                    errno: 0,
                });
            };
            self.swap.swap_in(slot, page)?;
        }
        self.stats.swapin_faults += 1;
        self.stats.folio_swapins += 1;
        self.stats.around_pages += ((hi - lo) / PAGE_SIZE - 1) as u64;
        if self.os.copy(&bytes, lo).is_ok() {
            for a in (lo..hi).step_by(PAGE_SIZE) {
                self.pages.remove(&a);
                self.set_resident(a);
            }
            return Ok(());
        }
        // The mappings are changing (an event is queued), or part of the
        // range went: each page on its own, as a single swap-in would.
        for (a, page) in (lo..hi)
            .step_by(PAGE_SIZE)
            .zip(bytes.chunks_exact(PAGE_SIZE))
        {
            self.map_swapped_in(a, page.to_vec(), a == addr)?;
        }
        Ok(())
    }
}

/// The run of stored pages around `addr` within its folio, `[lo, hi)`
/// (just `addr`'s page where its neighbours are not stored).
fn stored_run(pages: &BTreeMap<usize, Page>, addr: usize) -> (usize, usize) {
    let stored = |a: usize| matches!(pages.get(&a), Some(Page::Stored(_)));
    let folio = FOLIO_PAGES * PAGE_SIZE;
    let base = addr & !(folio - 1);
    let mut lo = addr;
    while lo > base && stored(lo - PAGE_SIZE) {
        lo -= PAGE_SIZE;
    }
    let mut hi = addr + PAGE_SIZE;
    while hi < base + folio && stored(hi) {
        hi += PAGE_SIZE;
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folio_swap_in_takes_the_stored_run_around_the_fault_within_its_folio() {
        let folio = FOLIO_PAGES * PAGE_SIZE;
        let base = 0x7000_0000_0000usize;
        let at = |i: usize| base + i * PAGE_SIZE;
        let mut pages = BTreeMap::new();
        // Stored 2..14, one held (7) and one evicting (11) page among
        // them, and stored pages past the folio's end (16..20).
        for i in (2..14).chain(16..20) {
            pages.insert(at(i), Page::Stored(i as u64));
        }
        pages.insert(at(7), Page::Held);
        pages.insert(at(11), Page::Evicting(11));
        assert_eq!(stored_run(&pages, at(4)), (at(2), at(7)));
        assert_eq!(stored_run(&pages, at(9)), (at(8), at(11)));
        assert_eq!(stored_run(&pages, at(13)), (at(12), at(14)));
        // Never past the folio: 16.. is the next one.
        assert_eq!(stored_run(&pages, at(16)), (at(16), at(20)));
        assert_eq!(at(16) % folio, 0);
        // A page alone.
        pages.insert(at(30), Page::Stored(30));
        assert_eq!(stored_run(&pages, at(30)), (at(30), at(31)));
    }
}
