//! Regions: memory carved from the arena, registered with the runtime's
//! userfaultfd, paged by the protocol. Also the pins a system call takes on
//! region pages.

use crate::arena;
use crate::pager::Pager;
use crate::protocol::{self, Pin, ProgramDiscard, Release, PAGE};
use crate::runtime::Runtime;
use crate::RuntimeError;
use std::sync::Arc;
use userfaultfd::RegisterMode;

impl Runtime {
    /// A new region of at least `len` bytes (rounded up to the arena's
    /// 64 KiB grain), zero filled, paged through uzswap.
    pub fn alloc(&self, len: usize) -> Result<Region, RuntimeError> {
        self.alloc_with_room(len, len)
    }

    /// [`Runtime::alloc`], with `room` bytes of address room reserved
    /// behind the region's start (at least `len`): [`Runtime::grow`] takes
    /// the region up to `room` in place, whatever is carved meanwhile.
    pub fn alloc_with_room(&self, len: usize, room: usize) -> Result<Region, RuntimeError> {
        let bytes = len.max(1).div_ceil(arena::GRAIN) * arena::GRAIN;
        let room = room.max(bytes).div_ceil(arena::GRAIN) * arena::GRAIN;
        let arena = arena::global()?;
        let base = arena.carve_with_room(bytes, room)?;
        let id = self.inner.lock().add_region(base, bytes / PAGE);
        if let Err(e) = self.register(base, bytes) {
            self.inner.lock().regions.remove(&base);
            // SAFETY: the room was carved above and nothing uses it.
            unsafe { arena.give_back(base, room) };
            return Err(e);
        }
        self.inner.record_region(base, bytes);
        Ok(Region {
            inner: self.inner.clone(),
            base,
            len: bytes,
            room,
            id,
            committed: false,
        })
    }

    /// A region over `[addr, addr + len)` (page aligned) of address room
    /// the caller reserved ([`arena::Arena::reserve_room`]): the range is
    /// mapped read-write afresh (zeros: what was there is gone, as after
    /// `mmap(MAP_FIXED)`) and paged through uzswap. The room stays the
    /// caller's: dropping the region maps it `PROT_NONE` again
    /// ([`arena::Arena::decommit`]), and [`Region::into_plain`] leaves it
    /// mapped.
    pub fn commit(&self, addr: usize, len: usize) -> Result<Region, RuntimeError> {
        let arena = arena::global()?;
        check_committable(arena, addr, len)?;
        // The state knows the region first: never two over one page.
        let id = {
            let mut st = self.inner.lock();
            if st.overlaps_region(addr, len) {
                return Err(overlap(addr, len));
            }
            st.add_region(addr, len / PAGE)
        };
        // SAFETY: the caller's reserved room (checked inside the arena, and
        // no region's); whatever was mapped there is replaced, as the
        // caller asked.
        if let Err(e) = unsafe { arena.map_behind(addr, len) } {
            self.inner.lock().regions.remove(&addr);
            return Err(e.into());
        }
        if let Err(e) = self.register(addr, len) {
            self.inner.lock().regions.remove(&addr);
            // SAFETY: mapped just above, never registered nor used.
            let _ = unsafe { arena.decommit(addr, len) };
            return Err(e);
        }
        self.inner.record_region(addr, len);
        Ok(Region {
            inner: self.inner.clone(),
            base: addr,
            len,
            room: len,
            id,
            committed: true,
        })
    }

    /// Commits `[end, end + extra)` right behind a [`Runtime::commit`]
    /// region (page aligned, the caller's reserved room) into it: one
    /// region grows by page-sized steps, as a heap grown with
    /// `mprotect` does, rather than one registration per step.
    pub fn commit_behind(&self, region: &mut Region, extra: usize) -> Result<(), RuntimeError> {
        if !region.committed {
            return Err(RuntimeError::Config(
                "commit_behind on a region that is not a commit".into(),
            ));
        }
        let arena = arena::global()?;
        let end = region.base + region.len;
        check_committable(arena, end, extra)?;
        // The state knows the pages before the range is mapped and
        // registered (as in `grow`), and never two regions over one page.
        let old_pages = region.len / PAGE;
        {
            let mut st = self.inner.lock();
            if st.overlaps_region(end, extra) {
                return Err(overlap(end, extra));
            }
            if let Some(r) = st.region(region.base, region.id) {
                r.pages
                    .resize(old_pages + extra / PAGE, protocol::Page::UNTOUCHED);
            }
        }
        // SAFETY: the caller's reserved room right behind its region, no
        // other region's.
        if let Err(e) = unsafe { arena.map_behind(end, extra) } {
            self.resize_pages(region, old_pages);
            return Err(e.into());
        }
        if let Err(e) = self.register(end, extra) {
            self.resize_pages(region, old_pages);
            // SAFETY: mapped just above, never registered nor used.
            let _ = unsafe { arena.decommit(end, extra) };
            return Err(e);
        }
        region.len += extra;
        region.room = region.len;
        self.inner.record_resize(region.base, region.len);
        Ok(())
    }

