//! The runtime: settings, the state every thread shares, the driver that
//! runs the protocol's operations against the real environment, and the
//! runtime's threads.

use crate::counters::RuntimeStats;
use crate::env::{Live, RealEnv};
use crate::pagemap::PagemapScan;
use crate::protocol::{self, Cx, Fatal, State, Step, Tunables, PAGE};
use crate::shared::SharedLimit;
use crate::split::PoolSplit;
use crate::uffd::FaultMode;
use crate::{fatal, RuntimeError};
use common::rate_limit::RateLimit;
use common::wakeup::Wakeup;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use zswap::Swap;

/// Runtime settings.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub swap: zswap::Config,
    /// Bytes above which pages are reclaimed (`memory.high`): resident
    /// pages and the swap store's pool and entries.
    pub limit_bytes: usize,
    /// Charge the swap store's pool and entries to the limit (cgroup v2's
    /// memcg does); `false`: the limit counts resident pages only and the
    /// pool is bounded by its own limit alone (cgroup v1's memcg, which
    /// does not charge zswap).
    pub charge_pool: bool,
    /// Pages evicted per reclaim step.
    pub reclaim_batch: usize,
    /// Longest run of neighbouring pages evicted as one folio (and mapped
    /// by one first-touch fault).
    pub evict_folio_pages: usize,
    /// Folio swap-in: a swap-in fault that streams (next to a recent one's
    /// pages) brings the rest of
    /// its folio from the pool in the same fault (`swapin.rs`).
    pub folio_swapin: bool,
    /// Eviction unmaps its stored runs in groups of at least this many
    /// pages with one `process_madvise` (one TLB flush per group); the
    /// writers of a group's pages wait for the whole group. 1: each run
    /// alone.
    pub unmap_group_pages: usize,
    /// Track writes to resident pages (write-protect + `PAGEMAP_SCAN`) so
    /// that reclaim spares recently written pages, where the kernel has
    /// `PAGEMAP_SCAN` (6.7+).
    pub track_writes: bool,
    /// Least time between two aging passes.
    pub aging_interval: Duration,
    /// A limit file shared with other processes ([`crate::shared`]): the
    /// limit applies to their resident pages and ours together.
    pub shared_limit_file: Option<std::path::PathBuf>,
    /// Open the userfaultfd in user-mode-only mode even where kernel
    /// faults could be handled (to test the syscall guard's mode as root).
    pub user_mode_only: bool,
    /// Serve faults in the faulting thread (`UFFD_FEATURE_SIGBUS`, its
    /// SIGBUS handler: `in_thread.rs`) rather than in a handler thread.
    /// Kernel accesses then need the syscall guard, as in user-mode-only
    /// mode.
    pub serve_faults_in_thread: bool,
    /// With faults served in-thread: a fault that finds the charge over
    /// the limit evicts down to the low watermark in the faulting thread
    /// (direct reclaim) before the reclaim thread is asked. Less CPU (no
    /// inter-processor TLB flushes in a single-threaded program), more
    /// elapsed time (eviction no longer overlaps the program): off by
    /// default.
    pub direct_reclaim: bool,
    /// With the pool charged and writeback on: the pool's share of the
    /// limit follows refaults (`split.rs`), between an eighth of the limit
    /// and the pool limit, starting at half the limit; `false`: the pool
    /// limit is its share.
    pub adaptive_pool: bool,
    /// Tests of the fatal path: a failure to inject.
    #[doc(hidden)]
    pub inject_failure: Option<InjectFailure>,
}

/// A failure injected to test the fatal path.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectFailure {
    /// The fault handler panics at its first event.
    FaultHandlerPanic,
    /// The reclaimer panics when it first has work.
    ReclaimerPanic,
    /// The reclaimer reads a region page it does not own when it first has
    /// work (invariant 1 broken: the handler must end the program).
    RuntimeThreadFault,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            swap: zswap::Config::default(),
            limit_bytes: 512 << 20,
            charge_pool: true,
            reclaim_batch: 64,
            evict_folio_pages: 16,
            folio_swapin: true,
            unmap_group_pages: 16,
            track_writes: true,
            aging_interval: Duration::from_millis(100),
            shared_limit_file: None,
            user_mode_only: false,
            serve_faults_in_thread: false,
            direct_reclaim: false,
            adaptive_pool: false,
            inject_failure: None,
        }
    }
}

