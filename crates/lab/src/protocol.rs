//! The runtime's own paging replayed: the protocol's operations (first
//! touch, swap-in, write-protect fault, eviction, aging, release, the
//! program's discard), the very functions `uzswap run` steps, driven
//! against a replay environment instead of the kernel and the store.
//!
//! What the replay keeps of the run: the page-state machine and its LRU
//! (reclaim order, workingset activation, write-tracking reprieves),
//! folio first touch, batch eviction from the limit down to the low
//! watermark, the pool's charge (zsmalloc's classes over recorded
//! sizes). What it leaves out: timing (reclaim runs synchronously after
//! the access that passed the limit, where the run's reclaimer ran
//! concurrently and throttled faults past a ceiling), the swap file tier
//! (so its readahead, clean pages and the budget split). Folio swap-in
//! follows the runtime's own rule (`runtime::FolioSwapin`).

use crate::pool::{PoolError, PoolModel};
use crate::workload::{Access, Step as WStep, Workload, PAGE};
use crate::{Limit, Outcome};
use runtime::protocol::{
    self, Age, Cx, Env, Event, Evict, Fatal, KernelError, Loaded, MissingFault, PageState,
    ProgramDiscard, Release, Slot, State, Step, StoreError, StoreId, SwapinFault, Tunables,
    WpFault,
};
use runtime::FolioSwapin;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};

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
        }
    }
}

/// Why the protocol's replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Pool(#[from] PoolError),
    #[error("the protocol failed: {0}")]
    Protocol(#[from] Fatal),
    #[error("an operation waited for another, which a sequential replay never runs")]
    Waited,
}

/// The replay's stand-in for the kernel and the store: every kernel call
/// succeeds; stored pages are objects of their recorded size in the pool.
struct ReplayEnv<'w> {
    w: &'w Workload,
    /// Which swap-ins bring their folio: the runtime's own rule.
    folio_swapin: Option<FolioSwapin>,
    inner: RefCell<EnvState>,
}

struct EnvState {
    pool: PoolModel,
    /// Slot → page id.
    slots: HashMap<Slot, u32>,
    next_slot: Slot,
    out: Outcome,
    /// A protocol error inside the store: reported after the step.
    failed: Option<PoolError>,
}

impl ReplayEnv<'_> {
    fn release(&self, slot: Slot) {
        let mut s = self.inner.borrow_mut();
        if let Some(id) = s.slots.remove(&slot) {
            if let Err(e) = s.pool.free(id) {
                s.failed.get_or_insert(e);
            }
        }
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
    fn still_protected(&self, _: usize, _: usize) -> Result<bool, KernelError> {
        Ok(false)
    }

    fn store_run(&self, addr: usize, pages: usize) -> Result<Vec<Slot>, StoreError> {
        let mut s = self.inner.borrow_mut();
        let mut slots = Vec::with_capacity(pages);
        for k in 0..pages {
            let Some(&id) = self.w.ids.get(&(addr + k * PAGE)) else {
                // A page of a folio first touch that the trace never saw
                // touched: zeros, stored as a zero page.
                s.next_slot += 1;
                slots.push(s.next_slot);
                s.out.zero_pages += 1;
                continue;
            };
            if let Err(e) = s.pool.store(self.w, id) {
                s.failed.get_or_insert(e);
            }
            s.next_slot += 1;
            let slot = s.next_slot;
            s.slots.insert(slot, id);
            slots.push(slot);
        }
        Ok(slots)
    }

    /// The page, and its folio's swapped pages where the runtime's folio
    /// swap-in rule says the fault streams (all of them are in the pool:
    /// no file tier here, so no readahead either).
    fn load(
        &self,
        _store: StoreId,
        slot: Slot,
        _out: &mut (),
        neighbours: &[Slot],
        fault: Option<SwapinFault>,
        _keep_clean: bool,
    ) -> Result<Loaded<()>, StoreError> {
        let folio = match (&self.folio_swapin, fault) {
            (Some(f), Some(fault)) => f.wants_folio(fault.addr) && !neighbours.is_empty(),
            _ => false,
        };
        let mut loaded = Loaded::default();
        self.release(slot);
        if folio {
            for &n in neighbours {
                self.release(n);
                loaded.around.push((n, (), false));
            }
            self.inner.borrow_mut().out.folio_swapins += 1;
        }
        self.inner.borrow_mut().out.pages_in += 1 + loaded.around.len() as u64;
        Ok(loaded)
    }

    fn free(&self, _store: StoreId, slot: Slot) {
        self.release(slot);
    }

    fn count(&self, event: Event, n: usize) {
        let n = n as u64;
        let out = &mut self.inner.borrow_mut().out;
        match event {
            Event::ZeroFault => out.first_touches += n,
            Event::SwapinFault => out.swapin_faults += n,
            Event::EvictedPages => out.evicted_pages += n,
            Event::WpFault | Event::CleanWritten => out.wp_faults += n,
            Event::WorkingsetRefault => out.activations += n,
            _ => {}
        }
    }
}

