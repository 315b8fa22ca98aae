//! Exhaustive model check of the page-state machine ([`crate::protocol`]).
//!
//! The runtime's own operations ([`MissingFault`], [`WpFault`], [`Evict`],
//! [`Age`], [`Pin`], [`Release`]) run here step by step, against a model of
//! the kernel and of the store, interleaved in every possible order with
//! each other and with the program's accesses. Nothing of the protocol is
//! described again here: only the world around it is modelled.
//!
//! * The kernel: a page is mapped (with a value) or not, write-protected or
//!   not, registered with userfaultfd or not. A user access to an unmapped
//!   page, or a write to a protected one, queues a fault event and blocks
//!   the thread until a map, wake or un-protect of the page wakes it; it
//!   then retries. A *kernel* access (a system call's) blocks the same way
//!   where kernel faults are handled, and fails with EFAULT where the
//!   userfaultfd is user-mode only.
//! * The store: slots holding values; loads are exclusive; a store may be
//!   told to refuse (then both outcomes are explored).
//! * The fault handler reads events in order and runs an operation for each.
//!
//! Checked in every reachable state and at every end: no lost write, no
//! read of a value that was not the page's, no EFAULT for a pinned system
//! call, no thread blocked forever, nothing left in flight, and that the
//! protocol's own assertions hold. States are remembered by a 128-bit
//! fingerprint.

use crate::protocol::{
    self, Age, Cx, Env, Event, Evict, KernelError, Loaded, MissingFault, PageState, Pin, Release,
    Slot, State, Step, StoreError, StoreId, SwapinFault, Tunables, WpFault, PAGE,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Condvar, Mutex, PoisonError};

const BASE: usize = 0x10_0000;

/// How kernel accesses to unmapped or protected pages behave.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Mode {
    /// Kernel faults are handled: a system call blocks like a user access.
    KernelFaults,
    /// `UFFD_USER_MODE_ONLY`: a system call gets EFAULT.
    UserModeOnly,
    /// `UFFD_FEATURE_SIGBUS`: a user access that faults raises SIGBUS in
    /// its own thread, which serves the fault itself
    /// ([`MissingFault::served_in_thread`], [`WpFault::served_in_thread`])
    /// and retries; a system call gets EFAULT.
    InThread,
}

/// What a user or kernel access did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Got {
    /// Done: read this value.
    Value(u8),
    /// Blocked in the kernel: a fault event queued for the handler.
    Blocked,
    /// SIGBUS in the accessing thread (a write-protect fault if `true`).
    Signal(bool),
}

/// A fault the faulting thread serves itself, in its SIGBUS handler.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Serving {
    Missing(MissingFault<u8>),
    Wp(WpFault),
}

