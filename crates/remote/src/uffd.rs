//! The target's userfaultfd: opened in the target by an injected
//! `userfaultfd(2)`, copied into this process with `pidfd_getfd(2)`, and
//! closed in the target again. Its ioctls act on the target's memory
//! (the mm the userfaultfd was made for), from here.

use crate::inject::{InjectError, Tracee};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use userfaultfd::Uffd;
use userfaultfd_sys as sys;

/// `_IOWR(0xAA, 0x3F, struct uffdio_api)`.
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
const UFFD_API: u64 = 0xAA;
const FEATURE_EVENT_FORK: u64 = 1 << 1;
const FEATURE_EVENT_REMAP: u64 = 1 << 2;
const FEATURE_EVENT_REMOVE: u64 = 1 << 3;
const FEATURE_EVENT_UNMAP: u64 = 1 << 6;
const FEATURE_THREAD_ID: u64 = 1 << 8;
/// What the pager asks for: every event that changes the target's
/// mappings (so that no stored page outlives its mapping, and a forked
/// child gets its parent's stored pages), and the faulting thread.
pub const FEATURES: u64 = FEATURE_EVENT_FORK
    | FEATURE_EVENT_REMAP
    | FEATURE_EVENT_REMOVE
    | FEATURE_EVENT_UNMAP
    | FEATURE_THREAD_ID;
/// `UFFD_USER_MODE_ONLY`: what an unprivileged user may open; kernel
/// accesses to missing pages fail instead of waiting (see `seccomp`).
const USER_MODE_ONLY: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Inject(#[from] InjectError),
    #[error("a statically linked program is paged from outside with a userfaultfd that handles kernel faults, which this user may not open ({0}; root, or vm.unprivileged_userfaultfd=1, may)")]
    Create(std::io::Error),
    #[error("taking the target's userfaultfd (pidfd_getfd): {0}")]
    Take(std::io::Error),
    #[error("UFFDIO_API: {0}")]
    Api(std::io::Error),
}

fn errno(r: i64) -> std::io::Error {
    std::io::Error::from_raw_os_error((-r) as i32)
}

/// A pidfd of process `pid`.
pub fn pidfd_open(pid: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open with integers; a non-negative result is a new fd
    // we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Opens a userfaultfd in the target that `tracee` stopped and brings it
/// here. Kernel faults are handled (the target's system calls wait for
/// their pages) unless `user_mode_only`: then they fail with EFAULT, and
/// the target must be under the syscall guard (`seccomp`); nor is there a
/// fork event then (it takes `CAP_SYS_PTRACE`).
pub fn open_in(
    pid: i32,
    tracee: &mut Tracee,
    serve: &mut dyn FnMut(),
    user_mode_only: bool,
) -> Result<Uffd, OpenError> {
    let mut flags = (libc::O_CLOEXEC | libc::O_NONBLOCK) as u64;
    let mut features = FEATURES;
    if user_mode_only {
        flags |= USER_MODE_ONLY;
        features &= !FEATURE_EVENT_FORK;
    }
    let fd = tracee.syscall(libc::SYS_userfaultfd, &[flags], serve)?;
    if fd < 0 {
        return Err(OpenError::Create(errno(fd)));
    }
    let taken = take_fd(pid, fd as i32);
    // Closed in the target whatever happened: it holds no copy of its own.
    let _ = tracee.syscall(libc::SYS_close, &[fd as u64], serve);
    let local = taken.map_err(OpenError::Take)?;
    api_handshake(&local, features).map_err(OpenError::Api)?;
    // SAFETY: the descriptor is a userfaultfd we own, given to the Uffd.
    Ok(unsafe { Uffd::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(local)) })
}

fn api_handshake(fd: &OwnedFd, features: u64) -> std::io::Result<()> {
    let mut api = sys::uffdio_api {
        api: UFFD_API,
        features,
        ioctls: 0,
    };
    // SAFETY: a valid uffdio_api for the call on a userfaultfd we own.
    if unsafe { libc::ioctl(fd.as_raw_fd(), UFFDIO_API as _, &mut api) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

pub(crate) fn take_fd(pid: i32, fd: i32) -> std::io::Result<OwnedFd> {
    let pidfd = pidfd_open(pid)?;
    // SAFETY: pidfd_getfd with a pidfd we own and integers; a non-negative
    // result is a new fd we own.
    let local = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if local < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(local as RawFd) })
}

/// The errno of a failed ioctl.
fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn ioctl<T>(uffd: &Uffd, req: u64, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is the uffdio struct `req` takes, alive for the call;
    // the ioctls act on the target's memory only, never on ours (a copy
    // reads `src` from this process, which the caller keeps alive).
    if unsafe { libc::ioctl(uffd.as_raw_fd(), req as _, arg as *mut T) } == 0 {
        Ok(())
    } else {
        Err(last_errno())
    }
}

/// Registers `[start, start + len)` for missing and write-protect faults.
pub fn register(uffd: &Uffd, start: usize, len: usize) -> Result<(), i32> {
    let mut arg = sys::uffdio_register {
        range: sys::uffdio_range {
            start: start as u64,
            len: len as u64,
        },
        mode: sys::UFFDIO_REGISTER_MODE_MISSING | sys::UFFDIO_REGISTER_MODE_WP,
        ioctls: 0,
    };
    ioctl(uffd, sys::UFFDIO_REGISTER as u64, &mut arg)
}

/// Maps `src` (whole pages) at `dst`, waking the threads waiting there.
pub fn copy(uffd: &Uffd, src: &[u8], dst: usize) -> Result<(), i32> {
    let mut arg = sys::uffdio_copy {
        dst: dst as u64,
        src: src.as_ptr() as u64,
        len: src.len() as u64,
        mode: 0,
        copy: 0,
    };
    ioctl(uffd, sys::UFFDIO_COPY as u64, &mut arg)
}

/// Maps zero pages over `[start, start + len)`, waking waiters. On an
/// error, returns how many bytes were mapped before it.
pub fn zeropage(uffd: &Uffd, start: usize, len: usize) -> Result<(), (i32, usize)> {
    let mut arg = sys::uffdio_zeropage {
        range: sys::uffdio_range {
            start: start as u64,
            len: len as u64,
        },
        mode: 0,
        zeropage: 0,
    };
    ioctl(uffd, sys::UFFDIO_ZEROPAGE as u64, &mut arg)
        .map_err(|e| (e, usize::try_from(arg.zeropage).unwrap_or(0)))
}

/// Write-protects (`protect`) or unprotects `[start, start + len)`;
/// unprotecting wakes the threads waiting there.
pub fn write_protect(uffd: &Uffd, start: usize, len: usize, protect: bool) -> Result<(), i32> {
    let mut arg = sys::uffdio_writeprotect {
        range: sys::uffdio_range {
            start: start as u64,
            len: len as u64,
        },
        mode: if protect {
            sys::UFFDIO_WRITEPROTECT_MODE_WP
        } else {
            0
        },
    };
    ioctl(uffd, sys::UFFDIO_WRITEPROTECT as u64, &mut arg)
}

/// Wakes the threads waiting on `[start, start + len)` to fault again.
pub fn wake(uffd: &Uffd, start: usize, len: usize) -> Result<(), i32> {
    let mut arg = sys::uffdio_range {
        start: start as u64,
        len: len as u64,
    };
    ioctl(uffd, sys::UFFDIO_WAKE as u64, &mut arg)
}
