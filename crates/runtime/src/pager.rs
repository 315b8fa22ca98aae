//! The pager: what every runtime thread of one process shares ([`Pager`]:
//! the page states, the real environment, the limit, the runtime's
//! threads), the driver that runs the protocol's operations against the
//! environment, and the making of a process's live parts. The mechanisms
//! (`reclaim.rs`, `fork.rs`, `in_thread.rs`, `fault.rs`, `region.rs`) add
//! their own `impl Pager` blocks and import this module; it imports none
//! of them, and [`crate::Runtime`], the public handle, sits above them all.

use crate::config::RuntimeConfig;
use crate::env::{Live, RealEnv};
use crate::pagemap::PagemapScan;
use crate::protocol::{self, Cx, Fatal, State, Step, Tunables};
use crate::shared::SharedLimit;
use crate::uffd::FaultMode;
use crate::{fatal, RuntimeError};
use common::rate_limit::RateLimit;
use common::wakeup::Wakeup;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use zswap::Swap;

/// The kind of fault [`Pager::record_fault`] records.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Traced {
    Missing { write: bool, first_touch: bool },
    WpFault,
}

/// Runtime threads register their thread ids here, so that the fault
/// handler can tell a runtime thread's fault (an invariant broken) from the
/// program's.
const MAX_RUNTIME_THREADS: usize = 8;

/// What every runtime thread shares.
pub(crate) struct Pager {
    pub state: Mutex<State>,
    pub changed: Condvar,
    pub env: RealEnv,
    pub tun: Tunables,
    pub cfg: RuntimeConfig,
    pub limit_pages: usize,
    pub stop: AtomicBool,
    /// The reclaimer's last pass evicted nothing (the store refuses, or
    /// nothing is evictable): throttled faults must not wait for it.
    pub reclaim_stalled: AtomicBool,
    pub runtime_tids: [AtomicI32; MAX_RUNTIME_THREADS],
    /// The process this runtime belongs to (set again in a forked child):
    /// a `vfork` child runs on it too, sharing its memory.
    pub owner_pid: std::sync::atomic::AtomicU32,
    /// Aging passes, at most every `cfg.aging_interval`, and shared-limit
    /// sweeps, at most every 100 ms (atomics: nothing a fork could copy
    /// locked).
    pub aging: RateLimit,
    /// `reclaimer_protect_calls` when the last aging pass was due.
    pub calls_at_last_pass: AtomicU64,
    /// The aging governor's mode when it last decided (`aging.rs`).
    pub aging_on: AtomicBool,
    pub sweep: RateLimit,
    /// Pool compactions by the reclaimer, at most every
    /// `COMPACT_INTERVAL` (`reclaim.rs`).
    pub compaction: RateLimit,
    /// Fork generations of this process's swap file so far.
    pub generations: AtomicU64,
    /// Whether aging passes pay (`aging.rs`); taken with `try_lock` only,
    /// by the caller that the `aging` rate limit let through.
    pub aging_governor: std::sync::Mutex<crate::aging::AgingGovernor>,
    /// The limit in force last recorded (`--record`), in pages.
    pub recorded_limit: std::sync::atomic::AtomicUsize,
    /// When the age clock ([`State::clock`]) was 0.
    pub born: std::time::Instant,
    /// The thread of the last fault served in-thread.
    pub last_fault_tid: AtomicI32,
    /// Faults over the limit evict in their own thread now (set by the
    /// reclaim thread from `direct.rs`'s policy, or `--direct-reclaim`).
    pub direct_now: AtomicBool,
    /// When direct reclaim asks whether its thread writes alone
    /// (`sole.rs`).
    pub sole_probe: crate::sole::SoleProbe,
}

impl Pager {
    /// Runs one protocol operation to its end: steps it, waits when it
    /// asks to, and ends the program on a fatal error.
    pub fn drive<T>(&self, mut step: impl FnMut(&Cx<RealEnv>) -> Result<Step<T>, Fatal>) -> T {
        let cx = Cx {
            state: &self.state,
            changed: &self.changed,
            env: &self.env,
            tun: &self.tun,
        };
        loop {
            match step(&cx) {
                Ok(Step::Next) => {}
                Ok(Step::Wait(seen)) => {
                    let mut st = self.lock();
                    while st.changes == seen {
                        st.sleepers += 1;
                        st = self
                            .changed
                            .wait(st)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        st.sleepers -= 1;
                    }
                }
                Ok(Step::Done(v)) => {
                    self.publish_charge();
                    return v;
                }
                Err(e) => fatal::die(&e.to_string()),
            }
        }
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        protocol::lock(&self.state)
    }

    /// The limit in force, in pages: the configured one, or lower where a
    /// controller of the shared limit set it lower (`--max-slowdown`).
    pub(crate) fn limit(&self) -> usize {
        self.env.live().limit_in_force(self.limit_pages)
    }

