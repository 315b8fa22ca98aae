//! Settings of a runtime started for a whole program (`uzswap run` and the
//! LD_PRELOAD library), carried from the command line to the program in
//! `UZSWAP_*` environment variables.

use compress::{Algorithm, Backend, ParallelConfig};
use runtime::{InjectFailure, RuntimeConfig};
use std::path::PathBuf;
use zswap::PAGE_SIZE;

/// Environment variable names, one per setting; [`env::VARS`] pairs each
/// with the `uzswap run` flag that sets it.
pub mod env {
    pub const LIMIT: &str = "UZSWAP_LIMIT";
    pub const COMPRESSOR: &str = "UZSWAP_COMPRESSOR";
    /// Compress with worker threads (1) or page by page (0).
    pub const PARALLEL: &str = "UZSWAP_PARALLEL";
    pub const FOLIO: &str = "UZSWAP_FOLIO";
    pub const MIN_ALLOC: &str = "UZSWAP_MIN_ALLOC";
    pub const MAX_POOL_PERCENT: &str = "UZSWAP_MAX_POOL_PERCENT";
    /// Pool limit in bytes (`memory.zswap.max`), instead of a percentage.
    pub const POOL_LIMIT: &str = "UZSWAP_POOL_LIMIT";
    pub const WRITEBACK: &str = "UZSWAP_WRITEBACK";
    pub const SWAPFILE_DIR: &str = "UZSWAP_SWAPFILE_DIR";
    pub const SWAPFILE_SIZE: &str = "UZSWAP_SWAPFILE_SIZE";
    pub const TRACK_WRITES: &str = "UZSWAP_TRACK_WRITES";
    /// Encrypt the pages written to the swap file (1) or write them as
    /// they are, checksummed (0).
    pub const ENCRYPT_SWAP: &str = "UZSWAP_ENCRYPT_SWAP";
    /// A swap-in fault that streams brings its whole folio (1) or
    /// only its page (0).
    pub const FOLIO_SWAPIN: &str = "UZSWAP_FOLIO_SWAPIN";
    /// Eviction unmaps stored runs in groups of this many pages (one TLB
    /// flush per group).
    pub const UNMAP_GROUP: &str = "UZSWAP_UNMAP_GROUP";
    /// Charge the compressed pool to the limit (1, cgroup v2) or not (0,
    /// cgroup v1).
    pub const CHARGE_POOL: &str = "UZSWAP_CHARGE_POOL";
    /// Page the committed parts of large `PROT_NONE` reservations (1) or
    /// leave reservations to the kernel (0).
    pub const RESERVATIONS: &str = "UZSWAP_RESERVATIONS";
    /// Serve allocations below `UZSWAP_MIN_ALLOC` from a paged heap
    /// (mimalloc over a region) too: from the start (1), never (0), or
    /// once the program's own allocator holds this many bytes (`4M`).
    pub const SMALL_OBJECTS: &str = "UZSWAP_SMALL_OBJECTS";
    /// File of a limit shared by the processes of one run.
    pub const SHARED_LIMIT_FILE: &str = "UZSWAP_SHARED_LIMIT_FILE";
    /// Handle user-mode faults only (the syscall guard's mode), even where
    /// kernel faults could be handled.
    pub const USER_MODE_ONLY: &str = "UZSWAP_USER_MODE_ONLY";
    pub const FAULT_THREAD: &str = "UZSWAP_FAULT_THREAD";
    pub const DIRECT_RECLAIM: &str = "UZSWAP_DIRECT_RECLAIM";
    pub const FIXED_POOL_SPLIT: &str = "UZSWAP_FIXED_POOL_SPLIT";
    /// Tests of the fatal path: `fault-panic`, `reclaim-panic` or
    /// `runtime-fault`.
    pub const INJECT_FAILURE: &str = "UZSWAP_INJECT_FAILURE";
    /// Folder where each process writes its final counters at exit
    /// (`PID.stats`).
    pub const STATS_DIR: &str = "UZSWAP_STATS_DIR";
    /// Folder of the live-stats sockets (`uzswap stats PID`).
    pub const RUN_DIR: &str = "UZSWAP_RUN_DIR";

