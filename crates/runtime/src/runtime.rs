//! [`Runtime`], the public handle of a process's pager: it opens the
//! userfaultfd and the store, starts the runtime's threads, and offers
//! regions, pins, stats and the end of paging. The pager it drives is
//! `pager.rs`; its settings are `config.rs`.

use crate::config::RuntimeConfig;
use crate::counters::RuntimeStats;
use crate::env::RealEnv;
use crate::pager::{new_live, store_config, Pager};
use crate::protocol::{State, Tunables, PAGE};
use crate::uffd::FaultMode;
use crate::RuntimeError;
use common::rate_limit::RateLimit;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// The ages of [`RuntimeStats`]' cold bytes: 1 s, 10 s and 60 s.
const COLD_AGES_MS: [u32; 3] = [1_000, 10_000, 60_000];
use std::time::Duration;
use zswap::Swap;

/// Pages a process's memory through uzswap.
pub struct Runtime {
    pub(crate) inner: Arc<Pager>,
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
        let cfg_direct = cfg.direct_reclaim;
        let inner = Arc::new(Pager {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            env: RealEnv::new(live, mode, &cfg),
            tun: Tunables {
                folio_pages: cfg.evict_folio_pages,
                page_cluster: cfg.swap.page_cluster,
                workingset_pages: limit_pages as u64,
                probation_pages: cfg.probation_pages as u64,
                unmap_group_pages: cfg.unmap_group_pages,
                faults_block: mode != FaultMode::InThread,
                #[cfg(test)]
                flaw: None,
            },
            limit_pages,
            cfg,
            stop: AtomicBool::new(false),
            reclaim_stalled: AtomicBool::new(false),
            runtime_tids: Default::default(),
            owner_pid: std::sync::atomic::AtomicU32::new(std::process::id()),
            aging,
            calls_at_last_pass: AtomicU64::new(0),
            aging_on: AtomicBool::new(false),
            sweep: RateLimit::new(Duration::from_millis(100)),
            compaction: RateLimit::new(crate::reclaim::COMPACT_INTERVAL),
            aging_governor: std::sync::Mutex::new(crate::aging::AgingGovernor::new(
                Default::default(),
            )),
            generations: AtomicU64::new(0),
            recorded_limit: std::sync::atomic::AtomicUsize::new(0),
            born: std::time::Instant::now(),
            last_fault_tid: AtomicI32::new(0),
            direct_now: AtomicBool::new(cfg_direct),
            sole_probe: crate::sole::SoleProbe::default(),
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
        let (resident, pinned, cold) = {
            let mut st = self.inner.lock();
            st.advance_clock(self.inner.age_clock_now());
            (st.resident, st.pinned_pages(), st.idle_pages(&COLD_AGES_MS))
        };
        let charged = self.inner.own_charge();
        let table = self.inner.table_bytes();
        RuntimeStats {
            resident_pages: resident as u64,
            pinned_pages: pinned as u64,
            charged_pages: charged as u64,
            table_bytes: table as u64,
            cold_1s_bytes: (cold[0] * PAGE) as u64,
            cold_10s_bytes: (cold[1] * PAGE) as u64,
            cold_60s_bytes: (cold[2] * PAGE) as u64,
            limit_pages: self.inner.limit() as u64,
            pool_share_pages: self
                .inner
                .env
                .store_side
                .pool_share(self.inner.limit())
                .unwrap_or(self.inner.cfg.swap.max_pool_bytes() / PAGE)
                as u64,
            write_tracking: self.inner.tracks_writes(),
            direct_reclaim: self.inner.direct_now.load(Ordering::Relaxed),
            kernel_faults: self.inner.env.mode == FaultMode::KernelFaults,
            ..self.inner.env.counters.snapshot()
        }
    }

    /// Which faults the userfaultfd handles.
    pub fn fault_mode(&self) -> FaultMode {
        self.inner.env.mode
    }

    /// Writes what the recorder (`--record`) still holds to its file (at
    /// exit: the reclaimer writes it every 20 ms while the program runs).
    pub fn flush_trace(&self) {
        self.inner.drain_trace(true);
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
        self.inner.swapped_pages()
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
        self.inner.drain_trace(true);
        crate::in_thread::leave(&self.inner);
        crate::fork::untrack(&self.inner);
        // SAFETY: our eventfd; no thread polls it any more.
        unsafe { libc::close(self.inner.env.live().stop_fd) };
    }
}
