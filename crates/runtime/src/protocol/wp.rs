//! Write-protect faults: a write to a page that write tracking, a forked
//! child's copy-on-write tracking or a `Clean` page's kept slot protected
//! loses the protection at once, under the state lock so that no eviction
//! of the page starts in between; a write to a page being evicted waits for
//! the evictor.

use super::{Cx, Env, Event, Fatal, Flaw, PageState, Slot, Step, StoreId, PAGE, WRITTEN_REPRIEVES};

/// A write to a write-protected page at `addr`. Served in the faulting
/// thread ([`WpFault::served_in_thread`]), it waits for an operation in
/// flight on the page instead of leaving the writer asleep in the kernel.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct WpFault {
    pub addr: usize,
    /// Run by the faulting thread (in its SIGBUS handler).
    pub in_thread: bool,
    unlocked_unprotect: bool,
    /// A `Clean` page was written: the slot it kept goes.
    free: Option<Slot>,
}

impl WpFault {
    pub fn new(addr: usize) -> Self {
        Self {
            addr: addr & !(PAGE - 1),
            in_thread: false,
            unlocked_unprotect: false,
            free: None,
        }
    }

    /// Served by the faulting thread: it waits for the operation in flight.
    pub fn served_in_thread(mut self) -> Self {
        self.in_thread = true;
        self
    }

    /// During an eviction the writer waits for the evictor, which wakes it.
    /// Otherwise the protection is write tracking's (or a forked child's
    /// copy-on-write tracking) and goes at once, under the state lock: an
    /// eviction starting meanwhile would otherwise have its copy
    /// un-protected.
    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        if self.unlocked_unprotect {
            cx.env.unprotect(self.addr, PAGE, true)?;
            return Ok(Step::Done(()));
        }
        if let Some(slot) = self.free.take() {
            cx.env.free(StoreId::OWN, slot);
            return Ok(Step::Done(()));
        }
        let mut st = cx.lock();
        let Some((base, idx)) = st.locate(self.addr) else {
            return Ok(Step::Done(())); // not ours: unregistering woke the writer
        };
        let changes = st.changes;
        let r = st.regions.get_mut(&base).expect("located");
        let page = &mut r.pages[idx];
        match page.state {
            // In the faulting thread: wait for the operation in flight to
            // end, then retry the write (which then faults as missing, or
            // finds the page writable).
            s if self.in_thread && s.in_flight() => Ok(Step::Wait(changes)),
            PageState::Evicting => Ok(Step::Done(())),
            PageState::Clean { slot } => {
                // Written: no longer its slot's bytes. `Resident` before the
                // protection goes, under the lock, so no eviction can take
                // it as clean after the write.
                cx.env.count(Event::CleanWritten, 1);
                if !cx.tun.flawed(Flaw::CleanAfterWrite) {
                    page.state = PageState::Resident;
                    self.free = Some(slot);
                }
                cx.env.unprotect(self.addr, PAGE, true)?;
                Ok(if self.free.is_some() {
                    Step::Next
                } else {
                    Step::Done(())
                })
            }
            // Mapped write-protected while it is loaded (`Clean` to be):
            // the load wakes the writer once it is published.
            PageState::Loading => {
                page.waiters = true;
                Ok(Step::Done(()))
            }
            PageState::Resident => {
                cx.env.count(Event::WpFault, 1);
                if std::mem::take(&mut page.armed) {
                    // Written since the last aging pass: its reprieves now,
                    // as the next pass would give them on finding it
                    // unprotected. Not armed any more, so a system call's
                    // pin of the page (`fault_in`) sees it writable and
                    // takes no write-protect fault of its own, and the
                    // next pass protects it again.
                    page.reprieves = WRITTEN_REPRIEVES;
                    cx.env.count(Event::PagesWritten, 1);
                }
                if std::mem::take(&mut page.shared) {
                    // A forked child's first write: the page is its own now.
                    cx.env.count(Event::Unshared, 1);
                    st.resident += 1;
                    st.push_lru(base, idx);
                }
                if cx.tun.flawed(Flaw::UnprotectUnlocked) {
                    self.unlocked_unprotect = true;
                    return Ok(Step::Next);
                }
                cx.env.unprotect(self.addr, PAGE, true)?;
                Ok(Step::Done(()))
            }
            // Nobody sleeps in the kernel: the write is retried.
            _ if self.in_thread => Ok(Step::Done(())),
            _ => {
                drop(st);
                cx.env.wake(self.addr, PAGE)?;
                Ok(Step::Done(()))
            }
        }
    }
}
