//! The memory system calls the runtime makes, issued with `syscall(2)`
//! directly: in a program under the LD_PRELOAD library, the symbols `mmap`,
//! `munmap` and `madvise` are the library's own hooks, which must not see
//! the runtime's calls.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

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

/// `MADV_DONTNEED` of several ranges of this process in one
/// `process_madvise(2)`: since Linux 6.16 the kernel flushes the TLB once
/// for all of them, where one `madvise` per range flushes (an IPI to every
/// CPU running the program) per range. Returns how many leading ranges
/// were unmapped in full (the call stops at the first it cannot advise).
/// `Err`: the call is not available here (a kernel before 6.13 refuses
/// this advice; no `pidfd_open` before 5.3).
///
/// # Safety
/// As [`madvise`] with `MADV_DONTNEED` for every range.
pub unsafe fn discard_ranges(ranges: &[(usize, usize)]) -> io::Result<usize> {
    // A pidfd of this process, opened per call: one cached across a fork
    // would name the parent.
    // SAFETY: pidfd_open takes a pid and flags; a new fd is returned.
    let fd = check(unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) })?;
    // SAFETY: `fd` was just opened and is ours alone.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
    let mut done = 0;
    // The vector on this stack: never in the arena, so the syscall guard's
    // filter lets the call through.
    const CHUNK: usize = 64;
    for chunk in ranges.chunks(CHUNK) {
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; CHUNK];
        for (v, &(addr, len)) in iov.iter_mut().zip(chunk) {
            *v = libc::iovec {
                iov_base: addr as *mut libc::c_void,
                iov_len: len,
            };
        }
        // SAFETY: the caller's guarantee for every range; `iov` holds
        // `chunk.len()` initialized entries.
        let r = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                fd.as_raw_fd(),
                iov.as_ptr(),
                chunk.len(),
                libc::MADV_DONTNEED,
                0,
            )
        };
        let advised = match check(r) {
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => 0,
        };
        let full = count_full(chunk, advised);
        done += full;
        if full < chunk.len() {
            break;
        }
    }
    Ok(done)
}

/// How many leading ranges `advised` bytes cover in full.
fn count_full(ranges: &[(usize, usize)], mut advised: usize) -> usize {
    ranges
        .iter()
        .take_while(|&&(_, len)| {
            let whole = advised >= len;
            advised = advised.saturating_sub(len);
            whole
        })
        .count()
}

/// This thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}
