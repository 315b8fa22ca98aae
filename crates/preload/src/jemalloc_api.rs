//! jemalloc's extended API (`mallocx`, `rallocx`, `xallocx`, `sallocx`,
//! `dallocx`, `sdallocx`, `nallocx`), for programs linked with jemalloc.
//!
//! Such a program's `malloc`, `free`, `realloc` and `malloc_usable_size`
//! come to the hooks (this library is loaded first), so its blocks are
//! regions, small-heap objects or jemalloc's own (the next allocator,
//! `next_alloc.rs`). Its calls of the extended API, left to jemalloc,
//! would hand jemalloc the first two kinds (`sdallocx` of a region: a
//! crash). So the extended API comes here too and is served by the same
//! hooks, which pass jemalloc's own blocks back to jemalloc's `free`,
//! `realloc` and `malloc_usable_size`: no block ever reaches the other
//! allocator. jemalloc keeps what has no block (`mallctl` and its
//! statistics, which count its own blocks).
//!
//! Flags: `MALLOCX_LG_ALIGN(la)` (low 6 bits) and `MALLOCX_ZERO` are
//! honoured; `MALLOCX_TCACHE*` and `MALLOCX_ARENA` name jemalloc's own
//! caches and arenas and are ignored. `xallocx` never resizes (it returns
//! the block's size, which jemalloc's contract allows: "could not grow in
//! place"); `nallocx` returns the size asked for, rounded to the
//! alignment (never more than the hooks will hand out).

use crate::hooks;
use crate::preload::no_unwind;
use libc::{c_int, c_void, size_t};

/// `MALLOCX_LG_ALIGN`'s bits.
const LG_ALIGN_MASK: c_int = 0x3f;
/// `MALLOCX_ZERO`.
const ZERO: c_int = 0x40;

/// The alignment `flags` ask for (16: none); `lg` is at most 63.
fn align_of(flags: c_int) -> usize {
    (1usize << (flags & LG_ALIGN_MASK)).max(16)
}

/// A fresh block as `flags` ask.
fn alloc(size: usize, flags: c_int) -> *mut c_void {
    let align = align_of(flags);
    if size == 0 {
        return std::ptr::null_mut();
    }
    let zero = flags & ZERO != 0;
    // SAFETY: the hooks' C contracts, with valid arguments.
    unsafe {
        match (align > 16, zero) {
            (false, false) => hooks::malloc(size),
            (false, true) => hooks::calloc(1, size),
            (true, _) => {
                let p = hooks::aligned(align, size);
                if zero && !p.is_null() {
                    // SAFETY: a fresh block of at least `size` bytes.
                    std::ptr::write_bytes(p as *mut u8, 0, size);
                }
                p
            }
        }
    }
}

/// # Safety
/// jemalloc's `mallocx`.
#[no_mangle]
pub unsafe extern "C" fn mallocx(size: size_t, flags: c_int) -> *mut c_void {
    no_unwind("mallocx", || alloc(size, flags))
}

/// # Safety
/// jemalloc's `rallocx`: `ptr` is a live block of this allocator.
#[no_mangle]
pub unsafe extern "C" fn rallocx(ptr: *mut c_void, size: size_t, flags: c_int) -> *mut c_void {
    no_unwind("rallocx", || {
        if size == 0 {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's guarantee: a live block of the hooks.
        let old = unsafe { hooks::malloc_usable_size(ptr) };
        let align = align_of(flags);
        let new = if align <= 16 {
            // SAFETY: as above.
            unsafe { hooks::realloc(ptr, size) }
        } else {
            let new = alloc(size, flags & !ZERO);
            if !new.is_null() {
                // SAFETY: distinct blocks, each of at least min(old, size)
                // bytes; the old one is freed once copied.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr as *const u8, new as *mut u8, old.min(size));
                    hooks::free(ptr);
                }
            }
            new
        };
        if flags & ZERO != 0 && !new.is_null() && size > old {
            // SAFETY: the block holds at least `size` bytes.
            unsafe { std::ptr::write_bytes((new as *mut u8).add(old), 0, size - old) };
        }
        new
    })
}

/// # Safety
/// jemalloc's `xallocx`: `ptr` is a live block of this allocator.
#[no_mangle]
pub unsafe extern "C" fn xallocx(
    ptr: *mut c_void,
    _size: size_t,
    _extra: size_t,
    _flags: c_int,
) -> size_t {
    // SAFETY: the caller's guarantee.
    no_unwind("xallocx", || unsafe { hooks::malloc_usable_size(ptr) })
}

/// # Safety
/// jemalloc's `sallocx`: `ptr` is a live block of this allocator.
#[no_mangle]
pub unsafe extern "C" fn sallocx(ptr: *const c_void, _flags: c_int) -> size_t {
    // SAFETY: the caller's guarantee.
    no_unwind("sallocx", || unsafe {
        hooks::malloc_usable_size(ptr as *mut c_void)
    })
}

/// # Safety
/// jemalloc's `dallocx`: `ptr` is a live block of this allocator.
#[no_mangle]
pub unsafe extern "C" fn dallocx(ptr: *mut c_void, _flags: c_int) {
    // SAFETY: the caller's guarantee.
    no_unwind("dallocx", || unsafe { hooks::free(ptr) })
}

/// # Safety
/// jemalloc's `sdallocx`: `ptr` is a live block of this allocator.
#[no_mangle]
pub unsafe extern "C" fn sdallocx(ptr: *mut c_void, _size: size_t, _flags: c_int) {
    // SAFETY: the caller's guarantee.
    no_unwind("sdallocx", || unsafe { hooks::free(ptr) })
}

/// jemalloc's `nallocx`: the size `mallocx(size, flags)` would have (0 for
/// an impossible one).
#[no_mangle]
pub extern "C" fn nallocx(size: size_t, flags: c_int) -> size_t {
    no_unwind("nallocx", || {
        if size == 0 {
            return 0;
        }
        size.checked_next_multiple_of(align_of(flags)).unwrap_or(0)
    })
}
