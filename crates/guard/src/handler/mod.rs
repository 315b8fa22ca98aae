//! The SIGSYS handler ([`on_sigsys`]) and its installation. A trap of the
//! guard's filter is served here: `reissue` issues the call again with its
//! buffers pinned (`pins`), `emulate` answers the `rt_sigprocmask` and
//! `rt_sigaction` calls the signal protection traps, and `chain` passes any
//! other SIGSYS to the program's own disposition.
//!
//! Everything reachable from [`on_sigsys`] is async-signal-safe: no heap,
//! no locks of this crate (the `Pinner` is the caller's, see its contract),
//! no std I/O, no panics (no unchecked indexing, no `unwrap`); memory of the
//! program is read and written only through `process_vm_readv`/`writev`
//! issued via the trampoline (a bad pointer gives `EFAULT`, as the kernel
//! would, instead of a SIGSEGV in the handler). `errno` is saved and
//! restored.

mod chain;
mod emulate;
mod reissue;

pub use chain::{chain_handler_for_program, keep_unblocked, sanitize_sigset};
pub use reissue::guarded_syscall;

use crate::counters::{self, bump};
use crate::filter::{AUDIT_ARCH_X86_64, TRAP_DATA};
use crate::nr;
use crate::state::STATE;
use crate::trampoline::syscall6;
use chain::{chain_set, KSigaction, SA_NODEFER, SA_RESTART, SA_RESTORER, SA_SIGINFO};

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
                    nr::RT_SIGPROCMASK => emulate::emulate_sigprocmask(st, uc, &args),
                    nr::RT_SIGACTION => emulate::emulate_sigaction(st, &args),
                    // SAFETY: the program's own call, re-issued as it was.
                    n => unsafe { reissue::guarded(st, n, &args) },
                }
            };
            if let Some(rax) = uc.uc_mcontext.gregs.get_mut(GREG_RAX) {
                *rax = ret as i64;
            }
        }
        // SAFETY: our own arguments, passed on.
        _ => unsafe { chain::forward(sig, info, uctx, seccomp) },
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
