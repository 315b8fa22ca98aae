//! Model check of the pager: its own code (fault service, event service,
//! eviction with its injected discard) run against a model of the kernel
//! and of the target's threads ([`ModelOs`]), over many schedules.
//!
//! Nothing of the pager is described again here: [`Pager`] runs as it does
//! under `uzswap run`, its [`Os`] answered by the model. Only the world
//! around it is modelled:
//!
//! * **The kernel.** Each page of one registered range is mapped (holding
//!   one byte value, repeated over the page) or not, and write-protected or
//!   not. A thread's access to an unmapped page, or its write to a
//!   protected one, queues a fault event and blocks the thread until a
//!   copy, zero page, unprotect or wake covers the page (which takes its
//!   event off the queue if the pager has not read it); it then makes the
//!   access again. `UFFDIO_COPY` and `UFFDIO_ZEROPAGE` refuse a mapped page
//!   (`EEXIST`; a call that mapped some pages first returns `EAGAIN` and
//!   wakes those), and every call refuses with `EAGAIN` while a remove
//!   event is queued and not read (the kernel's `mmap_changing`).
//! * **The program's discard** (`madvise(MADV_DONTNEED)` of one page)
//!   queues a remove event and waits until the pager has read it; the page
//!   is zapped after that, in a step of its own (the kernel drops the mmap
//!   lock between the two). **Its `munmap`** of a page takes the page out
//!   of its mapping at once, then queues an unmap event and waits until it
//!   is read; the pager's calls on the page then fail (`ENOENT`, a read
//!   with `EIO`), and a discard over it discards the mapped parts and
//!   fails with `ENOMEM`, as the kernel's `madvise` and `process_madvise`
//!   do. **Its `mremap`** of a page to an address with no mapping moves
//!   the page (its contents and protection) and the registration, then
//!   queues a remap event and waits until it is read.
//! * **Stopping a thread** (`ptrace`) interrupts a fault it is blocked in
//!   (its event leaves the queue if not read yet, and the thread faults
//!   again once let go) but not a discard waiting for its event (the pager
//!   serves events while it waits). The stopped thread runs the
//!   pager's injected calls: `process_madvise` and `madvise` discard each
//!   range as the program's own discard does, remove event first.
//! * **Schedules.** At every call the pager makes to the kernel, and between
//!   the pager's operations, the program's threads may take steps: a
//!   seeded random schedule chooses which and how many (stateless, as
//!   loom's or shuttle's random scheduler; the pager's state is not
//!   cloneable, so schedules are replayed from the start, not explored
//!   from remembered states). Every scenario runs [`SCHEDULES`] seeds.
//!
//! Checked in every run: each read of the program returns the last value
//! it wrote, or zero after its own discard (either, where a discard of the
//! page raced with a write to it: the discard takes effect somewhere
//! between its call and its return); the pager reports no error; no thread
//! is left blocked; at the end every page reads back as last written
//! (through the pager's faults, or, in a quarter of the schedules, once
//! [`Pager::release`] has given every page back); and the pager's account
//! matches the kernel: a page is resident for it exactly where it is
//! mapped. A read of the program's memory by the pager fails at once on a
//! page that is not mapped, as `/proc/PID/mem` does (`RealOs::read_mem`).
//! Each [`Flaw`] must be caught, and the schedules must reach the pager's
//! rarer paths (refused fills retried, runs left out of a batch, discards
//! racing the pager's own).
//!
//! Not modelled: `fork` (its event), `execve`, the syscall guard of
//! unprivileged runs, folio swap-in (16-page folios; the scenarios have at
//! most 6 pages), the stopped thread's `rseq` area, and cold passes
//! (eviction here is the pressure path's `evict_batch`).

use super::os::{Os, Seize, Stopped};
use super::{Flaw, Pager, PagerConfig};
use crate::inject::InjectError;
use common::PAGE_SIZE;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use userfaultfd::{Event, FaultKind, ReadWrite};

/// Where the registered range starts.
const BASE: usize = 0x10_0000;
/// The scratch page the pager maps in the target (never registered).
const SCRATCH: usize = 0x80_0000;
const PID: i32 = 1000;
/// Random schedules run per scenario.
pub(crate) const SCHEDULES: u64 = 5000;
/// Most steps the program may take at one interleaving point.
const BURST: usize = 3;
/// Driver rounds before a run is cut short (a livelock is a violation).
const MAX_ROUNDS: usize = 400;

/// One step of a program thread's script.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// Read page `i`.
    Read(usize),
    /// Write value `v` over page `i`.
    Write(usize, u8),
    /// `madvise(MADV_DONTNEED)` of page `i`.
    Discard(usize),
    /// `munmap` of page `i` (never touched again by the scenario).
    Unmap(usize),
    /// `mremap` of page `i` to page `j`, which has no mapping: the page's
    /// contents move (page `i` never touched again by the scenario).
    Remap(usize, usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    Ready,
    /// Blocked in a fault on page `i`.
    Faulted(usize),
    /// In its discard of page `i`: the remove event queued, and read by the
    /// pager once `read` (the zap is its next step).
    Discarding {
        page: usize,
        read: bool,
    },
    /// In its `munmap` or `mremap`, done but for its event, read once
    /// `read`.
    Unmapping {
        read: bool,
    },
    Done,
}

struct Thread {
    tid: i32,
    ops: Vec<Op>,
    pc: usize,
    run: Run,
    stopped: bool,
}

#[derive(Clone, Copy)]
struct KPage {
    value: Option<u8>,
    wp: bool,
    /// Inside a mapping (false once the program unmapped it).
    vma: bool,
}

