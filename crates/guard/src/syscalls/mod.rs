//! The x86_64 system-call table: for each system call, the user buffers the
//! kernel reads or writes on the caller's behalf, and the rule the seccomp
//! filter uses to decide when to trap it.
//!
//! Everything here is usable from a signal handler: no allocation, no locks,
//! no panics (indexing is bounds-checked by construction or avoided).
//!
//! Sizes are the x86_64 kernel's (`struct stat` 144, `statx` 256, `epoll_event`
//! 12 because it is packed on x86_64, kernel `struct termios` 36, …).

mod ioctl;
mod sizes;
#[cfg(test)]
mod tests;

pub use ioctl::{ioc_decode, ioctl_buffer, IoctlArg};
pub(crate) use sizes::IOVEC;

use crate::nr;
use sizes::*;

/// What the kernel does with a user buffer during the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The kernel only reads it (`write(2)`'s buffer, a path).
    KernelReads,
    /// The kernel only writes it (`read(2)`'s buffer, `struct stat`).
    KernelWrites,
    /// Both (`poll`'s array, `recvmsg`'s `msghdr`, `accept`'s `addrlen`).
    KernelReadsWrites,
}

impl Access {
    /// Whether the kernel may write (the page must be mapped writable and
    /// not write-protected).
    pub fn kernel_writes(self) -> bool {
        !matches!(self, Access::KernelReads)
    }
}

/// One user buffer a system call touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    /// `len` bytes at `addr`.
    Range {
        /// Start address.
        addr: usize,
        /// Length in bytes (may exceed what the kernel ends up touching, e.g.
        /// a `read` that returns less than asked; capped at `MAX_RW_COUNT`
        /// for the read/write family).
        len: usize,
        /// Direction.
        access: Access,
    },
    /// A NUL-terminated string the kernel reads, at most `max` bytes
    /// including the NUL (paths: `PATH_MAX`).
    CStr {
        /// Start address.
        addr: usize,
        /// Longest string the kernel accepts, NUL included.
        max: usize,
    },
    /// A buffer the call touches now (like `Range`) *and* that the kernel
    /// keeps a pointer to and touches later, outside any system call of the
    /// program: `set_tid_address` (cleared and futex-woken at thread exit),
    /// `set_robust_list` (walked at thread exit), `rseq` (updated on
    /// preemption), `clone`'s `CLONE_CHILD_CLEARTID`, the `sigaltstack` area
    /// (signal frames are written there). Such pages should stay resident.
    Registered {
        /// Start address.
        addr: usize,
        /// Length in bytes.
        len: usize,
        /// Direction.
        access: Access,
    },
    /// A pointer the kernel dereferences in a way the table cannot size
    /// (an ioctl without a size encoding, `keyctl`, `bpf`'s nested pointers,
    /// …). The caller can count it and, at best, fault in the page at `addr`.
    Unknown {
        /// The pointer.
        addr: usize,
    },
}

/// How completely [`for_each_buffer`] described the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every user buffer the call touches was reported (a `Buffer::Unknown`
    /// may still have been reported for an argument the table cannot size).
    Known,
    /// The buffers touched during the call were reported, but the kernel
    /// also touches user memory asynchronously afterwards (AIO `io_submit`,
    /// registered pointers), or reads pointers nested in a structure the
    /// table does not follow (`bpf`, `ptrace`'s iovecs, ...).
    Partial,
    /// The system call is not in the table (`io_uring_enter`'s submission
    /// ring, unknown numbers, x32).
    Unknown,
}

/// Reads the calling process's memory for [`for_each_buffer`], which follows
/// pointers stored in memory (iovec arrays, `msghdr`, `argv`). `None` when
/// the memory cannot be read (the kernel would fail with `EFAULT`).
pub trait UserMem {
    /// Reads a native-endian `u64` at `addr` (any alignment).
    fn read_u64(&self, addr: usize) -> Option<u64>;
    /// Reads a native-endian `u32` at `addr` (any alignment).
    fn read_u32(&self, addr: usize) -> Option<u32>;
    /// Reads one byte.
    fn read_u8(&self, addr: usize) -> Option<u8>;
}

/// When the seccomp filter traps a system call (see `filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapRule {
    /// The call touches no user memory the guard can help with.
    Never,
    /// Trap when one of these arguments (bit `i` = argument `i`) lies in the
    /// arena: every buffer the call touches is named directly by an argument
    /// (possibly with a length in another argument or in memory).
    DirectPointers(u8),
    /// The call reaches user buffers through pointers stored in memory
    /// (iovec arrays, `msghdr`, `argv`/`envp` strings, iocbs): trap when one
    /// of these arguments lies in the arena (as `DirectPointers`), and also
    /// according to the filter's `IndirectPolicy`.
    Indirect(u8),
}

impl TrapRule {
    /// The arguments compared with the arena.
    pub fn direct_mask(self) -> u8 {
        match self {
            TrapRule::Never => 0,
            TrapRule::DirectPointers(m) | TrapRule::Indirect(m) => m,
        }
    }
}

/// System calls that take user pointers but are never trapped, with the
/// reason. Their buffers are still described by [`for_each_buffer`] (for
/// library hooks that can pin before calling).
pub const NOT_TRAPPED: &[(i64, &str)] = &[
    (
        nr::CLONE,
        "re-issued from a signal handler, the child would start on its new stack inside the handler",
    ),
    (nr::CLONE3, "same as clone"),
    (
        nr::SIGALTSTACK,
        "rt_sigreturn restores the alternate stack from the signal frame, undoing a call made inside the handler",
    ),
    (
        nr::RT_SIGRETURN,
        "reads the signal frame from the stack pointer, not from an argument",
    ),
];

/// Longest path the kernel accepts (`PATH_MAX`, NUL included).
pub const PATH_MAX: usize = 4096;
/// Longest `execve` argument or environment string (`MAX_ARG_STRLEN`).
pub const MAX_ARG_STRLEN: usize = 32 * 4096;
/// Most iovecs in one call (`UIO_MAXIOV`).
pub const UIO_MAXIOV: u64 = 1024;
/// The kernel caps one read or write at this many bytes (`MAX_RW_COUNT`).
pub const MAX_RW_COUNT: u64 = 0x7fff_f000;
/// Longest `argv`/`envp` array followed (the guard pins at most 1024 ranges
/// anyway; the kernel's limit is `MAX_ARG_STRINGS`).
pub const MAX_ARGV: usize = 1 << 16;
/// Longest xattr name (`XATTR_NAME_MAX` + NUL).
pub const XATTR_NAME_MAX: usize = 256;

const fn m(args: &[u8]) -> u8 {
    let mut mask = 0u8;
    let mut i = 0;
    while i < args.len() {
        mask |= 1 << args[i];
        i += 1;
    }
    mask
}

