//! The runtime's start: at the first large allocation or small-heap
//! object (SIGBUS taken over first where faults are served in-thread),
//! and again in a forked child, which has a runtime of its own; and what
//! runs then, set once at load. It sits above `preload.rs` (the state it
//! fills in) and `sigbus.rs`, so that the state imports neither.

use crate::preload::{die, Preload, Tables, OWNER_PID, PASSED, PRELOAD, SETTINGS};
use launch::report::ProgramCounters;
use runtime::Runtime;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

/// What runs when a runtime starts in this process (at first use, and
/// again in a forked child, which has a runtime of its own). Set once at
/// load (`lib.rs`: the stats server): the regions know nothing of who
/// reports on them.
static ON_RUNTIME_START: OnceLock<fn()> = OnceLock::new();

/// Sets what runs when a runtime starts (once; later calls are ignored).
pub fn on_runtime_start(f: fn()) {
    let _ = ON_RUNTIME_START.set(f);
}

pub(crate) fn runtime_started() {
    if let Some(f) = ON_RUNTIME_START.get() {
        f();
    }
}

/// The runtime, started on first use: its fault and reclaim threads and
/// the stats server begin here ([`started`](crate::preload::started) never
/// starts them). A runtime that cannot start (no userfaultfd) ends the
/// program with the reason: it was asked to run under a memory limit it
/// would not get.
pub fn get_or_start() -> Option<&'static Preload> {
    let settings = SETTINGS.get()?;
    Some(PRELOAD.get_or_init(|| {
        if !settings.fault_thread {
            crate::sigbus::take_over();
        }
        let mut config = settings.runtime_config();
        let passed = PASSED.get();
        config.shared_limit_fd = passed.and_then(|p| p.shared_limit);
        if let Some(dir) = crate::swap_dir::instead_of(
            &config.swap.swapfile_dir,
            passed.and_then(|p| p.stats.as_ref()),
        ) {
            config.swap.swapfile_dir = dir;
        }
        let runtime =
            Runtime::new(config).unwrap_or_else(|e| die(&format!("cannot start the runtime: {e}")));
        let p = Preload {
            runtime,
            table: Mutex::new(Tables::default()),
            settings: settings.clone(),
            counters: ProgramCounters::new(),
        };
        OWNER_PID.store(std::process::id(), Ordering::Relaxed);
        runtime_started();
        p
    }))
}
