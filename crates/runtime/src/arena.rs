//! The virtual-address arena every region is carved from.
//!
//! At first use the process reserves one large range (1 TiB, aligned to its
//! size, `PROT_NONE` and `MAP_NORESERVE`: no memory, no page tables) at an
//! address other allocators do not use, and every region of every runtime
//! in the process is mapped inside it. One range makes "is this region
//! memory?" a compare, which the syscall guard's seccomp filter relies on,
//! and leaves room behind a region to grow it in place.
//!
//! The arena's first 64 KiB are never handed out, so no valid buffer can
//! start below the arena and run into it. A dropped region's room returns
//! to the reservation at once: it is mapped `PROT_NONE` again over the old
//! pages (their memory goes back to the OS then) and can be carved again.
//! Room handed to the program as plain memory (`Region::into_plain`) leaves
//! the arena for good: the program owns that mapping, and when it unmaps
//! it the hole is not reserved again ([`Arena::reclaim_unmapped`] would,
//! but nothing calls it yet). So does room the program maps over itself
//! with `MAP_FIXED` ([`Arena::withdraw`]): no region is carved over it.
//! [`Arena::reserve_room`] hands room to a program's `PROT_NONE`
//! reservation, whose commits are regions ([`crate::Runtime::commit`]).

use crate::sys;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Sizes tried for the reservation, largest first (an `RLIMIT_AS` or a
/// small address space may refuse the larger ones).
const SIZES: [usize; 4] = [1 << 40, 1 << 38, 1 << 36, 1 << 34];
/// Where to put it: 62 TiB, between the heap growing up from the program
/// and the mappings growing down from the stack.
const HINT: usize = 0x3e00_0000_0000;
/// Regions start on this boundary; the first one is the guard.
pub const GRAIN: usize = 64 << 10;

/// Why the arena could not be made or used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ArenaError {
    #[error("cannot reserve address space for regions: {0}")]
    Reserve(String),
    #[error("the region arena is full ({0} bytes asked)")]
    Full(usize),
    #[error("mapping {len} bytes at {addr:#x} failed: {error}")]
    Map {
        addr: usize,
        len: usize,
        error: String,
    },
}

/// The arena: its range and its free address room.
#[derive(Debug)]
pub struct Arena {
    lo: usize,
    hi: usize,
    free: Mutex<FreeRoom>,
}

/// Free address room, by start and by size (best fit).
#[derive(Debug, Default)]
struct FreeRoom {
    by_start: BTreeMap<usize, usize>,
    by_size: BTreeSet<(usize, usize)>,
}

impl FreeRoom {
    fn insert(&mut self, mut start: usize, mut len: usize) {
        // Coalesce with the neighbours on both sides.
        if let Some((&s, &l)) = self.by_start.range(..start).next_back() {
            if s + l == start {
                self.remove(s, l);
                start = s;
                len += l;
            }
        }
        if let Some(&l) = self.by_start.get(&(start + len)) {
            self.remove(start + len, l);
            len += l;
        }
        self.by_start.insert(start, len);
        self.by_size.insert((len, start));
    }

    fn remove(&mut self, start: usize, len: usize) {
        self.by_start.remove(&start);
        self.by_size.remove(&(len, start));
    }

    /// The smallest free room of at least `len` bytes; taken.
    fn take(&mut self, len: usize) -> Option<usize> {
        let &(l, s) = self.by_size.range((len, 0)..).next()?;
        self.remove(s, l);
        if l > len {
            self.insert(s + len, l - len);
        }
        Some(s)
    }

    /// Takes `[start, start + len)` if it is all free.
    fn take_at(&mut self, start: usize, len: usize) -> bool {
        let Some((&s, &l)) = self.by_start.range(..=start).next_back() else {
            return false;
        };
        if s + l < start + len {
            return false;
        }
        self.remove(s, l);
        if s < start {
            self.insert(s, start - s);
        }
        if s + l > start + len {
            self.insert(start + len, s + l - start - len);
        }
        true
    }
}

