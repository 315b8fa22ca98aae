//! # lab — the design lab: a real program's paging, recorded once, replayed
//! against designs in seconds
//!
//! `uzswap run --record FILE -- CMD` writes what paging sees (the `trace`
//! crate); `uzswap replay FILE` reads it into a [`Workload`] and pages it
//! again, without the program, under each policy and limit asked for:
//!
//! * **the runtime's own protocol** ([`protocol`]): the functions `uzswap
//!   run` steps for every fault and eviction, driven against a replay
//!   environment (every kernel call succeeds, page contents are
//!   synthesized: [`pages`]) over the real swap store — zswap, zsmalloc,
//!   the swap file with its readahead and writeback — and the runtime's
//!   own store-side decisions (`runtime::StoreSide`: folio swap-in, the
//!   clean governor, the budget split, pool admission), with the reclaimer's ticks by the
//!   run's clock. Replayed at the limit it was recorded under, it
//!   predicts the run's swap-ins and evictions;
//! * **reference policies** ([`policy`], [`policies`]): LRU, FIFO, CLOCK,
//!   and Belady's optimum (`opt`), textbook demand paging with a pool of
//!   zsmalloc objects of the recorded sizes ([`pool`]) and no swap file. A
//!   new policy is one file implementing [`Policy`].
//!
//! `uzswap/COMPRESSOR` replays the protocol with the run's own pages,
//! sampled at eviction, stored by another compressor; [`compressors`]
//! compares compressors on those samples page by page.
//!
//! Each replay gives an [`Outcome`]: pages brought in, swap-in faults,
//! evictions, first touches, file traffic, bytes compressed, the pool's
//! peak, and a predicted time from the run's own measured costs
//! ([`Outcome::predicted_s`]). [`sweep`] replays every policy over a list
//! of limits on all CPUs: a miss-ratio curve.
//!
//! ## What a trace can and cannot tell
//!
//! A userfaultfd pager sees misses, not hits: the accesses a trace holds
//! are the recorded run's faults and write-protect faults. Replayed at the
//! recorded limit or above, that is every access that matters to a
//! FIFO-ordered reclaim such as the runtime's (it orders pages by when
//! they came in; hits do not move them) and every miss of any policy.
//! Below the recorded limit, pages that stayed resident in the run were
//! accessed unseen, so every replay there undercounts: record at the
//! lowest limit of interest and replay upwards. LRU and CLOCK see only the
//! accesses the trace holds, so their rows are what those orders would do
//! with a pager's view, not with the kernel's accessed bits. Writes to
//! resident pages are not seen either: a replay keeps a swap-in's page
//! clean (its file slot kept) only for pages the run kept clean.
//!
//! ## Invariants
//!
//! 1. A replay is a function of the workload and its settings: the same
//!    trace gives the same table on any machine of the same memory size
//!    (an uncharged pool is bounded by a share of it); the costs the
//!    budget split weighs are fixed in a replay, not timed.
//! 2. Every policy sees the same steps; `opt` is computed on exactly those,
//!    with the whole limit for resident pages (its pool uncharged), so no
//!    row brings in fewer pages at the same limit (prefetching ones
//!    included: a demand policy can do what a prefetching one does with no
//!    more loads; a charged pool only takes room from resident pages).
//! 3. Every page the protocol's replay reads back from the store is the
//!    page it stored ([`ReplayError::Corrupt`] otherwise).

pub mod compressors;
pub mod pages;
pub mod policies;
pub mod policy;
pub mod pool;
pub mod protocol;
pub mod workload;

pub use policy::{simulate, Policy};
pub use protocol::{ProtocolConfig, ReplayError};
pub use workload::{Recorded, Step, Workload};

use pool::PoolModel;

/// The limit a replay runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The recorded run's limit in force, as it moved.
    Recorded,
    /// A fixed limit, in pages.
    Fixed(u64),
}

