//! Faults served in the faulting thread (`FaultMode::InThread`).
//!
//! With `UFFD_FEATURE_SIGBUS` the kernel queues no fault event: the thread
//! that touched an unmapped (or write-protected) region page gets SIGBUS,
//! and its signal handler runs the protocol's operation itself
//! ([`MissingFault::served_in_thread`], [`WpFault::served_in_thread`]):
//! decompress, `UFFDIO_COPY`, return, and the access is made again. No
//! handler thread, no context switch, no wakeup: the round trip the
//! handler thread costs (the faulting thread sleeps, the handler wakes, the
//! handler wakes it back) is gone. A page another operation has in flight
//! is waited for on the state's condition variable, not in the kernel.
//!
//! **Plumbing.** [`serve_signal`] is the whole entry point: it reads the
//! fault address and the x86 page-fault error code (bit 0: the page was
//! present, so a write-protect fault; bit 1: a write) from the signal frame
//! and asks each runtime of the process, by the regions it has, whether the
//! page is its. The LD_PRELOAD library calls it from its own SIGBUS handler
//! (which passes other SIGBUS signals to the program's disposition); a
//! program using the runtime as a library gets [`install_handler`]'s, which
//! passes them to the handler that was there before.
//!
//! **What the handler may do.** It interrupts the faulting thread at the
//! access, so it may take only locks that no thread holds while it
//! touches a region page: the state lock and the store's locks are never
//! held across an access to region memory (runtime invariant 1), and the
//! runtime allocates from glibc's allocator (`__libc_malloc`), whose own
//! memory is never a region. While it serves, the thread is marked inside
//! the runtime ([`crate::reentry`]), so a compression library's `malloc`
//! goes to glibc too, never to a program allocator whose lock the thread may
//! hold. That mark ([`serving_here`]) and everything on the serving path
//! use no thread-local storage: glibc reaches a shared library's
//! thread-locals through the thread's dynamic thread vector, which it
//! allocates with the program's `malloc` and so may lie on a region page,
//! perhaps the very one being served. Blocking every other signal while it runs (the handler's
//! `sa_mask`) keeps a program's signal handler from touching region memory
//! in the middle of an operation. A runtime thread's own fault (the
//! evictor reading a victim discarded behind its back) is served the same
//! way, in that thread.
//!
//! **What it cannot do.** A thread that blocks SIGBUS dies at its first
//! fault (the kernel resets a blocked synchronous signal to its default):
//! the LD_PRELOAD library keeps SIGBUS out of the masks programs set, as
//! it does SIGSYS. The handler runs on the faulting thread's stack (or its
//! alternate stack, inside a program handler that runs there): about
//! 10 KiB.

use crate::pager::{Pager, Traced};
use crate::protocol::{MissingFault, PageState, WpFault, PAGE};
use crate::uffd::FaultMode;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Most runtimes a process may serve faults in-thread for at once.
const SLOTS: usize = 16;