/// Runtime threads register their thread ids here, so that the fault
/// handler can tell a runtime thread's fault (an invariant broken) from the
/// program's.
const MAX_RUNTIME_THREADS: usize = 8;

/// What every runtime thread shares.
pub(crate) struct Inner {
    pub state: Mutex<State>,
    pub changed: Condvar,
    pub env: RealEnv,
    pub tun: Tunables,
    pub cfg: RuntimeConfig,
    pub limit_pages: usize,
    pub stop: AtomicBool,
    /// The reclaimer's last pass evicted nothing (the store refuses, or
    /// nothing is evictable): throttled faults must not wait for it.
    pub reclaim_stalled: AtomicBool,
    runtime_tids: [AtomicI32; MAX_RUNTIME_THREADS],
    /// Aging passes, at most every `cfg.aging_interval`, and shared-limit
    /// sweeps, at most every 100 ms (atomics: nothing a fork could copy
    /// locked).
    pub aging: RateLimit,
    pub sweep: RateLimit,
    /// Pool compactions by the reclaimer, at most every
    /// [`crate::reclaim::COMPACT_INTERVAL`].
    pub compaction: RateLimit,
    /// Fork generations of this process's swap file so far.
    pub generations: AtomicU64,
    /// Whether aging passes pay (`aging.rs`); taken with `try_lock` only,
    /// by the caller that the `aging` rate limit let through.
    pub governor: std::sync::Mutex<crate::aging::Governor>,
}

impl Inner {
    /// Runs one protocol operation to its end: steps it, waits when it
    /// asks to, and ends the program on a fatal error.
    pub fn drive<T>(&self, mut step: impl FnMut(&Cx<RealEnv>) -> Result<Step<T>, Fatal>) -> T {
        let cx = Cx {
            state: &self.state,
            changed: &self.changed,
            env: &self.env,
            tun: &self.tun,
        };
        loop {
            match step(&cx) {
                Ok(Step::Next) => {}
                Ok(Step::Wait(seen)) => {
                    let mut st = self.lock();
                    while st.changes == seen {
                        st.sleepers += 1;
                        st = self
                            .changed
                            .wait(st)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        st.sleepers -= 1;
                    }
                }
                Ok(Step::Done(v)) => {
                    self.publish_charge();
                    return v;
                }
                Err(e) => fatal::die(&e.to_string()),
            }
        }
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        protocol::lock(&self.state)
    }

    /// The limit in force, in pages: the configured one, or lower where a
    /// controller of the shared limit set it lower (`--max-slowdown`).
    pub(crate) fn limit(&self) -> usize {
        match self
            .env
            .live()
            .shared
            .as_ref()
            .and_then(|s| s.controlled_limit())
        {
            Some(c) => c.min(self.limit_pages),
            None => self.limit_pages,
        }
    }

    /// Adds `waited` to the time the program's threads waited on uzswap
    /// (fault service, throttling, pins): the stall a `--max-slowdown`
    /// controller keeps under its target. Lock-free.
    pub(crate) fn note_stall(&self, waited: Duration) {
        let ns = waited.as_nanos() as u64;
        self.env.counters.stall_ns.fetch_add(ns, Ordering::Relaxed);
        if let Some(s) = &self.env.live().shared {
            s.add_stall(ns);
        }
    }

    /// Publishes this process's charge to a shared limit.
    pub(crate) fn publish_charge(&self) {
        if let Some(s) = &self.env.live().shared {
            s.publish(self.own_charge());
        }
    }

