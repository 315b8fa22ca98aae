//! Fork: a forked child (without exec) keeps working on every byte of its
//! parent's regions, as they were at the instant of `fork()`, and gets a
//! runtime of its own.
//!
//! The kernel copies the address space, the runtime's state tables and the
//! store's pool (ordinary memory, copy-on-write) — but not the
//! userfaultfd's registration (no `UFFD_FEATURE_EVENT_FORK`: it needs
//! `CAP_SYS_PTRACE`), and none of the runtime's threads. So:
//!
//! * **prepare** (`pthread_atfork`, in the forking thread, after every other
//!   prepare handler — the LD_PRELOAD library registers these first): each
//!   runtime stops starting operations and waits for those in flight
//!   ([`protocol::Fork`]), takes the store gate alone (no thread is inside
//!   a store), then holds the state lock and the arena's lock across the
//!   fork. Every page is now `Untouched`, `Resident` or `Swapped`, and the
//!   copy the child gets is consistent. The slots of the swap file whose
//!   pages are on disk now are *frozen* for this fork's generation: the
//!   child may read them, so the parent gives none of them out again until
//!   the generation thaws (below).
//! * **parent**: operations start again.
//! * **child** (one thread): a new userfaultfd registers every region;
//!   [`protocol::adopt_after_fork`] makes the copied state the child's:
//!   swapped pages are read from the parent's store, which the child keeps
//!   as an *inherited* store it only reads (`Swap::read_frozen`: no change
//!   to its pool, its swap cache or its file, and plain `pread`, never the
//!   parent's io_uring); resident pages stay mapped copy-on-write, shared
//!   with the parent — uncharged, write-protected, charged to the child
//!   when it first writes them (as a memcg charges a page once). The child
//!   gets a store of its own for its evictions, its own threads, a slot of
//!   its own in a shared limit, and zeroed counters. It takes a POSIX read
//!   lock on the byte `LOCK_BASE + generation` of every inherited store's
//!   swap file.
//!
//! **Why the child sees exactly the fork-time bytes.** A resident page is
//! the kernel's copy-on-write copy. A swapped page's bytes are in the
//! child's copy of the parent's pool (memory, copy-on-write), in its swap
//! cache or zero map (the same), or in the parent's swap file at a slot
//! that was written before the fork and is frozen: nobody writes that slot
//! until no process holds the generation's lock. The parent's later
//! writebacks go to slots that were free or pool-held at the fork; the
//! child never reads those from the file (its copy says pool or free).
//!
//! **Thawing.** POSIX locks belong to a process and go with it — at exit,
//! on a crash, and at exec (the swap file's descriptor is close-on-exec,
//! and closing it drops the locks). The parent's reclaimer thaws a
//! generation once it is older than [`THAW_GRACE`] (the child locks it
//! within microseconds of the fork; a grandchild locks the grandparent's
//! generation before its own parent can have exited) and no process holds
//! its lock.
//!
//! `vfork`, `posix_spawn` and `system()` run no fork handlers: their child
//! shares the parent's memory, and its faults are the parent's. A raw
//! `clone()` without `CLONE_VM` runs none either: such a child reads
//! swapped pages as zeros (documented; no common program does this).

use crate::env::{Generation, Inherited, Live};
use crate::pager::{new_live, store_config, Pager};
use crate::protocol::{self, Fork, State, StoreId};
use crate::uffd::FaultMode;
use crate::{arena, fatal};
use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLockWriteGuard, Weak};
use std::time::{Duration, Instant};
use userfaultfd::RegisterMode;
use zswap::Swap;

/// Where fork generations' lock bytes start in a swap file (far past any
/// data: POSIX locks may lie beyond the end of a file).
const LOCK_BASE: i64 = 1 << 62;
/// A generation younger than this is never thawed.
pub const THAW_GRACE: Duration = Duration::from_secs(10);

/// Every live runtime of the process.
static RUNTIMES: Mutex<Vec<Weak<Pager>>> = Mutex::new(Vec::new());

/// What the forking thread holds from prepare to parent/child.
struct Held {
    // Guards first: they are dropped before the `Arc` that keeps their
    // referents alive.
    state: MutexGuard<'static, State>,
    _gate: RwLockWriteGuard<'static, ()>,
    generation: u64,
    inner: Arc<Pager>,
}

struct HeldAll {
    runtimes: Vec<Held>,
    arena: Option<arena::ForkGuard>,
    registry: Option<MutexGuard<'static, Vec<Weak<Pager>>>>,
}

thread_local! {
    /// Set by prepare, taken by parent or child: the same thread runs all
    /// three.
    static HELD: RefCell<Option<HeldAll>> = const { RefCell::new(None) };
}