/// The trap rule of system call `nr` (x86_64 numbering).
pub fn trap_rule(nr: i64) -> TrapRule {
    use TrapRule::{DirectPointers as D, Indirect as I, Never};
    match nr {
        nr::READ | nr::WRITE | nr::PREAD64 | nr::PWRITE64 => D(m(&[1])),
        nr::OPEN | nr::ACCESS | nr::PIPE | nr::POLL | nr::UNAME | nr::TRUNCATE => D(m(&[0])),
        nr::GETCWD | nr::CHDIR | nr::MKDIR | nr::RMDIR | nr::CREAT | nr::UNLINK => D(m(&[0])),
        nr::CHMOD | nr::CHOWN | nr::LCHOWN | nr::SYSINFO | nr::TIMES | nr::MKNOD => D(m(&[0])),
        nr::RT_SIGPENDING | nr::RT_SIGSUSPEND | nr::ADJTIMEX | nr::CHROOT | nr::ACCT => D(m(&[0])),
        nr::UMOUNT2 | nr::SWAPON | nr::SWAPOFF | nr::SETHOSTNAME | nr::SETDOMAINNAME => D(m(&[0])),
        nr::DELETE_MODULE | nr::TIME | nr::SET_TID_ADDRESS | nr::MQ_UNLINK | nr::PIPE2 => {
            D(m(&[0]))
        }
        nr::SET_ROBUST_LIST | nr::PERF_EVENT_OPEN | nr::GETRANDOM | nr::MEMFD_CREATE => D(m(&[0])),
        nr::RSEQ | nr::FSOPEN | nr::LANDLOCK_CREATE_RULESET | nr::FUTEX_WAKE => D(m(&[0])),
        nr::STAT | nr::LSTAT | nr::NANOSLEEP | nr::RENAME | nr::LINK | nr::SYMLINK => D(m(&[0, 1])),
        nr::READLINK | nr::GETTIMEOFDAY | nr::CAPGET | nr::CAPSET | nr::UTIME => D(m(&[0, 1])),
        nr::STATFS | nr::PIVOT_ROOT | nr::SETTIMEOFDAY | nr::LISTXATTR | nr::LLISTXATTR => {
            D(m(&[0, 1]))
        }
        nr::REMOVEXATTR | nr::LREMOVEXATTR | nr::UTIMES | nr::GET_MEMPOLICY => D(m(&[0, 1])),
        nr::STATMOUNT | nr::LISTMOUNT | nr::LSM_LIST_MODULES | nr::LISTNS => D(m(&[0, 1])),
        nr::FSTAT | nr::GETITIMER | nr::CONNECT | nr::BIND | nr::GETDENTS | nr::GETRLIMIT => {
            D(m(&[1]))
        }
        nr::GETRUSAGE | nr::GETGROUPS | nr::SETGROUPS | nr::USTAT | nr::FSTATFS => D(m(&[1])),
        nr::SCHED_SETPARAM | nr::SCHED_GETPARAM | nr::SCHED_RR_GET_INTERVAL => D(m(&[1])),
        nr::MODIFY_LDT | nr::ARCH_PRCTL | nr::SETRLIMIT | nr::FLISTXATTR | nr::FREMOVEXATTR => {
            D(m(&[1]))
        }
        nr::IO_SETUP | nr::GETDENTS64 | nr::TIMER_GETTIME | nr::CLOCK_SETTIME => D(m(&[1])),
        nr::CLOCK_GETTIME | nr::CLOCK_GETRES | nr::EPOLL_WAIT | nr::SET_MEMPOLICY => D(m(&[1])),
        nr::MQ_NOTIFY | nr::INOTIFY_ADD_WATCH | nr::OPENAT | nr::MKDIRAT | nr::MKNODAT => {
            D(m(&[1]))
        }
        nr::FCHOWNAT | nr::UNLINKAT | nr::FCHMODAT | nr::FACCESSAT | nr::SIGNALFD => D(m(&[1])),
        nr::TIMERFD_GETTIME | nr::SIGNALFD4 | nr::OPEN_BY_HANDLE_AT | nr::CLOCK_ADJTIME => {
            D(m(&[1]))
        }
        nr::FINIT_MODULE | nr::SCHED_SETATTR | nr::SCHED_GETATTR | nr::BPF => D(m(&[1])),
        nr::IO_URING_SETUP | nr::OPEN_TREE | nr::FSPICK | nr::FACCESSAT2 => D(m(&[1])),
        nr::PROCESS_MADVISE | nr::FCHMODAT2 | nr::LSM_SET_SELF_ATTR | nr::SYSLOG => D(m(&[1])),
        nr::RT_SIGACTION | nr::RT_SIGPROCMASK | nr::SETITIMER | nr::ACCEPT | nr::ACCEPT4 => {
            D(m(&[1, 2]))
        }
        nr::GETSOCKNAME | nr::GETPEERNAME | nr::FSETXATTR | nr::FGETXATTR | nr::IO_CANCEL => {
            D(m(&[1, 2]))
        }
        nr::TIMER_CREATE | nr::MQ_GETSETATTR | nr::FUTIMESAT | nr::NEWFSTATAT => D(m(&[1, 2])),
        nr::READLINKAT | nr::GET_ROBUST_LIST | nr::UTIMENSAT | nr::CACHESTAT => D(m(&[1, 2])),
        nr::FILE_GETATTR | nr::FILE_SETATTR | nr::OPENAT2 | nr::LSM_GET_SELF_ATTR => D(m(&[1, 2])),
        nr::SYSFS => D(m(&[1, 2])),
        nr::SELECT => D(m(&[1, 2, 3, 4])),
        nr::PSELECT6 => D(m(&[1, 2, 3, 4, 5])),
        nr::MINCORE | nr::SHMCTL | nr::SENDFILE | nr::MSGCTL | nr::FCNTL | nr::IOCTL => D(m(&[2])),
        nr::SCHED_SETSCHEDULER | nr::SCHED_SETAFFINITY | nr::SCHED_GETAFFINITY => D(m(&[2])),
        nr::KEXEC_LOAD | nr::RT_SIGQUEUEINFO | nr::PIDFD_SEND_SIGNAL | nr::SECCOMP => D(m(&[2])),
        nr::LANDLOCK_ADD_RULE => D(m(&[2])),
        nr::SOCKETPAIR | nr::SETSOCKOPT | nr::SEMCTL | nr::EPOLL_CTL | nr::REBOOT => D(m(&[3])),
        nr::RT_TGSIGQUEUEINFO | nr::KEXEC_FILE_LOAD | nr::QUOTACTL_FD => D(m(&[3])),
        nr::GETSOCKOPT => D(m(&[3, 4])),
        nr::IO_GETEVENTS => D(m(&[3, 4])),
        nr::SENDTO => D(m(&[1, 4])),
        nr::RECVFROM => D(m(&[1, 4, 5])),
        nr::WAIT4 => D(m(&[1, 3])),
        nr::SEMOP | nr::MSGSND | nr::MSGRCV => D(m(&[1])),
        nr::SEMTIMEDOP => D(m(&[1, 3])),
        nr::GETRESUID | nr::GETRESGID => D(m(&[0, 1, 2])),
        // getcpu's third argument (`tcache`) is unused since Linux 2.6.24.
        nr::GETCPU => D(m(&[0, 1])),
        nr::RT_SIGTIMEDWAIT => D(m(&[0, 1, 2])),
        nr::SETXATTR | nr::LSETXATTR | nr::GETXATTR | nr::LGETXATTR => D(m(&[0, 1, 2])),
        nr::ADD_KEY | nr::REQUEST_KEY => D(m(&[0, 1, 2])),
        nr::PTRACE => D(m(&[2, 3])),
        nr::PRCTL | nr::KEYCTL => D(m(&[1, 2, 3, 4])),
        nr::MOUNT => D(m(&[0, 1, 2, 4])),
        nr::INIT_MODULE => D(m(&[0, 2])),
        nr::QUOTACTL => D(m(&[1, 3])),
        nr::FUTEX => D(m(&[0, 3, 4])),
        nr::TIMER_SETTIME | nr::TIMERFD_SETTIME | nr::PRLIMIT64 => D(m(&[2, 3])),
        nr::CLOCK_NANOSLEEP | nr::MIGRATE_PAGES => D(m(&[2, 3])),
        nr::MBIND => D(m(&[3])),
        nr::MQ_OPEN => D(m(&[0, 3])),
        nr::MQ_TIMEDSEND => D(m(&[1, 4])),
        nr::MQ_TIMEDRECEIVE => D(m(&[1, 3, 4])),
        nr::WAITID => D(m(&[2, 4])),
        nr::RENAMEAT | nr::LINKAT | nr::RENAMEAT2 | nr::SPLICE | nr::COPY_FILE_RANGE => {
            D(m(&[1, 3]))
        }
        nr::MOVE_MOUNT | nr::MOUNT_SETATTR | nr::LISTXATTRAT | nr::REMOVEXATTRAT => D(m(&[1, 3])),
        nr::OPEN_TREE_ATTR => D(m(&[1, 3])),
        nr::SYMLINKAT => D(m(&[0, 2])),
        nr::PPOLL => D(m(&[0, 2, 3])),
        nr::MOVE_PAGES => D(m(&[2, 3, 4])),
        nr::EPOLL_PWAIT => D(m(&[1, 4])),
        nr::EPOLL_PWAIT2 => D(m(&[1, 3, 4])),
        nr::FANOTIFY_MARK | nr::KCMP => D(m(&[4])),
        nr::NAME_TO_HANDLE_AT => D(m(&[1, 2, 3])),
        nr::STATX => D(m(&[1, 4])),
        nr::IO_PGETEVENTS => D(m(&[3, 4, 5])),
        nr::IO_URING_ENTER => D(m(&[4])),
        nr::IO_URING_REGISTER => D(m(&[2])),
        nr::FSCONFIG => D(m(&[2, 3])),
        nr::FUTEX_WAIT => D(m(&[0, 4])),
        // Buffers reached through memory.
        nr::READV | nr::WRITEV | nr::PREADV | nr::PWRITEV | nr::PREADV2 | nr::PWRITEV2 => {
            I(m(&[1]))
        }
        nr::SENDMSG | nr::RECVMSG | nr::SENDMMSG | nr::VMSPLICE => I(m(&[1])),
        nr::RECVMMSG => I(m(&[1, 4])),
        nr::PROCESS_VM_READV | nr::PROCESS_VM_WRITEV => I(m(&[1, 3])),
        nr::EXECVE => I(m(&[0, 1, 2])),
        nr::EXECVEAT => I(m(&[1, 2, 3])),
        nr::IO_SUBMIT => I(m(&[2])),
        nr::FUTEX_WAITV => I(m(&[0, 3])),
        nr::FUTEX_REQUEUE => I(m(&[0])),
        nr::SETXATTRAT | nr::GETXATTRAT => I(m(&[1, 3, 4])),
        _ => Never,
    }
}

