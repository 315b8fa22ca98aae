//! # runtime — page real programs' memory through uzswap (userfaultfd)
//!
//! A [`Runtime`] hands out [`Region`]s: anonymous memory carved from one
//! virtual-address arena ([`arena`]) and registered with a userfaultfd in
//! missing and write-protect modes. Its faults are served by the faulting
//! thread itself, in its SIGBUS handler (`UFFD_FEATURE_SIGBUS`,
//! [`in_thread`]), or by a handler thread (`fault.rs`), as
//! [`RuntimeConfig::serve_faults_in_thread`] says. Each region page lives either in memory
//! or in the [`zswap::Swap`] store. A resident limit (memcg `memory.high`'s
//! role) makes a reclaim thread evict the oldest pages, kswapd-style. A
//! fault that finds residency past the limit plus
//! [`throttle_headroom_bytes`] (16 MiB, or a quarter of a small limit) plus
//! one reclaim batch is *throttled*: the handler maps its page but leaves
//! the faulting thread asleep, and wakes it once reclaim has caught up.
//!
//! ## The order of kernel calls, in short
//!
//! [`protocol`] has every step; the two that matter most:
//!
//! * **First touch** of an `Untouched` page marks the folio-aligned run of
//!   untouched pages around it `Filling`, maps it (`UFFDIO_ZEROPAGE` for a
//!   read; `UFFDIO_COPY` of zeros for a write), and only then publishes it
//!   `Resident` and queues it on the LRU, so reclaim never picks a page
//!   that is not mapped yet.
//! * **Eviction** of a run marks it `Evicting`, write-protects it (writers
//!   wait, readers go on), stores it (compressed straight from the mapped
//!   pages), unmaps it (`MADV_DONTNEED`), removes the protection and wakes
//!   the writers (who fault again, find the page in flight, and wait), and
//!   then publishes `Swapped`. Where faults raise SIGBUS in the faulting
//!   thread nothing sleeps in the kernel, and the unmap took the
//!   protection with the pages: the run is published at once. A refused
//!   store or a failed unmap un-protects the run and puts it back
//!   `Resident`. Stored runs are unmapped in groups of at least
//!   `unmap_group_pages` (16) pages with one `process_madvise`: each
//!   `madvise` is a TLB-shootdown IPI to the CPU the program runs on,
//!   13 µs against 0.8 µs per page batched here.
//! * **Clean pages.** A read fault's page that comes from the swap file
//!   keeps its slot and is mapped write-protected (`Clean`). Reclaim
//!   unmaps such a page without storing it, once `PAGEMAP_SCAN` confirms
//!   it is still mapped and protected; a write frees the slot first.
//!
//! ## Where things are
//!
//! * [`protocol`]: **the page-state machine** — every page state, every
//!   transition, and the order of kernel calls around each, as small step
//!   machines: missing faults (first touch, swap-in with a stream's folio),
//!   write-protect faults, eviction, aging (write tracking), pins for
//!   system calls, region release. Its module docs state the invariants.
//!   The exhaustive model checker (`model.rs`, tests) runs these same
//!   functions against a model kernel, in every interleaving.
//! * `config.rs`: [`RuntimeConfig`] and [`InjectFailure`], imported by
//!   everything else, importing nothing of the crate's mechanisms.
//! * `pager.rs`: the `Pager`, what every runtime thread of a process
//!   shares (page states, the real environment, the limit in force, the
//!   runtime's threads), and the driver that runs protocol operations
//!   against the kernel. The mechanisms below add `impl Pager` blocks and
//!   import it; it imports none of them.
//! * `runtime.rs`: [`Runtime`], the public handle over a `Pager`.
//! * `fault.rs`: the fault loop (plumbing: events in, operations run).
//! * [`in_thread`]: faults served in the faulting thread instead
//!   (`UFFD_FEATURE_SIGBUS`): the SIGBUS entry point and the runtimes it
//!   serves.
//! * `reclaim.rs`: the reclaim thread, throttling, when aging runs.
//! * `aging.rs`: whether aging (write tracking) pays: epochs with and
//!   without it, faults per eviction compared, the cheaper one run.
//! * `split.rs`: the budget split — the pool's share of a charged limit,
//!   moved by the refault distances of swap-ins from the pool (down) and
//!   from the swap file (up), weighed by what each costs; the reclaimer
//!   writes the pool back to it.
//! * `admission.rs`: whether evicted pages pass through the pool or go
//!   straight to the swap file: bypassed for a while where the pool
//!   writes back most of what it stores and the file is about as fast to
//!   read (its compression and decompression then cost more than the
//!   loads it serves save).
//! * `clean.rs`: whether swap-ins keep clean pages' slots: off where most
//!   kept pages are written (each write a write-protect fault).
//! * [`store_side`]: a swap-in's side of the store: folio swap-in, the
//!   clean governor, the budget split, asked by the environment for each
//!   load (and by the design lab's replay, the same object).
//! * `region.rs`: the region API ([`Runtime::alloc`], drop,
//!   [`Region::into_plain`], [`Runtime::commit`] for parts of a
//!   reservation) and pins ([`Runtime::pin`]).
//! * [`reservation`]: the bookkeeping of `PROT_NONE` reservations whose
//!   committed parts are regions (the JVM's and V8's heaps).
//! * `swapin.rs`: folio swap-in — a swap-in fault that streams (next to
//!   a recent one's pages) brings the rest of its folio from the pool and
//!   the swap file (mTHP swap-in's and VMA readahead's role); any other
//!   fault takes its one page (no readahead for pooled pages,
//!   docs/seeds.md).
//! * `env.rs`: the real environment — userfaultfd ioctls, `madvise`,
//!   `PAGEMAP_SCAN`, the swap store.
//! * `uffd.rs`: opening the userfaultfd in the strongest [`FaultMode`]
//!   this process may have.
//! * `fatal.rs`: how the runtime dies: a panic or an unrecoverable error in
//!   any runtime thread ends the program at once, with a message and exit
//!   code 71, rather than leave it blocked in a fault nobody serves.
//!
//! ## Invariants of the runtime (beyond the protocol's)
//!
//! 1. Runtime threads never fault on a region page, except the evictor on
//!    its own victim discarded behind its back (served with zeros), and
//!    then only while it reads the run for the store (the zero test and
//!    compression, in its own thread; or a copy, where the compressor
//!    works in other threads), holding no lock of the store. The
//!    fault handler checks the faulting thread's id and ends the program
//!    otherwise: with kernel faults handled, a runtime thread faulting
//!    inside a system call would wait for itself.
//! 2. The fault handler never evicts and never waits for the reclaimer: a
//!    throttled fault's thread sleeps, not the handler, which stays free to
//!    serve every other fault. A fault served in the faulting thread
//!    ([`in_thread`]) throttles that thread alone, after its page is
//!    mapped.
//! 4. A fault served in the faulting thread holds no lock across the
//!    program's access and touches no thread-local storage of a shared
//!    library on its way (see [`in_thread`]): the state lock, the store's
//!    locks (`common::sync`) and glibc's allocator are never held by a
//!    thread while it touches region memory, so the interrupted thread can
//!    hold none of them.
//! 3. Every system call the runtime makes on region memory goes to the
//!    kernel directly ([`sys`]), never through the symbols the LD_PRELOAD
//!    library interposes, and its result is checked: a kernel call of the
//!    protocol that fails unexpectedly is fatal, never ignored.
//!
//! ## Lock order
//!
//! reclaim progress → state lock. The state lock is the protocol's only
//! lock (see [`protocol`]); compression, I/O and ioctls run without it,
//! except the write-tracking un-protect.

