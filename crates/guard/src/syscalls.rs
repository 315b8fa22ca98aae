//! The x86_64 system-call table: for each system call, the user buffers the
//! kernel reads or writes on the caller's behalf, and the rule the seccomp
//! filter uses to decide when to trap it.
//!
//! Everything here is usable from a signal handler: no allocation, no locks,
//! no panics (indexing is bounds-checked by construction or avoided).
//!
//! Sizes are the x86_64 kernel's (`struct stat` 144, `statx` 256, `epoll_event`
//! 12 because it is packed on x86_64, kernel `struct termios` 36, …).

use crate::nr;

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

// Sizes of kernel structures on x86_64.
const STAT: u64 = 144;
const STATX: u64 = 256;
const STATFS: u64 = 120;
const TIMESPEC: u64 = 16;
const TIMEVAL: u64 = 16;
const TIMEZONE: u64 = 8;
const ITIMERSPEC: u64 = 32;
const ITIMERVAL: u64 = 32;
const POLLFD: u64 = 8;
const EPOLL_EVENT: u64 = 12;
const KSIGACTION_BASE: u64 = 24; // handler, flags, restorer; + sigsetsize
const STACK_T: u64 = 24;
const RUSAGE: u64 = 144;
const TMS: u64 = 32;
const SYSINFO: u64 = 112;
const UTSNAME: u64 = 390;
const FLOCK: u64 = 32;
const RLIMIT: u64 = 16;
const SIGINFO: u64 = 128;
const TIMEX: u64 = 208;
const MSGHDR: u64 = 56;
const MMSGHDR: u64 = 64;
/// Bytes of one `struct iovec`.
pub(crate) const IOVEC: u64 = 16;
const IO_EVENT: u64 = 32;
const IOCB: u64 = 64;
const SIGEVENT: u64 = 64;
const MQ_ATTR: u64 = 64;
const SHMID_DS: u64 = 112;
const MSQID_DS: u64 = 120;
const SEMID_DS: u64 = 104;
const SEMBUF: u64 = 6;
const FUTEX_WAITV: u64 = 24;
const USTAT: u64 = 32;
const CACHESTAT_RANGE: u64 = 16;
const CACHESTAT: u64 = 40;
const KCMP_EPOLL_SLOT: u64 = 12;
const KERNEL_TERMIOS: u64 = 36;
const KERNEL_TERMIO: u64 = 18;
const WINSIZE: u64 = 8;
const IFREQ: u64 = 40;
const SOCK_FPROG: u64 = 16;

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

/// What an `ioctl` request does with its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoctlArg {
    /// The argument is a value.
    None,
    /// The argument points to `len` bytes accessed so.
    Buffer(u64, Access),
    /// The argument may be a pointer to something the table cannot size.
    Unknown,
}

/// `_IOC` fields of an ioctl request: direction (bits 30-31), size (bits
/// 16-29), type (bits 8-15), number (bits 0-7).
pub fn ioc_decode(req: u32) -> (u32, u32, u32, u32) {
    (
        req >> 30,
        (req >> 16) & 0x3fff,
        (req >> 8) & 0xff,
        req & 0xff,
    )
}

