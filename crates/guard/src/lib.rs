//! uzswap's syscall guard: lets the kernel touch arena pages that a
//! user-mode-only userfaultfd would not fault in for it.
//!
//! # The problem
//!
//! Without root and with `vm.unprivileged_userfaultfd=0`, uzswap opens its
//! userfaultfd with `UFFD_USER_MODE_ONLY`. A page of a region that is not
//! mapped (never touched, or evicted to the compressed pool) is then
//! faulted in only when the *program* touches it; when the *kernel* touches
//! it on the program's behalf (`read(2)` into it, `write(2)` from it,
//! `recvmsg`, `stat`, a path, a `poll` array, a futex word, `execve`'s
//! strings…) the system call fails with `EFAULT`. So does a kernel write to
//! a resident page that uzswap write-protected (write tracking, eviction).
//!
//! # The design
//!
//! All paged memory lives in one *arena* `[lo, hi)`, power-of-two sized and
//! aligned, with a `PROT_NONE` page below it (so no valid buffer starts
//! below it and runs into it: only pointers *into* the arena matter).
//!
//! 1. [`syscalls`]: a table of the x86_64 system calls that dereference
//!    user pointers: which arguments, how many bytes (constants, length
//!    arguments, lengths in memory, NUL-terminated strings, `argv` arrays,
//!    iovecs, `msghdr`/`mmsghdr`, ioctl `_IOC` encodings and a table of
//!    legacy ioctls), and in which direction. [`syscalls::for_each_buffer`]
//!    reports them; [`syscalls::trap_rule`] says when the filter traps.
//!    The table is data (`syscalls/table.rs`: one descriptor per call, of
//!    the kinds in `syscalls/spec.rs`); the structures walked through
//!    memory are in `syscalls/buffers.rs`, the calls that need code in
//!    `syscalls/special.rs`, the ioctl requests in `syscalls/ioctl.rs`.
//! 2. [`filter`]: a seccomp classic-BPF program: x86_64 only; a call whose
//!    instruction pointer is the trampoline's is allowed; a call with a rule
//!    is trapped (`SECCOMP_RET_TRAP | TRAP_DATA`) when a direct pointer
//!    argument lies in the arena, or, for calls reaching memory through
//!    pointers in memory (`readv`, `sendmsg`, `execve`, …), per the
//!    [`IndirectPolicy`]; everything else is allowed, and for calls without
//!    a rule the kernel's seccomp cache skips the filter altogether.
//! 3. [`trampoline`]: [`trampoline::guard_syscall`], around the one
//!    `syscall` instruction the filter lets through (its return address is
//!    [`trampoline::syscall_return_address`]).
//! 4. The SIGSYS handler (`handler/mod.rs`): reads the number and
//!    arguments from the signal frame, pins every arena buffer of the call
//!    through the runtime's [`Pinner`] (which faults the pages in, writable
//!    when the kernel will write, and keeps them from being evicted or
//!    write-protected), issues the call through the trampoline, stores the
//!    result in the frame's RAX, and unpins (`handler/reissue.rs`; the pins
//!    of one call are `pins.rs`'s, the program's memory is read through
//!    `proc_mem.rs`). A `read`, `write`, `pread64`, `pwrite64` or vectored
//!    read or write (`readv` … `pwritev2`) of more than 4 MiB on a regular
//!    file is issued in 4 MiB pieces (`piecewise`), each pinned for its own
//!    call only, so that one call never holds a whole large buffer resident
//!    past the limit (the result is the pieces' sum; a short or failed piece
//!    ends it, as a short count would).
//!    A `vfork` child's `execve` runs on copies of its strings made out of
//!    the arena (`exec_copy`), since its pins would never be released.
//!    The signal protection's `rt_sigprocmask`/`rt_sigaction` traps are
//!    emulated (`handler/emulate.rs`); signals that are not its traps go to
//!    the program's own SIGSYS handler ([`chain_handler_for_program`],
//!    `handler/chain.rs`). Dependencies run one way: the handler uses
//!    `piecewise` and `exec_copy`, and all three use `pins`, `proc_mem` and
//!    `state` (the [`Pinner`] and the installed arena), which import none
//!    of them.
//! 5. [`counters()`]: traps, unknown calls, overflows, chained signals.
//!
//! # What is covered, what is not
//!
//! Covered (see the table for the full list): the read/write family with
//! vectors (`read`, `pread64`, `readv`, `preadv`, `preadv2`, their write
//! counterparts), sockets (`recvfrom`, `recvmsg`, `recvmmsg`, `sendto`,
//! `sendmsg`, `sendmmsg`, `accept`, `connect`, `bind`, `getsockname`,
//! `getpeername`, `getsockopt`, `setsockopt`, `socketpair`), every path
//! taking call (`open`, `openat`, `openat2`, `stat` family, `statx`,
//! `access`, `readlink`, `rename*`, `link*`, `symlink*`, `mkdir*`,
//! `unlink*`, `chmod`/`chown` families, `truncate`, `utimensat`, xattrs,
//! `inotify_add_watch`, `mount`-family paths, …), `execve`/`execveat`
//! (`argv`/`envp` strings), `getdents`, `getcwd`, `poll`/`ppoll`,
//! `select`/`pselect6`, the `epoll` calls, `futex` (every op) and the
//! futex2 calls, the sleep and clock calls, timers, `wait4`/`waitid`,
//! resource calls, signals (`rt_sigaction`, `rt_sigprocmask` — emulated —,
//! `rt_sigtimedwait`, `signalfd`, …), `fcntl` locks and owners, `ioctl`
//! (`_IOC` size and direction, legacy terminal/socket/block requests),
//! `getrandom`, `sendfile`/`splice`/`copy_file_range` offsets, `vmsplice`,
//! `process_vm_readv`/`writev` (local side; remote too when the target is
//! this process), `mincore`, `memfd_create`, SysV IPC, POSIX message
//! queues, `prctl` (names, the integer getters), `arch_prctl`, `capget`,
//! `capset`, `clone3`'s `clone_args` reads, and more.
//!
//! Not covered:
//! * `io_uring`: buffers given in submission queue entries or registered
//!   earlier are touched by the kernel asynchronously (`io_uring_enter` is
//!   reported as `Coverage::Unknown`).
//! * AIO (`io_submit`): the iocbs and buffers are pinned during the call
//!   only (`Coverage::Partial`); O_DIRECT I/O that completes later is not.
//! * Kernel accesses outside system calls: registered pointers
//!   (`set_tid_address`, `set_robust_list`, `rseq`, `CLONE_CHILD_CLEARTID`,
//!   an alternate signal stack in the arena) are reported as
//!   [`syscalls::Buffer::Registered`] and passed to
//!   [`Pinner::registered`]; keeping them resident is the runtime's job.
//!   Kernel threads, `/proc/PID/mem`, `ptrace` from another process.
//! * `clone`/`clone3` and `sigaltstack` are never trapped (they cannot be
//!   re-issued from a signal handler: [`syscalls::NOT_TRAPPED`]).
//! * With [`IndirectPolicy::FromCode`] (the default), calls reaching memory
//!   through pointers in memory made by a raw `syscall` instruction outside
//!   the C library; with `ArrayInArena`, those whose arrays are not in the
//!   arena. 32-bit `int 0x80` calls and the x32 ABI.
//! * System calls not in the table are reported as `Coverage::Unknown` and
//!   counted by number ([`unknown_numbers`]).
//!
//! # Async-signal-safety
//!
//! The handler and everything it calls allocate nothing, take no lock of
//! this crate, do no std I/O, and do not panic (no unchecked indexing, no
//! `unwrap`); counters are relaxed atomics; the program's memory is read
//! and written with `process_vm_readv`/`writev` through the trampoline, so
//! a bad pointer gives `EFAULT` as the kernel would. `errno` is preserved.
//! The [`Pinner`] is called from the handler: see its contract. The pins of
//! one call live on the handler's stack (1024 ranges, about 16 KiB; more
//! ranges are counted in `pin_overflows` and the call is issued anyway).
//!
//! Restarts: the call is re-issued inside the handler, so a signal that
//! interrupts it is handled as it would have been: with `SA_RESTART` (and a
//! restartable call), the kernel restarts the trampoline's `syscall` (the
//! restarted call comes from the trampoline again and is allowed;
//! `restart_syscall` for sleeps too); without, the call returns `EINTR`,
//! which the handler stores in RAX. Other signals are not blocked during
//! the handler. If a program signal handler interrupting the call never
//! returns (`siglongjmp`), the call's pins are never released.
//!
//! # Costs and side effects
//!
//! * `PR_SET_NO_NEW_PRIVS` (required to install a filter without
//!   `CAP_SYS_ADMIN`): set-user-ID and file-capability programs the process
//!   executes run without their privileges (`sudo`, `ping` on some
//!   systems); it cannot be undone and is inherited.
//! * Filters survive `execve` and are inherited by children. A program
//!   executed later that does not install the guard's handler dies (SIGSYS,
//!   core) at a trapped call: with `FromCode`, only a call with a pointer
//!   into the (old) arena range, or, with ASLR off, an indirect call from a
//!   C library loaded at the very same address; with `Always`, at its first
//!   `writev`/`sendmsg`/`execve`… A new program that installs the guard
//!   again with another trampoline address gets `ENOSYS` for calls the old
//!   filter traps (`foreign_traps`).
//!
//! # Arena placement
//!
//! Because of the above, the arena must lie where no program maps anything
//! by default: not just below the existing mappings (where `mmap(NULL, …)`
//! puts a reservation), since a new program's randomized mmap base falls
//! anywhere in the TiB below the stack, and its C library's thread block
//! there makes `set_tid_address`/`set_robust_list` trap at startup (the
//! test `execve_argv` died that way about one run in six until the arena
//! moved). The tests reserve the first free 1 TiB slot from 16 TiB
//! (`MAP_FIXED_NOREPLACE`), below the legacy bottom-up mmap base (42 TiB),
//! PIE executables and their heap (85 TiB) and the top-down mmap area
//! (127-128 TiB). The runtime places its arena at 62 TiB the same way
//! (`MAP_FIXED_NOREPLACE`), and only where that is taken lets the kernel
//! choose (`runtime::arena`).
//!
//! # Threads
//!
//! A thread whose mask blocks SIGSYS when the filter is installed dies at
//! its first trapped call (the filter's signal protection only sanitizes
//! masks set afterwards). [`install`] therefore checks every thread's
//! `SigBlk` (waiting up to 200 ms for threads being created, which block
//! every signal until glibc's `start_thread` restores their mask) and fails
//! with [`GuardError::SigsysBlocked`] rather than install. Install the guard
//! before the program creates threads that block all signals, or keep
//! SIGSYS out of their masks until then (the LD_PRELOAD library installs it
//! with the first region and strips SIGSYS from `pthread_sigmask` and
//! `sigprocmask` sets before that).
//! * SIGSYS must stay handled and unblocked: a seccomp trap while SIGSYS is
//!   blocked or ignored makes the kernel reset it to the default action and
//!   kill the process. With [`GuardConfig::protect_sigsys`] (default) the
//!   filter also traps `rt_sigaction` with a new action and
//!   `rt_sigprocmask(SIG_BLOCK/SIG_SETMASK)` (in the `IndirectPolicy`
//!   scope): the handler keeps the program's SIGSYS action as the chained
//!   one ([`chain_handler_for_program`]), removes SIGSYS from blocked sets
//!   and from other handlers' `sa_mask`, and emulates `rt_sigprocmask` on
//!   the signal frame. The LD_PRELOAD library's hooks can do the same
//!   cheaply with [`sanitize_sigset`] and [`chain_handler_for_program`].
//!   A program that blocks SIGSYS with a raw system call outside the C
//!   library, or through `ppoll`/`pselect6`/`epoll_pwait`/`sigsuspend`
//!   masks, still dies at a trap made while it is blocked.
//! * Each trap costs a signal delivery and return plus the pinning: about
//!   4 µs for a `read` into a resident page, 5 µs for a `writev` trapped
//!   by `FromCode` (test VM; see the `bench` test). Calls that do not touch
//!   the arena only pay seccomp's entry (on the test VM ~60 ns per system
//!   call with any filter, even one the seccomp cache skips) and, for the
//!   calls that have a rule, the filter (JIT-compiled; 10 instructions for
//!   `read`/`write`, at most about 35 for the others): no more than a
//!   2-instruction filter, within the noise. On 4 KiB `dd`-like copies
//!   that is +11..26% CPU over no filter at all, all of it seccomp's.

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!("the guard crate supports x86_64 Linux only (the syscall table, the trampoline and the signal frame are x86_64's)");