    /// Sets the number of pages the state has for `region` (new ones are
    /// untouched).
    fn resize_pages(&self, region: &Region, pages: usize) {
        let mut st = self.inner.lock();
        let Some(r) = st.region(region.base, region.id) else {
            return;
        };
        r.pages.resize(pages, protocol::Page::UNTOUCHED);
    }

    fn register(&self, addr: usize, len: usize) -> Result<(), RuntimeError> {
        self.inner
            .env
            .live()
            .uffd
            .register_with_mode(
                addr as *mut libc::c_void,
                len,
                RegisterMode::MISSING | RegisterMode::WRITE_PROTECT,
            )
            .map(drop)
            .map_err(|e| RuntimeError::Uffd(format!("registering a region: {e}")))
    }

    /// Grows `region` in place to at least `len` bytes: into its reserved
    /// room, or into free arena room right behind it. Its pages stay where
    /// they are (resident, or in the store), and the new ones are
    /// untouched (zeros). `Ok(false)` if the room behind is taken: the
    /// region is unchanged. A region never shrinks here.
    pub fn grow(&self, region: &mut Region, len: usize) -> Result<bool, RuntimeError> {
        let bytes = len.div_ceil(arena::GRAIN) * arena::GRAIN;
        if bytes <= region.len {
            return Ok(true);
        }
        if region.committed {
            return Ok(false); // its room is the caller's: `commit_behind`
        }
        let arena = arena::global()?;
        let end = region.base + region.len;
        let extra = bytes - region.len;
        if bytes <= region.room {
            // SAFETY: `[end, end + extra)` is the region's own reserved,
            // unmapped room.
            unsafe { arena.map_behind(end, extra)? };
        } else {
            let room_end = region.base + region.room;
            if !arena.carve_at(room_end, bytes - region.room)? {
                return Ok(false);
            }
            if region.room > region.len {
                // SAFETY: the region's own reserved room, unmapped.
                if let Err(e) = unsafe { arena.map_behind(end, region.room - region.len) } {
                    // SAFETY: carved just above, unused.
                    unsafe { arena.give_back(room_end, bytes - region.room) };
                    return Err(e.into());
                }
            }
            region.room = bytes;
        }
        // The state knows the pages before the range is registered: the
        // first fault there can only come after, and finds its page.
        let old_pages = region.len / PAGE;
        self.resize_pages(region, bytes / PAGE);
        if let Err(e) = self.register(end, extra) {
            self.resize_pages(region, old_pages);
            return Err(e);
        }
        region.len = bytes;
        self.inner.record_resize(region.base, region.len);
        Ok(true)
    }

