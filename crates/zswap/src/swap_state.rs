//! The swap layer (mm/swap_state.c's job) over zswap and the swap file:
//! swap-out, swap-in with readahead, the swap cache, the zero map, and the
//! shrinker that writes zswap's cold pages back to the file.

use crate::stats::{Counters, Stats};
use crate::zswap::{Reject, Zswap};
use crate::{Config, Readahead, ZswapError};
use common::kept_buffers::KeptBuffers;
use common::sync::{Mutex, MutexGuard};
use common::wakeup::Wakeup;
use common::PAGE_SIZE;
use foldhash::HashMap;
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use swapfile::SwapFile;

const SLOT_LOCKS: usize = 1024;

/// Per-folio lists kept on the stack up to a default folio's 16 pages.
type FolioVec<T> = SmallVec<[T; 16]>;

/// Pages written back per shrinker batch.
pub const WRITEBACK_BATCH: usize = 32;

/// Memory a stored entry takes besides its compressed bytes: its tree
/// entry (key and [`crate::zswap::Entry`], plus the hash table's control
/// byte and spare room) and its LRU record. An estimate, checked against
/// the types' sizes by a test.
pub const ENTRY_METADATA_BYTES: usize = 64;

/// Where a swapped-out folio went.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SwapOutReport {
    pub zero: usize,
    pub zswap: usize,
    pub disk: usize,
    /// Compressed bytes of the pages that went to zswap.
    pub compressed_bytes: usize,
    /// Each page's place, in folio order: [`SwapOutReport::ZERO_PAGE`],
    /// [`SwapOutReport::ON_FILE`], or its compressed length in the pool.
    pub page_sizes: Vec<u16>,
}

impl SwapOutReport {
    /// [`SwapOutReport::page_sizes`] of a zero-filled page.
    pub const ZERO_PAGE: u16 = 0;
    /// [`SwapOutReport::page_sizes`] of a page written to the swap file.
    pub const ON_FILE: u16 = u16::MAX;
}

/// Where [`Swap::store_folio`] sends the pages that are not zero.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StoreTo {
    /// The pool, or the swap file if the pool rejects them.
    Pool,
    /// The swap file.
    File,
}

/// Where a swapped-in page came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    SwapCache,
    Zero,
    Zswap,
    Disk,
}

/// A page read ahead and handed to the caller at fault time.
pub type AroundPage = (u64, Box<[u8]>);

struct CachedPage {
    data: Box<[u8]>,
    /// Came from zswap (its entry is gone): dropping it means storing it again.
    dirty: bool,
}

#[derive(Default)]
struct SwapCache {
    pages: HashMap<u64, CachedPage>,
    order: VecDeque<u64>,
}

/// The swap store: zswap in front of a swap file.
pub struct Swap {
    zswap: Zswap,
    dev: SwapFile,
    zeromap: Box<[AtomicU64]>,
    cache: Mutex<SwapCache>,
    /// How many pages the next readahead reads.
    ra: crate::ra_window::RaWindow,
    slot_locks: Box<[Mutex<()>]>,
    /// Buffers of folios copied out for the swap file, kept for the next
    /// store ([`KeptBuffers::for_folio_copies`]).
    file_copies: KeptBuffers,
    cfg: Config,
    counters: Arc<Counters>,
    shrinker: Mutex<Option<Shrinker>>,
    /// Without a shrinker thread: the pool hit its limit, and the owner
    /// should call [`Swap::shrink`].
    shrink_wanted: AtomicBool,
}

struct Shrinker {
    wake: Arc<Wakeup>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Swap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Swap")
            .field("zswap", &self.zswap)
            .field("dev", &self.dev)
            .finish_non_exhaustive()
    }
}

impl Swap {
    /// A swap store with a new swap file, per `cfg`.
    pub fn new(cfg: Config) -> Result<Arc<Self>, ZswapError> {
        cfg.validate()?;
        let dev = SwapFile::create_in(
            &cfg.swapfile_dir,
            cfg.swapfile_pages,
            cfg.swap_io,
            cfg.swap_protection,
        )?;
        Self::with_device(cfg, dev)
    }

