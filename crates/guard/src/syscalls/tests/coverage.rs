//! The table as a whole: every pointer-taking system call has a rule, the
//! decoder and the rule agree, and no input makes decoding panic.

use super::*;

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

/// Every row of the table is a known x86_64 call, and the rows the filter
/// never traps are the documented ones.
#[test]
fn rows_are_known_calls_and_untrapped_rows_are_documented() {
    let not_trapped: Vec<i64> = NOT_TRAPPED.iter().map(|&(n, _)| n).collect();
    for spec in crate::syscalls::table::TABLE {
        let name = name(spec.nr).unwrap_or_else(|| panic!("row {} is no x86_64 call", spec.nr));
        assert!(in_table(spec.nr) || spec.nr == nr::IO_URING_ENTER, "{name}");
        if spec.trap == crate::syscalls::spec::Trap::Never {
            assert!(not_trapped.contains(&spec.nr), "{name} is not trapped");
        }
    }
}
