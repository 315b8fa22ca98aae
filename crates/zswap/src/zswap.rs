//! The compressed cache (mm/zswap.c's job): a tree from swap offset to
//! entry, a second-chance LRU, the pool limit, batched stores.

use crate::stats::Counters;
use crate::{Config, ZswapError};
use common::sync::{Mutex, RwLock};
use common::PAGE_SIZE;
use compress::{new_compressor, Batch, CompressError, Compressor};
use crossbeam_queue::ArrayQueue;
use foldhash::HashMap;
use std::collections::hash_map::Entry::Occupied;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use zsmalloc::{Handle, Pool};

const TREE_SHARDS: usize = 64;

/// Objects of loaded entries that wait for [`Zswap::free_loaded`], at
/// most: a 64th of the pool's limit at 2 KiB an object (a page compressed
/// 2:1), from 16 to 4096. They hold pool pages until freed, and a pool
/// charged to a small limit cannot spare many (5M: 34 objects). A load
/// that finds the queue full frees its object itself.
pub fn loaded_queue_len(max_pool_bytes: usize) -> usize {
    (max_pool_bytes / 64 / 2048).clamp(16, 4096)
}

/// One shard of the offset → entry tree (the kernel's xarray). Offsets are
/// integers the runtime hands out: foldhash, not SipHash (no key here comes
/// from outside the process). Entries live in the table itself: a lookup
/// is one probe, with no allocation per store and no reference count to
/// touch per load.
type TreeShard = RwLock<HashMap<u64, Entry>>;

/// One stored page.
#[derive(Debug)]
pub(crate) struct Entry {
    handle: Handle,
    /// Bytes stored; `PAGE_SIZE` means stored raw (did not compress).
    length: usize,
    /// Set at store; the LRU walk clears it once before writing back
    /// (second chance).
    referenced: AtomicBool,
    /// Tells an LRU record from a later entry at the same offset.
    generation: u64,
}

impl Entry {
    /// Where its bytes are: the handle and the stored length.
    fn location(&self) -> (Handle, usize) {
        (self.handle, self.length)
    }
}

/// Why a store was refused; the folio stays with the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Reject {
    #[error("zswap is disabled")]
    Disabled,
    #[error("the pool is at its limit")]
    PoolLimit,
    #[error("a page did not compress and writeback is off")]
    CompressPoor,
    #[error("compression failed and writeback is off")]
    CompressFail,
    #[error("the pool could not allocate")]
    AllocFail,
}

/// Pages compressed into the pool by [`Zswap::prepare`], not yet at any
/// offset. Dropped without [`Zswap::commit`], it frees them.
#[derive(Debug)]
pub struct Prepared<'a> {
    zswap: &'a Zswap,
    stored: Vec<(Handle, usize)>,
}

impl Prepared<'_> {
    /// Pages prepared.
    pub fn len(&self) -> usize {
        self.stored.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stored.is_empty()
    }

    /// Bytes of each compressed object prepared, in page order (before
    /// the pool's size classes round them up).
    pub fn compressed_lengths(&self) -> impl Iterator<Item = usize> + '_ {
        self.stored.iter().map(|&(_, len)| len)
    }
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        for (h, _) in self.stored.drain(..) {
            let _ = self.zswap.pool.free(h);
        }
    }
}

/// A victim picked for writeback: its offset and entry generation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Victim {
    pub(crate) offset: u64,
    generation: u64,
}

/// The compressed cache.
pub struct Zswap {
    pool: Pool,
    compressor: Box<dyn Compressor>,
    tree: Box<[TreeShard]>,
    lru: Mutex<VecDeque<Victim>>,
    /// Objects of entries loaded (exclusively), not yet freed: a load
    /// leaves the free to [`Zswap::free_loaded`], which the reclaim
    /// thread calls between its batches. A swap-in fault's thread then
    /// neither takes the size class's lock, which that thread's stores
    /// into the same classes hold (random access stores and loads pages
    /// of the same few sizes), nor walks the zspage's metadata. Lock-free
    /// and without allocation: a load may run in a SIGBUS handler.
    loaded: ArrayQueue<Handle>,
    batches: Mutex<Vec<Batch>>,
    full: AtomicBool,
    next_generation: AtomicU64,
    /// Entries in the tree (the LRU may hold stale records beside them).
    stored: AtomicUsize,
    /// Age, in stores, of the entry written back last: pages stored longer
    /// ago than this are on the swap file (the pool's horizon).
    writeback_horizon: AtomicU64,
    max_pool_pages: usize,
    accept_pages: usize,
    cfg: Config,
    pub(crate) counters: Arc<Counters>,
}

