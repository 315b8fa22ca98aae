//! Giving anonymous memory back to the OS: `MADV_DONTNEED` of many ranges
//! of this process with one `process_madvise(2)`.
//!
//! Each `madvise(MADV_DONTNEED)` flushes the TLB of every CPU that runs the
//! process: a shootdown IPI per call to each CPU where another of its
//! threads is running (12.8 µs per page measured on the 2-vCPU VM with a
//! second thread busy, against 0.77 µs per page for 64 ranges in one
//! `process_madvise`). Since Linux 6.16 the kernel flushes once per
//! `process_madvise` call, for all of its ranges. Both the runtime's
//! eviction (stored runs unmapped in groups) and zsmalloc's arena (free
//! pages given back past the hot cache) discard this way.
//!
//! The call is issued with `syscall(2)`: in a program under the LD_PRELOAD
//! library, the symbol `madvise` is the library's hook.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Ranges per `process_madvise` call; the vector lives on the stack.
const CHUNK: usize = 64;

fn check(r: libc::c_long) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// `MADV_DONTNEED` of several `(addr, len)` ranges of this process in as
/// few `process_madvise(2)` calls as fit (64 ranges each). Returns how many
/// leading ranges were discarded in full (the kernel stops at the first it
/// cannot advise). `Err`: the call is not available here (a kernel before
/// 6.13 refuses this advice; no `pidfd_open` before 5.3; a seccomp policy);
/// nothing was discarded and [`discard_each`] falls back to
/// [`discard_one`].
///
/// # Safety
/// As `madvise(2)` with `MADV_DONTNEED` for every range: their contents
/// read back as zeros afterwards, so nothing may still need them.
unsafe fn discard_ranges(ranges: &[(usize, usize)]) -> io::Result<usize> {
    if !SELF_REFUSED.load(Ordering::Relaxed) {
        // Refused (EBADF before 6.15, or whatever a policy answers):
        // nothing was discarded, and the pidfd of the process is tried.
        // SAFETY: the caller's guarantee.
        match unsafe { discard_ranges_of(PIDFD_SELF_THREAD_GROUP, ranges) } {
            Err(_) => SELF_REFUSED.store(true, Ordering::Relaxed),
            done => return done,
        }
    }
    // A pidfd of this process, opened per call: one cached across a fork
    // would name the parent.
    // SAFETY: pidfd_open takes a pid and flags; a new fd is returned.
    let fd = check(unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) })?;
    // SAFETY: `fd` was just opened and is ours alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the caller's guarantee.
    unsafe { discard_ranges_of(fd.as_raw_fd(), ranges) }
}

/// The calling process, as a pidfd (`PIDFD_SELF_THREAD_GROUP`, Linux 6.15):
/// no `pidfd_open`, `getpid` and `close` around each call, and in a forked
/// child it names the child.
const PIDFD_SELF_THREAD_GROUP: i32 = -10001;

/// The kernel refused [`PIDFD_SELF_THREAD_GROUP`] once (it does not know it
/// before 6.15): a pidfd is opened per call from then on.
static SELF_REFUSED: AtomicBool = AtomicBool::new(false);