    /// Adds `waited` to the time the program's threads waited on uzswap
    /// (fault service, throttling, pins): the stall a `--max-slowdown`
    /// controller keeps under its target. Lock-free.
    pub(crate) fn note_stall(&self, waited: Duration) {
        let ns = waited.as_nanos() as u64;
        self.env.counters.stall_ns.fetch_add(ns, Ordering::Relaxed);
        if let Some(s) = &self.env.live().shared {
            s.add_stall(ns);
        }
    }

    /// The time a fault's service began, where this run records
    /// (`--record`); `None` otherwise (no clock read).
    pub(crate) fn trace_clock(&self) -> Option<u64> {
        self.env.live().recorder.as_ref().map(|_| trace::now_ns())
    }

    /// Records a fault at `page` whose service began at `began` (from
    /// [`Pager::trace_clock`]): a write-protect fault if `wp`. No
    /// allocation, and no lock but the state lock (to see whether a
    /// swap-in left its page clean), which the thread of a fault served
    /// in its SIGBUS handler cannot hold (invariant 4): such faults call
    /// it in the handler.
    pub(crate) fn record_fault(&self, began: Option<u64>, page: usize, kind: Traced, tid: i32) {
        let (Some(began), Some(rec)) = (began, &self.env.live().recorder) else {
            return;
        };
        let service_ns = u32::try_from(trace::now_ns().saturating_sub(began)).unwrap_or(u32::MAX);
        let (addr, tid) = (page as u64, tid as u32);
        let event = match kind {
            Traced::WpFault => trace::Event::WpFault {
                addr,
                tid,
                service_ns,
            },
            Traced::Missing { write, first_touch } => trace::Event::Fault {
                addr,
                write,
                first_touch,
                kept_clean: !first_touch && self.is_clean(page),
                tid,
                service_ns,
            },
        };
        rec.push_at(began, event);
    }

    /// Whether `page` is a region page left `Clean` (its slot kept).
    fn is_clean(&self, page: usize) -> bool {
        let st = self.lock();
        st.locate(page).is_some_and(|(base, idx)| {
            matches!(
                st.regions[&base].pages[idx].state,
                protocol::PageState::Clean { .. }
            )
        })
    }

    /// Records `event` where this run records.
    pub(crate) fn record(&self, event: trace::Event) {
        if let Some(rec) = &self.env.live().recorder {
            rec.push(event);
        }
    }

    /// The reclaimer's tick, where this run records: the limit in force if
    /// it changed, then what is queued to the file (at exit, the pending
    /// page samples too). A write error stops the recording (said once);
    /// the program goes on.
    pub(crate) fn drain_trace(&self, at_exit: bool) {
        let Some(rec) = &self.env.live().recorder else {
            return;
        };
        let limit = self.limit();
        if self.recorded_limit.swap(limit, Ordering::Relaxed) != limit {
            rec.push(trace::Event::Limit {
                pages: limit as u64,
            });
        }
        let written = if at_exit { rec.flush() } else { rec.drain() };
        if let Err(e) = written {
            eprintln!(
                "uzswap: --record {}: {e}; recording stops, the program goes on",
                rec.path().display()
            );
        }
    }

    /// Publishes this process's charge to a shared limit.
    pub(crate) fn publish_charge(&self) {
        if let Some(s) = &self.env.live().shared {
            s.publish(self.own_charge());
        }
    }

    /// The pages this process's memory costs, as a memcg charges them:
    /// resident region pages, and the swap store's pool and entries
    /// ([`zswap::Swap::charged_pages`]). The page-state tables are not
    /// counted: they are runtime memory, like the kernel's page tables,
    /// which a memcg does not charge either (and charging them would leave
    /// a small limit less for resident pages). `table_bytes` reports them.
    pub fn own_charge(&self) -> usize {
        let resident = self.lock().resident;
        if self.cfg.charge_pool {
            resident + self.env.live().own.charged_pages()
        } else {
            resident
        }
    }

    /// Pages swapped out now, in the pool or on the file (each holds a
    /// swap slot; a clean page's kept slot too).
    pub fn swapped_pages(&self) -> usize {
        self.env.live().own.device().used_slots()
    }

    /// Of those, pages on the swap file (a clean page's kept copy too).
    pub fn on_file_pages(&self) -> usize {
        self.env.live().own.device().written_slots()
    }

    /// The age clock now: ms since the runtime started (wrapping after 49
    /// days; ages are differences).
    pub fn age_clock_now(&self) -> u32 {
        self.born.elapsed().as_millis() as u32
    }

    /// Bytes of the page-state tables of all regions in memory (for
    /// reports: it walks the regions).
    pub fn table_bytes(&self) -> usize {
        self.lock().regions.values().map(|r| r.table_bytes()).sum()
    }

    /// The pages the limit applies to: ours, or all processes' of a shared
    /// limit.
    pub fn charged(&self) -> usize {
        match &self.env.live().shared {
            Some(s) => s.total(),
            None => self.own_charge(),
        }
    }

    /// Records the calling thread as a runtime thread.
    pub fn register_runtime_thread(&self) {
        self.claim_tid_slot(crate::sys::cached_tid());
    }

    /// Takes a free slot of `runtime_tids` for `tid`; `None` if all are
    /// taken.
    fn claim_tid_slot(&self, tid: i32) -> Option<&AtomicI32> {
        self.runtime_tids.iter().find(|slot| {
            slot.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })
    }

