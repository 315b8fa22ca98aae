//! The store's side of paging: how a swap-in loads its page (folio
//! swap-in, fault-around and the swap file's readahead, clean pages' kept
//! slots), what the budget split hears of it, whether the pool is over
//! its share, and whether an eviction's pages pass through the pool or go
//! straight to the swap file (`admission.rs`). The runtime's environment
//! (`env.rs`) asks it for every load and store; the design lab's replay
//! (`lab` crate) asks the same object, so that a replay takes the
//! runtime's decisions, not a copy of them.

use crate::admission::{PageCosts, PoolAdmission, PoolTraffic};
use crate::clean::{KeepCleanGovernor, Reading};
use crate::protocol::{SwapinFault, PAGE};
use crate::split::{PoolShape, PoolSplit, Tier};
use crate::swapin::FolioSwapin;
use crate::RuntimeConfig;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use zswap::{Source, Swap, SwapOutReport, ZswapError};

/// The store-side policies of one process.
pub struct StoreSide {
    /// Which swap-in faults bring their whole folio; `None`: off.
    folio_swapin: Option<FolioSwapin>,
    /// The pool's share of the limit, fed by swap-ins (`split.rs`);
    /// `None`: the pool is not charged, or its limit is fixed.
    split: Option<PoolSplit>,
    /// Whether evictions pass through the pool or go straight to the swap
    /// file (`admission.rs`); beside the split only.
    admission: Option<PoolAdmission>,
    /// Whether swap-ins keep clean pages' slots (`clean.rs`); taken with
    /// `try_lock` only (a forked child that finds it held keeps the last
    /// decision, `keeping_clean`).
    clean_governor: Mutex<KeepCleanGovernor>,
    keeping_clean: AtomicBool,
    /// Pool bytes an entry, as last seen in a pool that held any (0: not
    /// yet): how densely an emptied pool would hold pages again.
    density: AtomicU64,
}

/// What a load's caller knows that the policies read.
pub struct LoadContext<'a> {
    /// The store the page is in (this process's own).
    pub own: &'a Swap,
    /// Clean pages can be kept (the caller can tell a kept page still
    /// protected: `PAGEMAP_SCAN`).
    pub can_keep_clean: bool,
    /// Counter totals: pages kept clean and clean pages written (the
    /// clean governor's), pages evicted (the split's horizon).
    pub kept_clean: u64,
    pub clean_written: u64,
    pub evicted_pages: u64,
    /// The limit in force under a configured one, pages.
    pub limit_in_force: &'a dyn Fn(usize) -> usize,
    /// What a load from each tier costs, ns, where the caller models time
    /// (a replay); `None`: the load is timed.
    pub cost_ns: Option<&'a dyn Fn(Source) -> u64>,
}

/// What [`StoreSide::load`] brought besides the page asked for.
#[derive(Debug, Default)]
pub struct LoadOutcome {
    /// Neighbours handed over: slot and bytes.
    pub got: Vec<(u64, Box<[u8]>)>,
    /// Slots that stayed allocated to their pages (clean).
    pub kept: Vec<u64>,
    /// The fault streamed: its folio came along.
    pub folio: bool,
}

impl StoreSide {
    /// The policies `cfg` asks for, with folios of `folio_pages`.
    pub fn new(cfg: &RuntimeConfig) -> StoreSide {
        let split = pool_split(cfg);
        StoreSide {
            admission: split.as_ref().map(|_| PoolAdmission::new()),
            folio_swapin: cfg
                .folio_swapin
                .then(|| FolioSwapin::new(cfg.evict_folio_pages)),
            split,
            clean_governor: Mutex::new(KeepCleanGovernor::new(Reading::default())),
            keeping_clean: AtomicBool::new(true),
            density: AtomicU64::new(0),
        }
    }

