//! The page-state machine: every state a region page can be in, every
//! transition, and the order of kernel calls around each transition.
//!
//! This module is the protocol. The runtime executes it against the real
//! kernel and store ([`crate::env::RealEnv`]); the exhaustive model checker
//! (`model.rs`, tests only) executes the *same functions* against a model
//! kernel and store, interleaving every step of every operation with the
//! program's accesses. Nothing here spawns threads, sleeps or knows about
//! userfaultfd: an operation is a small step machine whose
//! [`step`](Evict::step) either changes [`State`] under the state lock or
//! makes exactly one call to the [`Env`] without it, and says whether it
//! should run again ([`Step::Next`]), wait for another operation
//! ([`Step::Wait`]), or is done.
//!
//! ## Page states
//!
//! ```text
//!   Untouched ──first touch──▶ Filling ──mapped──▶ Resident ◀─────────────┐
//!                                                   │  ▲                  │
//!                                       picked by   │  │ store refused /  │
//!                                       reclaim     ▼  │ unmap failed     │
//!                                                 Evicting ──unmapped──▶ Swapped
//!                                                   ▲                     │
//!                                   picked (nothing │    Resident ◀──┐    │ missing
//!                                   stored)         │     written /  │    │ fault
//!                                                   │     discarded  │    ▼
//!                                                 Clean ◀──mapped protected── Loading
//!                                                         (a read fault's page
//!                                                          from the swap file)
//! ```
//!
//! * `Untouched`: never mapped; reads as zeros.
//! * `Filling`: a first-touch fault is mapping zeroed pages here.
//! * `Resident`: mapped. Write tracking may have write-protected it
//!   (`armed`); in a forked child it may still be shared with the parent
//!   (`shared`: not charged, not on the LRU, write-protected until written).
//! * `Evicting`: write-protected, being copied into the store, then
//!   unmapped. Writers wait in a write-protect fault; readers proceed.
//!   A reclaim batch stores its runs one by one and unmaps them in groups
//!   of at least `unmap_group_pages` pages, one `process_madvise` (one TLB
//!   flush) per group; a group's pages stay `Evicting` until the whole
//!   group is unmapped. Runs that continue one another (a stream's folios)
//!   are write-protected by one call, and a group of runs of half a folio
//!   or more grows while its next run is one too and starts less than a
//!   folio past its last.
//! * `Loading`: its stored copy is being mapped back.
//! * `Swapped`: unmapped; its bytes are in store `store` at `slot`.
//! * `Clean`: resident, mapped write-protected by the read fault that
//!   brought it in from the swap file, whose slot it keeps (the kernel's
//!   clean swap-cache page). Reclaim takes it like a resident page but
//!   stores nothing: it checks that the page is still mapped and protected
//!   ([`Env::still_protected`]; a page discarded behind the runtime's back
//!   is stored as any other, as zeros) and unmaps it. A write-protect fault
//!   makes it `Resident` (under the state lock, before the protection
//!   goes) and frees the slot; so does a missing fault that finds it
//!   discarded, and the region's release.
//!
//! `Filling`, `Evicting` and `Loading` are *in flight*: exactly one
//! operation owns the page, and counts itself in its region's and the
//! state's `in_flight`. Nothing else changes an in-flight page's state or
//! mapping.
//!
//! ## Invariants (the model checker checks 1–6 in every interleaving)
//!
//! 1. **No lost write.** The bytes a program wrote are the bytes it reads
//!    back: a page is unmapped only after its copy is stored, and no write
//!    can land between the copy and the unmap (the page is write-protected
//!    from before the copy until after the unmap).
//! 2. **No wrong read.** A read sees zeros only for a page never written,
//!    or discarded since its last write; otherwise the last value written.
//! 3. **Resident means mapped, swapped means unmapped.** A `Resident` or
//!    `Evicting` page is mapped (or was discarded behind the runtime's
//!    back, and reads as zeros); a `Swapped` page is not mapped.
//! 4. **Nobody waits forever.** A thread blocked in a fault is woken by
//!    the operation in flight on its page, or its fault is served.
//! 5. **Pinned pages stay usable by the kernel.** A page pinned by a
//!    system call ([`Pin`]) is not evicted and not write-protected by aging
//!    while pinned, so the kernel can read and write it without a fault
//!    (invariant of the syscall guard, checked by the model).
//! 6. **A `Clean` page holds its slot's bytes.** It is unmapped
//!    (discarded behind the runtime's back) or mapped write-protected with
//!    exactly the bytes at its slot; no slot is named by two pages, and
//!    none outlives the pages that named it (checked by the model after
//!    every step, and at the end).
//! 7. **A region's pages leave every structure with it.** LRU records name
//!    a region by id (never reused); records of a dropped region, or of a
//!    page since evicted and refaulted, are dead and skipped, and are
//!    compacted away once they outnumber the live ones.
//!
//! ## Lock order
//!
//! The state lock is the only lock here. A step that calls the [`Env`]
//! does so without it, except [`WpFault`], which removes write-tracking
//! protection while holding it so that no eviction of that page can start
//! in between (the model's `Flaw::UnprotectUnlocked` shows the lost write
//! otherwise), and [`ProgramDiscard`], which forgets the pages and unmaps
//! them in one step under it, so that no operation starts on them in
//! between.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Bytes in a page: [`common::PAGE_SIZE`].
pub use common::PAGE_SIZE as PAGE;

/// A swap slot of a store.
pub type Slot = u64;

/// Which store holds a swapped page: 0 is this process's own; a forked
/// child's pages swapped out by an ancestor are in that ancestor's store,
/// inherited read-only (1, 2, … in the order they were inherited).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct StoreId(pub u8);

impl StoreId {
    pub const OWN: StoreId = StoreId(0);
}

/// Times a swap-in is tried before the page is given up as unreadable (an
/// I/O error or a checksum mismatch may be transient).
pub const SWAPIN_TRIES: u8 = 8;

/// Reprieves a page found written by an aging pass gets from reclaim.
pub const WRITTEN_REPRIEVES: u8 = 2;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PageState {
    Untouched,
    Filling,
    Resident,
    /// Resident, and write-protected since a read fault brought it in from
    /// the swap file: its bytes are still those at own-store `slot`, which
    /// it keeps (a clean swap-cache page). Evicting it stores nothing: it
    /// is unmapped and is `Swapped` at `slot` again. A write (a
    /// write-protect fault) or a discard behind the runtime's back makes it
    /// `Resident` and frees the slot.
    Clean {
        slot: Slot,
    },
    Evicting,
    Loading,
    Swapped {
        store: StoreId,
        slot: Slot,
    },
}

impl PageState {
    pub fn in_flight(self) -> bool {
        matches!(self, Self::Filling | Self::Evicting | Self::Loading)
    }

    /// Mapped and settled: `Resident` or `Clean`.
    pub fn is_resident(self) -> bool {
        matches!(self, Self::Resident | Self::Clean { .. })
    }
}

/// One page of a region.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Page {
    pub state: PageState,
    /// System calls in flight that use this page ([`Pin`]).
    pub pins: u16,
    /// Reclaim passes it is still spared for, having been found written
    /// by aging (up to [`WRITTEN_REPRIEVES`]): a count, not zswap's
    /// second-chance `referenced` flag.
    pub reprieves: u8,
    /// Write-protected by the last aging pass (or, in a forked child, at
    /// adoption): found unprotected later means written.
    pub armed: bool,
    /// Refaulted within the workingset: spared by the next reclaim pass.
    pub active: bool,
    /// A fault arrived while an operation was in flight here: wake the
    /// range when it ends.
    pub waiters: bool,
    /// Forked child only: mapped copy-on-write from the parent and not yet
    /// written, so not charged to this process and not on its LRU.
    pub shared: bool,
    /// Bumped each time the page is queued on the LRU; only the record
    /// with the current generation is live.
    pub lru_gen: u16,
    /// Eviction clock (low 32 bits) when last evicted: the shadow entry.
    pub shadow: u32,
}

impl Page {
    pub const UNTOUCHED: Page = Page {
        state: PageState::Untouched,
        pins: 0,
        reprieves: 0,
        armed: false,
        active: false,
        waiters: false,
        shared: false,
        lru_gen: 0,
        shadow: 0,
    };

    fn evictable(&self) -> bool {
        self.state.is_resident() && self.pins == 0 && !self.shared
    }
}

/// The pages of one region, and what is in flight there.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RegionPages {
    /// Unique for the runtime's life: a region made later at the same
    /// address has another id.
    pub id: u64,
    pub pages: Vec<Page>,
    /// Being dropped or released: no eviction or aging starts here.
    pub dying: bool,
    /// Operations in flight on this region.
    pub in_flight: u32,
    /// An aging pass is write-protecting this region now.
    pub aging: bool,
}

impl RegionPages {
    pub fn len_bytes(&self) -> usize {
        self.pages.len() * PAGE
    }
}

/// A record of the LRU: region (by base and id), page, generation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct LruRecord {
    base: usize,
    id: u64,
    idx: u32,
    gen: u16,
}

/// Everything the state lock guards.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct State {
    /// Regions by base address.
    pub regions: BTreeMap<usize, RegionPages>,
    /// Resident pages, oldest first (dead records are skipped).
    lru: VecDeque<LruRecord>,
    /// Charged resident pages: mapped, not shared with a parent.
    pub resident: usize,
    /// Pages evicted so far: the workingset clock.
    pub evictions: u64,
    next_id: u64,
    /// A fork is being prepared: no operation starts.
    pub forking: bool,
    /// Operations in flight, over all regions.
    pub in_flight: usize,
    /// Bumped whenever something a waiting operation waits for changed.
    pub changes: u64,
    /// Threads sleeping until `changes` moves.
    pub sleepers: u32,
}

impl State {
    /// The region holding `addr`: `(base, page index)`.
    pub fn locate(&self, addr: usize) -> Option<(usize, usize)> {
        let (&base, r) = self.regions.range(..=addr).next_back()?;
        let idx = (addr - base) / PAGE;
        (idx < r.pages.len()).then_some((base, idx))
    }

