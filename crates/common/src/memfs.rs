//! Whether a file or folder lives in memory (tmpfs, ramfs): its pages
//! are the file and cannot leave for a disk. A file system that cannot be
//! asked counts as a disk.

use std::os::fd::RawFd;
use std::path::Path;

/// ramfs's `f_type` (`linux/magic.h`; the libc crate has tmpfs's only).
const RAMFS_MAGIC: libc::c_long = 0x8584_58f6;

/// Whether a file system of type `f_type` keeps its files in memory.
fn in_memory(f_type: libc::c_long) -> bool {
    f_type == libc::TMPFS_MAGIC || f_type == RAMFS_MAGIC
}

/// The `f_type` of the file system `path` is on; `None` if it cannot be
/// asked (no such path).
pub fn fs_type(path: &Path) -> Option<libc::c_long> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statfs` is plain data, filled by the call; `c` is a valid
    // NUL-terminated path.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the result is checked.
    (unsafe { libc::statfs(c.as_ptr(), &mut fs) } == 0).then_some(fs.f_type)
}

/// Whether the folder (or file) `path` lives in memory.
pub fn path_in_memory(path: &Path) -> bool {
    fs_type(path).is_some_and(in_memory)
}

/// Whether the file open at `fd` lives in memory.
pub fn fd_in_memory(fd: RawFd) -> bool {
    // SAFETY: a zeroed statfs is a valid buffer for fstatfs to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a file descriptor and a buffer of the right type; the
    // result is checked.
    (unsafe { libc::fstatfs(fd, &mut st) } == 0) && in_memory(st.f_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn dev_shm_is_memory_and_proc_or_nothing_is_not() {
        assert!(
            path_in_memory(Path::new("/dev/shm")),
            "Linux mounts a tmpfs there"
        );
        assert!(!path_in_memory(Path::new("/proc")));
        assert!(!path_in_memory(Path::new("/no/such/folder")));
        assert_eq!(fs_type(Path::new("/no/such/folder")), None);
        let dir = std::fs::File::open("/dev/shm").unwrap();
        assert!(fd_in_memory(dir.as_raw_fd()));
        assert!(!fd_in_memory(-1), "a closed descriptor counts as a disk");
    }
}
