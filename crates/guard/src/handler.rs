//! The SIGSYS handler and the pinning around a re-issued system call.
//!
//! Everything reachable from [`on_sigsys`] is async-signal-safe: no heap,
//! no locks of this crate (the `Pinner` is the caller's, see its contract),
//! no std I/O, no panics (no unchecked indexing, no `unwrap`); memory of the
//! program is read and written only through `process_vm_readv`/`writev`
//! issued via the trampoline (a bad pointer gives `EFAULT`, as the kernel
//! would, instead of a SIGSEGV in the handler). `errno` is saved and
//! restored.

use crate::counters::{self, bump};
use crate::filter::{AUDIT_ARCH_X86_64, TRAP_DATA};
use crate::nr;
use crate::syscalls::{for_each_buffer, Buffer, Coverage, UserMem};
use crate::trampoline::syscall6;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use common::PAGE_SIZE as PAGE;

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

// --- siginfo for SIGSYS (x86_64): signo, errno, code, pad, then
// --- void *call_addr; int syscall; unsigned arch.
#[repr(C)]
struct SigsysInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    call_addr: usize,
    syscall: i32,
    arch: u32,
}

const SYS_SECCOMP: i32 = 1;
const SA_SIGINFO: u64 = 4;
const SA_RESTART: u64 = 0x1000_0000;
const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;
const SA_RESTORER: u64 = 0x0400_0000;
const SIGSYS_BIT: u64 = 1 << (libc::SIGSYS - 1);

/// Signals no mask the program sets may block: SIGSYS, and what
/// [`keep_unblocked`] adds (SIGBUS, where page faults raise it).
static KEPT_UNBLOCKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(SIGSYS_BIT);

