//! The system calls whose buffers depend on more than their arguments'
//! positions (an operation code, flags, a version in memory, the caller's
//! pid): named functions the table refers to ([`Arg::Code`]), each given
//! the emitter and the call's arguments.
//!
//! Async-signal-safe like the rest of the table: no heap, no locks, no
//! panics (the arguments are a fixed array of six).
//!
//! [`Arg::Code`]: super::spec::Arg::Code

use super::buffers::{at, int_len, Emit};
use super::ioctl::{ioctl_buffer, IoctlArg};
use super::sizes::{
    EPOLL_EVENT, FLOCK, IOCB, IOVEC, KCMP_EPOLL_SLOT, MSQID_DS, SEMID_DS, SHMID_DS, SOCK_FPROG,
    STACK_T, TIMESPEC,
};
use super::{Access, UIO_MAXIOV};
use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};

/// `futex(uaddr, op, val, timeout or val2, uaddr2, val3)`, by operation.
pub(crate) fn futex(e: &mut Emit<'_>, a: &[u64; 6]) {
    let cmd = a[1] as u32 & 127;
    match cmd {
        // WAIT, WAIT_BITSET: the word, a relative/absolute timeout.
        0 | 9 => {
            e.range(a[0], 4, R);
            e.range(a[3], TIMESPEC, R)
        }
        // WAKE, WAKE_BITSET (shared futexes look the page up).
        1 | 10 => e.range(a[0], 4, R),
        // REQUEUE, CMP_REQUEUE: val2 is a count, not a timeout.
        3 | 4 => {
            e.range(a[0], 4, R);
            e.range(a[4], 4, R)
        }
        // WAKE_OP reads and writes the second word.
        5 => {
            e.range(a[0], 4, R);
            e.range(a[4], 4, RW)
        }
        // LOCK_PI, LOCK_PI2: the word is read and written; timeout.
        6 | 13 => {
            e.range(a[0], 4, RW);
            e.range(a[3], TIMESPEC, R)
        }
        // UNLOCK_PI, TRYLOCK_PI.
        7 | 8 => e.range(a[0], 4, RW),
        // WAIT_REQUEUE_PI: wait on uaddr, then own the PI futex uaddr2.
        11 => {
            e.range(a[0], 4, R);
            e.range(a[3], TIMESPEC, R);
            e.range(a[4], 4, RW)
        }
        // CMP_REQUEUE_PI.
        12 => {
            e.range(a[0], 4, R);
            e.range(a[4], 4, RW)
        }
        _ => {}
    }
}

/// `fcntl(fd, cmd, arg)`: the locks, owners and hints `arg` points to.
pub(crate) fn fcntl(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[1] as u32 {
        5 | 36 => e.range(a[2], FLOCK, RW), // F_GETLK, F_OFD_GETLK
        6 | 7 | 37 | 38 => e.range(a[2], FLOCK, R), // F_SETLK(W), F_OFD_SETLK(W)
        15 => e.range(a[2], 8, R),          // F_SETOWN_EX
        16 => e.range(a[2], 8, W),          // F_GETOWN_EX
        17 => e.range(a[2], 8, W),          // F_GETOWNER_UIDS
        1035 | 1037 => e.range(a[2], 8, W), // F_GET_RW_HINT, F_GET_FILE_RW_HINT
        1036 | 1038 => e.range(a[2], 8, R), // F_SET_RW_HINT, F_SET_FILE_RW_HINT
        _ => {}                             // integer arguments
    }
}

/// `ioctl(fd, req, arg)`: what `ioctl_buffer` says of `req`.
pub(crate) fn ioctl(e: &mut Emit<'_>, a: &[u64; 6]) {
    match ioctl_buffer(a[1] as u32) {
        IoctlArg::None => {}
        IoctlArg::Buffer(len, access) => e.range(a[2], len, access),
        IoctlArg::Unknown => e.unknown(a[2]),
    }
}

