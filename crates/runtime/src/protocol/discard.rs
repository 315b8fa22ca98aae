//! The program's own discard (`MADV_DONTNEED`, `MADV_FREE`) of region
//! pages: once no operation is in flight on them, they become `Untouched`
//! and are unmapped in one step under the state lock, so that no operation
//! starts on them in between.

use super::missing::zero_fill_or_wake;
use super::pin::Pin;
use super::{page_addr, Cx, Env, Fatal, Flaw, PageState, Slot, Step, StoreId, PAGE};

/// The program's own discard (`MADV_DONTNEED`, `MADV_FREE`) of the region
/// pages of `[addr, addr + len)`, through the preload library: the
/// kernel's meaning (they read as zeros from now on), and the regions stay
/// the runtime's. It waits until no fork is being prepared, no page of the
/// range is in flight and no aging pass or release is at work on their
/// regions. Then, in one step under the state lock, every page of the range
/// becomes `Untouched` (no longer charged; its slot, if it had one of this
/// process's store, to be freed) and the kernel unmaps it: no operation can
/// start on those pages in between, and a fault that comes after finds
/// them untouched and maps zeros. A page a system call has pinned is
/// mapped again as zeros at once (the kernel may be using it). The unmap
/// and that map are two calls: in user-mode-only mode a system call that
/// touches the page in the microseconds between gets EFAULT. Only a
/// program that discards a buffer one of its system calls is using meets
/// this (the model takes the step as one, so it does not show it).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ProgramDiscard {
    pub addr: usize,
    pub len: usize,
    pc: DiscardPc,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum DiscardPc {
    Settle,
    Free(Vec<Slot>),
}

impl ProgramDiscard {
    pub fn new(addr: usize, len: usize) -> Self {
        Self {
            addr,
            len,
            pc: DiscardPc::Settle,
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        match std::mem::replace(&mut self.pc, DiscardPc::Settle) {
            DiscardPc::Settle => self.settle(cx),
            DiscardPc::Free(slots) => {
                for slot in slots {
                    cx.env.free(StoreId::OWN, slot);
                }
                Ok(Step::Done(()))
            }
        }
    }

    fn settle<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let (start, end) = (self.addr, self.addr.saturating_add(self.len));
        let mut busy = st.forking;
        Pin::each_part(&mut st, start, end, |r, _, first, n| {
            busy |= r.aging
                || r.dying
                || r.pages[first..first + n]
                    .iter()
                    .any(|p| p.state.in_flight());
        });
        if busy && !cx.tun.flawed(Flaw::DiscardIgnoresInFlight) {
            return Ok(Step::Wait(st.changes));
        }
        let mut slots = Vec::new();
        let mut parts = Vec::new();
        let mut pinned = Vec::new();
        let mut uncharged = 0;
        Pin::each_part(&mut st, start, end, |r, base, first, n| {
            parts.push((page_addr(base, first), n * PAGE));
            for (i, p) in r.pages[first..first + n].iter_mut().enumerate() {
                match p.state {
                    PageState::Swapped {
                        store: StoreId::OWN,
                        slot,
                    }
                    | PageState::Clean { slot } => slots.push(slot),
                    // An ancestor's slot: read-only here, nothing to free.
                    _ => {}
                }
                if p.pins > 0 && p.state.is_resident() {
                    // Mapped again as zeros below: still resident, and now
                    // private (charged, on the LRU) if it was shared.
                    p.state = PageState::Resident;
                    p.armed = false;
                    pinned.push((base, first + i, std::mem::take(&mut p.shared)));
                    continue;
                }
                if p.state.is_resident() && !p.shared {
                    uncharged += 1;
                }
                p.state = PageState::Untouched;
                p.shared = false;
                p.armed = false;
                p.active = false;
                p.reprieves = 0;
            }
        });
        st.resident -= uncharged;
        for (a, l) in parts {
            cx.env.discard(a, l)?;
        }
        for (base, idx, was_shared) in pinned {
            zero_fill_or_wake(cx.env, page_addr(base, idx), false)?;
            if was_shared {
                st.resident += 1;
                st.push_lru(base, idx);
            }
        }
        st.changed(cx.changed);
        self.pc = DiscardPc::Free(slots);
        Ok(Step::Next)
    }
}
