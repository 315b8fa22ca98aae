//! The exported C functions that stand in for glibc's. Each decides whether
//! the call concerns a region (or the small-object heap) and otherwise
//! passes it on unchanged: allocations to the program's own allocator
//! (`next_alloc.rs`), the rest to glibc or the kernel.

use crate::gate;
use crate::libc_alloc as sys;
use crate::next_alloc as next;
use crate::preload::{self, no_unwind, Kind};
use crate::regions::{self, Freed};
use crate::reservations;
use crate::small_heap;
use crate::syscall_guard;
use libc::{c_int, c_void, off_t, size_t};

use common::PAGE_SIZE;

fn set_errno(e: c_int) {
    // SAFETY: errno is this thread's own.
    unsafe { *libc::__errno_location() = e };
}

/// A block the program's allocator just handed out (counted while the
/// small-object heap waits for its threshold).
fn from_next(p: *mut c_void) -> *mut c_void {
    small_heap::note_next_alloc(p);
    p
}

/// Gives a block back to the program's allocator (counted likewise).
///
/// # Safety
/// `ptr` is a live block of the next allocator.
unsafe fn free_next(ptr: *mut c_void) {
    // SAFETY: the caller's guarantee, for both.
    unsafe {
        small_heap::note_next_free(ptr);
        next::free(ptr);
    }
}

fn region_or_null(size: usize, align: usize) -> Option<*mut c_void> {
    regions::alloc(size, align, Kind::Malloc).map(|p| p as *mut c_void)
}

/// # Safety
/// C `malloc`.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: size_t) -> *mut c_void {
    no_unwind("malloc", || {
        region_or_null(size, 16)
            .or_else(|| small_heap::alloc(size, 16, false))
            .unwrap_or_else(|| from_next(next::malloc(size)))
    })
}

/// # Safety
/// C `calloc`: a region is zero-filled already.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, size: size_t) -> *mut c_void {
    no_unwind("calloc", || {
        let Some(total) = n.checked_mul(size) else {
            set_errno(libc::ENOMEM);
            return std::ptr::null_mut();
        };
        region_or_null(total, 16)
            .or_else(|| small_heap::alloc(total, 16, true))
            .unwrap_or_else(|| from_next(next::calloc(n, size)))
    })
}

/// # Safety
/// C `free`.
#[no_mangle]
pub unsafe extern "C" fn free(ptr: *mut c_void) {
    no_unwind("free", || {
        if ptr.is_null() {
            return;
        }
        if small_heap::owns(ptr) {
            // SAFETY: a block of the small-object heap (the caller's
            // guarantee that it is live).
            unsafe { small_heap::free(ptr) };
            return;
        }
        if regions::free(ptr as usize) == Freed::NotOurs {
            // SAFETY: not a region or small-heap pointer, so the next
            // allocator's (the caller's guarantee).
            unsafe { free_next(ptr) }
        }
    })
}

/// # Safety
/// C `realloc`.
#[no_mangle]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: size_t) -> *mut c_void {
    no_unwind("realloc", || {
        if ptr.is_null() {
            // SAFETY: malloc's contract.
            return unsafe { malloc(size) };
        }
        if size == 0 {
            // SAFETY: glibc frees and returns null for realloc(p, 0).
            unsafe { free(ptr) };
            return std::ptr::null_mut();
        }
        if small_heap::owns(ptr) {
            // SAFETY: a live block of the small-object heap.
            return unsafe { realloc_small(ptr, size) };
        }
        let old_usable = match regions::usable_size(ptr as usize) {
            // A region that still fits (and is not far too big) stays.
            Some(usable) if size <= usable && size >= usable / 2 => return ptr,
            // Grown where it is: no copy, no page brought back in.
            Some(usable) if size > usable && regions::grow(ptr as usize, size) => return ptr,
            Some(usable) => usable,
            None => {
                if let Some(new) = moved_region(size) {
                    // A block of the next allocator grown past the threshold
                    // moves to a region.
                    // SAFETY: `ptr` is the next allocator's; the new region
                    // holds `size` bytes.
                    unsafe {
                        let old = next::usable_size(ptr);
                        std::ptr::copy_nonoverlapping(
                            ptr as *const u8,
                            new as *mut u8,
                            old.min(size),
                        );
                        free_next(ptr);
                    }
                    return new;
                }
                // SAFETY: the next allocator's block (the caller's guarantee).
                return unsafe { realloc_next(ptr, size) };
            }
        };
        let new = if size > old_usable {
            // SAFETY: malloc's contract.
            moved_region(size).unwrap_or_else(|| unsafe { malloc(size) })
        } else {
            // SAFETY: malloc's contract.
            unsafe { malloc(size) }
        };
        if !new.is_null() {
            // SAFETY: the old region holds `old_usable` bytes, the new block
            // `size`; they are distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    ptr as *const u8,
                    new as *mut u8,
                    old_usable.min(size),
                );
                free(ptr);
            }
        }
        new
    })
}

