//! The pins of one system call: the arena pages of its buffers, pinned
//! through the runtime's [`Pinner`](crate::Pinner) (faulted in, writable
//! where the kernel writes) before the call and released after it.
//!
//! Async-signal-safe: a [`PinSet`] lives on the caller's stack (about 8 KiB
//! for [`MAX_PINS`] ranges), allocates nothing, and never panics.

use crate::counters::{self, bump};
use crate::proc_mem::ProcMem;
use crate::state::{PinToken, State};
use crate::syscalls::{Buffer, UserMem};
use std::sync::atomic::Ordering;

use common::PAGE_SIZE as PAGE;

/// Most pinned ranges per call (`IOV_MAX`).
pub const MAX_PINS: usize = 1024;

/// The pins of one call: page ranges as page indices relative to the arena
/// (`u32`: arenas up to 16 TiB), and a write bit per entry: about 8 KiB of
/// the handler's stack for 1024 ranges.
pub(crate) struct PinSet<'s> {
    st: &'s State,
    starts: [u32; MAX_PINS],
    ends: [u32; MAX_PINS],
    write: [u64; MAX_PINS / 64],
    n: usize,
}

impl<'s> PinSet<'s> {
    pub(crate) fn new(st: &'s State) -> Self {
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

    pub(crate) fn range(&mut self, addr: usize, len: usize, write: bool) {
        if let Some((a, b)) = self.clip(addr, len) {
            self.pin_pages(a, b, write)
        }
    }

    pub(crate) fn buffer(&mut self, b: Buffer, mem: &ProcMem) {
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

    pub(crate) fn release(&mut self) {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::state::Pinner;
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
}