impl std::fmt::Debug for Zswap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zswap")
            .field("compressor", &self.compressor.name())
            .finish_non_exhaustive()
    }
}

impl Zswap {
    pub(crate) fn new(cfg: &Config, counters: Arc<Counters>) -> Result<Self, ZswapError> {
        cfg.validate()?;
        let max_pool_pages = cfg.max_pool_bytes() / PAGE_SIZE;
        // The arena reserves address space only; give it room above the limit.
        let arena = (cfg.max_pool_bytes() * 2).max(16 << 20);
        let pool = Pool::new(zsmalloc::Config::default().with_arena_bytes(arena))?;
        Ok(Self {
            pool,
            compressor: new_compressor(cfg.compressor, &cfg.compressor_backend),
            tree: (0..TREE_SHARDS)
                .map(|_| RwLock::new(HashMap::default()))
                .collect(),
            lru: Mutex::new(VecDeque::new()),
            loaded: ArrayQueue::new(loaded_queue_len(cfg.max_pool_bytes())),
            batches: Mutex::new(Vec::new()),
            full: AtomicBool::new(false),
            next_generation: AtomicU64::new(1),
            stored: AtomicUsize::new(0),
            writeback_horizon: AtomicU64::new(0),
            max_pool_pages,
            accept_pages: max_pool_pages * cfg.accept_threshold_percent as usize / 100,
            cfg: cfg.clone(),
            counters,
        })
    }

    fn shard(&self, offset: u64) -> &TreeShard {
        &self.tree[(offset as usize) % TREE_SHARDS]
    }

    /// Whether `offset` has an entry (`zswap_present_test`).
    pub fn present(&self, offset: u64) -> bool {
        self.shard(offset).read().contains_key(&offset)
    }

    /// Age, in pages stored since, of the entry written back last (0
    /// before any writeback): the pool holds about the pages stored more
    /// recently than this that have not been loaded.
    pub fn writeback_horizon(&self) -> u64 {
        self.writeback_horizon.load(Ordering::Relaxed)
    }

    /// Pages stored since the start (the clock of `writeback_horizon`).
    pub fn stores(&self) -> u64 {
        self.next_generation.load(Ordering::Relaxed) - 1
    }

    pub fn stored_pages(&self) -> usize {
        self.stored.load(Ordering::Relaxed)
    }

    /// Pages the pool's zspages use now.
    pub fn pool_pages(&self) -> usize {
        self.pool.pages_allocated()
    }

    pub fn pool_total_size(&self) -> usize {
        self.pool.pages_allocated() * PAGE_SIZE
    }

    /// Pages a compaction could free now (zsmalloc's shrinker count).
    pub fn compactable_pages(&self) -> usize {
        self.pool.compactable_pages()
    }

    /// Compacts the pool (zsmalloc's `compact`, which the kernel's shrinker
    /// and `/sys/block/zram0/compact` run): objects migrate into fewer
    /// zspages; returns the pages freed. Safe beside stores and loads.
    pub fn compact(&self) -> usize {
        // The objects loaded since the last free are holes to fill too.
        self.free_loaded();
        let freed = self.pool.compact().pages_freed;
        Counters::add(&self.counters.pages_compacted, freed);
        freed
    }

    pub fn compressor(&self) -> &dyn Compressor {
        self.compressor.as_ref()
    }

    /// True if the pool is over its limit, or was and has not yet come
    /// down below the accept threshold (`zswap_check_limits`).
    pub(crate) fn over_limit(&self) -> bool {
        let cur = self.pool.pages_allocated();
        if cur >= self.max_pool_pages {
            self.full.store(true, Ordering::Relaxed);
        } else if self.full.load(Ordering::Relaxed) && cur <= self.accept_pages {
            self.full.store(false, Ordering::Relaxed);
        }
        self.full.load(Ordering::Relaxed)
    }

    /// Pages above the accept threshold (what the shrinker should free).
    pub(crate) fn pages_over_accept(&self) -> usize {
        self.pool
            .pages_allocated()
            .saturating_sub(self.accept_pages)
    }

    /// Stores `pages` at `offsets`, all or nothing (`zswap_store`):
    /// [`Zswap::prepare`], then [`Zswap::commit`].
    ///
    /// Like the kernel, which holds the folio lock, the caller serialises
    /// operations on one offset ([`crate::Swap`] does with its slot locks).
    pub fn store(&self, pages: &[&[u8]], offsets: &[u64]) -> Result<(), Reject> {
        let prepared = self.prepare(pages)?;
        self.commit(prepared, offsets);
        Ok(())
    }

