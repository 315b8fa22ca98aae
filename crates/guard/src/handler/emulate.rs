//! `rt_sigprocmask` and `rt_sigaction`, trapped by the signal protection
//! and emulated so that SIGSYS stays handled and unblocked: the mask is
//! changed on the signal frame (a call made inside the handler would be
//! undone by `rt_sigreturn`), and an action for SIGSYS becomes the
//! program's chained one.

use super::chain::{chain_get, chain_set, kept_unblocked, KSigaction, UNBLOCKABLE};
use super::reissue::guarded;
use crate::counters::{self, bump};
use crate::nr;
use crate::pins::PinSet;
use crate::proc_mem::ProcMem;
use crate::state::State;
use crate::syscalls::UserMem;
use crate::trampoline::syscall6;

/// `rt_sigprocmask` inside a signal handler would be undone by
/// `rt_sigreturn`, which restores the frame's mask: emulate it on the
/// frame's `uc_sigmask`, keeping SIGSYS unblocked.
pub(super) fn emulate_sigprocmask(st: &State, uc: &mut libc::ucontext_t, args: &[u64; 6]) -> isize {
    let (how, set, oset, size) = (args[0] as i32, args[1] as usize, args[2] as usize, args[3]);
    if size != 8 {
        return -(libc::EINVAL as isize);
    }
    let mask_ptr = &mut uc.uc_sigmask as *mut libc::sigset_t as *mut u64;
    // SAFETY: uc_sigmask is at least 8 bytes; its first word is the
    // kernel's mask, restored by rt_sigreturn.
    let old = unsafe { mask_ptr.read() };
    let mem = ProcMem::new();
    let mut pins = PinSet::new(st);
    let mut ret = 0;
    let mut new = old;
    if set != 0 {
        pins.range(set, 8, false);
        match mem.read_u64(set) {
            None => ret = -(libc::EFAULT as isize),
            Some(s) => match how {
                libc::SIG_BLOCK => new = old | s,
                libc::SIG_UNBLOCK => new = old & !s,
                libc::SIG_SETMASK => new = s,
                _ => ret = -(libc::EINVAL as isize),
            },
        }
    }
    if ret == 0 {
        new &= !UNBLOCKABLE;
        if st.protect_sigsys && new & kept_unblocked() != 0 {
            new &= !kept_unblocked();
            bump(&counters::LIVE.sigmask_fixes);
        }
        // SAFETY: as above.
        unsafe { mask_ptr.write(new) };
        if oset != 0 {
            pins.range(oset, 8, true);
            if !mem.write(oset, &old.to_ne_bytes()) {
                ret = -(libc::EFAULT as isize);
            }
        }
    }
    pins.release();
    ret
}

fn read_ksigaction(mem: &ProcMem, at: usize) -> Option<KSigaction> {
    Some(KSigaction {
        handler: mem.read_u64(at)? as usize,
        flags: mem.read_u64(at.wrapping_add(8))?,
        restorer: mem.read_u64(at.wrapping_add(16))? as usize,
        mask: mem.read_u64(at.wrapping_add(24))?,
    })
}

fn ksigaction_bytes(k: &KSigaction) -> [u8; 32] {
    let mut out = [0u8; 32];
    let words = [k.handler as u64, k.flags, k.restorer as u64, k.mask];
    for (chunk, w) in out.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    out
}

/// `rt_sigaction` with a new action, trapped by the signal protection:
/// SIGSYS goes to the chain (our handler stays), other signals get SIGSYS
/// removed from their `sa_mask`.
pub(super) fn emulate_sigaction(st: &State, args: &[u64; 6]) -> isize {
    let (sig, act, oact, size) = (args[0] as i32, args[1] as usize, args[2] as usize, args[3]);
    if size != 8 || !st.protect_sigsys {
        // SAFETY: the program's own arguments.
        return unsafe { guarded(st, nr::RT_SIGACTION, args) };
    }
    let mem = ProcMem::new();
    let mut pins = PinSet::new(st);
    let mut ret: isize = 0;
    let new = if act != 0 {
        pins.range(act, 32, false);
        let n = read_ksigaction(&mem, act);
        if n.is_none() {
            ret = -(libc::EFAULT as isize);
        }
        n
    } else {
        None
    };
    if ret == 0 && sig == libc::SIGSYS {
        bump(&counters::LIVE.sigsys_actions);
        let old = chain_get();
        if oact != 0 {
            pins.range(oact, 32, true);
            if !mem.write(oact, &ksigaction_bytes(&old)) {
                ret = -(libc::EFAULT as isize);
            }
        }
        if ret == 0 {
            if let Some(n) = new {
                chain_set(n);
            }
        }
    } else if ret == 0 {
        let mut local = new.unwrap_or_default();
        if local.mask & kept_unblocked() != 0 {
            local.mask &= !kept_unblocked();
            bump(&counters::LIVE.sigmask_fixes);
        }
        if oact != 0 {
            pins.range(oact, 32, true);
        }
        let act_arg = if new.is_some() {
            &local as *const KSigaction as u64
        } else {
            0
        };
        // SAFETY: the kernel reads the local copy of the action and writes
        // the program's `oact` (pinned above if in the arena).
        ret = unsafe {
            syscall6(
                nr::RT_SIGACTION,
                [sig as u64, act_arg, oact as u64, 8, 0, 0],
            )
        };
    }
    pins.release();
    ret
}
