//! The program's own allocator: where the hooks send every block that is
//! neither a region nor a small-heap object.
//!
//! That is the definition of `malloc` after this library in the program's
//! symbol search order (`dlsym(RTLD_NEXT)`): jemalloc, tcmalloc or mimalloc
//! where the program links one, glibc's otherwise. So a jemalloc program's
//! small blocks stay jemalloc's, as in a plain run (sizes, speed, memory),
//! and glibc's own internal `malloc`s follow the program's allocator as
//! they do without uzswap.
//!
//! ## Invariants
//!
//! 1. **No block changes allocator.** The allocator is looked up once, at
//!    the first call that needs it, before any block is handed out. The
//!    blocks the lookup itself asks for (glibc's `dlsym` may allocate) and
//!    those of other threads that call in meanwhile come from
//!    [`Bootstrap`], a static bump arena that `free` recognises and
//!    ignores (no thread waits for the lookup: it could hold the loader's
//!    lock, which `dlsym` takes).
//! 2. **One allocator's six entry points.** `malloc`, `calloc`,
//!    `realloc`, `free`, `posix_memalign` and `malloc_usable_size` are all
//!    taken from the object that defines the next `malloc` (`dladdr`), or
//!    all from glibc (`libc.so.6`, looked up by handle) where the next
//!    allocator is glibc, lacks one of them, or is not found. Never
//!    through `__libc_malloc` and friends for the program: mimalloc and
//!    tcmalloc define those names too, and glibc's `malloc_usable_size` of
//!    their blocks read garbage (a tcmalloc program hung). A bootstrap
//!    arena that runs out answers `NULL` (`ENOMEM`), never another
//!    allocator's block.
//! 3. **The next allocator's memory is the kernel's.** Its calls run with
//!    this thread marked inside the runtime ([`gate::force_busy`]), so
//!    the `mmap`s, `madvise`s and `munmap`s it makes for its own arenas
//!    pass straight to the kernel, as in a plain run.

use crate::gate;
use crate::libc_alloc as sys;
use common::bump::BumpArena;
use libc::{c_int, c_void, size_t};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Not looked up yet.
const UNRESOLVED: u8 = 0;
/// Being looked up.
const RESOLVING: u8 = 1;
/// glibc's entry points in [`NEXT`], called directly.
const GLIBC: u8 = 2;
/// Another allocator's entry points in [`NEXT`], called inside the runtime.
const OTHER: u8 = 3;
/// No lookup worked: glibc's internal names (`__libc_malloc`, …).
const FALLBACK: u8 = 4;

static MODE: AtomicU8 = AtomicU8::new(UNRESOLVED);

/// The allocator's entry points, set before [`MODE`] becomes [`GLIBC`] or
/// [`OTHER`] (release) and read after it is seen (acquire).
struct Entries {
    malloc: AtomicUsize,
    calloc: AtomicUsize,
    realloc: AtomicUsize,
    free: AtomicUsize,
    posix_memalign: AtomicUsize,
    usable_size: AtomicUsize,
}

static NEXT: Entries = Entries {
    malloc: AtomicUsize::new(0),
    calloc: AtomicUsize::new(0),
    realloc: AtomicUsize::new(0),
    free: AtomicUsize::new(0),
    posix_memalign: AtomicUsize::new(0),
    usable_size: AtomicUsize::new(0),
};

type MallocFn = unsafe extern "C" fn(size_t) -> *mut c_void;
type CallocFn = unsafe extern "C" fn(size_t, size_t) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, size_t) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type MemalignFn = unsafe extern "C" fn(*mut *mut c_void, size_t, size_t) -> c_int;
type UsableFn = unsafe extern "C" fn(*mut c_void) -> size_t;

/// The allocator in use: [`GLIBC`] or [`OTHER`], or [`RESOLVING`] while
/// the lookup runs (blocks then come from [`Bootstrap`], for every thread:
/// one that waited could hold a lock the lookup needs, the loader's).
#[inline]
fn mode() -> u8 {
    let m = MODE.load(Ordering::Acquire);
    if m != UNRESOLVED {
        return m;
    }
    resolve_mode()
}

#[cold]
fn resolve_mode() -> u8 {
    if MODE
        .compare_exchange(UNRESOLVED, RESOLVING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return MODE.load(Ordering::Acquire);
    }
    let found = resolve();
    MODE.store(found, Ordering::Release);
    found
}