impl KPage {
    const EMPTY: KPage = KPage {
        value: None,
        wp: false,
        vma: true,
    };
}

/// Who waits for a remove event to be read.
#[derive(Clone, Copy, Debug)]
enum Remover {
    Thread(usize),
    Injected,
}

enum KEvent {
    Fault {
        tid: i32,
        page: usize,
        write: bool,
        wp: bool,
    },
    Remove {
        start: usize,
        end: usize,
        by: Remover,
    },
    Unmap {
        start: usize,
        end: usize,
        by: usize,
    },
    Remap {
        from: usize,
        to: usize,
        by: usize,
    },
}

/// The kernel and the program, as the pager meets them.
struct World {
    pages: Vec<KPage>,
    /// The values each page may read: the program's last write, zero after
    /// its own discard, and either while a discard of the page races with a
    /// write to it (the discard takes effect somewhere between its call and
    /// its return). A read outside a discard settles it.
    allowed: Vec<Vec<u8>>,
    /// A write to the page came while a discard of it was under way.
    written_in_discard: Vec<bool>,
    /// Unmapped by the program: nothing of it is checked any more.
    gone: Vec<bool>,
    events: VecDeque<KEvent>,
    /// Remove events queued and not read yet (`mmap_changing`).
    changing: usize,
    threads: Vec<Thread>,
    scratch: Vec<u8>,
    /// The injected discard's remove event was read.
    injected_read: bool,
    /// An injected discard is under way.
    injecting: bool,
    /// The program's remove events read while one was.
    removes_in_discard: u64,
    rng: u64,
    /// Chance in 256 that the program takes a step at an interleaving point.
    eager: u64,
    violations: Vec<String>,
    log: Vec<String>,
}

fn page_addr(i: usize) -> usize {
    BASE + i * PAGE_SIZE
}