    /// The shape of `cx.own`'s pool, for the split's ghost tests. An empty
    /// pool (its entries written back, or discarded by the program) is
    /// taken as dense as it last was: by its own shape it would reach no
    /// further than its horizon, every page read from the swap file would
    /// then keep its slot (`near_refault`), and none would be stored in the
    /// pool again to show its density.
    fn pool_shape(&self, cx: &LoadContext) -> PoolShape {
        let pool = cx.own.zswap();
        let horizon = pool_horizon(cx.own, cx.evicted_pages);
        let (entries, bytes) = (pool.stored_pages() as u64, pool.pool_total_size() as u64);
        let (entries, bytes) = if entries > 0 && bytes > 0 {
            self.density
                .store(bytes.div_ceil(entries), Ordering::Relaxed);
            (entries, bytes)
        } else {
            // As many entries as the horizon: no stretch of the horizon
            // over entries (`pool_reach`).
            let n = horizon.max(1);
            (n, n * self.density.load(Ordering::Relaxed))
        };
        PoolShape {
            horizon,
            entries,
            bytes,
            file_in_memory: cx.own.device().in_memory(),
        }
    }

    /// The governor's word for a swap-in that could keep clean pages.
    fn keeps_clean(&self, cx: &LoadContext) -> bool {
        if let Ok(mut g) = self.clean_governor.try_lock() {
            let keep = g.on_load(Reading {
                kept_clean: cx.kept_clean,
                clean_written: cx.clean_written,
            });
            self.keeping_clean.store(keep, Ordering::Relaxed);
        }
        self.keeping_clean.load(Ordering::Relaxed)
    }

    /// Loads the page at `slot` of `cx.own` into `out` (a page), with the
    /// `neighbours` the store hands over where the fault streams (its
    /// folio); keeps clean pages' slots where asked (`keep_clean`) and the
    /// governor agrees; tells the budget split.
    ///
    /// A fault that does not stream takes its page alone: what the file's
    /// readahead brought beside it stays in the swap cache for a fault of
    /// its own, as in the kernel. Mapped at once (fault-around), a page
    /// read ahead looked used whether or not the program touched it, so
    /// the readahead window, fed by those hits, stayed at the whole
    /// cluster, and every read-ahead page took the resident room of a
    /// page in use (zstd under 5M: 1.4M pages read from the file against
    /// 0.44M, 2.4x the time).
    pub fn load(
        &self,
        slot: u64,
        out: &mut [u8],
        neighbours: &[u64],
        fault: Option<SwapinFault>,
        keep_clean: bool,
        cx: &LoadContext,
    ) -> Result<LoadOutcome, ZswapError> {
        let own = cx.own;
        let mut o = LoadOutcome {
            folio: match (&self.folio_swapin, fault) {
                (Some(f), Some(fault)) => f.wants_folio(fault.addr) && !neighbours.is_empty(),
                _ => false,
            },
            ..LoadOutcome::default()
        };
        let neighbours = if o.folio { neighbours } else { &[] };
        let started = std::time::Instant::now();
        let keep_clean = keep_clean && cx.can_keep_clean && !self.near_refault(fault, cx);
        let source = if keep_clean && self.keeps_clean(cx) {
            own.swap_in_keeping_clean(slot, out, neighbours, o.folio, &mut o.got, &mut o.kept)
        } else if o.folio {
            own.swap_in_folio(slot, out, neighbours, &mut o.got)
        } else {
            own.swap_in(slot, out)
        }?;
        if let Some(admission) = &self.admission {
            match (source, fault) {
                (Source::Disk | Source::SwapCache, Some(fault)) => {
                    admission.note_file_refault(fault.distance.0)
                }
                (Source::Zswap, _) if o.folio => admission.note_folio_pages(o.got.len()),
                _ => {}
            }
        }
        if let (Some(split), Some(fault)) = (&self.split, fault) {
            let tier = match source {
                Source::Zswap => Tier::Pool,
                Source::Disk | Source::SwapCache => Tier::File,
                Source::Zero => Tier::Other,
            };
            let ns = match cx.cost_ns {
                Some(cost) => cost(source),
                None => started.elapsed().as_nanos() as u64,
            };
            let limit = (cx.limit_in_force)(split.ceiling_pages());
            split.note_swapin(
                tier,
                fault.distance.0,
                ns,
                limit,
                own.charged_pages(),
                || self.pool_shape(cx),
            );
        }
        Ok(o)
    }

