//! Missing faults: a page's first touch maps the folio-aligned run of
//! untouched pages around it (`Filling`), and a swapped page is loaded
//! back with its fault-around and folio neighbours (`Loading`), then
//! published `Resident`, or `Clean` where it kept its slot. Also the
//! evictor's own fault on a victim discarded behind its back, and the
//! publish step that a region's release shares.

use super::{
    page_addr, Cx, Env, Event, Fatal, Flaw, Page, PageState, RefaultDistance, Slot, State, Step,
    StoreId, SwapinFault, Tunables, PAGE, SWAPIN_TRIES,
};

/// A missing fault at `addr` (a read, or a write if `write`), taken by a
/// runtime thread if `by_runtime`. A throttled fault
/// ([`MissingFault::defer_wake`]) maps the page but leaves the faulting
/// thread asleep: the runtime wakes it once reclaim has caught up.
///
/// Served by the handler thread (the default), a fault that finds its page
/// in flight marks it `waiters` and ends: the faulting thread sleeps in the
/// kernel until the operation in flight wakes it. Served in the faulting
/// thread itself ([`MissingFault::served_in_thread`], `UFFD_FEATURE_SIGBUS`),
/// nobody sleeps in the kernel: the operation waits (`Step::Wait`) until
/// the page is no longer in flight, then looks again.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct MissingFault<B> {
    pub addr: usize,
    pub write: bool,
    pub by_runtime: bool,
    /// Wake the faulting thread when its page is mapped.
    pub wake: bool,
    /// Run by the faulting thread (in its SIGBUS handler), not the handler
    /// thread.
    pub in_thread: bool,
    pc: MissingPc<B>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum MissingPc<B> {
    Start,
    /// Map zeros over pages `first..first + n` of the region at `base`.
    Fill {
        base: usize,
        first: usize,
        n: usize,
    },
    /// The fill is mapped: publish.
    FillDone {
        base: usize,
        first: usize,
        n: usize,
    },
    /// Load page `idx` (and its `around` neighbours) from the store.
    Load(Load),
    /// Map what was loaded, one page per step: the fault's own page
    /// (`own`, until mapped), then the neighbours in `got`; each with the
    /// slot it kept, if any (mapped write-protected, published `Clean`).
    Map(Map<B>),
    LoadDone {
        base: usize,
        mapped: Vec<(usize, Option<Slot>)>,
        around: Vec<(usize, Slot)>,
        store: StoreId,
        probation: bool,
    },
    /// Wake threads waiting in `[addr, addr + len)`.
    Wake {
        addr: usize,
        len: usize,
    },
    /// A `Clean` page found discarded and mapped with zeros: free its slot.
    FreeSlot(Slot),
}

/// [`MissingPc::Load`]'s state: page `idx` of the region at `base` is at
/// `slot` of `store`, its neighbours in `around` at theirs.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Load {
    base: usize,
    idx: usize,
    store: StoreId,
    slot: Slot,
    around: Vec<(usize, Slot)>,
    distance: RefaultDistance,
    tries: u8,
    /// The pages go on probation once mapped ([`Tunables::probation_pages`]).
    probation: bool,
}

/// [`MissingPc::Map`]'s state: the pages still to map (`own`, `got`) and
/// those mapped so far (`mapped`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Map<B> {
    base: usize,
    own: Option<(usize, B, Option<Slot>)>,
    got: Vec<(usize, B, Option<Slot>)>,
    mapped: Vec<(usize, Option<Slot>)>,
    around: Vec<(usize, Slot)>,
    store: StoreId,
    probation: bool,
}

impl<B: Clone + Default> MissingFault<B> {
    pub fn new(addr: usize, write: bool, by_runtime: bool) -> Self {
        Self {
            addr: addr & !(PAGE - 1),
            write,
            by_runtime,
            wake: true,
            in_thread: false,
            pc: MissingPc::Start,
        }
    }

    /// Served by the faulting thread: no thread waits in the kernel to be
    /// woken, and a page in flight is waited for here.
    pub fn served_in_thread(mut self) -> Self {
        self.in_thread = true;
        self.wake = false;
        self
    }

    /// Map the fault's page without waking the thread (throttling); the
    /// caller wakes it later.
    pub fn defer_wake(mut self) -> Self {
        self.wake = false;
        self
    }

