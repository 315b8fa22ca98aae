//! The pager: one thread that serves the target's userfaultfd, follows
//! its mappings and evicts its pages under the limit.
//!
//! Every page of a registered range is in one state here:
//!
//! * absent (no entry): never touched, or discarded by the program; a
//!   fault maps zeros;
//! * `Resident`: mapped in the target, charged;
//! * `Evicting(slot)`: write-protected, stored at `slot`, its discard not
//!   yet confirmed; still mapped until the discard runs;
//! * `Stored(slot)`: unmapped in the target, its bytes at `slot`; a fault
//!   copies them back and frees the slot.
//!
//! Eviction of a batch: write-protect its runs, read the pages
//! (`/proc/PID/mem`), store them, discard them in the target (one
//! injected `process_madvise(MADV_DONTNEED)`), then `Evicting` becomes
//! `Stored`, page by page. A write between the protection and the
//! discard waits in a write-protect fault, which is woken only after the
//! discard: it then faults again on a missing page and gets the stored
//! bytes, so no write is lost. A read never faults on a protected page;
//! after the discard it faults as missing and gets the stored bytes.
//! After the discard each page is judged by the kernel's pagemap, not by
//! what the injected call reported. A program's own `madvise` over the
//! range waits in the kernel until its event is read (`EVENT_REMOVE`) and
//! zaps the pages some time after: its pages are forgotten when the event
//! is read (ours and the program's told apart by counting,
//! `forget_discarded_by_program`), and a page still mapped until the zap
//! is left out of the account. Its `munmap` is done before its event
//! (`EVENT_UNMAP`): a discard over the hole fails with `ENOMEM` after
//! discarding the rest.
//!
//! One thread does all of it: the pager has no lock and no interleaving
//! of its own; the target's threads meet it only through the kernel's
//! userfaultfd, whose ordering the argument above relies on. The
//! argument is model-checked against a model of that ordering
//! (`model.rs`).

mod folio;
mod follow;
#[cfg(test)]
mod model;
mod os;
mod record;
mod syscalls;

use crate::inject::{find_syscall_insn, InjectError};
use crate::mem::Pagemap;
use crate::uffd;
use common::PAGE_SIZE;
use os::{Os, RealOs, Stopped};
use record::RecordedFault;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use userfaultfd::{Event, FaultKind, ReadWrite, Uffd};
use zswap::Swap;

/// Pages evicted together (one protection, one read, one store and one
/// injection per batch).
pub const EVICT_BATCH: usize = 256;
/// Most batches a cold pass evicts in one turn of the pager's loop (each
/// an injected discard): 4 MiB, then faults and events are served before
/// the pass goes on. At a turn every 20 ms at the least, up to 200 MB/s,
/// the in-process reclaimer's own bound (`runtime::COLD_BATCHES_PER_TICK`).
pub const COLD_BATCHES: usize = 4;
/// Bytes of the target's scratch page: the ranges of one batch (16 bytes
/// each, at most one a victim) fit.
const SCRATCH_BYTES: usize = EVICT_BATCH * 16;
/// How often [`Pager::run_until`]'s `tick` runs.
pub const TICK: Duration = Duration::from_millis(250);
/// How long the pager polls without sleeping after an event.
const SPIN_AFTER_EVENT: Duration = Duration::from_micros(200);
/// How often the target's mappings are read for new memory.
pub const MAPS_INTERVAL: Duration = Duration::from_millis(20);
/// First-touch faults map zeros over up to this many absent pages.
const ZERO_RUN: usize = 16;

/// What the pager was asked to do.
#[derive(Debug, Clone)]
pub struct PagerConfig {
    /// The limit on the target's resident pages and the pool, bytes.
    pub limit_bytes: usize,
    /// The swap store's settings.
    pub swap: zswap::Config,
    /// The run's shared-limit file: a controller's limit is read from it,
    /// and the charge and stall published there.
    pub shared_limit_file: Option<std::path::PathBuf>,
    /// The pool counts in the limit (`--uncharged-pool` turns it off).
    pub charge_pool: bool,
    /// A user-mode-only userfaultfd and the syscall guard even where one
    /// that handles kernel faults could be opened (`--user-mode-only`).
    pub user_mode_only: bool,
    /// Record what the pager sees to this trace (`uzswap run --record`).
    pub record_file: Option<std::path::PathBuf>,
    /// The pager thread runs on the CPU of a single-threaded program that
    /// faults often, as a `SCHED_IDLE` thread (`follow.rs`); `false`: it
    /// runs on any CPU.
    pub follow_faults: bool,
}

/// Whether `fd` is readable now.
fn readable(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, 0) };
    p.revents != 0
}

/// Pages from an address: `(start, pages)`.
type Run = (usize, usize);
/// An address range: `(start, end)`.
type Span = (usize, usize);

/// Why [`Pager::run_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The target exited.
    Exited,
    /// Asked to stop: the target runs on.
    Stopped,
}

