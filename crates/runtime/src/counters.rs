//! The runtime's counters: live atomics, and [`RuntimeStats`], a snapshot
//! with one documented field each.

use crate::protocol::Event;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters: one per protocol [`Event`], and the runtime's own.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    events: [AtomicU64; Event::COUNT],
    /// Faults held back until reclaim brought residency under the ceiling.
    pub throttles: AtomicU64,
}

impl Counters {
    pub fn add(&self, e: Event, n: usize) {
        self.events[e as usize].fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn get(&self, e: Event) -> u64 {
        self.events[e as usize].load(Ordering::Relaxed)
    }

    /// Back to zero (a forked child counts its own).
    pub fn reset(&self) {
        for e in &self.events {
            e.store(0, Ordering::Relaxed);
        }
        self.throttles.store(0, Ordering::Relaxed);
    }
}

/// A snapshot of the runtime's counters (the swap store keeps its own:
/// `zswpout`, `pswpin`, …).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Resident region pages charged to this process now.
    pub resident_pages: u64,
    /// The resident limit, in pages (`memory.high`'s role).
    pub high_pages: u64,
    /// Missing faults served (first touches and swap-ins).
    pub faults: u64,
    /// First-touch faults (each maps a run of zeroed pages).
    pub zero_faults: u64,
    /// Faults that swapped a page in.
    pub swapin_faults: u64,
    /// Pages mapped by fault-around, without a fault of their own.
    pub around_pages: u64,
    /// Pages evicted to the swap store.
    pub evicted_pages: u64,
    /// Faults held back until reclaim caught up (`memory.high` throttling).
    pub throttled_faults: u64,
    /// Swap-ins of pages evicted less than a limit's worth of evictions ago.
    pub workingset_refault: u64,
    /// Refaulted pages spared by the next reclaim pass.
    pub workingset_activate: u64,
    /// Evictions undone because the store refused or a kernel call failed.
    pub evict_failures: u64,
    /// 1 if writes are tracked (`PAGEMAP_SCAN` available and enabled).
    pub write_tracking: bool,
    /// 1 if the userfaultfd handles kernel faults (else the syscall guard).
    pub kernel_faults: bool,
    /// Aging passes (a scan and a re-protect of every region).
    pub aging_scans: u64,
    /// Resident pages the aging passes found written.
    pub pages_written: u64,
    /// Write-protect faults of tracking, resolved by the handler.
    pub wp_faults: u64,
    /// Victims spared because they were written since the last pass.
    pub written_reprieved: u64,
    /// Victims found unmapped behind the runtime's back (read as zeros).
    pub external_discards: u64,
    /// Forked child: inherited pages written, so charged from then on.
    pub unshared_pages: u64,
}

impl RuntimeStats {
    pub(crate) fn from_counters(c: &Counters) -> Self {
        Self {
            faults: c.get(Event::Fault),
            zero_faults: c.get(Event::ZeroFault),
            swapin_faults: c.get(Event::SwapinFault),
            around_pages: c.get(Event::AroundPages),
            evicted_pages: c.get(Event::EvictedPages),
            throttled_faults: c.throttles.load(Ordering::Relaxed),
            workingset_refault: c.get(Event::WorkingsetRefault),
            workingset_activate: c.get(Event::WorkingsetActivate),
            evict_failures: c.get(Event::EvictFailures),
            aging_scans: c.get(Event::AgingScan),
            pages_written: c.get(Event::PagesWritten),
            wp_faults: c.get(Event::WpFault),
            written_reprieved: c.get(Event::WrittenReprieved),
            external_discards: c.get(Event::ExternalDiscard),
            unshared_pages: c.get(Event::Unshared),
            ..Self::default()
        }
    }

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
            ("throttled_faults", self.throttled_faults),
            ("workingset_refault", self.workingset_refault),
            ("workingset_activate", self.workingset_activate),
            ("evict_failures", self.evict_failures),
            ("write_tracking", u64::from(self.write_tracking)),
            ("kernel_faults", u64::from(self.kernel_faults)),
            ("aging_scans", self.aging_scans),
            ("pages_written", self.pages_written),
            ("wp_faults", self.wp_faults),
            ("written_reprieved", self.written_reprieved),
            ("external_discards", self.external_discards),
            ("unshared_pages", self.unshared_pages),
        ]
    }
}
