//! Settings, named after the kernel's parameters.

use compress::{Algorithm, Backend};
use std::path::PathBuf;

/// Which neighbours a swap-in reads ahead (`swapin_readahead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Readahead {
    /// Mainline before the readahead bypass for pooled pages
    /// (docs/seeds.md): read the page's whole cluster, from zswap or disk,
    /// whatever holds the faulting page.
    Always,
    /// The readahead bypass for pooled pages: no readahead when the
    /// faulting page is in zswap; a faulting page on disk reads its cluster
    /// as before.
    BypassZswap,
    /// The bypass plus its follow-up: as `BypassZswap`, and the cluster
    /// read for a page on disk skips neighbours that sit in zswap.
    DiskOnly,
    /// No readahead at all.
    Off,
}

impl std::str::FromStr for Readahead {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "always" => Ok(Self::Always),
            "bypass" | "bypass-zswap" => Ok(Self::BypassZswap),
            "disk-only" => Ok(Self::DiskOnly),
            "off" => Ok(Self::Off),
            _ => Err(format!(
                "readahead policy {s:?}: expected always, bypass, disk-only or off"
            )),
        }
    }
}

/// zswap and swap-layer settings. Field names follow the kernel's knobs:
/// `/sys/module/zswap/parameters/*`, `memory.zswap.writeback`,
/// `vm.page-cluster`.
#[derive(Debug, Clone)]
pub struct Config {
    /// zswap on or off (off: every page goes to the swap file).
    pub enabled: bool,
    pub compressor: Algorithm,
    /// Sequential or batching compressor back-end.
    pub compressor_backend: Backend,
    /// Pool limit, in percent of `total_ram_bytes`.
    pub max_pool_percent: u32,
    /// Pool limit in bytes (`memory.zswap.max`); when set, it replaces
    /// `max_pool_percent`.
    pub pool_limit_bytes: Option<usize>,
    /// Once the pool was full, stores are accepted again below this
    /// percentage of the limit.
    pub accept_threshold_percent: u32,
    /// Write back cold entries when the pool is full.
    pub shrinker_enabled: bool,
    /// Run the shrinker on a thread of the store's own (the default); if
    /// not, the owner calls [`crate::Swap::shrink`] when
    /// [`crate::Swap::needs_shrink`] says so (a runtime that must know
    /// every thread that touches the store, to stop them all at fork).
    pub shrinker_thread: bool,
    /// `memory.zswap.writeback`: whether pages may go to the swap file at
    /// all (rejected and written-back pages).
    pub writeback: bool,
    /// The memory size `max_pool_percent` is taken of.
    pub total_ram_bytes: usize,
    /// Pages stored per compression batch: `ZSWAP_MAX_BATCH_SIZE` (8), or 1
    /// for the page-at-a-time path of mainline before compress batching.
    pub store_batch: usize,
    /// `vm.page-cluster`: readahead reads clusters of `2^page_cluster` pages.
    pub page_cluster: u32,
    /// The readahead window follows the hits of earlier readahead, up to
    /// the cluster (`ra_window.rs`: random access reads about the pages it
    /// uses); `false`: every readahead reads the whole cluster.
    pub adaptive_readahead: bool,
    pub readahead: Readahead,
    /// Most pages the swap cache holds before it drops the oldest.
    pub swap_cache_pages: usize,
    /// Where the swap file is created (it is unlinked at once).
    pub swapfile_dir: PathBuf,
    /// Swap file size, in pages.
    pub swapfile_pages: usize,
    /// Swap file I/O: io_uring where available, else pread/pwrite.
    pub swap_io: swapfile::IoBackend,
    /// How pages on the swap file are protected: encrypted (AES-256-GCM,
    /// a key held only in memory) by default, or checksummed plaintext.
    pub swap_protection: swapfile::Protection,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            enabled: true,
            compressor: Algorithm::Lz4,
            compressor_backend: Backend::Sequential,
            max_pool_percent: 20,
            pool_limit_bytes: None,
            accept_threshold_percent: 90,
            shrinker_enabled: true,
            shrinker_thread: true,
            writeback: true,
            total_ram_bytes: 1 << 30,
            store_batch: compress::ZSWAP_MAX_BATCH_SIZE,
            page_cluster: 3,
            adaptive_readahead: true,
            readahead: Readahead::BypassZswap,
            swap_cache_pages: 1024,
            swapfile_dir: std::env::temp_dir(),
            swapfile_pages: 1 << 18,
            swap_io: swapfile::IoBackend::Auto,
            swap_protection: swapfile::Protection::Encrypted,
        }
    }
}

/// A setting out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid zswap setting: {0}")]
pub struct ConfigError(pub String);

impl Config {
    /// Checks every setting; the message names the bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError(m));
        if self.max_pool_percent == 0 || self.max_pool_percent > 100 {
            return bad(format!(
                "max_pool_percent={} (1..=100)",
                self.max_pool_percent
            ));
        }
        if self.accept_threshold_percent > 100 {
            return bad(format!(
                "accept_threshold_percent={} (0..=100)",
                self.accept_threshold_percent
            ));
        }
        if self.page_cluster > 10 {
            return bad(format!("page_cluster={} (0..=10)", self.page_cluster));
        }
        if self.store_batch == 0 || self.store_batch > 512 {
            return bad(format!("store_batch={} (1..=512)", self.store_batch));
        }
        if self.swapfile_pages == 0 || self.total_ram_bytes < crate::PAGE_SIZE {
            return bad("swapfile_pages and total_ram_bytes must be positive".into());
        }
        Ok(())
    }

    /// The pool limit in bytes.
    pub fn max_pool_bytes(&self) -> usize {
        self.pool_limit_bytes.unwrap_or_else(|| {
            (self.total_ram_bytes as u128 * u128::from(self.max_pool_percent) / 100) as usize
        })
    }
}