    /// The first half of a store, which names no offset, so needs no slot
    /// lock: compresses `pages` in batches of `store_batch` and moves them
    /// into the pool, all or nothing. Until [`Zswap::commit`] publishes
    /// them, the objects are the caller's; a [`Prepared`] dropped
    /// uncommitted frees them.
    pub fn prepare(&self, pages: &[&[u8]]) -> Result<Prepared<'_>, Reject> {
        if !self.cfg.enabled {
            return Err(Reject::Disabled);
        }
        if self.over_limit() {
            Counters::add(&self.counters.pool_limit_hit, 1);
            return Err(Reject::PoolLimit);
        }
        let mut prepared = Prepared {
            zswap: self,
            stored: Vec::with_capacity(pages.len()),
        };
        let mut batch = self.batches.lock().pop().unwrap_or_default();
        let mut result = Ok(());
        for chunk in pages.chunks(self.cfg.store_batch) {
            self.compressor.compress_batch(chunk, &mut batch);
            if let Err(e) = self.store_batch(chunk, &batch, &mut prepared.stored) {
                result = Err(e);
                break;
            }
        }
        self.batches.lock().push(batch);
        // On an error, dropping `prepared` frees what was stored.
        result.map(|()| prepared)
    }

    /// The second half of a store: publishes the prepared pages at
    /// `offsets`, in order (an offset's older entry, if any, is freed). The
    /// caller holds the offsets' slot locks. Pages beyond `offsets` (a
    /// caller's mistake) are freed, never leaked.
    pub fn commit(&self, mut prepared: Prepared<'_>, offsets: &[u64]) {
        debug_assert_eq!(prepared.stored.len(), offsets.len());
        let n = prepared.stored.len().min(offsets.len());
        for (&offset, (handle, length)) in offsets.iter().zip(prepared.stored.drain(..n)) {
            self.insert(offset, handle, length);
        }
        Counters::add(&self.counters.zswpout, n);
    }

    /// Whether [`Zswap::prepare`] reads the pages only in the calling
    /// thread, before it returns ([`Compressor::reads_pages_in_caller`]).
    pub fn reads_pages_in_caller(&self) -> bool {
        self.compressor.reads_pages_in_caller()
    }

    /// Moves one compressed batch into the pool, with batched compress's
    /// rules: without writeback, a batch with a page that failed is
    /// rejected whole; with it, such a page is stored raw.
    fn store_batch(
        &self,
        pages: &[&[u8]],
        batch: &Batch,
        stored: &mut Vec<(Handle, usize)>,
    ) -> Result<(), Reject> {
        let outputs: Vec<Result<&[u8], CompressError>> =
            (0..pages.len()).map(|i| batch.output(i)).collect();
        if !self.cfg.writeback {
            // Without writeback an unstorable page only adds metadata: reject
            // the folio, counting every failing page of the batch.
            let (mut poor, mut fail) = (0, 0);
            for out in &outputs {
                match out {
                    Ok(_) => {}
                    Err(CompressError::Incompressible(_)) => poor += 1,
                    Err(_) => fail += 1,
                }
            }
            Counters::add(&self.counters.reject_compress_poor, poor);
            Counters::add(&self.counters.reject_compress_fail, fail);
            if poor + fail > 0 {
                return Err(if poor > 0 {
                    Reject::CompressPoor
                } else {
                    Reject::CompressFail
                });
            }
        }
        for (page, out) in pages.iter().zip(outputs) {
            // With writeback on, a page that failed is stored as it is, to
            // keep the LRU order of writebacks.
            let data: &[u8] = out.unwrap_or(page);
            let handle = self.pool.malloc(data.len()).map_err(|_| {
                Counters::add(&self.counters.reject_alloc_fail, 1);
                Reject::AllocFail
            })?;
            self.pool
                .write(handle, data)
                .expect("fresh handle, size within its class");
            stored.push((handle, data.len()));
        }
        Ok(())
    }

    fn insert(&self, offset: u64, handle: Handle, length: usize) {
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        self.insert_entry(
            offset,
            Entry {
                handle,
                length,
                referenced: AtomicBool::new(true),
                generation,
            },
        );
    }

    /// Publishes `entry` at `offset` and gives it an LRU record.
    fn insert_entry(&self, offset: u64, entry: Entry) {
        let generation = entry.generation;
        match self.shard(offset).write().insert(offset, entry) {
            Some(old) => drop(self.pool.free(old.handle)),
            None => drop(self.stored.fetch_add(1, Ordering::Relaxed)),
        }
        let mut lru = self.lru.lock();
        lru.push_back(Victim { offset, generation });
        // Loads and invalidations leave stale records; sweep when they dominate.
        if lru.len() > 2 * self.stored.load(Ordering::Relaxed) + 4096 {
            lru.retain(|v| {
                self.shard(v.offset)
                    .read()
                    .get(&v.offset)
                    .is_some_and(|e| e.generation == v.generation)
            });
        }
    }

    /// Decompresses the entry at `offset` into `page` and drops it
    /// (exclusive load, `zswap_load`); its object is freed by the next
    /// [`Zswap::free_loaded`] (at once where [`loaded_queue_len`] objects
    /// wait already). `Ok(false)`: no entry. On a decompression error the
    /// entry stays, so nothing is lost. The caller serialises operations
    /// on one offset.
    pub fn load(&self, offset: u64, page: &mut [u8]) -> Result<bool, ZswapError> {
        // The caller's slot lock keeps every other store, load and
        // invalidation of `offset` out: the entry can leave the tree first,
        // in one probe, and go back if it cannot be read.
        let Some(entry) = self.shard(offset).write().remove(&offset) else {
            return Ok(false);
        };
        self.stored.fetch_sub(1, Ordering::Relaxed);
        if let Err(e) = self.decompress(offset, entry.handle, entry.length, page) {
            // Back, counted again, with a new LRU record (the shrinker may
            // have dropped the old one as stale meanwhile).
            self.insert_entry(offset, entry);
            return Err(e);
        }
        if let Err(handle) = self.loaded.push(entry.handle) {
            let _ = self.pool.free(handle);
        }
        Counters::add(&self.counters.zswpin, 1);
        Ok(true)
    }

    /// Objects allocated in the pool now: the entries' and those of loaded
    /// entries not yet freed ([`Zswap::free_loaded`]).
    pub fn objects_in_use(&self) -> usize {
        self.pool.stats().objs_inuse
    }

    /// Frees the objects of the entries loaded since the last call;
    /// returns how many. Any thread; the reclaim thread calls it between
    /// its batches.
    pub fn free_loaded(&self) -> usize {
        let mut freed = 0;
        while let Some(handle) = self.loaded.pop() {
            let _ = self.pool.free(handle);
            freed += 1;
        }
        freed
    }

    /// Decompresses the entry at `offset` into `page` and keeps it: a
    /// forked child's read of the pool it inherited, which it never
    /// changes. `Ok(false)`: no entry.
    pub fn peek(&self, offset: u64, page: &mut [u8]) -> Result<bool, ZswapError> {
        let Some((handle, length)) = self.shard(offset).read().get(&offset).map(Entry::location)
        else {
            return Ok(false);
        };
        self.decompress(offset, handle, length, page)?;
        Ok(true)
    }

    /// Decompresses the object at `handle` of `length` bytes into `page`,
    /// from the pool's bytes in place (`Pool::read_with`).
    fn decompress(
        &self,
        offset: u64,
        handle: Handle,
        length: usize,
        page: &mut [u8],
    ) -> Result<(), ZswapError> {
        self.pool.read_with(handle, length, |data| {
            if length == PAGE_SIZE {
                page.copy_from_slice(data);
                return Ok(());
            }
            self.compressor
                .decompress_page(data, page, PAGE_SIZE)
                .map(drop)
                .map_err(|source| ZswapError::Decompress { offset, source })
        })?
    }

    /// Drops the entry at `offset` if it is still the one of
    /// `generation`.
    fn remove_if_same(&self, offset: u64, generation: u64) -> bool {
        let mut shard = self.shard(offset).write();
        let entry = match shard.entry(offset) {
            Occupied(e) if e.get().generation == generation => e.remove(),
            _ => return false,
        };
        drop(shard);
        self.stored.fetch_sub(1, Ordering::Relaxed);
        let _ = self.pool.free(entry.handle);
        true
    }

    /// Drops the entry at `offset`, if any (`zswap_invalidate`).
    pub fn invalidate(&self, offset: u64) {
        let removed = self.shard(offset).write().remove(&offset);
        if let Some(e) = removed {
            self.stored.fetch_sub(1, Ordering::Relaxed);
            let _ = self.pool.free(e.handle);
        }
    }

    /// Up to `n` entries to write back, coldest first: an entry still
    /// marked referenced gets a second chance (cleared, moved to the tail).
    pub(crate) fn pick_victims(&self, n: usize) -> Vec<Victim> {
        let mut lru = self.lru.lock();
        let mut out = Vec::new();
        let mut budget = lru.len() * 2;
        while out.len() < n && budget > 0 {
            budget -= 1;
            let Some(v) = lru.pop_front() else { break };
            let referenced = match self.shard(v.offset).read().get(&v.offset) {
                Some(e) if e.generation == v.generation => {
                    Some(e.referenced.swap(false, Ordering::Relaxed))
                }
                _ => None, // stale record: the entry was loaded, freed or replaced
            };
            match referenced {
                Some(true) => lru.push_back(v),
                Some(false) => out.push(v),
                None => {}
            }
        }
        out
    }

    /// Decompresses a victim for writeback, if it is still the same entry.
    /// The caller holds the victim's slot lock.
    pub(crate) fn read_victim(&self, v: Victim, page: &mut [u8]) -> Result<bool, ZswapError> {
        let location = match self.shard(v.offset).read().get(&v.offset) {
            Some(e) if e.generation == v.generation => Some(e.location()),
            _ => None,
        };
        match location {
            Some((handle, length)) => self
                .decompress(v.offset, handle, length, page)
                .map(|()| true),
            None => Ok(false),
        }
    }

    /// The victim's page is safely on disk: drop it from the cache.
    pub(crate) fn finish_writeback(&self, v: Victim) {
        if self.remove_if_same(v.offset, v.generation) {
            Counters::add(&self.counters.written_back_pages, 1);
            let now = self.next_generation.load(Ordering::Relaxed);
            self.writeback_horizon
                .store(now.saturating_sub(v.generation), Ordering::Relaxed);
        }
    }

    /// The victim's writeback failed: keep it, at the LRU tail.
    pub(crate) fn requeue(&self, v: Victim) {
        self.lru.lock().push_back(v);
    }
}

