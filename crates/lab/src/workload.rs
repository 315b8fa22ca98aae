//! A trace turned into a workload a replay steps through: every process's
//! records merged by time into one sequence of steps over one address
//! space (each process's addresses tagged with its index, so that a run
//! of several processes replays under one shared limit, as `uzswap run`
//! shares it), each page numbered densely, and what the recorded run
//! itself counted.

use std::collections::{BTreeMap, HashMap};
use trace::{Event, ProcessTrace, Record, SIZE_NONE, SIZE_ON_FILE, SIZE_ZERO};

/// Bytes in a page.
pub const PAGE: usize = 4096;

/// Where a process's addresses go in the replay's one address space: its
/// index above bit 48 (user addresses are below 2^47).
const PROCESS_SHIFT: u32 = 48;

/// One access seen by the trace: a missing fault (first touch or
/// swap-in) or a write-protect fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Dense page number, `0..Workload::pages`.
    pub id: u32,
    /// The page's address in the replay's address space.
    pub addr: usize,
    pub write: bool,
    /// Recorded as a write-protect fault (a write to a page write
    /// tracking had protected).
    pub wp: bool,
    /// The run's swap-in left this page clean (its slot kept). Writes to a
    /// resident page are not seen, so a replay keeps clean only the pages
    /// the run kept: those it saw written if they were.
    pub kept_clean: bool,
}

/// One step of a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A region of `pages` untouched pages at `addr`.
    Map {
        addr: usize,
        pages: usize,
    },
    /// The region at `addr` now has `pages` pages; `forget`: pages cut off.
    Resize {
        addr: usize,
        pages: usize,
        forget: Vec<u32>,
    },
    /// The region at `addr` is gone with the pages in `forget` (those the
    /// trace ever touched).
    Unmap {
        addr: usize,
        forget: Vec<u32>,
    },
    /// The program discarded `pages` pages at `addr`: those in `forget`
    /// are untouched again.
    Discard {
        addr: usize,
        pages: usize,
        forget: Vec<u32>,
    },
    Access(Access),
    /// The recorded run's limit in force became this many pages.
    Limit(u64),
    /// The recorded run's process `process` ran an aging pass here.
    Aged {
        process: usize,
    },
}

impl Step {
    /// The index of the process whose step this is (`None`: the limit,
    /// which all processes share).
    pub fn process(&self) -> Option<usize> {
        match self {
            Step::Map { addr, .. }
            | Step::Resize { addr, .. }
            | Step::Unmap { addr, .. }
            | Step::Discard { addr, .. }
            | Step::Access(Access { addr, .. }) => Some(process_of(*addr)),
            Step::Aged { process } => Some(*process),
            Step::Limit(_) => None,
        }
    }
}

/// The index of the process an address of the replay belongs to.
pub fn process_of(addr: usize) -> usize {
    (addr >> PROCESS_SHIFT).saturating_sub(1)
}

/// What the recorded run itself did, from its records: the fidelity
/// reference, and the costs the replay's time model uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    pub processes: usize,
    /// From the first record to the last.
    pub span_ns: u64,
    pub first_touches: u64,
    pub swapin_faults: u64,
    pub wp_faults: u64,
    pub evicted_pages: u64,
    pub zero_pages: u64,
    pub file_pages: u64,
    pub stored_bytes: u64,
    /// Time spent serving swap-in faults and write-protect faults.
    pub swapin_service_ns: u64,
    pub wp_service_ns: u64,
    pub aging_passes: u64,
    /// Records the recorder dropped (a full queue).
    pub lost: u64,
    /// Processes paged from outside (statically linked): the run's pager
    /// was the out-of-process one, whose design the protocol's replay is
    /// not.
    pub paged_from_outside: usize,
}

impl Recorded {
    /// Mean service time of a swap-in fault, in seconds (0 without any).
    pub fn swapin_cost_s(&self) -> f64 {
        per(self.swapin_service_ns, self.swapin_faults)
    }

    pub fn wp_cost_s(&self) -> f64 {
        per(self.wp_service_ns, self.wp_faults)
    }

    /// The run's time less what its threads spent in swap-ins and
    /// write-protect faults: what a replay adds its own costs to.
    pub fn base_s(&self) -> f64 {
        let waited = self.swapin_service_ns + self.wp_service_ns;
        self.span_ns.saturating_sub(waited) as f64 / 1e9
    }
}

fn per(total_ns: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        total_ns as f64 / n as f64 / 1e9
    }
}