    pub fn step<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        match std::mem::replace(&mut self.pc, MissingPc::Start) {
            MissingPc::Start => self.start(cx),
            MissingPc::Fill { base, first, n } => self.fill(cx, base, first, n),
            MissingPc::FillDone { base, first, n } => self.fill_done(cx, base, first, n),
            MissingPc::Load(load) => self.load(cx, load),
            MissingPc::Map(map) => self.map_next(cx, map),
            MissingPc::LoadDone {
                base,
                mapped,
                around,
                store,
                probation,
            } => self.load_done(cx, base, mapped, around, store, probation),
            MissingPc::Wake { addr, len } => {
                cx.env.wake(addr, len)?;
                Ok(Step::Done(()))
            }
            MissingPc::FreeSlot(slot) => {
                cx.env.free(StoreId::OWN, slot);
                Ok(Step::Done(()))
            }
        }
    }

    /// Maps zeros over the first-touch run (tried again while the address
    /// space changes).
    fn fill<E: Env<Buf = B>>(
        &mut self,
        cx: &Cx<E>,
        base: usize,
        first: usize,
        n: usize,
    ) -> Result<Step<()>, Fatal> {
        let addr = page_addr(base, first);
        match cx.env.map_zeros(addr, n, self.write, self.wake) {
            Ok(()) => {}
            Err(e) if e.is(libc::EAGAIN) => {
                self.pc = MissingPc::Fill { base, first, n };
                return Ok(Step::Next);
            }
            Err(e) => return Err(e.into()),
        }
        if cx.tun.flawed(Flaw::ResidentBeforeMapped) {
            return Ok(Step::Done(()));
        }
        self.pc = MissingPc::FillDone { base, first, n };
        Ok(Step::Next)
    }

    /// Publishes the filled run resident, then wakes its waiters if any.
    fn fill_done<E: Env<Buf = B>>(
        &mut self,
        cx: &Cx<E>,
        base: usize,
        first: usize,
        n: usize,
    ) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let waiters = publish_filled(&mut st, base, first, n);
        st.end(base);
        st.changed(cx.changed);
        Ok(self.wake_if(waiters, page_addr(base, first), n * PAGE))
    }

    /// Loads the fault's page and the neighbours the store hands over;
    /// tries a failed load again, up to [`SWAPIN_TRIES`] times.
    fn load<E: Env<Buf = B>>(&mut self, cx: &Cx<E>, load: Load) -> Result<Step<()>, Fatal> {
        let Load {
            base,
            idx,
            store,
            slot,
            around,
            distance,
            tries,
            probation,
        } = load;
        let mut buf = B::default();
        let wanted: Vec<Slot> = around.iter().map(|a| a.1).collect();
        // A read fault's pages may keep their slots on the swap
        // file (a write fault's page is written at once).
        let keep = !self.write && store == StoreId::OWN;
        let fault = Some(SwapinFault {
            addr: page_addr(base, idx),
            distance,
        });
        match cx.env.load(store, slot, &mut buf, &wanted, fault, keep) {
            Ok(loaded) => {
                let got = loaded
                    .around
                    .into_iter()
                    .filter_map(|(s, b, kept)| {
                        let i = around.iter().find(|a| a.1 == s)?.0;
                        Some((i, b, (keep && kept).then_some(s)))
                    })
                    .collect();
                let own_kept = (keep && loaded.kept).then_some(slot);
                self.pc = MissingPc::Map(Map {
                    base,
                    own: Some((idx, buf, own_kept)),
                    got,
                    mapped: Vec::new(),
                    around,
                    store,
                    probation,
                });
                Ok(Step::Next)
            }
            // A transient error (an I/O error, a flipped bit) is
            // tried again; then, like the kernel's SIGBUS, the page
            // cannot be produced.
            Err(error) if tries + 1 >= SWAPIN_TRIES => Err(Fatal::SwapIn {
                addr: page_addr(base, idx),
                store: store.0,
                slot,
                error,
            }),
            Err(_) => {
                self.pc = MissingPc::Load(Load {
                    base,
                    idx,
                    store,
                    slot,
                    around,
                    distance,
                    tries: tries + 1,
                    probation,
                });
                Ok(Step::Next)
            }
        }
    }

    /// Maps one loaded page: the fault's own first, then its neighbours.
    fn map_next<E: Env<Buf = B>>(&mut self, cx: &Cx<E>, map: Map<B>) -> Result<Step<()>, Fatal> {
        let Map {
            base,
            mut own,
            mut got,
            mut mapped,
            around,
            store,
            probation,
        } = map;
        let next = match own.take() {
            Some(page) => Some(page),
            None => got.pop(),
        };
        let Some((i, b, kept)) = next else {
            self.pc = MissingPc::LoadDone {
                base,
                mapped,
                around,
                store,
                probation,
            };
            return Ok(Step::Next);
        };
        // Neighbours brought by fault-around: their waiters are not
        // throttled.
        let wake = self.wake || page_addr(base, i) != self.addr;
        match cx.env.map(page_addr(base, i), &b, wake, kept.is_some()) {
            Ok(()) => mapped.push((i, kept)),
            // The address space is changing: try the page again.
            Err(e) if e.is(libc::EAGAIN) => got.push((i, b, kept)),
            Err(e) => return Err(e.into()),
        }
        self.pc = MissingPc::Map(Map {
            base,
            own,
            got,
            mapped,
            around,
            store,
            probation,
        });
        Ok(Step::Next)
    }

    /// Publishes what was mapped, puts back the neighbours not handed over,
    /// then wakes the waiters if any.
    fn load_done<E: Env<Buf = B>>(
        &mut self,
        cx: &Cx<E>,
        base: usize,
        mapped: Vec<(usize, Option<Slot>)>,
        around: Vec<(usize, Slot)>,
        store: StoreId,
        probation: bool,
    ) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        let waiters = publish_loaded(&mut st, base, &mapped, &around, store, probation);
        st.end(base);
        st.changed(cx.changed);
        cx.env
            .count(Event::AroundPages, mapped.len().saturating_sub(1));
        let kept = mapped.iter().filter(|m| m.1.is_some()).count();
        cx.env.count(Event::KeptClean, kept);
        let (lo, hi) = span(&mapped, &around);
        Ok(self.wake_if(waiters, page_addr(base, lo), (hi - lo + 1) * PAGE))
    }

    fn wake_if(&mut self, waiters: bool, addr: usize, len: usize) -> Step<()> {
        if waiters {
            self.pc = MissingPc::Wake { addr, len };
            Step::Next
        } else {
            Step::Done(())
        }
    }

    fn start<E: Env<Buf = B>>(&mut self, cx: &Cx<E>) -> Result<Step<()>, Fatal> {
        let mut st = cx.lock();
        if st.forking {
            return Ok(Step::Wait(st.changes));
        }
        let Some((base, idx)) = st.locate(self.addr) else {
            // Not ours any more: the region went, and unregistering it woke
            // the thread.
            return Ok(Step::Done(()));
        };
        let changes = st.changes;
        let region = st.regions.get_mut(&base).expect("located");
        let state = region.pages[idx].state;
        match state {
            // Runtime threads touch only the pages they evict (a fault of
            // the handler thread itself could never be served). Any other
            // page, whatever its state, is a bug: fail loudly, never serve
            // it.
            _ if self.by_runtime && state != PageState::Evicting => {
                Err(Fatal::RuntimeThreadFault(self.addr))
            }
            PageState::Untouched => self.first_touch(cx, &mut st, base, idx),
            PageState::Swapped { store, slot } => self.swap_in(cx, &mut st, base, idx, store, slot),
            PageState::Evicting if self.by_runtime => {
                serve_evictor_fault(cx.env, cx.tun, self.addr)?;
                Ok(Step::Done(()))
            }
            PageState::Filling | PageState::Loading | PageState::Evicting if self.in_thread => {
                // The faulting thread waits here for the operation in
                // flight to end, then looks again.
                Ok(Step::Wait(changes))
            }
            PageState::Filling | PageState::Loading | PageState::Evicting => {
                // Unmapped while an operation is in flight: never fill it
                // here; that operation wakes the thread when it ends.
                region.pages[idx].waiters = true;
                Ok(Step::Done(()))
            }
            PageState::Resident | PageState::Clean { .. } => {
                // Mapped meanwhile by fault-around or a fill (EEXIST: wake),
                // or discarded by the program itself (it reads as zeros, as
                // the kernel says). Under the state lock: no eviction can
                // start on the page and unmap it between the look and the
                // fill, which would put zeros over its stored copy.
                let filled = zero_fill_or_wake(cx.env, self.addr, self.wake)?;
                if let (true, PageState::Clean { slot }) = (filled, state) {
                    // Discarded: its bytes are zeros now, not its slot's,
                    // and the zero page is not write-protected.
                    region.pages[idx].state = PageState::Resident;
                    self.pc = MissingPc::FreeSlot(slot);
                    return Ok(Step::Next);
                }
                Ok(Step::Done(()))
            }
        }
    }

    /// A first touch: the folio-aligned run of untouched pages around the
    /// fault becomes `Filling`, to be mapped as zeros.
    fn first_touch<E: Env<Buf = B>>(
        &mut self,
        cx: &Cx<E>,
        st: &mut State,
        base: usize,
        idx: usize,
    ) -> Result<Step<()>, Fatal> {
        let folio = cx.tun.folio_pages.max(1);
        let region = st.regions.get_mut(&base).expect("located");
        cx.env.count(Event::Fault, 1);
        cx.env.count(Event::ZeroFault, 1);
        // Like an mTHP first-touch fault: the folio-aligned run of
        // untouched pages around the fault is mapped at once.
        let lo = idx - idx % folio;
        let hi = (lo + folio).min(region.pages.len());
        let untouched = |p: &Page| p.state == PageState::Untouched;
        let first = (lo..idx)
            .rev()
            .take_while(|&i| untouched(&region.pages[i]))
            .last()
            .unwrap_or(idx);
        let last = (idx + 1..hi)
            .take_while(|&i| untouched(&region.pages[i]))
            .last()
            .unwrap_or(idx);
        let n = last - first + 1;
        if cx.tun.flawed(Flaw::ResidentBeforeMapped) {
            for p in &mut region.pages[first..=last] {
                p.state = PageState::Resident;
            }
            st.resident += n;
            for i in first..=last {
                st.push_lru(base, i);
            }
        } else {
            for p in &mut region.pages[first..=last] {
                p.state = PageState::Filling;
            }
            st.begin(base);
        }
        self.pc = MissingPc::Fill { base, first, n };
        Ok(Step::Next)
    }

    /// A swap-in fault: the page, and the swapped neighbours of the same
    /// store in its cluster, become `Loading`; a refault within the
    /// workingset makes it active.
    fn swap_in<E: Env<Buf = B>>(
        &mut self,
        cx: &Cx<E>,
        st: &mut State,
        base: usize,
        idx: usize,
        store: StoreId,
        slot: Slot,
    ) -> Result<Step<()>, Fatal> {
        let limit = cx.tun.workingset_pages;
        let evictions = st.evictions;
        let resident = st.resident as u64;
        let folio = cx.tun.folio_pages.max(1);
        let cluster = (1usize << cx.tun.page_cluster).max(folio.next_power_of_two());
        let region = st.regions.get_mut(&base).expect("located");
        cx.env.count(Event::Fault, 1);
        cx.env.count(Event::SwapinFault, 1);
        let page = &mut region.pages[idx];
        page.state = PageState::Loading;
        page.heat = (page.heat + 1).min(super::MAX_HEAT);
        page.cold_passes = (1u8 << page.heat) - 1;
        let distance = evictions.wrapping_sub(u64::from(page.shadow)) & 0xffff_ffff;
        if distance <= limit {
            page.active = true;
            cx.env.count(Event::WorkingsetRefault, 1);
        }
        // Back after more evictions than there are resident pages: it would
        // not have stayed had every other page left first, so it is no part
        // of a working set that fits. On probation, as the kernel's
        // inactive list takes a refault it does not activate. One back
        // sooner is in use beside the resident pages (a working set just
        // over the limit) and queues on the LRU: the design lab's replays
        // of the compatibility suite's traces lost up to 16x the faults of
        // a working set just over the limit (sqlite-heap at 14M) where a
        // quarter of that distance sent pages to probation.
        let probation = cx.tun.probation_pages > 0 && distance > resident;
        // Fault-around and folio swap-in: swapped neighbours of the
        // same store in the fault's cluster (or folio, if larger)
        // come along, if the store hands them over.
        let lo = idx & !(cluster - 1);
        let hi = (lo + cluster).min(region.pages.len());
        let mut around = Vec::new();
        for i in (lo..hi).filter(|&i| i != idx) {
            if let PageState::Swapped { store: s, slot } = region.pages[i].state {
                if s == store {
                    region.pages[i].state = PageState::Loading;
                    around.push((i, slot));
                }
            }
        }
        st.begin(base);
        self.pc = MissingPc::Load(Load {
            base,
            idx,
            store,
            slot,
            around,
            distance: RefaultDistance(distance),
            tries: 0,
            probation,
        });
        Ok(Step::Next)
    }
}

