//! Set-up at load: the settings read from the environment, the fork
//! handlers registered (they hold the region table across a fork), the
//! syscall guard's decision and the small-object heap's configuration.
//! It sits above every module it sets up: nothing below imports it.

use crate::gate::force_busy;
use crate::preload::{
    die, no_unwind, started, Passed, Tables, MIN_ALLOC, OWNER_PID, PASSED, SETTINGS,
};
use crate::start::runtime_started;
use crate::syscall_guard::decide_guard;
use launch::Settings;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

thread_local! {
    /// The region table, held by the forking thread from the fork's prepare
    /// to its parent or child handler.
    static FORK_HELD: RefCell<Option<MutexGuard<'static, Tables>>> =
        const { RefCell::new(None) };
}

extern "C" fn before_fork() {
    no_unwind("fork prepare", || {
        if let Some(p) = started() {
            let table = p.table();
            FORK_HELD.with(|h| *h.borrow_mut() = Some(table));
        }
    })
}

extern "C" fn after_fork_in_parent() {
    no_unwind("fork parent", || {
        FORK_HELD.with(|h| drop(h.borrow_mut().take()));
    })
}

extern "C" fn after_fork_in_child() {
    no_unwind("fork child", || {
        FORK_HELD.with(|h| drop(h.borrow_mut().take()));
        crate::small_heap::after_fork_in_child();
        // The child has a runtime of its own (rebuilt by the runtime's fork
        // handler, which ran first): it serves its own counters.
        if started().is_some() {
            OWNER_PID.store(std::process::id(), Ordering::Relaxed);
            runtime_started();
        }
    })
}

/// Reads the settings from the environment; a bad one ends the program
/// with a message naming it.
pub fn load_settings() {
    // Whatever the C library allocates meanwhile (the guard's set-up, fork
    // handlers) is glibc's: the small-object heap must not start (and
    // install the guard a second time) from inside the guard's install.
    let _busy = force_busy();
    match Settings::from_env() {
        Ok(s) => {
            MIN_ALLOC.store(s.min_alloc_bytes, Ordering::Relaxed);
            let _ = SETTINGS.set(s);
            let _ = PASSED.set(Passed::from_env());
            // The runtime's fork handlers first: its prepare then runs after
            // every other (library) prepare handler, its child handler
            // before theirs. Then ours, which hold the region table.
            runtime::fork::register_handlers();
            // SAFETY: registering handlers with no preconditions; they never
            // unwind.
            let r = unsafe {
                libc::pthread_atfork(
                    Some(before_fork),
                    Some(after_fork_in_parent),
                    Some(after_fork_in_child),
                )
            };
            if r != 0 {
                die(&format!("pthread_atfork failed (errno {r})"));
            }
            let s = SETTINGS.get().expect("set just above");
            decide_guard(s);
            // Under the syscall guard too: a vfork child's system calls pin
            // through its parent's runtime, and its `execve` strings are
            // copied out of the arena (`guard`'s `exec_copy`).
            crate::small_heap::configure(s.small_objects);
        }
        Err(e) => die(&format!("bad setting: {e}")),
    }
}
