//! Handles, encoded object locations, and the handle table.
//!
//! A [`Handle`] is what callers keep: `[generation:32 | slot:32]`. It names a
//! slot in the [`HandleTable`]; the slot holds the object's current location
//! as one atomic word, the kernel's `obj` value:
//!
//! ```text
//!  63            32 31        24 23        12 11     0
//! +----------------+------------+------------+--------+
//! |      pfn       | class_idx  |  obj_idx   |  tags  |
//! +----------------+------------+------------+--------+
//! ```
//!
//! Migration (compaction) rewrites `pfn`/`obj_idx` but never `class_idx`, so a
//! lockless read of the slot always yields the right size class (the class
//! index encoded in the handle, docs/seeds.md). The generation is bumped
//! each time the slot is freed, so stale or forged handles are detected
//! instead of touching another object.

use crate::class::ZS_MAX_OBJS_PER_ZSPAGE;
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::sync::Mutex;
use std::fmt;
use std::sync::OnceLock;

/// An allocated object, as returned by [`crate::Pool::malloc`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(u64);

impl Handle {
    pub(crate) fn new(slot: u32, generation: u32) -> Self {
        Self((u64::from(generation) << 32) | u64::from(slot))
    }
    /// The raw value, e.g. to keep in a packed index entry.
    pub fn to_raw(self) -> u64 {
        self.0
    }
    /// Rebuilds a handle from [`Handle::to_raw`]. Any value is accepted: a
    /// value that names no live object is rejected by the pool's calls.
    pub fn from_raw(raw: u64) -> Self {
        Self(raw)
    }
    pub(crate) fn slot(self) -> u32 {
        self.0 as u32
    }
    pub(crate) fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handle(slot {}, gen {})", self.slot(), self.generation())
    }
}

const TAG_BITS: u32 = 12;
const OBJ_IDX_BITS: u32 = 12;
const CLASS_BITS: u32 = 8;
const PFN_SHIFT: u32 = TAG_BITS + OBJ_IDX_BITS + CLASS_BITS;
/// Set in every live location, so 0 means "no object".
const OBJ_ALLOCATED_TAG: u64 = 1;
const _: () = assert!(ZS_MAX_OBJS_PER_ZSPAGE <= 1 << OBJ_IDX_BITS);
const _: () = assert!(crate::class::ZS_SIZE_CLASSES <= 1 << CLASS_BITS);

/// Where an object lives: the encoded `obj` value, class index included
/// (docs/seeds.md).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ObjLocation(u64);

impl ObjLocation {
    pub(crate) fn new(pfn: u32, class_index: usize, obj_idx: usize) -> Self {
        Self(
            (u64::from(pfn) << PFN_SHIFT)
                | ((class_index as u64) << (TAG_BITS + OBJ_IDX_BITS))
                | ((obj_idx as u64) << TAG_BITS)
                | OBJ_ALLOCATED_TAG,
        )
    }
    pub(crate) fn decode(raw: u64) -> Option<Self> {
        (raw & OBJ_ALLOCATED_TAG != 0).then_some(Self(raw))
    }
    /// Page (arena page frame number) holding the object's first byte.
    pub fn pfn(self) -> u32 {
        (self.0 >> PFN_SHIFT) as u32
    }
    /// The size class, invariant for the object's lifetime.
    pub fn class_index(self) -> usize {
        ((self.0 >> (TAG_BITS + OBJ_IDX_BITS)) & ((1 << CLASS_BITS) - 1)) as usize
    }
    /// Index of the object within its zspage.
    pub fn obj_idx(self) -> usize {
        ((self.0 >> TAG_BITS) & ((1 << OBJ_IDX_BITS) - 1)) as usize
    }
    pub(crate) fn raw(self) -> u64 {
        self.0
    }
}

/// One handle slot: the location word and the generation of its tenant.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) generation: AtomicU32,
    pub(crate) obj: AtomicU64,
}

impl Slot {
    fn new() -> Self {
        Self {
            generation: AtomicU32::new(0),
            obj: AtomicU64::new(0),
        }
    }

