//! The budget split: how much of the limit the compressed pool may hold,
//! and so how much is left for resident pages, when the pool is charged to
//! the limit (cgroup v2's rule). Resident pages and the pool compete for
//! the one limit, as the kernel's LRU and zswap's shrinker do: a pool too
//! small sends pages to the swap file that would have fit in memory
//! compressed; a pool too large squeezes out the resident pages the
//! program uses most.
//!
//! Each swap-in says which side was short, by its refault distance (the
//! evictions between the page's eviction and its refault: the kernel's
//! workingset measure) and where the page came from:
//!
//! * **From the pool, evicted less than a window `W` of evictions ago**:
//!   with `W` more resident pages it would not have faulted. A resident
//!   "ghost hit", worth a pool refault's cost `c_pool`.
//! * **From the swap file, evicted less than the pool's horizon (the age
//!   in stores of the entries it writes back now; before any writeback,
//!   its number of entries) plus what `W` pages'
//!   bytes hold compressed**: with the pool `W` pages' bytes larger it
//!   would have come from the pool. A pool ghost hit, worth the
//!   difference `c_file - c_pool` (the read, and the write before it).
//!   Further away, but within what the largest pool the split allows
//!   would hold: a fraction of one, the window's reach over the
//!   distance (past the horizon), so a pool pulled small can still see
//!   a scan a little longer than it (the cliff a window alone misses).
//! * **From the pool, among its oldest entries** (evicted longer ago than
//!   the horizon less what `W` pages' bytes hold compressed), while the
//!   pool writes nothing back (none within a turnover: as many evictions
//!   as it has entries) and its charge is within `W` of its target: with
//!   the target `W` smaller those entries would have been written back
//!   and read from the file. It says what a pool ghost hit says where
//!   there is no file traffic to say it, and weighs as much. Without it,
//!   where the pool held everything (uniform random access), nothing
//!   answered the resident ghost hits: the target sank under the pool's
//!   charge and stayed where a steady stream of pages went to the file
//!   and came back (randpage 512 MiB under 256M: a quarter of its pages,
//!   16.5 s against 13.5 s). Once the pool writes back, its file refaults
//!   speak for it alone: counting both took resident room from programs
//!   whose data does not fit (redis under 9M: 6-8% slower).
//!
//! Both windows are the same bytes of the limit, so the marginal value of
//! moving them one way or the other is the ghost hits on each side times
//! their worth. As ARC moves its split on ghost hits, each resident ghost
//! hit moves the pool's target down a page (and a 128th of the way to
//! what the pool holds, where the target is above it), and each pool
//! ghost hit moves it up by `(c_file - c_pool) / c_pool` pages: it
//! settles where the two are equal. The costs are measured (load times by source, writeback
//! time per page), so a slow disk weighs as it should. The target is kept
//! as a share of the limit in force (which a `--max-slowdown` controller
//! moves): between an eighth of it and all of it but an eighth, never
//! above the pool's cap (`--pool-limit`). It starts at its largest: the
//! pool fills with the pages reclaim sends it, and resident ghost hits
//! bring the target down where resident pages need the room. Started at
//! half, a pool that would hold everything wrote back what passed half the
//! limit while it first filled (randpage: 13k pages in the first second,
//! all read back later).
//!
//! A resident ghost hit counts only as much as the evictions of the last
//! window were made for room: a page a controller's cold age sent out
//! would have left however much room there was, so its refault is the
//! age's cost, which the controller weighs, not the split's.
//!
//! Policy only: the runtime feeds it swap-ins, evictions and writebacks,
//! and the reclaimer writes the pool back to its target. Every field is
//! an atomic updated with relaxed ordering, from faulting threads (in
//! their SIGBUS handlers: no lock, no allocation) or, for the evictions'
//! share, from the reclaim thread; a lost update of an average costs
//! nothing but a sample.

use crate::protocol::PAGE;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the pool costs per page of the limit besides what a refault from it
/// costs to load: the fault's own round trip and the eviction (a
/// compression) that sends the page back. Measured in-thread: a pool
/// swap-in fault takes 8-10 µs (p50, randpage), its load 2-3 µs.
pub(crate) const POOL_REFAULT_OVERHEAD_NS: u64 = 6_000;

/// The least a file refault's read is counted at, for a swap file on a
/// disk: a 4 KiB read from the device (46 µs p50 for O_DIRECT random
/// reads on the test VM's virtio disk). A faster read came from a cache:
/// memory outside the limit, which the kernel lets go under pressure. A
/// split that counted on it would push to the file data that fits in
/// memory compressed. A file that lives in memory (tmpfs) is weighed at
/// what its reads cost: there every read is a copy.
pub(crate) const DEVICE_READ_NS: u64 = 45_000;

/// Weight of a new sample in the cost averages (1/16).
const COST_SHIFT: u32 = 4;

/// Where a swapped-in page came from, as the split sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tier {
    /// Decompressed from the pool.
    Pool,
    /// Read from the swap file (now or by readahead).
    File,
    /// Zero-filled, or a store the split does not steer (an ancestor's).
    Other,
}