impl FreeRoom {
    /// Takes every free byte of `[lo, hi)` out; how many there were.
    fn take_within(&mut self, lo: usize, hi: usize) -> usize {
        let first = self
            .by_start
            .range(..lo)
            .next_back()
            .filter(|(&s, &l)| s + l > lo)
            .map(|(&s, _)| s);
        let starts: Vec<usize> = first
            .into_iter()
            .chain(self.by_start.range(lo..hi).map(|(&s, _)| s))
            .collect();
        let mut taken = 0;
        for s in starts {
            let l = self.by_start[&s];
            let (a, b) = (s.max(lo), (s + l).min(hi));
            self.remove(s, l);
            if s < a {
                self.insert(s, a - s);
            }
            if s + l > b {
                self.insert(b, s + l - b);
            }
            taken += b - a;
        }
        taken
    }
}

/// The arena's lock, held across a fork.
pub(crate) struct ForkGuard(#[allow(dead_code)] MutexGuard<'static, FreeRoom>);

static ARENA: OnceLock<Result<Arena, ArenaError>> = OnceLock::new();

/// The process's arena, reserved on first use.
pub fn global() -> Result<&'static Arena, ArenaError> {
    ARENA
        .get_or_init(Arena::reserve)
        .as_ref()
        .map_err(Clone::clone)
}

/// The arena's range if it has been reserved (never reserves it).
pub fn range_if_reserved() -> Option<Range<usize>> {
    match ARENA.get() {
        Some(Ok(a)) => Some(a.range()),
        _ => None,
    }
}

impl Arena {
    fn reserve() -> Result<Self, ArenaError> {
        let mut last = String::new();
        for size in SIZES {
            // The hint first, then anywhere (aligned by over-reserving).
            for hint in [HINT, 0] {
                match Self::try_reserve(hint, size) {
                    Ok(lo) => {
                        let arena = Arena {
                            lo,
                            hi: lo + size,
                            free: Mutex::new(FreeRoom::default()),
                        };
                        arena.room().insert(lo + GRAIN, size - GRAIN);
                        return Ok(arena);
                    }
                    Err(e) => last = e,
                }
            }
        }
        Err(ArenaError::Reserve(last))
    }

