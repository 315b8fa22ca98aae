//! Seccomp user notification, the plumbing of the out-of-process syscall
//! guard (see `syscalls.rs` for what the pager does with a notification).
//!
//! A user who may not open a userfaultfd that handles kernel faults (no
//! `CAP_SYS_PTRACE`, `vm.unprivileged_userfaultfd=0`) gets a user-mode-only
//! one: a system call of the target on a page that is not mapped fails
//! with `EFAULT` instead of waiting for the pager. So the target starts
//! under a filter ([`guard::filter::build_notify`]) that stops every
//! system call that takes a user pointer until the pager has answered it;
//! the pager maps and pins the call's buffers first. The filter is
//! installed in the child between `fork` and `execve` ([`ChildSetup`]), and
//! its listener taken by the parent ([`receive`]).

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
        if !self.poll(libc::POLLIN) {
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

    /// The next waiting call, waiting up to `timeout` for one.
    pub fn recv_within(&self, timeout: std::time::Duration) -> Option<Notification> {
        let mut p = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, timeout.as_millis() as libc::c_int) };
        self.recv()
    }

    /// Whether a call is waiting now (`POLLIN`, and not only `POLLHUP`).
    fn poll(&self, events: libc::c_short) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd(),
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, 0) };
        p.revents & events != 0
    }

    /// Answers every call that comes, unseen, until process `pid` exits
    /// (it is not reaped: the caller does that, and may then wait for
    /// its children with [`Listener::allow_until_hung_up`]).
    pub fn allow_while_running(&self, pid: i32) {
        let Ok(pidfd) = crate::uffd::pidfd_open(pid) else {
            return;
        };
        loop {
            let mut fds = [self.fd(), pidfd.as_raw_fd()].map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            // SAFETY: two valid pollfds in a local array.
            unsafe { libc::poll(fds.as_mut_ptr(), 2, 100) };
            if fds[1].revents != 0 {
                return;
            }
            if let Some(n) = self.recv() {
                self.allow(n.id);
            }
        }
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

/// What the child installs before its `execve`: the filter, whose
/// listener the parent takes with `pidfd_getfd` from the descriptor number
/// of the child's socket end (every call with a pointer made after the
/// filter is in waits for the listener, a `sendmsg` of it too: so the
/// child only says its pid first, and puts the listener where the parent
/// looks). Everything is allocated before the fork; [`ChildSetup::install`]
/// only makes system calls.
pub struct ChildSetup {
    prog: Vec<guard::filter::SockFilter>,
    sock: OwnedFd,
}

/// The filter and a socket pair: the child's end in the setup, the
/// parent's returned (for [`receive`]).
pub fn prepare() -> io::Result<(ChildSetup, OwnedFd)> {
    let prog = guard::filter::build_notify().map_err(io::Error::other)?;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: socketpair fills two descriptors we then own.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    let (child, parent) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((ChildSetup { prog, sock: child }, parent))
}

impl ChildSetup {
    /// Where the listener will be in the child.
    pub fn fd_in_child(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// In the forked child: its pid to the parent, `PR_SET_NO_NEW_PRIVS`
    /// (a filter without `CAP_SYS_ADMIN` needs it), the filter with a new
    /// listener, moved to [`ChildSetup::fd_in_child`] (close-on-exec).
    /// Async-signal-safe: system calls on data made before the fork.
    pub fn install(&self) -> io::Result<()> {
        let sock = self.sock.as_raw_fd();
        // SAFETY: getpid has no arguments.
        let pid = unsafe { libc::getpid() }.to_ne_bytes();
        // SAFETY: send of a local 4-byte buffer.
        if unsafe { libc::send(sock, pid.as_ptr().cast(), 4, libc::MSG_NOSIGNAL) } != 4 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: prctl with integers.
        if unsafe { libc::prctl(PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let fprog = libc::sock_fprog {
            len: self.prog.len() as u16,
            filter: self.prog.as_ptr() as *mut libc::sock_filter,
        };
        let flags = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW;
        // SAFETY: `fprog` points to the program, which outlives the call
        // (the kernel copies it); SockFilter has sock_filter's layout.
        let listener = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        };
        if listener < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: dup3 and close of descriptors of this (child) process.
        unsafe {
            libc::dup3(listener as RawFd, sock, libc::O_CLOEXEC);
            libc::close(listener as RawFd);
        }
        Ok(())
    }
}

/// The listener of the child that set up `setup`'s filter: its pid read
/// from `sock`, then its descriptor taken with `pidfd_getfd` once it is a
/// seccomp listener. Fails when the child sends nothing (its socket end is
/// closed: it exec'd or exited first), or does not install the filter
/// within a few seconds.
pub fn receive(sock: &OwnedFd, fd_in_child: RawFd) -> io::Result<Listener> {
    let mut pid = [0u8; 4];
    // SAFETY: recv into a local 4-byte buffer.
    let n = unsafe { libc::recv(sock.as_raw_fd(), pid.as_mut_ptr().cast(), 4, 0) };
    if n != 4 {
        return Err(io::Error::other(
            "the program did not start under the system-call filter",
        ));
    }
    let pidfd = crate::uffd::pidfd_open(i32::from_ne_bytes(pid))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        // SAFETY: pidfd_getfd with integers; a new descriptor we own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd_in_child, 0) };
        if fd < 0 {
            return Err(io::Error::other(format!(
                "taking the system-call filter's listener: {}",
                io::Error::last_os_error()
            )));
        }
        // SAFETY: the descriptor just taken, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let what = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
        if what.as_os_str() == "anon_inode:seccomp notify" {
            let flags = FD_SYNC_WAKE_UP;
            // SAFETY: SET_FLAGS reads a u64 by value; older kernels refuse
            // it, which only costs a slower wakeup.
            unsafe { libc::ioctl(fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags) };
            return Ok(Listener { fd });
        }
        if std::time::Instant::now() > deadline {
            return Err(io::Error::other(
                "the program did not install the system-call filter",
            ));
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}
