//! The runtime's own paging replayed: the protocol's operations (first
//! touch, swap-in, write-protect fault, eviction, aging, release, the
//! program's discard), the very functions `uzswap run` steps, driven
//! against a replay environment instead of the kernel; behind it the real
//! swap store (zswap, zsmalloc, the swap file with its readahead, clean
//! pages' kept slots) and the runtime's store-side policies
//! ([`runtime::StoreSide`]: folio swap-in, the clean governor, the budget
//! split, pool admission), given pages that compress as the run's did
//! ([`crate::pages`]).
//!
//! What the replay keeps of the run: the page-state machine and its LRU
//! (reclaim order, workingset activation, write-tracking reprieves), folio
//! first touch, batch eviction from the limit down to the low watermark,
//! the pool's charge and its writeback to the file where it passes its
//! share, readahead from the file. What it leaves out: timing (reclaim
//! runs synchronously after the access that passed the limit, where the
//! run's reclaimer ran beside the program, and throttled faults past a
//! ceiling), measured costs (the budget split weighs a pool load and a
//! file load at fixed costs: [`POOL_LOAD_NS`], [`FILE_LOAD_NS`]), and
//! writes to resident pages, which the trace does not see: a swap-in
//! keeps its page clean only where the run's did (and saw it written if
//! it was).
//! Every page read back is checked against what was stored.

use crate::pages::contents;
use crate::workload::{Access, Step as WStep, Workload, PAGE};
use crate::{Limit, Outcome};
use runtime::protocol::{
    self, Age, Cx, Env, Event, Evict, Fatal, KernelError, Loaded, MissingFault, PageState,
    ProgramDiscard, Release, Slot, State, Step, StoreError, StoreId, SwapinFault, Tunables,
    WpFault,
};
use runtime::{LoadContext, RuntimeConfig, StoreSide};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use zswap::{Readahead, Source, Swap};

/// The runtime's settings a replay follows (`uzswap run`'s defaults).
#[derive(Clone, Debug)]
pub struct ProtocolConfig {
    /// Pages of a folio: first touch maps the folio-aligned run of
    /// untouched pages; eviction takes runs of up to this many.
    pub folio_pages: usize,
    /// Pages a reclaim batch evicts.
    pub reclaim_batch: usize,
    pub unmap_group_pages: usize,
    pub page_cluster: u32,
    /// The pool's pages count in the limit.
    pub charge_pool: bool,
    /// Replay the recorded aging passes (write tracking's reprieves).
    pub aging: bool,
    /// A swap-in fault that streams brings its folio (the runtime's
    /// `FolioSwapin` rule).
    pub folio_swapin: bool,
    /// Swap-in readahead (seed 002): none for pooled pages (the default),
    /// always, or from the file only with fault-around.
    pub readahead: Readahead,
    /// Where the replay's swap file goes (a temporary file, removed).
    pub swapfile_dir: std::path::PathBuf,
    /// The pool's share of a charged limit is fixed at half of it
    /// (`uzswap run --fixed-pool-split`), not adaptive.
    pub fixed_pool_split: bool,
    /// Store the run's sampled pages with this compressor (a comparison of
    /// compressors on the program's data); `None`: pages synthesized to
    /// the recorded lengths, stored with lz4 ([`crate::pages`]).
    pub compressor: Option<compress::Algorithm>,
}

impl Default for ProtocolConfig {
    fn default() -> Self {
        ProtocolConfig {
            folio_pages: 16,
            reclaim_batch: 64,
            unmap_group_pages: 16,
            page_cluster: 3,
            charge_pool: true,
            aging: true,
            folio_swapin: true,
            readahead: Readahead::BypassZswap,
            swapfile_dir: std::env::temp_dir(),
            fixed_pool_split: false,
            compressor: None,
        }
    }
}

/// Why the protocol's replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the replay's swap store: {0}")]
    Store(#[from] zswap::ZswapError),
    #[error("the protocol failed: {0}")]
    Protocol(#[from] Fatal),
    #[error("an operation waited for another, which a sequential replay never runs")]
    Waited,
    #[error("page {id} read back from the store differs from the page stored")]
    Corrupt { id: u32 },
    #[error("the trace holds no page samples to compare compressors on (nothing was stored in the pool, or it was recorded by an older uzswap)")]
    NoSamples,
}

/// The replay's stand-in for the kernel (every call succeeds; a page's
/// bytes are synthesized, never mapped), over the real store.
struct ReplayEnv<'w> {
    w: &'w Workload,
    /// Pages are the run's samples, not synthesized.
    sampled: bool,
    swap: Arc<Swap>,
    side: StoreSide,
    /// Limit in force, pages.
    limit: Cell<usize>,
    /// The run left the page of the access being replayed clean at least
    /// once.
    run_kept_clean: Cell<bool>,
    inner: RefCell<EnvState>,
}

