//! Reading and writing the program's memory from the SIGSYS handler:
//! `process_vm_readv`/`writev` issued through the trampoline, so that a bad
//! pointer gives `EFAULT`, as the kernel would, instead of a SIGSEGV in the
//! handler. Async-signal-safe: no heap, no locks, one 256-byte cache on the
//! caller's stack.

use crate::nr;
use crate::syscalls::UserMem;
use crate::trampoline::syscall6;
use std::cell::{Cell, UnsafeCell};

/// Reads the program's memory with `process_vm_readv` through the
/// trampoline (a fault is `None`, never a signal), 256 bytes at a time.
pub(crate) struct ProcMem {
    /// This process's id, looked up at the first read (0: not yet).
    pid: Cell<i32>,
    base: Cell<usize>,
    len: Cell<usize>,
    buf: UnsafeCell<[u8; 256]>,
    direct: Cell<bool>,
}

#[repr(C)]
struct Iovec {
    base: usize,
    len: usize,
}

impl ProcMem {
    pub(crate) fn new() -> Self {
        ProcMem {
            pid: Cell::new(0),
            base: Cell::new(0),
            len: Cell::new(0),
            buf: UnsafeCell::new([0; 256]),
            direct: Cell::new(false),
        }
    }

    fn pid(&self) -> u64 {
        if self.pid.get() == 0 {
            // SAFETY: getpid takes no arguments. (Not cached across calls: a
            // vfork child shares our memory but has its own pid.)
            self.pid.set(unsafe { syscall6(nr::GETPID, [0; 6]) } as i32);
        }
        self.pid.get() as u64
    }

    /// One `process_vm_readv` (`nr`) or `process_vm_writev` of `len` bytes
    /// between our `local` buffer and the program's `remote` address, both
    /// through the kernel's checked accessors. Returns the kernel's result,
    /// or `None` where the call is forbidden here (`EPERM`, `ENOSYS`: a
    /// sandbox), after which the program's memory is accessed directly
    /// (`direct`).
    ///
    /// # Safety
    /// `[local, local + len)` is a buffer of ours the kernel may write (a
    /// read) or read (a write).
    unsafe fn vm_rw(&self, nr: i64, local: usize, remote: usize, len: usize) -> Option<isize> {
        let local = Iovec { base: local, len };
        let remote = Iovec { base: remote, len };
        // SAFETY: the caller's guarantee for `local`; `remote` is only
        // touched by the kernel's checked accessors.
        let n = unsafe {
            syscall6(
                nr,
                [
                    self.pid(),
                    &local as *const Iovec as u64,
                    1,
                    &remote as *const Iovec as u64,
                    1,
                    0,
                ],
            )
        };
        if n == -(libc::EPERM as isize) || n == -(libc::ENOSYS as isize) {
            self.direct.set(true);
            return None;
        }
        Some(n)
    }

    fn fill(&self, addr: usize) -> bool {
        // SAFETY: process_vm_readv writes at most 256 bytes into `buf`,
        // which this (non-Sync, single-frame) reader owns.
        let n = unsafe { self.vm_rw(nr::PROCESS_VM_READV, self.buf.get() as usize, addr, 256) };
        match n {
            Some(n) if n > 0 => {
                self.base.set(addr);
                self.len.set(n as usize);
                true
            }
            _ => {
                self.len.set(0);
                false
            }
        }
    }

    fn read<const N: usize>(&self, addr: usize) -> Option<[u8; N]> {
        if self.direct.get() {
            let mut out = [0u8; N];
            // SAFETY: fallback when process_vm_readv is unavailable: the
            // address is one the program passed to a system call and the
            // arena part was pinned (faulted in) first; a wild pointer would
            // fault here, where the kernel would have returned EFAULT.
            unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), N) };
            return Some(out);
        }
        let end = addr.checked_add(N)?;
        let hit = |s: &Self| addr >= s.base.get() && end <= s.base.get() + s.len.get();
        if !hit(self) && (!self.fill(addr) || !hit(self)) {
            if self.direct.get() {
                return self.read::<N>(addr);
            }
            return None;
        }
        let off = addr - self.base.get();
        let mut out = [0u8; N];
        // SAFETY: `buf` holds `len` valid bytes from `base`; [off, off+N)
        // lies inside them (checked by `hit`); nothing else borrows `buf`.
        let buf = unsafe { &*self.buf.get() };
        out.copy_from_slice(buf.get(off..off + N)?);
        Some(out)
    }

    /// Reads `dst.len()` bytes at `addr` straight into `dst` (no caching).
    pub(crate) fn read_into(&self, addr: usize, dst: &mut [u8]) -> bool {
        if dst.is_empty() {
            return true;
        }
        if !self.direct.get() {
            // SAFETY: the kernel writes at most `dst.len()` bytes into `dst`,
            // which we borrow mutably.
            let n = unsafe {
                self.vm_rw(
                    nr::PROCESS_VM_READV,
                    dst.as_mut_ptr() as usize,
                    addr,
                    dst.len(),
                )
            };
            if let Some(n) = n {
                return n == dst.len() as isize;
            }
        }
        // SAFETY: as in `read`'s fallback.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), dst.len()) };
        true
    }

    /// Writes `bytes` at `addr` in the program's memory (`process_vm_writev`).
    pub(crate) fn write(&self, addr: usize, bytes: &[u8]) -> bool {
        if !self.direct.get() {
            // SAFETY: the kernel only reads `bytes`.
            let n = unsafe {
                self.vm_rw(
                    nr::PROCESS_VM_WRITEV,
                    bytes.as_ptr() as usize,
                    addr,
                    bytes.len(),
                )
            };
            if let Some(n) = n {
                return n == bytes.len() as isize;
            }
        }
        // SAFETY: as in `read`'s fallback.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as *mut u8, bytes.len()) };
        true
    }
}

impl UserMem for ProcMem {
    fn read_u64(&self, addr: usize) -> Option<u64> {
        self.read::<8>(addr).map(u64::from_ne_bytes)
    }
    fn read_u32(&self, addr: usize) -> Option<u32> {
        self.read::<4>(addr).map(u32::from_ne_bytes)
    }
    fn read_u8(&self, addr: usize) -> Option<u8> {
        self.read::<1>(addr).map(|b| b[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_mem_reads_writes_and_faults() {
        let mem = ProcMem::new();
        let word: u64 = 0x1122_3344_5566_7788;
        let at = &word as *const u64 as usize;
        assert_eq!(mem.read_u64(at), Some(word));
        assert_eq!(mem.read_u32(at + 4), Some(0x1122_3344));
        assert_eq!(mem.read_u8(at), Some(0x88));
        assert_eq!(mem.read_u64(8), None);
        assert_eq!(mem.read_u64(usize::MAX - 3), None);
        let mut target = [0u8; 8];
        assert!(mem.write(target.as_mut_ptr() as usize, &[1, 2, 3]));
        assert_eq!(&target[..4], &[1, 2, 3, 0]);
        assert!(!mem.write(8, &[1]));
    }
}
