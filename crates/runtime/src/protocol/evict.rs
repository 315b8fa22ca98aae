//! Eviction: the oldest resident pages are taken off the LRU, grouped into
//! folio runs, write-protected, stored, unmapped in groups (one TLB flush
//! each) and published `Swapped`; a run the store refuses or the kernel
//! does not unmap is put back `Resident`. No lost write (invariant 1)
//! rests on the order of these steps.

use super::{
    page_addr, Cx, Env, Event, Fatal, Flaw, PageState, Slot, State, Step, StoreId, Tunables, PAGE,
};
use std::collections::BTreeMap;

/// Pages in a span `[start, end)`.
fn span_pages(span: (usize, usize)) -> usize {
    (span.1 - span.0) / PAGE
}

/// A run of neighbouring pages of one region, evicted as one folio.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Run {
    base: usize,
    first: usize,
    n: usize,
    /// Every page of it was `Clean`: its slots are kept, nothing is stored.
    clean: bool,
    /// Every page of it was armed by aging (write-protected by the last
    /// pass and not written since): its protection may stand in for the
    /// eviction's own write-protect call once checked.
    armed: bool,
}

impl Run {
    fn addr(&self) -> usize {
        page_addr(self.base, self.first)
    }

    fn len(&self) -> usize {
        self.n * PAGE
    }

    /// `next` starts where this run ends, in the same region.
    fn continued_by(&self, next: &Run) -> bool {
        self.near(next, 1)
    }

    /// `next` starts after this run, in the same region, fewer than
    /// `within` pages past its end.
    fn near(&self, next: &Run, within: usize) -> bool {
        let end = self.first + self.n;
        next.base == self.base && next.first >= end && next.first - end < within
    }
}

/// Evicts up to `want` of the oldest resident pages; `Done(evicted)`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Evict {
    want: usize,
    /// Only pages queued at least this many ms of the age clock ago (cold
    /// pages leaving before pressure); `None`: the oldest, however young.
    min_age: Option<u32>,
    /// Runs still to go; the current one is the last.
    runs: Vec<Run>,
    /// Runs stored, still mapped and write-protected, waiting for the
    /// batch's one unmap.
    stored: Vec<(Run, Vec<Slot>)>,
    /// After the unmap (`runs` holds the stored runs again): per run, its
    /// slots and whether it was unmapped; the current run's is the last.
    unmapped: Vec<(Vec<Slot>, bool)>,
    /// The slots the `Clean` victims kept, by page address.
    kept: BTreeMap<usize, Slot>,
    /// Pages `[start, end)` write-protected by one call that covered the
    /// current run and the runs continuing it (a stream's folios): they
    /// go straight to their store.
    protected: Option<(usize, usize)>,
    done: usize,
    /// No thread but the evicting one can write the victims: it is the
    /// program's only thread, evicting in its own fault handler (direct
    /// reclaim). No write can land between a run's copy and its unmap, so
    /// runs are not write-protected: no call, and no TLB flush by
    /// interrupt of the CPU the reclaim thread runs on.
    sole_writer: bool,
    pc: EvictPc,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum EvictPc {
    Pick,
    /// Write-protect the current run: writers wait from now on. A clean
    /// run is protected already, and an armed one should be: check that
    /// it still is, and mapped.
    Protect,
    /// A clean run was found written or discarded behind the runtime's
    /// back: free the slots it kept and evict it as any other.
    Unkeep,
    /// Copy the run out into the store (its bytes are stable).
    Store,
    /// Unmap every stored run of the batch at once (one TLB flush).
    DiscardStored,
    /// Unmap the current run alone (only the flawed variant does).
    Discard(Vec<Slot>),
    /// Remove the protection and wake the writers: they fault again, find
    /// the page in flight, and are woken once it is published. Only where
    /// faults sleep in the kernel ([`Tunables::faults_block`]).
    Unprotect(Vec<Slot>),
    Publish(Vec<Slot>),
    /// Put a refused run back: un-protect it (if protected), free the
    /// slots (if any), mark it resident.
    UndoUnprotect(Vec<Slot>),
    UndoFree(Vec<Slot>),
    UndoPublish,
    Wake,
}

