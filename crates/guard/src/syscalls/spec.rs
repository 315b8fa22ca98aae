//! The descriptors of the system-call table and their interpreter.
//!
//! A [`SyscallSpec`] says, for one system call, how the filter traps it
//! ([`Trap`]) and which of its arguments are buffers ([`Arg`]), in the
//! order they are reported; the trap rule's argument mask is derived from
//! the arguments. What no descriptor can say is a named function of
//! `special` ([`Arg::Code`]).
//!
//! Everything here is plain constant data (no heap), read by the SIGSYS
//! handler.

use super::buffers::{futex2_size, int_len, Emit};
use super::{Access, Coverage, TrapRule};

/// How the filter traps a call (the argument mask comes from its [`Arg`]s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trap {
    /// [`TrapRule::DirectPointers`].
    Direct,
    /// [`TrapRule::Indirect`].
    Indirect,
    /// [`TrapRule::Never`]: see `NOT_TRAPPED`.
    Never,
}

/// How an integer argument is read as a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Count {
    /// All 64 bits (`size_t`, `unsigned long`).
    U64,
    /// The low 32 bits (`unsigned int`).
    U32,
    /// An `int`: the low 32 bits, a negative value as 0.
    Int,
    /// A `long`: a negative value as 0.
    Long,
}

impl Count {
    fn of(self, v: u64) -> u64 {
        match self {
            Count::U64 => v,
            Count::U32 => v as u32 as u64,
            Count::Int => int_len(v),
            Count::Long => (v as i64).max(0) as u64,
        }
    }
}

/// The length of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Len {
    /// A constant: the size of a structure.
    Fixed(u64),
    /// `head + min(count(args[arg]), max) * unit`: built by [`arg`] and
    /// the methods of `Len`.
    Arg {
        arg: u8,
        count: Count,
        max: u64,
        unit: u64,
        head: u64,
    },
    /// The bytes of an `fd_set` for `nfds` in argument `.0` (`select`).
    FdSet(u8),
    /// The bytes of a node mask of `maxnode` bits in argument `.0`.
    NodeMask(u8),
    /// One byte per page of the length in argument `.0` (`mincore`).
    PerPage(u8),
    /// The futex word size of the `FUTEX2_SIZE_*` flags in argument `.0`.
    Futex2(u8),
}

/// A constant length.
pub(crate) const fn fixed(n: u64) -> Len {
    Len::Fixed(n)
}

/// The length in argument `i` (all 64 bits, uncapped).
pub(crate) const fn arg(i: u8) -> Len {
    Len::Arg {
        arg: i,
        count: Count::U64,
        max: u64::MAX,
        unit: 1,
        head: 0,
    }
}

impl Len {
    /// The fields of a length from an argument; a count, cap, unit or
    /// header on any other length is a mistake in the table (a compile
    /// error, the table being constant).
    const fn fields(self) -> (u8, Count, u64, u64, u64) {
        match self {
            Len::Arg {
                arg,
                count,
                max,
                unit,
                head,
            } => (arg, count, max, unit, head),
            _ => panic!("only a length from an argument has a count, a cap, a unit or a header"),
        }
    }

    const fn count(self, count: Count) -> Len {
        let (arg, _, max, unit, head) = self.fields();
        Len::Arg {
            arg,
            count,
            max,
            unit,
            head,
        }
    }

    /// The argument is an `unsigned int`.
    pub(crate) const fn u32(self) -> Len {
        self.count(Count::U32)
    }

    /// The argument is an `int` (negative: 0).
    pub(crate) const fn int(self) -> Len {
        self.count(Count::Int)
    }

    /// The argument is a `long` (negative: 0).
    pub(crate) const fn long(self) -> Len {
        self.count(Count::Long)
    }

    /// The count is capped at `max` (the kernel's own limit).
    pub(crate) const fn max(self, max: u64) -> Len {
        let (arg, count, _, unit, head) = self.fields();
        Len::Arg {
            arg,
            count,
            max,
            unit,
            head,
        }
    }

    /// The count is of elements of `unit` bytes.
    pub(crate) const fn times(self, unit: u64) -> Len {
        let (arg, count, max, _, head) = self.fields();
        Len::Arg {
            arg,
            count,
            max,
            unit,
            head,
        }
    }

    /// A header of `head` bytes comes before the counted bytes.
    pub(crate) const fn plus(self, head: u64) -> Len {
        let (arg, count, max, unit, _) = self.fields();
        Len::Arg {
            arg,
            count,
            max,
            unit,
            head,
        }
    }

    /// The length for the call's arguments `a`.
    fn eval(self, a: &[u64; 6]) -> u64 {
        let at = |i: u8| a.get(i as usize).copied().unwrap_or(0);
        match self {
            Len::Fixed(n) => n,
            Len::Arg {
                arg,
                count,
                max,
                unit,
                head,
            } => head.saturating_add(count.of(at(arg)).min(max).saturating_mul(unit)),
            Len::FdSet(i) => int_len(at(i)).div_ceil(64) * 8,
            Len::NodeMask(i) => at(i).saturating_sub(1).min(1 << 16).div_ceil(64) * 8,
            Len::PerPage(i) => at(i).div_ceil(4096),
            Len::Futex2(i) => futex2_size(at(i)),
        }
    }
}