pub mod counters;
mod exec_copy;
pub mod filter;
mod handler;
pub mod nr;
mod piecewise;
mod pins;
mod proc_mem;
mod state;
pub mod syscalls;
pub mod trampoline;

pub use counters::{counters, unknown_numbers, Counters};
pub use filter::{IndirectPolicy, TRAP_DATA};
pub use handler::{
    chain_handler_for_program, guarded_syscall, handler_installed, keep_unblocked, sanitize_sigset,
};
pub use pins::MAX_PINS;
pub use state::{PinToken, Pinner};
pub use syscalls::{for_each_buffer, Access, Buffer, Coverage, TrapRule, UserMem};

use std::ops::Range;

/// Errors of [`install`].
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The arena is not a power-of-two-sized range aligned to its size.
    #[error("arena {start:#x}..{end:#x} is not a power-of-two-sized, size-aligned range")]
    BadArena {
        /// Start.
        start: usize,
        /// End.
        end: usize,
    },
    /// `install` was already called in this process (filters cannot be
    /// removed or replaced).
    #[error("the guard is already installed in this process")]
    AlreadyInstalled,
    /// The filter could not be built.
    #[error("building the seccomp filter: {0}")]
    Filter(&'static str),
    /// `prctl(PR_SET_NO_NEW_PRIVS)` failed.
    #[error("prctl(PR_SET_NO_NEW_PRIVS): {0}")]
    NoNewPrivs(std::io::Error),
    /// `seccomp(SECCOMP_SET_MODE_FILTER)` failed.
    #[error("seccomp(SET_MODE_FILTER): {0}")]
    Seccomp(std::io::Error),
    /// `SECCOMP_FILTER_FLAG_TSYNC` could not apply the filter to a thread
    /// (it has a different filter already).
    #[error("seccomp TSYNC failed for thread {0}")]
    Tsync(i32),
    /// Installing the SIGSYS handler failed.
    #[error("sigaction(SIGSYS): {0}")]
    Sigaction(std::io::Error),
    /// Mapping the trampoline's gate page failed.
    #[error("mapping the trampoline gate: {0}")]
    Gate(std::io::Error),
    /// These threads block SIGSYS: a trap in one of them would make the
    /// kernel kill the process, so the filter was not installed. (A thread
    /// can only change its own mask; install the guard before the program
    /// creates threads that block every signal.)
    #[error("threads {0:?} block SIGSYS; a guard trap there would kill the process")]
    SigsysBlocked(Vec<i32>),
}