    /// A variable, and how a user of `uzswap run` sets it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Var {
        pub name: &'static str,
        /// The flag of `uzswap run` that sets it.
        pub flag: Option<&'static str>,
        /// Who sets it when no flag does.
        pub set_by: &'static str,
    }

    const fn flag(name: &'static str, flag: &'static str) -> Var {
        Var {
            name,
            flag: Some(flag),
            set_by: "",
        }
    }

    const fn other(name: &'static str, set_by: &'static str) -> Var {
        Var {
            name,
            flag: None,
            set_by,
        }
    }

    /// Every variable, with its flag.
    pub const VARS: [Var; 25] = [
        flag(LIMIT, "--limit"),
        flag(COMPRESSOR, "--compressor"),
        flag(PARALLEL, "--parallel"),
        flag(FOLIO, "--folio"),
        flag(MIN_ALLOC, "--min-alloc"),
        flag(MAX_POOL_PERCENT, "--max-pool-percent"),
        flag(POOL_LIMIT, "--pool-limit"),
        flag(WRITEBACK, "--no-writeback"),
        flag(SWAPFILE_DIR, "--swapfile-dir"),
        flag(SWAPFILE_SIZE, "--swapfile-size"),
        flag(TRACK_WRITES, "--no-track-writes"),
        flag(ENCRYPT_SWAP, "--no-encrypt-swap"),
        flag(FOLIO_SWAPIN, "--no-folio-swapin"),
        flag(UNMAP_GROUP, "--unmap-group"),
        flag(CHARGE_POOL, "--uncharged-pool"),
        flag(RESERVATIONS, "--no-reservations"),
        flag(SMALL_OBJECTS, "--small-objects-after"),
        // `uzswap run` makes the file unless asked for one limit per
        // process.
        flag(SHARED_LIMIT_FILE, "--per-process-limit"),
        flag(USER_MODE_ONLY, "--user-mode-only"),
        flag(FAULT_THREAD, "--fault-thread"),
        flag(DIRECT_RECLAIM, "--direct-reclaim"),
        flag(FIXED_POOL_SPLIT, "--fixed-pool-split"),
        other(INJECT_FAILURE, "tests of the fatal path only"),
        other(STATS_DIR, "`uzswap run`, for each run"),
        other(RUN_DIR, "the user (default /tmp/uzswap-UID)"),
    ];

    /// What sets variable `var`, for messages: its flag, or who sets it.
    pub fn flag_of(var: &str) -> Option<&'static str> {
        VARS.iter()
            .find(|v| v.name == var)
            .map(|v| v.flag.unwrap_or(v.name))
    }
}

/// A bad setting; the message names the variable and the accepted values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?}: {expected}")]
pub struct SettingsError {
    pub name: &'static str,
    pub value: String,
    pub expected: &'static str,
}

