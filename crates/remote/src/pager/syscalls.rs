//! The syscall guard's side of the pager: a system call of the target
//! that takes a user pointer waits (seccomp user notification, see
//! `seccomp.rs`) until its buffers are mapped and pinned (`pins.rs`).
//!
//! Serving one call, outside evictions (calls that come during one wait
//! in `pending`; those of the thread stopped for the injection are its
//! injected calls, on uzswap's scratch page, and are let through):
//!
//! 1. The thread's last call is over: its pins go (`Pins::set_call`).
//! 2. A `fork`: every stored page is brought back first, and no page is
//!    evicted until the child exists (the child's memory is a copy of the
//!    parent's mapped pages: without the fork event, which takes
//!    privilege, it could not be given the stored ones).
//! 3. A new thread's stack (`clone` with `CLONE_VM` and a stack) is left
//!    to the kernel, which writes signal frames there: unregistered and
//!    never registered again, when it is a mapping of its own as the C
//!    libraries make one (a guard page below it, up to
//!    [`STACK_MAPPING_MAX`]); elsewhere (Go's heap, where its runtime puts
//!    a thread's system stack, and whose signals go to alternate stacks)
//!    the 64 KiB below its top are pinned.
//! 4. The call's buffers (the guard crate's table: `for_each_buffer`,
//!    reading the target's memory; a pointer in a page that is not mapped
//!    maps that page and walks again) are mapped: stored pages swapped in,
//!    absent ones mapped as zeros, a leftover write protection removed
//!    where the kernel writes. Then pinned, and the call let through.
//!    A page that cannot be mapped yet (`EAGAIN`: an event is queued)
//!    keeps the call waiting; it is served again after the events.
//!
//! The filter goes in when the pager is about to register the target's
//! memory for the first time ([`Pager::guard_ready`]): until then no call
//! pays for it. Calls already under way then are found by stopping every
//! thread once ([`Pager::quiesce`]).
//!
//! Memory registered later: the pinned pages in it are populated (read
//! once with `process_vm_readv`, which maps zeros or the page) before it
//! is registered, so that a call already in the kernel finds them there.

use super::{subtract, Page, Pager, PagerError};
use crate::inject::{InjectError, Tracee};
use crate::pins::{page_span, Pins, Span};
use crate::seccomp::{Listener, Notification};
use common::PAGE_SIZE;
use guard::{nr, Buffer, UserMem};
use std::cell::Cell;
use std::collections::VecDeque;

/// A new thread's stack in a mapping of its own (a guard page below) at
/// most this large is left to the kernel whole.
pub const STACK_MAPPING_MAX: usize = 64 << 20;
/// Otherwise this much below its top is pinned.
const STACK_TOP_PINNED: usize = 64 << 10;
/// Walks of a call's buffers, each after mapping a page a pointer was in.
const WALKS: usize = 8;
const CLONE_VM: u64 = 0x100;

/// Sleeps the kernel restarts through `restart_syscall` (no notification).
const RESTARTABLE: [i64; 4] = [nr::FUTEX, nr::POLL, nr::NANOSLEEP, nr::CLOCK_NANOSLEEP];

/// The guard's state in the pager.
pub(crate) struct SyscallGuard {
    pub(crate) listener: Listener,
    pub(crate) pins: Pins,
    /// Calls received and not answered yet.
    pending: VecDeque<Notification>,
    /// Thread stacks left to the kernel.
    stacks: Vec<Span>,
    /// A fork under way: the thread, and its children before it.
    fork: Option<(i32, usize)>,
    /// Every thread has been stopped once since the filter went in.
    quiesced: bool,
}

impl SyscallGuard {
    pub(crate) fn new(listener: Listener) -> Self {
        SyscallGuard {
            listener,
            pins: Pins::default(),
            pending: VecDeque::new(),
            stacks: Vec::new(),
            fork: None,
            quiesced: false,
        }
    }
}

/// The target's memory as the table reads it. A page that is not mapped
/// fails the read (the userfaultfd is user-mode only): remembered, so
/// that the page can be mapped and the walk made again.
struct RemoteMem {
    tid: i32,
    failed: Cell<Option<usize>>,
}

