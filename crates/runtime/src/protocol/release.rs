//! Region drop and release: a region waits for the operations in flight
//! on it (none may map into a range that is gone), has every page swapped
//! back in if it becomes plain memory, and is forgotten, its slots freed.

use super::missing::publish_loaded;
use super::{page_addr, Cx, Env, Fatal, PageState, Slot, State, Step, StoreId, PAGE, SWAPIN_TRIES};
use std::sync::Condvar;

/// Ends the region at `base` (with `id`): waits for the operations in
/// flight there, forgets it, and frees its swapped pages (`Drop`), or
/// first swaps every page back in (`IntoPlain`: the mapping stays, as
/// plain memory). The caller unregisters and unmaps the range after.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Release<B> {
    pub base: usize,
    pub id: u64,
    pub plain: bool,
    pc: ReleasePc<B>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum ReleasePc<B> {
    MarkDying,
    Quiesce,
    /// `IntoPlain`: take the next swapped page.
    NextSwapped,
    Load {
        idx: usize,
        store: StoreId,
        slot: Slot,
        tries: u8,
    },
    Map {
        idx: usize,
        buf: B,
    },
    Mapped {
        idx: usize,
    },
    Forget,
    Free(Vec<(StoreId, Slot)>),
}

impl<B: Clone + Default> Release<B> {
    pub fn drop_region(base: usize, id: u64) -> Self {
        Self {
            base,
            id,
            plain: false,
            pc: ReleasePc::MarkDying,
        }
    }

    pub fn into_plain(base: usize, id: u64) -> Self {
        Self {
            base,
            id,
            plain: true,
            pc: ReleasePc::MarkDying,
        }
    }