/// `realloc` by the program's allocator of one of its blocks (counted
/// while the small-object heap waits for its threshold).
///
/// # Safety
/// `ptr` is a live block of the next allocator; `size > 0`.
unsafe fn realloc_next(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the caller's guarantee, for all three.
    unsafe {
        small_heap::note_next_free(ptr);
        let new = next::realloc(ptr, size);
        // On failure the old block is still the allocator's.
        from_next(if new.is_null() { ptr } else { new });
        new
    }
}

/// `realloc` of a block of the small-object heap: in place or within the
/// heap while it stays small, else moved (to a region if it has grown
/// past `--min-alloc`, to the next allocator if the heap is full).
///
/// # Safety
/// `ptr` is a live block of the small-object heap.
unsafe fn realloc_small(ptr: *mut c_void, size: usize) -> *mut c_void {
    let small = preload::below_min(size);
    if small {
        // SAFETY: the caller's guarantee.
        if let Some(p) = unsafe { small_heap::realloc(ptr, size) } {
            return p;
        }
    }
    let new = if small {
        from_next(next::malloc(size))
    } else {
        moved_region(size).unwrap_or_else(|| from_next(next::malloc(size)))
    };
    if !new.is_null() {
        // SAFETY: the old block holds `usable` bytes, the new one `size`;
        // they are distinct.
        unsafe {
            let usable = small_heap::usable_size(ptr);
            std::ptr::copy_nonoverlapping(ptr as *const u8, new as *mut u8, usable.min(size));
            small_heap::free(ptr);
        }
    }
    new
}

/// A region for a block `realloc` grows out of its place, with room to
/// grow in place from then on ([`regions::REALLOC_ROOM`] times its size).
fn moved_region(size: usize) -> Option<*mut c_void> {
    let room = size.saturating_mul(regions::REALLOC_ROOM);
    regions::alloc_with_room(size, 16, Kind::Malloc, room).map(|p| p as *mut c_void)
}

/// # Safety
/// C `reallocarray`.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(ptr: *mut c_void, n: size_t, size: size_t) -> *mut c_void {
    no_unwind("reallocarray", || {
        match n.checked_mul(size) {
            // SAFETY: realloc's contract.
            Some(total) => unsafe { realloc(ptr, total) },
            None => {
                set_errno(libc::ENOMEM);
                std::ptr::null_mut()
            }
        }
    })
}

pub(crate) fn aligned(align: usize, size: usize) -> *mut c_void {
    region_or_null(size, align)
        .or_else(|| small_heap::alloc(size, align, false))
        .unwrap_or_else(|| from_next(next::memalign(align, size)))
}

/// # Safety
/// C `posix_memalign`: `memptr` is writable.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    memptr: *mut *mut c_void,
    align: size_t,
    size: size_t,
) -> c_int {
    no_unwind("posix_memalign", || {
        if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<*mut c_void>()) {
            return libc::EINVAL;
        }
        let p = aligned(align, size);
        if p.is_null() {
            return libc::ENOMEM;
        }
        // SAFETY: the caller's guarantee.
        unsafe { *memptr = p };
        0
    })
}

/// # Safety
/// C `aligned_alloc`.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void {
    no_unwind("aligned_alloc", || {
        if !align.is_power_of_two() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        aligned(align, size)
    })
}

