//! The process-wide state: settings, the runtime, and the table of regions
//! handed to the program.

use launch::report::ProgramCounters;
use launch::Settings;
use runtime::reservation::Reservations;
use runtime::{Region, Runtime};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::sync::{Mutex, MutexGuard, PoisonError};

use common::PAGE_SIZE;

/// Smallest allocation served from a region; `usize::MAX` until the
/// settings are read (everything passes through before that).
static MIN_ALLOC: AtomicUsize = AtomicUsize::new(usize::MAX);
static SETTINGS: OnceLock<Settings> = OnceLock::new();
static PRELOAD: OnceLock<Preload> = OnceLock::new();
/// The process the runtime was made (or, after a fork, adopted) for. A
/// `vfork` child shares its parent's memory and runtime: it must not
/// report or use them as its own.
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
/// Bounds of every region ever handed out: a cheap "not ours" test.
static LO: AtomicUsize = AtomicUsize::new(usize::MAX);
static HI: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// 0 unknown, 1 the program's thread, 2 a runtime thread.
    static THREAD_KIND: Cell<u8> = const { Cell::new(0) };
}

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

struct Entry {
    region: Region,
    /// The address handed to the program (aligned inside the region).
    user: usize,
    kind: Kind,
}

impl Entry {
    fn usable(&self) -> usize {
        self.region.as_ptr() as usize + self.region.len() - self.user
    }
}

/// The regions handed to the program, by base, and its reservations. It
/// derefs to the regions.
#[derive(Default)]
struct Tables {
    regions: BTreeMap<usize, Entry>,
    reservations: Reservations,
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
    table: Mutex<Tables>,
    pub settings: Settings,
    /// `region_allocs` and `regions_released` (the report's other program
    /// figures are filled in when it is made).
    pub counters: ProgramCounters,
}

impl Preload {
    /// The region table (a poisoned lock is taken anyway: a panic in a hook
    /// has ended the program).
    fn table(&'static self) -> MutexGuard<'static, Tables> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Marks this thread inside the runtime while alive: its nested calls pass
/// through (see `runtime::reentry`).
pub type Busy = runtime::reentry::Inside;

/// Enters a hook that may use the runtime: `None` when the call must pass
/// through (nested call, runtime thread).
pub fn enter() -> Option<Busy> {
    (!passes_through()).then(force_busy)
}

/// Marks the thread busy whoever it is (for work on a region found in the
/// table, whose syscalls must reach the kernel).
pub fn force_busy() -> Busy {
    runtime::reentry::enter()
}

/// Whether the calls of this thread must bypass the hooks: a nested call,
/// a runtime thread, or a thread serving its own fault (checked first, and
/// without thread-local storage: see `runtime::in_thread`).
pub fn passes_through() -> bool {
    runtime::in_thread::serving_here() || runtime::reentry::inside() || is_runtime_thread()
}

fn is_runtime_thread() -> bool {
    THREAD_KIND.with(|k| {
        if k.get() == 0 {
            let mut name = [0u8; 16];
            // SAFETY: PR_GET_NAME writes at most 16 bytes into `name`.
            let r = unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) };
            let ours = r == 0 && name.starts_with(b"uzswap/");
            k.set(if ours { 2 } else { 1 });
        }
        k.get() == 2
    })
}

thread_local! {
    /// The region table, held by the forking thread from the fork's prepare
    /// to its parent or child handler.
    static FORK_HELD: RefCell<Option<MutexGuard<'static, Tables>>> =
        const { RefCell::new(None) };
}

extern "C" fn before_fork() {
    no_unwind("fork prepare", || {
        if let Some(p) = started() {
            let table = p.table();
            FORK_HELD.with(|h| *h.borrow_mut() = Some(table));
        }
    })
}

extern "C" fn after_fork_in_parent() {
    no_unwind("fork parent", || {
        FORK_HELD.with(|h| drop(h.borrow_mut().take()));
    })
}

extern "C" fn after_fork_in_child() {
    no_unwind("fork child", || {
        FORK_HELD.with(|h| drop(h.borrow_mut().take()));
        crate::small_heap::after_fork_in_child();
        // The child has a runtime of its own (rebuilt by the runtime's fork
        // handler, which ran first): it serves its own counters.
        if started().is_some() {
            OWNER_PID.store(std::process::id(), Ordering::Relaxed);
            runtime_started();
        }
    })
}

