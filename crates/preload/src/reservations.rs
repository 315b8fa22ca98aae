//! The program's `PROT_NONE` reservations (the JVM's and V8's heaps):
//! address room taken from the arena, the parts the program commits
//! (`mmap(MAP_FIXED)`, `mprotect`) made regions, the parts it maps or
//! protects any other way tainted, and its unmaps given back.

use crate::gate::{enter, force_busy};
use crate::preload::{
    in_bounds, started, Entry, Kind, Preload, Tables, HI, LO, MIN_ALLOC, SETTINGS,
};
use crate::regions::release_overlapping;
use crate::start::get_or_start;
use crate::syscall_guard::guard_ready;
use runtime::reservation::Reservations;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

use common::PAGE_SIZE;

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