impl World {
    fn new(scripts: &[Vec<Op>], pages: usize, mapped: usize, seed: u64) -> Self {
        let mut w = World {
            pages: vec![KPage::EMPTY; pages],
            allowed: vec![vec![0]; pages],
            written_in_discard: vec![false; pages],
            gone: (0..pages).map(|p| p >= mapped).collect(),
            events: VecDeque::new(),
            changing: 0,
            threads: scripts
                .iter()
                .enumerate()
                .map(|(i, ops)| Thread {
                    tid: PID + i as i32,
                    ops: ops.clone(),
                    pc: 0,
                    run: Run::Ready,
                    stopped: false,
                })
                .collect(),
            scratch: Vec::new(),
            injected_read: false,
            injecting: false,
            removes_in_discard: 0,
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            eager: 0,
            violations: Vec::new(),
            log: Vec::new(),
        };
        for p in mapped..pages {
            w.pages[p].vma = false;
        }
        // How eager the program is varies by seed: some schedules let it
        // run between almost every call, others rarely.
        w.eager = 32 + w.below(200) as u64;
        w
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn page_of(&self, addr: usize) -> Option<usize> {
        let i = addr.checked_sub(BASE)? / PAGE_SIZE;
        (i < self.pages.len()).then_some(i)
    }

    fn runnable(&self) -> Vec<usize> {
        (0..self.threads.len())
            .filter(|&i| {
                let t = &self.threads[i];
                !t.stopped
                    && matches!(
                        t.run,
                        Run::Ready
                            | Run::Discarding { read: true, .. }
                            | Run::Unmapping { read: true }
                    )
            })
            .collect()
    }

    /// The program runs a little, as the schedule says.
    fn interleave(&mut self) {
        for _ in 0..BURST {
            if (self.next() & 255) >= self.eager {
                return;
            }
            let runnable = self.runnable();
            if runnable.is_empty() {
                return;
            }
            let i = runnable[self.below(runnable.len())];
            self.step(i);
        }
    }

    fn violation(&mut self, what: String) {
        self.log.push(format!("VIOLATION: {what}"));
        self.violations.push(what);
    }

    /// One step of thread `i`.
    fn step(&mut self, i: usize) {
        let t = &self.threads[i];
        if t.stopped {
            return;
        }
        match t.run {
            Run::Faulted(_)
            | Run::Done
            | Run::Discarding { read: false, .. }
            | Run::Unmapping { read: false } => {}
            Run::Unmapping { read: true } => {
                let t = &mut self.threads[i];
                t.run = Run::Ready;
                t.pc += 1;
            }
            Run::Discarding { page, read: true } => {
                self.zap(page_addr(page), page_addr(page) + PAGE_SIZE);
                if !self.written_in_discard[page] {
                    self.allowed[page] = vec![0];
                }
                let t = &mut self.threads[i];
                t.run = Run::Ready;
                t.pc += 1;
                self.log.push(format!("T{i} discard of page {page} done"));
            }
            Run::Ready => self.access(i),
        }
    }

    fn access(&mut self, i: usize) {
        let (tid, pc) = (self.threads[i].tid, self.threads[i].pc);
        let Some(&op) = self.threads[i].ops.get(pc) else {
            self.threads[i].run = Run::Done;
            return;
        };
        let fault = |w: &mut World, page: usize, write: bool, wp: bool| {
            w.events.push_back(KEvent::Fault {
                tid,
                page,
                write,
                wp,
            });
            w.threads[i].run = Run::Faulted(page);
            w.log.push(format!(
                "T{i} faults on page {page} (write {write}, wp {wp})"
            ));
        };
        match op {
            Op::Read(p) => match self.pages[p].value {
                Some(v) => {
                    if !self.allowed[p].contains(&v) {
                        let want = self.allowed[p].clone();
                        self.violation(format!(
                            "T{i} read {v} at page {p}, where the program's writes and discards leave {want:?}"
                        ));
                    } else if !self.discarding(p) {
                        self.allowed[p] = vec![v];
                    }
                    self.log.push(format!("T{i} reads {v} at page {p}"));
                    self.threads[i].pc += 1;
                }
                None => fault(self, p, false, false),
            },
            Op::Write(p, v) => match self.pages[p] {
                KPage {
                    value: Some(_),
                    wp: false,
                    ..
                } => {
                    self.pages[p].value = Some(v);
                    self.allowed[p] = if self.discarding(p) {
                        self.written_in_discard[p] = true;
                        vec![v, 0]
                    } else {
                        vec![v]
                    };
                    self.log.push(format!("T{i} writes {v} at page {p}"));
                    self.threads[i].pc += 1;
                }
                KPage {
                    value: Some(_),
                    wp: true,
                    ..
                } => fault(self, p, true, true),
                KPage { value: None, .. } => fault(self, p, true, false),
            },
            Op::Unmap(p) => {
                let start = page_addr(p);
                self.pages[p] = KPage {
                    vma: false,
                    ..KPage::EMPTY
                };
                self.gone[p] = true;
                self.queue_change(KEvent::Unmap {
                    start,
                    end: start + PAGE_SIZE,
                    by: i,
                });
                self.threads[i].run = Run::Unmapping { read: false };
                self.log.push(format!("T{i} unmaps page {p}"));
            }
            Op::Remap(p, q) => {
                self.pages[q] = self.pages[p];
                self.pages[p] = KPage {
                    vma: false,
                    ..KPage::EMPTY
                };
                self.allowed[q] = self.allowed[p].clone();
                self.gone[p] = true;
                self.gone[q] = false;
                self.queue_change(KEvent::Remap {
                    from: page_addr(p),
                    to: page_addr(q),
                    by: i,
                });
                self.threads[i].run = Run::Unmapping { read: false };
                self.log.push(format!("T{i} moves page {p} to page {q}"));
            }
            Op::Discard(p) => {
                let start = page_addr(p);
                self.queue_change(KEvent::Remove {
                    start,
                    end: start + PAGE_SIZE,
                    by: Remover::Thread(i),
                });
                self.threads[i].run = Run::Discarding {
                    page: p,
                    read: false,
                };
                if !self.allowed[p].contains(&0) {
                    self.allowed[p].push(0);
                }
                self.written_in_discard[p] = false;
                self.log.push(format!("T{i} discards page {p}"));
            }
        }
    }

    /// Whether a thread's discard of page `p` is under way.
    fn discarding(&self, p: usize) -> bool {
        self.threads
            .iter()
            .any(|t| matches!(t.run, Run::Discarding { page, .. } if page == p))
    }

    /// Threads blocked in faults on `[start, start + len)` run again; a
    /// woken fault's event leaves the queue if it was not read yet (the
    /// kernel's wake takes the waiter off the pending list).
    fn wake(&mut self, start: usize, len: usize) {
        let mut woken = Vec::new();
        for t in &mut self.threads {
            if let Run::Faulted(p) = t.run {
                if (start..start + len).contains(&page_addr(p)) {
                    t.run = Run::Ready;
                    woken.push(t.tid);
                }
            }
        }
        self.events
            .retain(|e| !matches!(e, KEvent::Fault { tid, .. } if woken.contains(tid)));
    }

    /// `UFFDIO_COPY`/`UFFDIO_ZEROPAGE`: maps `values` from `dst` on.
    fn fill(&mut self, dst: usize, values: &[u8]) -> Result<(), (i32, usize)> {
        if self.changing > 0 {
            return Err((libc::EAGAIN, 0));
        }
        let mut done = 0;
        let mut err = None;
        for (k, &v) in values.iter().enumerate() {
            let addr = dst + k * PAGE_SIZE;
            let Some(p) = self.page_of(addr).filter(|&p| self.pages[p].vma) else {
                err = Some(libc::ENOENT);
                break;
            };
            if self.pages[p].value.is_some() {
                err = Some(libc::EEXIST);
                break;
            }
            self.pages[p] = KPage {
                value: Some(v),
                ..KPage::EMPTY
            };
            done += PAGE_SIZE;
        }
        self.log.push(format!(
            "pager maps {:?} at page {:?}: {}",
            values,
            self.page_of(dst),
            err.map_or("done".to_string(), |e| format!(
                "errno {e} after {done} bytes"
            ))
        ));
        match (err, done) {
            (None, _) => {
                self.wake(dst, done);
                Ok(())
            }
            (Some(e), 0) => Err((e, 0)),
            (Some(_), done) => {
                self.wake(dst, done);
                Err((libc::EAGAIN, done))
            }
        }
    }

    /// Queues a remove, unmap or remap event: until it is read, the
    /// mappings are changing (`mmap_changing`).
    fn queue_change(&mut self, event: KEvent) {
        self.events.push_back(event);
        self.changing += 1;
    }

    /// A discard of `[start, end)` by an injected call, remove event first.
    fn queue_injected_remove(&mut self, start: usize, end: usize) {
        self.queue_change(KEvent::Remove {
            start,
            end,
            by: Remover::Injected,
        });
        self.injected_read = false;
        self.injecting = true;
        self.log
            .push(format!("injected discard of {start:#x}..{end:#x}"));
    }

    fn zap(&mut self, start: usize, end: usize) {
        for addr in (start..end).step_by(PAGE_SIZE) {
            if let Some(p) = self.page_of(addr) {
                self.pages[p].value = None;
                self.pages[p].wp = false;
            }
        }
    }

    /// The mapped parts of `[start, end)`: the pieces an `madvise` of it
    /// acts on, one remove event each.
    fn mapped_pieces(&self, start: usize, end: usize) -> Vec<(usize, usize)> {
        let mut pieces: Vec<(usize, usize)> = Vec::new();
        for addr in (start..end).step_by(PAGE_SIZE) {
            let mapped = self.page_of(addr).is_none_or(|p| self.pages[p].vma);
            if !mapped {
                continue;
            }
            match pieces.last_mut() {
                Some((_, e)) if *e == addr => *e = addr + PAGE_SIZE,
                _ => pieces.push((addr, addr + PAGE_SIZE)),
            }
        }
        pieces
    }

    fn all_done(&self) -> bool {
        self.threads.iter().all(|t| t.run == Run::Done)
    }
}

/// The model kernel, as [`Pager`] reaches it.
struct ModelOs(Rc<RefCell<World>>);

impl Os for ModelOs {
    fn read_event(&mut self) -> std::io::Result<Option<Event>> {
        let mut w = self.0.borrow_mut();
        w.interleave();
        let Some(e) = w.events.pop_front() else {
            return Ok(None);
        };
        if !matches!(e, KEvent::Fault { .. }) {
            w.changing -= 1;
        }
        Ok(Some(match e {
            KEvent::Fault {
                tid,
                page,
                write,
                wp,
            } => Event::Pagefault {
                kind: if wp {
                    FaultKind::WriteProtected
                } else {
                    FaultKind::Missing
                },
                rw: if write {
                    ReadWrite::Write
                } else {
                    ReadWrite::Read
                },
                // Somewhere inside the page, as a real fault's address.
                addr: (page_addr(page) + 8 * (tid as usize % 4)) as *mut libc::c_void,
                thread_id: nix::unistd::Pid::from_raw(tid),
            },
            KEvent::Remap { from, to, by } => {
                w.threads[by].run = Run::Unmapping { read: true };
                Event::Remap {
                    from: from as *mut libc::c_void,
                    to: to as *mut libc::c_void,
                    len: PAGE_SIZE,
                }
            }
            KEvent::Unmap { start, end, by } => {
                w.threads[by].run = Run::Unmapping { read: true };
                Event::Unmap {
                    start: start as *mut libc::c_void,
                    end: end as *mut libc::c_void,
                }
            }
            KEvent::Remove { start, end, by } => {
                match by {
                    Remover::Thread(i) => {
                        if w.injecting {
                            w.removes_in_discard += 1;
                        }
                        if let Run::Discarding { page, .. } = w.threads[i].run {
                            w.threads[i].run = Run::Discarding { page, read: true };
                        }
                    }
                    Remover::Injected => w.injected_read = true,
                }
                Event::Remove {
                    start: start as *mut libc::c_void,
                    end: end as *mut libc::c_void,
                }
            }
        }))
    }