    /// Whether `fault` refaults a page soon enough that the largest pool
    /// the split allows would have held it. Such a page read from the
    /// swap file does not keep its slot: its next eviction compresses it
    /// into the pool, where its next refault costs a decompression, not
    /// another device read. A kept slot saves that compression only for
    /// a page that would have left the pool before it came back
    /// (redis under 9M on the disk: 592k pages read from the file, 500k
    /// of them evicted clean and read again).
    fn near_refault(&self, fault: Option<SwapinFault>, cx: &LoadContext) -> bool {
        let (Some(split), Some(fault)) = (&self.split, fault) else {
            return false;
        };
        if cx.own.device().in_memory() {
            // A read from a file in memory is a copy: cheaper than the
            // compression its slot saves.
            return false;
        }
        let limit = (cx.limit_in_force)(split.ceiling_pages());
        split.within_largest_pool(
            limit,
            cx.own.charged_pages(),
            fault.distance.0,
            self.pool_shape(cx),
        )
    }

    /// Stores the pages of `run` into `slots` of `own`: through the pool,
    /// or straight to the swap file where admission finds the pool costs
    /// more than it saves (`admission.rs`); timed for admission.
    pub fn store(
        &self,
        own: &Swap,
        run: &[&[u8]],
        slots: &[u64],
    ) -> Result<SwapOutReport, ZswapError> {
        let Some(admission) = &self.admission else {
            return own.swap_out(run, slots);
        };
        let to_file = admission.bypassing();
        let started = std::time::Instant::now();
        let report = match to_file {
            true => own.swap_out_to_file(run, slots),
            false => own.swap_out(run, slots),
        }?;
        let ns = started.elapsed().as_nanos() as u64;
        // Only a run whose pages all went one way times that way.
        match (to_file, report.disk) {
            (true, _) => admission.note_store(true, report.disk, ns),
            (false, 0) => admission.note_store(false, report.zswap, ns),
            (false, _) => {}
        }
        Ok(report)
    }

    /// Whether stores go straight to the swap file now.
    #[cfg(test)]
    fn bypassing_pool(&self) -> bool {
        self.admission.as_ref().is_some_and(|a| a.bypassing())
    }

    /// `pages` were written back in `ns`.
    pub fn note_writeback(&self, pages: usize, ns: u64) {
        if let Some(split) = &self.split {
            split.note_writeback(pages, ns);
        }
    }

    /// The runtime has evicted `evicted` pages, `for_age` of them for their
    /// age, under a limit of `limit_pages` (the reclaim thread, each tick
    /// and after each batch it evicts for age).
    /// Admission moves on with the same count (`own`: the process's
    /// store, whose pool traffic it reads).
    pub fn note_evictions(&self, own: &Swap, evicted: u64, for_age: u64, limit_pages: usize) {
        let Some(split) = &self.split else {
            return;
        };
        split.note_evictions(evicted, for_age, limit_pages);
        if let Some(admission) = &self.admission {
            let (stored, loaded, written_back) = own.pool_traffic();
            let traffic = PoolTraffic {
                stored,
                loaded,
                folio_pages: admission.folio_pages(),
                written_back,
            };
            let costs = || {
                let file_in_memory = own.device().in_memory();
                let (pool_load, file_load, writeback) = split.load_costs(file_in_memory);
                let (pool_store, file_store) = admission.store_costs(pool_load, writeback);
                PageCosts {
                    pool_store,
                    file_store,
                    pool_load,
                    file_load,
                    writeback,
                    file_in_memory,
                }
            };
            let reach = pool_horizon(own, evicted);
            admission.tick(evicted, traffic, limit_pages as u64 / 16, reach, costs);
        }
    }

    /// The pool holds more of a limit of `limit_pages` than its adaptive
    /// share: reclaim writes its coldest pages back.
    pub fn pool_over_share(&self, own: &Swap, limit_pages: usize) -> bool {
        self.split
            .as_ref()
            .is_some_and(|s| own.charged_pages() > s.target(limit_pages))
    }

    /// The pool's share of a limit of `limit_pages` now, if adaptive.
    pub fn pool_share(&self, limit_pages: usize) -> Option<usize> {
        self.split.as_ref().map(|s| s.target(limit_pages))
    }
}