/// Settings of a program-wide runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Bytes of paged memory above which reclaim starts: resident pages
    /// and the compressed pool (a memcg's charge).
    pub limit_bytes: usize,
    /// The pool is charged to the limit (cgroup v2's memcg); `false`:
    /// resident pages only, the pool bounded by `max_pool_percent` of RAM
    /// (cgroup v1's memcg, which does not charge zswap).
    pub charge_pool: bool,
    /// Large `PROT_NONE` anonymous reservations come from the arena, and
    /// the parts the program commits (`mmap(MAP_FIXED)`, `mprotect(RW)`)
    /// are paged: the JVM's and V8's heaps.
    pub reservations: bool,
    /// When allocations below `min_alloc_bytes` come from a paged heap
    /// too (mimalloc over one growing region), so that small objects are
    /// paged.
    pub small_objects: SmallObjects,
    pub compressor: Algorithm,
    /// Compress batches with worker threads (`true`) or page by page.
    pub parallel: bool,
    /// Bytes evicted as one folio (4K, 64K, 2M...), a multiple of pages.
    pub folio_bytes: usize,
    /// Allocations and anonymous mappings from this size up are paged.
    pub min_alloc_bytes: usize,
    pub max_pool_percent: u32,
    /// Pool limit in bytes; replaces `max_pool_percent` when set.
    pub pool_limit_bytes: Option<usize>,
    pub writeback: bool,
    pub swapfile_dir: PathBuf,
    pub swapfile_bytes: usize,
    /// Encrypt the pages written to the swap file (AES-256-GCM, a key held
    /// only in the process's memory).
    pub encrypt_swap: bool,
    /// Spare recently written pages from reclaim (`PAGEMAP_SCAN`).
    pub track_writes: bool,
    /// A swap-in fault that streams (right next to a recent one's pages)
    /// brings the rest of its folio
    /// from the pool (mTHP swap-in's role).
    pub folio_swapin: bool,
    /// Eviction unmaps stored runs in groups of at least this many pages,
    /// one `process_madvise` each.
    pub unmap_group_pages: usize,
    /// The limit applies to all processes mapping this file together
    /// (see the runtime's `shared.rs`); `None`: to this process alone.
    pub shared_limit_file: Option<PathBuf>,
    /// Handle user-mode faults only, with the syscall guard, even where
    /// kernel faults could be handled.
    pub user_mode_only: bool,
    /// Serve faults in a handler thread (the faulting thread sleeps until
    /// it is served) instead of in the faulting thread's SIGBUS handler.
    pub fault_thread: bool,
    /// A fault served in-thread over the limit evicts in that thread.
    pub direct_reclaim: bool,
    /// The pool's share of a charged limit is its pool limit, not an
    /// adaptive target under it.
    pub fixed_pool_split: bool,
    /// Tests of the fatal path only.
    pub inject_failure: Option<InjectFailure>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            limit_bytes: 512 << 20,
            charge_pool: true,
            reservations: true,
            small_objects: SmallObjects::After(SmallObjects::DEFAULT_AFTER),
            compressor: Algorithm::Lz4,
            parallel: false,
            folio_bytes: 64 << 10,
            min_alloc_bytes: 128 << 10,
            max_pool_percent: 20,
            pool_limit_bytes: None,
            writeback: true,
            swapfile_dir: std::env::temp_dir(),
            swapfile_bytes: 4 << 30,
            encrypt_swap: true,
            track_writes: true,
            folio_swapin: true,
            unmap_group_pages: 16,
            shared_limit_file: None,
            user_mode_only: false,
            fault_thread: false,
            direct_reclaim: false,
            fixed_pool_split: false,
            inject_failure: None,
        }
    }
}

/// When small allocations (below `--min-alloc`) come from the paged
/// small-object heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmallObjects {
    /// Never: they are the program's allocator's, unpaged.
    Off,
    /// From the first one.
    On,
    /// Once the program's own allocator holds this many bytes of them:
    /// the first ones stay its own (unpaged), every later one is paged.
    /// So a program with few small objects runs as it would without
    /// uzswap, and one made of them (a database, a cache) stays within
    /// the limit plus this many bytes.
    After(usize),
}

impl SmallObjects {
    /// What the program's allocator may hold before small objects are
    /// paged, by default.
    pub const DEFAULT_AFTER: usize = 4 << 20;

    /// `1`/`on`, `0`/`off`, or a size (`32M`).
    pub fn parse(s: &str) -> Option<Self> {
        match parse_bool(s) {
            Some(true) => Some(Self::On),
            Some(false) => Some(Self::Off),
            None => parse_size(s).map(Self::After),
        }
    }
}

impl std::fmt::Display for SmallObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Off => f.write_str("0"),
            Self::On => f.write_str("1"),
            Self::After(n) => f.write_str(&format_size(*n)),
        }
    }
}

/// Parses `512M`, `64K`, `2G`, `4096` (bytes; K/M/G are powers of 1024,
/// an optional trailing `B` or `iB` is accepted).
pub fn parse_size(s: &str) -> Option<usize> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        't' | 'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: usize = digits.trim().parse().ok()?;
    n.checked_mul(1usize << shift)
}

/// `536870912` as `512M`: the shortest exact form.
pub fn format_size(bytes: usize) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "yes" | "true" | "on" => Some(true),
        "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

