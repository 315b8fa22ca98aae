//! The program's own SIGSYS disposition ("chain") and the signals no mask
//! may block. The guard's handler stays installed; a SIGSYS that is not one
//! of its traps goes to the handler the program asked for ([`forward`]), or
//! kills the process as the default action would ([`die`]).
//!
//! Async-signal-safe: the disposition lives in a ring of atomic slots that
//! a reader never waits on.

use crate::counters::{self, bump};
use crate::nr;
use crate::trampoline::syscall6;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub(super) const SA_SIGINFO: u64 = 4;
pub(super) const SA_RESTART: u64 = 0x1000_0000;
pub(super) const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;
pub(super) const SA_RESTORER: u64 = 0x0400_0000;
const SIGSYS_BIT: u64 = 1 << (libc::SIGSYS - 1);

/// Signals no mask the program sets may block: SIGSYS, and what
/// [`keep_unblocked`] adds (SIGBUS, where page faults raise it).
static KEPT_UNBLOCKED: AtomicU64 = AtomicU64::new(SIGSYS_BIT);

pub(super) fn kept_unblocked() -> u64 {
    KEPT_UNBLOCKED.load(Ordering::Relaxed)
}

/// Keeps `sig` (1–64) out of every mask the guard sets for the program
/// (emulated `rt_sigprocmask`, the `sa_mask` of an emulated
/// `rt_sigaction`), as it keeps SIGSYS: a thread blocking a synchronous
/// signal dies when it is raised.
pub fn keep_unblocked(sig: libc::c_int) {
    if (1..=64).contains(&sig) {
        KEPT_UNBLOCKED.fetch_or(1 << (sig - 1), Ordering::Relaxed);
    }
}
pub(super) const UNBLOCKABLE: u64 = (1 << (libc::SIGKILL - 1)) | (1 << (libc::SIGSTOP - 1));

/// The kernel's `struct sigaction` on x86_64 (what `rt_sigaction` copies).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(super) struct KSigaction {
    pub(super) handler: usize,
    pub(super) flags: u64,
    pub(super) restorer: usize,
    pub(super) mask: u64,
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

pub(super) fn chain_get() -> KSigaction {
    let slot = &CHAIN[CHAIN_CURRENT.load(Ordering::Acquire) % CHAIN_SLOTS];
    KSigaction {
        handler: slot.handler.load(Ordering::Relaxed),
        flags: slot.flags.load(Ordering::Relaxed),
        restorer: slot.restorer.load(Ordering::Relaxed),
        mask: slot.mask.load(Ordering::Relaxed),
    }
}

pub(super) fn chain_set(act: KSigaction) {
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

/// Passes a SIGSYS that is not the guard's to the program's handler, or
/// applies the default action (core dump) if it has none.
///
/// # Safety
/// Called from the signal handler with its own arguments.
pub(super) unsafe fn forward(
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