impl RemoteMem {
    fn bytes<const N: usize>(&self, addr: usize) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        match crate::mem::read(self.tid, addr, &mut b) {
            Ok(()) => Some(b),
            Err(_) => {
                if self.failed.get().is_none() {
                    self.failed.set(Some(addr));
                }
                None
            }
        }
    }
}

impl UserMem for RemoteMem {
    fn read_u64(&self, addr: usize) -> Option<u64> {
        self.bytes::<8>(addr).map(u64::from_ne_bytes)
    }
    fn read_u32(&self, addr: usize) -> Option<u32> {
        self.bytes::<4>(addr).map(u32::from_ne_bytes)
    }
    fn read_u8(&self, addr: usize) -> Option<u8> {
        self.bytes::<1>(addr).map(|b| b[0])
    }
}

/// What a call's buffers pin.
#[derive(Default)]
struct CallPins {
    /// Its buffers, with whether the kernel writes each.
    call: Vec<(Span, bool)>,
    /// Pointers the kernel keeps (`rseq`, `sigaltstack`, …).
    registered: Vec<(Span, bool)>,
    /// `CLONE_CHILD_CLEARTID`: the child's, held until unmapped.
    held: Vec<Span>,
    /// The table does not describe the call.
    unknown: bool,
    /// Pointers it could not size.
    unknown_buffers: u64,
}

impl Pager {
    /// Puts the target under the guard if it is not yet: the filter
    /// injected ([`crate::seccomp::install_in`]), then every thread
    /// stopped once ([`Pager::quiesce`]). Whether memory may be registered
    /// now (else: at a later look). Where the filter cannot be put in, the
    /// program runs on unpaged, and one line says why.
    pub(super) fn guard_ready(&mut self) -> Result<bool, PagerError> {
        if self.guard.is_none() {
            let Some(mut stopped) = self.stop_a_thread() else {
                return Ok(false);
            };
            self.stats.injections += 1;
            let pid = self.pid;
            let mut serve = || self.serve_events();
            let installed = stopped
                .tracee()
                .map(|tracee| crate::seccomp::install_in(pid, tracee, &mut serve));
            let tid = stopped.tid();
            if stopped.detach().is_err() {
                self.lingering.push(tid);
            }
            let Some(installed) = installed else {
                return Ok(false);
            };
            match installed {
                Ok(listener) => {
                    self.guard = Some(SyscallGuard::new(listener));
                    self.stats.guarded = true;
                }
                Err(e) => {
                    eprintln!("uzswap: {pid} runs unpaged: the system-call guard could not be put in: {e}");
                    self.image_gone = true;
                    return Ok(false);
                }
            }
        }
        self.quiesce()
    }

    /// Stops every thread once after the filter went in. A call made
    /// before it was in is not seen by it: stopped, a thread leaves a
    /// sleep (to make it again, through the filter), or finishes the call
    /// first. Only a sleep the kernel goes on with through
    /// `restart_syscall` is not made again: its buffers are pinned from
    /// the stopped thread's registers. So are the pointers the kernel kept
    /// from earlier calls ([`Pager::kept_pointers`]), and the stack the
    /// thread runs on is left to the kernel as a new thread's would be.
    /// `false` while a thread did not stop.
    fn quiesce(&mut self) -> Result<bool, PagerError> {
        if self.guard.as_ref().is_some_and(|g| g.quiesced) {
            return Ok(true);
        }
        let Some(insn) = self.os.real().map(|r| r.syscall_insn) else {
            return Ok(false);
        };
        let pid = self.pid;
        for tid in self.os.tids() {
            let mut serve = || self.serve_events();
            let mut tracee = match Tracee::seize(pid, tid, insn, &mut serve) {
                Ok(t) => t,
                Err(_) if !thread_alive(tid) => continue,
                Err(InjectError::Timeout { tid, .. }) => {
                    self.stats.inject_errors += 1;
                    self.lingering.push(tid);
                    return Ok(false);
                }
                Err(_) => {
                    self.stats.inject_errors += 1;
                    return Ok(false);
                }
            };
            let call = tracee.restarting_call();
            let sp = tracee.stack_pointer();
            self.in_flight.tracee = Some(tid);
            let kept = self.kept_pointers(&mut tracee);
            self.in_flight.tracee = None;
            if tracee.detach().is_err() {
                self.lingering.push(tid);
            }
            // Nothing is registered yet: only pins are recorded, and the
            // stack left to the kernel.
            if let Some(g) = self.guard.as_mut() {
                for (nr, span) in kept {
                    g.pins.set_registered(tid, nr, vec![span]);
                }
            }
            self.thread_stack(sp + 1)?;
            if let Some((nr, args)) = call {
                let n = Notification {
                    id: 0,
                    tid,
                    nr,
                    args,
                };
                self.serve_call(&n)?;
            }
        }
        if let Some(g) = self.guard.as_mut() {
            g.quiesced = true;
        }
        Ok(true)
    }