impl Evict {
    pub fn new(want: usize) -> Self {
        Self {
            want,
            min_age: None,
            runs: Vec::new(),
            stored: Vec::new(),
            unmapped: Vec::new(),
            kept: BTreeMap::new(),
            protected: None,
            done: 0,
            sole_writer: false,
            pc: EvictPc::Pick,
        }
    }

    /// The evicting thread is the program's only one, in its own fault
    /// handler (the caller's check): no write-protection.
    pub fn sole_writer(mut self) -> Self {
        self.sole_writer = true;
        self
    }

    /// Evicts up to `want` of the oldest resident pages among those queued
    /// at least `min_age` ms of the age clock ago: fewer, or none, where
    /// the rest are younger.
    pub fn cold(want: usize, min_age: u32) -> Self {
        Self {
            min_age: Some(min_age),
            ..Self::new(want)
        }
    }

    fn run(&self) -> Run {
        self.runs[self.runs.len() - 1]
    }

    /// `[start, end)` of the current run and the runs after it that
    /// continue it, none of them clean (a clean run is protected already).
    fn span(&self) -> (usize, usize) {
        let run = self.run();
        let mut last = run;
        for next in self.runs.iter().rev().skip(1) {
            if next.clean || !last.continued_by(next) {
                break;
            }
            last = *next;
        }
        (run.addr(), last.addr() + last.len())
    }

    /// The current run lies in the span an earlier call protected.
    fn already_protected(&self) -> bool {
        let run = self.run();
        self.protected
            .is_some_and(|(start, end)| start <= run.addr() && run.addr() + run.len() <= end)
    }

    /// The current run is finished (stored, or put back): on to the next.
    /// Runs are protected and stored one by one; once all are, the stored
    /// ones are unmapped together, then (where faults sleep in the kernel)
    /// un-protected, and published one by one.
    fn next_run(&mut self, tun: &Tunables) -> Step<usize> {
        self.runs.pop();
        self.advance(tun)
    }

    /// The step after a run's unmap: its protection went with its pages;
    /// writers sleeping in the kernel on it are woken by removing it
    /// again, and there are none to wake where faults raise SIGBUS.
    fn after_unmap(tun: &Tunables, slots: Vec<Slot>) -> EvictPc {
        if tun.faults_block {
            EvictPc::Unprotect(slots)
        } else {
            EvictPc::Publish(slots)
        }
    }

