//! The compressed pool of a reference policy's replay (the runtime's
//! protocol replays over the real store): the real zsmalloc allocator, given
//! each evicted page's recorded compressed length, so that its size
//! classes and zspages round sizes up as the run's pool did.

use crate::workload::{Workload, PAGE};
use zsmalloc::{Config, Handle, Pool};

/// Per-entry bookkeeping the store charges besides the object.
const ENTRY_BYTES: usize = zswap::ENTRY_METADATA_BYTES;

/// Objects of evicted pages, by page id.
pub struct PoolModel {
    pool: Pool,
    handles: Vec<Option<Handle>>,
    entries: usize,
    pub stored_pages: u64,
    pub stored_bytes: u64,
    pub zero_pages: u64,
    peak_pages: usize,
}

/// Why a replay's pool cannot take a page.
#[derive(Debug, thiserror::Error)]
#[error("zsmalloc: {0}")]
pub struct PoolError(#[from] zsmalloc::Error);

impl PoolModel {
    /// A pool for the pages of `w` (its arena holds every page
    /// uncompressed).
    pub fn new(w: &Workload) -> Result<PoolModel, PoolError> {
        let mut cfg = Config::default().with_arena_bytes((w.pages + 64) * PAGE * 2);
        cfg.max_handles = w.pages + 64;
        Ok(PoolModel {
            pool: Pool::new(cfg)?,
            handles: vec![None; w.pages],
            entries: 0,
            stored_pages: 0,
            stored_bytes: 0,
            zero_pages: 0,
            peak_pages: 0,
        })
    }

    /// Stores page `id` with its size from `w`.
    pub fn store(&mut self, w: &Workload, id: u32) -> Result<(), PoolError> {
        self.entries += 1;
        let Some(size) = w.stored_size(id) else {
            self.zero_pages += 1;
            return Ok(());
        };
        let h = self.pool.malloc(size)?;
        self.handles[id as usize] = Some(h);
        self.stored_pages += 1;
        self.stored_bytes += size as u64;
        self.peak_pages = self.peak_pages.max(self.pool.pages_allocated());
        Ok(())
    }

    /// Frees page `id`'s entry (swapped in, or forgotten).
    pub fn free(&mut self, id: u32) -> Result<(), PoolError> {
        self.entries = self.entries.saturating_sub(1);
        if let Some(h) = self.handles[id as usize].take() {
            self.pool.free(h)?;
        }
        Ok(())
    }

    /// Pages the pool holds now, with its entries' bookkeeping: what a
    /// charged pool costs the limit.
    pub fn charged_pages(&self) -> usize {
        self.pool.pages_allocated() + (self.entries * ENTRY_BYTES).div_ceil(PAGE)
    }

    pub fn pool_pages(&self) -> usize {
        self.pool.pages_allocated()
    }

    pub fn peak_pages(&self) -> usize {
        self.peak_pages
    }
}