    /// The pointers the kernel keeps for the stopped thread, registered
    /// before the filter went in (each with the call that registers it):
    /// its `rseq` area and robust list (read from here), the word cleared
    /// at its exit and its alternate signal stack (read by injected
    /// `prctl(PR_GET_TID_ADDRESS)` and `sigaltstack` calls into uzswap's
    /// scratch page).
    fn kept_pointers(&mut self, tracee: &mut Tracee) -> Vec<(i64, Span)> {
        let tid = tracee.tid();
        let mut kept = Vec::new();
        if let Some((at, len)) = tracee.rseq_area() {
            kept.extend(page_span(at, len).map(|s| (nr::RSEQ, s)));
        }
        let (mut head, mut len) = (0usize, 0usize);
        // SAFETY: get_robust_list writes the two words we pass.
        let r = unsafe { libc::syscall(libc::SYS_get_robust_list, tid, &mut head, &mut len) };
        if r == 0 && head != 0 {
            kept.extend(page_span(head, len).map(|s| (nr::SET_ROBUST_LIST, s)));
        }
        let Some(scratch) = self.scratch_page(tracee) else {
            return kept;
        };
        const PR_GET_TID_ADDRESS: u64 = 40;
        let pid = self.pid;
        let mut serve = || self.serve_events();
        let r = tracee.syscall(
            libc::SYS_prctl,
            &[PR_GET_TID_ADDRESS, scratch as u64],
            &mut serve,
        );
        let mut word = [0u8; 8];
        if matches!(r, Ok(0)) && crate::mem::read(pid, scratch, &mut word).is_ok() {
            let at = u64::from_ne_bytes(word) as usize;
            if at != 0 {
                kept.extend(page_span(at, 4).map(|s| (nr::SET_TID_ADDRESS, s)));
            }
        }
        // The old stack, read as the table reads a new one (`stack_t`, its
        // area registered unless disabled).
        let old = (scratch + 8) as u64;
        let r = tracee.syscall(libc::SYS_sigaltstack, &[0, old], &mut serve);
        if matches!(r, Ok(0)) {
            let mem = RemoteMem {
                tid,
                failed: Cell::new(None),
            };
            guard::for_each_buffer(nr::SIGALTSTACK, &[old, 0, 0, 0, 0, 0], &mem, &mut |b| {
                if let Buffer::Registered { addr, len, .. } = b {
                    kept.extend(page_span(addr, len).map(|s| (nr::SIGALTSTACK, s)));
                }
            });
        }
        kept
    }

    /// Whether calls wait for an answer.
    pub(super) fn calls_pending(&self) -> bool {
        self.guard.as_ref().is_some_and(|g| !g.pending.is_empty())
    }

    /// Receives the calls waiting now. The thread stopped for an injection
    /// makes only the injected calls: let through at once.
    pub(super) fn take_calls(&mut self) {
        let tracee = self.in_flight.tracee;
        let Some(g) = self.guard.as_mut() else {
            return;
        };
        while let Some(n) = g.listener.recv() {
            if Some(n.tid) == tracee {
                g.listener.allow(n.id);
            } else {
                g.pending.push_back(n);
            }
        }
    }

    /// Serves the calls waiting (see the module's docs).
    pub(super) fn serve_calls(&mut self) -> Result<(), PagerError> {
        self.take_calls();
        if !self.calls_pending() {
            return Ok(());
        }
        // A call of a new image (the target ran `execve`) is served in it:
        // the exec is followed first (checked after the calls were taken,
        // so that none of them was made after a look that missed it).
        if !self.image_gone && !self.os.image_alive() {
            self.reopen_after_exec()?;
        }
        let Some(g) = self.guard.as_mut() else {
            return Ok(());
        };
        let calls = std::mem::take(&mut g.pending);
        let mut waiting = VecDeque::new();
        for n in calls {
            if self.serve_call(&n)? {
                self.stats.syscall_notifications += 1;
                if let Some(g) = &self.guard {
                    g.listener.allow(n.id);
                }
            } else {
                waiting.push_back(n);
            }
        }
        if let Some(g) = self.guard.as_mut() {
            waiting.append(&mut g.pending);
            g.pending = waiting;
        }
        Ok(())
    }