fn kept_unblocked() -> u64 {
    KEPT_UNBLOCKED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Keeps `sig` (1–64) out of every mask the guard sets for the program
/// (emulated `rt_sigprocmask`, the `sa_mask` of an emulated
/// `rt_sigaction`), as it keeps SIGSYS: a thread blocking a synchronous
/// signal dies when it is raised.
pub fn keep_unblocked(sig: libc::c_int) {
    if (1..=64).contains(&sig) {
        KEPT_UNBLOCKED.fetch_or(1 << (sig - 1), std::sync::atomic::Ordering::Relaxed);
    }
}
const UNBLOCKABLE: u64 = (1 << (libc::SIGKILL - 1)) | (1 << (libc::SIGSTOP - 1));

/// The kernel's `struct sigaction` on x86_64 (what `rt_sigaction` copies).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct KSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

// --- The program's own SIGSYS disposition ("chain"), in a ring of slots:
// a writer fills the next slot then publishes its index, so readers (the
// handler) never see a half-written entry and never wait.
const CHAIN_SLOTS: usize = 8;
struct ChainSlot {
    handler: AtomicUsize,
    flags: AtomicU64,
    restorer: AtomicUsize,
    mask: AtomicU64,
}
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: ChainSlot = ChainSlot {
    handler: AtomicUsize::new(0),
    flags: AtomicU64::new(0),
    restorer: AtomicUsize::new(0),
    mask: AtomicU64::new(0),
};
static CHAIN: [ChainSlot; CHAIN_SLOTS] = [EMPTY_SLOT; CHAIN_SLOTS];
static CHAIN_CURRENT: AtomicUsize = AtomicUsize::new(0);
static CHAIN_NEXT: AtomicUsize = AtomicUsize::new(1);

fn chain_get() -> KSigaction {
    let slot = &CHAIN[CHAIN_CURRENT.load(Ordering::Acquire) % CHAIN_SLOTS];
    KSigaction {
        handler: slot.handler.load(Ordering::Relaxed),
        flags: slot.flags.load(Ordering::Relaxed),
        restorer: slot.restorer.load(Ordering::Relaxed),
        mask: slot.mask.load(Ordering::Relaxed),
    }
}

fn chain_set(act: KSigaction) {
    let i = CHAIN_NEXT.fetch_add(1, Ordering::Relaxed) % CHAIN_SLOTS;
    let slot = &CHAIN[i];
    slot.handler.store(act.handler, Ordering::Relaxed);
    slot.flags.store(act.flags, Ordering::Relaxed);
    slot.restorer.store(act.restorer, Ordering::Relaxed);
    slot.mask.store(act.mask, Ordering::Relaxed);
    CHAIN_CURRENT.store(i, Ordering::Release);
}

fn ksig_from_libc(act: &libc::sigaction) -> KSigaction {
    // SAFETY: sigset_t is at least 8 bytes; its first word holds signals
    // 1-64 as the kernel's sigset does.
    let mask = unsafe { *(&act.sa_mask as *const libc::sigset_t as *const u64) };
    KSigaction {
        handler: act.sa_sigaction,
        flags: act.sa_flags as u32 as u64,
        restorer: act.sa_restorer.map_or(0, |f| f as usize),
        mask,
    }
}

fn libc_from_ksig(k: &KSigaction) -> libc::sigaction {
    // SAFETY: libc::sigaction is plain data; all-zero is a valid value
    // (SIG_DFL, empty mask, no flags, no restorer).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = k.handler;
    act.sa_flags = k.flags as libc::c_int;
    // SAFETY: a non-zero restorer is a function address the program (its C
    // library) registered; Option<fn> has the null-pointer niche.
    act.sa_restorer = unsafe { std::mem::transmute::<usize, Option<extern "C" fn()>>(k.restorer) };
    // SAFETY: as in ksig_from_libc; the rest of the set stays empty.
    unsafe { *(&mut act.sa_mask as *mut libc::sigset_t as *mut u64) = k.mask };
    act
}

/// Registers `act` as the program's SIGSYS disposition: the guard's handler
/// stays installed and passes SIGSYS signals that are not its own traps to
/// it. Returns the previous one. The LD_PRELOAD library's `sigaction` and
/// `signal` hooks call this for SIGSYS instead of the real call (with the
/// filter's signal protection on, the program's own `rt_sigaction(SIGSYS)`
/// system calls are trapped and land here too).
pub fn chain_handler_for_program(act: Option<&libc::sigaction>) -> libc::sigaction {
    let old = libc_from_ksig(&chain_get());
    if let Some(act) = act {
        chain_set(ksig_from_libc(act));
    }
    old
}

/// Removes SIGSYS from a signal set that is about to be blocked (for the
/// preload library's `sigprocmask`/`pthread_sigmask`/`sigaction` hooks): a
/// guard trap while SIGSYS is blocked makes the kernel reset the handler
/// and kill the process.
pub fn sanitize_sigset(set: &mut libc::sigset_t) {
    // SAFETY: `set` is a valid sigset; sigdelset only clears a bit.
    unsafe {
        libc::sigdelset(set, libc::SIGSYS);
        if kept_unblocked() & (1 << (libc::SIGBUS - 1)) != 0 {
            libc::sigdelset(set, libc::SIGBUS);
        }
    }
}

/// Installs the SIGSYS handler, keeping any previous handler as the
/// program's chained handler.
///
/// Flags: `SA_SIGINFO` (the trap's details); `SA_NODEFER`, so SIGSYS stays
/// unblocked inside the handler: a trap nested in it (from a program signal
/// handler that runs while the re-issued call blocks) is handled instead of
/// killing the process; `SA_RESTART`, which only matters for a SIGSYS sent
/// with `kill` during a blocking call; no `SA_ONSTACK`: the handler runs
/// on the thread's stack at the point of a system call (never a stack
/// overflow), and needs about 20 KiB, more than many alternate stacks have.
/// It is installed with the raw system call and the guard's own
/// `rt_sigreturn` restorer, so that a `sigaction` hook of the LD_PRELOAD
/// library does not see it.
/// The mask is empty, so other signals can interrupt the re-issued call
/// exactly as they would have interrupted the original one.
pub(crate) fn install_handler() -> Result<(), std::io::Error> {
    let ours = KSigaction {
        handler: on_sigsys as *const () as usize,
        flags: SA_SIGINFO | SA_NODEFER | SA_RESTART | SA_RESTORER,
        restorer: crate::trampoline::restorer_address(),
        mask: 0,
    };
    let mut old = KSigaction::default();
    // SAFETY: rt_sigaction reads `ours` and writes `old`, both 32-byte
    // kernel sigactions on this stack.
    let rc = unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                libc::SIGSYS as u64,
                &ours as *const KSigaction as u64,
                &mut old as *mut KSigaction as u64,
                8,
                0,
                0,
            ],
        )
    };
    if rc < 0 {
        return Err(std::io::Error::from_raw_os_error(-rc as i32));
    }
    if old.handler != ours.handler {
        chain_set(old);
    }
    Ok(())
}

