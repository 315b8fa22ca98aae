//! `execve` from a task that shares the arena but is not the runtime's
//! process: a `vfork` child (`vfork`, `posix_spawn`, `system`).
//!
//! Such a child can pin arena pages through its parent's runtime (same
//! memory, same runtime threads) for a call that returns. A successful
//! `execve` does not return, though, so its pins would stay in the parent
//! for good, keeping those pages resident forever. So the child copies the
//! path, `argv` and `envp` (arrays and strings) out of the arena into a
//! scratch mapping, pinning each page only while it reads it, and hands the
//! kernel the copies, which nothing needs to keep resident.
//!
//! The scratch lives in the parent's memory too (the child shares it).
//! Who frees it after a successful `execve`? The kernel: before claiming a
//! slot's scratch the child points its `clear_child_tid` at the slot's
//! owner word (`set_tid_address`), and the kernel, when the child leaves
//! this memory (its `execve` replaced it, or it exited), writes 0 there,
//! which frees the slot for the next child. [`SLOTS`] slots each keep their
//! mapping; a child that finds them all taken uses a mapping of its own,
//! which stays behind after its `execve` (counted in
//! `exec_scratch_leaked`).
//!
//! A `vfork` child's `clear_child_tid` is `NULL` (neither `vfork` nor
//! `posix_spawn` set it); after a failed `execve` it is set back to `NULL`.
//!
//! Async-signal-safe like the rest of the handler: no heap, no locks, the
//! program's memory read with `process_vm_readv` (a bad pointer gives
//! `EFAULT`, as the kernel would).

use crate::counters::{self, bump};
use crate::nr;
use crate::pins::with_pinned;
use crate::proc_mem::ProcMem;
use crate::state::State;
use crate::syscalls::MAX_ARG_STRLEN;
use crate::trampoline::syscall6;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use common::PAGE_SIZE as PAGE;

/// Scratch mappings kept for reuse.
pub(crate) const SLOTS: usize = 8;

/// One scratch mapping's size: the path, then everything `execve` may take
/// (the kernel caps arrays and strings together at 6 MiB: `_STK_LIM / 4 *
/// 3`), rounded up.
const SCRATCH: usize = 8 << 20;
/// Room for the path at the start of the scratch (`PATH_MAX`).
const PATH_ROOM: usize = crate::syscalls::PATH_MAX;

struct Slot {
    /// The tid of the child using the slot; 0: free. The kernel writes 0
    /// here when that child leaves this memory (`clear_child_tid`).
    owner: AtomicU32,
    /// The slot's mapping (0: not made yet); only its owner touches it.
    base: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    owner: AtomicU32::new(0),
    base: AtomicUsize::new(0),
};
static SCRATCH_SLOTS: [Slot; SLOTS] = [FREE; SLOTS];

/// Where the copies go.
struct Scratch {
    base: usize,
    /// The slot held, if any (else the mapping is the child's own).
    slot: Option<&'static Slot>,
}

/// Issues `execve`/`execveat` (`nr`) with its path, `argv` and `envp`
/// copied out of the arena. Returns what the kernel returned (on success
/// it does not return at all).
///
/// # Safety
/// `nr` is `EXECVE` or `EXECVEAT` and `args` are the program's arguments.
pub(crate) unsafe fn execve(st: &State, nr: i64, args: &[u64; 6]) -> isize {
    bump(&counters::LIVE.exec_copies);
    // (path, argv, envp) argument indices.
    let (ip, ia, ie) = if nr == nr::EXECVEAT {
        (1, 2, 3)
    } else {
        (0, 1, 2)
    };
    let Some(scratch) = claim() else {
        return -(libc::ENOMEM as isize);
    };
    let mem = ProcMem::new();
    let mut out = *args;
    let copied = copy_all(st, &mem, scratch.base, args[ip], args[ia], args[ie]);
    let ret = match copied {
        Ok((p, a, e)) => {
            (out[ip], out[ia], out[ie]) = (p, a, e);
            // SAFETY: the program's call with its pointers replaced by copies
            // of what they pointed to, in memory this call owns.
            unsafe { syscall6(nr, out) }
        }
        Err(errno) => -(errno as isize),
    };
    // Still here: the call failed. Give the slot back.
    release(scratch);
    ret
}

