//! What the out-of-process pager records for the design lab (`uzswap run
//! --record` of a statically linked program): the same trace as the
//! in-process runtime's (`trace` crate), written by the pager thread, which
//! may lock, allocate and write (no signal handler is involved).
//!
//! The pager sees the target's memory in its own terms, mapped onto the
//! trace's:
//!
//! * a range it registers is a region (`Map`); the pages already
//!   populated then (memory the kernel served before paging began) are
//!   recorded as first touches at that moment, so a replay has them
//!   resident as the run had;
//! * a range the program unmaps or discards is `Discard`ed (its pages
//!   untouched again); a moved range (`mremap`) is discarded where it was
//!   and mapped where it lands, its resident pages touched there;
//! * each missing and write-protect fault the pager serves is a `Fault`
//!   or `WpFault` with its service time;
//! * each evicted run its `Evict` and `Sizes`, and page samples;
//! * the limit in force when it moves.
//!
//! The pager has no aging: a trace of it has no `Aged` records.

use super::{Page, Pager};
use common::PAGE_SIZE;

impl Pager {
    /// Queues `event` (now) if the run records.
    pub(super) fn record(&self, event: trace::Event) {
        if let Some(rec) = &self.recorder {
            rec.push(event);
        }
    }

    /// A fault just served at `addr`, as `fault` says: a missing fault
    /// (`write` or not; `first_touch` if no stored copy was there) or a
    /// write-protect fault.
    pub(super) fn record_fault(
        &self,
        addr: usize,
        fault: RecordedFault,
        tid: i32,
        service_ns: u64,
    ) {
        let service_ns = u32::try_from(service_ns).unwrap_or(u32::MAX);
        let event = match fault {
            RecordedFault::WriteProtect => trace::Event::WpFault {
                addr: addr as u64,
                tid: tid as u32,
                service_ns,
            },
            RecordedFault::Missing { write, first_touch } => trace::Event::Fault {
                addr: addr as u64,
                write,
                first_touch,
                kept_clean: false,
                tid: tid as u32,
                service_ns,
            },
        };
        self.record(event);
    }

    /// Whether a missing fault at `addr` finds no stored copy (a first
    /// touch, or a page discarded behind an event: zeros either way).
    pub(super) fn finds_nothing_stored(&self, addr: usize) -> bool {
        matches!(self.pages.get(&addr), None | Some(Page::Resident))
    }

    /// `[s, e)` registered: a region, its populated pages touched now.
    pub(super) fn record_registered(&self, s: usize, e: usize, populated: &[usize]) {
        if self.recorder.is_none() {
            return;
        }
        self.record(trace::Event::Map {
            addr: s as u64,
            pages: ((e - s) / PAGE_SIZE) as u32,
        });
        self.record_touched(populated);
    }

    /// Pages that are resident without a fault the trace saw.
    fn record_touched(&self, pages: &[usize]) {
        for &addr in pages {
            self.record(trace::Event::Fault {
                addr: addr as u64,
                write: true,
                first_touch: true,
                kept_clean: false,
                tid: self.pid as u32,
                service_ns: 0,
            });
        }
    }

    /// `[s, e)` unmapped or discarded by the program.
    pub(super) fn record_discarded(&self, s: usize, e: usize) {
        if e > s {
            self.record(trace::Event::Discard {
                addr: s as u64,
                pages: ((e - s) / PAGE_SIZE) as u32,
            });
        }
    }

    /// `[from, from + len)` moved to `to` (`mremap`), after the move:
    /// `resident` are the moved pages now resident at their new address.
    pub(super) fn record_moved(&self, from: usize, to: usize, len: usize, resident: &[usize]) {
        if self.recorder.is_none() {
            return;
        }
        self.record_discarded(from, from + len);
        self.record(trace::Event::Map {
            addr: to as u64,
            pages: (len / PAGE_SIZE) as u32,
        });
        self.record_touched(resident);
    }

    /// A run evicted at `s`, as the store reported it.
    pub(super) fn record_evicted(&self, s: usize, report: &zswap::SwapOutReport) {
        if let Some(rec) = &self.recorder {
            rec.push_evicted(
                s as u64,
                report.zero,
                report.disk,
                report.compressed_bytes,
                &report.page_sizes,
            );
        }
    }

    /// Offers a stored run's pages (read from the target) to the sampler.
    pub(super) fn record_samples(&mut self, s: usize, pages: &[&[u8]], sizes: &[u16]) {
        let Some(rec) = &self.recorder else {
            return;
        };
        if let Err(e) = rec.sample_run(s as u64, pages, sizes) {
            self.recording_failed(&e);
        }
    }

    /// The limit in force, recorded when it moves.
    pub(super) fn record_limit(&mut self, pages: usize) {
        if self.recorder.is_some() && self.recorded_limit != Some(pages) {
            self.recorded_limit = Some(pages);
            self.record(trace::Event::Limit {
                pages: pages as u64,
            });
        }
    }

    /// Writes what is queued (and, `at_end`, the pending samples).
    pub(super) fn drain_trace(&mut self, at_end: bool) {
        let Some(rec) = &self.recorder else {
            return;
        };
        let written = if at_end { rec.flush() } else { rec.drain() };
        if let Err(e) = written {
            self.recording_failed(&e);
        }
    }

    fn recording_failed(&mut self, e: &std::io::Error) {
        if let Some(rec) = self.recorder.take() {
            eprintln!(
                "uzswap: --record {}: {e}; recording stops, the program goes on",
                rec.path().display()
            );
        }
    }
}

/// The kind of fault a trace record says the pager served.
#[derive(Clone, Copy, Debug)]
pub(super) enum RecordedFault {
    Missing { write: bool, first_touch: bool },
    WriteProtect,
}
