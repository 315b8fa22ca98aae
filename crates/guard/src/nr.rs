// Generated from arch/x86/entry/syscalls/syscall_64.tbl (Linux 6.19): the x86_64
// system-call numbers (64-bit ABI; the x32 entries 512-547 are not listed).

#![allow(missing_docs)]

pub const READ: i64 = 0;
pub const WRITE: i64 = 1;
pub const OPEN: i64 = 2;
pub const CLOSE: i64 = 3;
pub const STAT: i64 = 4;
pub const FSTAT: i64 = 5;
pub const LSTAT: i64 = 6;
pub const POLL: i64 = 7;
pub const LSEEK: i64 = 8;
pub const MMAP: i64 = 9;
pub const MPROTECT: i64 = 10;
pub const MUNMAP: i64 = 11;
pub const BRK: i64 = 12;
pub const RT_SIGACTION: i64 = 13;
pub const RT_SIGPROCMASK: i64 = 14;
pub const RT_SIGRETURN: i64 = 15;
pub const IOCTL: i64 = 16;
pub const PREAD64: i64 = 17;
pub const PWRITE64: i64 = 18;
pub const READV: i64 = 19;
pub const WRITEV: i64 = 20;
pub const ACCESS: i64 = 21;
pub const PIPE: i64 = 22;
pub const SELECT: i64 = 23;
pub const SCHED_YIELD: i64 = 24;
pub const MREMAP: i64 = 25;
pub const MSYNC: i64 = 26;
pub const MINCORE: i64 = 27;
pub const MADVISE: i64 = 28;
pub const SHMGET: i64 = 29;
pub const SHMAT: i64 = 30;
pub const SHMCTL: i64 = 31;
pub const DUP: i64 = 32;
pub const DUP2: i64 = 33;
pub const PAUSE: i64 = 34;
pub const NANOSLEEP: i64 = 35;
pub const GETITIMER: i64 = 36;
pub const ALARM: i64 = 37;
pub const SETITIMER: i64 = 38;
pub const GETPID: i64 = 39;
pub const SENDFILE: i64 = 40;
pub const SOCKET: i64 = 41;
pub const CONNECT: i64 = 42;
pub const ACCEPT: i64 = 43;
pub const SENDTO: i64 = 44;
pub const RECVFROM: i64 = 45;
pub const SENDMSG: i64 = 46;
pub const RECVMSG: i64 = 47;
pub const SHUTDOWN: i64 = 48;
pub const BIND: i64 = 49;
pub const LISTEN: i64 = 50;
pub const GETSOCKNAME: i64 = 51;
pub const GETPEERNAME: i64 = 52;
pub const SOCKETPAIR: i64 = 53;
pub const SETSOCKOPT: i64 = 54;
pub const GETSOCKOPT: i64 = 55;
pub const CLONE: i64 = 56;
pub const FORK: i64 = 57;
pub const VFORK: i64 = 58;
pub const EXECVE: i64 = 59;
pub const EXIT: i64 = 60;
pub const WAIT4: i64 = 61;
pub const KILL: i64 = 62;
pub const UNAME: i64 = 63;
pub const SEMGET: i64 = 64;
pub const SEMOP: i64 = 65;
pub const SEMCTL: i64 = 66;
pub const SHMDT: i64 = 67;
pub const MSGGET: i64 = 68;
pub const MSGSND: i64 = 69;
pub const MSGRCV: i64 = 70;
pub const MSGCTL: i64 = 71;
pub const FCNTL: i64 = 72;
pub const FLOCK: i64 = 73;
pub const FSYNC: i64 = 74;
pub const FDATASYNC: i64 = 75;
pub const TRUNCATE: i64 = 76;
pub const FTRUNCATE: i64 = 77;
pub const GETDENTS: i64 = 78;
pub const GETCWD: i64 = 79;
pub const CHDIR: i64 = 80;
pub const FCHDIR: i64 = 81;
pub const RENAME: i64 = 82;
pub const MKDIR: i64 = 83;
pub const RMDIR: i64 = 84;
pub const CREAT: i64 = 85;
pub const LINK: i64 = 86;
pub const UNLINK: i64 = 87;
pub const SYMLINK: i64 = 88;
pub const READLINK: i64 = 89;
pub const CHMOD: i64 = 90;
pub const FCHMOD: i64 = 91;
pub const CHOWN: i64 = 92;
pub const FCHOWN: i64 = 93;
pub const LCHOWN: i64 = 94;
pub const UMASK: i64 = 95;
pub const GETTIMEOFDAY: i64 = 96;
pub const GETRLIMIT: i64 = 97;
pub const GETRUSAGE: i64 = 98;
pub const SYSINFO: i64 = 99;
pub const TIMES: i64 = 100;
pub const PTRACE: i64 = 101;
pub const GETUID: i64 = 102;
pub const SYSLOG: i64 = 103;
pub const GETGID: i64 = 104;
pub const SETUID: i64 = 105;
pub const SETGID: i64 = 106;
pub const GETEUID: i64 = 107;
pub const GETEGID: i64 = 108;
pub const SETPGID: i64 = 109;
pub const GETPPID: i64 = 110;
pub const GETPGRP: i64 = 111;
pub const SETSID: i64 = 112;
pub const SETREUID: i64 = 113;
pub const SETREGID: i64 = 114;
pub const GETGROUPS: i64 = 115;
pub const SETGROUPS: i64 = 116;
pub const SETRESUID: i64 = 117;
pub const GETRESUID: i64 = 118;
pub const SETRESGID: i64 = 119;
pub const GETRESGID: i64 = 120;
pub const GETPGID: i64 = 121;
pub const SETFSUID: i64 = 122;
pub const SETFSGID: i64 = 123;
pub const GETSID: i64 = 124;
pub const CAPGET: i64 = 125;
pub const CAPSET: i64 = 126;
pub const RT_SIGPENDING: i64 = 127;
pub const RT_SIGTIMEDWAIT: i64 = 128;
pub const RT_SIGQUEUEINFO: i64 = 129;
pub const RT_SIGSUSPEND: i64 = 130;
pub const SIGALTSTACK: i64 = 131;
pub const UTIME: i64 = 132;
pub const MKNOD: i64 = 133;
pub const USELIB: i64 = 134;
pub const PERSONALITY: i64 = 135;
pub const USTAT: i64 = 136;
pub const STATFS: i64 = 137;
pub const FSTATFS: i64 = 138;
pub const SYSFS: i64 = 139;
pub const GETPRIORITY: i64 = 140;
pub const SETPRIORITY: i64 = 141;
pub const SCHED_SETPARAM: i64 = 142;
pub const SCHED_GETPARAM: i64 = 143;
pub const SCHED_SETSCHEDULER: i64 = 144;
pub const SCHED_GETSCHEDULER: i64 = 145;
pub const SCHED_GET_PRIORITY_MAX: i64 = 146;
pub const SCHED_GET_PRIORITY_MIN: i64 = 147;
pub const SCHED_RR_GET_INTERVAL: i64 = 148;
pub const MLOCK: i64 = 149;
pub const MUNLOCK: i64 = 150;
pub const MLOCKALL: i64 = 151;
pub const MUNLOCKALL: i64 = 152;
pub const VHANGUP: i64 = 153;
pub const MODIFY_LDT: i64 = 154;
pub const PIVOT_ROOT: i64 = 155;
pub const _SYSCTL: i64 = 156;
pub const PRCTL: i64 = 157;
pub const ARCH_PRCTL: i64 = 158;
pub const ADJTIMEX: i64 = 159;
pub const SETRLIMIT: i64 = 160;
pub const CHROOT: i64 = 161;
pub const SYNC: i64 = 162;
pub const ACCT: i64 = 163;
pub const SETTIMEOFDAY: i64 = 164;
pub const MOUNT: i64 = 165;
pub const UMOUNT2: i64 = 166;
pub const SWAPON: i64 = 167;
pub const SWAPOFF: i64 = 168;
pub const REBOOT: i64 = 169;
pub const SETHOSTNAME: i64 = 170;
pub const SETDOMAINNAME: i64 = 171;
pub const IOPL: i64 = 172;
pub const IOPERM: i64 = 173;
pub const CREATE_MODULE: i64 = 174;
pub const INIT_MODULE: i64 = 175;
pub const DELETE_MODULE: i64 = 176;
pub const GET_KERNEL_SYMS: i64 = 177;
pub const QUERY_MODULE: i64 = 178;
pub const QUOTACTL: i64 = 179;
pub const NFSSERVCTL: i64 = 180;
pub const GETPMSG: i64 = 181;
pub const PUTPMSG: i64 = 182;
pub const AFS_SYSCALL: i64 = 183;
pub const TUXCALL: i64 = 184;
pub const SECURITY: i64 = 185;
pub const GETTID: i64 = 186;
pub const READAHEAD: i64 = 187;
pub const SETXATTR: i64 = 188;
pub const LSETXATTR: i64 = 189;
pub const FSETXATTR: i64 = 190;
pub const GETXATTR: i64 = 191;
pub const LGETXATTR: i64 = 192;
pub const FGETXATTR: i64 = 193;
pub const LISTXATTR: i64 = 194;
pub const LLISTXATTR: i64 = 195;
pub const FLISTXATTR: i64 = 196;
pub const REMOVEXATTR: i64 = 197;
pub const LREMOVEXATTR: i64 = 198;
pub const FREMOVEXATTR: i64 = 199;
pub const TKILL: i64 = 200;
pub const TIME: i64 = 201;
pub const FUTEX: i64 = 202;
pub const SCHED_SETAFFINITY: i64 = 203;
pub const SCHED_GETAFFINITY: i64 = 204;
pub const SET_THREAD_AREA: i64 = 205;
pub const IO_SETUP: i64 = 206;
pub const IO_DESTROY: i64 = 207;
pub const IO_GETEVENTS: i64 = 208;
pub const IO_SUBMIT: i64 = 209;
pub const IO_CANCEL: i64 = 210;
pub const GET_THREAD_AREA: i64 = 211;
pub const LOOKUP_DCOOKIE: i64 = 212;
pub const EPOLL_CREATE: i64 = 213;
pub const EPOLL_CTL_OLD: i64 = 214;
pub const EPOLL_WAIT_OLD: i64 = 215;
pub const REMAP_FILE_PAGES: i64 = 216;
pub const GETDENTS64: i64 = 217;
pub const SET_TID_ADDRESS: i64 = 218;
pub const RESTART_SYSCALL: i64 = 219;
pub const SEMTIMEDOP: i64 = 220;
pub const FADVISE64: i64 = 221;
pub const TIMER_CREATE: i64 = 222;
pub const TIMER_SETTIME: i64 = 223;
pub const TIMER_GETTIME: i64 = 224;
pub const TIMER_GETOVERRUN: i64 = 225;
pub const TIMER_DELETE: i64 = 226;
pub const CLOCK_SETTIME: i64 = 227;
pub const CLOCK_GETTIME: i64 = 228;
pub const CLOCK_GETRES: i64 = 229;
pub const CLOCK_NANOSLEEP: i64 = 230;
pub const EXIT_GROUP: i64 = 231;
pub const EPOLL_WAIT: i64 = 232;
pub const EPOLL_CTL: i64 = 233;
pub const TGKILL: i64 = 234;
pub const UTIMES: i64 = 235;
pub const VSERVER: i64 = 236;
pub const MBIND: i64 = 237;
pub const SET_MEMPOLICY: i64 = 238;
pub const GET_MEMPOLICY: i64 = 239;
pub const MQ_OPEN: i64 = 240;
pub const MQ_UNLINK: i64 = 241;
pub const MQ_TIMEDSEND: i64 = 242;
pub const MQ_TIMEDRECEIVE: i64 = 243;
pub const MQ_NOTIFY: i64 = 244;
pub const MQ_GETSETATTR: i64 = 245;
pub const KEXEC_LOAD: i64 = 246;
pub const WAITID: i64 = 247;
pub const ADD_KEY: i64 = 248;
pub const REQUEST_KEY: i64 = 249;
pub const KEYCTL: i64 = 250;
pub const IOPRIO_SET: i64 = 251;
pub const IOPRIO_GET: i64 = 252;
pub const INOTIFY_INIT: i64 = 253;
pub const INOTIFY_ADD_WATCH: i64 = 254;
pub const INOTIFY_RM_WATCH: i64 = 255;
pub const MIGRATE_PAGES: i64 = 256;
pub const OPENAT: i64 = 257;
pub const MKDIRAT: i64 = 258;
pub const MKNODAT: i64 = 259;
pub const FCHOWNAT: i64 = 260;
pub const FUTIMESAT: i64 = 261;
pub const NEWFSTATAT: i64 = 262;
pub const UNLINKAT: i64 = 263;
pub const RENAMEAT: i64 = 264;
pub const LINKAT: i64 = 265;
pub const SYMLINKAT: i64 = 266;
pub const READLINKAT: i64 = 267;
pub const FCHMODAT: i64 = 268;
pub const FACCESSAT: i64 = 269;
pub const PSELECT6: i64 = 270;
pub const PPOLL: i64 = 271;
pub const UNSHARE: i64 = 272;
pub const SET_ROBUST_LIST: i64 = 273;
pub const GET_ROBUST_LIST: i64 = 274;
pub const SPLICE: i64 = 275;
pub const TEE: i64 = 276;
pub const SYNC_FILE_RANGE: i64 = 277;
pub const VMSPLICE: i64 = 278;
pub const MOVE_PAGES: i64 = 279;
pub const UTIMENSAT: i64 = 280;
pub const EPOLL_PWAIT: i64 = 281;
pub const SIGNALFD: i64 = 282;
pub const TIMERFD_CREATE: i64 = 283;
pub const EVENTFD: i64 = 284;
pub const FALLOCATE: i64 = 285;
pub const TIMERFD_SETTIME: i64 = 286;
pub const TIMERFD_GETTIME: i64 = 287;
pub const ACCEPT4: i64 = 288;
pub const SIGNALFD4: i64 = 289;
pub const EVENTFD2: i64 = 290;
pub const EPOLL_CREATE1: i64 = 291;
pub const DUP3: i64 = 292;
pub const PIPE2: i64 = 293;
pub const INOTIFY_INIT1: i64 = 294;
pub const PREADV: i64 = 295;
pub const PWRITEV: i64 = 296;
pub const RT_TGSIGQUEUEINFO: i64 = 297;
pub const PERF_EVENT_OPEN: i64 = 298;
pub const RECVMMSG: i64 = 299;
pub const FANOTIFY_INIT: i64 = 300;
pub const FANOTIFY_MARK: i64 = 301;
pub const PRLIMIT64: i64 = 302;
pub const NAME_TO_HANDLE_AT: i64 = 303;
pub const OPEN_BY_HANDLE_AT: i64 = 304;
pub const CLOCK_ADJTIME: i64 = 305;
pub const SYNCFS: i64 = 306;
pub const SENDMMSG: i64 = 307;
pub const SETNS: i64 = 308;
pub const GETCPU: i64 = 309;
pub const PROCESS_VM_READV: i64 = 310;
pub const PROCESS_VM_WRITEV: i64 = 311;
pub const KCMP: i64 = 312;
pub const FINIT_MODULE: i64 = 313;
pub const SCHED_SETATTR: i64 = 314;
pub const SCHED_GETATTR: i64 = 315;
pub const RENAMEAT2: i64 = 316;
pub const SECCOMP: i64 = 317;
pub const GETRANDOM: i64 = 318;
pub const MEMFD_CREATE: i64 = 319;
pub const KEXEC_FILE_LOAD: i64 = 320;
pub const BPF: i64 = 321;
pub const EXECVEAT: i64 = 322;
pub const USERFAULTFD: i64 = 323;
pub const MEMBARRIER: i64 = 324;
pub const MLOCK2: i64 = 325;
pub const COPY_FILE_RANGE: i64 = 326;
pub const PREADV2: i64 = 327;
pub const PWRITEV2: i64 = 328;
pub const PKEY_MPROTECT: i64 = 329;
pub const PKEY_ALLOC: i64 = 330;
pub const PKEY_FREE: i64 = 331;
pub const STATX: i64 = 332;
pub const IO_PGETEVENTS: i64 = 333;
pub const RSEQ: i64 = 334;
pub const URETPROBE: i64 = 335;
pub const UPROBE: i64 = 336;
pub const PIDFD_SEND_SIGNAL: i64 = 424;
pub const IO_URING_SETUP: i64 = 425;
pub const IO_URING_ENTER: i64 = 426;
pub const IO_URING_REGISTER: i64 = 427;
pub const OPEN_TREE: i64 = 428;
pub const MOVE_MOUNT: i64 = 429;
pub const FSOPEN: i64 = 430;
pub const FSCONFIG: i64 = 431;
pub const FSMOUNT: i64 = 432;
pub const FSPICK: i64 = 433;
pub const PIDFD_OPEN: i64 = 434;
pub const CLONE3: i64 = 435;
pub const CLOSE_RANGE: i64 = 436;
pub const OPENAT2: i64 = 437;
pub const PIDFD_GETFD: i64 = 438;
pub const FACCESSAT2: i64 = 439;
pub const PROCESS_MADVISE: i64 = 440;
pub const EPOLL_PWAIT2: i64 = 441;
pub const MOUNT_SETATTR: i64 = 442;
pub const QUOTACTL_FD: i64 = 443;
pub const LANDLOCK_CREATE_RULESET: i64 = 444;
pub const LANDLOCK_ADD_RULE: i64 = 445;
pub const LANDLOCK_RESTRICT_SELF: i64 = 446;
pub const MEMFD_SECRET: i64 = 447;
pub const PROCESS_MRELEASE: i64 = 448;
pub const FUTEX_WAITV: i64 = 449;
pub const SET_MEMPOLICY_HOME_NODE: i64 = 450;
pub const CACHESTAT: i64 = 451;
pub const FCHMODAT2: i64 = 452;
pub const MAP_SHADOW_STACK: i64 = 453;
pub const FUTEX_WAKE: i64 = 454;
pub const FUTEX_WAIT: i64 = 455;
pub const FUTEX_REQUEUE: i64 = 456;
pub const STATMOUNT: i64 = 457;
pub const LISTMOUNT: i64 = 458;
pub const LSM_GET_SELF_ATTR: i64 = 459;
pub const LSM_SET_SELF_ATTR: i64 = 460;
pub const LSM_LIST_MODULES: i64 = 461;
pub const MSEAL: i64 = 462;
pub const SETXATTRAT: i64 = 463;
pub const GETXATTRAT: i64 = 464;
pub const LISTXATTRAT: i64 = 465;
pub const REMOVEXATTRAT: i64 = 466;
pub const OPEN_TREE_ATTR: i64 = 467;
pub const FILE_GETATTR: i64 = 468;
pub const FILE_SETATTR: i64 = 469;
pub const LISTNS: i64 = 470;

