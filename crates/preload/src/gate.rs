//! Which calls pass through: a hook's call goes straight to glibc or the
//! kernel when it is nested in another hook's (the thread is marked
//! inside the runtime), made by a runtime thread (named `uzswap/*`), or
//! made while the thread serves its own fault. Every hook asks here
//! first: nothing here allocates or takes a lock.

/// Marks this thread inside the runtime while alive: its nested calls pass
/// through (see `runtime::reentry`).
pub type Busy = runtime::reentry::Inside;

/// Enters a hook that may use the runtime: `None` when the call must pass
/// through (nested call, runtime thread, a thread serving its own fault).
pub fn enter() -> Option<Busy> {
    if runtime::in_thread::serving_here() {
        return None;
    }
    runtime::reentry::enter_unless_inside(named_as_runtime)
}

/// Marks the thread busy whoever it is (for work on a region found in the
/// table, whose syscalls must reach the kernel).
pub fn force_busy() -> Busy {
    runtime::reentry::enter()
}

/// Whether the calls of this thread must bypass the hooks: a nested call,
/// a runtime thread, or a thread serving its own fault (checked first, and
/// without thread-local storage: see `runtime::in_thread`).
pub fn passes_through() -> bool {
    runtime::in_thread::serving_here() || runtime::reentry::inside_or_runtime(named_as_runtime)
}

pub(crate) fn is_runtime_thread() -> bool {
    runtime::reentry::runtime_thread(named_as_runtime)
}

/// Whether this thread's name says it is the runtime's (`uzswap/*`); asked
/// once a thread.
fn named_as_runtime() -> bool {
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes into `name`.
    let r = unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) };
    r == 0 && name.starts_with(b"uzswap/")
}
