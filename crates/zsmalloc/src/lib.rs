//! # zsmalloc — a user-space re-implementation of mm/zsmalloc.c
//!
//! A pool that stores compressed pages (objects of 1..=4096 bytes) densely
//! in size-classed *zspages*, with the lockless `zs_free` design
//! (docs/seeds.md: the size-class index encoded in the object location so
//! `free` needs no pool lock; zspage pages released after the class lock
//! is dropped). The mainline design stays selectable
//! ([`FreePath::PoolLock`], [`PageRelease::UnderClassLock`]) so the two can
//! be measured side by side.
//!
//! ## Design
//!
//! * **Size classes** ([`class`]): 255 classes of 32..=4096 bytes in 16-byte
//!   steps; each zspage chains the 1..=8 pages that waste least; classes of
//!   equal shape merge. Objects straddle page boundaries; readers copy the
//!   two halves (`Pool::read_with` lends an object that lies in one page in
//!   place, as `zs_obj_read_begin` maps it).
//! * **Arena** (`arena`): one reserved anonymous mapping cut into pages named
//!   by pfn (the buddy allocator's job). Releasing a zspage clears its page
//!   descriptors and puts its pages on a *hot* free list, still resident and
//!   reused first. Only when more than [`Config::free_page_cache`] free
//!   pages are hot do the oldest go back to the OS (`MADV_DONTNEED` of up
//!   to 64 runs in one `process_madvise`: one TLB flush; down to half that
//!   bound); `None` never gives memory back.
//! * **Handles** ([`Handle`]): `[generation | slot]`. The slot holds the
//!   object's [`ObjLocation`] — `[pfn | class_idx | obj_idx | tag]` — in one
//!   atomic word. Callers keep handles; compaction rewrites locations.
//!   Freed slots wait in per-thread shards; a thread whose shard is empty
//!   takes a batch from another before it makes a slot afresh, so the
//!   table holds about as many slots as objects ever live at once, even
//!   when one thread allocates and another frees.
//! * **Free** on [`FreePath::ClassLockOnly`]: read the location word without
//!   a lock, take the class named by its `class_idx`, re-read the word (now
//!   stable: migration holds the same class lock), free the object. An empty
//!   zspage is detached under the class lock if no reader holds it (a
//!   `try_write` of its stripe, the kernel's `trylock_zspage`), else left in
//!   the empty group for a later pass (deferred free); its pages go back to
//!   the arena after the class lock is dropped.
//! * **Compaction** ([`Pool::compact`]): per class, move objects from the
//!   least used zspage into the most used one, rewrite each moved object's
//!   slot, free emptied zspages. Locks are dropped between zspage pairs, so
//!   `free` interleaves with it.
//!
//! ## Invariants
//!
//! 1. A live handle's slot has the handle's generation and a location with
//!    the allocation tag; its `class_idx` never changes while it lives.
//! 2. A slot's location changes only under its class lock (malloc, free,
//!    migration), and migration also holds the pool lock for writing.
//! 3. `ZsPage::objs[i]` names the slot of object `i` exactly when that slot's
//!    location names object `i` of that zspage.
//! 4. A zspage is in exactly one fullness group, the one its use calls for.
//! 5. Object bytes are touched only with the pool lock held (shared by
//!    readers/writers, exclusive by compaction) and, for readers/writers, the
//!    zspage's stripe lock (shared to read, exclusive to write).
//! 6. Pages of a detached zspage are never reachable from a live handle.
//!
//! ## Lock order
//!
//! ```text
//! pool_lock (RwLock)          compaction: write; read/write/read_to_vec, PoolLock free: read
//!   class->lock (Mutex)       malloc, free, compaction, stats
//!     zspage stripe (RwLock)  read/write/read_to_vec; try_write to detach an empty zspage
//!       arena free list, handle free-list shard (leaf locks)
//! ```
//!
//! `free` on [`FreePath::ClassLockOnly`] takes no pool lock at all.

#![warn(missing_debug_implementations)]

mod arena;
pub mod class;
mod handle;
mod pool;
mod sync;
mod zspage;

pub use class::{ClassSpec, PAGE_SIZE, ZS_MAX_ALLOC_SIZE, ZS_MIN_ALLOC_SIZE};
pub use handle::{Handle, ObjLocation};
pub use pool::{ClassStats, CompactStats, Config, FreePath, PageRelease, Pool, PoolStats};

/// The README's code blocks, compiled and run as doctests so that its
/// example stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// Errors of the pool's calls. None of them leaves the pool inconsistent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("object size {0} is outside 1..={max}", max = ZS_MAX_ALLOC_SIZE)]
    InvalidSize(usize),
    #[error("{0:?} names no live object")]
    InvalidHandle(Handle),
    #[error("{len} bytes do not fit in an object of {capacity} bytes")]
    TooLong { len: usize, capacity: usize },
    #[error("no size class has index {0}")]
    InvalidClass(usize),
    #[error("the pool's arena is full")]
    OutOfMemory,
    #[error("the pool's handle table is full")]
    OutOfHandles,
    #[error("invalid pool configuration: {0}")]
    Config(String),
    #[error("cannot reserve the arena: {0}")]
    Mmap(#[source] std::io::Error),
}