/// `(number, name)` of every x86_64 system call, by number.
pub const ALL: &[(i64, &str)] = &[
    (READ, "read"),
    (WRITE, "write"),
    (OPEN, "open"),
    (CLOSE, "close"),
    (STAT, "stat"),
    (FSTAT, "fstat"),
    (LSTAT, "lstat"),
    (POLL, "poll"),
    (LSEEK, "lseek"),
    (MMAP, "mmap"),
    (MPROTECT, "mprotect"),
    (MUNMAP, "munmap"),
    (BRK, "brk"),
    (RT_SIGACTION, "rt_sigaction"),
    (RT_SIGPROCMASK, "rt_sigprocmask"),
    (RT_SIGRETURN, "rt_sigreturn"),
    (IOCTL, "ioctl"),
    (PREAD64, "pread64"),
    (PWRITE64, "pwrite64"),
    (READV, "readv"),
    (WRITEV, "writev"),
    (ACCESS, "access"),
    (PIPE, "pipe"),
    (SELECT, "select"),
    (SCHED_YIELD, "sched_yield"),
    (MREMAP, "mremap"),
    (MSYNC, "msync"),
    (MINCORE, "mincore"),
    (MADVISE, "madvise"),
    (SHMGET, "shmget"),
    (SHMAT, "shmat"),
    (SHMCTL, "shmctl"),
    (DUP, "dup"),
    (DUP2, "dup2"),
    (PAUSE, "pause"),
    (NANOSLEEP, "nanosleep"),
    (GETITIMER, "getitimer"),
    (ALARM, "alarm"),
    (SETITIMER, "setitimer"),
    (GETPID, "getpid"),
    (SENDFILE, "sendfile"),
    (SOCKET, "socket"),
    (CONNECT, "connect"),
    (ACCEPT, "accept"),
    (SENDTO, "sendto"),
    (RECVFROM, "recvfrom"),
    (SENDMSG, "sendmsg"),
    (RECVMSG, "recvmsg"),
    (SHUTDOWN, "shutdown"),
    (BIND, "bind"),
    (LISTEN, "listen"),
    (GETSOCKNAME, "getsockname"),
    (GETPEERNAME, "getpeername"),
    (SOCKETPAIR, "socketpair"),
    (SETSOCKOPT, "setsockopt"),
    (GETSOCKOPT, "getsockopt"),
    (CLONE, "clone"),
    (FORK, "fork"),
    (VFORK, "vfork"),
    (EXECVE, "execve"),
    (EXIT, "exit"),
    (WAIT4, "wait4"),
    (KILL, "kill"),
    (UNAME, "uname"),
    (SEMGET, "semget"),
    (SEMOP, "semop"),
    (SEMCTL, "semctl"),
    (SHMDT, "shmdt"),
    (MSGGET, "msgget"),
    (MSGSND, "msgsnd"),
    (MSGRCV, "msgrcv"),
    (MSGCTL, "msgctl"),
    (FCNTL, "fcntl"),
    (FLOCK, "flock"),
    (FSYNC, "fsync"),
    (FDATASYNC, "fdatasync"),
    (TRUNCATE, "truncate"),
    (FTRUNCATE, "ftruncate"),
    (GETDENTS, "getdents"),
    (GETCWD, "getcwd"),
    (CHDIR, "chdir"),
    (FCHDIR, "fchdir"),
    (RENAME, "rename"),
    (MKDIR, "mkdir"),
    (RMDIR, "rmdir"),
    (CREAT, "creat"),
    (LINK, "link"),
    (UNLINK, "unlink"),
    (SYMLINK, "symlink"),
    (READLINK, "readlink"),
    (CHMOD, "chmod"),
    (FCHMOD, "fchmod"),
    (CHOWN, "chown"),
    (FCHOWN, "fchown"),
    (LCHOWN, "lchown"),
    (UMASK, "umask"),
    (GETTIMEOFDAY, "gettimeofday"),
    (GETRLIMIT, "getrlimit"),
    (GETRUSAGE, "getrusage"),
    (SYSINFO, "sysinfo"),
    (TIMES, "times"),
    (PTRACE, "ptrace"),
    (GETUID, "getuid"),
    (SYSLOG, "syslog"),
    (GETGID, "getgid"),
    (SETUID, "setuid"),
    (SETGID, "setgid"),
    (GETEUID, "geteuid"),
    (GETEGID, "getegid"),
    (SETPGID, "setpgid"),
    (GETPPID, "getppid"),
    (GETPGRP, "getpgrp"),
    (SETSID, "setsid"),
    (SETREUID, "setreuid"),
    (SETREGID, "setregid"),
    (GETGROUPS, "getgroups"),
    (SETGROUPS, "setgroups"),
    (SETRESUID, "setresuid"),
    (GETRESUID, "getresuid"),
    (SETRESGID, "setresgid"),
    (GETRESGID, "getresgid"),
    (GETPGID, "getpgid"),
    (SETFSUID, "setfsuid"),
    (SETFSGID, "setfsgid"),
    (GETSID, "getsid"),
    (CAPGET, "capget"),
    (CAPSET, "capset"),
    (RT_SIGPENDING, "rt_sigpending"),
    (RT_SIGTIMEDWAIT, "rt_sigtimedwait"),
    (RT_SIGQUEUEINFO, "rt_sigqueueinfo"),
    (RT_SIGSUSPEND, "rt_sigsuspend"),
    (SIGALTSTACK, "sigaltstack"),
    (UTIME, "utime"),
    (MKNOD, "mknod"),
    (USELIB, "uselib"),
    (PERSONALITY, "personality"),
    (USTAT, "ustat"),
    (STATFS, "statfs"),
    (FSTATFS, "fstatfs"),
    (SYSFS, "sysfs"),
    (GETPRIORITY, "getpriority"),
    (SETPRIORITY, "setpriority"),
    (SCHED_SETPARAM, "sched_setparam"),
    (SCHED_GETPARAM, "sched_getparam"),
    (SCHED_SETSCHEDULER, "sched_setscheduler"),
    (SCHED_GETSCHEDULER, "sched_getscheduler"),
    (SCHED_GET_PRIORITY_MAX, "sched_get_priority_max"),
    (SCHED_GET_PRIORITY_MIN, "sched_get_priority_min"),
    (SCHED_RR_GET_INTERVAL, "sched_rr_get_interval"),
    (MLOCK, "mlock"),
    (MUNLOCK, "munlock"),
    (MLOCKALL, "mlockall"),
    (MUNLOCKALL, "munlockall"),
    (VHANGUP, "vhangup"),
    (MODIFY_LDT, "modify_ldt"),
    (PIVOT_ROOT, "pivot_root"),
    (_SYSCTL, "_sysctl"),
    (PRCTL, "prctl"),
    (ARCH_PRCTL, "arch_prctl"),
    (ADJTIMEX, "adjtimex"),
    (SETRLIMIT, "setrlimit"),
    (CHROOT, "chroot"),
    (SYNC, "sync"),
    (ACCT, "acct"),
    (SETTIMEOFDAY, "settimeofday"),
    (MOUNT, "mount"),
    (UMOUNT2, "umount2"),
    (SWAPON, "swapon"),
    (SWAPOFF, "swapoff"),
    (REBOOT, "reboot"),
    (SETHOSTNAME, "sethostname"),
    (SETDOMAINNAME, "setdomainname"),
    (IOPL, "iopl"),
    (IOPERM, "ioperm"),
    (CREATE_MODULE, "create_module"),
    (INIT_MODULE, "init_module"),
    (DELETE_MODULE, "delete_module"),
    (GET_KERNEL_SYMS, "get_kernel_syms"),
    (QUERY_MODULE, "query_module"),
    (QUOTACTL, "quotactl"),
    (NFSSERVCTL, "nfsservctl"),
    (GETPMSG, "getpmsg"),
    (PUTPMSG, "putpmsg"),
    (AFS_SYSCALL, "afs_syscall"),
    (TUXCALL, "tuxcall"),
    (SECURITY, "security"),
    (GETTID, "gettid"),
    (READAHEAD, "readahead"),
    (SETXATTR, "setxattr"),
    (LSETXATTR, "lsetxattr"),
    (FSETXATTR, "fsetxattr"),
    (GETXATTR, "getxattr"),
    (LGETXATTR, "lgetxattr"),
    (FGETXATTR, "fgetxattr"),
    (LISTXATTR, "listxattr"),
    (LLISTXATTR, "llistxattr"),
    (FLISTXATTR, "flistxattr"),
    (REMOVEXATTR, "removexattr"),
    (LREMOVEXATTR, "lremovexattr"),
    (FREMOVEXATTR, "fremovexattr"),
    (TKILL, "tkill"),
    (TIME, "time"),
    (FUTEX, "futex"),
    (SCHED_SETAFFINITY, "sched_setaffinity"),
    (SCHED_GETAFFINITY, "sched_getaffinity"),
    (SET_THREAD_AREA, "set_thread_area"),
    (IO_SETUP, "io_setup"),
    (IO_DESTROY, "io_destroy"),
    (IO_GETEVENTS, "io_getevents"),
    (IO_SUBMIT, "io_submit"),
    (IO_CANCEL, "io_cancel"),
    (GET_THREAD_AREA, "get_thread_area"),
    (LOOKUP_DCOOKIE, "lookup_dcookie"),
    (EPOLL_CREATE, "epoll_create"),
    (EPOLL_CTL_OLD, "epoll_ctl_old"),
    (EPOLL_WAIT_OLD, "epoll_wait_old"),
    (REMAP_FILE_PAGES, "remap_file_pages"),
    (GETDENTS64, "getdents64"),
    (SET_TID_ADDRESS, "set_tid_address"),
    (RESTART_SYSCALL, "restart_syscall"),
    (SEMTIMEDOP, "semtimedop"),
    (FADVISE64, "fadvise64"),
    (TIMER_CREATE, "timer_create"),
    (TIMER_SETTIME, "timer_settime"),
    (TIMER_GETTIME, "timer_gettime"),
    (TIMER_GETOVERRUN, "timer_getoverrun"),
    (TIMER_DELETE, "timer_delete"),
    (CLOCK_SETTIME, "clock_settime"),
    (CLOCK_GETTIME, "clock_gettime"),
    (CLOCK_GETRES, "clock_getres"),
    (CLOCK_NANOSLEEP, "clock_nanosleep"),
    (EXIT_GROUP, "exit_group"),
    (EPOLL_WAIT, "epoll_wait"),
    (EPOLL_CTL, "epoll_ctl"),
    (TGKILL, "tgkill"),
    (UTIMES, "utimes"),
    (VSERVER, "vserver"),
    (MBIND, "mbind"),
    (SET_MEMPOLICY, "set_mempolicy"),
    (GET_MEMPOLICY, "get_mempolicy"),
    (MQ_OPEN, "mq_open"),
    (MQ_UNLINK, "mq_unlink"),
    (MQ_TIMEDSEND, "mq_timedsend"),
    (MQ_TIMEDRECEIVE, "mq_timedreceive"),
    (MQ_NOTIFY, "mq_notify"),
    (MQ_GETSETATTR, "mq_getsetattr"),
    (KEXEC_LOAD, "kexec_load"),
    (WAITID, "waitid"),
    (ADD_KEY, "add_key"),
    (REQUEST_KEY, "request_key"),
    (KEYCTL, "keyctl"),
    (IOPRIO_SET, "ioprio_set"),
    (IOPRIO_GET, "ioprio_get"),
    (INOTIFY_INIT, "inotify_init"),
    (INOTIFY_ADD_WATCH, "inotify_add_watch"),
    (INOTIFY_RM_WATCH, "inotify_rm_watch"),
    (MIGRATE_PAGES, "migrate_pages"),
    (OPENAT, "openat"),
    (MKDIRAT, "mkdirat"),
    (MKNODAT, "mknodat"),
    (FCHOWNAT, "fchownat"),
    (FUTIMESAT, "futimesat"),
    (NEWFSTATAT, "newfstatat"),
    (UNLINKAT, "unlinkat"),
    (RENAMEAT, "renameat"),
    (LINKAT, "linkat"),
    (SYMLINKAT, "symlinkat"),
    (READLINKAT, "readlinkat"),
    (FCHMODAT, "fchmodat"),
    (FACCESSAT, "faccessat"),
    (PSELECT6, "pselect6"),
    (PPOLL, "ppoll"),
    (UNSHARE, "unshare"),
    (SET_ROBUST_LIST, "set_robust_list"),
    (GET_ROBUST_LIST, "get_robust_list"),
    (SPLICE, "splice"),
    (TEE, "tee"),
    (SYNC_FILE_RANGE, "sync_file_range"),
    (VMSPLICE, "vmsplice"),
    (MOVE_PAGES, "move_pages"),
    (UTIMENSAT, "utimensat"),
    (EPOLL_PWAIT, "epoll_pwait"),
    (SIGNALFD, "signalfd"),
    (TIMERFD_CREATE, "timerfd_create"),
    (EVENTFD, "eventfd"),
    (FALLOCATE, "fallocate"),
    (TIMERFD_SETTIME, "timerfd_settime"),
    (TIMERFD_GETTIME, "timerfd_gettime"),
    (ACCEPT4, "accept4"),
    (SIGNALFD4, "signalfd4"),
    (EVENTFD2, "eventfd2"),
    (EPOLL_CREATE1, "epoll_create1"),
    (DUP3, "dup3"),
    (PIPE2, "pipe2"),
    (INOTIFY_INIT1, "inotify_init1"),
    (PREADV, "preadv"),
    (PWRITEV, "pwritev"),
    (RT_TGSIGQUEUEINFO, "rt_tgsigqueueinfo"),
    (PERF_EVENT_OPEN, "perf_event_open"),
    (RECVMMSG, "recvmmsg"),
    (FANOTIFY_INIT, "fanotify_init"),
    (FANOTIFY_MARK, "fanotify_mark"),
    (PRLIMIT64, "prlimit64"),
    (NAME_TO_HANDLE_AT, "name_to_handle_at"),
    (OPEN_BY_HANDLE_AT, "open_by_handle_at"),
    (CLOCK_ADJTIME, "clock_adjtime"),
    (SYNCFS, "syncfs"),
    (SENDMMSG, "sendmmsg"),
    (SETNS, "setns"),
    (GETCPU, "getcpu"),
    (PROCESS_VM_READV, "process_vm_readv"),
    (PROCESS_VM_WRITEV, "process_vm_writev"),
    (KCMP, "kcmp"),
    (FINIT_MODULE, "finit_module"),
    (SCHED_SETATTR, "sched_setattr"),
    (SCHED_GETATTR, "sched_getattr"),
    (RENAMEAT2, "renameat2"),
    (SECCOMP, "seccomp"),
    (GETRANDOM, "getrandom"),
    (MEMFD_CREATE, "memfd_create"),
    (KEXEC_FILE_LOAD, "kexec_file_load"),
    (BPF, "bpf"),
    (EXECVEAT, "execveat"),
    (USERFAULTFD, "userfaultfd"),
    (MEMBARRIER, "membarrier"),
    (MLOCK2, "mlock2"),
    (COPY_FILE_RANGE, "copy_file_range"),
    (PREADV2, "preadv2"),
    (PWRITEV2, "pwritev2"),
    (PKEY_MPROTECT, "pkey_mprotect"),
    (PKEY_ALLOC, "pkey_alloc"),
    (PKEY_FREE, "pkey_free"),
    (STATX, "statx"),
    (IO_PGETEVENTS, "io_pgetevents"),
    (RSEQ, "rseq"),
    (URETPROBE, "uretprobe"),
    (UPROBE, "uprobe"),
    (PIDFD_SEND_SIGNAL, "pidfd_send_signal"),
    (IO_URING_SETUP, "io_uring_setup"),
    (IO_URING_ENTER, "io_uring_enter"),
    (IO_URING_REGISTER, "io_uring_register"),
    (OPEN_TREE, "open_tree"),
    (MOVE_MOUNT, "move_mount"),
    (FSOPEN, "fsopen"),
    (FSCONFIG, "fsconfig"),
    (FSMOUNT, "fsmount"),
    (FSPICK, "fspick"),
    (PIDFD_OPEN, "pidfd_open"),
    (CLONE3, "clone3"),
    (CLOSE_RANGE, "close_range"),
    (OPENAT2, "openat2"),
    (PIDFD_GETFD, "pidfd_getfd"),
    (FACCESSAT2, "faccessat2"),
    (PROCESS_MADVISE, "process_madvise"),
    (EPOLL_PWAIT2, "epoll_pwait2"),
    (MOUNT_SETATTR, "mount_setattr"),
    (QUOTACTL_FD, "quotactl_fd"),
    (LANDLOCK_CREATE_RULESET, "landlock_create_ruleset"),
    (LANDLOCK_ADD_RULE, "landlock_add_rule"),
    (LANDLOCK_RESTRICT_SELF, "landlock_restrict_self"),
    (MEMFD_SECRET, "memfd_secret"),
    (PROCESS_MRELEASE, "process_mrelease"),
    (FUTEX_WAITV, "futex_waitv"),
    (SET_MEMPOLICY_HOME_NODE, "set_mempolicy_home_node"),
    (CACHESTAT, "cachestat"),
    (FCHMODAT2, "fchmodat2"),
    (MAP_SHADOW_STACK, "map_shadow_stack"),
    (FUTEX_WAKE, "futex_wake"),
    (FUTEX_WAIT, "futex_wait"),
    (FUTEX_REQUEUE, "futex_requeue"),
    (STATMOUNT, "statmount"),
    (LISTMOUNT, "listmount"),
    (LSM_GET_SELF_ATTR, "lsm_get_self_attr"),
    (LSM_SET_SELF_ATTR, "lsm_set_self_attr"),
    (LSM_LIST_MODULES, "lsm_list_modules"),
    (MSEAL, "mseal"),
    (SETXATTRAT, "setxattrat"),
    (GETXATTRAT, "getxattrat"),
    (LISTXATTRAT, "listxattrat"),
    (REMOVEXATTRAT, "removexattrat"),
    (OPEN_TREE_ATTR, "open_tree_attr"),
    (FILE_GETATTR, "file_getattr"),
    (FILE_SETATTR, "file_setattr"),
    (LISTNS, "listns"),
];