    /// Sets the step for the current run, or for the batch's unmap once
    /// every run is stored; or ends.
    fn advance(&mut self, tun: &Tunables) -> Step<usize> {
        if let Some((slots, unmapped)) = self.unmapped.pop() {
            // Finishing an unmapped group: its runs are on top of `runs`.
            self.pc = if unmapped {
                Self::after_unmap(tun, slots)
            } else {
                EvictPc::UndoUnprotect(slots)
            };
            return Step::Next;
        }
        let stored_pages: usize = self.stored.iter().map(|(r, _)| r.n).sum();
        // A group of long runs grows while the next is long too and lies
        // less than a folio past the last: a stream's folios, with the odd
        // active page left out, one flush for the batch. Otherwise a group
        // ends once it has `unmap_group_pages` pages: scattered victims
        // (xz's, sort's) are written again soon, and their writers wait
        // for the whole group (longer groups of them cost refaults).
        let folio = tun.folio_pages.max(1);
        let streaming = match (self.stored.last(), self.runs.last()) {
            (Some((last, _)), Some(next)) => {
                last.near(next, folio) && 2 * last.n >= folio && 2 * next.n >= folio
            }
            _ => false,
        };
        if stored_pages > 0
            && (self.runs.is_empty() || (stored_pages >= tun.unmap_group_pages && !streaming))
        {
            self.pc = EvictPc::DiscardStored;
            Step::Next
        } else if !self.runs.is_empty() {
            self.pc = EvictPc::Protect;
            Step::Next
        } else {
            Step::Done(self.done)
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        match std::mem::replace(&mut self.pc, EvictPc::Pick) {
            EvictPc::Pick => self.pick(cx),
            EvictPc::Protect if self.run().clean => self.check_clean(cx),
            EvictPc::Protect if self.already_protected() => {
                self.pc = EvictPc::Store;
                Ok(Step::Next)
            }
            // With no other writer, an armed run needs its protection no
            // more than any other: neither checked nor made.
            EvictPc::Protect if self.run().armed && !self.sole_writer => self.check_armed(cx),
            EvictPc::Protect => self.protect(cx),
            EvictPc::Unkeep => self.unkeep(cx),
            EvictPc::Store if self.run().clean => self.keep_clean(cx),
            EvictPc::Store => self.store(cx),
            EvictPc::DiscardStored => self.discard_stored(cx),
            EvictPc::Discard(slots) => self.discard(cx, slots),
            EvictPc::Unprotect(slots) => self.unprotect(cx, slots),
            EvictPc::Publish(slots) => self.publish(cx, slots),
            EvictPc::UndoUnprotect(slots) => self.undo_unprotect(cx, slots),
            EvictPc::UndoFree(slots) => self.undo_free(cx, slots),
            EvictPc::UndoPublish => self.undo_publish(cx),
            EvictPc::Wake => self.wake(cx),
        }
    }

    /// Takes the batch's victims off the LRU and groups them into runs,
    /// oldest first.
    fn pick<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        let mut st = cx.lock();
        if st.forking {
            return Ok(Step::Done(0));
        }
        let victims = pick_victims(&mut st, self.want, self.min_age, cx.tun, cx.env);
        for v in &victims {
            if let Some(slot) = v.kept {
                self.kept.insert(page_addr(v.base, v.idx), slot);
            }
        }
        self.runs = group_runs(victims, cx.tun.folio_pages.max(1));
        cx.env.count(Event::EvictRuns, self.runs.len());
        // Runs are taken from the back: reverse to go oldest first.
        self.runs.reverse();
        for run in &self.runs {
            st.begin(run.base);
        }
        if self.runs.is_empty() {
            return Ok(Step::Done(0));
        }
        self.pc = EvictPc::Protect;
        Ok(Step::Next)
    }

    /// Whether every page of the current run is still mapped and
    /// write-protected, by one look at the page tables (the flawed variant
    /// `unchecked` trusts the state instead).
    fn still_protected<E: Env>(&self, cx: &Cx<E>, unchecked: Flaw) -> bool {
        let run = self.run();
        cx.tun.flawed(unchecked)
            || matches!(cx.env.still_protected(run.addr(), run.len()), Ok(true))
    }

