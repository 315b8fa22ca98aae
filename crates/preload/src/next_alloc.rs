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
//!    ignores; another thread waits for the lookup rather than take a
//!    block from it.
//! 2. **glibc is called directly.** Where the next `malloc` is glibc's
//!    (`__libc_malloc`'s address), or the next allocator lacks one of the
//!    entry points needed (`free`, `calloc`, `realloc`, `posix_memalign`,
//!    `malloc_usable_size`), or the bootstrap arena ever ran out (its
//!    overflow went to glibc), glibc is used: the old behaviour.
//! 3. **The next allocator's memory is the kernel's.** Its calls run with
//!    this thread marked inside the runtime ([`preload::force_busy`]), so
//!    the `mmap`s, `madvise`s and `munmap`s it makes for its own arenas
//!    pass straight to the kernel, as in a plain run.

use crate::libc_alloc as sys;
use crate::preload;
use libc::{c_int, c_void, size_t};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Not looked up yet.
const UNRESOLVED: u8 = 0;
/// Being looked up (by the thread in [`RESOLVER`]).
const RESOLVING: u8 = 1;
/// glibc, called directly.
const GLIBC: u8 = 2;
/// Another allocator, through [`NEXT`].
const OTHER: u8 = 3;

static MODE: AtomicU8 = AtomicU8::new(UNRESOLVED);
/// The thread id (`gettid`) of the lookup, while [`RESOLVING`].
static RESOLVER: AtomicUsize = AtomicUsize::new(0);

/// The next allocator's entry points, set before [`MODE`] becomes
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

extern "C" {
    fn __libc_malloc(size: size_t) -> *mut c_void;
}

type MallocFn = unsafe extern "C" fn(size_t) -> *mut c_void;
type CallocFn = unsafe extern "C" fn(size_t, size_t) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, size_t) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type MemalignFn = unsafe extern "C" fn(*mut *mut c_void, size_t, size_t) -> c_int;
type UsableFn = unsafe extern "C" fn(*mut c_void) -> size_t;

fn gettid() -> usize {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as usize }
}

/// The allocator in use: [`GLIBC`] or [`OTHER`], or [`RESOLVING`] for the
/// thread doing the lookup (whose blocks then come from [`Bootstrap`]).
fn mode() -> u8 {
    let m = MODE.load(Ordering::Acquire);
    if m >= GLIBC {
        return m;
    }
    if MODE
        .compare_exchange(UNRESOLVED, RESOLVING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        RESOLVER.store(gettid(), Ordering::Release);
        let found = resolve();
        MODE.store(found, Ordering::Release);
        return found;
    }
    if RESOLVER.load(Ordering::Acquire) == gettid() {
        return RESOLVING;
    }
    // Another thread is looking it up: a few symbol lookups.
    loop {
        let m = MODE.load(Ordering::Acquire);
        if m >= GLIBC {
            return m;
        }
        std::thread::yield_now();
    }
}

/// Looks the next allocator up; [`GLIBC`] unless all of its entry points
/// are there and its `malloc` is not glibc's.
fn resolve() -> u8 {
    let lookup = |name: &std::ffi::CStr| {
        // SAFETY: a lookup of a NUL-terminated name after this library.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize }
    };
    let malloc = lookup(c"malloc");
    if malloc == 0 || malloc == __libc_malloc as *const () as usize {
        return GLIBC;
    }
    let entries = [
        (&NEXT.malloc, malloc),
        (&NEXT.calloc, lookup(c"calloc")),
        (&NEXT.realloc, lookup(c"realloc")),
        (&NEXT.free, lookup(c"free")),
        (&NEXT.posix_memalign, lookup(c"posix_memalign")),
        (&NEXT.usable_size, lookup(c"malloc_usable_size")),
    ];
    if entries.iter().any(|&(_, f)| f == 0) || BOOTSTRAP.overflowed() {
        return GLIBC;
    }
    for (slot, f) in entries {
        slot.store(f, Ordering::Relaxed);
    }
    OTHER
}

