//! The page arena: where zspages get their pages (the buddy allocator's job).
//!
//! One reserved, lazily-populated anonymous mapping is cut into 4 KiB pages
//! named by a page frame number (pfn). Free pfns sit on a list behind one
//! mutex (the analog of `zone->lock`). A released page goes on the *hot*
//! list: its memory stays resident and it is reused first. Once more than
//! `hot_limit` (the pool's `Config::free_page_cache`) pages are hot, the
//! oldest, down to half the limit, go back to the OS, after the free-list
//! lock is dropped, and move to the *cold* list: their contiguous runs go
//! 64 at a time into one `process_madvise(MADV_DONTNEED)` (one TLB flush
//! for all of them; `madvise` per run where the kernel refuses it). One
//! `madvise` per run was a shootdown IPI per run to every CPU running
//! another thread of the process: 90% of the lockless `zs_free`
//! experiment's free phase, and the reason that design, whose freeing
//! threads never wait on each other, measured slower than mainline's
//! (BENCHMARKS.md). So the
//! process's RSS follows the pool's size to within `free_page_cache` pages
//! (`None`: never given back).
//!
//! Each pfn has a [`PageDesc`] (the `zpdesc`): which zspage it belongs to, its
//! place in the chain, and the chain's first and next pfn, so readers can
//! follow an object across a page boundary without the class lock.

use crate::class::PAGE_SIZE;
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::sync::Mutex;
use crate::Error;

/// What a pfn currently belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageInfo {
    pub(crate) class_pos: usize,
    pub(crate) zspage_id: u32,
    pub(crate) first_pfn: u32,
    /// `NO_PFN` for the last page of the chain.
    pub(crate) next_pfn: u32,
}

pub(crate) const NO_PFN: u32 = u32::MAX;

/// Per-page descriptor, two atomic words so it can be read without locks.
#[derive(Debug)]
pub(crate) struct PageDesc {
    /// `[valid:1 | class_pos:8 | zspage_id:32]`
    owner: AtomicU64,
    /// `[first_pfn:32 | next_pfn:32]`
    chain: AtomicU64,
}

const VALID: u64 = 1 << 63;

impl PageDesc {
    #[cfg_attr(not(loom), allow(dead_code))]
    fn new() -> Self {
        Self {
            owner: AtomicU64::new(0),
            chain: AtomicU64::new(0),
        }
    }

    pub(crate) fn set(&self, info: PageInfo) {
        let chain = (u64::from(info.first_pfn) << 32) | u64::from(info.next_pfn);
        self.chain.store(chain, Ordering::Release);
        let owner = VALID | ((info.class_pos as u64) << 32) | u64::from(info.zspage_id);
        self.owner.store(owner, Ordering::Release);
    }

    pub(crate) fn clear(&self) {
        self.owner.store(0, Ordering::Release);
    }

    pub(crate) fn get(&self) -> Option<PageInfo> {
        let owner = self.owner.load(Ordering::Acquire);
        if owner & VALID == 0 {
            return None;
        }
        let chain = self.chain.load(Ordering::Acquire);
        Some(PageInfo {
            class_pos: ((owner >> 32) & 0xff) as usize,
            zspage_id: owner as u32,
            first_pfn: (chain >> 32) as u32,
            next_pfn: chain as u32,
        })
    }
}

struct FreeList {
    /// Released pages whose memory is still resident, oldest first.
    hot: Vec<u32>,
    /// Released pages whose memory was returned to the OS.
    cold: Vec<u32>,
    next_unused: u32,
}

/// The backing memory of a pool.
pub(crate) struct Arena {
    base: *mut u8,
    pages: usize,
    descs: Box<[PageDesc]>,
    free: Mutex<FreeList>,
    pages_in_use: AtomicUsize,
    /// Most free pages kept resident; `usize::MAX` keeps all of them.
    hot_limit: usize,
    pages_discarded: AtomicUsize,
}

