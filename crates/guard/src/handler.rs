//! The SIGSYS handler: it re-issues a trapped system call with its buffers
//! pinned (`pins`), read through `proc_mem`, and emulates the signal calls
//! the signal protection traps.
//!
//! Everything reachable from [`on_sigsys`] is async-signal-safe: no heap,
//! no locks of this crate (the `Pinner` is the caller's, see its contract),
//! no std I/O, no panics (no unchecked indexing, no `unwrap`); memory of the
//! program is read and written only through `process_vm_readv`/`writev`
//! issued via the trampoline (a bad pointer gives `EFAULT`, as the kernel
//! would, instead of a SIGSEGV in the handler). `errno` is saved and
//! restored.

use crate::counters::{self, bump};
use crate::filter::{AUDIT_ARCH_X86_64, TRAP_DATA};
use crate::nr;
use crate::pins::PinSet;
use crate::proc_mem::ProcMem;
use crate::state::{State, STATE};
use crate::syscalls::{for_each_buffer, Coverage, UserMem};
use crate::trampoline::syscall6;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

// --- siginfo for SIGSYS (x86_64): signo, errno, code, pad, then
// --- void *call_addr; int syscall; unsigned arch.
#[repr(C)]
struct SigsysInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    call_addr: usize,
    syscall: i32,
    arch: u32,
}

const SYS_SECCOMP: i32 = 1;
const SA_SIGINFO: u64 = 4;
const SA_RESTART: u64 = 0x1000_0000;
const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;
const SA_RESTORER: u64 = 0x0400_0000;
const SIGSYS_BIT: u64 = 1 << (libc::SIGSYS - 1);

/// Signals no mask the program sets may block: SIGSYS, and what
/// [`keep_unblocked`] adds (SIGBUS, where page faults raise it).
static KEPT_UNBLOCKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(SIGSYS_BIT);