/// # Safety
/// C `memalign`.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: size_t, size: size_t) -> *mut c_void {
    no_unwind("memalign", || {
        aligned(align.next_power_of_two().max(16), size)
    })
}

/// # Safety
/// C `valloc`.
#[no_mangle]
pub unsafe extern "C" fn valloc(size: size_t) -> *mut c_void {
    no_unwind("valloc", || aligned(PAGE_SIZE, size))
}

/// # Safety
/// C `pvalloc`.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: size_t) -> *mut c_void {
    no_unwind("pvalloc", || {
        aligned(PAGE_SIZE, size.div_ceil(PAGE_SIZE).max(1) * PAGE_SIZE)
    })
}

/// # Safety
/// C `malloc_usable_size`.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(ptr: *mut c_void) -> size_t {
    no_unwind("malloc_usable_size", || {
        if ptr.is_null() {
            return 0;
        }
        if small_heap::owns(ptr) {
            // SAFETY: a live block of the small-object heap.
            return unsafe { small_heap::usable_size(ptr) };
        }
        match regions::usable_size(ptr as usize) {
            Some(n) => n,
            // SAFETY: the next allocator's block (the caller's guarantee).
            None => unsafe { next::usable_size(ptr) },
        }
    })
}

fn is_plain_anonymous(addr: *mut c_void, prot: c_int, flags: c_int, fd: c_int) -> bool {
    let kind = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let unusual = libc::MAP_SHARED
        | libc::MAP_FIXED
        | libc::MAP_FIXED_NOREPLACE
        | libc::MAP_HUGETLB
        | libc::MAP_GROWSDOWN
        | libc::MAP_STACK;
    addr.is_null()
        && fd == -1
        && flags & kind == kind
        && flags & unusual == 0
        && prot == libc::PROT_READ | libc::PROT_WRITE
}

/// A reservation: a `PROT_NONE` private anonymous mapping the kernel may
/// place where it likes (a hint is only a hint), for parts to be committed
/// later.
fn is_reservation(prot: c_int, flags: c_int, fd: c_int) -> bool {
    let kind = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let unusual = libc::MAP_SHARED
        | libc::MAP_FIXED
        | libc::MAP_FIXED_NOREPLACE
        | libc::MAP_HUGETLB
        | libc::MAP_GROWSDOWN
        | libc::MAP_STACK
        | libc::MAP_32BIT;
    fd == -1 && flags & kind == kind && flags & unusual == 0 && prot == libc::PROT_NONE
}

/// A commit: fresh read-write private anonymous memory mapped over a range
/// (`MAP_FIXED`).
fn is_fixed_commit(prot: c_int, flags: c_int, fd: c_int) -> bool {
    let kind = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
    let unusual = libc::MAP_SHARED | libc::MAP_HUGETLB | libc::MAP_GROWSDOWN | libc::MAP_STACK;
    fd == -1
        && flags & kind == kind
        && flags & unusual == 0
        && prot == libc::PROT_READ | libc::PROT_WRITE
}

/// A decommit: inaccessible private anonymous memory mapped over a range.
fn is_fixed_decommit(prot: c_int, flags: c_int, fd: c_int) -> bool {
    let kind = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
    fd == -1 && flags & kind == kind && flags & libc::MAP_SHARED == 0 && prot == libc::PROT_NONE
}

/// # Safety
/// C `mmap`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    no_unwind("mmap", || {
        if !gate::passes_through() {
            if is_plain_anonymous(addr, prot, flags, fd) {
                if let Some(p) = regions::alloc(len, PAGE_SIZE, Kind::Mapping) {
                    return p as *mut c_void;
                }
            } else if is_reservation(prot, flags, fd) {
                if let Some(p) = reservations::reserve(len) {
                    return p as *mut c_void;
                }
            } else if flags & libc::MAP_FIXED != 0 {
                if is_fixed_commit(prot, flags, fd) {
                    if let Some(p) = reservations::commit_fixed(addr as usize, len) {
                        return p as *mut c_void;
                    }
                }
                let decommit = is_fixed_decommit(prot, flags, fd);
                reservations::before_fixed_map(addr as usize, len, decommit);
            } else if flags & libc::MAP_FIXED_NOREPLACE != 0 {
                reservations::before_noreplace_map(addr as usize, len);
            }
        }
        // SAFETY: mmap's contract, passed on unchanged.
        unsafe { sys::sys_mmap(addr, len, prot, flags, fd, off) }
    })
}