/// Runs `f` (a call into the next allocator) with this thread marked
/// inside the runtime: the allocator's own mappings are the kernel's.
fn other<T>(f: impl FnOnce() -> T) -> T {
    let _inside = preload::force_busy();
    f()
}

/// # Safety
/// `slot` holds a non-null function of type `F` ([`MODE`] is [`OTHER`]).
unsafe fn entry<F: Copy>(slot: &AtomicUsize) -> F {
    let f = slot.load(Ordering::Relaxed);
    debug_assert!(f != 0 && std::mem::size_of::<F>() == std::mem::size_of::<usize>());
    // SAFETY: the caller's guarantee; fn pointers are one word.
    unsafe { std::mem::transmute_copy(&f) }
}

pub fn malloc(size: usize) -> *mut c_void {
    match mode() {
        GLIBC => sys::malloc(size),
        // SAFETY: OTHER: the slot holds the next allocator's malloc.
        OTHER => other(|| unsafe { entry::<MallocFn>(&NEXT.malloc)(size) }),
        _ => BOOTSTRAP.alloc(size, 16),
    }
}

pub fn calloc(n: usize, size: usize) -> *mut c_void {
    match mode() {
        GLIBC => sys::calloc(n, size),
        // SAFETY: as in `malloc`.
        OTHER => other(|| unsafe { entry::<CallocFn>(&NEXT.calloc)(n, size) }),
        // The arena is never reused: its bytes are still zero.
        _ => n
            .checked_mul(size)
            .map_or(std::ptr::null_mut(), |total| BOOTSTRAP.alloc(total, 16)),
    }
}

/// `align` is a power of two.
pub fn memalign(align: usize, size: usize) -> *mut c_void {
    // posix_memalign wants at least a pointer's alignment; malloc gives 16.
    let align = align.max(16);
    match mode() {
        GLIBC => sys::memalign(align, size),
        OTHER => other(|| {
            let mut p = std::ptr::null_mut();
            // SAFETY: as in `malloc`; `p` is writable.
            let rc = unsafe { entry::<MemalignFn>(&NEXT.posix_memalign)(&mut p, align, size) };
            if rc == 0 {
                p
            } else {
                std::ptr::null_mut()
            }
        }),
        _ => BOOTSTRAP.alloc(size, align),
    }
}

/// # Safety
/// `ptr` is a live block of this allocator (from the functions above).
pub unsafe fn free(ptr: *mut c_void) {
    if BOOTSTRAP.owns(ptr) {
        return;
    }
    match mode() {
        // SAFETY: the caller's guarantee.
        GLIBC => unsafe { sys::free(ptr) },
        // SAFETY: as in `malloc`, and the caller's guarantee.
        OTHER => other(|| unsafe { entry::<FreeFn>(&NEXT.free)(ptr) }),
        // The lookup frees only its own blocks, all bootstrap ones.
        _ => {}
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
        // SAFETY: the caller's guarantee.
        GLIBC => unsafe { sys::usable_size(ptr) },
        // SAFETY: as in `malloc`, and the caller's guarantee.
        OTHER => other(|| unsafe { entry::<UsableFn>(&NEXT.usable_size)(ptr) }),
        _ => 0,
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
        // SAFETY: the caller's guarantee.
        GLIBC => unsafe { sys::realloc(ptr, size) },
        // SAFETY: as in `malloc`, and the caller's guarantee.
        OTHER => other(|| unsafe { entry::<ReallocFn>(&NEXT.realloc)(ptr, size) }),
        _ => std::ptr::null_mut(),
    }
}

/// Bytes of the bootstrap arena: the lookup's few blocks.
const BOOTSTRAP_BYTES: usize = 64 << 10;
/// Each block starts with its size in a 16-byte header.
const HEADER: usize = 16;