// SAFETY: `base` points to memory owned by the arena for its whole life. The
// arena hands out disjoint page ranges; all byte access goes through
// `Pool`, which serialises access to each object (see lib.rs, "Lock order").
unsafe impl Send for Arena {}
// SAFETY: as above; the shared state (descs, free list, counters) is atomic
// or behind a mutex.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena of `pages` pages keeping at most `hot_limit` free pages
    /// resident (`None`: never give memory back).
    pub(crate) fn new(pages: usize, hot_limit: Option<usize>) -> Result<Self, Error> {
        if pages == 0 || pages >= NO_PFN as usize {
            return Err(Error::Config(format!("arena of {pages} pages")));
        }
        let base = map_pages(pages)?;
        Ok(Self {
            base,
            pages,
            descs: new_descs(pages),
            free: Mutex::new(FreeList {
                hot: Vec::new(),
                cold: Vec::new(),
                next_unused: 0,
            }),
            pages_in_use: AtomicUsize::new(0),
            hot_limit: hot_limit.unwrap_or(usize::MAX),
            pages_discarded: AtomicUsize::new(0),
        })
    }

    /// Takes `n` pages, or none if the arena cannot supply all of them.
    /// Resident pages go first (newest first), then returned, then fresh.
    pub(crate) fn alloc_pages(&self, n: usize) -> Option<Vec<u32>> {
        let mut list = self.free.lock();
        let fresh = self.pages - list.next_unused as usize;
        if list.hot.len() + list.cold.len() + fresh < n {
            return None;
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let pfn = match list.hot.pop().or_else(|| list.cold.pop()) {
                Some(pfn) => pfn,
                None => {
                    list.next_unused += 1;
                    list.next_unused - 1
                }
            };
            out.push(pfn);
        }
        drop(list);
        self.pages_in_use.fetch_add(n, Ordering::Relaxed);
        Some(out)
    }

    /// Gives pages back: their descriptors are cleared and they become
    /// allocatable again; past the hot watermark the oldest free pages'
    /// memory is returned to the OS.
    pub(crate) fn release_pages(&self, pfns: &[u32]) {
        for &pfn in pfns {
            self.desc(pfn).clear();
        }
        let mut list = self.free.lock();
        list.hot.extend_from_slice(pfns);
        self.pages_in_use.fetch_sub(pfns.len(), Ordering::Relaxed);
        if list.hot.len() <= self.hot_limit {
            return;
        }
        // Trim to half the limit, so the next discard is a batch too.
        let excess = list.hot.len() - self.hot_limit / 2;
        let batch: Vec<u32> = list.hot.drain(..excess).collect();
        drop(list);
        self.discard(&batch);
        self.pages_discarded
            .fetch_add(batch.len(), Ordering::Relaxed);
        self.free.lock().cold.extend_from_slice(&batch);
    }

    /// Free pages whose memory is still resident.
    pub(crate) fn hot_pages(&self) -> usize {
        self.free.lock().hot.len()
    }

    /// Pages whose memory was returned to the OS so far.
    pub(crate) fn pages_discarded(&self) -> usize {
        self.pages_discarded.load(Ordering::Relaxed)
    }

    /// Returns the memory of `pfns` to the OS: one `process_madvise` for
    /// up to 64 runs of consecutive pages (one TLB flush, where one
    /// `madvise` per run flushes per run: an IPI to each CPU where another
    /// thread of the process runs, a cost that grows with the threads that
    /// free at once), else one `madvise` per run.
    #[cfg(not(loom))]
    fn discard(&self, pfns: &[u32]) {
        let mut sorted = pfns.to_vec();
        sorted.sort_unstable();
        let ranges: Vec<(usize, usize)> = common::discard::page_runs(&sorted)
            .into_iter()
            .map(|(first, n)| {
                (
                    self.base as usize + first as usize * PAGE_SIZE,
                    n * PAGE_SIZE,
                )
            })
            .collect();
        // SAFETY: the ranges are runs of this arena's free pages, inside its
        // mapping; nobody holds references into released pages, and
        // MADV_DONTNEED on private anonymous memory only drops contents.
        // (Raw system calls: in a program under the LD_PRELOAD library,
        // `madvise` is the library's hook.)
        let results = unsafe { common::discard::discard_each(&ranges) };
        debug_assert!(
            results.iter().all(Result::is_ok),
            "madvise(MADV_DONTNEED) on our own mapping: {results:?}"
        );
    }

    #[cfg(loom)]
    fn discard(&self, _pfns: &[u32]) {}

    pub(crate) fn desc(&self, pfn: u32) -> &PageDesc {
        &self.descs[pfn as usize]
    }

    pub(crate) fn pages_in_use(&self) -> usize {
        self.pages_in_use.load(Ordering::Relaxed)
    }

    pub(crate) fn capacity_pages(&self) -> usize {
        self.pages
    }

    /// The `len` bytes of page `pfn` from `offset`, borrowed in place.
    ///
    /// # Safety
    /// For the borrow's life the caller must hold a lock that excludes
    /// writers of this byte range and the release of its page (the
    /// object's stripe lock and the pool lock, or the pool write lock).
    pub(crate) unsafe fn bytes(&self, pfn: u32, offset: usize, len: usize) -> &[u8] {
        let src = self.byte_ptr(pfn, offset, len);
        // SAFETY: byte_ptr checked the range lies inside the mapping, which
        // lives as long as `self`; the caller excludes writers meanwhile.
        unsafe { std::slice::from_raw_parts(src, len) }
    }

    /// Copies `dst.len()` bytes out of page `pfn` from `offset`.
    ///
    /// # Safety
    /// The caller must hold a lock that excludes writers of this byte range
    /// (the object's stripe lock, or the pool write lock).
    pub(crate) unsafe fn read(&self, pfn: u32, offset: usize, dst: &mut [u8]) {
        let src = self.byte_ptr(pfn, offset, dst.len());
        // SAFETY: byte_ptr checked the range lies inside the mapping; the
        // caller excludes concurrent writers; dst is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) }
    }

    /// Copies `src` into page `pfn` at `offset`.
    ///
    /// # Safety
    /// The caller must hold a lock that excludes all other access to this
    /// byte range (the object's stripe lock for writing, or the pool write
    /// lock).
    pub(crate) unsafe fn write(&self, pfn: u32, offset: usize, src: &[u8]) {
        let dst = self.byte_ptr(pfn, offset, src.len());
        // SAFETY: as in `read`, with exclusive access held by the caller.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
    }

    fn byte_ptr(&self, pfn: u32, offset: usize, len: usize) -> *mut u8 {
        assert!(
            (pfn as usize) < self.pages && offset + len <= PAGE_SIZE,
            "access outside page"
        );
        // SAFETY: the assert keeps the offset inside the mapping.
        unsafe { self.base.add(pfn as usize * PAGE_SIZE + offset) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        unmap_pages(self.base, self.pages);
    }
}

