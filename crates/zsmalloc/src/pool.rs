//! The pool: size classes over an arena, with malloc/free/read/write/compact.

use crate::arena::{Arena, PageInfo, NO_PFN};
use crate::class::{ClassSpec, ClassTable, PAGE_SIZE, ZS_MAX_ALLOC_SIZE};
use crate::handle::{Handle, HandleTable, ObjLocation, Slot};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use crate::zspage::{
    fullness_group, obj_span, ZsPage, GROUP_EMPTY, GROUP_FULL, NR_FULLNESS_GROUPS,
};
use crate::Error;

/// How `free` finds the size class of a handle (the class index in the
/// handle, and `zs_free` without the pool lock; docs/seeds.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FreePath {
    /// Mainline before the lockless `zs_free`: take the pool lock for
    /// reading, follow the object's page to its zspage and class, lock the
    /// class, drop the pool lock.
    PoolLock,
    /// Lockless `zs_free`: read the class index from the location word
    /// without any lock, lock only that class, re-read the word under the
    /// class lock.
    ClassLockOnly,
}

/// When an emptied zspage's pages go back to the arena (the class lock
/// dropped before the pages are freed; docs/seeds.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PageRelease {
    /// Mainline: while still holding the class lock.
    UnderClassLock,
    /// Lockless `zs_free`: bookkeeping under the class lock, page release
    /// after it.
    AfterClassUnlock,
}

/// Pool configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address space reserved for pages (memory is used only as objects
    /// are stored); this bounds the pool's size.
    pub arena_bytes: usize,
    /// Most handles that can be live at once.
    pub max_handles: usize,
    pub free_path: FreePath,
    pub page_release: PageRelease,
    /// Free pages kept resident for reuse (the per-cpu page lists); above
    /// this, free pages' memory goes back to the OS (`MADV_DONTNEED`) in
    /// batches. `None` never gives memory back; `Some(0)` gives back at
    /// every release.
    pub free_page_cache: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Self::seed001()
    }
}

impl Config {
    const DEFAULT_ARENA: usize = 16 << 30;
    /// 2 MiB of free pages stay resident.
    pub const DEFAULT_FREE_PAGE_CACHE: usize = 512;

    /// Mainline zsmalloc before the lockless `zs_free` (the "Base" column).
    pub fn baseline() -> Self {
        Self {
            arena_bytes: Self::DEFAULT_ARENA,
            max_handles: 64 << 20,
            free_path: FreePath::PoolLock,
            page_release: PageRelease::UnderClassLock,
            free_page_cache: Some(Self::DEFAULT_FREE_PAGE_CACHE),
        }
    }

    /// All three changes of the lockless `zs_free` (class index in the
    /// handle, no pool lock in `free`, pages released after the class
    /// lock: the "Patched" column); the default.
    pub fn seed001() -> Self {
        Self {
            free_path: FreePath::ClassLockOnly,
            page_release: PageRelease::AfterClassUnlock,
            ..Self::baseline()
        }
    }

    /// Same settings with a different arena size.
    pub fn with_arena_bytes(mut self, bytes: usize) -> Self {
        self.arena_bytes = bytes;
        self
    }
}

/// Counters of one size class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassStats {
    pub spec: ClassSpec,
    pub zspages: usize,
    pub objs_allocated: usize,
    pub objs_inuse: usize,
    /// Zspages per fullness group (0, 10%, …, 99%, 100%).
    pub fullness: [usize; NR_FULLNESS_GROUPS],
}

/// Counters of the whole pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolStats {
    pub pages_allocated: usize,
    /// `pages_allocated * PAGE_SIZE`, the kernel's `pool_total_size`.
    pub pool_total_size: usize,
    pub objs_allocated: usize,
    pub objs_inuse: usize,
    pub pages_compacted: usize,
    /// Times the release of an emptied zspage was put off because a reader
    /// held it (the zspage is retried by later frees and compaction).
    pub deferred_frees: usize,
    /// Allocator metadata outside the arena (zspage records, handle slots).
    pub metadata_bytes: usize,
    /// Free pages whose memory is still resident (reused before fresh pages).
    pub free_pages_resident: usize,
    /// Pages whose memory was given back to the OS so far.
    pub pages_discarded: usize,
    pub classes: Vec<ClassStats>,
}

