//! # uzswap-preload — run unmodified programs on uzswap memory
//!
//! `LD_PRELOAD=libuzswap_preload.so PROGRAM` (what `uzswap run` does) serves
//! the program's large allocations from [`runtime::Region`]s, paged through
//! zswap under a resident limit, and passes everything else on: other
//! allocations to the program's own allocator (`next_alloc.rs`: jemalloc,
//! tcmalloc or mimalloc where it links one, glibc's otherwise), other calls
//! to glibc or the kernel:
//!
//! - `malloc`, `calloc`, `realloc`, `reallocarray`, `posix_memalign`,
//!   `aligned_alloc`, `memalign`, `valloc`, `pvalloc` of at least
//!   `UZSWAP_MIN_ALLOC` bytes (128K, glibc's mmap threshold) get a region;
//!   `free` and `malloc_usable_size` recognise region pointers; `realloc`
//!   grows a region in place when it can ([`runtime::Runtime::grow`]).
//! - `mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)`
//!   of at least that size gets a region; `munmap` of exactly it drops it.
//! - Reservations (on by default; `UZSWAP_RESERVATIONS=0` turns them
//!   off): `mmap(NULL, len, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS[|
//!   MAP_NORESERVE], -1, 0)` of at least that size takes address room from
//!   the arena (a hint address is not honoured). What the program then
//!   commits in it becomes a region: `mmap(MAP_FIXED, PROT_READ|
//!   PROT_WRITE)` (the JVM's heap) and `mprotect(PROT_READ|PROT_WRITE)`
//!   (V8's heap; a commit right behind another grows it,
//!   [`runtime::Runtime::commit_behind`]). `mmap(MAP_FIXED, PROT_NONE)`
//!   decommits (zeros next time, as in the kernel), `munmap` of any part
//!   unmaps it (the room goes back to the arena by whole grains), and a
//!   part the program makes accessible any other way (other protections,
//!   file mappings) is *tainted*: never a region again, the kernel's
//!   mapping as asked. `MAP_FIXED` anywhere in the arena takes that room
//!   out of it for good, and `MAP_FIXED_NOREPLACE` over free room finds it
//!   free, as without uzswap.
//!   Not covered: glibc's per-thread malloc arenas (glibc maps and
//!   `mprotect`s them internally, past any interposition); with small
//!   objects on, no allocation of the program reaches them.
//! - jemalloc's extended API (`mallocx`, `rallocx`, `sdallocx`, …) is
//!   served by the same hooks, so no block reaches the other allocator
//!   (`jemalloc_api.rs`).
//! - Small objects: allocations below `UZSWAP_MIN_ALLOC` come from
//!   mimalloc managing one growing region (`small_heap.rs`), so a program
//!   made of small objects (sqlite, redis) is paged too, as root and under
//!   the syscall guard alike. By default (`UZSWAP_SMALL_OBJECTS=4M`) once
//!   the program's own allocator holds 4 MiB of small blocks; from the
//!   first one with `1`, never with `0`.
//! - `madvise(MADV_DONTNEED or MADV_FREE)` inside one region is the
//!   runtime's discard (`Runtime::discard`): the pages read zeros, their
//!   slots go, the region stays paged (redis's fork child discards blocks
//!   of the small-object heap it has saved; allocators purge).
//! - Anything else a program does to a region's range (`munmap` of part,
//!   `mremap`, `mprotect` to other than read-write, other `madvise`
//!   advice, `MAP_FIXED` over it) first turns the region into plain memory
//!   (every page swapped back in, unregistered) and then goes to the
//!   kernel: the program sees exactly the kernel's semantics.
//! - `sigaction` and `signal` of a core-dumping signal (SIGSEGV, SIGABRT,
//!   …): while the program leaves one at `SIG_DFL`, uzswap's handler
//!   stands in for it and brings every swapped page back before the
//!   kernel dumps core (`core_dump.rs`); the program's queries still read
//!   `SIG_DFL`, and its own handlers go to the kernel as asked.
//!
//! The runtime starts at the first large allocation or small-heap object
//! (a program that makes neither pays nothing), with the settings of the `UZSWAP_*` variables
//! ([`launch::Settings`]). Its counters are served on
//! `RUN_DIR/PID.sock` while the program runs and written to
//! `STATS_DIR/PID.stats` at exit ([`launch::report`]). A process that
//! changed user since the run started (a server started as root that runs
//! as its own user) reaches the run's shared limit and leaves its counters
//! through the descriptors `uzswap run` passed down, and makes its swap
//! file where that user may when the run's folder refuses it
//! (`swap_dir.rs`).
//!
//! ## Invariants
//!
//! 1. The library's own Rust code allocates from glibc directly
//!    (`__libc_malloc`, the global allocator below), never through the
//!    hooks. A program block belongs to one allocator for its life: a
//!    region, the small-object heap, or the program's own allocator
//!    (`next_alloc.rs`), asked in that order by every hook.
//! 2. Calls made by the runtime's threads (named `uzswap/*`, a name no
//!    executable's own can have), or by a hook
//!    already running on this thread (C libraries inside compression, the
//!    runtime's own `mmap`/`munmap`/`madvise`), pass straight to glibc or
//!    the kernel.
//! 3. A forked child gets a runtime of its own (see `runtime::fork`): it
//!    sees its parent's regions as they were at the fork, pages its own
//!    allocations, and reports its own counters.
//! 4. Signal handlers of the library (the guard's SIGSYS, the core-dump
//!    handler) and the `sigaction` hook allocate nothing and take no lock:
//!    the interrupted thread may hold any.
//!
//! ## Lock order
//!
//! region table (regions and reservations) → runtime state lock. The table lock is never held while
//! waiting for the runtime (a region is dropped after its entry is removed),
//! and the runtime's threads never take it.

mod core_dump;
mod gate;
mod guarded_io;
mod hooks;
mod jemalloc_api;
mod libc_alloc;
mod next_alloc;
mod preload;
mod regions;
mod reservations;
mod setup;
mod sigbus;
mod small_heap;
mod start;
mod stats;
mod swap_dir;
mod syscall_guard;

#[global_allocator]
static GLOBAL: libc_alloc::LibcAlloc = libc_alloc::LibcAlloc;

/// Runs when the library is loaded: the stats server and complete core
/// dumps are set to start with the runtime (`stats` and `core_dump` depend
/// on `preload` and `start`, never the reverse), and the settings are read
/// (a bad one stops the program with a clear message).
extern "C" fn on_load() {
    start::on_runtime_start(|| {
        stats::start_server();
        core_dump::arm();
    });
    core_dump::look_up();
    preload::no_unwind("load", setup::load_settings);
}

/// Runs at exit: writes the final counters.
extern "C" fn on_exit() {
    preload::no_unwind("exit", stats::write_exit_report);
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_EXIT: extern "C" fn() = on_exit;