    /// Maps and pins call `n`'s buffers; `false` if a page cannot be
    /// mapped yet.
    fn serve_call(&mut self, n: &Notification) -> Result<bool, PagerError> {
        if !shares_memory(self.pid, n.tid) {
            // A child with memory of its own (a copy made at its fork):
            // nothing of it is paged.
            return Ok(true);
        }
        if let Some(g) = self.guard.as_mut() {
            if g.fork.is_some_and(|(t, _)| t == n.tid) {
                g.fork = None; // its fork returned
            }
        }
        if is_fork(n) && !self.fork_begins(n.tid)? {
            return Ok(false);
        }
        if let Some(top) = new_thread_stack(n) {
            if !self.thread_stack(top)? {
                return Ok(false);
            }
        }
        let Some(pins) = self.buffers_of(n)? else {
            return Ok(false);
        };
        self.stats.syscall_unknown += pins.unknown as u64;
        self.stats.syscall_unknown_buffers += pins.unknown_buffers;
        let spans = pins.call.iter().chain(&pins.registered).map(|&(s, _)| s);
        let bytes: usize = spans
            .chain(pins.held.iter().copied())
            .map(|(s, e)| e - s)
            .sum();
        self.stats.syscall_pinned_bytes += bytes as u64;
        self.stats.syscall_registered += (pins.registered.len() + pins.held.len()) as u64;
        if let Some(g) = self.guard.as_mut() {
            let restartable = RESTARTABLE.contains(&n.nr);
            g.pins.set_call(
                n.tid,
                pins.call.iter().map(|&(s, _)| s).collect(),
                restartable,
            );
            if !pins.registered.is_empty() {
                let spans = pins.registered.iter().map(|&(s, _)| s).collect();
                g.pins.set_registered(n.tid, n.nr, spans);
            }
            for &s in &pins.held {
                g.pins.hold(s);
            }
        }
        let mut ready = true;
        let writes = pins.held.iter().map(|&s| (s, true));
        for (span, w) in pins
            .call
            .iter()
            .chain(&pins.registered)
            .copied()
            .chain(writes)
        {
            ready &= self.make_present(span, w)?;
        }
        Ok(ready)
    }

    /// The buffers call `n` touches, walked through the target's memory;
    /// `None` while a page a pointer is in cannot be mapped yet.
    fn buffers_of(&mut self, n: &Notification) -> Result<Option<CallPins>, PagerError> {
        let mut out = CallPins::default();
        for _ in 0..WALKS {
            let mem = RemoteMem {
                tid: n.tid,
                failed: Cell::new(None),
            };
            let mut found = Vec::new();
            let coverage = guard::for_each_buffer(n.nr, &n.args, &mem, &mut |b| found.push(b));
            out = CallPins {
                unknown: coverage == guard::Coverage::Unknown,
                ..CallPins::default()
            };
            for b in found {
                match b {
                    Buffer::Range { addr, len, access } => out
                        .call
                        .extend(page_span(addr, len).map(|s| (s, access.kernel_writes()))),
                    Buffer::CStr { addr, max } => {
                        let Some(span) = self.string_span(n.tid, addr, max)? else {
                            return Ok(None);
                        };
                        out.call.push((span, false));
                    }
                    Buffer::Registered { addr, len, access } => {
                        let span = page_span(addr, len);
                        if matches!(n.nr, nr::CLONE | nr::CLONE3) {
                            out.held.extend(span);
                        } else {
                            out.registered
                                .extend(span.map(|s| (s, access.kernel_writes())));
                        }
                    }
                    Buffer::Unknown { addr } => {
                        out.unknown_buffers += 1;
                        out.call.extend(page_span(addr, 1).map(|s| (s, true)))
                    }
                }
            }
            // A pointer the walk could not follow: its page mapped, again.
            match mem.failed.get() {
                Some(at) if self.in_registered(at) => {
                    let page = at & !(PAGE_SIZE - 1);
                    if !self.make_present((page, page + PAGE_SIZE), false)? {
                        return Ok(None);
                    }
                }
                _ => return Ok(Some(out)),
            }
        }
        Ok(Some(out))
    }