/// The evictor reading its own victim at `addr` faulted: the page was
/// discarded behind the runtime's back (a raw `MADV_DONTNEED`), so by the
/// kernel's rules it reads as zeros. The evictor owns the page (`Evicting`)
/// and waits in this fault: nothing else maps it. The zeros are mapped
/// write-protected, as the run is: a write landing between this read and
/// the run's unmap would be lost (the model checker found that write when
/// the zero page was mapped writable).
pub(crate) fn serve_evictor_fault<E: Env>(
    env: &E,
    tun: &Tunables,
    addr: usize,
) -> Result<(), Fatal> {
    env.count(Event::ExternalDiscard, 1);
    if tun.flawed(Flaw::EvictorZerosWritable) {
        zero_fill_or_wake(env, addr, true)?;
        return Ok(());
    }
    match env.map_zeros_protected(addr) {
        Ok(()) => Ok(()),
        Err(e) if e.is(libc::EEXIST) => Ok(env.wake(addr, PAGE)?),
        Err(e) => Err(e.into()),
    }
}

/// Maps a zero page at `addr` where nothing is mapped (`true`), else wakes
/// the threads waiting there (if `wake`).
pub(super) fn zero_fill_or_wake<E: Env>(env: &E, addr: usize, wake: bool) -> Result<bool, Fatal> {
    match env.map_zeros(addr, 1, false, wake) {
        Ok(()) => Ok(true),
        Err(e) if e.is(libc::EEXIST) && wake => {
            env.wake(addr, PAGE)?;
            Ok(false)
        }
        Err(e) if e.is(libc::EEXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Lowest and highest page index among the fault's pages.
fn span(mapped: &[(usize, Option<Slot>)], around: &[(usize, Slot)]) -> (usize, usize) {
    let all = mapped.iter().map(|m| m.0).chain(around.iter().map(|a| a.0));
    let lo = all.clone().min().unwrap_or(0);
    let hi = all.max().unwrap_or(0);
    (lo, hi)
}

/// Filled pages become resident and queue for reclaim. Returns whether a
/// fault waited on them.
fn publish_filled(st: &mut State, base: usize, first: usize, n: usize) -> bool {
    let Some(r) = st.regions.get_mut(&base) else {
        return false;
    };
    let mut waiters = false;
    for p in &mut r.pages[first..first + n] {
        debug_assert_eq!(p.state, PageState::Filling);
        p.state = PageState::Resident;
        waiters |= std::mem::take(&mut p.waiters);
    }
    st.resident += n;
    for i in first..first + n {
        st.push_lru(base, i);
    }
    waiters
}

/// Loaded and mapped pages become resident (`Clean` where they kept their
/// slot), queued on probation where `probation` says so, on the LRU
/// otherwise; neighbours that the store did not hand over are swapped
/// again at their slots.
pub(super) fn publish_loaded(
    st: &mut State,
    base: usize,
    mapped: &[(usize, Option<Slot>)],
    around: &[(usize, Slot)],
    store: StoreId,
    probation: bool,
) -> bool {
    let Some(r) = st.regions.get_mut(&base) else {
        return false;
    };
    let mut waiters = false;
    for &(i, kept) in mapped {
        let p = &mut r.pages[i];
        p.state = match kept {
            Some(slot) => PageState::Clean { slot },
            None => PageState::Resident,
        };
        waiters |= std::mem::take(&mut p.waiters);
    }
    for &(i, slot) in around {
        let p = &mut r.pages[i];
        if p.state == PageState::Loading {
            p.state = PageState::Swapped { store, slot };
            waiters |= std::mem::take(&mut p.waiters);
        }
    }
    st.resident += mapped.len();
    for &(i, _) in mapped {
        if probation {
            st.push_probation(base, i);
        } else {
            st.push_lru(base, i);
        }
    }
    waiters
}
