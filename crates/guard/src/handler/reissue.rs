//! Re-issuing a system call with its arena buffers pinned: the trapped
//! calls the handler does not emulate, and [`guarded_syscall`] for library
//! hooks. Large file I/O goes to `piecewise`, a `vfork` child's `execve`
//! to `exec_copy`; everything else is described by `syscalls`, pinned by
//! `pins` and issued whole.

use crate::counters::{self, bump};
use crate::nr;
use crate::pins::PinSet;
use crate::proc_mem::ProcMem;
use crate::state::{State, STATE};
use crate::syscalls::{for_each_buffer, Coverage};
use crate::trampoline::syscall6;

/// Issues system call `nr` with its arena buffers pinned and faulted in:
/// what the SIGSYS handler does for a trapped call, also usable by library
/// hooks before calling the kernel (e.g. the preload library's `execve`,
/// `writev` or `posix_spawn` wrappers). Returns the raw result (`-errno`).
/// Without an installed guard, the call is just issued.
///
/// # Safety
/// As for [`crate::trampoline::syscall6`]; also, `nr` must not be a call
/// that cannot return into this frame (`clone` with a new stack, `vfork`).
pub unsafe fn guarded_syscall(nr: i64, args: [u64; 6]) -> isize {
    match STATE.get() {
        // SAFETY: forwarded from the caller.
        Some(st) => unsafe { guarded(st, nr, &args) },
        // SAFETY: forwarded from the caller.
        None => unsafe { syscall6(nr, args) },
    }
}

/// # Safety
/// As for `guarded_syscall`.
pub(super) unsafe fn guarded(st: &State, nr: i64, args: &[u64; 6]) -> isize {
    bump(&counters::LIVE.guarded_calls);
    if (nr == nr::EXECVE || nr == nr::EXECVEAT) && st.pinner.in_vfork_child() {
        // SAFETY: forwarded from the caller; `nr` is an execve.
        return unsafe { crate::exec_copy::execve(st, nr, args) };
    }
    // SAFETY: forwarded from the caller.
    if let Some(ret) = unsafe { crate::piecewise::file_io(st, nr, args) } {
        return ret;
    }
    let mem = ProcMem::new();
    let mut pins = PinSet::new(st);
    let coverage = for_each_buffer(nr, args, &mem, &mut |b| pins.buffer(b, &mem));
    match coverage {
        Coverage::Known => {}
        Coverage::Partial => bump(&counters::LIVE.partial),
        Coverage::Unknown => counters::note_unknown(nr),
    }
    // SAFETY: the program's own arguments, as it would have issued them.
    let ret = unsafe { syscall6(nr, *args) };
    pins.release();
    ret
}