/// What one [`Pool::compact`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactStats {
    pub objs_migrated: usize,
    pub pages_freed: usize,
}

#[derive(Default)]
struct ClassInner {
    zspages: Vec<Option<ZsPage>>,
    free_ids: Vec<u32>,
    groups: [Vec<u32>; NR_FULLNESS_GROUPS],
    objs_inuse: usize,
}

impl ClassInner {
    fn zspage(&mut self, id: u32) -> &mut ZsPage {
        self.zspages[id as usize]
            .as_mut()
            .expect("zspage id from a live descriptor")
    }

    fn zspage_count(&self) -> usize {
        self.zspages.len() - self.free_ids.len()
    }

    fn list_add(&mut self, id: u32, group: usize) {
        let pos = self.groups[group].len();
        self.groups[group].push(id);
        let z = self.zspage(id);
        z.group = group;
        z.group_pos = pos;
    }

    fn list_del(&mut self, id: u32) {
        let (group, pos) = {
            let z = self.zspage(id);
            (z.group, z.group_pos)
        };
        self.groups[group].swap_remove(pos);
        if let Some(&moved) = self.groups[group].get(pos) {
            self.zspage(moved).group_pos = pos;
        }
    }

    /// Moves a zspage to the group its fullness now calls for.
    fn fix_fullness(&mut self, id: u32) -> usize {
        let z = self.zspage(id);
        let (old, new) = (z.group, fullness_group(z.inuse, z.capacity()));
        if old != new {
            self.list_del(id);
            self.list_add(id, new);
        }
        new
    }

    fn insert(&mut self, zspage: ZsPage) -> u32 {
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.zspages[id as usize] = Some(zspage);
                id
            }
            None => {
                self.zspages.push(Some(zspage));
                (self.zspages.len() - 1) as u32
            }
        };
        self.list_add(id, GROUP_EMPTY);
        id
    }

    fn remove(&mut self, id: u32) -> ZsPage {
        self.list_del(id);
        self.free_ids.push(id);
        self.zspages[id as usize]
            .take()
            .expect("removing a live zspage")
    }

    /// The most used zspage that still has room (kernel: 99% group down to 0).
    fn first_with_room(&self) -> Option<u32> {
        (GROUP_EMPTY..GROUP_FULL)
            .rev()
            .find_map(|g| self.groups[g].last().copied())
    }

    /// The least used non-empty, non-full zspage other than `except`.
    fn least_used(&self, except: u32) -> Option<u32> {
        (GROUP_EMPTY + 1..GROUP_FULL)
            .find_map(|g| self.groups[g].iter().rev().copied().find(|&z| z != except))
    }

    fn objs_allocated(&self, spec: &ClassSpec) -> usize {
        self.zspage_count() * spec.objs_per_zspage
    }

    /// Pages compaction could free (kernel: `zs_can_compact`).
    fn compactable_pages(&self, spec: &ClassSpec) -> usize {
        let wasted = self.objs_allocated(spec) - self.objs_inuse;
        wasted / spec.objs_per_zspage * spec.pages_per_zspage
    }
}

struct SizeClass {
    spec: ClassSpec,
    inner: Mutex<ClassInner>,
}

const STRIPES: usize = if cfg!(loom) { 2 } else { 256 };