struct EnvState {
    /// Slot → the page stored there (to check what comes back).
    slots: HashMap<Slot, u32>,
    out: Outcome,
    kept_clean: u64,
    clean_written: u64,
    /// A store error inside a step: reported after it.
    failed: Option<ReplayError>,
    page: Vec<u8>,
    check: Vec<u8>,
}

impl ReplayEnv<'_> {
    fn fail(&self, e: ReplayError) {
        self.inner.borrow_mut().failed.get_or_insert(e);
    }

    /// Checks the bytes that came back for `slot` and forgets the slot
    /// (unless `kept`).
    fn came_back(&self, slot: Slot, bytes: &[u8], kept: bool) {
        let mut s = self.inner.borrow_mut();
        let id = match kept {
            true => s.slots.get(&slot).copied(),
            false => s.slots.remove(&slot),
        };
        let Some(id) = id else { return };
        let mut check = std::mem::take(&mut s.check);
        check.resize(PAGE, 0);
        contents(self.w, id, self.sampled, &mut check);
        if check != bytes {
            s.failed.get_or_insert(ReplayError::Corrupt { id });
        }
        s.check = check;
    }
}

impl Env for ReplayEnv<'_> {
    type Buf = ();

    fn map_zeros(&self, _: usize, _: usize, _: bool, _: bool) -> Result<(), KernelError> {
        Ok(())
    }
    fn map_zeros_protected(&self, _: usize) -> Result<(), KernelError> {
        Ok(())
    }
    fn map(&self, _: usize, _: &(), _: bool, _: bool) -> Result<(), KernelError> {
        Ok(())
    }
    fn wake(&self, _: usize, _: usize) -> Result<(), KernelError> {
        Ok(())
    }
    fn protect(&self, _: usize, _: usize) -> Result<(), KernelError> {
        Ok(())
    }
    fn unprotect(&self, _: usize, _: usize, _: bool) -> Result<(), KernelError> {
        Ok(())
    }
    fn discard(&self, _: usize, _: usize) -> Result<(), KernelError> {
        Ok(())
    }
    /// Every write to a protected page comes as a write-protect fault in
    /// the trace and is replayed as one: none is found by a scan.
    fn written(&self, _: usize, _: usize, _: &mut Vec<(usize, usize)>) -> Result<(), KernelError> {
        Ok(())
    }
    /// A clean page is written only through a write-protect fault, which
    /// makes it resident first: one still `Clean` is still protected.
    fn still_protected(&self, _: usize, _: usize) -> Result<bool, KernelError> {
        Ok(true)
    }

    fn store_run(&self, addr: usize, pages: usize) -> Result<Vec<Slot>, StoreError> {
        let slots = self
            .swap
            .alloc_slots(pages)
            .map_err(|e| StoreError(e.to_string()))?;
        let mut s = self.inner.borrow_mut();
        let mut bytes = std::mem::take(&mut s.page);
        bytes.resize(pages * PAGE, 0);
        for (k, chunk) in bytes.chunks_exact_mut(PAGE).enumerate() {
            match self.w.ids.get(&(addr + k * PAGE)) {
                Some(&id) => {
                    contents(self.w, id, self.sampled, chunk);
                    s.slots.insert(slots[k], id);
                }
                // A page of a folio first touch the trace never saw
                // touched: zeros.
                None => chunk.fill(0),
            }
        }
        let run: Vec<&[u8]> = bytes.chunks_exact(PAGE).collect();
        let stored = self.side.store(&self.swap, &run, &slots);
        drop(run);
        s.page = bytes;
        match stored {
            Ok(report) => {
                s.out.stored_bytes += report.compressed_bytes as u64;
                Ok(slots)
            }
            Err(e) => {
                for slot in &slots {
                    s.slots.remove(slot);
                    let _ = self.swap.free(*slot);
                }
                Err(StoreError(e.to_string()))
            }
        }
    }

    fn load(
        &self,
        _store: StoreId,
        slot: Slot,
        _out: &mut (),
        neighbours: &[Slot],
        fault: Option<SwapinFault>,
        keep_clean: bool,
    ) -> Result<Loaded<()>, StoreError> {
        let mut page = vec![0u8; PAGE];
        let (kept_clean, clean_written) = {
            let s = self.inner.borrow();
            (s.kept_clean, s.clean_written)
        };
        let evicted = self.inner.borrow().out.evicted_pages;
        let limit = self.limit.get();
        let cx = LoadContext {
            own: &self.swap,
            can_keep_clean: true,
            kept_clean,
            clean_written,
            evicted_pages: evicted,
            limit_in_force: &|configured| limit.min(configured),
            cost_ns: Some(&|source| match source {
                Source::Zswap | Source::Zero => POOL_LOAD_NS,
                Source::Disk | Source::SwapCache => FILE_LOAD_NS,
            }),
        };
        let keep_clean = keep_clean && self.run_kept_clean.get();
        let o = self
            .side
            .load(slot, &mut page, neighbours, fault, keep_clean, &cx)
            .map_err(|e| StoreError(e.to_string()))?;
        let kept = o.kept.contains(&slot);
        self.came_back(slot, &page, kept);
        let mut loaded = Loaded {
            kept,
            around: Vec::new(),
        };
        for (n, bytes) in &o.got {
            let k = o.kept.contains(n);
            self.came_back(*n, bytes, k);
            loaded.around.push((*n, (), k));
        }
        let mut s = self.inner.borrow_mut();
        s.out.pages_in += 1 + o.got.len() as u64;
        s.out.folio_swapins += u64::from(o.folio);
        Ok(loaded)
    }

    fn free(&self, _store: StoreId, slot: Slot) {
        self.inner.borrow_mut().slots.remove(&slot);
        if let Err(e) = self.swap.free(slot) {
            self.fail(e.into());
        }
    }

    fn count(&self, event: Event, n: usize) {
        let n = n as u64;
        let mut s = self.inner.borrow_mut();
        match event {
            Event::ZeroFault => s.out.first_touches += n,
            Event::SwapinFault => s.out.swapin_faults += n,
            Event::EvictedPages => {
                s.out.evicted_pages += n;
                // What the runtime's reclaim thread tells each tick, told
                // at each eviction: none of them for age (a replay has no
                // cold age, so the split's pressure share stays whole), the
                // count the split's writeback test reads, and admission's
                // tick; and the objects of the pages loaded since, which
                // the reclaim thread frees between its batches.
                self.swap.zswap().free_loaded();
                let limit = self.limit.get();
                self.side
                    .note_evictions(&self.swap, s.out.evicted_pages, 0, limit);
            }
            Event::WpFault => s.out.wp_faults += n,
            Event::CleanWritten => {
                s.out.wp_faults += n;
                s.clean_written += n;
            }
            Event::KeptClean => {
                s.kept_clean += n;
                s.out.kept_clean += n;
            }
            Event::EvictedClean => s.out.evicted_clean += n,
            Event::WorkingsetRefault => s.out.activations += n,
            _ => {}
        }
    }
}