fn kept_unblocked() -> u64 {
    KEPT_UNBLOCKED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Keeps `sig` (1–64) out of every mask the guard sets for the program
/// (emulated `rt_sigprocmask`, the `sa_mask` of an emulated
/// `rt_sigaction`), as it keeps SIGSYS: a thread blocking a synchronous
/// signal dies when it is raised.
pub fn keep_unblocked(sig: libc::c_int) {
    if (1..=64).contains(&sig) {
        KEPT_UNBLOCKED.fetch_or(1 << (sig - 1), std::sync::atomic::Ordering::Relaxed);
    }
}
const UNBLOCKABLE: u64 = (1 << (libc::SIGKILL - 1)) | (1 << (libc::SIGSTOP - 1));

/// The kernel's `struct sigaction` on x86_64 (what `rt_sigaction` copies).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct KSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

// --- The program's own SIGSYS disposition ("chain"), in a ring of slots:
// a writer fills the next slot then publishes its index, so readers (the
// handler) never see a half-written entry and never wait.
const CHAIN_SLOTS: usize = 8;
struct ChainSlot {
    handler: AtomicUsize,
    flags: AtomicU64,
    restorer: AtomicUsize,
    mask: AtomicU64,
}
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: ChainSlot = ChainSlot {
    handler: AtomicUsize::new(0),
    flags: AtomicU64::new(0),
    restorer: AtomicUsize::new(0),
    mask: AtomicU64::new(0),
};
static CHAIN: [ChainSlot; CHAIN_SLOTS] = [EMPTY_SLOT; CHAIN_SLOTS];
static CHAIN_CURRENT: AtomicUsize = AtomicUsize::new(0);
static CHAIN_NEXT: AtomicUsize = AtomicUsize::new(1);

fn chain_get() -> KSigaction {
    let slot = &CHAIN[CHAIN_CURRENT.load(Ordering::Acquire) % CHAIN_SLOTS];
    KSigaction {
        handler: slot.handler.load(Ordering::Relaxed),
        flags: slot.flags.load(Ordering::Relaxed),
        restorer: slot.restorer.load(Ordering::Relaxed),
        mask: slot.mask.load(Ordering::Relaxed),
    }
}

fn chain_set(act: KSigaction) {
    let i = CHAIN_NEXT.fetch_add(1, Ordering::Relaxed) % CHAIN_SLOTS;
    let slot = &CHAIN[i];
    slot.handler.store(act.handler, Ordering::Relaxed);
    slot.flags.store(act.flags, Ordering::Relaxed);
    slot.restorer.store(act.restorer, Ordering::Relaxed);
    slot.mask.store(act.mask, Ordering::Relaxed);
    CHAIN_CURRENT.store(i, Ordering::Release);
}

fn ksig_from_libc(act: &libc::sigaction) -> KSigaction {
    // SAFETY: sigset_t is at least 8 bytes; its first word holds signals
    // 1-64 as the kernel's sigset does.
    let mask = unsafe { *(&act.sa_mask as *const libc::sigset_t as *const u64) };
    KSigaction {
        handler: act.sa_sigaction,
        flags: act.sa_flags as u32 as u64,
        restorer: act.sa_restorer.map_or(0, |f| f as usize),
        mask,
    }
}

fn libc_from_ksig(k: &KSigaction) -> libc::sigaction {
    // SAFETY: libc::sigaction is plain data; all-zero is a valid value
    // (SIG_DFL, empty mask, no flags, no restorer).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = k.handler;
    act.sa_flags = k.flags as libc::c_int;
    // SAFETY: a non-zero restorer is a function address the program (its C
    // library) registered; Option<fn> has the null-pointer niche.
    act.sa_restorer = unsafe { std::mem::transmute::<usize, Option<extern "C" fn()>>(k.restorer) };
    // SAFETY: as in ksig_from_libc; the rest of the set stays empty.
    unsafe { *(&mut act.sa_mask as *mut libc::sigset_t as *mut u64) = k.mask };
    act
}

/// Registers `act` as the program's SIGSYS disposition: the guard's handler
/// stays installed and passes SIGSYS signals that are not its own traps to
/// it. Returns the previous one. The LD_PRELOAD library's `sigaction` and
/// `signal` hooks call this for SIGSYS instead of the real call (with the
/// filter's signal protection on, the program's own `rt_sigaction(SIGSYS)`
/// system calls are trapped and land here too).
pub fn chain_handler_for_program(act: Option<&libc::sigaction>) -> libc::sigaction {
    let old = libc_from_ksig(&chain_get());
    if let Some(act) = act {
        chain_set(ksig_from_libc(act));
    }
    old
}

/// Removes SIGSYS from a signal set that is about to be blocked (for the
/// preload library's `sigprocmask`/`pthread_sigmask`/`sigaction` hooks): a
/// guard trap while SIGSYS is blocked makes the kernel reset the handler
/// and kill the process.
pub fn sanitize_sigset(set: &mut libc::sigset_t) {
    // SAFETY: `set` is a valid sigset; sigdelset only clears a bit.
    unsafe {
        libc::sigdelset(set, libc::SIGSYS);
        if kept_unblocked() & (1 << (libc::SIGBUS - 1)) != 0 {
            libc::sigdelset(set, libc::SIGBUS);
        }
    }
}

/// Installs the SIGSYS handler, keeping any previous handler as the
/// program's chained handler.
///
/// Flags: `SA_SIGINFO` (the trap's details); `SA_NODEFER`, so SIGSYS stays
/// unblocked inside the handler: a trap nested in it (from a program signal
/// handler that runs while the re-issued call blocks) is handled instead of
/// killing the process; `SA_RESTART`, which only matters for a SIGSYS sent
/// with `kill` during a blocking call; no `SA_ONSTACK`: the handler runs
/// on the thread's stack at the point of a system call (never a stack
/// overflow), and needs about 20 KiB, more than many alternate stacks have.
/// It is installed with the raw system call and the guard's own
/// `rt_sigreturn` restorer, so that a `sigaction` hook of the LD_PRELOAD
/// library does not see it.
/// The mask is empty, so other signals can interrupt the re-issued call
/// exactly as they would have interrupted the original one.
pub(crate) fn install_handler() -> Result<(), std::io::Error> {
    let ours = KSigaction {
        handler: on_sigsys as *const () as usize,
        flags: SA_SIGINFO | SA_NODEFER | SA_RESTART | SA_RESTORER,
        restorer: crate::trampoline::restorer_address(),
        mask: 0,
    };
    let mut old = KSigaction::default();
    // SAFETY: rt_sigaction reads `ours` and writes `old`, both 32-byte
    // kernel sigactions on this stack.
    let rc = unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                libc::SIGSYS as u64,
                &ours as *const KSigaction as u64,
                &mut old as *mut KSigaction as u64,
                8,
                0,
                0,
            ],
        )
    };
    if rc < 0 {
        return Err(std::io::Error::from_raw_os_error(-rc as i32));
    }
    if old.handler != ours.handler {
        chain_set(old);
    }
    Ok(())
}