/// `prctl(option, arg2, …)`: the options that take pointers; an option
/// not known here reports every pointer argument as unknown.
pub(crate) fn prctl(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[0] {
        15 => e.cstr(a[1], 16),                           // PR_SET_NAME
        16 => e.range(a[1], 16, W),                       // PR_GET_NAME
        2 | 19 | 11 | 25 | 5 | 37 => e.range(a[1], 4, W), // PDEATHSIG, ENDIAN, FPEXC, TSC, UNALIGN, CHILD_SUBREAPER
        40 => e.range(a[1], 8, W),                        // PR_GET_TID_ADDRESS
        22 => {
            // PR_SET_SECCOMP, SECCOMP_MODE_FILTER: a sock_fprog.
            if a[1] == 2 {
                sock_fprog(e, a[2])
            }
        }
        0x5356_4d41 => {
            // PR_SET_VMA, PR_SET_VMA_ANON_NAME: a name.
            if a[1] == 0 {
                e.cstr(a[4], 80)
            }
        }
        0x4155_5856 => e.range(a[1], a[2], W), // PR_GET_AUXV
        62 => {
            // PR_SCHED_CORE, PR_SCHED_CORE_GET writes a u64 cookie.
            if a[1] == 0 {
                e.range(a[4], 8, W)
            }
        }
        59 => {
            // PR_SET_SYSCALL_USER_DISPATCH on: the selector byte is read
            // on every later system call.
            if a[1] == 1 {
                e.registered(a[4], 1, Access::KernelReads)
            }
        }
        74 => e.range(a[1], 8, W), // PR_GET_SHADOW_STACK_STATUS
        35 => e.unknown_args(a),   // PR_SET_MM
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
        _ => e.unknown_args(a),
    }
}

/// `io_submit(ctx, nr, struct iocb **iocbpp)`: the pointer array, each
/// iocb, and each iocb's buffer. The I/O may complete after the call
/// (`Coverage::Partial`).
pub(crate) fn io_submit(e: &mut Emit<'_>, a: &[u64; 6]) {
    let (n, iocbpp) = (a[1], a[2]);
    e.partial = true;
    let n = (n as i64).clamp(0, 1 << 16) as u64;
    if iocbpp == 0 || n == 0 {
        return;
    }
    e.range(iocbpp, n * 8, Access::KernelReads);
    for i in 0..n {
        let Some(iocb) = e.mem.read_u64(at(iocbpp, i * 8)) else {
            return;
        };
        if iocb == 0 {
            return;
        }
        e.range(iocb, IOCB, Access::KernelReads);
        let (Some(opcode), Some(buf), Some(nbytes)) = (
            e.mem.read_u32(at(iocb, 16)),
            e.mem.read_u64(at(iocb, 24)),
            e.mem.read_u64(at(iocb, 32)),
        ) else {
            return;
        };
        match opcode & 0xffff {
            0 => e.range(buf, nbytes, Access::KernelWrites), // PREAD
            1 => e.range(buf, nbytes, Access::KernelReads),  // PWRITE
            7 => e.iovec(buf, nbytes, Access::KernelWrites), // PREADV
            8 => e.iovec(buf, nbytes, Access::KernelReads),  // PWRITEV
            _ => {}
        }
    }
}

/// `epoll_ctl(epfd, op, fd, event)`: `EPOLL_CTL_DEL` ignores the event.
pub(crate) fn epoll_ctl_event(e: &mut Emit<'_>, a: &[u64; 6]) {
    if a[1] as u32 != 2 {
        e.range(a[3], EPOLL_EVENT, R)
    }
}

/// `getsockopt(fd, level, name, optval, optlen)`: the length word, then
/// the value, as long as the length says (unknown if it cannot be read).
pub(crate) fn getsockopt(e: &mut Emit<'_>, a: &[u64; 6]) {
    e.range(a[4], 4, RW);
    if a[3] != 0 && a[4] != 0 {
        match e.mem.read_u32(a[4] as usize) {
            Some(len) => e.range(a[3], int_len(len as u64), W),
            None => e.unknown(a[3]),
        }
    }
}

/// The remote iovecs of `process_vm_readv`/`writev`: followed only when the
/// target is this process (its memory is the arena's); otherwise only the
/// array is read here.
fn process_vm_remote(e: &mut Emit<'_>, a: &[u64; 6], remote: Access) {
    // SAFETY: getpid has no preconditions and is async-signal-safe.
    let me = unsafe { libc::getpid() };
    if a[0] as i32 == me {
        e.iovec(a[3], a[4], remote)
    } else {
        e.range(a[3], (a[4].min(UIO_MAXIOV)) * IOVEC, R)
    }
}

/// `process_vm_readv`'s remote side: the kernel reads it.
pub(crate) fn process_vm_readv_remote(e: &mut Emit<'_>, a: &[u64; 6]) {
    process_vm_remote(e, a, R)
}

/// `process_vm_writev`'s remote side: the kernel writes it.
pub(crate) fn process_vm_writev_remote(e: &mut Emit<'_>, a: &[u64; 6]) {
    process_vm_remote(e, a, W)
}

