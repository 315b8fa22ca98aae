//! The small-object heap (`--small-objects`): allocations below
//! `--min-alloc` served by mimalloc from one growing region, so that the
//! data of programs made of small objects (sqlite's page cache, redis's
//! dataset, an interpreter's objects) is paged like a large buffer.
//!
//! ## Design
//!
//! * One region, carved with 64 GiB of address room behind it
//!   ([`crate::regions::small_heap_region`]). mimalloc (v2, linked in,
//!   its symbols local to this library) manages it as arenas
//!   (`mi_manage_os_memory`): the first 64 MiB at start, then chunks that
//!   double up to 1 GiB, each added when mimalloc reports the arenas
//!   full (a null return) by growing the region in place.
//! * mimalloc never takes memory of its own from the OS for objects
//!   (`disallow_os_alloc`, no arena reservation), never purges
//!   (`purge_delay = -1`: freed pages stay, and reclaim compresses them
//!   like any other), and prints nothing.
//! * A pointer is the heap's if it lies in its address room: `free`,
//!   `realloc` and `malloc_usable_size` test that first, so no pointer of
//!   the heap ever reaches glibc (or the program's own allocator) and no
//!   other pointer reaches mimalloc.
//! * When the heap cannot serve (off, not started, a runtime thread, a
//!   nested call, full), the request goes to glibc as before.
//! * By default the heap waits (`UZSWAP_SMALL_OBJECTS=4M`): small blocks
//!   are the program's allocator's until it holds that many bytes of them,
//!   then every later one is the heap's. The hooks count the small blocks
//!   the process's threads take from and give back to that allocator
//!   (usable sizes, [`note_next_alloc`] and [`note_next_free`]), one block
//!   in [`SAMPLE`] chosen by its address and counted [`SAMPLE`] times (a
//!   call outside the sample costs a multiplication), in a per-thread
//!   count added to the total every [`FLUSH_BYTES`]. Once on, the heap
//!   stays on and the counting stops. So a program with few small objects
//!   runs as without uzswap, and one made of them is bounded by the limit
//!   plus about the threshold (plus at most [`FLUSH_BYTES`] a thread).
//!
//! ## Invariants
//!
//! 1. Every pointer mimalloc returns lies in `[LO, HI)`: its arenas are the
//!    region's parts, and nothing else (checked; a pointer outside ends
//!    the program, since no allocator could free it).
//! 2. mimalloc runs with the thread busy ([`gate::enter`]): its own
//!    `mmap`s (arena bitmaps, thread data) pass straight to the kernel.
//!
//! ## Lock order
//!
//! `GROW` → region table → runtime state lock.

use crate::gate;
use crate::next_alloc as next;
use crate::preload;
use crate::regions;
use launch::SmallObjects;
use libc::c_void;
use libmimalloc_sys as mi;
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// mimalloc v2's segment: its arenas are made of these, aligned to them.
const SEGMENT: usize = 32 << 20;
/// Address room of the heap (nothing is mapped there until it grows).
const ROOM: usize = 64 << 30;
const FIRST_CHUNK: usize = 2 * SEGMENT;
const MAX_CHUNK: usize = 1 << 30;
/// Alignments mimalloc serves here; larger ones go to glibc.
const MAX_ALIGN: usize = 64 << 10;

// mimalloc v2's option numbers (`mi_option_t`, include/mimalloc.h).
const OPT_SHOW_ERRORS: mi::mi_option_t = 0;
const OPT_PURGE_DECOMMITS: mi::mi_option_t = 5;
const OPT_PURGE_DELAY: mi::mi_option_t = 15;
const OPT_DISALLOW_OS_ALLOC: mi::mi_option_t = 17;
const OPT_MAX_WARNINGS: mi::mi_option_t = 20;
const OPT_ARENA_RESERVE: mi::mi_option_t = 23;

const OFF: u8 = 0;
const READY: u8 = 1;
const ON: u8 = 2;
const FAILED: u8 = 3;
/// Waiting for the program's allocator to hold [`AFTER`] bytes; then
/// [`READY`].
const WAITING: u8 = 4;

