//! Reclaim: the reclaim thread (kswapd's role) evicts the oldest pages
//! while the process's charge is over the limit. The charge is what a
//! memcg counts ([`Pager::own_charge`]): resident pages, the swap store's
//! pool and entries. Where the pool's share of the limit adapts
//! (`split.rs`), it also writes the pool's coldest pages back while the
//! pool is over its share, which leaves the room to resident pages
//! (zswap's shrinker under memcg pressure). When nothing resident is left
//! to evict and the pool itself is the charge, it writes the pool's
//! coldest pages back to the swap file; every 100 ms while over, it first
//! compacts the pool (zsmalloc's shrinker), and under the limit too once
//! an eighth of the pool is free objects. A fault that finds the charge
//! over the limit by more than [`THROTTLE_HEADROOM_BYTES`] (or 25% of a
//! small limit) plus one batch is throttled: its thread sleeps until
//! reclaim has caught up (`memory.high` throttling). Aging
//! runs before eviction, at most every `aging_interval`, or every
//! [`FAST_AGING_INTERVAL`] while the reclaim thread's own write-protect
//! calls mount up (see [`FAST_AGING_CALLS`]). Policy only: what an
//! eviction does is [`crate::protocol::Evict`].

use crate::config::InjectFailure;
use crate::pager::Pager;
use crate::protocol::Env;
use crate::protocol::PAGE;
use crate::protocol::{Age, Evict};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Least time between two compactions of the pool by the reclaimer.
pub const COMPACT_INTERVAL: Duration = Duration::from_millis(100);

/// Least the pool's free objects add up to, in whole zspages' pages,
/// before the reclaimer compacts it while under the limit (1 MiB).
pub const FRAGMENTED_MIN_PAGES: usize = 256;

/// Write-protect calls the reclaim thread made for unarmed victims since
/// the last aging pass past which the next pass may come after
/// [`FAST_AGING_INTERVAL`] instead of the aging interval. Each such call
/// interrupts the program's CPU, as a pass does once per region; victims
/// that turn over faster than passes come (sqlite under 8M: a resident
/// page lives about 15 ms) are armed by none, and take a call each
/// (77% of its eviction runs at 100 ms). A faulting thread's own calls flush
/// its CPU alone and do not count. Whether passes run at all stays the
/// governor's (`aging.rs`), which weighs the write-protect faults they
/// raise against the calls they save.
pub const FAST_AGING_CALLS: u64 = 64;
/// Least time between two aging passes while the reclaim thread's calls
/// mount up: its tick.
pub const FAST_AGING_INTERVAL: Duration = Duration::from_millis(20);

/// Least time before the next aging pass: `base` (the aging interval), or
/// [`FAST_AGING_INTERVAL`] once the reclaim thread has made
/// [`FAST_AGING_CALLS`] write-protect calls since the last pass, while the
/// governor runs aging (`aging_on`). Where it is off, its tries of aging
/// come one epoch in so many, and shorter epochs would bring them, and
/// their write-protect faults, sooner.
fn pass_interval(base: Duration, calls_since_pass: u64, aging_on: bool) -> Duration {
    if aging_on && calls_since_pass >= FAST_AGING_CALLS {
        FAST_AGING_INTERVAL.min(base)
    } else {
        base
    }
}

