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
//!   Eviction by the program's only thread, in its own fault handler
//!   ([`Evict::sole_writer`]), protects nothing: no writer can run.
//!   A reclaim batch stores its runs one by one and unmaps them in groups
//!   of at least `unmap_group_pages` pages, one `process_madvise` (one TLB
//!   flush) per group; a group's pages stay `Evicting` until the whole
//!   group is unmapped. Runs that continue one another (a stream's folios)
//!   are write-protected by one call; a run whose pages the last aging
//!   pass protected and nobody wrote since (`armed`) takes no call at all
//!   once the page tables confirm the protection. A group of runs of half a folio
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
//!    from before the copy until after the unmap, or the evictor is the
//!    program's only thread, in its fault handler).
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
//! 7. **A region's pages leave every structure with it.** LRU and
//!    probation records name a region by id (never reused); records of a
//!    dropped region, or of a page since evicted, refaulted or queued
//!    again (each queueing bumps the page's generation: one live record a
//!    page, on the LRU or on probation), are dead and skipped, and are
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

// One file per operation; the vocabulary they share stays here.
mod age; // Age: write tracking's passes.
mod discard; // ProgramDiscard: the program's own discard of its pages.
mod evict; // Evict: reclaim's protect, store, unmap, publish.
mod fork; // Fork, and the child's adoption of the copied state.
mod missing; // MissingFault: first touch and swap-in.
mod pin; // Pin and unpin: a system call's buffer.
mod release; // Release: a region's drop, or its return to plain memory.
mod wp; // WpFault: write-protect faults.

pub use age::Age;
pub use discard::ProgramDiscard;
pub use evict::Evict;
pub use fork::{adopt_after_fork, end_fork, resident_ranges, Fork};
// Outside this module only the model checker calls it, for the evictor's
// own faults.
#[cfg(test)]
pub(crate) use missing::serve_evictor_fault;
pub use missing::MissingFault;
pub use pin::{access_would_fault, unpin, Pin, PIN_RANGES};
pub use release::Release;
pub use wp::WpFault;

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

/// Most [`Page::heat`]: a page swapped in that often is spared by 63
/// passes of cold eviction (16 s at a cold age of 250 ms) before it may
/// leave as cold again.
pub const MAX_HEAT: u8 = 6;

/// A page's state. `repr(u8)` with `Untouched` first: all-zero bytes are
/// `Untouched`, which lets a region's table come from zeroed memory
/// ([`untouched_pages`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum PageState {
    Untouched = 0,
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
    /// May be write-protected: protected by the last aging pass (or, in a
    /// forked child, at adoption) and not written since, or mapped while a
    /// pass's protect call ran over it. A write-protect fault clears it
    /// (and gives the page its reprieves); a pass that finds an armed
    /// page unprotected all the same counts it written too. An unarmed
    /// resident page is never protected by aging: a pin in the faulting
    /// thread relies on it ([`access_would_fault`]).
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
    /// Swap-ins of this page, less one for each time it left as cold (at
    /// most [`MAX_HEAT`]): a page read while resident shows nothing else
    /// (no accessed bit reaches user space), so a page that keeps coming
    /// back is taken for a hot one.
    pub heat: u8,
    /// Passes of cold eviction ([`Evict::cold`]) that still spare this
    /// page: `2^heat - 1` from its last swap-in. Pressure ignores them.
    pub cold_passes: u8,
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
        heat: 0,
        cold_passes: 0,
    };

    fn evictable(&self) -> bool {
        self.state.is_resident() && self.pins == 0 && !self.shared
    }
}

/// A table of `n` [`Page::UNTOUCHED`] pages, allocated zeroed rather than
/// written: a large table is fresh anonymous memory (calloc's `mmap`)
/// whose pages cost nothing until the region pages they describe are
/// touched, as the kernel's page tables cover touched memory only. A
/// program that reserves 700 MB and touches 70 would otherwise pay 5.5 MB
/// of table for it.
pub fn untouched_pages(n: usize) -> Vec<Page> {
    if n == 0 {
        return Vec::new();
    }
    let Ok(layout) = std::alloc::Layout::array::<Page>(n) else {
        // More pages than the address space holds: the same failure as
        // `vec!` of that length.
        panic!("capacity overflow: a region of {n} pages");
    };
    // SAFETY: `layout` has a non-zero size (n > 0, `Page` is not a ZST).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Page>();
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `n`
    // pages, as `Vec<Page>` with capacity `n` frees it; all `n` are
    // initialized, as all-zero bytes are `Page::UNTOUCHED` (every field of
    // `Page` is an integer or `bool`, and `PageState` is `repr(u8)` with
    // `Untouched = 0`; checked by `a_zeroed_page_is_untouched`).
    unsafe { Vec::from_raw_parts(ptr, n, n) }
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

    /// Bytes of this region's table in memory: its memory pages that hold
    /// a page not `UNTOUCHED` (written, so no longer the zeroed memory
    /// [`untouched_pages`] gave, which costs nothing). A part touched and
    /// then released reads untouched again and is not counted.
    pub fn table_bytes(&self) -> usize {
        const PER_MEMORY_PAGE: usize = PAGE / std::mem::size_of::<Page>();
        let written = self
            .pages
            .chunks(PER_MEMORY_PAGE)
            .filter(|c| c.iter().any(|p| *p != Page::UNTOUCHED))
            .count();
        (written * PAGE).min(std::mem::size_of_val(self.pages.as_slice()))
    }
}