    /// The pages of the NUL-terminated string at `addr` (at most `max`
    /// bytes), mapped as it is read.
    fn string_span(
        &mut self,
        tid: i32,
        addr: usize,
        max: usize,
    ) -> Result<Option<Span>, PagerError> {
        let end = addr.saturating_add(max);
        let mut page = addr & !(PAGE_SIZE - 1);
        let mut buf = vec![0u8; PAGE_SIZE];
        while page < end {
            if self.in_registered(page) && !self.make_present((page, page + PAGE_SIZE), false)? {
                return Ok(None);
            }
            let from = addr.max(page);
            let to = (page + PAGE_SIZE).min(end);
            let chunk = &mut buf[..to - from];
            if crate::mem::read(tid, from, chunk).is_err() {
                break; // not mapped: the kernel fails the call, as it would
            }
            if let Some(i) = chunk.iter().position(|&b| b == 0) {
                return Ok(page_span(addr, from + i + 1 - addr));
            }
            page += PAGE_SIZE;
        }
        Ok(page_span(addr, page.min(end).saturating_sub(addr)))
    }

    /// Maps every page of `span` in registered memory: stored pages
    /// swapped in, absent ones mapped as zeros; where the kernel `writes`,
    /// a protection left by a cut-short batch removed. `false` if a page
    /// could not be mapped yet.
    fn make_present(&mut self, (s, e): Span, writes: bool) -> Result<bool, PagerError> {
        let parts = self.registered_within(s, e);
        let mut ready = true;
        for (ps, pe) in parts {
            let mut a = ps;
            while a < pe {
                match self.pages.get(&a).copied() {
                    Some(Page::Resident) => a += PAGE_SIZE,
                    Some(Page::Evicting(slot)) => {
                        if writes {
                            let _ = self.swap.free(slot);
                            self.pages.insert(a, Page::Resident);
                            let _ = self.os.write_protect(a, PAGE_SIZE, false);
                        }
                        a += PAGE_SIZE;
                    }
                    Some(Page::Stored(_) | Page::Held) => {
                        ready &= self.swap_back(a)?;
                        self.stats.syscall_pages_in += 1;
                        a += PAGE_SIZE;
                    }
                    None => {
                        let end = self.pages.range(a..pe).next().map_or(pe, |(&k, _)| k);
                        ready &= self.map_zeros(a, end);
                        a = end;
                    }
                }
            }
        }
        Ok(ready)
    }

    /// A stored (or held) page at `addr` copied back into the target, as
    /// its missing fault would be. Whether it is mapped now (`false`:
    /// refused for now, an event is queued; other states are left as they
    /// are and count as mapped).
    fn swap_back(&mut self, addr: usize) -> Result<bool, PagerError> {
        if !matches!(self.pages.get(&addr), Some(Page::Stored(_) | Page::Held)) {
            return Ok(true);
        }
        self.missing(addr, None)?;
        Ok(self.pages.get(&addr) == Some(&Page::Resident))
    }

    /// Maps zeros over the absent pages `[s, e)`; `false` if refused for
    /// now.
    fn map_zeros(&mut self, s: usize, e: usize) -> bool {
        let mut a = s;
        while a < e {
            let (done, rest) = match self.os.zeropage(a, e - a) {
                Ok(()) => (e - a, None),
                Err((errno, done)) => (done, Some(errno)),
            };
            for p in (a..a + done).step_by(PAGE_SIZE) {
                self.set_resident(p);
                self.stats.syscall_pages_in += 1;
            }
            a += done;
            match rest {
                None => {}
                // Mapped already: by a fault served before (resident), or
                // a page the program discarded whose zap is still to come
                // (left out of the account, as in `missing`).
                Some(libc::EEXIST) => {
                    a += PAGE_SIZE;
                }
                Some(libc::EAGAIN) => return false,
                // Unmapped meanwhile: nothing for the kernel to touch.
                Some(_) => return true,
            }
        }
        true
    }

