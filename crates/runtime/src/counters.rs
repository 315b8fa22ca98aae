//! The runtime's counters, defined once with [`common::counters!`]: live
//! atomics, and [`RuntimeStats`], a snapshot with one documented field
//! each. The swap store keeps its own (`zswpout`, `pswpin`, …:
//! [`zswap::Stats`]).

use crate::protocol::Event;
use std::sync::atomic::{AtomicU64, Ordering};

common::counters! {
    /// A snapshot of the runtime's counters.
    pub struct RuntimeStats;
    /// Live counters: one per protocol [`Event`], and the runtime's own.
    /// The states (`resident_pages`, `pinned_pages`, `charged_pages`,
    /// `table_bytes`, `cold_*_bytes`, `limit_pages`, `pool_share_pages`,
    /// `write_tracking`, `kernel_faults`, `direct_reclaim`) are
    /// read from the runtime when a snapshot is taken
    /// ([`crate::Runtime::stats`]); their atomics stay 0.
    pub(crate) struct Counters;
    /// Resident region pages charged to this process now.
    resident_pages: u64,
    /// Region pages pinned now: for a system call in progress (the syscall
    /// guard), or registered with the kernel for good (`set_robust_list`,
    /// `rseq`, … in region memory). A pin nobody releases shows here.
    pinned_pages: u64,
    /// Pages the limit counts for this process now: resident pages, the
    /// pool and its entries (a memcg's charge).
    charged_pages: u64,
    /// Bytes of the runtime's page-state tables (32 bytes per region page,
    /// touched or not): not counted in the limit.
    table_bytes: u64,
    /// Resident bytes untouched for at least 1 s, as far as the runtime
    /// can tell (no fault and no tracked write since: reads of a resident
    /// page are invisible to it): cold memory by age, with the next two.
    cold_1s_bytes: u64,
    /// Resident bytes untouched for at least 10 s (as `cold_1s_bytes`).
    cold_10s_bytes: u64,
    /// Resident bytes untouched for at least 60 s (as `cold_1s_bytes`).
    cold_60s_bytes: u64,
    /// The limit in force, in pages (`memory.high`'s role; `--limit`, or
    /// lower where `--max-slowdown`'s controller set it lower).
    limit_pages: u64,
    /// Pages of the limit the pool may hold now: the adaptive split's
    /// target (`split.rs`), else the pool limit.
    pool_share_pages: u64,
    /// Missing faults served (first touches and swap-ins).
    faults: u64,
    /// First-touch faults (each maps a run of zeroed pages).
    zero_faults: u64,
    /// Faults that swapped a page in.
    swapin_faults: u64,
    /// Pages mapped beside a swap-in fault (a stream's folio), without a
    /// fault of their own.
    around_pages: u64,
    /// Swap-in faults that streamed (next to a recent one's pages), which
    /// brought the rest of their folio from the pool too (folio swap-in,
    /// `swapin.rs`).
    folio_swapins: u64,
    /// Pages evicted to the swap store.
    evicted_pages: u64,
    /// Of `evicted_pages`, those evicted for their age before any pressure
    /// (older than the cold age `--max-slowdown`'s controller set), as
    /// proactive reclaim (`memory.reclaim`) counts them.
    pgsteal_proactive: u64,
    /// Pages swapped in from the swap file that kept their slot, mapped
    /// write-protected (clean swap-cache pages).
    kept_clean: u64,
    /// Of `evicted_pages`, those evicted clean: unwritten since swap-in,
    /// so only unmapped (nothing compressed, stored or written).
    evicted_clean: u64,
    /// Of `evicted_pages`, those evicted under the write protection the
    /// last aging pass left on them (checked in the page tables): no
    /// write-protect call, so no TLB-flush interrupt, of their own.
    evicted_armed: u64,
    /// Pages eviction took with no write-protection at all (a run the
    /// store then refuses goes back resident): by the program's only
    /// thread, in its own fault handler, where no writer can run between
    /// the copy and the unmap (`sole.rs`).
    evicted_sole_writer: u64,
    /// Times direct reclaim asked whether its thread is the program's
    /// only one (`sole.rs`: a dozen `/proc` reads each). Asked again at
    /// once only after a yes that evicted many pages, else after 20 ms.
    sole_writer_checks: u64,
    /// Runs of neighbouring pages those evictions took: one write-protect
    /// call (or check) each, so `evicted_pages / evict_runs` is how
    /// scattered the victims are.
    evict_runs: u64,
    /// Write-protect calls eviction made of its own, for runs not armed
    /// (each flushing the TLB of every CPU running the program; the
    /// aging passes' are `protect_calls`).
    evict_protect_calls: u64,
    /// Of `evict_protect_calls`, those the reclaim thread made: each
    /// interrupts the CPUs running the program (the faulting thread's own
    /// flush its CPU alone). Where they mount up, aging passes come sooner
    /// (`reclaim.rs`, `maybe_age`).
    reclaimer_protect_calls: u64,
    /// Faults served in the faulting thread by another thread than the
    /// fault before: several threads faulting at once.
    fault_thread_switches: u64,
    /// Whether faults over the limit evict in their own thread now
    /// (`--direct-reclaim`, or chosen for scattered victims of one
    /// thread: `direct.rs`).
    direct_reclaim: bool,
    /// Clean pages written: their slot freed, in a write-protect fault of
    /// their own (not counted in `wp_faults`, write tracking's).
    clean_written: u64,
    /// Faults held back until reclaim caught up (`memory.high` throttling).
    throttled_faults: u64,
    /// Time the program's threads waited on uzswap, ns: swap-in and
    /// write-protect faults served (in the faulting thread: all of it; by
    /// the handler thread: its service time), direct reclaim and
    /// throttling, system calls' buffers swapped in. First touches map
    /// zeros, as the kernel does for a plain run: not counted.
    stall_ns: u64,
    /// Swap-ins of pages evicted less than a limit's worth of evictions ago.
    workingset_refault: u64,
    /// Refaulted pages spared by the next reclaim pass.
    workingset_activate: u64,
    /// Evictions undone because the store refused or a kernel call failed.
    evict_failures: u64,
    /// Writes are tracked (`PAGEMAP_SCAN` available and enabled).
    write_tracking: bool,
    /// The userfaultfd handles kernel faults (else the syscall guard).
    kernel_faults: bool,
    /// Aging passes (a scan and a re-protect of every region).
    aging_scans: u64,
    /// Aging passes left out because write tracking cost more faults than
    /// it saved (the governor, `aging.rs`).
    aging_skipped: u64,
    /// Resident pages found written since the aging pass that protected
    /// them (at their write-protect fault, or by the next pass).
    pages_written: u64,
    /// Pages the aging passes write-protected: those written or mapped
    /// since the pass before (a page still protected is left as it is).
    pages_protected: u64,
    /// Write-protect calls the aging passes made for them, each flushing
    /// the TLB of every CPU running the program: one per region, or per
    /// stretch of it between pinned pages.
    protect_calls: u64,
    /// Write-protect faults of tracking, resolved by the handler.
    wp_faults: u64,
    /// Victims spared because they were written since the last pass.
    written_reprieved: u64,
    /// Victims found unmapped behind the runtime's back (read as zeros).
    external_discards: u64,
    /// Forked child: inherited pages written, so charged from then on.
    unshared_pages: u64,
}

