//! What the pager asks of the kernel about its target, behind one trait:
//! the real kernel ([`RealOs`]: the target's userfaultfd, pidfd, pagemap,
//! `process_vm_readv` and `ptrace`), or the model check's (`model.rs`),
//! which runs the pager's own code against a model kernel and model
//! threads. Everything the pager's fault, event and eviction paths do to
//! the target goes through here; the paths only the real kernel has
//! (reading `/proc`, opening a userfaultfd in a new image, the syscall
//! guard's listener) reach [`RealOs`] through [`Os::real`].

use crate::inject::{InjectError, Tracee};
use crate::mem::{self, Pagemap};
use crate::uffd;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use userfaultfd::{Event, Uffd};

/// The kernel, as the pager sees its target through it. Errors are the
/// kernel's errno values, as the ioctls return them.
pub(crate) trait Os {
    /// The next event queued on the userfaultfd, if any (non-blocking).
    fn read_event(&mut self) -> std::io::Result<Option<Event>>;
    /// Whether an event is queued now.
    fn faults_pending(&self) -> bool;
    /// Whether the target has exited.
    fn target_gone(&self) -> bool;
    /// `UFFDIO_REGISTER` (missing and write-protect modes).
    fn register(&self, start: usize, len: usize) -> Result<(), i32>;
    /// `UFFDIO_ZEROPAGE`; on an error, the bytes mapped before it.
    fn zeropage(&self, start: usize, len: usize) -> Result<(), (i32, usize)>;
    /// `UFFDIO_COPY` of whole pages.
    fn copy(&self, src: &[u8], dst: usize) -> Result<(), i32>;
    /// `UFFDIO_WRITEPROTECT`; unprotecting wakes the waiters.
    fn write_protect(&self, start: usize, len: usize, protect: bool) -> Result<(), i32>;
    /// `UFFDIO_WAKE`.
    fn wake(&self, start: usize, len: usize) -> Result<(), i32>;
    /// Whether the memory the userfaultfd was opened on still has users
    /// (not after the target's `execve`).
    fn image_alive(&self) -> bool;
    /// For each page from `start`: whether it holds data.
    fn populated(&self, start: usize, pages: usize) -> std::io::Result<Vec<bool>>;
    /// Reads the target's memory (populated pages only: a read of an
    /// empty registered page would fault into the pager's own
    /// userfaultfd).
    fn read_mem(&self, addr: usize, buf: &mut [u8]) -> std::io::Result<()>;
    /// Writes the target's memory (pages the pager mapped for itself).
    fn write_mem(&self, addr: usize, buf: &[u8]) -> std::io::Result<()>;
    /// The target's threads, its main thread first.
    fn tids(&self) -> Vec<i32>;
    /// What stops a thread for injected calls; owned, so that the pager
    /// can serve events while it waits for the stop.
    fn seizer(&self) -> Box<dyn Seize>;
    /// The real kernel's handles, for what only it has.
    fn real(&mut self) -> Option<&mut RealOs> {
        None
    }
}

/// Stops a thread of the target.
pub(crate) trait Seize {
    /// Stops thread `tid`; `serve` runs while the pager waits (the thread
    /// may be blocked in a fault only the pager can serve).
    fn seize(&self, tid: i32, serve: &mut dyn FnMut()) -> Result<Box<dyn Stopped>, InjectError>;
}

/// A thread of the target stopped for injected system calls.
pub(crate) trait Stopped {
    fn tid(&self) -> i32;
    /// The thread's `rseq` area (address, bytes), which the kernel writes
    /// as the thread leaves its stop.
    fn rseq_area(&self) -> Option<(usize, usize)>;
    /// Runs system call `nr` in the thread; its return value (a negative
    /// errno on failure). `serve` runs while the call is in the kernel.
    fn syscall(
        &mut self,
        nr: i64,
        args: &[u64],
        serve: &mut dyn FnMut(),
    ) -> Result<i64, InjectError>;
    /// Lets the thread go, as it was.
    fn detach(self: Box<Self>) -> Result<(), InjectError>;
    /// The real `ptrace` handle, for what only it has.
    fn tracee(&mut self) -> Option<&mut Tracee> {
        None
    }
}

/// The real kernel: the target's userfaultfd (opened in it), pidfd,
/// pagemap and memory file, and the address of a `syscall` instruction in
/// it.
pub(crate) struct RealOs {
    pub(crate) pid: i32,
    pub(crate) uffd: Uffd,
    pub(crate) pidfd: OwnedFd,
    pub(crate) pagemap: Pagemap,
    /// `/proc/PID/mem`, read for eviction: a page the kernel does not have
    /// fails the read (`EIO`), where `process_vm_readv` would wait in the
    /// pager's own userfaultfd for ever. The pager reads only populated
    /// pages, but a program's discard whose remove event was read earlier
    /// may unmap one between the check and the read (the model check's
    /// schedules found it).
    pub(crate) mem: std::fs::File,
    pub(crate) syscall_insn: u64,
}