/// Code for what a descriptor cannot say: reports, through the emitter, the
/// buffers of the call with these arguments.
pub(crate) type Special = fn(&mut Emit<'_>, &[u64; 6]);

/// One buffer argument (or group of arguments) of a system call.
#[derive(Clone, Copy)]
pub(crate) enum Arg {
    /// `len` bytes at `args[ptr]`.
    Buf { ptr: u8, len: Len, access: Access },
    /// `len` bytes at `args[ptr]` that the kernel keeps a pointer to
    /// ([`Buffer::Registered`](super::Buffer::Registered)).
    Registered { ptr: u8, len: Len, access: Access },
    /// A NUL-terminated string the kernel reads, at most `max` bytes.
    Str { ptr: u8, max: usize },
    /// A pointer the table cannot size.
    Unknown { ptr: u8 },
    /// An iovec array at `args[ptr]` of `args[cnt]` entries; `access` is
    /// for the buffers (the array is read).
    Iovec { ptr: u8, cnt: u8, access: Access },
    /// A `msghdr` (`recv`: the kernel writes its buffers).
    Msghdr { ptr: u8, recv: bool },
    /// An `mmsghdr` vector of `args[vlen]` entries.
    Mmsghdr { ptr: u8, vlen: u8, recv: bool },
    /// A `NULL`-terminated array of strings (`argv`, `envp`).
    StrArray { ptr: u8 },
    /// A socket address the kernel fills, its length at `args[lenp]`.
    SockaddrOut { ptr: u8, lenp: u8 },
    /// A `struct file_handle`.
    FileHandle { ptr: u8, access: Access },
    /// A `futex_waitv` array of `count` entries, and their words.
    FutexWaitv { ptr: u8, count: Len },
    /// An extensible structure sized by a `u32` in it: see
    /// `Emit::self_sized`.
    SelfSized {
        ptr: u8,
        size_at: u64,
        ver0: u64,
        access: Access,
    },
    /// A `{ sigset_t *, size_t }` structure and its set.
    Sigmask { ptr: u8 },
    /// A special case in code, which may treat the arguments of the mask
    /// `ptrs` as pointers.
    Code { ptrs: u8, f: Special },
}

/// A bit mask of argument indices.
const fn mask(args: &[u8]) -> u8 {
    let mut mask = 0u8;
    let mut i = 0;
    while i < args.len() {
        mask |= 1 << args[i];
        i += 1;
    }
    mask
}

/// `len` bytes at `args[ptr]`.
pub(crate) const fn buf(ptr: u8, len: Len, access: Access) -> Arg {
    Arg::Buf { ptr, len, access }
}

/// A path (`PATH_MAX`).
pub(crate) const fn path(ptr: u8) -> Arg {
    Arg::Str {
        ptr,
        max: super::PATH_MAX,
    }
}

/// A string of at most `max` bytes.
pub(crate) const fn str(ptr: u8, max: usize) -> Arg {
    Arg::Str { ptr, max }
}

/// A pointer the table cannot size.
pub(crate) const fn unknown(ptr: u8) -> Arg {
    Arg::Unknown { ptr }
}

/// `len` bytes the kernel keeps a pointer to.
pub(crate) const fn registered(ptr: u8, len: Len, access: Access) -> Arg {
    Arg::Registered { ptr, len, access }
}

/// An iovec array of `args[cnt]` entries.
pub(crate) const fn iovec(ptr: u8, cnt: u8, access: Access) -> Arg {
    Arg::Iovec { ptr, cnt, access }
}

/// A `msghdr`.
pub(crate) const fn msghdr(ptr: u8, recv: bool) -> Arg {
    Arg::Msghdr { ptr, recv }
}

/// An `mmsghdr` vector of `args[vlen]` entries.
pub(crate) const fn mmsghdr(ptr: u8, vlen: u8, recv: bool) -> Arg {
    Arg::Mmsghdr { ptr, vlen, recv }
}

/// A `NULL`-terminated array of strings.
pub(crate) const fn str_array(ptr: u8) -> Arg {
    Arg::StrArray { ptr }
}

/// A socket address the kernel fills, its length at `args[lenp]`.
pub(crate) const fn sockaddr_out(ptr: u8, lenp: u8) -> Arg {
    Arg::SockaddrOut { ptr, lenp }
}

/// A `struct file_handle`.
pub(crate) const fn file_handle(ptr: u8, access: Access) -> Arg {
    Arg::FileHandle { ptr, access }
}

/// A `futex_waitv` array of `count` entries.
pub(crate) const fn futex_waitv(ptr: u8, count: Len) -> Arg {
    Arg::FutexWaitv { ptr, count }
}

/// An extensible structure whose size is the `u32` at `size_at` in it (0
/// there: `ver0` bytes).
pub(crate) const fn self_sized(ptr: u8, size_at: u64, ver0: u64, access: Access) -> Arg {
    Arg::SelfSized {
        ptr,
        size_at,
        ver0,
        access,
    }
}

/// A `{ sigset_t *, size_t }` structure and its set.
pub(crate) const fn sigmask(ptr: u8) -> Arg {
    Arg::Sigmask { ptr }
}

/// Code for arguments `ptrs`.
pub(crate) const fn code(ptrs: &[u8], f: Special) -> Arg {
    Arg::Code {
        ptrs: mask(ptrs),
        f,
    }
}

impl Arg {
    /// The arguments this one treats as pointers.
    const fn pointers(&self) -> u8 {
        match *self {
            Arg::Buf { ptr, .. }
            | Arg::Registered { ptr, .. }
            | Arg::Str { ptr, .. }
            | Arg::Unknown { ptr }
            | Arg::Iovec { ptr, .. }
            | Arg::Msghdr { ptr, .. }
            | Arg::Mmsghdr { ptr, .. }
            | Arg::StrArray { ptr }
            | Arg::FileHandle { ptr, .. }
            | Arg::FutexWaitv { ptr, .. }
            | Arg::SelfSized { ptr, .. }
            | Arg::Sigmask { ptr } => 1 << ptr,
            Arg::SockaddrOut { ptr, lenp } => 1 << ptr | 1 << lenp,
            Arg::Code { ptrs, .. } => ptrs,
        }
    }
}

/// One system call of the table.
pub(crate) struct SyscallSpec {
    /// The x86_64 number.
    pub(crate) nr: i64,
    /// How the filter traps it.
    pub(crate) trap: Trap,
    /// Its buffers, in the order they are reported.
    pub(crate) args: &'static [Arg],
    /// The arguments treated as pointers (derived from `args`).
    pub(crate) pointers: u8,
    /// `Known`: as complete as the arguments make it; `Partial`: the
    /// kernel touches more than is reported; `Unknown`: the call cannot be
    /// described.
    pub(crate) coverage: Coverage,
}

/// A call trapped so, with these buffers.
pub(crate) const fn row(nr: i64, trap: Trap, args: &'static [Arg]) -> SyscallSpec {
    let mut pointers = 0u8;
    let mut i = 0;
    while i < args.len() {
        pointers |= args[i].pointers();
        i += 1;
    }
    assert!(pointers < 1 << 6, "system calls have six arguments, 0 to 5");
    SyscallSpec {
        nr,
        trap,
        args,
        pointers,
        coverage: Coverage::Known,
    }
}

impl SyscallSpec {
    /// The description is partial whatever the arguments.
    pub(crate) const fn partial(self) -> SyscallSpec {
        SyscallSpec {
            coverage: Coverage::Partial,
            ..self
        }
    }

    /// The call cannot be described (its buffers are reported as far as
    /// they go).
    pub(crate) const fn undescribed(self) -> SyscallSpec {
        SyscallSpec {
            coverage: Coverage::Unknown,
            ..self
        }
    }

    /// The filter's rule.
    pub(crate) fn trap_rule(&self) -> TrapRule {
        match self.trap {
            Trap::Direct => TrapRule::DirectPointers(self.pointers),
            Trap::Indirect => TrapRule::Indirect(self.pointers),
            Trap::Never => TrapRule::Never,
        }
    }

    /// Reports the buffers of the call with arguments `a`.
    pub(crate) fn report(&self, a: &[u64; 6], e: &mut Emit<'_>) -> Coverage {
        let at = |i: u8| a.get(i as usize).copied().unwrap_or(0);
        for arg in self.args {
            match *arg {
                Arg::Buf { ptr, len, access } => e.range(at(ptr), len.eval(a), access),
                Arg::Registered { ptr, len, access } => e.registered(at(ptr), len.eval(a), access),
                Arg::Str { ptr, max } => e.cstr(at(ptr), max),
                Arg::Unknown { ptr } => e.unknown(at(ptr)),
                Arg::Iovec { ptr, cnt, access } => e.iovec(at(ptr), at(cnt), access),
                Arg::Msghdr { ptr, recv } => e.msghdr(at(ptr), recv),
                Arg::Mmsghdr { ptr, vlen, recv } => e.mmsghdr(at(ptr), at(vlen), recv),
                Arg::StrArray { ptr } => e.str_array(at(ptr)),
                Arg::SockaddrOut { ptr, lenp } => e.sockaddr_out(at(ptr), at(lenp)),
                Arg::FileHandle { ptr, access } => e.file_handle(at(ptr), access),
                Arg::FutexWaitv { ptr, count } => e.futex_waitv(at(ptr), count.eval(a)),
                Arg::SelfSized {
                    ptr,
                    size_at,
                    ver0,
                    access,
                } => e.self_sized(at(ptr), size_at, ver0, access),
                Arg::Sigmask { ptr } => e.sigmask(at(ptr)),
                Arg::Code { f, .. } => f(e, a),
            }
        }
        match self.coverage {
            Coverage::Known if e.partial => Coverage::Partial,
            c => c,
        }
    }
}