/// Bytes of small blocks the program's allocator may hold before the heap
/// starts ([`WAITING`]).
static AFTER: AtomicIsize = AtomicIsize::new(0);
/// Usable bytes the program's threads hold of the program's allocator, as
/// far as their counts have been added ([`FLUSH_BYTES`]).
static HELD: AtomicIsize = AtomicIsize::new(0);
/// The process whose count [`HELD`] is: a `vfork` child (which shares
/// its parent's memory, these statics included, and runs no fork
/// handler) never starts the heap, which would start a runtime in it.
static COUNTED_PID: AtomicU32 = AtomicU32::new(0);
/// A thread adds its count to [`HELD`] once it is this far from zero.
pub const FLUSH_BYTES: isize = 256 << 10;

thread_local! {
    /// This thread's count not yet added to [`HELD`].
    static UNADDED: Cell<isize> = const { Cell::new(0) };
}

static STATE: AtomicU8 = AtomicU8::new(OFF);
/// The heap's address room: a pointer in `[LO, HI)` is mimalloc's.
static LO: AtomicUsize = AtomicUsize::new(usize::MAX);
static HI: AtomicUsize = AtomicUsize::new(0);
/// Bumped by each growth: a failed allocation retries if it moved.
static GROWS: AtomicUsize = AtomicUsize::new(0);

/// What growth needs: the region's base and how much of it is managed.
struct Heap {
    base: usize,
    managed_end: usize,
    next_chunk: usize,
}

static GROW: Mutex<Option<Heap>> = Mutex::new(None);

/// Sets the heap up at load (`UZSWAP_SMALL_OBJECTS`): mimalloc's options
/// now, the region at the first small allocation it serves.
pub fn configure(mode: SmallObjects) {
    let state = match mode {
        SmallObjects::Off => return,
        SmallObjects::On => READY,
        SmallObjects::After(bytes) => {
            AFTER.store(bytes.try_into().unwrap_or(isize::MAX), Ordering::Relaxed);
            COUNTED_PID.store(std::process::id(), Ordering::Relaxed);
            WAITING
        }
    };
    // SAFETY: setting options has no preconditions; before any mimalloc
    // allocation, so every later one sees them.
    unsafe {
        mi::mi_option_set(OPT_SHOW_ERRORS, 0);
        mi::mi_option_set(OPT_MAX_WARNINGS, 0);
        mi::mi_option_set(OPT_PURGE_DELAY, -1);
        mi::mi_option_set(OPT_PURGE_DECOMMITS, 0);
        mi::mi_option_set(OPT_DISALLOW_OS_ALLOC, 1);
        mi::mi_option_set(OPT_ARENA_RESERVE, 0);
        mi::mi_process_init();
    }
    STATE.store(state, Ordering::Release);
}

/// A forked child (not a `vfork` one) counts on from its parent's count,
/// as its own process.
pub fn after_fork_in_child() {
    COUNTED_PID.store(std::process::id(), Ordering::Relaxed);
}

/// Whether the hooks count the program's allocator's blocks: while the
/// heap waits. The runtime's own threads count too: the small blocks they
/// hold of that allocator are unpaged memory as much as the program's
/// (their large tables are not counted: [`small_usable`]), and telling
/// them apart would cost each call two more thread-local lookups (about
/// 6 ns; `passes_through`).
#[inline]
fn counting() -> bool {
    STATE.load(Ordering::Relaxed) == WAITING
}

/// One block in this many is counted, at this many times its size.
pub const SAMPLE: isize = 8;