/// [`discard_ranges`] through the pidfd `fd`.
///
/// # Safety
/// As for [`discard_ranges`].
unsafe fn discard_ranges_of(fd: i32, ranges: &[(usize, usize)]) -> io::Result<usize> {
    let mut done = 0;
    for chunk in ranges.chunks(CHUNK) {
        // The vector on this stack: never in the runtime's arena, so the
        // syscall guard's filter lets the call through.
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
                fd,
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

/// `madvise(addr, len, MADV_DONTNEED)`, the one-range fallback.
///
/// # Safety
/// As `madvise(2)` with `MADV_DONTNEED`: the range reads back as zeros.
unsafe fn discard_one(addr: usize, len: usize) -> io::Result<()> {
    // SAFETY: the caller's guarantee.
    check(unsafe { libc::syscall(libc::SYS_madvise, addr, len, libc::MADV_DONTNEED) }).map(drop)
}

/// `process_madvise` refused this advice once in this process (an older
/// kernel, a seccomp policy): from then on every range goes by itself.
static BATCH_REFUSED: AtomicBool = AtomicBool::new(false);

/// `MADV_DONTNEED` of every range, with its own result: as many as
/// possible in [`discard_ranges`] batches, the rest (all of them where the
/// kernel refuses batches, or those after one a batch stopped at) one by
/// one with [`discard_one`]. What the runtime's eviction and zsmalloc's
/// arena call.
///
/// # Safety
/// As `madvise(2)` with `MADV_DONTNEED` for every range.
pub unsafe fn discard_each(ranges: &[(usize, usize)]) -> Vec<io::Result<()>> {
    let mut batched = 0;
    if ranges.len() > 1 && !BATCH_REFUSED.load(Ordering::Relaxed) {
        // SAFETY: the caller's guarantee.
        match unsafe { discard_ranges(ranges) } {
            Ok(n) => batched = n,
            Err(_) => BATCH_REFUSED.store(true, Ordering::Relaxed),
        }
    }
    ranges
        .iter()
        .enumerate()
        .map(|(i, &(addr, len))| {
            if i < batched {
                Ok(())
            } else {
                // SAFETY: the caller's guarantee, for this range.
                unsafe { discard_one(addr, len) }
            }
        })
        .collect()
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

/// Sorted page numbers into `(first, count)` runs of consecutive pages.
pub fn page_runs(sorted: &[u32]) -> Vec<(u32, usize)> {
    let mut runs: Vec<(u32, usize)> = Vec::new();
    for &p in sorted {
        match runs.last_mut() {
            Some((first, n)) if u64::from(*first) + *n as u64 == u64::from(p) => *n += 1,
            _ => runs.push((p, 1)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PAGE_SIZE;

    #[test]
    fn count_full_stops_at_the_first_partial_range() {
        let r = [(0, 4096), (8192, 8192), (65536, 4096)];
        assert_eq!(count_full(&r, 0), 0);
        assert_eq!(count_full(&r, 4096), 1);
        assert_eq!(count_full(&r, 8192), 1);
        assert_eq!(count_full(&r, 12288), 2);
        assert_eq!(count_full(&r, 16384), 3);
    }

    #[test]
    fn page_runs_joins_consecutive_pages() {
        assert_eq!(page_runs(&[]), vec![]);
        assert_eq!(page_runs(&[3]), vec![(3, 1)]);
        assert_eq!(
            page_runs(&[1, 2, 3, 7, 9, 10, u32::MAX]),
            vec![(1, 3), (7, 1), (9, 2), (u32::MAX, 1)]
        );
    }

    /// Writes a pattern into `pages` pages of a fresh mapping.
    fn filled(pages: usize) -> *mut u8 {
        // SAFETY: a fresh private anonymous mapping, no address asked for.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * PAGE_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let p = p.cast::<u8>();
        // SAFETY: the mapping is `pages` pages long and writable.
        unsafe { std::ptr::write_bytes(p, 0xa5, pages * PAGE_SIZE) };
        p
    }

    fn page_is(p: *mut u8, page: usize, byte: u8) -> bool {
        // SAFETY: callers pass pages inside their mapping.
        let s = unsafe { std::slice::from_raw_parts(p.add(page * PAGE_SIZE), PAGE_SIZE) };
        s.iter().all(|&b| b == byte)
    }

    #[test]
    fn discarded_ranges_read_back_as_zeros_and_others_keep_their_bytes() {
        let pages = 200;
        let p = filled(pages);
        // Every other page: 100 ranges, more than one chunk.
        let ranges: Vec<(usize, usize)> = (0..pages)
            .step_by(2)
            .map(|i| (p as usize + i * PAGE_SIZE, PAGE_SIZE))
            .collect();
        // SAFETY: the ranges are pages of our own mapping, no longer needed.
        let results = unsafe { discard_each(&ranges) };
        assert_eq!(results.len(), ranges.len());
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        for i in 0..pages {
            let want = if i % 2 == 0 { 0 } else { 0xa5 };
            assert!(page_is(p, i, want), "page {i}");
        }
        // SAFETY: the mapping is ours and nothing refers to it any more.
        unsafe { libc::munmap(p.cast(), pages * PAGE_SIZE) };
    }

    #[test]
    fn a_pidfd_opened_for_the_call_discards_as_the_self_sentinel_does() {
        // The path of kernels before 6.15, whatever this one is.
        let pages = 8;
        let p = filled(pages);
        let ranges = [
            (p as usize, PAGE_SIZE),
            (p as usize + 5 * PAGE_SIZE, 2 * PAGE_SIZE),
        ];
        // SAFETY: pidfd_open of our own pid.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
        assert!(fd >= 0, "{}", io::Error::last_os_error());
        // SAFETY: the ranges are pages of our own mapping, no longer needed.
        let done = unsafe { discard_ranges_of(fd as i32, &ranges) }.unwrap();
        // SAFETY: `fd` is ours.
        unsafe { libc::close(fd as i32) };
        assert_eq!(done, 2);
        for i in 0..pages {
            let want = if [0, 5, 6].contains(&i) { 0 } else { 0xa5 };
            assert!(page_is(p, i, want), "page {i}");
        }
        // SAFETY: the mapping is ours and nothing refers to it any more.
        unsafe { libc::munmap(p.cast(), pages * PAGE_SIZE) };
    }
}