    /// A swap store on a given device (e.g. one with injected faults).
    pub fn with_device(cfg: Config, dev: SwapFile) -> Result<Arc<Self>, ZswapError> {
        let counters = Arc::new(Counters::default());
        let zswap = Zswap::new(&cfg, counters.clone())?;
        let swap = Arc::new(Self {
            zswap,
            zeromap: (0..dev.nr_slots().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            dev,
            cache: Mutex::new(SwapCache::default()),
            ra: Default::default(),
            slot_locks: (0..SLOT_LOCKS).map(|_| Mutex::new(())).collect(),
            file_copies: KeptBuffers::for_folio_copies(),
            cfg,
            counters,
            shrinker: Mutex::new(None),
            shrink_wanted: AtomicBool::new(false),
        });
        if swap.cfg.shrinker_enabled && swap.cfg.shrinker_thread && swap.cfg.writeback {
            let shrinker = Shrinker::start(Arc::downgrade(&swap)).map_err(ZswapError::Thread)?;
            *swap.shrinker.lock() = Some(shrinker);
        }
        Ok(swap)
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn zswap(&self) -> &Zswap {
        &self.zswap
    }

    pub fn device(&self) -> &SwapFile {
        &self.dev
    }

    /// Allocates `n` swap slots (contiguous when possible) for a folio.
    pub fn alloc_slots(&self, n: usize) -> Result<Vec<u64>, ZswapError> {
        Ok(self.dev.alloc(n)?)
    }

    fn slot_lock(&self, offset: u64) -> &Mutex<()> {
        &self.slot_locks[offset as usize % SLOT_LOCKS]
    }

    /// Locks every distinct stripe of `offsets`, in index order.
    fn lock_slots(&self, offsets: &[u64]) -> FolioVec<MutexGuard<'_, ()>> {
        let mut stripes: FolioVec<usize> =
            offsets.iter().map(|&o| o as usize % SLOT_LOCKS).collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes
            .into_iter()
            .map(|s| self.slot_locks[s].lock())
            .collect()
    }

    fn zero_bit(&self, offset: u64) -> (&AtomicU64, u64) {
        (&self.zeromap[offset as usize / 64], 1 << (offset % 64))
    }

    fn is_zero(&self, offset: u64) -> bool {
        let (w, b) = self.zero_bit(offset);
        w.load(Ordering::Acquire) & b != 0
    }

    fn set_zero(&self, offset: u64, on: bool) {
        let (w, b) = self.zero_bit(offset);
        if on {
            w.fetch_or(b, Ordering::AcqRel);
        } else {
            w.fetch_and(!b, Ordering::AcqRel);
        }
    }

    fn check_offsets(&self, offsets: &[u64]) -> Result<(), ZswapError> {
        match offsets.iter().find(|&&o| o as usize >= self.dev.nr_slots()) {
            Some(&o) => Err(ZswapError::BadOffset(o)),
            None => Ok(()),
        }
    }

    /// Swaps out a folio: `pages[i]` to slot `offsets[i]` (from
    /// [`Swap::alloc_slots`]). Zero pages become a bit; the rest go to zswap
    /// as one folio, or, if zswap rejects it and writeback is on, to the
    /// swap file. An error means nothing was stored: the caller keeps the
    /// pages.
    ///
    /// `pages` are read before any slot lock is taken (the zero test and
    /// compression, [`Zswap::prepare`]); a folio bound for the swap file is
    /// copied then, and written from the copy. So a caller whose pages may
    /// fault (uzswap's evictor, on a page the program discarded behind its
    /// back) never faults while it holds a lock that the thread serving
    /// the fault may wait for. Where the compressor reads the pages in
    /// other threads ([`Swap::reads_pages_in_caller`] false), such a caller
    /// passes a copy.
    pub fn swap_out(&self, pages: &[&[u8]], offsets: &[u64]) -> Result<SwapOutReport, ZswapError> {
        self.store_folio(pages, offsets, StoreTo::Pool)
    }

    /// [`Swap::swap_out`], but the pages that are not zero go straight to
    /// the swap file, past the pool (`pool_bypassed`): what a caller does
    /// where a pass through the pool costs more than it saves (pages
    /// compressed only to be decompressed for writeback, the file as fast
    /// to read as the pool). With writeback off there is no file to go
    /// to: the folio goes to the pool as [`Swap::swap_out`] sends it.
    pub fn swap_out_to_file(
        &self,
        pages: &[&[u8]],
        offsets: &[u64],
    ) -> Result<SwapOutReport, ZswapError> {
        let into = if self.cfg.writeback {
            StoreTo::File
        } else {
            StoreTo::Pool
        };
        self.store_folio(pages, offsets, into)
    }

    fn store_folio(
        &self,
        pages: &[&[u8]],
        offsets: &[u64],
        into: StoreTo,
    ) -> Result<SwapOutReport, ZswapError> {
        let bad_len = pages.is_empty() || pages.len() > 512 || pages.len() != offsets.len();
        if bad_len || pages.iter().any(|p| p.len() != PAGE_SIZE) {
            return Err(ZswapError::BadFolio);
        }
        self.check_offsets(offsets)?;
        // A folio's lists live on the stack (a folio is 16 pages by
        // default): this runs in a faulting thread's signal handler, at
        // every eviction.
        let (mut rest_pages, mut rest_offsets, mut zero_offsets) = (
            FolioVec::<&[u8]>::new(),
            FolioVec::<u64>::new(),
            FolioVec::<u64>::new(),
        );
        let mut zero_pages = FolioVec::<bool>::with_capacity(pages.len());
        for (&page, &o) in pages.iter().zip(offsets) {
            let zero = is_zero_filled(page);
            zero_pages.push(zero);
            if zero {
                zero_offsets.push(o);
            } else {
                rest_pages.push(page);
                rest_offsets.push(o);
            }
        }
        let mut report = SwapOutReport {
            zero: zero_offsets.len(),
            ..SwapOutReport::default()
        };
        // Unlocked: compression names no slot. A folio bound for the file
        // (sent there, or refused by zswap) goes from a copy taken now.
        let (mut pooled, mut to_disk) = (None, None);
        if !rest_pages.is_empty() {
            match into {
                StoreTo::File => Counters::add(&self.counters.pool_bypassed, rest_pages.len()),
                StoreTo::Pool => match self.zswap.prepare(&rest_pages) {
                    Ok(prepared) => pooled = Some(prepared),
                    Err(reject) => {
                        if reject == Reject::PoolLimit {
                            self.kick_shrinker();
                        }
                        if !self.cfg.writeback {
                            return Err(ZswapError::Rejected(reject));
                        }
                    }
                },
            }
            if pooled.is_none() {
                let mut copy = self.file_copies.take();
                copy.clear();
                for page in &rest_pages {
                    copy.extend_from_slice(page);
                }
                to_disk = Some(copy);
            }
        }
        let _held = self.lock_slots(offsets);
        // What the slots held goes. A pooled page's offset needs no tree
        // lookup here: the commit below replaces (and frees) any entry
        // there, under the same slot locks.
        let pooled_offsets: &[u64] = if pooled.is_some() { &rest_offsets } else { &[] };
        self.drop_contents(offsets, pooled_offsets);
        if let Some(prepared) = pooled {
            report.zswap = prepared.len();
            {
                let mut lengths = prepared.compressed_lengths();
                report.page_sizes = zero_pages
                    .iter()
                    .map(|&zero| match zero {
                        true => SwapOutReport::ZERO_PAGE,
                        false => lengths.next().unwrap_or(0) as u16,
                    })
                    .collect();
            }
            report.compressed_bytes = report.page_sizes.iter().map(|&s| usize::from(s)).sum();
            self.zswap.commit(prepared, &rest_offsets);
        } else if let Some(copy) = to_disk {
            let copies: FolioVec<&[u8]> = copy.chunks_exact(PAGE_SIZE).collect();
            let written = self.dev.write_pages(&rest_offsets, &copies);
            let n = copies.len();
            drop(copies);
            self.file_copies.give(copy);
            written?;
            Counters::add(&self.counters.pswpout, n);
            report.disk = n;
            report.page_sizes = zero_pages
                .iter()
                .map(|&zero| match zero {
                    true => SwapOutReport::ZERO_PAGE,
                    false => SwapOutReport::ON_FILE,
                })
                .collect();
        }
        if report.page_sizes.is_empty() {
            report.page_sizes = vec![SwapOutReport::ZERO_PAGE; pages.len()];
        }
        for o in zero_offsets {
            self.set_zero(o, true);
        }
        Counters::add(&self.counters.swpout_zero, report.zero);
        Ok(report)
    }

    /// Whether [`Swap::swap_out`] reads its pages only in the calling
    /// thread ([`Zswap::reads_pages_in_caller`]).
    pub fn reads_pages_in_caller(&self) -> bool {
        self.zswap.reads_pages_in_caller()
    }

    /// Forgets what the slots `offsets` hold, keeping them allocated, with
    /// one swap-cache lock; no zswap lookup for those of `to_be_replaced`
    /// (sorted as `offsets` is: a subsequence of it), whose entries the
    /// caller replaces while it holds their slot locks.
    fn drop_contents(&self, offsets: &[u64], to_be_replaced: &[u64]) {
        let mut replaced = to_be_replaced.iter().peekable();
        for &o in offsets {
            self.dev.discard(o);
            self.set_zero(o, false);
            if replaced.next_if_eq(&&o).is_none() {
                self.zswap.invalidate(o);
            }
        }
        let mut cache = self.cache.lock();
        if !cache.pages.is_empty() {
            for o in offsets {
                cache.pages.remove(o);
            }
        }
    }

    /// Frees the slot of a page just loaded from zswap: `load` took its
    /// entry, and the swap cache, the zero map and the file never held it
    /// beside the pool (one place a slot, checked by `read_target` under
    /// the slot lock the caller holds).
    fn release_loaded_slot(&self, offset: u64) -> Result<(), ZswapError> {
        self.dev.discard(offset);
        Ok(self.dev.free(offset)?)
    }

    /// Swaps in the page at `offset` into `page` and frees the slot. Pages
    /// read ahead stay in the swap cache for their own faults.
    pub fn swap_in(&self, offset: u64, page: &mut [u8]) -> Result<Source, ZswapError> {
        self.swap_in_around(offset, page, &[], &mut Vec::new())
    }

    /// [`Swap::swap_in`] with fault-around (mapping the read-ahead
    /// neighbours in the same fault, the readahead bypass's follow-up in
    /// docs/seeds.md): of the caller's `neighbours` (the swap offsets of
    /// the virtual pages around the fault that are swapped out), those now
    /// in the swap cache are handed over in `around` to be mapped at once,
    /// and their slots freed.
    pub fn swap_in_around(
        &self,
        offset: u64,
        page: &mut [u8],
        neighbours: &[u64],
        around: &mut Vec<AroundPage>,
    ) -> Result<Source, ZswapError> {
        self.swap_in_with(offset, page, neighbours, false, around, None)
    }

    /// [`Swap::swap_in_around`] for a fault that wants its whole folio
    /// (mTHP swap-in's role): neighbours still in zswap, or zero-filled,
    /// are loaded and handed over too, and so are those on the swap file,
    /// read in runs of neighbouring slots (the kernel's VMA readahead reads
    /// a fault's virtual neighbours from the device).
    pub fn swap_in_folio(
        &self,
        offset: u64,
        page: &mut [u8],
        neighbours: &[u64],
        around: &mut Vec<AroundPage>,
    ) -> Result<Source, ZswapError> {
        self.swap_in_with(offset, page, neighbours, true, around, None)
    }

    /// [`Swap::swap_in_around`] (or, with `folio`, [`Swap::swap_in_folio`])
    /// where a page whose bytes are in the swap file keeps its slot, as the
    /// kernel's swap cache keeps a clean page's: the caller maps it
    /// write-protected, and evicts it again, unwritten, by unmapping it and
    /// nothing more. The offsets that kept their slot (the target's and the
    /// neighbours') are appended to `kept`; the caller frees each with
    /// [`Swap::free`] once the page is written or dropped. Slots are kept
    /// only while the swap file is less than half full (the kernel's
    /// `vm_swap_full`).
    pub fn swap_in_keeping_clean(
        &self,
        offset: u64,
        page: &mut [u8],
        neighbours: &[u64],
        folio: bool,
        around: &mut Vec<AroundPage>,
        kept: &mut Vec<u64>,
    ) -> Result<Source, ZswapError> {
        self.swap_in_with(offset, page, neighbours, folio, around, Some(kept))
    }

    /// Whether a clean page may keep its slot: the swap file is less than
    /// half full.
    fn may_keep(&self) -> bool {
        self.dev.free_slots() * 2 > self.dev.nr_slots()
    }

    fn swap_in_with(
        &self,
        offset: u64,
        page: &mut [u8],
        neighbours: &[u64],
        pooled: bool,
        around: &mut Vec<AroundPage>,
        mut kept: Option<&mut Vec<u64>>,
    ) -> Result<Source, ZswapError> {
        if page.len() != PAGE_SIZE {
            return Err(ZswapError::BadFolio);
        }
        self.check_offsets(&[offset])?;
        if kept.is_some() && !self.may_keep() {
            kept = None;
        }
        let held = self.slot_lock(offset).lock();
        let (source, clean) = self.read_target(offset, page)?;
        match kept.as_deref_mut() {
            Some(kept) if clean => kept.push(offset),
            _ if source == Source::Zswap => self.release_loaded_slot(offset)?,
            _ => self.release_slot(offset)?,
        }
        drop(held);
        self.hand_over(offset, neighbours, pooled, around, kept);
        self.trim_cache();
        Ok(source)
    }

    /// Reads the target page, reading ahead as the policy says; and
    /// whether its bytes are in the swap file (clean).
    fn read_target(&self, offset: u64, page: &mut [u8]) -> Result<(Source, bool), ZswapError> {
        if let Some(cached) = self.cache.lock().pages.remove(&offset) {
            page.copy_from_slice(&cached.data);
            Counters::add(&self.counters.swap_ra_hit, 1);
            self.ra.hit();
            return Ok((Source::SwapCache, !cached.dirty));
        }
        if self.is_zero(offset) {
            page.fill(0);
            Counters::add(&self.counters.swpin_zero, 1);
            return Ok((Source::Zero, false));
        }
        if self.cfg.readahead == Readahead::Always && self.zswap.present(offset) {
            self.readahead(offset, true);
        }
        // One tree lookup where the page is pooled: `load` says if it is.
        if self.zswap.load(offset, page)? {
            return Ok((Source::Zswap, false));
        }
        if self.dev.is_written(offset) {
            self.dev.read_page(offset, page)?;
            Counters::add(&self.counters.pswpin, 1);
            match self.cfg.readahead {
                Readahead::Always | Readahead::BypassZswap => self.readahead(offset, true),
                Readahead::DiskOnly => self.readahead(offset, false),
                Readahead::Off => {}
            }
            return Ok((Source::Disk, true));
        }
        Err(ZswapError::NotStored(offset))
    }

    /// Reads the other pages of `offset`'s readahead window into the swap
    /// cache: its cluster, or the aligned part of it that the adaptive
    /// window ([`crate::ra_window`]) gives.
    fn readahead(&self, offset: u64, from_zswap: bool) {
        let cluster = 1u64 << self.cfg.page_cluster;
        let window = if self.cfg.adaptive_readahead {
            self.ra.pages(offset, cluster)
        } else {
            cluster
        };
        if window <= 1 {
            return;
        }
        let mask = window - 1;
        let (start, end) = (
            offset & !mask,
            (offset | mask).min(self.dev.nr_slots() as u64 - 1),
        );
        let mut buf = vec![0u8; PAGE_SIZE];
        // The window's pages on the file, read in one request the first
        // time one is wanted (one device read, not one per page); each is
        // then checked under its slot's lock.
        let mut window: Option<(u64, Vec<u8>, usize)> = None;
        for n in (start..=end).filter(|&n| n != offset) {
            // Never wait for a neighbour: its owner may be reading ahead too.
            if n as usize % SLOT_LOCKS == offset as usize % SLOT_LOCKS {
                continue;
            }
            let Some(_held) = self.slot_lock(n).try_lock() else {
                continue;
            };
            if self.cache.lock().pages.contains_key(&n) || self.is_zero(n) {
                continue;
            }
            let dirty = if self.zswap.present(n) {
                if !from_zswap || !matches!(self.zswap.load(n, &mut buf), Ok(true)) {
                    continue;
                }
                true
            } else if self.dev.is_written(n) && self.open_read_ahead(n, end, &mut window, &mut buf)
            {
                Counters::add(&self.counters.pswpin, 1);
                false
            } else {
                continue;
            };
            Counters::add(&self.counters.swap_ra, 1);
            let mut cache = self.cache.lock();
            cache.pages.insert(
                n,
                CachedPage {
                    data: buf.clone().into_boxed_slice(),
                    dirty,
                },
            );
            cache.order.push_back(n);
        }
    }

    /// Slot `n`'s page from the file into `buf`, taken from the window
    /// read in one request (read now if `window` is empty: from `n`, the
    /// first page wanted, to the last slot up to `end` written to the
    /// file): false if the read failed, fell short of `n`, or gave bytes
    /// that are not `n`'s latest write.
    fn open_read_ahead(
        &self,
        n: u64,
        end: u64,
        window: &mut Option<(u64, Vec<u8>, usize)>,
        buf: &mut [u8],
    ) -> bool {
        let (first, raw, pages) = window.get_or_insert_with(|| {
            let last = (n..=end)
                .rev()
                .find(|&m| self.dev.is_written(m))
                .unwrap_or(n);
            let mut raw = vec![0u8; (last - n + 1) as usize * PAGE_SIZE];
            let pages = self.dev.read_run(n, &mut raw).unwrap_or(0);
            (n, raw, pages)
        });
        let Some(k) = n.checked_sub(*first).map(|k| k as usize) else {
            return false;
        };
        k < *pages
            && self
                .dev
                .open_read(n, &raw[k * PAGE_SIZE..(k + 1) * PAGE_SIZE], buf)
                .is_ok()
    }

    /// Fault-around: the caller's neighbours that sit in the swap cache go
    /// to the caller; with `pooled`, those in zswap or zero-filled too.
    /// A neighbour whose slot is busy, or that cannot be read, stays. With
    /// `kept`, a clean one (read ahead from the swap file) keeps its slot.
    fn hand_over(
        &self,
        offset: u64,
        neighbours: &[u64],
        pooled: bool,
        around: &mut Vec<AroundPage>,
        mut kept: Option<&mut Vec<u64>>,
    ) {
        // Without a folio to bring, only swap-cache pages go: none to look
        // for when the cache is empty (a page read ahead meanwhile stays
        // there for its own fault).
        if neighbours.is_empty() || (!pooled && self.cache.lock().pages.is_empty()) {
            return;
        }
        // A folio's neighbours on the swap file, read after the loop in
        // runs of neighbouring slots.
        let mut on_file = FolioVec::<u64>::new();
        for &n in neighbours
            .iter()
            .filter(|&&n| n != offset && (n as usize) < self.dev.nr_slots())
        {
            let Some(_held) = self.slot_lock(n).try_lock() else {
                continue;
            };
            let cached = self.cache.lock().pages.remove(&n);
            let from_cache = cached.is_some();
            let clean = cached.as_ref().is_some_and(|p| !p.dirty);
            let data = match cached {
                Some(p) => p.data,
                None if !pooled => continue,
                None => match self.load_pooled(n) {
                    Some(data) => data,
                    None => {
                        if self.dev.is_written(n) {
                            on_file.push(n);
                        }
                        continue;
                    }
                },
            };
            match kept.as_deref_mut() {
                Some(kept) if clean => kept.push(n),
                // The page is out of the store now: it goes to the caller
                // even if the slot cannot be freed (a leaked slot, never a
                // lost page).
                _ => {
                    let _ = self.release_slot(n);
                }
            }
            if from_cache {
                Counters::add(&self.counters.swap_ra_hit, 1);
                self.ra.hit();
            }
            around.push((n, data));
        }
        self.hand_over_from_file(&mut on_file, around, kept);
    }

    /// A folio's neighbours on the swap file (`slots`), for
    /// [`Swap::hand_over`]: the kernel's VMA readahead reads a fault's
    /// virtual neighbours from the swap device, and a stream's folio comes
    /// whole from wherever its pages are. A stream's pages were evicted
    /// together, so their slots mostly follow each other: each run of
    /// neighbouring slots is read in one request, unlocked, and each page
    /// is then checked under its slot's lock as readahead's are (bytes
    /// that are not the slot's latest write are left there). A page read
    /// keeps its slot as a clean one where the caller keeps slots.
    fn hand_over_from_file(
        &self,
        slots: &mut [u64],
        around: &mut Vec<AroundPage>,
        mut kept: Option<&mut Vec<u64>>,
    ) {
        slots.sort_unstable();
        let mut rest: &[u64] = slots;
        let mut raw = Vec::new();
        while let Some(&first) = rest.first() {
            let len = 1 + rest.windows(2).take_while(|w| w[1] == w[0] + 1).count();
            let (run, after) = rest.split_at(len);
            rest = after;
            raw.resize(len * PAGE_SIZE, 0);
            let Ok(read) = self.dev.read_run(first, &mut raw) else {
                continue;
            };
            for (k, &n) in run.iter().enumerate().take(read) {
                let Some(_held) = self.slot_lock(n).try_lock() else {
                    continue;
                };
                // Read ahead meanwhile by another fault: the cache's copy
                // goes, as in the loop above.
                let (data, clean) = match self.cache.lock().pages.remove(&n) {
                    Some(cached) => (cached.data, !cached.dirty),
                    None => {
                        let mut data = vec![0u8; PAGE_SIZE].into_boxed_slice();
                        let raw_page = &raw[k * PAGE_SIZE..(k + 1) * PAGE_SIZE];
                        if self.dev.open_read(n, raw_page, &mut data).is_err() {
                            continue;
                        }
                        Counters::add(&self.counters.pswpin, 1);
                        (data, true)
                    }
                };
                match kept.as_deref_mut() {
                    Some(kept) if clean => kept.push(n),
                    // Out of the store now: the page goes to the caller
                    // even if the slot cannot be freed.
                    _ => {
                        let _ = self.release_slot(n);
                    }
                }
                around.push((n, data));
            }
        }
    }

    /// A neighbour's page from the zero map or zswap (the caller has its
    /// slot lock); `None` if it is elsewhere or cannot be read (it stays).
    fn load_pooled(&self, n: u64) -> Option<Box<[u8]>> {
        if self.is_zero(n) {
            Counters::add(&self.counters.swpin_zero, 1);
            return Some(vec![0u8; PAGE_SIZE].into_boxed_slice());
        }
        // A slot's page is in one place (invariant 1): one on the file is
        // not pooled, which an atomic load tells. Otherwise `load` alone
        // looks in the tree.
        if self.dev.is_written(n) {
            return None;
        }
        let mut data = vec![0u8; PAGE_SIZE].into_boxed_slice();
        match self.zswap.load(n, &mut data) {
            Ok(true) => Some(data),
            _ => None,
        }
    }

    /// Frees the slot and everything it holds (the caller has its lock).
    fn release_slot(&self, offset: u64) -> Result<(), ZswapError> {
        self.drop_contents(&[offset], &[]);
        Ok(self.dev.free(offset)?)
    }

    /// Drops the oldest swap-cache pages past the cache's size. A page that
    /// came from zswap is stored again (its compressed copy is gone).
    fn trim_cache(&self) {
        loop {
            let victim = {
                let mut c = self.cache.lock();
                if c.pages.len() <= self.cfg.swap_cache_pages {
                    return;
                }
                match c.order.pop_front() {
                    Some(n) => n,
                    None => return,
                }
            };
            let Some(_held) = self.slot_lock(victim).try_lock() else {
                continue;
            };
            let Some(p) = self.cache.lock().pages.remove(&victim) else {
                continue;
            };
            if p.dirty && self.store_again(victim, &p.data).is_err() {
                // Could not store it anywhere: keep it cached rather than lose it.
                let mut c = self.cache.lock();
                c.pages.insert(victim, p);
                c.order.push_back(victim);
                return;
            }
        }
    }

    fn store_again(&self, offset: u64, data: &[u8]) -> Result<(), ZswapError> {
        match self.zswap.store(&[data], &[offset]) {
            Ok(()) => Ok(()),
            Err(_) if self.cfg.writeback => {
                self.dev.write_pages(&[offset], &[data])?;
                Counters::add(&self.counters.pswpout, 1);
                Ok(())
            }
            Err(r) => Err(ZswapError::Rejected(r)),
        }
    }

    /// Frees the slot at `offset` and whatever it holds (the process no
    /// longer maps the page).
    pub fn free(&self, offset: u64) -> Result<(), ZswapError> {
        self.check_offsets(&[offset])?;
        let _held = self.slot_lock(offset).lock();
        self.release_slot(offset)
    }

    /// Writes up to `n` of zswap's coldest pages back to the swap file, in
    /// batches of [`WRITEBACK_BATCH`]. Returns how many were written back.
    /// An I/O error keeps the pages in zswap and is returned after the
    /// batch.
    pub fn writeback(&self, n: usize) -> Result<usize, ZswapError> {
        if !self.cfg.writeback {
            return Ok(0);
        }
        let mut done = 0;
        while done < n {
            let victims = self.zswap.pick_victims((n - done).min(WRITEBACK_BATCH));
            if victims.is_empty() {
                break;
            }
            done += self.writeback_batch(victims)?;
        }
        Ok(done)
    }

    fn writeback_batch(&self, victims: Vec<crate::zswap::Victim>) -> Result<usize, ZswapError> {
        let mut held = Vec::new();
        let mut pages: Vec<Vec<u8>> = Vec::new();
        let mut taken = Vec::new();
        for v in victims {
            // A busy slot is being swapped in or freed: skip it this round.
            let Some(g) = self.slot_lock(v.offset).try_lock() else {
                self.zswap.requeue(v);
                continue;
            };
            let mut page = vec![0u8; PAGE_SIZE];
            if matches!(self.zswap.read_victim(v, &mut page), Ok(true)) {
                held.push(g);
                pages.push(page);
                taken.push(v);
            }
        }
        let offsets: Vec<u64> = taken.iter().map(|v| v.offset).collect();
        let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        let results = self.dev.write_pages_each(&offsets, &refs);
        let mut written = 0;
        let mut first_error = None;
        for (v, r) in taken.into_iter().zip(results) {
            match r {
                Ok(()) => {
                    self.zswap.finish_writeback(v);
                    written += 1;
                }
                Err(e) => {
                    // The page stays in zswap; try again later.
                    self.zswap.requeue(v);
                    first_error.get_or_insert(e);
                }
            }
        }
        Counters::add(&self.counters.pswpout, written);
        drop(held);
        match first_error {
            None => Ok(written),
            Some(e) => {
                Counters::add(&self.counters.writeback_errors, 1);
                Err(e.into())
            }
        }
    }

    fn kick_shrinker(&self) {
        if let Some(s) = self.shrinker.lock().as_ref() {
            s.wake.kick();
        } else if self.cfg.shrinker_enabled && !self.cfg.shrinker_thread && self.cfg.writeback {
            self.shrink_wanted.store(true, Ordering::Release);
        } else {
            Counters::add(&self.counters.reject_reclaim_fail, 1);
        }
    }

    /// Without a shrinker thread: whether the owner should call
    /// [`Swap::shrink`] (the pool hit its limit).
    pub fn needs_shrink(&self) -> bool {
        self.shrink_wanted.load(Ordering::Acquire)
    }

    /// Writes back until the pool is under its accept threshold (what the
    /// shrinker thread does), on the caller's thread.
    pub fn shrink(&self) {
        self.shrink_wanted.store(false, Ordering::Release);
        self.shrink_to_accept();
    }

    /// Reads the page at `offset` without changing anything: not the swap
    /// cache, not zswap, not the file (read with plain `pread`). A forked
    /// child reads the store it inherited from its parent this way.
    pub fn read_frozen(&self, offset: u64, page: &mut [u8]) -> Result<Source, ZswapError> {
        if page.len() != PAGE_SIZE {
            return Err(ZswapError::BadFolio);
        }
        self.check_offsets(&[offset])?;
        if let Some(cached) = self.cache.lock().pages.get(&offset) {
            page.copy_from_slice(&cached.data);
            return Ok(Source::SwapCache);
        }
        if self.is_zero(offset) {
            page.fill(0);
            return Ok(Source::Zero);
        }
        if self.zswap.peek(offset, page)? {
            return Ok(Source::Zswap);
        }
        if self.dev.is_written(offset) {
            self.dev.read_page_sync(offset, page)?;
            return Ok(Source::Disk);
        }
        Err(ZswapError::NotStored(offset))
    }

    /// The pool is over its accept threshold: write back until it is not.
    fn shrink_to_accept(&self) {
        while self.zswap.over_limit() || self.zswap.pages_over_accept() > 0 {
            match self.writeback(WRITEBACK_BATCH) {
                Ok(0) | Err(_) => {
                    Counters::add(&self.counters.reject_reclaim_fail, 1);
                    return;
                }
                Ok(_) => {}
            }
        }
    }

    /// Pages of memory the store holds for its owner, as a memcg charges
    /// zswap: the pool's pages, the metadata of each stored entry (its
    /// tree entry and LRU record, about [`ENTRY_METADATA_BYTES`]) and the
    /// swap file's resident per-slot tables (checksums and allocation
    /// bits, [`SwapFile::table_bytes`]). The swap cache is not counted: it
    /// is bounded (`swap_cache_pages`). Lock-free: reclaim reads it at
    /// every fault.
    pub fn charged_pages(&self) -> usize {
        let metadata = self.zswap.stored_pages() * ENTRY_METADATA_BYTES;
        self.zswap.pool_pages() + (metadata + self.dev.table_bytes()).div_ceil(PAGE_SIZE)
    }

    /// Pages stored into the pool, loaded from it and written back from
    /// it so far (`zswpout`, `zswpin`, `written_back_pages`), read without
    /// the locks and file calls of a [`Swap::stats`] snapshot.
    pub fn pool_traffic(&self) -> (u64, u64, u64) {
        let c = &self.counters;
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (
            read(&c.zswpout),
            read(&c.zswpin),
            read(&c.written_back_pages),
        )
    }

    /// All counters, with the kernel's names.
    pub fn stats(&self) -> Stats {
        let mut s = self.counters.snapshot();
        s.stored_pages = self.zswap.stored_pages() as u64;
        s.pool_total_size = self.zswap.pool_total_size() as u64;
        s.swap_cache_pages = self.cache.lock().pages.len() as u64;
        s.swap_used_pages = self.dev.used_slots() as u64;
        s.swapfile_memory_bytes = self.dev.memory_bytes();
        s
    }
}

impl Shrinker {
    fn start(swap: Weak<Swap>) -> std::io::Result<Self> {
        let wake = Arc::new(Wakeup::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (w, st) = (wake.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("uzswap/shrink".into())
            .spawn(move || loop {
                w.wait();
                if st.load(Ordering::Acquire) {
                    return;
                }
                match swap.upgrade() {
                    Some(s) => s.shrink_to_accept(),
                    None => return,
                }
            })?;
        Ok(Self {
            wake,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        if let Some(mut s) = self.shrinker.lock().take() {
            s.stop.store(true, Ordering::Release);
            s.wake.kick();
            // The shrinker may itself drop the last reference: never join self.
            if let Some(t) = s
                .thread
                .take()
                .filter(|t| t.thread().id() != std::thread::current().id())
            {
                let _ = t.join();
            }
        }
    }
}

/// Whether a page is all zeros (zswap's zero-filled pages, stored as a
/// flag). OR-folding 64-byte blocks lets the compiler use vector loads, and
/// a page with data stops at its first block that has some: a byte-by-byte
/// scan took 2.8 µs for a page of zeros or one whose data lies at its end,
/// this takes about 0.1 µs.
fn is_zero_filled(page: &[u8]) -> bool {
    let (blocks, rest) = page.as_chunks::<64>();
    blocks
        .iter()
        .all(|b| b.iter().fold(0u8, |acc, &x| acc | x) == 0)
        && rest.iter().all(|&x| x == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_zero_filled_only_without_a_nonzero_byte_anywhere() {
        let mut page = vec![0u8; PAGE_SIZE + 3];
        assert!(is_zero_filled(&page[..PAGE_SIZE]));
        assert!(
            is_zero_filled(&page[1..]),
            "a length that is no multiple of the block"
        );
        for at in 0..page.len() {
            for value in [1u8, 0x80] {
                page[at] = value;
                assert!(!is_zero_filled(&page), "byte {at} = {value:#x}");
                let tail = &page[3..];
                assert_eq!(
                    is_zero_filled(tail),
                    at < 3,
                    "byte {at} of an unaligned slice"
                );
                page[at] = 0;
            }
        }
    }
}
