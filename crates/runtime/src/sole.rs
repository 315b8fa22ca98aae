//! Whether the calling thread is the only one that can write the
//! program's memory: then its own eviction (direct reclaim, in its fault
//! handler) needs no write-protection ([`crate::protocol::Evict::sole_writer`]).
//! Each protection is a call that flushes the TLB of every CPU running
//! the process, by interrupt wherever the reclaim thread runs: about
//! 2–3 µs a scattered victim on a 2-vCPU VM (randpage 512 MiB under 256M:
//! 9.7–9.9 s with the calls, 8.4–8.7 s without them in the faulting
//! thread).
//!
//! The answer is yes only if all of these hold, read from `/proc` each
//! time (a few system calls per batch of evictions down to the low
//! watermark):
//! * this process is the one the runtime belongs to (a `vfork` child
//!   shares its parent's memory, and the parent's other threads run);
//! * every other thread of the process is the runtime's (its name starts
//!   with `uzswap/`; runtime threads never write region pages);
//! * no child of any of its threads shares its memory (`kcmp(KCMP_VM)`:
//!   a `clone(CLONE_VM)` child is a process of its own, invisible among
//!   the threads).
//!
//! Nothing can change that while the answer is used: a new thread or
//! child is made by a running thread of the program, and the only one is
//! the caller, busy evicting. Anything unreadable answers no. No
//! allocation: this runs in a signal handler.
//!
//! The check is a dozen `/proc` calls (20–50 µs with a few threads), worth
//! it only where it saves protect calls on many victims. [`SoleProbe`]
//! asks it again at once only after a yes that let a call evict many
//! pages; after a no, or a yes that evicted little (a process whose
//! charge is mostly another's, as a forked child under a shared limit:
//! its few pages go at every fault), it answers no without asking for a
//! while. A no is always safe: the eviction protects, as any other.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Pages a direct reclaim must evict on a yes for the check to be asked
/// again at the next call: a protect call saved per scattered victim
/// (2–3 µs) against the check's cost.
pub(crate) const WORTH_PAGES: usize = 64;

/// How long the check is not asked after a no, or after a yes that
/// evicted fewer than [`WORTH_PAGES`].
pub(crate) const BACKOFF_MS: u64 = 20;

/// When [`only_writer`] is worth asking (lock-free: direct reclaim runs in
/// the fault handlers of any thread; a race costs one check more or less).
#[derive(Debug, Default)]
pub(crate) struct SoleProbe {
    /// Milliseconds of the caller's clock before which the check is not
    /// asked.
    not_before_ms: AtomicU64,
}

impl SoleProbe {
    /// Asks `check` where it is due at `now_ms`: its answer, or `None`
    /// where it was not asked (the caller takes no).
    pub(crate) fn ask(&self, now_ms: u64, check: impl FnOnce() -> bool) -> Option<bool> {
        (now_ms >= self.not_before_ms.load(Ordering::Relaxed)).then(check)
    }

    /// After a direct reclaim at `now_ms` that evicted `evicted` pages
    /// with `asked`, what [`SoleProbe::ask`] gave it. A call that did not
    /// ask leaves the back-off as it was: moved on by every call, it
    /// would never end while direct reclaims come faster than it.
    pub(crate) fn after(&self, now_ms: u64, asked: Option<bool>, evicted: usize) {
        let Some(sole) = asked else {
            return;
        };
        let next = if sole && evicted >= WORTH_PAGES {
            0
        } else {
            now_ms.saturating_add(BACKOFF_MS)
        };
        self.not_before_ms.store(next, Ordering::Relaxed);
    }
}

/// Whether the calling thread (`me`) is the only one that can write the
/// memory of the process `owner` (the runtime's).
pub(crate) fn only_writer(owner: u32, me: i32) -> bool {
    // SAFETY: getpid has no arguments and cannot fail.
    let pid = unsafe { libc::getpid() };
    if pid as u32 != owner {
        return false;
    }
    let mut alone = true;
    let listed = for_each_number(c"/proc/self/task", |tid| {
        let runtime = tid == me as u64 || named_as_runtime(tid);
        alone &= runtime && no_child_shares_memory(pid, tid);
        alone
    });
    listed && alone
}

/// Whether thread `tid` of this process is named `uzswap/…`.
fn named_as_runtime(tid: u64) -> bool {
    let mut path = [0u8; 64];
    let mut name = [0u8; 16];
    let path = task_path(&mut path, tid, b"comm");
    matches!(read_file(path, &mut name), Some(n) if name[..n].starts_with(b"uzswap/"))
}

/// Whether no child of thread `tid` shares the memory of process `pid`.
fn no_child_shares_memory(pid: libc::pid_t, tid: u64) -> bool {
    let mut path = [0u8; 64];
    let mut list = [0u8; 512];
    let path = task_path(&mut path, tid, b"children");
    let Some(n) = read_file(path, &mut list) else {
        return false;
    };
    if n == list.len() {
        // More children than the buffer holds: not looked at, so no.
        return false;
    }
    list[..n]
        .split(|&b| b == b' ' || b == b'\n')
        .filter(|w| !w.is_empty())
        .all(|w| {
            // Where kcmp cannot tell, the child may share it: no.
            common::decimal::parse(w).is_some_and(|child| {
                common::kcmp::same_memory(pid, child as libc::pid_t) == Some(false)
            })
        })
}

