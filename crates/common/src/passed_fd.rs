//! A descriptor `uzswap run` leaves open across `exec` for the processes
//! of a run, named in their environment as `FD:DEV:INO`.
//!
//! A run's files (its shared-limit file, the folder where each process
//! leaves its counters at exit) lie in a folder only the user who started
//! the run may enter. A program that changes user after it starts (a
//! server started as root that runs as `postgres` or `nobody`, `setpriv`,
//! `su`) can no longer open them by name; it still holds the descriptors
//! it inherited, as every process started after it does. The device and
//! inode tell the descriptor the run passed from whatever the program put
//! at that number since (a program may close it and open another file
//! there).

use std::os::fd::RawFd;

/// A descriptor passed down, and the file it was passed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassedFd {
    fd: RawFd,
    dev: u64,
    ino: u64,
}

/// `fstat(fd)`, if `fd` is open (the runtime sizes the shared-limit file
/// it maps, by name or passed down, with it too).
pub fn stat(fd: RawFd) -> Option<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a `struct stat` to the pointer, which is valid
    // for one; it is read only on success.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded and filled it.
    Some(unsafe { st.assume_init() })
}

impl PassedFd {
    /// `fd`, open now, as the file it refers to.
    pub fn of(fd: RawFd) -> std::io::Result<Self> {
        let st = stat(fd).ok_or_else(std::io::Error::last_os_error)?;
        Ok(Self {
            fd,
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }

    /// `fstat` of the descriptor, if it is still open on the file it was
    /// passed for.
    fn stat_if_passed(&self) -> Option<libc::stat> {
        stat(self.fd).filter(|st| st.st_dev == self.dev && st.st_ino == self.ino)
    }

    /// The environment's form: `FD:DEV:INO`.
    pub fn render(&self) -> String {
        format!("{}:{}:{}", self.fd, self.dev, self.ino)
    }

    /// Reads [`PassedFd::render`]'s form; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split(':');
        let fd = parts.next()?.parse().ok().filter(|&fd: &RawFd| fd >= 0)?;
        let dev = parts.next()?.parse().ok()?;
        let ino = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some(Self { fd, dev, ino })
    }

    /// The descriptor, if it is still open in this process on the file it
    /// was passed for, and that file is a regular file (`dir` false) or a
    /// folder (`dir` true).
    pub fn current(&self, dir: bool) -> Option<RawFd> {
        let want = if dir { libc::S_IFDIR } else { libc::S_IFREG };
        let st = self.stat_if_passed()?;
        (st.st_mode & libc::S_IFMT == want).then_some(self.fd)
    }

    /// The user who owns the file passed, if the descriptor is still open
    /// on it.
    pub fn owner(&self) -> Option<u32> {
        self.stat_if_passed().map(|st| st.st_uid)
    }
}

/// Creates `name` (mode 0600; a symbolic link there is not followed) in
/// the folder open at `folder`, for writing: afresh where `exclusive`
/// (it must not exist), else truncated.
pub fn create_in(folder: RawFd, name: &str, exclusive: bool) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let name = std::ffi::CString::new(name).map_err(std::io::Error::other)?;
    let only = if exclusive {
        libc::O_EXCL
    } else {
        libc::O_TRUNC
    };
    // SAFETY: openat with a folder descriptor and a NUL-terminated name;
    // the result is checked.
    let fd = unsafe {
        libc::openat(
            folder,
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | only | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            0o600,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened here and is owned by nothing else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_environment_form_reads_back_and_nothing_else_does() {
        let p = PassedFd {
            fd: 7,
            dev: 2049,
            ino: 123_456,
        };
        assert_eq!(PassedFd::parse(&p.render()), Some(p));
        for bad in ["", "7", "7:1", "7:1:2:3", "-1:1:2", "x:1:2", "7:1:y"] {
            assert_eq!(PassedFd::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_number_reused_for_another_file_is_not_the_passed_one() {
        let dir = std::env::temp_dir().join(format!("uzswap-passed-fd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = std::fs::File::create(dir.join("a")).unwrap();
        let passed = PassedFd::of(a.as_raw_fd()).unwrap();
        assert_eq!(passed.current(false), Some(a.as_raw_fd()));
        // A file, not a folder.
        assert_eq!(passed.current(true), None);
        // Another file put at the same number (`dup2`, as a program may).
        let b = std::fs::File::create(dir.join("b")).unwrap();
        // SAFETY: both descriptors are open and owned by this test; `a`'s
        // number then refers to `b`'s file, and `a` closes it once.
        let moved = unsafe { libc::dup2(b.as_raw_fd(), a.as_raw_fd()) };
        assert_eq!(moved, a.as_raw_fd());
        assert_eq!(passed.current(false), None);
        assert_eq!(passed.owner(), None);
        // Closed (whatever another thread may open at that number since).
        drop(a);
        assert_eq!(passed.current(false), None);
        let folder = std::fs::File::open(&dir).unwrap();
        let passed_dir = PassedFd::of(folder.as_raw_fd()).unwrap();
        assert_eq!(passed_dir.current(true), Some(folder.as_raw_fd()));
        assert_eq!(passed_dir.current(false), None);
        // SAFETY: geteuid has no preconditions.
        assert_eq!(passed_dir.owner(), Some(unsafe { libc::geteuid() }));
        // A file made through the folder's descriptor, once only where
        // asked.
        use std::io::Write;
        create_in(folder.as_raw_fd(), "c", true)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        assert_eq!(std::fs::read(dir.join("c")).unwrap(), b"x");
        assert!(create_in(folder.as_raw_fd(), "c", true).is_err());
        create_in(folder.as_raw_fd(), "c", false).unwrap();
        assert_eq!(std::fs::read(dir.join("c")).unwrap(), b"");
        drop((b, folder));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