mod admission;
mod aging;
pub mod arena;
mod clean;
mod config;
mod counters;
mod direct;
mod env;
pub mod fatal;
mod fault;
pub mod fork;
mod forkcell;
pub mod in_thread;
#[cfg(test)]
mod model;
mod pagemap;
mod pager;
pub mod protocol;
mod reclaim;
pub mod reentry;
mod region;
pub mod reservation;
mod runtime;
mod shared;
mod sole;
mod split;
pub mod store_side;
mod swapin;
mod sys;
mod uffd;

pub use config::{InjectFailure, RuntimeConfig, PROBATION_PAGES};
pub use counters::RuntimeStats;
pub use protocol::MAX_HEAT;
pub use reclaim::{throttle_headroom_bytes, COMPACT_INTERVAL, THROTTLE_HEADROOM_BYTES};
pub use region::{PinGuard, Region};
pub use runtime::Runtime;
pub use shared::{open_limit_file, LimitControl, SharedLimit};
pub use store_side::{LoadContext, LoadOutcome, StoreSide};
pub use swapin::FolioSwapin;
pub use uffd::FaultMode;

/// Checks that this process may create the userfaultfd a runtime needs
/// (user-mode-only if asked, or with faults served in the faulting
/// thread); returns the mode its runtimes will get.
pub fn probe_userfaultfd(user_mode_only: bool, in_thread: bool) -> Result<FaultMode, RuntimeError> {
    if in_thread {
        return uffd::open_in_thread().map(|_| FaultMode::InThread);
    }
    uffd::open(user_mode_only).map(|(_, mode)| mode)
}

/// Errors of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("userfaultfd is not available: {0} (needs Linux 5.11+ with UFFD_USER_MODE_ONLY, or root / vm.unprivileged_userfaultfd=1)")]
    Uffd(String),
    #[error(transparent)]
    Arena(#[from] arena::ArenaError),
    #[error("swap store: {0}")]
    Swap(#[from] zswap::ZswapError),
    #[error("invalid runtime setting: {0}")]
    Config(String),
    #[error("cannot start a runtime thread: {0}")]
    Thread(std::io::Error),
}