impl RealOs {
    /// The handles of process `pid`'s current image, with `uffd` opened
    /// in it.
    pub(crate) fn open(pid: i32, uffd: Uffd, syscall_insn: u64) -> std::io::Result<Self> {
        Ok(RealOs {
            pid,
            uffd,
            pidfd: uffd::pidfd_open(pid)?,
            pagemap: Pagemap::open(pid)?,
            mem: open_mem(pid)?,
            syscall_insn,
        })
    }
}

/// `/proc/PID/mem`, for reading.
pub(crate) fn open_mem(pid: i32) -> std::io::Result<std::fs::File> {
    std::fs::File::open(format!("/proc/{pid}/mem"))
}

impl RealOs {
    /// The descriptors the pager's loop polls: the userfaultfd, the pidfd.
    pub(crate) fn poll_fds(&self) -> [RawFd; 2] {
        [self.uffd.as_raw_fd(), self.pidfd.as_raw_fd()]
    }
}

impl Os for RealOs {
    fn read_event(&mut self) -> std::io::Result<Option<Event>> {
        self.uffd.read_event().map_err(std::io::Error::other)
    }

    fn faults_pending(&self) -> bool {
        super::readable(self.uffd.as_raw_fd())
    }

    fn target_gone(&self) -> bool {
        super::readable(self.pidfd.as_raw_fd())
    }

    fn register(&self, start: usize, len: usize) -> Result<(), i32> {
        uffd::register(&self.uffd, start, len)
    }

    fn zeropage(&self, start: usize, len: usize) -> Result<(), (i32, usize)> {
        uffd::zeropage(&self.uffd, start, len)
    }

    fn copy(&self, src: &[u8], dst: usize) -> Result<(), i32> {
        uffd::copy(&self.uffd, src, dst)
    }

    fn write_protect(&self, start: usize, len: usize, protect: bool) -> Result<(), i32> {
        uffd::write_protect(&self.uffd, start, len, protect)
    }

    fn wake(&self, start: usize, len: usize) -> Result<(), i32> {
        uffd::wake(&self.uffd, start, len)
    }

    fn image_alive(&self) -> bool {
        self.pagemap.alive()
    }

    fn populated(&self, start: usize, pages: usize) -> std::io::Result<Vec<bool>> {
        self.pagemap.populated(start, pages)
    }

    fn read_mem(&self, addr: usize, buf: &mut [u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.mem.read_exact_at(buf, addr as u64)
    }

    fn write_mem(&self, addr: usize, buf: &[u8]) -> std::io::Result<()> {
        mem::write(self.pid, addr, buf)
    }

    fn tids(&self) -> Vec<i32> {
        let mut tids = vec![self.pid];
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) {
            tids.extend(
                dir.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                    .filter(|&t| t != self.pid),
            );
        }
        tids
    }

    fn seizer(&self) -> Box<dyn Seize> {
        Box::new(RealSeize {
            pid: self.pid,
            syscall_insn: self.syscall_insn,
        })
    }

    fn real(&mut self) -> Option<&mut RealOs> {
        Some(self)
    }
}

/// `PTRACE_SEIZE` and `PTRACE_INTERRUPT` ([`Tracee::seize`]).
struct RealSeize {
    pid: i32,
    syscall_insn: u64,
}

impl Seize for RealSeize {
    fn seize(&self, tid: i32, serve: &mut dyn FnMut()) -> Result<Box<dyn Stopped>, InjectError> {
        Tracee::seize(self.pid, tid, self.syscall_insn, serve).map(|t| Box::new(t) as _)
    }
}

impl Stopped for Tracee {
    fn tid(&self) -> i32 {
        Tracee::tid(self)
    }

    fn rseq_area(&self) -> Option<(usize, usize)> {
        Tracee::rseq_area(self)
    }

    fn syscall(
        &mut self,
        nr: i64,
        args: &[u64],
        serve: &mut dyn FnMut(),
    ) -> Result<i64, InjectError> {
        Tracee::syscall(self, nr, args, serve)
    }

    fn detach(self: Box<Self>) -> Result<(), InjectError> {
        Tracee::detach(*self)
    }

    fn tracee(&mut self) -> Option<&mut Tracee> {
        Some(self)
    }
}