    /// The live location if `handle` is this slot's current tenant.
    ///
    /// Stable only while the lock of the object's class is held (or, for the
    /// lockless first read of `free`, used only to pick which class to lock).
    pub(crate) fn location(&self, handle: Handle) -> Option<ObjLocation> {
        if self.generation.load(Ordering::Acquire) != handle.generation() {
            return None;
        }
        ObjLocation::decode(self.obj.load(Ordering::Acquire))
    }
}

const CHUNK_SLOTS: usize = if cfg!(loom) { 8 } else { 4096 };
const SHARDS: usize = if cfg!(loom) { 1 } else { 32 };
/// Freed slots an allocating thread takes from another thread's shard at
/// once, so that a steady store-here, free-there pattern takes the other
/// shard's lock once per this many allocations.
const STEAL_BATCH: usize = 64;

/// Slots in fixed chunks that never move, so a slot is read without a lock;
/// free slot numbers are cached per shard (the per-cpu slab of the kernel's
/// handle cache), so freeing handles does not bounce one shared lock.
pub(crate) struct HandleTable {
    chunks: Box<[OnceLock<Box<[Slot]>>]>,
    next_unused: Mutex<u32>,
    free_shards: Box<[Mutex<Vec<u32>>]>,
    capacity: u32,
}

impl HandleTable {
    pub(crate) fn new(capacity: usize) -> Self {
        // Slot 0 is never handed out, so Handle::from_raw(0) is always invalid.
        let capacity = capacity.clamp(2, u32::MAX as usize - 1);
        let nchunks = capacity.div_ceil(CHUNK_SLOTS);
        let chunks: Box<[OnceLock<Box<[Slot]>>]> = (0..nchunks).map(|_| OnceLock::new()).collect();
        if cfg!(loom) {
            // loom atomics must be created inside the model; do it eagerly.
            for c in chunks.iter() {
                c.get_or_init(Self::new_chunk);
            }
        }
        Self {
            chunks,
            next_unused: Mutex::new(1),
            free_shards: (0..SHARDS).map(|_| Mutex::new(Vec::new())).collect(),
            capacity: capacity as u32,
        }
    }

    fn new_chunk() -> Box<[Slot]> {
        (0..CHUNK_SLOTS).map(|_| Slot::new()).collect()
    }

    /// The slot `handle` names, if it is inside the table.
    pub(crate) fn slot(&self, handle: Handle) -> Option<&Slot> {
        self.slot_by_index(handle.slot())
    }

    pub(crate) fn slot_by_index(&self, index: u32) -> Option<&Slot> {
        let index = index as usize;
        let chunk = self.chunks.get(index / CHUNK_SLOTS)?.get()?;
        chunk.get(index % CHUNK_SLOTS)
    }

    // Under loom there is one shard, so the modulo is by 1 on purpose.
    #[cfg_attr(loom, allow(clippy::modulo_one))]
    fn shard(&self) -> &Mutex<Vec<u32>> {
        &self.free_shards[shard_index() % SHARDS]
    }

    /// Reserves a slot; returns the handle it will be known by. A freed
    /// slot is reused before a fresh one is made: this thread's shard
    /// first, then a batch taken from another shard (where the threads
    /// that free put them: in uzswap the reclaimer stores and the fault
    /// handler frees, so the storing thread's own shard stays empty), and
    /// only then a slot never used. Making fresh slots while freed ones
    /// waited in other shards grew the table by a slot for every store,
    /// 16 bytes each plus 4 in the free list, without bound.
    pub(crate) fn alloc(&self) -> Option<Handle> {
        let own = self.shard();
        let cached = own.lock().pop();
        let index = match cached
            .or_else(|| self.steal_into(own))
            .or_else(|| self.alloc_unused())
        {
            Some(index) => index,
            // Another thread freed one since we looked.
            None => self.free_shards.iter().find_map(|s| s.lock().pop())?,
        };
        let slot = self
            .slot_by_index(index)
            .expect("slot index handed out lies inside the table");
        Some(Handle::new(index, slot.generation.load(Ordering::Acquire)))
    }