impl Counters {
    /// The counter of a protocol event.
    fn of(&self, e: Event) -> &AtomicU64 {
        match e {
            Event::Fault => &self.faults,
            Event::ZeroFault => &self.zero_faults,
            Event::SwapinFault => &self.swapin_faults,
            Event::AroundPages => &self.around_pages,
            Event::FolioSwapin => &self.folio_swapins,
            Event::EvictedPages => &self.evicted_pages,
            Event::KeptClean => &self.kept_clean,
            Event::EvictedClean => &self.evicted_clean,
            Event::EvictedArmed => &self.evicted_armed,
            Event::EvictedSoleWriter => &self.evicted_sole_writer,
            Event::EvictRuns => &self.evict_runs,
            Event::EvictProtectCalls => &self.evict_protect_calls,
            Event::CleanWritten => &self.clean_written,
            Event::EvictFailures => &self.evict_failures,
            Event::WorkingsetRefault => &self.workingset_refault,
            Event::WorkingsetActivate => &self.workingset_activate,
            Event::WpFault => &self.wp_faults,
            Event::AgingScan => &self.aging_scans,
            Event::PagesWritten => &self.pages_written,
            Event::PagesProtected => &self.pages_protected,
            Event::ProtectCalls => &self.protect_calls,
            Event::WrittenReprieved => &self.written_reprieved,
            Event::ExternalDiscard => &self.external_discards,
            Event::Unshared => &self.unshared_pages,
        }
    }

    pub fn add(&self, e: Event, n: usize) {
        self.of(e).fetch_add(n as u64, Ordering::Relaxed);
        if e == Event::EvictProtectCalls && crate::reclaim::on_reclaim_thread() {
            self.reclaimer_protect_calls
                .fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}
