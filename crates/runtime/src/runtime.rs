//! The runtime: regions, the fault handler thread, the reclaim thread.

use crate::pagemap::PagemapScan;
use crate::shared::SharedLimit;
use crate::RuntimeError;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::{BTreeMap, VecDeque};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use userfaultfd::{Event, FaultKind, ReadWrite, RegisterMode, Uffd};
use zswap::{Swap, PAGE_SIZE};

/// Runtime settings.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub swap: zswap::Config,
    /// Resident bytes above which pages are reclaimed (`memory.high`).
    pub high_bytes: usize,
    /// Pages evicted per reclaim step.
    pub reclaim_batch: usize,
    /// Longest run of neighbouring pages evicted as one folio.
    pub evict_folio_pages: usize,
    /// Track writes to resident pages (write-protect + `PAGEMAP_SCAN`) so
    /// that reclaim spares recently written pages, where the kernel has
    /// `PAGEMAP_SCAN` (6.7+).
    pub track_writes: bool,
    /// Least time between two aging passes.
    pub aging_interval: Duration,
    /// A limit file shared with other processes ([`crate::shared`]): the
    /// limit applies to their resident pages and ours together.
    pub shared_limit: Option<std::path::PathBuf>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            swap: zswap::Config::default(),
            high_bytes: 512 << 20,
            reclaim_batch: 64,
            evict_folio_pages: 16,
            track_writes: true,
            aging_interval: Duration::from_millis(100),
            shared_limit: None,
        }
    }
}

/// Times reclaim passes over a page found written before taking it.
const WRITTEN_REPRIEVES: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageState {
    Untouched,
    Resident,
    Evicting,
    Loading,
    Swapped(u64),
}

struct RegionData {
    pages: Vec<PageState>,
    /// Eviction clock when each page was last evicted (workingset shadow).
    shadow: Vec<u64>,
    /// Refaulted within the workingset: spared by the next reclaim pass.
    active: Vec<bool>,
    /// Reprieves left: set to [`WRITTEN_REPRIEVES`] when an aging pass
    /// finds the page written, one spent each time reclaim reaches it (a
    /// two-round clock, like a page promoted to the active list).
    referenced: Vec<u8>,
    /// Resident and write-protected by the last aging pass: a page found
    /// unprotected now was written. (A page mapped since is unprotected
    /// without having been written.)
    armed: Vec<bool>,
    /// Being dropped: no new evictions start here.
    dying: bool,
}

impl RegionData {
    /// Pages with an eviction or swap-in in flight (syscalls pending).
    fn in_flight(&self) -> bool {
        self.pages
            .iter()
            .any(|p| matches!(p, PageState::Evicting | PageState::Loading))
    }
}

#[derive(Default)]
struct State {
    regions: BTreeMap<usize, RegionData>,
    /// Resident pages, oldest first; stale records are skipped.
    lru: VecDeque<(usize, usize)>,
    resident: usize,
    evictions: u64,
    /// The limit shared with other processes, if any.
    shared: Option<Arc<SharedLimit>>,
}

impl State {
    /// Changes the resident count, and publishes it to a shared limit.
    fn add_resident(&mut self, delta: isize) {
        self.resident = self.resident.saturating_add_signed(delta);
        if let Some(s) = &self.shared {
            s.publish(self.resident);
        }
    }

    /// Removes the region at `base` from the books, its resident pages no
    /// longer counted; returns its record.
    fn forget_region(&mut self, base: usize) -> Option<RegionData> {
        let data = self.regions.remove(&base)?;
        let resident = data
            .pages
            .iter()
            .filter(|p| **p == PageState::Resident)
            .count();
        self.add_resident(-(resident as isize));
        Some(data)
    }

    /// The pages the limit applies to: ours, or all processes' of a shared
    /// limit.
    fn charged(&self) -> usize {
        match &self.shared {
            Some(s) => s.total(),
            None => self.resident,
        }
    }

    fn locate(&mut self, addr: usize) -> Option<(usize, usize, &mut RegionData)> {
        let (&base, region) = self.regions.range_mut(..=addr).next_back()?;
        let idx = (addr - base) / PAGE_SIZE;
        (idx < region.pages.len()).then_some((base, idx, region))
    }
}