    fn faults_pending(&self) -> bool {
        !self.0.borrow().events.is_empty()
    }

    fn target_gone(&self) -> bool {
        false
    }

    fn register(&self, _: usize, _: usize) -> Result<(), i32> {
        Ok(())
    }

    fn zeropage(&self, start: usize, len: usize) -> Result<(), (i32, usize)> {
        let mut w = self.0.borrow_mut();
        w.interleave();
        w.fill(start, &vec![0; len / PAGE_SIZE])
    }

    fn copy(&self, src: &[u8], dst: usize) -> Result<(), i32> {
        let mut w = self.0.borrow_mut();
        w.interleave();
        let values: Vec<u8> = src.chunks(PAGE_SIZE).map(|c| c[0]).collect();
        if src.chunks(PAGE_SIZE).any(|c| c.iter().any(|&b| b != c[0])) {
            w.violation(format!("pager copies a torn page to {dst:#x}"));
        }
        w.fill(dst, &values).map_err(|(e, _)| e)
    }

    fn write_protect(&self, start: usize, len: usize, protect: bool) -> Result<(), i32> {
        let mut w = self.0.borrow_mut();
        w.interleave();
        if w.changing > 0 {
            w.log.push(format!(
                "pager's write-protect of {start:#x} refused: EAGAIN"
            ));
            return Err(libc::EAGAIN);
        }
        for addr in (start..start + len).step_by(PAGE_SIZE) {
            if let Some(p) = w.page_of(addr) {
                if w.pages[p].vma && w.pages[p].value.is_some() {
                    w.pages[p].wp = protect;
                }
            }
        }
        w.log.push(format!(
            "pager {} {start:#x}+{len:#x}",
            if protect { "protects" } else { "unprotects" }
        ));
        if !protect {
            w.wake(start, len);
        }
        Ok(())
    }

    fn wake(&self, start: usize, len: usize) -> Result<(), i32> {
        let mut w = self.0.borrow_mut();
        w.interleave();
        w.wake(start, len);
        Ok(())
    }

    fn image_alive(&self) -> bool {
        true
    }

    fn populated(&self, start: usize, pages: usize) -> std::io::Result<Vec<bool>> {
        let mut w = self.0.borrow_mut();
        w.interleave();
        Ok((0..pages)
            .map(|k| {
                w.page_of(start + k * PAGE_SIZE)
                    .is_some_and(|p| w.pages[p].value.is_some())
            })
            .collect())
    }