/// A free slot (its owner word made the kernel's `clear_child_tid`), or a
/// mapping of our own.
fn claim() -> Option<Scratch> {
    // SAFETY: gettid takes no arguments.
    let tid = unsafe { syscall6(nr::GETTID, [0; 6]) } as u32;
    for slot in &SCRATCH_SLOTS {
        if slot
            .owner
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        let mut base = slot.base.load(Ordering::Relaxed);
        if base == 0 {
            match map_scratch() {
                Some(b) => {
                    base = b;
                    slot.base.store(b, Ordering::Relaxed);
                }
                None => {
                    slot.owner.store(0, Ordering::Release);
                    return None;
                }
            }
        }
        // SAFETY: the owner word is a static this process never unmaps;
        // the kernel writes 0 to it when this task leaves the memory.
        unsafe {
            syscall6(
                nr::SET_TID_ADDRESS,
                [slot.owner.as_ptr() as u64, 0, 0, 0, 0, 0],
            )
        };
        return Some(Scratch {
            base,
            slot: Some(slot),
        });
    }
    bump(&counters::LIVE.exec_scratch_leaked);
    map_scratch().map(|base| Scratch { base, slot: None })
}

fn release(s: Scratch) {
    match s.slot {
        Some(slot) => {
            // SAFETY: clears this task's clear_child_tid (a vfork child's
            // was NULL: see the module docs).
            unsafe { syscall6(nr::SET_TID_ADDRESS, [0; 6]) };
            slot.owner.store(0, Ordering::Release);
        }
        None => unmap_scratch(s.base),
    }
}

/// Unmaps a scratch mapping of [`map_scratch`] no slot keeps.
fn unmap_scratch(base: usize) {
    // SAFETY: the mapping is the caller's own, and nothing points into it.
    unsafe { syscall6(nr::MUNMAP, [base as u64, SCRATCH as u64, 0, 0, 0, 0]) };
}

fn map_scratch() -> Option<usize> {
    let prot = (libc::PROT_READ | libc::PROT_WRITE) as u64;
    let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE) as u64;
    // SAFETY: a fresh anonymous mapping; the kernel picks the address.
    let r = unsafe { syscall6(nr::MMAP, [0, SCRATCH as u64, prot, flags, u64::MAX, 0]) };
    (r > 0).then_some(r as usize)
}

/// Copies the path, then both arrays' pointers, then every string, into
/// the scratch at `base`. Returns the new `(path, argv, envp)` or an errno.
fn copy_all(
    st: &State,
    mem: &ProcMem,
    base: usize,
    path: u64,
    argv: u64,
    envp: u64,
) -> Result<(u64, u64, u64), i32> {
    let mut w = Writer {
        st,
        mem,
        at: base + PATH_ROOM,
        end: base + SCRATCH,
    };
    let new_path = if path == 0 {
        0
    } else {
        let mut pw = Writer {
            at: base,
            end: base + PATH_ROOM,
            ..w
        };
        pw.string(path as usize, PATH_ROOM).map_err(|e| {
            if e == libc::E2BIG {
                libc::ENAMETOOLONG
            } else {
                e
            }
        })? as u64
    };
    let new_argv = w.array(argv)?;
    let new_envp = w.array(envp)?;
    for arr in [new_argv, new_envp] {
        let mut at = arr as usize;
        if at == 0 {
            continue;
        }
        loop {
            // SAFETY: `at` walks an array this call wrote into its scratch,
            // ended by a 0 entry.
            let p = unsafe { (at as *const u64).read() };
            if p == 0 {
                break;
            }
            let copy = w.string(p as usize, MAX_ARG_STRLEN)?;
            // SAFETY: as above; the scratch is this call's own.
            unsafe { (at as *mut u64).write(copy as u64) };
            at += 8;
        }
    }
    Ok((new_path, new_argv, new_envp))
}

/// Appends to the scratch `[at, end)`.
#[derive(Clone, Copy)]
struct Writer<'a> {
    st: &'a State,
    mem: &'a ProcMem,
    at: usize,
    end: usize,
}

