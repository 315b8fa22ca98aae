//! Counters, with the kernel's names (`/sys/kernel/debug/zswap/*`,
//! `/proc/vmstat`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// Live counters (atomics), shared by the cache and the swap layer.
        #[derive(Debug, Default)]
        pub(crate) struct Counters { $(pub(crate) $name: AtomicU64,)* }

        /// A snapshot of every counter.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct Stats {
            $($(#[$doc])* pub $name: u64,)*
            /// Pages in zswap now.
            pub stored_pages: u64,
            /// Bytes of memory the pool uses.
            pub pool_total_size: u64,
            /// Pages in the swap cache now.
            pub swap_cache_pages: u64,
        }

        impl Counters {
            pub(crate) fn snapshot(&self) -> Stats {
                Stats { $($name: self.$name.load(Ordering::Relaxed),)* ..Stats::default() }
            }
        }

        impl Stats {
            /// `(name, value)` for every counter, in a stable order.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                let mut v = vec![
                    ("stored_pages", self.stored_pages),
                    ("pool_total_size", self.pool_total_size),
                    ("swap_cache_pages", self.swap_cache_pages),
                ];
                v.extend([$((stringify!($name), self.$name)),*]);
                v
            }
        }
    };
}

counters! {
    /// Pages stored in zswap.
    zswpout,
    /// Pages loaded from zswap.
    zswpin,
    /// Pages written back from zswap to the swap file.
    zswpwb,
    /// Pages written back (debugfs name).
    written_back_pages,
    /// Stores refused because the pool was at its limit.
    pool_limit_hit,
    /// Pages that did not compress, with writeback off.
    reject_compress_poor,
    /// Pages whose compression failed, with writeback off.
    reject_compress_fail,
    /// Pool allocations that failed.
    reject_alloc_fail,
    /// Stores refused while the shrinker could not free room.
    reject_reclaim_fail,
    /// Pages written to the swap file (rejected stores and writeback).
    pswpout,
    /// Pages read from the swap file.
    pswpin,
    /// Pages read ahead into the swap cache.
    swap_ra,
    /// Swap-ins served by a page read ahead earlier (or mapped at fault).
    swap_ra_hit,
    /// Zero-filled pages swapped out (kept as a bit, no allocation).
    swpout_zero,
    /// Zero-filled pages swapped in.
    swpin_zero,
    /// Writebacks that failed with an I/O error (entry kept in zswap).
    writeback_errors,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: usize) {
        c.fetch_add(n as u64, Ordering::Relaxed);
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
