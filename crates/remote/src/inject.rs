//! System calls run inside another process, by `ptrace` (what CRIU's
//! compel does for its parasite, reduced to one call at a time).
//!
//! [`Tracee::seize`] attaches to one thread with `PTRACE_SEIZE` and stops it
//! with `PTRACE_INTERRUPT`; [`Tracee::syscall`] points its instruction
//! pointer at a `syscall` instruction of the target's vDSO, loads the
//! number and arguments, single-steps over it and reads the result;
//! [`Tracee::detach`] restores every register and lets the thread go. The
//! thread's code is never written: another thread running the same code
//! can never see a patched instruction.
//!
//! A thread stopped inside a system call (a `futex` wait, `epoll_wait`)
//! has the kernel's restart state in its registers (`rax` is
//! `-ERESTARTSYS`, `orig_rax` the call's number). An injected call runs with
//! `orig_rax = -1`, so the kernel applies no restart logic to it; the
//! saved registers, put back at detach, restart the interrupted call as if
//! nothing happened.
//!
//! Signals that arrive for the thread while it is stopped are taken out
//! of the way (the stop that reports them is resumed without them) and
//! sent to it again after detach (`tgkill`), so the target never loses one
//! and never sees one of uzswap's.
//!
//! While it waits for the thread, the caller's `serve` runs every
//! millisecond: the thread may be blocked in a fault or event of the very
//! userfaultfd its tracer serves.

use std::time::{Duration, Instant};

/// Errors of an injection. Each leaves the target running as it was.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    #[error("ptrace({op}) of thread {tid}: {source}")]
    Ptrace {
        op: &'static str,
        tid: i32,
        source: std::io::Error,
    },
    #[error("thread {0} exited")]
    Exited(i32),
    #[error("no `syscall` instruction in the vDSO of process {0}")]
    NoSyscallInstruction(i32),
    #[error("thread {tid} did not stop within {waited:?}")]
    Timeout { tid: i32, waited: Duration },
    #[error("thread {tid} got signal {sig} at the injected `syscall` instruction")]
    NoSyscallThere { tid: i32, sig: i32 },
    #[error("thread {0} kept receiving signals instead of making the injected call")]
    Signals(i32),
    #[error("reading process {pid}'s {what}: {source}")]
    Read {
        pid: i32,
        what: &'static str,
        source: std::io::Error,
    },
}

const PTRACE_EVENT_STOP: i32 = 128;
/// How long a thread may take to stop or to finish an injected call.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Signals held during one injected call past which it is given up.
const MAX_HELD_SIGNALS: usize = 64;
/// How long a wait for a stop spins before it sleeps between looks.
const SPIN: Duration = Duration::from_millis(2);

/// One thread of the target, stopped under `ptrace`.
pub struct Tracee {
    pid: i32,
    tid: i32,
    /// The thread's registers when it stopped (all zeroes until then:
    /// never restored before it stopped).
    saved: libc::user_regs_struct,
    stopped: bool,
    syscall_insn: u64,
    /// Signals taken out of the way while stopped, delivered at detach.
    signals: Vec<i32>,
    attached: bool,
}

fn ptrace(
    op: &'static str,
    req: libc::c_uint,
    tid: i32,
    addr: usize,
    data: usize,
) -> Result<i64, InjectError> {
    // SAFETY: ptrace with plain integer arguments, or (for GETREGS and
    // SETREGS) a pointer to a live `user_regs_struct` the caller owns.
    let r = unsafe {
        libc::ptrace(
            req,
            tid,
            addr as *mut libc::c_void,
            data as *mut libc::c_void,
        )
    };
    if r == -1 {
        let source = std::io::Error::last_os_error();
        if source.raw_os_error() == Some(libc::ESRCH) {
            return Err(InjectError::Exited(tid));
        }
        return Err(InjectError::Ptrace { op, tid, source });
    }
    Ok(r)
}

/// How a wait for the thread ended.
enum Stop {
    /// `PTRACE_EVENT_STOP` (the interrupt, or a group stop).
    Interrupt,
    /// A signal-delivery stop, or the trap of a single step.
    Signal(i32),
}

