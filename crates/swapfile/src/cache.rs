//! Keeping the swap file out of the page cache.
//!
//! The swap file is an ordinary buffered file, so every page written to
//! it would stay in the kernel's page cache, dirty, until the flusher
//! writes it (`dirty_expire_centisecs`, 30 s by default) and then clean
//! until memory pressure reclaims it; every page read from it would stay
//! there too. A page written back would then still take a page of memory
//! (uncompressed, outside any limit of ours, in no process's RSS) and
//! read back at memory speed: nothing saved, and a swap device faster
//! than any real one. The kernel's own swap goes to the device and does
//! not linger in the page cache; so does ours:
//!
//! * the file is read at random (`POSIX_FADV_RANDOM`): no kernel
//!   readahead around our reads, the swap layer does its own;
//! * a written run goes to the device at once (`sync_file_range` with
//!   `SYNC_FILE_RANGE_WRITE`: the I/O starts, nobody waits for it);
//! * once more than [`WRITTEN_LAG_BYTES`] have been written after a run,
//!   the run is waited for (it has long finished, normally) and dropped
//!   (`POSIX_FADV_DONTNEED`): at most that much written data stays in the
//!   cache, as the kernel's swap cache holds pages under writeback;
//! * a page read is dropped once read.
//!
//! All of it is advice: an error leaves a page in the cache, never loses
//! or changes one, so errors are ignored. On tmpfs (`/dev/shm`) the file
//! is memory whatever we advise.

use common::sync::Mutex;
use std::collections::VecDeque;
use std::os::fd::RawFd;

/// Most bytes written to the file that may still sit in the page cache.
pub const WRITTEN_LAG_BYTES: u64 = 4 << 20;

/// Drops a file's pages from the page cache once written or read.
#[derive(Debug)]
pub(crate) struct CacheDrop {
    fd: RawFd,
    /// Runs written and not yet dropped, oldest first, and their bytes.
    written: Mutex<(VecDeque<(u64, u64)>, u64)>,
}

impl CacheDrop {
    /// For the open file `fd` (kept open by the caller while this lives).
    pub fn new(fd: RawFd) -> Self {
        // SAFETY: advice on a file descriptor; no memory is passed.
        unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
        Self {
            fd,
            written: Mutex::new((VecDeque::new(), 0)),
        }
    }

    /// `len` bytes at `pos` were read: they leave the cache. One system
    /// call, no lock and no allocation (a fault handler calls this).
    pub fn after_read(&self, pos: u64, len: usize) {
        self.drop_range(pos, len as u64);
    }

    /// `len` bytes at `pos` were written: their I/O starts now, and the
    /// oldest runs past [`WRITTEN_LAG_BYTES`] leave the cache.
    pub fn after_write(&self, pos: u64, len: usize) {
        let len = len as u64;
        // SAFETY: starts writeback of a range of a file descriptor; no
        // memory is passed.
        unsafe {
            libc::sync_file_range(
                self.fd,
                pos as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        let mut written = self.written.lock();
        let (runs, bytes) = &mut *written;
        runs.push_back((pos, len));
        *bytes += len;
        while *bytes > WRITTEN_LAG_BYTES {
            let Some((old_pos, old_len)) = runs.pop_front() else {
                break;
            };
            *bytes -= old_len;
            self.wait_written(old_pos, old_len);
            self.drop_range(old_pos, old_len);
        }
    }

    /// Waits until the range's writeback, started earlier, is done: a
    /// page under writeback cannot be dropped.
    fn wait_written(&self, pos: u64, len: u64) {
        // SAFETY: as in `after_write`.
        unsafe {
            libc::sync_file_range(
                self.fd,
                pos as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER,
            )
        };
    }

    fn drop_range(&self, pos: u64, len: u64) {
        // SAFETY: advice on a range of a file descriptor; no memory is
        // passed.
        unsafe {
            libc::posix_fadvise(
                self.fd,
                pos as libc::off_t,
                len as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            )
        };
    }
}