    fn read_mem(&self, addr: usize, buf: &mut [u8]) -> std::io::Result<()> {
        let mut w = self.0.borrow_mut();
        w.interleave();
        for (k, chunk) in buf.chunks_mut(PAGE_SIZE).enumerate() {
            let a = addr + k * PAGE_SIZE;
            match w.page_of(a).and_then(|p| w.pages[p].value) {
                Some(v) => chunk.fill(v),
                // As `/proc/PID/mem` answers (`RealOs::read_mem`): at once,
                // never by waiting for the pager's own userfaultfd.
                None => {
                    w.log
                        .push(format!("pager's read of {a:#x} fails: not mapped"));
                    return Err(std::io::Error::from_raw_os_error(libc::EIO));
                }
            }
        }
        Ok(())
    }

    fn write_mem(&self, addr: usize, buf: &[u8]) -> std::io::Result<()> {
        let mut w = self.0.borrow_mut();
        if addr != SCRATCH {
            w.violation(format!("pager writes the program's memory at {addr:#x}"));
            return Err(std::io::Error::from_raw_os_error(libc::EFAULT));
        }
        w.scratch = buf.to_vec();
        Ok(())
    }

    fn tids(&self) -> Vec<i32> {
        let w = self.0.borrow();
        w.threads
            .iter()
            .filter(|t| t.run != Run::Done)
            .map(|t| t.tid)
            .collect()
    }

    fn seizer(&self) -> Box<dyn Seize> {
        Box::new(ModelSeize(self.0.clone()))
    }
}

struct ModelSeize(Rc<RefCell<World>>);

impl Seize for ModelSeize {
    fn seize(&self, tid: i32, serve: &mut dyn FnMut()) -> Result<Box<dyn Stopped>, InjectError> {
        self.0.borrow_mut().interleave();
        for _ in 0..MAX_ROUNDS {
            let mut w = self.0.borrow_mut();
            let i = (tid - PID) as usize;
            match w.threads[i].run {
                Run::Done => return Err(InjectError::Exited(tid)),
                // A discard (or unmap) waiting for its event cannot stop:
                // the pager serves events meanwhile, as `Tracee::seize` does.
                Run::Discarding { read: false, .. } | Run::Unmapping { read: false } => {
                    w.interleave();
                    drop(w);
                    serve();
                    continue;
                }
                // The discard (or unmap) finishes before the thread can
                // stop.
                Run::Discarding { read: true, .. } | Run::Unmapping { read: true } => w.step(i),
                // A ptrace stop interrupts the fault: its event leaves the
                // queue if the pager has not read it yet (the kernel takes
                // the waiter off the pending list), and the access is made
                // again once the thread is let go.
                Run::Faulted(_) => {
                    w.events
                        .retain(|e| !matches!(e, KEvent::Fault { tid: t, .. } if *t == tid));
                    w.threads[i].run = Run::Ready;
                }
                Run::Ready => {}
            }
            w.threads[i].stopped = true;
            w.log.push(format!("pager stops T{i}"));
            return Ok(Box::new(ModelStopped {
                world: self.0.clone(),
                tid,
            }));
        }
        Err(InjectError::Timeout {
            tid,
            waited: std::time::Duration::ZERO,
        })
    }
}

struct ModelStopped {
    world: Rc<RefCell<World>>,
    tid: i32,
}

impl ModelStopped {
    /// `madvise(MADV_DONTNEED)` of `[start, end)` in the stopped thread,
    /// mapping by mapping: the remove event, served by the pager while the
    /// call waits, then the zap (the program may run in between). `true`
    /// if part of the range is not mapped (the kernel then fails the call
    /// with `ENOMEM`, having discarded the mapped parts all the same).
    fn discard(
        &self,
        start: usize,
        end: usize,
        serve: &mut dyn FnMut(),
    ) -> Result<bool, InjectError> {
        let pieces = self.world.borrow().mapped_pieces(start, end);
        let covered: usize = pieces.iter().map(|&(s, e)| e - s).sum();
        for (s, e) in pieces {
            self.discard_mapped(s, e, serve)?;
        }
        Ok(covered < end - start)
    }

    fn discard_mapped(
        &self,
        start: usize,
        end: usize,
        serve: &mut dyn FnMut(),
    ) -> Result<(), InjectError> {
        self.world.borrow_mut().queue_injected_remove(start, end);
        for _ in 0..MAX_ROUNDS {
            if self.world.borrow().injected_read {
                let mut w = self.world.borrow_mut();
                w.interleave();
                w.zap(start, end);
                w.injecting = false;
                w.log
                    .push(format!("injected discard of {start:#x}..{end:#x} done"));
                return Ok(());
            }
            self.world.borrow_mut().interleave();
            serve();
        }
        self.world
            .borrow_mut()
            .violation("the injected discard's remove event is never read".into());
        Err(InjectError::Timeout {
            tid: self.tid,
            waited: std::time::Duration::ZERO,
        })
    }
}

impl Stopped for ModelStopped {
    fn tid(&self) -> i32 {
        self.tid
    }

    fn rseq_area(&self) -> Option<(usize, usize)> {
        None
    }