// ---------------------------------------------------------------------------

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
    fn write(&self, addr: usize, bytes: &[u8]) -> bool {
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

// ---------------------------------------------------------------------------

/// Most pinned ranges per call (`IOV_MAX`).
pub const MAX_PINS: usize = 1024;

/// The pins of one call: page ranges as page indices relative to the arena
/// (`u32`: arenas up to 16 TiB), and a write bit per entry: about 8 KiB of
/// the handler's stack for 1024 ranges.
struct PinSet<'s> {
    st: &'s State,
    starts: [u32; MAX_PINS],
    ends: [u32; MAX_PINS],
    write: [u64; MAX_PINS / 64],
    n: usize,
}

impl<'s> PinSet<'s> {
    fn new(st: &'s State) -> Self {
        PinSet {
            st,
            starts: [0; MAX_PINS],
            ends: [0; MAX_PINS],
            write: [0; MAX_PINS / 64],
            n: 0,
        }
    }

    fn to_addr(&self, page: u32) -> usize {
        self.st.lo + page as usize * PAGE
    }

    fn to_page(&self, addr: usize) -> u32 {
        ((addr - self.st.lo) / PAGE) as u32
    }

    /// Entry `i` as `(start, end, write)` addresses.
    fn entry(&self, i: usize) -> (usize, usize, bool) {
        let s = self.starts.get(i).copied().unwrap_or(0);
        let e = self.ends.get(i).copied().unwrap_or(0);
        let w = self
            .write
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0);
        (self.to_addr(s), self.to_addr(e), w)
    }

    fn set_entry(&mut self, i: usize, start: usize, end: usize, write: bool) {
        let (s, e) = (self.to_page(start), self.to_page(end));
        if let (Some(ps), Some(pe), Some(pw)) = (
            self.starts.get_mut(i),
            self.ends.get_mut(i),
            self.write.get_mut(i / 64),
        ) {
            *ps = s;
            *pe = e;
            if write {
                *pw |= 1 << (i % 64);
            } else {
                *pw &= !(1 << (i % 64));
            }
        }
    }

    /// Clips `[addr, addr+len)` to the arena, page-aligned.
    fn clip(&self, addr: usize, len: usize) -> Option<(usize, usize)> {
        let a = addr.max(self.st.lo);
        let b = addr.saturating_add(len).min(self.st.hi);
        if a >= b {
            return None;
        }
        Some((a & !(PAGE - 1), b.saturating_add(PAGE - 1) & !(PAGE - 1)))
    }

    fn in_arena(&self, addr: usize) -> bool {
        addr >= self.st.lo && addr < self.st.hi
    }

    /// Pins the pages of `[a, b)` not already pinned by this call (with
    /// `write` if needed).
    fn pin_pages(&mut self, a: usize, b: usize, write: bool) {
        let mut cur = a;
        let mut guard = 0;
        while cur < b {
            guard += 1;
            if guard > 4 * MAX_PINS {
                return;
            }
            let mut covered_to = None;
            let mut next_start = b;
            for i in 0..self.n {
                let (s, e, w) = self.entry(i);
                if write && !w {
                    continue;
                }
                if s <= cur && cur < e {
                    covered_to = Some(e);
                    break;
                }
                if s > cur && s < next_start {
                    next_start = s;
                }
            }
            if let Some(e) = covered_to {
                cur = e;
                continue;
            }
            self.pin_new(cur, next_start, write);
            cur = next_start;
        }
    }

    fn pin_new(&mut self, a: usize, b: usize, write: bool) {
        if self.n >= MAX_PINS {
            bump(&counters::LIVE.pin_overflows);
            return;
        }
        bump(&counters::LIVE.pin_calls);
        let t = self.st.pinner.pin(a, b - a, write);
        if t.len == 0 {
            return;
        }
        counters::LIVE
            .pinned_bytes
            .fetch_add(t.len as u64, Ordering::Relaxed);
        // Keep only the arena part, page-aligned (a pinner returns a
        // sub-range of what was asked).
        let ts = t.addr.max(self.st.lo) & !(PAGE - 1);
        let te = t
            .addr
            .saturating_add(t.len)
            .min(self.st.hi)
            .saturating_add(PAGE - 1)
            & !(PAGE - 1);
        if ts >= te {
            return;
        }
        // Merge with an adjacent range pinned for the same access.
        for i in 0..self.n {
            let (s, e, w) = self.entry(i);
            if w != write {
                continue;
            }
            if e == ts {
                self.set_entry(i, s, te, w);
                return;
            }
            if s == te {
                self.set_entry(i, ts, e, w);
                return;
            }
        }
        self.set_entry(self.n, ts, te, write);
        self.n += 1;
    }

    fn range(&mut self, addr: usize, len: usize, write: bool) {
        if let Some((a, b)) = self.clip(addr, len) {
            self.pin_pages(a, b, write)
        }
    }

    fn buffer(&mut self, b: Buffer, mem: &ProcMem) {
        match b {
            Buffer::Range { addr, len, access } => self.range(addr, len, access.kernel_writes()),
            Buffer::Registered { addr, len, access } => {
                if let Some((a, e)) = self.clip(addr, len) {
                    bump(&counters::LIVE.registered);
                    self.st.pinner.registered(a, e - a);
                    self.pin_pages(a, e, access.kernel_writes());
                }
            }
            Buffer::Unknown { addr } => {
                if self.in_arena(addr) {
                    bump(&counters::LIVE.unknown_buffers);
                    self.range(addr, 1, true)
                }
            }
            Buffer::CStr { addr, max } => self.cstr(addr, max, mem),
        }
    }

    /// A string in the arena: pin a page, look for the NUL in it, go on to
    /// the next page only if there is none.
    fn cstr(&mut self, addr: usize, max: usize, mem: &ProcMem) {
        let end = addr.saturating_add(max);
        let mut p = addr;
        while p < end && self.in_arena(p) {
            let page = p & !(PAGE - 1);
            let page_end = page.saturating_add(PAGE);
            self.pin_pages(page, page_end.min(self.st.hi), false);
            let stop = page_end.min(end);
            while p < stop {
                match mem.read_u8(p) {
                    Some(0) | None => return,
                    Some(_) => p += 1,
                }
            }
        }
    }

    fn release(&mut self) {
        for i in (0..self.n).rev() {
            let (s, e, _) = self.entry(i);
            self.st.pinner.unpin(PinToken {
                addr: s,
                len: e - s,
            });
        }
        self.n = 0;
    }
}

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
unsafe fn guarded(st: &State, nr: i64, args: &[u64; 6]) -> isize {
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

/// Runs `call` with the arena pages of `[addr, addr + len)` pinned
/// (writable if `write`), then unpins them.
pub(crate) fn with_pinned<T>(
    st: &State,
    addr: usize,
    len: usize,
    write: bool,
    call: impl FnOnce() -> T,
) -> T {
    with_pinned_ranges(st, &[(addr, len)], write, call)
}

/// Runs `call` with the arena pages of every `(addr, len)` of `ranges`
/// pinned (writable if `write`), then unpins them.
pub(crate) fn with_pinned_ranges<T>(
    st: &State,
    ranges: &[(usize, usize)],
    write: bool,
    call: impl FnOnce() -> T,
) -> T {
    let mut pins = PinSet::new(st);
    for &(addr, len) in ranges {
        pins.range(addr, len, write);
    }
    let ret = call();
    pins.release();
    ret
}

/// `rt_sigprocmask` inside a signal handler would be undone by
/// `rt_sigreturn`, which restores the frame's mask: emulate it on the
/// frame's `uc_sigmask`, keeping SIGSYS unblocked.
fn emulate_sigprocmask(st: &State, uc: &mut libc::ucontext_t, args: &[u64; 6]) -> isize {
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
fn emulate_sigaction(st: &State, args: &[u64; 6]) -> isize {
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

/// Passes a SIGSYS that is not the guard's to the program's handler, or
/// applies the default action (core dump) if it has none.
///
/// # Safety
/// Called from the signal handler with its own arguments.
unsafe fn chain(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uctx: *mut libc::c_void,
    seccomp: bool,
) {
    let act = chain_get();
    match act.handler {
        h if h == libc::SIG_IGN && !seccomp => {}
        h if h == libc::SIG_DFL || h == libc::SIG_IGN => die(),
        h => {
            bump(&counters::LIVE.chained);
            if act.flags & SA_RESETHAND != 0 {
                chain_set(KSigaction::default());
            }
            let mut saved: u64 = 0;
            let block = act.mask & !kept_unblocked();
            if block != 0 {
                // SAFETY: rt_sigprocmask reads and writes these 8-byte sets.
                unsafe {
                    syscall6(
                        nr::RT_SIGPROCMASK,
                        [
                            libc::SIG_BLOCK as u64,
                            &block as *const u64 as u64,
                            &mut saved as *mut u64 as u64,
                            8,
                            0,
                            0,
                        ],
                    )
                };
            }
            if act.flags & SA_SIGINFO != 0 {
                // SAFETY: the program registered this as an SA_SIGINFO
                // handler; it receives our own arguments.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(h) };
                f(sig, info, uctx);
            } else {
                // SAFETY: the program registered this as a plain handler.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
                f(sig);
            }
            if block != 0 {
                // SAFETY: restores the mask saved above.
                unsafe {
                    syscall6(
                        nr::RT_SIGPROCMASK,
                        [
                            libc::SIG_SETMASK as u64,
                            &saved as *const u64 as u64,
                            0,
                            8,
                            0,
                            0,
                        ],
                    )
                };
            }
        }
    }
}

/// SIGSYS with the default action: reset it, make sure it is unblocked and
/// raise it; the process dumps core as it would have without the guard.
fn die() {
    let dfl = KSigaction::default();
    let unblock: u64 = SIGSYS_BIT;
    // SAFETY: raw calls with pointers to locals; tgkill signals this thread.
    unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                libc::SIGSYS as u64,
                &dfl as *const KSigaction as u64,
                0,
                8,
                0,
                0,
            ],
        );
        syscall6(
            nr::RT_SIGPROCMASK,
            [
                libc::SIG_UNBLOCK as u64,
                &unblock as *const u64 as u64,
                0,
                8,
                0,
                0,
            ],
        );
        let pid = syscall6(nr::GETPID, [0; 6]);
        let tid = syscall6(nr::GETTID, [0; 6]);
        syscall6(
            nr::TGKILL,
            [pid as u64, tid as u64, libc::SIGSYS as u64, 0, 0, 0],
        );
        // Not reached if the default action ran; exit like a SIGSYS death.
        syscall6(nr::EXIT_GROUP, [128 + libc::SIGSYS as u64, 0, 0, 0, 0, 0]);
    }
}

