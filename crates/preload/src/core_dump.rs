//! Complete core dumps: a program that dies of a signal whose default
//! action dumps core gets a core file with every page it wrote, the
//! swapped-out ones included (the kernel writes a page that is not mapped
//! as zeros, so without this a core file lies about most of a paged
//! program's memory).
//!
//! **How.** Once the runtime starts, every core-dumping signal whose
//! disposition is the default (`SIG_DFL`) gets [`on_core_signal`] instead;
//! the `sigaction` and `signal` hooks keep it there while the program's
//! own disposition is the default, pass any other disposition to the
//! kernel, and report `SIG_DFL` to a program that asks. On such a signal,
//! where a core file will be written (`RLIMIT_CORE` above 0, or a
//! `core_pattern` pipe, and the process dumpable), the handler wakes the
//! `uzswap/core` thread, which brings every swapped page back
//! ([`runtime::Runtime::bring_back_all`]: the regions become plain
//! memory), then restores `SIG_DFL` and raises the signal again: the
//! kernel dumps the program's memory as it is.
//!
//! **Async-signal safety.** The handler itself only reads atomics, makes
//! system calls (`futex`, `clock_gettime`, `rt_sigaction`, `tgkill`,
//! `getrlimit`, `prctl`) and never allocates or locks: the crashing thread
//! may hold any lock (malloc's, the runtime's). The work is the core
//! thread's, which may block on such a lock; the handler waits for it only
//! while it makes progress (a region done at least every
//! [`STALL_LIMIT_NS`]) and otherwise dumps what there is, saying so.
//! Where bringing everything back would not fit in the memory this machine
//! has available, nothing is brought back, and stderr says so.

use crate::libc_alloc as sys;
use crate::preload;
use libc::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Signals whose default action dumps core (`signal(7)`), but SIGSYS,
/// which the syscall guard owns (and chains).
const CORE_SIGNALS: [c_int; 9] = [
    libc::SIGQUIT,
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGSEGV,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// Longest the handler waits without progress from the core thread.
const STALL_LIMIT_NS: u64 = 10_000_000_000;

/// Per signal: our handler stands in for the program's `SIG_DFL`.
static OURS: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];
/// The process whose core thread runs (a forked child arms anew; a
/// `vfork` child has none).
static ARMED_PID: AtomicU32 = AtomicU32::new(0);
/// The core thread's id (a signal that lands on it brings nothing back).
static CORE_TID: AtomicI32 = AtomicI32::new(0);
/// `core_pattern` pipes the dump to a program (which ignores
/// `RLIMIT_CORE`).
static PIPE_PATTERN: AtomicBool = AtomicBool::new(false);
/// Futex words: a restore was asked for; it ended.
static REQUEST: AtomicU32 = AtomicU32::new(0);
static DONE: AtomicU32 = AtomicU32::new(0);
/// Regions brought back so far (the handler's sign of progress).
static PROGRESS: AtomicU64 = AtomicU64::new(0);
/// Only the first fatal signal brings pages back.
static DUMPING: AtomicBool = AtomicBool::new(false);
/// glibc's `sigaction`, looked up once.
static NEXT_SIGACTION: AtomicUsize = AtomicUsize::new(0);

pub type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;

/// glibc's `sigaction` (looked up once, at load: [`look_up`]).
pub fn next_sigaction() -> Option<SigactionFn> {
    match sys::next_symbol(&NEXT_SIGACTION, c"sigaction") {
        0 => None,
        // SAFETY: dlsym's non-null result for glibc's sigaction.
        f => Some(unsafe { std::mem::transmute::<usize, SigactionFn>(f) }),
    }
}

/// Looks up what the hooks forward to, outside any signal handler
/// (`dlsym` is not async-signal-safe).
pub fn look_up() {
    let _ = next_sigaction();
}