impl Limit {
    /// The limit in pages at the start of `w`.
    pub fn initial(self, w: &Workload) -> u64 {
        match self {
            Limit::Fixed(p) => p,
            Limit::Recorded => w.recorded_limits().next().unwrap_or(u64::MAX),
        }
    }

    /// The limit after the recorded run's moved to `recorded`.
    pub fn follow(self, current: u64, recorded: u64) -> u64 {
        match self {
            Limit::Fixed(_) => current,
            Limit::Recorded => recorded,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Limit::Recorded => "recorded".into(),
            Limit::Fixed(p) => format!("{}M", p * 4096 / (1 << 20)),
        }
    }
}

/// What one replay did.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub policy: String,
    pub limit: Limit,
    pub accesses: u64,
    pub first_touches: u64,
    /// Misses on pages evicted before.
    pub swapin_faults: u64,
    /// Pages brought back from the store (a swap-in fault's own page, and
    /// any its fault-around brought).
    pub pages_in: u64,
    pub evicted_pages: u64,
    /// Evicted pages that were zero-filled (no object).
    pub zero_pages: u64,
    /// Write-protect faults (write tracking).
    pub wp_faults: u64,
    /// Swap-ins within the workingset (refaults that activate a page).
    pub activations: u64,
    /// Swap-ins that brought their whole folio.
    pub folio_swapins: u64,
    /// Pages stored in the pool over the replay, and the bytes they were
    /// compressed to: by the replay's store (the runtime's protocol:
    /// synthesized pages come to about their recorded lengths, sampled ones
    /// to what the compressor asked for makes of them), or the recorded
    /// lengths (reference policies).
    pub zswpout: u64,
    pub stored_bytes: u64,
    /// Pages written back from the pool to the swap file, and pages read
    /// from the file (readahead included): the runtime's protocol only
    /// (reference policies have no file).
    pub written_back: u64,
    pub file_reads: u64,
    /// Pages swapped in from the file that kept their slot, and pages
    /// evicted clean (unmapped only): the runtime's protocol only.
    pub kept_clean: u64,
    pub evicted_clean: u64,
    /// The pool's adaptive share of the limit at the end, pages (the
    /// runtime's protocol with the pool charged).
    pub pool_share: Option<u64>,
    /// The replay's swap store's own counters (the runtime's protocol
    /// only): written with the rest by [`Outcome::stats_lines`].
    pub store: Option<zswap::Stats>,
    /// zsmalloc's pages at the end, and at most.
    pub pool_pages: u64,
    pub pool_peak_pages: u64,
    /// Most pages charged at once (resident, plus the pool where charged).
    pub peak_charged_pages: usize,
    /// Accesses outside every region the replay knows (none in a complete
    /// trace).
    pub unplaced: u64,
    /// How long the replay took.
    pub seconds: f64,
}

impl Outcome {
    pub fn new(policy: String, limit: Limit) -> Outcome {
        Outcome {
            policy,
            limit,
            accesses: 0,
            first_touches: 0,
            swapin_faults: 0,
            pages_in: 0,
            evicted_pages: 0,
            zero_pages: 0,
            wp_faults: 0,
            activations: 0,
            folio_swapins: 0,
            zswpout: 0,
            stored_bytes: 0,
            written_back: 0,
            file_reads: 0,
            kept_clean: 0,
            evicted_clean: 0,
            pool_share: None,
            store: None,
            pool_pages: 0,
            pool_peak_pages: 0,
            peak_charged_pages: 0,
            unplaced: 0,
            seconds: 0.0,
        }
    }