    /// The pages this process's memory costs, as a memcg charges them:
    /// resident region pages, and the swap store's pool and entries
    /// ([`zswap::Swap::charged_pages`]). The page-state tables are not
    /// counted: they cover every page of a region, touched or not (a
    /// program's 700 MB reservation has a 5.5 MB table), where the kernel's
    /// page tables cover touched memory only; charging them would leave a
    /// small limit nothing for resident pages. `table_bytes` reports them.
    pub fn own_charge(&self) -> usize {
        let resident = self.lock().resident;
        if self.cfg.charge_pool {
            resident + self.env.live().own.charged_pages()
        } else {
            resident
        }
    }

    /// Bytes of the page-state tables of all regions (for reports: it
    /// walks the regions).
    pub fn table_bytes(&self) -> usize {
        let pages: usize = self.lock().regions.values().map(|r| r.pages.len()).sum();
        pages * std::mem::size_of::<protocol::Page>()
    }

    /// The pages the limit applies to: ours, or all processes' of a shared
    /// limit.
    pub fn charged(&self) -> usize {
        match &self.env.live().shared {
            Some(s) => s.total(),
            None => self.own_charge(),
        }
    }

    /// Records the calling thread as a runtime thread.
    pub fn register_runtime_thread(&self) {
        self.claim_tid_slot(crate::sys::gettid());
    }

    /// Takes a free slot of `runtime_tids` for `tid`; `None` if all are
    /// taken.
    fn claim_tid_slot(&self, tid: i32) -> Option<&AtomicI32> {
        self.runtime_tids.iter().find(|slot| {
            slot.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })
    }