/// Looks the allocator up: the next one's entry points ([`OTHER`]) if
/// they are all there, all in one object, and not glibc's; else glibc's
/// ([`GLIBC`]); else [`FALLBACK`].
fn resolve() -> u8 {
    let glibc = entry_points(sys::glibc_symbol);
    let next = entry_points(|name| {
        // SAFETY: a lookup of a NUL-terminated name after this library.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize }
    });
    let (found, mode) = match (next, glibc) {
        (Some(n), g) if g.is_none_or(|g| g[0] != n[0]) && one_object(&n) => (n, OTHER),
        (_, Some(g)) => (g, GLIBC),
        _ => return FALLBACK,
    };
    let slots = [
        &NEXT.malloc,
        &NEXT.calloc,
        &NEXT.realloc,
        &NEXT.free,
        &NEXT.posix_memalign,
        &NEXT.usable_size,
    ];
    for (slot, f) in slots.into_iter().zip(found) {
        slot.store(f, Ordering::Relaxed);
    }
    mode
}

/// The six entry points in [`NEXT`]'s order, if `lookup` finds them all.
fn entry_points(lookup: impl Fn(&std::ffi::CStr) -> usize) -> Option<[usize; 6]> {
    let names = [
        c"malloc",
        c"calloc",
        c"realloc",
        c"free",
        c"posix_memalign",
        c"malloc_usable_size",
    ];
    let found = names.map(lookup);
    found.iter().all(|&f| f != 0).then_some(found)
}

/// Whether all of `entries` are defined by one object (an allocator that
/// lacks one would have it from the next object, glibc).
fn one_object(entries: &[usize; 6]) -> bool {
    let base = |f: usize| {
        // SAFETY: all-zero is a valid Dl_info (null pointers).
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr reads the address and writes `info`.
        let ok = unsafe { libc::dladdr(f as *const c_void, &mut info) } != 0;
        ok.then_some(info.dli_fbase as usize)
    };
    let first = base(entries[0]);
    first.is_some() && entries.iter().all(|&f| base(f) == first)
}

/// Runs `f` (a call into the allocator of `mode`): inside the runtime for
/// another allocator, so that its own mappings are the kernel's (glibc
/// makes its system calls directly).
#[inline]
fn call<T>(mode: u8, f: impl FnOnce() -> T) -> T {
    let _inside = (mode == OTHER).then(gate::force_busy);
    f()
}

/// # Safety
/// `slot` holds a non-null function of type `F` ([`MODE`] is [`GLIBC`] or
/// [`OTHER`]).
unsafe fn entry<F: Copy>(slot: &AtomicUsize) -> F {
    let f = slot.load(Ordering::Relaxed);
    debug_assert!(f != 0 && std::mem::size_of::<F>() == std::mem::size_of::<usize>());
    // SAFETY: the caller's guarantee; fn pointers are one word.
    unsafe { std::mem::transmute_copy(&f) }
}

#[inline]
pub fn malloc(size: usize) -> *mut c_void {
    match mode() {
        RESOLVING => BOOTSTRAP.alloc(size, 16),
        FALLBACK => sys::malloc(size),
        // SAFETY: GLIBC or OTHER: the slot holds that allocator's malloc.
        m => call(m, || unsafe { entry::<MallocFn>(&NEXT.malloc)(size) }),
    }
}

pub fn calloc(n: usize, size: usize) -> *mut c_void {
    match mode() {
        // The arena is never reused: its bytes are still zero.
        RESOLVING => n
            .checked_mul(size)
            .map_or(std::ptr::null_mut(), |total| BOOTSTRAP.alloc(total, 16)),
        FALLBACK => sys::calloc(n, size),
        // SAFETY: as in `malloc`.
        m => call(m, || unsafe { entry::<CallocFn>(&NEXT.calloc)(n, size) }),
    }
}

/// `align` is a power of two.
pub fn memalign(align: usize, size: usize) -> *mut c_void {
    // posix_memalign wants at least a pointer's alignment; malloc gives 16.
    let align = align.max(16);
    match mode() {
        RESOLVING => BOOTSTRAP.alloc(size, align),
        FALLBACK => sys::memalign(align, size),
        m => call(m, || {
            let mut p = std::ptr::null_mut();
            // SAFETY: as in `malloc`; `p` is writable.
            let rc = unsafe { entry::<MemalignFn>(&NEXT.posix_memalign)(&mut p, align, size) };
            if rc == 0 {
                p
            } else {
                std::ptr::null_mut()
            }
        }),
    }
}

/// # Safety
/// `ptr` is a live block of this allocator (from the functions above).
#[inline]
pub unsafe fn free(ptr: *mut c_void) {
    if BOOTSTRAP.owns(ptr) {
        return;
    }
    match mode() {
        // Before the lookup ends no block of the allocator exists, so this
        // pointer was not handed out by the hooks: leave it.
        RESOLVING => {}
        // SAFETY: the caller's guarantee.
        FALLBACK => unsafe { sys::free(ptr) },
        // SAFETY: as in `malloc`, and the caller's guarantee.
        m => call(m, || unsafe { entry::<FreeFn>(&NEXT.free)(ptr) }),
    }
}