/// A zsmalloc pool. See the crate documentation for the design.
pub struct Pool {
    config: Config,
    table: ClassTable,
    classes: Box<[SizeClass]>,
    /// Excludes compaction (writer) from `read`/`write`/`read_to_vec` and, on the
    /// [`FreePath::PoolLock`] path, from `free` (readers).
    pool_lock: RwLock<()>,
    handles: HandleTable,
    arena: Arena,
    /// Zspage locks, striped by first pfn: readers of an object share it,
    /// writers of an object and the release of an emptied zspage own it.
    stripes: Box<[RwLock<()>]>,
    pages_compacted: AtomicUsize,
    deferred_frees: AtomicUsize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

type Detached = Option<Vec<u32>>;

/// A held zspage stripe lock; only its drop matters.
enum StripeGuard<'a> {
    Shared(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
    Exclusive(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
}

impl Pool {
    /// Creates a pool, reserving `config.arena_bytes` of address space.
    pub fn new(config: Config) -> Result<Self, Error> {
        let pages = config.arena_bytes / PAGE_SIZE;
        let arena = Arena::new(pages, config.free_page_cache)?;
        if config.max_handles == 0 {
            return Err(Error::Config("max_handles must be at least 1".into()));
        }
        let table = ClassTable::build();
        let classes = table
            .specs
            .iter()
            .map(|&spec| SizeClass {
                spec,
                inner: Mutex::new(ClassInner::default()),
            })
            .collect();
        Ok(Self {
            handles: HandleTable::new(config.max_handles.saturating_add(1)),
            config,
            table,
            classes,
            pool_lock: RwLock::new(()),
            arena,
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
            pages_compacted: AtomicUsize::new(0),
            deferred_frees: AtomicUsize::new(0),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The (merged) size classes, smallest first.
    pub fn size_classes(&self) -> &[ClassSpec] {
        &self.table.specs
    }

    /// The class that would store an object of `size` bytes.
    pub fn class_for_size(&self, size: usize) -> Result<ClassSpec, Error> {
        check_size(size)?;
        Ok(*self.table.for_size(size))
    }

    /// Stores nothing yet: reserves an object of `size` bytes.
    pub fn malloc(&self, size: usize) -> Result<Handle, Error> {
        check_size(size)?;
        let pos = self.table.map[crate::class::size_to_index(size)];
        let class = &self.classes[pos];
        let handle = self.handles.alloc().ok_or(Error::OutOfHandles)?;
        let slot = self
            .handles
            .slot(handle)
            .expect("fresh handle names a slot");
        let mut inner = class.inner.lock();
        let id = match inner.first_with_room() {
            Some(id) => id,
            None => {
                // Like the kernel, allocate pages without the class lock.
                drop(inner);
                let Some(pages) = self.arena.alloc_pages(class.spec.pages_per_zspage) else {
                    self.handles.release(handle);
                    return Err(Error::OutOfMemory);
                };
                inner = class.inner.lock();
                self.insert_zspage(&mut inner, pos, pages)
            }
        };
        let zspage = inner.zspage(id);
        let obj_idx = zspage
            .alloc_obj(handle.slot())
            .expect("zspage picked for having room");
        let pfn = zspage.obj_pfn(obj_idx, class.spec.size);
        inner.objs_inuse += 1;
        inner.fix_fullness(id);
        slot.obj.store(
            ObjLocation::new(pfn, class.spec.index, obj_idx).raw(),
            Ordering::Release,
        );
        Ok(handle)
    }

    fn insert_zspage(&self, inner: &mut ClassInner, pos: usize, pages: Vec<u32>) -> u32 {
        let spec = &self.classes[pos].spec;
        let id = inner.insert(ZsPage::new(pages.clone(), spec));
        for (i, &pfn) in pages.iter().enumerate() {
            let next_pfn = pages.get(i + 1).copied().unwrap_or(NO_PFN);
            self.arena.desc(pfn).set(PageInfo {
                class_pos: pos,
                zspage_id: id,
                first_pfn: pages[0],
                next_pfn,
            });
        }
        id
    }

    /// Frees the object. A handle that is not live gives
    /// [`Error::InvalidHandle`] and changes nothing.
    pub fn free(&self, handle: Handle) -> Result<(), Error> {
        let slot = self
            .handles
            .slot(handle)
            .ok_or(Error::InvalidHandle(handle))?;
        let (pos, mut inner, loc) = match self.config.free_path {
            FreePath::ClassLockOnly => {
                // Lockless read: the class index never changes while the
                // handle lives, so even a racing migration gives the right class.
                let loc = slot.location(handle).ok_or(Error::InvalidHandle(handle))?;
                let pos = self
                    .table
                    .position_of_index(loc.class_index())
                    .ok_or(Error::InvalidHandle(handle))?;
                let inner = self.classes[pos].inner.lock();
                // Re-read under the class lock, which migration also holds:
                // now the pfn is stable.
                let loc = slot.location(handle).ok_or(Error::InvalidHandle(handle))?;
                (pos, inner, loc)
            }
            FreePath::PoolLock => {
                let pool = self.pool_lock.read();
                let loc = slot.location(handle).ok_or(Error::InvalidHandle(handle))?;
                let info = self
                    .arena
                    .desc(loc.pfn())
                    .get()
                    .ok_or(Error::InvalidHandle(handle))?;
                let inner = self.classes[info.class_pos].inner.lock();
                drop(pool);
                // Another free of the same handle may have won the race.
                let loc = slot.location(handle).ok_or(Error::InvalidHandle(handle))?;
                (info.class_pos, inner, loc)
            }
        };
        let detached = self.free_locked(&mut inner, pos, slot, handle, loc)?;
        if self.config.page_release == PageRelease::UnderClassLock {
            self.release(detached);
            drop(inner);
        } else {
            drop(inner);
            self.release(detached);
        }
        self.handles.release(handle);
        Ok(())
    }

    /// Frees the object at `loc` under the class lock; returns the pages of
    /// zspages it emptied and detached, to be released by the caller.
    fn free_locked(
        &self,
        inner: &mut MutexGuard<'_, ClassInner>,
        pos: usize,
        slot: &Slot,
        handle: Handle,
        loc: ObjLocation,
    ) -> Result<Detached, Error> {
        let spec = &self.classes[pos].spec;
        let info = self
            .arena
            .desc(loc.pfn())
            .get()
            .filter(|i| i.class_pos == pos && loc.class_index() == spec.index);
        let info = info.ok_or(Error::InvalidHandle(handle))?;
        if !inner
            .zspage(info.zspage_id)
            .free_obj(loc.obj_idx(), handle.slot())
        {
            return Err(Error::InvalidHandle(handle));
        }
        slot.obj.store(0, Ordering::Release);
        slot.generation.fetch_add(1, Ordering::AcqRel);
        inner.objs_inuse -= 1;
        if inner.fix_fullness(info.zspage_id) != GROUP_EMPTY {
            return Ok(None);
        }
        Ok(self.detach_empty(inner))
    }

    /// Detaches every empty zspage of the class that no reader holds
    /// (kernel: `trylock_zspage`, else deferred free). Returns their pages.
    fn detach_empty(&self, inner: &mut ClassInner) -> Detached {
        let mut pages = Vec::new();
        let mut i = 0;
        while let Some(&id) = inner.groups[GROUP_EMPTY].get(i) {
            let first = inner.zspage(id).pages[0];
            match self.stripe(first).try_write() {
                Some(_held) => {
                    let z = inner.remove(id);
                    pages.extend_from_slice(&z.pages);
                }
                None => {
                    self.deferred_frees.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            }
        }
        (!pages.is_empty()).then_some(pages)
    }

    fn release(&self, detached: Detached) {
        if let Some(pages) = detached {
            self.arena.release_pages(&pages);
        }
    }

    /// Frees empty zspages whose release was deferred.
    pub fn free_deferred(&self) {
        for class in self.classes.iter() {
            let mut inner = class.inner.lock();
            let detached = self.detach_empty(&mut inner);
            drop(inner);
            self.release(detached);
        }
    }

    fn stripe(&self, first_pfn: u32) -> &RwLock<()> {
        &self.stripes[first_pfn as usize % STRIPES]
    }

    /// The size class index encoded for `handle`, read without locks.
    pub fn class_index(&self, handle: Handle) -> Result<usize, Error> {
        let slot = self
            .handles
            .slot(handle)
            .ok_or(Error::InvalidHandle(handle))?;
        Ok(slot
            .location(handle)
            .ok_or(Error::InvalidHandle(handle))?
            .class_index())
    }

    /// Bytes the object can hold (its class size).
    pub fn obj_capacity(&self, handle: Handle) -> Result<usize, Error> {
        let index = self.class_index(handle)?;
        let pos = self
            .table
            .position_of_index(index)
            .ok_or(Error::InvalidHandle(handle))?;
        Ok(self.classes[pos].spec.size)
    }

    /// Validates `handle` and locks its object: pool lock shared (excludes
    /// compaction), then the zspage stripe. Calls `f` with the location.
    fn with_locked_object<R>(
        &self,
        handle: Handle,
        exclusive: bool,
        f: impl FnOnce(ObjLocation, &ClassSpec, u32) -> R,
    ) -> Result<R, Error> {
        let _pool = self.pool_lock.read();
        let slot = self
            .handles
            .slot(handle)
            .ok_or(Error::InvalidHandle(handle))?;
        let loc = slot.location(handle).ok_or(Error::InvalidHandle(handle))?;
        let pos = self
            .table
            .position_of_index(loc.class_index())
            .ok_or(Error::InvalidHandle(handle))?;
        let info = self
            .arena
            .desc(loc.pfn())
            .get()
            .filter(|i| i.class_pos == pos);
        let info = info.ok_or(Error::InvalidHandle(handle))?;
        let stripe = self.stripe(info.first_pfn);
        let _held = if exclusive {
            StripeGuard::Exclusive(stripe.write())
        } else {
            StripeGuard::Shared(stripe.read())
        };
        // A free may have retired the handle before we locked the stripe.
        if slot.location(handle) != Some(loc) {
            return Err(Error::InvalidHandle(handle));
        }
        Ok(f(loc, &self.classes[pos].spec, info.next_pfn))
    }

    /// Copies the object's first `buf.len()` bytes into `buf`.
    pub fn read(&self, handle: Handle, buf: &mut [u8]) -> Result<(), Error> {
        self.with_locked_object(handle, false, |loc, spec, next_pfn| {
            check_len(buf.len(), spec.size)?;
            // SAFETY: the stripe is held shared and the pool lock shared, so
            // no writer or migration touches this object's bytes.
            unsafe { self.copy_out(loc, spec.size, next_pfn, buf) };
            Ok(())
        })?
    }

    /// Calls `f` with the object's first `len` bytes, locked against
    /// writers and compaction for the call: in place where they lie in one
    /// page (the kernel's `zs_obj_read_begin`), else copied into a buffer
    /// on the stack. Decompression reads the bytes where they are, without
    /// the copy (and the zeroed page-sized buffer) of [`Pool::read`].
    pub fn read_with<R>(
        &self,
        handle: Handle,
        len: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        self.with_locked_object(handle, false, |loc, spec, next_pfn| {
            check_len(len, spec.size)?;
            let span = obj_span(loc.obj_idx(), spec.size);
            if len <= span.first_len {
                // SAFETY: the stripe and the pool lock are held shared for
                // the call, so no writer, migration or release touches
                // these bytes while `f` reads them.
                return Ok(f(unsafe { self.arena.bytes(loc.pfn(), span.offset, len) }));
            }
            let mut buf = [0u8; PAGE_SIZE];
            let buf = buf.get_mut(..len).ok_or(Error::TooLong {
                len,
                capacity: PAGE_SIZE,
            })?;
            // SAFETY: as in `read`.
            unsafe { self.copy_out(loc, spec.size, next_pfn, buf) };
            Ok(f(buf))
        })?
    }

    /// Stores `data` at the start of the object.
    pub fn write(&self, handle: Handle, data: &[u8]) -> Result<(), Error> {
        self.with_locked_object(handle, true, |loc, spec, next_pfn| {
            check_len(data.len(), spec.size)?;
            // SAFETY: the stripe is held exclusively and the pool lock
            // shared, so nobody else reads or writes this object's bytes.
            unsafe { self.copy_in(loc, spec.size, next_pfn, data) };
            Ok(())
        })?
    }

    /// Copies the whole object (its class size, so the bytes past what was
    /// written too) into a new buffer. Unlike the kernel's
    /// `zs_obj_read_begin`, nothing is mapped in place: every read copies.
    pub fn read_to_vec(&self, handle: Handle) -> Result<Vec<u8>, Error> {
        self.with_locked_object(handle, false, |loc, spec, next_pfn| {
            let mut buf = vec![0u8; spec.size];
            // SAFETY: as in `read`.
            unsafe { self.copy_out(loc, spec.size, next_pfn, &mut buf) };
            buf
        })
    }

    /// # Safety
    /// The caller excludes writers of the object (see `read`).
    unsafe fn copy_out(&self, loc: ObjLocation, size: usize, next_pfn: u32, buf: &mut [u8]) {
        let span = obj_span(loc.obj_idx(), size);
        let first = buf.len().min(span.first_len);
        let (a, b) = buf.split_at_mut(first);
        // SAFETY: forwarded from the caller.
        unsafe {
            self.arena.read(loc.pfn(), span.offset, a);
            if !b.is_empty() {
                self.arena.read(next_pfn, 0, b);
            }
        }
    }

    /// # Safety
    /// The caller has exclusive access to the object (see `write`).
    unsafe fn copy_in(&self, loc: ObjLocation, size: usize, next_pfn: u32, data: &[u8]) {
        let span = obj_span(loc.obj_idx(), size);
        let (a, b) = data.split_at(data.len().min(span.first_len));
        // SAFETY: forwarded from the caller.
        unsafe {
            self.arena.write(loc.pfn(), span.offset, a);
            if !b.is_empty() {
                self.arena.write(next_pfn, 0, b);
            }
        }
    }

    /// Moves objects out of sparse zspages into dense ones and frees the
    /// emptied zspages (kernel: `zs_compact`). Runs concurrently with
    /// `malloc` and `free`; locks are dropped between zspage pairs.
    pub fn compact(&self) -> CompactStats {
        let mut total = CompactStats::default();
        for spec in self.table.specs.iter() {
            let done = self
                .compact_class(spec.index)
                .expect("index of a listed class");
            total.objs_migrated += done.objs_migrated;
            total.pages_freed += done.pages_freed;
        }
        total
    }

    /// Compacts one size class, named by its encoded index
    /// ([`ClassSpec::index`]).
    pub fn compact_class(&self, class_index: usize) -> Result<CompactStats, Error> {
        let pos = self
            .table
            .position_of_index(class_index)
            .ok_or(Error::InvalidClass(class_index))?;
        let mut total = CompactStats::default();
        let mut inner = self.classes[pos].inner.lock();
        let detached = self.detach_empty(&mut inner);
        drop(inner);
        total.pages_freed += detached.as_ref().map_or(0, Vec::len);
        self.release(detached);
        while let Some(step) = self.compact_step(pos) {
            total.objs_migrated += step.objs_migrated;
            total.pages_freed += step.pages_freed;
        }
        self.pages_compacted
            .fetch_add(total.pages_freed, Ordering::Relaxed);
        Ok(total)
    }

    /// One source/destination pair of one class; `None` when nothing to do.
    fn compact_step(&self, pos: usize) -> Option<CompactStats> {
        let class = &self.classes[pos];
        let spec = class.spec;
        let pool = self.pool_lock.write();
        let mut inner = class.inner.lock();
        if inner.compactable_pages(&spec) == 0 {
            return None;
        }
        let dst = inner
            .first_with_room()
            .filter(|&id| inner.groups[GROUP_EMPTY].last() != Some(&id))?;
        let src = inner.least_used(dst)?;
        let mut step = CompactStats::default();
        let mut buf = vec![0u8; spec.size];
        let objs: Vec<usize> = inner.zspage(src).allocated().collect();
        for src_idx in objs {
            if inner.zspage(dst).is_full() {
                break;
            }
            self.migrate_object(&mut inner, &spec, src, dst, src_idx, &mut buf);
            step.objs_migrated += 1;
        }
        inner.fix_fullness(src);
        inner.fix_fullness(dst);
        let detached = self.detach_empty(&mut inner);
        drop(inner);
        drop(pool);
        step.pages_freed = detached.as_ref().map_or(0, Vec::len);
        self.release(detached);
        Some(step)
    }

    /// Moves one object; the caller holds the pool lock for writing (no
    /// reader or writer of object bytes) and the class lock (no free).
    fn migrate_object(
        &self,
        inner: &mut ClassInner,
        spec: &ClassSpec,
        src: u32,
        dst: u32,
        src_idx: usize,
        buf: &mut [u8],
    ) {
        let size = spec.size;
        let z = inner.zspage(src);
        let slot_index = z.owner(src_idx).expect("migrating an allocated object");
        let from = ObjLocation::new(z.obj_pfn(src_idx, size), spec.index, src_idx);
        let from_next = z.next_pfn(obj_span(src_idx, size).page).unwrap_or(NO_PFN);
        let z = inner.zspage(dst);
        let dst_idx = z.alloc_obj(slot_index).expect("destination has room");
        let to = ObjLocation::new(z.obj_pfn(dst_idx, size), spec.index, dst_idx);
        let to_next = z.next_pfn(obj_span(dst_idx, size).page).unwrap_or(NO_PFN);
        // SAFETY: the pool write lock excludes every reader and writer of
        // object bytes, and both objects belong to this locked class.
        unsafe {
            self.copy_out(from, size, from_next, buf);
            self.copy_in(to, size, to_next, buf);
        }
        let freed = inner.zspage(src).free_obj(src_idx, slot_index);
        debug_assert!(freed);
        let slot = self
            .handles
            .slot_by_index(slot_index)
            .expect("owner slot exists");
        // Only pfn/obj_idx change: a lockless reader still sees this class.
        slot.obj.store(to.raw(), Ordering::Release);
    }

    /// Pages [`Pool::compact`] could free now: in each class, the whole
    /// zspages its free objects add up to (the kernel's
    /// `zs_shrinker_count`). Takes each class lock in turn.
    pub fn compactable_pages(&self) -> usize {
        self.classes
            .iter()
            .map(|class| class.inner.lock().compactable_pages(&class.spec))
            .sum()
    }

    /// A snapshot of the pool's counters.
    pub fn stats(&self) -> PoolStats {
        let mut classes = Vec::with_capacity(self.classes.len());
        let mut metadata_bytes = self.handles.slots_created() * std::mem::size_of::<Slot>();
        for class in self.classes.iter() {
            let inner = class.inner.lock();
            let mut fullness = [0; NR_FULLNESS_GROUPS];
            for (g, list) in inner.groups.iter().enumerate() {
                fullness[g] = list.len();
            }
            metadata_bytes += inner
                .zspages
                .iter()
                .flatten()
                .map(ZsPage::metadata_bytes)
                .sum::<usize>();
            metadata_bytes +=
                self.arena_desc_bytes(inner.zspage_count() * class.spec.pages_per_zspage);
            classes.push(ClassStats {
                spec: class.spec,
                zspages: inner.zspage_count(),
                objs_allocated: inner.objs_allocated(&class.spec),
                objs_inuse: inner.objs_inuse,
                fullness,
            });
        }
        let pages_allocated = self.arena.pages_in_use();
        PoolStats {
            pages_allocated,
            pool_total_size: pages_allocated * PAGE_SIZE,
            objs_allocated: classes.iter().map(|c| c.objs_allocated).sum(),
            objs_inuse: classes.iter().map(|c| c.objs_inuse).sum(),
            pages_compacted: self.pages_compacted.load(Ordering::Relaxed),
            deferred_frees: self.deferred_frees.load(Ordering::Relaxed),
            metadata_bytes,
            free_pages_resident: self.arena.hot_pages(),
            pages_discarded: self.arena.pages_discarded(),
            classes,
        }
    }

    fn arena_desc_bytes(&self, pages: usize) -> usize {
        pages * 16
    }

    /// Pages the pool holds now, without taking any lock (the kernel's
    /// `zs_get_total_pages`).
    pub fn pages_allocated(&self) -> usize {
        self.arena.pages_in_use()
    }

    /// Pages the arena can still hand out.
    pub fn free_pages(&self) -> usize {
        self.arena.capacity_pages() - self.arena.pages_in_use()
    }
}

fn check_size(size: usize) -> Result<(), Error> {
    if size == 0 || size > ZS_MAX_ALLOC_SIZE {
        return Err(Error::InvalidSize(size));
    }
    Ok(())
}

fn check_len(len: usize, capacity: usize) -> Result<(), Error> {
    if len > capacity {
        return Err(Error::TooLong { len, capacity });
    }
    Ok(())
}
