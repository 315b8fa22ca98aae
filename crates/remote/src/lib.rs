//! # remote — the out-of-process pager
//!
//! uzswap's in-process runtime enters a program through its LD_PRELOAD
//! library, which a statically linked program (Go's default, musl builds)
//! never loads. This crate pages such a program from outside, as CRIU's
//! lazy-pages daemon and crosvm's vmm-swap monitor serve another process's
//! faults:
//!
//! * **The userfaultfd** is opened *in* the target, by a `userfaultfd(2)`
//!   injected with `ptrace` ([`inject`]), taken into the pager with
//!   `pidfd_getfd(2)` and closed in the target ([`uffd::open_in`]). Its
//!   ioctls act on the target's memory from here: register, copy, zero
//!   page, write-protect, wake.
//! * **Memory found and followed** ([`maps`]): the target's private
//!   anonymous writable mappings are read from `/proc/PID/maps` every
//!   [`pager::MAPS_INTERVAL`] and, once its anonymous memory has reached
//!   half the limit, registered; their populated pages (pagemap) are
//!   adopted as resident. Changes to registered memory come
//!   as userfaultfd events: `munmap` (`UNMAP`), `madvise` discards
//!   (`REMOVE`), `mremap` (`REMAP`), `fork` (`FORK`, whose child gets a
//!   copy of every stored page and is then left to the kernel).
//! * **Evicted pages dropped in the target** by one injected
//!   `process_madvise(MADV_DONTNEED)` of the target on itself per batch
//!   (from outside, `process_madvise(2)` refuses that advice; its ranges
//!   are written to a page uzswap maps in the target; one `madvise` a
//!   range where the kernel refuses it). Reclaim sweeps the address space
//!   so that a batch's ranges are a few long spans: each range costs the
//!   target one round trip with the pager, its `REMOVE` event.
//! * **Starting a static program** ([`spawn`]): the child stops at its
//!   `execve` (`PTRACE_TRACEME`), the pager opens its userfaultfd and
//!   detaches. Between injections the target is not traced: its signals,
//!   threads and `exec`s are its own.
//! * **An unprivileged user** gets a user-mode-only userfaultfd: the
//!   pager injects a seccomp filter that holds the target's system calls
//!   with user pointers until it has mapped and pinned their buffers
//!   ([`seccomp`], [`pins`], `pager/syscalls.rs`), from a quarter of the
//!   limit on.
//! * **Attaching to a running process** ([`attach`]): `PTRACE_SEIZE` of
//!   its main thread, long enough to open the userfaultfd; its memory is
//!   registered as it is (populated pages adopted). [`Pager::release`]
//!   gives every page back and closes the userfaultfd, leaving the
//!   process as it was.
//! * **Folio swap-in** (`pager/folio.rs`): a swap-in fault that streams
//!   (the runtime's `FolioSwapin` rule) brings the stored pages around it
//!   in its 64K folio with one `UFFDIO_COPY`; a random one takes its page.
//! * **Recording** (`--record`, `pager/record.rs`): the pager writes the
//!   design lab's trace (`trace` crate) of what it sees: registered
//!   ranges as regions, faults, evictions with page samples, the limit.
//!
//! ## Invariants
//!
//! 1. A page the target wrote is the page it reads back: a page is
//!    write-protected before it is read for storing, and discarded only
//!    after it is stored; a write in between waits in a write-protect
//!    fault that is woken only after the discard, and then faults as
//!    missing and gets the stored bytes (`pager/mod.rs` argues each state).
//! 2. The pager never makes the kernel wait for itself: it reads only
//!    populated pages, through `/proc/PID/mem`, which fails at once on a
//!    page unmapped since (`process_vm_readv` would fault into the pager's
//!    own userfaultfd), and serves events while it waits for a stopped
//!    thread (the thread may be blocked in a fault of that userfaultfd).
//! 3. An injection leaves the thread as it was: every register restored,
//!    an interrupted system call restarted, signals held while it was
//!    stopped delivered at detach.
//! 4. The kernel never touches a page that is not mapped: either kernel
//!    faults are handled (the userfaultfd is not user-mode-only, and the
//!    target's system calls on evicted pages wait for them), or the
//!    target is under the syscall guard before any of its memory is
//!    registered: each system call with a user pointer waits until its
//!    buffers are mapped and pinned, and what the kernel touches outside
//!    calls (rseq, robust lists, the word cleared at a thread's exit,
//!    signal frames on alternate stacks and thread stacks) is pinned or
//!    left to the kernel ([`seccomp`], [`pins`], `pager/syscalls.rs`).
//!
//! 1 and 2 are model-checked: `pager/model.rs` runs the pager's own code
//! against a model kernel and model threads (`pager/os.rs` is the seam).
//!
//! ## Lock order
//!
//! None: one thread (the tracer) does all of the pager's work. Beside it,
//! where the pager may follow the faults onto the program's CPU
//! (`pager/follow.rs`), a watchdog thread may change that thread's
//! scheduling policy and CPUs; the two share atomic flags only.

pub mod inject;
pub mod maps;
pub mod mem;
pub mod pager;
pub mod pins;
pub mod seccomp;
pub mod spawn;
pub mod uffd;

pub use pager::{Ended, Pager, PagerConfig, PagerError, PagerStats};
pub use spawn::{attach, is_static, resolve, spawn};