#[cfg(test)]
mod metadata_tests {
    use super::{Entry, Victim};
    use crate::ENTRY_METADATA_BYTES;

    /// The charge per stored entry covers its tree slot (key and entry,
    /// with hashbrown's control byte and its 7/8 load factor) and one LRU
    /// record.
    #[test]
    fn entry_metadata_estimate_covers_the_types() {
        let tree_slot = (std::mem::size_of::<(u64, Entry)>() + 1) * 8 / 7;
        let lru_record = std::mem::size_of::<Victim>();
        assert!(
            tree_slot + lru_record <= ENTRY_METADATA_BYTES,
            "{tree_slot} + {lru_record} > {ENTRY_METADATA_BYTES}"
        );
    }
}

#[cfg(test)]
mod load_tests {
    use super::Zswap;
    use crate::stats::Counters;
    use crate::{Config, ZswapError};
    use common::PAGE_SIZE;
    use std::sync::Arc;

    fn text_page(seed: u8) -> Vec<u8> {
        (0..PAGE_SIZE)
            .map(|i| b"compressible text "[(i + seed as usize) % 18])
            .collect()
    }

    /// A load that cannot decompress leaves the entry where it was: still
    /// present, still counted, and still on the LRU for the shrinker.
    #[test]
    fn a_load_that_cannot_decompress_keeps_the_entry() {
        let zswap = Zswap::new(&Config::default(), Arc::new(Counters::default())).unwrap();
        let page = text_page(3);
        zswap.store(&[&page], &[7]).unwrap();
        zswap.store(&[&text_page(5)], &[8]).unwrap();
        let (handle, length) = zswap.shard(7).read().get(&7).unwrap().location();
        assert!(length < PAGE_SIZE, "the page compressed");
        zswap.pool.write(handle, &vec![0xff; length]).unwrap();

        let mut out = vec![0u8; PAGE_SIZE];
        let err = zswap.load(7, &mut out).unwrap_err();
        assert!(
            matches!(err, ZswapError::Decompress { offset: 7, .. }),
            "{err}"
        );
        assert!(zswap.present(7));
        assert_eq!(zswap.stored_pages(), 2);
        // Second chance clears both records' marks, then both are victims.
        let mut picked: Vec<u64> = zswap.pick_victims(4).iter().map(|v| v.offset).collect();
        picked.extend(zswap.pick_victims(4).iter().map(|v| v.offset));
        picked.sort_unstable();
        picked.dedup();
        assert_eq!(picked, vec![7, 8]);

        // The other page loads, once, exactly.
        assert!(zswap.load(8, &mut out).unwrap());
        assert_eq!(out, text_page(5));
        assert!(!zswap.load(8, &mut out).unwrap());
        assert_eq!(zswap.stored_pages(), 1);
    }
}