    /// Runs `f` (an eviction) with the calling thread counted as a runtime
    /// thread: the evictor may fault on its own victim (discarded behind
    /// the runtime's back), and the handler serves that fault with zeros
    /// only for a runtime thread; any other thread it would make wait for
    /// the eviction, that is, for itself.
    pub fn as_runtime_thread<T>(&self, f: impl FnOnce() -> T) -> T {
        let tid = crate::sys::cached_tid();
        if self.is_runtime_thread(tid) {
            return f();
        }
        let slot = loop {
            match self.claim_tid_slot(tid) {
                Some(slot) => break slot,
                // Every slot taken by other callers' evictions: wait for one.
                None => std::thread::yield_now(),
            }
        };
        struct Unregister<'a>(&'a AtomicI32);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                self.0.store(0, Ordering::Release);
            }
        }
        let _unregister = Unregister(slot);
        f()
    }

    /// Forgets the runtime threads (a forked child: they are the parent's).
    pub fn forget_runtime_threads(&self) {
        for slot in &self.runtime_tids {
            slot.store(0, Ordering::Release);
        }
    }

    pub fn is_runtime_thread(&self, tid: i32) -> bool {
        self.runtime_tids
            .iter()
            .any(|t| t.load(Ordering::Acquire) == tid)
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Starts the fault handler and the reclaimer.
    pub fn start_threads(self: &Arc<Self>) -> std::io::Result<()> {
        let mut threads = self
            .env
            .live()
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.env.mode != FaultMode::InThread {
            let i = self.clone();
            threads.push(fatal::spawn("uzswap/fault", move || i.fault_loop())?);
        }
        let i = self.clone();
        threads.push(fatal::spawn("uzswap/reclaim", move || i.reclaim_loop())?);
        Ok(())
    }

    /// Stops and joins the runtime's threads.
    pub fn stop_threads(&self) {
        self.stop.store(true, Ordering::Release);
        let live = self.env.live();
        live.reclaim_wake.kick();
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd wakes the handler's poll.
        unsafe { libc::write(live.stop_fd, &one as *const u64 as *const libc::c_void, 8) };
        let threads: Vec<JoinHandle<()>> = live
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
            .collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Why the shared-limit file could not be mapped. Refused by name, it is
/// most likely a process that changed user after `uzswap run` started it
/// and closed the descriptor the run passed down.
fn shared_limit_error(path: &std::path::Path, e: &std::io::Error) -> String {
    let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        format!(
            " (this process runs as user {me}, which may not open it, and holds no descriptor of it from `uzswap run`: a program that changes user and closes its inherited descriptors loses the run's limit)"
        )
    } else {
        String::new()
    };
    format!("shared limit {}: {e}{hint}", path.display())
}

/// Makes a process's [`Live`] parts: the userfaultfd (in `mode`'s strength
/// or the strongest allowed), a store, the pagemap handle, the stop
/// eventfd, a shared-limit slot.
pub(crate) fn new_live(
    cfg: &RuntimeConfig,
    swap: Arc<Swap>,
    user_mode_only: bool,
    in_thread: bool,
) -> Result<(Live, FaultMode), RuntimeError> {
    let (uffd, mode) = if in_thread {
        (crate::uffd::open_in_thread()?, FaultMode::InThread)
    } else {
        crate::uffd::open(user_mode_only)?
    };
    let shared = match &cfg.shared_limit_file {
        Some(path) => Some(
            SharedLimit::open_passed(path, cfg.shared_limit_fd.as_ref())
                .map_err(|e| RuntimeError::Config(shared_limit_error(path, &e)))?,
        ),
        None => None,
    };
    // Aging (where `track_writes`) and clean pages' kept slots both need it.
    let pagemap = PagemapScan::open();
    // SAFETY: eventfd(2) with valid flags; the result is checked.
    let stop_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if stop_fd < 0 {
        return Err(RuntimeError::Thread(std::io::Error::last_os_error()));
    }
    let recorder = match &cfg.record_file {
        Some(path) => Some(
            trace::Recorder::open(path, std::process::id(), &cfg.swap.compressor.to_string())
                .map_err(|e| {
                    RuntimeError::Config(format!("record file {}: {e}", path.display()))
                })?,
        ),
        None => None,
    };
    let live = Live {
        uffd,
        own: swap,
        inherited: Vec::new(),
        pagemap,
        stop_fd,
        shared,
        reclaim_wake: Wakeup::default(),
        threads: std::sync::Mutex::new(Vec::new()),
        generations: std::sync::Mutex::new(Vec::new()),
        recorder,
    };
    Ok((live, mode))
}

/// The store settings a runtime uses: the shrinker runs on the reclaimer,
/// not a thread of the store's own (every thread that touches a store must
/// be one the runtime can stop at fork).
pub(crate) fn store_config(cfg: &zswap::Config) -> zswap::Config {
    zswap::Config {
        shrinker_thread: false,
        ..cfg.clone()
    }
}