/// A trace ready to replay.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub steps: Vec<Step>,
    /// When each step happened in the run, ns from its first record.
    pub times: Vec<u64>,
    /// Distinct pages touched (dense ids `0..pages`).
    pub pages: usize,
    /// Each page's compressed length as last recorded, [`SIZE_ZERO`] if it
    /// was last evicted zero-filled, or [`SIZE_NONE`]: never stored in the
    /// pool in the recording (never evicted, or only ever sent to the file
    /// by a store that refused it, which says nothing of its length).
    pub sizes: Vec<u16>,
    /// Pages a swap-in of the run left clean at least once (read-mostly
    /// pages: a replay keeps only these clean, as the run's writes to
    /// resident pages are not in the trace).
    pub kept_clean: Vec<bool>,
    /// Mean compressed length of the pages recorded in the pool: the size
    /// a page never evicted in the recording is given.
    pub mean_size: u16,
    pub recorded: Recorded,
    /// Dense id of each page address of the replay.
    pub ids: HashMap<usize, u32>,
    /// Pages of the run sampled with their compressed length (every
    /// process's), by that length: what a replay under another compressor
    /// stores ([`crate::pages`]).
    pub samples: Vec<trace::PageSample>,
    /// The compressor the samples' lengths (and the recorded sizes) come
    /// from.
    pub recorded_compressor: Option<String>,
}

impl Workload {
    /// The recorded run's limits in force, in pages, in order.
    pub fn recorded_limits(&self) -> impl Iterator<Item = u64> + '_ {
        self.steps.iter().filter_map(|s| match s {
            Step::Limit(p) => Some(*p),
            _ => None,
        })
    }

    /// Accesses in the workload.
    pub fn accesses(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Access(_)))
            .count()
    }

    /// The compressed length a page is stored with: its recorded one, or
    /// the mean for a page the recording never stored in the pool; `None`:
    /// zero-filled (no object).
    pub fn stored_size(&self, id: u32) -> Option<usize> {
        match self.sizes[id as usize] {
            SIZE_ZERO => None,
            SIZE_NONE => Some(usize::from(self.mean_size).max(1)),
            s => Some(usize::from(s).clamp(1, PAGE)),
        }
    }

    /// Builds the workload of every process of a trace.
    pub fn from_trace(procs: &[ProcessTrace]) -> Workload {
        let mut b = Builder::default();
        b.w.recorded.processes = procs.len();
        for (i, p) in procs.iter().enumerate() {
            b.tally(i, &p.records);
        }
        b.merge(procs);
        let mut w = b.finish();
        w.samples = procs
            .iter()
            .flat_map(|p| p.samples.iter().cloned())
            .collect();
        w.samples.sort_by_key(|s| s.compressed_len);
        w.recorded_compressor = procs.iter().find_map(|p| p.compressor.clone());
        w
    }
}

#[derive(Default)]
struct Builder {
    w: Workload,
    /// Page address → id, ordered (regions' pages by range).
    by_addr: BTreeMap<usize, u32>,
    /// Regions by replay address: pages.
    regions: HashMap<usize, usize>,
    pooled_bytes: u64,
    pooled_pages: u64,
}

fn tag(process: usize, addr: u64) -> usize {
    ((process + 1) << PROCESS_SHIFT) | addr as usize
}

impl Builder {
    /// The counts, costs and page sizes of one process's records.
    fn tally(&mut self, process: usize, records: &[Record]) {
        let r = &mut self.w.recorded;
        for rec in records {
            match rec.event {
                Event::Fault {
                    first_touch,
                    service_ns,
                    ..
                } => {
                    if first_touch {
                        r.first_touches += 1;
                    } else {
                        r.swapin_faults += 1;
                        r.swapin_service_ns += u64::from(service_ns);
                    }
                }
                Event::WpFault { service_ns, .. } => {
                    r.wp_faults += 1;
                    r.wp_service_ns += u64::from(service_ns);
                }
                Event::Evict {
                    pages,
                    zero,
                    disk,
                    compressed_bytes,
                    ..
                } => {
                    r.evicted_pages += u64::from(pages);
                    r.zero_pages += u64::from(zero);
                    r.file_pages += u64::from(disk);
                    r.stored_bytes += u64::from(compressed_bytes);
                }
                Event::Aged => r.aging_passes += 1,
                Event::PagedFromOutside => r.paged_from_outside += 1,
                Event::Lost { count } => r.lost += u64::from(count),
                _ => {}
            }
        }
        // Page sizes: the last recorded for each page.
        let mut sizes: Vec<(usize, u16)> = Vec::new();
        for rec in records {
            if let Event::Sizes { addr, sizes: s } = rec.event {
                for (k, &size) in s.iter().enumerate() {
                    if size != SIZE_NONE {
                        sizes.push((tag(process, addr) + k * PAGE, size));
                    }
                }
            }
        }
        for (addr, size) in sizes {
            let id = self.id_of(addr);
            if size == SIZE_ON_FILE {
                // Refused by the pool: its length is not known; an
                // earlier one stands.
                continue;
            }
            self.w.sizes[id as usize] = size;
            if size != SIZE_ZERO {
                self.pooled_bytes += u64::from(size);
                self.pooled_pages += 1;
            }
        }
    }

