//! Sizes of the x86_64 kernel's user-visible structures (`struct stat` 144,
//! `statx` 256, `epoll_event` 12 because it is packed on x86_64, kernel
//! `struct termios` 36, …).

pub(crate) const STAT: u64 = 144;
pub(crate) const STATX: u64 = 256;
pub(crate) const STATFS: u64 = 120;
pub(crate) const TIMESPEC: u64 = 16;
pub(crate) const TIMEVAL: u64 = 16;
pub(crate) const TIMEZONE: u64 = 8;
pub(crate) const UTIMBUF: u64 = 16;
pub(crate) const ITIMERSPEC: u64 = 32;
pub(crate) const ITIMERVAL: u64 = 32;
pub(crate) const POLLFD: u64 = 8;
pub(crate) const EPOLL_EVENT: u64 = 12;
/// Handler, flags, restorer; the mask's `sigsetsize` bytes follow.
pub(crate) const KSIGACTION_BASE: u64 = 24;
pub(crate) const STACK_T: u64 = 24;
pub(crate) const RUSAGE: u64 = 144;
pub(crate) const TMS: u64 = 32;
pub(crate) const SYSINFO: u64 = 112;
pub(crate) const UTSNAME: u64 = 390;
pub(crate) const FLOCK: u64 = 32;
pub(crate) const RLIMIT: u64 = 16;
pub(crate) const SIGINFO: u64 = 128;
pub(crate) const TIMEX: u64 = 208;
pub(crate) const MSGHDR: u64 = 56;
pub(crate) const MMSGHDR: u64 = 64;
/// Bytes of one `struct iovec`.
pub(crate) const IOVEC: u64 = 16;
pub(crate) const IO_EVENT: u64 = 32;
pub(crate) const IOCB: u64 = 64;
pub(crate) const SIGEVENT: u64 = 64;
pub(crate) const MQ_ATTR: u64 = 64;
pub(crate) const SHMID_DS: u64 = 112;
pub(crate) const MSQID_DS: u64 = 120;
pub(crate) const SEMID_DS: u64 = 104;
pub(crate) const SEMBUF: u64 = 6;
pub(crate) const FUTEX_WAITV: u64 = 24;
pub(crate) const USTAT: u64 = 32;
pub(crate) const CACHESTAT_RANGE: u64 = 16;
pub(crate) const CACHESTAT: u64 = 40;
pub(crate) const KCMP_EPOLL_SLOT: u64 = 12;
pub(crate) const KERNEL_TERMIOS: u64 = 36;
pub(crate) const KERNEL_TERMIO: u64 = 18;
pub(crate) const WINSIZE: u64 = 8;
pub(crate) const IFREQ: u64 = 40;
pub(crate) const SOCK_FPROG: u64 = 16;
/// `struct { const sigset_t *ss; size_t ss_len; }` of `pselect6` and
/// `io_pgetevents`.
pub(crate) const SIGMASK: u64 = 16;
/// `struct io_uring_params`.
pub(crate) const IO_URING_PARAMS: u64 = 120;