/// # Safety
/// C `mmap64` (the same call on 64-bit).
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    no_unwind("mmap64", || {
        // SAFETY: mmap's contract.
        unsafe { mmap(addr, len, prot, flags, fd, off) }
    })
}

/// # Safety
/// C `munmap`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    no_unwind("munmap", || {
        if !gate::passes_through() {
            if regions::unmap_exact(addr as usize, len)
                || reservations::unmap_reserved(addr as usize, len)
            {
                return 0;
            }
            regions::release_overlapping(addr as usize, len);
        }
        // SAFETY: munmap's contract, passed on unchanged.
        unsafe { sys::sys_munmap(addr, len) }
    })
}

/// # Safety
/// C `mremap`; the optional fifth argument is taken as given.
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    no_unwind("mremap", || {
        if !gate::passes_through() {
            regions::release_overlapping(old as usize, old_len);
        }
        // SAFETY: mremap's contract, passed on unchanged.
        unsafe { sys::sys_mremap(old, old_len, new_len, flags, new_addr) }
    })
}

/// # Safety
/// C `mprotect`.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    no_unwind("mprotect", || {
        if !gate::passes_through() {
            if prot == libc::PROT_READ | libc::PROT_WRITE {
                if reservations::commit_protect(addr as usize, len) {
                    return 0;
                }
            } else {
                reservations::before_protect(addr as usize, len, prot & libc::PROT_WRITE != 0);
            }
        }
        // SAFETY: mprotect's contract, passed on unchanged.
        unsafe { sys::sys_mprotect(addr, len, prot) }
    })
}

/// # Safety
/// C `madvise`.
#[no_mangle]
pub unsafe extern "C" fn madvise(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
    no_unwind("madvise", || {
        // Advice that only sets a flag on the mapping: for a region it is
        // ignored (the kernel may ignore it too), since the flag would split
        // the region's mapping, and one userfaultfd fill cannot span two.
        let advisory = matches!(
            advice,
            libc::MADV_NORMAL
                | libc::MADV_RANDOM
                | libc::MADV_SEQUENTIAL
                | libc::MADV_HUGEPAGE
                | libc::MADV_NOHUGEPAGE
                | libc::MADV_DONTDUMP
                | libc::MADV_DODUMP
        );
        if !gate::passes_through() {
            if advisory && regions::within_region(addr as usize, len) {
                return 0;
            }
            let discard = matches!(
                advice,
                libc::MADV_DONTNEED | libc::MADV_FREE | libc::MADV_DONTNEED_LOCKED
            );
            if discard && regions::discard_in_region(addr as usize, len) {
                return 0;
            }
            if !advisory && advice != libc::MADV_WILLNEED {
                regions::release_overlapping(addr as usize, len);
            }
        }
        // SAFETY: madvise's contract, passed on unchanged.
        unsafe { sys::sys_madvise(addr, len, advice) }
    })
}

/// # Safety
/// C `_exit`: ends the process. Its counters are written first (a forked
/// child that ends with `_exit`, as Python's `os._exit` does, still
/// reports), unless it is a `vfork` child.
#[no_mangle]
pub unsafe extern "C" fn _exit(code: c_int) -> ! {
    no_unwind("_exit", crate::stats::write_exit_report);
    // SAFETY: exit_group ends every thread of the process; it never returns.
    unsafe { libc::syscall(libc::SYS_exit_group, code) };
    unreachable!("exit_group returned")
}

/// # Safety
/// C `_Exit` (the same as `_exit`).
#[no_mangle]
pub unsafe extern "C" fn _Exit(code: c_int) -> ! {
    // SAFETY: _exit's contract.
    unsafe { _exit(code) }
}

type SigmaskFn = unsafe extern "C" fn(c_int, *const libc::sigset_t, *mut libc::sigset_t) -> c_int;