    /// A clean run is protected already: checks that it still is, and
    /// mapped, so that its kept slots still hold its bytes.
    fn check_clean<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        self.pc = if self.still_protected(cx, Flaw::CleanUnchecked) {
            EvictPc::Store
        } else {
            EvictPc::Unkeep
        };
        Ok(Step::Next)
    }

    /// An armed run was write-protected by the last aging pass and not
    /// written since, as far as the state knows: one look at the page
    /// tables (no TLB flush) confirms that every page is still mapped and
    /// protected, and the run goes to its store without a write-protect
    /// call of its own, which would interrupt every CPU running the
    /// program. Where the look disagrees (a page discarded and mapped
    /// again behind the runtime's back) the run is protected as any other.
    fn check_armed<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        if self.still_protected(cx, Flaw::ArmedUnchecked) {
            cx.env.count(Event::EvictedArmed, self.run().n);
            self.pc = EvictPc::Store;
        } else {
            if let Some(r) = self.runs.last_mut() {
                r.armed = false;
            }
            self.pc = EvictPc::Protect;
        }
        Ok(Step::Next)
    }

    /// Write-protects the current run, and the runs that continue it:
    /// writers wait from now on.
    fn protect<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        // One call (one TLB flush) for this run and the runs that
        // continue it; each is still stored, unmapped and put back
        // on its own.
        let span = self.span();
        let len = if cx.tun.flawed(Flaw::SpanProtectsFirstRunOnly) {
            run.len()
        } else {
            span.1 - span.0
        };
        if self.sole_writer {
            // Nobody else can write: the span counts as protected.
            cx.env.count(Event::EvictedSoleWriter, span_pages(span));
            self.protected = Some(span);
            self.pc = EvictPc::Store;
            return Ok(Step::Next);
        }
        cx.env.count(Event::EvictProtectCalls, 1);
        self.pc = match cx.env.protect(span.0, len) {
            Ok(()) => {
                self.protected = Some(span);
                EvictPc::Store
            }
            // Nothing was protected: put the run back as it was.
            Err(_) => EvictPc::UndoFree(Vec::new()),
        };
        Ok(Step::Next)
    }

    /// A clean run found written or discarded: frees the slots it kept; it
    /// is protected and stored as any other.
    fn unkeep<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        // The pages are ours (`Evicting`): their slots go, and they
        // are stored from what is mapped now (zeros where
        // discarded: the evictor's own fault maps them).
        let run = self.run();
        for a in (run.addr()..run.addr() + run.len()).step_by(PAGE) {
            if let Some(slot) = self.kept.remove(&a) {
                cx.env.free(StoreId::OWN, slot);
            }
        }
        if let Some(r) = self.runs.last_mut() {
            r.clean = false;
        }
        self.pc = EvictPc::Protect;
        Ok(Step::Next)
    }

    /// A clean run stores nothing: the slots it kept are its copy.
    fn keep_clean<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        cx.env.evicting_clean(run.addr(), run.n);
        let slots = (run.addr()..run.addr() + run.len())
            .step_by(PAGE)
            .filter_map(|a| self.kept.remove(&a))
            .collect();
        self.stored.push((run, slots));
        Ok(self.next_run(cx.tun))
    }

    /// Copies the current run into the store.
    fn store<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        self.pc = match cx.env.store_run(run.addr(), run.n) {
            Ok(slots) if cx.tun.flawed(Flaw::UnprotectBeforeUnmap) => EvictPc::Unprotect(slots),
            Ok(slots) => {
                self.stored.push((run, slots));
                return Ok(self.next_run(cx.tun));
            }
            Err(_) => {
                cx.env.count(Event::EvictFailures, run.n);
                EvictPc::UndoUnprotect(Vec::new())
            }
        };
        Ok(Step::Next)
    }

    /// Unmaps every stored run of the batch at once (one TLB flush), then
    /// finishes them one by one.
    fn discard_stored<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        let stored = std::mem::take(&mut self.stored);
        let ranges: Vec<(usize, usize)> = stored.iter().map(|(r, _)| (r.addr(), r.len())).collect();
        let results = if cx.tun.flawed(Flaw::BatchUnmapsLastRunOnly) {
            let last = ranges.len() - 1;
            let mut r = cx.env.discard_ranges(&ranges[last..]);
            r.splice(0..0, (0..last).map(|_| Ok(())));
            r
        } else {
            cx.env.discard_ranges(&ranges)
        };
        debug_assert!(self.unmapped.is_empty());
        for ((run, slots), result) in stored.into_iter().zip(results) {
            // A run not unmapped is still mapped and protected:
            // it stays resident.
            if result.is_err() {
                cx.env.count(Event::EvictFailures, run.n);
            }
            self.runs.push(run);
            self.unmapped.push((slots, result.is_ok()));
        }
        // The last run is the current one; its entry is popped as
        // its step is set.
        Ok(self.advance(cx.tun))
    }

    /// Unmaps the current run alone (only the flawed variant does).
    fn discard<E: Env>(&mut self, cx: &Cx<E>, slots: Vec<Slot>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        self.pc = match cx.env.discard(run.addr(), run.len()) {
            Ok(()) if cx.tun.flawed(Flaw::UnprotectBeforeUnmap) => {
                return Ok(self.next_run(cx.tun));
            }
            Ok(()) => Self::after_unmap(cx.tun, slots),
            Err(_) => {
                // Still mapped, still protected: keep it resident.
                cx.env.count(Event::EvictFailures, run.n);
                EvictPc::UndoUnprotect(slots)
            }
        };
        Ok(Step::Next)
    }

    /// Removes the unmapped run's protection and wakes its writers.
    fn unprotect<E: Env>(&mut self, cx: &Cx<E>, slots: Vec<Slot>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        cx.env.unprotect(run.addr(), run.len(), true)?;
        self.pc = EvictPc::Publish(slots);
        Ok(Step::Next)
    }

    /// Publishes the current run `Swapped` at its slots.
    fn publish<E: Env>(&mut self, cx: &Cx<E>, slots: Vec<Slot>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        let mut st = cx.lock();
        let clock = st.evictions;
        let mut waiters = false;
        if let Some(r) = st.regions.get_mut(&run.base) {
            for (k, &slot) in slots.iter().enumerate() {
                let p = &mut r.pages[run.first + k];
                debug_assert_eq!(p.state, PageState::Evicting);
                p.state = PageState::Swapped {
                    store: StoreId::OWN,
                    slot,
                };
                p.shadow = clock as u32;
                p.armed = false;
                p.reprieves = 0;
                waiters |= std::mem::take(&mut p.waiters);
            }
        }
        st.resident -= run.n;
        st.evictions += run.n as u64;
        self.done += run.n;
        cx.env.count(Event::EvictedPages, run.n);
        if run.clean {
            cx.env.count(Event::EvictedClean, run.n);
        }
        st.end(run.base);
        st.changed(cx.changed);
        if cx.tun.flawed(Flaw::UnprotectBeforeUnmap) {
            self.pc = EvictPc::Discard(Vec::new());
            return Ok(Step::Next);
        }
        if waiters {
            self.pc = EvictPc::Wake;
            return Ok(Step::Next);
        }
        Ok(self.next_run(cx.tun))
    }

    /// Puts a refused run back: removes its protection.
    fn undo_unprotect<E: Env>(
        &mut self,
        cx: &Cx<E>,
        slots: Vec<Slot>,
    ) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        cx.env.unprotect(run.addr(), run.len(), true)?;
        self.pc = EvictPc::UndoFree(slots);
        Ok(Step::Next)
    }

    /// Puts a refused run back: frees the slots it was given.
    fn undo_free<E: Env>(&mut self, cx: &Cx<E>, slots: Vec<Slot>) -> Result<Step<usize>, Fatal> {
        for s in slots {
            cx.env.free(StoreId::OWN, s);
        }
        self.pc = EvictPc::UndoPublish;
        Ok(Step::Next)
    }

    /// Puts a refused run back: resident again, and queued for reclaim.
    fn undo_publish<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        let mut st = cx.lock();
        let mut waiters = false;
        if let Some(r) = st.regions.get_mut(&run.base) {
            for p in &mut r.pages[run.first..run.first + run.n] {
                p.state = PageState::Resident;
                waiters |= std::mem::take(&mut p.waiters);
            }
        }
        for i in run.first..run.first + run.n {
            st.push_lru(run.base, i);
        }
        st.end(run.base);
        st.changed(cx.changed);
        if waiters {
            self.pc = EvictPc::Wake;
            return Ok(Step::Next);
        }
        Ok(self.next_run(cx.tun))
    }

    /// Wakes the threads that waited on the current run.
    fn wake<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        let run = self.run();
        cx.env.wake(run.addr(), run.len())?;
        Ok(self.next_run(cx.tun))
    }
}

