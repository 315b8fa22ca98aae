//! SIGBUS, where page faults are served in the faulting thread
//! (`runtime::in_thread`): the library owns the signal's disposition, and
//! the program keeps its own view of it.
//!
//! **How.** Before the runtime starts, [`take_over`] records the program's
//! SIGBUS disposition and installs [`on_sigbus`]. A SIGBUS that is a
//! region page's fault is served there and the access is made again; any
//! other (a truncated file mapping, `kill -BUS`) goes to the program's
//! disposition: its handler (with its `sa_mask` and `SA_RESETHAND`), or
//! the default action through the complete-core-dump handler
//! ([`crate::core_dump`]). The `sigaction` and `signal` hooks record the
//! program's new SIGBUS disposition instead of installing it, and report
//! the program's own back to it.
//!
//! **Kept unblocked.** A thread that blocks SIGBUS would die at its first
//! fault (the kernel resets a blocked synchronous signal to its default):
//! while the library owns SIGBUS, the mask hooks and the syscall guard's
//! emulated `rt_sigprocmask` leave it out of every mask a program sets,
//! and the `sigaction` hooks leave it out of every handler's `sa_mask`.
//!
//! **Async-signal safety.** The handler reads atomics and makes system
//! calls; the serving itself is the runtime's (see `runtime::in_thread`).

use libc::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

/// The library owns SIGBUS's disposition.
static OWNED: AtomicBool = AtomicBool::new(false);

/// The program's SIGBUS disposition (a handler address or
/// `SIG_DFL`/`SIG_IGN`, its flags, its mask's first 64 signals).
static PROGRAM_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
static PROGRAM_FLAGS: AtomicI32 = AtomicI32::new(0);
static PROGRAM_MASK: AtomicU64 = AtomicU64::new(0);

const SIGBUS_BIT: u64 = 1 << (libc::SIGBUS - 1);
const SIGSYS_BIT: u64 = 1 << (libc::SIGSYS - 1);

/// Whether the library owns SIGBUS (faults are served in-thread).
pub fn owned() -> bool {
    OWNED.load(Ordering::Acquire)
}

fn mask_bits(set: &libc::sigset_t) -> u64 {
    // SAFETY: sigset_t is at least 8 bytes; its first word holds signals
    // 1–64 on x86_64.
    unsafe { *(set as *const libc::sigset_t as *const u64) }
}

fn record(act: &libc::sigaction) {
    PROGRAM_MASK.store(mask_bits(&act.sa_mask), Ordering::Relaxed);
    PROGRAM_FLAGS.store(act.sa_flags, Ordering::Relaxed);
    PROGRAM_HANDLER.store(act.sa_sigaction, Ordering::Release);
}

fn recorded() -> libc::sigaction {
    // SAFETY: all-zero is a valid sigaction.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = PROGRAM_HANDLER.load(Ordering::Acquire);
    act.sa_flags = PROGRAM_FLAGS.load(Ordering::Relaxed);
    // SAFETY: as in `mask_bits`, for writing.
    unsafe {
        *(&mut act.sa_mask as *mut libc::sigset_t as *mut u64) =
            PROGRAM_MASK.load(Ordering::Relaxed)
    };
    act
}

/// Takes SIGBUS over for in-thread fault service: records the program's
/// disposition, installs ours, and tells the runtime and the guard.
/// Called once, before the runtime starts.
pub fn take_over() {
    let Some(real) = crate::core_dump::next_sigaction() else {
        return;
    };
    // SAFETY: all-zero is a valid sigaction to be written.
    let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: all-zero is a valid sigaction.
    let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction = on_sigbus as *const () as usize;
    // SA_NODEFER: a fault of the handler itself is still delivered (and
    // fails loudly) rather than killing the process unexplained.
    ours.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
    // SAFETY: glibc's sigaction with our valid actions; the mask is ours.
    let rc = unsafe {
        runtime::in_thread::block_async_signals(&mut ours.sa_mask);
        if real(libc::SIGBUS, std::ptr::null(), &mut now) != 0 {
            return;
        }
        record(&now);
        real(libc::SIGBUS, &ours, std::ptr::null_mut())
    };
    if rc == 0 {
        OWNED.store(true, Ordering::Release);
        runtime::in_thread::handled_by_caller();
        guard::keep_unblocked(libc::SIGBUS);
    }
}

