//! glibc's allocator under its internal names, and the raw system calls the
//! hooks pass through to. Nothing here goes through the hooks.

use libc::{c_int, c_void, off_t, size_t};
use std::alloc::{GlobalAlloc, Layout};

extern "C" {
    fn __libc_malloc(size: size_t) -> *mut c_void;
    fn __libc_calloc(n: size_t, size: size_t) -> *mut c_void;
    fn __libc_realloc(ptr: *mut c_void, size: size_t) -> *mut c_void;
    fn __libc_free(ptr: *mut c_void);
    fn __libc_memalign(align: size_t, size: size_t) -> *mut c_void;
}

/// glibc's malloc, bypassing the hooks.
pub fn malloc(size: usize) -> *mut c_void {
    // SAFETY: glibc's allocator entry point, any size.
    unsafe { __libc_malloc(size) }
}

pub fn calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: as above; glibc checks the product for overflow.
    unsafe { __libc_calloc(n, size) }
}

/// # Safety
/// `ptr` is null or a live glibc allocation.
pub unsafe fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the caller's guarantee.
    unsafe { __libc_realloc(ptr, size) }
}

/// # Safety
/// `ptr` is null or a live glibc allocation.
pub unsafe fn free(ptr: *mut c_void) {
    // SAFETY: the caller's guarantee.
    unsafe { __libc_free(ptr) }
}

/// `align` must be a power of two.
pub fn memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc checks the alignment and returns null on error.
    unsafe { __libc_memalign(align, size) }
}

/// glibc's own definition of `name`, looked up in the C library itself
/// (by handle, not `RTLD_NEXT`: a program may link another allocator that
/// defines the allocation functions, `__libc_malloc` included); 0 if
/// there is none.
pub fn glibc_symbol(name: &std::ffi::CStr) -> usize {
    // SAFETY: dlopen of the C library already loaded (RTLD_NOLOAD: no new
    // load), then a lookup in it; both take NUL-terminated names.
    unsafe {
        let libc = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if libc.is_null() {
            0
        } else {
            libc::dlsym(libc, name.as_ptr()) as usize
        }
    }
}

/// Usable size of a glibc allocation: glibc's own `malloc_usable_size`
/// ([`glibc_symbol`]), 0 if it cannot be found.
///
/// # Safety
/// `ptr` is null or a live glibc allocation.
pub unsafe fn usable_size(ptr: *mut c_void) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static GLIBC: AtomicUsize = AtomicUsize::new(0);
    let mut f = GLIBC.load(Ordering::Acquire);
    if f == 0 {
        f = glibc_symbol(c"malloc_usable_size");
        GLIBC.store(f, Ordering::Release);
    }
    if f == 0 {
        return 0;
    }
    // SAFETY: `f` is glibc's malloc_usable_size, of this signature.
    let f: unsafe extern "C" fn(*mut c_void) -> size_t = unsafe { std::mem::transmute(f) };
    // SAFETY: the caller's guarantee.
    unsafe { f(ptr) }
}

/// The definition of `name` after this library's (glibc's, for the C
/// library's functions this library stands in for), looked up once into
/// `slot`; 0 if there is none.
pub fn next_symbol(slot: &std::sync::atomic::AtomicUsize, name: &std::ffi::CStr) -> usize {
    use std::sync::atomic::Ordering;
    let mut f = slot.load(Ordering::Acquire);
    if f == 0 {
        // SAFETY: a lookup of a NUL-terminated name after this library.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        slot.store(f, Ordering::Release);
    }
    f
}

/// The library's own allocations: glibc directly.
pub struct LibcAlloc;

// SAFETY: every method forwards to glibc's allocator, which returns memory
// aligned to 16 bytes (or to the asked alignment through memalign) or null.
unsafe impl GlobalAlloc for LibcAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= 16 {
            malloc(layout.size()) as *mut u8
        } else {
            memalign(layout.align(), layout.size()) as *mut u8
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= 16 {
            calloc(1, layout.size()) as *mut u8
        } else {
            let p = memalign(layout.align(), layout.size()) as *mut u8;
            if !p.is_null() {
                // SAFETY: a fresh allocation of `size` bytes.
                unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
            }
            p
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from alloc/alloc_zeroed/realloc above.
        unsafe { free(ptr as *mut c_void) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= 16 {
            // SAFETY: `ptr` came from this allocator.
            return unsafe { realloc(ptr as *mut c_void, new_size) } as *mut u8;
        }
        let new = memalign(layout.align(), new_size) as *mut u8;
        if !new.is_null() {
            // SAFETY: both blocks hold at least min(old, new) bytes and are
            // distinct allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                free(ptr as *mut c_void);
            }
        }
        new
    }
}

/// `mmap` straight to the kernel.
///
/// # Safety
/// As `mmap(2)`: a fixed mapping replaces whatever was there.
pub unsafe fn sys_mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    // SAFETY: the caller's guarantee; libc::syscall sets errno on error.
    unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, off) as *mut c_void }
}

/// # Safety
/// As `munmap(2)`.
pub unsafe fn sys_munmap(addr: *mut c_void, len: size_t) -> c_int {
    // SAFETY: the caller's guarantee.
    unsafe { libc::syscall(libc::SYS_munmap, addr, len) as c_int }
}

/// # Safety
/// As `madvise(2)`.
pub unsafe fn sys_madvise(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
    // SAFETY: the caller's guarantee.
    unsafe { libc::syscall(libc::SYS_madvise, addr, len, advice) as c_int }
}

/// # Safety
/// As `mprotect(2)`.
pub unsafe fn sys_mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    // SAFETY: the caller's guarantee.
    unsafe { libc::syscall(libc::SYS_mprotect, addr, len, prot) as c_int }
}

/// # Safety
/// As `mremap(2)`.
pub unsafe fn sys_mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's guarantee.
    unsafe {
        libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new_addr) as *mut c_void
    }
}