/// What a load from the pool and from the swap file cost, as the budget
/// split weighs them in a replay: a page's decompression, and a device
/// read (the split's own floor for a file read). Fixed, so that a replay
/// is a function of its trace; the run measured its own.
const POOL_LOAD_NS: u64 = 2_000;
const FILE_LOAD_NS: u64 = 45_000;

/// The name of the runtime's own policy in tables.
pub const NAME: &str = "uzswap";

/// One process of the run, replayed: its page states, its own store and
/// store-side policies, its regions' ids (as each process of a run has its
/// own runtime under the limit they share).
struct Proc<'w> {
    env: ReplayEnv<'w>,
    state: Mutex<State>,
    changed: Condvar,
    ids: HashMap<usize, u64>,
}

impl<'w> Proc<'w> {
    fn new(
        w: &'w Workload,
        rcfg: &RuntimeConfig,
        cap: u64,
        limit: Limit,
        sampled: bool,
    ) -> Result<Self, ReplayError> {
        Ok(Proc {
            env: ReplayEnv {
                w,
                sampled,
                swap: Swap::new(rcfg.swap.clone())?,
                side: StoreSide::new(rcfg),
                limit: Cell::new(usize::try_from(cap).unwrap_or(usize::MAX)),
                run_kept_clean: Cell::new(false),
                inner: RefCell::new(EnvState {
                    slots: HashMap::new(),
                    out: Outcome::new(NAME.into(), limit),
                    kept_clean: 0,
                    clean_written: 0,
                    failed: None,
                    page: Vec::new(),
                    check: Vec::new(),
                }),
            },
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            ids: HashMap::new(),
        })
    }