/// The runtime pins system calls' buffers for the guard.
struct RuntimePinner;

impl guard::Pinner for RuntimePinner {
    fn pin(&self, addr: usize, len: usize, write: bool) -> guard::PinToken {
        if is_runtime_thread() {
            // The runtime's own I/O on region pages (eviction writing a run
            // straight to the swap file when the pool refuses it) runs while
            // the runtime holds those pages in flight: a pin would wait for
            // the very operation that makes the call. It needs none.
            return guard::PinToken { addr, len: 0 };
        }
        match started() {
            // The runtime's process, or a vfork child sharing its memory
            // (and so its runtime, whose threads serve the child's faults).
            Some(p) if owns_runtime() || shares_runtime() => {
                let (addr, len) = p.runtime.pin_for_syscall(addr, len, write);
                guard::PinToken { addr, len }
            }
            // No runtime yet (no region exists), or a child with memory of
            // its own and no runtime in it: nothing of ours to pin.
            _ => guard::PinToken { addr, len: 0 },
        }
    }

    fn unpin(&self, t: guard::PinToken) {
        if let Some(p) = started().filter(|_| t.len > 0) {
            p.runtime.unpin(t.addr, t.len);
        }
    }

    fn registered(&self, addr: usize, len: usize) {
        // Kept resident for good: pinned and never unpinned (only by the
        // runtime's own process: a vfork child's would outlive it).
        if owns_runtime() {
            let _ = self.pin(addr, len, true);
        }
    }

    fn in_vfork_child(&self) -> bool {
        started().is_some() && shares_runtime()
    }
}

static PINNER: RuntimePinner = RuntimePinner;

