//! The table: one [`SyscallSpec`] per x86_64 system call that takes a user
//! pointer, in families. A call of `nr::ALL` that is not here takes no
//! pointer (or, for `io_uring_enter`'s rings, cannot be described: it is
//! here as undescribed).
//!
//! Each row says how the filter traps the call and which arguments are
//! buffers, in the order they are reported (arrays before what they point
//! to). The filter's argument mask is the union of the arguments' pointers.
//! A call is listed once: the index built at compile time checks it.

use super::sizes::*;
use super::spec::{
    arg, buf, code, file_handle, fixed, futex_waitv, iovec, mmsghdr, msghdr, path, registered, row,
    self_sized, sigmask, sockaddr_out, str, str_array, unknown, Arg, Len, SyscallSpec, Trap,
};
use super::special;
use super::{Access, MAX_RW_COUNT, UIO_MAXIOV, XATTR_NAME_MAX};
use crate::nr;
use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};
use Trap::{Direct, Indirect, Never};

// Argument lists shared by several calls.
const PATH0: &[Arg] = &[path(0)];
const PATH1: &[Arg] = &[path(1)];
const PATH0_PATH1: &[Arg] = &[path(0), path(1)];
const PATH1_PATH3: &[Arg] = &[path(1), path(3)];
const RW_READ: &[Arg] = &[buf(1, arg(2).max(MAX_RW_COUNT), W)];
const RW_WRITE: &[Arg] = &[buf(1, arg(2).max(MAX_RW_COUNT), R)];
const IOV_READ: &[Arg] = &[iovec(1, 2, W)];
const IOV_WRITE: &[Arg] = &[iovec(1, 2, R)];
const STAT_PATH0: &[Arg] = &[path(0), buf(1, fixed(STAT), W)];
const GETDENTS: &[Arg] = &[buf(1, arg(2).u32().max(MAX_RW_COUNT), W)];
const TIMESPEC1_OUT: &[Arg] = &[buf(1, fixed(TIMESPEC), W)];
const PIPE_FDS: &[Arg] = &[buf(0, fixed(8), W)];
const ITIMERSPEC_SET: &[Arg] = &[buf(2, fixed(ITIMERSPEC), R), buf(3, fixed(ITIMERSPEC), W)];
const ITIMERSPEC1_OUT: &[Arg] = &[buf(1, fixed(ITIMERSPEC), W)];
const SOCKADDR_OUT: &[Arg] = &[sockaddr_out(1, 2)];
const SOCKADDR_IN: &[Arg] = &[buf(1, arg(2).int(), R)];
const SPLICE_OFFSETS: &[Arg] = &[buf(1, fixed(8), RW), buf(3, fixed(8), RW)];
const SIGINFO2_IN: &[Arg] = &[buf(2, fixed(SIGINFO), R)];
const SIGNALFD_MASK: &[Arg] = &[buf(1, arg(2).max(8), R)];
const RESID_OUT: &[Arg] = &[
    buf(0, fixed(4), W),
    buf(1, fixed(4), W),
    buf(2, fixed(4), W),
];
const SETXATTR: &[Arg] = &[path(0), str(1, XATTR_NAME_MAX), buf(2, arg(3), R)];
const GETXATTR: &[Arg] = &[path(0), str(1, XATTR_NAME_MAX), buf(2, arg(3), W)];
const LISTXATTR: &[Arg] = &[path(0), buf(1, arg(2), W)];
const REMOVEXATTR: &[Arg] = &[path(0), str(1, XATTR_NAME_MAX)];
const HOSTNAME: &[Arg] = &[buf(0, arg(1).int(), R)];
const STRUCT_SIZE_FIRST: Arg = self_sized(0, 0, 0, R);
const LISTMOUNT: &[Arg] = &[
    buf(0, fixed(4), R),
    STRUCT_SIZE_FIRST,
    buf(1, arg(2).max(1 << 20).times(8), W),
];
const MOUNT_ATTR: &[Arg] = &[path(1), buf(3, arg(4).max(4096), R)];
const EPOLL_EVENTS: Len = arg(2).int().max(1 << 24).times(EPOLL_EVENT);
const SIGACTION: Len = arg(3).max(8).plus(KSIGACTION_BASE);
const IO_EVENTS: Len = arg(2).long().max(1 << 16).times(IO_EVENT);
const MOVE_PAGES: Len = arg(1).max(1 << 20);
const MSG: Len = arg(2).max(1 << 20).plus(8);