/// A page taken for eviction.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Victim {
    base: usize,
    idx: usize,
    /// The slot a `Clean` page kept.
    kept: Option<Slot>,
    /// Armed by aging when taken ([`super::Page::armed`]).
    armed: bool,
}

/// Takes up to `n` victims, marking them `Evicting`: first the pages on
/// probation that have had their [`Tunables::probation_pages`] evictions,
/// then the LRU, oldest first, then, if the LRU had too few, the rest of
/// probation. A pass for age alone (`min_age`) takes the LRU's pages old
/// enough, then probation's (a page swapped in and untouched since is as
/// cold as any). A
/// page refaulted within the workingset (active) or found written by aging
/// (reprieves left) is passed over and queued again, stamped now. With
/// `min_age`, the first page queued less than that long ago ends the pick
/// (the LRU is oldest first by its stamps).
fn pick_victims<E: Env>(
    st: &mut State,
    n: usize,
    min_age: Option<u32>,
    tun: &Tunables,
    env: &E,
) -> Vec<Victim> {
    let mut victims = Vec::new();
    if min_age.is_none() && tun.probation_pages > 0 {
        let served = Served::After(tun.probation_pages);
        pick_on_probation(st, n, served, tun, &mut victims);
    }
    // Records of regions under an aging pass, oldest first: back at the
    // front once the pick is done.
    let mut passed_over = Vec::new();
    let mut budget = st.lru.len();
    while victims.len() < n && budget > 0 {
        budget -= 1;
        let Some(mut rec) = st.lru.pop_front() else {
            break;
        };
        if !st.live(&rec) {
            continue;
        }
        if min_age.is_some_and(|a| st.clock.wrapping_sub(rec.since) < a) {
            st.lru.push_front(rec);
            break;
        }
        let now = st.clock;
        let idx = rec.idx as usize;
        let r = st.regions.get_mut(&rec.base).expect("live record");
        if r.aging {
            // Another thread's aging pass is write-protecting its region
            // (eviction in a faulting thread runs beside the reclaim
            // thread's passes): not now, and it keeps its place. Sent to
            // the back, the oldest pages of each region a pass crossed
            // would outlive younger ones, which would leave in their stead.
            passed_over.push(rec);
            continue;
        }
        let page = &mut r.pages[idx];
        if r.dying || !page.evictable() {
            // Not now (pinned, shared, in flight, region going): to the
            // back, its stamp kept, so the picks that follow do not look
            // at it again first.
            st.lru.push_back(rec);
            continue;
        }
        if std::mem::take(&mut page.active) {
            env.count(Event::WorkingsetActivate, 1);
            rec.since = now;
            st.lru.push_back(rec);
            continue;
        }
        if page.reprieves > 0 {
            page.reprieves -= 1;
            env.count(Event::WrittenReprieved, 1);
            rec.since = now;
            st.lru.push_back(rec);
            continue;
        }
        if min_age.is_some() && spared_for_age(page) {
            rec.since = now;
            st.lru.push_back(rec);
            continue;
        }
        victims.push(take_victim(page, rec.base, idx));
    }
    for rec in passed_over.into_iter().rev() {
        st.lru.push_front(rec);
    }
    match min_age {
        // The LRU had too few: probation's youngest too, or nothing would
        // leave, and no eviction would ever end their probation.
        None => pick_on_probation(st, n, Served::After(0), tun, &mut victims),
        Some(age) => pick_on_probation(st, n, Served::OlderThan(age), tun, &mut victims),
    }
    victims
}

