//! # zswap — the compressed swap cache and the swap layer
//!
//! [`Swap`] is the whole store a process's evicted pages go to, in the
//! kernel's layering:
//!
//! * **zswap** (`zswap` module, mm/zswap.c): a tree from swap offset to
//!   entry (compressed object in a zsmalloc pool); `store` takes a folio in
//!   batches of `store_batch` pages (`ZSWAP_MAX_BATCH_SIZE`, 8) through the
//!   compressor's one batch path (compress batching, docs/seeds.md), as
//!   `prepare` (compress into the pool: no offset named, no slot lock
//!   needed) then `commit` (publish at the offsets). A page that does not compress
//!   is stored raw if writeback is on, else the folio is rejected
//!   (`reject_compress_poor` / `reject_compress_fail`; `reject_alloc_fail`
//!   when the pool cannot allocate). Loads are exclusive (the entry goes);
//!   the entry's object waits in a bounded lock-free queue until
//!   `Zswap::free_loaded` (the runtime's reclaim thread) frees it, so a
//!   swap-in fault takes no size-class lock.
//!   A second-chance LRU picks writeback victims; a pool limit of
//!   `max_pool_percent` with `accept_threshold_percent` hysteresis. The
//!   tree's entries live in its hash tables (no allocation per store, no
//!   reference count per load); a load takes its entry out in one probe
//!   under the caller's slot lock, and puts it back if it cannot be read.
//! * **swap layer** (`swap_state` module, mm/swap_state.c + swapfile.c):
//!   zero-filled pages become a bit in a zero map (no allocation);
//!   rejected folios go to the swap file ([`swapfile::SwapFile`]); swap-in
//!   looks in the swap cache, the zero map, zswap, then the file, reading
//!   ahead by the [`Readahead`] policy (by default none for pages in
//!   zswap: the readahead bypass for pooled pages, docs/seeds.md);
//!   fault-around ([`Swap::swap_in_around`]) hands the caller's own
//!   neighbouring pages that readahead brought in; a shrinker thread
//!   writes back cold zswap pages in batches when the pool is full.
//!
//! ## Invariants
//!
//! 1. An allocated slot holds its page in exactly one place: zero map, zswap
//!    entry, swap cache (dirty: nowhere else), or the file (a clean swap
//!    cache copy may sit beside it).
//! 2. Every operation on a slot holds its slot lock (the folio lock's
//!    role); readahead, writeback and cache trimming only `try_lock` other
//!    slots, so no two slot locks are ever waited for in a cycle.
//!    `Swap::swap_out` reads the caller's pages before it takes any (the
//!    zero test and `prepare`; a folio bound for the file is copied then):
//!    a caller whose pages may fault never faults holding one.
//! 3. A page leaves zswap for the file only after the file write succeeded;
//!    a failed write keeps the entry (no data is lost).
//!
//! ## Lock order
//!
//! slot locks (sorted) → zswap tree shard → LRU → zsmalloc; swap cache and
//! zero map are leaf state.

mod config;
mod ra_window;
mod stats;
mod swap_state;
mod zswap;

pub use config::{Config, ConfigError, Readahead};
pub use stats::Stats;
pub use swap_state::{
    AroundPage, Source, Swap, SwapOutReport, ENTRY_METADATA_BYTES, WRITEBACK_BATCH,
};
pub use zswap::{loaded_queue_len, Prepared, Reject, Zswap};

pub use common::PAGE_SIZE;
pub use swapfile::{IoBackend, Protection};

/// Errors of the swap store. None of them loses a stored page.
#[derive(Debug, thiserror::Error)]
pub enum ZswapError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("zsmalloc: {0}")]
    Pool(#[from] zsmalloc::Error),
    #[error("swap device: {0}")]
    Device(#[from] swapfile::SwapError),
    #[error("zswap rejected the folio ({0}) and writeback is off")]
    Rejected(Reject),
    #[error("zswap entry at offset {offset} does not decompress: {source}")]
    Decompress {
        offset: u64,
        source: compress::CompressError,
    },
    #[error("swap offset {0} holds no page")]
    NotStored(u64),
    #[error("swap offset {0} is outside the swap device")]
    BadOffset(u64),
    #[error("a folio is 1..=512 pages of 4096 bytes with one offset each")]
    BadFolio,
    #[error("cannot start the shrinker thread: {0}")]
    Thread(std::io::Error),
}