/// glibc's `name`, a sigmask function, looked up once into `slot`.
fn next_sigmask(slot: &std::sync::atomic::AtomicUsize, name: &std::ffi::CStr) -> Option<SigmaskFn> {
    match sys::next_symbol(slot, name) {
        0 => None,
        // SAFETY: dlsym's non-null result for a function of this type.
        f => Some(unsafe { std::mem::transmute::<usize, SigmaskFn>(f) }),
    }
}

/// `set` without SIGSYS (and SIGBUS, where faults are served in-thread)
/// where the syscall guard is used: a thread blocking
/// SIGSYS when the guard is installed (at the first region) would die at
/// its first trap, and so would one that blocks it later. The guard's own
/// filter traps `rt_sigprocmask` only in its `IndirectPolicy` scope, not
/// the C library's call inside `pthread_sigmask`: jemalloc's background
/// threads, which block every signal, died at their first trapped call
/// (an allocation of theirs reaching these hooks).
///
/// # Safety
/// `set` is null or points to a sigset.
unsafe fn sigsys_kept(
    how: c_int,
    set: *const libc::sigset_t,
    copy: &mut libc::sigset_t,
) -> *const libc::sigset_t {
    if set.is_null() || how == libc::SIG_UNBLOCK || !syscall_guard::guard_used() {
        return set;
    }
    // SAFETY: the caller's guarantee; `copy` is ours.
    unsafe { *copy = *set };
    // SIGSYS, and SIGBUS where faults are served in-thread.
    guard::sanitize_sigset(copy);
    copy
}

type PthreadCreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    extern "C" fn(*mut c_void) -> *mut c_void,
    *mut c_void,
) -> c_int;

/// C `pthread_create`, with every allocation glibc makes inside it from
/// glibc's own allocator: the new thread's TLS vector (and what else it
/// hands the thread) is allocated here and touched by the new thread
/// before it unblocks signals. On a paged page, that touch is a fault the
/// thread cannot take where faults are served in-thread (a SIGBUS while
/// SIGBUS is blocked kills the process): `sort` with two threads under
/// `--small-objects` died so, started by a shell.
///
/// # Safety
/// C `pthread_create`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    no_unwind("pthread_create", || {
        let f = sys::next_symbol(&NEXT, c"pthread_create");
        if f == 0 {
            return libc::EAGAIN;
        }
        // SAFETY: dlsym's non-null result for glibc's pthread_create.
        let f = unsafe { std::mem::transmute::<usize, PthreadCreateFn>(f) };
        let _unpaged = gate::force_busy();
        // SAFETY: glibc's pthread_create with the caller's arguments.
        unsafe { f(thread, attr, start, arg) }
    })
}

type SetlocaleFn = unsafe extern "C" fn(c_int, *const libc::c_char) -> *mut libc::c_char;
type NewlocaleFn =
    unsafe extern "C" fn(c_int, *const libc::c_char, libc::locale_t) -> libc::locale_t;

/// C `setlocale`, with the locale data glibc loads from glibc's own
/// allocator: every new thread reads it (`__ctype_init`) before it
/// unblocks signals, so a page of it must never fault (where faults are
/// served in-thread, a SIGBUS while SIGBUS is blocked kills the process:
/// `sort` under C.UTF-8 with two threads and `--small-objects` died so).
///
/// # Safety
/// C `setlocale`.
#[no_mangle]
pub unsafe extern "C" fn setlocale(
    category: c_int,
    locale: *const libc::c_char,
) -> *mut libc::c_char {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    no_unwind("setlocale", || {
        let f = sys::next_symbol(&NEXT, c"setlocale");
        if f == 0 {
            return std::ptr::null_mut();
        }
        // SAFETY: dlsym's non-null result for glibc's setlocale.
        let f = unsafe { std::mem::transmute::<usize, SetlocaleFn>(f) };
        let _unpaged = gate::force_busy();
        // SAFETY: glibc's setlocale with the caller's arguments.
        unsafe { f(category, locale) }
    })
}