    /// Adds `other`'s counts to these (one process of a run to the run's).
    pub(crate) fn absorb(&mut self, other: Outcome) {
        let sum = |a: &mut u64, b: u64| *a += b;
        sum(&mut self.accesses, other.accesses);
        sum(&mut self.first_touches, other.first_touches);
        sum(&mut self.swapin_faults, other.swapin_faults);
        sum(&mut self.pages_in, other.pages_in);
        sum(&mut self.evicted_pages, other.evicted_pages);
        sum(&mut self.zero_pages, other.zero_pages);
        sum(&mut self.wp_faults, other.wp_faults);
        sum(&mut self.activations, other.activations);
        sum(&mut self.folio_swapins, other.folio_swapins);
        sum(&mut self.zswpout, other.zswpout);
        sum(&mut self.stored_bytes, other.stored_bytes);
        sum(&mut self.written_back, other.written_back);
        sum(&mut self.file_reads, other.file_reads);
        sum(&mut self.kept_clean, other.kept_clean);
        sum(&mut self.evicted_clean, other.evicted_clean);
        sum(&mut self.pool_pages, other.pool_pages);
        sum(&mut self.unplaced, other.unplaced);
        self.pool_share = match (self.pool_share, other.pool_share) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.store = match (self.store.take(), other.store) {
            (Some(a), Some(b)) => {
                let (a, b) = (a.fields(), b.fields());
                let sum = |name: &str| {
                    let get = |f: &[(&str, u64)]| f.iter().find(|x| x.0 == name).map(|x| x.1);
                    Some(get(&a)? + get(&b)?)
                };
                zswap::Stats::from_fields(sum).ok()
            }
            (a, b) => a.or(b),
        };
    }

    pub(crate) fn finish_pool(&mut self, pool: &PoolModel) {
        self.zswpout = pool.stored_pages;
        self.stored_bytes = pool.stored_bytes;
        self.zero_pages += pool.zero_pages;
        self.pool_pages = pool.pool_pages() as u64;
        self.pool_peak_pages = pool.peak_pages() as u64;
    }

    /// Predicted elapsed time: the recorded run's time less its own
    /// swap-in and write-protect waits, plus this replay's counts at the
    /// run's mean cost of each. Evictions are left out: the run's
    /// reclaimer evicts beside the program, not in its way.
    pub fn predicted_s(&self, r: &Recorded) -> f64 {
        r.base_s()
            + self.swapin_faults as f64 * r.swapin_cost_s()
            + self.wp_faults as f64 * r.wp_cost_s()
    }

    /// The counters in `uzswap run --stats-out`'s `name value` form and
    /// names, for the ones a replay has.
    pub fn stats_lines(&self) -> String {
        let faults = self.first_touches + self.swapin_faults;
        let mut lines: Vec<(&str, u64)> = vec![
            ("faults", faults),
            ("swapin_faults", self.swapin_faults),
            ("evicted_pages", self.evicted_pages),
            ("wp_faults", self.wp_faults),
            ("workingset_refault", self.activations),
            (
                "around_pages",
                self.pages_in.saturating_sub(self.swapin_faults),
            ),
            ("folio_swapins", self.folio_swapins),
            ("zswpout", self.zswpout),
            ("swpout_zero", self.zero_pages),
            ("written_back_pages", self.written_back),
            ("pswpin", self.file_reads),
            ("kept_clean", self.kept_clean),
            ("evicted_clean", self.evicted_clean),
            ("pool_total_size", self.pool_pages * 4096),
            ("stored_bytes", self.stored_bytes),
        ];
        if let Some(share) = self.pool_share {
            lines.push(("pool_share_pages", share));
        }
        if let Some(store) = &self.store {
            // The store's own, where they are not already above.
            for (k, v) in store.fields() {
                if !lines.iter().any(|(n, _)| *n == k) {
                    lines.push((k, v));
                }
            }
        }
        lines.iter().map(|(k, v)| format!("{k} {v}\n")).collect()
    }
}

/// Why a sweep stopped.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("unknown policy {0:?} (known: uzswap, uzswap:always|bypass|disk-only|off, either with /COMPRESSOR (uzswap/zstd:3), {known})", known = policies::NAMES.join(", "))]
    UnknownPolicy(String),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Pool(#[from] pool::PoolError),
}