    /// Reserves `size` bytes aligned to `size`, at `hint` if not 0.
    fn try_reserve(hint: usize, size: usize) -> Result<usize, String> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
        if hint != 0 {
            // SAFETY: NOREPLACE never replaces an existing mapping.
            let r = unsafe {
                sys::mmap(
                    hint,
                    size,
                    libc::PROT_NONE,
                    flags | libc::MAP_FIXED_NOREPLACE,
                )
            };
            return match r {
                Ok(a) if a == hint => Ok(a),
                Ok(a) => {
                    // An old kernel ignored NOREPLACE and put it elsewhere.
                    // SAFETY: our own fresh mapping.
                    let _ = unsafe { sys::munmap(a, size) };
                    Err(format!("{hint:#x} is taken"))
                }
                Err(e) => Err(format!("{size} bytes at {hint:#x}: {e}")),
            };
        }
        // SAFETY: a fresh PROT_NONE mapping wherever the kernel likes.
        let a = unsafe { sys::mmap(0, 2 * size, libc::PROT_NONE, flags) }
            .map_err(|e| format!("{} bytes: {e}", 2 * size))?;
        let lo = (a + size - 1) & !(size - 1);
        // SAFETY: trimming our own fresh mapping to the aligned part.
        unsafe {
            if lo > a {
                let _ = sys::munmap(a, lo - a);
            }
            let _ = sys::munmap(lo + size, a + 2 * size - (lo + size));
        }
        Ok(lo)
    }

    fn room(&self) -> MutexGuard<'_, FreeRoom> {
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds the arena's lock across a fork, so that the child's copy of
    /// the free room is not caught half changed.
    pub(crate) fn fork_guard(&'static self) -> ForkGuard {
        ForkGuard(self.room())
    }

    pub fn range(&self) -> Range<usize> {
        self.lo..self.hi
    }

    pub fn contains(&self, addr: usize) -> bool {
        (self.lo..self.hi).contains(&addr)
    }

    /// Maps `len` bytes (a multiple of [`GRAIN`]) of fresh read-write
    /// anonymous memory in the arena; returns its address.
    pub fn carve(&self, len: usize) -> Result<usize, ArenaError> {
        let len = len.div_ceil(GRAIN) * GRAIN;
        let addr = self.room().take(len).ok_or(ArenaError::Full(len))?;
        if let Err(e) = Self::map_rw(addr, len) {
            self.room().insert(addr, len);
            return Err(e);
        }
        Ok(addr)
    }

    /// Takes `room` bytes of address room and maps the first `len` of them
    /// read-write; the rest stays reserved (`PROT_NONE`) for the caller to
    /// grow into with [`Arena::map_behind`]. Returns the address.
    pub fn carve_with_room(&self, len: usize, room: usize) -> Result<usize, ArenaError> {
        let len = len.div_ceil(GRAIN) * GRAIN;
        let room = room.max(len).div_ceil(GRAIN) * GRAIN;
        let addr = self.room().take(room).ok_or(ArenaError::Full(room))?;
        if let Err(e) = Self::map_rw(addr, len) {
            self.room().insert(addr, room);
            return Err(e);
        }
        Ok(addr)
    }

    /// Maps `[addr, addr + len)` read-write inside room the caller already
    /// holds (from [`Arena::carve_with_room`]).
    ///
    /// # Safety
    /// The range is the caller's reserved, unmapped room.
    pub unsafe fn map_behind(&self, addr: usize, len: usize) -> Result<(), ArenaError> {
        Self::map_rw(addr, len)
    }

    /// Maps `[addr, addr + len)` read-write if that room is free (to grow a
    /// region in place); `false` if it is not.
    pub fn carve_at(&self, addr: usize, len: usize) -> Result<bool, ArenaError> {
        if !self.room().take_at(addr, len) {
            return Ok(false);
        }
        if let Err(e) = Self::map_rw(addr, len) {
            self.room().insert(addr, len);
            return Err(e);
        }
        Ok(true)
    }

    fn map_rw(addr: usize, len: usize) -> Result<(), ArenaError> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED;
        // SAFETY: `[addr, addr + len)` is free arena room: our own
        // reservation, which nothing else uses.
        unsafe { sys::mmap(addr, len, libc::PROT_READ | libc::PROT_WRITE, flags) }
            .map(drop)
            .map_err(|e| ArenaError::Map {
                addr,
                len,
                error: e.to_string(),
            })
    }

    /// Takes `len` bytes (rounded up to [`GRAIN`]) of address room and
    /// leaves it reserved (`PROT_NONE`, as all free room is): the caller's
    /// reservation, parts of which it commits with [`Arena::map_behind`]
    /// and decommits with [`Arena::decommit`]. Returns its address.
    pub fn reserve_room(&self, len: usize) -> Result<usize, ArenaError> {
        let len = len.max(1).div_ceil(GRAIN) * GRAIN;
        self.room().take(len).ok_or(ArenaError::Full(len))
    }

    /// Maps `[addr, addr + len)` (page aligned) `PROT_NONE` again, dropping
    /// its pages, and keeps it out of the free room: it stays the caller's
    /// reservation.
    ///
    /// # Safety
    /// The range is room the caller holds (from [`Arena::reserve_room`])
    /// and nothing uses its pages any more.
    pub unsafe fn decommit(&self, addr: usize, len: usize) -> Result<(), ArenaError> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED;
        // SAFETY: the caller's guarantee: the range is its own room.
        unsafe { sys::mmap(addr, len, libc::PROT_NONE, flags) }
            .map(drop)
            .map_err(|e| ArenaError::Map {
                addr,
                len,
                error: e.to_string(),
            })
    }

    /// Returns a region's room to the reservation: its pages are dropped
    /// and the room can be carved again.
    ///
    /// # Safety
    /// `[addr, addr + len)` was carved from this arena and nothing uses it
    /// any more.
    pub unsafe fn give_back(&self, addr: usize, len: usize) {
        let len = len.div_ceil(GRAIN) * GRAIN;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED;
        // SAFETY: the caller's guarantee: the range is ours and unused.
        // If it cannot be re-reserved (out of mappings), the room stays out
        // of use rather than be handed out while we do not hold it.
        if unsafe { sys::mmap(addr, len, libc::PROT_NONE, flags) }.is_ok() {
            self.room().insert(addr, len);
        }
    }

    /// The program maps `[addr, addr + len)` itself (`MAP_FIXED`, or
    /// `MAP_FIXED_NOREPLACE` where it finds room free): the free room
    /// there (whole grains, rounded outward) leaves the arena for good, so
    /// that no region is ever carved over the program's mapping. True if
    /// the whole range was free room.
    pub fn withdraw(&self, addr: usize, len: usize) -> bool {
        let lo = addr / GRAIN * GRAIN;
        let hi = addr.saturating_add(len).div_ceil(GRAIN) * GRAIN;
        let mut room = self.room();
        let inner = room.take_within(addr, addr.saturating_add(len));
        room.take_within(lo, hi);
        inner == len
    }

    /// Room handed to the program as plain memory that it unmapped:
    /// reserve it again (if nothing took it meanwhile) and free it.
    pub fn reclaim_unmapped(&self, addr: usize, len: usize) {
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | libc::MAP_NORESERVE
            | libc::MAP_FIXED_NOREPLACE;
        // SAFETY: NOREPLACE maps only where nothing is mapped.
        if let Ok(a) = unsafe { sys::mmap(addr, len, libc::PROT_NONE, flags) } {
            if a == addr {
                self.room().insert(addr, len);
            }
        }
    }

    /// Free bytes of address room (for tests).
    pub fn free_bytes(&self) -> usize {
        self.room().by_start.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_room_coalesces_and_fits_best() {
        let mut f = FreeRoom::default();
        f.insert(0, 100);
        assert_eq!(f.take(30), Some(0));
        assert_eq!(f.take(30), Some(30));
        f.insert(0, 30);
        assert_eq!(f.by_start.len(), 2, "not adjacent to 60..100");
        f.insert(30, 30);
        assert_eq!(f.by_start.len(), 1, "0..100 whole again");
        assert_eq!(f.by_start[&0], 100);
        assert!(f.take_at(40, 20));
        assert!(!f.take_at(50, 20), "50..60 is taken");
        assert_eq!(f.take(41), None, "free: 0..40 and 60..100");
        assert_eq!(f.take(40), Some(0));
        assert_eq!(f.take(40), Some(60));
        assert_eq!(f.take(1), None);
    }

    #[test]
    fn room_taken_within_a_range_is_only_the_free_part() {
        let mut f = FreeRoom::default();
        f.insert(0, 100);
        assert!(f.take_at(40, 20));
        assert_eq!(f.take_within(30, 70), 20, "30..40 and 60..70 were free");
        assert_eq!(f.take_within(30, 70), 0);
        let free: Vec<(usize, usize)> = f.by_start.iter().map(|(&s, &l)| (s, l)).collect();
        assert_eq!(free, vec![(0, 30), (70, 30)]);
        assert_eq!(f.by_size.len(), 2, "both indexes agree");
        assert_eq!(f.take_within(0, 100), 60);
        assert!(f.by_start.is_empty() && f.by_size.is_empty());
    }

    #[test]
    fn regions_are_carved_inside_and_room_comes_back() {
        // A private arena: the global one is shared with other tests.
        let a = Arena::reserve().unwrap();
        let r = a.range();
        assert_eq!(r.start % (r.end - r.start), 0, "aligned to its size");
        let before = a.free_bytes();
        let p = a.carve(3 * GRAIN).unwrap();
        assert!(
            a.contains(p) && p >= r.start + GRAIN,
            "the guard is never used"
        );
        assert!(a.carve_at(p + 3 * GRAIN, GRAIN).unwrap(), "room behind it");
        assert!(!a.carve_at(p, GRAIN).unwrap(), "taken");
        // SAFETY: fresh read-write mappings of 4 grains in all.
        unsafe {
            std::ptr::write_bytes(p as *mut u8, 7, 4 * GRAIN);
            a.give_back(p, 4 * GRAIN);
        }
        assert_eq!(a.free_bytes(), before);
        // SAFETY: the private reservation, unused now.
        unsafe { sys::munmap(r.start, r.end - r.start).unwrap() };
    }
}
