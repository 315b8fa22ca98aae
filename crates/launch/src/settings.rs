//! Settings of a runtime started for a whole program (`uzswap run` and the
//! LD_PRELOAD library), carried from the command line to the program in
//! `UZSWAP_*` environment variables.
//!
//! Every setting is one row of the table below: its field, type and
//! default, its variable, the `uzswap run` flag that sets it, how its
//! value is read and written ([`value`]'s codecs) and its range. The
//! `settings!` macro (`settings/define.rs`) makes [`Settings`] and its
//! `Default`, [`env`](mod@env) (the variables' names, [`env::VARS`],
//! [`env::flag_of`]), [`Settings::from_vars`], [`Settings::validate`] and
//! [`Settings::to_vars`] from it; `uzswap run`'s flags are checked against
//! it by a test of `uzswap`. What the settings mean to the runtime
//! ([`Settings::pool_limit`], [`Settings::runtime_config`]) follows the
//! table.

#[macro_use]
mod define;
pub mod value;

use compress::{Algorithm, Backend, ParallelConfig};
use runtime::{InjectFailure, RuntimeConfig};
use std::path::PathBuf;
pub use value::{format_size, parse_size, SmallObjects};
use value::{
    ALGORITHM, COUNT, INJECTED_FAILURE, ON_OFF_OR_SIZE, OPTIONAL_PATH, OPTIONAL_SIZE, PATH,
    PERCENT, SIZE, SWITCH, SWITCH_IF_ON,
};
use zswap::PAGE_SIZE;

/// The smallest limit, pool limit and swap file: 16 pages.
pub const MIN_SIZE: usize = 16 * PAGE_SIZE;

