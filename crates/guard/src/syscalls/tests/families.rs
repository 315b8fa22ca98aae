//! The buffers reported for each family of system calls.

use super::*;

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