/// Whether the syscall guard is needed (the userfaultfd is user-mode
/// only) and not yet in place: set at load, cleared once installed.
static GUARD_PENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The guard could not be installed (a thread of the program blocks
/// SIGSYS): no region is made, the program's memory stays plain.
static GUARD_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The syscall guard is to go in, or is in (user-mode faults).
static GUARD_USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Where the userfaultfd can only handle the program's own faults (no
/// root, `vm.unprivileged_userfaultfd=0`), the kernel cannot fault region
/// pages in for a system call: the syscall guard (the `guard` crate) traps
/// calls whose buffers lie in the region arena and pins and faults them in
/// first.
///
/// It goes in with the first region, not at load: any seccomp filter makes
/// every system call of the process slower (about 50 ns on this machine's
/// VM, measured in BENCHMARKS.md), and a program that never makes a region
/// has no system call to guard. One exception: a program exec'd by a
/// guarded one inherits the filter (filters survive `execve`), which traps
/// from the first instruction, so the handler goes in at load then.
fn decide_guard(s: &Settings) {
    match s.probe_fault_mode() {
        Ok(runtime::FaultMode::KernelFaults) => {}
        Ok(runtime::FaultMode::UserModeOnly | runtime::FaultMode::InThread) => {
            GUARD_USED.store(true, Ordering::Release);
            GUARD_PENDING.store(true, Ordering::Release);
            // SAFETY: PR_GET_SECCOMP takes no pointer; 2 = filter mode.
            let filtered = unsafe { libc::prctl(libc::PR_GET_SECCOMP) } == 2;
            if filtered {
                install_guard();
            }
        }
        // The runtime says why when it starts (at the first large
        // allocation); a program that makes none must still run.
        Err(_) => {}
    }
}

/// Installs the guard if it is still pending; false if regions must not
/// be made (it could not be installed). Called with the thread busy, so
/// its own allocations pass through; the first caller installs, the others
/// wait for it.
fn guard_ready() -> bool {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    if GUARD_PENDING.load(Ordering::Acquire) {
        INSTALL.call_once(install_guard);
    }
    !GUARD_REFUSED.load(Ordering::Acquire)
}

/// Whether the guard is to go in or is in: SIGSYS must stay unblocked.
pub fn guard_used() -> bool {
    GUARD_USED.load(Ordering::Acquire)
}

fn install_guard() {
    let arena = runtime::arena::global()
        .unwrap_or_else(|e| die(&format!("cannot reserve the region arena: {e}")));
    // The gate at the arena's first page, which regions never use: the
    // same address in every process, so a filter inherited through exec
    // allows it too.
    let config = guard::GuardConfig {
        gate: Some(arena.range().start),
        ..guard::GuardConfig::default()
    };
    match guard::install_with(arena.range(), &PINNER, config) {
        Ok(_) => {}
        // Installing now would kill those threads at their first trap:
        // leave the program's memory plain (correct, not limited).
        Err(guard::GuardError::SigsysBlocked(tids)) => {
            GUARD_REFUSED.store(true, Ordering::Release);
            eprintln!(
                "uzswap: threads {tids:?} block SIGSYS, so the syscall guard (needed without root for system calls on paged memory) cannot go in: this program's memory is not paged"
            );
        }
        Err(e) => die(&format!(
            "cannot install the syscall guard (needed without root for system calls on paged memory): {e}"
        )),
    }
    GUARD_PENDING.store(false, Ordering::Release);
}

/// Reads the settings from the environment; a bad one ends the program
/// with a message naming it.
pub fn load_settings() {
    // Whatever the C library allocates meanwhile (the guard's set-up, fork
    // handlers) is glibc's: the small-object heap must not start (and
    // install the guard a second time) from inside the guard's install.
    let _busy = force_busy();
    match Settings::from_env() {
        Ok(s) => {
            MIN_ALLOC.store(s.min_alloc_bytes, Ordering::Relaxed);
            let _ = SETTINGS.set(s);
            // The runtime's fork handlers first: its prepare then runs after
            // every other (library) prepare handler, its child handler
            // before theirs. Then ours, which hold the region table.
            runtime::fork::register_handlers();
            // SAFETY: registering handlers with no preconditions; they never
            // unwind.
            let r = unsafe {
                libc::pthread_atfork(
                    Some(before_fork),
                    Some(after_fork_in_parent),
                    Some(after_fork_in_child),
                )
            };
            if r != 0 {
                die(&format!("pthread_atfork failed (errno {r})"));
            }
            let s = SETTINGS.get().expect("set just above");
            decide_guard(s);
            // Under the syscall guard too: a vfork child's system calls pin
            // through its parent's runtime, and its `execve` strings are
            // copied out of the arena (`guard`'s `exec_copy`).
            crate::small_heap::configure(s.small_objects);
        }
        Err(e) => die(&format!("bad setting: {e}")),
    }
}

/// The runtime could not start (a bad setting, no userfaultfd, no thread):
/// exit 70 with the reason.
fn die(msg: &str) -> ! {
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

/// What runs when a runtime starts in this process (at first use, and
/// again in a forked child, which has a runtime of its own). Set once at
/// load (`lib.rs`: the stats server): the regions know nothing of who
/// reports on them.
static ON_RUNTIME_START: OnceLock<fn()> = OnceLock::new();

/// Sets what runs when a runtime starts (once; later calls are ignored).
pub fn on_runtime_start(f: fn()) {
    let _ = ON_RUNTIME_START.set(f);
}

fn runtime_started() {
    if let Some(f) = ON_RUNTIME_START.get() {
        f();
    }
}

/// The runtime, started on first use: its fault and reclaim threads and
/// the stats server begin here ([`started`] never starts them). A runtime
/// that cannot start (no userfaultfd) ends the program with the reason: it
/// was asked to run under a memory limit it would not get.
pub fn get_or_start() -> Option<&'static Preload> {
    let settings = SETTINGS.get()?;
    Some(PRELOAD.get_or_init(|| {
        if !settings.fault_thread {
            crate::sigbus::take_over();
        }
        let runtime = Runtime::new(settings.runtime_config())
            .unwrap_or_else(|e| die(&format!("cannot start the runtime: {e}")));
        let p = Preload {
            runtime,
            table: Mutex::new(Tables::default()),
            settings: settings.clone(),
            counters: ProgramCounters::new(),
        };
        OWNER_PID.store(std::process::id(), Ordering::Relaxed);
        runtime_started();
        p
    }))
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
    const KCMP_VM: libc::c_long = 1;
    let owner = OWNER_PID.load(Ordering::Relaxed);
    // SAFETY: getpid and kcmp take plain integers.
    unsafe {
        let me = libc::getpid();
        me != owner as libc::pid_t && libc::syscall(libc::SYS_kcmp, me, owner, KCMP_VM, 0, 0) == 0
    }
}

/// The runtime if it has started (never starts it).
pub fn started() -> Option<&'static Preload> {
    PRELOAD.get()
}