thread_local! {
    /// This thread runs [`Pager::reclaim_loop`].
    static ON_RECLAIM_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is a reclaim thread (write-protect calls
/// made there interrupt the program's CPUs).
pub(crate) fn on_reclaim_thread() -> bool {
    ON_RECLAIM_THREAD.with(std::cell::Cell::get)
}

/// Most batches of cold pages the reclaimer evicts in one tick (20 ms)
/// before any pressure: 16 batches of 64 pages, 200 MB/s, on the CPU the
/// reclaimer runs on; a limit passed still gets all it needs.
pub const COLD_BATCHES_PER_TICK: usize = 16;

/// Most the charge may pass the limit by (a quarter of the limit where
/// that is less; one reclaim batch aside) before faults are throttled
/// until reclaim catches up. A constant, not a share of the limit, so that
/// a run's peak is its limit plus a stated amount however large the
/// limit (1.25 L before: 128 MiB over a 512M limit, where a writeback-
/// bound run sat at the ceiling). 16 MiB is 40 ms of reclaim at 100k
/// pages/s: a writeback-bound run of random bytes under 256M took as long
/// with it as with 64 MiB.
pub const THROTTLE_HEADROOM_BYTES: usize = 16 << 20;

/// How far the charge may pass a limit of `limit_bytes` before faults are
/// throttled: a quarter of the limit, at most [`THROTTLE_HEADROOM_BYTES`]
/// (one reclaim batch aside). The one formula for the runtime's ceiling
/// and for what reports hold a run's peak to.
pub fn throttle_headroom_bytes(limit_bytes: usize) -> usize {
    (limit_bytes / 4).min(THROTTLE_HEADROOM_BYTES)
}

impl Pager {
    /// Where reclaim stops once the limit is passed: a margin under it of
    /// 1/32 of the limit, at least one reclaim batch.
    fn low_watermark(&self) -> usize {
        let margin = (self.limit() / 32).max(self.cfg.reclaim_batch);
        self.limit().saturating_sub(margin)
    }

    /// Residency past which faults wait for reclaim: the limit plus a
    /// quarter of it, at most [`THROTTLE_HEADROOM_BYTES`], plus one batch.
    fn ceiling(&self) -> usize {
        let headroom = throttle_headroom_bytes(self.limit() * PAGE) / PAGE;
        self.limit() + headroom + self.cfg.reclaim_batch
    }

    pub(crate) fn reclaim_loop(&self) {
        self.register_runtime_thread();
        ON_RECLAIM_THREAD.with(|on| on.set(true));
        let mut site = crate::direct::DirectReclaim::new(self.direct_reading());
        while !self.stopping() {
            self.env
                .live()
                .reclaim_wake
                .wait_timeout(Duration::from_millis(20));
            self.drain_trace(false);
            self.free_loaded();
            self.sweep_shared();
            self.thaw_generations();
            self.shrink_store();
            while !self.stopping() && self.trim_pool() > 0 {}
            self.compact_fragmented();
            self.tick_age_clock();
            self.evict_cold();
            self.note_evictions();
            self.publish_reclaim();
            self.choose_direct(&mut site);
            if self.direct_now.load(Ordering::Relaxed) {
                // Faults evict in their own threads: the aging passes that
                // would come before this thread's evictions come here.
                self.maybe_age();
            }
            if self.charged() <= self.limit() {
                continue;
            }
            // Over the limit: reclaim to the low watermark, a margin under
            // it (kswapd's high watermark), so that the faults that follow
            // do not each wake this thread for one batch.
            while !self.stopping() && self.charged() > self.low_watermark() {
                self.inject_failure();
                if self
                    .env
                    .live()
                    .recorder
                    .as_ref()
                    .is_some_and(|r| r.filling())
                {
                    self.drain_trace(false);
                }
                if self.compact_store() > 0 {
                    // Fewer pool pages: perhaps under the limit already.
                    continue;
                }
                let mut n = self.evict(self.cfg.reclaim_batch);
                self.free_loaded();
                self.shrink_store();
                n += self.trim_pool();
                if n == 0 && self.cfg.charge_pool {
                    // Nothing resident to evict, yet over the limit: the
                    // pool's own pages are the charge. Write its coldest
                    // back (the zswap shrinker under memcg pressure).
                    n = self.write_back(self.cfg.reclaim_batch);
                }
                self.reclaim_stalled.store(n == 0, Ordering::Release);
                if n == 0 {
                    break;
                }
            }
        }
    }

    /// Frees the pool objects of the pages swapped in since the last
    /// call (`Zswap::free_loaded`): the faulting threads leave them here.
    /// Under the store gate, as every store call: a fork must not copy
    /// the pool with a size class's lock held.
    fn free_loaded(&self) {
        let _gate = self.env.gated();
        self.env.live().own.zswap().free_loaded();
    }

    /// Writes up to `n` of the pool's coldest pages back to the swap file;
    /// returns how many (0 without writeback, or on an I/O error, which the
    /// store counts).
    fn write_back(&self, n: usize) -> usize {
        let started = std::time::Instant::now();
        let done = {
            let _gate = self.env.gated();
            self.env.live().own.writeback(n).unwrap_or(0)
        };
        self.env
            .store_side
            .note_writeback(done, started.elapsed().as_nanos() as u64);
        self.publish_charge();
        done
    }

    /// Writes back one batch of the pool's coldest pages if the pool's
    /// charge is over its share of the limit (`split.rs`); returns how
    /// many.
    fn trim_pool(&self) -> usize {
        if !self.pool_over_share() {
            return 0;
        }
        self.write_back(self.cfg.reclaim_batch)
    }

    /// The pool holds more of the limit in force than its adaptive share.
    fn pool_over_share(&self) -> bool {
        self.env
            .store_side
            .pool_over_share(&self.env.live().own, self.limit())
    }

    /// Tests of the fatal path: fail as configured.
    fn inject_failure(&self) {
        match self.cfg.inject_failure {
            Some(InjectFailure::ReclaimerPanic) => panic!("injected panic in the reclaimer"),
            Some(InjectFailure::RuntimeThreadFault) => {
                // A page that is not mapped (untouched or swapped out): the
                // read faults. Its region counts an operation in flight, so
                // it cannot be released (unmapped) before the read.
                let picked = {
                    let mut st = self.lock();
                    let found = st
                        .regions
                        .iter()
                        .filter(|(_, r)| !r.dying)
                        .find_map(|(&b, r)| {
                            r.pages
                                .iter()
                                .position(|p| {
                                    matches!(
                                        p.state,
                                        crate::protocol::PageState::Untouched
                                            | crate::protocol::PageState::Swapped { .. }
                                    )
                                })
                                .map(|i| (b, b + i * crate::protocol::PAGE))
                        });
                    if let Some((base, _)) = found {
                        st.begin(base);
                    }
                    found
                };
                if let Some((base, a)) = picked {
                    // SAFETY: a page of a live region that cannot go away
                    // (in flight): memory of ours; the read faults, and the
                    // handler ends the program (unless the program mapped
                    // the page meanwhile: then the read just reads it).
                    let _ = unsafe { std::ptr::read_volatile(a as *const u8) };
                    let mut st = self.lock();
                    st.end(base);
                    st.changed(&self.changed);
                }
            }
            _ => {}
        }
    }

    /// Ages (when due), then evicts up to `n` pages; returns how many.
    pub(crate) fn evict(&self, n: usize) -> usize {
        self.maybe_age();
        let mut op = Evict::new(n);
        self.drive(|cx| op.step(cx))
    }

    /// Sets the age clock LRU records are stamped with.
    fn tick_age_clock(&self) {
        let ms = self.age_clock_now();
        self.lock().advance_clock(ms);
    }

    /// Publishes, every tick, in the shared limit where there is one, the
    /// pages swapped out now (what bringing everything back would cost the
    /// program) and this thread's CPU time (a `--max-slowdown` controller
    /// counts what of it ran while no CPU was idle as the program's
    /// slowdown): read every 250 ms, so not after every operation as the
    /// charge is.
    fn publish_reclaim(&self) {
        let Some(shared) = &self.env.live().shared else {
            return;
        };
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec to fill; the clock id is a constant.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            let cpu_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
            shared.publish_reclaim(self.swapped_pages(), self.on_file_pages(), cpu_ns);
        }
    }

    /// Cold pages leave before pressure: where a controller set a cold age
    /// (`--max-slowdown`), evicts the resident pages queued longer ago than
    /// that (untouched since, as far as faults and tracked writes tell), at
    /// most [`COLD_BATCHES_PER_TICK`] batches a tick, whatever the charge.
    /// A page that was not cold after all faults back in, younger.
    fn evict_cold(&self) {
        let Some(age) = self
            .env
            .live()
            .shared
            .as_ref()
            .and_then(|s| s.cold_age_ms())
        else {
            return;
        };
        for _ in 0..COLD_BATCHES_PER_TICK {
            if self.stopping() {
                return;
            }
            let mut op = Evict::cold(self.cfg.reclaim_batch, age);
            let n = self.drive(|cx| op.step(cx));
            self.env
                .counters
                .pgsteal_proactive
                .fetch_add(n as u64, Ordering::Relaxed);
            self.note_evictions();
            if n == 0 {
                return;
            }
        }
    }

    /// Tells the budget split how many pages have left, and how many of
    /// them for their age.
    fn note_evictions(&self) {
        let c = &self.env.counters;
        self.env.store_side.note_evictions(
            &self.env.live().own,
            c.evicted_pages.load(Ordering::Relaxed),
            c.pgsteal_proactive.load(Ordering::Relaxed),
            self.limit(),
        );
    }

    /// After a fault: wakes reclaim if residency is over the limit.
    /// Returns whether it is past the ceiling, where the fault is throttled:
    /// its page is mapped but its thread sleeps until [`Pager::release_throttled`]
    /// finds reclaim caught up (`memory.high`'s throttling). The handler
    /// itself never waits: it must stay free to serve every other fault.
    pub(crate) fn over_ceiling(&self) -> bool {
        let charged = self.charged();
        if charged > self.limit() {
            self.env.live().reclaim_wake.kick();
        }
        charged > self.ceiling()
    }

    /// After a fault served in the faulting thread, over the limit: that
    /// thread evicts down to the low watermark itself (the kernel's direct
    /// reclaim, as a
    /// memcg over `memory.high` reclaims in the charging task). Its
    /// write-protects and unmaps then flush the TLB of this CPU alone in a
    /// single-threaded program, where the reclaim thread's interrupt the
    /// program's CPU for every run (a random-access run is one page: 64
    /// inter-processor interrupts a batch, a quarter of all the CPU time
    /// of random access on a 2-vCPU VM). No aging here: passes stay the
    /// reclaim thread's, which runs them on its tick meanwhile.
    pub(crate) fn reclaim_in_thread(&self) {
        if !self.direct_now.load(Ordering::Relaxed) || self.charged() <= self.limit() {
            return;
        }
        // The program's only thread, evicting here, needs no protection
        // from writers (`sole.rs`), where the check is worth its calls.
        let now_ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        let asked = self.sole_probe.ask(now_ms, || {
            self.env
                .counters
                .sole_writer_checks
                .fetch_add(1, Ordering::Relaxed);
            crate::sole::only_writer(
                self.owner_pid.load(Ordering::Acquire),
                crate::sys::cached_tid(),
            )
        });
        let sole = asked == Some(true);
        // Down to the low watermark, as the reclaim thread would go: the
        // faults that follow then find the charge under the limit.
        let mut evicted = 0;
        self.as_runtime_thread(|| {
            while self.charged() > self.low_watermark() {
                let op = Evict::new(self.cfg.reclaim_batch);
                let mut op = if sole { op.sole_writer() } else { op };
                let n = self.drive(|cx| op.step(cx));
                evicted += n;
                if n == 0 {
                    // Nothing this thread could evict: the reclaim thread's
                    // turn (it writes the pool back).
                    self.env.live().reclaim_wake.kick();
                    break;
                }
            }
        });
        self.sole_probe.after(now_ms, asked, evicted);
        if self.pool_over_share() {
            // Writeback is file I/O: the reclaim thread's.
            self.env.live().reclaim_wake.kick();
        }
    }

    /// After a fault served in the faulting thread: past the ceiling, the
    /// thread waits here (its page mapped) until reclaim has caught up, can
    /// do no more, or the runtime stops — what [`Pager::release_throttled`]
    /// does for the handler thread's faults.
    pub(crate) fn throttle_in_thread(&self) {
        if !self.over_ceiling() {
            return;
        }
        self.env
            .counters
            .throttled_faults
            .fetch_add(1, Ordering::Relaxed);
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        while self.still_throttled() {
            self.env.live().reclaim_wake.kick();
            // SAFETY: a valid timespec; nanosleep is async-signal-safe.
            unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
        }
    }

    /// A throttled fault still waits: the charge is past the ceiling, and
    /// reclaim can do more (and the runtime runs).
    fn still_throttled(&self) -> bool {
        self.charged() > self.ceiling()
            && !self.reclaim_stalled.load(Ordering::Acquire)
            && !self.stopping()
    }

    /// Wakes the threads of throttled faults once residency is back under
    /// the ceiling, or reclaim can do no more (or the runtime stops).
    pub(crate) fn release_throttled(&self, pages: &mut Vec<usize>) {
        if pages.is_empty() {
            return;
        }
        if self.still_throttled() {
            self.env.live().reclaim_wake.kick();
            return;
        }
        for addr in pages.drain(..) {
            match self.env.wake(addr, crate::protocol::PAGE) {
                Ok(()) => {}
                // The region went meanwhile: unregistering woke the thread.
                Err(e) if e.is(libc::ENOENT) || e.is(libc::EINVAL) => {}
                Err(e) => crate::fatal::die(&e.to_string()),
            }
        }
    }

    /// One aging pass, at most every `aging_interval` (every
    /// [`FAST_AGING_INTERVAL`] once the reclaim thread has made
    /// [`FAST_AGING_CALLS`] write-protect calls since the last), where
    /// writes are tracked and while tracking pays ([`crate::aging`]).
    fn maybe_age(&self) {
        if !self.tracks_writes() {
            return;
        }
        let calls = self
            .env
            .counters
            .reclaimer_protect_calls
            .load(Ordering::Relaxed);
        let since = calls.saturating_sub(self.calls_at_last_pass.load(Ordering::Relaxed));
        let interval = pass_interval(
            self.cfg.aging_interval,
            since,
            self.aging_on.load(Ordering::Relaxed),
        );
        if !self.aging.ready_every(interval) {
            return;
        }
        self.calls_at_last_pass.store(calls, Ordering::Relaxed);
        if self.aging_pays() {
            self.age();
        } else {
            self.env
                .counters
                .aging_skipped
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Where faults over the limit evict: `--direct-reclaim` says always;
    /// otherwise, with faults served in-thread, `direct.rs` decides from
    /// the last window's victims and faulting threads.
    fn choose_direct(&self, site: &mut crate::direct::DirectReclaim) {
        if self.cfg.direct_reclaim
            || !self.cfg.auto_direct_reclaim
            || self.env.mode != crate::uffd::FaultMode::InThread
        {
            return;
        }
        let direct = site.update(self.direct_reading());
        self.direct_now.store(direct, Ordering::Relaxed);
    }

    fn direct_reading(&self) -> crate::direct::Reading {
        let c = &self.env.counters;
        crate::direct::Reading {
            evicted_pages: c.evicted_pages.load(Ordering::Relaxed),
            evict_runs: c.evict_runs.load(Ordering::Relaxed),
            fault_thread_switches: c.fault_thread_switches.load(Ordering::Relaxed),
            swapin_faults: c.swapin_faults.load(Ordering::Relaxed),
            at_ns: u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// The governor's decision for the pass now due. `try_lock`: it never
    /// waits (a fork copies the lock as it was; a child that finds it held
    /// keeps aging).
    fn aging_pays(&self) -> bool {
        let Ok(mut governor) = self.aging_governor.try_lock() else {
            return true;
        };
        let c = &self.env.counters;
        let run = governor.due(crate::aging::Reading {
            swapin_faults: c.swapin_faults.load(Ordering::Relaxed),
            wp_faults: c.wp_faults.load(Ordering::Relaxed),
            evicted_pages: c.evicted_pages.load(Ordering::Relaxed),
            pages_protected: c.pages_protected.load(Ordering::Relaxed),
            protect_calls: c.protect_calls.load(Ordering::Relaxed),
            reclaimer_protect_calls: c.reclaimer_protect_calls.load(Ordering::Relaxed),
        });
        self.aging_on.store(governor.aging(), Ordering::Relaxed);
        run
    }

    /// The store's shrinker, run here: writes back cold pages when the pool
    /// is over its limit.
    fn shrink_store(&self) {
        let own = &self.env.live().own;
        if own.needs_shrink() {
            let _gate = self.env.gated();
            own.shrink();
            drop(_gate);
            self.publish_charge();
        }
    }

    /// Compacts the pool (the kernel's zsmalloc shrinker), at most every
    /// [`COMPACT_INTERVAL`]; called while the charge is over the limit
    /// (and by [`Self::compact_fragmented`]): swap-ins free objects all
    /// over the pool's zspages, and a fragmented pool would take from the
    /// limit what its objects do not need, so more pages would be evicted.
    /// Returns the pages freed.
    fn compact_store(&self) -> usize {
        if !self.compaction.ready() {
            return 0;
        }
        let freed = {
            let _gate = self.env.gated();
            self.env.live().own.zswap().compact()
        };
        if freed > 0 {
            self.publish_charge();
        }
        freed
    }

    /// Compacts the pool, under the limit too, once the zspages its free
    /// objects add up to are at least [`FRAGMENTED_MIN_PAGES`] and an
    /// eighth of it. Swap-ins free objects all over its zspages; a pool
    /// compacted only under pressure kept that memory while a program read
    /// its data back with the limit raised (redis-hot's closing `DEBUG
    /// DIGEST` under `--max-slowdown`: 2.6k entries in 51.9 MB of zspages,
    /// on top of every page brought back).
    fn compact_fragmented(&self) {
        let pool = self.env.live().own.zswap();
        let pages = pool.pool_pages();
        if pages >= FRAGMENTED_MIN_PAGES
            && pool.compactable_pages() >= FRAGMENTED_MIN_PAGES.max(pages / 8)
        {
            self.compact_store();
        }
    }

    /// Writes are tracked: asked for (`track_writes`), and the kernel has
    /// `PAGEMAP_SCAN`.
    pub(crate) fn tracks_writes(&self) -> bool {
        self.cfg.track_writes && self.env.live().pagemap.is_some()
    }

    /// One aging pass now.
    pub(crate) fn age(&self) {
        if self.tracks_writes() {
            let mut op = Age::new();
            self.drive(|cx| op.step(cx));
            self.record(trace::Event::Aged);
        }
    }

    /// Clears the shared limit's slots of dead processes, every 100 ms.
    fn sweep_shared(&self) {
        let Some(shared) = &self.env.live().shared else {
            return;
        };
        if self.sweep.ready() {
            shared.sweep();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_millis(100);

    #[test]
    fn passes_come_sooner_once_the_reclaim_threads_calls_mount_up() {
        assert_eq!(pass_interval(BASE, 0, true), BASE);
        assert_eq!(pass_interval(BASE, FAST_AGING_CALLS - 1, true), BASE);
        assert_eq!(
            pass_interval(BASE, FAST_AGING_CALLS, true),
            FAST_AGING_INTERVAL
        );
        // Not while the governor has aging off: its tries keep their pace.
        assert_eq!(pass_interval(BASE, 10 * FAST_AGING_CALLS, false), BASE);
        // Never later than the configured interval.
        let short = Duration::from_millis(5);
        assert_eq!(pass_interval(short, FAST_AGING_CALLS, true), short);
    }

    #[test]
    fn only_the_reclaim_threads_protect_calls_count_as_its_own() {
        let c = crate::counters::Counters::default();
        c.add(crate::protocol::Event::EvictProtectCalls, 3);
        std::thread::scope(|s| {
            s.spawn(|| {
                ON_RECLAIM_THREAD.with(|on| on.set(true));
                c.add(crate::protocol::Event::EvictProtectCalls, 2);
            });
        });
        assert_eq!(c.evict_protect_calls.load(Ordering::Relaxed), 5);
        assert_eq!(c.reclaimer_protect_calls.load(Ordering::Relaxed), 2);
    }
}