/// The pool's side of a ghost test: its horizon and how densely it holds
/// pages, read from the store when a file refault needs them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PoolShape {
    /// Age of the entries being written back now, in evictions (their age
    /// in stores, scaled by evictions per store: an eviction of a zero or
    /// clean page stores nothing).
    pub horizon: u64,
    /// Entries in the pool.
    pub entries: u64,
    /// Pool bytes.
    pub bytes: u64,
    /// The swap file lives in memory: its reads are weighed at what they
    /// cost, not at least at a device read's.
    pub file_in_memory: bool,
}

/// Share of the limit the pool may hold at least, and leaves to resident
/// pages at least.
pub(crate) const MIN_SHARE: f64 = 1.0 / 8.0;
/// Share of the target's headroom over what the pool holds that a resident
/// ghost hit takes away ([`PoolSplit::move_down`]).
pub(crate) const HEADROOM_DECAY: f64 = 1.0 / 128.0;
/// Share of the limit the target starts at: the largest there is
/// ([`PoolSplit::target`] clamps it under the pool's cap).
pub(crate) const START_SHARE: f64 = 1.0 - MIN_SHARE;

/// The ghost window `W` for a limit of `limit_pages`: a sixteenth of it.
fn window(limit_pages: usize) -> u64 {
    (limit_pages as u64 / 16).max(64)
}

/// The adaptive target of the pool's charge.
#[derive(Debug)]
pub(crate) struct PoolSplit {
    /// The runtime's configured limit, pages (a controller may lower the
    /// limit in force under it).
    ceiling_pages: usize,
    /// The pool's own limit, pages: the target never passes it.
    cap_pages: usize,
    /// The share of the limit in force the pool may hold now (f64 bits).
    share: AtomicU64,
    /// Average load time of a page from the pool, ns.
    pool_load_ns: AtomicU64,
    /// Average load time of a page from the swap file, ns.
    file_load_ns: AtomicU64,
    /// Average writeback time per page, ns.
    writeback_ns: AtomicU64,
    /// Share of the last window's evictions made for room (f64 bits), not
    /// for age: how much a resident ghost hit says (see [`Self::move_down`]).
    pressure_share: AtomicU64,
    /// Eviction totals at the last [`Self::note_evictions`]: all, and
    /// those made for age.
    seen_evicted: AtomicU64,
    seen_for_age: AtomicU64,
    /// `seen_evicted` at the last writeback ([`NEVER`] before any).
    wrote_back_at: AtomicU64,
}

/// No writeback yet.
const NEVER: u64 = u64::MAX;

impl PoolSplit {
    /// A split of limits up to `ceiling_pages` whose pool may hold at most
    /// `cap_pages`.
    pub fn new(ceiling_pages: usize, cap_pages: usize) -> Self {
        Self {
            ceiling_pages,
            cap_pages: cap_pages.max(1),
            share: AtomicU64::new(START_SHARE.to_bits()),
            // Until measured: a file refault costs four pool refaults.
            pool_load_ns: AtomicU64::new(2_000),
            file_load_ns: AtomicU64::new(12_000),
            writeback_ns: AtomicU64::new(10_000),
            // Until told otherwise (a replay never is), every eviction
            // is for room.
            pressure_share: AtomicU64::new(1.0f64.to_bits()),
            seen_evicted: AtomicU64::new(0),
            seen_for_age: AtomicU64::new(0),
            wrote_back_at: AtomicU64::new(NEVER),
        }
    }

    /// The runtime's configured limit, pages.
    pub fn ceiling_pages(&self) -> usize {
        self.ceiling_pages
    }

    fn share(&self) -> f64 {
        f64::from_bits(self.share.load(Ordering::Relaxed))
    }

    /// Highest share of a limit of `limit_pages`: all of it but an eighth,
    /// and no more than the cap.
    fn max_share(&self, limit_pages: usize) -> f64 {
        let limit = limit_pages.max(1) as f64;
        (1.0 - MIN_SHARE)
            .min(self.cap_pages as f64 / limit)
            .max(MIN_SHARE)
    }

    /// Pages of a limit of `limit_pages` the pool may hold now.
    pub fn target(&self, limit_pages: usize) -> usize {
        let share = self.share().clamp(MIN_SHARE, self.max_share(limit_pages));
        ((share * limit_pages as f64) as usize).clamp(1, self.cap_pages)
    }

