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
//! or changes one, so errors are ignored. On tmpfs or ramfs (`/dev/shm`)
//! the file is memory whatever we advise, so nothing is: the calls would
//! only cost (2–8% of the small-object programs' time under the
//! compatibility suite's limits).

use common::sync::Mutex;
use std::collections::VecDeque;
use std::os::fd::RawFd;

/// Most bytes written to the file that may still sit in the page cache.
pub const WRITTEN_LAG_BYTES: u64 = 4 << 20;

/// Drops a file's pages from the page cache once written or read.
#[derive(Debug)]
pub(crate) struct CacheDrop {
    fd: RawFd,
    /// The file is on a disk, not in memory (tmpfs, ramfs).
    on_disk: bool,
    /// Runs written and not yet dropped, oldest first, and their bytes.
    written: Mutex<(VecDeque<(u64, u64)>, u64)>,
}

impl CacheDrop {
    /// For the open file `fd` (kept open by the caller while this lives).
    pub fn new(fd: RawFd) -> Self {
        let on_disk = !in_memory(fd);
        if on_disk {
            // SAFETY: advice on a file descriptor; no memory is passed.
            unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
        }
        Self {
            fd,
            on_disk,
            written: Mutex::new((VecDeque::new(), 0)),
        }
    }

    /// Whether the file is on a disk, so that its pages are dropped.
    #[cfg(test)]
    pub fn on_disk(&self) -> bool {
        self.on_disk
    }

    /// `len` bytes at `pos` were read: they leave the cache. One system
    /// call, no lock and no allocation (a fault handler calls this).
    pub fn after_read(&self, pos: u64, len: usize) {
        if self.on_disk {
            self.drop_range(pos, len as u64);
        }
    }

    /// `len` bytes at `pos` were written: their I/O starts now, and the
    /// oldest runs past [`WRITTEN_LAG_BYTES`] leave the cache.
    pub fn after_write(&self, pos: u64, len: usize) {
        if !self.on_disk {
            return;
        }
        let len = len as u64;
        self.sync_range(pos, len, libc::SYNC_FILE_RANGE_WRITE);
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
        self.sync_range(
            pos,
            len,
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER,
        );
    }

    /// `sync_file_range(2)` of the range with `flags`: starts its
    /// writeback, and waits for it where the flags say so.
    fn sync_range(&self, pos: u64, len: u64, flags: libc::c_uint) {
        // SAFETY: writeback of a range of a file descriptor; no memory is
        // passed.
        unsafe {
            libc::sync_file_range(self.fd, pos as libc::off64_t, len as libc::off64_t, flags)
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

/// Whether `fd`'s file lives in memory (tmpfs, ramfs): its pages are the
/// file and cannot leave. A file system that cannot be asked counts as
/// a disk.
pub(crate) fn in_memory(fd: RawFd) -> bool {
    common::memfs::fd_in_memory(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn files_in_memory_are_left_alone_and_files_on_a_disk_are_dropped() {
        let shm = crate::io::anonymous_file(std::path::Path::new("/dev/shm")).unwrap();
        assert!(!CacheDrop::new(shm.as_raw_fd()).on_disk(), "/dev/shm");
        let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        let disk = crate::io::anonymous_file(&target).unwrap();
        assert!(
            CacheDrop::new(disk.as_raw_fd()).on_disk(),
            "{}",
            target.display()
        );
    }
}