/// The process's runtimes in `InThread` mode (pointers kept alive by the
/// `Runtime` that enlisted them until [`leave`]).
static RUNTIMES: [AtomicPtr<Pager>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
/// Signal handlers inside [`serve_signal`] now.
static SERVING: AtomicUsize = AtomicUsize::new(0);
/// Some handler of this process calls [`serve_signal`] (the LD_PRELOAD
/// library's, or [`install_handler`]'s).
static HANDLED: AtomicBool = AtomicBool::new(false);

/// Threads serving a fault now, by `pthread_self()` (0: free). Read by
/// [`serving_here`] without thread-local storage: a program thread's
/// dynamic thread vector may itself lie on the page being served (glibc
/// allocates it with the program's `malloc`), so the serving path must not
/// touch thread-locals that are reached through it.
static SERVING_THREADS: [AtomicUsize; 64] = [const { AtomicUsize::new(0) }; 64];

/// Whether the calling thread is serving a fault in its SIGBUS handler:
/// the LD_PRELOAD library's hooks then pass every call straight through,
/// as for the runtime's own threads. One atomic load where no thread
/// serves; no thread-local storage in any case.
pub fn serving_here() -> bool {
    if SERVING.load(Ordering::Relaxed) == 0 {
        return false;
    }
    // SAFETY: pthread_self reads the thread pointer; it cannot fail.
    let me = unsafe { libc::pthread_self() } as usize;
    SERVING_THREADS
        .iter()
        .any(|s| s.load(Ordering::Relaxed) == me)
}

/// Marks the calling thread serving until dropped (unmarked if all 64 slots
/// are taken: its hooks then use thread-locals, which are mapped unless
/// evicted meanwhile).
struct Marked(Option<&'static AtomicUsize>);

impl Marked {
    fn new() -> Self {
        // SAFETY: as in `serving_here`.
        let me = unsafe { libc::pthread_self() } as usize;
        Marked(SERVING_THREADS.iter().find(|s| {
            s.compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }))
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        if let Some(s) = self.0 {
            s.store(0, Ordering::Release);
        }
    }
}

/// Adds a runtime to those the SIGBUS handler serves.
pub(crate) fn enlist(inner: &Arc<Pager>) -> Result<(), crate::RuntimeError> {
    let p = Arc::as_ptr(inner) as *mut Pager;
    for slot in &RUNTIMES {
        if slot
            .compare_exchange(std::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Ok(());
        }
    }
    Err(crate::RuntimeError::Config(format!(
        "more than {SLOTS} runtimes serving faults in-thread"
    )))
}

/// Removes a runtime; if a handler may still be using it, its memory is
/// kept (one leaked reference) rather than freed under that handler.
pub(crate) fn leave(inner: &Arc<Pager>) {
    let p = Arc::as_ptr(inner) as *mut Pager;
    let mut found = false;
    for slot in &RUNTIMES {
        found |= slot
            .compare_exchange(p, std::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
    }
    if !found {
        return;
    }
    for _ in 0..10_000 {
        if SERVING.load(Ordering::SeqCst) == 0 {
            return;
        }
        std::thread::yield_now();
    }
    std::mem::forget(inner.clone());
}

/// Whether a SIGBUS handler of this process serves in-thread faults.
pub fn handled() -> bool {
    HANDLED.load(Ordering::Acquire)
}

/// Says that the caller's own SIGBUS handler calls [`serve_signal`] (the
/// LD_PRELOAD library, before its first runtime starts).
pub fn handled_by_caller() {
    HANDLED.store(true, Ordering::Release);
}

/// x86 page-fault error code bits, as the signal frame's `REG_ERR` holds.
const PF_PROT: i64 = 1 << 0;
const PF_WRITE: i64 = 1 << 1;
/// `si_code` of a SIGBUS from a page fault the kernel could not serve.
const BUS_ADRERR: i32 = 2;

/// Serves the fault behind a SIGBUS if it is a region page's; `false`: not
/// ours (pass it on).
///
/// # Safety
/// `info` and `ctx` are a SIGBUS handler's own arguments (`SA_SIGINFO`).
pub unsafe fn serve_signal(info: *const libc::siginfo_t, ctx: *const libc::c_void) -> bool {
    // The interrupted code's errno comes back whatever the serving's system
    // calls leave in it (`sort` saw EAGAIN from a fault inside `strcoll`
    // and took it for a failed comparison). glibc's errno is reached from
    // the thread pointer, not through the dynamic thread vector.
    // SAFETY: __errno_location returns this thread's errno, always valid.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    // SAFETY: the caller's guarantee.
    let served = unsafe { serve_signal_keeping_errno(info, ctx) };
    // SAFETY: as above.
    unsafe { *errno = saved };
    served
}

/// [`serve_signal`], errno aside.
///
/// # Safety
/// As for [`serve_signal`].
unsafe fn serve_signal_keeping_errno(
    info: *const libc::siginfo_t,
    ctx: *const libc::c_void,
) -> bool {
    if info.is_null() || ctx.is_null() {
        return false;
    }
    // SAFETY: the kernel's siginfo for this signal.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if code != BUS_ADRERR {
        return false;
    }
    // SAFETY: an SA_SIGINFO handler's third argument is its ucontext.
    let err =
        unsafe { (*(ctx as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_ERR as usize] };
    let (wp, write) = (err & PF_PROT != 0, err & PF_WRITE != 0);
    SERVING.fetch_add(1, Ordering::SeqCst);
    let marked = Marked::new();
    let mut served = false;
    for slot in &RUNTIMES {
        let p = slot.load(Ordering::SeqCst);
        if p.is_null() {
            continue;
        }
        // SAFETY: an enlisted runtime stays alive while SERVING counts us
        // (`leave` waits for it, or keeps the memory).
        let inner = unsafe { &*p };
        // No panic may unwind out of a signal handler (the panic hook ends
        // the program first; this is in case a program replaced it).
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inner.serve_in_thread(addr, write, wp)
        }));
        match r {
            Ok(true) => {
                served = true;
                break;
            }
            Ok(false) => {}
            Err(_) => crate::fatal::die("the fault handler panicked serving a fault in-thread"),
        }
    }
    drop(marked);
    SERVING.fetch_sub(1, Ordering::SeqCst);
    if served {
        return true;
    }
    // No region has the page: perhaps one being released, which is
    // forgotten a moment before its range is unregistered. Retry the
    // access, which succeeds once the range is plain; a real bus error
    // (a truncated file mapping) repeats at its address and is passed on
    // after STALE_RETRIES tries.
    if any_enlisted() && retry_stale(addr) {
        std::thread::yield_now();
        return true;
    }
    false
}