#[cfg(not(loom))]
fn map_pages(pages: usize) -> Result<*mut u8, Error> {
    let len = pages
        .checked_mul(PAGE_SIZE)
        .ok_or_else(|| Error::Config("arena size overflows".into()))?;
    // A raw system call, never the `mmap` symbol: in a program under the
    // LD_PRELOAD library that is a hook, which would take the pool's own
    // memory for a program allocation.
    // SAFETY: a fresh private anonymous mapping, no address hint, no fd; the
    // result is checked before use.
    let ptr = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            0usize,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if ptr < 0 {
        return Err(Error::Mmap(std::io::Error::last_os_error()));
    }
    Ok(ptr as *mut u8)
}

#[cfg(not(loom))]
fn unmap_pages(base: *mut u8, pages: usize) {
    // SAFETY: `base`/`pages` describe exactly the mapping made in map_pages,
    // and the arena (its only user) is being dropped.
    unsafe { libc::syscall(libc::SYS_munmap, base, pages * PAGE_SIZE) };
}

#[cfg(not(loom))]
fn new_descs(pages: usize) -> Box<[PageDesc]> {
    let descs = Box::<[PageDesc]>::new_zeroed_slice(pages);
    // SAFETY: PageDesc is two AtomicU64, for which all-zero bytes are a valid
    // value (0 = "no owner"). A zeroed allocation of this size comes straight
    // from the OS, so untouched descriptors cost no memory.
    unsafe { descs.assume_init() }
}

