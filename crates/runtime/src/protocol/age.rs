//! Aging, by write tracking: a pass finds the pages written since the last
//! one (mapped and no longer write-protected), gives them reclaim
//! reprieves, and write-protects the region's resident, unpinned pages
//! again, so that reclaim spares the pages a program is still writing.

use super::{page_addr, Cx, Env, Event, Fatal, Flaw, Step, PAGE, WRITTEN_REPRIEVES};

/// One aging pass: for each region, the pages written since the last pass
/// (mapped and no longer write-protected) get reclaim reprieves, and the
/// region's resident, unpinned pages are write-protected again.
///
/// Each write-protect call flushes the TLB of every CPU running the
/// program, by interrupt, whatever its length; so a pass makes one call
/// from the first page to protect to the last, split only at pinned pages
/// (which the kernel must be able to write), not one per run of resident
/// pages (random access leaves them one or two pages long). What lies in
/// between is harmless to protect: unmapped pages (untouched, swapped,
/// discarded) are left as they are by the kernel; pages already protected
/// (armed, `Clean`, `Evicting`) stay so; a page that an operation in
/// flight maps meanwhile (a first touch, a swap-in, an eviction put back)
/// may come out protected. So once the calls are made, every page of the
/// ranges that may be mapped is marked armed ("may be protected"): a pin
/// then faults it in before the kernel writes it (`access_would_fault`),
/// eviction checks the page tables before it trusts the mark, and the
/// next pass finds it written if it was not protected after all. An
/// unarmed page is never protected by aging.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Age {
    regions: Vec<(usize, u64, usize)>,
    pc: AgePc,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum AgePc {
    List,
    Scan,
    Mark(Vec<(usize, usize)>),
    /// The ranges to protect, and how many are done.
    Protect(Vec<(usize, usize)>, usize),
    Finish(Vec<(usize, usize)>),
}

impl Default for Age {
    fn default() -> Self {
        Self::new()
    }
}

impl Age {
    pub fn new() -> Self {
        Self {
            regions: Vec::new(),
            pc: AgePc::List,
        }
    }

    fn next_region(&mut self) -> Step<usize> {
        self.regions.pop();
        if self.regions.is_empty() {
            Step::Done(0)
        } else {
            self.pc = AgePc::Scan;
            Step::Next
        }
    }

    pub fn step<E: Env>(&mut self, cx: &Cx<E>) -> Result<Step<usize>, Fatal> {
        match std::mem::replace(&mut self.pc, AgePc::List) {
            AgePc::List => {
                let st = cx.lock();
                if st.forking {
                    return Ok(Step::Done(0));
                }
                self.regions = st
                    .regions
                    .iter()
                    .filter(|(_, r)| !r.dying)
                    .map(|(&b, r)| (b, r.id, r.len_bytes()))
                    .collect();
                cx.env.count(Event::AgingScan, 1);
                if self.regions.is_empty() {
                    return Ok(Step::Done(0));
                }
                self.pc = AgePc::Scan;
                Ok(Step::Next)
            }
            AgePc::Scan => {
                let &(base, _, len) = self.regions.last().expect("a region");
                let mut written = Vec::new();
                cx.env.written(base, len, &mut written)?;
                self.pc = AgePc::Mark(written);
                Ok(Step::Next)
            }
            AgePc::Mark(written) => {
                let &(base, id, len) = self.regions.last().expect("a region");
                let mut st = cx.lock();
                if st.forking {
                    return Ok(Step::Done(0));
                }
                let Some(r) = st.region(base, id).filter(|r| !r.dying) else {
                    return Ok(self.next_region());
                };
                let mut marked = 0;
                for &(start, end) in &written {
                    let lo = (start.max(base) - base) / PAGE;
                    let hi = (end.min(base + len) - base) / PAGE;
                    for p in &mut r.pages[lo..hi] {
                        if p.state.is_resident() && p.armed {
                            p.reprieves = WRITTEN_REPRIEVES;
                            marked += 1;
                        }
                        // Unprotected now, whatever the reason: protected
                        // again below.
                        p.armed = false;
                    }
                }
                cx.env.count(Event::PagesWritten, marked);
                let ignore_pins = cx.tun.flawed(Flaw::AgingIgnoresPins);
                // Pages `[first, last]` to protect between two pinned pages:
                // one call (one TLB flush) covers them and whatever lies
                // between them (see `Age`).
                let mut spans: Vec<(usize, usize)> = Vec::new();
                let mut open: Option<(usize, usize)> = None;
                let mut protected = 0;
                for (i, p) in r.pages.iter_mut().enumerate() {
                    if p.pins > 0 && !ignore_pins {
                        // Not protected by this pass, but still armed if an
                        // earlier one protected it and nobody wrote it
                        // since: a pin that finds it so faults it in
                        // before the kernel writes it.
                        spans.extend(open.take());
                        continue;
                    }
                    let protect = p.state.is_resident();
                    // A page still armed was not found written: its
                    // protection from an earlier pass stands. Only pages
                    // written, mapped since, or unpinned since need the call.
                    let already = p.armed;
                    p.armed = protect;
                    if !protect || already {
                        continue;
                    }
                    protected += 1;
                    open = Some((open.map_or(i, |(first, _)| first), i));
                }
                spans.extend(open);
                let ranges: Vec<(usize, usize)> = spans
                    .into_iter()
                    .map(|(first, last)| (page_addr(base, first), (last + 1 - first) * PAGE))
                    .collect();
                cx.env.count(Event::PagesProtected, protected);
                cx.env.count(Event::ProtectCalls, ranges.len());
                r.aging = true;
                st.begin(base);
                self.pc = AgePc::Protect(ranges, 0);
                Ok(Step::Next)
            }
            AgePc::Protect(ranges, done) => {
                if let Some(&(a, l)) = ranges.get(done) {
                    cx.env.protect(a, l)?;
                    self.pc = AgePc::Protect(ranges, done + 1);
                } else {
                    self.pc = AgePc::Finish(ranges);
                }
                Ok(Step::Next)
            }
            AgePc::Finish(ranges) => {
                let &(base, id, _) = self.regions.last().expect("a region");
                let mut st = cx.lock();
                if let Some(r) = st.region(base, id) {
                    r.aging = false;
                    if !cx.tun.flawed(Flaw::AgingLeavesGapsUnarmed) {
                        rearm_gaps(&mut r.pages, base, &ranges);
                    }
                }
                st.end(base);
                st.changed(cx.changed);
                Ok(self.next_region())
            }
        }
    }
}

/// Marks armed every page of `ranges` (addresses, lengths in region
/// `base`) that may be mapped: the protect calls just made may have
/// protected it in passing, whatever its state said when the pass looked.
fn rearm_gaps(pages: &mut [super::Page], base: usize, ranges: &[(usize, usize)]) {
    for &(addr, len) in ranges {
        let first = (addr - base) / PAGE;
        let last = (first + len / PAGE).min(pages.len());
        for p in &mut pages[first..last] {
            if p.state.is_resident() || p.state.in_flight() {
                p.armed = true;
            }
        }
    }
}