/// Issues system call `nr` with its arena buffers pinned and faulted in:
/// what the SIGSYS handler does for a trapped call, also usable by library
/// hooks before calling the kernel (e.g. the preload library's `execve`,
/// `writev` or `posix_spawn` wrappers). Returns the raw result (`-errno`).
/// Without an installed guard, the call is just issued.
///
/// # Safety
/// As for [`crate::trampoline::syscall6`]; also, `nr` must not be a call
/// that cannot return into this frame (`clone` with a new stack, `vfork`).
pub unsafe fn guarded_syscall(nr: i64, args: [u64; 6]) -> isize {
    match STATE.get() {
        // SAFETY: forwarded from the caller.
        Some(st) => unsafe { guarded(st, nr, &args) },
        // SAFETY: forwarded from the caller.
        None => unsafe { syscall6(nr, args) },
    }
}

/// # Safety
/// As for `guarded_syscall`.
unsafe fn guarded(st: &State, nr: i64, args: &[u64; 6]) -> isize {
    bump(&counters::LIVE.guarded_calls);
    if (nr == nr::EXECVE || nr == nr::EXECVEAT) && st.pinner.in_vfork_child() {
        // SAFETY: forwarded from the caller; `nr` is an execve.
        return unsafe { crate::exec_copy::execve(st, nr, args) };
    }
    // SAFETY: forwarded from the caller.
    if let Some(ret) = unsafe { crate::piecewise::file_io(st, nr, args) } {
        return ret;
    }
    let mem = ProcMem::new();
    let mut pins = PinSet::new(st);
    let coverage = for_each_buffer(nr, args, &mem, &mut |b| pins.buffer(b, &mem));
    match coverage {
        Coverage::Known => {}
        Coverage::Partial => bump(&counters::LIVE.partial),
        Coverage::Unknown => counters::note_unknown(nr),
    }
    // SAFETY: the program's own arguments, as it would have issued them.
    let ret = unsafe { syscall6(nr, *args) };
    pins.release();
    ret
}

/// `rt_sigprocmask` inside a signal handler would be undone by
/// `rt_sigreturn`, which restores the frame's mask: emulate it on the
/// frame's `uc_sigmask`, keeping SIGSYS unblocked.
fn emulate_sigprocmask(st: &State, uc: &mut libc::ucontext_t, args: &[u64; 6]) -> isize {
    let (how, set, oset, size) = (args[0] as i32, args[1] as usize, args[2] as usize, args[3]);
    if size != 8 {
        return -(libc::EINVAL as isize);
    }
    let mask_ptr = &mut uc.uc_sigmask as *mut libc::sigset_t as *mut u64;
    // SAFETY: uc_sigmask is at least 8 bytes; its first word is the
    // kernel's mask, restored by rt_sigreturn.
    let old = unsafe { mask_ptr.read() };
    let mem = ProcMem::new();
    let mut pins = PinSet::new(st);
    let mut ret = 0;
    let mut new = old;
    if set != 0 {
        pins.range(set, 8, false);
        match mem.read_u64(set) {
            None => ret = -(libc::EFAULT as isize),
            Some(s) => match how {
                libc::SIG_BLOCK => new = old | s,
                libc::SIG_UNBLOCK => new = old & !s,
                libc::SIG_SETMASK => new = s,
                _ => ret = -(libc::EINVAL as isize),
            },
        }
    }
    if ret == 0 {
        new &= !UNBLOCKABLE;
        if st.protect_sigsys && new & kept_unblocked() != 0 {
            new &= !kept_unblocked();
            bump(&counters::LIVE.sigmask_fixes);
        }
        // SAFETY: as above.
        unsafe { mask_ptr.write(new) };
        if oset != 0 {
            pins.range(oset, 8, true);
            if !mem.write(oset, &old.to_ne_bytes()) {
                ret = -(libc::EFAULT as isize);
            }
        }
    }
    pins.release();
    ret
}

fn read_ksigaction(mem: &ProcMem, at: usize) -> Option<KSigaction> {
    Some(KSigaction {
        handler: mem.read_u64(at)? as usize,
        flags: mem.read_u64(at.wrapping_add(8))?,
        restorer: mem.read_u64(at.wrapping_add(16))? as usize,
        mask: mem.read_u64(at.wrapping_add(24))?,
    })
}

fn ksigaction_bytes(k: &KSigaction) -> [u8; 32] {
    let mut out = [0u8; 32];
    let words = [k.handler as u64, k.flags, k.restorer as u64, k.mask];
    for (chunk, w) in out.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    out
}

