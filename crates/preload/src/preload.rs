//! The process-wide state: the settings, the runtime and the table of
//! regions handed to the program, whether this process owns the runtime,
//! and how a hook ends the program rather than unwind. It imports no other
//! module of the library.
//!
//! What the hooks do with it is in the modules built on it: `start.rs`
//! (the runtime's start), `syscall_guard.rs`, `regions.rs`,
//! `reservations.rs`, and `setup.rs` (load and fork), the one that
//! configures the small-object heap. The heap (`small_heap.rs`) and the
//! program's allocator (`next_alloc.rs`) sit on this module, `gate.rs`,
//! `start.rs` and `regions.rs`, none of which imports them back.

use launch::report::ProgramCounters;
use launch::Settings;
use runtime::reservation::Reservations;
use runtime::{Region, Runtime};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Smallest allocation served from a region; `usize::MAX` until the
/// settings are read (everything passes through before that).
pub(crate) static MIN_ALLOC: AtomicUsize = AtomicUsize::new(usize::MAX);
pub(crate) static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// The run's files `uzswap run` passed down as descriptors, read from the
/// environment with the settings.
pub(crate) static PASSED: OnceLock<Passed> = OnceLock::new();

/// Descriptors `uzswap run` left open for the run's processes
/// (`launch::settings::env::SHARED_LIMIT_FD`, `STATS_FD`).
#[derive(Debug, Default)]
pub(crate) struct Passed {
    pub shared_limit: Option<common::passed_fd::PassedFd>,
    pub stats: Option<common::passed_fd::PassedFd>,
}

impl Passed {
    pub fn from_env() -> Self {
        use launch::settings::env;
        let read = |name| {
            std::env::var(name)
                .ok()
                .and_then(|v| common::passed_fd::PassedFd::parse(&v))
        };
        Self {
            shared_limit: read(env::SHARED_LIMIT_FD),
            stats: read(env::STATS_FD),
        }
    }
}
pub(crate) static PRELOAD: OnceLock<Preload> = OnceLock::new();
/// The process the runtime was made (or, after a fork, adopted) for. A
/// `vfork` child shares its parent's memory and runtime: it must not
/// report or use them as its own.
pub(crate) static OWNER_PID: AtomicU32 = AtomicU32::new(0);
/// Bounds of every region ever handed out: a cheap "not ours" test.
pub(crate) static LO: AtomicUsize = AtomicUsize::new(usize::MAX);
pub(crate) static HI: AtomicUsize = AtomicUsize::new(0);

/// How the program got a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Malloc,
    Mapping,
    /// A committed part of a reservation (`Runtime::commit`).
    Commit,
    /// The small-object heap's region (`small_heap.rs`): no block of its
    /// own, mimalloc's blocks inside.
    SmallHeap,
}

pub(crate) struct Entry {
    pub(crate) region: Region,
    /// The address handed to the program (aligned inside the region).
    pub(crate) user: usize,
    pub(crate) kind: Kind,
}

impl Entry {
    pub(crate) fn usable(&self) -> usize {
        self.region.as_ptr() as usize + self.region.len() - self.user
    }
}

/// The regions handed to the program, by base, and its reservations. It
/// derefs to the regions.
#[derive(Default)]
pub(crate) struct Tables {
    pub(crate) regions: BTreeMap<usize, Entry>,
    pub(crate) reservations: Reservations,
}

impl std::ops::Deref for Tables {
    type Target = BTreeMap<usize, Entry>;
    fn deref(&self) -> &Self::Target {
        &self.regions
    }
}

impl std::ops::DerefMut for Tables {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.regions
    }
}

/// The runtime and what the program holds of it.
pub struct Preload {
    pub runtime: Runtime,
    pub(crate) table: Mutex<Tables>,
    pub settings: Settings,
    /// `region_allocs` and `regions_released` (the report's other program
    /// figures are filled in when it is made).
    pub counters: ProgramCounters,
}

impl Preload {
    /// The region table (a poisoned lock is taken anyway: a panic in a hook
    /// has ended the program).
    pub(crate) fn table(&'static self) -> MutexGuard<'static, Tables> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The runtime could not start (a bad setting, no userfaultfd, no thread):
/// exit 70 with the reason.
pub(crate) fn die(msg: &str) -> ! {
    runtime::fatal::exit_with(runtime::fatal::START_EXIT, msg)
}

/// Runs a hook's work; a panic in it ends the program (exit 71) with the
/// message, rather than unwind across the C ABI.
pub fn no_unwind<T>(hook: &str, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            runtime::fatal::die(&format!("panic in the {hook} hook: {msg}"))
        }
    }
}

/// Whether this process owns the runtime in its memory (false in a `vfork`
/// child, which shares its parent's).
pub fn owns_runtime() -> bool {
    OWNER_PID.load(Ordering::Relaxed) == std::process::id()
}

/// Whether this task, not the runtime's process, shares its memory: a
/// `vfork` (or `posix_spawn`) child. Asks the kernel (`kcmp(KCMP_VM)`); a
/// kernel without `kcmp` answers no, and the child pins nothing.
pub fn shares_runtime() -> bool {
    let owner = OWNER_PID.load(Ordering::Relaxed) as libc::pid_t;
    // SAFETY: getpid has no arguments and cannot fail.
    let me = unsafe { libc::getpid() };
    me != owner && common::kcmp::same_memory(me, owner) == Some(true)
}

/// The runtime if it has started (never starts it).
pub fn started() -> Option<&'static Preload> {
    PRELOAD.get()
}

/// Whether an allocation of `size` bytes is below `--min-alloc` (left to
/// glibc, or to the small-object heap).
#[inline]
pub fn below_min(size: usize) -> bool {
    size < MIN_ALLOC.load(Ordering::Relaxed)
}

#[inline]
pub fn in_bounds(addr: usize, len: usize) -> bool {
    addr < HI.load(Ordering::Relaxed) && addr.saturating_add(len) > LO.load(Ordering::Relaxed)
}