/// # Safety
/// As [`free`].
pub unsafe fn usable_size(ptr: *mut c_void) -> usize {
    if BOOTSTRAP.owns(ptr) {
        // SAFETY: a block of the arena (the caller's guarantee that it is one).
        return unsafe { BOOTSTRAP.usable_size(ptr) };
    }
    match mode() {
        RESOLVING => 0,
        // SAFETY: the caller's guarantee.
        FALLBACK => unsafe { sys::usable_size(ptr) },
        // SAFETY: as in `malloc`, and the caller's guarantee.
        m => call(m, || unsafe { entry::<UsableFn>(&NEXT.usable_size)(ptr) }),
    }
}

/// # Safety
/// As [`free`]; `size > 0`.
pub unsafe fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    if BOOTSTRAP.owns(ptr) {
        let new = malloc(size);
        if !new.is_null() {
            // SAFETY: a block of the arena; it holds `old` bytes, the new
            // one `size`, and they are distinct.
            unsafe {
                let old = BOOTSTRAP.usable_size(ptr);
                std::ptr::copy_nonoverlapping(ptr as *const u8, new as *mut u8, old.min(size));
            }
        }
        return new;
    }
    match mode() {
        RESOLVING => std::ptr::null_mut(),
        // SAFETY: the caller's guarantee.
        FALLBACK => unsafe { sys::realloc(ptr, size) },
        // SAFETY: as in `malloc`, and the caller's guarantee.
        m => call(m, || unsafe {
            entry::<ReallocFn>(&NEXT.realloc)(ptr, size)
        }),
    }
}

/// Bytes of the bootstrap arena: the lookup's few blocks (untouched
/// bytes cost no memory).
const BOOTSTRAP_BYTES: usize = 256 << 10;

/// The blocks asked for while the allocator is looked up: a static bump
/// arena (`common::bump`, model-checked there), never reused, so its bytes
/// are zero when handed out.
struct Bootstrap(BumpArena<BOOTSTRAP_BYTES>);

static BOOTSTRAP: Bootstrap = Bootstrap(BumpArena::new());

impl Bootstrap {
    fn owns(&self, ptr: *mut c_void) -> bool {
        self.0.owns(ptr as *const u8)
    }

    /// `align` is a power of two. A request that does not fit answers
    /// null with `ENOMEM`, never another allocator's block.
    fn alloc(&self, size: usize, align: usize) -> *mut c_void {
        match self.0.alloc(size, align) {
            Some(p) => p.as_ptr() as *mut c_void,
            None => {
                // SAFETY: errno is this thread's own.
                unsafe { *libc::__errno_location() = libc::ENOMEM };
                std::ptr::null_mut()
            }
        }
    }

    /// # Safety
    /// `ptr` is a block of the arena.
    unsafe fn usable_size(&self, ptr: *mut c_void) -> usize {
        // SAFETY: the caller's guarantee.
        unsafe { self.0.size_of(ptr as *const u8) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_test_binary_uses_glibc_by_its_own_entry_points() {
        // The test binary links no other allocator.
        assert_eq!(mode(), GLIBC);
        // SAFETY: lookups of NUL-terminated names in the loaded C library.
        let glibc_malloc = unsafe {
            let libc = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
            assert!(!libc.is_null());
            libc::dlsym(libc, c"malloc".as_ptr()) as usize
        };
        assert_eq!(NEXT.malloc.load(Ordering::Relaxed), glibc_malloc);
        let p = malloc(100);
        assert!(!p.is_null());
        // SAFETY: a live block of 100 bytes.
        unsafe {
            assert!(usable_size(p) >= 100);
            free(p);
        }
    }

    #[test]
    fn bootstrap_blocks_are_ignored_by_free_and_moved_out_by_realloc() {
        // (Their layout is `common::bump`'s, tested there.)
        let a = BOOTSTRAP.alloc(40, 16);
        assert!(BOOTSTRAP.owns(a));
        // SAFETY: a live bootstrap block of 40 bytes.
        unsafe {
            assert_eq!(usable_size(a), 40);
            (a as *mut u8).write(7);
            free(a);
            assert_eq!(*(a as *const u8), 7, "free left it alone");
            let moved = realloc(a, 80);
            assert!(!BOOTSTRAP.owns(moved));
            assert_eq!(*(moved as *const u8), 7);
            free(moved);
        }
        let outside = Box::new(0u8);
        assert!(!BOOTSTRAP.owns(&*outside as *const u8 as *mut c_void));
    }

    #[test]
    fn a_full_bootstrap_arena_answers_null_never_another_allocators_block() {
        let arena = Box::new(Bootstrap(BumpArena::new()));
        let big = arena.alloc(BOOTSTRAP_BYTES / 2, 16);
        assert!(arena.owns(big));
        let none = arena.alloc(BOOTSTRAP_BYTES / 2, 16);
        assert!(none.is_null());
        // SAFETY: errno is this thread's own.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::ENOMEM);
        // What still fits is still served.
        assert!(arena.owns(arena.alloc(64, 16)));
    }
}