    /// Whether a region holds any page of `[addr, addr + len)`.
    pub fn overlaps_region(&self, addr: usize, len: usize) -> bool {
        let end = addr.saturating_add(len);
        self.regions
            .range(..end)
            .next_back()
            .is_some_and(|(&b, r)| b + r.len_bytes() > addr)
    }

    /// Records a new region of `npages` untouched pages at `base`.
    pub fn add_region(&mut self, base: usize, npages: usize) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.regions.insert(
            base,
            RegionPages {
                id,
                pages: vec![Page::UNTOUCHED; npages],
                dying: false,
                in_flight: 0,
                aging: false,
            },
        );
        id
    }

    /// The region at `base` if it is still the one with `id`.
    pub fn region(&mut self, base: usize, id: u64) -> Option<&mut RegionPages> {
        self.regions.get_mut(&base).filter(|r| r.id == id)
    }

    /// Region pages pinned now (a scan of every page: for reports).
    pub fn pinned_pages(&self) -> usize {
        self.regions
            .values()
            .map(|r| r.pages.iter().filter(|p| p.pins > 0).count())
            .sum()
    }

    fn push_lru(&mut self, base: usize, idx: usize) {
        let Some(r) = self.regions.get_mut(&base) else {
            return;
        };
        let page = &mut r.pages[idx];
        page.lru_gen = page.lru_gen.wrapping_add(1);
        let rec = LruRecord {
            base,
            id: r.id,
            idx: idx as u32,
            gen: page.lru_gen,
        };
        self.lru.push_back(rec);
        self.compact_lru();
    }

    /// Whether an LRU record still names a resident page of a live region.
    fn live(&self, rec: &LruRecord) -> bool {
        self.regions.get(&rec.base).is_some_and(|r| {
            r.id == rec.id
                && r.pages
                    .get(rec.idx as usize)
                    .is_some_and(|p| p.lru_gen == rec.gen && p.state.is_resident())
        })
    }

    /// Drops dead records once they outnumber the live ones (each resident
    /// page has at most one live record): amortised O(1) per push.
    fn compact_lru(&mut self) {
        if self.lru.len() > 2 * self.resident + 4096 {
            let lru = std::mem::take(&mut self.lru);
            self.lru = lru.into_iter().filter(|r| self.live(r)).collect();
        }
    }

    /// LRU records, live or dead (for tests of invariant 6).
    pub fn lru_records(&self) -> usize {
        self.lru.len()
    }

    /// Live LRU records naming the region at `base` (any id).
    pub fn live_lru_records_of(&self, base: usize) -> usize {
        self.lru
            .iter()
            .filter(|r| r.base == base && self.live(r))
            .count()
    }

    pub(crate) fn begin(&mut self, base: usize) {
        self.in_flight += 1;
        if let Some(r) = self.regions.get_mut(&base) {
            r.in_flight += 1;
        }
    }

    pub(crate) fn end(&mut self, base: usize) {
        self.in_flight -= 1;
        if let Some(r) = self.regions.get_mut(&base) {
            r.in_flight -= 1;
        }
    }

    /// Makes page `idx` of the region at `base` resident and queues it for
    /// reclaim (model set-up; a forked child adopting its pages).
    pub fn install_resident(&mut self, base: usize, idx: usize) {
        if let Some(r) = self.regions.get_mut(&base) {
            r.pages[idx].state = PageState::Resident;
            self.resident += 1;
            self.push_lru(base, idx);
        }
    }

    /// Something a waiting operation may wait for changed.
    pub fn changed(&mut self, cv: &Condvar) {
        self.changes = self.changes.wrapping_add(1);
        if self.sleepers > 0 {
            cv.notify_all();
        }
    }
}

/// A counter the protocol bumps; the runtime keeps them (see
/// [`crate::counters`]), the model ignores them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Event {
    Fault,
    ZeroFault,
    SwapinFault,
    AroundPages,
    FolioSwapin,
    EvictedPages,
    /// Pages swapped in that kept their slot (`Clean`).
    KeptClean,
    /// Pages evicted `Clean`: unmapped, nothing stored or written.
    EvictedClean,
    /// `Clean` pages written (a write-protect fault each; not write
    /// tracking's, so not [`Event::WpFault`]).
    CleanWritten,
    EvictFailures,
    WorkingsetRefault,
    WorkingsetActivate,
    WpFault,
    AgingScan,
    PagesWritten,
    PagesProtected,
    /// Write-protect calls of the aging passes (one per run of pages).
    ProtectCalls,
    WrittenReprieved,
    ExternalDiscard,
    Unshared,
}

/// A failed kernel call, with the operation, range and errno.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op} of {len} bytes at {addr:#x} failed: errno {errno} ({})", std::io::Error::from_raw_os_error(*.errno))]
pub struct KernelError {
    pub op: &'static str,
    pub addr: usize,
    pub len: usize,
    pub errno: i32,
}

impl KernelError {
    pub fn is(&self, errno: i32) -> bool {
        self.errno == errno
    }
}

/// Why the store would not take or give a page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// An error the protocol cannot recover from: the runtime ends the program
/// with it (a kernel call that must not fail did, or a stored page cannot
/// be read back: the kernel's SIGBUS).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fatal {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("a runtime thread faulted on region page {0:#x} (invariant: runtime threads touch only pages they evict; in a system call that would deadlock)")]
    RuntimeThreadFault(usize),
    #[error("swap-in of {addr:#x} (store {store}, slot {slot}) failed: {error}")]
    SwapIn {
        addr: usize,
        store: u8,
        slot: Slot,
        error: StoreError,
    },
}

/// What the protocol needs from the world: the kernel's userfaultfd and
/// memory calls, the store, and counters.
pub trait Env {
    /// A page's bytes in flight between the store and the kernel.
    type Buf: Clone + Eq + Hash + Debug + Default;

    /// Maps `pages` fresh zeroed pages at `addr`, waking the threads
    /// waiting there if `wake`. `write`: the faulting access is a write
    /// (map private zeroed pages, not the shared zero page).
    fn map_zeros(
        &self,
        addr: usize,
        pages: usize,
        write: bool,
        wake: bool,
    ) -> Result<(), KernelError>;
    /// Maps a zeroed page at `addr`, write-protected, and wakes its waiters.
    fn map_zeros_protected(&self, addr: usize) -> Result<(), KernelError>;
    /// Maps one page holding `buf` at `addr`, waking its waiters if `wake`;
    /// write-protected from the start if `protect` (`UFFDIO_COPY_MODE_WP`).
    fn map(
        &self,
        addr: usize,
        buf: &Self::Buf,
        wake: bool,
        protect: bool,
    ) -> Result<(), KernelError>;
    fn wake(&self, addr: usize, len: usize) -> Result<(), KernelError>;
    fn protect(&self, addr: usize, len: usize) -> Result<(), KernelError>;
    /// Removes write protection, waking the writers blocked on it if `wake`.
    fn unprotect(&self, addr: usize, len: usize, wake: bool) -> Result<(), KernelError>;
    /// Unmaps (`MADV_DONTNEED`): the next access faults.
    fn discard(&self, addr: usize, len: usize) -> Result<(), KernelError>;
    /// Unmaps several ranges, as [`Env::discard`] each; one result per
    /// range. The real environment makes it one `process_madvise` (one TLB
    /// flush for all of them) where the kernel allows.
    fn discard_ranges(&self, ranges: &[(usize, usize)]) -> Vec<Result<(), KernelError>> {
        ranges
            .iter()
            .map(|&(addr, len)| self.discard(addr, len))
            .collect()
    }
    /// Appends the sub-ranges of `[addr, addr + len)` that are mapped and
    /// not write-protected (written since protected).
    fn written(
        &self,
        addr: usize,
        len: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> Result<(), KernelError>;
    /// Whether every page of `[addr, addr + len)` is still mapped and
    /// write-protected: not written, and not discarded behind the runtime's
    /// back. `false` where the environment cannot tell.
    fn still_protected(&self, addr: usize, len: usize) -> Result<bool, KernelError>;

    /// Stores the `pages` mapped, write-protected pages at `addr` (read in
    /// place); returns one slot per page. An error stores nothing.
    fn store_run(&self, addr: usize, pages: usize) -> Result<Vec<Slot>, StoreError>;
    /// Reads the page at `slot` into `out` and frees it (own store), or
    /// copies it (inherited store). `neighbours`: other slots of the same
    /// store the caller also wants (fault-around and folio swap-in); those
    /// the store hands over are returned (and freed likewise), the rest
    /// stay stored. `fault`: the swap-in fault the load serves (the
    /// store's locality policy and the budget split use it); `None` for a
    /// load that is no fault.
    /// `keep_clean`: a page read from the swap file may keep its slot
    /// (the store says which did, in [`Loaded`]), as the kernel's swap
    /// cache keeps a clean page's.
    fn load(
        &self,
        store: StoreId,
        slot: Slot,
        out: &mut Self::Buf,
        neighbours: &[Slot],
        fault: Option<SwapinFault>,
        keep_clean: bool,
    ) -> Result<Loaded<Self::Buf>, StoreError>;
    /// Frees a slot whose page is no longer wanted.
    fn free(&self, store: StoreId, slot: Slot);

    fn count(&self, event: Event, n: usize);
}

/// The swap-in fault a load serves: its page's address, and how many
/// evictions ago the page left (its refault distance, the workingset's
/// measure), which the budget split weighs (`split.rs`).
#[derive(Clone, Copy, Debug)]
pub struct SwapinFault {
    pub addr: usize,
    pub distance: RefaultDistance,
}

/// Evictions between a page's eviction and its refault. A policy input,
/// not protocol state: any two compare equal (and hash alike), so that the
/// model's states do not multiply by a number no step decides on.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefaultDistance(pub u64);

impl PartialEq for RefaultDistance {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for RefaultDistance {}

impl Hash for RefaultDistance {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// What [`Env::load`] handed over besides the page asked for.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Loaded<B> {
    /// The page asked for kept its slot (it was read from the swap file).
    pub kept: bool,
    /// Neighbours handed over: slot, bytes, and whether the slot was kept.
    pub around: Vec<(Slot, B, bool)>,
}

/// Settings the protocol follows.
#[derive(Clone, Debug)]
pub struct Tunables {
    /// Longest run mapped by one first-touch fault, and evicted as one
    /// folio; runs are aligned to it.
    pub folio_pages: usize,
    /// Fault-around window: `1 << page_cluster` pages, or the folio if
    /// larger (folio swap-in).
    pub page_cluster: u32,
    /// A page refaulting within this many evictions is active.
    pub workingset_pages: u64,
    /// Eviction unmaps its stored runs together once they hold this many
    /// pages, unless they stream (long runs, near one another), and at the
    /// end of the batch: one TLB flush for all of them. The writers of
    /// those pages wait until the group is unmapped, so a group of
    /// scattered victims is kept short.
    pub unmap_group_pages: usize,
    /// A deliberately broken variant, to show the model checker catching it.
    #[cfg(test)]
    pub flaw: Option<Flaw>,
}

/// Known-wrong variants of the protocol: each must make the model checker
/// report a violation. Only test builds can select one ([`Tunables`] has
/// the field only there).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flaw {
    /// First touch publishes `Resident` (and queues the pages for reclaim)
    /// before they are mapped: a write lands after the eviction copied
    /// zeros, and is lost.
    ResidentBeforeMapped,
    /// Eviction removes the protection and publishes `Swapped` before it
    /// unmaps (an earlier version's order).
    UnprotectBeforeUnmap,
    /// A write-tracking fault removes the protection after dropping the
    /// state lock.
    UnprotectUnlocked,
    /// Pinning does not wait for an eviction in flight.
    PinWithoutSettle,
    /// Aging write-protects pinned pages too.
    AgingIgnoresPins,
    /// A batch's unmap leaves out all but its last stored run, yet reports
    /// every run unmapped.
    BatchUnmapsLastRunOnly,
    /// A write to a `Clean` page removes the protection but leaves the
    /// page `Clean`: its next eviction keeps the old bytes.
    CleanAfterWrite,
    /// Eviction of a `Clean` run trusts the state and does not check that
    /// the pages are still mapped and protected.
    CleanUnchecked,
    /// The evictor's fault on its own discarded victim maps the zero page
    /// writable (an earlier version).
    EvictorZerosWritable,
    /// A run's write-protect call covers that run only, yet the runs that
    /// continue it are taken as protected too.
    SpanProtectsFirstRunOnly,
    /// The program's discard does not wait for the operations in flight
    /// on its pages.
    DiscardIgnoresInFlight,
}

impl Tunables {
    #[cfg(test)]
    fn flawed(&self, f: Flaw) -> bool {
        self.flaw == Some(f)
    }