/// Counters of the runtime (the swap store keeps its own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    pub resident_pages: u64,
    pub high_pages: u64,
    pub faults: u64,
    pub zero_faults: u64,
    pub swapin_faults: u64,
    /// Pages installed by fault-around (no fault of their own).
    pub around_pages: u64,
    pub evicted_pages: u64,
    pub direct_reclaims: u64,
    pub workingset_refault: u64,
    pub workingset_activate: u64,
    /// Evictions undone because the store refused or failed.
    pub evict_failures: u64,
    /// Whether writes are tracked (`PAGEMAP_SCAN` available and enabled).
    pub write_tracking: bool,
    /// Aging passes (a scan and a re-protect of every region).
    pub aging_scans: u64,
    /// Resident pages the aging passes found written.
    pub pages_written: u64,
    /// Write-protect faults of tracking, resolved by the handler.
    pub wp_faults: u64,
    /// Victims spared because they were written since the last pass.
    pub written_reprieved: u64,
}

impl RuntimeStats {
    /// `(name, value)` for every counter, in a stable order.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("resident_pages", self.resident_pages),
            ("high_pages", self.high_pages),
            ("faults", self.faults),
            ("zero_faults", self.zero_faults),
            ("swapin_faults", self.swapin_faults),
            ("around_pages", self.around_pages),
            ("evicted_pages", self.evicted_pages),
            ("direct_reclaims", self.direct_reclaims),
            ("workingset_refault", self.workingset_refault),
            ("workingset_activate", self.workingset_activate),
            ("evict_failures", self.evict_failures),
            ("write_tracking", u64::from(self.write_tracking)),
            ("aging_scans", self.aging_scans),
            ("pages_written", self.pages_written),
            ("wp_faults", self.wp_faults),
            ("written_reprieved", self.written_reprieved),
        ]
    }
}

#[derive(Default)]
struct Counters {
    faults: AtomicU64,
    zero_faults: AtomicU64,
    swapin_faults: AtomicU64,
    around_pages: AtomicU64,
    evicted_pages: AtomicU64,
    direct_reclaims: AtomicU64,
    workingset_refault: AtomicU64,
    workingset_activate: AtomicU64,
    evict_failures: AtomicU64,
    aging_scans: AtomicU64,
    pages_written: AtomicU64,
    wp_faults: AtomicU64,
    written_reprieved: AtomicU64,
}

fn bump(c: &AtomicU64, n: usize) {
    c.fetch_add(n as u64, Ordering::Relaxed);
}

struct Inner {
    uffd: Uffd,
    swap: Arc<Swap>,
    state: Mutex<State>,
    cfg: RuntimeConfig,
    high_pages: usize,
    stop: AtomicBool,
    wake_reclaim: (Mutex<bool>, Condvar),
    counters: Counters,
    /// `PAGEMAP_SCAN` for write tracking; `None` when off or unsupported.
    pagemap: Option<PagemapScan>,
    /// When the last aging pass started.
    last_aging: Mutex<Option<Instant>>,
    /// One folio of zeros, the source of first-touch write faults.
    zeros: Vec<u8>,
    /// When dead processes' slots of a shared limit were last swept.
    last_sweep: Mutex<Option<Instant>>,
}