/// Whether `nr` is in the table (a system call without user pointers is in
/// it too, with no buffers).
pub fn in_table(nr: i64) -> bool {
    nr::ALL.iter().any(|&(n, _)| n == nr) && nr != nr::IO_URING_ENTER
}

/// The name of system call `nr`, if it is a known x86_64 number.
pub fn name(nr: i64) -> Option<&'static str> {
    nr::ALL.iter().find(|&&(n, _)| n == nr).map(|&(_, s)| s)
}

/// Calls `f` for every user buffer system call `nr` with `args` touches, and
/// says how complete that description is. Arrays of pointers (iovecs,
/// `msghdr`, `argv`) are reported as a `Range` *before* they are read through
/// `mem`, so the caller can pin them and fault them in first. Pointers that
/// are zero are not reported (the kernel treats them as absent or fails the
/// call with `EFAULT` itself).
pub fn for_each_buffer(
    nr: i64,
    args: &[u64; 6],
    mem: &dyn UserMem,
    f: &mut dyn FnMut(Buffer),
) -> Coverage {
    let mut e = Emit {
        mem,
        f,
        partial: false,
    };
    let a = *args;
    use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};
    match nr {
        nr::READ | nr::PREAD64 => e.range(a[1], a[2].min(MAX_RW_COUNT), W),
        nr::WRITE | nr::PWRITE64 => e.range(a[1], a[2].min(MAX_RW_COUNT), R),
        nr::READV | nr::PREADV | nr::PREADV2 => e.iovec(a[1], a[2], W),
        nr::WRITEV | nr::PWRITEV | nr::PWRITEV2 => e.iovec(a[1], a[2], R),
        nr::OPEN | nr::CREAT | nr::ACCESS | nr::CHDIR | nr::MKDIR | nr::RMDIR | nr::UNLINK => {
            e.path(a[0])
        }
        nr::CHMOD | nr::CHOWN | nr::LCHOWN | nr::TRUNCATE | nr::MKNOD | nr::CHROOT | nr::ACCT => {
            e.path(a[0])
        }
        nr::UMOUNT2 | nr::SWAPON | nr::SWAPOFF | nr::MQ_UNLINK => e.path(a[0]),
        nr::OPENAT | nr::MKDIRAT | nr::MKNODAT | nr::FCHOWNAT | nr::UNLINKAT | nr::FCHMODAT => {
            e.path(a[1])
        }
        nr::FACCESSAT | nr::FACCESSAT2 | nr::FCHMODAT2 | nr::OPEN_TREE | nr::FSPICK => e.path(a[1]),
        nr::INOTIFY_ADD_WATCH => e.path(a[1]),
        nr::STAT | nr::LSTAT => {
            e.path(a[0]);
            e.range(a[1], STAT, W)
        }
        nr::FSTAT => e.range(a[1], STAT, W),
        nr::NEWFSTATAT => {
            e.path(a[1]);
            e.range(a[2], STAT, W)
        }
        nr::STATX => {
            e.path(a[1]);
            e.range(a[4], STATX, W)
        }
        nr::STATFS => {
            e.path(a[0]);
            e.range(a[1], STATFS, W)
        }
        nr::FSTATFS => e.range(a[1], STATFS, W),
        nr::OPENAT2 => {
            e.path(a[1]);
            e.range(a[2], a[3], R)
        }
        nr::RENAME | nr::LINK | nr::SYMLINK | nr::PIVOT_ROOT => {
            e.path(a[0]);
            e.path(a[1])
        }
        nr::RENAMEAT | nr::RENAMEAT2 | nr::LINKAT | nr::MOVE_MOUNT => {
            e.path(a[1]);
            e.path(a[3])
        }
        nr::SYMLINKAT => {
            e.path(a[0]);
            e.path(a[2])
        }
        nr::READLINK => {
            e.path(a[0]);
            e.range(a[1], int_len(a[2]), W)
        }
        nr::READLINKAT => {
            e.path(a[1]);
            e.range(a[2], int_len(a[3]), W)
        }
        nr::GETCWD => e.range(a[0], a[1].min(MAX_RW_COUNT), W),
        nr::GETDENTS | nr::GETDENTS64 => e.range(a[1], (a[2] as u32 as u64).min(MAX_RW_COUNT), W),
        nr::UTIME => {
            e.path(a[0]);
            e.range(a[1], 16, R)
        }
        nr::UTIMES => {
            e.path(a[0]);
            e.range(a[1], 2 * TIMEVAL, R)
        }
        nr::FUTIMESAT => {
            e.path(a[1]);
            e.range(a[2], 2 * TIMEVAL, R)
        }
        nr::UTIMENSAT => {
            e.path(a[1]);
            e.range(a[2], 2 * TIMESPEC, R)
        }
        nr::EXECVE => {
            e.path(a[0]);
            e.str_array(a[1]);
            e.str_array(a[2])
        }
        nr::EXECVEAT => {
            e.path(a[1]);
            e.str_array(a[2]);
            e.str_array(a[3])
        }
        nr::POLL => e.range(a[0], (a[1] as u32 as u64).saturating_mul(POLLFD), RW),
        nr::PPOLL => {
            e.range(a[0], (a[1] as u32 as u64).saturating_mul(POLLFD), RW);
            e.range(a[2], TIMESPEC, RW);
            e.range(a[3], a[4].min(8), R)
        }
        nr::SELECT => {
            let n = fdset_bytes(a[0]);
            e.range(a[1], n, RW);
            e.range(a[2], n, RW);
            e.range(a[3], n, RW);
            e.range(a[4], TIMEVAL, RW)
        }
        nr::PSELECT6 => {
            let n = fdset_bytes(a[0]);
            e.range(a[1], n, RW);
            e.range(a[2], n, RW);
            e.range(a[3], n, RW);
            e.range(a[4], TIMESPEC, RW);
            // struct { const sigset_t *ss; size_t ss_len; }
            if a[5] != 0 {
                e.range(a[5], 16, R);
                if let (Some(ss), Some(len)) =
                    (e.mem.read_u64(at(a[5], 0)), e.mem.read_u64(at(a[5], 8)))
                {
                    e.range(ss, len.min(8), R);
                }
            }
        }
        nr::EPOLL_WAIT => e.range(a[1], epoll_bytes(a[2]), W),
        nr::EPOLL_PWAIT => {
            e.range(a[1], epoll_bytes(a[2]), W);
            e.range(a[4], a[5].min(8), R)
        }
        nr::EPOLL_PWAIT2 => {
            e.range(a[1], epoll_bytes(a[2]), W);
            e.range(a[3], TIMESPEC, R);
            e.range(a[4], a[5].min(8), R)
        }
        nr::EPOLL_CTL => {
            // EPOLL_CTL_DEL ignores the event.
            if a[1] as u32 != 2 {
                e.range(a[3], EPOLL_EVENT, R)
            }
        }
        nr::FUTEX => e.futex(&a),
        nr::FUTEX_WAKE => e.range(a[0], futex2_size(a[3]), R),
        nr::FUTEX_WAIT => {
            e.range(a[0], futex2_size(a[3]), R);
            e.range(a[4], TIMESPEC, R)
        }
        nr::FUTEX_WAITV => {
            e.futex_waitv(a[0], (a[1] as u32 as u64).min(128));
            e.range(a[3], TIMESPEC, R)
        }
        nr::FUTEX_REQUEUE => e.futex_waitv(a[0], 2),
        nr::NANOSLEEP => {
            e.range(a[0], TIMESPEC, R);
            e.range(a[1], TIMESPEC, W)
        }
        nr::CLOCK_NANOSLEEP => {
            e.range(a[2], TIMESPEC, R);
            e.range(a[3], TIMESPEC, W)
        }
        nr::CLOCK_GETTIME | nr::CLOCK_GETRES | nr::SCHED_RR_GET_INTERVAL => {
            e.range(a[1], TIMESPEC, W)
        }
        nr::CLOCK_SETTIME => e.range(a[1], TIMESPEC, R),
        nr::CLOCK_ADJTIME => e.range(a[1], TIMEX, RW),
        nr::ADJTIMEX => e.range(a[0], TIMEX, RW),
        nr::GETTIMEOFDAY => {
            e.range(a[0], TIMEVAL, W);
            e.range(a[1], TIMEZONE, W)
        }
        nr::SETTIMEOFDAY => {
            e.range(a[0], TIMEVAL, R);
            e.range(a[1], TIMEZONE, R)
        }
        nr::TIME => e.range(a[0], 8, W),
        nr::PIPE | nr::PIPE2 => e.range(a[0], 8, W),
        nr::SOCKETPAIR => e.range(a[3], 8, W),
        nr::WAIT4 => {
            e.range(a[1], 4, W);
            e.range(a[3], RUSAGE, W)
        }
        nr::WAITID => {
            e.range(a[2], SIGINFO, W);
            e.range(a[4], RUSAGE, W)
        }
        nr::GETRUSAGE => e.range(a[1], RUSAGE, W),
        nr::TIMES => e.range(a[0], TMS, W),
        nr::SYSINFO => e.range(a[0], SYSINFO, W),
        nr::UNAME => e.range(a[0], UTSNAME, W),
        nr::GETRLIMIT => e.range(a[1], RLIMIT, W),
        nr::SETRLIMIT => e.range(a[1], RLIMIT, R),
        nr::PRLIMIT64 => {
            e.range(a[2], RLIMIT, R);
            e.range(a[3], RLIMIT, W)
        }
        nr::GETITIMER => e.range(a[1], ITIMERVAL, W),
        nr::SETITIMER => {
            e.range(a[1], ITIMERVAL, R);
            e.range(a[2], ITIMERVAL, W)
        }
        nr::TIMER_CREATE => {
            e.range(a[1], SIGEVENT, R);
            e.range(a[2], 4, W)
        }
        nr::TIMER_SETTIME | nr::TIMERFD_SETTIME => {
            e.range(a[2], ITIMERSPEC, R);
            e.range(a[3], ITIMERSPEC, W)
        }
        nr::TIMER_GETTIME | nr::TIMERFD_GETTIME => e.range(a[1], ITIMERSPEC, W),
        nr::FCNTL => e.fcntl(&a),
        nr::IOCTL => e.ioctl(a[1] as u32, a[2]),
        nr::GETSOCKOPT => {
            e.range(a[4], 4, RW);
            if a[3] != 0 && a[4] != 0 {
                match e.mem.read_u32(a[4] as usize) {
                    Some(len) => e.range(a[3], int_len(len as u64), W),
                    None => e.unknown(a[3]),
                }
            }
        }
        nr::SETSOCKOPT => e.range(a[3], int_len(a[4]), R),
        nr::ACCEPT | nr::ACCEPT4 | nr::GETSOCKNAME | nr::GETPEERNAME => e.sockaddr_out(a[1], a[2]),
        nr::CONNECT | nr::BIND => e.range(a[1], int_len(a[2]), R),
        nr::SENDTO => {
            e.range(a[1], a[2].min(MAX_RW_COUNT), R);
            e.range(a[4], int_len(a[5]), R)
        }
        nr::RECVFROM => {
            e.range(a[1], a[2].min(MAX_RW_COUNT), W);
            if a[4] != 0 {
                e.sockaddr_out(a[4], a[5])
            }
        }
        nr::SENDMSG => e.msghdr(a[1], false),
        nr::RECVMSG => e.msghdr(a[1], true),
        nr::SENDMMSG => e.mmsghdr(a[1], a[2], false),
        nr::RECVMMSG => {
            e.mmsghdr(a[1], a[2], true);
            e.range(a[4], TIMESPEC, RW)
        }
        nr::SENDFILE => e.range(a[2], 8, RW),
        nr::SPLICE | nr::COPY_FILE_RANGE => {
            e.range(a[1], 8, RW);
            e.range(a[3], 8, RW)
        }
        nr::VMSPLICE => e.iovec(a[1], a[2], RW),
        nr::PROCESS_VM_READV | nr::PROCESS_VM_WRITEV => {
            let local = if nr == nr::PROCESS_VM_READV { W } else { R };
            let remote = if nr == nr::PROCESS_VM_READV { R } else { W };
            e.iovec(a[1], a[2], local);
            // SAFETY: getpid has no preconditions and is async-signal-safe.
            let me = unsafe { libc::getpid() };
            if a[0] as i32 == me {
                e.iovec(a[3], a[4], remote)
            } else {
                e.range(a[3], (a[4].min(UIO_MAXIOV)) * IOVEC, R)
            }
        }
        nr::GETRANDOM => e.range(a[0], a[1].min(MAX_RW_COUNT), W),
        nr::MEMFD_CREATE => e.cstr(a[0], 256),
        nr::MINCORE => e.range(a[2], a[1].div_ceil(4096), W),
        nr::RT_SIGACTION => {
            e.range(a[1], KSIGACTION_BASE + a[3].min(8), R);
            e.range(a[2], KSIGACTION_BASE + a[3].min(8), W)
        }
        nr::RT_SIGPROCMASK => {
            e.range(a[1], a[3].min(8), R);
            e.range(a[2], a[3].min(8), W)
        }
        nr::RT_SIGPENDING => e.range(a[0], a[1].min(8), W),
        nr::RT_SIGSUSPEND => e.range(a[0], a[1].min(8), R),
        nr::RT_SIGTIMEDWAIT => {
            e.range(a[0], a[3].min(8), R);
            e.range(a[1], SIGINFO, W);
            e.range(a[2], TIMESPEC, R)
        }
        nr::RT_SIGQUEUEINFO | nr::PIDFD_SEND_SIGNAL => e.range(a[2], SIGINFO, R),
        nr::RT_TGSIGQUEUEINFO => e.range(a[3], SIGINFO, R),
        nr::SIGALTSTACK => {
            if a[0] != 0 {
                e.range(a[0], STACK_T, R);
                // ss_sp @0, ss_flags @8, ss_size @16; SS_DISABLE = 2.
                let sp = e.mem.read_u64(at(a[0], 0));
                let flags = e.mem.read_u32(at(a[0], 8));
                let size = e.mem.read_u64(at(a[0], 16));
                if let (Some(sp), Some(flags), Some(size)) = (sp, flags, size) {
                    if flags & 2 == 0 {
                        e.registered(sp, size, RW)
                    }
                }
            }
            e.range(a[1], STACK_T, W)
        }
        nr::SIGNALFD | nr::SIGNALFD4 => e.range(a[1], a[2].min(8), R),
        nr::SCHED_GETAFFINITY => e.range(a[2], a[1] as u32 as u64, W),
        nr::SCHED_SETAFFINITY => e.range(a[2], a[1] as u32 as u64, R),
        nr::SCHED_SETPARAM => e.range(a[1], 4, R),
        nr::SCHED_GETPARAM => e.range(a[1], 4, W),
        nr::SCHED_SETSCHEDULER => e.range(a[2], 4, R),
        nr::SCHED_SETATTR => {
            // struct sched_attr: u32 size first; 0 means the first version (48).
            e.range(a[1], 4, R);
            if a[1] != 0 {
                let size = e.mem.read_u32(a[1] as usize).unwrap_or(0);
                let size = if size == 0 { 48 } else { size as u64 };
                e.range(a[1], size.min(4096), R)
            }
        }
        nr::SCHED_GETATTR => e.range(a[1], a[2] as u32 as u64, W),
        nr::GETGROUPS => e.range(a[1], int_len(a[0]).saturating_mul(4), W),
        nr::SETGROUPS => e.range(a[1], int_len(a[0]).saturating_mul(4), R),
        nr::GETRESUID | nr::GETRESGID => {
            e.range(a[0], 4, W);
            e.range(a[1], 4, W);
            e.range(a[2], 4, W)
        }
        nr::GETCPU => {
            e.range(a[0], 4, W);
            e.range(a[1], 4, W)
        }
        nr::CAPGET | nr::CAPSET => {
            // cap_user_header: u32 version, i32 pid; the kernel writes the
            // version back on a mismatch. Data: 12 bytes per u32 word.
            e.range(a[0], 8, if nr == nr::CAPGET { RW } else { R });
            if a[0] != 0 {
                let words = match e.mem.read_u32(a[0] as usize) {
                    Some(0x1998_0330) => 1,
                    Some(_) => 2,
                    None => 0,
                };
                e.range(a[1], 12 * words, if nr == nr::CAPGET { W } else { R })
            }
        }
        nr::PRCTL => e.prctl(&a),
        nr::ARCH_PRCTL => match a[0] {
            // ARCH_GET_FS, ARCH_GET_GS, ARCH_GET_XCOMP_SUPP/PERM/GUEST_PERM,
            // ARCH_SHSTK_STATUS write a u64; the others take values.
            0x1003 | 0x1004 | 0x1021 | 0x1022 | 0x1024 | 0x5005 => e.range(a[1], 8, W),
            0x1001 | 0x1002 | 0x1011 | 0x1012 | 0x1023 | 0x1025 | 0x5001..=0x5004 => {}
            _ => e.unknown(a[1]),
        },
        nr::SET_TID_ADDRESS => e.registered(a[0], 4, RW),
        nr::SET_ROBUST_LIST => e.registered(a[0], a[1], RW),
        nr::GET_ROBUST_LIST => {
            e.range(a[1], 8, W);
            e.range(a[2], 8, W)
        }
        nr::RSEQ => e.registered(a[0], a[1] as u32 as u64, RW),
        nr::CLONE => {
            // x86_64: clone(flags, newsp, parent_tid, child_tid, tls).
            let flags = a[0];
            if flags & (0x0010_0000 | 0x1000) != 0 {
                // CLONE_PARENT_SETTID, CLONE_PIDFD
                e.range(a[2], 4, W)
            }
            if flags & (0x0100_0000 | 0x0020_0000) != 0 {
                // CLONE_CHILD_SETTID, CLONE_CHILD_CLEARTID
                e.registered(a[3], 4, RW)
            }
        }
        nr::CLONE3 => {
            e.range(a[0], a[1].min(4096), R);
            if a[0] != 0 && a[1] >= 64 {
                let p = a[0];
                let flags = e.mem.read_u64(at(p, 0)).unwrap_or(0);
                if flags & 0x1000 != 0 {
                    e.range(e.mem.read_u64(at(p, 8)).unwrap_or(0), 4, W) // pidfd
                }
                if flags & 0x0010_0000 != 0 {
                    e.range(e.mem.read_u64(at(p, 24)).unwrap_or(0), 4, W) // parent_tid
                }
                if flags & (0x0100_0000 | 0x0020_0000) != 0 {
                    e.registered(e.mem.read_u64(at(p, 16)).unwrap_or(0), 4, RW) // child_tid
                }
                if a[1] >= 80 {
                    let set_tid = e.mem.read_u64(at(p, 64)).unwrap_or(0);
                    let n = e.mem.read_u64(at(p, 72)).unwrap_or(0).min(32);
                    e.range(set_tid, n * 8, R)
                }
            }
        }
        nr::SEMOP => e.range(a[1], (a[2] as u32 as u64).saturating_mul(SEMBUF), R),
        nr::SEMTIMEDOP => {
            e.range(a[1], (a[2] as u32 as u64).saturating_mul(SEMBUF), R);
            e.range(a[3], TIMESPEC, R)
        }
        nr::MSGSND => e.range(a[1], 8 + a[2].min(1 << 20), R),
        nr::MSGRCV => e.range(a[1], 8 + a[2].min(1 << 20), W),
        nr::SHMCTL => e.ipc_ctl(a[1], a[2], SHMID_DS, &[(3, 72), (14, 48)], &[13, 15]),
        nr::MSGCTL => e.ipc_ctl(a[1], a[2], MSQID_DS, &[(3, 32), (12, 32)], &[11, 13]),
        nr::SEMCTL => match a[2] as u32 & !0x100 {
            13 | 17 => e.unknown(a[3]), // GETALL, SETALL: nsems * 2 bytes
            cmd => e.ipc_ctl(cmd as u64, a[3], SEMID_DS, &[(3, 40), (19, 40)], &[18, 20]),
        },
        nr::MQ_OPEN => {
            e.cstr(a[0], 256);
            e.range(a[3], MQ_ATTR, R)
        }
        nr::MQ_TIMEDSEND => {
            e.range(a[1], a[2], R);
            e.range(a[4], TIMESPEC, R)
        }
        nr::MQ_TIMEDRECEIVE => {
            e.range(a[1], a[2], W);
            e.range(a[3], 4, W);
            e.range(a[4], TIMESPEC, R)
        }
        nr::MQ_NOTIFY => e.range(a[1], SIGEVENT, R),
        nr::MQ_GETSETATTR => {
            e.range(a[1], MQ_ATTR, R);
            e.range(a[2], MQ_ATTR, W)
        }
        nr::IO_SETUP => e.range(a[1], 8, RW),
        nr::IO_GETEVENTS => {
            e.range(a[3], (a[2] as i64).clamp(0, 1 << 16) as u64 * IO_EVENT, W);
            e.range(a[4], TIMESPEC, R)
        }
        nr::IO_PGETEVENTS => {
            e.range(a[3], (a[2] as i64).clamp(0, 1 << 16) as u64 * IO_EVENT, W);
            e.range(a[4], TIMESPEC, R);
            if a[5] != 0 {
                e.range(a[5], 16, R);
                if let (Some(ss), Some(len)) =
                    (e.mem.read_u64(at(a[5], 0)), e.mem.read_u64(at(a[5], 8)))
                {
                    e.range(ss, len.min(8), R)
                }
            }
        }
        nr::IO_SUBMIT => e.io_submit(a[1], a[2]),
        nr::IO_CANCEL => {
            e.range(a[1], IOCB, R);
            e.range(a[2], IO_EVENT, W)
        }
        nr::SETXATTR | nr::LSETXATTR => {
            e.path(a[0]);
            e.cstr(a[1], XATTR_NAME_MAX);
            e.range(a[2], a[3], R)
        }
        nr::FSETXATTR => {
            e.cstr(a[1], XATTR_NAME_MAX);
            e.range(a[2], a[3], R)
        }
        nr::GETXATTR | nr::LGETXATTR => {
            e.path(a[0]);
            e.cstr(a[1], XATTR_NAME_MAX);
            e.range(a[2], a[3], W)
        }
        nr::FGETXATTR => {
            e.cstr(a[1], XATTR_NAME_MAX);
            e.range(a[2], a[3], W)
        }
        nr::LISTXATTR | nr::LLISTXATTR => {
            e.path(a[0]);
            e.range(a[1], a[2], W)
        }
        nr::FLISTXATTR => e.range(a[1], a[2], W),
        nr::REMOVEXATTR | nr::LREMOVEXATTR => {
            e.path(a[0]);
            e.cstr(a[1], XATTR_NAME_MAX)
        }
        nr::FREMOVEXATTR => e.cstr(a[1], XATTR_NAME_MAX),
        nr::SETXATTRAT | nr::GETXATTRAT => {
            e.path(a[1]);
            e.cstr(a[3], XATTR_NAME_MAX);
            // struct xattr_args { u64 value; u32 size; u32 flags; }
            e.range(a[4], a[5].min(4096), R);
            if a[4] != 0 && a[5] >= 16 {
                let value = e.mem.read_u64(at(a[4], 0)).unwrap_or(0);
                let size = e.mem.read_u32(at(a[4], 8)).unwrap_or(0) as u64;
                e.range(value, size, if nr == nr::SETXATTRAT { R } else { W })
            }
        }
        nr::LISTXATTRAT => {
            e.path(a[1]);
            e.range(a[3], a[4], W)
        }
        nr::REMOVEXATTRAT => {
            e.path(a[1]);
            e.cstr(a[3], XATTR_NAME_MAX)
        }
        nr::USTAT => e.range(a[1], USTAT, W),
        nr::SYSFS => match a[0] {
            1 => e.cstr(a[1], 256),
            2 => e.unknown(a[2]),
            _ => {}
        },
        nr::MODIFY_LDT => match a[0] {
            0 | 2 => e.range(a[1], a[2], W),
            _ => e.range(a[1], a[2], R),
        },
        nr::SYSLOG => {
            // SYSLOG_ACTION_READ, READ_ALL, READ_CLEAR write the buffer.
            if (2..=4).contains(&a[0]) {
                e.range(a[1], int_len(a[2]), W)
            }
        }
        nr::SETHOSTNAME | nr::SETDOMAINNAME => e.range(a[0], int_len(a[1]), R),
        nr::INIT_MODULE => {
            e.range(a[0], a[1], R);
            e.cstr(a[2], 4096)
        }
        nr::FINIT_MODULE => e.cstr(a[1], 4096),
        nr::DELETE_MODULE => e.cstr(a[0], 64),
        nr::MOUNT => {
            e.path(a[0]);
            e.path(a[1]);
            e.cstr(a[2], 4096);
            // The options page: copied page-wise, stopping at a fault.
            e.unknown(a[4])
        }
        nr::GET_MEMPOLICY => {
            e.range(a[0], 4, W);
            e.range(a[1], nodemask_bytes(a[2]), W)
        }
        nr::SET_MEMPOLICY => e.range(a[1], nodemask_bytes(a[2]), R),
        nr::MBIND => e.range(a[3], nodemask_bytes(a[4]), R),
        nr::MIGRATE_PAGES => {
            e.range(a[2], nodemask_bytes(a[1]), R);
            e.range(a[3], nodemask_bytes(a[1]), R)
        }
        nr::MOVE_PAGES => {
            let n = a[1].min(1 << 20);
            e.range(a[2], n * 8, R);
            e.range(a[3], n * 4, R);
            e.range(a[4], n * 4, W)
        }
        nr::PROCESS_MADVISE => e.range(a[1], a[2].min(UIO_MAXIOV) * IOVEC, R),
        nr::KCMP => {
            if a[2] == 7 {
                // KCMP_EPOLL_TFD
                e.range(a[4], KCMP_EPOLL_SLOT, R)
            }
        }
        nr::SECCOMP => match a[0] {
            1 => {
                // SECCOMP_SET_MODE_FILTER: struct sock_fprog { u16 len; filter* }
                e.range(a[2], SOCK_FPROG, R);
                if a[2] != 0 {
                    let len = e.mem.read_u32(at(a[2], 0)).unwrap_or(0) & 0xffff;
                    let filter = e.mem.read_u64(at(a[2], 8)).unwrap_or(0);
                    e.range(filter, len as u64 * 8, R)
                }
            }
            2 => e.range(a[2], 4, R),
            3 => e.range(a[2], 6, W),
            _ => {}
        },
        nr::BPF => {
            e.range(a[1], (a[2] as u32 as u64).min(4096), RW);
            e.partial = true
        }
        nr::PERF_EVENT_OPEN => {
            // perf_event_attr.size at offset 4; 0 means PERF_ATTR_SIZE_VER0.
            e.range(a[0], 8, R);
            if a[0] != 0 {
                let size = e.mem.read_u32(at(a[0], 4)).unwrap_or(0);
                let size = if size == 0 { 64 } else { size as u64 };
                e.range(a[0], size.min(4096), RW)
            }
        }
        nr::NAME_TO_HANDLE_AT => {
            e.path(a[1]);
            e.file_handle(a[2], RW);
            e.range(a[3], if a[4] & 1 != 0 { 8 } else { 4 }, W)
        }
        nr::OPEN_BY_HANDLE_AT => e.file_handle(a[1], R),
        nr::FANOTIFY_MARK => e.path(a[4]),
        nr::CACHESTAT => {
            e.range(a[1], CACHESTAT_RANGE, R);
            e.range(a[2], CACHESTAT, W)
        }
        nr::MOUNT_SETATTR | nr::OPEN_TREE_ATTR => {
            e.path(a[1]);
            e.range(a[3], a[4].min(4096), R)
        }
        nr::FILE_GETATTR | nr::FILE_SETATTR => {
            e.path(a[1]);
            e.range(
                a[2],
                a[3].min(4096),
                if nr == nr::FILE_GETATTR { W } else { R },
            )
        }
        nr::FSOPEN => e.cstr(a[0], 256),
        nr::FSCONFIG => {
            e.cstr(a[2], 256);
            match a[1] {
                1 | 3 | 4 => e.cstr(a[3], 4096), // SET_STRING, SET_PATH, SET_PATH_EMPTY
                2 => e.range(a[3], a[4], R),     // SET_BINARY
                _ => {}
            }
        }
        nr::LANDLOCK_CREATE_RULESET => e.range(a[0], a[1].min(4096), R),
        nr::LANDLOCK_ADD_RULE => match a[1] {
            1 => e.range(a[2], 12, R),
            2 => e.range(a[2], 16, R),
            _ => e.unknown(a[2]),
        },
        nr::STATMOUNT | nr::LISTMOUNT | nr::LISTNS => {
            // struct mnt_id_req / ns_id_req: u32 size first.
            e.range(a[0], 4, R);
            if a[0] != 0 {
                let size = e.mem.read_u32(a[0] as usize).unwrap_or(0) as u64;
                e.range(a[0], size.min(4096), R)
            }
            if nr == nr::STATMOUNT {
                e.range(a[1], a[2], W)
            } else {
                e.range(a[1], a[2].min(1 << 20) * 8, W)
            }
        }
        nr::LSM_GET_SELF_ATTR | nr::LSM_LIST_MODULES => {
            let (buf, size) = if nr == nr::LSM_GET_SELF_ATTR {
                (a[1], a[2])
            } else {
                (a[0], a[1])
            };
            e.range(size, 4, RW);
            if buf != 0 && size != 0 {
                let n = e.mem.read_u32(size as usize).unwrap_or(0) as u64;
                e.range(buf, n, W)
            }
        }
        nr::LSM_SET_SELF_ATTR => e.range(a[1], a[2] as u32 as u64, R),
        nr::KEXEC_LOAD | nr::KEXEC_FILE_LOAD | nr::PTRACE | nr::KEYCTL | nr::ADD_KEY => {
            e.unknown_args(nr, &a)
        }
        nr::REQUEST_KEY | nr::QUOTACTL | nr::QUOTACTL_FD | nr::REBOOT => e.unknown_args(nr, &a),
        nr::IO_URING_SETUP => e.range(a[1], 120, RW),
        nr::IO_URING_REGISTER => {
            e.unknown(a[2]);
            e.partial = true
        }
        nr::IO_URING_ENTER => {
            e.unknown(a[4]);
            return Coverage::Unknown;
        }
        _ => {
            if !in_table(nr) {
                return Coverage::Unknown;
            }
            // In the table, and no user pointer: nothing to report.
        }
    }
    if e.partial {
        Coverage::Partial
    } else {
        Coverage::Known
    }
}

