//! Pages the kernel may touch for the target: never evicted while pinned.
//!
//! With a user-mode-only userfaultfd, a kernel access to a page that is
//! not mapped fails (`EFAULT`, or `SIGSEGV` for a signal frame), so every
//! page the kernel may touch is mapped before it does and pinned until it
//! can no longer:
//!
//! * **a call's buffers**, from its notification until the thread's next
//!   notification (a thread makes one system call at a time, so its next
//!   one proves the last one returned) or its exit;
//! * **sleeps that restart without a notification**: `futex`, `poll`,
//!   `nanosleep` and `clock_nanosleep` interrupted by a signal handler go
//!   on through `restart_syscall`, which reads their words again but
//!   carries no arguments for the filter. Each thread's last
//!   [`SLEEPS_KEPT`] such calls stay pinned past its next notifications
//!   (the handler's own calls);
//! * **registered pointers**, the kernel's for as long as the thread lives:
//!   `rseq`, `set_tid_address`, `set_robust_list`, `sigaltstack` (keyed by
//!   thread and call: a new registration replaces the last);
//! * **held ranges**, until their memory is unmapped: `CLONE_CHILD_CLEARTID`
//!   words (the child's, written at its exit) and the top of a new thread's
//!   stack where the stack is not left to the kernel.
//!
//! Pages only: every span is widened to whole pages.

use common::PAGE_SIZE;
use std::collections::{HashMap, VecDeque};

/// An address range `(start, end)`, page-aligned here.
pub type Span = (usize, usize);

/// Restartable sleeps kept pinned per thread.
pub const SLEEPS_KEPT: usize = 4;

/// The pins of the out-of-process syscall guard.
#[derive(Debug, Default)]
pub struct Pins {
    calls: HashMap<i32, Vec<Span>>,
    sleeps: HashMap<i32, VecDeque<Span>>,
    registered: HashMap<(i32, i64), Vec<Span>>,
    held: Vec<Span>,
    /// All of the above, sorted and merged.
    merged: Vec<Span>,
}

/// `[addr, addr + len)` widened to pages (`None` when empty or wrapping).
pub fn page_span(addr: usize, len: usize) -> Option<Span> {
    let end = addr.checked_add(len.max(1))?;
    let end = end.checked_add(PAGE_SIZE - 1)? & !(PAGE_SIZE - 1);
    Some((addr & !(PAGE_SIZE - 1), end))
}

/// Whether `addr` lies in one of `spans` (sorted, disjoint: [`Pins::spans`]).
pub fn in_spans(spans: &[Span], addr: usize) -> bool {
    let i = spans.partition_point(|&(_, e)| e <= addr);
    spans.get(i).is_some_and(|&(s, _)| s <= addr)
}

impl Pins {
    /// Thread `tid`'s new call: its last call's pins go, these come.
    pub fn set_call(&mut self, tid: i32, spans: Vec<Span>, restartable: bool) {
        if restartable {
            let kept = self.sleeps.entry(tid).or_default();
            kept.extend(spans.iter().copied());
            while kept.len() > SLEEPS_KEPT {
                kept.pop_front();
            }
        }
        self.calls.insert(tid, spans);
        self.rebuild();
    }

    /// A pointer the kernel keeps for thread `tid` (from call `nr`).
    pub fn set_registered(&mut self, tid: i32, nr: i64, spans: Vec<Span>) {
        self.registered.insert((tid, nr), spans);
        self.rebuild();
    }

    /// Pins `span` until its memory is unmapped.
    pub fn hold(&mut self, span: Span) {
        self.held.push(span);
        self.rebuild();
    }

    /// Thread `tid` exited: nothing of its is pinned any more.
    pub fn thread_exited(&mut self, tid: i32) {
        self.calls.remove(&tid);
        self.sleeps.remove(&tid);
        self.registered.retain(|&(t, _), _| t != tid);
        self.rebuild();
    }

    /// The threads that have pins.
    pub fn tids(&self) -> Vec<i32> {
        let mut t: Vec<i32> = self
            .calls
            .keys()
            .chain(self.sleeps.keys())
            .chain(self.registered.keys().map(|(t, _)| t))
            .copied()
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// `[s, e)` was unmapped: held ranges there go.
    pub fn unmapped(&mut self, s: usize, e: usize) {
        let before = self.held.len();
        self.held.retain(|&(hs, he)| he <= s || hs >= e);
        if self.held.len() != before {
            self.rebuild();
        }
    }

    /// Whether the page at `addr` is pinned.
    pub fn contains(&self, addr: usize) -> bool {
        in_spans(&self.merged, addr)
    }

    /// The pinned spans, sorted and merged.
    pub fn spans(&self) -> &[Span] {
        &self.merged
    }

    /// The pinned pages in `[s, e)`.
    pub fn pages_in(&self, s: usize, e: usize) -> Vec<usize> {
        self.merged
            .iter()
            .filter(|&&(ps, pe)| ps < e && pe > s)
            .flat_map(|&(ps, pe)| (ps.max(s)..pe.min(e)).step_by(PAGE_SIZE))
            .collect()
    }

    fn rebuild(&mut self) {
        let mut all: Vec<Span> = self
            .calls
            .values()
            .flatten()
            .chain(self.sleeps.values().flatten())
            .chain(self.registered.values().flatten())
            .chain(&self.held)
            .copied()
            .collect();
        all.sort_unstable();
        self.merged.clear();
        for (s, e) in all {
            match self.merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => self.merged.push((s, e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const P: usize = PAGE_SIZE;

    #[test]
    fn a_threads_next_call_releases_its_last_but_not_its_sleeps() {
        let mut pins = Pins::default();
        pins.set_call(7, vec![page_span(10 * P + 5, 10).unwrap()], true);
        pins.set_call(7, vec![page_span(20 * P, 2 * P).unwrap()], false);
        assert!(pins.contains(10 * P), "a sleep stays pinned");
        assert!(pins.contains(21 * P) && !pins.contains(22 * P));
        pins.set_call(7, vec![], false);
        assert!(!pins.contains(20 * P), "the last call's buffer went");
        for i in 0..SLEEPS_KEPT {
            pins.set_call(7, vec![(100 * P + i * P, 101 * P + i * P)], true);
        }
        assert!(!pins.contains(10 * P), "pushed out by later sleeps");
        pins.thread_exited(7);
        assert!(pins.spans().is_empty());
    }

    #[test]
    fn registrations_replace_and_held_ranges_go_with_their_memory() {
        let mut pins = Pins::default();
        pins.set_registered(3, 334, vec![(P, 2 * P)]);
        pins.set_registered(3, 334, vec![(5 * P, 6 * P)]);
        assert!(!pins.contains(P) && pins.contains(5 * P));
        pins.hold((8 * P, 10 * P));
        assert_eq!(pins.pages_in(0, 100 * P), vec![5 * P, 8 * P, 9 * P]);
        pins.unmapped(9 * P, 12 * P);
        assert!(!pins.contains(8 * P));
        assert_eq!(pins.tids(), vec![3]);
    }

    #[test]
    fn spans_are_whole_pages() {
        assert_eq!(page_span(P + 1, 1), Some((P, 2 * P)));
        assert_eq!(page_span(P, P), Some((P, 2 * P)));
        assert_eq!(page_span(P, 0), Some((P, 2 * P)));
        assert_eq!(page_span(usize::MAX - 3, 8), None);
    }
}