    /// Pins the region pages of `[addr, addr + len)` for a system call:
    /// until the guard drops they are not evicted and not write-protected
    /// by aging. Waits for operations in flight on them, then faults them
    /// in (writable if `write`: the call will write them).
    pub fn pin(&self, addr: usize, len: usize, write: bool) -> PinGuard<'_> {
        let (addr, len) = self.pin_for_syscall(addr, len, write);
        PinGuard {
            inner: &self.inner,
            addr,
            len,
        }
    }

    /// [`Runtime::pin`] without a guard: returns the page-aligned range
    /// pinned, for [`Runtime::unpin`] (the syscall guard's `Pinner`).
    /// Allocates nothing: it runs in a signal handler.
    pub fn pin_for_syscall(&self, addr: usize, len: usize, write: bool) -> (usize, usize) {
        let start = addr & !(PAGE - 1);
        let end = addr.saturating_add(len).div_ceil(PAGE) * PAGE;
        if len == 0 {
            return (start, 0);
        }
        let mut op = Pin::new(start, end - start);
        self.inner.drive(|cx| op.step(cx));
        for &(a, l) in op.ranges() {
            self.inner.fault_in(a, l, write);
            touch(a, l, write);
        }
        if op.overflow {
            // More regions than the op recorded: find each page's region.
            for a in (start..end).step_by(PAGE) {
                if self.inner.lock().locate(a).is_some() {
                    touch(a, PAGE, write);
                }
            }
        }
        (start, end - start)
    }

    /// Ends a pin (or several adjacent ones) made by
    /// [`Runtime::pin_for_syscall`].
    pub fn unpin(&self, addr: usize, len: usize) {
        let mut st = self.inner.lock();
        protocol::unpin(&mut st, addr, len);
        st.changed(&self.inner.changed);
    }

    /// The program's `madvise(MADV_DONTNEED)` (or `MADV_FREE`) of the
    /// region pages of `[addr, addr + len)` (`addr` page-aligned): they
    /// read as zeros from now on, their slots are freed, and the regions
    /// stay paged ([`ProgramDiscard`]).
    pub fn discard(&self, addr: usize, len: usize) {
        // The operation takes every page the range touches.
        let mut op = ProgramDiscard::new(addr, len);
        self.inner.drive(|cx| op.step(cx));
        self.inner.record(trace::Event::Discard {
            addr: addr as u64,
            pages: len.div_ceil(PAGE) as u32,
        });
    }
}

fn overlap(addr: usize, len: usize) -> RuntimeError {
    RuntimeError::Config(format!(
        "cannot commit {len} bytes at {addr:#x}: a region is there already"
    ))
}

/// A range [`Runtime::commit`] may map: page aligned, not empty, inside the
/// arena past its guard grain.
fn check_committable(arena: &arena::Arena, addr: usize, len: usize) -> Result<(), RuntimeError> {
    let r = arena.range();
    let inside =
        addr >= r.start + arena::GRAIN && addr.checked_add(len).is_some_and(|e| e <= r.end);
    if len == 0 || !addr.is_multiple_of(PAGE) || !len.is_multiple_of(PAGE) || !inside {
        return Err(RuntimeError::Config(format!(
            "cannot commit {len} bytes at {addr:#x}: not page-aligned reserved arena room"
        )));
    }
    Ok(())
}

/// Faults in `[addr, addr + len)` of a region: reads each page, or, for a
/// system call that will write, writes its first byte with the value it
/// holds by a compare-exchange (tried until it succeeds: a real write,
/// which no compiler may drop — an unused `fetch_add(0)` may become a load
/// and vanish — and which never undoes a concurrent write of the program).
fn touch(addr: usize, len: usize, write: bool) {
    use std::sync::atomic::{AtomicU8, Ordering};
    for a in (addr..addr + len).step_by(PAGE) {
        if write {
            // SAFETY: a page of a live region, pinned: read-write memory of
            // ours (faulted in by this access); accessed atomically.
            let byte = unsafe { &*(a as *const AtomicU8) };
            loop {
                let v = byte.load(Ordering::Relaxed);
                if byte
                    .compare_exchange(v, v, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    break;
                }
            }
        } else {
            // SAFETY: as above; a volatile read is never dropped.
            unsafe { std::ptr::read_volatile(a as *const u8) };
        }
    }
}

/// Region pages pinned for a system call ([`Runtime::pin`]).
pub struct PinGuard<'a> {
    inner: &'a Pager,
    addr: usize,
    len: usize,
}

impl std::fmt::Debug for PinGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinGuard")
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("len", &self.len)
            .finish()
    }
}

impl Drop for PinGuard<'_> {
    fn drop(&mut self) {
        let mut st = self.inner.lock();
        protocol::unpin(&mut st, self.addr, self.len);
        st.changed(&self.inner.changed);
    }
}