    /// A fork of the target by thread `tid`: every page brought back, and
    /// eviction held until the child exists. `false` while a page cannot
    /// be mapped yet.
    fn fork_begins(&mut self, tid: i32) -> Result<bool, PagerError> {
        let mut ready = true;
        for a in self.pages_away() {
            ready &= self.swap_back(a)?;
        }
        if ready {
            self.stats.fork_swapins += 1;
            let children = children_of(self.pid, tid);
            if let Some(g) = self.guard.as_mut() {
                g.fork = Some((tid, children));
            }
        }
        Ok(ready)
    }

    /// Whether a fork is under way (no eviction then). It is over when
    /// its thread has one more child, makes another call, or has exited.
    pub(super) fn forking(&mut self) -> bool {
        let pid = self.pid;
        let Some(g) = self.guard.as_mut() else {
            return false;
        };
        if let Some((tid, before)) = g.fork {
            if !thread_alive(tid) || children_of(pid, tid) > before {
                g.fork = None;
            }
        }
        g.fork.is_some()
    }

    /// A new thread's stack, whose top is `top`: left to the kernel (see
    /// the module's docs). `false` while a page cannot be brought back.
    fn thread_stack(&mut self, top: usize) -> Result<bool, PagerError> {
        let Some(((s, e), guard_page)) = mapping_at(self.pid, top.saturating_sub(1)) else {
            return Ok(true);
        };
        if !guard_page || e - s > STACK_MAPPING_MAX {
            let Some(span) = page_span(top.saturating_sub(STACK_TOP_PINNED), STACK_TOP_PINNED)
            else {
                return Ok(true);
            };
            if let Some(g) = self.guard.as_mut() {
                g.pins.hold(span);
            }
            return self.make_present(span, true);
        }
        // Back from the pager: stored pages first.
        let in_stack: Vec<usize> = self.pages.range(s..e).map(|(&a, _)| a).collect();
        for a in in_stack {
            if !self.swap_back(a)? {
                return Ok(false);
            }
        }
        let parts = self.registered_within(s, e);
        for (ps, pe) in parts {
            let r = match self.os.real() {
                Some(real) => real.uffd.unregister(ps as *mut libc::c_void, pe - ps),
                None => Ok(()),
            };
            if let Err(e) = r {
                return Err(PagerError::Io(std::io::Error::other(format!(
                    "UFFDIO_UNREGISTER of a thread stack at {ps:#x}: {e}"
                ))));
            }
            self.registered = subtract(&self.registered, ps, pe);
        }
        // Its pages are the kernel's now.
        let gone: Vec<usize> = self.pages.range(s..e).map(|(&a, _)| a).collect();
        for a in gone {
            if let Some(Page::Resident | Page::Evicting(_)) = self.pages.remove(&a) {
                self.stats.resident_pages -= 1;
            }
        }
        if let Some(g) = self.guard.as_mut() {
            if !g.stacks.contains(&(s, e)) {
                // (A stack the C library reuses for a new thread is one.)
                g.stacks.push((s, e));
                self.stats.stacks_left_to_kernel += 1;
            }
        }
        Ok(true)
    }

    /// The thread stacks left to the kernel (not to be registered).
    pub(super) fn stacks_left_to_kernel(&self) -> &[Span] {
        self.guard.as_ref().map_or(&[][..], |g| &g.stacks)
    }

    /// Before `[s, e)` is registered: its pinned pages populated, so that
    /// a call already let through finds them mapped.
    pub(super) fn populate_pinned(&self, s: usize, e: usize) {
        let Some(g) = &self.guard else {
            return;
        };
        let mut byte = [0u8; 1];
        for page in g.pins.pages_in(s, e) {
            let _ = crate::mem::read(self.pid, page, &mut byte);
        }
    }

    /// Pins of threads that have exited go.
    pub(super) fn forget_exited_threads(&mut self) {
        let Some(g) = self.guard.as_mut() else {
            return;
        };
        for tid in g.pins.tids() {
            if !thread_alive(tid) {
                g.pins.thread_exited(tid);
            }
        }
    }

    /// `[s, e)` was unmapped: what the guard held there goes.
    pub(super) fn unmapped(&mut self, s: usize, e: usize) {
        if let Some(g) = self.guard.as_mut() {
            g.pins.unmapped(s, e);
            g.stacks.retain(|&(ss, se)| se <= s || ss >= e);
        }
    }