/// A bump arena for the blocks asked for during the lookup. Never reused,
/// so its bytes are zero when handed out.
#[repr(C, align(4096))]
struct Bootstrap {
    bytes: UnsafeCell<[u8; BOOTSTRAP_BYTES]>,
    /// Offset of the first free byte.
    next: AtomicUsize,
    /// A block did not fit and came from glibc instead.
    overflow: AtomicU8,
}

// SAFETY: blocks are carved out with an atomic bump of `next`, so no two
// callers get the same bytes; a block's bytes are its owner's.
unsafe impl Sync for Bootstrap {}

static BOOTSTRAP: Bootstrap = Bootstrap {
    bytes: UnsafeCell::new([0; BOOTSTRAP_BYTES]),
    next: AtomicUsize::new(0),
    overflow: AtomicU8::new(0),
};

impl Bootstrap {
    fn base(&self) -> usize {
        self.bytes.get() as usize
    }

    fn owns(&self, ptr: *mut c_void) -> bool {
        (self.base()..self.base() + BOOTSTRAP_BYTES).contains(&(ptr as usize))
    }

    fn overflowed(&self) -> bool {
        self.overflow.load(Ordering::Acquire) != 0
    }

    /// `align` is a power of two.
    fn alloc(&self, size: usize, align: usize) -> *mut c_void {
        let align = align.max(HEADER);
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (self.base() + cur + HEADER).next_multiple_of(align) - self.base();
            let end = start.checked_add(size.max(1));
            let Some(end) = end.filter(|&e| e <= BOOTSTRAP_BYTES) else {
                self.overflow.store(1, Ordering::Release);
                return sys::memalign(align, size);
            };
            match self
                .next
                .compare_exchange(cur, end, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    let p = (self.base() + start) as *mut u8;
                    // SAFETY: `start - HEADER .. end` is this block's alone
                    // (the bump above) and inside the arena; the header is
                    // 8-aligned (`start` is 16-aligned).
                    unsafe { (p.sub(HEADER) as *mut usize).write(size) };
                    return p as *mut c_void;
                }
                Err(now) => cur = now,
            }
        }
    }

    /// # Safety
    /// `ptr` is a block of the arena.
    unsafe fn usable_size(&self, ptr: *mut c_void) -> usize {
        // SAFETY: `alloc` wrote the size in the header before the block.
        unsafe { ((ptr as *mut u8).sub(HEADER) as *const usize).read() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_test_binary_uses_glibc_directly() {
        // The test binary links no other allocator.
        assert_eq!(mode(), GLIBC);
        let p = malloc(100);
        assert!(!p.is_null());
        // SAFETY: a live block of 100 bytes.
        unsafe {
            assert!(usable_size(p) >= 100);
            free(p);
        }
    }

    #[test]
    fn bootstrap_blocks_are_aligned_zeroed_sized_and_recognised() {
        let a = BOOTSTRAP.alloc(40, 16);
        let b = BOOTSTRAP.alloc(10, 256);
        assert!(BOOTSTRAP.owns(a) && BOOTSTRAP.owns(b));
        assert_eq!(a as usize % 16, 0);
        assert_eq!(b as usize % 256, 0);
        // SAFETY: blocks of the arena.
        unsafe {
            assert_eq!(BOOTSTRAP.usable_size(a), 40);
            assert_eq!(BOOTSTRAP.usable_size(b), 10);
        }
        // SAFETY: 40 bytes of a live bootstrap block.
        let bytes = unsafe { std::slice::from_raw_parts(a as *const u8, 40) };
        assert!(bytes.iter().all(|&x| x == 0));
        assert!((a as usize) + 40 <= b as usize - HEADER);
        // free ignores them; realloc moves them out with their bytes.
        // SAFETY: a live bootstrap block.
        unsafe {
            (a as *mut u8).write(7);
            free(a);
            let moved = realloc(a, 80);
            assert!(!BOOTSTRAP.owns(moved));
            assert_eq!(*(moved as *const u8), 7);
            free(moved);
        }
        let outside = Box::new(0u8);
        assert!(!BOOTSTRAP.owns(&*outside as *const u8 as *mut c_void));
    }
}