/// Registers the fork handlers, once per process. The LD_PRELOAD library
/// calls this when it is loaded, so that its prepare handler runs after
/// every other library's (those may touch region memory) and its child
/// handler before theirs. A program using the runtime as a library should
/// call it before other libraries register theirs.
pub fn register_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registering handlers with no preconditions; they are
        // `extern "C"` functions that never unwind.
        let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if r != 0 {
            fatal::exit_with(
                fatal::START_EXIT,
                &format!("pthread_atfork failed (errno {r}): forked children would not be paged"),
            );
        }
    });
}

fn registry() -> MutexGuard<'static, Vec<Weak<Pager>>> {
    RUNTIMES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Adds a runtime to those forks take care of.
pub(crate) fn track(inner: &Arc<Pager>) {
    let mut r = registry();
    r.retain(|w| w.strong_count() > 0);
    r.push(Arc::downgrade(inner));
}

/// Removes a runtime (it is being dropped).
pub(crate) fn untrack(inner: &Arc<Pager>) {
    registry().retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), Arc::as_ptr(inner)));
}

extern "C" fn prepare() {
    no_unwind("prepare", || {
        let registry = registry();
        let live: Vec<Arc<Pager>> = registry.iter().filter_map(Weak::upgrade).collect();
        let runtimes = live.into_iter().map(|i| i.prepare_fork()).collect();
        let arena =
            arena::range_if_reserved().and_then(|_| arena::global().ok().map(|a| a.fork_guard()));
        HELD.with(|h| {
            *h.borrow_mut() = Some(HeldAll {
                runtimes,
                arena,
                registry: Some(registry),
            })
        });
    })
}

extern "C" fn parent() {
    no_unwind("parent", || {
        let Some(held) = HELD.with(|h| h.borrow_mut().take()) else {
            return;
        };
        for mut h in held.runtimes {
            protocol::end_fork(&mut h.state, &h.inner.changed);
        }
        drop(held.arena);
        drop(held.registry);
    })
}

extern "C" fn child() {
    crate::sys::forget_cached_tids();
    no_unwind("child", || {
        let Some(held) = HELD.with(|h| h.borrow_mut().take()) else {
            return;
        };
        drop(held.arena);
        drop(held.registry);
        let mut started = Vec::new();
        for mut h in held.runtimes {
            h.inner.adopt_in_child(&mut h.state, h.generation);
            let inner = h.inner.clone();
            drop(h);
            started.push(inner);
        }
        for inner in started {
            if let Err(e) = inner.start_threads() {
                fatal::die(&format!(
                    "forked child: cannot start the runtime's threads: {e}"
                ));
            }
        }
    })
}

/// Runs a fork handler's work; a panic ends the process (exit 71): it must
/// not unwind into `fork()`.
fn no_unwind(what: &str, f: impl FnOnce()) {
    // The runtime's own code: the LD_PRELOAD hooks must let its calls
    // through.
    let _inside = crate::reentry::enter();
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        fatal::die(&format!("fork {what} handler panicked: {msg}"));
    }
}

/// `fcntl` lock of byte `LOCK_BASE + generation` of `fd`: `F_RDLCK` to
/// hold it, `F_UNLCK` to drop it, or (`probe`) `F_GETLK` asking whether any
/// other process holds it.
fn generation_lock(fd: libc::c_int, generation: u64, kind: libc::c_short, probe: bool) -> bool {
    // SAFETY: an all-zero flock is a valid value to fill in.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = LOCK_BASE + generation as i64;
    fl.l_len = 1;
    let cmd = if probe { libc::F_GETLK } else { libc::F_SETLK };
    // SAFETY: fcntl on our own descriptor with a valid flock.
    let r = unsafe { libc::fcntl(fd, cmd, &mut fl) };
    if probe {
        r == 0 && fl.l_type != libc::F_UNLCK as libc::c_short
    } else {
        r == 0
    }
}