/// The size and direction of ioctl `req`'s argument: the `_IOC` encoding
/// (`_IOC_WRITE` = the kernel reads, `_IOC_READ` = the kernel writes), or
/// the table of legacy requests (terminals, sockets, files) that predate it.
pub fn ioctl_buffer(req: u32) -> IoctlArg {
    use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};
    let legacy = match req {
        0x5401 => Some((KERNEL_TERMIOS, W)),          // TCGETS
        0x5402..=0x5404 => Some((KERNEL_TERMIOS, R)), // TCSETS, TCSETSW, TCSETSF
        0x5405 => Some((KERNEL_TERMIO, W)),           // TCGETA
        0x5406..=0x5408 => Some((KERNEL_TERMIO, R)),  // TCSETA, TCSETAW, TCSETAF
        0x5409..=0x540e | 0x5422 | 0x5425 | 0x5427 | 0x5428 => Some((0, R)), // value/none
        0x540f => Some((4, W)),                       // TIOCGPGRP
        0x5410 => Some((4, R)),                       // TIOCSPGRP
        0x5411 => Some((4, W)),                       // TIOCOUTQ
        0x5412 => Some((1, R)),                       // TIOCSTI
        0x5413 => Some((WINSIZE, W)),                 // TIOCGWINSZ
        0x5414 => Some((WINSIZE, R)),                 // TIOCSWINSZ
        0x5415 => Some((4, W)),                       // TIOCMGET
        0x5416..=0x5418 => Some((4, R)),              // TIOCMBIS, TIOCMBIC, TIOCMSET
        0x5419 => Some((4, W)),                       // TIOCGSOFTCAR
        0x541a => Some((4, R)),                       // TIOCSSOFTCAR
        0x541b => Some((4, W)),                       // FIONREAD / TIOCINQ
        0x541d => Some((0, R)),                       // TIOCCONS
        0x541e => Some((72, W)),                      // TIOCGSERIAL
        0x541f => Some((72, R)),                      // TIOCSSERIAL
        0x5420 | 0x5421 | 0x5423 => Some((4, R)),     // TIOCPKT, FIONBIO, TIOCSETD
        0x5424 => Some((4, W)),                       // TIOCGETD
        0x5429 => Some((4, W)),                       // TIOCGSID
        0x5450 | 0x5451 => Some((0, R)),              // FIONCLEX, FIOCLEX
        0x5452 => Some((4, R)),                       // FIOASYNC
        0x5456 => Some((KERNEL_TERMIOS, W)),          // TIOCGLCKTRMIOS
        0x5457 => Some((KERNEL_TERMIOS, R)),          // TIOCSLCKTRMIOS
        0x5459 => Some((4, W)),                       // TIOCSERGETLSR
        0x545c => Some((0, R)),                       // TIOCMIWAIT
        0x545d => Some((80, W)),                      // TIOCGICOUNT
        0x5460 => Some((8, W)),                       // FIOQSIZE
        0x8901 | 0x8902 => Some((4, R)),              // FIOSETOWN, SIOCSPGRP
        0x8903..=0x8905 => Some((4, W)),              // FIOGETOWN, SIOCGPGRP, SIOCATMARK
        0x8906 | 0x8907 => Some((16, W)),             // SIOCGSTAMP, SIOCGSTAMPNS (64-bit)
        0x8910 | 0x8913 | 0x8915 | 0x8917 | 0x8919 | 0x891b | 0x891d | 0x8921 | 0x8927 | 0x8933
        | 0x8942 => Some((IFREQ, RW)), // SIOCGIF*: struct ifreq
        0x8914 | 0x8916 | 0x8918 | 0x891a | 0x891c | 0x8922 | 0x8924 | 0x8934 | 0x8943 => {
            Some((IFREQ, R)) // SIOCSIF*
        }
        0x1260 => Some((8, W)),          // BLKGETSIZE
        0x1268 => Some((4, W)),          // BLKSSZGET
        0x125d => Some((4, R)),          // BLKROSET
        0x125e => Some((4, W)),          // BLKROGET
        0x125f | 0x1261 => Some((0, R)), // BLKRRPART, BLKFLSBUF
        _ => None,
    };
    if let Some((len, access)) = legacy {
        return if len == 0 {
            IoctlArg::None
        } else {
            IoctlArg::Buffer(len, access)
        };
    }
    let (dir, size, _type, _nr) = ioc_decode(req);
    match dir {
        1 if size > 0 => IoctlArg::Buffer(size as u64, R),
        2 if size > 0 => IoctlArg::Buffer(size as u64, W),
        3 if size > 0 => IoctlArg::Buffer(size as u64, RW),
        // _IOC_NONE, or a direction without a size: legacy requests we do not
        // know may still take pointers.
        _ => IoctlArg::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};

    /// Memory at `base..base+bytes.len()`; anything else is unreadable.
    struct FakeMem {
        base: usize,
        bytes: Vec<u8>,
    }

    impl FakeMem {
        fn new(base: usize, len: usize) -> Self {
            FakeMem {
                base,
                bytes: vec![0; len],
            }
        }
        fn put_u64(&mut self, addr: usize, v: u64) {
            let o = addr - self.base;
            self.bytes[o..o + 8].copy_from_slice(&v.to_ne_bytes());
        }
        fn put_u32(&mut self, addr: usize, v: u32) {
            let o = addr - self.base;
            self.bytes[o..o + 4].copy_from_slice(&v.to_ne_bytes());
        }
        fn get(&self, addr: usize, n: usize) -> Option<&[u8]> {
            let o = addr.checked_sub(self.base)?;
            self.bytes.get(o..o.checked_add(n)?)
        }
    }

    impl UserMem for FakeMem {
        fn read_u64(&self, addr: usize) -> Option<u64> {
            Some(u64::from_ne_bytes(self.get(addr, 8)?.try_into().ok()?))
        }
        fn read_u32(&self, addr: usize) -> Option<u32> {
            Some(u32::from_ne_bytes(self.get(addr, 4)?.try_into().ok()?))
        }
        fn read_u8(&self, addr: usize) -> Option<u8> {
            Some(self.get(addr, 1)?[0])
        }
    }

    fn bufs(nr: i64, args: [u64; 6], mem: &dyn UserMem) -> (Vec<Buffer>, Coverage) {
        let mut out = Vec::new();
        let c = for_each_buffer(nr, &args, mem, &mut |b| out.push(b));
        (out, c)
    }

    fn none() -> FakeMem {
        FakeMem::new(0x1000, 0)
    }

    fn range(addr: usize, len: usize, access: Access) -> Buffer {
        Buffer::Range { addr, len, access }
    }

    fn path(addr: usize) -> Buffer {
        Buffer::CStr {
            addr,
            max: PATH_MAX,
        }
    }

    const B: usize = 0x7f00_0000_0000;

    #[test]
    fn read_write_family() {
        let m = none();
        let b = B as u64;
        assert_eq!(
            bufs(nr::READ, [3, b, 100, 0, 0, 0], &m).0,
            vec![range(B, 100, W)]
        );
        assert_eq!(
            bufs(nr::PREAD64, [3, b, 4096, 7, 0, 0], &m).0,
            vec![range(B, 4096, W)]
        );
        assert_eq!(
            bufs(nr::WRITE, [3, b, 5, 0, 0, 0], &m).0,
            vec![range(B, 5, R)]
        );
        assert_eq!(
            bufs(nr::PWRITE64, [3, b, 5, 0, 0, 0], &m).0,
            vec![range(B, 5, R)]
        );
        // Capped like the kernel does; a zero length or NULL reports nothing.
        assert_eq!(
            bufs(nr::READ, [3, b, u64::MAX, 0, 0, 0], &m).0,
            vec![range(B, MAX_RW_COUNT as usize, W)]
        );
        assert!(bufs(nr::READ, [3, b, 0, 0, 0, 0], &m).0.is_empty());
        assert!(bufs(nr::READ, [3, 0, 10, 0, 0, 0], &m).0.is_empty());
        assert_eq!(
            bufs(nr::GETRANDOM, [b, 32, 0, 0, 0, 0], &m).0,
            vec![range(B, 32, W)]
        );
        assert_eq!(bufs(nr::READ, [3, b, 1, 0, 0, 0], &m).1, Coverage::Known);
    }

    #[test]
    fn iovec_family_reports_the_array_before_reading_it() {
        let mut m = FakeMem::new(0x10000, 4096);
        let iov = 0x10000;
        m.put_u64(iov, B as u64);
        m.put_u64(iov + 8, 10);
        m.put_u64(iov + 16, (B + 8192) as u64);
        m.put_u64(iov + 24, 0); // empty: skipped
        m.put_u64(iov + 32, (B + 4096) as u64);
        m.put_u64(iov + 40, 3);
        for (nr, access) in [
            (nr::READV, W),
            (nr::PREADV, W),
            (nr::PREADV2, W),
            (nr::WRITEV, R),
            (nr::PWRITEV, R),
            (nr::PWRITEV2, R),
        ] {
            let (out, c) = bufs(nr, [3, iov as u64, 3, 0, 0, 0], &m);
            assert_eq!(
                out,
                vec![
                    range(iov, 48, R),
                    range(B, 10, access),
                    range(B + 4096, 3, access)
                ],
                "{nr}"
            );
            assert_eq!(c, Coverage::Known);
        }
        // More than UIO_MAXIOV: EINVAL, nothing touched.
        assert!(bufs(nr::READV, [3, iov as u64, 1025, 0, 0, 0], &m)
            .0
            .is_empty());
        // An unreadable array: reported, then decoding stops.
        assert_eq!(
            bufs(nr::READV, [3, B as u64, 2, 0, 0, 0], &m).0,
            vec![range(B, 32, R)]
        );
        // vmsplice's direction depends on the pipe end: both.
        assert_eq!(
            bufs(nr::VMSPLICE, [3, iov as u64, 1, 0, 0, 0], &m).0[1],
            range(B, 10, RW)
        );
    }

    #[test]
    fn msghdr_and_mmsghdr() {
        let mut m = FakeMem::new(0x10000, 4096);
        let msg = 0x10000;
        let iov = 0x10100;
        m.put_u64(msg, (B + 100) as u64); // name
        m.put_u32(msg + 8, 16); // namelen
        m.put_u64(msg + 16, iov as u64);
        m.put_u64(msg + 24, 1);
        m.put_u64(msg + 32, (B + 200) as u64); // control
        m.put_u64(msg + 40, 24);
        m.put_u64(iov, (B + 4096) as u64);
        m.put_u64(iov + 8, 777);
        let (send, _) = bufs(nr::SENDMSG, [3, msg as u64, 0, 0, 0, 0], &m);
        assert_eq!(
            send,
            vec![
                range(msg, 56, R),
                range(B + 100, 16, R),
                range(iov, 16, R),
                range(B + 4096, 777, R),
                range(B + 200, 24, R),
            ]
        );
        let (recv, _) = bufs(nr::RECVMSG, [3, msg as u64, 0, 0, 0, 0], &m);
        assert_eq!(
            recv,
            vec![
                range(msg, 56, RW),
                range(B + 100, 16, W),
                range(iov, 16, R),
                range(B + 4096, 777, W),
                range(B + 200, 24, W),
            ]
        );
        // mmsghdr: 64 bytes each, msg_len written back.
        let vec = 0x10200;
        for i in 0..2usize {
            let h = vec + 64 * i;
            m.put_u64(h + 16, iov as u64);
            m.put_u64(h + 24, 1);
        }
        let (mm, _) = bufs(nr::RECVMMSG, [3, vec as u64, 2, 0, B as u64, 0], &m);
        assert_eq!(
            mm,
            vec![
                range(vec, 128, RW),
                range(iov, 16, R),
                range(B + 4096, 777, W),
                range(iov, 16, R),
                range(B + 4096, 777, W),
                range(B, 16, RW), // timeout
            ]
        );
        let (sm, _) = bufs(nr::SENDMMSG, [3, vec as u64, 1, 0, 0, 0], &m);
        assert_eq!(sm[2], range(B + 4096, 777, R));
    }

    #[test]
    fn execve_strings_and_arrays() {
        let mut m = FakeMem::new(0x10000, 8192);
        // argv straddling a page boundary: entries at 0x10ff8 and 0x11000.
        let argv = 0x10ff0usize;
        m.put_u64(argv, B as u64);
        m.put_u64(argv + 8, (B + 64) as u64);
        m.put_u64(argv + 16, (B + 128) as u64);
        m.put_u64(argv + 24, 0);
        let envp = 0x11800usize;
        m.put_u64(envp, (B + 4096) as u64);
        m.put_u64(envp + 8, 0);
        let s = |a| Buffer::CStr {
            addr: a,
            max: MAX_ARG_STRLEN,
        };
        let (out, c) = bufs(
            nr::EXECVE,
            [B as u64 + 9000, argv as u64, envp as u64, 0, 0, 0],
            &m,
        );
        assert_eq!(
            out,
            vec![
                path(B + 9000),
                range(argv, 16, R),
                s(B),
                s(B + 64),
                range(0x11000, 4096, R),
                s(B + 128),
                range(envp, 2048, R),
                s(B + 4096),
            ]
        );
        assert_eq!(c, Coverage::Known);
        let (at, _) = bufs(nr::EXECVEAT, [3, B as u64, 0, envp as u64, 0, 0], &m);
        assert_eq!(at, vec![path(B), range(envp, 2048, R), s(B + 4096)]);
    }

    #[test]
    fn stat_and_path_families() {
        let m = none();
        let (p, b) = (B as u64, B as u64 + 4096);
        assert_eq!(
            bufs(nr::STAT, [p, b, 0, 0, 0, 0], &m).0,
            vec![path(B), range(B + 4096, 144, W)]
        );
        assert_eq!(
            bufs(nr::LSTAT, [p, b, 0, 0, 0, 0], &m).0[1],
            range(B + 4096, 144, W)
        );
        assert_eq!(
            bufs(nr::FSTAT, [3, b, 0, 0, 0, 0], &m).0,
            vec![range(B + 4096, 144, W)]
        );
        assert_eq!(
            bufs(nr::NEWFSTATAT, [3, p, b, 0, 0, 0], &m).0,
            vec![path(B), range(B + 4096, 144, W)]
        );
        assert_eq!(
            bufs(nr::STATX, [3, p, 0, 0xfff, b, 0], &m).0,
            vec![path(B), range(B + 4096, 256, W)]
        );
        assert_eq!(
            bufs(nr::FSTATFS, [3, b, 0, 0, 0, 0], &m).0,
            vec![range(B + 4096, 120, W)]
        );
        assert_eq!(bufs(nr::OPEN, [p, 0, 0, 0, 0, 0], &m).0, vec![path(B)]);
        assert_eq!(bufs(nr::OPENAT, [3, p, 0, 0, 0, 0], &m).0, vec![path(B)]);
        assert_eq!(
            bufs(nr::OPENAT2, [3, p, b, 24, 0, 0], &m).0,
            vec![path(B), range(B + 4096, 24, R)]
        );
        assert_eq!(
            bufs(nr::RENAMEAT2, [3, p, 4, b, 0, 0], &m).0,
            vec![path(B), path(B + 4096)]
        );
        assert_eq!(
            bufs(nr::SYMLINKAT, [p, 3, b, 0, 0, 0], &m).0,
            vec![path(B), path(B + 4096)]
        );
        assert_eq!(
            bufs(nr::READLINKAT, [3, p, b, 100, 0, 0], &m).0,
            vec![path(B), range(B + 4096, 100, W)]
        );
        assert!(
            bufs(nr::READLINK, [p, b, (-1i64) as u64, 0, 0, 0], &m)
                .0
                .len()
                == 1
        );
        assert_eq!(
            bufs(nr::GETCWD, [p, 4096, 0, 0, 0, 0], &m).0,
            vec![range(B, 4096, W)]
        );
        assert_eq!(
            bufs(nr::GETDENTS64, [3, p, 32768, 0, 0, 0], &m).0,
            vec![range(B, 32768, W)]
        );
        assert_eq!(
            bufs(nr::UTIMENSAT, [3, p, b, 0, 0, 0], &m).0,
            vec![path(B), range(B + 4096, 32, R)]
        );
        assert_eq!(
            bufs(nr::GETXATTR, [p, b, b + 64, 10, 0, 0], &m).0,
            vec![
                path(B),
                Buffer::CStr {
                    addr: B + 4096,
                    max: XATTR_NAME_MAX
                },
                range(B + 4160, 10, W)
            ]
        );
        assert_eq!(
            bufs(nr::MEMFD_CREATE, [p, 0, 0, 0, 0, 0], &m).0,
            vec![Buffer::CStr { addr: B, max: 256 }]
        );
    }

    #[test]
    fn poll_select_epoll_sizes() {
        let m = none();
        let b = B as u64;
        assert_eq!(
            bufs(nr::POLL, [b, 3, 0, 0, 0, 0], &m).0,
            vec![range(B, 24, RW)]
        );
        assert_eq!(
            bufs(nr::PPOLL, [b, 2, b + 100, b + 200, 8, 0], &m).0,
            vec![
                range(B, 16, RW),
                range(B + 100, 16, RW),
                range(B + 200, 8, R)
            ]
        );
        // fd_set by nfds: 65 fds need two longs.
        assert_eq!(
            bufs(nr::SELECT, [65, b, 0, b + 64, b + 128, 0], &m).0,
            vec![
                range(B, 16, RW),
                range(B + 64, 16, RW),
                range(B + 128, 16, RW)
            ]
        );
        assert_eq!(
            bufs(nr::EPOLL_WAIT, [3, b, 10, 0, 0, 0], &m).0,
            vec![range(B, 120, W)]
        );
        assert_eq!(
            bufs(nr::EPOLL_PWAIT2, [3, b, 1, b + 64, b + 128, 8], &m).0,
            vec![range(B, 12, W), range(B + 64, 16, R), range(B + 128, 8, R)]
        );
        assert_eq!(
            bufs(nr::EPOLL_CTL, [3, 1, 4, b, 0, 0], &m).0,
            vec![range(B, 12, R)]
        );
        assert!(bufs(nr::EPOLL_CTL, [3, 2, 4, b, 0, 0], &m).0.is_empty());
        let mut mm = FakeMem::new(0x10000, 64);
        mm.put_u64(0x10000, b + 512);
        mm.put_u64(0x10008, 8);
        assert_eq!(
            bufs(nr::PSELECT6, [1, b, 0, 0, b + 64, 0x10000], &mm).0,
            vec![
                range(B, 8, RW),
                range(B + 64, 16, RW),
                range(0x10000, 16, R),
                range(B + 512, 8, R)
            ]
        );
    }

    #[test]
    fn futex_ops() {
        let m = none();
        let (u, t, u2) = (B as u64, B as u64 + 64, B as u64 + 128);
        let f = |op: u64, a3: u64| bufs(nr::FUTEX, [u, op, 1, a3, u2, 0], &m).0;
        assert_eq!(f(0, t), vec![range(B, 4, R), range(B + 64, 16, R)]); // WAIT
        assert_eq!(f(128, t), vec![range(B, 4, R), range(B + 64, 16, R)]); // WAIT_PRIVATE
        assert_eq!(f(129, 5), vec![range(B, 4, R)]); // WAKE_PRIVATE
        assert_eq!(f(3, 5), vec![range(B, 4, R), range(B + 128, 4, R)]); // REQUEUE: val2 is a count
        assert_eq!(f(5, 5), vec![range(B, 4, R), range(B + 128, 4, RW)]); // WAKE_OP
        assert_eq!(f(6, 0), vec![range(B, 4, RW)]); // LOCK_PI, no timeout
        assert_eq!(f(7, 0), vec![range(B, 4, RW)]); // UNLOCK_PI
        assert_eq!(f(9 | 256, t), vec![range(B, 4, R), range(B + 64, 16, R)]); // WAIT_BITSET|CLOCK_RT
        assert_eq!(
            bufs(nr::FUTEX_WAIT, [u, 0, !0, 3, t, 0], &m).0, // FUTEX2_SIZE_U64
            vec![range(B, 8, R), range(B + 64, 16, R)]
        );
        let mut mm = FakeMem::new(0x10000, 64);
        mm.put_u64(0x10008, u);
        mm.put_u32(0x10010, 2); // U32
        assert_eq!(
            bufs(nr::FUTEX_WAITV, [0x10000, 1, 0, t, 0, 0], &mm).0,
            vec![range(0x10000, 24, R), range(B, 4, R), range(B + 64, 16, R)]
        );
    }

    #[test]
    fn sockets() {
        let mut m = FakeMem::new(0x10000, 64);
        m.put_u32(0x10000, 110);
        let b = B as u64;
        assert_eq!(
            bufs(nr::ACCEPT4, [3, b, 0x10000, 0, 0, 0], &m).0,
            vec![range(0x10000, 4, RW), range(B, 110, W)]
        );
        assert!(bufs(nr::ACCEPT, [3, 0, 0, 0, 0, 0], &m).0.is_empty());
        assert_eq!(
            bufs(nr::RECVFROM, [3, b, 50, 0, b + 1000, 0x10000], &m).0,
            vec![
                range(B, 50, W),
                range(0x10000, 4, RW),
                range(B + 1000, 110, W)
            ]
        );
        assert_eq!(
            bufs(nr::SENDTO, [3, b, 50, 0, b + 1000, 16], &m).0,
            vec![range(B, 50, R), range(B + 1000, 16, R)]
        );
        assert_eq!(
            bufs(nr::CONNECT, [3, b, 16, 0, 0, 0], &m).0,
            vec![range(B, 16, R)]
        );
        assert_eq!(
            bufs(nr::GETSOCKOPT, [3, 1, 2, b, 0x10000, 0], &m).0,
            vec![range(0x10000, 4, RW), range(B, 110, W)]
        );
        assert_eq!(
            bufs(nr::SETSOCKOPT, [3, 1, 2, b, 4, 0], &m).0,
            vec![range(B, 4, R)]
        );
        assert_eq!(
            bufs(nr::SOCKETPAIR, [1, 1, 0, b, 0, 0], &m).0,
            vec![range(B, 8, W)]
        );
        // An unreadable length: the address is reported as unknown.
        assert_eq!(
            bufs(nr::GETPEERNAME, [3, b, b + 8, 0, 0, 0], &m).0,
            vec![range(B + 8, 4, RW), Buffer::Unknown { addr: B }]
        );
    }

    fn ioc(dir: u32, ty: u8, nr: u8, size: u32) -> u32 {
        (dir << 30) | (size << 16) | ((ty as u32) << 8) | nr as u32
    }

    #[test]
    fn ioctl_encoding_and_legacy_table() {
        assert_eq!(
            ioc_decode(ioc(2, b'T', 0x2a, 44)),
            (2, 44, b'T' as u32, 0x2a)
        );
        // TCGETS2 = _IOR('T', 0x2A, struct termios2): the kernel writes 44.
        assert_eq!(ioctl_buffer(0x802c_542a), IoctlArg::Buffer(44, W));
        assert_eq!(ioctl_buffer(ioc(1, b'f', 1, 8)), IoctlArg::Buffer(8, R));
        assert_eq!(
            ioctl_buffer(ioc(3, 0xaa, 0x3f, 24)),
            IoctlArg::Buffer(24, RW)
        ); // UFFDIO_API
        assert_eq!(ioctl_buffer(0x5401), IoctlArg::Buffer(36, W)); // TCGETS
        assert_eq!(ioctl_buffer(0x5402), IoctlArg::Buffer(36, R)); // TCSETS
        assert_eq!(ioctl_buffer(0x5404), IoctlArg::Buffer(36, R)); // TCSETSF
        assert_eq!(ioctl_buffer(0x5413), IoctlArg::Buffer(8, W)); // TIOCGWINSZ
        assert_eq!(ioctl_buffer(0x5414), IoctlArg::Buffer(8, R)); // TIOCSWINSZ
        assert_eq!(ioctl_buffer(0x541b), IoctlArg::Buffer(4, W)); // FIONREAD
        assert_eq!(ioctl_buffer(0x5421), IoctlArg::Buffer(4, R)); // FIONBIO
        assert_eq!(ioctl_buffer(0x5451), IoctlArg::None); // FIOCLEX
        assert_eq!(ioctl_buffer(0x8915), IoctlArg::Buffer(40, RW)); // SIOCGIFADDR
        assert_eq!(ioctl_buffer(ioc(0, b'T', 0x99, 0)), IoctlArg::Unknown); // _IO, not known
        let m = none();
        let (out, c) = bufs(nr::IOCTL, [0, 0x5413, B as u64, 0, 0, 0], &m);
        assert_eq!((out, c), (vec![range(B, 8, W)], Coverage::Known));
        assert_eq!(
            bufs(nr::IOCTL, [0, 0x9999, B as u64, 0, 0, 0], &m).0,
            vec![Buffer::Unknown { addr: B }]
        );
    }

    #[test]
    fn fcntl_prctl_signals_misc() {
        let m = none();
        let b = B as u64;
        assert_eq!(
            bufs(nr::FCNTL, [3, 5, b, 0, 0, 0], &m).0,
            vec![range(B, 32, RW)]
        ); // F_GETLK
        assert_eq!(
            bufs(nr::FCNTL, [3, 7, b, 0, 0, 0], &m).0,
            vec![range(B, 32, R)]
        ); // F_SETLKW
        assert_eq!(
            bufs(nr::FCNTL, [3, 38, b, 0, 0, 0], &m).0,
            vec![range(B, 32, R)]
        ); // F_OFD_SETLKW
        assert!(bufs(nr::FCNTL, [3, 4, b, 0, 0, 0], &m).0.is_empty()); // F_SETFL: a value
        assert_eq!(
            bufs(nr::PRCTL, [15, b, 0, 0, 0, 0], &m).0,
            vec![Buffer::CStr { addr: B, max: 16 }]
        );
        assert_eq!(
            bufs(nr::PRCTL, [16, b, 0, 0, 0, 0], &m).0,
            vec![range(B, 16, W)]
        );
        assert!(bufs(nr::PRCTL, [38, 1, 0, 0, 0, 0], &m).0.is_empty()); // NO_NEW_PRIVS
        let (unk, c) = bufs(nr::PRCTL, [9999, b, 0, 0, 0, 0], &m);
        assert_eq!(
            (unk, c),
            (vec![Buffer::Unknown { addr: B }], Coverage::Partial)
        );
        assert_eq!(
            bufs(nr::RT_SIGACTION, [10, b, b + 64, 8, 0, 0], &m).0,
            vec![range(B, 32, R), range(B + 64, 32, W)]
        );
        assert_eq!(
            bufs(nr::RT_SIGPROCMASK, [0, b, b + 8, 8, 0, 0], &m).0,
            vec![range(B, 8, R), range(B + 8, 8, W)]
        );
        assert_eq!(
            bufs(nr::ARCH_PRCTL, [0x1003, b, 0, 0, 0, 0], &m).0,
            vec![range(B, 8, W)]
        );
        assert!(bufs(nr::ARCH_PRCTL, [0x1002, b, 0, 0, 0, 0], &m)
            .0
            .is_empty()); // SET_FS
        assert_eq!(
            bufs(nr::WAIT4, [1, b, 0, b + 64, 0, 0], &m).0,
            vec![range(B, 4, W), range(B + 64, 144, W)]
        );
        assert_eq!(
            bufs(nr::UNAME, [b, 0, 0, 0, 0, 0], &m).0,
            vec![range(B, 390, W)]
        );
        assert_eq!(
            bufs(nr::CLOCK_GETTIME, [1, b, 0, 0, 0, 0], &m).0,
            vec![range(B, 16, W)]
        );
        assert_eq!(
            bufs(nr::CLOCK_NANOSLEEP, [1, 0, b, b + 16, 0, 0], &m).0,
            vec![range(B, 16, R), range(B + 16, 16, W)]
        );
        assert_eq!(
            bufs(nr::PIPE2, [b, 0, 0, 0, 0, 0], &m).0,
            vec![range(B, 8, W)]
        );
        assert_eq!(
            bufs(nr::SENDFILE, [1, 2, b, 9, 0, 0], &m).0,
            vec![range(B, 8, RW)]
        );
        assert_eq!(
            bufs(nr::PRLIMIT64, [0, 7, b, b + 16, 0, 0], &m).0,
            vec![range(B, 16, R), range(B + 16, 16, W)]
        );
        assert_eq!(
            bufs(nr::SCHED_GETAFFINITY, [0, 128, b, 0, 0, 0], &m).0,
            vec![range(B, 128, W)]
        );
        assert_eq!(
            bufs(nr::MINCORE, [0, 3 * 4096 + 1, b, 0, 0, 0], &m).0,
            vec![range(B, 4, W)]
        );
        let (reg, c) = bufs(nr::SET_TID_ADDRESS, [b, 0, 0, 0, 0, 0], &m);
        assert_eq!(
            (reg, c),
            (
                vec![Buffer::Registered {
                    addr: B,
                    len: 4,
                    access: RW
                }],
                Coverage::Partial
            )
        );
    }

    #[test]
    fn capget_clone3_io_submit_read_through_memory() {
        let mut m = FakeMem::new(0x10000, 4096);
        m.put_u32(0x10000, 0x2008_0522); // _LINUX_CAPABILITY_VERSION_3: two words
        assert_eq!(
            bufs(nr::CAPGET, [0x10000, B as u64, 0, 0, 0, 0], &m).0,
            vec![range(0x10000, 8, RW), range(B, 24, W)]
        );
        let args = 0x10100;
        m.put_u64(args, 0x0010_1000); // CLONE_PARENT_SETTID | CLONE_PIDFD
        m.put_u64(args + 8, B as u64);
        m.put_u64(args + 24, B as u64 + 4);
        assert_eq!(
            bufs(nr::CLONE3, [args as u64, 88, 0, 0, 0, 0], &m).0,
            vec![range(args, 88, R), range(B, 4, W), range(B + 4, 4, W)]
        );
        let iocbpp = 0x10200;
        let iocb = 0x10300;
        m.put_u64(iocbpp, iocb as u64);
        m.put_u32(iocb + 16, 0); // IOCB_CMD_PREAD
        m.put_u64(iocb + 24, B as u64);
        m.put_u64(iocb + 32, 512);
        let (out, c) = bufs(nr::IO_SUBMIT, [1, 1, iocbpp as u64, 0, 0, 0], &m);
        assert_eq!(
            out,
            vec![range(iocbpp, 8, R), range(iocb, 64, R), range(B, 512, W)]
        );
        assert_eq!(c, Coverage::Partial);
    }

    #[test]
    fn unknown_calls() {
        let m = none();
        assert_eq!(
            bufs(nr::IO_URING_ENTER, [3, 1, 0, 0, 0, 0], &m).1,
            Coverage::Unknown
        );
        assert_eq!(bufs(999, [1, 2, 3, 4, 5, 6], &m).1, Coverage::Unknown);
        assert_eq!(bufs(0x4000_0000, [0; 6], &m).1, Coverage::Unknown); // x32
        assert_eq!(bufs(nr::GETPID, [0; 6], &m), (vec![], Coverage::Known));
        assert_eq!(
            bufs(nr::KEYCTL, [1, B as u64, 0, 0, 0, 0], &m).1,
            Coverage::Partial
        );
    }

    /// Independently written from the kernel's prototypes
    /// (`include/linux/syscalls.h`, `__user` arguments, plus the
    /// `unsigned long` arguments that are pointers for some commands):
    /// every x86_64 system call that takes a user pointer, and which
    /// arguments may be one (getcpu's unused third argument left out).
    const POINTER_SYSCALLS: &str = "read:1 write:1 open:0 stat:0,1 fstat:1 lstat:0,1 poll:0 \
        rt_sigaction:1,2 rt_sigprocmask:1,2 ioctl:2 pread64:1 pwrite64:1 readv:1 writev:1 \
        access:0 pipe:0 select:1,2,3,4 mincore:2 shmctl:2 nanosleep:0,1 getitimer:1 \
        setitimer:1,2 sendfile:2 connect:1 accept:1,2 sendto:1,4 recvfrom:1,4,5 sendmsg:1 \
        recvmsg:1 bind:1 getsockname:1,2 getpeername:1,2 socketpair:3 setsockopt:3 \
        getsockopt:3,4 clone:2,3 execve:0,1,2 wait4:1,3 uname:0 semop:1 semctl:3 msgsnd:1 \
        msgrcv:1 msgctl:2 fcntl:2 truncate:0 getdents:1 getcwd:0 chdir:0 rename:0,1 mkdir:0 \
        rmdir:0 creat:0 link:0,1 unlink:0 symlink:0,1 readlink:0,1 chmod:0 chown:0 lchown:0 \
        gettimeofday:0,1 getrlimit:1 getrusage:1 sysinfo:0 times:0 ptrace:2,3 syslog:1 \
        getgroups:1 setgroups:1 getresuid:0,1,2 getresgid:0,1,2 capget:0,1 capset:0,1 \
        rt_sigpending:0 rt_sigtimedwait:0,1,2 rt_sigqueueinfo:2 rt_sigsuspend:0 \
        sigaltstack:0,1 utime:0,1 mknod:0 ustat:1 statfs:0,1 fstatfs:1 sysfs:1,2 \
        sched_setparam:1 sched_getparam:1 sched_setscheduler:2 sched_rr_get_interval:1 \
        modify_ldt:1 pivot_root:0,1 prctl:1,2,3,4 arch_prctl:1 adjtimex:0 setrlimit:1 \
        chroot:0 acct:0 settimeofday:0,1 mount:0,1,2,4 umount2:0 swapon:0 swapoff:0 \
        reboot:3 sethostname:0 setdomainname:0 init_module:0,2 delete_module:0 quotactl:1,3 \
        setxattr:0,1,2 lsetxattr:0,1,2 fsetxattr:1,2 getxattr:0,1,2 lgetxattr:0,1,2 \
        fgetxattr:1,2 listxattr:0,1 llistxattr:0,1 flistxattr:1 removexattr:0,1 \
        lremovexattr:0,1 fremovexattr:1 time:0 futex:0,3,4 sched_setaffinity:2 \
        sched_getaffinity:2 io_setup:1 io_getevents:3,4 io_submit:2 io_cancel:1,2 \
        getdents64:1 set_tid_address:0 semtimedop:1,3 timer_create:1,2 timer_settime:2,3 \
        timer_gettime:1 clock_settime:1 clock_gettime:1 clock_getres:1 clock_nanosleep:2,3 \
        epoll_wait:1 epoll_ctl:3 utimes:0,1 mbind:3 set_mempolicy:1 get_mempolicy:0,1 \
        mq_open:0,3 mq_unlink:0 mq_timedsend:1,4 mq_timedreceive:1,3,4 mq_notify:1 \
        mq_getsetattr:1,2 kexec_load:2 waitid:2,4 add_key:0,1,2 request_key:0,1,2 \
        keyctl:1,2,3,4 inotify_add_watch:1 migrate_pages:2,3 openat:1 mkdirat:1 mknodat:1 \
        fchownat:1 futimesat:1,2 newfstatat:1,2 unlinkat:1 renameat:1,3 linkat:1,3 \
        symlinkat:0,2 readlinkat:1,2 fchmodat:1 faccessat:1 pselect6:1,2,3,4,5 ppoll:0,2,3 \
        set_robust_list:0 get_robust_list:1,2 splice:1,3 vmsplice:1 move_pages:2,3,4 \
        utimensat:1,2 epoll_pwait:1,4 signalfd:1 timerfd_settime:2,3 timerfd_gettime:1 \
        accept4:1,2 signalfd4:1 pipe2:0 preadv:1 pwritev:1 rt_tgsigqueueinfo:3 \
        perf_event_open:0 recvmmsg:1,4 fanotify_mark:4 prlimit64:2,3 name_to_handle_at:1,2,3 \
        open_by_handle_at:1 clock_adjtime:1 sendmmsg:1 getcpu:0,1 process_vm_readv:1,3 \
        process_vm_writev:1,3 kcmp:4 finit_module:1 sched_setattr:1 sched_getattr:1 \
        renameat2:1,3 seccomp:2 getrandom:0 memfd_create:0 kexec_file_load:3 bpf:1 \
        execveat:1,2,3 copy_file_range:1,3 preadv2:1 pwritev2:1 statx:1,4 \
        io_pgetevents:3,4,5 rseq:0 pidfd_send_signal:2 io_uring_setup:1 io_uring_enter:4 \
        io_uring_register:2 open_tree:1 move_mount:1,3 fsopen:0 fsconfig:2,3 fspick:1 \
        clone3:0 openat2:1,2 faccessat2:1 process_madvise:1 epoll_pwait2:1,3,4 \
        mount_setattr:1,3 quotactl_fd:3 landlock_create_ruleset:0 landlock_add_rule:2 \
        futex_waitv:0,3 cachestat:1,2 fchmodat2:1 futex_wake:0 futex_wait:0,4 \
        futex_requeue:0 statmount:0,1 listmount:0,1 lsm_get_self_attr:1,2 \
        lsm_set_self_attr:1 lsm_list_modules:0,1 setxattrat:1,3,4 getxattrat:1,3,4 \
        listxattrat:1,3 removexattrat:1,3 open_tree_attr:1,3 file_getattr:1,2 \
        file_setattr:1,2 listns:0,1";

    fn pointer_syscalls() -> Vec<(i64, u8)> {
        POINTER_SYSCALLS
            .split_whitespace()
            .map(|e| {
                let (name, args) = e.split_once(':').unwrap();
                let nr = nr::ALL
                    .iter()
                    .find(|&&(_, n)| n == name)
                    .unwrap_or_else(|| panic!("unknown name {name}"))
                    .0;
                let mask = args
                    .split(',')
                    .fold(0u8, |m, a| m | 1 << a.parse::<u8>().unwrap());
                (nr, mask)
            })
            .collect()
    }

    #[test]
    fn every_pointer_taking_syscall_has_a_rule() {
        let list = pointer_syscalls();
        let not_trapped: Vec<i64> = NOT_TRAPPED.iter().map(|&(n, _)| n).collect();
        for &(nr, mask) in &list {
            let rule = trap_rule(nr);
            let name = name(nr).unwrap();
            if not_trapped.contains(&nr) {
                assert_eq!(rule, TrapRule::Never, "{name} is documented as not trapped");
                continue;
            }
            assert_ne!(
                rule,
                TrapRule::Never,
                "{name} takes pointers but has no trap rule"
            );
            assert_eq!(
                rule.direct_mask(),
                mask,
                "{name}: trap mask {:#b}, prototype pointers {mask:#b}",
                rule.direct_mask()
            );
        }
        // And nothing else is trapped.
        for &(nr, name) in nr::ALL {
            if !list.iter().any(|&(n, _)| n == nr) {
                assert_eq!(
                    trap_rule(nr),
                    TrapRule::Never,
                    "{name} has no pointer arguments"
                );
            }
        }
        assert!(list.len() > 200, "{} pointer-taking calls", list.len());
    }

    /// Memory where every u64 reads 0 (NULL-terminates arrays), every u32
    /// reads 8 (lengths), every byte 'a'.
    struct AnyMem;
    impl UserMem for AnyMem {
        fn read_u64(&self, _: usize) -> Option<u64> {
            Some(0)
        }
        fn read_u32(&self, _: usize) -> Option<u32> {
            Some(8)
        }
        fn read_u8(&self, _: usize) -> Option<u8> {
            Some(b'a')
        }
    }

    fn reported_at(b: &Buffer, p: usize) -> bool {
        match *b {
            Buffer::Range { addr, .. } | Buffer::Registered { addr, .. } => addr == p,
            Buffer::CStr { addr, .. } | Buffer::Unknown { addr } => addr == p,
        }
    }

    /// The decoder and the trap rule agree: an argument the decoder treats
    /// as a pointer is one the filter compares with the arena (else a call
    /// whose only arena pointer is that argument would not be trapped), and
    /// every argument the filter compares is a pointer for some command.
    #[test]
    fn decoder_and_trap_rule_agree() {
        let values: &[u64] = &[
            0,
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            16,
            17,
            19,
            22,
            35,
            36,
            59,
            62,
            74,
            999,
            1024,
            0x1000,
            0x1003,
            0x5401,
            0x5413,
            0x541b,
            0x8915,
            0x100000,
            0x1000000,
            0x8004_5402,
            0x4004_5403,
            0x5356_4d41,
            0x4155_5856,
        ];
        let not_trapped: Vec<i64> = NOT_TRAPPED.iter().map(|&(n, _)| n).collect();
        for &(nr, name) in nr::ALL {
            let mask = trap_rule(nr).direct_mask();
            for i in 0..6usize {
                let p = B + 0x100 * i;
                let mut seen = false;
                let mut bases = vec![[1u64; 6], [0u64; 6]];
                for j in 0..6 {
                    for &v in values {
                        let mut a = [1u64; 6];
                        a[j] = v;
                        bases.push(a);
                    }
                }
                for mut a in bases {
                    a[i] = p as u64;
                    let mut out = Vec::new();
                    for_each_buffer(nr, &a, &AnyMem, &mut |b| out.push(b));
                    if out.iter().any(|b| reported_at(b, p)) {
                        seen = true;
                        assert!(
                            mask & (1 << i) != 0 || not_trapped.contains(&nr),
                            "{name}: argument {i} is dereferenced ({out:?} for {a:x?}) but not in the trap mask"
                        );
                    }
                }
                if mask & (1 << i) != 0 {
                    assert!(
                        seen,
                        "{name}: argument {i} is in the trap mask but never decoded"
                    );
                }
            }
        }
    }

    /// Random arguments and random memory: no panic, no endless loop.
    #[test]
    fn decoding_never_panics() {
        struct Rng(u64);
        impl Rng {
            fn next(&mut self) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0
            }
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut mem = FakeMem::new(0x10000, 8192);
        for b in mem.bytes.iter_mut() {
            *b = rng.next() as u8;
        }
        let interesting = [
            0u64,
            1,
            8,
            0x10000,
            0x10ff8,
            0x11ff0,
            u64::MAX,
            u64::MAX - 7,
            1 << 63,
        ];
        for round in 0..200_000u64 {
            let nr = nr::ALL[(rng.next() % nr::ALL.len() as u64) as usize].0;
            let mut a = [0u64; 6];
            for x in a.iter_mut() {
                *x = match rng.next() % 4 {
                    0 => interesting[(rng.next() % interesting.len() as u64) as usize],
                    1 => rng.next() % 64,
                    2 => 0x10000 + rng.next() % 8200,
                    _ => rng.next(),
                };
            }
            let mut n = 0usize;
            for_each_buffer(nr, &a, &mem, &mut |_| n += 1);
            assert!(n < 1 << 20, "round {round}: {n} buffers");
        }
    }

    #[test]
    fn numbers_match_libc() {
        let pairs = [
            (nr::READ, libc::SYS_read),
            (nr::EXECVE, libc::SYS_execve),
            (nr::RT_SIGACTION, libc::SYS_rt_sigaction),
            (nr::GETRANDOM, libc::SYS_getrandom),
            (nr::STATX, libc::SYS_statx),
            (nr::CLONE3, libc::SYS_clone3),
            (nr::FUTEX_WAITV, libc::SYS_futex_waitv),
            (nr::EPOLL_PWAIT2, libc::SYS_epoll_pwait2),
            (nr::PROCESS_VM_WRITEV, libc::SYS_process_vm_writev),
            (nr::IO_URING_ENTER, libc::SYS_io_uring_enter),
        ];
        for (ours, theirs) in pairs {
            assert_eq!(ours, theirs);
        }
    }
}
