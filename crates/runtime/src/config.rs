//! The settings of a runtime ([`RuntimeConfig`]) and the failures tests
//! inject ([`InjectFailure`]). Below everything else of the crate: the
//! pager and its mechanisms read them, none of them is imported here.

use std::time::Duration;

/// Runtime settings.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub swap: zswap::Config,
    /// Bytes above which pages are reclaimed (`memory.high`): resident
    /// pages and the swap store's pool and entries.
    pub limit_bytes: usize,
    /// Charge the swap store's pool and entries to the limit (cgroup v2's
    /// memcg does); `false`: the limit counts resident pages only and the
    /// pool is bounded by its own limit alone (cgroup v1's memcg, which
    /// does not charge zswap).
    pub charge_pool: bool,
    /// Pages evicted per reclaim step.
    pub reclaim_batch: usize,
    /// Longest run of neighbouring pages evicted as one folio (and mapped
    /// by one first-touch fault).
    pub evict_folio_pages: usize,
    /// Folio swap-in: a swap-in fault that streams (next to a recent one's
    /// pages) brings the rest of
    /// its folio from the pool and the swap file in the same fault
    /// (`swapin.rs`).
    pub folio_swapin: bool,
    /// Eviction unmaps its stored runs in groups of at least this many
    /// pages with one `process_madvise` (one TLB flush per group); the
    /// writers of a group's pages wait for the whole group. 1: each run
    /// alone.
    pub unmap_group_pages: usize,
    /// Probation for pages swapped in: reclaim takes them first once this
    /// many evictions have gone by since they came back, unless a fault or
    /// a tracked write has queued them on the LRU meanwhile
    /// (`Tunables::probation_pages`). 0: a page swapped in is queued on the
    /// LRU as a first touch is.
    pub probation_pages: usize,
    /// Track writes to resident pages (write-protect + `PAGEMAP_SCAN`) so
    /// that reclaim spares recently written pages, where the kernel has
    /// `PAGEMAP_SCAN` (6.7+).
    pub track_writes: bool,
    /// Least time between two aging passes.
    pub aging_interval: Duration,
    /// A limit file shared with other processes (`shared.rs`): the
    /// limit applies to their resident pages and ours together.
    pub shared_limit_file: Option<std::path::PathBuf>,
    /// The same file as a descriptor `uzswap run` passed down: mapped in
    /// its stead while still open on that file, so that a process that
    /// changed user, and may no longer open the run's files, keeps the
    /// run's limit.
    pub shared_limit_fd: Option<common::passed_fd::PassedFd>,
    /// Open the userfaultfd in user-mode-only mode even where kernel
    /// faults could be handled (to test the syscall guard's mode as root).
    pub user_mode_only: bool,
    /// Serve faults in the faulting thread (`UFFD_FEATURE_SIGBUS`, its
    /// SIGBUS handler: `in_thread.rs`) rather than in a handler thread.
    /// Kernel accesses then need the syscall guard, as in user-mode-only
    /// mode.
    pub serve_faults_in_thread: bool,
    /// With faults served in-thread: a fault that finds the charge over
    /// the limit evicts down to the low watermark in the faulting thread
    /// (direct reclaim) before the reclaim thread is asked. Less CPU (no
    /// inter-processor TLB flushes in a single-threaded program), more
    /// elapsed time (eviction no longer overlaps the program): off by
    /// default.
    pub direct_reclaim: bool,
    /// With faults served in-thread and `direct_reclaim` off: while the
    /// victims are scattered and faults come from one thread at a time,
    /// eviction runs in the faulting thread, or in the reclaim thread
    /// where trials measure that faster; in the reclaim thread otherwise
    /// (`direct.rs`).
    pub auto_direct_reclaim: bool,
    /// With the pool charged and writeback on: the pool's share of the
    /// limit follows refaults (`split.rs`), between an eighth of the limit
    /// and the pool limit, starting at its largest; `false`: the pool
    /// limit is its share.
    pub adaptive_pool: bool,
    /// Record what paging sees to this file (the `trace` crate's format;
    /// `uzswap replay` reads it).
    pub record_file: Option<std::path::PathBuf>,
    /// Tests of the fatal path: a failure to inject.
    #[doc(hidden)]
    pub inject_failure: Option<InjectFailure>,
}

/// A failure injected to test the fatal path.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectFailure {
    /// The fault handler panics at its first event.
    FaultHandlerPanic,
    /// The reclaimer panics when it first has work.
    ReclaimerPanic,
    /// The reclaimer reads a region page it does not own when it first has
    /// work (invariant 1 broken: the handler must end the program).
    RuntimeThreadFault,
}

/// Evictions a page swapped in is spared before it leaves first: 1 MiB,
/// four reclaim batches, time for the program to use what it faulted in.
pub const PROBATION_PAGES: usize = 256;

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            swap: zswap::Config::default(),
            limit_bytes: 512 << 20,
            charge_pool: true,
            reclaim_batch: 64,
            evict_folio_pages: 16,
            folio_swapin: true,
            unmap_group_pages: 16,
            probation_pages: PROBATION_PAGES,
            track_writes: true,
            aging_interval: Duration::from_millis(100),
            shared_limit_file: None,
            shared_limit_fd: None,
            user_mode_only: false,
            serve_faults_in_thread: false,
            direct_reclaim: false,
            auto_direct_reclaim: true,
            adaptive_pool: false,
            record_file: None,
            inject_failure: None,
        }
    }
}
