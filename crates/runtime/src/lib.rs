//! # runtime — page real programs' memory through uzswap (userfaultfd)
//!
//! A [`Runtime`] hands out [`Region`]s: anonymous mappings registered with
//! userfaultfd in missing and write-protect modes. Each region's pages live
//! either in memory or in the [`zswap::Swap`] store. A resident-page limit
//! (memcg `memory.high`'s role) makes a reclaim thread evict the oldest
//! pages, kswapd-style. Past 125% of the limit (plus one reclaim batch) the
//! fault handler reclaims directly until back under it, holding faults
//! meanwhile: resident memory stays below that ceiling plus one fault's
//! pages.
//!
//! ## The evict-vs-fault protocol
//!
//! Eviction of a run of resident pages (up to `evict_folio_pages`):
//! 1. mark them `Evicting` (under the state lock), write-protect the run:
//!    from now on writers block in a write-protect fault, readers proceed;
//! 2. copy the run out (its bytes are stable) and `swap_out` it;
//! 3. `MADV_DONTNEED` the run, then mark it `Swapped(slot)`: a fault in
//!    between finds `Evicting` and is woken to retry, so the handler never
//!    sees `Swapped` for a page that is still mapped;
//! 4. remove the write protection and wake the blocked writers: they retry,
//!    take a missing fault, and the handler installs the page again
//!    (`UFFDIO_COPY`) before their write lands.
//!
//! A failed `swap_out` (pool full with writeback off, I/O error) undoes
//! step 1: the pages stay resident and nothing is lost.
//!
//! Missing faults: `Untouched` → `UFFDIO_ZEROPAGE`; `Swapped(slot)` →
//! `swap_in_around` (fault-around over the region's neighbouring swapped
//! pages), `UFFDIO_COPY` each page. A fault on a page that is already
//! `Resident` (installed by fault-around meanwhile) just wakes the thread.
//!
//! ## Victim choice: an approximate LRU
//!
//! Resident pages queue in fault order. Reclaim takes them from the head,
//! but passes over (and requeues) a page that
//! - refaulted within the workingset: evicted less than a limit's worth of
//!   evictions ago (shadow entries, `workingset_refault`/`_activate`), or
//! - was written since the last aging pass. Aging, at most every
//!   `aging_interval` before reclaim, asks `PAGEMAP_SCAN` (Linux 6.7+)
//!   which resident pages of each region lost their write protection, gives
//!   them two reprieves, and write-protects the region again (one
//!   `UFFDIO_WRITEPROTECT`). A write to a protected page is a
//!   write-protect fault: the handler removes the protection (holding the
//!   state lock, unless the page is `Evicting`) and wakes the writer.
//!   Reads are not seen: user space has no accessed bit. The asynchronous
//!   write-protect mode (`UFFD_FEATURE_WP_ASYNC`) would spare those faults
//!   but cannot be used: it applies to the whole userfaultfd, and eviction
//!   relies on writers blocking while a run is copied out.
//!
//! ## Invariants
//!
//! 1. A page is in exactly one state; only the state lock changes it.
//! 2. A `Swapped` page is unmapped, and its bytes are the stored copy.
//! 3. No thread ever writes a page between step 2's copy and step 4.
//!
//! ## Lock order
//!
//! state lock → (nothing): compression, I/O and ioctls run unlocked, except
//! the handler's un-protect of a write-tracking fault, which must happen
//! while no eviction of that page can start (the model's
//! `UnprotectUnlocked` variant shows the lost write otherwise).

pub mod launch;
mod pagemap;
#[cfg(test)]
mod protocol_model;
pub mod report;
mod runtime;
pub mod settings;
pub mod shared;
mod uffd;

pub use runtime::{Region, Runtime, RuntimeConfig, RuntimeStats};
pub use settings::Settings;

/// Errors of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("userfaultfd is not available: {0} (needs Linux 5.11+ with UFFD_USER_MODE_ONLY, or root / vm.unprivileged_userfaultfd=1)")]
    Uffd(String),
    #[error("mmap of {len} bytes failed: {source}")]
    Mmap { len: usize, source: std::io::Error },
    #[error("swap store: {0}")]
    Swap(#[from] zswap::ZswapError),
    #[error("invalid runtime setting: {0}")]
    Config(String),
}