    fn syscall(
        &mut self,
        nr: i64,
        args: &[u64],
        serve: &mut dyn FnMut(),
    ) -> Result<i64, InjectError> {
        {
            let mut w = self.world.borrow_mut();
            w.interleave();
            w.log.push(format!(
                "injected call {nr} {:x?}",
                &args[..args.len().min(3)]
            ));
        }
        match nr {
            libc::SYS_pidfd_open => Ok(3),
            libc::SYS_close => Ok(0),
            libc::SYS_mmap => Ok(SCRATCH as i64),
            libc::SYS_process_madvise => {
                let ranges: Vec<(usize, usize)> = {
                    let w = self.world.borrow();
                    let n = args[2] as usize;
                    w.scratch
                        .chunks_exact(16)
                        .take(n)
                        .map(|c| {
                            let word = |o: usize| {
                                u64::from_ne_bytes(c[o..o + 8].try_into().unwrap_or_default())
                            };
                            (word(0) as usize, word(8) as usize)
                        })
                        .collect()
                };
                // Range by range; a range with a hole fails the call: the
                // bytes of the ranges before it, or the error.
                let mut done = 0;
                for (s, len) in ranges {
                    if self.discard(s, s + len, serve)? {
                        let enomem = -i64::from(libc::ENOMEM);
                        return Ok(if done > 0 { done as i64 } else { enomem });
                    }
                    done += len;
                }
                Ok(done as i64)
            }
            libc::SYS_madvise => {
                let (s, len) = (args[0] as usize, args[1] as usize);
                let hole = self.discard(s, s + len, serve)?;
                Ok(if hole { -i64::from(libc::ENOMEM) } else { 0 })
            }
            _ => Ok(-i64::from(libc::ENOSYS)),
        }
    }

    fn detach(self: Box<Self>) -> Result<(), InjectError> {
        let mut w = self.world.borrow_mut();
        let i = (self.tid - PID) as usize;
        w.threads[i].stopped = false;
        w.log.push(format!("pager lets T{i} go"));
        Ok(())
    }
}

/// A scenario: the program's threads, the pages, and how many evictions
/// the pager may start.
pub(crate) struct Scenario {
    pub name: &'static str,
    pub pages: usize,
    /// Pages mapped (and registered) at the start; the rest are not.
    pub mapped: usize,
    pub threads: Vec<Vec<Op>>,
    pub evictions: usize,
}

fn config() -> PagerConfig {
    PagerConfig {
        limit_bytes: 1 << 20,
        swap: zswap::Config {
            shrinker_thread: false,
            writeback: false,
            swapfile_pages: 64,
            ..Default::default()
        },
        shared_limit_file: None,
        charge_pool: false,
        user_mode_only: false,
        record_file: None,
        follow_faults: false,
    }
}

/// Runs `sc` under schedule `seed`; the violations found, with the run's
/// log.
pub(crate) fn run(sc: &Scenario, seed: u64, flaw: Option<Flaw>) -> Result<Coverage, String> {
    let world = Rc::new(RefCell::new(World::new(
        &sc.threads,
        sc.pages,
        sc.mapped,
        seed,
    )));
    let mut pager = Pager::with_os(PID, Box::new(ModelOs(world.clone())), &config())
        .map_err(|e| format!("pager: {e}"))?;
    pager.flaw = flaw;
    pager.paging = true;
    pager.registered = vec![(BASE, page_addr(sc.mapped))];
    let mut evictions = sc.evictions;
    for _ in 0..MAX_ROUNDS {
        let (runnable, done, quiet) = {
            let w = world.borrow();
            (w.runnable(), w.all_done(), w.events.is_empty())
        };
        if done && quiet {
            break;
        }
        // Actors: each runnable thread, the pager's event service, and
        // (while any are left) an eviction.
        let actors = runnable.len() + 1 + usize::from(evictions > 0);
        let pick = world.borrow_mut().below(actors);
        if pick < runnable.len() {
            world.borrow_mut().step(runnable[pick]);
        } else if pick == runnable.len() {
            pager.serve_events();
        } else {
            evictions -= 1;
            world.borrow_mut().log.push("pager evicts".into());
            match pager.evict_batch(super::EVICT_BATCH) {
                Ok(n) => world
                    .borrow_mut()
                    .log
                    .push(format!("pager evicted {n} pages")),
                Err(e) => world
                    .borrow_mut()
                    .violation(format!("eviction failed: {e}")),
            }
        }
        if let Some(e) = pager.fatal.take() {
            world.borrow_mut().violation(format!("pager error: {e}"));
        }
    }
    // A quarter of the schedules end as `uzswap detach` does: every page
    // given back, then the kernel's again.
    if seed % 4 == 3 && world.borrow().all_done() {
        return released(&world, pager, sc.pages);
    }
    read_back_everything(&world, &mut pager, sc.pages);
    let mut w = world.borrow_mut();
    for (i, t) in w.threads.iter().enumerate() {
        if t.run != Run::Done {
            return Err(report(&w, &format!("T{i} is left {:?}", t.run)));
        }
    }
    // The pager's account: a page is resident there exactly where the
    // kernel has it mapped (the charge counts what is there).
    for p in 0..sc.pages {
        if w.gone[p] {
            if let Some(state) = pager.pages.get(&page_addr(p)) {
                w.violation(format!(
                    "page {p}, unmapped by the program, is still {state:?}"
                ));
            }
            continue;
        }
        let resident = pager.pages.get(&page_addr(p)) == Some(&super::Page::Resident);
        if resident != w.pages[p].value.is_some() {
            let mapped = w.pages[p].value.is_some();
            w.violation(format!(
                "page {p}: resident for the pager {resident}, mapped {mapped}"
            ));
        }
    }
    let counted = pager
        .pages
        .values()
        .filter(|&&p| p == super::Page::Resident)
        .count();
    if pager.stats.resident_pages as usize != counted {
        let n = pager.stats.resident_pages;
        w.violation(format!("resident_pages {n}, {counted} pages resident"));
    }
    match w.violations.first() {
        Some(v) => Err(report(&w, v)),
        None => Ok(Coverage::of(&pager.stats, w.removes_in_discard)),
    }
}

/// What a run went through, summed over schedules to show that they reach
/// the pager's rarer paths.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Coverage {
    pub evicted: u64,
    pub swapins: u64,
    pub wp_faults: u64,
    /// Fills refused while a remove event was queued, served again.
    pub retries: u64,
    /// Runs left out of a batch (a failed protect, store or discard).
    pub evict_failures: u64,
    /// The program's remove events read while the pager's discard ran.
    pub removes_in_discard: u64,
}

