//! Counters, with the kernel's names (`/sys/kernel/debug/zswap/*`,
//! `/proc/vmstat`), defined once with [`common::counters!`].

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

common::counters! {
    /// A snapshot of the store's counters, in the kernel's names.
    pub struct Stats;
    /// Live counters (atomics), shared by the cache and the swap layer.
    /// The five gauges (`stored_pages`, `pool_total_size`,
    /// `swap_cache_pages`, `swap_used_pages`, `swapfile_memory_bytes`) are
    /// read from the structures themselves when a snapshot is taken
    /// ([`crate::Swap::stats`]); their atomics stay 0.
    pub(crate) struct Counters;
    /// Pages in zswap now (debugfs `stored_pages`).
    stored_pages: u64,
    /// Bytes of memory the pool uses (debugfs `pool_total_size`).
    pool_total_size: u64,
    /// Pages in the swap cache now.
    swap_cache_pages: u64,
    /// Pages swapped out now, in the pool, on the swap file or as zero
    /// pages: the swap slots in use (meminfo's `SwapTotal - SwapFree`).
    swap_used_pages: u64,
    /// Bytes of memory the swap file takes where it lives in memory
    /// (tmpfs, ramfs: the pages written back there); 0 on a disk.
    swapfile_memory_bytes: u64,
    /// Pages stored in zswap (vmstat `zswpout`).
    zswpout: u64,
    /// Pages loaded from zswap (vmstat `zswpin`).
    zswpin: u64,
    /// Pages written back from zswap to the swap file (debugfs
    /// `written_back_pages`; vmstat's `zswpwb` counts the same pages).
    written_back_pages: u64,
    /// Pages stored straight to the swap file, past the pool, because
    /// the caller found the pool's pass cost more than it saved
    /// ([`crate::Swap::swap_out_to_file`]; no kernel counterpart).
    pool_bypassed: u64,
    /// Stores refused because the pool was at its limit.
    pool_limit_hit: u64,
    /// Pages that did not compress, with writeback off.
    reject_compress_poor: u64,
    /// Pages whose compression failed, with writeback off.
    reject_compress_fail: u64,
    /// Pool allocations that failed.
    reject_alloc_fail: u64,
    /// Stores refused while the shrinker could not free room.
    reject_reclaim_fail: u64,
    /// Pages written to the swap file (rejected stores and writeback).
    pswpout: u64,
    /// Pages read from the swap file.
    pswpin: u64,
    /// Pages read ahead into the swap cache.
    swap_ra: u64,
    /// Swap-ins served by a page read ahead earlier (or mapped at fault).
    swap_ra_hit: u64,
    /// Zero-filled pages swapped out (kept as a bit, no allocation).
    swpout_zero: u64,
    /// Zero-filled pages swapped in.
    swpin_zero: u64,
    /// Writebacks that failed with an I/O error (entry kept in zswap).
    writeback_errors: u64,
    /// Pool pages freed by compaction (zsmalloc's `pages_compacted`).
    pages_compacted: u64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: usize) {
        c.fetch_add(n as u64, Ordering::Relaxed);
    }
}

impl Stats {
    /// Pages brought back into memory: from the pool, the swap file
    /// (readahead included) or the zero map.
    pub fn swapped_in(&self) -> u64 {
        self.zswpin + self.pswpin + self.swpin_zero
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in self.fields() {
            writeln!(f, "{name:<22} {value}")?;
        }
        Ok(())
    }
}