/// A record of the LRU: region (by base and id), page, generation, and
/// the age clock when the page was queued (its last fault or tracked
/// write as far as the runtime can see: reads of a resident page are
/// invisible to it).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct LruRecord {
    base: usize,
    id: u64,
    idx: u32,
    gen: u16,
    since: u32,
    /// The workingset clock (`State::evictions`, wrapping) when queued.
    queued: u32,
}

/// Everything the state lock guards.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct State {
    /// Regions by base address.
    pub regions: BTreeMap<usize, RegionPages>,
    /// Resident pages, oldest first (dead records are skipped).
    lru: VecDeque<LruRecord>,
    /// Pages swapped in, oldest first, where probation is on
    /// ([`Tunables::probation_pages`]): reclaim takes these before the LRU
    /// once that many evictions have gone by since they came in.
    probation: VecDeque<LruRecord>,
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
    /// The age clock, ms (wrapping): the reclaimer sets it every tick, the
    /// model moves it as each eviction pass ends. Each LRU record is
    /// stamped with it, so the LRU is nearly oldest first by it too: a
    /// page passed over for being pinned or in a region going keeps its
    /// older stamp behind younger ones, and a cold pass that meets a
    /// younger one first leaves it for a later pass.
    pub clock: u32,
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
                pages: untouched_pages(npages),
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
        if let Some(rec) = self.new_record(base, idx) {
            self.lru.push_back(rec);
            self.compact_lru();
        }
    }

    /// Queues a page just swapped in on probation (see
    /// [`Tunables::probation_pages`]); any record it had dies.
    fn push_probation(&mut self, base: usize, idx: usize) {
        if let Some(rec) = self.new_record(base, idx) {
            self.probation.push_back(rec);
            self.compact_lru();
        }
    }

    /// A record for page `idx` of the region at `base`, stamped now; the
    /// page's older records die.
    fn new_record(&mut self, base: usize, idx: usize) -> Option<LruRecord> {
        let r = self.regions.get_mut(&base)?;
        let page = &mut r.pages[idx];
        page.lru_gen = page.lru_gen.wrapping_add(1);
        Some(LruRecord {
            base,
            id: r.id,
            idx: idx as u32,
            gen: page.lru_gen,
            since: self.clock,
            queued: self.evictions as u32,
        })
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
        if self.probation.len() > 2 * self.resident + 4096 {
            let probation = std::mem::take(&mut self.probation);
            self.probation = probation.into_iter().filter(|r| self.live(r)).collect();
        }
    }

    /// Every record, the LRU's and probation's.
    fn records(&self) -> impl Iterator<Item = &LruRecord> {
        self.lru.iter().chain(&self.probation)
    }

    /// Moves the age clock to `ms` if that is ahead of it (two threads
    /// that read the time and then take the lock may come in either
    /// order: the clock never goes back, or a record stamped just before
    /// would read as 49 days old).
    pub fn advance_clock(&mut self, ms: u32) {
        if ms.wrapping_sub(self.clock) < 1 << 31 {
            self.clock = ms;
        }
    }

    /// Resident pages queued at least `ages[i]` ms ago, for each `i`:
    /// pages untouched that long as far as faults and tracked writes tell
    /// (the cold bytes by age of a report). A walk of the LRU.
    pub fn idle_pages(&self, ages: &[u32]) -> Vec<usize> {
        let mut counts = vec![0; ages.len()];
        for rec in self.records().filter(|r| self.live(r)) {
            let age = self.clock.wrapping_sub(rec.since);
            for (n, &a) in counts.iter_mut().zip(ages) {
                *n += usize::from(age >= a);
            }
        }
        counts
    }

    /// LRU records, live or dead (for tests of invariant 6).
    pub fn lru_records(&self) -> usize {
        self.lru.len() + self.probation.len()
    }

    /// Live LRU records naming the region at `base` (any id).
    pub fn live_lru_records_of(&self, base: usize) -> usize {
        self.records()
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
    /// Runs of neighbouring victims eviction took (a write-protect call
    /// or check each).
    EvictRuns,
    /// Pages evicted under the protection aging left on them: no
    /// write-protect call (no TLB flush) of the eviction's own.
    EvictedArmed,
    /// Pages evicted with no protection: the evictor is the program's
    /// only thread, in its own fault handler ([`Evict::sole_writer`]).
    EvictedSoleWriter,
    /// Write-protect calls eviction made for runs not armed.
    EvictProtectCalls,
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
    /// Write-protect calls of the aging passes (one per stretch of a
    /// region between pinned pages).
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
    /// A clean run of `pages` pages at `addr` is evicted on the slots it
    /// kept, storing nothing (the recorder's hook: nothing by default).
    fn evicting_clean(&self, _addr: usize, _pages: usize) {}
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
    /// Probation for pages swapped in (0: none). A page that comes back
    /// from the store is queued apart from the LRU, and reclaim under the
    /// limit takes it before any page of the LRU once this many evictions
    /// have gone by since it came in, unless a fault or tracked write
    /// queued it on the LRU meanwhile (a first touch, a write-protect
    /// fault). A program that sweeps a working set larger than the limit
    /// over and over (a garbage collector's full passes, a hash table hit
    /// at random) then keeps the pages it has in memory, as Belady's
    /// optimum does on a loop, where the LRU would evict each just before
    /// its next turn: every access of the sweep a fault. Reads of resident
    /// pages are invisible here, so without it a page read every time is
    /// as old as one never read again.
    pub probation_pages: u64,
    /// Eviction unmaps its stored runs together once they hold this many
    /// pages, unless they stream (long runs, near one another), and at the
    /// end of the batch: one TLB flush for all of them. The writers of
    /// those pages wait until the group is unmapped, so a group of
    /// scattered victims is kept short.
    pub unmap_group_pages: usize,
    /// Faulting threads sleep in the kernel until an operation wakes their
    /// range (the handler thread's modes). `false` where a fault raises
    /// SIGBUS in the faulting thread, which waits on the runtime's state:
    /// nothing sleeps in the kernel then, and eviction publishes a run as
    /// soon as it is unmapped (unmapping private anonymous memory drops
    /// its write protection with it), without a wake-up call of its own.
    pub faults_block: bool,
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
    /// Reclaim takes pages on probation even when pinned.
    ProbationIgnoresPins,
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
    /// Eviction of an armed run trusts the state and does not check that
    /// aging's protection is still on every page.
    ArmedUnchecked,
    /// An aging pass that protects across the gaps between resident pages
    /// leaves the pages mapped meanwhile unarmed, though they may have
    /// come out protected.
    AgingLeavesGapsUnarmed,
    /// The program's discard does not wait for the operations in flight
    /// on its pages.
    DiscardIgnoresInFlight,
    /// Eviction without protection ([`Evict::sole_writer`]) while another
    /// thread of the program runs: what the runtime's check of the
    /// process's threads rules out.
    SoleWriterBesideAnother,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zeroed_page_is_untouched() {
        // The table comes zeroed from the allocator: every page of it must
        // read as untouched.
        let table = untouched_pages(3);
        assert_eq!(table.len(), 3);
        assert!(table.iter().all(|p| *p == Page::UNTOUCHED));
        assert!(untouched_pages(0).is_empty());
        // The tables' cost the docs state: 32 bytes a page.
        assert_eq!(std::mem::size_of::<Page>(), 32);
    }

    #[test]
    fn idle_pages_count_by_the_age_clock_and_the_clock_never_goes_back() {
        let mut st = State::default();
        let base = 1 << 30;
        st.add_region(base, 4);
        st.install_resident(base, 0);
        st.advance_clock(1_000);
        st.install_resident(base, 1);
        st.advance_clock(1_500);
        st.install_resident(base, 2);
        // A thread that read the time earlier comes in late: ignored.
        st.advance_clock(1_200);
        assert_eq!(st.clock, 1_500);
        assert_eq!(st.idle_pages(&[0, 400, 1_000, 2_000]), vec![3, 2, 1, 0]);
        // A page that left is not idle memory any more.
        st.regions.get_mut(&base).unwrap().pages[0].state = PageState::Evicting;
        assert_eq!(st.idle_pages(&[400]), vec![1]);
        // Across the wrap of the clock, ages are differences.
        st.advance_clock(1_500 + (1 << 31) - 1);
        st.advance_clock(u32::MAX);
        assert_eq!(st.clock, u32::MAX);
        st.install_resident(base, 3);
        st.advance_clock(99);
        assert_eq!(st.idle_pages(&[100, 101]), vec![3, 2]);
    }

    #[test]
    fn a_table_costs_the_memory_pages_its_touched_pages_are_in() {
        let per_memory_page = PAGE / std::mem::size_of::<Page>();
        let mut st = State::default();
        let base = 1 << 30;
        st.add_region(base, 100 * per_memory_page);
        let r = st.regions.get_mut(&base).unwrap();
        assert_eq!(r.table_bytes(), 0);
        r.pages[0].state = PageState::Resident;
        r.pages[per_memory_page - 1].state = PageState::Resident;
        assert_eq!(r.table_bytes(), PAGE);
        r.pages[50 * per_memory_page].shadow = 7;
        assert_eq!(r.table_bytes(), 2 * PAGE);
        st.add_region(base << 1, 3);
        let small = st.regions.get_mut(&(base << 1)).unwrap();
        small.pages[1].state = PageState::Resident;
        assert_eq!(small.table_bytes(), 3 * std::mem::size_of::<Page>());
    }
}