const GREG_RDI: usize = libc::REG_RDI as usize;
const GREG_RSI: usize = libc::REG_RSI as usize;
const GREG_RDX: usize = libc::REG_RDX as usize;
const GREG_R10: usize = libc::REG_R10 as usize;
const GREG_R8: usize = libc::REG_R8 as usize;
const GREG_R9: usize = libc::REG_R9 as usize;
const GREG_RAX: usize = libc::REG_RAX as usize;

/// The SIGSYS handler.
extern "C" fn on_sigsys(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    // SAFETY: __errno_location returns this thread's errno.
    let errno_ptr = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved_errno = unsafe { *errno_ptr };
    // SAFETY: the kernel passes a valid siginfo (SA_SIGINFO); the SIGSYS
    // layout is read through our repr(C) view of it.
    let si = unsafe { &*(info as *const SigsysInfo) };
    let seccomp = si.code == SYS_SECCOMP;
    let st = STATE.get();
    let ours = seccomp && si.errno == TRAP_DATA as i32 && si.arch == AUDIT_ARCH_X86_64;
    match (ours, st, uctx.is_null()) {
        (true, Some(st), false) => {
            bump(&counters::LIVE.traps);
            // SAFETY: the kernel passes this thread's interrupted context.
            let uc = unsafe { &mut *(uctx as *mut libc::ucontext_t) };
            let ret = if si.call_addr == st.trampoline_ret {
                // A filter that does not know our trampoline (inherited
                // across execve): re-issuing would trap again forever.
                bump(&counters::LIVE.foreign_traps);
                -(libc::ENOSYS as isize)
            } else {
                let g = &uc.uc_mcontext.gregs;
                let get = |i: usize| g.get(i).copied().unwrap_or(0) as u64;
                let args = [
                    get(GREG_RDI),
                    get(GREG_RSI),
                    get(GREG_RDX),
                    get(GREG_R10),
                    get(GREG_R8),
                    get(GREG_R9),
                ];
                match si.syscall as i64 {
                    nr::RT_SIGPROCMASK => emulate_sigprocmask(st, uc, &args),
                    nr::RT_SIGACTION => emulate_sigaction(st, &args),
                    // SAFETY: the program's own call, re-issued as it was.
                    n => unsafe { guarded(st, n, &args) },
                }
            };
            if let Some(rax) = uc.uc_mcontext.gregs.get_mut(GREG_RAX) {
                *rax = ret as i64;
            }
        }
        // SAFETY: our own arguments, passed on.
        _ => unsafe { chain(sig, info, uctx, seccomp) },
    }
    // SAFETY: as above.
    unsafe { *errno_ptr = saved_errno };
}

