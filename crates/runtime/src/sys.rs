//! The memory system calls the runtime makes, issued with `syscall(2)`
//! directly: in a program under the LD_PRELOAD library, the symbols `mmap`,
//! `munmap` and `madvise` are the library's own hooks, which must not see
//! the runtime's calls.

use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

fn check(r: libc::c_long) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// `mmap(2)`; `Err` carries errno.
///
/// # Safety
/// As `mmap(2)`: a `MAP_FIXED` mapping replaces whatever was at `addr`.
pub unsafe fn mmap(
    addr: usize,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
) -> io::Result<usize> {
    // SAFETY: the caller's guarantee; an anonymous mapping takes no fd.
    check(unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot, flags, -1, 0) })
}

/// `munmap(2)`.
///
/// # Safety
/// Nothing may use `[addr, addr + len)` afterwards.
pub unsafe fn munmap(addr: usize, len: usize) -> io::Result<()> {
    // SAFETY: the caller's guarantee.
    check(unsafe { libc::syscall(libc::SYS_munmap, addr, len) }).map(drop)
}

/// `madvise(2)`.
///
/// # Safety
/// Discarding advice (`MADV_DONTNEED`) zeroes the range's contents.
pub unsafe fn madvise(addr: usize, len: usize, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: the caller's guarantee.
    check(unsafe { libc::syscall(libc::SYS_madvise, addr, len, advice) }).map(drop)
}

/// This thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

thread_local! {
    /// This thread's id, and the fork epoch it was asked in. A constant
    /// initialiser and no destructor: plain thread-local storage, safe to
    /// read in a signal handler.
    static TID: Cell<(u64, i32)> = const { Cell::new((0, 0)) };
}

/// Bumped in a forked child: the forking thread's cached id is its
/// parent's there.
static FORK_EPOCH: AtomicU64 = AtomicU64::new(1);

/// [`gettid`], asked of the kernel once per thread (and again after a
/// fork): the fault path tells its threads apart by it at every fault.
/// For telling threads apart only; a signal to this thread names
/// [`gettid`] itself (a child forked by a raw `clone`, which runs no fork
/// handler, would still read its parent's thread's id here).
pub fn cached_tid() -> i32 {
    let epoch = FORK_EPOCH.load(Ordering::Relaxed);
    TID.with(|c| match c.get() {
        (e, tid) if e == epoch => tid,
        _ => {
            let tid = gettid();
            c.set((epoch, tid));
            tid
        }
    })
}

/// In a forked child, before it serves a fault: thread ids are asked
/// again.
pub fn forget_cached_tids() {
    FORK_EPOCH.fetch_add(1, Ordering::Relaxed);
}