    /// A swap-in fault's page came from `tier` after `distance` evictions,
    /// its load taking `load_ns`, under a limit of `limit_pages` of which
    /// the pool is charged `pool_pages`; `shape` reads the pool's (for a
    /// file refault only).
    pub fn note_swapin(
        &self,
        tier: Tier,
        distance: u64,
        load_ns: u64,
        limit_pages: usize,
        pool_pages: usize,
        shape: impl FnOnce() -> PoolShape,
    ) {
        match tier {
            Tier::Pool => {
                average(&self.pool_load_ns, load_ns);
                let w = window(limit_pages);
                if distance < w {
                    self.move_down(limit_pages, pool_pages, shape().file_in_memory);
                } else if pool_pages + w as usize >= self.target(limit_pages) {
                    let shape = shape();
                    if !self.writing_back(shape.entries.max(w))
                        && distance >= pool_reach_shrunk(shape, w as usize)
                    {
                        let hit = self.ghost_hit_pages(shape.file_in_memory);
                        self.move_up(limit_pages, hit as f64);
                    }
                }
            }
            Tier::File => {
                average(&self.file_load_ns, load_ns);
                let pages = self.pool_ghost_pages(limit_pages, pool_pages, distance, shape());
                if pages > 0.0 {
                    self.move_up(limit_pages, pages);
                }
            }
            Tier::Other => {}
        }
    }

