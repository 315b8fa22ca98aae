//! Pins: a system call's buffer is kept out of eviction and out of aging's
//! write protection until [`unpin`], so that the kernel can read and write
//! it without a fault (invariant 5).

use super::{page_addr, Cx, Env, Fatal, Flaw, RegionPages, State, Step, PAGE};

/// Whether an access to a page in state `page` (a write if `write`) would
/// fault, as far as the state says: the page is not mapped or not settled
/// (untouched, swapped, or in flight: another thread's fault may be
/// mapping it), or a write would find it write-protected (armed by aging,
/// shared with a forked parent, or `Clean`). Where faults are served in
/// the faulting thread, a pin serves these faults before the call, looking
/// again after each, and lets the kernel touch the rest; so a page that may
/// be unmapped or protected must never read `false` here (see
/// [`super::Age`]: why a pass re-arms what it may have protected in
/// passing).
pub fn access_would_fault(page: &super::Page, write: bool) -> bool {
    let missing = !page.state.is_resident();
    let protected = write
        && (page.armed || page.shared || matches!(page.state, super::PageState::Clean { .. }));
    missing || protected
}

/// Most region ranges one [`Pin`] records for the caller to fault in (a
/// system call's buffer lies in one allocation, so in one region).
pub const PIN_RANGES: usize = 8;

/// Pins the region pages of `[addr, addr + len)` for a system call and
/// waits until none of them is in flight and no aging pass is protecting
/// their region. `Done`: from then on they are not evicted and not
/// write-protected by aging; the caller faults them in (touching each page,
/// writing where the call will write: [`Pin::ranges`]), makes the call, then
/// calls [`unpin`] on the same range. Pins count per page, by address: a
/// pinned range may be unpinned as part of a larger one. Nothing here
/// allocates (it runs in the syscall guard's signal handler).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Pin {
    pub addr: usize,
    pub len: usize,
    pinned: bool,
    /// The region parts of the range: `(address, length)`.
    ranges: [(usize, usize); PIN_RANGES],
    nranges: usize,
    /// More regions than `ranges` holds: the caller finds the rest itself.
    pub overflow: bool,
}

impl Pin {
    pub fn new(addr: usize, len: usize) -> Self {
        Self {
            addr,
            len,
            pinned: false,
            ranges: [(0, 0); PIN_RANGES],
            nranges: 0,
            overflow: false,
        }
    }

    /// The region parts of the pinned range (to fault in).
    pub fn ranges(&self) -> &[(usize, usize)] {
        &self.ranges[..self.nranges]
    }

    /// Calls `f(region, first page, pages)` for every region part of
    /// `[start, end)`.
    pub(super) fn each_part(
        st: &mut State,
        start: usize,
        end: usize,
        mut f: impl FnMut(&mut RegionPages, usize, usize, usize),
    ) {
        let first_base = st.locate(start).map_or(start, |(b, _)| b);
        for (&base, r) in st.regions.range_mut(first_base..end) {
            let lo = start.saturating_sub(base) / PAGE;
            let hi = (end - base).div_ceil(PAGE).min(r.pages.len());
            if lo < hi {
                f(r, base, lo, hi - lo);
            }
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let (start, end) = (self.addr, self.addr.saturating_add(self.len));
        if !self.pinned {
            self.pinned = true;
            let (ranges, nranges, overflow) =
                (&mut self.ranges, &mut self.nranges, &mut self.overflow);
            Self::each_part(&mut st, start, end, |r, base, first, n| {
                for p in &mut r.pages[first..first + n] {
                    p.pins = p.pins.saturating_add(1);
                }
                if *nranges < PIN_RANGES {
                    ranges[*nranges] = (page_addr(base, first), n * PAGE);
                    *nranges += 1;
                } else {
                    *overflow = true;
                }
            });
            if cx.tun.flawed(Flaw::PinWithoutSettle) {
                return Ok(Step::Done(()));
            }
        }
        let mut busy = false;
        Self::each_part(&mut st, start, end, |r, _, first, n| {
            busy |= r.aging
                || r.pages[first..first + n]
                    .iter()
                    .any(|p| p.state.in_flight());
        });
        if busy {
            return Ok(Step::Wait(st.changes));
        }
        Ok(Step::Done(()))
    }
}

/// Ends a [`Pin`] of `[addr, addr + len)` (or of several adjacent pins at
/// once): its pages may be evicted and protected again. A page whose region
/// went meanwhile (a program freeing a buffer a system call still used) is
/// simply gone.
pub fn unpin(st: &mut State, addr: usize, len: usize) {
    Pin::each_part(st, addr, addr.saturating_add(len), |r, _, first, n| {
        for p in &mut r.pages[first..first + n] {
            p.pins = p.pins.saturating_sub(1);
        }
    });
}