    #[cfg(not(test))]
    #[inline(always)]
    fn flawed(&self, _: Flaw) -> bool {
        false
    }
}

/// What an operation's step asks for next.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<T> {
    /// Run the next step.
    Next,
    /// Wait until `State::changes` differs from the value given, then run
    /// the same step again.
    Wait(u64),
    Done(T),
}

/// What every step gets.
pub struct Cx<'a, E: Env> {
    pub state: &'a Mutex<State>,
    /// Notified when `State::changes` moves and someone sleeps on it.
    pub changed: &'a Condvar,
    pub env: &'a E,
    pub tun: &'a Tunables,
}

impl<E: Env> Cx<'_, E> {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(self.state)
    }
}

/// Locks the state. A poisoned lock is taken anyway: a runtime thread that
/// panicked has ended the process already (see `fatal.rs`).
pub fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn page_addr(base: usize, idx: usize) -> usize {
    base + idx * PAGE
}

// ---------------------------------------------------------------------------
// Missing faults: first touch, swap-in with fault-around.

/// A missing fault at `addr` (a read, or a write if `write`), taken by a
/// runtime thread if `by_runtime`. A throttled fault
/// ([`MissingFault::defer_wake`]) maps the page but leaves the faulting
/// thread asleep: the runtime wakes it once reclaim has caught up.
///
/// Served by the handler thread (the default), a fault that finds its page
/// in flight marks it `waiters` and ends: the faulting thread sleeps in the
/// kernel until the operation in flight wakes it. Served in the faulting
/// thread itself ([`MissingFault::served_in_thread`], `UFFD_FEATURE_SIGBUS`),
/// nobody sleeps in the kernel: the operation waits (`Step::Wait`) until
/// the page is no longer in flight, then looks again.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct MissingFault<B> {
    pub addr: usize,
    pub write: bool,
    pub by_runtime: bool,
    /// Wake the faulting thread when its page is mapped.
    pub wake: bool,
    /// Run by the faulting thread (in its SIGBUS handler), not the handler
    /// thread.
    pub in_thread: bool,
    pc: MissingPc<B>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum MissingPc<B> {
    Start,
    /// Map zeros over pages `first..first + n` of the region at `base`.
    Fill {
        base: usize,
        first: usize,
        n: usize,
    },
    /// The fill is mapped: publish.
    FillDone {
        base: usize,
        first: usize,
        n: usize,
    },
    /// Load page `idx` (and its `around` neighbours) from the store.
    Load {
        base: usize,
        idx: usize,
        store: StoreId,
        slot: Slot,
        around: Vec<(usize, Slot)>,
        distance: RefaultDistance,
        tries: u8,
    },
    /// Map what was loaded, one page per step: the fault's own page
    /// (`own`, until mapped), then the neighbours in `got`; each with the
    /// slot it kept, if any (mapped write-protected, published `Clean`).
    Map {
        base: usize,
        own: Option<(usize, B, Option<Slot>)>,
        got: Vec<(usize, B, Option<Slot>)>,
        mapped: Vec<(usize, Option<Slot>)>,
        around: Vec<(usize, Slot)>,
        store: StoreId,
    },
    LoadDone {
        base: usize,
        mapped: Vec<(usize, Option<Slot>)>,
        around: Vec<(usize, Slot)>,
        store: StoreId,
    },
    /// Wake threads waiting in `[addr, addr + len)`.
    Wake {
        addr: usize,
        len: usize,
    },
    /// A `Clean` page found discarded and mapped with zeros: free its slot.
    FreeSlot(Slot),
}

impl<B: Clone + Default> MissingFault<B> {
    pub fn new(addr: usize, write: bool, by_runtime: bool) -> Self {
        Self {
            addr: addr & !(PAGE - 1),
            write,
            by_runtime,
            wake: true,
            in_thread: false,
            pc: MissingPc::Start,
        }
    }

    /// Served by the faulting thread: no thread waits in the kernel to be
    /// woken, and a page in flight is waited for here.
    pub fn served_in_thread(mut self) -> Self {
        self.in_thread = true;
        self.wake = false;
        self
    }

    /// Map the fault's page without waking the thread (throttling); the
    /// caller wakes it later.
    pub fn defer_wake(mut self) -> Self {
        self.wake = false;
        self
    }