/// The runtime's protocol as a policy name asks for it: `uzswap`, with
/// `:READAHEAD` another swap-in readahead (`always`, `bypass`,
/// `disk-only`, `off`: seed 002's comparison on a recorded program), with
/// `/COMPRESSOR` the run's sampled pages stored with that compressor
/// (`uzswap/zstd:3`, `uzswap:always/deflate:6`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ProtocolVariant {
    readahead: Option<zswap::Readahead>,
    compressor: Option<compress::Algorithm>,
}

/// The variant of the runtime's protocol `name` asks for; `None` if
/// `name` is not the protocol's.
fn protocol_variant(name: &str) -> Option<Result<ProtocolVariant, LabError>> {
    let rest = name.strip_prefix(protocol::NAME)?;
    let bad = || LabError::UnknownPolicy(name.into());
    let (readahead, compressor) = match rest.split_once('/') {
        Some((r, c)) => (r, Some(c)),
        None => (rest, None),
    };
    let readahead = match readahead {
        "" => None,
        r => match r.strip_prefix(':').and_then(|r| r.parse().ok()) {
            Some(r) => Some(r),
            None => return Some(Err(bad())),
        },
    };
    let compressor = match compressor.map(str::parse::<compress::Algorithm>) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(_)) => return Some(Err(bad())),
    };
    Some(Ok(ProtocolVariant {
        readahead,
        compressor,
    }))
}

/// Checks policy names: `uzswap` (the runtime's protocol, or
/// `uzswap:READAHEAD`) or a reference policy's.
pub fn check_policies(names: &[String]) -> Result<(), LabError> {
    for n in names {
        match protocol_variant(n) {
            Some(r) => drop(r?),
            None if policies::by_name(n).is_some() => {}
            None => return Err(LabError::UnknownPolicy(n.clone())),
        }
    }
    Ok(())
}

/// Replays `w` under policy `name` at `limit`.
pub fn replay_one(
    w: &Workload,
    name: &str,
    limit: Limit,
    cfg: &ProtocolConfig,
) -> Result<Outcome, LabError> {
    if let Some(variant) = protocol_variant(name) {
        let variant = variant?;
        let mut cfg = cfg.clone();
        if let Some(readahead) = variant.readahead {
            cfg.readahead = readahead;
        }
        if variant.compressor.is_some() {
            cfg.compressor = variant.compressor;
        }
        let mut o = protocol::replay(w, limit, &cfg)?;
        o.policy = name.into();
        return Ok(o);
    }
    let mut p = policies::by_name(name).ok_or_else(|| LabError::UnknownPolicy(name.into()))?;
    // The bound gets the whole limit for resident pages: no policy that
    // keeps its resident pages under the limit, whatever its pool costs
    // it, brings in fewer.
    let charge_pool = cfg.charge_pool && name != "opt";
    Ok(simulate(w, limit, charge_pool, p.as_mut())?)
}

/// Every policy in `names` at every limit in `limits`, on `threads`
/// threads; `done` is called with each replay's outcome, or `None` for
/// one that failed (progress). Outcomes in
/// the order limit by limit, policy by policy.
pub fn sweep(
    w: &Workload,
    names: &[String],
    limits: &[Limit],
    cfg: &ProtocolConfig,
    threads: usize,
    done: &(dyn Fn(Option<&Outcome>) + Sync),
) -> Result<Vec<Outcome>, LabError> {
    check_policies(names)?;
    let jobs: Vec<(Limit, &str)> = limits
        .iter()
        .flat_map(|&l| names.iter().map(move |n| (l, n.as_str())))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<Outcome, LabError>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(limit, name)) = jobs.get(i) else {
                    break;
                };
                let r = replay_one(w, name, limit, cfg);
                done(r.as_ref().ok());
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every job ran")
        })
        .collect()
}