    fn id_of(&mut self, addr: usize) -> u32 {
        if let Some(&id) = self.w.ids.get(&addr) {
            return id;
        }
        let id = self.w.pages as u32;
        self.w.pages += 1;
        self.w.ids.insert(addr, id);
        self.by_addr.insert(addr, id);
        self.w.sizes.push(SIZE_NONE);
        self.w.kept_clean.push(false);
        id
    }

    /// The ids of the pages of `[addr, addr + pages)` seen so far.
    fn ids_in(&self, addr: usize, pages: usize) -> Vec<u32> {
        self.by_addr
            .range(addr..addr + pages * PAGE)
            .map(|(_, &id)| id)
            .collect()
    }

    /// Every process's steps, merged by time (each process's in its own
    /// order).
    fn merge(&mut self, procs: &[ProcessTrace]) {
        let mut next = vec![0usize; procs.len()];
        let (mut first, mut last) = (u64::MAX, 0u64);
        loop {
            // The process whose next timed record is earliest.
            let mut pick: Option<(u64, usize)> = None;
            for (p, trace) in procs.iter().enumerate() {
                while let Some(rec) = trace.records.get(next[p]) {
                    if matches!(rec.event, Event::Sizes { .. }) {
                        next[p] += 1;
                        continue;
                    }
                    if pick.is_none_or(|(t, _)| rec.time_ns < t) {
                        pick = Some((rec.time_ns, p));
                    }
                    break;
                }
            }
            let Some((time, p)) = pick else { break };
            let rec = procs[p].records[next[p]];
            next[p] += 1;
            first = first.min(time);
            last = last.max(time);
            if self.step(p, rec.event) {
                self.w.times.push(time);
            }
        }
        for t in &mut self.w.times {
            *t = t.saturating_sub(first);
        }
        self.w.recorded.span_ns = last.saturating_sub(first);
    }

    /// Turns a record into a step; `false` if it makes none.
    fn step(&mut self, p: usize, event: Event) -> bool {
        let step = match event {
            Event::Map { addr, pages } => {
                let addr = tag(p, addr);
                self.regions.insert(addr, pages as usize);
                Step::Map {
                    addr,
                    pages: pages as usize,
                }
            }
            Event::Resize { addr, pages } => {
                let addr = tag(p, addr);
                let old = self.regions.insert(addr, pages as usize).unwrap_or(0);
                let pages = pages as usize;
                let forget = match old > pages {
                    true => self.ids_in(addr + pages * PAGE, old - pages),
                    false => Vec::new(),
                };
                Step::Resize {
                    addr,
                    pages,
                    forget,
                }
            }
            Event::Unmap { addr } => {
                let addr = tag(p, addr);
                let pages = self.regions.remove(&addr).unwrap_or(0);
                Step::Unmap {
                    addr,
                    forget: self.ids_in(addr, pages),
                }
            }
            Event::Discard { addr, pages } => {
                let addr = tag(p, addr);
                Step::Discard {
                    addr,
                    pages: pages as usize,
                    forget: self.ids_in(addr, pages as usize),
                }
            }
            Event::Fault {
                addr,
                write,
                kept_clean,
                ..
            } => self.access(p, addr, write, false, kept_clean),
            Event::WpFault { addr, .. } => self.access(p, addr, true, true, false),
            Event::Limit { pages } => Step::Limit(pages),
            Event::Aged => Step::Aged { process: p },
            Event::Evict { .. }
            | Event::Forked { .. }
            | Event::Lost { .. }
            | Event::Sizes { .. }
            | Event::PagedFromOutside => return false,
        };
        self.w.steps.push(step);
        true
    }

    fn access(&mut self, p: usize, addr: u64, write: bool, wp: bool, kept_clean: bool) -> Step {
        let addr = tag(p, addr);
        let id = self.id_of(addr);
        self.w.kept_clean[id as usize] |= kept_clean;
        Step::Access(Access {
            id,
            addr,
            write,
            wp,
            kept_clean,
        })
    }

    fn finish(mut self) -> Workload {
        self.w.mean_size = match self.pooled_pages {
            0 => (PAGE / 3) as u16,
            n => (self.pooled_bytes / n) as u16,
        };
        self.w
    }
}
