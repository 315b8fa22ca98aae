//! The guard's counters: static atomics, updated from the SIGSYS handler
//! (relaxed increments; no locks), read with [`counters`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// How many distinct system-call numbers with unknown coverage are kept.
pub const UNKNOWN_SLOTS: usize = 16;

/// The live counters, bumped from the SIGSYS handler.
pub(crate) static LIVE: Live = Live::new();

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: AtomicI64 = AtomicI64::new(-1);
static UNKNOWN_NRS: [AtomicI64; UNKNOWN_SLOTS] = [EMPTY; UNKNOWN_SLOTS];

/// Records one call of `nr` with unknown coverage.
pub(crate) fn note_unknown(nr: i64) {
    LIVE.unknown_syscalls.fetch_add(1, Relaxed);
    for slot in &UNKNOWN_NRS {
        match slot.compare_exchange(-1, nr, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(seen) if seen == nr => return,
            Err(_) => {}
        }
    }
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

common::counters! {
    /// A snapshot of the guard's counters.
    pub struct Counters;
    /// The guard's live counters (a static: the SIGSYS handler bumps them
    /// with relaxed increments, no locks).
    pub(crate) struct Live;
    /// Traps of the guard's filter handled by the SIGSYS handler.
    traps: u64,
    /// System calls issued on the program's behalf with their buffers pinned
    /// (trapped ones, and those from `guarded_syscall`).
    guarded_calls: u64,
    /// Of those, calls the table does not describe (`Coverage::Unknown`).
    unknown_syscalls: u64,
    /// Arena pointers the table could not size (`Buffer::Unknown`): the page
    /// at the pointer was pinned, best effort.
    unknown_buffers: u64,
    /// Calls with `Coverage::Partial` (asynchronous or nested use).
    partial: u64,
    /// Registered buffers in the arena (`Buffer::Registered`).
    registered: u64,
    /// Buffers left unpinned because one call needed more than 1024 ranges
    /// (the call was issued anyway).
    pin_overflows: u64,
    /// Bytes pinned, summed over calls.
    pinned_bytes: u64,
    /// `Pinner::pin` calls.
    pin_calls: u64,
    /// SIGSYS signals that were not the guard's, passed to the program's
    /// handler.
    chained: u64,
    /// Signal masks from which SIGSYS was removed (`rt_sigprocmask`,
    /// `rt_sigaction`'s `sa_mask`).
    sigmask_fixes: u64,
    /// `rt_sigaction(SIGSYS, …)` calls of the program, kept as its chained
    /// handler instead.
    sigsys_actions: u64,
    /// Traps of the guard's kind that came from the trampoline itself (a
    /// filter inherited across `execve` with another trampoline address):
    /// answered `ENOSYS`.
    foreign_traps: u64,
    /// `execve` calls of a `vfork` child whose path, `argv` and `envp` were
    /// copied out of the arena first (`exec_copy`).
    exec_copies: u64,
    /// Of those, calls that found every scratch slot taken and used a
    /// mapping of their own, left behind by a successful `execve`.
    exec_scratch_leaked: u64,
    /// Large `read`/`write`/`pread`/`pwrite` calls on regular files issued
    /// piece by piece, each piece's pages pinned only for its own call.
    piecewise_io: u64,
}

/// Reads the counters.
pub fn counters() -> Counters {
    LIVE.snapshot()
}

/// The first distinct system-call numbers with unknown coverage the guard
/// met (`-1`: empty slot; `Counters::unknown_syscalls` counts the calls).
pub fn unknown_numbers() -> [i64; UNKNOWN_SLOTS] {
    let mut out = [-1; UNKNOWN_SLOTS];
    for (o, slot) in out.iter_mut().zip(&UNKNOWN_NRS) {
        *o = slot.load(Relaxed);
    }
    out
}