/// When a page on probation may be taken.
#[derive(Clone, Copy)]
enum Served {
    /// Once this many pages have been evicted since it came in.
    After(u64),
    /// For its age alone: once queued this many ms ago (the age clock),
    /// and spared its cold passes first, as on the LRU.
    OlderThan(u32),
}

/// Takes victims from probation, oldest first, while fewer than `n` are
/// taken and the oldest has `served` its probation. A page
/// not evictable now (pinned, in flight, its region going or under an
/// aging pass) or found written by aging goes to the back of the LRU,
/// where the LRU's rules take it from then on.
fn pick_on_probation(
    st: &mut State,
    n: usize,
    served: Served,
    tun: &Tunables,
    victims: &mut Vec<Victim>,
) {
    while victims.len() < n {
        let Some(mut rec) = st.probation.front().copied() else {
            return;
        };
        if !st.live(&rec) {
            st.probation.pop_front();
            continue;
        }
        let done = match served {
            Served::After(evictions) => {
                u64::from((st.evictions as u32).wrapping_sub(rec.queued)) >= evictions
            }
            Served::OlderThan(age) => st.clock.wrapping_sub(rec.since) >= age,
        };
        if !done {
            return;
        }
        st.probation.pop_front();
        let now = st.clock;
        let idx = rec.idx as usize;
        let r = st.regions.get_mut(&rec.base).expect("live record");
        let page = &mut r.pages[idx];
        let evictable =
            page.evictable() || tun.flawed(Flaw::ProbationIgnoresPins) && page.state.is_resident();
        if r.aging || r.dying || !evictable || page.reprieves > 0 {
            st.lru.push_back(rec);
            continue;
        }
        if matches!(served, Served::OlderThan(_)) && spared_for_age(page) {
            rec.since = now;
            st.lru.push_back(rec);
            continue;
        }
        // Its refault distance has had its say: it is on probation.
        page.active = false;
        victims.push(take_victim(page, rec.base, idx));
    }
}