/// `base + off` as an address (wrapping: a bogus pointer must not panic).
fn at(base: u64, off: u64) -> usize {
    base.wrapping_add(off) as usize
}

/// An `int` length argument: negative values fail with `EINVAL`.
fn int_len(v: u64) -> u64 {
    (v as u32 as i32).max(0) as u64
}

fn fdset_bytes(n: u64) -> u64 {
    let n = (n as u32 as i32).max(0) as u64;
    n.div_ceil(64) * 8
}

fn epoll_bytes(maxevents: u64) -> u64 {
    let n = (maxevents as u32 as i32).max(0) as u64;
    n.min(1 << 24) * EPOLL_EVENT
}

fn nodemask_bytes(maxnode: u64) -> u64 {
    maxnode.saturating_sub(1).min(1 << 16).div_ceil(64) * 8
}

/// `FUTEX2_SIZE_*` in the low two bits of the flags: 1, 2, 4 or 8 bytes.
fn futex2_size(flags: u64) -> u64 {
    1 << (flags & 3)
}

struct Emit<'a> {
    mem: &'a dyn UserMem,
    f: &'a mut dyn FnMut(Buffer),
    partial: bool,
}

impl Emit<'_> {
    fn range(&mut self, addr: u64, len: u64, access: Access) {
        if addr != 0 && len != 0 {
            (self.f)(Buffer::Range {
                addr: addr as usize,
                len: len as usize,
                access,
            })
        }
    }

    fn registered(&mut self, addr: u64, len: u64, access: Access) {
        if addr != 0 && len != 0 {
            self.partial = true;
            (self.f)(Buffer::Registered {
                addr: addr as usize,
                len: len as usize,
                access,
            })
        }
    }

    fn cstr(&mut self, addr: u64, max: usize) {
        if addr != 0 {
            (self.f)(Buffer::CStr {
                addr: addr as usize,
                max,
            })
        }
    }

    fn path(&mut self, addr: u64) {
        self.cstr(addr, PATH_MAX)
    }

    fn unknown(&mut self, addr: u64) {
        if addr != 0 {
            (self.f)(Buffer::Unknown {
                addr: addr as usize,
            })
        }
    }

    /// Every argument of a call the table cannot describe that the trap
    /// rule treats as a pointer.
    fn unknown_args(&mut self, nr: i64, a: &[u64; 6]) {
        let mask = trap_rule(nr).direct_mask();
        for (i, &v) in a.iter().enumerate() {
            if mask & (1 << i) != 0 {
                self.unknown(v)
            }
        }
        self.partial = true;
    }

    /// `struct iovec { void *base; size_t len; }[cnt]`: the array, then each
    /// buffer. More than `UIO_MAXIOV` entries fail with `EINVAL`.
    fn iovec(&mut self, iov: u64, cnt: u64, access: Access) {
        if iov == 0 || cnt == 0 || cnt > UIO_MAXIOV {
            return;
        }
        self.range(iov, cnt * IOVEC, Access::KernelReads);
        let mut total: u64 = 0;
        for i in 0..cnt {
            let (Some(base), Some(len)) = (
                self.mem.read_u64(at(iov, i * IOVEC)),
                self.mem.read_u64(at(iov, i * IOVEC + 8)),
            ) else {
                return;
            };
            let len = len.min(MAX_RW_COUNT - total);
            total += len;
            self.range(base, len, access);
            if total >= MAX_RW_COUNT {
                return;
            }
        }
    }

    /// `struct msghdr` (56 bytes): name @0, namelen @8, iov @16, iovlen @24,
    /// control @32, controllen @40, flags @48. `recvmsg` writes namelen,
    /// controllen and flags back.
    fn msghdr(&mut self, msg: u64, recv: bool) {
        if msg == 0 {
            return;
        }
        let access = if recv {
            Access::KernelWrites
        } else {
            Access::KernelReads
        };
        self.range(
            msg,
            MSGHDR,
            if recv {
                Access::KernelReadsWrites
            } else {
                Access::KernelReads
            },
        );
        self.msghdr_contents(msg as usize, access);
    }

    fn msghdr_contents(&mut self, msg: usize, access: Access) {
        let mem = self.mem;
        let (Some(name), Some(namelen), Some(iov), Some(iovlen), Some(control), Some(controllen)) = (
            mem.read_u64(msg),
            mem.read_u32(msg.wrapping_add(8)),
            mem.read_u64(msg.wrapping_add(16)),
            mem.read_u64(msg.wrapping_add(24)),
            mem.read_u64(msg.wrapping_add(32)),
            mem.read_u64(msg.wrapping_add(40)),
        ) else {
            return;
        };
        self.range(name, namelen as u64, access);
        self.iovec(iov, iovlen, access);
        self.range(control, controllen.min(MAX_RW_COUNT), access);
    }

    /// `struct mmsghdr { struct msghdr; unsigned msg_len; }[vlen]` (64 bytes
    /// each); the kernel writes `msg_len` (and, receiving, the msghdr fields).
    fn mmsghdr(&mut self, vec: u64, vlen: u64, recv: bool) {
        let vlen = (vlen as u32 as u64).min(UIO_MAXIOV);
        if vec == 0 || vlen == 0 {
            return;
        }
        self.range(vec, vlen * MMSGHDR, Access::KernelReadsWrites);
        let access = if recv {
            Access::KernelWrites
        } else {
            Access::KernelReads
        };
        for i in 0..vlen {
            self.msghdr_contents(at(vec, i * MMSGHDR), access);
        }
    }

    /// A `NULL`-terminated array of string pointers (`argv`, `envp`),
    /// reported a page at a time before it is read.
    fn str_array(&mut self, arr: u64) {
        if arr == 0 {
            return;
        }
        let mut at = arr as usize;
        let mut n = 0usize;
        loop {
            let page_end = (at | (common::PAGE_SIZE - 1)).wrapping_add(1);
            if page_end <= at {
                return;
            }
            self.range(at as u64, (page_end - at) as u64, Access::KernelReads);
            while at + 8 <= page_end {
                let Some(p) = self.mem.read_u64(at) else {
                    return;
                };
                if p == 0 || n >= MAX_ARGV {
                    return;
                }
                self.cstr(p, MAX_ARG_STRLEN);
                at += 8;
                n += 1;
            }
            if at < page_end {
                // A pointer straddles the page boundary: report the next page
                // before reading it.
                self.range(page_end as u64, 8, Access::KernelReads);
                let Some(p) = self.mem.read_u64(at) else {
                    return;
                };
                if p == 0 || n >= MAX_ARGV {
                    return;
                }
                self.cstr(p, MAX_ARG_STRLEN);
                at += 8;
                n += 1;
            }
        }
    }

    /// `(struct sockaddr *addr, socklen_t *addrlen)` the kernel fills.
    fn sockaddr_out(&mut self, addr: u64, lenp: u64) {
        if addr == 0 {
            return;
        }
        self.range(lenp, 4, Access::KernelReadsWrites);
        if lenp == 0 {
            return;
        }
        match self.mem.read_u32(lenp as usize) {
            Some(len) => self.range(addr, (len as i32).max(0) as u64, Access::KernelWrites),
            None => self.unknown(addr),
        }
    }

    /// `struct file_handle { u32 handle_bytes; i32 type; u8 f_handle[]; }`.
    fn file_handle(&mut self, h: u64, access: Access) {
        self.range(h, 8, Access::KernelReadsWrites);
        if h != 0 {
            let n = self.mem.read_u32(h as usize).unwrap_or(0).min(128) as u64;
            self.range(h, 8 + n, access)
        }
    }

    fn futex(&mut self, a: &[u64; 6]) {
        use Access::{KernelReads as R, KernelReadsWrites as RW};
        let cmd = a[1] as u32 & 127;
        match cmd {
            // WAIT, WAIT_BITSET: the word, a relative/absolute timeout.
            0 | 9 => {
                self.range(a[0], 4, R);
                self.range(a[3], TIMESPEC, R)
            }
            // WAKE, WAKE_BITSET (shared futexes look the page up).
            1 | 10 => self.range(a[0], 4, R),
            // REQUEUE, CMP_REQUEUE: val2 is a count, not a timeout.
            3 | 4 => {
                self.range(a[0], 4, R);
                self.range(a[4], 4, R)
            }
            // WAKE_OP reads and writes the second word.
            5 => {
                self.range(a[0], 4, R);
                self.range(a[4], 4, RW)
            }
            // LOCK_PI, LOCK_PI2: the word is read and written; timeout.
            6 | 13 => {
                self.range(a[0], 4, RW);
                self.range(a[3], TIMESPEC, R)
            }
            // UNLOCK_PI, TRYLOCK_PI.
            7 | 8 => self.range(a[0], 4, RW),
            // WAIT_REQUEUE_PI: wait on uaddr, then own the PI futex uaddr2.
            11 => {
                self.range(a[0], 4, R);
                self.range(a[3], TIMESPEC, R);
                self.range(a[4], 4, RW)
            }
            // CMP_REQUEUE_PI.
            12 => {
                self.range(a[0], 4, R);
                self.range(a[4], 4, RW)
            }
            _ => {}
        }
    }

    /// `struct futex_waitv { u64 val; u64 uaddr; u32 flags; u32 reserved; }`.
    fn futex_waitv(&mut self, w: u64, n: u64) {
        if w == 0 || n == 0 {
            return;
        }
        self.range(w, n * FUTEX_WAITV, Access::KernelReads);
        for i in 0..n {
            let (Some(uaddr), Some(flags)) = (
                self.mem.read_u64(at(w, i * FUTEX_WAITV + 8)),
                self.mem.read_u32(at(w, i * FUTEX_WAITV + 16)),
            ) else {
                return;
            };
            self.range(uaddr, futex2_size(flags as u64), Access::KernelReads)
        }
    }

    /// `io_submit(ctx, nr, struct iocb **iocbpp)`: the pointer array, each
    /// iocb, and each iocb's buffer. The I/O may complete after the call
    /// (`Coverage::Partial`).
    fn io_submit(&mut self, n: u64, iocbpp: u64) {
        self.partial = true;
        let n = (n as i64).clamp(0, 1 << 16) as u64;
        if iocbpp == 0 || n == 0 {
            return;
        }
        self.range(iocbpp, n * 8, Access::KernelReads);
        for i in 0..n {
            let Some(iocb) = self.mem.read_u64(at(iocbpp, i * 8)) else {
                return;
            };
            if iocb == 0 {
                return;
            }
            self.range(iocb, IOCB, Access::KernelReads);
            let (Some(opcode), Some(buf), Some(nbytes)) = (
                self.mem.read_u32(at(iocb, 16)),
                self.mem.read_u64(at(iocb, 24)),
                self.mem.read_u64(at(iocb, 32)),
            ) else {
                return;
            };
            match opcode & 0xffff {
                0 => self.range(buf, nbytes, Access::KernelWrites), // PREAD
                1 => self.range(buf, nbytes, Access::KernelReads),  // PWRITE
                7 => self.iovec(buf, nbytes, Access::KernelWrites), // PREADV
                8 => self.iovec(buf, nbytes, Access::KernelReads),  // PWRITEV
                _ => {}
            }
        }
    }

    fn fcntl(&mut self, a: &[u64; 6]) {
        use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};
        match a[1] as u32 {
            5 | 36 => self.range(a[2], FLOCK, RW), // F_GETLK, F_OFD_GETLK
            6 | 7 | 37 | 38 => self.range(a[2], FLOCK, R), // F_SETLK(W), F_OFD_SETLK(W)
            15 => self.range(a[2], 8, R),          // F_SETOWN_EX
            16 => self.range(a[2], 8, W),          // F_GETOWN_EX
            17 => self.range(a[2], 8, W),          // F_GETOWNER_UIDS
            1035 | 1037 => self.range(a[2], 8, W), // F_GET_RW_HINT, F_GET_FILE_RW_HINT
            1036 | 1038 => self.range(a[2], 8, R), // F_SET_RW_HINT, F_SET_FILE_RW_HINT
            _ => {}                                // integer arguments
        }
    }

    fn ioctl(&mut self, req: u32, arg: u64) {
        match ioctl_buffer(req) {
            IoctlArg::None => {}
            IoctlArg::Buffer(len, access) => self.range(arg, len, access),
            IoctlArg::Unknown => self.unknown(arg),
        }
    }

    fn prctl(&mut self, a: &[u64; 6]) {
        use Access::{KernelReads as R, KernelWrites as W};
        match a[0] {
            15 => self.cstr(a[1], 16),                           // PR_SET_NAME
            16 => self.range(a[1], 16, W),                       // PR_GET_NAME
            2 | 19 | 11 | 25 | 5 | 37 => self.range(a[1], 4, W), // PDEATHSIG, ENDIAN, FPEXC, TSC, UNALIGN, CHILD_SUBREAPER
            40 => self.range(a[1], 8, W),                        // PR_GET_TID_ADDRESS
            22 => {
                // PR_SET_SECCOMP, SECCOMP_MODE_FILTER: a sock_fprog.
                if a[1] == 2 {
                    self.range(a[2], SOCK_FPROG, R);
                    if a[2] != 0 {
                        let len = self.mem.read_u32(at(a[2], 0)).unwrap_or(0) & 0xffff;
                        let filter = self.mem.read_u64(at(a[2], 8)).unwrap_or(0);
                        self.range(filter, len as u64 * 8, R)
                    }
                }
            }
            0x5356_4d41 => {
                // PR_SET_VMA, PR_SET_VMA_ANON_NAME: a name.
                if a[1] == 0 {
                    self.cstr(a[4], 80)
                }
            }
            0x4155_5856 => self.range(a[1], a[2], W), // PR_GET_AUXV
            62 => {
                // PR_SCHED_CORE, PR_SCHED_CORE_GET writes a u64 cookie.
                if a[1] == 0 {
                    self.range(a[4], 8, W)
                }
            }
            59 => {
                // PR_SET_SYSCALL_USER_DISPATCH on: the selector byte is read
                // on every later system call.
                if a[1] == 1 {
                    self.registered(a[4], 1, Access::KernelReads)
                }
            }
            74 => self.range(a[1], 8, W), // PR_GET_SHADOW_STACK_STATUS
            35 => self.unknown_args(nr::PRCTL, a), // PR_SET_MM
            // Integer-only options.
            1
            | 3
            | 4
            | 6
            | 7
            | 8
            | 9
            | 10
            | 12
            | 13
            | 14
            | 17
            | 18
            | 20
            | 21
            | 23
            | 24
            | 26
            | 27..=34
            | 36
            | 38
            | 39
            | 41..=58
            | 60
            | 61
            | 63..=73
            | 75..=80 => {}
            _ => self.unknown_args(nr::PRCTL, a),
        }
    }

    /// `shmctl`/`msgctl`/`semctl` buffers: `IPC_SET` (1) reads `ds` bytes,
    /// `IPC_STAT` (2) and the `*_STAT*` commands write them, the info
    /// commands write their own size.
    fn ipc_ctl(&mut self, cmd: u64, buf: u64, ds: u64, info: &[(u32, u64)], stat: &[u32]) {
        let cmd = cmd as u32 & !0x100; // IPC_64
        if cmd == 1 {
            self.range(buf, ds, Access::KernelReads)
        } else if cmd == 2 || stat.contains(&cmd) {
            self.range(buf, ds, Access::KernelWrites)
        } else if let Some(&(_, len)) = info.iter().find(|&&(c, _)| c == cmd) {
            self.range(buf, len, Access::KernelWrites)
        }
    }
}