    fn cx<'a>(&'a self, tun: &'a Tunables) -> Cx<'a, ReplayEnv<'w>> {
        Cx {
            state: &self.state,
            changed: &self.changed,
            env: &self.env,
            tun,
        }
    }

    /// Resident pages, and the pool where it is charged.
    fn charged(&self, cfg: &ProtocolConfig) -> usize {
        let resident = protocol::lock(&self.state).resident;
        resident
            + if cfg.charge_pool {
                self.env.swap.charged_pages()
            } else {
                0
            }
    }

    fn resident(&self) -> usize {
        protocol::lock(&self.state).resident
    }

    /// Runs one step of this process.
    fn step(
        &mut self,
        step: &WStep,
        tun: &Tunables,
        cfg: &ProtocolConfig,
    ) -> Result<(), ReplayError> {
        let cx = Cx {
            state: &self.state,
            changed: &self.changed,
            env: &self.env,
            tun,
        };
        match step {
            WStep::Map { addr, pages } => {
                let id = protocol::lock(&self.state).add_region(*addr, *pages);
                self.ids.insert(*addr, id);
            }
            WStep::Resize { addr, pages, .. } => {
                if let Some(r) = protocol::lock(&self.state).regions.get_mut(addr) {
                    if *pages > r.pages.len() {
                        r.pages.resize(*pages, protocol::Page::UNTOUCHED);
                    }
                }
            }
            WStep::Unmap { addr, .. } => {
                if let Some(id) = self.ids.remove(addr) {
                    let mut op = Release::<()>::drop_region(*addr, id);
                    run(&self.env, || op.step(&cx))?;
                }
            }
            WStep::Discard { addr, pages, .. } => {
                let mut op = ProgramDiscard::new(*addr, pages * PAGE);
                run(&self.env, || op.step(&cx))?;
            }
            WStep::Access(a) => {
                let placed = access(&self.env, &cx, a)?;
                let out = &mut self.env.inner.borrow_mut().out;
                out.accesses += 1;
                out.unplaced += u64::from(!placed);
            }
            WStep::Aged { .. } => {
                if cfg.aging {
                    let mut op = Age::new();
                    run(&self.env, || op.step(&cx))?;
                }
            }
            WStep::Limit(_) => {}
        }
        Ok(())
    }

    /// This process's outcome, its store's counters in it.
    fn finish(self) -> Outcome {
        let s = self.env.inner.into_inner();
        let mut out = s.out;
        let stats = self.env.swap.stats();
        out.zswpout = stats.zswpout;
        out.zero_pages = stats.swpout_zero;
        out.written_back = stats.written_back_pages;
        out.file_reads = stats.pswpin;
        out.pool_pages = (stats.pool_total_size as usize / PAGE) as u64;
        out.store = Some(stats);
        out.pool_share = self
            .env
            .side
            .pool_share(self.env.limit.get())
            .map(|p| p as u64);
        out
    }
}