/// The next ptrace stop of `tid` if it has one: the stop's code (signal,
/// and event in bits 8..16, as `waitpid`'s status >> 8). Exits are never
/// consumed (`WSTOPPED` alone): the process's parent reaps it as usual.
pub fn stop_code(tid: i32) -> Result<Option<i32>, InjectError> {
    // SAFETY: siginfo_t is plain data; all zeroes is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes into the local siginfo.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            tid as libc::id_t,
            &mut info,
            libc::WSTOPPED | libc::WNOHANG | libc::__WALL,
        )
    };
    if r == -1 {
        let source = std::io::Error::last_os_error();
        return match source.raw_os_error() {
            Some(libc::EINTR) => Ok(None),
            Some(libc::ECHILD) => Err(InjectError::Exited(tid)),
            _ => Err(InjectError::Ptrace {
                op: "waitid",
                tid,
                source,
            }),
        };
    }
    // SAFETY: waitid filled the child fields (si_pid 0 when none waited).
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    Ok((pid == tid).then_some(status))
}

/// Whether thread `tid` is gone or a zombie.
fn thread_dead(tid: i32) -> bool {
    common::proc_stat::read(tid as u32).is_none_or(|s| matches!(s.state, 'Z' | 'X'))
}

/// Waits for the next stop of `tid`, running `serve` every millisecond
/// while it has none.
fn wait_stop(tid: i32, serve: &mut dyn FnMut()) -> Result<Stop, InjectError> {
    let start = Instant::now();
    let mut looks = 0u64;
    loop {
        if let Some(code) = stop_code(tid)? {
            if code >> 8 == PTRACE_EVENT_STOP {
                return Ok(Stop::Interrupt);
            }
            return Ok(Stop::Signal(code & 0xff));
        }
        looks += 1;
        // A thread that exited never stops: looked for now and then (a
        // read of /proc costs more than the wait's other calls together).
        if looks.is_multiple_of(64) && thread_dead(tid) {
            return Err(InjectError::Exited(tid));
        }
        if start.elapsed() > STOP_TIMEOUT {
            return Err(InjectError::Timeout {
                tid,
                waited: start.elapsed(),
            });
        }
        serve();
        // Stops come within microseconds: spin for a while, then sleep.
        if start.elapsed() > SPIN {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl Tracee {
    /// Attaches to thread `tid` of process `pid` and stops it.
    /// `syscall_insn` is the address of a `syscall` instruction in the
    /// process ([`find_syscall_insn`]).
    pub fn seize(
        pid: i32,
        tid: i32,
        syscall_insn: u64,
        serve: &mut dyn FnMut(),
    ) -> Result<Self, InjectError> {
        ptrace("SEIZE", libc::PTRACE_SEIZE, tid, 0, 0)?;
        let mut t = Tracee {
            pid,
            tid,
            // SAFETY: user_regs_struct is plain integers; all zeroes is a
            // valid value, overwritten below.
            saved: unsafe { std::mem::zeroed() },
            syscall_insn,
            signals: Vec::new(),
            attached: true,
            stopped: false,
        };
        ptrace("INTERRUPT", libc::PTRACE_INTERRUPT, tid, 0, 0)?;
        loop {
            match wait_stop(tid, serve)? {
                Stop::Interrupt => break,
                Stop::Signal(sig) => {
                    // A signal on its way in: hold it, and go on to the
                    // interrupt's stop.
                    t.signals.push(sig);
                    ptrace("CONT", libc::PTRACE_CONT, tid, 0, 0)?;
                }
            }
        }
        t.saved = t.regs()?;
        t.stopped = true;
        Ok(t)
    }

    /// A thread already stopped under this thread's `ptrace` (a
    /// `PTRACE_TRACEME` child at its exec stop).
    pub fn stopped(tid: i32, syscall_insn: u64) -> Result<Self, InjectError> {
        let mut t = Tracee {
            pid: tid,
            tid,
            // SAFETY: plain integers; overwritten below.
            saved: unsafe { std::mem::zeroed() },
            syscall_insn,
            signals: Vec::new(),
            attached: true,
            stopped: true,
        };
        t.saved = t.regs()?;
        Ok(t)
    }

    /// The stopped thread.
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// The thread's stack pointer where it stopped.
    pub fn stack_pointer(&self) -> usize {
        self.saved.rsp as usize
    }

    /// The system call the thread was stopped in, where the kernel will go
    /// on with it through `restart_syscall` (a sleep: `futex`, `poll`,
    /// `nanosleep`; no new entry that a seccomp filter would see): its
    /// number and arguments.
    pub fn restarting_call(&self) -> Option<(i64, [u64; 6])> {
        const ERESTART_RESTARTBLOCK: i64 = -516;
        let r = &self.saved;
        (r.orig_rax as i64 >= 0 && r.rax as i64 == ERESTART_RESTARTBLOCK)
            .then_some((r.orig_rax as i64, [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9]))
    }

    /// The thread's `rseq` area (address, bytes), if it registered one:
    /// the kernel writes it on the thread's way back to user mode, which a
    /// stopped thread must be able to do.
    pub fn rseq_area(&self) -> Option<(usize, usize)> {
        /// `PTRACE_GET_RSEQ_CONFIGURATION` (Linux 5.13).
        const PTRACE_GET_RSEQ_CONFIGURATION: libc::c_uint = 0x420f;
        #[repr(C)]
        #[derive(Default)]
        struct RseqConfiguration {
            rseq_abi_pointer: u64,
            rseq_abi_size: u32,
            signature: u32,
            flags: u32,
            pad: u32,
        }
        let mut conf = RseqConfiguration::default();
        let size = std::mem::size_of::<RseqConfiguration>();
        let r = ptrace(
            "GET_RSEQ_CONFIGURATION",
            PTRACE_GET_RSEQ_CONFIGURATION,
            self.tid,
            size,
            &mut conf as *mut _ as usize,
        )
        .ok()?;
        (r > 0 && conf.rseq_abi_pointer != 0).then_some((
            conf.rseq_abi_pointer as usize,
            conf.rseq_abi_size.max(32) as usize,
        ))
    }

    fn regs(&self) -> Result<libc::user_regs_struct, InjectError> {
        // SAFETY: zeroed plain integers, filled in by GETREGS.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        ptrace(
            "GETREGS",
            libc::PTRACE_GETREGS,
            self.tid,
            0,
            &mut regs as *mut _ as usize,
        )?;
        Ok(regs)
    }

    fn set_regs(&self, regs: &libc::user_regs_struct) -> Result<(), InjectError> {
        ptrace(
            "SETREGS",
            libc::PTRACE_SETREGS,
            self.tid,
            0,
            regs as *const _ as usize,
        )?;
        Ok(())
    }

    /// Runs system call `nr` with `args` in the thread; returns what it
    /// returned (a negative errno on failure).
    pub fn syscall(
        &mut self,
        nr: i64,
        args: &[u64],
        serve: &mut dyn FnMut(),
    ) -> Result<i64, InjectError> {
        let mut regs = self.saved;
        regs.rax = nr as u64;
        regs.orig_rax = u64::MAX;
        regs.rip = self.syscall_insn;
        let slots = [
            &mut regs.rdi,
            &mut regs.rsi,
            &mut regs.rdx,
            &mut regs.r10,
            &mut regs.r8,
            &mut regs.r9,
        ];
        for (slot, &a) in slots.into_iter().zip(args) {
            *slot = a;
        }
        self.set_regs(&regs)?;
        ptrace("SINGLESTEP", libc::PTRACE_SINGLESTEP, self.tid, 0, 0)?;
        loop {
            match wait_stop(self.tid, serve)? {
                Stop::Signal(libc::SIGTRAP) => {
                    let after = self.regs()?;
                    if after.rip == self.syscall_insn + 2 {
                        return Ok(after.rax as i64);
                    }
                    // A trap of the program's own before the step: hold it.
                    self.signals.push(libc::SIGTRAP);
                }
                Stop::Signal(sig @ (libc::SIGSEGV | libc::SIGBUS | libc::SIGILL))
                    if self.regs()?.rip == self.syscall_insn =>
                {
                    // The instruction itself faults: no `syscall` there (the
                    // process ran `execve`, its vDSO moved). Never retried.
                    return Err(InjectError::NoSyscallThere { tid: self.tid, sig });
                }
                Stop::Signal(sig) => self.signals.push(sig),
                Stop::Interrupt => {}
            }
            if self.signals.len() > MAX_HELD_SIGNALS {
                return Err(InjectError::Signals(self.tid));
            }
            ptrace("SINGLESTEP", libc::PTRACE_SINGLESTEP, self.tid, 0, 0)?;
        }
    }

    /// Puts the thread's registers back and lets it go, delivering the
    /// signals held while it was stopped.
    pub fn detach(mut self) -> Result<(), InjectError> {
        self.set_regs(&self.saved)?;
        // Resumed with no signal (the stop may be an event stop, where a
        // signal given to DETACH is dropped); the held ones are sent again.
        ptrace("DETACH", libc::PTRACE_DETACH, self.tid, 0, 0)?;
        self.attached = false;
        self.resend_signals();
        Ok(())
    }

    /// Sends the signals held while the thread was stopped to it again,
    /// in the order they came (their `siginfo` is the kernel's for
    /// `tgkill`).
    fn resend_signals(&self) {
        for &sig in &self.signals {
            // SAFETY: tgkill with integers; the thread may have exited, which
            // loses nothing of ours.
            unsafe { libc::syscall(libc::SYS_tgkill, self.pid, self.tid, sig) };
        }
    }
}

impl Drop for Tracee {
    fn drop(&mut self) {
        if self.attached {
            // An error path: leave the thread as it was. A thread that never
            // stopped cannot be detached yet: [`detach_when_stopped`] must
            // be called for it later.
            if self.stopped {
                let _ = self.set_regs(&self.saved);
            }
            if ptrace("DETACH", libc::PTRACE_DETACH, self.tid, 0, 0).is_ok() {
                self.resend_signals();
            } else {
                reap_traced(self.pid, self.tid);
            }
        }
    }
}

/// A traced thread that exited is a zombie until its tracer waits for
/// it, and keeps its process from being done: reap it, unless it is the
/// process's main thread, whose exit status is its parent's.
fn reap_traced(pid: i32, tid: i32) {
    if tid != pid && thread_dead(tid) {
        let mut status = 0;
        // SAFETY: waitpid for a thread we trace, into a local.
        unsafe { libc::waitpid(tid, &mut status, libc::__WALL | libc::WNOHANG) };
    }
}

/// For a thread left attached by a wait that timed out: detaches it if it
/// has stopped since (delivering the signal its stop reports). Returns
/// whether it is detached (or gone).
pub fn detach_when_stopped(pid: i32, tid: i32) -> bool {
    match stop_code(tid) {
        Ok(Some(code)) => {
            let sig = if code >> 8 == 0 { code & 0xff } else { 0 };
            let _ = ptrace("DETACH", libc::PTRACE_DETACH, tid, 0, sig as usize);
            true
        }
        Ok(None) if thread_dead(tid) => {
            reap_traced(pid, tid);
            true
        }
        Ok(None) => false,
        Err(_) => true,
    }
}

/// The address of a `syscall` instruction (`0f 05`) in process `pid`'s
/// vDSO, which every process has mapped executable.
pub fn find_syscall_insn(pid: i32) -> Result<u64, InjectError> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|source| {
        InjectError::Read {
            pid,
            what: "maps",
            source,
        }
    })?;
    let vdso = maps
        .lines()
        .find(|l| l.ends_with("[vdso]"))
        .and_then(crate::maps::parse_range)
        .ok_or(InjectError::NoSyscallInstruction(pid))?;
    let mut bytes = vec![0u8; vdso.1 - vdso.0];
    crate::mem::read(pid, vdso.0, &mut bytes).map_err(|source| InjectError::Read {
        pid,
        what: "vDSO",
        source,
    })?;
    bytes
        .windows(2)
        .position(|w| w == [0x0f, 0x05])
        .map(|i| (vdso.0 + i) as u64)
        .ok_or(InjectError::NoSyscallInstruction(pid))
}