impl Serving {
    fn new(addr: usize, write: bool, wp: bool) -> Self {
        if wp {
            Serving::Wp(WpFault::new(addr).served_in_thread())
        } else {
            Serving::Missing(MissingFault::new(addr, write, false).served_in_thread())
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
struct KPage {
    value: Option<u8>,
    wp: bool,
    registered: bool,
    /// Unmapped by the program itself (a raw discard), not since mapped.
    discarded: bool,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
struct Kernel {
    pages: BTreeMap<usize, KPage>,
    /// Fault events: (thread, page address, write-protect fault).
    events: VecDeque<(u8, usize, bool)>,
    /// The page each thread is blocked on.
    blocked: Vec<Option<usize>>,
}

impl Kernel {
    fn wake_range(&mut self, addr: usize, len: usize) {
        for b in &mut self.blocked {
            if b.is_some_and(|a| a >= addr && a < addr + len) {
                *b = None;
            }
        }
    }

    fn page(&mut self, addr: usize) -> &mut KPage {
        self.pages.entry(addr).or_default()
    }
}

#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
struct ModelStore {
    slots: BTreeMap<(StoreId, Slot), u8>,
    next: Slot,
    /// Stores left that may be refused (each refusal is explored).
    refusals: u8,
    /// Its pages are in the swap file: a load that may keep a clean
    /// page's slot keeps it.
    on_disk: bool,
}

/// The model's [`Env`]: the kernel and the store, borrowed for one step.
pub(crate) struct ModelEnv<'a> {
    k: RefCell<&'a mut Kernel>,
    s: RefCell<&'a mut ModelStore>,
    /// Refuse the next store (set by the explorer for the refusing branch).
    refuse: bool,
    tun: &'a Tunables,
    violation: RefCell<Option<Violation>>,
}

impl<'a> ModelEnv<'a> {
    /// An environment over `k` and `s` for one step, refusing the next
    /// store if `refuse`.
    fn new(k: &'a mut Kernel, s: &'a mut ModelStore, refuse: bool, tun: &'a Tunables) -> Self {
        Self {
            k: RefCell::new(k),
            s: RefCell::new(s),
            refuse,
            tun,
            violation: RefCell::new(None),
        }
    }
}

/// Runs `f` with a model environment of no pages (a protocol function's
/// own test, for what it counts and asks).
pub(crate) fn with_model_env<R>(f: impl FnOnce(&ModelEnv<'_>) -> R) -> R {
    let (mut k, mut s) = (Kernel::default(), ModelStore::default());
    let tun = Tunables {
        folio_pages: 1,
        page_cluster: 0,
        workingset_pages: 1,
        probation_pages: 0,
        unmap_group_pages: 1,
        faults_block: true,
        flaw: None,
    };
    f(&ModelEnv::new(&mut k, &mut s, false, &tun))
}

fn kerr(op: &'static str, addr: usize, len: usize, errno: i32) -> KernelError {
    KernelError {
        op,
        addr,
        len,
        errno,
    }
}

impl Env for ModelEnv<'_> {
    type Buf = u8;

    fn map_zeros(
        &self,
        addr: usize,
        pages: usize,
        _write: bool,
        wake: bool,
    ) -> Result<(), KernelError> {
        let mut k = self.k.borrow_mut();
        if (0..pages).any(|i| !k.page(addr + i * PAGE).registered) {
            // UFFDIO_COPY/ZEROPAGE outside a registered range.
            return Err(kerr("map_zeros", addr, pages * PAGE, libc::ENOENT));
        }
        if (0..pages).any(|i| k.page(addr + i * PAGE).value.is_some()) {
            return Err(kerr("map_zeros", addr, pages * PAGE, libc::EEXIST));
        }
        for i in 0..pages {
            let p = k.page(addr + i * PAGE);
            p.value = Some(0);
            p.discarded = false;
        }
        if wake {
            k.wake_range(addr, pages * PAGE);
        }
        Ok(())
    }

    fn map_zeros_protected(&self, addr: usize) -> Result<(), KernelError> {
        self.map(addr, &0, true, true)
    }

    fn map(&self, addr: usize, buf: &u8, wake: bool, protect: bool) -> Result<(), KernelError> {
        let mut k = self.k.borrow_mut();
        if !k.page(addr).registered {
            return Err(kerr("map", addr, PAGE, libc::ENOENT));
        }
        if k.page(addr).value.is_some() {
            return Err(kerr("map", addr, PAGE, libc::EEXIST));
        }
        let p = k.page(addr);
        p.value = Some(*buf);
        p.wp = protect;
        p.discarded = false;
        if wake {
            k.wake_range(addr, PAGE);
        }
        Ok(())
    }

    fn wake(&self, addr: usize, len: usize) -> Result<(), KernelError> {
        self.k.borrow_mut().wake_range(addr, len);
        Ok(())
    }

    fn protect(&self, addr: usize, len: usize) -> Result<(), KernelError> {
        let mut k = self.k.borrow_mut();
        for a in (addr..addr + len).step_by(PAGE) {
            let p = k.page(a);
            if p.value.is_some() {
                p.wp = true;
            }
        }
        Ok(())
    }

    fn unprotect(&self, addr: usize, len: usize, wake: bool) -> Result<(), KernelError> {
        let mut k = self.k.borrow_mut();
        for a in (addr..addr + len).step_by(PAGE) {
            k.page(a).wp = false;
        }
        if wake {
            k.wake_range(addr, len);
        }
        Ok(())
    }

    fn discard(&self, addr: usize, len: usize) -> Result<(), KernelError> {
        let mut k = self.k.borrow_mut();
        for a in (addr..addr + len).step_by(PAGE) {
            let p = k.page(a);
            p.value = None;
            p.wp = false;
        }
        Ok(())
    }

    fn written(
        &self,
        addr: usize,
        len: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> Result<(), KernelError> {
        let mut k = self.k.borrow_mut();
        for a in (addr..addr + len).step_by(PAGE) {
            let p = *k.page(a);
            if p.value.is_some() && !p.wp {
                out.push((a, a + PAGE));
            }
        }
        Ok(())
    }

    fn still_protected(&self, addr: usize, len: usize) -> Result<bool, KernelError> {
        let mut k = self.k.borrow_mut();
        Ok((addr..addr + len).step_by(PAGE).all(|a| {
            let p = *k.page(a);
            p.value.is_some() && p.wp
        }))
    }

    fn store_run(&self, addr: usize, pages: usize) -> Result<Vec<Slot>, StoreError> {
        let mut s = self.s.borrow_mut();
        if self.refuse {
            s.refusals -= 1;
            return Err(StoreError("refused".into()));
        }
        let mut slots = Vec::new();
        for i in 0..pages {
            let a = addr + i * PAGE;
            let p = *self.k.borrow_mut().page(a);
            let v = match p.value {
                Some(v) => v,
                // Discarded by the program: the evictor's read faults, and
                // the handler serves it (the protocol's own function).
                // Here a page is read at once, so the store is whole; the
                // real store, which may read part of a page before the
                // discard and zeros after it, refuses the run instead
                // (`RealEnv::store_run`; the protocol's answer to a refusal
                // is checked with `store_refusals`).
                None if p.discarded => {
                    if let Err(e) = protocol::serve_evictor_fault(self, self.tun, a) {
                        *self.violation.borrow_mut() = Some(Violation::Fatal(e.to_string()));
                        return Err(StoreError("evictor fault".into()));
                    }
                    self.k.borrow_mut().page(a).value.unwrap_or(0)
                }
                None => {
                    // Invariant 3: the runtime would read an unmapped victim.
                    *self.violation.borrow_mut() =
                        Some(Violation::EvictedUnmapped(addr + i * PAGE));
                    return Err(StoreError("unmapped".into()));
                }
            };
            s.next += 1;
            let slot = s.next;
            s.slots.insert((StoreId::OWN, slot), v);
            slots.push(slot);
        }
        Ok(slots)
    }

    fn load(
        &self,
        store: StoreId,
        slot: Slot,
        out: &mut u8,
        neighbours: &[Slot],
        _fault: Option<SwapinFault>,
        keep_clean: bool,
    ) -> Result<Loaded<u8>, StoreError> {
        let mut s = self.s.borrow_mut();
        let keep = keep_clean && s.on_disk;
        let mut take = |slot: Slot| {
            if keep {
                s.slots.get(&(store, slot)).copied()
            } else {
                s.slots.remove(&(store, slot))
            }
        };
        *out = take(slot).ok_or_else(|| StoreError(format!("slot {slot} empty")))?;
        Ok(Loaded {
            kept: keep,
            around: neighbours
                .iter()
                .filter_map(|&n| take(n).map(|v| (n, v, keep)))
                .collect(),
        })
    }

    fn free(&self, store: StoreId, slot: Slot) {
        self.s.borrow_mut().slots.remove(&(store, slot));
    }

    fn count(&self, _: Event, _: usize) {}
}

/// A program access.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Access {
    Write(usize, u8),
    Read(usize),
    /// A raw `MADV_DONTNEED` behind the runtime's back. The kernel unmaps
    /// the page; the program then expects zeros if the page was settled
    /// (resident) at that instant. One racing an operation in flight may be
    /// lost (the runtime cannot see it), so it is then not done at all.
    Discard(usize),
    /// The program's `madvise(MADV_DONTNEED)` through the preload library:
    /// the runtime's [`protocol::ProgramDiscard`]. The page reads zeros
    /// afterwards, whatever was in flight on it.
    Madvise(usize),
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum SyscallPhase {
    Pinning(Pin),
    /// Faulting the pages in from user mode (a read, or an atomic add of
    /// zero for a write).
    Touch,
    /// The kernel's access.
    Kernel,
    Unpin,
    Done,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Actor {
    Program {
        tid: u8,
        script: Vec<Access>,
        pc: usize,
        /// Per page, what this thread wrote (or discarded) last.
        own: BTreeMap<usize, u8>,
        /// The discard (`Access::Madvise`) under way.
        discarding: Option<protocol::ProgramDiscard>,
        /// The fault this thread is serving in its SIGBUS handler.
        serving: Option<Serving>,
    },
    /// A system call by thread `tid` on `page`: pins it, touches it, then
    /// the kernel reads it, or writes `value` into it.
    Syscall {
        tid: u8,
        page: usize,
        value: Option<u8>,
        phase: SyscallPhase,
        /// The fault this thread is serving in its SIGBUS handler.
        serving: Option<Serving>,
    },
    /// The fault handler; `deferred`: pages of throttled faults whose
    /// threads it has yet to wake.
    Handler {
        fault: Option<MissingFault<u8>>,
        wp: Option<WpFault>,
        deferred: Vec<usize>,
    },
    Evictor {
        cycles: u8,
        want: usize,
        cold_second: bool,
        op: Option<Evict>,
    },
    Ager {
        passes: u8,
        op: Option<Age>,
    },
    /// Releases the region into plain memory once its turn comes.
    Releaser {
        op: Option<Release<u8>>,
        started: bool,
    },
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct World {
    st: State,
    k: Kernel,
    s: ModelStore,
    actors: Vec<Actor>,
    /// Per page: every value written so far, the last one last.
    history: BTreeMap<usize, Vec<u8>>,
}

/// What the checker found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Violation {
    LostWrite {
        page: usize,
        has: u8,
        wrote: u8,
    },
    BadRead {
        page: usize,
        read: u8,
    },
    Efault {
        page: usize,
    },
    EvictedUnmapped(usize),
    /// A `Clean` page is mapped but unprotected, or its bytes are not its
    /// slot's: its next eviction would lose a write.
    CleanChanged(usize),
    /// Two pages name one slot.
    SlotShared(usize),
    /// A slot of the store that no page names, at the end.
    LeakedSlot(Slot),
    /// A page published `Swapped` is still mapped: the program's later
    /// writes there never reach the store, and the page is charged twice.
    SwappedMapped(usize),
    Stuck(String),
    LeftInFlight,
    Fatal(String),
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::LostWrite { page, has, wrote } => {
                write!(
                    f,
                    "page {page:#x} ends as {has}, but {wrote} was written last"
                )
            }
            Self::BadRead { page, read } => write!(f, "a read of {page:#x} saw {read}"),
            Self::Efault { page } => write!(f, "a pinned system call got EFAULT on {page:#x}"),
            Self::EvictedUnmapped(p) => write!(f, "an evicted page {p:#x} was not mapped"),
            Self::CleanChanged(p) => {
                write!(f, "clean page {p:#x} is writable or differs from its slot")
            }
            Self::SlotShared(p) => write!(f, "page {p:#x} names a slot another page names"),
            Self::LeakedSlot(s) => write!(f, "slot {s} is stored but no page names it"),
            Self::SwappedMapped(p) => write!(f, "page {p:#x} is swapped out yet still mapped"),
            Self::Stuck(who) => write!(f, "stuck: {who}"),
            Self::LeftInFlight => write!(f, "an operation was left in flight"),
            Self::Fatal(e) => write!(f, "fatal error: {e}"),
        }
    }
}

/// A scenario: the region, the program, the runtime's actors.
#[derive(Clone, Debug)]
pub(crate) struct Scenario {
    pub pages: usize,
    /// Initial page contents: `None` untouched, `Some((value, swapped))`.
    pub initial: Vec<Option<(u8, bool)>>,
    pub programs: Vec<Vec<Access>>,
    /// System calls: (page, Some(value) the kernel writes | None reads).
    pub syscalls: Vec<(usize, Option<u8>)>,
    pub evict_cycles: u8,
    pub evict_want: usize,
    /// The evictor's second pass takes cold pages only ([`Evict::cold`]),
    /// as the reclaimer's before pressure: the age clock moves as each
    /// pass ends, so pages queued before the first pass ended are old
    /// enough and those faulted in since are not.
    pub cold_second_pass: bool,
    /// The evictor is the program's only thread, evicting in its own fault
    /// handler ([`Evict::sole_writer`]): while its batch is in flight no
    /// program thread or system call of theirs moves (unless the flaw
    /// [`Flaw::SoleWriterBesideAnother`] lets them).
    pub sole_writer: bool,
    pub aging_passes: u8,
    pub store_refusals: u8,
    /// The store's pages are in the swap file: read faults keep their
    /// slots (`Clean` pages).
    pub on_disk: bool,
    pub release: bool,
    /// The handler throttles the first missing fault it reads (maps the
    /// page, wakes the thread later).
    pub throttle: bool,
    pub mode: Mode,
    pub tun: Tunables,
}

fn page_addr(i: usize) -> usize {
    BASE + i * PAGE
}

impl Scenario {
    fn world(&self) -> World {
        let mut st = State::default();
        st.add_region(BASE, self.pages);
        let mut k = Kernel::default();
        let mut s = ModelStore {
            refusals: self.store_refusals,
            on_disk: self.on_disk,
            ..ModelStore::default()
        };
        let mut history = BTreeMap::new();
        for i in 0..self.pages {
            k.page(page_addr(i)).registered = true;
        }
        // Initial pages: set up through the state as the protocol leaves
        // them (resident pages are on the LRU).
        for (i, init) in self.initial.iter().enumerate() {
            let Some((v, swapped)) = *init else {
                continue;
            };
            history.insert(page_addr(i), vec![v]);
            if swapped {
                s.next += 1;
                s.slots.insert((StoreId::OWN, s.next), v);
                st.regions.get_mut(&BASE).unwrap().pages[i].state = PageState::Swapped {
                    store: StoreId::OWN,
                    slot: s.next,
                };
            } else {
                k.page(page_addr(i)).value = Some(v);
                set_resident(&mut st, i);
            }
        }
        let threads = self.programs.len() + self.syscalls.len();
        k.blocked = vec![None; threads];
        let mut actors = Vec::new();
        for (t, script) in self.programs.iter().enumerate() {
            actors.push(Actor::Program {
                tid: t as u8,
                script: script.clone(),
                pc: 0,
                own: BTreeMap::new(),
                discarding: None,
                serving: None,
            });
        }
        for (j, &(page, value)) in self.syscalls.iter().enumerate() {
            actors.push(Actor::Syscall {
                tid: (self.programs.len() + j) as u8,
                page,
                value,
                phase: SyscallPhase::Pinning(Pin::new(page_addr(page), PAGE)),
                serving: None,
            });
        }
        actors.push(Actor::Handler {
            fault: None,
            wp: None,
            deferred: Vec::new(),
        });
        if self.evict_cycles > 0 {
            actors.push(Actor::Evictor {
                cycles: self.evict_cycles,
                want: self.evict_want,
                cold_second: self.cold_second_pass,
                op: None,
            });
        }
        if self.aging_passes > 0 {
            actors.push(Actor::Ager {
                passes: self.aging_passes,
                op: None,
            });
        }
        if self.release {
            actors.push(Actor::Releaser {
                op: None,
                started: false,
            });
        }
        World {
            st,
            k,
            s,
            actors,
            history,
        }
    }
}

/// Marks page `i` resident and queued for reclaim.
fn set_resident(st: &mut State, i: usize) {
    st.install_resident(BASE, i);
}

enum Outcome {
    /// The actor took a step (or could not: `false`).
    Moved(bool),
    Violation(Violation),
}

impl World {
    fn done(&self, a: &Actor) -> bool {
        match a {
            Actor::Program {
                script,
                pc,
                serving,
                ..
            } => *pc == script.len() && serving.is_none(),
            Actor::Syscall { phase, .. } => *phase == SyscallPhase::Done,
            Actor::Handler {
                fault,
                wp,
                deferred,
            } => fault.is_none() && wp.is_none() && deferred.is_empty() && self.k.events.is_empty(),
            Actor::Evictor { cycles, op, .. } => *cycles == 0 && op.is_none(),
            Actor::Ager { passes, op } => *passes == 0 && op.is_none(),
            Actor::Releaser { op, started } => *started && op.is_none(),
        }
    }

    /// A user or kernel access by thread `tid`.
    fn access(
        &mut self,
        tid: u8,
        page: usize,
        write: Option<u8>,
        kernel: bool,
        mode: Mode,
    ) -> Result<Got, Violation> {
        let addr = page_addr(page);
        let p = *self.k.page(addr);
        if !p.registered {
            // Plain memory: the kernel maps a zeroed page on its own.
            let kp = self.k.page(addr);
            let v = kp.value.unwrap_or(0);
            kp.value = Some(write.unwrap_or(v));
            return Ok(Got::Value(v));
        }
        let faults = p.value.is_none() || (write.is_some() && p.wp);
        if faults {
            if kernel && mode != Mode::KernelFaults {
                return Err(Violation::Efault { page: addr });
            }
            if mode == Mode::InThread {
                return Ok(Got::Signal(p.value.is_some()));
            }
            let ev = (tid, addr, p.value.is_some());
            // More than two queued copies of one event only repeat states.
            if self.k.events.iter().filter(|e| **e == ev).count() < 2 {
                self.k.events.push_back(ev);
            }
            self.k.blocked[tid as usize] = Some(addr);
            return Ok(Got::Blocked);
        }
        let v = p.value.unwrap_or(0);
        if let Some(w) = write {
            self.k.page(addr).value = Some(w);
        }
        Ok(Got::Value(v))
    }

    /// One step of the fault `serving` that a thread serves in its SIGBUS
    /// handler; `false`: it waits for an operation in flight.
    fn serve(&mut self, sc: &Scenario, serving: &mut Option<Serving>) -> Result<bool, Violation> {
        let Some(op) = serving.take() else {
            return Ok(false);
        };
        let (step, op) = match op {
            Serving::Missing(mut o) => {
                let step = self.run_op(sc, false, |cx| o.step(cx))?;
                (step, Serving::Missing(o))
            }
            Serving::Wp(mut o) => {
                let step = self.run_op(sc, false, |cx| o.step(cx))?;
                (step, Serving::Wp(o))
            }
        };
        match step {
            Step::Next => *serving = Some(op),
            Step::Wait(seen) => {
                *serving = Some(op);
                if self.st.changes == seen {
                    return Ok(false);
                }
            }
            Step::Done(()) => {}
        }
        Ok(true)
    }

    fn check_read(&self, page: usize, read: u8, own_last: Option<u8>) -> Result<(), Violation> {
        let addr = page_addr(page);
        let ok = match own_last {
            Some(v) => read == v,
            None => read == 0 || self.history.get(&addr).is_some_and(|h| h.contains(&read)),
        };
        if ok {
            Ok(())
        } else {
            Err(Violation::BadRead { page: addr, read })
        }
    }

    /// Runs one step of actor `i`; `refuse` selects the store-refusing
    /// branch for an evictor whose next step stores.
    fn step(&mut self, i: usize, sc: &Scenario, refuse: bool) -> Outcome {
        let mut actor = self.actors[i].clone();
        let r = self.step_actor(&mut actor, sc, refuse);
        self.actors[i] = actor;
        r
    }

    fn run_op<T>(
        &mut self,
        sc: &Scenario,
        refuse: bool,
        f: impl FnOnce(&Cx<ModelEnv>) -> Result<Step<T>, protocol::Fatal>,
    ) -> Result<Step<T>, Violation> {
        let m = Mutex::new(std::mem::take(&mut self.st));
        let cv = Condvar::new();
        let env = ModelEnv::new(&mut self.k, &mut self.s, refuse, &sc.tun);
        let cx = Cx {
            state: &m,
            changed: &cv,
            env: &env,
            tun: &sc.tun,
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&cx)));
        let violation = env.violation.take();
        drop(env);
        self.st = m.into_inner().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = violation {
            return Err(v);
        }
        match r {
            Ok(Ok(step)) => Ok(step),
            Ok(Err(e)) => Err(Violation::Fatal(e.to_string())),
            Err(p) => Err(Violation::Fatal(format!(
                "panic: {}",
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            ))),
        }
    }

    /// A sole-writer eviction is in flight: the program's thread is the
    /// one evicting, so none of the program's threads and system calls
    /// moves until it ends.
    fn program_held(&self, sc: &Scenario) -> bool {
        sc.sole_writer
            && sc.tun.flaw != Some(crate::protocol::Flaw::SoleWriterBesideAnother)
            && self
                .actors
                .iter()
                .any(|a| matches!(a, Actor::Evictor { op: Some(_), .. }))
    }

    fn step_actor(&mut self, actor: &mut Actor, sc: &Scenario, refuse: bool) -> Outcome {
        if matches!(actor, Actor::Program { .. } | Actor::Syscall { .. }) && self.program_held(sc) {
            return Outcome::Moved(false);
        }
        macro_rules! tri {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(v) => return Outcome::Violation(v),
                }
            };
        }
        match actor {
            Actor::Program {
                tid,
                script,
                pc,
                own,
                discarding,
                serving,
            } => {
                if serving.is_some() {
                    return Outcome::Moved(tri!(self.serve(sc, serving)));
                }
                if *pc == script.len() || self.k.blocked[*tid as usize].is_some() {
                    return Outcome::Moved(false);
                }
                let (page, write) = match script[*pc] {
                    Access::Madvise(p) => {
                        let mut op = discarding
                            .take()
                            .unwrap_or_else(|| protocol::ProgramDiscard::new(page_addr(p), PAGE));
                        match tri!(self.run_op(sc, false, |cx| op.step(cx))) {
                            Step::Next => *discarding = Some(op),
                            Step::Wait(seen) => {
                                *discarding = Some(op);
                                if self.st.changes == seen {
                                    return Outcome::Moved(false);
                                }
                            }
                            Step::Done(()) => {
                                self.history.entry(page_addr(p)).or_default().push(0);
                                own.insert(p, 0);
                                *pc += 1;
                            }
                        }
                        return Outcome::Moved(true);
                    }
                    Access::Write(p, v) => (p, Some(v)),
                    Access::Read(p) => (p, None),
                    Access::Discard(p) => {
                        self.discard(p, own);
                        *pc += 1;
                        return Outcome::Moved(true);
                    }
                };
                match tri!(self.access(*tid, page, write, false, sc.mode)) {
                    Got::Blocked => {}
                    Got::Signal(wp) => {
                        *serving = Some(Serving::new(page_addr(page), write.is_some(), wp))
                    }
                    Got::Value(v) => {
                        if let Some(w) = write {
                            self.history.entry(page_addr(page)).or_default().push(w);
                            own.insert(page, w);
                        } else {
                            tri!(self.check_read(page, v, own.get(&page).copied()));
                        }
                        *pc += 1;
                    }
                }
                Outcome::Moved(true)
            }
            Actor::Syscall {
                tid,
                page,
                value,
                phase,
                serving,
            } => {
                if serving.is_some() {
                    return Outcome::Moved(tri!(self.serve(sc, serving)));
                }
                if self.k.blocked[*tid as usize].is_some() {
                    return Outcome::Moved(false);
                }
                match phase {
                    SyscallPhase::Pinning(pin) => {
                        let mut p = pin.clone();
                        match tri!(self.run_op(sc, false, |cx| p.step(cx))) {
                            Step::Next => *phase = SyscallPhase::Pinning(p),
                            Step::Wait(seen) => {
                                if self.st.changes == seen {
                                    return Outcome::Moved(false);
                                }
                                *phase = SyscallPhase::Pinning(p);
                            }
                            Step::Done(()) => *phase = SyscallPhase::Touch,
                        }
                    }
                    SyscallPhase::Touch => {
                        // In the faulting thread, a pin serves only the
                        // faults the page states predict
                        // (`Pager::fault_in`), and the kernel touches the
                        // rest: a page the states call writable must be.
                        if sc.mode == Mode::InThread {
                            // As `fault_in`: the op the state calls for,
                            // then a fresh look at the same page.
                            let addr = page_addr(*page);
                            let state = self
                                .st
                                .locate(addr)
                                .map(|(b, i)| self.st.regions[&b].pages[i])
                                .filter(|p| protocol::access_would_fault(p, value.is_some()));
                            match state {
                                None => *phase = SyscallPhase::Kernel,
                                Some(p) => {
                                    let wp = p.state.is_resident();
                                    *serving = Some(Serving::new(addr, value.is_some(), wp));
                                }
                            }
                            return Outcome::Moved(true);
                        }
                        // An atomic add of zero writes the value it reads.
                        let cur = self.k.pages.get(&page_addr(*page)).and_then(|p| p.value);
                        let touch = value.map(|_| cur.unwrap_or(0));
                        match tri!(self.access(*tid, *page, touch, false, sc.mode)) {
                            Got::Value(v) => {
                                if touch.is_some() && cur != Some(v) {
                                    // Raced a map: do the add again on what is there.
                                    return Outcome::Moved(true);
                                }
                                *phase = SyscallPhase::Kernel;
                            }
                            Got::Signal(wp) => {
                                *serving = Some(Serving::new(page_addr(*page), touch.is_some(), wp))
                            }
                            Got::Blocked => {}
                        }
                    }
                    SyscallPhase::Kernel => {
                        if let Got::Value(v) = tri!(self.access(*tid, *page, *value, true, sc.mode))
                        {
                            match value {
                                Some(w) => {
                                    self.history.entry(page_addr(*page)).or_default().push(*w)
                                }
                                None => tri!(self.check_read(*page, v, None)),
                            }
                            *phase = SyscallPhase::Unpin;
                        }
                    }
                    SyscallPhase::Unpin => {
                        protocol::unpin(&mut self.st, page_addr(*page), PAGE);
                        self.st.changes += 1;
                        *phase = SyscallPhase::Done;
                    }
                    SyscallPhase::Done => return Outcome::Moved(false),
                }
                Outcome::Moved(true)
            }
            Actor::Handler {
                fault,
                wp,
                deferred,
            } => {
                if let Some(op) = fault {
                    let mut o = op.clone();
                    match tri!(self.run_op(sc, false, |cx| o.step(cx))) {
                        Step::Next => *fault = Some(o),
                        Step::Wait(seen) => {
                            if self.st.changes == seen {
                                return Outcome::Moved(false);
                            }
                            *fault = Some(o);
                        }
                        Step::Done(()) => {
                            if !o.wake {
                                deferred.push(o.addr);
                            }
                            *fault = None;
                        }
                    }
                    return Outcome::Moved(true);
                }
                if let Some(op) = wp {
                    let mut o = op.clone();
                    match tri!(self.run_op(sc, false, |cx| o.step(cx))) {
                        Step::Next => *wp = Some(o),
                        Step::Wait(_) => unreachable!("write-protect faults do not wait"),
                        Step::Done(()) => *wp = None,
                    }
                    return Outcome::Moved(true);
                }
                // `refuse` picks the throttled branch: a missing fault whose
                // thread is woken later, by the step below.
                if refuse {
                    if let Some(addr) = deferred.pop() {
                        self.k.wake_range(addr, PAGE);
                        return Outcome::Moved(true);
                    }
                    return Outcome::Moved(false);
                }
                let Some((_, addr, is_wp)) = self.k.events.pop_front() else {
                    return Outcome::Moved(false);
                };
                if is_wp {
                    *wp = Some(WpFault::new(addr));
                } else if sc.throttle && deferred.is_empty() {
                    *fault = Some(MissingFault::new(addr, false, false).defer_wake());
                } else {
                    *fault = Some(MissingFault::new(addr, false, false));
                }
                Outcome::Moved(true)
            }
            Actor::Evictor {
                cycles,
                want,
                cold_second,
                op,
            } => {
                let mut o = match op.take() {
                    Some(o) => o,
                    None if *cycles > 0 => {
                        *cycles -= 1;
                        let op = if *cold_second && self.st.clock == 1 {
                            Evict::cold(*want, 1)
                        } else {
                            Evict::new(*want)
                        };
                        if sc.sole_writer {
                            op.sole_writer()
                        } else {
                            op
                        }
                    }
                    None => return Outcome::Moved(false),
                };
                match tri!(self.run_op(sc, refuse, |cx| o.step(cx))) {
                    Step::Next => *op = Some(o),
                    Step::Wait(_) => unreachable!("eviction does not wait"),
                    Step::Done(_) => self.st.clock = self.st.clock.wrapping_add(1),
                }
                Outcome::Moved(true)
            }
            Actor::Ager { passes, op } => {
                let mut o = match op.take() {
                    Some(o) => o,
                    None if *passes > 0 => {
                        *passes -= 1;
                        Age::new()
                    }
                    None => return Outcome::Moved(false),
                };
                match tri!(self.run_op(sc, false, |cx| o.step(cx))) {
                    Step::Next => *op = Some(o),
                    Step::Wait(_) => unreachable!("aging does not wait"),
                    Step::Done(_) => {}
                }
                Outcome::Moved(true)
            }
            Actor::Releaser { op, started } => {
                let mut o = match op.take() {
                    Some(o) => o,
                    None if !*started => {
                        *started = true;
                        let id = self.st.regions[&BASE].id;
                        Release::into_plain(BASE, id)
                    }
                    None => return Outcome::Moved(false),
                };
                match tri!(self.run_op(sc, false, |cx| o.step(cx))) {
                    Step::Next => *op = Some(o),
                    Step::Wait(seen) => {
                        if self.st.changes == seen {
                            *op = Some(o);
                            return Outcome::Moved(false);
                        }
                        *op = Some(o);
                    }
                    Step::Done(()) => {
                        // The runtime unregisters the range after forgetting
                        // it: threads waiting there are woken.
                        for i in 0..sc.pages {
                            self.k.page(page_addr(i)).registered = false;
                            self.k.page(page_addr(i)).wp = false;
                        }
                        self.k.wake_range(BASE, sc.pages * PAGE);
                    }
                }
                Outcome::Moved(true)
            }
        }
    }

    /// A program's raw discard of `page` (see [`Access::Discard`]).
    fn discard(&mut self, page: usize, own: &mut BTreeMap<usize, u8>) {
        let addr = page_addr(page);
        let settled = self
            .st
            .regions
            .get(&BASE)
            .is_none_or(|r| r.pages[page].state.is_resident());
        if !settled {
            return;
        }
        let kp = self.k.page(addr);
        kp.value = None;
        kp.wp = false;
        kp.discarded = kp.registered;
        self.history.entry(addr).or_default().push(0);
        own.insert(page, 0);
    }

    /// Checked after every step: a `Clean` page is unmapped (discarded) or
    /// mapped write-protected with its slot's bytes; and no slot is named
    /// by two pages.
    fn check_clean(&self) -> Result<(), Violation> {
        let Some(r) = self.st.regions.get(&BASE) else {
            return Ok(());
        };
        let mut named = HashSet::new();
        for (i, p) in r.pages.iter().enumerate() {
            let slot = match p.state {
                PageState::Clean { slot } => {
                    let kp = self.k.pages.get(&page_addr(i)).copied().unwrap_or_default();
                    let stored = self.s.slots.get(&(StoreId::OWN, slot)).copied();
                    if kp.value.is_some() && (!kp.wp || kp.value != stored) {
                        return Err(Violation::CleanChanged(page_addr(i)));
                    }
                    (StoreId::OWN, slot)
                }
                PageState::Swapped { store, slot } => (store, slot),
                _ => continue,
            };
            if !named.insert(slot) {
                return Err(Violation::SlotShared(page_addr(i)));
            }
        }
        Ok(())
    }

    /// The end state: every page holds the last value written.
    fn check_end(&self, sc: &Scenario) -> Result<(), Violation> {
        if self.st.in_flight != 0
            || self
                .st
                .regions
                .values()
                .any(|r| r.in_flight != 0 || r.pages.iter().any(|p| p.state.in_flight()))
        {
            return Err(Violation::LeftInFlight);
        }
        for i in 0..sc.pages {
            let addr = page_addr(i);
            let Some(&wrote) = self.history.get(&addr).and_then(|h| h.last()) else {
                continue;
            };
            let kp = self.k.pages.get(&addr).copied().unwrap_or_default();
            let state = self.st.regions.get(&BASE).map(|r| r.pages[i].state);
            if kp.value.is_some() && matches!(state, Some(PageState::Swapped { .. })) {
                return Err(Violation::SwappedMapped(addr));
            }
            let has = match kp.value {
                Some(v) => v,
                None => match self.st.regions.get(&BASE).map(|r| r.pages[i].state) {
                    Some(PageState::Swapped { store, slot }) => {
                        self.s.slots.get(&(store, slot)).copied().unwrap_or(0)
                    }
                    _ => 0,
                },
            };
            if has != wrote {
                return Err(Violation::LostWrite {
                    page: addr,
                    has,
                    wrote,
                });
            }
        }
        let named: HashSet<(StoreId, Slot)> = self
            .st
            .regions
            .values()
            .flat_map(|r| r.pages.iter())
            .filter_map(|p| match p.state {
                PageState::Swapped { store, slot } => Some((store, slot)),
                PageState::Clean { slot } => Some((StoreId::OWN, slot)),
                _ => None,
            })
            .collect();
        if let Some(&(_, slot)) = self.s.slots.keys().find(|k| !named.contains(k)) {
            return Err(Violation::LeakedSlot(slot));
        }
        Ok(())
    }
}

