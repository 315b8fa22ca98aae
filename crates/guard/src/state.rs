//! What the SIGSYS handler and the pinning share: the runtime's [`Pinner`]
//! and the guard's installed [`State`]. Below both the handler and the
//! modules it calls (`pins`, `exec_copy`, `piecewise`), so that none of them
//! imports the handler back.

use std::sync::OnceLock;

/// Pins arena pages for the duration of one system call. Implemented by
/// the runtime; called from the SIGSYS handler, so it must be
/// async-signal-safe with respect to the interrupted thread: the trap
/// happens only at a system call of the program, never inside the runtime
/// (whose own calls go through [`crate::guarded_syscall`]-free paths with no
/// arena pointers, or through the trampoline), so the runtime's own locks
/// are free at that point; it must not allocate with a lock the program
/// may hold (malloc's), though.
///
/// Pins are counted per page: `pin` adds one pin to each page of the token
/// it returns and `unpin` removes one from each page of the token. The guard
/// may hand back, as one token, the union of adjacent tokens returned for
/// the same `write` (tokens are plain page ranges).
pub trait Pinner: Sync {
    /// Pins the arena pages of `[addr, addr+len)` (page-aligned) so they are
    /// neither evicted nor write-protected until unpinned, and faults them in
    /// (writable if `write`: the kernel will write them). Pages outside the
    /// arena's live regions are ignored. Returns the pinned range (possibly
    /// empty).
    fn pin(&self, addr: usize, len: usize, write: bool) -> PinToken;
    /// Releases a pin returned by `pin` (or a union of adjacent ones).
    fn unpin(&self, token: PinToken);
    /// `[addr, addr+len)` (in the arena) is registered with the kernel,
    /// which will touch it later outside any system call (thread exit's
    /// `clear_child_tid`, the robust-futex list, `rseq`, an alternate signal
    /// stack). The runtime should keep these pages resident. Default: nothing.
    fn registered(&self, _addr: usize, _len: usize) {}
    /// The calling task shares the runtime's memory without being its
    /// process (a `vfork` child): pins it takes are served by its parent's
    /// runtime, and a successful `execve`, which never returns to release
    /// them, would leave them there for good. Its `execve` strings are
    /// copied out of the arena instead (`exec_copy`). Default: false.
    fn in_vfork_child(&self) -> bool {
        false
    }
}

/// A pinned page range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinToken {
    /// First byte (page-aligned).
    pub addr: usize,
    /// Length (a multiple of the page size; 0: nothing pinned).
    pub len: usize,
}

/// What the handler needs, set once by `install`.
pub(crate) struct State {
    pub(crate) lo: usize,
    pub(crate) hi: usize,
    pub(crate) pinner: &'static dyn Pinner,
    pub(crate) trampoline_ret: usize,
    pub(crate) protect_sigsys: bool,
}

pub(crate) static STATE: OnceLock<State> = OnceLock::new();