/// Whether a page about to leave for its age alone is spared: a page
/// swapped in lately (hot, though its reads are invisible) is spared its
/// cold passes first (one fewer now); one that leaves all the same cools
/// down.
fn spared_for_age(page: &mut super::Page) -> bool {
    if page.cold_passes > 0 {
        page.cold_passes -= 1;
        return true;
    }
    page.heat = page.heat.saturating_sub(1);
    false
}

/// Marks page `idx` of the region at `base` `Evicting`: a victim, with the
/// slot it kept if it is `Clean`.
fn take_victim(page: &mut super::Page, base: usize, idx: usize) -> Victim {
    let kept = match page.state {
        PageState::Clean { slot } => Some(slot),
        _ => None,
    };
    page.state = PageState::Evicting;
    Victim {
        base,
        idx,
        kept,
        armed: page.armed,
    }
}

/// Groups victims into runs of neighbouring pages of one region, at most
/// `folio` long and not crossing a folio boundary; a run is all clean or
/// all not, and all armed or all not.
fn group_runs(mut victims: Vec<Victim>, folio: usize) -> Vec<Run> {
    victims.sort_unstable();
    let mut runs: Vec<Run> = Vec::new();
    for v in victims {
        let (clean, idx) = (v.kept.is_some(), v.idx);
        // A clean page is protected for its slot's sake, armed or not.
        let armed = v.armed && !clean;
        match runs.last_mut() {
            Some(r)
                if r.base == v.base
                    && r.first + r.n == idx
                    && r.n < folio
                    && idx % folio != 0
                    && r.clean == clean
                    && r.armed == armed =>
            {
                r.n += 1
            }
            _ => runs.push(Run {
                base: v.base,
                first: idx,
                n: 1,
                clean,
                armed,
            }),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lru_pages(st: &State) -> Vec<(usize, usize)> {
        st.lru
            .iter()
            .filter(|r| st.live(r))
            .map(|r| (r.base, r.idx as usize))
            .collect()
    }

    fn picked(victims: &[Victim]) -> Vec<(usize, usize)> {
        victims.iter().map(|v| (v.base, v.idx)).collect()
    }

    fn tun(probation_pages: u64) -> Tunables {
        Tunables {
            folio_pages: 1,
            page_cluster: 0,
            workingset_pages: 1,
            probation_pages,
            unmap_group_pages: 1,
            faults_block: true,
            flaw: None,
        }
    }

    #[test]
    fn pages_swapped_in_leave_first_once_their_probation_is_over() {
        let a = 1 << 30;
        let mut st = State::default();
        st.add_region(a, 4);
        for idx in 0..4 {
            st.install_resident(a, idx);
        }
        // Pages 2 and 3 came back from the store, in that order.
        st.push_probation(a, 2);
        st.push_probation(a, 3);
        let pick = |st: &mut State, n, min_age| {
            crate::model::with_model_env(|env| pick_victims(st, n, min_age, &tun(2), env))
        };
        // Not yet two evictions since: the LRU's oldest go first.
        let v = pick(&mut st, 1, None);
        assert_eq!(picked(&v), vec![(a, 0)]);
        st.evictions += 2;
        // A pass for age alone takes the LRU's old pages first: page 1.
        let v = pick(&mut st, 1, Some(0));
        assert_eq!(picked(&v), vec![(a, 1)]);
        // Under the limit, probation first, oldest first.
        st.regions.get_mut(&a).unwrap().pages[3].pins = 1;
        let v = pick(&mut st, 2, None);
        assert_eq!(picked(&v), vec![(a, 2)]);
        // Pinned, page 3 went to the LRU, whose rules take it from now on.
        assert_eq!(lru_pages(&st), vec![(a, 3)]);
        assert!(st.probation.is_empty());
        // Where the LRU has nothing to give, probation's young pages go:
        // else nothing would leave, and no probation would ever end.
        st.regions.get_mut(&a).unwrap().pages[3].pins = 0;
        st.push_probation(a, 3);
        let v = pick(&mut st, 2, None);
        assert_eq!(picked(&v), vec![(a, 3)]);
        // A pass for age alone takes probation's old pages once the LRU's
        // are gone, sparing a page its cold passes first (to the LRU).
        let mut st = State::default();
        st.add_region(a, 2);
        for idx in 0..2 {
            st.install_resident(a, idx);
            st.push_probation(a, idx);
        }
        st.regions.get_mut(&a).unwrap().pages[0].cold_passes = 1;
        st.advance_clock(1_000);
        let v = pick(&mut st, 2, Some(500));
        assert_eq!(picked(&v), vec![(a, 1)]);
        assert_eq!(lru_pages(&st), vec![(a, 0)]);
        assert_eq!(st.regions[&a].pages[0].cold_passes, 0);
        // The same swap-in without probation queues on the LRU.
        let mut st = State::default();
        st.add_region(a, 1);
        st.regions.get_mut(&a).unwrap().pages[0].state = PageState::Loading;
        st.begin(a);
        super::super::missing::publish_loaded(&mut st, a, &[(0, None)], &[], StoreId::OWN, false);
        assert_eq!(lru_pages(&st), vec![(a, 0)]);
        assert!(st.probation.is_empty());
    }

    #[test]
    fn a_pick_beside_an_aging_pass_leaves_that_regions_pages_their_place() {
        let (a, b) = (1 << 30, 2 << 30);
        let mut st = State::default();
        st.add_region(a, 2);
        st.add_region(b, 2);
        for (base, idx) in [(a, 0), (a, 1), (b, 0), (b, 1)] {
            st.install_resident(base, idx);
        }
        st.regions.get_mut(&a).unwrap().aging = true;
        let v = crate::model::with_model_env(|env| pick_victims(&mut st, 1, None, &tun(0), env));
        assert_eq!(picked(&v), vec![(b, 0)]);
        // Still the oldest: not sent behind region b's younger page.
        assert_eq!(lru_pages(&st), vec![(a, 0), (a, 1), (b, 1)]);
        st.regions.get_mut(&a).unwrap().aging = false;
        let v = crate::model::with_model_env(|env| pick_victims(&mut st, 2, None, &tun(0), env));
        assert_eq!(picked(&v), vec![(a, 0), (a, 1)]);
        // A pinned page is passed over to the back, where the next picks
        // do not look at it first.
        st.regions.get_mut(&b).unwrap().pages[1].pins = 1;
        let v = crate::model::with_model_env(|env| pick_victims(&mut st, 1, None, &tun(0), env));
        assert!(v.is_empty());
        assert_eq!(lru_pages(&st), vec![(b, 1)]);
    }
}
