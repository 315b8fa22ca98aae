//! Opening the userfaultfd, in the strongest mode this process may have.
//!
//! * **Kernel faults handled** (`FaultMode::KernelFaults`): faults the
//!   kernel takes on the program's behalf (a `read(2)` into a region
//!   buffer, a futex word, `stat` into a struct) wait for the handler like
//!   the program's own. Granted where `/dev/userfaultfd` can be opened
//!   (root), or `userfaultfd(2)` without `UFFD_USER_MODE_ONLY` is allowed
//!   (`CAP_SYS_PTRACE`, or `vm.unprivileged_userfaultfd=1`).
//! * **User mode only** (`FaultMode::UserModeOnly`): what any user gets on
//!   Linux 5.11+. A kernel access to an unmapped or write-protected region
//!   page fails with EFAULT instead, so system calls on region memory need
//!   the syscall guard (the `guard` crate, installed by the LD_PRELOAD
//!   library), which pins and faults their buffers in first.
//!
//! * **In the faulting thread** (`FaultMode::InThread`): with
//!   `UFFD_FEATURE_SIGBUS` no fault event is queued: the faulting thread
//!   gets SIGBUS and serves its own fault in the signal handler
//!   (`in_thread.rs`), with no handler thread and no wakeups. Kernel
//!   accesses fail with EFAULT as in user-mode-only mode, so the syscall
//!   guard is needed. Any user may have it (it is opened user-mode only).
//!
//! The first two ask for `UFFD_FEATURE_THREAD_ID`, so the handler knows
//! which thread faulted (runtime threads must never fault on a region).

use crate::RuntimeError;
use std::os::fd::FromRawFd;
use userfaultfd::{FeatureFlags, Uffd, UffdBuilder};

const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_API: u64 = 0xAA;
const UFFD_FEATURE_THREAD_ID: u64 = 1 << 8;
const UFFD_FEATURE_SIGBUS: u64 = 1 << 7;
/// `_IOWR(0xAA, 0x3F, struct uffdio_api)`.
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;

/// Which faults the userfaultfd handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultMode {
    /// Faults in user and kernel mode: system calls wait for pages.
    KernelFaults,
    /// Faults in user mode only: system calls need the syscall guard.
    UserModeOnly,
    /// Faults raise SIGBUS in the faulting thread, which serves them; system
    /// calls need the syscall guard.
    InThread,
}

impl FaultMode {
    pub fn describe(self) -> &'static str {
        match self {
            FaultMode::KernelFaults => "kernel faults handled",
            FaultMode::UserModeOnly => "user-mode faults + syscall guard",
            FaultMode::InThread => "faults served in the faulting thread + syscall guard",
        }
    }

    /// Kernel accesses to an unmapped or protected region page fail with
    /// EFAULT: system calls need the syscall guard.
    pub fn needs_guard(self) -> bool {
        self != FaultMode::KernelFaults
    }
}

/// A userfaultfd whose faults raise SIGBUS in the faulting thread
/// (`FaultMode::InThread`), opened user-mode only (no privilege needed).
pub fn open_in_thread() -> Result<Uffd, RuntimeError> {
    let dev = if std::path::Path::new("/dev/userfaultfd").exists() {
        UffdBuilder::new()
            .close_on_exec(true)
            .non_blocking(true)
            .user_mode_only(true)
            .require_features(FeatureFlags::SIGBUS)
            .create()
            .map_err(OpenError::Crate)
    } else {
        Err(OpenError::Absent)
    };
    match dev {
        Ok(u) => Ok(u),
        Err(dev_err) => open_by_syscall(UFFD_USER_MODE_ONLY, UFFD_FEATURE_SIGBUS).map_err(|e| {
            RuntimeError::Uffd(format!(
                "/dev/userfaultfd with SIGBUS: {dev_err}; userfaultfd(2) with SIGBUS: {e}"
            ))
        }),
    }
}

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

/// A non-blocking, close-on-exec userfaultfd: with kernel faults where
/// allowed (unless `user_mode_only` forces the other mode), else user-mode
/// only.
///
/// The reasons of the ways that failed are formatted only if all fail:
/// formatting an OS error calls `strerror`, which takes the C library's
/// locale locks for reading, and this runs inside the program's first
/// `malloc`, perhaps from `setlocale` holding one of them for writing. The
/// read lock then fails (`EDEADLK`), its unlock does not, and the lock's
/// reader count stays at -1: the next `setlocale` or `textdomain` waits
/// forever (the small-object heap hung so as user nobody).
pub fn open(user_mode_only: bool) -> Result<(Uffd, FaultMode), RuntimeError> {
    let mut failed: Vec<(&str, OpenError)> = Vec::new();
    if !user_mode_only {
        match open_dev(false) {
            Ok(u) => return Ok((u, FaultMode::KernelFaults)),
            Err(e) => failed.push(("/dev/userfaultfd", e)),
        }
        match open_by_syscall(0, UFFD_FEATURE_THREAD_ID) {
            Ok(u) => return Ok((u, FaultMode::KernelFaults)),
            Err(e) => failed.push(("userfaultfd(2)", OpenError::Os(e))),
        }
    }
    match open_dev(true) {
        Ok(u) => return Ok((u, FaultMode::UserModeOnly)),
        Err(e) => failed.push(("/dev/userfaultfd (user mode only)", e)),
    }
    match open_by_syscall(UFFD_USER_MODE_ONLY, UFFD_FEATURE_THREAD_ID) {
        Ok(u) => Ok((u, FaultMode::UserModeOnly)),
        Err(e) => {
            failed.push(("userfaultfd(UFFD_USER_MODE_ONLY)", OpenError::Os(e)));
            let reasons: Vec<String> = failed
                .iter()
                .map(|(way, e)| format!("{way}: {e}"))
                .collect();
            Err(RuntimeError::Uffd(reasons.join("; ")))
        }
    }
}

/// Why one way of opening failed, kept unformatted (see [`open`]).
enum OpenError {
    Absent,
    Os(std::io::Error),
    Crate(userfaultfd::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Absent => f.write_str("absent"),
            Self::Os(e) => write!(f, "{e}"),
            Self::Crate(userfaultfd::Error::OpenDevUserfaultfd(e)) => write!(f, "{e}"),
            Self::Crate(e) => write!(f, "{e}"),
        }
    }
}

fn open_dev(user_mode_only: bool) -> Result<Uffd, OpenError> {
    if !std::path::Path::new("/dev/userfaultfd").exists() {
        return Err(OpenError::Absent);
    }
    UffdBuilder::new()
        .close_on_exec(true)
        .non_blocking(true)
        .user_mode_only(user_mode_only)
        .require_features(FeatureFlags::THREAD_ID)
        .create()
        .map_err(OpenError::Crate)
}

fn open_by_syscall(mode_flags: libc::c_int, features: u64) -> std::io::Result<Uffd> {
    let flags = libc::O_CLOEXEC | libc::O_NONBLOCK | mode_flags;
    // SAFETY: userfaultfd(2) takes flags only and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = fd as libc::c_int;
    // SAFETY: `fd` is a new userfaultfd that nothing else owns; the Uffd
    // closes it when dropped, also on the error path below.
    let uffd = unsafe { Uffd::from_raw_fd(fd) };
    let mut api = UffdioApi {
        api: UFFD_API,
        features,
        ioctls: 0,
    };
    // SAFETY: UFFDIO_API reads and writes one uffdio_api, which `api` is.
    if unsafe { libc::ioctl(fd, UFFDIO_API, &mut api as *mut UffdioApi) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(uffd)
}