/// The age, in evictions (`evicted` so far), of the entries `own`'s pool
/// writes back now: its entries' age in stores, scaled by evictions per
/// store (an eviction of a zero or clean page stores nothing). Before any
/// writeback the pool holds what was stored: its entries span about their
/// number of stores.
fn pool_horizon(own: &Swap, evicted: u64) -> u64 {
    let pool = own.zswap();
    let per_store = evicted as f64 / pool.stores().max(1) as f64;
    let horizon = match pool.writeback_horizon() {
        0 => pool.stored_pages() as u64,
        h => h,
    };
    (horizon as f64 * per_store.max(1.0)) as u64
}

/// The adaptive split of `cfg`'s limit, where the pool is charged to it
/// and can be written back.
fn pool_split(cfg: &RuntimeConfig) -> Option<PoolSplit> {
    let adaptive = cfg.adaptive_pool && cfg.charge_pool && cfg.swap.writeback;
    adaptive.then(|| PoolSplit::new(cfg.limit_bytes / PAGE, cfg.swap.max_pool_bytes() / PAGE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use compress::corpus::Corpus;
    use std::path::Path;

    fn text_page(tag: u64) -> Vec<u8> {
        let mut p = Corpus::synthetic_page("text", tag).unwrap();
        p[..8].copy_from_slice(&tag.to_le_bytes());
        p
    }

    /// The runtime's path through the store side: evictions stored with
    /// [`StoreSide::store`], the pool trimmed to the split's share as the
    /// reclaimer trims it, each batch told with `note_evictions`. A scan
    /// much longer than the pool, with the swap file in memory: the pool
    /// writes back all it stores and serves nothing, so admission sends
    /// stores straight to the file; every page still reads back as it was
    /// written.
    #[test]
    fn a_pass_through_pool_over_a_file_in_memory_is_bypassed_and_pages_read_back() {
        let shm = Path::new("/dev/shm");
        assert!(
            common::memfs::path_in_memory(shm),
            "/dev/shm is a tmpfs on Linux"
        );
        let limit = 1024; // pages
        let cfg = RuntimeConfig {
            swap: zswap::Config {
                swapfile_dir: shm.into(),
                swapfile_pages: 16_384,
                shrinker_enabled: false,
                ..zswap::Config::default()
            },
            limit_bytes: limit * PAGE,
            adaptive_pool: true,
            ..RuntimeConfig::default()
        };
        let side = StoreSide::new(&cfg);
        let own = Swap::new(cfg.swap.clone()).unwrap();
        assert!(own.device().in_memory());
        let (mut slots, mut evicted, mut bypassed_at) = (Vec::new(), 0u64, None);
        for run in 0..512u64 {
            let pages: Vec<Vec<u8>> = (0..16).map(|k| text_page(run * 16 + k)).collect();
            let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
            let run_slots = own.alloc_slots(16).unwrap();
            side.store(&own, &refs, &run_slots).unwrap();
            slots.extend(run_slots);
            evicted += 16;
            while side.pool_over_share(&own, limit) {
                let n = own.writeback(64).unwrap();
                side.note_writeback(n, n as u64 * 10_000);
            }
            side.note_evictions(&own, evicted, 0, limit);
            if bypassed_at.is_none() && side.bypassing_pool() {
                bypassed_at = Some(evicted);
            }
        }
        let at = bypassed_at.expect("the pool was bypassed");
        let s = own.stats();
        assert!(at <= 4 * MIN_SPAN_PAGES, "bypassed after {at} evictions");
        assert!(s.pool_bypassed >= 16 * 64, "{s:?}");
        assert_eq!(s.zswpin, 0);
        for (tag, &slot) in slots.iter().enumerate() {
            let mut page = vec![0u8; PAGE];
            own.swap_in(slot, &mut page).unwrap();
            assert!(page == text_page(tag as u64), "page {tag}");
        }
    }

    /// Least evictions in an admission span.
    const MIN_SPAN_PAGES: u64 = crate::admission::MIN_SPAN;
}
