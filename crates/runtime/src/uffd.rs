//! Opening the userfaultfd: `/dev/userfaultfd` where this user may open it,
//! else the `userfaultfd(2)` system call with `UFFD_USER_MODE_ONLY`, which
//! Linux 5.11+ grants any user even with `vm.unprivileged_userfaultfd=0`.
//! (The `userfaultfd` crate stops at a `/dev/userfaultfd` it may not open.)

use crate::RuntimeError;
use std::os::fd::FromRawFd;
use userfaultfd::{Uffd, UffdBuilder};

const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_API: u64 = 0xAA;
/// `_IOWR(0xAA, 0x3F, struct uffdio_api)`.
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

/// A non-blocking, close-on-exec userfaultfd that handles user-mode faults.
pub fn open() -> Result<Uffd, RuntimeError> {
    match UffdBuilder::new()
        .close_on_exec(true)
        .non_blocking(true)
        .user_mode_only(true)
        .create()
    {
        Ok(uffd) => Ok(uffd),
        Err(userfaultfd::Error::OpenDevUserfaultfd(dev_err)) => {
            open_by_syscall().map_err(|sys_err| {
                RuntimeError::Uffd(format!(
                    "/dev/userfaultfd: {dev_err}; userfaultfd(UFFD_USER_MODE_ONLY): {sys_err}"
                ))
            })
        }
        Err(e) => Err(RuntimeError::Uffd(e.to_string())),
    }
}

fn open_by_syscall() -> std::io::Result<Uffd> {
    let flags = libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY;
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
        features: 0,
        ioctls: 0,
    };
    // SAFETY: UFFDIO_API reads and writes one uffdio_api, which `api` is.
    if unsafe { libc::ioctl(fd, UFFDIO_API, &mut api as *mut UffdioApi) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(uffd)
}