/// `rt_sigaction` with a new action, trapped by the signal protection:
/// SIGSYS goes to the chain (our handler stays), other signals get SIGSYS
/// removed from their `sa_mask`.
fn emulate_sigaction(st: &State, args: &[u64; 6]) -> isize {
    let (sig, act, oact, size) = (args[0] as i32, args[1] as usize, args[2] as usize, args[3]);
    if size != 8 || !st.protect_sigsys {
        // SAFETY: the program's own arguments.
        return unsafe { guarded(st, nr::RT_SIGACTION, args) };
    }
    let mem = ProcMem::new();
    let mut pins = PinSet::new(st);
    let mut ret: isize = 0;
    let new = if act != 0 {
        pins.range(act, 32, false);
        let n = read_ksigaction(&mem, act);
        if n.is_none() {
            ret = -(libc::EFAULT as isize);
        }
        n
    } else {
        None
    };
    if ret == 0 && sig == libc::SIGSYS {
        bump(&counters::LIVE.sigsys_actions);
        let old = chain_get();
        if oact != 0 {
            pins.range(oact, 32, true);
            if !mem.write(oact, &ksigaction_bytes(&old)) {
                ret = -(libc::EFAULT as isize);
            }
        }
        if ret == 0 {
            if let Some(n) = new {
                chain_set(n);
            }
        }
    } else if ret == 0 {
        let mut local = new.unwrap_or_default();
        if local.mask & kept_unblocked() != 0 {
            local.mask &= !kept_unblocked();
            bump(&counters::LIVE.sigmask_fixes);
        }
        if oact != 0 {
            pins.range(oact, 32, true);
        }
        let act_arg = if new.is_some() {
            &local as *const KSigaction as u64
        } else {
            0
        };
        // SAFETY: the kernel reads the local copy of the action and writes
        // the program's `oact` (pinned above if in the arena).
        ret = unsafe {
            syscall6(
                nr::RT_SIGACTION,
                [sig as u64, act_arg, oact as u64, 8, 0, 0],
            )
        };
    }
    pins.release();
    ret
}

/// Passes a SIGSYS that is not the guard's to the program's handler, or
/// applies the default action (core dump) if it has none.
///
/// # Safety
/// Called from the signal handler with its own arguments.
unsafe fn chain(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uctx: *mut libc::c_void,
    seccomp: bool,
) {
    let act = chain_get();
    match act.handler {
        h if h == libc::SIG_IGN && !seccomp => {}
        h if h == libc::SIG_DFL || h == libc::SIG_IGN => die(),
        h => {
            bump(&counters::LIVE.chained);
            if act.flags & SA_RESETHAND != 0 {
                chain_set(KSigaction::default());
            }
            let mut saved: u64 = 0;
            let block = act.mask & !kept_unblocked();
            if block != 0 {
                // SAFETY: rt_sigprocmask reads and writes these 8-byte sets.
                unsafe {
                    syscall6(
                        nr::RT_SIGPROCMASK,
                        [
                            libc::SIG_BLOCK as u64,
                            &block as *const u64 as u64,
                            &mut saved as *mut u64 as u64,
                            8,
                            0,
                            0,
                        ],
                    )
                };
            }
            if act.flags & SA_SIGINFO != 0 {
                // SAFETY: the program registered this as an SA_SIGINFO
                // handler; it receives our own arguments.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(h) };
                f(sig, info, uctx);
            } else {
                // SAFETY: the program registered this as a plain handler.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
                f(sig);
            }
            if block != 0 {
                // SAFETY: restores the mask saved above.
                unsafe {
                    syscall6(
                        nr::RT_SIGPROCMASK,
                        [
                            libc::SIG_SETMASK as u64,
                            &saved as *const u64 as u64,
                            0,
                            8,
                            0,
                            0,
                        ],
                    )
                };
            }
        }
    }
}

/// SIGSYS with the default action: reset it, make sure it is unblocked and
/// raise it; the process dumps core as it would have without the guard.
fn die() {
    let dfl = KSigaction::default();
    let unblock: u64 = SIGSYS_BIT;
    // SAFETY: raw calls with pointers to locals; tgkill signals this thread.
    unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                libc::SIGSYS as u64,
                &dfl as *const KSigaction as u64,
                0,
                8,
                0,
                0,
            ],
        );
        syscall6(
            nr::RT_SIGPROCMASK,
            [
                libc::SIG_UNBLOCK as u64,
                &unblock as *const u64 as u64,
                0,
                8,
                0,
                0,
            ],
        );
        let pid = syscall6(nr::GETPID, [0; 6]);
        let tid = syscall6(nr::GETTID, [0; 6]);
        syscall6(
            nr::TGKILL,
            [pid as u64, tid as u64, libc::SIGSYS as u64, 0, 0, 0],
        );
        // Not reached if the default action ran; exit like a SIGSYS death.
        syscall6(nr::EXIT_GROUP, [128 + libc::SIGSYS as u64, 0, 0, 0, 0, 0]);
    }
}