    /// `pages` were written back in `ns`.
    pub fn note_writeback(&self, pages: usize, ns: u64) {
        if pages > 0 {
            average(&self.writeback_ns, ns / pages as u64);
            self.wrote_back_at
                .store(self.seen_evicted.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Whether the pool has written back within the last `span`
    /// evictions (as the reclaim thread last counted them): its refaults
    /// from the file then speak for it.
    fn writing_back(&self, span: u64) -> bool {
        match self.wrote_back_at.load(Ordering::Relaxed) {
            NEVER => false,
            at => self.seen_evicted.load(Ordering::Relaxed).saturating_sub(at) < span,
        }
    }

    /// The runtime has evicted `evicted` pages in all, `for_age` of them
    /// for their age before any pressure (a controller's cold age), under
    /// a limit of `limit_pages`. Called by the one reclaim thread, each
    /// tick and after each batch it evicts for age (their refaults can
    /// come before the tick ends). The share of the last window's
    /// evictions made for room follows: a page evicted for its age would
    /// have left however much resident room there was, so its refault
    /// says nothing about the split.
    pub fn note_evictions(&self, evicted: u64, for_age: u64, limit_pages: usize) {
        let new = evicted.saturating_sub(self.seen_evicted.swap(evicted, Ordering::Relaxed));
        let new_for_age =
            for_age.saturating_sub(self.seen_for_age.swap(for_age, Ordering::Relaxed));
        if new == 0 {
            return;
        }
        let for_room = new.saturating_sub(new_for_age) as f64 / new as f64;
        // The last window's evictions, or all there were while fewer.
        let window = window(limit_pages).min(evicted).max(1);
        let weight = (new as f64 / window as f64).min(1.0);
        self.update_f64(&self.pressure_share, |p| p + weight * (for_room - p));
    }

    /// Pages the target grows by for a file refault after `distance`
    /// evictions, the pool holding `pool_pages` of a limit of
    /// `limit_pages` and shaped as `shape`. Within the reach of a pool
    /// larger by the window: a pool ghost hit, [`Self::ghost_hit_pages`].
    /// Further, but within the reach of the largest pool the split allows:
    /// that much, scaled down by how much further than the window's reach
    /// it lies (the window's share of the enlargement that would have kept
    /// it). Without this tail a small pool cannot see data that a larger
    /// one would hold: a scan a little longer than what a small pool holds
    /// refaults from the file just past its reach, every time, and the
    /// target, pulled down by resident ghost hits while the pool first
    /// filled, stayed at its floor (sqlite under 8M: 20.5–21 s in three
    /// runs, against 13.3–13.6 s with the tail). Further than the
    /// largest pool's reach: nothing (no split would have kept it).
    fn pool_ghost_pages(
        &self,
        limit_pages: usize,
        pool_pages: usize,
        distance: u64,
        shape: PoolShape,
    ) -> f64 {
        let hit = self.ghost_hit_pages(shape.file_in_memory) as f64;
        let reach = pool_reach(shape, window(limit_pages) as usize);
        if distance < reach {
            return hit;
        }
        if !self.within_largest_pool(limit_pages, pool_pages, distance, shape) {
            return 0.0;
        }
        let near = reach.saturating_sub(shape.horizon).max(1) as f64;
        let far = distance.saturating_sub(shape.horizon).max(1) as f64;
        hit * near / far
    }

    /// Whether a page refaulting after `distance` evictions would have been
    /// in the largest pool the split allows (under a limit of
    /// `limit_pages`, the pool holding `pool_pages` and shaped as
    /// `shape`): a page read from the swap file that a pool could have
    /// held.
    pub fn within_largest_pool(
        &self,
        limit_pages: usize,
        pool_pages: usize,
        distance: u64,
        shape: PoolShape,
    ) -> bool {
        let largest = (self.max_share(limit_pages) * limit_pages as f64) as usize;
        distance < pool_reach(shape, largest.saturating_sub(pool_pages))
    }

    /// The measured per-page costs, ns: a load from the pool, a load from
    /// the swap file (at least a device read's unless the file lives in
    /// memory, `file_in_memory`, as a ghost hit weighs it), a writeback.
    pub fn load_costs(&self, file_in_memory: bool) -> (u64, u64, u64) {
        let least = if file_in_memory { 0 } else { DEVICE_READ_NS };
        (
            self.pool_load_ns.load(Ordering::Relaxed),
            self.file_load_ns.load(Ordering::Relaxed).max(least),
            self.writeback_ns.load(Ordering::Relaxed),
        )
    }

    /// Pages the target grows by on a pool ghost hit: what a file refault
    /// costs beyond a pool refault, over what a pool refault costs. A read
    /// counts at least as a device read's, unless the file lives in memory
    /// (`file_in_memory`): there every read is a copy, and a split that
    /// weighed it as a device read grew the pool into the room of resident
    /// pages for little (swap files in /dev/shm: python-list under 24M
    /// 19.9 s against 11 s, redis under 9M 22 s against 12.8 s).
    fn ghost_hit_pages(&self, file_in_memory: bool) -> usize {
        let (pool_load, file_load, writeback) = self.load_costs(file_in_memory);
        let pool = pool_load + POOL_REFAULT_OVERHEAD_NS;
        let file = file_load + writeback + POOL_REFAULT_OVERHEAD_NS;
        (file.saturating_sub(pool) as f64 / pool as f64)
            .round()
            .max(1.0) as usize
    }

    /// A resident ghost hit: a page less for the pool. Where the pool's
    /// charge is under the target, the headroom between them first shrinks
    /// by [`HEADROOM_DECAY`] (all of it where the swap file is in memory,
    /// `file_in_memory`: there the pool ghost hits that made it are worth
    /// a copy each, and keeping it took python-list under 24M, swap file
    /// in /dev/shm, 16.5 s against 9.3 s): a target the pool does not
    /// fill would otherwise sink unseen, and spring on the program later.
    /// The headroom is what pool ghost hits have added and the pool has
    /// not filled yet, so on a disk it shrinks, not vanishes: taken away
    /// whole at each resident ghost hit, it let the rarer hits on one side
    /// undo the heavier ones on the other. Under uniform random access (randpage
    /// 512 MiB under 256M, the pool counted), where each pool ghost hit
    /// weighs seven pages or more (a device read over a pool refault), the
    /// pool settled at 55% of the limit and a fifth of the swap-ins read
    /// the swap file (34 s; with the headroom shrinking, 18.6-19.3 s,
    /// and 18 s with no pull to the charge at all, but python-list, whose
    /// resident side needs the pull, 42 s against 39 s).
    /// Weighed by the share of recent evictions made for room: where pages
    /// leave for their age (a controller's cold age, the charge under the
    /// limit), their refaults are the age's cost, not the split's, and
    /// counting them pulled the target to its floor while the pool was
    /// still filling, so that the cold pages went on to the swap file with
    /// the charge far under the limit (redis-hot under `--max-slowdown`:
    /// 15k of 35k evicted pages written back, each read back from the
    /// device).
    fn move_down(&self, limit_pages: usize, pool_pages: usize, file_in_memory: bool) {
        let limit = limit_pages.max(1) as f64;
        let held = pool_pages as f64 / limit;
        let max = self.max_share(limit_pages);
        let weight = f64::from_bits(self.pressure_share.load(Ordering::Relaxed));
        let decay = if file_in_memory { 1.0 } else { HEADROOM_DECAY };
        self.update(|s| {
            let base = if s > held {
                held + (s - held) * (1.0 - decay)
            } else {
                s
            };
            let down = (base - 1.0 / limit).clamp(MIN_SHARE, max);
            s + weight * (down - s)
        });
    }

    fn move_up(&self, limit_pages: usize, pages: f64) {
        let limit = limit_pages.max(1) as f64;
        let max = self.max_share(limit_pages);
        self.update(|s| (s + pages / limit).clamp(MIN_SHARE, max));
    }

    fn update(&self, f: impl Fn(f64) -> f64) {
        self.update_f64(&self.share, f);
    }

    fn update_f64(&self, cell: &AtomicU64, f: impl Fn(f64) -> f64) {
        let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
            Some(f(f64::from_bits(bits)).to_bits())
        });
    }
}

/// Refault distance under which a file refault would have come from a
/// pool shaped as `shape` but larger by `extra_pages` of bytes: the
/// horizon, plus the entries those bytes hold compressed, stretched as the
/// pool's entries are stretched over its horizon (entries leave by
/// refaulting too).
fn pool_reach(shape: PoolShape, extra_pages: usize) -> u64 {
    if shape.entries == 0 || shape.bytes == 0 {
        return shape.horizon;
    }
    let extra_bytes = extra_pages as f64 * PAGE as f64;
    let entries = extra_bytes * shape.entries as f64 / shape.bytes as f64;
    let stretch = (shape.horizon as f64 / shape.entries as f64).max(1.0);
    shape.horizon + (entries * stretch) as u64
}

/// Refault distance from which a pool refault would have come from the
/// swap file had the pool been smaller by `fewer_pages` of bytes: its
/// oldest entries, those bytes' worth, would have been written back. The
/// mirror of [`pool_reach`].
fn pool_reach_shrunk(shape: PoolShape, fewer_pages: usize) -> u64 {
    let gone = pool_reach(shape, fewer_pages) - shape.horizon;
    shape.horizon.saturating_sub(gone)
}

/// Moves the average in `avg` a sixteenth of the way to `sample`.
pub(crate) fn average(avg: &AtomicU64, sample: u64) {
    let a = avg.load(Ordering::Relaxed);
    let next = a - (a >> COST_SHIFT) + (sample >> COST_SHIFT);
    avg.store(next, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 65_536; // 256 MiB

    /// A split whose target is half the limit (where most tests start).
    fn split() -> PoolSplit {
        let s = PoolSplit::new(LIMIT, LIMIT - LIMIT / 8);
        s.share.store(0.5f64.to_bits(), Ordering::Relaxed);
        s
    }

    fn shape(horizon: u64) -> PoolShape {
        // 40,000 entries at 2.5:1 in the pool.
        PoolShape {
            horizon,
            entries: 40_000,
            bytes: 40_000 * PAGE as u64 * 2 / 5,
            file_in_memory: false,
        }
    }

    /// A swap-in under the 256 MiB limit, the pool holding all of it.
    fn swapin(s: &PoolSplit, tier: Tier, distance: u64, load_ns: u64, horizon: u64) {
        s.note_swapin(tier, distance, load_ns, LIMIT, LIMIT, || shape(horizon));
    }

    #[test]
    fn the_split_starts_at_its_largest_and_stays_in_its_bounds() {
        let s = PoolSplit::new(LIMIT, LIMIT - LIMIT / 8);
        assert_eq!(s.target(LIMIT), LIMIT - LIMIT / 8);
        for _ in 0..100_000 {
            swapin(&s, Tier::Pool, 0, 2_000, 0);
        }
        assert_eq!(s.target(LIMIT), LIMIT / 8);
        for _ in 0..100_000 {
            swapin(&s, Tier::File, 0, 30_000, 50_000);
        }
        assert_eq!(s.target(LIMIT), LIMIT - LIMIT / 8);
    }

    #[test]
    fn refaults_of_pages_evicted_for_their_age_leave_the_split_alone() {
        let s = split();
        // A window and more of evictions, all for age: the refaults that
        // follow are the cold age's cost, not resident room's.
        s.note_evictions(LIMIT as u64, LIMIT as u64, LIMIT);
        for _ in 0..10_000 {
            swapin(&s, Tier::Pool, 0, 2_000, 0);
        }
        assert_eq!(s.target(LIMIT), LIMIT / 2);
        // Then a window of evictions for room: the same refaults move it.
        s.note_evictions(2 * LIMIT as u64, LIMIT as u64, LIMIT);
        for _ in 0..100_000 {
            swapin(&s, Tier::Pool, 0, 2_000, 0);
        }
        assert_eq!(s.target(LIMIT), LIMIT / 8);
    }

    #[test]
    fn the_pressure_share_follows_the_last_window_of_evictions() {
        let s = split();
        let w = window(LIMIT);
        let share = || f64::from_bits(s.pressure_share.load(Ordering::Relaxed));
        assert_eq!(share(), 1.0, "until told, every eviction is for room");
        // Fewer evictions than a window: they are all there is to go by.
        s.note_evictions(64, 64, LIMIT);
        assert_eq!(share(), 0.0);
        s.note_evictions(64 + w, 64 + w, LIMIT);
        assert_eq!(share(), 0.0);
        // A quarter window, all for room: a quarter of the way back.
        s.note_evictions(64 + w + w / 4, 64 + w, LIMIT);
        assert!((share() - 0.25).abs() < 1e-9, "{}", share());
        // Nothing new: unchanged.
        s.note_evictions(64 + w + w / 4, 64 + w, LIMIT);
        assert!((share() - 0.25).abs() < 1e-9, "{}", share());
    }

    #[test]
    fn the_target_follows_the_limit_in_force_and_the_cap() {
        let s = split();
        // A controller halved the limit: half of the new one.
        assert_eq!(s.target(LIMIT / 2), LIMIT / 4);
        // A pool capped at 8 MiB never gets more, however large the limit.
        let small = PoolSplit::new(LIMIT, 2048);
        for _ in 0..100_000 {
            small.note_swapin(Tier::File, 0, 30_000, LIMIT, 2048, || shape(50_000));
        }
        assert_eq!(small.target(LIMIT), 2048);
        assert_eq!(small.target(4 * LIMIT), 2048);
    }

    #[test]
    fn only_refaults_within_a_window_move_the_target() {
        let s = split();
        let far = window(LIMIT);
        // Pool refaults of pages evicted long ago, yet well inside the
        // pool: a larger resident set of the window's size would not have
        // kept them, and a pool smaller by as much would have.
        for _ in 0..1000 {
            s.note_swapin(Tier::Pool, far, 2_000, LIMIT, LIMIT, || shape(1_000_000));
        }
        assert_eq!(s.target(LIMIT), LIMIT / 2);
        // File refaults far beyond the horizon: a slightly larger pool
        // would not have kept them either.
        for _ in 0..1000 {
            swapin(&s, Tier::File, 10_000_000, 30_000, 50_000);
        }
        assert_eq!(s.target(LIMIT), LIMIT / 2);
        // Zero pages say nothing.
        swapin(&s, Tier::Other, 0, 0, 0);
        assert_eq!(s.target(LIMIT), LIMIT / 2);
    }

    #[test]
    fn a_file_refault_weighs_what_it_costs_beyond_a_pool_refault() {
        let s = split();
        for _ in 0..300 {
            // The pool far under its target: no refault moves it.
            s.note_swapin(Tier::Pool, u64::MAX, 2_000, LIMIT, 0, || shape(0));
            swapin(&s, Tier::File, u64::MAX, 62_000, 0);
            s.note_writeback(10, 100_000);
        }
        assert_eq!(s.target(LIMIT), LIMIT / 2);
        // pool: 2 + 6 µs; file: 62 + 10 + 6 µs: 70 / 8 = 8.75.
        let before = s.target(LIMIT);
        swapin(&s, Tier::File, 50_000, 62_000, 50_000);
        let step = s.target(LIMIT) - before;
        assert!((8..=9).contains(&step), "{step}");
        // A resident ghost hit: one page down.
        swapin(&s, Tier::Pool, 0, 2_000, 0);
        assert_eq!(s.target(LIMIT), before + step - 1);
    }

    #[test]
    fn a_fast_read_counts_as_one_from_the_device_unless_the_file_is_in_memory() {
        let s = split();
        for _ in 0..300 {
            swapin(&s, Tier::Pool, u64::MAX, 2_000, 0);
            swapin(&s, Tier::File, u64::MAX, 4_000, 0);
            s.note_writeback(10, 100_000);
        }
        // file: max(4, 45) + 10 + 6 µs against 8: 53 / 8 = 6.6.
        assert_eq!(s.ghost_hit_pages(false), 7);
        // In memory: 4 + 10 + 6 µs against 8: 12 / 8 = 1.5.
        assert!(s.ghost_hit_pages(true) <= 2, "{}", s.ghost_hit_pages(true));
    }

    #[test]
    fn the_headroom_over_the_pools_charge_shrinks_at_each_resident_ghost_hit() {
        let s = split();
        let held = 10_000;
        let headroom = (LIMIT / 2 - held) as f64;
        s.note_swapin(Tier::Pool, 0, 2_000, LIMIT, held, || shape(0));
        let after = held as f64 + headroom * (1.0 - HEADROOM_DECAY) - 1.0;
        assert!(
            (s.target(LIMIT) as f64 - after).abs() <= 1.0,
            "{}",
            s.target(LIMIT)
        );
        // Resident ghost hits alone take it down to the pool's charge and on.
        for _ in 0..100_000 {
            s.note_swapin(Tier::Pool, 0, 2_000, LIMIT, held, || shape(0));
        }
        assert_eq!(s.target(LIMIT), LIMIT / 8);
        // With the swap file in memory the headroom goes at once.
        let s = split();
        s.note_swapin(Tier::Pool, 0, 2_000, LIMIT, held, || PoolShape {
            file_in_memory: true,
            ..shape(0)
        });
        assert_eq!(s.target(LIMIT), held - 1);
    }

    #[test]
    fn pool_ghost_hits_outweighing_resident_ones_keep_the_target_over_the_pool() {
        // Uniform random access: a file refault within the pool's reach
        // for every three resident ghost hits, the pool not yet grown.
        let s = split();
        let held = LIMIT / 4;
        for _ in 0..10_000 {
            s.note_swapin(Tier::File, 0, 50_000, LIMIT, held, || shape(40_000));
            for _ in 0..3 {
                s.note_swapin(Tier::Pool, 0, 2_000, LIMIT, held, || shape(0));
            }
        }
        // Each round: about 7 pages up, then three times a 128th of the
        // headroom and a page down; it settles near 170 pages over the
        // pool, where the pool grows into it. Taken away whole at each
        // resident ghost hit, it ended each round under the pool.
        assert!(s.target(LIMIT) > held + 100, "{}", s.target(LIMIT));
    }

    #[test]
    fn a_refault_from_the_pools_oldest_entries_holds_the_target_up() {
        // A pool of 40,000 entries at 2.5:1, horizon 80,000 evictions,
        // charged just under its target: a pool smaller by the window
        // would have written back its oldest 2.5 W entries, which span
        // 5 W evictions.
        let w = window(LIMIT);
        let tail = pool_reach_shrunk(shape(80_000), w as usize);
        assert_eq!(tail, 80_000 - 5 * w);
        let held = LIMIT / 2 - 100;
        let after = |distance: u64, held: usize| {
            let s = split();
            s.note_swapin(Tier::Pool, distance, 2_000, LIMIT, held, || shape(80_000));
            s.target(LIMIT) as i64 - (LIMIT / 2) as i64
        };
        // From the tail: what a file refault would have cost beyond it.
        let hit = split().ghost_hit_pages(false) as i64;
        assert!(hit >= 6, "{hit}");
        assert_eq!(after(tail, held), hit);
        assert_eq!(after(10 * tail, held), hit);
        // Younger than the tail (and older than the window): nothing.
        assert_eq!(after(tail - 1, held), 0);
        // A pool more than a window under its target: a target smaller
        // by the window would have written nothing back.
        assert_eq!(after(tail, LIMIT / 2 - w as usize - 1), 0);
    }

    #[test]
    fn a_pool_that_writes_back_is_held_up_by_its_file_refaults_alone() {
        let w = window(LIMIT);
        let held = LIMIT / 2 - 100;
        let tail = pool_reach_shrunk(shape(80_000), w as usize);
        let s = split();
        s.note_evictions(10 * w, 0, LIMIT);
        s.note_writeback(64, 640_000);
        s.note_swapin(Tier::Pool, tail, 2_000, LIMIT, held, || shape(80_000));
        assert_eq!(s.target(LIMIT), LIMIT / 2);
        // Fewer evictions since than the pool's 40,000 entries: still.
        s.note_evictions(10 * w + 39_999, 0, LIMIT);
        s.note_swapin(Tier::Pool, tail, 2_000, LIMIT, held, || shape(80_000));
        assert_eq!(s.target(LIMIT), LIMIT / 2);
        // A turnover of the pool with no writeback: the tail speaks again.
        s.note_evictions(10 * w + 40_000, 0, LIMIT);
        s.note_swapin(Tier::Pool, tail, 2_000, LIMIT, held, || shape(80_000));
        assert!(s.target(LIMIT) > LIMIT / 2, "{}", s.target(LIMIT));
    }

    #[test]
    fn uniform_random_access_keeps_a_pool_that_holds_everything() {
        // Every page in the pool or resident, accessed uniformly at random
        // (randpage 512 MiB under 256M, the pool counted): one pool
        // refault in 25 is a resident ghost hit, and more come from the
        // pool's oldest entries than that. Even one of those for three
        // resident ghost hits keeps the target over the pool's charge.
        // Without them the resident ghost hits pulled the target under it
        // for good, the file ghost hits that answered came only once pages
        // were on the file, and the pool wrote a quarter of its pages to
        // the file and read them back.
        let s = split();
        let held = LIMIT / 2 - 1_000;
        let tail = pool_reach_shrunk(shape(80_000), window(LIMIT) as usize);
        for _ in 0..10_000 {
            s.note_swapin(Tier::Pool, tail, 2_000, LIMIT, held, || shape(80_000));
            for _ in 0..3 {
                s.note_swapin(Tier::Pool, 0, 2_000, LIMIT, held, || shape(80_000));
            }
        }
        assert!(s.target(LIMIT) > held, "{}", s.target(LIMIT));
    }

    #[test]
    fn the_ghost_reach_stretches_with_the_pools_turnover() {
        let w = window(LIMIT);
        // A pool of 40,000 entries at 2.5:1 whose horizon is 80,000 stores
        // (half its pages left by refaulting): the window's bytes hold
        // 2.5 W entries, stretched twice.
        let reach = pool_reach(shape(80_000), w as usize);
        assert_eq!(reach, 80_000 + 5 * w);
        // An empty pool: the horizon alone.
        let empty = PoolShape {
            horizon: 7,
            entries: 0,
            bytes: 0,
            file_in_memory: false,
        };
        assert_eq!(pool_reach(empty, w as usize), 7);
    }

    #[test]
    fn a_file_refault_past_the_window_but_within_a_larger_pools_reach_counts_less() {
        let s = split();
        // A pool charged 8,192 pages of the limit, shaped as `shape`
        // (40,000 entries at 2.5:1), horizon 40,000.
        let small = 8_192;
        let at = |distance: u64| {
            let s2 = split();
            s2.note_swapin(Tier::File, distance, 50_000, LIMIT, small, || shape(40_000));
            s2.target(LIMIT) as f64 - (LIMIT / 2) as f64
        };
        let reach = pool_reach(shape(40_000), window(LIMIT) as usize);
        let hit = at(reach - 1);
        assert!(hit >= 1.0, "{hit}");
        // Twice as far past the horizon as the window's reach: half a hit.
        let twice = at(40_000 + 2 * (reach - 40_000));
        assert!((twice - hit / 2.0).abs() <= 1.0, "{twice} against {hit}");
        // Past what the largest pool the split allows would hold: nothing.
        let largest = LIMIT - LIMIT / 8;
        let beyond = pool_reach(shape(40_000), largest - small);
        assert_eq!(at(beyond), 0.0);
        // A pool already as large as allowed has no tail.
        s.note_swapin(Tier::File, reach + 1, 50_000, LIMIT, largest, || {
            shape(40_000)
        });
        assert_eq!(s.target(LIMIT), LIMIT / 2);
    }

    #[test]
    fn a_file_in_memory_weighs_its_reads_at_what_they_cost() {
        // Reads of 3 µs from the file, within the pool's reach.
        let grown = |file_in_memory: bool| {
            let s = split();
            for _ in 0..100 {
                s.note_swapin(Tier::File, 0, 3_000, LIMIT, LIMIT / 4, || PoolShape {
                    file_in_memory,
                    ..shape(40_000)
                });
            }
            s.target(LIMIT) - LIMIT / 2
        };
        let (memory, disk) = (grown(true), grown(false));
        // On a disk each counts as a device read: 6 pages or more; in
        // memory, at most two.
        assert!(disk >= 600, "{disk}");
        assert!(memory <= 200, "{memory}");
    }

    #[test]
    fn a_refault_is_near_within_the_largest_pools_reach() {
        let s = split();
        let small = 8_192;
        let largest = LIMIT - LIMIT / 8;
        let beyond = pool_reach(shape(40_000), largest - small);
        let near = |distance| s.within_largest_pool(LIMIT, small, distance, shape(40_000));
        assert!(near(0));
        assert!(near(beyond - 1));
        assert!(!near(beyond));
        // A pool already as large as allowed reaches its horizon only.
        assert!(s.within_largest_pool(LIMIT, largest, 39_999, shape(40_000)));
        assert!(!s.within_largest_pool(LIMIT, largest, 40_000, shape(40_000)));
    }

    #[test]
    fn a_pool_pulled_to_its_floor_climbs_back_on_a_scan_past_its_reach() {
        // While the pool first fills, resident ghost hits pull the target
        // to what it holds and on to the floor; then a loop a little
        // longer than a small pool's reach refaults from the file.
        let s = split();
        let floor = LIMIT / 8;
        for _ in 0..100_000 {
            s.note_swapin(Tier::Pool, 0, 2_000, LIMIT, 1_000, || shape(0));
        }
        assert_eq!(s.target(LIMIT), floor);
        let small = PoolShape {
            horizon: 20_000,
            entries: 20_000,
            bytes: floor as u64 * PAGE as u64,
            file_in_memory: false,
        };
        let loop_distance = pool_reach(small, 4 * window(LIMIT) as usize);
        for _ in 0..10_000 {
            s.note_swapin(Tier::File, loop_distance, 50_000, LIMIT, floor, || small);
        }
        assert!(s.target(LIMIT) > 2 * floor, "{}", s.target(LIMIT));
    }

    #[test]
    fn threads_moving_the_target_at_once_keep_it_in_its_bounds() {
        // Faulting threads feed the split from their signal handlers at
        // the same time: no update may take the target out of its bounds,
        // and equal pushes each way leave it where a lone thread would.
        let s = std::sync::Arc::new(split());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..50_000u64 {
                        let (tier, load) = if (i + t) % 2 == 0 {
                            (Tier::Pool, 2_000)
                        } else {
                            (Tier::File, 50_000)
                        };
                        swapin(&s, tier, 0, load, 1_000);
                        s.note_writeback(1, 10_000);
                        let now = s.target(LIMIT);
                        assert!((LIMIT / 8..=LIMIT - LIMIT / 8).contains(&now), "{now}");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // As many ghost hits each way: the file's weigh more.
        assert!(s.target(LIMIT) > LIMIT / 2, "{}", s.target(LIMIT));
    }

    /// Uniform random access over a buffer twice the limit, simulated: the
    /// split must keep the pool's target at least where the buffer fits
    /// compressed (the pool then charges what it holds, the resident
    /// share the rest), and read almost nothing from the file.
    #[test]
    fn random_access_that_fits_compressed_keeps_off_the_file() {
        // 512 MiB at 2.5:1 under 256M: all fits with 85M resident.
        let s = split();
        let pages = 2 * LIMIT as u64;
        let ratio = 2.5;
        // The pool's charge where everything not resident fits in it.
        let fits = (pages - LIMIT as u64) as f64 / (ratio - 1.0);
        let mut rng = 0x2545F4914F6CDD1Du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut file_refaults = 0;
        for round in 0..400_000u64 {
            // The pool charges what it holds, at most its target.
            let pool = (s.target(LIMIT) as f64).min(fits);
            let resident = LIMIT as f64 - pool;
            let pooled = (pool * ratio).min(pages as f64 - resident);
            // Where a random page is, in this steady state.
            let x = (next() % pages) as f64;
            if x < resident {
                continue;
            }
            // Its refault distance: the faults taken since it left, about
            // its rank among the non-resident pages.
            let distance = (x - resident) as u64;
            let tier = if x < resident + pooled {
                Tier::Pool
            } else {
                Tier::File
            };
            if round > 300_000 && tier == Tier::File {
                file_refaults += 1;
            }
            let horizon = pooled as u64;
            s.note_swapin(tier, distance, 3_000, LIMIT, pool as usize, || PoolShape {
                horizon,
                entries: pooled as u64,
                bytes: (pool * PAGE as f64) as u64,
                file_in_memory: false,
            });
        }
        let pool = s.target(LIMIT);
        assert!(pool as f64 >= 0.95 * fits, "pool target {pool} of {LIMIT}");
        assert!(file_refaults < 1_000, "{file_refaults} file refaults");
    }
}