    /// Runs `f` (an eviction) with the calling thread counted as a runtime
    /// thread: the evictor may fault on its own victim (discarded behind
    /// the runtime's back), and the handler serves that fault with zeros
    /// only for a runtime thread; any other thread it would make wait for
    /// the eviction, that is, for itself.
    pub fn as_runtime_thread<T>(&self, f: impl FnOnce() -> T) -> T {
        let tid = crate::sys::gettid();
        if self.is_runtime_thread(tid) {
            return f();
        }
        let slot = loop {
            match self.claim_tid_slot(tid) {
                Some(slot) => break slot,
                // Every slot taken by other callers' evictions: wait for one.
                None => std::thread::yield_now(),
            }
        };
        struct Unregister<'a>(&'a AtomicI32);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                self.0.store(0, Ordering::Release);
            }
        }
        let _unregister = Unregister(slot);
        f()
    }

    /// Forgets the runtime threads (a forked child: they are the parent's).
    pub fn forget_runtime_threads(&self) {
        for slot in &self.runtime_tids {
            slot.store(0, Ordering::Release);
        }
    }

    pub fn is_runtime_thread(&self, tid: i32) -> bool {
        self.runtime_tids
            .iter()
            .any(|t| t.load(Ordering::Acquire) == tid)
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Starts the fault handler and the reclaimer.
    pub fn start_threads(self: &Arc<Self>) -> std::io::Result<()> {
        let mut threads = self
            .env
            .live()
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.env.mode != FaultMode::InThread {
            let i = self.clone();
            threads.push(fatal::spawn("uzswap/fault", move || i.fault_loop())?);
        }
        let i = self.clone();
        threads.push(fatal::spawn("uzswap/reclaim", move || i.reclaim_loop())?);
        Ok(())
    }

    /// Stops and joins the runtime's threads.
    pub fn stop_threads(&self) {
        self.stop.store(true, Ordering::Release);
        let live = self.env.live();
        live.reclaim_wake.kick();
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd wakes the handler's poll.
        unsafe { libc::write(live.stop_fd, &one as *const u64 as *const libc::c_void, 8) };
        let threads: Vec<JoinHandle<()>> = live
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
            .collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Makes a process's [`Live`] parts: the userfaultfd (in `mode`'s strength
/// or the strongest allowed), a store, the pagemap handle, the stop
/// eventfd, a shared-limit slot.
pub(crate) fn new_live(
    cfg: &RuntimeConfig,
    swap: Arc<Swap>,
    user_mode_only: bool,
    in_thread: bool,
) -> Result<(Live, FaultMode), RuntimeError> {
    let (uffd, mode) = if in_thread {
        (crate::uffd::open_in_thread()?, FaultMode::InThread)
    } else {
        crate::uffd::open(user_mode_only)?
    };
    let shared =
        match &cfg.shared_limit_file {
            Some(path) => Some(SharedLimit::open(path).map_err(|e| {
                RuntimeError::Config(format!("shared limit {}: {e}", path.display()))
            })?),
            None => None,
        };
    // Aging (where `track_writes`) and clean pages' kept slots both need it.
    let pagemap = PagemapScan::open();
    // SAFETY: eventfd(2) with valid flags; the result is checked.
    let stop_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if stop_fd < 0 {
        return Err(RuntimeError::Thread(std::io::Error::last_os_error()));
    }
    let live = Live {
        uffd,
        own: swap,
        inherited: Vec::new(),
        pagemap,
        stop_fd,
        shared,
        reclaim_wake: Wakeup::default(),
        threads: std::sync::Mutex::new(Vec::new()),
        generations: std::sync::Mutex::new(Vec::new()),
    };
    Ok((live, mode))
}

/// The store settings a runtime uses: the shrinker runs on the reclaimer,
/// not a thread of the store's own (every thread that touches a store must
/// be one the runtime can stop at fork).
/// The adaptive split of `cfg`'s limit, where the pool is charged to it
/// and can be written back.
fn pool_split(cfg: &RuntimeConfig) -> Option<PoolSplit> {
    let adaptive = cfg.adaptive_pool && cfg.charge_pool && cfg.swap.writeback;
    adaptive.then(|| PoolSplit::new(cfg.limit_bytes / PAGE, cfg.swap.max_pool_bytes() / PAGE))
}

pub(crate) fn store_config(cfg: &zswap::Config) -> zswap::Config {
    zswap::Config {
        shrinker_thread: false,
        ..cfg.clone()
    }
}

/// Pages a process's memory through uzswap.
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("limit_pages", &self.inner.limit_pages)
            .field("mode", &self.inner.env.mode)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Opens a userfaultfd, the swap store, and starts the fault handler and
    /// reclaim threads.
    pub fn new(cfg: RuntimeConfig) -> Result<Self, RuntimeError> {
        let swap = Swap::new(store_config(&cfg.swap))?;
        Self::with_store(cfg, swap)
    }

    /// A runtime over a given swap store (one with fault injection, say).
    /// Its shrinker runs on the runtime's reclaimer if the store has no
    /// thread of its own for it.
    pub fn with_store(cfg: RuntimeConfig, swap: Arc<Swap>) -> Result<Self, RuntimeError> {
        if cfg.reclaim_batch == 0
            || cfg.evict_folio_pages == 0
            || cfg.unmap_group_pages == 0
            || cfg.limit_bytes < PAGE
        {
            return Err(RuntimeError::Config(
                "limit_bytes >= 4096, reclaim_batch, evict_folio_pages and unmap_group_pages >= 1"
                    .into(),
            ));
        }
        crate::fatal::install_panic_hook();
        crate::fork::register_handlers();
        crate::arena::global()?;
        if cfg.serve_faults_in_thread {
            crate::in_thread::install_handler().map_err(RuntimeError::Thread)?;
        }
        let (live, mode) = new_live(&cfg, swap, cfg.user_mode_only, cfg.serve_faults_in_thread)?;
        let limit_pages = cfg.limit_bytes / PAGE;
        let aging = RateLimit::new(cfg.aging_interval);
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            env: RealEnv::new(
                live,
                mode,
                cfg.evict_folio_pages,
                cfg.folio_swapin,
                pool_split(&cfg),
            ),
            tun: Tunables {
                folio_pages: cfg.evict_folio_pages,
                page_cluster: cfg.swap.page_cluster,
                workingset_pages: limit_pages as u64,
                unmap_group_pages: cfg.unmap_group_pages,
                #[cfg(test)]
                flaw: None,
            },
            limit_pages,
            cfg,
            stop: AtomicBool::new(false),
            reclaim_stalled: AtomicBool::new(false),
            runtime_tids: Default::default(),
            aging,
            sweep: RateLimit::new(Duration::from_millis(100)),
            compaction: RateLimit::new(crate::reclaim::COMPACT_INTERVAL),
            governor: std::sync::Mutex::new(crate::aging::Governor::new(Default::default())),
            generations: AtomicU64::new(0),
        });
        let rt = Runtime { inner };
        if mode == FaultMode::InThread {
            crate::in_thread::enlist(&rt.inner)?;
        }
        if let Err(e) = rt.inner.start_threads() {
            rt.inner.stop_threads();
            return Err(RuntimeError::Thread(e));
        }
        crate::fork::track(&rt.inner);
        Ok(rt)
    }

    /// The swap store's counters.
    pub fn swap_stats(&self) -> zswap::Stats {
        let _gate = self
            .inner
            .env
            .gate
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.inner.env.live().own.stats()
    }

    /// The runtime's counters.
    pub fn stats(&self) -> RuntimeStats {
        // Apart: a guard in the literal would live to its end, and
        // `own_charge` takes the state lock too.
        let (resident, pinned) = {
            let st = self.inner.lock();
            (st.resident, st.pinned_pages())
        };
        let charged = self.inner.own_charge();
        let table = self.inner.table_bytes();
        RuntimeStats {
            resident_pages: resident as u64,
            pinned_pages: pinned as u64,
            charged_pages: charged as u64,
            table_bytes: table as u64,
            limit_pages: self.inner.limit() as u64,
            pool_share_pages: self
                .inner
                .env
                .split
                .as_ref()
                .map_or(self.inner.cfg.swap.max_pool_bytes() / PAGE, |s| {
                    s.target(self.inner.limit())
                }) as u64,
            write_tracking: self.inner.tracks_writes(),
            kernel_faults: self.inner.env.mode == FaultMode::KernelFaults,
            ..self.inner.env.counters.snapshot()
        }
    }

    /// Which faults the userfaultfd handles.
    pub fn fault_mode(&self) -> FaultMode {
        self.inner.env.mode
    }

    /// Stops counting this process's pages in a shared limit (at exit).
    pub fn leave_shared_limit(&self) {
        if let Some(s) = &self.inner.env.live().shared {
            s.leave();
        }
    }

    /// Pages swapped out now, in the pool or on the file (each holds a
    /// swap slot): what [`Runtime::bring_back_all`] would make resident.
    pub fn swapped_pages(&self) -> usize {
        let dev = self.inner.env.live().own.device();
        dev.nr_slots() - dev.free_slots()
    }

    /// Brings every swapped page of every region back and hands the
    /// regions over as plain memory (unregistered, forgotten): what a core
    /// dump needs, since the kernel dumps a missing page as zeros. The
    /// program's region handles stay valid memory; the runtime pages
    /// nothing more. `after_each` runs as each region is done.
    pub fn bring_back_all(&self, after_each: &mut dyn FnMut()) {
        self.inner.release_all_regions_with(after_each);
    }

    /// Evicts up to `n` of the oldest resident pages now; returns how many.
    pub fn reclaim(&self, n: usize) -> usize {
        self.inner.as_runtime_thread(|| self.inner.evict(n))
    }

    /// Runs one aging pass now (where writes are tracked), whatever the
    /// interval: for tests that must not depend on timing.
    #[doc(hidden)]
    pub fn age_now(&self) {
        self.inner.age();
    }

    /// Live LRU records naming a region at `base`, and all records (live
    /// or dead): for tests of the LRU's invariant.
    #[doc(hidden)]
    pub fn lru_records(&self, base: usize) -> (usize, usize) {
        let st = self.inner.lock();
        (st.live_lru_records_of(base), st.lru_records())
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Regions may outlive the runtime: bring their pages back and hand
        // them over as plain memory, so no access ever waits for a handler
        // that is gone.
        self.inner.release_all_regions();
        self.inner.stop_threads();
        crate::in_thread::leave(&self.inner);
        crate::fork::untrack(&self.inner);
        // SAFETY: our eventfd; no thread polls it any more.
        unsafe { libc::close(self.inner.env.live().stop_fd) };
    }
}