/// Memory paged through uzswap. Use it through [`Region::as_ptr`] (or
/// [`Region::as_mut_slice`]) like any other memory; faults are served by
/// the runtime's handler thread.
pub struct Region {
    inner: Arc<Pager>,
    base: usize,
    len: usize,
    /// Address room held from `base` (at least `len`; the rest is
    /// reserved, unmapped, for [`Runtime::grow`]).
    room: usize,
    id: u64,
    /// Made by [`Runtime::commit`]: its room belongs to the caller's
    /// reservation, not to the region.
    committed: bool,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("base", &format_args!("{:#x}", self.base))
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: the region is plain memory; the runtime's state about it is
// behind the state lock, and the mapping lives until the region is dropped.
unsafe impl Send for Region {}
// SAFETY: as above; concurrent access to the bytes is the caller's affair,
// as for any shared memory.
unsafe impl Sync for Region {}

impl Region {
    pub fn as_ptr(&self) -> *mut u8 {
        self.base as *mut u8
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's bytes.
    ///
    /// # Safety
    /// The caller must not create overlapping references to the same bytes
    /// from several threads, as for any raw memory.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, alive while `self` is; the
        // caller upholds the aliasing rule.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr(), self.len) }
    }

    /// Hands the region over as plain memory: every swapped page is brought
    /// back, the range is unregistered from userfaultfd and forgotten by the
    /// runtime, and the mapping stays. Returns `(address, length)`; the
    /// caller owns the mapping from now on (and `munmap`s it).
    pub fn into_plain(self) -> (usize, usize) {
        let (base, len, room) = (self.base, self.len, self.room);
        self.inner.release(base, self.id, true);
        if room > len && !self.committed {
            if let Ok(arena) = arena::global() {
                // SAFETY: the reserved room behind the region: never
                // registered nor handed to the program, so nothing uses it.
                unsafe { arena.give_back(base + len, room - len) };
            }
        }
        std::mem::forget(self);
        (base, len)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.inner.release(self.base, self.id, false);
        let Ok(arena) = arena::global() else {
            return;
        };
        if self.committed {
            // SAFETY: the caller's reserved room, forgotten and
            // unregistered: its pages go, the room stays the caller's. If
            // the mapping cannot be changed (out of mappings), the pages
            // stay mapped, unregistered: plain memory, nothing lost.
            let _ = unsafe { arena.decommit(self.base, self.len) };
        } else {
            // SAFETY: the region owned this room; it is forgotten and
            // unregistered, and nothing of ours touches it any more.
            unsafe { arena.give_back(self.base, self.room) };
        }
    }
}

impl Pager {
    /// Ends the region at `base`: waits for its operations in flight,
    /// forgets it (after swapping every page back in if `plain`), and
    /// unregisters it.
    pub(crate) fn release(&self, base: usize, id: u64, plain: bool) {
        let len = match self.lock().region(base, id) {
            Some(r) => r.len_bytes(),
            None => return, // released already (the runtime went first)
        };
        let mut op = if plain {
            Release::into_plain(base, id)
        } else {
            Release::drop_region(base, id)
        };
        self.drive(|cx| op.step(cx));
        // Forgotten first, then unregistered: a fault queued meanwhile finds
        // no region and is left to the unregistering, which wakes it.
        if let Err(e) = self
            .env
            .live()
            .uffd
            .unregister(base as *mut libc::c_void, len)
        {
            crate::fatal::die(&format!("unregistering region {base:#x}: {e}"));
        }
        self.record(trace::Event::Unmap { addr: base as u64 });
    }

    fn record_region(&self, base: usize, len: usize) {
        self.record(trace::Event::Map {
            addr: base as u64,
            pages: (len / PAGE) as u32,
        });
    }

    fn record_resize(&self, base: usize, len: usize) {
        self.record(trace::Event::Resize {
            addr: base as u64,
            pages: (len / PAGE) as u32,
        });
    }

    /// Swaps every page of every live region back in and unregisters the
    /// regions: from then on they are ordinary memory.
    pub(crate) fn release_all_regions(&self) {
        self.release_all_regions_with(&mut || {});
    }

    /// [`Pager::release_all_regions`], calling `after_each` once each
    /// region is plain (progress, for whoever waits on it).
    pub(crate) fn release_all_regions_with(&self, after_each: &mut dyn FnMut()) {
        let regions: Vec<(usize, u64)> = self
            .lock()
            .regions
            .iter()
            .map(|(&b, r)| (b, r.id))
            .collect();
        for (base, id) in regions {
            self.release(base, id, true);
            after_each();
        }
    }
}