    pub fn step<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        match std::mem::replace(&mut self.pc, ReleasePc::MarkDying) {
            ReleasePc::MarkDying => self.mark_dying(cx),
            ReleasePc::Quiesce => self.quiesce(cx),
            ReleasePc::NextSwapped => self.next_swapped(cx),
            ReleasePc::Load {
                idx,
                store,
                slot,
                tries,
            } => self.load(cx, idx, store, slot, tries),
            ReleasePc::Map { idx, buf } => self.map(cx, idx, buf),
            ReleasePc::Mapped { idx } => self.mapped(cx, idx),
            ReleasePc::Forget => self.forget(cx),
            ReleasePc::Free(slots) => self.free(cx, slots),
        }
    }

    /// Marks the region dying: no eviction or aging starts there from now on.
    fn mark_dying<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        if st.forking {
            return Ok(Step::Wait(st.changes));
        }
        let Some(r) = st.region(self.base, self.id) else {
            return Ok(Step::Done(()));
        };
        r.dying = true;
        // In flight until its last step: a fork waits for it.
        st.in_flight += 1;
        self.pc = ReleasePc::Quiesce;
        Ok(Step::Next)
    }

    /// Waits until no operation is in flight on the region.
    fn quiesce<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let changes = st.changes;
        let Some(r) = st.region(self.base, self.id) else {
            return Ok(self.finish(&mut st, cx.changed));
        };
        if r.in_flight > 0 {
            self.pc = ReleasePc::Quiesce;
            return Ok(Step::Wait(changes));
        }
        self.pc = if self.plain {
            ReleasePc::NextSwapped
        } else {
            ReleasePc::Forget
        };
        Ok(Step::Next)
    }

    /// Into plain memory: takes the next swapped page, or waits for the one a
    /// fault is loading; then forgets the region.
    fn next_swapped<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let changes = st.changes;
        let Some(r) = st.region(self.base, self.id) else {
            return Ok(self.finish(&mut st, cx.changed));
        };
        let swapped = r
            .pages
            .iter()
            .position(|p| matches!(p.state, PageState::Swapped { .. } | PageState::Loading));
        match swapped {
            Some(i) => match r.pages[i].state {
                PageState::Swapped { store, slot } => {
                    r.pages[i].state = PageState::Loading;
                    st.begin(self.base);
                    self.pc = ReleasePc::Load {
                        idx: i,
                        store,
                        slot,
                        tries: 0,
                    };
                    Ok(Step::Next)
                }
                // A fault is bringing it in: wait for it.
                _ => {
                    self.pc = ReleasePc::NextSwapped;
                    Ok(Step::Wait(changes))
                }
            },
            None => {
                self.pc = ReleasePc::Forget;
                Ok(Step::Next)
            }
        }
    }

    /// Loads the page, tried again up to [`SWAPIN_TRIES`] times.
    fn load<E: Env<Buf = B>>(
        &mut self,
        cx: &Cx<E>,
        idx: usize,
        store: StoreId,
        slot: Slot,
        tries: u8,
    ) -> Result<Step<()>, Fatal> {
        let mut buf = B::default();
        match cx.env.load(store, slot, &mut buf, &[], None, false) {
            Ok(_) => self.pc = ReleasePc::Map { idx, buf },
            Err(error) if tries + 1 >= SWAPIN_TRIES => {
                return Err(Fatal::SwapIn {
                    addr: page_addr(self.base, idx),
                    store: store.0,
                    slot,
                    error,
                })
            }
            Err(_) => {
                self.pc = ReleasePc::Load {
                    idx,
                    store,
                    slot,
                    tries: tries + 1,
                }
            }
        }
        Ok(Step::Next)
    }

    /// Maps the loaded page (tried again while the address space changes).
    fn map<E: Env<Buf = B>>(&mut self, cx: &Cx<E>, idx: usize, buf: B) -> Result<Step<()>, Fatal> {
        match cx.env.map(page_addr(self.base, idx), &buf, true, false) {
            Ok(()) => self.pc = ReleasePc::Mapped { idx },
            Err(e) if e.is(libc::EAGAIN) => self.pc = ReleasePc::Map { idx, buf },
            Err(e) => return Err(e.into()),
        }
        Ok(Step::Next)
    }

    /// Publishes the mapped page resident and wakes its waiters, if any.
    fn mapped<E: Env<Buf = B>>(&mut self, cx: &Cx<E>, idx: usize) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let waiters = publish_loaded(&mut st, self.base, &[(idx, None)], &[], StoreId::OWN, false);
        st.end(self.base);
        st.changed(cx.changed);
        drop(st);
        if waiters {
            cx.env.wake(page_addr(self.base, idx), PAGE)?;
        }
        self.pc = ReleasePc::NextSwapped;
        Ok(Step::Next)
    }

    /// Forgets the region once no fault is in flight there, uncharging its
    /// resident pages.
    fn forget<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        // Faults are still served on a dying region (the program
        // uses it until it is unregistered): one that began after
        // the quiesce must end before the region goes, or its map
        // would land in an unregistered range.
        let changes = st.changes;
        if st
            .region(self.base, self.id)
            .is_some_and(|r| r.in_flight > 0)
        {
            self.pc = ReleasePc::Forget;
            return Ok(Step::Wait(changes));
        }
        let Some(r) = st.regions.remove(&self.base) else {
            return Ok(self.finish(&mut st, cx.changed));
        };
        debug_assert_eq!(r.id, self.id);
        let resident = r
            .pages
            .iter()
            .filter(|p| p.state.is_resident() && !p.shared)
            .count();
        st.resident -= resident;
        st.changed(cx.changed);
        let slots: Vec<(StoreId, Slot)> = r
            .pages
            .iter()
            .filter_map(|p| match p.state {
                PageState::Swapped { store, slot } => Some((store, slot)),
                PageState::Clean { slot } => Some((StoreId::OWN, slot)),
                _ => None,
            })
            .collect();
        if slots.is_empty() {
            return Ok(self.finish(&mut st, cx.changed));
        }
        self.pc = ReleasePc::Free(slots);
        Ok(Step::Next)
    }

    /// Frees the slots of the region's swapped and `Clean` pages.
    fn free<E: Env<Buf = B>>(
        &mut self,
        cx: &Cx<E>,
        slots: Vec<(StoreId, Slot)>,
    ) -> Result<Step<()>, Fatal> {
        for (store, slot) in slots {
            cx.env.free(store, slot);
        }
        Ok(self.finish(&mut cx.lock(), cx.changed))
    }

    /// The release is over: no longer in flight.
    fn finish(&mut self, st: &mut State, cv: &Condvar) -> Step<()> {
        st.in_flight -= 1;
        st.changed(cv);
        Step::Done(())
    }
}