impl Coverage {
    fn of(s: &super::PagerStats, removes_in_discard: u64) -> Self {
        Coverage {
            evicted: s.evicted_pages,
            swapins: s.swapin_faults,
            wp_faults: s.wp_faults,
            retries: s.retries,
            evict_failures: s.evict_failures,
            removes_in_discard,
        }
    }

    fn add(&mut self, o: Coverage) {
        self.evicted += o.evicted;
        self.swapins += o.swapins;
        self.wp_faults += o.wp_faults;
        self.retries += o.retries;
        self.evict_failures += o.evict_failures;
        self.removes_in_discard += o.removes_in_discard;
    }
}

/// The end by [`Pager::release`]: every page must be mapped with what the
/// program may read there, or be empty where that is zeros.
fn released(world: &Rc<RefCell<World>>, pager: Pager, pages: usize) -> Result<Coverage, String> {
    let coverage = Coverage::of(&pager.stats, world.borrow().removes_in_discard);
    if let Err(e) = pager.release() {
        world.borrow_mut().violation(format!("release failed: {e}"));
    }
    let mut w = world.borrow_mut();
    let kept: Vec<usize> = (0..pages).filter(|&p| !w.gone[p]).collect();
    for p in kept {
        let value = w.pages[p].value.unwrap_or(0);
        if !w.allowed[p].contains(&value) {
            let allowed = w.allowed[p].clone();
            w.violation(format!(
                "page {p} holds {value} once given back, where the program may read {allowed:?}"
            ));
        }
    }
    match w.violations.first() {
        Some(v) => Err(report(&w, v)),
        None => Ok(coverage),
    }
}

/// The end: a reader thread reads every page, served by the pager.
fn read_back_everything(world: &Rc<RefCell<World>>, pager: &mut Pager, pages: usize) {
    let reader = {
        let mut w = world.borrow_mut();
        let i = w.threads.len();
        let ops = (0..pages).filter(|&p| !w.gone[p]).map(Op::Read).collect();
        w.threads.push(Thread {
            tid: PID + i as i32,
            ops,
            pc: 0,
            run: Run::Ready,
            stopped: false,
        });
        i
    };
    for _ in 0..MAX_ROUNDS {
        let done = {
            let mut w = world.borrow_mut();
            w.step(reader);
            w.threads[reader].run == Run::Done
        };
        if done {
            return;
        }
        pager.serve_events();
    }
}

fn report(w: &World, what: &str) -> String {
    let tail: Vec<&String> = w.log.iter().rev().take(80).collect();
    let log: Vec<&str> = tail.into_iter().rev().map(String::as_str).collect();
    format!("{what}\n  last steps:\n    {}", log.join("\n    "))
}

