//! Fork: while one is prepared no operation starts, and it happens once
//! none is in flight, so that a child copies settled pages; a forked child
//! then adopts the state it copied (its parent's slots inherited
//! read-only, resident pages shared copy-on-write).

use super::{page_addr, Cx, Env, Fatal, PageState, RegionPages, State, Step, StoreId, PAGE};
use std::sync::Condvar;

/// Prepares a fork: from now on no operation starts (they wait), and this
/// waits until none is in flight. `Done`: every page is `Untouched`,
/// `Resident` or `Swapped`, and what each holds is settled — the instant
/// a child may copy. [`end_fork`] lets operations start again.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Fork {
    set: bool,
}

impl Fork {
    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        if !self.set {
            if st.forking {
                // Another thread is forking: wait for it to finish.
                return Ok(Step::Wait(st.changes));
            }
            st.forking = true;
            self.set = true;
        }
        if st.in_flight > 0 {
            return Ok(Step::Wait(st.changes));
        }
        Ok(Step::Done(()))
    }
}

/// The fork is over (parent, or a failed fork): operations start again.
pub fn end_fork(st: &mut State, cv: &Condvar) {
    st.forking = false;
    st.changed(cv);
}

/// In a forked child, the state it copied becomes its own. Pages its parent
/// had swapped out to its own store are now in the parent's store,
/// inherited read-only as `parent_store`; resident pages are mapped
/// copy-on-write from the parent, so they stay `shared` — not charged, not
/// on the LRU, write-protected by the caller — until the child writes
/// them. Nothing can be in flight (the parent forked after [`Fork`]); the
/// threads that held pins or ran operations do not exist here.
pub fn adopt_after_fork(st: &mut State, parent_store: StoreId) {
    for r in st.regions.values_mut() {
        r.dying = false;
        r.in_flight = 0;
        r.aging = false;
        for p in &mut r.pages {
            debug_assert!(!p.state.in_flight(), "forked with {:?} in flight", p.state);
            p.pins = 0;
            p.waiters = false;
            p.armed = false;
            p.reprieves = 0;
            p.active = false;
            match p.state {
                // A clean page's slot is in the parent's store: the child's
                // copy is just resident.
                PageState::Resident | PageState::Clean { .. } => {
                    p.state = PageState::Resident;
                    p.shared = true;
                }
                PageState::Swapped { store, slot } if store == StoreId::OWN => {
                    p.state = PageState::Swapped {
                        store: parent_store,
                        slot,
                    }
                }
                _ => {}
            }
        }
    }
    st.lru.clear();
    st.probation.clear();
    st.resident = 0;
    st.in_flight = 0;
    st.forking = false;
    st.sleepers = 0;
}

/// Resident page ranges of the region at `base`: `(address, length)`.
pub fn resident_ranges(r: &RegionPages, base: usize) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for (i, p) in r.pages.iter().enumerate() {
        if !p.state.is_resident() {
            continue;
        }
        let a = page_addr(base, i);
        match ranges.last_mut() {
            Some(last) if last.0 + last.1 == a => last.1 += PAGE,
            _ => ranges.push((a, PAGE)),
        }
    }
    ranges
}