fn fingerprint(w: &World) -> u128 {
    let mut a = std::collections::hash_map::DefaultHasher::new();
    w.hash(&mut a);
    let mut b = std::collections::hash_map::DefaultHasher::new();
    0x9e37_79b9_7f4a_7c15_u64.hash(&mut b);
    w.hash(&mut b);
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

/// Explores every interleaving of `sc`; the number of distinct states, or
/// the first violation found (its interleaving is printed to stderr).
pub(crate) fn check(sc: &Scenario) -> Result<usize, Violation> {
    let mut seen: HashSet<u128> = HashSet::new();
    // Each state with the path that reached it: (actor, refused) per step.
    let mut stack = vec![(sc.world(), Vec::<(u8, bool)>::new())];
    while let Some((w, path)) = stack.pop() {
        if !seen.insert(fingerprint(&w)) {
            continue;
        }
        let mut moved = false;
        for i in 0..w.actors.len() {
            // `refuse` is the evictor's store-refused branch, and the
            // handler's step that wakes a throttled fault's thread.
            let storing = (matches!(&w.actors[i], Actor::Evictor { op: Some(_), .. })
                && w.s.refusals > 0)
                || matches!(&w.actors[i], Actor::Handler { deferred, .. } if !deferred.is_empty());
            for refuse in [false, true] {
                if refuse && !storing {
                    continue;
                }
                let mut n = w.clone();
                let mut p = path.clone();
                p.push((i as u8, refuse));
                match n.step(i, sc, refuse) {
                    Outcome::Moved(false) => {}
                    Outcome::Moved(true) => {
                        // A refusal that was not used is the same branch.
                        let handler = matches!(&w.actors[i], Actor::Handler { .. });
                        if refuse && !handler && n.s.refusals == w.s.refusals {
                            continue;
                        }
                        if let Err(v) = n.check_clean() {
                            print_trace(sc, &p, &v);
                            return Err(v);
                        }
                        moved = true;
                        stack.push((n, p));
                    }
                    Outcome::Violation(v) => {
                        print_trace(sc, &p, &v);
                        return Err(v);
                    }
                }
            }
        }
        if !moved {
            let stuck: Vec<String> = w
                .actors
                .iter()
                .filter(|a| !w.done(a))
                .map(|a| format!("{a:?}"))
                .collect();
            let end = if stuck.is_empty() {
                w.check_end(sc)
            } else {
                Err(Violation::Stuck(stuck.join("; ")))
            };
            if let Err(v) = end {
                print_trace(sc, &path, &v);
                return Err(v);
            }
        }
    }
    Ok(seen.len())
}

/// Replays `path` from the start, printing each step's actor as it was
/// before the step.
fn print_trace(sc: &Scenario, path: &[(u8, bool)], v: &Violation) {
    let mut w = sc.world();
    eprintln!("counterexample ({} steps) ending in: {v}", path.len());
    for (n, &(i, refuse)) in path.iter().enumerate() {
        let before = format!("{:?}", w.actors[i as usize]);
        let _ = w.step(i as usize, sc, refuse);
        let pages: Vec<String> =
            w.st.regions
                .get(&BASE)
                .map(|r| r.pages.iter().map(|p| format!("{:?}", p.state)).collect())
                .unwrap_or_default();
        let kernel: Vec<String> = (0..sc.pages)
            .map(|j| {
                let k = w.k.pages.get(&page_addr(j)).copied().unwrap_or_default();
                format!("{:?}{}", k.value, if k.wp { "wp" } else { "" })
            })
            .collect();
        eprintln!(
            "{n:3}. actor {i}{} {before}\n     -> states {pages:?} kernel {kernel:?} events {:?}",
            if refuse { " (store refuses)" } else { "" },
            w.k.events
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Flaw;
    use Access::{Discard, Madvise, Read, Write};

    fn tun(folio: usize, cluster: u32, flaw: Option<Flaw>) -> Tunables {
        Tunables {
            folio_pages: folio,
            page_cluster: cluster,
            workingset_pages: 1,
            probation_pages: 0,
            unmap_group_pages: 2,
            faults_block: true,
            flaw,
        }
    }

    /// Two threads write pages they touch first, the reclaimer evicts, an
    /// ager write-protects: the first-touch path, where a write was once lost.
    fn first_touch(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 2,
            initial: vec![None, None],
            programs: vec![vec![Write(0, 1), Read(0)], vec![Write(1, 3), Read(1)]],
            syscalls: vec![],
            evict_cycles: 2,
            evict_want: 2,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 1,
            store_refusals: 0,
            on_disk: false,
            release: false,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(2, 0, flaw),
        }
    }

    /// Swapped pages faulted back with fault-around, rewritten while the
    /// reclaimer evicts and the ager protects.
    fn swap_in(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 2,
            initial: vec![Some((5, true)), Some((6, true))],
            programs: vec![vec![Read(0), Write(0, 1), Read(0)], vec![Read(1)]],
            syscalls: vec![],
            evict_cycles: 2,
            evict_want: 2,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 1,
            store_refusals: 0,
            on_disk: false,
            release: false,
            throttle: true,
            mode: Mode::KernelFaults,
            tun: tun(2, 1, flaw),
        }
    }

    /// Write tracking: a resident page written while aging protects it and
    /// the reclaimer evicts it.
    fn tracking(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 1,
            initial: vec![Some((5, false))],
            programs: vec![vec![Write(0, 1), Read(0), Write(0, 2)]],
            syscalls: vec![],
            evict_cycles: 2,
            evict_want: 1,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 2,
            store_refusals: 1,
            on_disk: false,
            release: false,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(1, 0, flaw),
        }
    }

    /// Two one-page runs in one reclaim batch: stored one by one, unmapped
    /// together, then published one by one; the store may refuse one, and
    /// both are written by two threads while the ager protects.
    fn batch(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 2,
            initial: vec![Some((5, false)), Some((6, true))],
            programs: vec![vec![Write(0, 1), Read(0)], vec![Read(1), Write(1, 2)]],
            syscalls: vec![],
            evict_cycles: 2,
            evict_want: 2,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 1,
            store_refusals: 1,
            on_disk: false,
            release: false,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(1, 0, flaw),
        }
    }

    /// A system call writing into a page (read(2) into a buffer) with a
    /// user-mode-only userfaultfd: pinned, it must never see EFAULT,
    /// whatever the page's state and whatever reclaim and aging do.
    fn syscall(initial: Option<(u8, bool)>, flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 1,
            initial: vec![initial],
            programs: vec![],
            syscalls: vec![(0, Some(9))],
            evict_cycles: 2,
            evict_want: 1,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 2,
            store_refusals: 0,
            on_disk: false,
            release: false,
            throttle: true,
            mode: Mode::UserModeOnly,
            tun: tun(1, 0, flaw),
        }
    }

    /// A region released into plain memory while a thread faults on it and
    /// the reclaimer evicts.
    fn release() -> Scenario {
        Scenario {
            pages: 2,
            initial: vec![Some((5, true)), Some((6, false))],
            programs: vec![vec![Read(0), Write(1, 2), Read(1)]],
            syscalls: vec![],
            evict_cycles: 1,
            evict_want: 2,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 0,
            store_refusals: 0,
            on_disk: false,
            release: true,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(2, 1, None),
        }
    }

    /// A region released into plain memory while a thread first-touches a
    /// page of it (numpy's import found this: the fill mapped into a range
    /// already unregistered).
    fn release_during_first_touch() -> Scenario {
        Scenario {
            pages: 2,
            initial: vec![None, Some((6, true))],
            programs: vec![vec![Write(0, 1), Read(0), Read(1)]],
            syscalls: vec![],
            evict_cycles: 0,
            evict_want: 1,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 0,
            store_refusals: 0,
            on_disk: false,
            release: true,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(1, 0, None),
        }
    }

    /// Pages swapped in from the swap file keep their slots (`Clean`): one
    /// is written, one discarded behind the runtime's back and written
    /// again, while the reclaimer evicts (clean runs without a store) and
    /// the ager protects.
    fn clean(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 2,
            initial: vec![Some((5, true)), Some((6, true))],
            programs: vec![
                vec![Read(0), Write(0, 1)],
                vec![Read(1), Discard(1), Write(1, 2)],
            ],
            syscalls: vec![],
            evict_cycles: 2,
            evict_want: 2,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 0,
            store_refusals: 0,
            on_disk: true,
            release: false,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(1, 1, flaw),
        }
    }

    /// A discarded clean page that nobody touches again before reclaim
    /// takes it: it must come back as zeros, not as its slot's bytes.
    fn clean_discarded(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 1,
            initial: vec![Some((5, true))],
            programs: vec![vec![Read(0), Discard(0)], vec![]],
            syscalls: vec![],
            evict_cycles: 2,
            evict_want: 1,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 0,
            store_refusals: 0,
            on_disk: true,
            release: true,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(1, 0, flaw),
        }
    }

    /// A page first touched by a thread while an aging pass protects the
    /// resident pages on both sides of it with one call, then written by
    /// a pinned system call: the fill may land before the call passes it,
    /// so the pass must leave it armed, or the pin trusts it writable and
    /// the kernel's write meets the protection (EFAULT in-thread).
    fn filled_during_aging(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 3,
            initial: vec![Some((5, false)), None, Some((6, false))],
            programs: vec![vec![Write(1, 7)]],
            syscalls: vec![(1, Some(9))],
            evict_cycles: 0,
            aging_passes: 1,
            mode: Mode::InThread,
            ..discarded_while_evicted(flaw)
        }
    }

    /// A page armed by aging, discarded behind the runtime's back and
    /// mapped again as zeros by its next fault (writable, yet still armed
    /// in the state), then written while reclaim takes it: eviction must
    /// not trust the stale mark for the protection it skips.
    fn armed_discarded(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            programs: vec![vec![Discard(0), Read(0), Write(0, 2), Read(0)]],
            aging_passes: 1,
            ..discarded_while_evicted(flaw)
        }
    }

    /// A resident page discarded behind the runtime's back while reclaim
    /// takes it, then written: the evictor reads zeros, and the write must
    /// wait for the eviction rather than land on a page about to go.
    fn discarded_while_evicted(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 1,
            initial: vec![Some((5, false))],
            programs: vec![vec![Discard(0), Write(0, 2)]],
            syscalls: vec![],
            evict_cycles: 1,
            evict_want: 1,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 0,
            store_refusals: 0,
            on_disk: false,
            release: false,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(1, 0, flaw),
        }
    }

    /// The program discards (`madvise` through the preload) a resident
    /// page and a page read back from the swap file (`Clean`) while the
    /// reclaimer evicts and the ager protects: each reads zeros after its
    /// discard, keeps the write that follows, and no slot leaks.
    fn program_discard(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 2,
            initial: vec![Some((5, false)), Some((6, true))],
            programs: vec![
                vec![Madvise(0), Read(0), Write(0, 1)],
                vec![Read(1), Madvise(1), Read(1)],
            ],
            syscalls: vec![],
            evict_cycles: 2,
            evict_want: 2,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 1,
            store_refusals: 0,
            on_disk: true,
            release: false,
            throttle: false,
            mode: Mode::KernelFaults,
            tun: tun(1, 0, flaw),
        }
    }

    /// A discard of a page a system call is using (user-mode-only: the
    /// kernel must never find it unmapped) while the reclaimer evicts.
    fn program_discard_of_a_pinned_page(flaw: Option<Flaw>) -> Scenario {
        Scenario {
            pages: 1,
            initial: vec![Some((5, true))],
            programs: vec![vec![Madvise(0), Write(0, 2), Read(0)]],
            syscalls: vec![(0, None)],
            evict_cycles: 1,
            evict_want: 1,
            cold_second_pass: false,
            sole_writer: false,
            aging_passes: 0,
            store_refusals: 0,
            on_disk: false,
            release: true,
            throttle: false,
            mode: Mode::UserModeOnly,
            tun: tun(1, 0, flaw),
        }
    }

    fn passes(name: &str, sc: Scenario) {
        match check(&sc) {
            Ok(states) => {
                eprintln!("{name}: {states} states, no violation");
                assert!(states > 100, "{name}: only {states} states explored");
            }
            Err(v) => panic!("{name}: {v}"),
        }
    }

    fn fails(name: &str, sc: Scenario) -> Violation {
        let v = check(&sc).expect_err("the checker must catch the flaw");
        eprintln!("{name}: {v}");
        v
    }

    /// The checker catches the flaw of `sc` as a lost write or a wrong read.
    fn loses_a_write(name: &str, sc: Scenario) {
        let v = fails(name, sc);
        assert!(
            matches!(v, Violation::LostWrite { .. } | Violation::BadRead { .. }),
            "{v:?}"
        );
    }

    /// `sc` with faults served in the faulting threads (SIGBUS), with no
    /// throttling (a thread served in its own handler throttles itself
    /// after the operation, outside the protocol).
    fn in_thread(mut sc: Scenario) -> Scenario {
        sc.mode = Mode::InThread;
        sc.tun.faults_block = false;
        sc.throttle = false;
        sc
    }

    /// `sc` with the evictor the program's only thread, in its own fault
    /// handler: faults served in the faulting thread, as only there.
    fn sole_writer(sc: Scenario) -> Scenario {
        in_thread(Scenario {
            sole_writer: true,
            ..sc
        })
    }

    #[test]
    fn publishing_without_the_wake_where_faults_block_leaves_a_writer_asleep() {
        // Where faults sleep in the kernel, removing the unmapped run's
        // protection is the call that wakes its writers: without it one
        // sleeps on for good. Faults served in the faulting thread
        // (`faults_block: false`, the test above) have nothing to wake.
        let mut sc = tracking(None);
        sc.tun.faults_block = false;
        let v = fails("no wake where faults block", sc);
        assert!(matches!(v, Violation::Stuck(_)), "{v:?}");
    }

    #[test]
    fn faults_served_in_the_faulting_thread_are_safe_in_every_interleaving() {
        passes("in thread: first touch", in_thread(first_touch(None)));
        passes("in thread: swap-in", in_thread(swap_in(None)));
        passes("in thread: write tracking", in_thread(tracking(None)));
        passes("in thread: batched eviction", in_thread(batch(None)));
        passes("in thread: release", in_thread(release()));
        passes(
            "in thread: release during first touch",
            in_thread(release_during_first_touch()),
        );
        passes("in thread: clean pages", in_thread(clean(None)));
        passes(
            "in thread: clean page discarded",
            in_thread(clean_discarded(None)),
        );
        // With a reader beside the writer: one thread alone has too few
        // interleavings for the check's floor.
        let mut sc = in_thread(discarded_while_evicted(None));
        sc.programs.push(vec![Read(0)]);
        passes("in thread: discarded while evicted", sc);
        passes(
            "in thread: program discard",
            in_thread(program_discard(None)),
        );
        for init in [None, Some((5, false)), Some((5, true))] {
            passes(
                &format!("in thread: syscall on {init:?}"),
                in_thread(syscall(init, None)),
            );
        }
    }

    #[test]
    fn the_checker_catches_the_known_flaws_with_faults_served_in_thread() {
        loses_a_write(
            "in thread: unlocked unprotect",
            in_thread(tracking(Some(Flaw::UnprotectUnlocked))),
        );
        loses_a_write(
            "in thread: span protects its first run only",
            in_thread(batch(Some(Flaw::SpanProtectsFirstRunOnly))),
        );
        let v = fails(
            "in thread: pin without settle",
            in_thread(syscall(Some((5, false)), Some(Flaw::PinWithoutSettle))),
        );
        assert!(matches!(v, Violation::Efault { .. }), "{v:?}");
    }

    #[test]
    fn first_touch_is_safe_in_every_interleaving() {
        passes("first touch", first_touch(None));
    }

    #[test]
    fn swap_in_with_fault_around_is_safe_in_every_interleaving() {
        passes("swap-in", swap_in(None));
    }

    #[test]
    fn write_tracking_is_safe_in_every_interleaving() {
        passes("write tracking", tracking(None));
    }

    #[test]
    fn batched_eviction_is_safe_in_every_interleaving() {
        passes("batched eviction", batch(None));
        // Groups of one page: the two runs still form one group, as the
        // second continues the first.
        let mut sc = batch(None);
        sc.tun.unmap_group_pages = 1;
        passes("batched eviction, groups of one page", sc);
    }

    #[test]
    fn pinned_system_calls_never_fault_in_the_kernel() {
        for init in [None, Some((5, false)), Some((5, true))] {
            passes(&format!("syscall on {init:?}"), syscall(init, None));
        }
    }

    #[test]
    fn release_into_plain_memory_keeps_every_byte() {
        passes("release", release());
        passes("release during first touch", release_during_first_touch());
    }

    #[test]
    fn clean_pages_keep_their_slots_safely_in_every_interleaving() {
        passes("clean pages", clean(None));
        passes("clean page discarded", clean_discarded(None));
        let mut sc = clean_discarded(None);
        sc.release = false;
        sc.programs = vec![vec![Read(0), Discard(0)], vec![Read(0)]];
        passes("clean page discarded, read again", sc);
    }

    #[test]
    fn a_system_call_into_a_clean_page_never_faults_in_the_kernel() {
        let mut sc = syscall(Some((5, true)), None);
        sc.on_disk = true;
        passes("syscall on a clean page", sc);
    }

    #[test]
    fn the_programs_discard_is_safe_in_every_interleaving() {
        passes("program discard", program_discard(None));
        passes(
            "program discard of a pinned page",
            program_discard_of_a_pinned_page(None),
        );
        fails(
            "discard ignoring operations in flight",
            program_discard(Some(Flaw::DiscardIgnoresInFlight)),
        );
    }

    #[test]
    fn a_write_after_a_discard_during_eviction_is_kept() {
        passes("discarded while evicted", discarded_while_evicted(None));
        let v = fails(
            "evictor maps zeros writable",
            discarded_while_evicted(Some(Flaw::EvictorZerosWritable)),
        );
        assert!(matches!(v, Violation::LostWrite { .. }), "{v:?}");
    }

    #[test]
    fn a_clean_page_left_clean_after_a_write_loses_it() {
        let v = fails("clean after write", clean(Some(Flaw::CleanAfterWrite)));
        assert!(
            matches!(
                v,
                Violation::CleanChanged(_)
                    | Violation::LostWrite { .. }
                    | Violation::BadRead { .. }
            ),
            "{v:?}"
        );
    }

    #[test]
    fn an_armed_run_is_evicted_under_aging_s_protection_only_where_it_stands() {
        passes("armed, discarded behind", armed_discarded(None));
        passes("in thread: armed", in_thread(armed_discarded(None)));
        passes("armed in a batch", batch(None));
        loses_a_write(
            "armed eviction unchecked",
            armed_discarded(Some(Flaw::ArmedUnchecked)),
        );
    }

    #[test]
    fn a_page_mapped_while_aging_protects_around_it_is_left_armed() {
        passes("filled during aging", filled_during_aging(None));
        let v = fails(
            "aging leaves gaps unarmed",
            filled_during_aging(Some(Flaw::AgingLeavesGapsUnarmed)),
        );
        assert!(matches!(v, Violation::Efault { .. }), "{v:?}");
    }

    #[test]
    fn evicting_a_discarded_clean_page_unchecked_revives_old_bytes() {
        loses_a_write(
            "clean eviction unchecked",
            clean_discarded(Some(Flaw::CleanUnchecked)),
        );
    }

    #[test]
    fn the_pre_fix_first_touch_loses_a_write() {
        let v = fails(
            "resident before mapped",
            first_touch(Some(Flaw::ResidentBeforeMapped)),
        );
        assert!(
            matches!(
                v,
                Violation::LostWrite { .. }
                    | Violation::BadRead { .. }
                    | Violation::EvictedUnmapped(_)
            ),
            "{v:?}"
        );
    }

    #[test]
    fn unprotecting_and_publishing_before_unmapping_loses_a_write() {
        let v = fails(
            "unprotect before unmap",
            tracking(Some(Flaw::UnprotectBeforeUnmap)),
        );
        assert!(
            matches!(
                v,
                Violation::LostWrite { .. } | Violation::BadRead { .. } | Violation::Fatal(_)
            ),
            "{v:?}"
        );
    }

    #[test]
    fn a_span_protect_that_covers_its_first_run_only_loses_a_write() {
        // The batch's two pages are neighbours: one call protects both.
        // If it protected the first only, page 1's write could land
        // between its copy and its unmap.
        loses_a_write(
            "span protects its first run only",
            batch(Some(Flaw::SpanProtectsFirstRunOnly)),
        );
    }

    #[test]
    fn cold_eviction_before_pressure_loses_no_write() {
        for (name, sc) in [
            ("swap-in", swap_in(None)),
            ("write tracking", tracking(None)),
            ("batched eviction", batch(None)),
            ("clean pages", clean(None)),
        ] {
            let sc = Scenario {
                cold_second_pass: true,
                ..sc
            };
            passes(&format!("cold second pass: {name}"), sc.clone());
            passes(
                &format!("in thread, cold second pass: {name}"),
                in_thread(sc),
            );
        }
    }

    #[test]
    fn probation_of_pages_swapped_in_loses_no_write() {
        // Pages swapped in queue on probation and leave first (after one
        // eviction; here every refault is far enough): the same safety in
        // every interleaving, and other states than the LRU alone reaches
        // (the probation queue is part of the state). Faults served in the
        // faulting thread (the default) for every scenario; where faults
        // block, the smallest (the others' blocking variants explore
        // millions of states for the same pick).
        let with_probation = |mut sc: Scenario| {
            sc.tun.probation_pages = 1;
            sc
        };
        for (name, sc) in [
            ("swap-in", swap_in(None)),
            ("write tracking", tracking(None)),
            ("batched eviction", batch(None)),
            ("clean pages", clean(None)),
        ] {
            let sc = in_thread(sc);
            let lru_only = check(&sc).unwrap_or_else(|v| panic!("{name}: {v}"));
            let states =
                check(&with_probation(sc)).unwrap_or_else(|v| panic!("probation, {name}: {v}"));
            eprintln!("in thread, probation: {name}: {states} states (LRU only: {lru_only})");
            assert!(
                states > 100 && states != lru_only,
                "{name}: {states} states"
            );
        }
        passes("probation: write tracking", with_probation(tracking(None)));
        // A cold pass takes old pages on probation too.
        for (name, sc) in [("swap-in", swap_in(None)), ("clean pages", clean(None))] {
            let sc = Scenario {
                cold_second_pass: true,
                ..with_probation(sc)
            };
            passes(
                &format!("in thread, probation, cold second pass: {name}"),
                in_thread(sc),
            );
        }
        // And the checker sees its pick: one that takes a pinned page
        // leaves a system call's buffer unmapped under the kernel.
        let v = fails(
            "probation ignores pins",
            with_probation(syscall(Some((5, false)), Some(Flaw::ProbationIgnoresPins))),
        );
        assert!(matches!(v, Violation::Efault { .. }), "{v:?}");
    }

    #[test]
    fn eviction_by_the_programs_only_thread_needs_no_protection() {
        // The evictor is the program's thread, in its fault handler: no
        // program access or system call moves while its batch is in
        // flight, and no run is write-protected.
        for (name, sc) in [
            ("swap-in", swap_in(None)),
            ("write tracking", tracking(None)),
            ("batched eviction", batch(None)),
            ("clean pages", clean(None)),
            ("a system call's page", syscall(Some((3, false)), None)),
        ] {
            passes(&format!("sole writer, in thread: {name}"), sole_writer(sc));
        }
    }

    #[test]
    fn eviction_without_protection_beside_another_thread_loses_a_write() {
        // What the runtime's check of the process's threads is for.
        for (name, sc) in [
            (
                "batched eviction",
                batch(Some(Flaw::SoleWriterBesideAnother)),
            ),
            (
                "write tracking",
                tracking(Some(Flaw::SoleWriterBesideAnother)),
            ),
        ] {
            loses_a_write(
                &format!("sole writer beside another: {name}"),
                sole_writer(sc),
            );
        }
    }

    #[test]
    fn a_batch_that_leaves_a_run_mapped_is_caught() {
        // The default groups of two pages, and groups of one page, where
        // only a continued run makes a batch of two.
        for group in [2, 1] {
            let mut sc = batch(Some(Flaw::BatchUnmapsLastRunOnly));
            sc.tun.unmap_group_pages = group;
            let v = fails(
                &format!("batch unmaps its last run only, groups of {group}"),
                sc,
            );
            assert!(
                matches!(
                    v,
                    Violation::SwappedMapped(_)
                        | Violation::LostWrite { .. }
                        | Violation::BadRead { .. }
                        | Violation::Fatal(_)
                ),
                "groups of {group}: {v:?}"
            );
        }
    }

    #[test]
    fn unprotecting_outside_the_lock_loses_a_write() {
        loses_a_write(
            "unlocked unprotect",
            tracking(Some(Flaw::UnprotectUnlocked)),
        );
    }

    #[test]
    fn pins_that_do_not_settle_or_aging_that_ignores_them_give_efault() {
        let v = fails(
            "pin without settle",
            syscall(Some((5, false)), Some(Flaw::PinWithoutSettle)),
        );
        assert!(matches!(v, Violation::Efault { .. }), "{v:?}");
        let v = fails(
            "aging ignores pins",
            syscall(Some((5, false)), Some(Flaw::AgingIgnoresPins)),
        );
        assert!(matches!(v, Violation::Efault { .. }), "{v:?}");
    }
}