/// `sigaltstack(ss, old)`'s new stack: the `stack_t`, and the stack itself,
/// registered unless `SS_DISABLE` (signal frames are written there later).
pub(crate) fn sigaltstack_new(e: &mut Emit<'_>, a: &[u64; 6]) {
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
}

/// `capget`/`capset` data: 12 bytes per `u32` word of the header's version
/// (`cap_user_header`: u32 version, i32 pid; version 1 has one word).
fn cap_data(e: &mut Emit<'_>, a: &[u64; 6], access: Access) {
    if a[0] != 0 {
        let words = match e.mem.read_u32(a[0] as usize) {
            Some(0x1998_0330) => 1,
            Some(_) => 2,
            None => 0,
        };
        e.range(a[1], 12 * words, access)
    }
}

/// `capget`'s data: the kernel writes it.
pub(crate) fn capget_data(e: &mut Emit<'_>, a: &[u64; 6]) {
    cap_data(e, a, W)
}

/// `capset`'s data: the kernel reads it.
pub(crate) fn capset_data(e: &mut Emit<'_>, a: &[u64; 6]) {
    cap_data(e, a, R)
}

/// `arch_prctl(code, addr)`: the getters write a `u64`, the others take
/// values; unknown codes may take a pointer.
pub(crate) fn arch_prctl(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[0] {
        // ARCH_GET_FS, ARCH_GET_GS, ARCH_GET_XCOMP_SUPP/PERM/GUEST_PERM,
        // ARCH_SHSTK_STATUS write a u64; the others take values.
        0x1003 | 0x1004 | 0x1021 | 0x1022 | 0x1024 | 0x5005 => e.range(a[1], 8, W),
        0x1001 | 0x1002 | 0x1011 | 0x1012 | 0x1023 | 0x1025 | 0x5001..=0x5004 => {}
        _ => e.unknown(a[1]),
    }
}