settings! {
    /// Settings of a program-wide runtime.
    pub struct Settings {
        /// Bytes of paged memory above which reclaim starts: resident pages
        /// and the compressed pool (a memcg's charge).
        limit_bytes: usize = 512 << 20,
            LIMIT = "UZSWAP_LIMIT", flag "--limit", example "64M",
            SIZE "a size such as 512M or 2G",
            valid |&b| b >= MIN_SIZE, "at least 64K";
        /// The pool's compressor.
        compressor: Algorithm = Algorithm::Lz4,
            COMPRESSOR = "UZSWAP_COMPRESSOR", flag "--compressor", example "zstd:5",
            ALGORITHM "lz4, lzo, lzo-rle, zstd[:LEVEL] or deflate[:LEVEL]";
        /// Compress batches with worker threads (`true`) or page by page.
        parallel: bool = false,
            PARALLEL = "UZSWAP_PARALLEL", flag "--parallel", example "1",
            SWITCH "1 or 0";
        /// Bytes evicted as one folio (4K, 64K, 2M...), a multiple of pages.
        folio_bytes: usize = 64 << 10,
            FOLIO = "UZSWAP_FOLIO", flag "--folio", example "2M",
            SIZE "4K, 64K or 2M",
            valid |&f| f.is_power_of_two() && (PAGE_SIZE..=2 << 20).contains(&f),
                "a power-of-two number of pages, 4K to 2M";
        /// Allocations and anonymous mappings from this size up are paged.
        min_alloc_bytes: usize = 128 << 10,
            MIN_ALLOC = "UZSWAP_MIN_ALLOC", flag "--min-alloc", example "1M",
            SIZE "a size such as 128K",
            valid |&b| b >= PAGE_SIZE, "at least 4K";
        /// Bound of the pool, in percent of this machine's memory
        /// (zswap's `max_pool_percent`).
        max_pool_percent: u32 = 20,
            MAX_POOL_PERCENT = "UZSWAP_MAX_POOL_PERCENT", flag "--max-pool-percent",
                example "33",
            PERCENT "a percentage, 1 to 100",
            valid |p| (1..=100).contains(p), "a percentage, 1 to 100";
        /// Pool limit in bytes (`memory.zswap.max`); replaces the default
        /// share (`Settings::pool_limit`) when set.
        pool_limit_bytes: Option<usize> = None,
            POOL_LIMIT = "UZSWAP_POOL_LIMIT", flag "--pool-limit", example "48M",
            OPTIONAL_SIZE "a size such as 64M",
            valid |p| p.is_none_or(|p| p >= MIN_SIZE), "at least 64K";
        /// Write the coldest pages of a full pool to the swap file.
        writeback: bool = true,
            WRITEBACK = "UZSWAP_WRITEBACK", flag "--no-writeback", example "0",
            SWITCH "1 or 0";
        /// Folder the swap file is made in.
        swapfile_dir: PathBuf = crate::rundir::default_swapfile_dir(),
            SWAPFILE_DIR = "UZSWAP_SWAPFILE_DIR", flag "--swapfile-dir", example "/var/tmp",
            PATH "a folder";
        /// Size of the (sparse) swap file.
        swapfile_bytes: usize = 4 << 30,
            SWAPFILE_SIZE = "UZSWAP_SWAPFILE_SIZE", flag "--swapfile-size", example "1G",
            SIZE "a size such as 4G",
            valid |&b| b >= MIN_SIZE, "at least 64K";
        /// Spare recently written pages from reclaim (`PAGEMAP_SCAN`).
        track_writes: bool = true,
            TRACK_WRITES = "UZSWAP_TRACK_WRITES", flag "--no-track-writes", example "0",
            SWITCH "1 or 0";
        /// Encrypt the pages written to the swap file (AES-256-GCM, a key
        /// held only in the process's memory); `false`: write them as they
        /// are, checksummed.
        encrypt_swap: bool = true,
            ENCRYPT_SWAP = "UZSWAP_ENCRYPT_SWAP", flag "--no-encrypt-swap", example "0",
            SWITCH "1 or 0";
        /// A swap-in fault that streams (right next to a recent one's
        /// pages) brings the rest of its folio from the pool (mTHP
        /// swap-in's role); `false`: only its page.
        folio_swapin: bool = true,
            FOLIO_SWAPIN = "UZSWAP_FOLIO_SWAPIN", flag "--no-folio-swapin", example "0",
            SWITCH "1 or 0";
        /// Eviction unmaps stored runs in groups of at least this many
        /// pages, one `process_madvise` (one TLB flush) each.
        unmap_group_pages: usize = 16,
            UNMAP_GROUP = "UZSWAP_UNMAP_GROUP", flag "--unmap-group", example "7",
            COUNT "pages, 1 to 4096",
            valid |n| (1..=4096).contains(n), "pages, 1 to 4096";
        /// Evictions a page swapped in is spared before reclaim takes it
        /// first (probation); 0: it is queued on the LRU as a first touch.
        probation_pages: usize = runtime::PROBATION_PAGES,
            PROBATION = "UZSWAP_PROBATION", flag "--probation", example "1024",
            COUNT "pages, 0 to 1048576",
            valid |n| *n <= 1 << 20, "pages, 0 to 1048576";
        /// The pool is charged to the limit (cgroup v2's memcg); `false`:
        /// resident pages only, the pool bounded by `max_pool_percent` of
        /// RAM (cgroup v1's memcg, which does not charge zswap).
        charge_pool: bool = true,
            CHARGE_POOL = "UZSWAP_CHARGE_POOL", flag "--uncharged-pool", example "0",
            SWITCH "1 or 0";
        /// Large `PROT_NONE` anonymous reservations come from the arena,
        /// and the parts the program commits (`mmap(MAP_FIXED)`,
        /// `mprotect(RW)`) are paged: the JVM's and V8's heaps; `false`:
        /// reservations are left to the kernel.
        reservations: bool = true,
            RESERVATIONS = "UZSWAP_RESERVATIONS", flag "--no-reservations", example "0",
            SWITCH "1 or 0";
        /// When allocations below `min_alloc_bytes` come from a paged heap
        /// too (mimalloc over one growing region), so that small objects
        /// are paged: from the start (`1`), never (`0`), or once the
        /// program's own allocator holds this many bytes (`4M`).
        small_objects: SmallObjects = SmallObjects::After(SmallObjects::DEFAULT_AFTER),
            SMALL_OBJECTS = "UZSWAP_SMALL_OBJECTS", flag "--small-objects-after",
                example "64M",
            ON_OFF_OR_SIZE
                "1 (from the start), 0 (never) or a size (once the program's allocator holds it)";
        /// The limit applies to all processes mapping this file together
        /// (see the runtime's `shared.rs`); `None`: to this process alone.
        /// `uzswap run` makes the file unless asked for one limit per
        /// process.
        shared_limit_file: Option<PathBuf> = None,
            SHARED_LIMIT_FILE = "UZSWAP_SHARED_LIMIT_FILE", flag "--per-process-limit",
                example "/dev/shm/uzswap-limit",
            OPTIONAL_PATH "a file";
        /// Handle user-mode faults only, with the syscall guard, even where
        /// kernel faults could be handled.
        user_mode_only: bool = false,
            USER_MODE_ONLY = "UZSWAP_USER_MODE_ONLY", flag "--user-mode-only", example "1",
            SWITCH_IF_ON "1 or 0";
        /// The out-of-process pager (statically linked programs) runs on
        /// the CPU of a single-threaded program that faults often, as a
        /// `SCHED_IDLE` thread (needs `CAP_SYS_NICE`); `false`: on any CPU.
        pager_follows_faults: bool = true,
            PAGER_FOLLOWS_FAULTS = "UZSWAP_PAGER_FOLLOWS_FAULTS", flag "--pager-any-cpu",
                example "0",
            SWITCH "1 or 0";
        /// Serve faults in a handler thread (the faulting thread sleeps
        /// until it is served) instead of in the faulting thread's SIGBUS
        /// handler.
        fault_thread: bool = false,
            FAULT_THREAD = "UZSWAP_FAULT_THREAD", flag "--fault-thread", example "1",
            SWITCH_IF_ON "1 or 0";
        /// A fault served in-thread over the limit evicts in that thread.
        direct_reclaim: bool = false,
            DIRECT_RECLAIM = "UZSWAP_DIRECT_RECLAIM", flag "--direct-reclaim", example "1",
            SWITCH_IF_ON "1 or 0";
        /// Without `direct_reclaim`: a fault served in-thread over the
        /// limit evicts in that thread while the victims are scattered and
        /// faults come from one thread at a time; `false`: always the
        /// reclaim thread.
        auto_direct_reclaim: bool = true,
            AUTO_DIRECT_RECLAIM = "UZSWAP_AUTO_DIRECT_RECLAIM", flag "--background-reclaim",
                example "0",
            SWITCH "1 or 0";
        /// The pool's share of a charged limit is its pool limit, not an
        /// adaptive target under it.
        fixed_pool_split: bool = false,
            FIXED_POOL_SPLIT = "UZSWAP_FIXED_POOL_SPLIT", flag "--fixed-pool-split",
                example "1",
            SWITCH_IF_ON "1 or 0";
        /// Record what paging sees to this file, for `uzswap replay` (each
        /// process of the run appends its own chunks).
        record: Option<PathBuf> = None,
            RECORD = "UZSWAP_RECORD", flag "--record", example "/tmp/run.trace",
            OPTIONAL_PATH "a file";
        /// Tests of the fatal path only: `fault-panic`, `reclaim-panic` or
        /// `runtime-fault`.
        inject_failure: Option<InjectFailure> = None,
            INJECT_FAILURE = "UZSWAP_INJECT_FAILURE", set_by "tests of the fatal path only",
                example "reclaim-panic",
            INJECTED_FAILURE "fault-panic, reclaim-panic or runtime-fault";
    }

    /// Variables that are no setting's: where the program leaves its
    /// counters, finds its live-stats folder, and the run's files passed
    /// down as descriptors.
    other variables {
        /// Folder where each process writes its final counters at exit
        /// (`PID.stats`).
        STATS_DIR = "UZSWAP_STATS_DIR", set_by "`uzswap run`, for each run";
        /// Folder of the live-stats sockets (`uzswap stats PID`).
        RUN_DIR = "UZSWAP_RUN_DIR", set_by "the user (default $XDG_RUNTIME_DIR/uzswap, /dev/shm/uzswap-UID or $TMPDIR/uzswap-UID)";
        /// The shared-limit file as a descriptor left open for every
        /// process of the run (`FD:DEV:INO`): a process that changed user
        /// may not open the file by name.
        SHARED_LIMIT_FD = "UZSWAP_SHARED_LIMIT_FD", set_by "`uzswap run`, for each run";
        /// A folder of `STATS_DIR` as a descriptor (`FD:DEV:INO`) where
        /// the processes that may not write to `STATS_DIR` (they changed
        /// user) leave their counters.
        STATS_FD = "UZSWAP_STATS_FD", set_by "`uzswap run`, for each run";
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

/// How the pool's share of a limit is set: the one rule behind both
/// [`Settings::pool_limit`] and `RuntimeConfig::adaptive_pool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PoolShare {
    /// Not charged to the limit (`--uncharged-pool`): zswap's own bound
    /// only.
    Uncharged,
    /// No writeback: the whole limit (a full pool could not shrink, so
    /// the limit itself bounds it).
    Whole,
    /// `--fixed-pool-split`: half the limit, fixed; past it the coldest
    /// pages are written back.
    FixedHalf,
    /// All of the limit but an eighth, the cap under which the runtime's
    /// adaptive split (`split.rs`) moves the pool's share with refaults.
    Adaptive,
}

impl Settings {
    /// [`Settings::from_vars`] on this process's environment.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    fn pool_share(&self) -> PoolShare {
        match (self.charge_pool, self.writeback, self.fixed_pool_split) {
            (false, _, _) => PoolShare::Uncharged,
            (true, false, _) => PoolShare::Whole,
            (true, true, true) => PoolShare::FixedHalf,
            (true, true, false) => PoolShare::Adaptive,
        }
    }

    /// The pool limit in force: `--pool-limit` if given; else the share
    /// of the limit `PoolShare` names, at most `max_pool_percent` of this
    /// machine's memory (zswap's own bound). An uncharged pool has zswap's
    /// own bound only. A fixed share of all but an eighth was tried:
    /// random access over twice the limit kept everything in memory, but
    /// `sort` under 10M made twice the evictions and took 1.1–1.4x the
    /// time (its hot set did not fit in the eighth left resident): hence a
    /// share that follows refaults.
    pub fn pool_limit(&self) -> usize {
        self.pool_limit_bytes.unwrap_or_else(|| {
            let of_ram =
                (machine_ram_bytes() as u128 * u128::from(self.max_pool_percent) / 100) as usize;
            let share = match self.pool_share() {
                PoolShare::Uncharged => return of_ram.max(PAGE_SIZE),
                PoolShare::Whole => self.limit_bytes,
                PoolShare::FixedHalf => self.limit_bytes / 2,
                PoolShare::Adaptive => self.limit_bytes - self.limit_bytes / 8,
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
            probation_pages: self.probation_pages,
            shared_limit_file: self.shared_limit_file.clone(),
            user_mode_only: self.user_mode_only,
            serve_faults_in_thread: !self.fault_thread,
            direct_reclaim: self.direct_reclaim,
            auto_direct_reclaim: self.auto_direct_reclaim,
            adaptive_pool: self.pool_share() == PoolShare::Adaptive,
            record_file: self.record.clone(),
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
            probation_pages: 0,
            reservations: false,
            small_objects: SmallObjects::After(3 << 20),
            shared_limit_file: Some("/dev/shm/x".into()),
            user_mode_only: true,
            pager_follows_faults: false,
            fault_thread: true,
            direct_reclaim: true,
            auto_direct_reclaim: false,
            fixed_pool_split: true,
            record: Some("/tmp/x.trace".into()),
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
            auto_direct_reclaim: false,
            fixed_pool_split: true,
            record: Some("/x.trace".into()),
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

    /// Each row's example is a value other than the default, in the form
    /// the variable is written: read alone, it changes that setting only,
    /// and is written back as it was.
    #[test]
    fn every_example_reads_back_as_written_and_changes_its_setting_alone() {
        let defaults = Settings::default().to_vars();
        for v in env::VARS.iter().filter(|v| !v.example.is_empty()) {
            let s = Settings::from_vars(|k| (k == v.name).then(|| v.example.to_string()))
                .unwrap_or_else(|e| panic!("{}'s example: {e}", v.name));
            assert_ne!(
                s,
                Settings::default(),
                "{}'s example is the default",
                v.name
            );
            let vars = s.to_vars();
            assert!(vars.contains(&(v.name, v.example.to_string())), "{vars:?}");
            for (name, value) in &vars {
                if *name != v.name {
                    assert!(
                        defaults.contains(&(name, value.clone())),
                        "{}: {name}",
                        v.name
                    );
                }
            }
        }
        for v in [
            env::STATS_DIR,
            env::RUN_DIR,
            env::SHARED_LIMIT_FD,
            env::STATS_FD,
        ] {
            let other = env::VARS.iter().find(|x| x.name == v).unwrap();
            assert!(other.example.is_empty() && other.flag.is_none());
        }
    }

    /// The defaults are in range, and the smallest sizes are where the
    /// messages say.
    #[test]
    fn the_defaults_are_valid_and_the_minimums_are_the_messages() {
        Settings::default().validate().unwrap();
        assert_eq!(format_size(MIN_SIZE), "64K");
        for (name, at_least) in [
            (env::LIMIT, MIN_SIZE),
            (env::POOL_LIMIT, MIN_SIZE),
            (env::SWAPFILE_SIZE, MIN_SIZE),
            (env::MIN_ALLOC, PAGE_SIZE),
        ] {
            let read = |b: usize| Settings::from_vars(|k| (k == name).then(|| b.to_string()));
            read(at_least).unwrap();
            let err = read(at_least - 1).unwrap_err();
            assert_eq!(err.name, name);
            assert_eq!(err.expected, format!("at least {}", format_size(at_least)));
        }
        let unmap = Settings {
            unmap_group_pages: 0,
            ..Settings::default()
        };
        assert_eq!(unmap.validate().unwrap_err().name, env::UNMAP_GROUP);
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