/// Tries an unclaimed fault address gets before it is passed on.
const STALE_RETRIES: usize = 10_000;
/// The last unclaimed fault address (any thread's), and its tries.
static STALE_ADDR: AtomicUsize = AtomicUsize::new(0);
static STALE_TRIES: AtomicUsize = AtomicUsize::new(0);

/// Whether the access at `addr`, claimed by no runtime, is to be tried
/// again (no thread-local storage: see [`serving_here`]).
fn retry_stale(addr: usize) -> bool {
    if STALE_ADDR.swap(addr, Ordering::Relaxed) != addr {
        STALE_TRIES.store(0, Ordering::Relaxed);
    }
    STALE_TRIES.fetch_add(1, Ordering::Relaxed) < STALE_RETRIES
}

fn any_enlisted() -> bool {
    RUNTIMES.iter().any(|s| !s.load(Ordering::SeqCst).is_null())
}

impl Pager {
    /// Serves a fault at `addr` in the calling thread if the page is one
    /// of this runtime's regions; `false` otherwise.
    fn serve_in_thread(&self, addr: usize, write: bool, wp: bool) -> bool {
        if self.env.mode != FaultMode::InThread {
            return false;
        }
        let page = addr & !(PAGE - 1);
        let first_touch = {
            let st = self.lock();
            match st.locate(page) {
                Some((base, idx)) => st.regions[&base].pages[idx].state == PageState::Untouched,
                None => return false,
            }
        };
        if self.cfg.inject_failure == Some(crate::InjectFailure::FaultHandlerPanic) {
            panic!("injected panic in the fault handler");
        }
        let tid = crate::sys::cached_tid();
        let by_runtime = self.is_runtime_thread(tid);
        // A store only when the thread changes: a single thread's faults
        // leave the line shared.
        if !by_runtime && self.last_fault_tid.load(Ordering::Relaxed) != tid {
            self.last_fault_tid.store(tid, Ordering::Relaxed);
            self.env
                .counters
                .fault_thread_switches
                .fetch_add(1, Ordering::Relaxed);
        }
        let started = Instant::now();
        let began = self.trace_clock();
        if wp {
            if by_runtime {
                crate::fatal::die(&format!(
                    "runtime thread {} wrote to region page {page:#x} (invariant: runtime threads only read pages they evict)",
                    crate::sys::gettid()
                ));
            }
            let mut op = WpFault::new(page).served_in_thread();
            self.drive(|cx| op.step(cx));
            self.record_fault(began, page, Traced::WpFault, tid);
            self.note_stall(started.elapsed());
        } else {
            let mut op = MissingFault::new(page, write, by_runtime).served_in_thread();
            self.drive(|cx| op.step(cx));
            if !by_runtime {
                self.record_fault(began, page, Traced::Missing { write, first_touch }, tid);
                // A first touch maps zeros, as the kernel would for a plain
                // run: no stall of uzswap's, unless reclaim holds it up.
                let reclaiming = Instant::now();
                self.reclaim_in_thread();
                self.throttle_in_thread();
                let from = if first_touch { reclaiming } else { started };
                self.note_stall(from.elapsed());
            }
        }
        true
    }
}

/// Most times [`Pager::fault_in`] serves one page before it moves on.
const FAULT_IN_LOOKS: u32 = 8;