impl Writer<'_> {
    /// Copies the `NULL`-terminated pointer array at `arr` (its entries
    /// unchanged for now); 0 stays 0.
    fn array(&mut self, arr: u64) -> Result<u64, i32> {
        if arr == 0 {
            return Ok(0);
        }
        self.at = self.at.next_multiple_of(8);
        Ok(self.terminated(arr as usize, usize::MAX, 8)? as u64)
    }

    /// Copies the string at `src` (at most `max` bytes with its NUL);
    /// returns where the copy starts.
    fn string(&mut self, src: usize, max: usize) -> Result<usize, i32> {
        self.terminated(src, max, 1)
    }

    /// Copies what `src` points to up to and with its terminator, the
    /// first all-zero element of `unit` bytes (a string's NUL, an array's
    /// `NULL`), at most `max` bytes, a page at a time (each page pinned
    /// only while it is read); returns where the copy starts.
    fn terminated(&mut self, src: usize, max: usize, unit: usize) -> Result<usize, i32> {
        let start = self.at;
        // Bytes of the copy already searched for the terminator.
        let mut searched = 0;
        loop {
            let copied = self.at - start;
            let room = self.end - self.at;
            if room == 0 || copied >= max {
                return Err(libc::E2BIG);
            }
            let from = src.checked_add(copied).ok_or(libc::EFAULT)?;
            let n = (PAGE - from % PAGE).min(room).min(max - copied);
            // SAFETY: [at, at + n) lies in the scratch, which this call owns.
            let dst = unsafe { std::slice::from_raw_parts_mut(self.at as *mut u8, n) };
            // The page read is pinned only while it is read.
            if !with_pinned(self.st, from, n, false, || self.mem.read_into(from, dst)) {
                return Err(libc::EFAULT);
            }
            self.at += n;
            // SAFETY: [start, at) was written by this call just now.
            let copy = unsafe { std::slice::from_raw_parts(start as *const u8, self.at - start) };
            // An element cut by the page end is searched once complete.
            while let Some(element) = copy.get(searched..searched + unit) {
                searched += unit;
                if element.iter().all(|&b| b == 0) {
                    self.at = start + searched;
                    return Ok(start);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pins::tests::state;

    /// `pages` page-aligned, zeroed pages standing in for the arena.
    fn arena(pages: usize) -> &'static mut [u8] {
        let layout = std::alloc::Layout::from_size_align(pages * PAGE, PAGE).unwrap();
        // SAFETY: a non-zero-sized layout; leaked for the test's life.
        unsafe {
            let p = std::alloc::alloc_zeroed(layout);
            assert!(!p.is_null());
            std::slice::from_raw_parts_mut(p, pages * PAGE)
        }
    }

    fn put(mem: &mut [u8], at: usize, s: &[u8]) -> u64 {
        mem[at..at + s.len()].copy_from_slice(s);
        mem[at + s.len()] = 0;
        mem.as_ptr() as u64 + at as u64
    }

    fn put_ptrs(mem: &mut [u8], at: usize, ptrs: &[u64]) -> u64 {
        for (i, p) in ptrs.iter().chain([&0]).enumerate() {
            mem[at + 8 * i..at + 8 * i + 8].copy_from_slice(&p.to_ne_bytes());
        }
        mem.as_ptr() as u64 + at as u64
    }

    /// The C strings of the `NULL`-terminated array at `arr`.
    fn strings(arr: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut at = arr as *const u64;
        // SAFETY: arrays and strings the copy wrote, NUL and NULL ended.
        unsafe {
            while *at != 0 {
                let s = std::ffi::CStr::from_ptr(*at as *const libc::c_char);
                out.push(s.to_bytes().to_vec());
                at = at.add(1);
            }
        }
        out
    }

    #[test]
    fn path_arrays_and_strings_are_copied_out_with_every_pin_released() {
        let mem = arena(8);
        let lo = mem.as_ptr() as usize;
        let (st, pinner) = state(lo, 8);
        let path = put(mem, 10, b"/bin/true");
        // A string across the boundary of pages 3 and 4.
        let long: Vec<u8> = (0..3000).map(|i| b'a' + (i % 26) as u8).collect();
        let a0 = put(mem, 3 * PAGE + 2000, &long);
        let a1 = put(mem, 5 * PAGE, b"-x");
        // argv straddles pages 1 and 2; envp lies outside the arena and
        // points both into it and outside it.
        let argv = put_ptrs(mem, 2 * PAGE - 16, &[a0, a1]);
        let outside = std::ffi::CString::new("HOME=/root").unwrap();
        let env_in = put(mem, 6 * PAGE, b"V=1");
        let envp_vec = [outside.as_ptr() as u64, env_in, 0];
        let envp = envp_vec.as_ptr() as u64;
        let scratch = map_scratch().unwrap();
        let mem_r = ProcMem::new();
        let (p, a, e) = copy_all(st, &mem_r, scratch, path, argv, envp).unwrap();
        let in_scratch = |x: u64| (scratch..scratch + SCRATCH).contains(&(x as usize));
        assert!(in_scratch(p) && in_scratch(a) && in_scratch(e));
        // SAFETY: a NUL-terminated copy in the scratch.
        let p = unsafe { std::ffi::CStr::from_ptr(p as *const libc::c_char) };
        assert_eq!(p.to_bytes(), b"/bin/true");
        assert_eq!(strings(a), vec![long.clone(), b"-x".to_vec()]);
        assert_eq!(strings(e), vec![b"HOME=/root".to_vec(), b"V=1".to_vec()]);
        assert!(pinner.pin_calls() > 0);
        assert!(pinner.all_released());
        unmap_scratch(scratch);
    }

    #[test]
    fn an_unaligned_array_whose_entries_cross_a_page_end_is_copied_whole() {
        let mem = arena(4);
        let lo = mem.as_ptr() as usize;
        let (st, pinner) = state(lo, 4);
        let path = put(mem, 0, b"/bin/true");
        let a0 = put(mem, 3 * PAGE, b"first");
        let a1 = put(mem, 3 * PAGE + 100, b"second");
        // Entries at PAGE - 12 (whole), PAGE - 4 (cut by the page end) and
        // the NULL at PAGE + 4.
        let argv = put_ptrs(mem, PAGE - 12, &[a0, a1]);
        let scratch = map_scratch().unwrap();
        let m = ProcMem::new();
        let (_, a, _) = copy_all(st, &m, scratch, path, argv, 0).unwrap();
        assert_eq!(a % 8, 0);
        assert_eq!(strings(a), vec![b"first".to_vec(), b"second".to_vec()]);
        assert!(pinner.all_released());
        unmap_scratch(scratch);
    }

    #[test]
    fn bad_pointers_long_strings_and_null_arrays() {
        let mem = arena(40);
        let lo = mem.as_ptr() as usize;
        let (st, pinner) = state(lo, 40);
        let scratch = map_scratch().unwrap();
        let m = ProcMem::new();
        let path = put(mem, 0, b"/bin/true");
        // NULL argv and envp stay NULL.
        let (_, a, e) = copy_all(st, &m, scratch, path, 0, 0).unwrap();
        assert_eq!((a, e), (0, 0));
        // A pointer to nowhere: EFAULT, as from the kernel.
        let argv = put_ptrs(mem, PAGE, &[0x10]);
        assert_eq!(copy_all(st, &m, scratch, path, argv, 0), Err(libc::EFAULT));
        // A string without its NUL within MAX_ARG_STRLEN: E2BIG.
        mem[2 * PAGE..2 * PAGE + MAX_ARG_STRLEN + 10].fill(b'z');
        let argv = put_ptrs(mem, PAGE, &[lo as u64 + 2 * PAGE as u64]);
        assert_eq!(copy_all(st, &m, scratch, path, argv, 0), Err(libc::E2BIG));
        // A path longer than PATH_MAX: ENAMETOOLONG.
        assert_eq!(
            copy_all(st, &m, scratch, lo as u64 + 2 * PAGE as u64, 0, 0),
            Err(libc::ENAMETOOLONG)
        );
        assert!(pinner.all_released());
        unmap_scratch(scratch);
    }

    /// Claims point the task's `clear_child_tid` at the slot, which would
    /// break the join of a test thread: this runs in a forked child.
    #[test]
    fn slots_are_claimed_once_and_freed_by_release() {
        let check = || -> bool {
            let (Some(a), Some(b)) = (claim(), claim()) else {
                return false;
            };
            let (Some(sa), Some(sb)) = (a.slot, b.slot) else {
                return false;
            };
            let (a_base, b_base) = (a.base, b.base);
            let claimed =
                a_base != b_base && !std::ptr::eq(sa, sb) && sa.owner.load(Ordering::Relaxed) != 0;
            release(a);
            let freed = sa.owner.load(Ordering::Relaxed) == 0;
            release(b);
            // The next claim reuses a kept mapping.
            let Some(c) = claim() else { return false };
            let reused = c.base == a_base || c.base == b_base;
            release(c);
            claimed && freed && reused
        };
        // SAFETY: the child only makes system calls and touches atomics
        // and its own stack before _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: ends the forked child without running the harness.
            unsafe { libc::_exit(if check() { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
    }
}