#[cfg(loom)]
fn map_pages(pages: usize) -> Result<*mut u8, Error> {
    let layout = std::alloc::Layout::from_size_align(pages * PAGE_SIZE, PAGE_SIZE)
        .map_err(|e| Error::Config(e.to_string()))?;
    // SAFETY: layout has non-zero size (pages > 0 is checked by the caller).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(Error::OutOfMemory);
    }
    Ok(ptr)
}

#[cfg(loom)]
fn unmap_pages(base: *mut u8, pages: usize) {
    let layout = std::alloc::Layout::from_size_align(pages * PAGE_SIZE, PAGE_SIZE)
        .expect("layout built in map_pages");
    // SAFETY: allocated in map_pages with this same layout.
    unsafe { std::alloc::dealloc(base, layout) }
}

#[cfg(loom)]
fn new_descs(pages: usize) -> Box<[PageDesc]> {
    (0..pages).map(|_| PageDesc::new()).collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn fill(arena: &Arena, pfn: u32, byte: u8) {
        // SAFETY: single-threaded test; nobody else touches the page.
        unsafe { arena.write(pfn, 0, &[byte; PAGE_SIZE]) };
    }

    fn first_byte(arena: &Arena, pfn: u32) -> u8 {
        let mut b = [0u8; 1];
        // SAFETY: single-threaded test.
        unsafe { arena.read(pfn, 0, &mut b) };
        b[0]
    }

    #[test]
    fn pages_past_the_watermark_go_back_to_the_os() {
        let arena = Arena::new(64, Some(4)).unwrap();
        let pages = arena.alloc_pages(10).unwrap();
        for &p in &pages {
            fill(&arena, p, 0xaa);
        }
        arena.release_pages(&pages);
        assert_eq!(arena.pages_in_use(), 0);
        // 10 > 4: trimmed to 2 resident, the 8 oldest discarded.
        assert_eq!(arena.hot_pages(), 2);
        assert_eq!(arena.pages_discarded(), 8);
        let zeroed = pages
            .iter()
            .filter(|&&p| first_byte(&arena, p) == 0)
            .count();
        assert_eq!(
            zeroed, 8,
            "MADV_DONTNEED dropped the discarded pages' contents"
        );
        // Resident pages are reused first.
        let again = arena.alloc_pages(2).unwrap();
        assert!(again.iter().all(|&p| first_byte(&arena, p) == 0xaa));
    }

    #[test]
    fn scattered_pages_are_discarded_in_one_batch_and_the_rest_keep_their_bytes() {
        let arena = Arena::new(400, Some(2)).unwrap();
        let pages = arena.alloc_pages(400).unwrap();
        for &p in &pages {
            fill(&arena, p, 0xbb);
        }
        // Every other page: 200 runs of one page, more than one
        // process_madvise call's 64 ranges.
        let freed: Vec<u32> = pages.iter().copied().filter(|p| p % 2 == 0).collect();
        arena.release_pages(&freed);
        assert_eq!(arena.pages_discarded(), 199);
        let hot = arena.hot_pages();
        assert_eq!(hot, 1);
        for &p in &pages {
            let byte = first_byte(&arena, p);
            if p % 2 == 1 {
                assert_eq!(byte, 0xbb, "page {p} is still in use");
            }
        }
        let zeroed = freed
            .iter()
            .filter(|&&p| first_byte(&arena, p) == 0)
            .count();
        assert_eq!(zeroed, 199, "every discarded page reads back as zeros");
    }

    #[test]
    fn no_limit_keeps_every_page_resident() {
        let arena = Arena::new(8, None).unwrap();
        let pages = arena.alloc_pages(8).unwrap();
        assert!(arena.alloc_pages(1).is_none(), "arena exhausted");
        arena.release_pages(&pages);
        assert_eq!((arena.hot_pages(), arena.pages_discarded()), (8, 0));
        assert_eq!(arena.alloc_pages(8).map(|v| v.len()), Some(8));
    }
}