impl Settings {
    /// Reads the `UZSWAP_*` variables through `get`; unset ones keep their
    /// defaults.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let mut s = Settings::default();
        let bad = |name: &'static str, value: &str, expected: &'static str| SettingsError {
            name,
            value: value.to_string(),
            expected,
        };
        if let Some(v) = get(env::LIMIT) {
            s.limit_bytes =
                parse_size(&v).ok_or_else(|| bad(env::LIMIT, &v, "a size such as 512M or 2G"))?;
        }
        if let Some(v) = get(env::COMPRESSOR) {
            s.compressor = v.parse().map_err(|_| {
                bad(
                    env::COMPRESSOR,
                    &v,
                    "lz4, lzo, lzo-rle, zstd[:LEVEL] or deflate[:LEVEL]",
                )
            })?;
        }
        if let Some(v) = get(env::PARALLEL) {
            s.parallel = parse_bool(&v).ok_or_else(|| bad(env::PARALLEL, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::FOLIO) {
            s.folio_bytes = parse_size(&v).ok_or_else(|| bad(env::FOLIO, &v, "4K, 64K or 2M"))?;
        }
        if let Some(v) = get(env::MIN_ALLOC) {
            s.min_alloc_bytes =
                parse_size(&v).ok_or_else(|| bad(env::MIN_ALLOC, &v, "a size such as 128K"))?;
        }
        if let Some(v) = get(env::MAX_POOL_PERCENT) {
            s.max_pool_percent = v
                .parse()
                .map_err(|_| bad(env::MAX_POOL_PERCENT, &v, "a percentage, 1 to 100"))?;
        }
        if let Some(v) = get(env::POOL_LIMIT) {
            s.pool_limit_bytes =
                Some(parse_size(&v).ok_or_else(|| bad(env::POOL_LIMIT, &v, "a size such as 64M"))?);
        }
        if let Some(v) = get(env::WRITEBACK) {
            s.writeback = parse_bool(&v).ok_or_else(|| bad(env::WRITEBACK, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::SWAPFILE_DIR) {
            s.swapfile_dir = PathBuf::from(v);
        }
        if let Some(v) = get(env::SWAPFILE_SIZE) {
            s.swapfile_bytes =
                parse_size(&v).ok_or_else(|| bad(env::SWAPFILE_SIZE, &v, "a size such as 4G"))?;
        }
        if let Some(v) = get(env::SHARED_LIMIT_FILE) {
            s.shared_limit_file = Some(PathBuf::from(v));
        }
        if let Some(v) = get(env::ENCRYPT_SWAP) {
            s.encrypt_swap = parse_bool(&v).ok_or_else(|| bad(env::ENCRYPT_SWAP, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::TRACK_WRITES) {
            s.track_writes = parse_bool(&v).ok_or_else(|| bad(env::TRACK_WRITES, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::FOLIO_SWAPIN) {
            s.folio_swapin = parse_bool(&v).ok_or_else(|| bad(env::FOLIO_SWAPIN, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::UNMAP_GROUP) {
            s.unmap_group_pages = v
                .parse()
                .ok()
                .filter(|&n| (1..=4096).contains(&n))
                .ok_or_else(|| bad(env::UNMAP_GROUP, &v, "pages, 1 to 4096"))?;
        }
        if let Some(v) = get(env::CHARGE_POOL) {
            s.charge_pool = parse_bool(&v).ok_or_else(|| bad(env::CHARGE_POOL, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::RESERVATIONS) {
            s.reservations = parse_bool(&v).ok_or_else(|| bad(env::RESERVATIONS, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::SMALL_OBJECTS) {
            s.small_objects = SmallObjects::parse(&v).ok_or_else(|| {
                bad(
                    env::SMALL_OBJECTS,
                    &v,
                    "1 (from the start), 0 (never) or a size (once the program's allocator holds it)",
                )
            })?;
        }
        if let Some(v) = get(env::USER_MODE_ONLY) {
            s.user_mode_only =
                parse_bool(&v).ok_or_else(|| bad(env::USER_MODE_ONLY, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::DIRECT_RECLAIM) {
            s.direct_reclaim =
                parse_bool(&v).ok_or_else(|| bad(env::DIRECT_RECLAIM, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::FIXED_POOL_SPLIT) {
            s.fixed_pool_split =
                parse_bool(&v).ok_or_else(|| bad(env::FIXED_POOL_SPLIT, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::FAULT_THREAD) {
            s.fault_thread = parse_bool(&v).ok_or_else(|| bad(env::FAULT_THREAD, &v, "1 or 0"))?;
        }
        if let Some(v) = get(env::INJECT_FAILURE) {
            s.inject_failure = Some(match v.as_str() {
                "fault-panic" => InjectFailure::FaultHandlerPanic,
                "reclaim-panic" => InjectFailure::ReclaimerPanic,
                "runtime-fault" => InjectFailure::RuntimeThreadFault,
                _ => {
                    return Err(bad(
                        env::INJECT_FAILURE,
                        &v,
                        "fault-panic, reclaim-panic or runtime-fault",
                    ))
                }
            });
        }
        s.validate()?;
        Ok(s)
    }

    /// [`Settings::from_vars`] on this process's environment.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// Checks the ranges; the error names the variable.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let bad = |name: &'static str, value: String, expected: &'static str| {
            Err(SettingsError {
                name,
                value,
                expected,
            })
        };
        if self.limit_bytes < 16 * PAGE_SIZE {
            return bad(env::LIMIT, format_size(self.limit_bytes), "at least 64K");
        }
        let f = self.folio_bytes;
        if f < PAGE_SIZE
            || !f.is_multiple_of(PAGE_SIZE)
            || !(f / PAGE_SIZE).is_power_of_two()
            || f > 2 << 20
        {
            return bad(
                env::FOLIO,
                format_size(f),
                "a power-of-two number of pages, 4K to 2M",
            );
        }
        if self.min_alloc_bytes < PAGE_SIZE {
            return bad(
                env::MIN_ALLOC,
                format_size(self.min_alloc_bytes),
                "at least 4K",
            );
        }
        if self.max_pool_percent == 0 || self.max_pool_percent > 100 {
            return bad(
                env::MAX_POOL_PERCENT,
                self.max_pool_percent.to_string(),
                "a percentage, 1 to 100",
            );
        }
        if let Some(p) = self.pool_limit_bytes.filter(|&p| p < 16 * PAGE_SIZE) {
            return bad(env::POOL_LIMIT, format_size(p), "at least 64K");
        }
        if self.swapfile_bytes < 16 * PAGE_SIZE {
            return bad(
                env::SWAPFILE_SIZE,
                format_size(self.swapfile_bytes),
                "at least 64K",
            );
        }
        Ok(())
    }

    /// The variables that carry these settings (every one, explicitly).
    pub fn to_vars(&self) -> Vec<(&'static str, String)> {
        let mut vars = vec![
            (env::LIMIT, format_size(self.limit_bytes)),
            (env::COMPRESSOR, self.compressor.to_string()),
            (env::PARALLEL, u8::from(self.parallel).to_string()),
            (env::FOLIO, format_size(self.folio_bytes)),
            (env::MIN_ALLOC, format_size(self.min_alloc_bytes)),
            (env::MAX_POOL_PERCENT, self.max_pool_percent.to_string()),
            (env::WRITEBACK, u8::from(self.writeback).to_string()),
            (env::SWAPFILE_DIR, self.swapfile_dir.display().to_string()),
            (env::SWAPFILE_SIZE, format_size(self.swapfile_bytes)),
            (env::TRACK_WRITES, u8::from(self.track_writes).to_string()),
            (env::ENCRYPT_SWAP, u8::from(self.encrypt_swap).to_string()),
            (env::FOLIO_SWAPIN, u8::from(self.folio_swapin).to_string()),
            (env::UNMAP_GROUP, self.unmap_group_pages.to_string()),
            (env::CHARGE_POOL, u8::from(self.charge_pool).to_string()),
            (env::RESERVATIONS, u8::from(self.reservations).to_string()),
            (env::SMALL_OBJECTS, self.small_objects.to_string()),
        ];
        if let Some(p) = &self.shared_limit_file {
            vars.push((env::SHARED_LIMIT_FILE, p.display().to_string()));
        }
        if let Some(p) = self.pool_limit_bytes {
            vars.push((env::POOL_LIMIT, format_size(p)));
        }
        if self.user_mode_only {
            vars.push((env::USER_MODE_ONLY, "1".into()));
        }
        if self.fault_thread {
            vars.push((env::FAULT_THREAD, "1".into()));
        }
        if self.direct_reclaim {
            vars.push((env::DIRECT_RECLAIM, "1".into()));
        }
        if self.fixed_pool_split {
            vars.push((env::FIXED_POOL_SPLIT, "1".into()));
        }
        if let Some(p) = self.inject_failure {
            let v = match p {
                InjectFailure::FaultHandlerPanic => "fault-panic",
                InjectFailure::ReclaimerPanic => "reclaim-panic",
                InjectFailure::RuntimeThreadFault => "runtime-fault",
            };
            vars.push((env::INJECT_FAILURE, v.into()));
        }
        vars
    }

    /// The pool limit in force: `--pool-limit` if given; else, for a pool
    /// charged to the limit, all of the limit but an eighth, the cap of the
    /// adaptive split under which the pool's share follows refaults
    /// (`runtime`'s `split.rs`), or half the limit with
    /// `--fixed-pool-split` (a fixed share: past it the coldest pages are
    /// written back); the whole limit without writeback (a full pool could
    /// not shrink: the limit itself bounds it); and at most
    /// `max_pool_percent` of this machine's memory (zswap's own bound). An
    /// uncharged pool has zswap's own bound only. A fixed share of all but
    /// an eighth was tried: random access over twice the limit kept
    /// everything in memory, but `sort` under 10M made twice the
    /// evictions and took 1.1–1.4x the time (its hot set did not fit in
    /// the eighth left resident): hence a share that follows refaults.
    pub fn pool_limit(&self) -> usize {
        self.pool_limit_bytes.unwrap_or_else(|| {
            let of_ram =
                (machine_ram_bytes() as u128 * u128::from(self.max_pool_percent) / 100) as usize;
            if !self.charge_pool {
                return of_ram.max(PAGE_SIZE);
            }
            let share = match (self.writeback, self.fixed_pool_split) {
                (false, _) => self.limit_bytes,
                (true, true) => self.limit_bytes / 2,
                (true, false) => self.limit_bytes - self.limit_bytes / 8,
            };
            share.min(of_ram).max(PAGE_SIZE)
        })
    }

    /// The userfaultfd mode these settings get on this machine.
    pub fn probe_fault_mode(&self) -> Result<runtime::FaultMode, runtime::RuntimeError> {
        runtime::probe_userfaultfd(self.user_mode_only, !self.fault_thread)
    }

    /// The runtime configuration these settings describe.
    pub fn runtime_config(&self) -> RuntimeConfig {
        let mut swap = zswap::Config {
            compressor: self.compressor,
            max_pool_percent: self.max_pool_percent,
            pool_limit_bytes: Some(self.pool_limit()),
            writeback: self.writeback,
            total_ram_bytes: machine_ram_bytes(),
            swapfile_dir: self.swapfile_dir.clone(),
            swapfile_pages: self.swapfile_bytes / PAGE_SIZE,
            swap_protection: if self.encrypt_swap {
                zswap::Protection::Encrypted
            } else {
                zswap::Protection::Checksum
            },
            ..zswap::Config::default()
        };
        if self.parallel {
            swap.compressor_backend = Backend::Parallel(ParallelConfig::default());
        }
        let folio_pages = self.folio_bytes / PAGE_SIZE;
        RuntimeConfig {
            swap,
            limit_bytes: self.limit_bytes,
            charge_pool: self.charge_pool,
            reclaim_batch: folio_pages.max(64),
            evict_folio_pages: folio_pages,
            track_writes: self.track_writes,
            folio_swapin: self.folio_swapin,
            unmap_group_pages: self.unmap_group_pages,
            shared_limit_file: self.shared_limit_file.clone(),
            user_mode_only: self.user_mode_only,
            serve_faults_in_thread: !self.fault_thread,
            direct_reclaim: self.direct_reclaim,
            adaptive_pool: self.charge_pool && self.writeback && !self.fixed_pool_split,
            inject_failure: self.inject_failure,
            ..RuntimeConfig::default()
        }
    }
}

/// Physical memory of this machine (`MemTotal`), 1 GiB if unknown.
pub fn machine_ram_bytes() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && size > 0 {
        (pages as usize).saturating_mul(size as usize)
    } else {
        1 << 30
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn sizes_parse_and_print_back() {
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_size("12MB"), Some(12 << 20));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size("-1M"), None);
        assert_eq!(parse_size("99999999999999999999T"), None);
        for b in [4096, 64 << 10, 2 << 20, 512 << 20, 3 << 30, 12345] {
            assert_eq!(parse_size(&format_size(b)), Some(b));
        }
        assert_eq!(format_size(512 << 20), "512M");
    }

    #[test]
    fn the_default_pool_limit_is_a_share_of_the_limit() {
        let ram = machine_ram_bytes();
        let s = Settings {
            limit_bytes: 64 << 20,
            max_pool_percent: 100,
            ..Settings::default()
        };
        // The cap of the adaptive split: all of the limit but an eighth.
        assert_eq!(s.pool_limit(), (56 << 20).min(ram));
        assert!(s.runtime_config().adaptive_pool);
        let fixed = Settings {
            fixed_pool_split: true,
            ..s.clone()
        };
        assert_eq!(fixed.pool_limit(), (32 << 20).min(ram));
        assert!(!fixed.runtime_config().adaptive_pool);
        let no_writeback = Settings {
            writeback: false,
            ..s.clone()
        };
        assert_eq!(no_writeback.pool_limit(), (64 << 20).min(ram));
        assert!(!no_writeback.runtime_config().adaptive_pool);
        let given = Settings {
            pool_limit_bytes: Some(8 << 20),
            ..s.clone()
        };
        assert_eq!(given.pool_limit(), 8 << 20);
        // Never more than max_pool_percent of the machine.
        let huge = Settings {
            limit_bytes: usize::MAX / 2,
            max_pool_percent: 20,
            ..s
        };
        assert_eq!(
            huge.pool_limit(),
            (ram as u128 * 20 / 100) as usize,
            "capped by max_pool_percent"
        );
        assert_eq!(
            huge.runtime_config().swap.max_pool_bytes(),
            huge.pool_limit()
        );
    }

    #[test]
    fn an_uncharged_pool_has_zswaps_own_bound_only() {
        let ram = machine_ram_bytes();
        let s = Settings {
            limit_bytes: 64 << 20,
            max_pool_percent: 20,
            charge_pool: false,
            ..Settings::default()
        };
        assert_eq!(s.pool_limit(), (ram as u128 * 20 / 100) as usize);
        assert!(!s.runtime_config().charge_pool);
        assert!(Settings::default().runtime_config().charge_pool);
        let given = Settings {
            pool_limit_bytes: Some(8 << 20),
            ..s.clone()
        };
        assert_eq!(given.pool_limit(), 8 << 20);
        let vars = s.to_vars();
        let back =
            Settings::from_vars(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()))
                .unwrap();
        assert!(!back.charge_pool);
    }

    #[test]
    fn settings_round_trip_through_the_environment() {
        let s = Settings {
            limit_bytes: 96 << 20,
            charge_pool: false,
            compressor: Algorithm::Zstd(5),
            parallel: true,
            folio_bytes: 2 << 20,
            min_alloc_bytes: 1 << 20,
            max_pool_percent: 33,
            pool_limit_bytes: Some(48 << 20),
            writeback: false,
            swapfile_dir: "/var/tmp".into(),
            swapfile_bytes: 1 << 30,
            encrypt_swap: false,
            track_writes: false,
            folio_swapin: false,
            unmap_group_pages: 7,
            reservations: false,
            small_objects: SmallObjects::After(3 << 20),
            shared_limit_file: Some("/dev/shm/x".into()),
            user_mode_only: true,
            fault_thread: true,
            direct_reclaim: true,
            fixed_pool_split: true,
            inject_failure: Some(InjectFailure::ReclaimerPanic),
        };
        let vars: HashMap<_, _> = s.to_vars().into_iter().collect();
        let back = Settings::from_vars(|k| vars.get(k).cloned()).unwrap();
        assert_eq!(back, s);
        assert_eq!(Settings::from_vars(|_| None).unwrap(), Settings::default());
    }

    #[test]
    fn small_objects_are_on_off_or_after_a_size() {
        for (v, want) in [
            ("1", SmallObjects::On),
            ("on", SmallObjects::On),
            ("0", SmallObjects::Off),
            ("32M", SmallObjects::After(32 << 20)),
        ] {
            let s = Settings::from_vars(|k| (k == env::SMALL_OBJECTS).then(|| v.to_string()));
            assert_eq!(s.unwrap().small_objects, want, "{v}");
        }
        for mode in [
            SmallObjects::On,
            SmallObjects::Off,
            SmallObjects::After(5 << 20),
        ] {
            assert_eq!(SmallObjects::parse(&mode.to_string()), Some(mode));
        }
    }

    #[test]
    fn bad_values_name_their_variable() {
        let cases = [
            (env::LIMIT, "lots"),
            (env::LIMIT, "1K"),
            (env::COMPRESSOR, "brotli"),
            (env::PARALLEL, "gpu"),
            (env::FOLIO, "12K"),
            (env::FOLIO, "4M"),
            (env::MIN_ALLOC, "1"),
            (env::MAX_POOL_PERCENT, "0"),
            (env::MAX_POOL_PERCENT, "101"),
            (env::POOL_LIMIT, "1K"),
            (env::POOL_LIMIT, "much"),
            (env::WRITEBACK, "maybe"),
            (env::TRACK_WRITES, "sometimes"),
            (env::FOLIO_SWAPIN, "maybe"),
            (env::UNMAP_GROUP, "0"),
            (env::UNMAP_GROUP, "many"),
            (env::RESERVATIONS, "often"),
            (env::SMALL_OBJECTS, "later"),
            (env::SWAPFILE_SIZE, "1K"),
            (env::USER_MODE_ONLY, "perhaps"),
            (env::INJECT_FAILURE, "everywhere"),
        ];
        for (name, value) in cases {
            let err = Settings::from_vars(|k| (k == name).then(|| value.to_string()))
                .expect_err(&format!("{name}={value} must be refused"));
            assert_eq!(err.name, name);
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn every_variable_is_in_the_table_once_with_what_sets_it() {
        let s = Settings {
            pool_limit_bytes: Some(1 << 20),
            shared_limit_file: Some("/x".into()),
            user_mode_only: true,
            fault_thread: true,
            direct_reclaim: true,
            fixed_pool_split: true,
            inject_failure: Some(InjectFailure::FaultHandlerPanic),
            ..Settings::default()
        };
        let names: Vec<&str> = env::VARS.iter().map(|v| v.name).collect();
        for (var, _) in s.to_vars() {
            assert!(names.contains(&var), "{var} is not in env::VARS");
        }
        for (i, v) in env::VARS.iter().enumerate() {
            assert!(!names[..i].contains(&v.name), "{} twice", v.name);
            assert!(v.name.starts_with("UZSWAP_"), "{}", v.name);
            assert!(v.flag.is_some() || !v.set_by.is_empty(), "{}", v.name);
            assert!(env::flag_of(v.name).is_some());
        }
        assert_eq!(env::flag_of(env::LIMIT), Some("--limit"));
        assert_eq!(env::flag_of("UZSWAP_NOTHING"), None);
    }

    #[test]
    fn folio_size_sets_the_eviction_run() {
        let s = Settings {
            folio_bytes: 2 << 20,
            ..Settings::default()
        };
        let cfg = s.runtime_config();
        assert_eq!(cfg.evict_folio_pages, 512);
        assert!(cfg.reclaim_batch >= cfg.evict_folio_pages);
        assert_eq!(cfg.limit_bytes, s.limit_bytes);
        cfg.swap.validate().unwrap();
    }
}