/// `clone(flags, newsp, parent_tid, child_tid, tls)` (x86_64 order): the
/// tid words its flags name.
pub(crate) fn clone(e: &mut Emit<'_>, a: &[u64; 6]) {
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

/// `clone3(args, size)`: the words `struct clone_args` points to, by its
/// flags (the structure itself is reported by the table).
pub(crate) fn clone3_args(e: &mut Emit<'_>, a: &[u64; 6]) {
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

/// `shmctl(id, cmd, buf)`.
pub(crate) fn shmctl(e: &mut Emit<'_>, a: &[u64; 6]) {
    ipc_ctl(e, a[1], a[2], SHMID_DS, &[(3, 72), (14, 48)], &[13, 15])
}

/// `msgctl(id, cmd, buf)`.
pub(crate) fn msgctl(e: &mut Emit<'_>, a: &[u64; 6]) {
    ipc_ctl(e, a[1], a[2], MSQID_DS, &[(3, 32), (12, 32)], &[11, 13])
}

/// `semctl(id, num, cmd, arg)`.
pub(crate) fn semctl(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[2] as u32 & !0x100 {
        13 | 17 => e.unknown(a[3]), // GETALL, SETALL: nsems * 2 bytes
        cmd => ipc_ctl(
            e,
            cmd as u64,
            a[3],
            SEMID_DS,
            &[(3, 40), (19, 40)],
            &[18, 20],
        ),
    }
}

/// `struct xattr_args { u64 value; u32 size; u32 flags; }` of
/// `setxattrat`/`getxattrat`: the value it points to (the structure itself
/// is reported by the table).
fn xattr_args_value(e: &mut Emit<'_>, a: &[u64; 6], access: Access) {
    if a[4] != 0 && a[5] >= 16 {
        let value = e.mem.read_u64(at(a[4], 0)).unwrap_or(0);
        let size = e.mem.read_u32(at(a[4], 8)).unwrap_or(0) as u64;
        e.range(value, size, access)
    }
}

/// `setxattrat`'s value: the kernel reads it.
pub(crate) fn setxattrat_value(e: &mut Emit<'_>, a: &[u64; 6]) {
    xattr_args_value(e, a, R)
}

/// `getxattrat`'s value: the kernel writes it.
pub(crate) fn getxattrat_value(e: &mut Emit<'_>, a: &[u64; 6]) {
    xattr_args_value(e, a, W)
}

/// `sysfs(option, arg1, arg2)`: option 1 reads a name, option 2 writes one
/// of unknown length.
pub(crate) fn sysfs(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[0] {
        1 => e.cstr(a[1], 256),
        2 => e.unknown(a[2]),
        _ => {}
    }
}

/// `modify_ldt(func, ptr, count)`: the reading functions (0, 2) write the
/// buffer, the others read it.
pub(crate) fn modify_ldt(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[0] {
        0 | 2 => e.range(a[1], a[2], W),
        _ => e.range(a[1], a[2], R),
    }
}

/// `syslog(type, buf, len)`: SYSLOG_ACTION_READ, READ_ALL, READ_CLEAR
/// write the buffer.
pub(crate) fn syslog(e: &mut Emit<'_>, a: &[u64; 6]) {
    if (2..=4).contains(&a[0]) {
        e.range(a[1], int_len(a[2]), W)
    }
}

/// `kcmp(pid1, pid2, type, idx1, idx2)`: `KCMP_EPOLL_TFD` (7) reads a slot.
pub(crate) fn kcmp(e: &mut Emit<'_>, a: &[u64; 6]) {
    if a[2] == 7 {
        e.range(a[4], KCMP_EPOLL_SLOT, R)
    }
}

/// `struct sock_fprog { u16 len; struct sock_filter *filter; }` and its
/// filter of `len` 8-byte instructions.
fn sock_fprog(e: &mut Emit<'_>, p: u64) {
    e.range(p, SOCK_FPROG, R);
    if p != 0 {
        let len = e.mem.read_u32(at(p, 0)).unwrap_or(0) & 0xffff;
        let filter = e.mem.read_u64(at(p, 8)).unwrap_or(0);
        e.range(filter, len as u64 * 8, R)
    }
}

/// `seccomp(op, flags, args)`, by operation.
pub(crate) fn seccomp(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[0] {
        1 => sock_fprog(e, a[2]), // SECCOMP_SET_MODE_FILTER
        2 => e.range(a[2], 4, R),
        3 => e.range(a[2], 6, W),
        _ => {}
    }
}

/// `name_to_handle_at`'s mount id: a `u64` with `AT_HANDLE_MNT_ID_UNIQUE`
/// (1 in the flags), else an `int`.
pub(crate) fn handle_mount_id(e: &mut Emit<'_>, a: &[u64; 6]) {
    e.range(a[3], if a[4] & 1 != 0 { 8 } else { 4 }, W)
}

/// `fsconfig(fd, cmd, key, value, aux)`'s value, by command.
pub(crate) fn fsconfig_value(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[1] {
        1 | 3 | 4 => e.cstr(a[3], 4096), // SET_STRING, SET_PATH, SET_PATH_EMPTY
        2 => e.range(a[3], a[4], R),     // SET_BINARY
        _ => {}
    }
}

/// `landlock_add_rule(fd, type, attr, flags)`: the attribute by rule type.
pub(crate) fn landlock_add_rule(e: &mut Emit<'_>, a: &[u64; 6]) {
    match a[1] {
        1 => e.range(a[2], 12, R),
        2 => e.range(a[2], 16, R),
        _ => e.unknown(a[2]),
    }
}

/// A buffer at `buf` whose size the kernel reads from, and writes back to,
/// the `u32` at `size` (the LSM calls).
fn lsm_buffer(e: &mut Emit<'_>, buf: u64, size: u64) {
    e.range(size, 4, RW);
    if buf != 0 && size != 0 {
        let n = e.mem.read_u32(size as usize).unwrap_or(0) as u64;
        e.range(buf, n, W)
    }
}

/// `lsm_get_self_attr(attr, ctx, size, flags)`.
pub(crate) fn lsm_get_self_attr(e: &mut Emit<'_>, a: &[u64; 6]) {
    lsm_buffer(e, a[1], a[2])
}

/// `lsm_list_modules(ids, size, flags)`.
pub(crate) fn lsm_list_modules(e: &mut Emit<'_>, a: &[u64; 6]) {
    lsm_buffer(e, a[0], a[1])
}

/// `shmctl`/`msgctl`/`semctl` buffers: `IPC_SET` (1) reads `ds` bytes,
/// `IPC_STAT` (2) and the `*_STAT*` commands write them, the info
/// commands write their own size.
fn ipc_ctl(e: &mut Emit<'_>, cmd: u64, buf: u64, ds: u64, info: &[(u32, u64)], stat: &[u32]) {
    let cmd = cmd as u32 & !0x100; // IPC_64
    if cmd == 1 {
        e.range(buf, ds, Access::KernelReads)
    } else if cmd == 2 || stat.contains(&cmd) {
        e.range(buf, ds, Access::KernelWrites)
    } else if let Some(&(_, len)) = info.iter().find(|&&(c, _)| c == cmd) {
        e.range(buf, len, Access::KernelWrites)
    }
}