/// `/proc/self/task/TID/LEAF`, NUL-terminated, in `buf`.
fn task_path<'a>(buf: &'a mut [u8; 64], tid: u64, leaf: &[u8]) -> &'a CStr {
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        buf[len..len + bytes.len()].copy_from_slice(bytes);
        len += bytes.len();
    };
    put(b"/proc/self/task/");
    put(common::decimal::format(tid, &mut [0u8; 20]));
    put(b"/");
    put(leaf);
    put(b"\0");
    CStr::from_bytes_with_nul(&buf[..len]).expect("one NUL, at the end")
}

/// Reads what fits of `path` into `buf`; the bytes read, or `None`.
fn read_file(path: &CStr, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut n = 0;
    while n < buf.len() {
        // SAFETY: `buf[n..]` is writable for its length.
        let r = unsafe { libc::read(fd, buf[n..].as_mut_ptr().cast(), buf.len() - n) };
        if r <= 0 {
            break;
        }
        n += r as usize;
    }
    // SAFETY: `fd` is ours.
    unsafe { libc::close(fd) };
    Some(n)
}

/// Calls `f` with each number-named entry of the directory `dir` while it
/// returns true; whether the directory was read to its end.
fn for_each_number(dir: &CStr, mut f: impl FnMut(u64) -> bool) -> bool {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            dir.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 2048];
    let ended = 'read: loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            break false;
        }
        if n == 0 {
            break true;
        }
        let mut at = 0;
        while at < n as usize {
            // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
            // d_type u8, d_name (NUL-terminated).
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = &buf[at + 19..at + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if let Some(number) = common::decimal::parse(name) {
                if !f(number) {
                    break 'read true;
                }
            }
            at += reclen;
        }
    };
    // SAFETY: `fd` is ours.
    unsafe { libc::close(fd) };
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_asks_again_at_once_only_after_a_yes_that_evicted_many() {
        let p = SoleProbe::default();
        let asked = |p: &SoleProbe, now| p.ask(now, || true).is_some();
        assert!(asked(&p, 0));
        p.after(100, Some(true), WORTH_PAGES);
        assert!(asked(&p, 100), "a yes that paid: asked at the next call");
        p.after(100, Some(true), WORTH_PAGES - 1);
        assert!(
            !asked(&p, 100 + BACKOFF_MS - 1),
            "a yes that evicted little"
        );
        assert!(asked(&p, 100 + BACKOFF_MS));
        p.after(200, Some(false), 10_000);
        assert!(!asked(&p, 200 + BACKOFF_MS - 1), "a no");
        // Calls that did not ask, meanwhile, leave the back-off alone.
        p.after(210, None, 0);
        p.after(219, None, 0);
        assert!(asked(&p, 200 + BACKOFF_MS));
        assert_eq!(p.ask(200 + BACKOFF_MS, || false), Some(false));
    }

    #[test]
    fn task_paths() {
        // (The numbers' own tests are common::decimal's.)
        let mut buf = [0u8; 64];
        assert_eq!(
            task_path(&mut buf, 907, b"comm").to_bytes(),
            b"/proc/self/task/907/comm"
        );
    }

    #[test]
    fn a_second_thread_of_the_program_makes_the_caller_not_alone() {
        let me = crate::sys::gettid();
        let owner = std::process::id();
        // The test harness runs this on a thread of its own, beside its
        // main thread: not alone.
        assert!(!only_writer(owner, me));
        // Another process's runtime: never.
        assert!(!only_writer(owner + 1, me));
    }

    #[test]
    fn a_lone_process_is_alone_and_loses_it_to_a_second_thread() {
        // A child process (fork, then nothing but raw system calls): one
        // thread. It answers yes, then starts a thread and answers no.
        // SAFETY: the child runs only async-signal-safe code and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let me = crate::sys::gettid();
            // SAFETY: getpid cannot fail.
            let owner = unsafe { libc::getpid() } as u32;
            let alone = only_writer(owner, me);
            let mut code = if alone { 0 } else { 1 };
            // A second thread, parked.
            extern "C" fn park(_: *mut libc::c_void) -> *mut libc::c_void {
                loop {
                    // SAFETY: pause has no arguments.
                    unsafe { libc::pause() };
                }
            }
            let mut t: libc::pthread_t = 0;
            // SAFETY: a valid start routine; the thread never returns.
            let r = unsafe {
                libc::pthread_create(&mut t, std::ptr::null(), park, std::ptr::null_mut())
            };
            if r != 0 || only_writer(owner, me) {
                code |= 2;
            }
            // SAFETY: _exit ends the child at once.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "{status:#x}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "1: not alone alone, 2: alone beside a thread"
        );
    }
}