    /// Takes up to [`STEAL_BATCH`] freed slots from the first other shard
    /// that has some: one of them is returned, the rest go to `own`. One
    /// shard's lock at a time (shard locks are leaves).
    fn steal_into(&self, own: &Mutex<Vec<u32>>) -> Option<u32> {
        for other in self.free_shards.iter() {
            if std::ptr::eq(other, own) {
                continue;
            }
            let mut batch = {
                let mut o = other.lock();
                let keep = o.len().saturating_sub(STEAL_BATCH);
                o.split_off(keep)
            };
            let Some(index) = batch.pop() else {
                continue;
            };
            own.lock().append(&mut batch);
            return Some(index);
        }
        None
    }

    fn alloc_unused(&self) -> Option<u32> {
        let mut next = self.next_unused.lock();
        if *next >= self.capacity {
            return None;
        }
        let index = *next;
        self.chunks[index as usize / CHUNK_SLOTS].get_or_init(Self::new_chunk);
        *next += 1;
        Some(index)
    }

    /// Returns a slot whose tenant was retired (generation already bumped).
    pub(crate) fn release(&self, handle: Handle) {
        self.shard().lock().push(handle.slot());
    }

    /// Slots handed out from fresh space (high-water mark), for stats.
    pub(crate) fn slots_created(&self) -> usize {
        (*self.next_unused.lock() - 1) as usize
    }
}

/// The calling CPU's shard (glibc's `sched_getcpu` reads the kernel's rseq
/// area: no system call, and no thread-local storage of this library,
/// which a fault served in a signal handler must not touch).
#[cfg(not(loom))]
fn shard_index() -> usize {
    // SAFETY: sched_getcpu has no arguments; -1 on error.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or(0)
}

#[cfg(loom)]
fn shard_index() -> usize {
    0
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slots_freed_on_another_thread_are_reused_not_made_afresh() {
        let table = std::sync::Arc::new(HandleTable::new(1 << 20));
        // One thread allocates, another frees: 100,000 times, at most 500
        // alive at once.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Handle>(500);
        let freer = {
            let table = table.clone();
            std::thread::spawn(move || {
                for h in rx {
                    table.release(h);
                }
            })
        };
        for _ in 0..100_000 {
            tx.send(table.alloc().expect("a slot")).unwrap();
        }
        drop(tx);
        freer.join().unwrap();
        // 500 in the channel, one being freed, one batch in flight, and
        // slack for the freer lagging behind.
        assert!(
            table.slots_created() < 2_000,
            "{} slots made for at most ~500 alive",
            table.slots_created()
        );
    }

    #[test]
    fn location_round_trips_every_field() {
        let loc = ObjLocation::new(0xdead_beef, 254, 1023);
        assert_eq!(loc.pfn(), 0xdead_beef);
        assert_eq!(loc.class_index(), 254);
        assert_eq!(loc.obj_idx(), 1023);
        assert_eq!(ObjLocation::decode(loc.raw()), Some(loc));
        assert_eq!(ObjLocation::decode(0), None);
    }

    #[test]
    fn table_reuses_slots_and_never_hands_out_slot_zero() {
        let t = HandleTable::new(3);
        let a = t.alloc().unwrap();
        let b = t.alloc().unwrap();
        assert_ne!(a.slot(), 0);
        assert_ne!(b.slot(), 0);
        assert_ne!(a.slot(), b.slot());
        assert!(t.alloc().is_none(), "capacity 3 holds slots 1 and 2 only");
        t.slot(a).unwrap().generation.fetch_add(1, Ordering::AcqRel);
        t.release(a);
        let c = t.alloc().unwrap();
        assert_eq!(c.slot(), a.slot());
        assert_ne!(c.generation(), a.generation());
        assert!(t.slot(Handle::from_raw(u64::from(u32::MAX))).is_none());
    }
}
