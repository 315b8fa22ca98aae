//! The guard's counters: static atomics, updated from the SIGSYS handler
//! (relaxed increments; no locks), read with [`counters`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// How many distinct system-call numbers with unknown coverage are kept.
pub const UNKNOWN_SLOTS: usize = 16;

pub(crate) static TRAPS: AtomicU64 = AtomicU64::new(0);
pub(crate) static GUARDED_CALLS: AtomicU64 = AtomicU64::new(0);
pub(crate) static UNKNOWN_SYSCALLS: AtomicU64 = AtomicU64::new(0);
pub(crate) static UNKNOWN_BUFFERS: AtomicU64 = AtomicU64::new(0);
pub(crate) static PARTIAL: AtomicU64 = AtomicU64::new(0);
pub(crate) static REGISTERED: AtomicU64 = AtomicU64::new(0);
pub(crate) static PIN_OVERFLOWS: AtomicU64 = AtomicU64::new(0);
pub(crate) static PINNED_BYTES: AtomicU64 = AtomicU64::new(0);
pub(crate) static PIN_CALLS: AtomicU64 = AtomicU64::new(0);
pub(crate) static CHAINED: AtomicU64 = AtomicU64::new(0);
pub(crate) static SIGMASK_FIXES: AtomicU64 = AtomicU64::new(0);
pub(crate) static SIGSYS_ACTIONS: AtomicU64 = AtomicU64::new(0);
pub(crate) static FOREIGN_TRAPS: AtomicU64 = AtomicU64::new(0);

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: AtomicI64 = AtomicI64::new(-1);
static UNKNOWN_NRS: [AtomicI64; UNKNOWN_SLOTS] = [EMPTY; UNKNOWN_SLOTS];

/// Records one call of `nr` with unknown coverage.
pub(crate) fn note_unknown(nr: i64) {
    UNKNOWN_SYSCALLS.fetch_add(1, Relaxed);
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

/// A snapshot of the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Traps of the guard's filter handled by the SIGSYS handler.
    pub traps: u64,
    /// System calls issued on the program's behalf with their buffers pinned
    /// (trapped ones, and those from `guarded_syscall`).
    pub guarded_calls: u64,
    /// Of those, calls the table does not describe (`Coverage::Unknown`).
    pub unknown_syscalls: u64,
    /// The first distinct numbers among them (`-1`: empty slot).
    pub unknown_numbers: [i64; UNKNOWN_SLOTS],
    /// Arena pointers the table could not size (`Buffer::Unknown`): the page
    /// at the pointer was pinned, best effort.
    pub unknown_buffers: u64,
    /// Calls with `Coverage::Partial` (asynchronous or nested use).
    pub partial: u64,
    /// Registered buffers in the arena (`Buffer::Registered`).
    pub registered: u64,
    /// Buffers left unpinned because one call needed more than 1024 ranges
    /// (the call was issued anyway).
    pub pin_overflows: u64,
    /// Bytes pinned, summed over calls.
    pub pinned_bytes: u64,
    /// `Pinner::pin` calls.
    pub pin_calls: u64,
    /// SIGSYS signals that were not the guard's, passed to the program's
    /// handler.
    pub chained: u64,
    /// Signal masks from which SIGSYS was removed (`rt_sigprocmask`,
    /// `rt_sigaction`'s `sa_mask`).
    pub sigmask_fixes: u64,
    /// `rt_sigaction(SIGSYS, …)` calls of the program, kept as its chained
    /// handler instead.
    pub sigsys_actions: u64,
    /// Traps of the guard's kind that came from the trampoline itself (a
    /// filter inherited across `execve` with another trampoline address):
    /// answered `ENOSYS`.
    pub foreign_traps: u64,
}

/// Reads the counters.
pub fn counters() -> Counters {
    let mut unknown_numbers = [-1; UNKNOWN_SLOTS];
    for (out, slot) in unknown_numbers.iter_mut().zip(&UNKNOWN_NRS) {
        *out = slot.load(Relaxed);
    }
    Counters {
        traps: TRAPS.load(Relaxed),
        guarded_calls: GUARDED_CALLS.load(Relaxed),
        unknown_syscalls: UNKNOWN_SYSCALLS.load(Relaxed),
        unknown_numbers,
        unknown_buffers: UNKNOWN_BUFFERS.load(Relaxed),
        partial: PARTIAL.load(Relaxed),
        registered: REGISTERED.load(Relaxed),
        pin_overflows: PIN_OVERFLOWS.load(Relaxed),
        pinned_bytes: PINNED_BYTES.load(Relaxed),
        pin_calls: PIN_CALLS.load(Relaxed),
        chained: CHAINED.load(Relaxed),
        sigmask_fixes: SIGMASK_FIXES.load(Relaxed),
        sigsys_actions: SIGSYS_ACTIONS.load(Relaxed),
        foreign_traps: FOREIGN_TRAPS.load(Relaxed),
    }
}