/// The pager's own counters, with the runtime's names where they mean
/// the same.
#[derive(Debug, Clone, Default)]
pub struct PagerStats {
    /// Missing faults served.
    pub faults: u64,
    /// Of them, first touches (zeros mapped).
    pub zero_faults: u64,
    /// Of them, swap-ins.
    pub swapin_faults: u64,
    /// Of the swap-ins, those that brought their folio's stored pages
    /// along (`pager/folio.rs`), and the pages they brought beside their
    /// own.
    pub folio_swapins: u64,
    pub around_pages: u64,
    /// Write-protect faults (a write during an eviction).
    pub wp_faults: u64,
    /// Pages evicted.
    pub evicted_pages: u64,
    /// Of them, those evicted for their age before any pressure (older
    /// than the cold age a `--max-slowdown` controller set).
    pub pgsteal_proactive: u64,
    /// Evictions undone (protection, read, store or discard failed).
    pub evict_failures: u64,
    /// Injections into the target (one stop of one thread each).
    pub injections: u64,
    /// Injections that failed (a thread that did not stop, or exited).
    pub inject_errors: u64,
    /// Time spent stopped for injections, ns.
    pub injection_ns: u64,
    /// Service time of swap-in and write-protect faults, and eviction
    /// batches run while faults were queued, ns: the wait the pager adds
    /// to the target's threads, as far as it can see it (the wakeups'
    /// latency left out). Published to the run's shared-limit file for
    /// `--max-slowdown`'s controller.
    pub stall_ns: u64,
    /// Writes by the stopped thread to a page whose discard was already
    /// under way (see `Pager::write_fault`): 0 unless something other than
    /// its rseq area is written on its way to an injected call.
    pub tracee_write_conflicts: u64,
    /// Missing faults served again after a refusal (`EAGAIN`).
    pub retries: u64,
    /// Ranges registered.
    pub ranges_registered: u64,
    /// Pages found populated when their range was registered.
    pub adopted_pages: u64,
    /// Forked children given their parent's stored pages.
    pub forks: u64,
    /// `execve`s of the target followed (a userfaultfd opened in the new
    /// image).
    pub execs: u64,
    /// Resident pages now, and at most.
    pub resident_pages: u64,
    pub peak_resident_pages: u64,
    /// The limit in force now, pages.
    pub limit_pages: u64,
    /// What the store is charged now (pool, entries, tables), pages.
    pub pool_charged_pages: u64,
    /// The target's peak resident set (`VmHWM`), as last read, bytes.
    pub peak_rss_bytes: u64,
    /// System calls the syscall guard answered (user-mode-only
    /// userfaultfd: every call with a user pointer waits for the pager).
    pub syscall_notifications: u64,
    /// Pages mapped for the kernel before a call could touch them.
    pub syscall_pages_in: u64,
    /// Of the calls, those the guard's table does not describe (their
    /// buffers unknown: let through as they are).
    pub syscall_unknown: u64,
    /// Pointers the table could not size (the page at each pinned).
    pub syscall_unknown_buffers: u64,
    /// Bytes pinned (whole pages), summed over calls.
    pub syscall_pinned_bytes: u64,
    /// Pointers the kernel keeps (`rseq`, `sigaltstack`, the word cleared
    /// at a thread's exit, …) pinned for as long as they are.
    pub syscall_registered: u64,
    /// Whether the syscall guard is in.
    pub guarded: bool,
    /// Thread stacks left to the kernel (signal frames are written there).
    pub stacks_left_to_kernel: u64,
    /// Forks of the target: every stored page brought back first (the
    /// child gets a copy of its parent's mapped memory only).
    pub fork_swapins: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum PagerError {
    #[error(transparent)]
    Inject(#[from] InjectError),
    #[error(transparent)]
    Open(#[from] crate::uffd::OpenError),
    #[error("swap store: {0}")]
    Swap(#[from] zswap::ZswapError),
    #[error("{op} at {addr:#x}: errno {errno}")]
    Kernel {
        op: &'static str,
        addr: usize,
        errno: i32,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Page {
    Resident,
    Evicting(u64),
    Stored(u64),
    /// Swapped in, its copy into the target refused for now (`EAGAIN`):
    /// the bytes are in `Pager::held`.
    Held,
}

/// An eviction whose discard is running: the remove events of the
/// pager's own `madvise` are expected within `expect`.
#[derive(Default)]
struct InFlight {
    /// A batch is between its protection and its discard.
    active: bool,
    /// The ranges the injected call discards.
    expect: Vec<(usize, usize)>,
    /// The remove events read within `expect` while the call ran: the
    /// call's own, and any of the program's own discards of those pages,
    /// which the events do not tell apart.
    removes: Vec<(usize, usize)>,
    /// What the call discarded, as it reported: one remove event each.
    ours: Vec<(usize, usize)>,
    /// Write-protect faults on the batch's pages, woken after the discard.
    deferred_wp: Vec<usize>,
    /// The thread stopped for the discard.
    tracee: Option<i32>,
    /// Pages taken out of the batch (written by the stopped thread).
    pulled: Vec<usize>,
    /// The ranges being discarded: a missing fault in them waits for the
    /// discard (served now, its page would be discarded with them).
    spans: Vec<(usize, usize)>,
    /// Missing faults held back for that, served after the batch.
    deferred_missing: Vec<usize>,
}

/// The pager of one target process. `Resident` and `Evicting` pages are
/// counted in `stats.resident_pages` (an evicting page is mapped until its
/// discard is confirmed).
pub struct Pager {
    pid: i32,
    /// The kernel, as the pager reaches its target.
    os: Box<dyn Os>,
    swap: Arc<Swap>,
    pages: BTreeMap<usize, Page>,
    /// Where reclaim's sweep over the address space goes on from.
    hand: usize,
    /// Pages made resident (faulted in, first touched, adopted) since the
    /// last cold pass: younger than one cold age, so the next pass spares
    /// them; the pages resident through a whole cold age without a fault
    /// are the ones it takes (two generations, as MGLRU's oldest two).
    young: HashSet<usize>,
    /// Pages a thread's fault brought back from the store: `(heat, passes
    /// left)`. Each such swap-in raises the heat (at most
    /// `runtime::MAX_HEAT`) and spares the page `2^heat - 1` cold passes
    /// (a page read while resident shows no fault, so one that keeps
    /// coming back is taken for a hot one); a page a cold pass evicts all
    /// the same cools by one, as in-process.
    heat: HashMap<usize, (u8, u8)>,
    /// When the last cold pass ended.
    last_cold_pass: Instant,
    /// A cold pass is under way: it goes on at each turn of the loop until
    /// no old page is left resident.
    cold_pass: bool,
    registered: Vec<(usize, usize)>,
    config_limit_pages: usize,
    charge_pool: bool,
    /// The target's image is one the pager cannot enter (it is exiting,
    /// or exec'd into one that would not open a userfaultfd): left alone.
    image_gone: bool,
    /// The target's memory is registered (it reached half the limit once).
    paging: bool,
    /// Before that: its resident anonymous memory, pages (`RssAnon`).
    unpaged_pages: usize,
    /// Of `stats.stall_ns`, what the shared-limit file has been told.
    published_stall_ns: u64,
    shared: Option<runtime::SharedLimit>,
    in_flight: InFlight,
    /// The page of the target's that holds a batch's ranges.
    scratch: Option<usize>,
    /// Batches are discarded one `madvise` a run (the kernel refused the
    /// one-call way).
    run_by_run: bool,
    /// Threads whose stop timed out: detached once they stop.
    lingering: Vec<i32>,
    stats: PagerStats,
    /// The bytes of `Held` pages.
    held: HashMap<usize, Vec<u8>>,
    /// Missing faults refused for now (`EAGAIN`: an event is queued), served
    /// again once the queue is read.
    retry: Vec<usize>,
    fatal: Option<PagerError>,
    /// The userfaultfd is user-mode only: memory is registered only under
    /// the syscall guard.
    guard_wanted: bool,
    /// The syscall guard, once installed.
    guard: Option<syscalls::SyscallGuard>,
    /// The trace (`--record`), and the limit it last recorded.
    recorder: Option<trace::Recorder>,
    recorded_limit: Option<usize>,
    /// Which swap-in faults stream (and bring their folio).
    folio: runtime::FolioSwapin,
    /// Whether the pager thread follows the faults' CPU, and where it is
    /// (made on the pager's thread, at the start of `run_until`).
    follow_faults: bool,
    follower: Option<follow::Follower>,
    /// A deliberately broken variant, to show the model check catching it.
    #[cfg(test)]
    flaw: Option<Flaw>,
}

/// Known-wrong variants of the pager: each must make the model check
/// (`model.rs`) report a violation. Only test builds can select one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
enum Flaw {
    /// Eviction reads and stores its runs without write-protecting them
    /// first: a write between the read and the discard is lost.
    StoreUnprotected,
    /// A write to a page of the batch in flight is let through at once
    /// instead of after the discard.
    WriterLetThrough,
    /// A missing fault inside a span being discarded is served at once: the
    /// page it maps is discarded with the span.
    ServedInSpan,
    /// Every remove event within the pager's own discard is taken for its
    /// own: a page the program discarded meanwhile keeps its stored bytes.
    ProgramDiscardTakenAsOwn,
}

fn pages_of(bytes: usize) -> usize {
    bytes.div_ceil(PAGE_SIZE)
}

impl Pager {
    /// A pager for process `pid`, whose userfaultfd `uffd` was opened in it
    /// ([`crate::uffd::open_in`]).
    pub fn new(pid: i32, uffd: Uffd, config: &PagerConfig) -> Result<Self, PagerError> {
        let os = RealOs::open(pid, uffd, find_syscall_insn(pid)?)?;
        Self::with_os(pid, Box::new(os), config)
    }

    /// A pager for process `pid` reached through `os`.
    fn with_os(pid: i32, os: Box<dyn Os>, config: &PagerConfig) -> Result<Self, PagerError> {
        let shared = match &config.shared_limit_file {
            Some(path) => Some(runtime::SharedLimit::open(path)?),
            None => None,
        };
        let recorder = match &config.record_file {
            Some(path) => {
                let rec =
                    trace::Recorder::open(path, pid as u32, &config.swap.compressor.to_string())?;
                rec.push(trace::Event::PagedFromOutside);
                Some(rec)
            }
            None => None,
        };
        Ok(Pager {
            pid,
            os,
            swap: Swap::new(config.swap.clone())?,
            pages: BTreeMap::new(),
            hand: 0,
            young: HashSet::new(),
            heat: HashMap::new(),
            last_cold_pass: Instant::now(),
            cold_pass: false,
            registered: Vec::new(),
            config_limit_pages: pages_of(config.limit_bytes),
            charge_pool: config.charge_pool,
            published_stall_ns: 0,
            paging: false,
            unpaged_pages: 0,
            image_gone: false,
            shared,
            in_flight: InFlight::default(),
            lingering: Vec::new(),
            scratch: None,
            run_by_run: false,

            stats: PagerStats::default(),
            retry: Vec::new(),
            held: HashMap::new(),
            fatal: None,
            guard_wanted: false,
            guard: None,
            recorder,
            recorded_limit: None,
            folio: runtime::FolioSwapin::new(folio::FOLIO_PAGES),
            follow_faults: config.follow_faults,
            follower: None,
            #[cfg(test)]
            flaw: None,
        })
    }

    /// The target's userfaultfd is user-mode only: the syscall guard is
    /// put in before any of its memory is registered.
    pub fn guarded(mut self, guarded: bool) -> Self {
        self.guard_wanted = guarded;
        self
    }

    /// Serves the target until it exits ([`Ended::Exited`]) or `stop` is
    /// set ([`Ended::Stopped`]: the target runs on, still paged until
    /// [`Pager::release`]).
    /// `tick` sees the pager every [`TICK`] (live counters).
    pub fn run_until(
        &mut self,
        stop: &AtomicBool,
        tick: &mut dyn FnMut(&Pager),
    ) -> Result<Ended, PagerError> {
        if self.follow_faults && self.follower.is_none() && self.os.real().is_some() {
            self.follower = follow::Follower::for_this_thread();
        }
        let ended = self.serve_until(stop, tick);
        if let Some(f) = &mut self.follower {
            f.release();
        }
        ended
    }

    fn serve_until(
        &mut self,
        stop: &AtomicBool,
        tick: &mut dyn FnMut(&Pager),
    ) -> Result<Ended, PagerError> {
        let mut last_tick = Instant::now();
        let mut last_scan = Instant::now() - MAPS_INTERVAL;
        let mut last_event = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                self.drain_trace(true);
                return Ok(Ended::Stopped);
            }
            // The userfaultfd (a new one after an `execve`) and the pidfd.
            let [uffd_fd, pid_fd] = self.os.real().map_or([-1, -1], |r| r.poll_fds());
            let mut fds = [
                libc::pollfd {
                    fd: uffd_fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: pid_fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    // Ignored by poll when negative.
                    fd: self.guard.as_ref().map_or(-1, |g| g.listener.fd()),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Right after a fault another tends to follow: spin a little
            // before sleeping (a wakeup from poll costs more than the
            // fault's service); not on the program's CPU, whose thread the
            // faults wake there (`follow.rs`).
            let following = self.follower.as_ref().is_some_and(|f| f.following());
            let busy = !following && last_event.elapsed() < SPIN_AFTER_EVENT;
            let waiting = self.retry.is_empty() && !self.calls_pending();
            let timeout = if waiting && !busy { 20 } else { 0 };
            // SAFETY: three pollfds in a local array.
            unsafe { libc::poll(fds.as_mut_ptr(), 3, timeout) };
            if fds[1].revents != 0 {
                self.drain_trace(true);
                return self.fatal.take().map_or(Ok(Ended::Exited), Err);
            }
            if fds[0].revents != 0 || fds[2].revents != 0 {
                last_event = Instant::now();
            }
            self.serve_events();
            if let Some(f) = &mut self.follower {
                f.follow();
            }
            self.serve_calls()?;
            if let Some(e) = self.fatal.take() {
                return Err(e);
            }
            if last_scan.elapsed() >= MAPS_INTERVAL {
                last_scan = Instant::now();
                self.scan_maps()?;
                self.drain_trace(false);
            }
            let pid = self.pid;
            self.lingering
                .retain(|&tid| !crate::inject::detach_when_stopped(pid, tid));
            self.reclaim()?;
            self.cold_reclaim()?;
            self.publish();
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                tick(self);
            }
        }
    }

    /// Gives the target back every page: each stored page is copied into
    /// it, then the userfaultfd is closed, which unregisters its memory
    /// (the kernel's again, nothing protected). Events that come meanwhile
    /// are served. Returns how many pages came back.
    pub fn release(mut self) -> Result<usize, PagerError> {
        let mut back = 0;
        loop {
            self.serve_events();
            if let Some(e) = self.fatal.take() {
                return Err(e);
            }
            let away = self.pages_away();
            if away.is_empty() && self.retry.is_empty() {
                break;
            }
            for addr in away {
                // A missing fault's service maps the stored bytes; one
                // refused for now (an event is queued) is held and retried
                // after the events are read, at the next turn.
                self.missing(addr, None)?;
                if self.pages.get(&addr) == Some(&Page::Resident) {
                    back += 1;
                }
            }
            if self.target_gone() {
                break;
            }
        }
        // Dropping the pager closes the userfaultfd.
        Ok(back)
    }

    /// The counters now.
    pub fn stats(&self) -> PagerStats {
        self.stats.clone()
    }

    /// The swap store's counters.
    pub fn swap_stats(&self) -> zswap::Stats {
        self.swap.stats()
    }

    #[cfg(test)]
    fn flawed(&self, f: Flaw) -> bool {
        self.flaw == Some(f)
    }

    #[cfg(not(test))]
    #[inline(always)]
    fn flawed(&self, _: Flaw) -> bool {
        false
    }

    fn limit_pages(&self) -> usize {
        let controlled = self.shared.as_ref().and_then(|s| s.controlled_limit());
        controlled.map_or(self.config_limit_pages, |c| c.min(self.config_limit_pages))
    }

    /// What the limit counts: the resident pages, and the store unless
    /// the pool is uncharged (cgroup v1's rule).
    fn charge(&self) -> usize {
        let pool = if self.charge_pool {
            self.swap.charged_pages()
        } else {
            0
        };
        self.stats.resident_pages as usize + pool + self.unpaged_pages
    }

    fn publish(&mut self) {
        if let Some(s) = &self.shared {
            s.add_stall(self.stats.stall_ns - self.published_stall_ns);
        }
        self.published_stall_ns = self.stats.stall_ns;
        self.stats.limit_pages = self.limit_pages() as u64;
        self.record_limit(self.limit_pages());
        self.stats.pool_charged_pages = self.swap.charged_pages() as u64;
        if let Some(s) = &self.shared {
            s.publish(self.charge());
            let device = self.swap.device();
            s.publish_reclaim(device.used_slots(), device.written_slots(), 0);
        }
    }

    fn set_resident(&mut self, addr: usize) {
        if self.cold_age_ms().is_some() {
            self.young.insert(addr);
        }
        if self.pages.insert(addr, Page::Resident) != Some(Page::Resident) {
            self.stats.resident_pages += 1;
            self.stats.peak_resident_pages = self
                .stats
                .peak_resident_pages
                .max(self.stats.resident_pages);
        }
    }

    /// Forgets the page at `addr` (the program discarded or unmapped it).
    fn forget(&mut self, addr: usize) {
        self.heat.remove(&addr);
        match self.pages.remove(&addr) {
            Some(Page::Resident) => self.stats.resident_pages -= 1,
            Some(Page::Evicting(slot)) => {
                self.stats.resident_pages -= 1;
                let _ = self.swap.free(slot);
            }
            Some(Page::Stored(slot)) => {
                let _ = self.swap.free(slot);
            }
            Some(Page::Held) => {
                self.held.remove(&addr);
            }
            None => {}
        }
    }

    fn forget_range(&mut self, start: usize, end: usize) {
        let gone: Vec<usize> = self.pages.range(start..end).map(|(&a, _)| a).collect();
        for addr in gone {
            self.forget(addr);
        }
    }

    // ---- events ---------------------------------------------------------

    /// Reads and serves every event queued now, then the faults refused
    /// while events were queued; takes the system calls waiting for the
    /// guard (served later by [`Pager::serve_calls`], outside evictions).
    fn serve_events(&mut self) {
        self.serve_uffd_events();
        self.take_calls();
    }

    fn serve_uffd_events(&mut self) {
        loop {
            match self.os.read_event() {
                Ok(Some(event)) => {
                    self.serve(event);
                    if self.charge() > self.limit_pages() + EVICT_BATCH {
                        // A batch over the limit: back to the loop, whose
                        // next step evicts, before the next fault. Faults
                        // may come one after another for as long as the
                        // pager serves them (always, where it shares the
                        // program's CPU: the program runs between them).
                        return;
                    }
                }
                Ok(None) => {
                    let retry = std::mem::take(&mut self.retry);
                    if retry.is_empty() {
                        return;
                    }
                    for addr in retry {
                        self.stats.faults -= 1;
                        self.stats.retries += 1;
                        if let Err(e) = self.missing(addr, None) {
                            self.fail(e);
                        }
                    }
                    // Still refused: the thread whose event was read has not
                    // finished it yet; the caller comes back soon.
                    return;
                }
                Err(e) => {
                    // The target's memory is gone (it exited or exec'd).
                    if self.fatal.is_none() && !self.target_gone() {
                        self.fatal = Some(PagerError::Io(std::io::Error::other(format!(
                            "reading the userfaultfd: {e}"
                        ))));
                    }
                    return;
                }
            }
        }
    }

    /// Whether an event (a fault) is queued on the userfaultfd now.
    fn faults_pending(&self) -> bool {
        self.os.faults_pending()
    }

    /// Whether the target has exited (its pidfd is readable).
    fn target_gone(&self) -> bool {
        self.os.target_gone()
    }

    fn serve(&mut self, event: Event) {
        let r = match event {
            Event::Pagefault {
                kind: FaultKind::Missing,
                addr,
                thread_id,
                rw,
            } => {
                let (addr, tid) = (addr as usize & !(PAGE_SIZE - 1), thread_id.as_raw());
                if let Some(f) = &mut self.follower {
                    f.saw(tid);
                }
                // Only where this run records: the clock, and what it finds.
                let began = self.recorder.is_some().then(Instant::now);
                let first_touch = began.is_some() && self.finds_nothing_stored(addr);
                let r = self.missing(addr, Some(tid));
                if let Some(t) = began {
                    let fault = RecordedFault::Missing {
                        write: rw == ReadWrite::Write,
                        first_touch,
                    };
                    self.record_fault(addr, fault, tid, t.elapsed().as_nanos() as u64);
                }
                r
            }
            Event::Pagefault {
                kind: FaultKind::WriteProtected,
                addr,
                thread_id,
                ..
            } => {
                let (addr, tid) = (addr as usize & !(PAGE_SIZE - 1), thread_id.as_raw());
                if let Some(f) = &mut self.follower {
                    f.saw(tid);
                }
                let began = self.recorder.is_some().then(Instant::now);
                let r = self.write_fault(addr, tid);
                if let Some(t) = began {
                    let fault = RecordedFault::WriteProtect;
                    self.record_fault(addr, fault, tid, t.elapsed().as_nanos() as u64);
                }
                r
            }
            Event::Fork { uffd } => self.fork(uffd),
            Event::Remap { from, to, len } => {
                self.remap(from as usize, to as usize, len);
                Ok(())
            }
            Event::Remove { start, end } => {
                let (s, e) = (start as usize, end as usize);
                if self
                    .in_flight
                    .expect
                    .iter()
                    .any(|&(es, ee)| es <= s && e <= ee)
                {
                    // The pager's own discard (one event per mapping it
                    // spans), or the program's inside it: told apart once
                    // the call is done (`forget_discarded_by_program`).
                    self.in_flight.removes.push((s, e));
                } else {
                    self.forget_range(s, e);
                    self.record_discarded(s, e);
                }
                Ok(())
            }
            Event::Unmap { start, end } => {
                let (s, e) = (start as usize, end as usize);
                self.forget_range(s, e);
                for (rs, re) in self.registered_within(s, e) {
                    self.record_discarded(rs, re);
                }
                self.registered = subtract(&self.registered, s, e);
                self.unmapped(s, e);
                Ok(())
            }
        };
        if let Err(e) = r {
            self.fail(e);
        }
    }

    fn fail(&mut self, e: PagerError) {
        if self.fatal.is_none() && !self.target_gone() {
            self.fatal = Some(e);
        }
    }

    /// A missing fault at page `addr`: the stored bytes, or zeros.
    fn missing(&mut self, addr: usize, tid: Option<i32>) -> Result<(), PagerError> {
        self.stats.faults += 1;
        let in_span = self
            .in_flight
            .spans
            .iter()
            .any(|&(s, e)| (s..e).contains(&addr));
        if in_span
            && self.in_flight.active
            && tid != self.in_flight.tracee
            && !self.flawed(Flaw::ServedInSpan)
        {
            // Its page would be discarded with the span.
            self.in_flight.deferred_missing.push(addr);
            return Ok(());
        }
        if in_span {
            // Before the protection (or for the stopped thread, which
            // cannot wait): served, and left out of the discard.
            self.in_flight.pulled.push(addr);
        }
        match self.pages.get(&addr).copied() {
            Some(state @ (Page::Stored(_) | Page::Evicting(_) | Page::Held)) => {
                let t = Instant::now();
                // A thread's own fault on a stored page may bring its folio
                // (not a retry, nor a page brought back at release).
                let folio = match (state, tid) {
                    (Page::Stored(_), Some(_)) => self.folio_to_bring(addr),
                    _ => None,
                };
                if tid.is_some() {
                    self.warm(addr);
                }
                match folio {
                    Some((lo, hi)) => self.swap_in_folio(addr, lo, hi)?,
                    None => self.swap_in_one(addr)?,
                }
                self.stats.stall_ns += t.elapsed().as_nanos() as u64;
                Ok(())
            }
            Some(Page::Resident) | None => {
                // First touch, or a page the program discarded behind an
                // event already read: zeros, over the absent neighbours too.
                self.stats.zero_faults += 1;
                let mut n = 1;
                // Not while a batch is being discarded: a neighbour mapped
                // now could be written before its span is discarded.
                while self.in_flight.spans.is_empty()
                    && n < ZERO_RUN
                    && self.in_registered(addr + n * PAGE_SIZE)
                    && !self.pages.contains_key(&(addr + n * PAGE_SIZE))
                {
                    n += 1;
                }
                let mut r = self.os.zeropage(addr, n * PAGE_SIZE);
                if n > 1 && matches!(r, Err((libc::ENOENT | libc::EINVAL, 0))) {
                    // A neighbour is not (or no longer) registered memory.
                    n = 1;
                    r = self.os.zeropage(addr, PAGE_SIZE);
                }
                let mapped = match r {
                    Ok(()) => n,
                    // Refused part way (a neighbour mapped meanwhile, or an
                    // event queued): the pages before the refusal are
                    // mapped, the faulting one first (its thread woken by
                    // the kernel), and resident like any other.
                    Err((_, done)) if done > 0 => done / PAGE_SIZE,
                    Err((libc::EEXIST, _)) => 0,
                    // Unmapped since it faulted: the thread faults again on
                    // whatever is there now.
                    Err((libc::ENOENT, _)) => {
                        let _ = self.os.wake(addr, PAGE_SIZE);
                        return Ok(());
                    }
                    Err((libc::EAGAIN, _)) => {
                        self.retry.push(addr);
                        return Ok(());
                    }
                    Err((errno, _)) => {
                        return Err(PagerError::Kernel {
                            op: "UFFDIO_ZEROPAGE",
                            addr,
                            errno,
                        })
                    }
                };
                // The faulting page is mapped already (by another fault
                // served before, or a page the program discarded, its
                // remove event read and its zap still to come: it is not
                // resident again, or a batch could store the bytes the zap
                // drops): make sure its thread runs on.
                if mapped == 0 {
                    let _ = self.os.wake(addr, PAGE_SIZE);
                }
                for i in 0..mapped {
                    self.set_resident(addr + i * PAGE_SIZE);
                }
                Ok(())
            }
        }
    }

    /// Brings back the one page at `addr` (stored, evicting, or held after
    /// a refused copy).
    fn swap_in_one(&mut self, addr: usize) -> Result<(), PagerError> {
        let no_copy = PagerError::Kernel {
            op: "swap-in of a page with no stored copy",
            addr,
            errno: 0,
        };
        let page = match self.pages.get(&addr).copied().ok_or(no_copy)? {
            Page::Held => self.held.remove(&addr).ok_or(PagerError::Kernel {
                op: "held page missing",
                addr,
                errno: 0,
            })?,
            state @ (Page::Stored(slot) | Page::Evicting(slot)) => {
                let mut page = vec![0u8; PAGE_SIZE];
                self.swap.swap_in(slot, &mut page)?;
                if let Page::Evicting(_) = state {
                    // Still counted resident: its discard (which this
                    // fault proves done) was not accounted yet.
                    self.stats.resident_pages -= 1;
                }
                self.stats.swapin_faults += 1;
                page
            }
            Page::Resident => {
                return Err(PagerError::Kernel {
                    op: "swap-in of a resident page",
                    addr,
                    errno: 0,
                })
            }
        };
        self.map_swapped_in(addr, page, true)
    }

    /// Maps `page`, swapped in for `addr` (the faulting page if
    /// `faulting`: one refused for now is retried; a neighbour is held
    /// until it faults itself).
    fn map_swapped_in(
        &mut self,
        addr: usize,
        mut page: Vec<u8>,
        faulting: bool,
    ) -> Result<(), PagerError> {
        match self.os.copy(&page, addr) {
            Ok(()) | Err(libc::EEXIST) => {}
            // The target's mappings are changing (a remove, unmap, remap
            // or fork event is queued behind this fault): the bytes are
            // held here, the thread waits until the event is read, then
            // this fault is served again.
            Err(libc::EAGAIN) => {
                page.truncate(PAGE_SIZE);
                self.held.insert(addr, page);
                self.pages.insert(addr, Page::Held);
                if faulting {
                    self.retry.push(addr);
                }
                return Ok(());
            }
            // Unmapped meanwhile (its event not read yet): the bytes go
            // with the mapping.
            Err(libc::ENOENT) => {
                self.pages.remove(&addr);
                if faulting {
                    let _ = self.os.wake(addr, PAGE_SIZE);
                }
                return Ok(());
            }
            Err(errno) => {
                return Err(PagerError::Kernel {
                    op: "UFFDIO_COPY",
                    addr,
                    errno,
                })
            }
        }
        self.pages.remove(&addr);
        self.set_resident(addr);
        Ok(())
    }

    /// A write-protect fault: a write to a page of the batch being
    /// evicted waits for the discard; any other page is unprotected.
    fn write_fault(&mut self, addr: usize, tid: i32) -> Result<(), PagerError> {
        self.stats.wp_faults += 1;
        match self.pages.get(&addr).copied() {
            Some(Page::Evicting(slot))
                if self.in_flight.active && self.in_flight.tracee == Some(tid) =>
            {
                // The stopped thread writes it from the kernel on its way to
                // the injected call (its `rseq` area, updated on every return
                // to user mode): it cannot wait for the discard. The page
                // leaves the batch, mapped and writable.
                if self
                    .in_flight
                    .expect
                    .iter()
                    .any(|&(s, e)| (s..e).contains(&addr))
                {
                    // Its discard is already on its way: the kernel's write
                    // is lost with the page. Never seen with the rseq area
                    // left out of batches; counted in the pager's stats.
                    self.stats.tracee_write_conflicts += 1;
                }
                let _ = self.swap.free(slot);
                self.pages.insert(addr, Page::Resident);
                self.in_flight.pulled.push(addr);
                // Not left waiting where the unprotect is refused for now:
                // the injected call that the pager waits for is its own.
                self.unprotect_or_wake(addr)
            }
            Some(Page::Evicting(_))
                if self.in_flight.active && !self.flawed(Flaw::WriterLetThrough) =>
            {
                self.in_flight.deferred_wp.push(addr);
                Ok(())
            }
            state => {
                if let Some(Page::Evicting(slot)) = state {
                    // Left by a batch that a remap cut short: still mapped.
                    let _ = self.swap.free(slot);
                    self.pages.insert(addr, Page::Resident);
                }
                let t = Instant::now();
                let r = self.unprotect_or_wake(addr);
                self.stats.stall_ns += t.elapsed().as_nanos() as u64;
                r
            }
        }
    }

    /// Unprotects the page at `addr` for its writer, waking it. Where the
    /// kernel refuses for now (`EAGAIN`: an event is queued) the writer is
    /// woken to write again: its next fault finds the page resident and
    /// unprotects it then. Unmapped meanwhile (`ENOENT`): nothing to do.
    fn unprotect_or_wake(&self, addr: usize) -> Result<(), PagerError> {
        match self.os.write_protect(addr, PAGE_SIZE, false) {
            Ok(()) | Err(libc::ENOENT) => Ok(()),
            Err(libc::EAGAIN) => {
                let _ = self.os.wake(addr, PAGE_SIZE);
                Ok(())
            }
            Err(errno) => Err(PagerError::Kernel {
                op: "UFFDIO_WRITEPROTECT",
                addr,
                errno,
            }),
        }
    }

    /// A forked child: its userfaultfd gets a copy of every stored page
    /// (pages still mapped were copied by the fork itself), then closes,
    /// leaving the child's memory the kernel's.
    fn fork(&mut self, child: Uffd) -> Result<(), PagerError> {
        self.stats.forks += 1;
        let stored: Vec<(usize, Page)> = self
            .pages
            .iter()
            .filter(|(_, &p)| p != Page::Resident)
            .map(|(&a, &p)| (a, p))
            .collect();
        let mut page = vec![0u8; PAGE_SIZE];
        for (addr, state) in stored {
            match state {
                Page::Stored(slot) | Page::Evicting(slot) => {
                    self.swap.read_frozen(slot, &mut page)?;
                }
                _ => page.copy_from_slice(
                    self.held
                        .get(&addr)
                        .map_or(&[0u8; PAGE_SIZE][..], |v| &v[..]),
                ),
            }
            match uffd::copy(&child, &page, addr) {
                Ok(()) | Err(libc::EEXIST) | Err(libc::ENOENT) => {}
                Err(errno) => {
                    return Err(PagerError::Kernel {
                        op: "UFFDIO_COPY (child)",
                        addr,
                        errno,
                    })
                }
            }
        }
        Ok(())
    }

    fn remap(&mut self, from: usize, to: usize, len: usize) {
        let moved: Vec<(usize, Page)> = self
            .pages
            .iter()
            .filter(|(&a, _)| (from..from + len).contains(&a))
            .map(|(&a, &p)| (a, p))
            .collect();
        let mut held = Vec::new();
        for (a, _) in &moved {
            self.pages.remove(a);
            if let Some(bytes) = self.held.remove(a) {
                held.push((a - from + to, bytes));
            }
        }
        self.held.extend(held);
        for (a, p) in moved {
            let to_addr = a - from + to;
            let p = match p {
                // Moved still mapped: the batch's discard will miss it.
                Page::Evicting(slot) => {
                    let _ = self.swap.free(slot);
                    Page::Resident
                }
                p => p,
            };
            self.pages.insert(to_addr, p);
        }
        self.registered = subtract(&self.registered, from, from + len);
        // The moved range stays registered where it lands.
        self.registered = add(&self.registered, to, to + len);
        if self.recorder.is_some() {
            let resident: Vec<usize> = self
                .pages
                .range(to..to + len)
                .filter(|(_, p)| matches!(p, Page::Resident))
                .map(|(&a, _)| a)
                .collect();
            self.record_moved(from, to, len, &resident);
        }
    }

    fn in_registered(&self, addr: usize) -> bool {
        self.registered.iter().any(|&(s, e)| (s..e).contains(&addr))
    }

    /// The parts of `[s, e)` in registered memory.
    fn registered_within(&self, s: usize, e: usize) -> Vec<Span> {
        self.registered
            .iter()
            .filter(|&&(rs, re)| rs < e && re > s)
            .map(|&(rs, re)| (rs.max(s), re.min(e)))
            .collect()
    }

    /// The pages that are not mapped as they are here (stored, held, or
    /// being evicted).
    fn pages_away(&self) -> Vec<usize> {
        self.pages
            .iter()
            .filter(|(_, p)| !matches!(p, Page::Resident))
            .map(|(&a, _)| a)
            .collect()
    }

    // ---- mappings -------------------------------------------------------

    /// Registers the target's pageable memory not registered yet; its
    /// populated pages become resident.
    fn scan_maps(&mut self) -> Result<(), PagerError> {
        if self.image_gone {
            return Ok(());
        }
        // The memory the userfaultfd was made for is gone while the
        // process lives: it ran `execve` (or is exiting).
        if !self.os.image_alive() {
            return self.reopen_after_exec();
        }
        let Ok(mut want) = crate::maps::read(self.pid) else {
            return Ok(()); // exiting
        };
        self.forget_exited_threads();
        if let Some((hwm, anon)) = crate::mem::rss_bytes(self.pid) {
            self.stats.peak_rss_bytes = hwm;
            if !self.paging {
                // Memory is registered (and its faults served here) only
                // from half the limit on: below it, the kernel's faults
                // cost the program nothing extra.
                self.unpaged_pages = pages_of(anon as usize);
                // The syscall guard goes in a little before: a program
                // that grows fast is not far past half the limit by the
                // time it is in.
                let guarded = !self.guard_wanted
                    || (self.unpaged_pages >= self.limit_pages() / 4 && self.guard_ready()?);
                self.paging = guarded && self.unpaged_pages >= self.limit_pages() / 2;
                if !self.paging {
                    return Ok(());
                }
                self.unpaged_pages = 0;
            }
        }
        // After the guard went in: its look at the threads leaves their
        // stacks to the kernel.
        for &(s, e) in self.stacks_left_to_kernel() {
            want = subtract(&want, s, e);
        }
        let mut have = self.registered.clone();
        if let Some(p) = self.scratch {
            have = add(&have, p, p + SCRATCH_BYTES);
        }
        for (s, e) in crate::maps::uncovered(&want, &have) {
            self.populate_pinned(s, e);
            match self.os.register(s, e - s) {
                Ok(()) => {}
                // Changed under us (unmapped, or not registrable): next scan.
                Err(_) => continue,
            }
            self.stats.ranges_registered += 1;
            self.registered = add(&self.registered, s, e);
            let populated = self.os.populated(s, (e - s) / PAGE_SIZE)?;
            let mut adopted = Vec::new();
            for (i, p) in populated.into_iter().enumerate() {
                let addr = s + i * PAGE_SIZE;
                if p && !self.pages.contains_key(&addr) {
                    self.stats.adopted_pages += 1;
                    self.set_resident(addr);
                    adopted.push(addr);
                }
            }
            self.record_registered(s, e, &adopted);
        }
        Ok(())
    }

    /// After the target's `execve`: everything known of the old image is
    /// dropped (its stored pages freed) and a userfaultfd is opened in the
    /// new one, which is then paged as from the start.
    fn reopen_after_exec(&mut self) -> Result<(), PagerError> {
        self.stats.execs += 1;
        for (s, e) in self.registered.clone() {
            self.record_discarded(s, e);
        }
        let old: Vec<usize> = self.pages.keys().copied().collect();
        for addr in old {
            self.forget(addr);
        }
        self.held.clear();
        self.retry.clear();
        self.young.clear();
        self.registered.clear();
        self.lingering.clear();
        self.scratch = None;
        self.run_by_run = false;
        self.paging = false;
        self.hand = 0;
        self.exec_seen();
        // A process that is exiting has no new image: left alone (so is
        // one whose new image cannot be entered).
        self.image_gone = true;
        let (Ok(insn), Ok(pagemap), Ok(mem)) = (
            find_syscall_insn(self.pid),
            Pagemap::open(self.pid),
            os::open_mem(self.pid),
        ) else {
            return Ok(());
        };
        if !pagemap.alive() {
            return Ok(());
        }
        let Some(real) = self.os.real() else {
            return Ok(());
        };
        real.syscall_insn = insn;
        real.pagemap = pagemap;
        real.mem = mem;
        let Some(mut stopped) = self.stop_a_thread() else {
            return Ok(());
        };
        let user_mode_only = self.guard.is_some();
        let uffd = match stopped.tracee() {
            Some(tracee) => uffd::open_in(self.pid, tracee, &mut || {}, user_mode_only).ok(),
            None => None,
        };
        let _ = stopped.detach();
        if let (Some(uffd), Some(real)) = (uffd, self.os.real()) {
            real.uffd = uffd;
            self.image_gone = false;
        }
        Ok(())
    }

    // ---- reclaim --------------------------------------------------------

    /// Over the limit: evicts down to [`EVICT_BATCH`] pages under it, so
    /// that each injection discards a whole batch. The resident pages never
    /// go under [`Pager::min_resident`] (a thread that needs a few pages at
    /// once could otherwise never have them all): past it, the pool is
    /// written back to the swap file instead.
    fn reclaim(&mut self) -> Result<(), PagerError> {
        if self.charge() <= self.limit_pages() || self.forking() {
            return Ok(());
        }
        let target = self
            .limit_pages()
            .saturating_sub(EVICT_BATCH.min(self.limit_pages() / 8));
        while self.charge() > target {
            // Faults waiting meanwhile wait for the batch: their stall.
            let t = self.faults_pending().then(Instant::now);
            let evicted = self.stats.resident_pages as usize > self.min_resident()
                && self.evict_batch(EVICT_BATCH)? > 0;
            if let Some(t) = t {
                self.stats.stall_ns += t.elapsed().as_nanos() as u64;
            }
            if evicted {
                continue;
            }
            if self.swap.writeback(zswap::WRITEBACK_BATCH)? == 0 {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Cold pages leave before pressure: once a cold age (set by a
    /// `--max-slowdown` controller) has passed since the last pass ended, a
    /// pass evicts the resident pages not made resident since, up to
    /// [`COLD_BATCHES`] batches a turn of the loop, until none is left;
    /// every page is old from then on. A page made resident during the
    /// pass is young, and spared. A pass ends early where the cold age is
    /// withdrawn (the controller's run is in debt).
    fn cold_reclaim(&mut self) -> Result<(), PagerError> {
        let Some(age) = self.cold_age_ms() else {
            // Nothing is young while no cold age is set (pages are not
            // tracked); when one is set again, a whole age from now.
            if !self.young.is_empty() {
                self.young.clear();
            }
            self.cold_pass = false;
            self.last_cold_pass = Instant::now();
            return Ok(());
        };
        if self.forking() || self.in_flight.active {
            return Ok(());
        }
        if !self.cold_pass {
            if self.last_cold_pass.elapsed() < Duration::from_millis(u64::from(age)) {
                return Ok(());
            }
            self.cold_pass = true;
        }
        for _ in 0..COLD_BATCHES {
            let (runs, spans) = self.pick_victims(EVICT_BATCH, true);
            if runs.is_empty() {
                self.end_cold_pass();
                return Ok(());
            }
            let victims: Vec<usize> = runs
                .iter()
                .flat_map(|&(s, n)| (0..n).map(move |i| s + i * PAGE_SIZE))
                .collect();
            let n = self.evict_protected(runs, spans)?;
            self.stats.pgsteal_proactive += n as u64;
            for a in victims {
                self.cool(a);
            }
            if n == 0 {
                // No thread could be stopped, or nothing of the batch was
                // left to take: the pass ends here, and the next comes an
                // age from now.
                self.end_cold_pass();
                return Ok(());
            }
        }
        Ok(())
    }

    /// A cold pass is over: every page is old from now on, and every page
    /// its heat spared has one pass fewer to be spared.
    fn end_cold_pass(&mut self) {
        self.cold_pass = false;
        self.young.clear();
        self.heat.retain(|_, (heat, passes)| {
            *passes = passes.saturating_sub(1);
            *heat > 0 || *passes > 0
        });
        self.last_cold_pass = Instant::now();
    }

    /// The cold age a `--max-slowdown` controller set, if any.
    fn cold_age_ms(&self) -> Option<u32> {
        self.shared.as_ref().and_then(|s| s.cold_age_ms())
    }

    /// A thread's fault brought `addr` back from the store: hotter, and
    /// spared `2^heat - 1` cold passes.
    fn warm(&mut self, addr: usize) {
        let (heat, passes) = self.heat.entry(addr).or_default();
        *heat = (*heat + 1).min(runtime::MAX_HEAT);
        *passes = (1u8 << *heat) - 1;
    }

    /// A cold pass took `addr` all the same: cooler by one.
    fn cool(&mut self, addr: usize) {
        if let Some((heat, _)) = self.heat.get_mut(&addr) {
            *heat = heat.saturating_sub(1);
        }
    }

    /// The fewest resident pages reclaim leaves: an eighth of the limit.
    fn min_resident(&self) -> usize {
        (self.limit_pages() / 8).max(2 * EVICT_BATCH)
    }

    /// Picks `n` resident pages ([`sweep`]), only old ones (not made
    /// resident since the last cold pass) where `old_only`, and moves the
    /// hand on.
    fn pick_victims(&mut self, n: usize, old_only: bool) -> (Vec<Run>, Vec<Span>) {
        let pinned = self.guard.as_ref().map_or(&[][..], |g| g.pins.spans());
        let (young, heat) = (&self.young, &self.heat);
        let spared = |a: usize| young.contains(&a) || heat.get(&a).is_some_and(|&(_, p)| p > 0);
        let kept = |a: usize| crate::pins::in_spans(pinned, a) || (old_only && spared(a));
        let (runs, spans, hand) = sweep(&self.pages, &self.registered, &kept, self.hand, n);
        self.hand = hand;
        (runs, spans)
    }

    /// Evicts about `n` pages; returns how many were.
    fn evict_batch(&mut self, n: usize) -> Result<usize, PagerError> {
        let (runs, spans) = self.pick_victims(n, false);
        if runs.is_empty() {
            return Ok(0);
        }
        self.evict_protected(runs, spans)
    }

    /// Evicts `runs` the protected way: a thread of the target is stopped
    /// first, before any page is protected (a thread that writes a
    /// protected page from a system call waits in the kernel for the
    /// discard, and would never stop for it); the runs are
    /// write-protected, read, stored and discarded by injected calls.
    fn evict_protected(
        &mut self,
        runs: Vec<(usize, usize)>,
        spans: Vec<(usize, usize)>,
    ) -> Result<usize, PagerError> {
        let t = Instant::now();
        // From now on a page mapped in a span is left out of its discard.
        self.in_flight.spans = spans.clone();
        let stopped = self.stop_a_thread();
        let Some(mut tracee) = stopped else {
            self.in_flight.spans.clear();
            self.in_flight.pulled.clear();
            self.undo(&runs, false);
            return Ok(0);
        };
        // A thread of a new image (the process ran `execve` since the last
        // look): nothing of the old one to evict; the next scan follows
        // the exec. While the thread is stopped the image cannot change.
        if !self.os.image_alive() {
            let _ = tracee.detach();
            self.in_flight.spans.clear();
            self.in_flight.pulled.clear();
            return Ok(0);
        }
        self.stats.injections += 1;
        // The stopped thread's rseq area stays: the kernel writes it when
        // the thread leaves its stop for the injected call.
        let mut left_out: Vec<usize> = Vec::new();
        let runs = match tracee.rseq_area() {
            Some((at, len)) => {
                let first = at & !(PAGE_SIZE - 1);
                let holes: Vec<usize> = (first..at + len).step_by(PAGE_SIZE).collect();
                left_out.extend(&holes);
                let (kept, left): (Vec<_>, Vec<_>) = runs.iter().partition(|&&(s, p)| {
                    !holes.iter().any(|h| (s..s + p * PAGE_SIZE).contains(h))
                });
                let mut runs = kept;
                for run in left {
                    runs.extend(split_around(run, &holes));
                }
                runs.sort_unstable();
                runs
            }
            None => runs,
        };
        // 1. Protect: from here a write waits for the pager.
        let mut protected = Vec::new();
        for &(s, pages) in &runs {
            if self.flawed(Flaw::StoreUnprotected) {
                protected.push((s, pages));
                continue;
            }
            match self.os.write_protect(s, pages * PAGE_SIZE, true) {
                Ok(()) => protected.push((s, pages)),
                Err(_) => {
                    self.undo(&[(s, pages)], false);
                    left_out.extend((0..pages).map(|i| s + i * PAGE_SIZE));
                }
            }
        }
        // 2. Read and 3. store, run by run.
        let mut stored = Vec::new();
        let mut reports = Vec::new();
        for (s, pages) in protected {
            match self.store_run(s, pages) {
                Ok((slots, report)) => {
                    stored.push((s, pages, slots));
                    reports.push(report);
                }
                Err(_) => {
                    self.undo(&[(s, pages)], true);
                    left_out.extend((0..pages).map(|i| s + i * PAGE_SIZE));
                }
            }
        }
        // The ranges to discard: the spans, less the pages left resident.
        left_out.extend(&self.in_flight.pulled);
        let spans: Vec<(usize, usize)> = spans
            .into_iter()
            .flat_map(|(s, e)| split_around((s, (e - s) / PAGE_SIZE), &left_out))
            .filter(|&(s, p)| {
                stored
                    .iter()
                    .any(|&(rs, rp, _)| rs >= s && rs + rp * PAGE_SIZE <= s + p * PAGE_SIZE)
            })
            .collect();
        // Stored pages still resident are evicting; one the program
        // discarded since it was picked (its remove event read while the
        // thread stopped) was forgotten, and its stored copy goes too.
        for (s, _, slots) in &stored {
            for (i, &slot) in slots.iter().enumerate() {
                let a = s + i * PAGE_SIZE;
                if self.pages.get(&a) == Some(&Page::Resident) {
                    self.pages.insert(a, Page::Evicting(slot));
                } else {
                    let _ = self.swap.free(slot);
                }
            }
        }
        // 4. Discard in the target.
        self.in_flight.active = true;
        self.in_flight.spans = spans.iter().map(|&(s, p)| (s, s + p * PAGE_SIZE)).collect();
        // What the call reports is not what it did: a piece with a hole
        // (unmapped by the program since) fails with `ENOMEM` after
        // discarding its mapped parts. Each page still evicting is judged
        // by the kernel instead: stored if the discard took it, resident if
        // it is still there (its piece was not discarded, or the stopped
        // thread pulled it out). Only the pager maps pages, and it maps an
        // evicting one only by swapping it in, which ends its eviction.
        self.discard(&mut *tracee, &spans);
        self.in_flight.pulled.clear();
        let tid = tracee.tid();
        if tracee.detach().is_err() {
            self.stats.inject_errors += 1;
            self.lingering.push(tid);
        }
        self.stats.injection_ns += t.elapsed().as_nanos() as u64;
        let mut evicted = 0;
        for ((s, pages, slots), report) in stored.into_iter().zip(reports) {
            // A process gone reads nothing: its pages are not discarded
            // (nor will they be read again).
            let present = self
                .os
                .populated(s, pages)
                .unwrap_or_else(|_| vec![true; pages]);
            let mut any = false;
            for (i, slot) in slots.into_iter().enumerate() {
                let addr = s + i * PAGE_SIZE;
                let ok = !present[i];
                any |= ok;
                if self.pages.get(&addr) != Some(&Page::Evicting(slot)) {
                    continue; // swapped back in, or forgotten, meanwhile
                }
                if ok {
                    self.pages.insert(addr, Page::Stored(slot));
                    self.stats.resident_pages -= 1;
                    evicted += 1;
                } else {
                    let _ = self.swap.free(slot);
                    self.pages.insert(addr, Page::Resident);
                    self.stats.evict_failures += 1;
                    let _ = self.os.write_protect(addr, PAGE_SIZE, false);
                }
            }
            if any {
                self.record_evicted(s, &report);
            }
        }
        self.in_flight.active = false;
        self.in_flight.spans.clear();
        for addr in std::mem::take(&mut self.in_flight.deferred_wp) {
            let _ = self.os.wake(addr, PAGE_SIZE);
        }
        for addr in std::mem::take(&mut self.in_flight.deferred_missing) {
            self.stats.faults -= 1;
            self.missing(addr, None)?;
        }
        self.stats.evicted_pages += evicted as u64;
        Ok(evicted)
    }

    /// Reads a protected run and stores it; returns its slots and the
    /// store's report.
    fn store_run(
        &mut self,
        s: usize,
        pages: usize,
    ) -> Result<(Vec<u64>, zswap::SwapOutReport), PagerError> {
        // A page the kernel does not have would make the read fault into
        // this very userfaultfd: only populated pages are read.
        if self.os.populated(s, pages)?.iter().any(|p| !p) {
            return Err(PagerError::Kernel {
                op: "evict (page not populated)",
                addr: s,
                errno: libc::EAGAIN,
            });
        }
        let mut buf = vec![0u8; pages * PAGE_SIZE];
        self.os.read_mem(s, &mut buf)?;
        let slots = self.swap.alloc_slots(pages)?;
        let chunks: Vec<&[u8]> = buf.chunks_exact(PAGE_SIZE).collect();
        match self.swap.swap_out(&chunks, &slots) {
            Ok(report) => {
                self.record_samples(s, &chunks, &report.page_sizes);
                Ok((slots, report))
            }
            Err(e) => {
                for &slot in &slots {
                    let _ = self.swap.free(slot);
                }
                Err(e.into())
            }
        }
    }

    /// Puts runs back as resident (unprotecting them if `protected`).
    fn undo(&mut self, runs: &[(usize, usize)], protected: bool) {
        for &(s, pages) in runs {
            if protected {
                let _ = self.os.write_protect(s, pages * PAGE_SIZE, false);
            }
            self.stats.evict_failures += pages as u64;
        }
    }

    /// Stops one thread of the target (the main thread, else another).
    fn stop_a_thread(&mut self) -> Option<Box<dyn Stopped>> {
        let seizer = self.os.seizer();
        for tid in self.os.tids() {
            let mut serve = || self.serve_events();
            match seizer.seize(tid, &mut serve) {
                Ok(t) => return Some(t),
                Err(InjectError::Timeout { tid, .. }) => {
                    self.stats.inject_errors += 1;
                    self.lingering.push(tid);
                }
                Err(_) => self.stats.inject_errors += 1,
            }
        }
        None
    }

    /// Discards each run in the stopped thread: all at once with one
    /// `process_madvise(2)`, else with one `madvise(2)` a run. What was
    /// discarded is judged afterwards, page by page, from the kernel's
    /// state ([`Pager::evict_protected`]).
    fn discard(&mut self, tracee: &mut dyn Stopped, runs: &[(usize, usize)]) {
        self.in_flight.tracee = Some(tracee.tid());
        if !self.discard_at_once(tracee, runs) {
            self.discard_run_by_run(tracee, runs);
        }
        self.forget_discarded_by_program();
        self.in_flight.expect.clear();
        self.in_flight.tracee = None;
    }

    /// The pages that the program discarded itself while the pager's call
    /// discarded them too: the remove events read during the call cover
    /// them more often than the call's own discards do (one event each).
    /// Forgotten, so that they read zeros as the program asked, not the
    /// stored bytes.
    fn forget_discarded_by_program(&mut self) {
        let removes = std::mem::take(&mut self.in_flight.removes);
        let ours = std::mem::take(&mut self.in_flight.ours);
        if self.flawed(Flaw::ProgramDiscardTakenAsOwn) {
            return;
        }
        for (s, e) in excess_cover(&removes, &ours) {
            self.forget_range(s, e);
            self.record_discarded(s, e);
        }
    }

    /// The whole batch in one injected `process_madvise(2)` of the target
    /// on itself (which, unlike a call from here, may `MADV_DONTNEED`),
    /// its ranges written to a page of the target's that uzswap mapped
    /// ([`Pager::scratch_page`]). `false` where that cannot be done (the
    /// kernel refuses, the page cannot be mapped): nothing was discarded.
    fn discard_at_once(&mut self, tracee: &mut dyn Stopped, runs: &[(usize, usize)]) -> bool {
        if self.run_by_run {
            return false;
        }
        let Some(scratch) = self.scratch_page(tracee) else {
            return false;
        };
        let pid = self.pid as u64;
        let mut serve = || self.serve_events();
        let Ok(fd) = tracee.syscall(libc::SYS_pidfd_open, &[pid, 0], &mut serve) else {
            return false;
        };
        if fd < 0 {
            self.run_by_run = true;
            return false;
        }
        // Pages the stopped thread wrote on its way here stay mapped.
        let pieces: Vec<(usize, usize)> = runs
            .iter()
            .flat_map(|&run| split_around(run, &self.in_flight.pulled))
            .collect();
        let mut iovecs = Vec::with_capacity(pieces.len() * 16);
        for &(s, p) in &pieces {
            iovecs.extend_from_slice(&(s as u64).to_ne_bytes());
            iovecs.extend_from_slice(&((p * PAGE_SIZE) as u64).to_ne_bytes());
        }
        let written = iovecs.len() <= SCRATCH_BYTES && self.os.write_mem(scratch, &iovecs).is_ok();
        if written && !pieces.is_empty() {
            self.in_flight.expect = pieces
                .iter()
                .map(|&(s, p)| (s, s + p * PAGE_SIZE))
                .collect();
            let mut serve = || self.serve_events();
            let args = [
                fd as u64,
                scratch as u64,
                pieces.len() as u64,
                libc::MADV_DONTNEED as u64,
                0,
            ];
            let enomem = -i64::from(libc::ENOMEM);
            match tracee.syscall(libc::SYS_process_madvise, &args, &mut serve) {
                Ok(done) if done >= 0 || done == enomem => {
                    // The ranges are advised in order: those within the
                    // bytes done were discarded. A range the program
                    // unmapped part of since (its unmap event read
                    // meanwhile) stops the call with `ENOMEM`, its mapped
                    // parts discarded all the same: counted as the call's
                    // own too (what was discarded is judged page by page
                    // from the kernel's state afterwards).
                    let mut left = done.max(0) as usize;
                    let mut failed_at = None;
                    for &(s, p) in &pieces {
                        if left > 0 {
                            let bytes = left.min(p * PAGE_SIZE);
                            self.in_flight.ours.push((s, s + bytes));
                        } else if failed_at.is_none() {
                            failed_at = Some((s, p));
                        }
                        left = left.saturating_sub(p * PAGE_SIZE);
                    }
                    if let Some((s, p)) = failed_at {
                        self.in_flight.ours.push((s, s + p * PAGE_SIZE));
                    }
                }
                Ok(_) => self.run_by_run = true,
                Err(_) => self.stats.inject_errors += 1,
            }
        }
        let mut serve = || self.serve_events();
        let _ = tracee.syscall(libc::SYS_close, &[fd as u64], &mut serve);
        !self.run_by_run
    }

    /// One page of the target's, mapped by an injected `mmap` the first
    /// time, for the ranges of [`Pager::discard_at_once`]. Never
    /// registered or paged.
    fn scratch_page(&mut self, tracee: &mut dyn Stopped) -> Option<usize> {
        if self.scratch.is_none() {
            let mut serve = || self.serve_events();
            let prot = (libc::PROT_READ | libc::PROT_WRITE) as u64;
            let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64;
            let args = [0, SCRATCH_BYTES as u64, prot, flags, u64::MAX, 0];
            match tracee.syscall(libc::SYS_mmap, &args, &mut serve) {
                Ok(addr) if addr > 0 => self.scratch = Some(addr as usize),
                _ => self.run_by_run = true,
            }
        }
        self.scratch
    }

    /// `madvise(MADV_DONTNEED)` of each run, one injected call each.
    fn discard_run_by_run(&mut self, tracee: &mut dyn Stopped, runs: &[(usize, usize)]) {
        for &run in runs {
            // Pages pulled out of the batch so far are left mapped.
            for (s, pages) in split_around(run, &self.in_flight.pulled) {
                self.in_flight.expect = vec![(s, s + pages * PAGE_SIZE)];
                let mut serve = || self.serve_events();
                let args = [
                    s as u64,
                    (pages * PAGE_SIZE) as u64,
                    libc::MADV_DONTNEED as u64,
                ];
                let r = tracee.syscall(libc::SYS_madvise, &args, &mut serve);
                // Made (its mapped parts discarded, even where part of the
                // run was unmapped since: `ENOMEM`).
                if matches!(r, Ok(n) if n == 0 || n == -i64::from(libc::ENOMEM)) {
                    self.in_flight.ours.push((s, s + pages * PAGE_SIZE));
                }
                if r.is_err() {
                    self.stats.inject_errors += 1;
                    return;
                }
            }
        }
    }
}

/// Reclaim's choice: `n` resident pages of `pages`, the next ones in
/// address order from `hand` (a clock hand over the address space, with no
/// referenced bits: as oblivious as first-in first-out, but every resident
/// page between two victims is a victim too, so that the batch is
/// discarded as a few long ranges, each of which costs the target one
/// round trip with the pager, its remove event), leaving out the pages
/// `kept` says (pinned, or young for a cold pass). Returns the victims as
/// runs; the ranges to discard: spans over victims and the empty or stored
/// pages between them, never over a resident page that is not a victim,
/// each within one of the `registered` ranges; and where the hand goes.
fn sweep(
    pages: &BTreeMap<usize, Page>,
    registered: &[Span],
    kept: &dyn Fn(usize) -> bool,
    hand: usize,
    n: usize,
) -> (Vec<Run>, Vec<Span>, usize) {
    let same_range = |a: usize, b: usize| {
        registered
            .iter()
            .any(|&(s, e)| (s..e).contains(&a) && (s..e).contains(&b))
    };
    let mut victims = Vec::with_capacity(n);
    let mut spans: Vec<Span> = Vec::new();
    // From the hand to the end, then from the start: two sweeps whose
    // spans never join.
    for (from, to) in [(hand, usize::MAX), (0, hand)] {
        let mut span: Option<Span> = None;
        for (&a, &p) in pages.range(from..to) {
            if victims.len() >= n {
                break;
            }
            if p != Page::Resident {
                continue;
            }
            if kept(a) {
                // Resident and kept: no span runs over it.
                spans.extend(span.take());
                continue;
            }
            victims.push(a);
            span = match span {
                Some((s, _)) if same_range(s, a) => Some((s, a + PAGE_SIZE)),
                Some(done) => {
                    spans.push(done);
                    Some((a, a + PAGE_SIZE))
                }
                None => Some((a, a + PAGE_SIZE)),
            };
        }
        spans.extend(span);
        if victims.len() >= n {
            break;
        }
    }
    let hand = victims.last().map_or(0, |&a| a + PAGE_SIZE);
    victims.sort_unstable();
    spans.sort_unstable();
    // A run stays inside one span (the two sweeps' spans may touch at the
    // hand): whether a run was discarded is its span's outcome.
    let starts_span = |a: usize| spans.binary_search_by_key(&a, |&(s, _)| s).is_ok();
    let mut runs: Vec<Run> = Vec::new();
    for a in victims {
        match runs.last_mut() {
            Some((s, pages)) if *s + *pages * PAGE_SIZE == a && !starts_span(a) => *pages += 1,
            _ => runs.push((a, 1)),
        }
    }
    (runs, spans, hand)
}

/// The ranges that `removes` covers more often than `ours` does, found by
/// one sweep over the ranges' ends (a batch's spans may be long; nothing
/// here walks their pages).
fn excess_cover(removes: &[(usize, usize)], ours: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut ends: Vec<(usize, isize)> = Vec::with_capacity(2 * (removes.len() + ours.len()));
    for &(s, e) in removes {
        ends.extend([(s, 1), (e, -1)]);
    }
    for &(s, e) in ours {
        ends.extend([(s, -1), (e, 1)]);
    }
    ends.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let (mut depth, mut from) = (0isize, 0usize);
    for (at, step) in ends {
        let was = depth;
        depth += step;
        if was <= 0 && depth > 0 {
            from = at;
        } else if was > 0 && depth <= 0 && at > from {
            match out.last_mut() {
                Some((_, e)) if *e == from => *e = at,
                _ => out.push((from, at)),
            }
        }
    }
    out
}

/// The parts of run `(start, pages)` without the pages at `holes`.
fn split_around((start, pages): (usize, usize), holes: &[usize]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = start;
    for i in 0..pages {
        let addr = start + i * PAGE_SIZE;
        if holes.contains(&addr) {
            if addr > from {
                out.push((from, (addr - from) / PAGE_SIZE));
            }
            from = addr + PAGE_SIZE;
        }
    }
    let end = start + pages * PAGE_SIZE;
    if end > from {
        out.push((from, (end - from) / PAGE_SIZE));
    }
    out
}

/// `ranges` (sorted, disjoint) less `[s, e)`.
fn subtract(ranges: &[(usize, usize)], s: usize, e: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for &(rs, re) in ranges {
        if re <= s || rs >= e {
            out.push((rs, re));
            continue;
        }
        if rs < s {
            out.push((rs, s));
        }
        if re > e {
            out.push((e, re));
        }
    }
    out
}

/// `ranges` (sorted, disjoint) with `[s, e)` added, neighbours merged.
fn add(ranges: &[(usize, usize)], s: usize, e: usize) -> Vec<(usize, usize)> {
    let mut all = subtract(ranges, s, e);
    all.push((s, e));
    all.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (rs, re) in all {
        match out.last_mut() {
            Some(last) if last.1 == rs => last.1 = re,
            _ => out.push((rs, re)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of a small address space (64 pages in two registered ranges
    /// with a hole between), each absent, resident or stored.
    fn address_space() -> impl proptest::strategy::Strategy<Value = BTreeMap<usize, Page>> {
        use proptest::prelude::*;
        proptest::collection::vec(0u8..3, 64).prop_map(|kinds| {
            kinds
                .into_iter()
                .enumerate()
                .filter(|&(i, _)| !(24..32).contains(&i)) // the hole
                .filter_map(|(i, k)| {
                    let a = i * PAGE_SIZE;
                    match k {
                        0 => None,
                        1 => Some((a, Page::Resident)),
                        _ => Some((a, Page::Stored(i as u64))),
                    }
                })
                .collect()
        })
    }

    proptest::proptest! {
        /// The batch's discard never covers a resident page that is not a
        /// victim (a pinned or young one included), nor memory outside the
        /// registered ranges; it takes as many victims as asked for (or
        /// every resident page that is not kept).
        #[test]
        fn a_sweep_discards_only_its_victims(
            pages in address_space(),
            hand in 0usize..64,
            n in 1usize..40,
            pins in proptest::collection::vec((0usize..64, 1usize..4), 0..4),
            young in proptest::collection::hash_set(0usize..64, 0..16),
        ) {
            let registered = [(0, 24 * PAGE_SIZE), (32 * PAGE_SIZE, 64 * PAGE_SIZE)];
            let mut held = crate::pins::Pins::default();
            for &(at, len) in &pins {
                held.hold((at * PAGE_SIZE, (at + len) * PAGE_SIZE));
            }
            let pinned = held.spans();
            let kept = |a: usize| crate::pins::in_spans(pinned, a) || young.contains(&(a / PAGE_SIZE));
            let (runs, spans, next) = sweep(&pages, &registered, &kept, hand * PAGE_SIZE, n);
            let victims: Vec<usize> = runs.iter().flat_map(|&(s, p)| (0..p).map(move |i| s + i * PAGE_SIZE)).collect();
            for &v in &victims {
                proptest::prop_assert!(!kept(v), "kept {v:#x} is a victim");
            }
            let resident = pages
                .iter()
                .filter(|&(&a, &p)| p == Page::Resident && !kept(a))
                .count();
            proptest::prop_assert_eq!(victims.len(), n.min(resident));
            for &v in &victims {
                proptest::prop_assert_eq!(pages.get(&v), Some(&Page::Resident));
                proptest::prop_assert!(spans.iter().any(|&(s, e)| (s..e).contains(&v)));
            }
            for &(s, p) in &runs {
                let e = s + p * PAGE_SIZE;
                proptest::prop_assert!(spans.iter().any(|&(ss, se)| ss <= s && e <= se), "run {s:#x}..{e:#x} crosses spans");
            }
            for &(s, e) in &spans {
                proptest::prop_assert!(registered.iter().any(|&(rs, re)| rs <= s && e <= re), "span {s:#x}..{e:#x}");
                for (a, &p) in pages.range(s..e) {
                    proptest::prop_assert!(p != Page::Resident || victims.contains(a), "resident {a:#x} in a span, not a victim");
                }
            }
            proptest::prop_assert!(victims.is_empty() || next > 0);
        }
    }

    #[test]
    fn excess_cover_is_where_removes_outnumber_ours() {
        let p = PAGE_SIZE;
        // Ours alone, tiled by two events: nothing.
        assert_eq!(
            excess_cover(&[(0, 2 * p), (2 * p, 4 * p)], &[(0, 4 * p)]),
            vec![]
        );
        // The program's discard of page 1 inside ours: page 1.
        assert_eq!(
            excess_cover(&[(0, 4 * p), (p, 2 * p)], &[(0, 4 * p)]),
            vec![(p, 2 * p)]
        );
        // The program's discard across our edge: the part inside ours and
        // the part outside both count once more than ours.
        assert_eq!(
            excess_cover(&[(0, 2 * p), (p, 3 * p)], &[(0, 2 * p)]),
            vec![(p, 3 * p)]
        );
        // Ours reported but no event (a call cut short): nothing.
        assert_eq!(excess_cover(&[], &[(0, 2 * p)]), vec![]);
    }

    proptest::proptest! {
        #[test]
        fn excess_cover_matches_counting_page_by_page(
            removes in proptest::collection::vec((0usize..32, 1usize..8), 0..8),
            ours in proptest::collection::vec((0usize..32, 1usize..8), 0..4),
        ) {
            let p = PAGE_SIZE;
            let r: Vec<(usize, usize)> = removes.iter().map(|&(s, n)| (s * p, (s + n) * p)).collect();
            let o: Vec<(usize, usize)> = ours.iter().map(|&(s, n)| (s * p, (s + n) * p)).collect();
            let count = |set: &[(usize, usize)], a: usize| set.iter().filter(|&&(s, e)| (s..e).contains(&a)).count();
            let got = excess_cover(&r, &o);
            for i in 0..48 {
                let a = i * p;
                let want = count(&r, a) > count(&o, a);
                let has = got.iter().any(|&(s, e)| (s..e).contains(&a));
                proptest::prop_assert_eq!(want, has, "page {}", i);
            }
        }
    }

    #[test]
    fn a_run_splits_around_its_holes() {
        let p = PAGE_SIZE;
        assert_eq!(split_around((0, 4), &[]), vec![(0, 4)]);
        assert_eq!(split_around((0, 4), &[p]), vec![(0, 1), (2 * p, 2)]);
        assert_eq!(split_around((0, 4), &[0, 3 * p]), vec![(p, 2)]);
        assert_eq!(split_around((0, 2), &[0, p]), vec![]);
    }

    #[test]
    fn ranges_add_and_subtract() {
        let r = add(&[], 0, 10);
        let r = add(&r, 10, 20);
        assert_eq!(r, vec![(0, 20)]);
        let r = subtract(&r, 5, 8);
        assert_eq!(r, vec![(0, 5), (8, 20)]);
        let r = add(&r, 4, 9);
        assert_eq!(r, vec![(0, 20)]);
        assert_eq!(subtract(&r, 0, 100), vec![]);
    }
}