fn is_core_signal(sig: c_int) -> bool {
    CORE_SIGNALS.contains(&sig)
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Our disposition for `sig`.
fn our_action() -> libc::sigaction {
    // SAFETY: all-zero is a valid sigaction (SIG_DFL, empty mask).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_core_signal as *const () as usize;
    // SA_ONSTACK: a stack overflow's SIGSEGV runs on the program's
    // alternate stack, if it set one up.
    act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    act
}

/// Arms complete core dumps in this process (at the runtime's start, and
/// again in a forked child): the core thread, and our handler for every
/// core signal left at its default.
pub fn arm() {
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() } as u32;
    if ARMED_PID.load(Ordering::Acquire) == pid {
        return;
    }
    let Some(real) = next_sigaction() else {
        return;
    };
    PIPE_PATTERN.store(
        std::fs::read("/proc/sys/kernel/core_pattern").is_ok_and(|p| p.first() == Some(&b'|')),
        Ordering::Relaxed,
    );
    REQUEST.store(0, Ordering::Release);
    DONE.store(0, Ordering::Release);
    if std::thread::Builder::new()
        .name("uzswap/core".into())
        .spawn(core_thread)
        .is_err()
    {
        return;
    }
    ARMED_PID.store(pid, Ordering::Release);
    for sig in CORE_SIGNALS {
        if sig == libc::SIGBUS && crate::sigbus::owned() {
            // Ours already: its default action comes here through it.
            continue;
        }
        // SAFETY: all-zero is a valid sigaction to be written.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: glibc's sigaction; a query, then (for SIG_DFL) ours.
        unsafe {
            if real(sig, std::ptr::null(), &mut now) == 0
                && now.sa_sigaction == libc::SIG_DFL
                && real(sig, &our_action(), std::ptr::null_mut()) == 0
            {
                OURS[sig as usize].store(true, Ordering::Release);
            }
        }
    }
}

/// The program's `sigaction` of a core signal, while armed: `SIG_DFL`
/// keeps (or puts) ours in place, anything else goes to the kernel; the
/// previous disposition reads `SIG_DFL` where ours stood. `None`: not
/// ours to handle (not armed, or another signal).
///
/// # Safety
/// `act` and `old` are null or valid sigactions, as for `sigaction(2)`.
pub unsafe fn program_sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> Option<c_int> {
    if !is_core_signal(sig) || ARMED_PID.load(Ordering::Acquire) == 0 {
        return None;
    }
    let real = next_sigaction()?;
    let ours_before = OURS[sig as usize].load(Ordering::Acquire);
    // SAFETY: all-zero is a valid sigaction (SIG_DFL).
    let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's `act` is null or valid.
    let rc = match unsafe { act.as_ref() } {
        // SAFETY: a query into our own `prev`.
        None => unsafe { real(sig, std::ptr::null(), &mut prev) },
        Some(a) if a.sa_sigaction == libc::SIG_DFL => {
            // SAFETY: ours, a valid sigaction.
            let rc = unsafe { real(sig, &our_action(), &mut prev) };
            if rc == 0 {
                OURS[sig as usize].store(true, Ordering::Release);
            }
            rc
        }
        Some(a) => {
            // SAFETY: the program's own valid action.
            let rc = unsafe { real(sig, a, &mut prev) };
            if rc == 0 {
                OURS[sig as usize].store(false, Ordering::Release);
            }
            rc
        }
    };
    if rc == 0 && !old.is_null() {
        if ours_before {
            // SAFETY: all-zero is SIG_DFL with an empty mask.
            prev = unsafe { std::mem::zeroed() };
        }
        // SAFETY: the caller's `old` is valid for a write.
        unsafe { *old = prev };
    }
    Some(rc)
}

/// Whether the kernel will write a core file for this process.
fn dump_will_be_written() -> bool {
    // SAFETY: PR_GET_DUMPABLE takes no pointer.
    if unsafe { libc::prctl(libc::PR_GET_DUMPABLE) } <= 0 {
        return false;
    }
    if PIPE_PATTERN.load(Ordering::Relaxed) {
        return true;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes `lim`.
    unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut lim) == 0 && lim.rlim_cur > 0 }
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