/// Pages a process's memory through uzswap.
pub struct Runtime {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("high_pages", &self.inner.high_pages)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Opens a userfaultfd, the swap store, and starts the fault handler and
    /// reclaim threads.
    pub fn new(cfg: RuntimeConfig) -> Result<Self, RuntimeError> {
        if cfg.reclaim_batch == 0 || cfg.evict_folio_pages == 0 || cfg.high_bytes < PAGE_SIZE {
            return Err(RuntimeError::Config(
                "high_bytes >= 4096, reclaim_batch and evict_folio_pages >= 1".into(),
            ));
        }
        let uffd = crate::uffd::open()?;
        let swap = Swap::new(cfg.swap.clone())?;
        let shared = match &cfg.shared_limit {
            Some(path) => Some(Arc::new(SharedLimit::open(path).map_err(|e| {
                RuntimeError::Config(format!("shared limit {}: {e}", path.display()))
            })?)),
            None => None,
        };
        let pagemap = if cfg.track_writes {
            PagemapScan::open()
        } else {
            None
        };
        let inner = Arc::new(Inner {
            pagemap,
            last_aging: Mutex::new(None),
            zeros: vec![0u8; cfg.evict_folio_pages * PAGE_SIZE],
            last_sweep: Mutex::new(None),
            uffd,
            swap,
            state: Mutex::new(State {
                shared,
                ..State::default()
            }),
            high_pages: cfg.high_bytes / PAGE_SIZE,
            cfg,
            stop: AtomicBool::new(false),
            wake_reclaim: (Mutex::new(false), Condvar::new()),
            counters: Counters::default(),
        });
        let handler = {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name("uzswap/fault".into())
                .spawn(move || inner.handle_faults())
        };
        let reclaimer = {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name("uzswap/reclaim".into())
                .spawn(move || inner.reclaim_loop())
        };
        let threads = vec![
            handler.expect("spawn fault handler"),
            reclaimer.expect("spawn reclaimer"),
        ];
        Ok(Self { inner, threads })
    }