/// The program's `sigaction` of SIGBUS while the library owns it: recorded,
/// not installed; the previous one reported is the program's own. `None`:
/// not ours to handle.
///
/// # Safety
/// `act` and `old` are null or valid sigactions, as for `sigaction(2)`.
pub unsafe fn program_sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> Option<c_int> {
    if sig != libc::SIGBUS || !owned() {
        return None;
    }
    let prev = recorded();
    // SAFETY: the caller's `act` is null or valid.
    if let Some(a) = unsafe { act.as_ref() } {
        record(a);
    }
    if !old.is_null() {
        // SAFETY: the caller's `old` is valid for a write.
        unsafe { *old = prev };
    }
    Some(0)
}

/// `act` with SIGBUS taken out of its `sa_mask` where the library owns
/// SIGBUS (a handler that blocks it would die at a region fault inside it);
/// `act` itself where nothing changes.
///
/// # Safety
/// `act` is null or a valid sigaction.
pub unsafe fn kept_out_of_mask(
    act: *const libc::sigaction,
    copy: &mut libc::sigaction,
) -> *const libc::sigaction {
    if act.is_null() || !owned() {
        return act;
    }
    // SAFETY: the caller's valid `act`; `copy` is ours.
    unsafe {
        if libc::sigismember(&(*act).sa_mask, libc::SIGBUS) != 1 {
            return act;
        }
        *copy = *act;
        libc::sigdelset(&mut copy.sa_mask, libc::SIGBUS);
    }
    copy
}

extern "C" fn on_sigbus(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: this handler's own arguments.
    if unsafe { runtime::in_thread::serve_signal(info, ctx) } {
        return;
    }
    let act = recorded();
    // SAFETY: the kernel's siginfo for this signal (or null).
    let sent = !info.is_null() && unsafe { (*info).si_code } <= 0;
    match act.sa_sigaction {
        // Sent by `kill` or `tgkill`, and ignored: nothing to do.
        libc::SIG_IGN if sent => {}
        // The default action (a core dump, made complete first); a fault
        // cannot be ignored either.
        libc::SIG_DFL | libc::SIG_IGN => crate::core_dump::on_core_signal(sig, info, ctx),
        h => {
            if act.sa_flags & libc::SA_RESETHAND != 0 {
                PROGRAM_HANDLER.store(libc::SIG_DFL, Ordering::Release);
            }
            // The mask the kernel would have set for the program's handler:
            // the interrupted one, its sa_mask, SIGBUS itself unless
            // SA_NODEFER; never SIGBUS or SIGSYS here, which must stay
            // deliverable. The interrupted mask comes back at sigreturn.
            if !ctx.is_null() {
                // SAFETY: an SA_SIGINFO handler's third argument.
                let interrupted =
                    mask_bits(unsafe { &(*(ctx as *const libc::ucontext_t)).uc_sigmask });
                let mask = (interrupted | mask_bits(&act.sa_mask)) & !(SIGBUS_BIT | SIGSYS_BIT);
                // SAFETY: rt_sigprocmask reads one 8-byte set.
                unsafe {
                    libc::syscall(
                        libc::SYS_rt_sigprocmask,
                        libc::SIG_SETMASK,
                        &mask as *const u64,
                        std::ptr::null_mut::<u64>(),
                        8usize,
                    )
                };
            }
            if act.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the program's handler, installed with SA_SIGINFO.
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(h) };
                f(sig, info, ctx);
            } else {
                // SAFETY: the program's plain handler.
                let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(h) };
                f(sig);
            }
        }
    }
}