    pub fn step<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        match std::mem::replace(&mut self.pc, MissingPc::Start) {
            MissingPc::Start => self.start(cx),
            MissingPc::Fill { base, first, n } => {
                let addr = page_addr(base, first);
                match cx.env.map_zeros(addr, n, self.write, self.wake) {
                    Ok(()) => {}
                    Err(e) if e.is(libc::EAGAIN) => {
                        self.pc = MissingPc::Fill { base, first, n };
                        return Ok(Step::Next);
                    }
                    Err(e) => return Err(e.into()),
                }
                if cx.tun.flawed(Flaw::ResidentBeforeMapped) {
                    return Ok(Step::Done(()));
                }
                self.pc = MissingPc::FillDone { base, first, n };
                Ok(Step::Next)
            }
            MissingPc::FillDone { base, first, n } => {
                let mut st = cx.lock();
                let waiters = publish_filled(&mut st, base, first, n);
                st.end(base);
                st.changed(cx.changed);
                Ok(self.wake_if(waiters, page_addr(base, first), n * PAGE))
            }
            MissingPc::Load {
                base,
                idx,
                store,
                slot,
                around,
                distance,
                tries,
            } => {
                let mut buf = B::default();
                let wanted: Vec<Slot> = around.iter().map(|a| a.1).collect();
                // A read fault's pages may keep their slots on the swap
                // file (a write fault's page is written at once).
                let keep = !self.write && store == StoreId::OWN;
                let fault = Some(SwapinFault {
                    addr: page_addr(base, idx),
                    distance,
                });
                match cx.env.load(store, slot, &mut buf, &wanted, fault, keep) {
                    Ok(loaded) => {
                        let got = loaded
                            .around
                            .into_iter()
                            .filter_map(|(s, b, kept)| {
                                let i = around.iter().find(|a| a.1 == s)?.0;
                                Some((i, b, (keep && kept).then_some(s)))
                            })
                            .collect();
                        let own_kept = (keep && loaded.kept).then_some(slot);
                        self.pc = MissingPc::Map {
                            base,
                            own: Some((idx, buf, own_kept)),
                            got,
                            mapped: Vec::new(),
                            around,
                            store,
                        };
                        Ok(Step::Next)
                    }
                    // A transient error (an I/O error, a flipped bit) is
                    // tried again; then, like the kernel's SIGBUS, the page
                    // cannot be produced.
                    Err(error) if tries + 1 >= SWAPIN_TRIES => Err(Fatal::SwapIn {
                        addr: page_addr(base, idx),
                        store: store.0,
                        slot,
                        error,
                    }),
                    Err(_) => {
                        self.pc = MissingPc::Load {
                            base,
                            idx,
                            store,
                            slot,
                            around,
                            distance,
                            tries: tries + 1,
                        };
                        Ok(Step::Next)
                    }
                }
            }
            MissingPc::Map {
                base,
                mut own,
                mut got,
                mut mapped,
                around,
                store,
            } => {
                let next = match own.take() {
                    Some(page) => Some(page),
                    None => got.pop(),
                };
                let Some((i, b, kept)) = next else {
                    self.pc = MissingPc::LoadDone {
                        base,
                        mapped,
                        around,
                        store,
                    };
                    return Ok(Step::Next);
                };
                // Neighbours brought by fault-around: their waiters are not
                // throttled.
                let wake = self.wake || page_addr(base, i) != self.addr;
                match cx.env.map(page_addr(base, i), &b, wake, kept.is_some()) {
                    Ok(()) => mapped.push((i, kept)),
                    // The address space is changing: try the page again.
                    Err(e) if e.is(libc::EAGAIN) => got.push((i, b, kept)),
                    Err(e) => return Err(e.into()),
                }
                self.pc = MissingPc::Map {
                    base,
                    own,
                    got,
                    mapped,
                    around,
                    store,
                };
                Ok(Step::Next)
            }
            MissingPc::LoadDone {
                base,
                mapped,
                around,
                store,
            } => {
                let mut st = cx.lock();
                let waiters = publish_loaded(&mut st, base, &mapped, &around, store);
                st.end(base);
                st.changed(cx.changed);
                cx.env
                    .count(Event::AroundPages, mapped.len().saturating_sub(1));
                let kept = mapped.iter().filter(|m| m.1.is_some()).count();
                cx.env.count(Event::KeptClean, kept);
                let (lo, hi) = span(&mapped, &around);
                Ok(self.wake_if(waiters, page_addr(base, lo), (hi - lo + 1) * PAGE))
            }
            MissingPc::Wake { addr, len } => {
                cx.env.wake(addr, len)?;
                Ok(Step::Done(()))
            }
            MissingPc::FreeSlot(slot) => {
                cx.env.free(StoreId::OWN, slot);
                Ok(Step::Done(()))
            }
        }
    }

    fn wake_if(&mut self, waiters: bool, addr: usize, len: usize) -> Step<()> {
        if waiters {
            self.pc = MissingPc::Wake { addr, len };
            Step::Next
        } else {
            Step::Done(())
        }
    }

    fn start<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        if st.forking {
            return Ok(Step::Wait(st.changes));
        }
        let Some((base, idx)) = st.locate(self.addr) else {
            // Not ours any more: the region went, and unregistering it woke
            // the thread.
            return Ok(Step::Done(()));
        };
        let limit = cx.tun.workingset_pages;
        let evictions = st.evictions;
        let changes = st.changes;
        let folio = cx.tun.folio_pages.max(1);
        let cluster = (1usize << cx.tun.page_cluster).max(folio.next_power_of_two());
        let region = st.regions.get_mut(&base).expect("located");
        let state = region.pages[idx].state;
        match state {
            // Runtime threads touch only the pages they evict (a fault of
            // the handler thread itself could never be served). Any other
            // page, whatever its state, is a bug: fail loudly, never serve
            // it.
            _ if self.by_runtime && state != PageState::Evicting => {
                Err(Fatal::RuntimeThreadFault(self.addr))
            }
            PageState::Untouched => {
                cx.env.count(Event::Fault, 1);
                cx.env.count(Event::ZeroFault, 1);
                // Like an mTHP first-touch fault: the folio-aligned run of
                // untouched pages around the fault is mapped at once.
                let lo = idx - idx % folio;
                let hi = (lo + folio).min(region.pages.len());
                let untouched = |p: &Page| p.state == PageState::Untouched;
                let first = (lo..idx)
                    .rev()
                    .take_while(|&i| untouched(&region.pages[i]))
                    .last()
                    .unwrap_or(idx);
                let last = (idx + 1..hi)
                    .take_while(|&i| untouched(&region.pages[i]))
                    .last()
                    .unwrap_or(idx);
                let n = last - first + 1;
                if cx.tun.flawed(Flaw::ResidentBeforeMapped) {
                    for p in &mut region.pages[first..=last] {
                        p.state = PageState::Resident;
                    }
                    st.resident += n;
                    for i in first..=last {
                        st.push_lru(base, i);
                    }
                } else {
                    for p in &mut region.pages[first..=last] {
                        p.state = PageState::Filling;
                    }
                    st.begin(base);
                }
                self.pc = MissingPc::Fill { base, first, n };
                Ok(Step::Next)
            }
            PageState::Swapped { store, slot } => {
                cx.env.count(Event::Fault, 1);
                cx.env.count(Event::SwapinFault, 1);
                let page = &mut region.pages[idx];
                page.state = PageState::Loading;
                let distance = evictions.wrapping_sub(u64::from(page.shadow)) & 0xffff_ffff;
                if distance <= limit {
                    page.active = true;
                    cx.env.count(Event::WorkingsetRefault, 1);
                }
                // Fault-around and folio swap-in: swapped neighbours of the
                // same store in the fault's cluster (or folio, if larger)
                // come along, if the store hands them over.
                let lo = idx & !(cluster - 1);
                let hi = (lo + cluster).min(region.pages.len());
                let mut around = Vec::new();
                for i in (lo..hi).filter(|&i| i != idx) {
                    if let PageState::Swapped { store: s, slot } = region.pages[i].state {
                        if s == store {
                            region.pages[i].state = PageState::Loading;
                            around.push((i, slot));
                        }
                    }
                }
                st.begin(base);
                self.pc = MissingPc::Load {
                    base,
                    idx,
                    store,
                    slot,
                    around,
                    distance: RefaultDistance(distance),
                    tries: 0,
                };
                Ok(Step::Next)
            }
            PageState::Evicting if self.by_runtime => {
                serve_evictor_fault(cx.env, cx.tun, self.addr)?;
                Ok(Step::Done(()))
            }
            PageState::Filling | PageState::Loading | PageState::Evicting if self.in_thread => {
                // The faulting thread waits here for the operation in
                // flight to end, then looks again.
                Ok(Step::Wait(changes))
            }
            PageState::Filling | PageState::Loading | PageState::Evicting => {
                // Unmapped while an operation is in flight: never fill it
                // here; that operation wakes the thread when it ends.
                region.pages[idx].waiters = true;
                Ok(Step::Done(()))
            }
            PageState::Resident | PageState::Clean { .. } => {
                // Mapped meanwhile by fault-around or a fill (EEXIST: wake),
                // or discarded by the program itself (it reads as zeros, as
                // the kernel says). Under the state lock: no eviction can
                // start on the page and unmap it between the look and the
                // fill, which would put zeros over its stored copy.
                let filled = zero_fill_or_wake(cx.env, self.addr, self.wake)?;
                if let (true, PageState::Clean { slot }) = (filled, state) {
                    // Discarded: its bytes are zeros now, not its slot's,
                    // and the zero page is not write-protected.
                    region.pages[idx].state = PageState::Resident;
                    self.pc = MissingPc::FreeSlot(slot);
                    return Ok(Step::Next);
                }
                Ok(Step::Done(()))
            }
        }
    }
}

/// The evictor reading its own victim at `addr` faulted: the page was
/// discarded behind the runtime's back (a raw `MADV_DONTNEED`), so by the
/// kernel's rules it reads as zeros. The evictor owns the page (`Evicting`)
/// and waits in this fault: nothing else maps it. The zeros are mapped
/// write-protected, as the run is: a write landing between this read and
/// the run's unmap would be lost (the model checker found that write when
/// the zero page was mapped writable).
pub(crate) fn serve_evictor_fault<E: Env>(
    env: &E,
    tun: &Tunables,
    addr: usize,
) -> Result<(), Fatal> {
    env.count(Event::ExternalDiscard, 1);
    if tun.flawed(Flaw::EvictorZerosWritable) {
        zero_fill_or_wake(env, addr, true)?;
        return Ok(());
    }
    match env.map_zeros_protected(addr) {
        Ok(()) => Ok(()),
        Err(e) if e.is(libc::EEXIST) => Ok(env.wake(addr, PAGE)?),
        Err(e) => Err(e.into()),
    }
}