/// Options of [`install_with`].
#[derive(Clone, Debug)]
pub struct GuardConfig {
    /// When calls that reach memory through pointers in memory are trapped.
    pub indirect: IndirectPolicy,
    /// Keep SIGSYS handled and unblocked by trapping `rt_sigaction` and
    /// `rt_sigprocmask` (see the crate docs).
    pub protect_sigsys: bool,
    /// Where to put the trampoline's `syscall` instruction (a page the
    /// caller reserved, the same address in every process that uses the
    /// guard: see `trampoline`), so that filters inherited through `execve`
    /// allow it too; `None`: in the library's own text.
    pub gate: Option<usize>,
}

impl Default for GuardConfig {
    /// `FromCode(the C library's text)` (or `Always` if it cannot be
    /// found), with the signal protection.
    fn default() -> Self {
        let ranges = filter::code_ranges_of_libc();
        GuardConfig {
            indirect: if ranges.is_empty() {
                IndirectPolicy::Always
            } else {
                IndirectPolicy::FromCode(ranges)
            },
            protect_sigsys: true,
            gate: None,
        }
    }
}

/// What [`install`] set up.
#[derive(Clone, Debug)]
pub struct GuardInfo {
    /// The arena.
    pub arena: Range<usize>,
    /// Length of the installed filter, in BPF instructions.
    pub filter_len: usize,
    /// The instruction pointer the filter allows (after the trampoline's
    /// `syscall`).
    pub trampoline_ip: usize,
    /// The policy for indirect calls.
    pub indirect: IndirectPolicy,
    /// Whether the signal protection is on.
    pub protect_sigsys: bool,
}