/// Schedules a scenario runs: [`SCHEDULES`], or `UZSWAP_MODEL_SCHEDULES`
/// (a longer search than the test suite's).
fn schedules() -> u64 {
    std::env::var("UZSWAP_MODEL_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SCHEDULES)
}

/// Every schedule of `sc` up to [`schedules`]: the first violation, or
/// what they went through.
pub(crate) fn check(sc: &Scenario, flaw: Option<Flaw>) -> Result<Coverage, String> {
    let mut total = Coverage::default();
    for seed in 0..schedules() {
        let c = run(sc, seed, flaw).map_err(|e| format!("{} (schedule {seed}): {e}", sc.name))?;
        total.add(c);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Op::*;

    /// Two threads write, read and rewrite two pages while the pager evicts
    /// them twice.
    pub(super) fn writers() -> Scenario {
        Scenario {
            name: "writers during eviction",
            pages: 2,
            mapped: 2,
            threads: vec![
                vec![
                    Write(0, 1),
                    Write(1, 2),
                    Read(0),
                    Write(0, 3),
                    Read(1),
                    Read(0),
                ],
                vec![Read(1), Write(1, 4), Read(0), Write(1, 5), Read(1)],
            ],
            evictions: 2,
        }
    }

    /// The program discards a page it wrote while the pager evicts it.
    pub(super) fn discarder() -> Scenario {
        Scenario {
            name: "discard during eviction",
            pages: 3,
            mapped: 3,
            threads: vec![
                vec![
                    Write(0, 1),
                    Write(1, 2),
                    Write(2, 3),
                    Discard(1),
                    Read(1),
                    Write(1, 4),
                ],
                vec![Read(2), Write(2, 5), Read(0), Read(2)],
            ],
            evictions: 2,
        }
    }

    /// A thread touches the page between two others while the batch
    /// that spans all three is discarded.
    pub(super) fn gap() -> Scenario {
        Scenario {
            name: "fault inside a span",
            pages: 3,
            mapped: 3,
            threads: vec![
                vec![
                    Write(0, 1),
                    Write(1, 2),
                    Write(2, 3),
                    Read(0),
                    Read(2),
                    Write(0, 4),
                    Read(2),
                ],
                vec![Read(0), Read(2), Read(0), Read(2), Read(1), Read(1)],
            ],
            evictions: 3,
        }
    }

    /// A second thread discards a page while the batch that holds it is
    /// being discarded by the pager.
    pub(super) fn racing_discard() -> Scenario {
        Scenario {
            name: "discard during the pager's discard",
            pages: 2,
            mapped: 2,
            threads: vec![
                vec![Write(0, 1), Write(1, 2), Read(0), Read(1), Read(0)],
                vec![Read(0), Read(0), Discard(1), Read(1), Write(1, 3), Read(1)],
            ],
            evictions: 2,
        }
    }

    /// Three threads over four pages: writes, reads and a discard, with
    /// the pager evicting four times.
    pub(super) fn three() -> Scenario {
        Scenario {
            name: "three threads",
            pages: 4,
            mapped: 4,
            threads: vec![
                vec![Write(0, 1), Write(3, 2), Read(1), Write(0, 3), Read(3)],
                vec![Write(1, 4), Read(0), Discard(3), Read(3), Write(2, 5)],
                vec![Read(2), Write(2, 6), Read(1), Read(0), Write(1, 7)],
            ],
            evictions: 4,
        }
    }

    /// Four threads over six pages, two of them discarding, the pager
    /// evicting six times.
    pub(super) fn crowd() -> Scenario {
        Scenario {
            name: "four threads",
            pages: 6,
            mapped: 6,
            threads: vec![
                vec![
                    Write(0, 1),
                    Write(5, 2),
                    Read(3),
                    Write(0, 3),
                    Discard(5),
                    Read(5),
                ],
                vec![Write(3, 4), Read(0), Write(4, 5), Read(4), Write(3, 6)],
                vec![Read(2), Write(2, 7), Discard(2), Read(1), Write(1, 8)],
                vec![Read(4), Read(5), Write(5, 9), Read(2), Read(0)],
            ],
            evictions: 6,
        }
    }

    /// The program unmaps a page while the pager evicts around it.
    pub(super) fn unmapper() -> Scenario {
        Scenario {
            name: "unmap during eviction",
            pages: 4,
            mapped: 4,
            threads: vec![
                vec![
                    Write(0, 1),
                    Write(1, 2),
                    Write(2, 3),
                    Write(3, 4),
                    Read(0),
                    Unmap(1),
                    Read(2),
                    Write(0, 5),
                ],
                vec![Read(3), Read(2), Write(2, 6), Read(0), Write(3, 7), Read(2)],
            ],
            evictions: 3,
        }
    }

    /// The program moves a page (`mremap`) while the pager evicts around
    /// it.
    pub(super) fn mover() -> Scenario {
        Scenario {
            name: "mremap during eviction",
            pages: 5,
            mapped: 4,
            threads: vec![
                vec![
                    Write(0, 1),
                    Write(1, 2),
                    Write(2, 3),
                    Write(3, 4),
                    Read(0),
                    Remap(1, 4),
                    Read(4),
                    Write(4, 5),
                    Read(2),
                ],
                vec![Read(3), Read(2), Write(2, 6), Read(0), Write(3, 7), Read(2)],
            ],
            evictions: 3,
        }
    }

    /// One thread, evicted between every access.
    pub(super) fn single() -> Scenario {
        Scenario {
            name: "one thread",
            pages: 2,
            mapped: 2,
            threads: vec![vec![
                Write(0, 7),
                Write(1, 8),
                Read(0),
                Write(1, 9),
                Read(1),
                Write(0, 6),
            ]],
            evictions: 3,
        }
    }

    /// One test per scenario: every schedule of it passes the checks.
    macro_rules! every_schedule {
        ($($name:ident: $scenario:expr;)*) => {
            $(
                #[test]
                fn $name() {
                    check(&$scenario, None).unwrap_or_else(|e| panic!("{e}"));
                }
            )*
        };
    }

    every_schedule! {
        every_schedule_of_writers_during_eviction_reads_back_every_write: writers();
        every_schedule_of_a_discard_during_eviction_reads_zeros_then_its_writes: discarder();
        every_schedule_of_one_thread_evicted_between_accesses_reads_back: single();
        every_schedule_of_a_fault_inside_a_span_being_discarded_reads_back: gap();
        every_schedule_of_a_discard_during_the_pagers_discard_reads_zeros: racing_discard();
        every_schedule_of_three_threads_reads_back_every_write: three();
        every_schedule_of_four_threads_reads_back_every_write: crowd();
        every_schedule_of_an_unmap_during_eviction_reads_back_the_rest: unmapper();
        every_schedule_of_an_mremap_during_eviction_reads_back_the_moved_page: mover();
    }

    /// Every scenario.
    fn all() -> Vec<Scenario> {
        vec![
            writers(),
            discarder(),
            gap(),
            racing_discard(),
            three(),
            crowd(),
            unmapper(),
            mover(),
            single(),
        ]
    }

    #[test]
    fn the_schedules_reach_the_pagers_rarer_paths() {
        let mut total = Coverage::default();
        for sc in all() {
            total.add(check(&sc, None).unwrap_or_else(|e| panic!("{e}")));
        }
        eprintln!("{total:?}");
        assert!(total.evicted > 0 && total.swapins > 0 && total.wp_faults > 0);
        assert!(total.retries > 0, "no fill was refused and retried");
        assert!(total.evict_failures > 0, "no run was left out of a batch");
        assert!(total.removes_in_discard > 0, "no discard raced the pager's");
    }

    #[test]
    fn each_flaw_is_caught() {
        for flaw in [
            Flaw::StoreUnprotected,
            Flaw::WriterLetThrough,
            Flaw::ServedInSpan,
            Flaw::ProgramDiscardTakenAsOwn,
        ] {
            let caught = all().iter().any(|sc| check(sc, Some(flaw)).is_err());
            assert!(caught, "{flaw:?} was not caught");
        }
    }
}