/// Maps a zero page at `addr` where nothing is mapped (`true`), else wakes
/// the threads waiting there (if `wake`).
fn zero_fill_or_wake<E: Env>(env: &E, addr: usize, wake: bool) -> Result<bool, Fatal> {
    match env.map_zeros(addr, 1, false, wake) {
        Ok(()) => Ok(true),
        Err(e) if e.is(libc::EEXIST) && wake => {
            env.wake(addr, PAGE)?;
            Ok(false)
        }
        Err(e) if e.is(libc::EEXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Lowest and highest page index among the fault's pages.
fn span(mapped: &[(usize, Option<Slot>)], around: &[(usize, Slot)]) -> (usize, usize) {
    let all = mapped.iter().map(|m| m.0).chain(around.iter().map(|a| a.0));
    let lo = all.clone().min().unwrap_or(0);
    let hi = all.max().unwrap_or(0);
    (lo, hi)
}

/// Filled pages become resident and queue for reclaim. Returns whether a
/// fault waited on them.
fn publish_filled(st: &mut State, base: usize, first: usize, n: usize) -> bool {
    let Some(r) = st.regions.get_mut(&base) else {
        return false;
    };
    let mut waiters = false;
    for p in &mut r.pages[first..first + n] {
        debug_assert_eq!(p.state, PageState::Filling);
        p.state = PageState::Resident;
        waiters |= std::mem::take(&mut p.waiters);
    }
    st.resident += n;
    for i in first..first + n {
        st.push_lru(base, i);
    }
    waiters
}

/// Loaded and mapped pages become resident (`Clean` where they kept their
/// slot); neighbours that the store did not hand over are swapped again at
/// their slots.
fn publish_loaded(
    st: &mut State,
    base: usize,
    mapped: &[(usize, Option<Slot>)],
    around: &[(usize, Slot)],
    store: StoreId,
) -> bool {
    let Some(r) = st.regions.get_mut(&base) else {
        return false;
    };
    let mut waiters = false;
    for &(i, kept) in mapped {
        let p = &mut r.pages[i];
        p.state = match kept {
            Some(slot) => PageState::Clean { slot },
            None => PageState::Resident,
        };
        waiters |= std::mem::take(&mut p.waiters);
    }
    for &(i, slot) in around {
        let p = &mut r.pages[i];
        if p.state == PageState::Loading {
            p.state = PageState::Swapped { store, slot };
            waiters |= std::mem::take(&mut p.waiters);
        }
    }
    st.resident += mapped.len();
    for &(i, _) in mapped {
        st.push_lru(base, i);
    }
    waiters
}

// ---------------------------------------------------------------------------
// Write-protect faults.

/// A write to a write-protected page at `addr`. Served in the faulting
/// thread ([`WpFault::served_in_thread`]), it waits for an operation in
/// flight on the page instead of leaving the writer asleep in the kernel.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct WpFault {
    pub addr: usize,
    /// Run by the faulting thread (in its SIGBUS handler).
    pub in_thread: bool,
    unlocked_unprotect: bool,
    /// A `Clean` page was written: the slot it kept goes.
    free: Option<Slot>,
}

impl WpFault {
    pub fn new(addr: usize) -> Self {
        Self {
            addr: addr & !(PAGE - 1),
            in_thread: false,
            unlocked_unprotect: false,
            free: None,
        }
    }

    /// Served by the faulting thread: it waits for the operation in flight.
    pub fn served_in_thread(mut self) -> Self {
        self.in_thread = true;
        self
    }

    /// During an eviction the writer waits for the evictor, which wakes it.
    /// Otherwise the protection is write tracking's (or a forked child's
    /// copy-on-write tracking) and goes at once, under the state lock: an
    /// eviction starting meanwhile would otherwise have its copy
    /// un-protected.
    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        if self.unlocked_unprotect {
            cx.env.unprotect(self.addr, PAGE, true)?;
            return Ok(Step::Done(()));
        }
        if let Some(slot) = self.free.take() {
            cx.env.free(StoreId::OWN, slot);
            return Ok(Step::Done(()));
        }
        let mut st = cx.lock();
        let Some((base, idx)) = st.locate(self.addr) else {
            return Ok(Step::Done(())); // not ours: unregistering woke the writer
        };
        let changes = st.changes;
        let r = st.regions.get_mut(&base).expect("located");
        let page = &mut r.pages[idx];
        match page.state {
            // In the faulting thread: wait for the operation in flight to
            // end, then retry the write (which then faults as missing, or
            // finds the page writable).
            s if self.in_thread && s.in_flight() => Ok(Step::Wait(changes)),
            PageState::Evicting => Ok(Step::Done(())),
            PageState::Clean { slot } => {
                // Written: no longer its slot's bytes. `Resident` before the
                // protection goes, under the lock, so no eviction can take
                // it as clean after the write.
                cx.env.count(Event::CleanWritten, 1);
                if !cx.tun.flawed(Flaw::CleanAfterWrite) {
                    page.state = PageState::Resident;
                    self.free = Some(slot);
                }
                cx.env.unprotect(self.addr, PAGE, true)?;
                Ok(if self.free.is_some() {
                    Step::Next
                } else {
                    Step::Done(())
                })
            }
            // Mapped write-protected while it is loaded (`Clean` to be):
            // the load wakes the writer once it is published.
            PageState::Loading => {
                page.waiters = true;
                Ok(Step::Done(()))
            }
            PageState::Resident => {
                cx.env.count(Event::WpFault, 1);
                // `armed` stays: the next aging pass finds the page
                // unprotected, hence written.
                if std::mem::take(&mut page.shared) {
                    // A forked child's first write: the page is its own now.
                    cx.env.count(Event::Unshared, 1);
                    st.resident += 1;
                    st.push_lru(base, idx);
                }
                if cx.tun.flawed(Flaw::UnprotectUnlocked) {
                    self.unlocked_unprotect = true;
                    return Ok(Step::Next);
                }
                cx.env.unprotect(self.addr, PAGE, true)?;
                Ok(Step::Done(()))
            }
            // Nobody sleeps in the kernel: the write is retried.
            _ if self.in_thread => Ok(Step::Done(())),
            _ => {
                drop(st);
                cx.env.wake(self.addr, PAGE)?;
                Ok(Step::Done(()))
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Eviction.

/// A run of neighbouring pages of one region, evicted as one folio.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Run {
    base: usize,
    first: usize,
    n: usize,
    /// Every page of it was `Clean`: its slots are kept, nothing is stored.
    clean: bool,
}

impl Run {
    fn addr(&self) -> usize {
        page_addr(self.base, self.first)
    }

    fn len(&self) -> usize {
        self.n * PAGE
    }

    /// `next` starts where this run ends, in the same region.
    fn continued_by(&self, next: &Run) -> bool {
        self.near(next, 1)
    }

    /// `next` starts after this run, in the same region, fewer than
    /// `within` pages past its end.
    fn near(&self, next: &Run, within: usize) -> bool {
        let end = self.first + self.n;
        next.base == self.base && next.first >= end && next.first - end < within
    }
}

/// Evicts up to `want` of the oldest resident pages; `Done(evicted)`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Evict {
    want: usize,
    /// Runs still to go; the current one is the last.
    runs: Vec<Run>,
    /// Runs stored, still mapped and write-protected, waiting for the
    /// batch's one unmap.
    stored: Vec<(Run, Vec<Slot>)>,
    /// After the unmap (`runs` holds the stored runs again): per run, its
    /// slots and whether it was unmapped; the current run's is the last.
    unmapped: Vec<(Vec<Slot>, bool)>,
    /// The slots the `Clean` victims kept, by page address.
    kept: BTreeMap<usize, Slot>,
    /// Pages `[start, end)` write-protected by one call that covered the
    /// current run and the runs continuing it (a stream's folios): they
    /// go straight to their store.
    protected: Option<(usize, usize)>,
    done: usize,
    pc: EvictPc,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum EvictPc {
    Pick,
    /// Write-protect the current run: writers wait from now on. A clean
    /// run is protected already: check that it still is, and mapped.
    Protect,
    /// A clean run was found written or discarded behind the runtime's
    /// back: free the slots it kept and evict it as any other.
    Unkeep,
    /// Copy the run out into the store (its bytes are stable).
    Store,
    /// Unmap every stored run of the batch at once (one TLB flush).
    DiscardStored,
    /// Unmap the current run alone (only the flawed variant does).
    Discard(Vec<Slot>),
    /// Remove the protection and wake the writers: they fault again, find
    /// the page in flight, and are woken once it is published.
    Unprotect(Vec<Slot>),
    Publish(Vec<Slot>),
    /// Put a refused run back: un-protect it (if protected), free the
    /// slots (if any), mark it resident.
    UndoUnprotect(Vec<Slot>),
    UndoFree(Vec<Slot>),
    UndoPublish,
    Wake,
}

impl Evict {
    pub fn new(want: usize) -> Self {
        Self {
            want,
            runs: Vec::new(),
            stored: Vec::new(),
            unmapped: Vec::new(),
            kept: BTreeMap::new(),
            protected: None,
            done: 0,
            pc: EvictPc::Pick,
        }
    }

    fn run(&self) -> Run {
        self.runs[self.runs.len() - 1]
    }

    /// `[start, end)` of the current run and the runs after it that
    /// continue it, none of them clean (a clean run is protected already).
    fn span(&self) -> (usize, usize) {
        let run = self.run();
        let mut last = run;
        for next in self.runs.iter().rev().skip(1) {
            if next.clean || !last.continued_by(next) {
                break;
            }
            last = *next;
        }
        (run.addr(), last.addr() + last.len())
    }

    /// The current run lies in the span an earlier call protected.
    fn already_protected(&self) -> bool {
        let run = self.run();
        self.protected
            .is_some_and(|(start, end)| start <= run.addr() && run.addr() + run.len() <= end)
    }

    /// The current run is finished (stored, or put back): on to the next.
    /// Runs are protected and stored one by one; once all are, the stored
    /// ones are unmapped together, then un-protected and published one by
    /// one.
    fn next_run(&mut self, tun: &Tunables) -> Step<usize> {
        self.runs.pop();
        self.advance(tun)
    }

    /// Sets the step for the current run, or for the batch's unmap once
    /// every run is stored; or ends.
    fn advance(&mut self, tun: &Tunables) -> Step<usize> {
        if let Some((slots, unmapped)) = self.unmapped.pop() {
            // Finishing an unmapped group: its runs are on top of `runs`.
            self.pc = if unmapped {
                EvictPc::Unprotect(slots)
            } else {
                EvictPc::UndoUnprotect(slots)
            };
            return Step::Next;
        }
        let stored_pages: usize = self.stored.iter().map(|(r, _)| r.n).sum();
        // A group of long runs grows while the next is long too and lies
        // less than a folio past the last: a stream's folios, with the odd
        // active page left out, one flush for the batch. Otherwise a group
        // ends once it has `unmap_group_pages` pages: scattered victims
        // (xz's, sort's) are written again soon, and their writers wait
        // for the whole group (longer groups of them cost refaults).
        let folio = tun.folio_pages.max(1);
        let streaming = match (self.stored.last(), self.runs.last()) {
            (Some((last, _)), Some(next)) => {
                last.near(next, folio) && 2 * last.n >= folio && 2 * next.n >= folio
            }
            _ => false,
        };
        if stored_pages > 0
            && (self.runs.is_empty() || (stored_pages >= tun.unmap_group_pages && !streaming))
        {
            self.pc = EvictPc::DiscardStored;
            Step::Next
        } else if !self.runs.is_empty() {
            self.pc = EvictPc::Protect;
            Step::Next
        } else {
            Step::Done(self.done)
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        match std::mem::replace(&mut self.pc, EvictPc::Pick) {
            EvictPc::Pick => {
                let mut st = cx.lock();
                if st.forking {
                    return Ok(Step::Done(0));
                }
                let victims = pick_victims(&mut st, self.want, cx.env);
                for &(base, idx, kept) in &victims {
                    if let Some(slot) = kept {
                        self.kept.insert(page_addr(base, idx), slot);
                    }
                }
                self.runs = group_runs(victims, cx.tun.folio_pages.max(1));
                // Runs are taken from the back: reverse to go oldest first.
                self.runs.reverse();
                for run in &self.runs {
                    st.begin(run.base);
                }
                if self.runs.is_empty() {
                    return Ok(Step::Done(0));
                }
                self.pc = EvictPc::Protect;
                Ok(Step::Next)
            }
            EvictPc::Protect if self.run().clean => {
                let run = self.run();
                let intact = cx.tun.flawed(Flaw::CleanUnchecked)
                    || matches!(cx.env.still_protected(run.addr(), run.len()), Ok(true));
                self.pc = if intact {
                    EvictPc::Store
                } else {
                    EvictPc::Unkeep
                };
                Ok(Step::Next)
            }
            EvictPc::Protect if self.already_protected() => {
                self.pc = EvictPc::Store;
                Ok(Step::Next)
            }
            EvictPc::Protect => {
                let run = self.run();
                // One call (one TLB flush) for this run and the runs that
                // continue it; each is still stored, unmapped and put back
                // on its own.
                let span = self.span();
                let len = if cx.tun.flawed(Flaw::SpanProtectsFirstRunOnly) {
                    run.len()
                } else {
                    span.1 - span.0
                };
                self.pc = match cx.env.protect(span.0, len) {
                    Ok(()) => {
                        self.protected = Some(span);
                        EvictPc::Store
                    }
                    // Nothing was protected: put the run back as it was.
                    Err(_) => EvictPc::UndoFree(Vec::new()),
                };
                Ok(Step::Next)
            }
            EvictPc::Unkeep => {
                // The pages are ours (`Evicting`): their slots go, and they
                // are stored from what is mapped now (zeros where
                // discarded: the evictor's own fault maps them).
                let run = self.run();
                for a in (run.addr()..run.addr() + run.len()).step_by(PAGE) {
                    if let Some(slot) = self.kept.remove(&a) {
                        cx.env.free(StoreId::OWN, slot);
                    }
                }
                if let Some(r) = self.runs.last_mut() {
                    r.clean = false;
                }
                self.pc = EvictPc::Protect;
                Ok(Step::Next)
            }
            EvictPc::Store if self.run().clean => {
                let run = self.run();
                let slots = (run.addr()..run.addr() + run.len())
                    .step_by(PAGE)
                    .filter_map(|a| self.kept.remove(&a))
                    .collect();
                self.stored.push((run, slots));
                Ok(self.next_run(cx.tun))
            }
            EvictPc::Store => {
                let run = self.run();
                self.pc = match cx.env.store_run(run.addr(), run.n) {
                    Ok(slots) if cx.tun.flawed(Flaw::UnprotectBeforeUnmap) => {
                        EvictPc::Unprotect(slots)
                    }
                    Ok(slots) => {
                        self.stored.push((run, slots));
                        return Ok(self.next_run(cx.tun));
                    }
                    Err(_) => {
                        cx.env.count(Event::EvictFailures, run.n);
                        EvictPc::UndoUnprotect(Vec::new())
                    }
                };
                Ok(Step::Next)
            }
            EvictPc::DiscardStored => {
                let stored = std::mem::take(&mut self.stored);
                let ranges: Vec<(usize, usize)> =
                    stored.iter().map(|(r, _)| (r.addr(), r.len())).collect();
                let results = if cx.tun.flawed(Flaw::BatchUnmapsLastRunOnly) {
                    let last = ranges.len() - 1;
                    let mut r = cx.env.discard_ranges(&ranges[last..]);
                    r.splice(0..0, (0..last).map(|_| Ok(())));
                    r
                } else {
                    cx.env.discard_ranges(&ranges)
                };
                debug_assert!(self.unmapped.is_empty());
                for ((run, slots), result) in stored.into_iter().zip(results) {
                    // A run not unmapped is still mapped and protected:
                    // it stays resident.
                    if result.is_err() {
                        cx.env.count(Event::EvictFailures, run.n);
                    }
                    self.runs.push(run);
                    self.unmapped.push((slots, result.is_ok()));
                }
                // The last run is the current one; its entry is popped as
                // its step is set.
                Ok(self.advance(cx.tun))
            }
            EvictPc::Discard(slots) => {
                let run = self.run();
                self.pc = match cx.env.discard(run.addr(), run.len()) {
                    Ok(()) if cx.tun.flawed(Flaw::UnprotectBeforeUnmap) => {
                        return Ok(self.next_run(cx.tun));
                    }
                    Ok(()) => EvictPc::Unprotect(slots),
                    Err(_) => {
                        // Still mapped, still protected: keep it resident.
                        cx.env.count(Event::EvictFailures, run.n);
                        EvictPc::UndoUnprotect(slots)
                    }
                };
                Ok(Step::Next)
            }
            EvictPc::Unprotect(slots) => {
                let run = self.run();
                cx.env.unprotect(run.addr(), run.len(), true)?;
                self.pc = EvictPc::Publish(slots);
                Ok(Step::Next)
            }
            EvictPc::Publish(slots) => {
                let run = self.run();
                let mut st = cx.lock();
                let clock = st.evictions;
                let mut waiters = false;
                if let Some(r) = st.regions.get_mut(&run.base) {
                    for (k, &slot) in slots.iter().enumerate() {
                        let p = &mut r.pages[run.first + k];
                        debug_assert_eq!(p.state, PageState::Evicting);
                        p.state = PageState::Swapped {
                            store: StoreId::OWN,
                            slot,
                        };
                        p.shadow = clock as u32;
                        p.armed = false;
                        p.reprieves = 0;
                        waiters |= std::mem::take(&mut p.waiters);
                    }
                }
                st.resident -= run.n;
                st.evictions += run.n as u64;
                self.done += run.n;
                cx.env.count(Event::EvictedPages, run.n);
                if run.clean {
                    cx.env.count(Event::EvictedClean, run.n);
                }
                st.end(run.base);
                st.changed(cx.changed);
                if cx.tun.flawed(Flaw::UnprotectBeforeUnmap) {
                    self.pc = EvictPc::Discard(Vec::new());
                    return Ok(Step::Next);
                }
                if waiters {
                    self.pc = EvictPc::Wake;
                    return Ok(Step::Next);
                }
                Ok(self.next_run(cx.tun))
            }
            EvictPc::UndoUnprotect(slots) => {
                let run = self.run();
                cx.env.unprotect(run.addr(), run.len(), true)?;
                self.pc = EvictPc::UndoFree(slots);
                Ok(Step::Next)
            }
            EvictPc::UndoFree(slots) => {
                for s in slots {
                    cx.env.free(StoreId::OWN, s);
                }
                self.pc = EvictPc::UndoPublish;
                Ok(Step::Next)
            }
            EvictPc::UndoPublish => {
                let run = self.run();
                let mut st = cx.lock();
                let mut waiters = false;
                if let Some(r) = st.regions.get_mut(&run.base) {
                    for p in &mut r.pages[run.first..run.first + run.n] {
                        p.state = PageState::Resident;
                        waiters |= std::mem::take(&mut p.waiters);
                    }
                }
                for i in run.first..run.first + run.n {
                    st.push_lru(run.base, i);
                }
                st.end(run.base);
                st.changed(cx.changed);
                if waiters {
                    self.pc = EvictPc::Wake;
                    return Ok(Step::Next);
                }
                Ok(self.next_run(cx.tun))
            }
            EvictPc::Wake => {
                let run = self.run();
                cx.env.wake(run.addr(), run.len())?;
                Ok(self.next_run(cx.tun))
            }
        }
    }
}

/// Takes up to `n` victims from the LRU, oldest first, marking them
/// `Evicting`: `(region base, page index, the slot a Clean page kept)`. A
/// page refaulted within the workingset (active) or found written by aging
/// (reprieves left) is passed over and queued again.
fn pick_victims<E: Env>(st: &mut State, n: usize, env: &E) -> Vec<(usize, usize, Option<Slot>)> {
    let mut victims = Vec::new();
    let mut budget = st.lru.len();
    while victims.len() < n && budget > 0 {
        budget -= 1;
        let Some(rec) = st.lru.pop_front() else {
            break;
        };
        if !st.live(&rec) {
            continue;
        }
        let idx = rec.idx as usize;
        let r = st.regions.get_mut(&rec.base).expect("live record");
        let page = &mut r.pages[idx];
        if r.dying || r.aging || !page.evictable() {
            // Not now (pinned, shared, region going): keep its place.
            st.lru.push_back(rec);
            continue;
        }
        if std::mem::take(&mut page.active) {
            env.count(Event::WorkingsetActivate, 1);
            st.lru.push_back(rec);
            continue;
        }
        if page.reprieves > 0 {
            page.reprieves -= 1;
            env.count(Event::WrittenReprieved, 1);
            st.lru.push_back(rec);
            continue;
        }
        let kept = match page.state {
            PageState::Clean { slot } => Some(slot),
            _ => None,
        };
        page.state = PageState::Evicting;
        victims.push((rec.base, idx, kept));
    }
    victims
}

/// Groups victims into runs of neighbouring pages of one region, at most
/// `folio` long and not crossing a folio boundary; a run is all clean or
/// all not.
fn group_runs(mut victims: Vec<(usize, usize, Option<Slot>)>, folio: usize) -> Vec<Run> {
    victims.sort_unstable();
    let mut runs: Vec<Run> = Vec::new();
    for (base, idx, kept) in victims {
        let clean = kept.is_some();
        match runs.last_mut() {
            Some(r)
                if r.base == base
                    && r.first + r.n == idx
                    && r.n < folio
                    && idx % folio != 0
                    && r.clean == clean =>
            {
                r.n += 1
            }
            _ => runs.push(Run {
                base,
                first: idx,
                n: 1,
                clean,
            }),
        }
    }
    runs
}

// ---------------------------------------------------------------------------
// Aging: write tracking.

/// One aging pass: for each region, the pages written since the last pass
/// (mapped and no longer write-protected) get reclaim reprieves, and the
/// region's resident, unpinned pages are write-protected again.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Age {
    regions: Vec<(usize, u64, usize)>,
    pc: AgePc,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum AgePc {
    List,
    Scan,
    Mark(Vec<(usize, usize)>),
    Protect(Vec<(usize, usize)>),
    Finish,
}

impl Default for Age {
    fn default() -> Self {
        Self::new()
    }
}

impl Age {
    pub fn new() -> Self {
        Self {
            regions: Vec::new(),
            pc: AgePc::List,
        }
    }

    fn next_region(&mut self) -> Step<usize> {
        self.regions.pop();
        if self.regions.is_empty() {
            Step::Done(0)
        } else {
            self.pc = AgePc::Scan;
            Step::Next
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        match std::mem::replace(&mut self.pc, AgePc::List) {
            AgePc::List => {
                let st = cx.lock();
                if st.forking {
                    return Ok(Step::Done(0));
                }
                self.regions = st
                    .regions
                    .iter()
                    .filter(|(_, r)| !r.dying)
                    .map(|(&b, r)| (b, r.id, r.len_bytes()))
                    .collect();
                cx.env.count(Event::AgingScan, 1);
                if self.regions.is_empty() {
                    return Ok(Step::Done(0));
                }
                self.pc = AgePc::Scan;
                Ok(Step::Next)
            }
            AgePc::Scan => {
                let &(base, _, len) = self.regions.last().expect("a region");
                let mut written = Vec::new();
                cx.env.written(base, len, &mut written)?;
                self.pc = AgePc::Mark(written);
                Ok(Step::Next)
            }
            AgePc::Mark(written) => {
                let &(base, id, len) = self.regions.last().expect("a region");
                let mut st = cx.lock();
                if st.forking {
                    return Ok(Step::Done(0));
                }
                let Some(r) = st.region(base, id).filter(|r| !r.dying) else {
                    return Ok(self.next_region());
                };
                let mut marked = 0;
                for &(start, end) in &written {
                    let lo = (start.max(base) - base) / PAGE;
                    let hi = (end.min(base + len) - base) / PAGE;
                    for p in &mut r.pages[lo..hi] {
                        if p.state.is_resident() && p.armed {
                            p.reprieves = WRITTEN_REPRIEVES;
                            marked += 1;
                        }
                        // Unprotected now, whatever the reason: protected
                        // again below.
                        p.armed = false;
                    }
                }
                cx.env.count(Event::PagesWritten, marked);
                let ignore_pins = cx.tun.flawed(Flaw::AgingIgnoresPins);
                let mut ranges: Vec<(usize, usize)> = Vec::new();
                let mut protected = 0;
                for (i, p) in r.pages.iter_mut().enumerate() {
                    let protect = p.state.is_resident() && (p.pins == 0 || ignore_pins);
                    // A page still armed was not found written: its
                    // protection from an earlier pass stands. Only pages
                    // written, mapped since, or unpinned since need the call.
                    let already = p.armed;
                    p.armed = protect;
                    if !protect || already {
                        continue;
                    }
                    protected += 1;
                    let a = page_addr(base, i);
                    match ranges.last_mut() {
                        Some(last) if last.0 + last.1 == a => last.1 += PAGE,
                        _ => ranges.push((a, PAGE)),
                    }
                }
                cx.env.count(Event::PagesProtected, protected);
                cx.env.count(Event::ProtectCalls, ranges.len());
                r.aging = true;
                st.begin(base);
                self.pc = AgePc::Protect(ranges);
                Ok(Step::Next)
            }
            AgePc::Protect(mut ranges) => {
                if let Some((a, l)) = ranges.pop() {
                    cx.env.protect(a, l)?;
                    self.pc = AgePc::Protect(ranges);
                } else {
                    self.pc = AgePc::Finish;
                }
                Ok(Step::Next)
            }
            AgePc::Finish => {
                let &(base, id, _) = self.regions.last().expect("a region");
                let mut st = cx.lock();
                if let Some(r) = st.region(base, id) {
                    r.aging = false;
                }
                st.end(base);
                st.changed(cx.changed);
                Ok(self.next_region())
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Pins: a system call's buffer.

/// Most region ranges one [`Pin`] records for the caller to fault in (a
/// system call's buffer lies in one allocation, so in one region).
pub const PIN_RANGES: usize = 8;

/// Pins the region pages of `[addr, addr + len)` for a system call and
/// waits until none of them is in flight and no aging pass is protecting
/// their region. `Done`: from then on they are not evicted and not
/// write-protected by aging; the caller faults them in (touching each page,
/// writing where the call will write: [`Pin::ranges`]), makes the call, then
/// calls [`unpin`] on the same range. Pins count per page, by address: a
/// pinned range may be unpinned as part of a larger one. Nothing here
/// allocates (it runs in the syscall guard's signal handler).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Pin {
    pub addr: usize,
    pub len: usize,
    pinned: bool,
    /// The region parts of the range: `(address, length)`.
    ranges: [(usize, usize); PIN_RANGES],
    nranges: usize,
    /// More regions than `ranges` holds: the caller finds the rest itself.
    pub overflow: bool,
}

impl Pin {
    pub fn new(addr: usize, len: usize) -> Self {
        Self {
            addr,
            len,
            pinned: false,
            ranges: [(0, 0); PIN_RANGES],
            nranges: 0,
            overflow: false,
        }
    }

    /// The region parts of the pinned range (to fault in).
    pub fn ranges(&self) -> &[(usize, usize)] {
        &self.ranges[..self.nranges]
    }

    /// Calls `f(region, first page, pages)` for every region part of
    /// `[start, end)`.
    fn each_part(
        st: &mut State,
        start: usize,
        end: usize,
        mut f: impl FnMut(&mut RegionPages, usize, usize, usize),
    ) {
        let first_base = st.locate(start).map_or(start, |(b, _)| b);
        for (&base, r) in st.regions.range_mut(first_base..end) {
            let lo = start.saturating_sub(base) / PAGE;
            let hi = (end - base).div_ceil(PAGE).min(r.pages.len());
            if lo < hi {
                f(r, base, lo, hi - lo);
            }
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let (start, end) = (self.addr, self.addr.saturating_add(self.len));
        if !self.pinned {
            self.pinned = true;
            let (ranges, nranges, overflow) =
                (&mut self.ranges, &mut self.nranges, &mut self.overflow);
            Self::each_part(&mut st, start, end, |r, base, first, n| {
                for p in &mut r.pages[first..first + n] {
                    p.pins = p.pins.saturating_add(1);
                }
                if *nranges < PIN_RANGES {
                    ranges[*nranges] = (page_addr(base, first), n * PAGE);
                    *nranges += 1;
                } else {
                    *overflow = true;
                }
            });
            if cx.tun.flawed(Flaw::PinWithoutSettle) {
                return Ok(Step::Done(()));
            }
        }
        let mut busy = false;
        Self::each_part(&mut st, start, end, |r, _, first, n| {
            busy |= r.aging
                || r.pages[first..first + n]
                    .iter()
                    .any(|p| p.state.in_flight());
        });
        if busy {
            return Ok(Step::Wait(st.changes));
        }
        Ok(Step::Done(()))
    }
}

/// The program's own discard (`MADV_DONTNEED`, `MADV_FREE`) of the region
/// pages of `[addr, addr + len)`, through the preload library: the
/// kernel's meaning (they read as zeros from now on), and the regions stay
/// the runtime's. It waits until no fork is being prepared, no page of the
/// range is in flight and no aging pass or release is at work on their
/// regions. Then, in one step under the state lock, every page of the range
/// becomes `Untouched` (no longer charged; its slot, if it had one of this
/// process's store, to be freed) and the kernel unmaps it: no operation can
/// start on those pages in between, and a fault that comes after finds
/// them untouched and maps zeros. A page a system call has pinned is
/// mapped again as zeros at once (the kernel may be using it). The unmap
/// and that map are two calls: in user-mode-only mode a system call that
/// touches the page in the microseconds between gets EFAULT. Only a
/// program that discards a buffer one of its system calls is using meets
/// this (the model takes the step as one, so it does not show it).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ProgramDiscard {
    pub addr: usize,
    pub len: usize,
    pc: DiscardPc,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum DiscardPc {
    Settle,
    Free(Vec<Slot>),
}

impl ProgramDiscard {
    pub fn new(addr: usize, len: usize) -> Self {
        Self {
            addr,
            len,
            pc: DiscardPc::Settle,
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        match std::mem::replace(&mut self.pc, DiscardPc::Settle) {
            DiscardPc::Settle => self.settle(cx),
            DiscardPc::Free(slots) => {
                for slot in slots {
                    cx.env.free(StoreId::OWN, slot);
                }
                Ok(Step::Done(()))
            }
        }
    }

    fn settle<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let (start, end) = (self.addr, self.addr.saturating_add(self.len));
        let mut busy = st.forking;
        Pin::each_part(&mut st, start, end, |r, _, first, n| {
            busy |= r.aging
                || r.dying
                || r.pages[first..first + n]
                    .iter()
                    .any(|p| p.state.in_flight());
        });
        if busy && !cx.tun.flawed(Flaw::DiscardIgnoresInFlight) {
            return Ok(Step::Wait(st.changes));
        }
        let mut slots = Vec::new();
        let mut parts = Vec::new();
        let mut pinned = Vec::new();
        let mut uncharged = 0;
        Pin::each_part(&mut st, start, end, |r, base, first, n| {
            parts.push((page_addr(base, first), n * PAGE));
            for (i, p) in r.pages[first..first + n].iter_mut().enumerate() {
                match p.state {
                    PageState::Swapped {
                        store: StoreId::OWN,
                        slot,
                    }
                    | PageState::Clean { slot } => slots.push(slot),
                    // An ancestor's slot: read-only here, nothing to free.
                    _ => {}
                }
                if p.pins > 0 && p.state.is_resident() {
                    // Mapped again as zeros below: still resident, and now
                    // private (charged, on the LRU) if it was shared.
                    p.state = PageState::Resident;
                    p.armed = false;
                    pinned.push((base, first + i, std::mem::take(&mut p.shared)));
                    continue;
                }
                if p.state.is_resident() && !p.shared {
                    uncharged += 1;
                }
                p.state = PageState::Untouched;
                p.shared = false;
                p.armed = false;
                p.active = false;
                p.reprieves = 0;
            }
        });
        st.resident -= uncharged;
        for (a, l) in parts {
            cx.env.discard(a, l)?;
        }
        for (base, idx, was_shared) in pinned {
            zero_fill_or_wake(cx.env, page_addr(base, idx), false)?;
            if was_shared {
                st.resident += 1;
                st.push_lru(base, idx);
            }
        }
        st.changed(cx.changed);
        self.pc = DiscardPc::Free(slots);
        Ok(Step::Next)
    }
}

/// Ends a [`Pin`] of `[addr, addr + len)` (or of several adjacent pins at
/// once): its pages may be evicted and protected again. A page whose region
/// went meanwhile (a program freeing a buffer a system call still used) is
/// simply gone.
pub fn unpin(st: &mut State, addr: usize, len: usize) {
    Pin::each_part(st, addr, addr.saturating_add(len), |r, _, first, n| {
        for p in &mut r.pages[first..first + n] {
            p.pins = p.pins.saturating_sub(1);
        }
    });
}

// ---------------------------------------------------------------------------
// Region drop and release.

/// Ends the region at `base` (with `id`): waits for the operations in
/// flight there, forgets it, and frees its swapped pages (`Drop`), or
/// first swaps every page back in (`IntoPlain`: the mapping stays, as
/// plain memory). The caller unregisters and unmaps the range after.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Release<B> {
    pub base: usize,
    pub id: u64,
    pub plain: bool,
    pc: ReleasePc<B>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum ReleasePc<B> {
    MarkDying,
    Quiesce,
    /// `IntoPlain`: take the next swapped page.
    NextSwapped,
    Load {
        idx: usize,
        store: StoreId,
        slot: Slot,
        tries: u8,
    },
    Map {
        idx: usize,
        buf: B,
    },
    Mapped {
        idx: usize,
    },
    Forget,
    Free(Vec<(StoreId, Slot)>),
}

impl<B: Clone + Default> Release<B> {
    pub fn drop_region(base: usize, id: u64) -> Self {
        Self {
            base,
            id,
            plain: false,
            pc: ReleasePc::MarkDying,
        }
    }

    pub fn into_plain(base: usize, id: u64) -> Self {
        Self {
            base,
            id,
            plain: true,
            pc: ReleasePc::MarkDying,
        }
    }

    pub fn step<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        match std::mem::replace(&mut self.pc, ReleasePc::MarkDying) {
            ReleasePc::MarkDying => {
                let mut st = cx.lock();
                if st.forking {
                    return Ok(Step::Wait(st.changes));
                }
                let Some(r) = st.region(self.base, self.id) else {
                    return Ok(Step::Done(()));
                };
                r.dying = true;
                // In flight until its last step: a fork waits for it.
                st.in_flight += 1;
                self.pc = ReleasePc::Quiesce;
                Ok(Step::Next)
            }
            ReleasePc::Quiesce => {
                let mut st = cx.lock();
                let changes = st.changes;
                let Some(r) = st.region(self.base, self.id) else {
                    return Ok(self.finish(&mut st, cx.changed));
                };
                if r.in_flight > 0 {
                    self.pc = ReleasePc::Quiesce;
                    return Ok(Step::Wait(changes));
                }
                self.pc = if self.plain {
                    ReleasePc::NextSwapped
                } else {
                    ReleasePc::Forget
                };
                Ok(Step::Next)
            }
            ReleasePc::NextSwapped => {
                let mut st = cx.lock();
                let changes = st.changes;
                let Some(r) = st.region(self.base, self.id) else {
                    return Ok(self.finish(&mut st, cx.changed));
                };
                let swapped = r.pages.iter().position(|p| {
                    matches!(p.state, PageState::Swapped { .. } | PageState::Loading)
                });
                match swapped {
                    Some(i) => match r.pages[i].state {
                        PageState::Swapped { store, slot } => {
                            r.pages[i].state = PageState::Loading;
                            st.begin(self.base);
                            self.pc = ReleasePc::Load {
                                idx: i,
                                store,
                                slot,
                                tries: 0,
                            };
                            Ok(Step::Next)
                        }
                        // A fault is bringing it in: wait for it.
                        _ => {
                            self.pc = ReleasePc::NextSwapped;
                            Ok(Step::Wait(changes))
                        }
                    },
                    None => {
                        self.pc = ReleasePc::Forget;
                        Ok(Step::Next)
                    }
                }
            }
            ReleasePc::Load {
                idx,
                store,
                slot,
                tries,
            } => {
                let mut buf = B::default();
                match cx.env.load(store, slot, &mut buf, &[], None, false) {
                    Ok(_) => self.pc = ReleasePc::Map { idx, buf },
                    Err(error) if tries + 1 >= SWAPIN_TRIES => {
                        return Err(Fatal::SwapIn {
                            addr: page_addr(self.base, idx),
                            store: store.0,
                            slot,
                            error,
                        })
                    }
                    Err(_) => {
                        self.pc = ReleasePc::Load {
                            idx,
                            store,
                            slot,
                            tries: tries + 1,
                        }
                    }
                }
                Ok(Step::Next)
            }
            ReleasePc::Map { idx, buf } => {
                match cx.env.map(page_addr(self.base, idx), &buf, true, false) {
                    Ok(()) => self.pc = ReleasePc::Mapped { idx },
                    Err(e) if e.is(libc::EAGAIN) => self.pc = ReleasePc::Map { idx, buf },
                    Err(e) => return Err(e.into()),
                }
                Ok(Step::Next)
            }
            ReleasePc::Mapped { idx } => {
                let mut st = cx.lock();
                let waiters = publish_loaded(&mut st, self.base, &[(idx, None)], &[], StoreId::OWN);
                st.end(self.base);
                st.changed(cx.changed);
                drop(st);
                if waiters {
                    cx.env.wake(page_addr(self.base, idx), PAGE)?;
                }
                self.pc = ReleasePc::NextSwapped;
                Ok(Step::Next)
            }
            ReleasePc::Forget => {
                let mut st = cx.lock();
                // Faults are still served on a dying region (the program
                // uses it until it is unregistered): one that began after
                // the quiesce must end before the region goes, or its map
                // would land in an unregistered range.
                let changes = st.changes;
                if st
                    .region(self.base, self.id)
                    .is_some_and(|r| r.in_flight > 0)
                {
                    self.pc = ReleasePc::Forget;
                    return Ok(Step::Wait(changes));
                }
                let Some(r) = st.regions.remove(&self.base) else {
                    return Ok(self.finish(&mut st, cx.changed));
                };
                debug_assert_eq!(r.id, self.id);
                let resident = r
                    .pages
                    .iter()
                    .filter(|p| p.state.is_resident() && !p.shared)
                    .count();
                st.resident -= resident;
                st.changed(cx.changed);
                let slots: Vec<(StoreId, Slot)> = r
                    .pages
                    .iter()
                    .filter_map(|p| match p.state {
                        PageState::Swapped { store, slot } => Some((store, slot)),
                        PageState::Clean { slot } => Some((StoreId::OWN, slot)),
                        _ => None,
                    })
                    .collect();
                if slots.is_empty() {
                    return Ok(self.finish(&mut st, cx.changed));
                }
                self.pc = ReleasePc::Free(slots);
                Ok(Step::Next)
            }
            ReleasePc::Free(slots) => {
                for (store, slot) in slots {
                    cx.env.free(store, slot);
                }
                Ok(self.finish(&mut cx.lock(), cx.changed))
            }
        }
    }

    /// The release is over: no longer in flight.
    fn finish(&mut self, st: &mut State, cv: &Condvar) -> Step<()> {
        st.in_flight -= 1;
        st.changed(cv);
        Step::Done(())
    }
}

// ---------------------------------------------------------------------------
// Fork.

/// Prepares a fork: from now on no operation starts (they wait), and this
/// waits until none is in flight. `Done`: every page is `Untouched`,
/// `Resident` or `Swapped`, and what each holds is settled — the instant
/// a child may copy. [`end_fork`] lets operations start again.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Fork {
    set: bool,
}

impl Fork {
    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        if !self.set {
            if st.forking {
                // Another thread is forking: wait for it to finish.
                return Ok(Step::Wait(st.changes));
            }
            st.forking = true;
            self.set = true;
        }
        if st.in_flight > 0 {
            return Ok(Step::Wait(st.changes));
        }
        Ok(Step::Done(()))
    }
}

/// The fork is over (parent, or a failed fork): operations start again.
pub fn end_fork(st: &mut State, cv: &Condvar) {
    st.forking = false;
    st.changed(cv);
}

/// In a forked child, the state it copied becomes its own. Pages its parent
/// had swapped out to its own store are now in the parent's store,
/// inherited read-only as `parent_store`; resident pages are mapped
/// copy-on-write from the parent, so they stay `shared` — not charged, not
/// on the LRU, write-protected by the caller — until the child writes
/// them. Nothing can be in flight (the parent forked after [`Fork`]); the
/// threads that held pins or ran operations do not exist here.
pub fn adopt_after_fork(st: &mut State, parent_store: StoreId) {
    for r in st.regions.values_mut() {
        r.dying = false;
        r.in_flight = 0;
        r.aging = false;
        for p in &mut r.pages {
            debug_assert!(!p.state.in_flight(), "forked with {:?} in flight", p.state);
            p.pins = 0;
            p.waiters = false;
            p.armed = false;
            p.reprieves = 0;
            p.active = false;
            match p.state {
                // A clean page's slot is in the parent's store: the child's
                // copy is just resident.
                PageState::Resident | PageState::Clean { .. } => {
                    p.state = PageState::Resident;
                    p.shared = true;
                }
                PageState::Swapped { store, slot } if store == StoreId::OWN => {
                    p.state = PageState::Swapped {
                        store: parent_store,
                        slot,
                    }
                }
                _ => {}
            }
        }
    }
    st.lru.clear();
    st.resident = 0;
    st.in_flight = 0;
    st.forking = false;
    st.sleepers = 0;
}

/// Resident page ranges of the region at `base`: `(address, length)`.
pub fn resident_ranges(r: &RegionPages, base: usize) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for (i, p) in r.pages.iter().enumerate() {
        if !p.state.is_resident() {
            continue;
        }
        let a = page_addr(base, i);
        match ranges.last_mut() {
            Some(last) if last.0 + last.1 == a => last.1 += PAGE,
            _ => ranges.push((a, PAGE)),
        }
    }
    ranges
}