/// The name of the runtime's own policy in tables.
pub const NAME: &str = "uzswap";

/// Replays `w` through the runtime's protocol at `limit`.
pub fn replay(w: &Workload, limit: Limit, cfg: &ProtocolConfig) -> Result<Outcome, ReplayError> {
    let started = std::time::Instant::now();
    let env = ReplayEnv {
        w,
        folio_swapin: cfg.folio_swapin.then(|| FolioSwapin::new(cfg.folio_pages)),
        inner: RefCell::new(EnvState {
            pool: PoolModel::new(w)?,
            slots: HashMap::new(),
            next_slot: 0,
            out: Outcome::new(NAME.into(), limit),
            failed: None,
        }),
    };
    let mut cap = limit.initial(w);
    let state = Mutex::new(State::default());
    let changed = Condvar::new();
    let tun = Tunables {
        folio_pages: cfg.folio_pages,
        page_cluster: cfg.page_cluster,
        workingset_pages: workingset_pages(w, limit),
        unmap_group_pages: cfg.unmap_group_pages,
    };
    let cx = Cx {
        state: &state,
        changed: &changed,
        env: &env,
        tun: &tun,
    };
    let mut ids: HashMap<usize, u64> = HashMap::new();
    let mut unplaced = 0u64;
    for step in &w.steps {
        match step {
            WStep::Map { addr, pages } => {
                let id = protocol::lock(&state).add_region(*addr, *pages);
                ids.insert(*addr, id);
            }
            WStep::Resize { addr, pages, .. } => {
                if let Some(r) = protocol::lock(&state).regions.get_mut(addr) {
                    if *pages > r.pages.len() {
                        r.pages.resize(*pages, protocol::Page::UNTOUCHED);
                    }
                }
            }
            WStep::Unmap { addr, .. } => {
                if let Some(id) = ids.remove(addr) {
                    let mut op = Release::<()>::drop_region(*addr, id);
                    run(&env, || op.step(&cx))?;
                }
            }
            WStep::Discard { addr, pages, .. } => {
                let mut op = ProgramDiscard::new(*addr, pages * PAGE);
                run(&env, || op.step(&cx))?;
            }
            WStep::Access(a) => {
                env.inner.borrow_mut().out.accesses += 1;
                if !access(&env, &cx, a)? {
                    unplaced += 1;
                }
            }
            WStep::Limit(pages) => cap = limit.follow(cap, *pages),
            WStep::Aged => {
                if cfg.aging {
                    let mut op = Age::new();
                    run(&env, || op.step(&cx))?;
                }
            }
        }
        reclaim(&env, &cx, cap, cfg)?;
        let charged = charged(&env, &state, cfg);
        let out = &mut env.inner.borrow_mut().out;
        out.peak_charged_pages = out.peak_charged_pages.max(charged);
    }
    let s = env.inner.into_inner();
    let mut out = s.out;
    out.unplaced = unplaced;
    out.finish_pool(&s.pool);
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// The runtime's workingset window: its configured limit (the highest a
/// controller's limit in force reached, for a recorded one).
fn workingset_pages(w: &Workload, limit: Limit) -> u64 {
    let most = match limit {
        Limit::Fixed(p) => p,
        Limit::Recorded => w
            .steps
            .iter()
            .filter_map(|s| match s {
                WStep::Limit(p) => Some(*p),
                _ => None,
            })
            .max()
            .unwrap_or(u64::MAX),
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
            return Err(e.into());
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
    match page.state {
        PageState::Untouched | PageState::Swapped { .. } => {
            let mut op = MissingFault::<()>::new(a.addr, a.write, false);
            run(env, || op.step(cx))?;
        }
        PageState::Resident | PageState::Clean { .. } if a.write && (page.armed || page.shared) => {
            let mut op = WpFault::new(a.addr);
            run(env, || op.step(cx))?;
        }
        _ => {}
    }
    Ok(true)
}

fn charged(env: &ReplayEnv, state: &Mutex<State>, cfg: &ProtocolConfig) -> usize {
    let resident = protocol::lock(state).resident;
    let pool = match cfg.charge_pool {
        true => env.inner.borrow().pool.charged_pages(),
        false => 0,
    };
    resident + pool
}

/// Over the limit: evict in batches down to the low watermark (a margin
/// of 1/32 of the limit, at least a batch), as the runtime's reclaimer.
fn reclaim(
    env: &ReplayEnv,
    cx: &Cx<ReplayEnv>,
    cap: u64,
    cfg: &ProtocolConfig,
) -> Result<(), ReplayError> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    if charged(env, cx.state, cfg) <= cap {
        return Ok(());
    }
    let low = cap.saturating_sub((cap / 32).max(cfg.reclaim_batch));
    while charged(env, cx.state, cfg) > low {
        let mut op = Evict::new(cfg.reclaim_batch);
        if run(env, || op.step(cx))? == 0 {
            break;
        }
    }
    Ok(())
}
