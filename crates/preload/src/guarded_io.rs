//! A fast path for the syscall guard: `read`, `write`, `pread`, `pwrite`
//! on a region buffer, called through the C library's symbols, pin their
//! buffer and go to the kernel from the guard's trampoline directly
//! (`guard::guarded_syscall`), without the SIGSYS trap (about 4 µs on
//! this machine). Everything else, and these calls while no guard is in,
//! go to glibc's definitions unchanged. The guard's filter stays the
//! complete path: calls made inside the C library (`fread`'s) or with raw
//! `syscall` instructions still trap.
//!
//! A guarded call is not a pthread cancellation point (it does not pass
//! through glibc's wrapper).

use crate::preload::{self, no_unwind};
use libc::{c_int, c_void, off_t, size_t, ssize_t};
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The definition of `name` after this library's (glibc's), looked up once.
fn next(slot: &AtomicUsize, name: &CStr) -> usize {
    let mut f = slot.load(Ordering::Acquire);
    if f == 0 {
        // SAFETY: a lookup of a NUL-terminated name after this library.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        slot.store(f, Ordering::Release);
    }
    f
}

/// Whether the call on `[buf, buf + len)` takes the guarded path.
fn guarded(buf: *const c_void, len: size_t) -> bool {
    len > 0
        && preload::in_bounds(buf as usize, len)
        && guard::arena().is_some()
        && !preload::passes_through()
}

/// A raw result (`-errno` on failure) as the C library returns it.
fn c_result(ret: isize) -> ssize_t {
    if ret < 0 {
        // SAFETY: errno is this thread's own.
        unsafe { *libc::__errno_location() = (-ret) as c_int };
        -1
    } else {
        ret
    }
}

/// # Safety
/// As for `guard::guarded_syscall`.
unsafe fn guarded_call(nr: libc::c_long, args: [u64; 6]) -> ssize_t {
    // SAFETY: the caller's guarantee.
    c_result(unsafe { guard::guarded_syscall(nr, args) })
}

type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t;
type PreadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t;
type PwriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t;

macro_rules! next_or_enosys {
    ($slot:expr, $name:expr, $ty:ty, |$f:ident| $call:expr) => {{
        match next($slot, $name) {
            0 => c_result(-(libc::ENOSYS as isize)),
            p => {
                // SAFETY: dlsym's non-null result for a function of this type.
                let $f = unsafe { std::mem::transmute::<usize, $ty>(p) };
                $call
            }
        }
    }};
}

/// # Safety
/// C `read`.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    no_unwind("read", || {
        if guarded(buf, n) {
            // SAFETY: the program's own arguments.
            return unsafe {
                guarded_call(libc::SYS_read, [fd as u64, buf as u64, n as u64, 0, 0, 0])
            };
        }
        // SAFETY: glibc's read with the caller's arguments.
        next_or_enosys!(&NEXT, c"read", ReadFn, |f| unsafe { f(fd, buf, n) })
    })
}

/// # Safety
/// C `write`.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    no_unwind("write", || {
        if guarded(buf, n) {
            // SAFETY: the program's own arguments.
            return unsafe {
                guarded_call(libc::SYS_write, [fd as u64, buf as u64, n as u64, 0, 0, 0])
            };
        }
        // SAFETY: glibc's write with the caller's arguments.
        next_or_enosys!(&NEXT, c"write", WriteFn, |f| unsafe { f(fd, buf, n) })
    })
}

/// # Safety
/// C `pread` (`pread64`: the same call on 64-bit).
#[no_mangle]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    no_unwind("pread", || {
        if guarded(buf, n) {
            let args = [fd as u64, buf as u64, n as u64, off as u64, 0, 0];
            // SAFETY: the program's own arguments.
            return unsafe { guarded_call(libc::SYS_pread64, args) };
        }
        // SAFETY: glibc's pread with the caller's arguments.
        next_or_enosys!(&NEXT, c"pread", PreadFn, |f| unsafe { f(fd, buf, n, off) })
    })
}

/// # Safety
/// C `pread64`.
#[no_mangle]
pub unsafe extern "C" fn pread64(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t {
    // SAFETY: pread's contract.
    unsafe { pread(fd, buf, n, off) }
}

/// # Safety
/// C `pwrite` (`pwrite64`: the same call on 64-bit).
#[no_mangle]
pub unsafe extern "C" fn pwrite(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    no_unwind("pwrite", || {
        if guarded(buf, n) {
            let args = [fd as u64, buf as u64, n as u64, off as u64, 0, 0];
            // SAFETY: the program's own arguments.
            return unsafe { guarded_call(libc::SYS_pwrite64, args) };
        }
        // SAFETY: glibc's pwrite with the caller's arguments.
        next_or_enosys!(&NEXT, c"pwrite", PwriteFn, |f| unsafe {
            f(fd, buf, n, off)
        })
    })
}

/// # Safety
/// C `pwrite64`.
#[no_mangle]
pub unsafe extern "C" fn pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t {
    // SAFETY: pwrite's contract.
    unsafe { pwrite(fd, buf, n, off) }
}