impl Pager {
    /// Serves, in the calling thread, the faults an access to the pinned
    /// pages of `[addr, addr + len)` would take (for writing if `write`):
    /// their pins keep them from being evicted or write-protected
    /// afterwards. Where faults are served in-thread this saves the pin's
    /// touches a signal each, and the stack a signal frame: a `vfork`
    /// child's system calls are pinned on its small stack, inside the
    /// syscall guard's handler. A page discarded behind the runtime's back
    /// still faults at the touch.
    pub(crate) fn fault_in(&self, addr: usize, len: usize, write: bool) {
        if self.env.mode != FaultMode::InThread {
            return;
        }
        let end = addr.saturating_add(len);
        let mut from = addr;
        let mut looks = 0;
        // One lock over each run of pages that need nothing; a page that
        // needs something is looked at again once served (another thread's
        // fault may have had it in flight, or mapped it protected), up to
        // `FAULT_IN_LOOKS` times (each serve settles it unless another
        // thread keeps changing it). No allocation: this runs in the
        // syscall guard's signal handler.
        while let Some((page, state)) = self.next_to_fault_in(from, end, write) {
            looks = if page == from { looks + 1 } else { 1 };
            from = if looks < FAULT_IN_LOOKS {
                page
            } else {
                page + PAGE
            };
            // Not settled (untouched, swapped, or in flight: the missing
            // fault waits for the operation in flight and looks again).
            let missing = !state.state.is_resident();
            // A pinned buffer's swap-ins and write-protect faults stall
            // its system call; its first touches map zeros, as a plain run's
            // would.
            let started = Instant::now();
            let began = self.trace_clock();
            if missing {
                let mut op = MissingFault::new(page, write, false).served_in_thread();
                self.drive(|cx| op.step(cx));
                let first_touch = state.state == PageState::Untouched;
                let kind = Traced::Missing { write, first_touch };
                self.record_fault(began, page, kind, crate::sys::cached_tid());
                self.throttle_in_thread();
                if state.state != PageState::Untouched {
                    self.note_stall(started.elapsed());
                }
            } else {
                let mut op = WpFault::new(page).served_in_thread();
                self.drive(|cx| op.step(cx));
                self.record_fault(began, page, Traced::WpFault, crate::sys::cached_tid());
                self.note_stall(started.elapsed());
            }
        }
    }

    /// The first region page of `[from, end)` an access (a write if
    /// `write`) would fault on: missing, or write-protected for a write.
    fn next_to_fault_in(
        &self,
        from: usize,
        end: usize,
        write: bool,
    ) -> Option<(usize, crate::protocol::Page)> {
        let st = self.lock();
        (from..end).step_by(PAGE).find_map(|page| {
            let (base, idx) = st.locate(page)?;
            let state = st.regions[&base].pages[idx];
            crate::protocol::access_would_fault(&state, write).then_some((page, state))
        })
    }
}

/// The handler that was installed before [`install_handler`]'s.
static PREVIOUS: std::sync::OnceLock<libc::sigaction> = std::sync::OnceLock::new();

/// Installs a SIGBUS handler that serves in-thread faults and passes every
/// other SIGBUS to the handler installed before it (or the default
/// action), once per process; nothing if the caller handles SIGBUS itself
/// ([`handled_by_caller`]).
pub(crate) fn install_handler() -> std::io::Result<()> {
    if handled() {
        return Ok(());
    }
    static ONCE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut done = ONCE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if *done {
        return Ok(());
    }
    // SAFETY: all-zero is a valid sigaction.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_sigbus as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
    // SAFETY: all-zero is a valid sigaction to be written.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: the mask is ours; sigaction reads `act` and writes `old`.
    let rc = unsafe {
        block_async_signals(&mut act.sa_mask);
        libc::sigaction(libc::SIGBUS, &act, &mut old)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let _ = PREVIOUS.set(old);
    HANDLED.store(true, Ordering::Release);
    *done = true;
    Ok(())
}

/// Fills `set` with every signal but the synchronous ones (a fault of the
/// handler itself must still be delivered) — the mask a serving handler
/// runs under.
///
/// # Safety
/// `set` is a valid sigset.
pub unsafe fn block_async_signals(set: &mut libc::sigset_t) {
    // SAFETY: the caller's valid set; these only set and clear bits.
    unsafe {
        libc::sigfillset(set);
        for sig in [
            libc::SIGBUS,
            libc::SIGSEGV,
            libc::SIGSYS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGTRAP,
        ] {
            libc::sigdelset(set, sig);
        }
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: this handler's own arguments.
    if unsafe { serve_signal(info, ctx) } {
        return;
    }
    let Some(prev) = PREVIOUS.get() else {
        return;
    };
    match prev.sa_sigaction {
        libc::SIG_DFL | libc::SIG_IGN => {
            // The default action, as without us: reset and raise again.
            // SAFETY: all-zero is SIG_DFL; raw calls on this thread.
            unsafe {
                let dfl: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
                libc::syscall(libc::SYS_tgkill, libc::getpid(), crate::sys::gettid(), sig);
            }
        }
        h if prev.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous handler, installed with SA_SIGINFO.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        }
        h => {
            // SAFETY: the previous handler, a plain one.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }
}