/// A region for `size` bytes aligned to `align` (a power of two), or `None`
/// to leave the request to glibc.
pub fn alloc(size: usize, align: usize, kind: Kind) -> Option<usize> {
    alloc_with_room(size, align, kind, 0)
}

/// Address room a buffer that `realloc` moved keeps behind it, as a
/// multiple of its size: it grows in place up to 4x before it may have to
/// move again (address room is free: nothing is mapped there).
pub const REALLOC_ROOM: usize = 4;

/// [`alloc`], with `room` bytes of address room reserved from the region's
/// start (for [`grow`]).
pub fn alloc_with_room(size: usize, align: usize, kind: Kind, room: usize) -> Option<usize> {
    if size < MIN_ALLOC.load(Ordering::Relaxed) {
        return None;
    }
    let _busy = enter()?;
    if !guard_ready() {
        return None;
    }
    let p = get_or_start()?;
    let extra = if align > PAGE_SIZE { align } else { 0 };
    let len = size.checked_add(extra)?;
    let region = p.runtime.alloc_with_room(len, room.max(len)).ok()?;
    let base = region.as_ptr() as usize;
    let user = (base + align.max(1) - 1) & !(align.max(1) - 1);
    let end = base + region.len();
    hand_out(p, region, user, kind, end);
    Some(user)
}

/// Enters a new region in the table, counted, with `[base, end)` inside
/// the bounds of [`in_bounds`] (`end`: its end, or its room's if it grows).
fn hand_out(p: &'static Preload, region: Region, user: usize, kind: Kind, end: usize) {
    let base = region.as_ptr() as usize;
    LO.fetch_min(base, Ordering::Relaxed);
    HI.fetch_max(end, Ordering::Relaxed);
    p.counters.region_allocs.fetch_add(1, Ordering::Relaxed);
    p.table().insert(base, Entry { region, user, kind });
}

/// Whether an allocation of `size` bytes is below `--min-alloc` (left to
/// glibc, or to the small-object heap).
pub fn below_min(size: usize) -> bool {
    size < MIN_ALLOC.load(Ordering::Relaxed)
}

/// The small-object heap's region: `room` bytes of address room with its
/// first 64 KiB mapped, grown by [`grow_small_heap`]; its base, or `None`
/// if no region can be made (the heap then stays off).
pub fn small_heap_region(room: usize) -> Option<usize> {
    if !guard_ready() {
        return None;
    }
    let p = get_or_start()?;
    let region = p.runtime.alloc_with_room(PAGE_SIZE, room).ok()?;
    let base = region.as_ptr() as usize;
    hand_out(p, region, base, Kind::SmallHeap, base + room);
    Some(base)
}

/// Grows the small-object heap's region at `base` in place to `len` bytes.
pub fn grow_small_heap(base: usize, len: usize) -> bool {
    let Some(p) = started() else {
        return false;
    };
    let mut table = p.table();
    match table.get_mut(&base) {
        Some(e) if e.kind == Kind::SmallHeap => {
            matches!(p.runtime.grow(&mut e.region, len), Ok(true))
        }
        _ => false,
    }
}

