//! The x86_64 system-call table: for each system call, the user buffers the
//! kernel reads or writes on the caller's behalf, and the rule the seccomp
//! filter uses to decide when to trap it.
//!
//! The table is data: one descriptor per system call (`table`), made of the
//! kinds in `spec` (a range sized by a constant or an argument, a string,
//! an iovec array, a `msghdr`, …) and interpreted by [`for_each_buffer`];
//! the trap rule's argument mask is derived from the same descriptors.
//! The structures walked through memory are in `buffers`, the calls that
//! need code (operation codes, flags, versions in memory) in `special`,
//! `ioctl` requests in `ioctl`, structure sizes in `sizes`.
//!
//! Everything here is usable from a signal handler: no allocation, no locks,
//! no panics (indexing is bounds-checked by construction or avoided); the
//! table and its index are constant data.
//!
//! Sizes are the x86_64 kernel's (`struct stat` 144, `statx` 256, `epoll_event`
//! 12 because it is packed on x86_64, kernel `struct termios` 36, …).

mod buffers;
mod ioctl;
mod sizes;
mod spec;
mod special;
mod table;
#[cfg(test)]
mod tests;

pub use ioctl::{ioc_decode, ioctl_buffer, IoctlArg};
pub(crate) use sizes::IOVEC;

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

/// The trap rule of system call `nr` (x86_64 numbering).
pub fn trap_rule(nr: i64) -> TrapRule {
    table::lookup(nr).map_or(TrapRule::Never, |spec| spec.trap_rule())
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
    match table::lookup(nr) {
        Some(spec) => {
            let mut e = buffers::Emit {
                mem,
                f,
                partial: false,
                pointers: spec.pointers,
            };
            spec.report(args, &mut e)
        }
        // In the table, and no user pointer: nothing to report.
        None if in_table(nr) => Coverage::Known,
        None => Coverage::Unknown,
    }
}
