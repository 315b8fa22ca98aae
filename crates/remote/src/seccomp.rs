//! Seccomp user notification, the plumbing of the out-of-process syscall
//! guard (see `syscalls.rs` for what the pager does with a notification).
//!
//! A user who may not open a userfaultfd that handles kernel faults (no
//! `CAP_SYS_PTRACE`, `vm.unprivileged_userfaultfd=0`) gets a user-mode-only
//! one: a system call of the target on a page that is not mapped fails
//! with `EFAULT` instead of waiting for the pager. So the target is put
//! under a filter ([`guard::filter::build_notify`]) that stops every
//! system call that takes a user pointer until the pager has answered it;
//! the pager maps and pins the call's buffers first. The filter is
//! injected ([`install_in`]) before the pager registers any of the
//! target's memory, once that memory reaches a quarter of the limit
//! (below it no call pays for the guard).

use crate::inject::{InjectError, Tracee};
use common::PAGE_SIZE;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` (Linux 6.6): the answered thread
/// runs on the pager's CPU, as a synchronous wakeup.
const FD_SYNC_WAKE_UP: u64 = 1;
const PR_SET_NO_NEW_PRIVS: libc::c_int = 38;

/// Whether this user must page a static program with the guard: a
/// userfaultfd that handles kernel faults cannot be opened here (it could
/// not be in the child either: same credentials).
pub fn guard_needed() -> bool {
    // SAFETY: userfaultfd with flags only; a descriptor we own on success.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) };
    if fd >= 0 {
        // SAFETY: the descriptor just opened, owned by nobody else.
        drop(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        return false;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// One system call waiting for the pager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    /// The kernel's cookie for the answer.
    pub id: u64,
    /// The calling thread (in this PID namespace).
    pub tid: i32,
    /// The x86_64 number and arguments.
    pub nr: i64,
    pub args: [u64; 6],
}

/// The filter's listener: the notifications of the target and of every
/// process that inherited the filter (its children).
pub struct Listener {
    fd: OwnedFd,
}

impl Listener {
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The next waiting call, if one is waiting now. (The kernel's
    /// receive blocks when none is: it is only made after `poll` says one
    /// is there; a call withdrawn meanwhile gives `ENOENT`, i.e. `None`.)
    pub fn recv(&self) -> Option<Notification> {
        if !self.waiting() {
            return None;
        }
        // SAFETY: seccomp_notif is plain data; zero is a valid value.
        let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: RECV fills the seccomp_notif we pass, which outlives it.
        let rc = unsafe { libc::ioctl(self.fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
        (rc == 0).then_some(Notification {
            id: n.id,
            tid: n.pid as i32,
            nr: n.data.nr as i64,
            args: n.data.args,
        })
    }

    /// Lets the call run as the program made it. `false`: it is gone (its
    /// thread was interrupted, it will make it again, or it exited).
    pub fn allow(&self, id: u64) -> bool {
        let mut resp = libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        };
        // SAFETY: SEND reads the seccomp_notif_resp we pass.
        unsafe { libc::ioctl(self.fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) == 0 }
    }

    /// Whether a call is waiting now (`POLLIN`, not only `POLLHUP`).
    fn waiting(&self) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, 0) };
        p.revents & libc::POLLIN != 0
    }

    /// Answers every call that comes, unseen, until every process that
    /// inherited the filter has exited and been reaped (after the target's
    /// exit, for children it left running: a call to a closed listener
    /// fails with `ENOSYS`).
    pub fn allow_until_hung_up(&self) {
        loop {
            let mut p = libc::pollfd {
                fd: self.fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, 100) };
            if p.revents & libc::POLLIN != 0 {
                if let Some(n) = self.recv() {
                    self.allow(n.id);
                }
            } else if p.revents & libc::POLLHUP != 0 {
                return;
            }
        }
    }
}

/// Installs the filter in the target, through the thread `tracee` has
/// stopped: its program written to a mapping made there for the call,
/// then `prctl(PR_SET_NO_NEW_PRIVS)` (a filter without `CAP_SYS_ADMIN`
/// needs it) and `seccomp(SET_MODE_FILTER)` with a new listener, for every
/// thread (`TSYNC`; `TSYNC_ESRCH` so that the call returns the listener);
/// the listener taken with `pidfd_getfd` and closed there. A call already
/// under way in another thread is not seen: see `Pager::quiesce`.
pub fn install_in(
    pid: i32,
    tracee: &mut Tracee,
    serve: &mut dyn FnMut(),
) -> Result<Listener, InstallError> {
    let prog = guard::filter::build_notify().map_err(|e| InstallError::Filter(e.to_string()))?;
    let code: Vec<u8> = prog
        .iter()
        .flat_map(|f| {
            let mut b = [0u8; 8];
            b[..2].copy_from_slice(&f.code.to_ne_bytes());
            b[2] = f.jt;
            b[3] = f.jf;
            b[4..].copy_from_slice(&f.k.to_ne_bytes());
            b
        })
        .collect();
    let bytes = (16 + code.len()).next_multiple_of(PAGE_SIZE);
    let prot = (libc::PROT_READ | libc::PROT_WRITE) as u64;
    let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64;
    let at = tracee.syscall(
        libc::SYS_mmap,
        &[0, bytes as u64, prot, flags, u64::MAX, 0],
        serve,
    )?;
    if at < 0 {
        return Err(InstallError::Call("mmap", errno(at)));
    }
    let at = at as u64;
    let installed = (|| {
        // struct sock_fprog { u16 len; (pad) ; sock_filter *filter }, then
        // the program.
        let mut head = [0u8; 16];
        head[..2].copy_from_slice(&(prog.len() as u16).to_ne_bytes());
        head[8..].copy_from_slice(&(at + 16).to_ne_bytes());
        crate::mem::write(pid, at as usize, &head).map_err(InstallError::Write)?;
        crate::mem::write(pid, at as usize + 16, &code).map_err(InstallError::Write)?;
        let r = tracee.syscall(
            libc::SYS_prctl,
            &[PR_SET_NO_NEW_PRIVS as u64, 1, 0, 0, 0],
            serve,
        )?;
        if r < 0 {
            return Err(InstallError::Call("prctl(PR_SET_NO_NEW_PRIVS)", errno(r)));
        }
        let flags = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
            | libc::SECCOMP_FILTER_FLAG_TSYNC
            | libc::SECCOMP_FILTER_FLAG_TSYNC_ESRCH
            | libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW;
        let args = [libc::SECCOMP_SET_MODE_FILTER as u64, flags, at];
        let fd = tracee.syscall(libc::SYS_seccomp, &args, serve)?;
        if fd < 0 {
            return Err(InstallError::Call("seccomp(SET_MODE_FILTER)", errno(fd)));
        }
        let taken = crate::uffd::take_fd(pid, fd as i32);
        let _ = tracee.syscall(libc::SYS_close, &[fd as u64], serve);
        taken.map_err(InstallError::Take)
    })();
    let _ = tracee.syscall(libc::SYS_munmap, &[at, bytes as u64], serve);
    let fd = installed?;
    let flags = FD_SYNC_WAKE_UP;
    // SAFETY: SET_FLAGS reads a u64 by value; older kernels refuse it,
    // which only costs a slower wakeup.
    unsafe { libc::ioctl(fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags) };
    Ok(Listener { fd })
}

fn errno(r: i64) -> io::Error {
    io::Error::from_raw_os_error((-r) as i32)
}

/// Errors of [`install_in`].
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Inject(#[from] InjectError),
    #[error("building the system-call filter: {0}")]
    Filter(String),
    #[error("writing the filter into the program: {0}")]
    Write(io::Error),
    #[error("{0} in the program: {1}")]
    Call(&'static str, io::Error),
    #[error("taking the filter's listener (pidfd_getfd): {0}")]
    Take(io::Error),
}
