//! The syscall guard (the `guard` crate), where the userfaultfd handles
//! the program's own faults only: whether it is needed, its installation
//! with the first region (or at load under an inherited filter), and the
//! runtime's pinning of system calls' buffers for it.

use crate::gate::is_runtime_thread;
use crate::preload::{die, owns_runtime, shares_runtime, started};
use launch::Settings;
use std::sync::atomic::Ordering;

/// The runtime pins system calls' buffers for the guard.
struct RuntimePinner;

impl guard::Pinner for RuntimePinner {
    fn pin(&self, addr: usize, len: usize, write: bool) -> guard::PinToken {
        if is_runtime_thread() {
            // The runtime's own I/O on region pages (eviction writing a run
            // straight to the swap file when the pool refuses it) runs while
            // the runtime holds those pages in flight: a pin would wait for
            // the very operation that makes the call. It needs none.
            return guard::PinToken { addr, len: 0 };
        }
        match started() {
            // The runtime's process, or a vfork child sharing its memory
            // (and so its runtime, whose threads serve the child's faults).
            Some(p) if owns_runtime() || shares_runtime() => {
                let (addr, len) = p.runtime.pin_for_syscall(addr, len, write);
                guard::PinToken { addr, len }
            }
            // No runtime yet (no region exists), or a child with memory of
            // its own and no runtime in it: nothing of ours to pin.
            _ => guard::PinToken { addr, len: 0 },
        }
    }

    fn unpin(&self, t: guard::PinToken) {
        if let Some(p) = started().filter(|_| t.len > 0) {
            p.runtime.unpin(t.addr, t.len);
        }
    }

    fn registered(&self, addr: usize, len: usize) {
        // Kept resident for good: pinned and never unpinned (only by the
        // runtime's own process: a vfork child's would outlive it).
        if owns_runtime() {
            let _ = self.pin(addr, len, true);
        }
    }

    fn in_vfork_child(&self) -> bool {
        started().is_some() && shares_runtime()
    }
}

static PINNER: RuntimePinner = RuntimePinner;

/// Whether the syscall guard is needed (the userfaultfd is user-mode
/// only) and not yet in place: set at load, cleared once installed.
static GUARD_PENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The guard could not be installed (a thread of the program blocks
/// SIGSYS): no region is made, the program's memory stays plain.
static GUARD_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The syscall guard is to go in, or is in (user-mode faults).
static GUARD_USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Where the userfaultfd can only handle the program's own faults (no
/// root, `vm.unprivileged_userfaultfd=0`), the kernel cannot fault region
/// pages in for a system call: the syscall guard (the `guard` crate) traps
/// calls whose buffers lie in the region arena and pins and faults them in
/// first.
///
/// It goes in with the first region, not at load: any seccomp filter makes
/// every system call of the process slower (about 50 ns on this machine's
/// VM, measured in BENCHMARKS.md), and a program that never makes a region
/// has no system call to guard. One exception: a program exec'd by a
/// guarded one inherits the filter (filters survive `execve`), which traps
/// from the first instruction, so the handler goes in at load then.
pub(crate) fn decide_guard(s: &Settings) {
    match s.probe_fault_mode() {
        Ok(runtime::FaultMode::KernelFaults) => {}
        Ok(runtime::FaultMode::UserModeOnly | runtime::FaultMode::InThread) => {
            GUARD_USED.store(true, Ordering::Release);
            GUARD_PENDING.store(true, Ordering::Release);
            // SAFETY: PR_GET_SECCOMP takes no pointer; 2 = filter mode.
            let filtered = unsafe { libc::prctl(libc::PR_GET_SECCOMP) } == 2;
            if filtered {
                install_guard();
            }
        }
        // The runtime says why when it starts (at the first large
        // allocation); a program that makes none must still run.
        Err(_) => {}
    }
}

/// Installs the guard if it is still pending; false if regions must not
/// be made (it could not be installed). Called with the thread busy, so
/// its own allocations pass through; the first caller installs, the others
/// wait for it.
pub(crate) fn guard_ready() -> bool {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    if GUARD_PENDING.load(Ordering::Acquire) {
        INSTALL.call_once(install_guard);
    }
    !GUARD_REFUSED.load(Ordering::Acquire)
}

/// Whether the guard is to go in or is in: SIGSYS must stay unblocked.
pub fn guard_used() -> bool {
    GUARD_USED.load(Ordering::Acquire)
}

fn install_guard() {
    let arena = runtime::arena::global()
        .unwrap_or_else(|e| die(&format!("cannot reserve the region arena: {e}")));
    // The gate at the arena's first page, which regions never use: the
    // same address in every process, so a filter inherited through exec
    // allows it too.
    let config = guard::GuardConfig {
        gate: Some(arena.range().start),
        ..guard::GuardConfig::default()
    };
    match guard::install_with(arena.range(), &PINNER, config) {
        Ok(_) => {}
        // Installing now would kill those threads at their first trap:
        // leave the program's memory plain (correct, not limited).
        Err(guard::GuardError::SigsysBlocked(tids)) => {
            GUARD_REFUSED.store(true, Ordering::Release);
            eprintln!(
                "uzswap: threads {tids:?} block SIGSYS, so the syscall guard (needed without root for system calls on paged memory) cannot go in: this program's memory is not paged"
            );
        }
        Err(e) => die(&format!(
            "cannot install the syscall guard (needed without root for system calls on paged memory): {e}"
        )),
    }
    GUARD_PENDING.store(false, Ordering::Release);
}