const GREG_RDI: usize = libc::REG_RDI as usize;
const GREG_RSI: usize = libc::REG_RSI as usize;
const GREG_RDX: usize = libc::REG_RDX as usize;
const GREG_R10: usize = libc::REG_R10 as usize;
const GREG_R8: usize = libc::REG_R8 as usize;
const GREG_R9: usize = libc::REG_R9 as usize;
const GREG_RAX: usize = libc::REG_RAX as usize;

/// The SIGSYS handler.
extern "C" fn on_sigsys(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    // SAFETY: __errno_location returns this thread's errno.
    let errno_ptr = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved_errno = unsafe { *errno_ptr };
    // SAFETY: the kernel passes a valid siginfo (SA_SIGINFO); the SIGSYS
    // layout is read through our repr(C) view of it.
    let si = unsafe { &*(info as *const SigsysInfo) };
    let seccomp = si.code == SYS_SECCOMP;
    let st = STATE.get();
    let ours = seccomp && si.errno == TRAP_DATA as i32 && si.arch == AUDIT_ARCH_X86_64;
    match (ours, st, uctx.is_null()) {
        (true, Some(st), false) => {
            bump(&counters::LIVE.traps);
            // SAFETY: the kernel passes this thread's interrupted context.
            let uc = unsafe { &mut *(uctx as *mut libc::ucontext_t) };
            let ret = if si.call_addr == st.trampoline_ret {
                // A filter that does not know our trampoline (inherited
                // across execve): re-issuing would trap again forever.
                bump(&counters::LIVE.foreign_traps);
                -(libc::ENOSYS as isize)
            } else {
                let g = &uc.uc_mcontext.gregs;
                let get = |i: usize| g.get(i).copied().unwrap_or(0) as u64;
                let args = [
                    get(GREG_RDI),
                    get(GREG_RSI),
                    get(GREG_RDX),
                    get(GREG_R10),
                    get(GREG_R8),
                    get(GREG_R9),
                ];
                match si.syscall as i64 {
                    nr::RT_SIGPROCMASK => emulate_sigprocmask(st, uc, &args),
                    nr::RT_SIGACTION => emulate_sigaction(st, &args),
                    // SAFETY: the program's own call, re-issued as it was.
                    n => unsafe { guarded(st, n, &args) },
                }
            };
            if let Some(rax) = uc.uc_mcontext.gregs.get_mut(GREG_RAX) {
                *rax = ret as i64;
            }
        }
        // SAFETY: our own arguments, passed on.
        _ => unsafe { chain(sig, info, uctx, seccomp) },
    }
    // SAFETY: as above.
    unsafe { *errno_ptr = saved_errno };
}

/// Whether the guard's handler is SIGSYS's current disposition.
pub fn handler_installed() -> bool {
    let mut cur = KSigaction::default();
    // SAFETY: query only; the kernel writes `cur`.
    let rc = unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                libc::SIGSYS as u64,
                0,
                &mut cur as *mut KSigaction as u64,
                8,
                0,
                0,
            ],
        )
    };
    rc == 0 && cur.handler == on_sigsys as *const () as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_slots_and_sigset_helpers() {
        // SAFETY: plain data.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = 0x1234;
        act.sa_flags = libc::SA_SIGINFO;
        // SAFETY: sigaddset on a local set.
        unsafe { libc::sigaddset(&mut act.sa_mask, libc::SIGUSR1) };
        let old = chain_handler_for_program(Some(&act));
        let now = chain_handler_for_program(None);
        assert_eq!(now.sa_sigaction, 0x1234);
        assert_eq!(now.sa_flags, libc::SA_SIGINFO);
        // SAFETY: sigismember on a local set.
        assert_eq!(unsafe { libc::sigismember(&now.sa_mask, libc::SIGUSR1) }, 1);
        chain_handler_for_program(Some(&old));
        // SAFETY: as above.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::sigfillset(&mut set) };
        sanitize_sigset(&mut set);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sigismember(&set, libc::SIGSYS) }, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sigismember(&set, libc::SIGINT) }, 1);
    }
}