/// Whether the guard's handler is SIGSYS's current disposition.
pub fn handler_installed() -> bool {
    let mut cur = KSigaction::default();
    // SAFETY: query only; the kernel writes `cur`.
    let rc = unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                libc::SIGSYS as u64,
                0,
                &mut cur as *mut KSigaction as u64,
                8,
                0,
                0,
            ],
        )
    };
    rc == 0 && cur.handler == on_sigsys as *const () as usize
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Counts pins per page and records the calls.
    #[derive(Default)]
    pub(crate) struct CountingPinner {
        pages: Mutex<HashMap<usize, i64>>,
        calls: Mutex<Vec<(usize, usize, bool)>>,
        registered: Mutex<Vec<(usize, usize)>>,
    }

    impl Pinner for CountingPinner {
        fn pin(&self, addr: usize, len: usize, write: bool) -> PinToken {
            assert_eq!(addr % PAGE, 0);
            assert_eq!(len % PAGE, 0);
            self.calls.lock().unwrap().push((addr, len, write));
            let mut p = self.pages.lock().unwrap();
            for a in (addr..addr + len).step_by(PAGE) {
                *p.entry(a).or_default() += 1;
            }
            PinToken { addr, len }
        }
        fn unpin(&self, t: PinToken) {
            let mut p = self.pages.lock().unwrap();
            for a in (t.addr..t.addr + t.len).step_by(PAGE) {
                let c = p.entry(a).or_default();
                *c -= 1;
                assert!(*c >= 0, "page {a:#x} unpinned more than pinned");
            }
        }
        fn registered(&self, addr: usize, len: usize) {
            self.registered.lock().unwrap().push((addr, len));
        }
    }

    impl CountingPinner {
        pub(crate) fn all_released(&self) -> bool {
            self.pages.lock().unwrap().values().all(|&c| c == 0)
        }
        fn pinned(&self, addr: usize) -> i64 {
            self.pages.lock().unwrap().get(&addr).copied().unwrap_or(0)
        }
        pub(crate) fn pin_calls(&self) -> usize {
            self.calls.lock().unwrap().len()
        }
    }

    pub(crate) fn state(lo: usize, pages: usize) -> (&'static State, &'static CountingPinner) {
        let p: &'static CountingPinner = Box::leak(Box::default());
        let st = Box::leak(Box::new(State {
            lo,
            hi: lo + pages * PAGE,
            pinner: p,
            trampoline_ret: 0,
            protect_sigsys: true,
        }));
        (st, p)
    }

    const LO: usize = 1 << 40;

    #[test]
    fn adjacent_pins_merge_and_overlaps_are_not_pinned_twice() {
        let (st, p) = state(LO, 64);
        let mut set = PinSet::new(st);
        set.range(LO + 10, 100, true);
        set.range(LO + PAGE, PAGE, true);
        assert_eq!(set.n, 1, "adjacent write pins merge");
        assert_eq!(set.entry(0), (LO, LO + 2 * PAGE, true));
        // Inside what is pinned for writing: nothing to do, for either access.
        set.range(LO + 5, 10, false);
        set.range(LO + PAGE + 5, 10, true);
        assert_eq!(p.calls.lock().unwrap().len(), 2);
        // Read pins around it: only the uncovered pages.
        set.range(LO + 3 * PAGE, 3 * PAGE, false);
        set.range(LO + 2 * PAGE, 5 * PAGE, false); // pages 2..7: 2 and 6 are new
        assert_eq!(p.pinned(LO + 2 * PAGE), 1);
        assert_eq!(p.pinned(LO + 4 * PAGE), 1);
        assert_eq!(p.pinned(LO + 6 * PAGE), 1);
        // A write to read-pinned pages pins them again, writable.
        set.range(LO + 4 * PAGE, 1, true);
        assert_eq!(p.pinned(LO + 4 * PAGE), 2);
        assert_eq!(
            p.calls.lock().unwrap().last(),
            Some(&(LO + 4 * PAGE, PAGE, true))
        );
        set.release();
        assert!(p.all_released());
    }

    #[test]
    fn buffers_are_clipped_to_the_arena() {
        let (st, p) = state(LO, 4);
        let mut set = PinSet::new(st);
        set.range(LO - 100, 200, true); // starts below (the guard page)
        set.range(LO + 3 * PAGE + 10, 10 * PAGE, false); // runs past the end
        set.range(LO + 100 * PAGE, 10, false); // outside
        set.range(usize::MAX - 5, 100, false); // wraps
        let calls = p.calls.lock().unwrap().clone();
        assert_eq!(calls, vec![(LO, PAGE, true), (LO + 3 * PAGE, PAGE, false)]);
        set.release();
        assert!(p.all_released());
    }

    #[test]
    fn more_than_1024_ranges_overflow_and_are_counted() {
        let (st, p) = state(LO, 4096);
        let before = counters::LIVE.pin_overflows.load(Ordering::Relaxed);
        let mut set = PinSet::new(st);
        for i in 0..1030 {
            set.range(LO + 2 * i * PAGE, 1, i % 2 == 0); // never adjacent
        }
        assert_eq!(set.n, MAX_PINS);
        assert!(counters::LIVE.pin_overflows.load(Ordering::Relaxed) >= before + 6);
        set.release();
        assert!(p.all_released());
    }

    #[test]
    fn strings_are_pinned_a_page_at_a_time_up_to_the_nul() {
        // A real buffer (ProcMem reads it with process_vm_readv) treated as
        // the arena.
        let mut buf = vec![b'x'; 6 * PAGE];
        let base = (buf.as_ptr() as usize + PAGE - 1) & !(PAGE - 1);
        let off = base - buf.as_ptr() as usize;
        buf[off + 2 * PAGE + 100] = 0; // the string ends in its third page
        let (st, p) = state(base, 4);
        let mem = ProcMem::new();
        let mut set = PinSet::new(st);
        set.cstr(base + 50, 16384, &mem);
        let calls = p.calls.lock().unwrap().clone();
        assert_eq!(
            calls,
            vec![
                (base, PAGE, false),
                (base + PAGE, PAGE, false),
                (base + 2 * PAGE, PAGE, false)
            ]
        );
        assert_eq!(set.n, 1, "merged");
        set.release();
        // `max` stops it earlier.
        let mut set = PinSet::new(st);
        set.cstr(base + PAGE - 10, 20, &mem);
        assert_eq!(p.calls.lock().unwrap().len(), 5);
        set.release();
        assert!(p.all_released());
        drop(buf);
    }

    #[test]
    fn registered_and_unknown_buffers() {
        let (st, p) = state(LO, 16);
        let mem = ProcMem::new();
        let mut set = PinSet::new(st);
        set.buffer(
            Buffer::Registered {
                addr: LO + 100,
                len: 4,
                access: crate::Access::KernelReadsWrites,
            },
            &mem,
        );
        set.buffer(
            Buffer::Unknown {
                addr: LO + 5 * PAGE + 1,
            },
            &mem,
        );
        set.buffer(Buffer::Unknown { addr: 12345 }, &mem); // outside: ignored
        assert_eq!(*p.registered.lock().unwrap(), vec![(LO, PAGE)]);
        assert_eq!(p.pinned(LO + 5 * PAGE), 1);
        set.release();
        assert!(p.all_released());
    }

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

    #[test]
    fn chain_slots_and_sigset_helpers() {
        // SAFETY: plain data.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = 0x1234;
        act.sa_flags = libc::SA_SIGINFO;
        // SAFETY: sigaddset on a local set.
        unsafe { libc::sigaddset(&mut act.sa_mask, libc::SIGUSR1) };
        let old = chain_handler_for_program(Some(&act));
        let now = chain_handler_for_program(None);
        assert_eq!(now.sa_sigaction, 0x1234);
        assert_eq!(now.sa_flags, libc::SA_SIGINFO);
        // SAFETY: sigismember on a local set.
        assert_eq!(unsafe { libc::sigismember(&now.sa_mask, libc::SIGUSR1) }, 1);
        chain_handler_for_program(Some(&old));
        // SAFETY: as above.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::sigfillset(&mut set) };
        sanitize_sigset(&mut set);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sigismember(&set, libc::SIGSYS) }, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sigismember(&set, libc::SIGINT) }, 1);
    }
}