/// Whether the block at `ptr` is in the count's sample, by its address: a
/// block is counted at its free as it was at its allocation, or at
/// neither, so [`SAMPLE`] times the sample's bytes estimates what is held
/// without bias. The address is hashed (multiplied by 2^64 over the golden
/// ratio, the top three bits kept), so that blocks of one size, laid at a
/// fixed stride, spread over the sample too. The other calls cost a
/// multiplication, not a usable-size call and a thread-local lookup
/// (about 7 ns a `malloc` and `free`).
#[inline]
fn sampled(ptr: *mut c_void) -> bool {
    (ptr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61 == 0
}

/// The program's allocator handed out `ptr` (null: nothing) to a hook.
#[inline]
pub fn note_next_alloc(ptr: *mut c_void) {
    if !ptr.is_null() && counting() && sampled(ptr) {
        // SAFETY: a live block of the next allocator, just handed out.
        count(SAMPLE * small_usable(unsafe { next::usable_size(ptr) }));
    }
}

/// The program's allocator is about to take `ptr` back.
///
/// # Safety
/// `ptr` is a live block of the next allocator.
#[inline]
pub unsafe fn note_next_free(ptr: *mut c_void) {
    if counting() && sampled(ptr) {
        // SAFETY: the caller's guarantee.
        count(-SAMPLE * small_usable(unsafe { next::usable_size(ptr) }));
    }
}

/// A block's usable size if it is a small block (below `--min-alloc`), 0
/// otherwise: the large blocks the allocator serves (the runtime's own
/// tables, a region that could not be made) are nothing the heap could
/// take, and a block's usable size is the same when it is freed.
fn small_usable(usable: usize) -> isize {
    if preload::below_min(usable) {
        usable as isize
    } else {
        0
    }
}

/// Adds `bytes` to this thread's count; starts the heap once the total
/// reaches [`AFTER`].
fn count(bytes: isize) {
    let Ok(unadded) = UNADDED.try_with(|u| {
        let n = u.get() + bytes;
        if n.abs() < FLUSH_BYTES {
            u.set(n);
            0
        } else {
            u.set(0);
            n
        }
    }) else {
        return; // the thread is exiting
    };
    if unadded == 0 {
        return;
    }
    let held = HELD.fetch_add(unadded, Ordering::Relaxed) + unadded;
    if held >= AFTER.load(Ordering::Relaxed)
        && COUNTED_PID.load(Ordering::Relaxed) == std::process::id()
    {
        let _ = STATE.compare_exchange(WAITING, READY, Ordering::AcqRel, Ordering::Relaxed);
    }
}

/// Whether `ptr` is the heap's.
pub fn owns(ptr: *mut c_void) -> bool {
    let p = ptr as usize;
    p >= LO.load(Ordering::Relaxed) && p < HI.load(Ordering::Relaxed)
}

/// `size` bytes aligned to `align` (zeroed if asked) from the heap, or
/// `None` to leave the request to glibc.
#[inline]
pub fn alloc(size: usize, align: usize, zeroed: bool) -> Option<*mut c_void> {
    // Off or not started yet (most programs, most of the time): decided
    // here, without a call.
    if matches!(STATE.load(Ordering::Acquire), OFF | WAITING) {
        return None;
    }
    alloc_started(size, align, zeroed)
}

fn alloc_started(size: usize, align: usize, zeroed: bool) -> Option<*mut c_void> {
    if align > MAX_ALIGN || !preload::below_min(size) {
        return None;
    }
    let _busy = gate::enter()?;
    if !started() {
        return None;
    }
    let p = growing(|| {
        // SAFETY: mimalloc's allocation entry points, any size; `align`
        // is a power of two (the hooks check it).
        unsafe {
            match (zeroed, align <= 16) {
                (false, true) => mi::mi_malloc(size),
                (true, true) => mi::mi_zalloc(size),
                (false, false) => mi::mi_malloc_aligned(size, align),
                (true, false) => mi::mi_zalloc_aligned(size, align),
            }
        }
    })?;
    if !owns(p) {
        runtime::fatal::die(&format!(
            "the small-object heap returned {p:p}, outside its region"
        ));
    }
    Some(p)
}

/// Runs a mimalloc allocation, growing the heap and trying again while it
/// finds the heap full (null); `None` once it cannot grow.
fn growing(mut attempt: impl FnMut() -> *mut c_void) -> Option<*mut c_void> {
    loop {
        let grows = GROWS.load(Ordering::Acquire);
        let p = attempt();
        if !p.is_null() {
            return Some(p);
        }
        if !grow(grows) {
            return None;
        }
    }
}

/// C `free` of a heap pointer.
///
/// # Safety
/// `ptr` is a live block of the heap ([`owns`]).
pub unsafe fn free(ptr: *mut c_void) {
    let _busy = gate::force_busy();
    // SAFETY: the caller's guarantee.
    unsafe { mi::mi_free(ptr) }
}

/// Usable size of a heap block.
///
/// # Safety
/// `ptr` is a live block of the heap.
pub unsafe fn usable_size(ptr: *mut c_void) -> usize {
    // SAFETY: the caller's guarantee.
    unsafe { mi::mi_usable_size(ptr) }
}

/// `realloc` of a heap block to a size still below `--min-alloc`: in
/// mimalloc, or `None` if the heap is full (the caller moves it).
///
/// # Safety
/// `ptr` is a live block of the heap.
pub unsafe fn realloc(ptr: *mut c_void, size: usize) -> Option<*mut c_void> {
    let _busy = gate::force_busy();
    // SAFETY: the caller's guarantee; on null the block is untouched.
    growing(|| unsafe { mi::mi_realloc(ptr, size) })
}

/// Starts the heap if it is ready and not started: its region, and its
/// first arena. False if it cannot serve.
fn started() -> bool {
    match STATE.load(Ordering::Acquire) {
        // Every allocation comes here: no system call (`getpid`) on this
        // path. A `vfork` child allocating from a started heap acts as its
        // suspended parent's thread would: the same memory, the same
        // mimalloc thread heap, its faults served by the runtime it shares
        // (as its system calls' pins are). It only never grows the heap
        // ([`grow`] checks the owner). A forked child has its own runtime
        // before any code of its own runs (the fork handlers).
        ON => return true,
        READY => {}
        _ => return false,
    }
    let mut g = GROW.lock().unwrap_or_else(|e| e.into_inner());
    if STATE.load(Ordering::Acquire) == READY {
        let heap = regions::small_heap_region(ROOM + SEGMENT).and_then(|base| {
            let start = base.next_multiple_of(SEGMENT);
            let end = start + FIRST_CHUNK;
            manage(base, start, end).then_some(Heap {
                base,
                managed_end: end,
                next_chunk: 2 * FIRST_CHUNK,
            })
        });
        match heap {
            Some(h) => {
                LO.store(h.base, Ordering::Relaxed);
                HI.store(h.base + ROOM + SEGMENT, Ordering::Relaxed);
                *g = Some(h);
                STATE.store(ON, Ordering::Release);
            }
            None => STATE.store(FAILED, Ordering::Release),
        }
    }
    STATE.load(Ordering::Acquire) == ON
}

/// Grows the region to `end` and gives `[start, end)` to mimalloc.
fn manage(base: usize, start: usize, end: usize) -> bool {
    if !regions::grow_small_heap(base, end - base) {
        return false;
    }
    // SAFETY: `[start, end)` is the region's, mapped and registered, and
    // used by nothing else; its pages read as zeros until written.
    let ok = unsafe {
        mi::mi_manage_os_memory_ex(
            start as *const c_void,
            end - start,
            true,  // committed: region pages are there when touched
            false, // not large: mimalloc may treat it as ordinary memory
            true,  // zero: untouched region pages read as zeros
            -1,
            false, // not exclusive: every heap allocates here
            std::ptr::null_mut(),
        )
    };
    if ok {
        regions::small_heap_grown(end - start);
    }
    ok
}

/// Adds the next chunk, unless another thread grew the heap since `seen`
/// (then the caller just retries). False if the heap cannot grow.
fn grow(seen: usize) -> bool {
    if !preload::owns_runtime() {
        return false; // a vfork child: its parent's heap
    }
    let mut g = GROW.lock().unwrap_or_else(|e| e.into_inner());
    if GROWS.load(Ordering::Acquire) != seen {
        return true;
    }
    let Some(h) = g.as_mut() else {
        return false;
    };
    let end = h.managed_end + h.next_chunk;
    if end > h.base + ROOM + SEGMENT || !manage(h.base, h.managed_end, end) {
        return false;
    }
    h.managed_end = end;
    h.next_chunk = (h.next_chunk * 2).min(MAX_CHUNK);
    GROWS.fetch_add(1, Ordering::Release);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_at_any_stride_are_sampled_one_in_eight() {
        // glibc lays blocks of one size at a fixed stride; mimalloc-like
        // allocators at a power of two.
        for stride in [16usize, 32, 48, 64, 128, 4096, 65536] {
            let n = 80_000;
            let base = 0x5555_0000_0000usize;
            let hits = (0..n)
                .filter(|i| sampled((base + i * stride) as *mut c_void))
                .count();
            let share = hits as f64 / n as f64;
            let want = 1.0 / SAMPLE as f64;
            assert!(
                (share - want).abs() < want / 10.0,
                "stride {stride}: {hits} of {n} sampled"
            );
        }
    }
}