/// Sleeps while `word` holds `seen`, at most `ns` (or for ever when 0).
fn futex_wait(word: &AtomicU32, seen: u32, ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    let timeout = if ns == 0 {
        std::ptr::null()
    } else {
        &ts as *const libc::timespec
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 with a relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            timeout,
        )
    };
}

fn write_stderr(msg: &[u8]) {
    // SAFETY: write(2) of a valid buffer.
    unsafe { libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len()) };
}

/// Asks the core thread to bring every page back, and waits while it makes
/// progress.
fn bring_back_for_dump() {
    PROGRESS.store(0, Ordering::Release);
    REQUEST.store(1, Ordering::Release);
    futex_wake(&REQUEST);
    let mut seen = 0;
    let mut deadline = now_ns() + STALL_LIMIT_NS;
    while DONE.load(Ordering::Acquire) == 0 {
        let now = now_ns();
        let p = PROGRESS.load(Ordering::Acquire);
        if p != seen {
            seen = p;
            deadline = now + STALL_LIMIT_NS;
        }
        if now >= deadline {
            write_stderr(b"uzswap: the core dump may lack paged memory: bringing it back made no progress for 10 s\n");
            return;
        }
        futex_wait(&DONE, 0, (deadline - now).min(100_000_000));
    }
}

/// The handler of a core signal that the program left at its default.
pub(crate) extern "C" fn on_core_signal(
    sig: c_int,
    _info: *mut libc::siginfo_t,
    _ctx: *mut libc::c_void,
) {
    // SAFETY: getpid cannot fail.
    let mine = ARMED_PID.load(Ordering::Acquire) == unsafe { libc::getpid() } as u32;
    if mine
        && gettid() != CORE_TID.load(Ordering::Acquire)
        && !DUMPING.swap(true, Ordering::AcqRel)
        && dump_will_be_written()
    {
        bring_back_for_dump();
    }
    // The default action, for real: the signal again, delivered once this
    // handler returns (it is blocked while the handler runs), or the
    // faulting instruction again.
    // The kernel's sigaction: SIG_DFL, no flags, no mask.
    let dfl = [0u64; 4];
    // SAFETY: rt_sigaction reads a 32-byte kernel sigaction; tgkill sends
    // a signal to this thread. Both are async-signal-safe system calls.
    unsafe {
        libc::syscall(libc::SYS_rt_sigaction, sig, dfl.as_ptr(), 0usize, 8usize);
        libc::syscall(libc::SYS_tgkill, libc::getpid(), gettid(), sig);
    }
}

/// The core thread: waits for a request, then brings every page back
/// (or says why not) and reports it done.
fn core_thread() {
    CORE_TID.store(gettid(), Ordering::Release);
    // Process-wide signals go to the program's threads, not here.
    // SAFETY: a full set minus the synchronous signals and SIGSYS (the
    // syscall guard's).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for s in [
            libc::SIGSYS,
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGTRAP,
        ] {
            libc::sigdelset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    while REQUEST.load(Ordering::Acquire) == 0 {
        futex_wait(&REQUEST, 0, 0);
    }
    if let Some(p) = preload::started() {
        let pages = p.runtime.swapped_pages();
        let need = pages as u64 * common::PAGE_SIZE as u64;
        let available = common::meminfo::bytes("MemAvailable").unwrap_or(0);
        if need > available / 10 * 9 {
            write_stderr(
                format!(
                    "uzswap: the core dump lacks {} MiB of paged memory: bringing it back needs more than the {} MiB this machine has available\n",
                    need >> 20,
                    available >> 20
                )
                .as_bytes(),
            );
        } else {
            p.runtime.bring_back_all(&mut || {
                PROGRESS.fetch_add(1, Ordering::AcqRel);
                futex_wake(&DONE);
            });
        }
    }
    DONE.store(1, Ordering::Release);
    futex_wake(&DONE);
}