impl Pager {
    /// The parent's half of prepare: quiesce, gate, freeze, hold the state.
    fn prepare_fork(self: Arc<Self>) -> Held {
        let mut op = Fork::default();
        self.drive(|cx| op.step(cx));
        let gate = self
            .env
            .gate
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let state = self.lock();
        let generation = self
            .generations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let live = self.env.live();
        let slots = live.own.device().freeze_written();
        live.generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Generation {
                id: generation,
                slots,
                at: Instant::now(),
            });
        // SAFETY: only the lifetimes change: the guards go into a `Held`
        // that keeps `self` (their referent) alive in a field dropped after
        // them.
        let (state, gate) = unsafe {
            (
                std::mem::transmute::<MutexGuard<'_, State>, MutexGuard<'static, State>>(state),
                std::mem::transmute::<RwLockWriteGuard<'_, ()>, RwLockWriteGuard<'static, ()>>(
                    gate,
                ),
            )
        };
        Held {
            state,
            _gate: gate,
            generation,
            inner: self,
        }
    }

    /// The child's half: a runtime of its own around the copied state.
    fn adopt_in_child(&self, st: &mut State, generation: u64) {
        let old = self.env.live();
        let user_mode_only = self.env.mode == FaultMode::UserModeOnly;
        let in_thread = self.env.mode == FaultMode::InThread;
        let swap = Swap::new(store_config(&self.cfg.swap)).unwrap_or_else(|e| {
            fatal::die(&format!("forked child: cannot make its swap store: {e}"))
        });
        let (mut live, _) =
            new_live(&self.cfg, swap, user_mode_only, in_thread).unwrap_or_else(|e| {
                fatal::die(&format!("forked child: cannot start its runtime: {e}"))
            });
        // The parent's inherited stores keep their ids; its own is next.
        live.inherited = old
            .inherited
            .iter()
            .map(|i| Inherited {
                swap: i.swap.clone(),
                generation: i.generation,
            })
            .collect();
        live.inherited.push(Inherited {
            swap: old.own.clone(),
            generation,
        });
        let parent_store = StoreId(live.inherited.len() as u8);
        for inh in &live.inherited {
            if let Some(fd) = inh.swap.device().raw_fd() {
                generation_lock(fd, inh.generation, libc::F_RDLCK as libc::c_short, false);
            }
        }
        // SAFETY: the fork child handler: this is the process's only
        // thread, and no reference into the old `Live` is alive (`old` is
        // not used from here on).
        let old = unsafe { self.env.replace_live_in_child(live) };
        dispose_parents(old);
        protocol::adopt_after_fork(st, parent_store);
        let live = self.env.live();
        for (&base, r) in &st.regions {
            let len = r.len_bytes();
            if let Err(e) = live.uffd.register_with_mode(
                base as *mut libc::c_void,
                len,
                RegisterMode::MISSING | RegisterMode::WRITE_PROTECT,
            ) {
                fatal::die(&format!("forked child: registering region {base:#x}: {e}"));
            }
            // Shared with the parent until written: a write is a fault.
            for (a, l) in protocol::resident_ranges(r, base) {
                if let Err(e) = live.uffd.write_protect(a as *mut libc::c_void, l) {
                    fatal::die(&format!("forked child: protecting {a:#x}: {e}"));
                }
            }
        }
        if let Some(rec) = &live.recorder {
            // SAFETY: getppid(2) takes nothing and cannot fail.
            let parent = unsafe { libc::getppid() } as u32;
            rec.push(trace::Event::Forked { parent });
            for (&base, r) in &st.regions {
                rec.push(trace::Event::Map {
                    addr: base as u64,
                    pages: r.pages.len() as u32,
                });
            }
        }
        self.env.counters.reset();
        self.forget_runtime_threads();
        self.owner_pid
            .store(std::process::id(), std::sync::atomic::Ordering::Release);
        self.stop.store(false, std::sync::atomic::Ordering::Release);
        self.reclaim_stalled
            .store(false, std::sync::atomic::Ordering::Release);
        // The counters start again: so does the count since the last pass.
        self.calls_at_last_pass
            .store(0, std::sync::atomic::Ordering::Relaxed);
        self.generations
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    /// The reclaimer's sweep: thaws the fork generations no child holds any
    /// more.
    pub(crate) fn thaw_generations(&self) {
        let live = self.env.live();
        // Lock order: the store gate, then the generations (as prepare).
        let _gate = self.env.gated();
        let mut gens = live
            .generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if gens.is_empty() {
            return;
        }
        let Some(fd) = live.own.device().raw_fd() else {
            return; // no file to lock: stay frozen
        };
        gens.retain(|g| {
            if g.at.elapsed() < THAW_GRACE
                || generation_lock(fd, g.id, libc::F_WRLCK as libc::c_short, true)
            {
                return true;
            }
            live.own.device().thaw(&g.slots);
            false
        });
    }
}

/// What of the parent's [`Live`] a child may drop, it drops; the rest it
/// forgets: the parent's threads (joining them would wait forever) and its
/// slot in a shared limit (dropping it would clear the parent's count).
fn dispose_parents(old: Live) {
    let Live {
        uffd,
        own,
        inherited,
        pagemap,
        stop_fd,
        shared,
        reclaim_wake,
        threads,
        generations,
        recorder,
    } = old;
    std::mem::forget(threads);
    std::mem::forget(shared);
    // The parent's recorder: what it had queued is the parent's to write.
    drop((
        uffd,
        own,
        inherited,
        pagemap,
        reclaim_wake,
        generations,
        recorder,
    ));
    // SAFETY: the parent's eventfd, copied; nothing here uses it.
    unsafe { libc::close(stop_fd) };
}
