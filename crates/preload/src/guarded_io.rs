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

use crate::gate;
use crate::libc_alloc::next_symbol;
use crate::preload::{self, no_unwind};
use libc::{c_int, c_void, off_t, size_t, ssize_t};
use std::ffi::CStr;
use std::sync::atomic::AtomicUsize;

/// Whether the call on `[buf, buf + len)` takes the guarded path.
fn guarded(buf: *const c_void, len: size_t) -> bool {
    len > 0
        && preload::in_bounds(buf as usize, len)
        && guard::arena().is_some()
        && !gate::passes_through()
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

/// System call `nr` with `args` through the guard when its buffer
/// `[buf, buf + len)` is a region's; otherwise `glibc` called with glibc's
/// `name` (looked up once into `slot`), or ENOSYS if there is none.
///
/// # Safety
/// `args` are the program's arguments of `nr`, and `glibc` calls `name`'s
/// definition (given as an address) with the same arguments.
unsafe fn call(
    nr: libc::c_long,
    args: [u64; 6],
    (buf, len): (*const c_void, size_t),
    (slot, name): (&AtomicUsize, &CStr),
    glibc: impl FnOnce(usize) -> ssize_t,
) -> ssize_t {
    if guarded(buf, len) {
        // SAFETY: the caller's guarantee; none of these calls leaves the
        // frame.
        return c_result(unsafe { guard::guarded_syscall(nr, args) });
    }
    match next_symbol(slot, name) {
        0 => c_result(-(libc::ENOSYS as isize)),
        f => glibc(f),
    }
}

type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t;
type PreadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t;
type PwriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t;

/// # Safety
/// C `read`.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let args = [fd as u64, buf as u64, n as u64, 0, 0, 0];
    no_unwind("read", || {
        // SAFETY: the program's arguments; `f` is glibc's read.
        unsafe {
            call(libc::SYS_read, args, (buf, n), (&NEXT, c"read"), |f| {
                std::mem::transmute::<usize, ReadFn>(f)(fd, buf, n)
            })
        }
    })
}

/// # Safety
/// C `write`.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let args = [fd as u64, buf as u64, n as u64, 0, 0, 0];
    no_unwind("write", || {
        // SAFETY: the program's arguments; `f` is glibc's write.
        unsafe {
            call(libc::SYS_write, args, (buf, n), (&NEXT, c"write"), |f| {
                std::mem::transmute::<usize, WriteFn>(f)(fd, buf, n)
            })
        }
    })
}

/// # Safety
/// C `pread` (`pread64`: the same call on 64-bit).
#[no_mangle]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let args = [fd as u64, buf as u64, n as u64, off as u64, 0, 0];
    no_unwind("pread", || {
        // SAFETY: the program's arguments; `f` is glibc's pread.
        unsafe {
            call(libc::SYS_pread64, args, (buf, n), (&NEXT, c"pread"), |f| {
                std::mem::transmute::<usize, PreadFn>(f)(fd, buf, n, off)
            })
        }
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
    let args = [fd as u64, buf as u64, n as u64, off as u64, 0, 0];
    no_unwind("pwrite", || {
        // SAFETY: the program's arguments; `f` is glibc's pwrite.
        unsafe {
            call(
                libc::SYS_pwrite64,
                args,
                (buf, n),
                (&NEXT, c"pwrite"),
                |f| std::mem::transmute::<usize, PwriteFn>(f)(fd, buf, n, off),
            )
        }
    })
}

/// # Safety
/// C `pwrite64`.
#[no_mangle]
pub unsafe extern "C" fn pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t {
    // SAFETY: pwrite's contract.
    unsafe { pwrite(fd, buf, n, off) }
}
