//! The regions handed to the program: a large allocation or anonymous
//! mapping served from a region, the small-object heap's region, and
//! what the hooks ask of them (is this pointer ours, how large, grow it,
//! free it, drop or release what a call touches).

use crate::gate::{enter, force_busy};
use crate::preload::{in_bounds, started, Entry, Kind, Preload, HI, LO, MIN_ALLOC};
use crate::start::get_or_start;
use crate::syscall_guard::guard_ready;
use runtime::Region;
use std::sync::atomic::Ordering;

use common::PAGE_SIZE;

/// A region for `size` bytes aligned to `align` (a power of two), or `None`
/// to leave the request to glibc.
#[inline]
pub fn alloc(size: usize, align: usize, kind: Kind) -> Option<usize> {
    alloc_with_room(size, align, kind, 0)
}

/// Address room a buffer that `realloc` moved keeps behind it, as a
/// multiple of its size: it grows in place up to 4x before it may have to
/// move again (address room is free: nothing is mapped there).
pub const REALLOC_ROOM: usize = 4;

/// [`alloc`], with `room` bytes of address room reserved from the region's
/// start (for [`grow`]).
#[inline]
pub fn alloc_with_room(size: usize, align: usize, kind: Kind, room: usize) -> Option<usize> {
    // Most allocations are small: decided here, without a call.
    if size < MIN_ALLOC.load(Ordering::Relaxed) {
        return None;
    }
    alloc_region(size, align, kind, room)
}

/// [`alloc_with_room`] for a size of `--min-alloc` or more.
fn alloc_region(size: usize, align: usize, kind: Kind, room: usize) -> Option<usize> {
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
#[inline]
pub fn free(ptr: usize) -> Freed {
    // Most frees are the program allocator's: decided here.
    if !in_bounds(ptr, 1) {
        return Freed::NotOurs;
    }
    free_in_bounds(ptr)
}

fn free_in_bounds(ptr: usize) -> Freed {
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