    /// A new region of at least `len` bytes (rounded up to pages), zero
    /// filled, paged through uzswap.
    pub fn alloc(&self, len: usize) -> Result<Region, RuntimeError> {
        let npages = len.div_ceil(PAGE_SIZE).max(1);
        let bytes = npages * PAGE_SIZE;
        // SAFETY: a fresh private anonymous mapping; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(RuntimeError::Mmap {
                len: bytes,
                source: std::io::Error::last_os_error(),
            });
        }
        // A forked child must never see a region's pages half swapped out
        // (its copy has no handler): the mapping is not inherited, and a
        // child that touches it faults (SIGSEGV) rather than read zeros.
        // SAFETY: advice on the mapping made just above.
        unsafe { libc::madvise(ptr, bytes, libc::MADV_DONTFORK) };
        let base = ptr as usize;
        self.inner.state.lock().regions.insert(
            base,
            RegionData {
                pages: vec![PageState::Untouched; npages],
                shadow: vec![0; npages],
                active: vec![false; npages],
                referenced: vec![0; npages],
                armed: vec![false; npages],
                dying: false,
            },
        );
        if let Err(e) = self.inner.uffd.register_with_mode(
            ptr,
            bytes,
            RegisterMode::MISSING | RegisterMode::WRITE_PROTECT,
        ) {
            self.inner.state.lock().regions.remove(&base);
            // SAFETY: unmapping the mapping made above, which nobody uses.
            unsafe { libc::munmap(ptr, bytes) };
            return Err(RuntimeError::Uffd(e.to_string()));
        }
        Ok(Region {
            inner: self.inner.clone(),
            base,
            len: bytes,
        })
    }

    /// The swap store's counters.
    pub fn swap_stats(&self) -> zswap::Stats {
        self.inner.swap.stats()
    }

    /// The runtime's counters.
    pub fn stats(&self) -> RuntimeStats {
        let c = &self.inner.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RuntimeStats {
            resident_pages: self.inner.state.lock().resident as u64,
            high_pages: self.inner.high_pages as u64,
            faults: get(&c.faults),
            zero_faults: get(&c.zero_faults),
            swapin_faults: get(&c.swapin_faults),
            around_pages: get(&c.around_pages),
            evicted_pages: get(&c.evicted_pages),
            direct_reclaims: get(&c.direct_reclaims),
            workingset_refault: get(&c.workingset_refault),
            workingset_activate: get(&c.workingset_activate),
            evict_failures: get(&c.evict_failures),
            write_tracking: self.inner.pagemap.is_some(),
            aging_scans: get(&c.aging_scans),
            pages_written: get(&c.pages_written),
            wp_faults: get(&c.wp_faults),
            written_reprieved: get(&c.written_reprieved),
        }
    }

    /// Stops counting this process's pages in a shared limit (at exit).
    pub fn leave_shared_limit(&self) {
        if let Some(s) = &self.inner.state.lock().shared {
            s.leave();
        }
    }

    /// Evicts up to `n` of the oldest resident pages now; returns how many.
    pub fn reclaim(&self, n: usize) -> usize {
        self.inner.evict(n)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Regions may outlive the runtime: bring their pages back and hand
        // them over as plain memory, so no access ever waits for a handler
        // that is gone.
        self.inner.release_all_regions();
        self.inner.stop.store(true, Ordering::Release);
        {
            let (flag, cv) = &self.inner.wake_reclaim;
            *flag.lock() = true;
            cv.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Memory paged through uzswap. Use it through [`Region::as_ptr`] (or
/// [`Region::as_mut_slice`]) like any other memory; faults are served by
/// the runtime's handler thread.
pub struct Region {
    inner: Arc<Inner>,
    base: usize,
    len: usize,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("base", &format_args!("{:#x}", self.base))
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: the region is plain memory; the runtime's state about it is
// behind the state lock, and the mapping lives until the region is dropped.
unsafe impl Send for Region {}
// SAFETY: as above; concurrent access to the bytes is the caller's affair,
// as for any shared memory.
unsafe impl Sync for Region {}

impl Region {
    pub fn as_ptr(&self) -> *mut u8 {
        self.base as *mut u8
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's bytes.
    ///
    /// # Safety
    /// The caller must not create overlapping references to the same bytes
    /// from several threads, as for any raw memory.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, alive while `self` is; the
        // caller upholds the aliasing rule.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr(), self.len) }
    }
}

impl Region {
    /// Hands the region over as plain memory: every swapped page is brought
    /// back, the range is unregistered from userfaultfd and forgotten by the
    /// runtime, and the mapping stays. Returns `(address, length)`; the
    /// caller owns the mapping from now on (and `munmap`s it).
    pub fn into_plain(self) -> (usize, usize) {
        let (base, len) = (self.base, self.len);
        self.inner.release_region(base);
        self.inner.state.lock().forget_region(base);
        std::mem::forget(self);
        (base, len)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // No eviction or swap-in of this region may be in flight: their
        // ioctls and madvise must not outlive the mapping.
        let mut st = self.inner.quiesce(self.base);
        if let Some(data) = st.forget_region(self.base) {
            drop(st);
            for p in &data.pages {
                if let PageState::Swapped(slot) = p {
                    let _ = self.inner.swap.free(*slot);
                }
            }
        }
        let _ = self
            .inner
            .uffd
            .unregister(self.base as *mut libc::c_void, self.len);
        // SAFETY: the mapping was made in `alloc` with this length; the
        // region owned it, and nothing of ours touches it any more.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

impl Inner {
    /// Marks the region at `base` dying (no new evictions start there) and
    /// waits until none of its evictions or swap-ins is in flight; returns
    /// the state lock, held, in that condition.
    fn quiesce(&self, base: usize) -> MutexGuard<'_, State> {
        loop {
            let mut st = self.state.lock();
            let Some(region) = st.regions.get_mut(&base) else {
                return st;
            };
            region.dying = true;
            if !region.in_flight() {
                return st;
            }
            drop(st);
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Swaps every page of every live region back in and unregisters the
    /// regions: from then on they are ordinary memory.
    fn release_all_regions(&self) {
        let bases: Vec<usize> = self.state.lock().regions.keys().copied().collect();
        for base in bases {
            self.release_region(base);
        }
    }

    /// Stops evictions of the region at `base`, waits for those in flight,
    /// brings every swapped page back and unregisters the range. The
    /// region's record stays (all pages resident or untouched).
    fn release_region(&self, base: usize) {
        drop(self.quiesce(base));
        loop {
            let next = {
                let mut st = self.state.lock();
                let Some(region) = st.regions.get_mut(&base) else {
                    break;
                };
                let found = region.pages.iter().enumerate().find_map(|(i, p)| match p {
                    PageState::Swapped(slot) => Some((i, *slot)),
                    _ => None,
                });
                if let Some((idx, _)) = found {
                    region.pages[idx] = PageState::Loading;
                }
                found
            };
            match next {
                Some((idx, slot)) => self.swap_in(base, idx, slot, &[]),
                None => break,
            }
        }
        if let Some(region) = self.state.lock().regions.get(&base) {
            let len = region.pages.len() * PAGE_SIZE;
            let _ = self.uffd.unregister(base as *mut libc::c_void, len);
        }
    }

    fn handle_faults(&self) {
        let fd = self.uffd.as_raw_fd();
        while !self.stop.load(Ordering::Acquire) {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for the duration of the call.
            let n = unsafe { libc::poll(&mut pfd, 1, 50) };
            if n <= 0 {
                continue;
            }
            while let Ok(Some(event)) = self.uffd.read_event() {
                match event {
                    Event::Pagefault {
                        kind: FaultKind::Missing,
                        rw,
                        addr,
                        ..
                    } => {
                        let write = matches!(rw, ReadWrite::Write);
                        self.missing_fault(addr as usize & !(PAGE_SIZE - 1), write);
                        self.maybe_reclaim();
                    }
                    Event::Pagefault {
                        kind: FaultKind::WriteProtected,
                        addr,
                        ..
                    } => self.wp_fault(addr as usize & !(PAGE_SIZE - 1)),
                    _ => {}
                }
            }
        }
    }

    /// A write to a write-protected page. During an eviction the writer
    /// waits for the evictor, which wakes it; otherwise the protection is
    /// write tracking's, and goes at once. The state lock is held across
    /// the un-protect: an eviction starting meanwhile would otherwise have
    /// its copy un-protected (the model's `UnprotectUnlocked`).
    fn wp_fault(&self, page: usize) {
        let mut st = self.state.lock();
        let Some((_, idx, region)) = st.locate(page) else {
            return; // not ours any more: unregistering woke the writer
        };
        if region.pages[idx] == PageState::Evicting {
            return;
        }
        bump(&self.counters.wp_faults, 1);
        let _ = self
            .uffd
            .remove_write_protection(page as *mut libc::c_void, PAGE_SIZE, true);
    }

    /// One aging pass, at most every `aging_interval`: the pages of each
    /// region written since the last pass (`PAGEMAP_SCAN`) are marked
    /// referenced, then the region is write-protected again. Runs unlocked
    /// but for the marking; the model shows any moment is safe for the
    /// re-protect.
    fn maybe_age(&self) {
        let Some(pagemap) = &self.pagemap else {
            return;
        };
        {
            let mut last = self.last_aging.lock();
            if last.is_some_and(|t| t.elapsed() < self.cfg.aging_interval) {
                return;
            }
            *last = Some(Instant::now());
        }
        bump(&self.counters.aging_scans, 1);
        let regions: Vec<(usize, usize)> = {
            let st = self.state.lock();
            st.regions
                .iter()
                .filter(|(_, r)| !r.dying)
                .map(|(&b, r)| (b, r.pages.len() * PAGE_SIZE))
                .collect()
        };
        let mut written = Vec::new();
        for (base, len) in regions {
            written.clear();
            if pagemap.written(base, base + len, &mut written).is_err() {
                continue;
            }
            let mut marked = 0;
            {
                let mut st = self.state.lock();
                let Some(region) = st.regions.get_mut(&base) else {
                    continue;
                };
                if region.dying {
                    continue;
                }
                for &(start, end) in &written {
                    let lo = (start.max(base) - base) / PAGE_SIZE;
                    let hi = ((end.min(base + len)) - base) / PAGE_SIZE;
                    for i in lo..hi {
                        let resident = region.pages[i] == PageState::Resident;
                        if resident && region.armed[i] {
                            region.referenced[i] = WRITTEN_REPRIEVES;
                            marked += 1;
                        }
                    }
                }
                for (armed, page) in region.armed.iter_mut().zip(&region.pages) {
                    *armed = *page == PageState::Resident;
                }
            }
            bump(&self.counters.pages_written, marked);
            // A region dropped meanwhile is unregistered: the ioctl fails.
            let _ = self.uffd.write_protect(base as *mut libc::c_void, len);
        }
    }

    fn missing_fault(&self, page: usize, write: bool) {
        bump(&self.counters.faults, 1);
        let mut zero_run = None;
        let (target, around) = {
            let mut st = self.state.lock();
            let limit = self.high_pages as u64;
            let evictions = st.evictions;
            let Some((base, idx, region)) = st.locate(page) else {
                return; // not ours any more (region dropped)
            };
            match region.pages[idx] {
                PageState::Untouched => {
                    // Like an mTHP first-touch fault: the folio-aligned run
                    // of untouched pages around the fault is mapped at once.
                    let folio = self.cfg.evict_folio_pages;
                    let lo = idx - idx % folio;
                    let hi = (lo + folio).min(region.pages.len());
                    let (mut first, mut last) = (idx, idx);
                    while first > lo && region.pages[first - 1] == PageState::Untouched {
                        first -= 1;
                    }
                    while last + 1 < hi && region.pages[last + 1] == PageState::Untouched {
                        last += 1;
                    }
                    for i in first..=last {
                        region.pages[i] = PageState::Resident;
                    }
                    st.lru.extend((first..=last).map(|i| (base, i)));
                    st.add_resident((last - first + 1) as isize);
                    zero_run = Some((base + first * PAGE_SIZE, last - first + 1));
                    (None, Vec::new())
                }
                PageState::Swapped(slot) => {
                    region.pages[idx] = PageState::Loading;
                    if evictions - region.shadow[idx] <= limit {
                        region.active[idx] = true;
                        bump(&self.counters.workingset_refault, 1);
                    }
                    let around = self.fault_around_candidates(region, idx);
                    for &(i, _) in &around {
                        region.pages[i] = PageState::Loading;
                    }
                    (Some((base, idx, slot)), around)
                }
                PageState::Resident => {
                    // Installed by fault-around meanwhile (the page is mapped:
                    // EEXIST), or discarded by the program's own
                    // MADV_DONTNEED (it reads as zeros, as the kernel says).
                    drop(st);
                    self.zero_fill(page, 1);
                    return;
                }
                PageState::Evicting | PageState::Loading => {
                    // Unmapped but not yet published as swapped: never fill
                    // it here; the thread retries once the eviction is done.
                    drop(st);
                    let _ = self.uffd.wake(page as *mut libc::c_void, PAGE_SIZE);
                    return;
                }
            }
        };
        match target {
            None => {
                bump(&self.counters.zero_faults, 1);
                let (start, n) = zero_run.unwrap_or((page, 1));
                if write {
                    // The program is about to write: map zeroed pages of its
                    // own at once, as the kernel's anonymous write fault does,
                    // rather than the zero page and a copy-on-write fault
                    // (with its TLB flush) right after.
                    self.fill_zeroed(start, n);
                } else {
                    self.zero_fill(start, n);
                }
            }
            Some((base, idx, slot)) => self.swap_in(base, idx, slot, &around),
        }
    }

    /// Maps fresh zeroed pages (`UFFDIO_COPY` from a zero buffer) over `n`
    /// pages from `start`; where part of the run is mapped already, page by
    /// page. Wakes the faulting threads either way.
    fn fill_zeroed(&self, start: usize, n: usize) {
        let zeros = &self.zeros[..n * PAGE_SIZE];
        // SAFETY: the source is our zero buffer of `n` pages; the
        // destination lies in a registered region of ours.
        let r = unsafe {
            self.uffd.copy(
                zeros.as_ptr() as *const libc::c_void,
                start as *mut libc::c_void,
                zeros.len(),
                true,
            )
        };
        if r.is_err() {
            for k in 0..n {
                self.install(start + k * PAGE_SIZE, &self.zeros[..PAGE_SIZE]);
            }
        }
    }

    /// Maps zero pages over `n` pages from `start` where nothing is mapped,
    /// and wakes the faulting threads either way.
    fn zero_fill(&self, start: usize, n: usize) {
        let len = n * PAGE_SIZE;
        // SAFETY: the range lies in a registered region of ours.
        let r = unsafe { self.uffd.zeropage(start as *mut libc::c_void, len, true) };
        if r.is_err() {
            // Part of the run is mapped already (EEXIST): fill page by page.
            for k in 0..n {
                let page = (start + k * PAGE_SIZE) as *mut libc::c_void;
                // SAFETY: as above, one page.
                if unsafe { self.uffd.zeropage(page, PAGE_SIZE, true) }.is_err() {
                    let _ = self.uffd.wake(page, PAGE_SIZE);
                }
            }
        }
    }

    /// Swapped neighbours in the page cluster, for fault-around.
    fn fault_around_candidates(&self, region: &RegionData, idx: usize) -> Vec<(usize, u64)> {
        let cluster = 1usize << self.cfg.swap.page_cluster;
        let lo = idx & !(cluster - 1);
        (lo..(lo + cluster).min(region.pages.len()))
            .filter(|&i| i != idx)
            .filter_map(|i| match region.pages[i] {
                PageState::Swapped(s) => Some((i, s)),
                _ => None,
            })
            .collect()
    }

    fn swap_in(&self, base: usize, idx: usize, slot: u64, around: &[(usize, u64)]) {
        bump(&self.counters.swapin_faults, 1);
        let mut buf = vec![0u8; PAGE_SIZE];
        let neighbours: Vec<u64> = around.iter().map(|a| a.1).collect();
        let mut got = Vec::new();
        let mut tries = 0;
        while let Err(e) = self
            .swap
            .swap_in_around(slot, &mut buf, &neighbours, &mut got)
        {
            tries += 1;
            if tries == 3 {
                // Like a swap-in I/O error in the kernel (SIGBUS): the page
                // cannot be produced; never hand out wrong bytes.
                eprintln!(
                    "uzswap: unrecoverable swap-in of {:#x}: {e}",
                    base + idx * PAGE_SIZE
                );
                std::process::abort();
            }
        }
        self.install(base + idx * PAGE_SIZE, &buf);
        let mut installed = vec![idx];
        for (s, data) in got {
            if let Some(&(i, _)) = around.iter().find(|a| a.1 == s) {
                self.install(base + i * PAGE_SIZE, &data);
                installed.push(i);
            }
        }
        bump(&self.counters.around_pages, installed.len() - 1);
        let mut st = self.state.lock();
        let Some(region) = st.regions.get_mut(&base) else {
            return;
        };
        for &i in &installed {
            region.pages[i] = PageState::Resident;
        }
        // Neighbours not handed over are still swapped at their slots.
        for &(i, s) in around {
            if region.pages[i] == PageState::Loading {
                region.pages[i] = PageState::Swapped(s);
            }
        }
        for &i in &installed {
            st.lru.push_back((base, i));
        }
        st.add_resident(installed.len() as isize);
    }

    fn install(&self, page: usize, data: &[u8]) {
        // SAFETY: `data` is a page-sized buffer and `page` a page of a
        // registered region; UFFDIO_COPY copies it in and wakes waiters.
        let r = unsafe {
            self.uffd.copy(
                data.as_ptr() as *const libc::c_void,
                page as *mut libc::c_void,
                PAGE_SIZE,
                true,
            )
        };
        if r.is_err() {
            let _ = self.uffd.wake(page as *mut libc::c_void, PAGE_SIZE);
        }
    }

    fn maybe_reclaim(&self) {
        let charged = self.state.lock().charged();
        if charged > self.high_pages {
            let (flag, cv) = &self.wake_reclaim;
            *flag.lock() = true;
            cv.notify_one();
        }
        // Far over the limit: reclaim here until back under it (direct
        // reclaim). Faults wait meanwhile: memory.high's throttling.
        let ceiling = self.high_pages + self.high_pages / 4 + self.cfg.reclaim_batch;
        while self.state.lock().charged() > ceiling {
            bump(&self.counters.direct_reclaims, 1);
            if self.evict(self.cfg.reclaim_batch) == 0 {
                break;
            }
        }
    }

    /// Clears the shared limit's slots of dead processes, every 100 ms.
    fn sweep_shared(&self) {
        let Some(shared) = self.state.lock().shared.clone() else {
            return;
        };
        let mut last = self.last_sweep.lock();
        if last.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
            *last = Some(Instant::now());
            shared.sweep();
        }
    }

    fn reclaim_loop(&self) {
        while !self.stop.load(Ordering::Acquire) {
            {
                let (flag, cv) = &self.wake_reclaim;
                let mut f = flag.lock();
                if !*f {
                    cv.wait_for(&mut f, Duration::from_millis(20));
                }
                *f = false;
            }
            self.sweep_shared();
            while !self.stop.load(Ordering::Acquire)
                && self.state.lock().charged() > self.high_pages
            {
                if self.evict(self.cfg.reclaim_batch) == 0 {
                    break;
                }
            }
        }
    }

    /// Picks up to `n` victims, oldest first; an active page (refaulted in
    /// the workingset) gets one more round.
    fn pick_victims(&self, n: usize) -> Vec<(usize, usize)> {
        let mut st = self.state.lock();
        let mut victims = Vec::new();
        let mut budget = st.lru.len();
        while victims.len() < n && budget > 0 {
            budget -= 1;
            let Some((base, idx)) = st.lru.pop_front() else {
                break;
            };
            let Some(region) = st.regions.get_mut(&base) else {
                continue;
            };
            if region.dying || region.pages[idx] != PageState::Resident {
                continue;
            }
            if std::mem::take(&mut region.active[idx]) {
                bump(&self.counters.workingset_activate, 1);
                st.lru.push_back((base, idx));
                continue;
            }
            if region.referenced[idx] > 0 {
                region.referenced[idx] -= 1;
                bump(&self.counters.written_reprieved, 1);
                st.lru.push_back((base, idx));
                continue;
            }
            region.pages[idx] = PageState::Evicting;
            victims.push((base, idx));
        }
        victims
    }

    fn evict(&self, n: usize) -> usize {
        self.maybe_age();
        let mut victims = self.pick_victims(n);
        victims.sort_unstable();
        let mut done = 0;
        let mut i = 0;
        while i < victims.len() {
            // A run of neighbouring pages of one region, evicted as a folio.
            let (base, first) = victims[i];
            let mut len = 1;
            while i + len < victims.len()
                && len < self.cfg.evict_folio_pages
                && victims[i + len] == (base, first + len)
            {
                len += 1;
            }
            done += self.evict_run(base, first, len);
            i += len;
        }
        done
    }

    fn evict_run(&self, base: usize, first: usize, len: usize) -> usize {
        let addr = base + first * PAGE_SIZE;
        let bytes = len * PAGE_SIZE;
        let ptr = addr as *mut libc::c_void;
        if self.uffd.write_protect(ptr, bytes).is_err() {
            self.undo_evict(base, first, len);
            return 0;
        }
        let mut copy = vec![0u8; bytes];
        // SAFETY: the run is mapped (resident, our region) and write
        // protected: no thread changes its bytes while we copy them.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, copy.as_mut_ptr(), bytes) };
        let pages: Vec<&[u8]> = copy.chunks_exact(PAGE_SIZE).collect();
        let stored =
            self.swap
                .alloc_slots(len)
                .and_then(|slots| match self.swap.swap_out(&pages, &slots) {
                    Ok(_) => Ok(slots),
                    Err(e) => {
                        for &s in &slots {
                            let _ = self.swap.free(s);
                        }
                        Err(e)
                    }
                });
        let Ok(slots) = stored else {
            bump(&self.counters.evict_failures, len);
            let _ = self.uffd.remove_write_protection(ptr, bytes, true);
            self.undo_evict(base, first, len);
            return 0;
        };
        // Unmap, un-protect (blocked writers retry and find `Evicting`, so
        // they are told to retry again), then publish `Swapped`: the handler
        // never sees `Swapped` for a mapped page, and every syscall on the
        // run happens while its pages still show an eviction in flight.
        // SAFETY: the run belongs to our mapping; its contents are stored.
        unsafe { libc::madvise(ptr, bytes, libc::MADV_DONTNEED) };
        let _ = self.uffd.remove_write_protection(ptr, bytes, true);
        {
            let mut st = self.state.lock();
            let clock = st.evictions;
            let region = st
                .regions
                .get_mut(&base)
                .expect("a region waits for its evictions before it goes");
            for (k, &slot) in slots.iter().enumerate() {
                region.pages[first + k] = PageState::Swapped(slot);
                region.shadow[first + k] = clock;
                region.armed[first + k] = false;
                region.referenced[first + k] = 0;
            }
            st.add_resident(-(len as isize));
            st.evictions += len as u64;
        }
        bump(&self.counters.evicted_pages, len);
        len
    }

    fn undo_evict(&self, base: usize, first: usize, len: usize) {
        let mut st = self.state.lock();
        if let Some(region) = st.regions.get_mut(&base) {
            for i in first..first + len {
                region.pages[i] = PageState::Resident;
            }
        }
        for i in first..first + len {
            st.lru.push_back((base, i));
        }
    }
}