/// Replays `w` through the runtime's protocol at `limit`: each process
/// of the run with its own page states and store, all under the one limit.
pub fn replay(w: &Workload, limit: Limit, cfg: &ProtocolConfig) -> Result<Outcome, ReplayError> {
    let started = std::time::Instant::now();
    if cfg.compressor.is_some() && w.samples.is_empty() {
        return Err(ReplayError::NoSamples);
    }
    let mut cap = limit.initial(w);
    let ceiling = workingset_pages(w, limit);
    let rcfg = runtime_config(w, cfg, ceiling);
    let tun = Tunables {
        folio_pages: cfg.folio_pages,
        page_cluster: cfg.page_cluster,
        workingset_pages: ceiling,
        probation_pages: rcfg.probation_pages as u64,
        unmap_group_pages: cfg.unmap_group_pages,
        faults_block: false,
    };
    let mut procs: Vec<Proc> = (0..w.recorded.processes.max(1))
        .map(|_| Proc::new(w, &rcfg, cap, limit, cfg.compressor.is_some()))
        .collect::<Result<_, _>>()?;
    let mut reclaim = Reclaim::default();
    let (mut peak_charged, mut peak_pool) = (0usize, 0usize);
    for (step, &time) in w.steps.iter().zip(&w.times) {
        match step.process() {
            Some(p) => {
                if let Some(proc) = procs.get_mut(p) {
                    proc.step(step, &tun, cfg)?;
                }
            }
            None => {
                if let WStep::Limit(pages) = step {
                    cap = limit.follow(cap, *pages);
                    for proc in &procs {
                        proc.env
                            .limit
                            .set(usize::try_from(cap).unwrap_or(usize::MAX));
                    }
                }
            }
        }
        reclaim.run(&procs, &tun, cfg, time)?;
        peak_charged = peak_charged.max(procs.iter().map(|p| p.charged(cfg)).sum());
        peak_pool = peak_pool.max(
            procs
                .iter()
                .map(|p| p.env.swap.zswap().pool_total_size() / PAGE)
                .sum(),
        );
    }
    let mut out = Outcome::new(NAME.into(), limit);
    for proc in procs {
        out.absorb(proc.finish());
    }
    out.peak_charged_pages = peak_charged;
    out.pool_peak_pages = peak_pool as u64;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// The runtime's settings for a replay of `w` under a limit up to
/// `ceiling` pages: the pool's share of a charged limit adaptive under
/// all of it but an eighth (`uzswap run`'s default), lz4 over synthesized
/// pages or the compressor asked for over sampled ones, a plain swap file
/// big enough for every page.
fn runtime_config(w: &Workload, cfg: &ProtocolConfig, ceiling: u64) -> RuntimeConfig {
    let limit_bytes = usize::try_from(ceiling)
        .unwrap_or(usize::MAX / PAGE)
        .saturating_mul(PAGE);
    let ram = common::meminfo::bytes("MemTotal").unwrap_or(1 << 30) as usize;
    let swap = zswap::Config {
        compressor: cfg.compressor.unwrap_or(compress::Algorithm::Lz4),
        pool_limit_bytes: cfg.charge_pool.then(|| {
            let share = match cfg.fixed_pool_split {
                true => limit_bytes / 2,
                false => limit_bytes - limit_bytes / 8,
            };
            share.min(ram / 5).max(PAGE)
        }),
        writeback: true,
        total_ram_bytes: ram,
        shrinker_thread: false,
        page_cluster: cfg.page_cluster,
        readahead: cfg.readahead,
        swapfile_dir: cfg.swapfile_dir.clone(),
        swapfile_pages: w.pages * 2 + 4096,
        swap_protection: zswap::Protection::Checksum,
        ..zswap::Config::default()
    };
    RuntimeConfig {
        swap,
        limit_bytes,
        charge_pool: cfg.charge_pool,
        reclaim_batch: cfg.reclaim_batch,
        evict_folio_pages: cfg.folio_pages,
        folio_swapin: cfg.folio_swapin,
        unmap_group_pages: cfg.unmap_group_pages,
        adaptive_pool: !cfg.fixed_pool_split,
        ..RuntimeConfig::default()
    }
}

/// The runtime's workingset window: its configured limit (the highest a
/// controller's limit in force reached, for a recorded one).
fn workingset_pages(w: &Workload, limit: Limit) -> u64 {
    let most = match limit {
        Limit::Fixed(p) => p,
        Limit::Recorded => w.recorded_limits().max().unwrap_or(u64::MAX),
    };
    most.min(u64::from(u32::MAX))
}

/// Steps one operation to its end.
fn run<T>(
    env: &ReplayEnv,
    mut step: impl FnMut() -> Result<Step<T>, Fatal>,
) -> Result<T, ReplayError> {
    loop {
        let s = step()?;
        if let Some(e) = env.inner.borrow_mut().failed.take() {
            return Err(e);
        }
        match s {
            Step::Next => {}
            Step::Wait(_) => return Err(ReplayError::Waited),
            Step::Done(t) => return Ok(t),
        }
    }
}

/// One recorded access: the fault it takes now, if any. `false` if the
/// page is in no region.
fn access(env: &ReplayEnv, cx: &Cx<ReplayEnv>, a: &Access) -> Result<bool, ReplayError> {
    let page = {
        let st = protocol::lock(cx.state);
        let Some((base, idx)) = st.locate(a.addr) else {
            return Ok(false);
        };
        st.regions[&base].pages[idx]
    };
    let protected = page.armed || page.shared || matches!(page.state, PageState::Clean { .. });
    match page.state {
        PageState::Untouched | PageState::Swapped { .. } => {
            env.run_kept_clean.set(env.w.kept_clean[a.id as usize]);
            let mut op = MissingFault::<()>::new(a.addr, a.write, false);
            run(env, || op.step(cx))?;
        }
        PageState::Resident | PageState::Clean { .. } if a.write && protected => {
            let mut op = WpFault::new(a.addr);
            run(env, || op.step(cx))?;
        }
        _ => {}
    }
    Ok(true)
}

/// The reclaim thread's tick (`runtime/src/reclaim.rs`): 20 ms.
const TICK_NS: u64 = 20_000_000;
/// The runtime's least time between two compactions of the pool.
const COMPACT_INTERVAL_NS: u64 = runtime::COMPACT_INTERVAL.as_nanos() as u64;

/// The reclaimer's decisions, replayed as the runtime's reclaim thread
/// takes them, by the run's clock: on its ticks the store's shrinker and
/// the pool trimmed to its share; at once when a fault passes the limit
/// (a fault over the limit wakes it), eviction down to the low watermark,
/// the pool compacted at most every `COMPACT_INTERVAL`.
#[derive(Default)]
struct Reclaim {
    /// The run's time of the last tick and the last compaction, ns.
    last_tick: u64,
    last_compaction: Option<u64>,
}

impl Reclaim {
    /// Every process's reclaimer after a step: on a tick, each trims its
    /// pool to its share; over the shared limit, each evicts a batch in
    /// turn (as their reclaim threads race) down to the low watermark.
    fn run(
        &mut self,
        procs: &[Proc],
        tun: &Tunables,
        cfg: &ProtocolConfig,
        now: u64,
    ) -> Result<(), ReplayError> {
        let Some(first) = procs.first() else {
            return Ok(());
        };
        let cap = first.env.limit.get();
        if now.saturating_sub(self.last_tick) >= TICK_NS {
            self.last_tick = now;
            for p in procs {
                shrink(&p.env);
                while trim(&p.env, cfg, cap) > 0 {}
            }
        }
        let total = |procs: &[Proc]| procs.iter().map(|p| p.charged(cfg)).sum::<usize>();
        if total(procs) <= cap {
            return Ok(());
        }
        // Over the limit: down to the low watermark, a margin of 1/32 of
        // the limit (at least a batch) under it.
        let low = cap.saturating_sub((cap / 32).max(cfg.reclaim_batch));
        while total(procs) > low {
            // Compaction, at most every `COMPACT_INTERVAL` of the run.
            if self
                .last_compaction
                .is_none_or(|t| now.saturating_sub(t) >= COMPACT_INTERVAL_NS)
            {
                self.last_compaction = Some(now);
                let freed: usize = procs.iter().map(|p| p.env.swap.zswap().compact()).sum();
                if freed > 0 {
                    continue;
                }
            }
            let mut n = 0;
            for p in procs {
                if total(procs) <= low {
                    break;
                }
                if p.resident() == 0 {
                    continue;
                }
                let cx = p.cx(tun);
                let mut op = Evict::new(cfg.reclaim_batch);
                n += run(&p.env, || op.step(&cx))?;
                shrink(&p.env);
                n += trim(&p.env, cfg, cap);
            }
            if n == 0 && cfg.charge_pool {
                // Nothing resident to evict, yet over the limit: the
                // pools' own pages are the charge; write their coldest back.
                for p in procs {
                    n += write_back(&p.env, cfg.reclaim_batch)?;
                }
            }
            if n == 0 {
                break;
            }
        }
        Ok(())
    }
}

/// The store's shrinker (the pool over its own limit).
fn shrink(env: &ReplayEnv) {
    if env.swap.needs_shrink() {
        env.swap.shrink();
    }
}

/// One batch written back if the pool is over its adaptive share.
fn trim(env: &ReplayEnv, cfg: &ProtocolConfig, cap: usize) -> usize {
    if !cfg.charge_pool || !env.side.pool_over_share(&env.swap, cap) {
        return 0;
    }
    write_back(env, cfg.reclaim_batch).unwrap_or(0)
}

/// Writes up to `n` of the pool's coldest pages back to the file.
fn write_back(env: &ReplayEnv, n: usize) -> Result<usize, ReplayError> {
    let done = env.swap.writeback(n)?;
    // What the split weighs a page's writeback at (its own default).
    env.side.note_writeback(done, done as u64 * 10_000);
    Ok(done)
}