/// Counts `bytes` more handed to the small-object heap.
pub fn small_heap_grown(bytes: usize) {
    if let Some(p) = started() {
        p.counters
            .small_heap_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

pub fn in_bounds(addr: usize, len: usize) -> bool {
    addr < HI.load(Ordering::Relaxed) && addr.saturating_add(len) > LO.load(Ordering::Relaxed)
}

/// Whether `[addr, addr + len)` lies within one region.
pub fn within_region(addr: usize, len: usize) -> bool {
    if !in_bounds(addr, len) {
        return false;
    }
    let Some(p) = started() else {
        return false;
    };
    let table = p.table();
    table
        .range(..=addr)
        .next_back()
        .is_some_and(|(&base, e)| addr >= base && addr.saturating_add(len) <= base + e.region.len())
}

/// The program's `madvise(MADV_DONTNEED or MADV_FREE)` of a page-aligned
/// range inside one region (a part of a large allocation, or of the
/// small-object heap, as redis's fork child and allocators that purge do):
/// the runtime discards those pages and the region stays paged. False
/// where the range is not inside one region (the caller releases what it
/// overlaps and passes the call on, as before).
pub fn discard_in_region(addr: usize, len: usize) -> bool {
    if !addr.is_multiple_of(common::PAGE_SIZE) || len == 0 || !within_region(addr, len) {
        return false;
    }
    let Some(p) = started() else {
        return false;
    };
    let _busy = force_busy();
    p.runtime.discard(addr, len);
    true
}

/// The usable size of a region pointer handed out by [`alloc`].
pub fn usable_size(ptr: usize) -> Option<usize> {
    if !in_bounds(ptr, 1) {
        return None;
    }
    let p = started()?;
    let table = p.table();
    let (_, e) = table.range(..=ptr).next_back()?;
    (e.user == ptr && matches!(e.kind, Kind::Malloc | Kind::Mapping)).then(|| e.usable())
}

/// Grows the allocation at `ptr` (a region's `malloc` pointer) in place
/// to hold `size` bytes: its pages stay where they are, swapped out or
/// not. `false` if it is not a region or cannot grow where it is.
pub fn grow(ptr: usize, size: usize) -> bool {
    if !in_bounds(ptr, 1) {
        return false;
    }
    let Some(p) = started() else {
        return false;
    };
    let _busy = force_busy();
    let mut table = p.table();
    let Some((_, e)) = table.range_mut(..=ptr).next_back() else {
        return false;
    };
    if e.user != ptr || e.kind != Kind::Malloc {
        return false;
    }
    let Some(len) = (ptr - e.region.as_ptr() as usize).checked_add(size) else {
        return false;
    };
    let grown = matches!(p.runtime.grow(&mut e.region, len), Ok(true));
    if grown {
        p.counters.regions_grown.fetch_add(1, Ordering::Relaxed);
    }
    grown
}

/// What [`free`] did with a pointer.
#[derive(Debug, PartialEq, Eq)]
pub enum Freed {
    /// Not a region pointer: glibc's.
    NotOurs,
    /// A region, now gone (or, in a forked child, left alone).
    Region,
}

/// Frees the region `ptr` was handed out for.
pub fn free(ptr: usize) -> Freed {
    if !in_bounds(ptr, 1) {
        return Freed::NotOurs;
    }
    let Some(p) = started() else {
        return Freed::NotOurs;
    };
    let entry = {
        let mut table = p.table();
        match table.range(..=ptr).next_back() {
            Some((&base, e)) if e.user == ptr && e.kind == Kind::Malloc => table.remove(&base),
            Some((_, e))
                if e.kind == Kind::Malloc && ptr < e.region.as_ptr() as usize + e.region.len() =>
            {
                // Inside a malloc region but not its start: a bad free;
                // glibc would abort on it, we keep the memory.
                return Freed::Region;
            }
            // Inside a mapping region: no block of `malloc`'s. Passed on,
            // so the program meets the verdict it would meet without us.
            _ => None,
        }
    };
    match entry {
        Some(e) => {
            let _busy = force_busy();
            drop(e);
            Freed::Region
        }
        None => Freed::NotOurs,
    }
}

/// `munmap(addr, len)` of exactly a mapping region drops it: `true`.
pub fn unmap_exact(addr: usize, len: usize) -> bool {
    if !in_bounds(addr, len) {
        return false;
    }
    let Some(p) = started() else {
        return false;
    };
    let entry = {
        let mut table = p.table();
        let hit = table.get(&addr).is_some_and(|e| {
            e.kind == Kind::Mapping
                && e.user == addr
                && len.div_ceil(PAGE_SIZE) * PAGE_SIZE == e.region.len()
        });
        if hit {
            table.remove(&addr)
        } else {
            None
        }
    };
    entry.is_some_and(|e| {
        let _busy = force_busy();
        drop(e);
        true
    })
}

/// Turns every region overlapping `[addr, addr+len)` into plain memory,
/// before the program changes the range in a way the runtime does not
/// model. Returns how many.
pub fn release_overlapping(addr: usize, len: usize) -> usize {
    if !in_bounds(addr, len) {
        return 0;
    }
    let Some(p) = started() else {
        return 0;
    };
    let end = addr.saturating_add(len);
    let hits: Vec<Entry> = {
        let mut table = p.table();
        let bases: Vec<usize> = table
            .range(..end)
            .filter(|(&b, e)| b + e.region.len() > addr)
            .map(|(&b, _)| b)
            .collect();
        bases.iter().filter_map(|b| table.remove(b)).collect()
    };
    let n = hits.len();
    let _busy = force_busy();
    for e in hits {
        // The mapping stays; from now on it is the program's own.
        let kind = e.kind;
        let (base, len) = e.region.into_plain();
        if kind == Kind::Commit {
            p.table().reservations.tainted.insert(base..base + len);
        }
    }
    p.counters
        .regions_released
        .fetch_add(n as u64, Ordering::Relaxed);
    n
}

/// Regions held now and their bytes.
pub fn holdings() -> (u64, u64) {
    let Some(p) = started() else {
        return (0, 0);
    };
    let table = p.table();
    let bytes = table.values().map(|e| e.region.len() as u64).sum();
    (table.len() as u64, bytes)
}

/// Whether reservations are paged (`--no-reservations` turns it off).
fn reservations_on() -> bool {
    SETTINGS.get().is_some_and(|s| s.reservations)
}

fn page_up(n: usize) -> usize {
    n.div_ceil(PAGE_SIZE) * PAGE_SIZE
}

/// The page range a memory call names, or `None` for a call the kernel
/// refuses (unaligned, empty, wrapping): such calls are passed on
/// untouched, so the kernel's error is the answer.
fn call_range(addr: usize, len: usize) -> Option<std::ops::Range<usize>> {
    if !addr.is_multiple_of(PAGE_SIZE) || len == 0 {
        return None;
    }
    Some(addr..addr.checked_add(page_up(len))?)
}

/// A `PROT_NONE` reservation of `len` bytes from the arena (the caller
/// checked the call's shape), or `None` to leave it to the kernel. A hint
/// address is not honoured (the kernel may ignore hints too): the JVM,
/// whose heap reservation asks for low addresses, then takes what it gets.
pub fn reserve(len: usize) -> Option<usize> {
    if len < MIN_ALLOC.load(Ordering::Relaxed) || !reservations_on() {
        return None;
    }
    let _busy = enter()?;
    if !guard_ready() {
        return None;
    }
    let p = get_or_start()?;
    let arena = runtime::arena::global().ok()?;
    let len = page_up(len);
    let base = arena.reserve_room(len).ok()?;
    LO.fetch_min(base, Ordering::Relaxed);
    HI.fetch_max(base + len, Ordering::Relaxed);
    p.counters.reservations.fetch_add(1, Ordering::Relaxed);
    p.table().reservations.live.insert_apart(base..base + len);
    Some(base)
}

/// Takes the regions overlapping `r` out of the table: those inside `r`
/// and the others (partly outside it).
fn take_overlapping(t: &mut Tables, r: std::ops::Range<usize>) -> (Vec<Entry>, Vec<Entry>) {
    let bases: Vec<usize> = t
        .regions
        .range(..r.end)
        .filter(|(&b, e)| b + e.region.len() > r.start)
        .map(|(&b, _)| b)
        .collect();
    let mut inside = Vec::new();
    let mut across = Vec::new();
    for b in bases {
        if let Some(e) = t.regions.remove(&b) {
            if b >= r.start && b + e.region.len() <= r.end {
                inside.push(e);
            } else {
                across.push(e);
            }
        }
    }
    (inside, across)
}

/// Ends the regions taken by [`take_overlapping`]: those inside the range
/// are dropped (the caller replaces their bytes), the others become plain
/// memory (their parts outside the range keep their bytes) and tainted.
fn end_regions(p: &'static Preload, (inside, across): (Vec<Entry>, Vec<Entry>)) {
    let n = (inside.len() + across.len()) as u64;
    if n == 0 {
        return;
    }
    let _busy = force_busy();
    drop(inside);
    for e in across {
        let kind = e.kind;
        let (base, len) = e.region.into_plain();
        if kind == Kind::Commit {
            p.table().reservations.tainted.insert(base..base + len);
        }
    }
    p.counters.regions_released.fetch_add(n, Ordering::Relaxed);
}

/// The table with the regions overlapping `r` ended (see [`end_regions`]),
/// if `r` lies in a live reservation: `None` otherwise, with nothing done.
fn clear_in_reservation(r: std::ops::Range<usize>) -> Option<MutexGuard<'static, Tables>> {
    if !in_bounds(r.start, r.len()) {
        return None;
    }
    let p = started()?;
    let taken = {
        let mut t = p.table();
        if !t.reservations.live.covers(r.clone()) {
            return None;
        }
        take_overlapping(&mut t, r)
    };
    end_regions(p, taken);
    Some(p.table())
}

/// Commits `[addr, addr + len)` of a reservation in `t` as a region: grows
/// the commit ending at `addr`, or makes a new one. False if the runtime
/// refused (the caller then lets the kernel do it, plain).
fn commit_in(p: &'static Preload, t: &mut Tables, addr: usize, len: usize) -> bool {
    let _busy = force_busy();
    // Only within one reservation: a region never spans two, so that each
    // ends with its own.
    let piece = t.reservations.live.piece_at(addr).map_or(addr, |r| r.start);
    let behind = t
        .regions
        .range_mut(..addr)
        .next_back()
        .filter(|(&b, e)| e.kind == Kind::Commit && b >= piece && b + e.region.len() == addr);
    if let Some((_, e)) = behind {
        if p.runtime.commit_behind(&mut e.region, len).is_ok() {
            p.counters.regions_grown.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        return false;
    }
    match p.runtime.commit(addr, len) {
        Ok(region) => {
            p.counters.region_allocs.fetch_add(1, Ordering::Relaxed);
            t.regions.insert(
                addr,
                Entry {
                    region,
                    user: addr,
                    kind: Kind::Commit,
                },
            );
            true
        }
        Err(_) => false,
    }
}

/// `mmap(addr, len, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|
/// MAP_FIXED)` inside a reservation (the JVM's commit): the range becomes
/// a region, with fresh zeros as the kernel's mapping would have. `None`:
/// not inside a reservation, or refused; the caller maps it (the range is
/// tainted then).
pub fn commit_fixed(addr: usize, len: usize) -> Option<usize> {
    let r = call_range(addr, len)?;
    let len = r.len();
    let mut t = clear_in_reservation(r.clone())?;
    t.reservations.tainted.remove(r.clone());
    let p = started()?;
    if commit_in(p, &mut t, addr, len) {
        Some(addr)
    } else {
        t.reservations.tainted.insert(r);
        None
    }
}

/// Any other `MAP_FIXED` mapping over `[addr, addr + len)`: regions there
/// end first (see [`end_regions`]). Inside a reservation, the range is
/// tainted unless the new mapping is inaccessible anonymous memory (a
/// decommit: its bytes are zeros again).
pub fn before_fixed_map(addr: usize, len: usize, decommit: bool) {
    let Some(std::ops::Range { start: _, end }) = call_range(addr, len) else {
        return; // the kernel refuses it
    };
    match clear_in_reservation(addr..end) {
        Some(mut t) if decommit => t.reservations.tainted.remove(addr..end),
        Some(mut t) => t.reservations.tainted.insert(addr..end),
        None => {
            release_overlapping(addr, len);
            program_maps(addr..end);
        }
    }
}

/// The program maps `r` itself, not all of it inside one reservation:
/// the parts in reservations are tainted (never committed as regions
/// over the program's mapping) and the arena's free room there leaves
/// the arena (never carved over it). True if all of `r` was free room.
fn program_maps(r: std::ops::Range<usize>) -> bool {
    let Some(p) = started() else {
        return false;
    };
    let Some(arena) = runtime::arena::range_if_reserved() else {
        return false;
    };
    if r.end <= arena.start || r.start >= arena.end {
        return false;
    }
    {
        let mut t = p.table();
        let pieces: Vec<(usize, usize)> = t.reservations.live.overlapping(r.clone()).collect();
        for (s, e) in pieces {
            t.reservations.tainted.insert(s.max(r.start)..e.min(r.end));
        }
    }
    runtime::arena::global().is_ok_and(|a| a.withdraw(r.start, r.len()))
}

/// `mmap(addr, len, …, MAP_FIXED_NOREPLACE)`: where the arena holds `addr`
/// as free room (a range the program unmapped, or never had), the room
/// leaves the arena and is unmapped, so that the kernel finds it free as
/// it would without uzswap.
pub fn before_noreplace_map(addr: usize, len: usize) {
    let Some(r) = call_range(addr, len) else {
        return;
    };
    if program_maps(r.clone()) {
        let _busy = force_busy();
        // SAFETY: free arena room, just withdrawn from the arena: nothing
        // of ours or the program's is there.
        unsafe { crate::libc_alloc::sys_munmap(r.start as *mut libc::c_void, r.len()) };
    }
}

/// `mprotect(addr, len, PROT_READ|PROT_WRITE)` over a reservation (V8's
/// commit): each part not yet a region, and never plain writable memory,
/// becomes one; tainted parts, and parts the runtime refuses, are
/// `mprotect`ed as asked. True if done; false if the range is not inside a
/// reservation (the caller passes the call on).
pub fn commit_protect(addr: usize, len: usize) -> bool {
    let Some(std::ops::Range { start: _, end }) = call_range(addr, len) else {
        return false;
    };
    let len = end - addr;
    if !in_bounds(addr, len) {
        return false;
    }
    let Some(p) = started() else {
        return false;
    };
    let mut t = p.table();
    if !t.reservations.live.covers(addr..end) {
        return false;
    }
    let regions: Vec<(usize, usize)> = t
        .regions
        .range(..end)
        .filter(|(&b, e)| b + e.region.len() > addr)
        .map(|(&b, e)| (b, b + e.region.len()))
        .collect();
    for gap in Reservations::gaps(addr..end, &regions) {
        let fresh = !t.reservations.tainted.overlaps(gap.clone());
        if !(fresh && commit_in(p, &mut t, gap.start, gap.len())) {
            let _busy = force_busy();
            // SAFETY: the program's own reserved range, made accessible as
            // it asked.
            let r = unsafe {
                crate::libc_alloc::sys_mprotect(
                    gap.start as *mut libc::c_void,
                    gap.len(),
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if r != 0 {
                return false; // the kernel says why (errno) on the retry
            }
            t.reservations.tainted.insert(gap);
        }
    }
    true
}

/// `mprotect` to anything but read-write: regions there become plain
/// memory; a writable range in a reservation is tainted.
pub fn before_protect(addr: usize, len: usize, writable: bool) {
    release_overlapping(addr, len);
    if !writable || !in_bounds(addr, len) {
        return;
    }
    if let Some(p) = started() {
        let mut t = p.table();
        let r = addr..addr.saturating_add(page_up(len));
        if t.reservations.live.overlaps(r.clone()) {
            t.reservations.tainted.insert(r);
        }
    }
}

/// `munmap(addr, len)` inside a reservation: its regions end, the range is
/// mapped `PROT_NONE` again (its bytes dropped) and leaves the
/// reservation, and the arena gets back the grains no reservation touches.
/// True if done; false if the range is not inside a reservation (the caller
/// passes the call on).
pub fn unmap_reserved(addr: usize, len: usize) -> bool {
    let Some(std::ops::Range { start: _, end }) = call_range(addr, len) else {
        return false;
    };
    let len = end - addr;
    let Some(mut t) = clear_in_reservation(addr..end) else {
        return false;
    };
    let Ok(arena) = runtime::arena::global() else {
        return false;
    };
    let _busy = force_busy();
    // SAFETY: the program's own reserved range, which it unmaps: no region
    // of ours is left in it.
    if unsafe { arena.decommit(addr, len) }.is_err() {
        return false;
    }
    t.reservations.live.remove(addr..end);
    t.reservations.tainted.remove(addr..end);
    for g in t
        .reservations
        .freed_grains(addr..end, runtime::arena::GRAIN)
    {
        // SAFETY: room of a reservation no longer held by the program, with
        // no region in it: nothing uses it.
        unsafe { arena.give_back(g.start, g.len()) };
    }
    true
}