/// C `newlocale`: its locale data from glibc's own allocator, as for
/// [`setlocale`] (a thread that `uselocale`s it reads it at its start).
///
/// # Safety
/// C `newlocale`.
#[no_mangle]
pub unsafe extern "C" fn newlocale(
    mask: c_int,
    locale: *const libc::c_char,
    base: libc::locale_t,
) -> libc::locale_t {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    no_unwind("newlocale", || {
        let f = sys::next_symbol(&NEXT, c"newlocale");
        if f == 0 {
            return std::ptr::null_mut();
        }
        // SAFETY: dlsym's non-null result for glibc's newlocale.
        let f = unsafe { std::mem::transmute::<usize, NewlocaleFn>(f) };
        let _unpaged = gate::force_busy();
        // SAFETY: glibc's newlocale with the caller's arguments.
        unsafe { f(mask, locale, base) }
    })
}

/// # Safety
/// C `pthread_sigmask`.
#[no_mangle]
pub unsafe extern "C" fn pthread_sigmask(
    how: c_int,
    set: *const libc::sigset_t,
    oset: *mut libc::sigset_t,
) -> c_int {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    no_unwind("pthread_sigmask", || {
        // SAFETY: an all-zero sigset is a valid (empty) one.
        let mut copy: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is the caller's, null or a sigset.
        let set = unsafe { sigsys_kept(how, set, &mut copy) };
        match next_sigmask(&NEXT, c"pthread_sigmask") {
            // SAFETY: glibc's pthread_sigmask with the caller's arguments.
            Some(f) => unsafe { f(how, set, oset) },
            None => libc::ENOSYS,
        }
    })
}

/// # Safety
/// C `sigprocmask`.
#[no_mangle]
pub unsafe extern "C" fn sigprocmask(
    how: c_int,
    set: *const libc::sigset_t,
    oset: *mut libc::sigset_t,
) -> c_int {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    no_unwind("sigprocmask", || {
        // SAFETY: an all-zero sigset is a valid (empty) one.
        let mut copy: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is the caller's, null or a sigset.
        let set = unsafe { sigsys_kept(how, set, &mut copy) };
        match next_sigmask(&NEXT, c"sigprocmask") {
            // SAFETY: glibc's sigprocmask with the caller's arguments.
            Some(f) => unsafe { f(how, set, oset) },
            None => {
                set_errno(libc::ENOSYS);
                -1
            }
        }
    })
}

/// # Safety
/// C `sigaction`.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    // No allocation, no lock: sigaction is async-signal-safe, and
    // programs call it from their signal handlers (glibc's is looked up
    // when the library loads).
    // SAFETY: the caller's arguments, as for sigaction(2).
    if let Some(rc) = unsafe { crate::sigbus::program_sigaction(sig, act, old) } {
        return rc;
    }
    // SAFETY: all-zero is a valid sigaction.
    let mut copy: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `act` is the caller's, null or valid.
    let act = unsafe { crate::sigbus::kept_out_of_mask(act, &mut copy) };
    // SAFETY: the caller's arguments, as for sigaction(2).
    if let Some(rc) = unsafe { crate::core_dump::program_sigaction(sig, act, old) } {
        return rc;
    }
    match crate::core_dump::next_sigaction() {
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
        // SAFETY: glibc's sigaction, with the caller's arguments.
        Some(f) => unsafe { f(sig, act, old) },
    }
}

/// # Safety
/// C `signal`: BSD semantics, as glibc's (`SA_RESTART`, the signal
/// blocked in its handler).
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    // SAFETY: all-zero is a valid sigaction.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: all-zero is a valid sigaction to be written.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `act.sa_mask` is a valid set; the call gets valid pointers.
    let ours = unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaddset(&mut act.sa_mask, sig);
        crate::sigbus::program_sigaction(sig, &act, &mut old)
            .or_else(|| crate::core_dump::program_sigaction(sig, &act, &mut old))
    };
    match ours {
        Some(0) => old.sa_sigaction,
        Some(_) => libc::SIG_ERR,
        None => match sys::next_symbol(&NEXT, c"signal") {
            0 => libc::SIG_ERR,
            // SAFETY: glibc's signal, with the caller's arguments.
            f => unsafe {
                std::mem::transmute::<
                    usize,
                    unsafe extern "C" fn(c_int, libc::sighandler_t) -> libc::sighandler_t,
                >(f)(sig, handler)
            },
        },
    }
}