    /// The target ran `execve`: the old image's stacks and fork are gone
    /// (pins go with their threads).
    pub(super) fn exec_seen(&mut self) {
        if let Some(g) = self.guard.as_mut() {
            g.stacks.clear();
            g.fork = None;
        }
    }

    /// The guard's listener, for the calls of the children the target
    /// leaves behind ([`Listener::allow_until_hung_up`], once the target
    /// has been reaped).
    pub fn into_listener(mut self) -> Option<Listener> {
        self.guard.take().map(|g| g.listener)
    }
}

/// Whether call `n` makes a process with a copy of the caller's memory.
fn is_fork(n: &Notification) -> bool {
    match n.nr {
        nr::FORK => true,
        nr::CLONE => n.args[0] & CLONE_VM == 0,
        nr::CLONE3 => clone3_word(n, 0).is_some_and(|flags| flags & CLONE_VM == 0),
        _ => false,
    }
}

/// The top of the stack a `clone`/`clone3` sharing memory gives its child.
fn new_thread_stack(n: &Notification) -> Option<usize> {
    match n.nr {
        nr::CLONE if n.args[0] & CLONE_VM != 0 && n.args[1] != 0 => Some(n.args[1] as usize),
        nr::CLONE3 => {
            let flags = clone3_word(n, 0)?;
            let (stack, size) = (clone3_word(n, 40)?, clone3_word(n, 48)?);
            (flags & CLONE_VM != 0 && stack != 0).then_some((stack + size) as usize)
        }
        _ => None,
    }
}

/// A word of `clone3`'s `struct clone_args` (flags at 0, stack at 40, its
/// size at 48).
fn clone3_word(n: &Notification, offset: usize) -> Option<u64> {
    if n.args[1] < 64 {
        return None;
    }
    let mut b = [0u8; 8];
    crate::mem::read(n.tid, n.args[0] as usize + offset, &mut b).ok()?;
    Some(u64::from_ne_bytes(b))
}

/// The private anonymous mapping of process `pid` that holds `addr`, and
/// whether an inaccessible mapping ends where it starts (a guard page: a
/// thread stack as the C libraries map one).
fn mapping_at(pid: i32, addr: usize) -> Option<(Span, bool)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let mut guard_ends = None;
    for line in maps.lines() {
        let Some(range) = crate::maps::parse_range(line) else {
            continue;
        };
        if crate::maps::is_pageable(line) && (range.0..range.1).contains(&addr) {
            return Some((range, guard_ends == Some(range.0)));
        }
        let perms = line.split_whitespace().nth(1).unwrap_or("");
        guard_ends = perms.starts_with("---").then_some(range.1);
    }
    None
}

/// Whether thread `tid` uses process `pid`'s memory (its thread, or a
/// `vfork` child before its `execve`); where `kcmp(2)` cannot tell, it is
/// taken to (pinning a page for nothing is safe).
fn shares_memory(pid: i32, tid: i32) -> bool {
    common::kcmp::same_memory(pid, tid).unwrap_or(true)
}

fn thread_alive(tid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{tid}")).exists()
}

/// How many children thread `tid` of `pid` has.
fn children_of(pid: i32, tid: i32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children"))
        .map_or(0, |s| s.split_whitespace().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Maps three pages, the lowest with `low_prot`, the others read-write.
    fn three_pages(low_prot: libc::c_int) -> usize {
        // SAFETY: a new private anonymous mapping of our own.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                3 * PAGE_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED);
        // SAFETY: the first page of the mapping just made.
        assert_eq!(unsafe { libc::mprotect(at, PAGE_SIZE, low_prot) }, 0);
        at as usize
    }

    #[test]
    fn a_stack_as_the_c_libraries_map_one_has_a_guard_page_below() {
        let pid = std::process::id() as i32;
        let stack = three_pages(libc::PROT_NONE);
        let top = stack + 3 * PAGE_SIZE;
        let ((s, e), guard_page) = mapping_at(pid, top - 1).unwrap();
        assert_eq!((s, e), (stack + PAGE_SIZE, top));
        assert!(guard_page);
        let other = three_pages(libc::PROT_READ);
        let ((s, _), guard_page) = mapping_at(pid, other + 2 * PAGE_SIZE).unwrap();
        assert_eq!(s, other + PAGE_SIZE);
        assert!(!guard_page, "a readable mapping below is no guard page");
    }
}