/// Installs the guard with the default [`GuardConfig`].
pub fn install(arena: Range<usize>, pinner: &'static dyn Pinner) -> Result<GuardInfo, GuardError> {
    install_with(arena, pinner, GuardConfig::default())
}

/// Installs the guard for `arena`: the SIGSYS handler, then the filter on
/// every thread. Once per process; cannot be undone.
pub fn install_with(
    arena: Range<usize>,
    pinner: &'static dyn Pinner,
    config: GuardConfig,
) -> Result<GuardInfo, GuardError> {
    filter::check_arena(&arena)?;
    if let Some(gate) = config.gate {
        // SAFETY: the caller reserved the page for the gate; no filter is
        // in yet, so nothing runs the trampoline through it.
        unsafe { trampoline::map_gate(gate) }.map_err(GuardError::Gate)?;
    }
    let spec = filter::FilterSpec {
        arena: arena.clone(),
        trampoline_ip: trampoline::syscall_return_address(),
        indirect: config.indirect.clone(),
        protect_sigsys: config.protect_sigsys,
    };
    let prog = filter::build(&spec)?;
    let state = state::State {
        lo: arena.start,
        hi: arena.end,
        pinner,
        trampoline_ret: spec.trampoline_ip,
        protect_sigsys: config.protect_sigsys,
    };
    // Threads being created block every signal until they start; wait a
    // little for those.
    let mut blocked = threads_blocking_sigsys();
    for _ in 0..50 {
        if blocked.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(4));
        blocked = threads_blocking_sigsys();
    }
    if !blocked.is_empty() {
        return Err(GuardError::SigsysBlocked(blocked));
    }
    if state::STATE.set(state).is_err() {
        return Err(GuardError::AlreadyInstalled);
    }
    handler::install_handler().map_err(GuardError::Sigaction)?;
    // A program started by a program under the guard inherits its filter
    // (filters survive execve): with the same arena and gate it is this
    // very filter, and a second would only double the cost of every system
    // call. A call with an arena pointer tells: trapped means inherited.
    if config.gate.is_some() && inherited_filter_traps(&arena) {
        return Ok(GuardInfo {
            arena,
            filter_len: 0,
            trampoline_ip: spec.trampoline_ip,
            indirect: config.indirect,
            protect_sigsys: config.protect_sigsys,
        });
    }
    filter::install(&prog)?;
    Ok(GuardInfo {
        arena,
        filter_len: prog.len(),
        trampoline_ip: spec.trampoline_ip,
        indirect: config.indirect,
        protect_sigsys: config.protect_sigsys,
    })
}

/// Whether a filter already in place traps a call with an arena pointer
/// (the handler, installed first, serves it: `read(-1, arena, 0)` then
/// fails with EBADF either way).
fn inherited_filter_traps(arena: &Range<usize>) -> bool {
    let before = counters::counters().traps;
    // SAFETY: a read of 0 bytes from fd -1: EBADF, touching no memory.
    unsafe {
        libc::syscall(
            libc::SYS_read,
            -1,
            arena.start + common::PAGE_SIZE * 16,
            0usize,
        )
    };
    counters::counters().traps > before
}

/// The threads of this process whose signal mask blocks SIGSYS (from
/// `/proc/self/task/*/status`). Not async-signal-safe.
pub fn threads_blocking_sigsys() -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        let Ok(status) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        let blocked = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0);
        if blocked & (1 << (libc::SIGSYS - 1)) != 0 {
            if let Some(tid) = t.file_name().to_str().and_then(|n| n.parse().ok()) {
                out.push(tid);
            }
        }
    }
    out
}

/// The installed guard's arena, if any.
pub fn arena() -> Option<Range<usize>> {
    state::STATE.get().map(|s| s.lo..s.hi)
}