/// The rows (one a line, as a table reads).
#[rustfmt::skip]
pub(crate) const TABLE: &[SyscallSpec] = &[
    // The read/write family.
    row(nr::READ, Direct, RW_READ),
    row(nr::PREAD64, Direct, RW_READ),
    row(nr::WRITE, Direct, RW_WRITE),
    row(nr::PWRITE64, Direct, RW_WRITE),
    row(nr::READV, Indirect, IOV_READ),
    row(nr::PREADV, Indirect, IOV_READ),
    row(nr::PREADV2, Indirect, IOV_READ),
    row(nr::WRITEV, Indirect, IOV_WRITE),
    row(nr::PWRITEV, Indirect, IOV_WRITE),
    row(nr::PWRITEV2, Indirect, IOV_WRITE),
    // Paths.
    row(nr::OPEN, Direct, PATH0),
    row(nr::CREAT, Direct, PATH0),
    row(nr::ACCESS, Direct, PATH0),
    row(nr::CHDIR, Direct, PATH0),
    row(nr::MKDIR, Direct, PATH0),
    row(nr::RMDIR, Direct, PATH0),
    row(nr::UNLINK, Direct, PATH0),
    row(nr::CHMOD, Direct, PATH0),
    row(nr::CHOWN, Direct, PATH0),
    row(nr::LCHOWN, Direct, PATH0),
    row(nr::TRUNCATE, Direct, PATH0),
    row(nr::MKNOD, Direct, PATH0),
    row(nr::CHROOT, Direct, PATH0),
    row(nr::ACCT, Direct, PATH0),
    row(nr::UMOUNT2, Direct, PATH0),
    row(nr::SWAPON, Direct, PATH0),
    row(nr::SWAPOFF, Direct, PATH0),
    row(nr::MQ_UNLINK, Direct, PATH0),
    row(nr::OPENAT, Direct, PATH1),
    row(nr::MKDIRAT, Direct, PATH1),
    row(nr::MKNODAT, Direct, PATH1),
    row(nr::FCHOWNAT, Direct, PATH1),
    row(nr::UNLINKAT, Direct, PATH1),
    row(nr::FCHMODAT, Direct, PATH1),
    row(nr::FACCESSAT, Direct, PATH1),
    row(nr::FACCESSAT2, Direct, PATH1),
    row(nr::FCHMODAT2, Direct, PATH1),
    row(nr::OPEN_TREE, Direct, PATH1),
    row(nr::FSPICK, Direct, PATH1),
    row(nr::INOTIFY_ADD_WATCH, Direct, PATH1),
    row(nr::STAT, Direct, STAT_PATH0),
    row(nr::LSTAT, Direct, STAT_PATH0),
    row(nr::FSTAT, Direct, &[buf(1, fixed(STAT), W)]),
    row(nr::NEWFSTATAT, Direct, &[path(1), buf(2, fixed(STAT), W)]),
    row(nr::STATX, Direct, &[path(1), buf(4, fixed(STATX), W)]),
    row(nr::STATFS, Direct, &[path(0), buf(1, fixed(STATFS), W)]),
    row(nr::FSTATFS, Direct, &[buf(1, fixed(STATFS), W)]),
    row(nr::OPENAT2, Direct, &[path(1), buf(2, arg(3), R)]),
    row(nr::RENAME, Direct, PATH0_PATH1),
    row(nr::LINK, Direct, PATH0_PATH1),
    row(nr::SYMLINK, Direct, PATH0_PATH1),
    row(nr::PIVOT_ROOT, Direct, PATH0_PATH1),
    row(nr::RENAMEAT, Direct, PATH1_PATH3),
    row(nr::RENAMEAT2, Direct, PATH1_PATH3),
    row(nr::LINKAT, Direct, PATH1_PATH3),
    row(nr::MOVE_MOUNT, Direct, PATH1_PATH3),
    row(nr::SYMLINKAT, Direct, &[path(0), path(2)]),
    row(nr::READLINK, Direct, &[path(0), buf(1, arg(2).int(), W)]),
    row(nr::READLINKAT, Direct, &[path(1), buf(2, arg(3).int(), W)]),
    row(nr::GETCWD, Direct, &[buf(0, arg(1).max(MAX_RW_COUNT), W)]),
    row(nr::GETDENTS, Direct, GETDENTS),
    row(nr::GETDENTS64, Direct, GETDENTS),
    row(nr::UTIME, Direct, &[path(0), buf(1, fixed(UTIMBUF), R)]),
    row(nr::UTIMES, Direct, &[path(0), buf(1, fixed(2 * TIMEVAL), R)]),
    row(nr::FUTIMESAT, Direct, &[path(1), buf(2, fixed(2 * TIMEVAL), R)]),
    row(nr::UTIMENSAT, Direct, &[path(1), buf(2, fixed(2 * TIMESPEC), R)]),
    row(nr::EXECVE, Indirect, &[path(0), str_array(1), str_array(2)]),
    row(nr::EXECVEAT, Indirect, &[path(1), str_array(2), str_array(3)]),
    // Waiting for file descriptors.
    row(nr::POLL, Direct, &[buf(0, arg(1).u32().times(POLLFD), RW)]),
    row(nr::PPOLL, Direct, &[
        buf(0, arg(1).u32().times(POLLFD), RW),
        buf(2, fixed(TIMESPEC), RW),
        buf(3, arg(4).max(8), R),
    ]),
    row(nr::SELECT, Direct, &[
        buf(1, Len::FdSet(0), RW),
        buf(2, Len::FdSet(0), RW),
        buf(3, Len::FdSet(0), RW),
        buf(4, fixed(TIMEVAL), RW),
    ]),
    row(nr::PSELECT6, Direct, &[
        buf(1, Len::FdSet(0), RW),
        buf(2, Len::FdSet(0), RW),
        buf(3, Len::FdSet(0), RW),
        buf(4, fixed(TIMESPEC), RW),
        sigmask(5),
    ]),
    row(nr::EPOLL_WAIT, Direct, &[buf(1, EPOLL_EVENTS, W)]),
    row(nr::EPOLL_PWAIT, Direct, &[buf(1, EPOLL_EVENTS, W), buf(4, arg(5).max(8), R)]),
    row(nr::EPOLL_PWAIT2, Direct, &[
        buf(1, EPOLL_EVENTS, W), buf(3, fixed(TIMESPEC), R), buf(4, arg(5).max(8), R),
    ]),
    row(nr::EPOLL_CTL, Direct, &[code(&[3], special::epoll_ctl_event)]),
    // Futexes.
    row(nr::FUTEX, Direct, &[code(&[0, 3, 4], special::futex)]),
    row(nr::FUTEX_WAKE, Direct, &[buf(0, Len::Futex2(3), R)]),
    row(nr::FUTEX_WAIT, Direct, &[buf(0, Len::Futex2(3), R), buf(4, fixed(TIMESPEC), R)]),
    row(nr::FUTEX_WAITV, Indirect, &[
        futex_waitv(0, arg(1).u32().max(128)), buf(3, fixed(TIMESPEC), R),
    ]),
    row(nr::FUTEX_REQUEUE, Indirect, &[futex_waitv(0, fixed(2))]),
    // Time.
    row(nr::NANOSLEEP, Direct, &[buf(0, fixed(TIMESPEC), R), buf(1, fixed(TIMESPEC), W)]),
    row(nr::CLOCK_NANOSLEEP, Direct, &[buf(2, fixed(TIMESPEC), R), buf(3, fixed(TIMESPEC), W)]),
    row(nr::CLOCK_GETTIME, Direct, TIMESPEC1_OUT),
    row(nr::CLOCK_GETRES, Direct, TIMESPEC1_OUT),
    row(nr::SCHED_RR_GET_INTERVAL, Direct, TIMESPEC1_OUT),
    row(nr::CLOCK_SETTIME, Direct, &[buf(1, fixed(TIMESPEC), R)]),
    row(nr::CLOCK_ADJTIME, Direct, &[buf(1, fixed(TIMEX), RW)]),
    row(nr::ADJTIMEX, Direct, &[buf(0, fixed(TIMEX), RW)]),
    row(nr::GETTIMEOFDAY, Direct, &[buf(0, fixed(TIMEVAL), W), buf(1, fixed(TIMEZONE), W)]),
    row(nr::SETTIMEOFDAY, Direct, &[buf(0, fixed(TIMEVAL), R), buf(1, fixed(TIMEZONE), R)]),
    row(nr::TIME, Direct, &[buf(0, fixed(8), W)]),
    // Processes and resources.
    row(nr::PIPE, Direct, PIPE_FDS),
    row(nr::PIPE2, Direct, PIPE_FDS),
    row(nr::SOCKETPAIR, Direct, &[buf(3, fixed(8), W)]),
    row(nr::WAIT4, Direct, &[buf(1, fixed(4), W), buf(3, fixed(RUSAGE), W)]),
    row(nr::WAITID, Direct, &[buf(2, fixed(SIGINFO), W), buf(4, fixed(RUSAGE), W)]),
    row(nr::GETRUSAGE, Direct, &[buf(1, fixed(RUSAGE), W)]),
    row(nr::TIMES, Direct, &[buf(0, fixed(TMS), W)]),
    row(nr::SYSINFO, Direct, &[buf(0, fixed(SYSINFO), W)]),
    row(nr::UNAME, Direct, &[buf(0, fixed(UTSNAME), W)]),
    row(nr::GETRLIMIT, Direct, &[buf(1, fixed(RLIMIT), W)]),
    row(nr::SETRLIMIT, Direct, &[buf(1, fixed(RLIMIT), R)]),
    row(nr::PRLIMIT64, Direct, &[buf(2, fixed(RLIMIT), R), buf(3, fixed(RLIMIT), W)]),
    // Timers.
    row(nr::GETITIMER, Direct, &[buf(1, fixed(ITIMERVAL), W)]),
    row(nr::SETITIMER, Direct, &[buf(1, fixed(ITIMERVAL), R), buf(2, fixed(ITIMERVAL), W)]),
    row(nr::TIMER_CREATE, Direct, &[buf(1, fixed(SIGEVENT), R), buf(2, fixed(4), W)]),
    row(nr::TIMER_SETTIME, Direct, ITIMERSPEC_SET),
    row(nr::TIMERFD_SETTIME, Direct, ITIMERSPEC_SET),
    row(nr::TIMER_GETTIME, Direct, ITIMERSPEC1_OUT),
    row(nr::TIMERFD_GETTIME, Direct, ITIMERSPEC1_OUT),
    // File control.
    row(nr::FCNTL, Direct, &[code(&[2], special::fcntl)]),
    row(nr::IOCTL, Direct, &[code(&[2], special::ioctl)]),
    // Sockets.
    row(nr::GETSOCKOPT, Direct, &[code(&[3, 4], special::getsockopt)]),
    row(nr::SETSOCKOPT, Direct, &[buf(3, arg(4).int(), R)]),
    row(nr::ACCEPT, Direct, SOCKADDR_OUT),
    row(nr::ACCEPT4, Direct, SOCKADDR_OUT),
    row(nr::GETSOCKNAME, Direct, SOCKADDR_OUT),
    row(nr::GETPEERNAME, Direct, SOCKADDR_OUT),
    row(nr::CONNECT, Direct, SOCKADDR_IN),
    row(nr::BIND, Direct, SOCKADDR_IN),
    row(nr::SENDTO, Direct, &[buf(1, arg(2).max(MAX_RW_COUNT), R), buf(4, arg(5).int(), R)]),
    row(nr::RECVFROM, Direct, &[buf(1, arg(2).max(MAX_RW_COUNT), W), sockaddr_out(4, 5)]),
    row(nr::SENDMSG, Indirect, &[msghdr(1, false)]),
    row(nr::RECVMSG, Indirect, &[msghdr(1, true)]),
    row(nr::SENDMMSG, Indirect, &[mmsghdr(1, 2, false)]),
    row(nr::RECVMMSG, Indirect, &[mmsghdr(1, 2, true), buf(4, fixed(TIMESPEC), RW)]),
    // Copies between files and memory.
    row(nr::SENDFILE, Direct, &[buf(2, fixed(8), RW)]),
    row(nr::SPLICE, Direct, SPLICE_OFFSETS),
    row(nr::COPY_FILE_RANGE, Direct, SPLICE_OFFSETS),
    row(nr::VMSPLICE, Indirect, &[iovec(1, 2, RW)]),
    row(nr::PROCESS_VM_READV, Indirect, &[
        iovec(1, 2, W), code(&[3], special::process_vm_readv_remote),
    ]),
    row(nr::PROCESS_VM_WRITEV, Indirect, &[
        iovec(1, 2, R), code(&[3], special::process_vm_writev_remote),
    ]),
    row(nr::GETRANDOM, Direct, &[buf(0, arg(1).max(MAX_RW_COUNT), W)]),
    row(nr::MEMFD_CREATE, Direct, &[str(0, 256)]),
    row(nr::MINCORE, Direct, &[buf(2, Len::PerPage(1), W)]),
    // Signals.
    row(nr::RT_SIGACTION, Direct, &[buf(1, SIGACTION, R), buf(2, SIGACTION, W)]),
    row(nr::RT_SIGPROCMASK, Direct, &[buf(1, arg(3).max(8), R), buf(2, arg(3).max(8), W)]),
    row(nr::RT_SIGPENDING, Direct, &[buf(0, arg(1).max(8), W)]),
    row(nr::RT_SIGSUSPEND, Direct, &[buf(0, arg(1).max(8), R)]),
    row(nr::RT_SIGTIMEDWAIT, Direct, &[
        buf(0, arg(3).max(8), R), buf(1, fixed(SIGINFO), W), buf(2, fixed(TIMESPEC), R),
    ]),
    row(nr::RT_SIGQUEUEINFO, Direct, SIGINFO2_IN),
    row(nr::PIDFD_SEND_SIGNAL, Direct, SIGINFO2_IN),
    row(nr::RT_TGSIGQUEUEINFO, Direct, &[buf(3, fixed(SIGINFO), R)]),
    row(nr::SIGALTSTACK, Never, &[code(&[0], special::sigaltstack_new), buf(1, fixed(STACK_T), W)]),
    row(nr::SIGNALFD, Direct, SIGNALFD_MASK),
    row(nr::SIGNALFD4, Direct, SIGNALFD_MASK),
    // Scheduling and credentials.
    row(nr::SCHED_GETAFFINITY, Direct, &[buf(2, arg(1).u32(), W)]),
    row(nr::SCHED_SETAFFINITY, Direct, &[buf(2, arg(1).u32(), R)]),
    row(nr::SCHED_SETPARAM, Direct, &[buf(1, fixed(4), R)]),
    row(nr::SCHED_GETPARAM, Direct, &[buf(1, fixed(4), W)]),
    row(nr::SCHED_SETSCHEDULER, Direct, &[buf(2, fixed(4), R)]),
    // struct sched_attr: u32 size first; 0 means the first version (48).
    row(nr::SCHED_SETATTR, Direct, &[buf(1, fixed(4), R), self_sized(1, 0, 48, R)]),
    row(nr::SCHED_GETATTR, Direct, &[buf(1, arg(2).u32(), W)]),
    row(nr::GETGROUPS, Direct, &[buf(1, arg(0).int().times(4), W)]),
    row(nr::SETGROUPS, Direct, &[buf(1, arg(0).int().times(4), R)]),
    row(nr::GETRESUID, Direct, RESID_OUT),
    row(nr::GETRESGID, Direct, RESID_OUT),
    // getcpu's third argument (`tcache`) is unused since Linux 2.6.24.
    row(nr::GETCPU, Direct, &[buf(0, fixed(4), W), buf(1, fixed(4), W)]),
    // cap_user_header (the kernel writes the version back on a mismatch),
    // then the data.
    row(nr::CAPGET, Direct, &[buf(0, fixed(8), RW), code(&[1], special::capget_data)]),
    row(nr::CAPSET, Direct, &[buf(0, fixed(8), R), code(&[1], special::capset_data)]),
    row(nr::PRCTL, Direct, &[code(&[1, 2, 3, 4], special::prctl)]),
    row(nr::ARCH_PRCTL, Direct, &[code(&[1], special::arch_prctl)]),
    // Pointers the kernel keeps.
    row(nr::SET_TID_ADDRESS, Direct, &[registered(0, fixed(4), RW)]),
    row(nr::SET_ROBUST_LIST, Direct, &[registered(0, arg(1), RW)]),
    row(nr::GET_ROBUST_LIST, Direct, &[buf(1, fixed(8), W), buf(2, fixed(8), W)]),
    row(nr::RSEQ, Direct, &[registered(0, arg(1).u32(), RW)]),
    row(nr::CLONE, Never, &[code(&[2, 3], special::clone)]),
    row(nr::CLONE3, Never, &[buf(0, arg(1).max(4096), R), code(&[0], special::clone3_args)]),
    // SysV IPC and POSIX message queues.
    row(nr::SEMOP, Direct, &[buf(1, arg(2).u32().times(SEMBUF), R)]),
    row(nr::SEMTIMEDOP, Direct, &[
        buf(1, arg(2).u32().times(SEMBUF), R), buf(3, fixed(TIMESPEC), R),
    ]),
    row(nr::MSGSND, Direct, &[buf(1, MSG, R)]),
    row(nr::MSGRCV, Direct, &[buf(1, MSG, W)]),
    row(nr::SHMCTL, Direct, &[code(&[2], special::shmctl)]),
    row(nr::MSGCTL, Direct, &[code(&[2], special::msgctl)]),
    row(nr::SEMCTL, Direct, &[code(&[3], special::semctl)]),
    row(nr::MQ_OPEN, Direct, &[str(0, 256), buf(3, fixed(MQ_ATTR), R)]),
    row(nr::MQ_TIMEDSEND, Direct, &[buf(1, arg(2), R), buf(4, fixed(TIMESPEC), R)]),
    row(nr::MQ_TIMEDRECEIVE, Direct, &[
        buf(1, arg(2), W), buf(3, fixed(4), W), buf(4, fixed(TIMESPEC), R),
    ]),
    row(nr::MQ_NOTIFY, Direct, &[buf(1, fixed(SIGEVENT), R)]),
    row(nr::MQ_GETSETATTR, Direct, &[buf(1, fixed(MQ_ATTR), R), buf(2, fixed(MQ_ATTR), W)]),
    // Asynchronous I/O.
    row(nr::IO_SETUP, Direct, &[buf(1, fixed(8), RW)]),
    row(nr::IO_GETEVENTS, Direct, &[buf(3, IO_EVENTS, W), buf(4, fixed(TIMESPEC), R)]),
    row(nr::IO_PGETEVENTS, Direct, &[buf(3, IO_EVENTS, W), buf(4, fixed(TIMESPEC), R), sigmask(5)]),
    row(nr::IO_SUBMIT, Indirect, &[code(&[2], special::io_submit)]),
    row(nr::IO_CANCEL, Direct, &[buf(1, fixed(IOCB), R), buf(2, fixed(IO_EVENT), W)]),
    // Extended attributes.
    row(nr::SETXATTR, Direct, SETXATTR),
    row(nr::LSETXATTR, Direct, SETXATTR),
    row(nr::FSETXATTR, Direct, &[str(1, XATTR_NAME_MAX), buf(2, arg(3), R)]),
    row(nr::GETXATTR, Direct, GETXATTR),
    row(nr::LGETXATTR, Direct, GETXATTR),
    row(nr::FGETXATTR, Direct, &[str(1, XATTR_NAME_MAX), buf(2, arg(3), W)]),
    row(nr::LISTXATTR, Direct, LISTXATTR),
    row(nr::LLISTXATTR, Direct, LISTXATTR),
    row(nr::FLISTXATTR, Direct, &[buf(1, arg(2), W)]),
    row(nr::REMOVEXATTR, Direct, REMOVEXATTR),
    row(nr::LREMOVEXATTR, Direct, REMOVEXATTR),
    row(nr::FREMOVEXATTR, Direct, &[str(1, XATTR_NAME_MAX)]),
    // struct xattr_args { u64 value; u32 size; u32 flags; }, then its value.
    row(nr::SETXATTRAT, Indirect, &[
        path(1),
        str(3, XATTR_NAME_MAX),
        buf(4, arg(5).max(4096), R),
        code(&[4], special::setxattrat_value),
    ]),
    row(nr::GETXATTRAT, Indirect, &[
        path(1),
        str(3, XATTR_NAME_MAX),
        buf(4, arg(5).max(4096), R),
        code(&[4], special::getxattrat_value),
    ]),
    row(nr::LISTXATTRAT, Direct, &[path(1), buf(3, arg(4), W)]),
    row(nr::REMOVEXATTRAT, Direct, &[path(1), str(3, XATTR_NAME_MAX)]),
    // System administration.
    row(nr::USTAT, Direct, &[buf(1, fixed(USTAT), W)]),
    row(nr::SYSFS, Direct, &[code(&[1, 2], special::sysfs)]),
    row(nr::MODIFY_LDT, Direct, &[code(&[1], special::modify_ldt)]),
    row(nr::SYSLOG, Direct, &[code(&[1], special::syslog)]),
    row(nr::SETHOSTNAME, Direct, HOSTNAME),
    row(nr::SETDOMAINNAME, Direct, HOSTNAME),
    row(nr::INIT_MODULE, Direct, &[buf(0, arg(1), R), str(2, 4096)]),
    row(nr::FINIT_MODULE, Direct, &[str(1, 4096)]),
    row(nr::DELETE_MODULE, Direct, &[str(0, 64)]),
    // The options page is copied page-wise, stopping at a fault.
    row(nr::MOUNT, Direct, &[path(0), path(1), str(2, 4096), unknown(4)]),
    // Memory policy.
    row(nr::GET_MEMPOLICY, Direct, &[buf(0, fixed(4), W), buf(1, Len::NodeMask(2), W)]),
    row(nr::SET_MEMPOLICY, Direct, &[buf(1, Len::NodeMask(2), R)]),
    row(nr::MBIND, Direct, &[buf(3, Len::NodeMask(4), R)]),
    row(nr::MIGRATE_PAGES, Direct, &[buf(2, Len::NodeMask(1), R), buf(3, Len::NodeMask(1), R)]),
    row(nr::MOVE_PAGES, Direct, &[
        buf(2, MOVE_PAGES.times(8), R),
        buf(3, MOVE_PAGES.times(4), R),
        buf(4, MOVE_PAGES.times(4), W),
    ]),
    row(nr::PROCESS_MADVISE, Direct, &[buf(1, arg(2).max(UIO_MAXIOV).times(IOVEC), R)]),
    // Security and kernel objects.
    row(nr::KCMP, Direct, &[code(&[4], special::kcmp)]),
    row(nr::SECCOMP, Direct, &[code(&[2], special::seccomp)]),
    row(nr::BPF, Direct, &[buf(1, arg(2).u32().max(4096), RW)]).partial(),
    // perf_event_attr.size at offset 4; 0 means PERF_ATTR_SIZE_VER0.
    row(nr::PERF_EVENT_OPEN, Direct, &[buf(0, fixed(8), R), self_sized(0, 4, 64, RW)]),
    row(nr::NAME_TO_HANDLE_AT, Direct, &[
        path(1), file_handle(2, RW), code(&[3], special::handle_mount_id),
    ]),
    row(nr::OPEN_BY_HANDLE_AT, Direct, &[file_handle(1, R)]),
    row(nr::FANOTIFY_MARK, Direct, &[path(4)]),
    row(nr::CACHESTAT, Direct, &[buf(1, fixed(CACHESTAT_RANGE), R), buf(2, fixed(CACHESTAT), W)]),
    // The new mount API.
    row(nr::MOUNT_SETATTR, Direct, MOUNT_ATTR),
    row(nr::OPEN_TREE_ATTR, Direct, MOUNT_ATTR),
    row(nr::FILE_GETATTR, Direct, &[path(1), buf(2, arg(3).max(4096), W)]),
    row(nr::FILE_SETATTR, Direct, &[path(1), buf(2, arg(3).max(4096), R)]),
    row(nr::FSOPEN, Direct, &[str(0, 256)]),
    row(nr::FSCONFIG, Direct, &[str(2, 256), code(&[3], special::fsconfig_value)]),
    row(nr::LANDLOCK_CREATE_RULESET, Direct, &[buf(0, arg(1).max(4096), R)]),
    row(nr::LANDLOCK_ADD_RULE, Direct, &[code(&[2], special::landlock_add_rule)]),
    // struct mnt_id_req / ns_id_req: u32 size first.
    row(nr::STATMOUNT, Direct, &[buf(0, fixed(4), R), STRUCT_SIZE_FIRST, buf(1, arg(2), W)]),
    row(nr::LISTMOUNT, Direct, LISTMOUNT),
    row(nr::LISTNS, Direct, LISTMOUNT),
    row(nr::LSM_GET_SELF_ATTR, Direct, &[code(&[1, 2], special::lsm_get_self_attr)]),
    row(nr::LSM_LIST_MODULES, Direct, &[code(&[0, 1], special::lsm_list_modules)]),
    row(nr::LSM_SET_SELF_ATTR, Direct, &[buf(1, arg(2).u32(), R)]),
    // Calls whose pointers the table cannot size: every pointer argument
    // is reported as unknown.
    row(nr::KEXEC_LOAD, Direct, &[unknown(2)]).partial(),
    row(nr::KEXEC_FILE_LOAD, Direct, &[unknown(3)]).partial(),
    row(nr::PTRACE, Direct, &[unknown(2), unknown(3)]).partial(),
    row(nr::KEYCTL, Direct, &[unknown(1), unknown(2), unknown(3), unknown(4)]).partial(),
    row(nr::ADD_KEY, Direct, &[unknown(0), unknown(1), unknown(2)]).partial(),
    row(nr::REQUEST_KEY, Direct, &[unknown(0), unknown(1), unknown(2)]).partial(),
    row(nr::QUOTACTL, Direct, &[unknown(1), unknown(3)]).partial(),
    row(nr::QUOTACTL_FD, Direct, &[unknown(3)]).partial(),
    row(nr::REBOOT, Direct, &[unknown(3)]).partial(),
    // io_uring: the rings' entries are read by the kernel asynchronously.
    row(nr::IO_URING_SETUP, Direct, &[buf(1, fixed(IO_URING_PARAMS), RW)]),
    row(nr::IO_URING_REGISTER, Direct, &[unknown(2)]).partial(),
    row(nr::IO_URING_ENTER, Direct, &[unknown(4)]).undescribed(),
];

/// Room in [`INDEX`]: every x86_64 number (the x32 ones, from 512, are not
/// in the table).
const NR_SLOTS: usize = 512;
/// No row.
const NONE: u16 = u16::MAX;

/// The row of each number, built at compile time.
static INDEX: [u16; NR_SLOTS] = {
    let mut index = [NONE; NR_SLOTS];
    let mut i = 0;
    while i < TABLE.len() {
        let nr = TABLE[i].nr;
        assert!(nr >= 0 && (nr as usize) < NR_SLOTS, "a number out of range");
        assert!(index[nr as usize] == NONE, "a system call is listed twice");
        index[nr as usize] = i as u16;
        i += 1;
    }
    index
};

/// The row of system call `nr`, if it has one.
pub(crate) fn lookup(nr: i64) -> Option<&'static SyscallSpec> {
    let i = *INDEX.get(usize::try_from(nr).ok()?)?;
    TABLE.get(i as usize)
}
