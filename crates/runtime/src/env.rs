//! The real world the protocol runs in: userfaultfd ioctls, `madvise`,
//! `PAGEMAP_SCAN`, and the swap store ([`zswap::Swap`]).

use crate::counters::Counters;
use crate::forkcell::ForkCell;
use crate::pagemap::PagemapScan;
use crate::protocol::{
    Env, Event, KernelError, Loaded, Slot, StoreError, StoreId, SwapinFault, PAGE,
};
use crate::shared::SharedLimit;
use crate::store_side::{LoadContext, LoadOutcome, StoreSide};
use crate::sys;
use crate::uffd::FaultMode;
use common::wakeup::Wakeup;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use userfaultfd::Uffd;
use zswap::Swap;

/// What belongs to one process and a forked child replaces: the
/// userfaultfd, the store evictions go to, threads, file handles.
pub(crate) struct Live {
    pub uffd: Uffd,
    /// The store this process's evictions go to.
    pub own: Arc<Swap>,
    /// Stores inherited from ancestors (read-only): `StoreId(i + 1)`.
    pub inherited: Vec<Inherited>,
    /// `PAGEMAP_SCAN` for write tracking; `None` when off or unsupported.
    pub pagemap: Option<PagemapScan>,
    /// Wakes the fault handler out of `poll` at shutdown.
    pub stop_fd: libc::c_int,
    /// A limit shared with other processes, if any.
    pub shared: Option<SharedLimit>,
    /// Wakes the reclaimer.
    pub reclaim_wake: Wakeup,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    /// Forks whose children may still read this process's swap file.
    pub generations: Mutex<Vec<Generation>>,
    /// Where what paging sees is recorded (`--record`), this process's own
    /// queue.
    pub recorder: Option<trace::Recorder>,
}

impl Live {
    /// The limit in force, in pages, for a runtime configured with
    /// `configured`: lower where a controller of the shared limit set it
    /// lower (`--max-slowdown`).
    pub fn limit_in_force(&self, configured: usize) -> usize {
        match self.shared.as_ref().and_then(|s| s.controlled_limit()) {
            Some(c) => c.min(configured),
            None => configured,
        }
    }
}

/// A store inherited from an ancestor, and the fork generation (of that
/// ancestor's swap file) whose frozen slots this process may read.
pub(crate) struct Inherited {
    pub swap: Arc<Swap>,
    pub generation: u64,
}

/// A fork of this process: the slots of its swap file frozen for the child.
#[derive(Debug)]
pub(crate) struct Generation {
    pub id: u64,
    pub slots: Vec<u64>,
    pub at: std::time::Instant,
}

/// The runtime's [`Env`].
pub(crate) struct RealEnv {
    live: ForkCell<Live>,
    pub mode: FaultMode,
    /// One folio of zeros: the source of first-touch write faults.
    zeros: Box<[u8]>,
    pub counters: Counters,
    /// How swap-ins load, and the budget split (`store_side.rs`).
    pub store_side: StoreSide,
    /// Every call into a store holds it (shared); a fork holds it alone, so
    /// that no thread is inside a store at the instant of the fork.
    pub gate: RwLock<()>,
    /// The copy of the run being stored: the store compresses from it, not
    /// from the program's pages, so that no fault of ours can happen while
    /// it holds its slot locks. Only the reclaimer stores; taken inside the
    /// gate, so never held across a fork.
    staging: Mutex<Vec<u8>>,
}

fn errno_of(e: &userfaultfd::Error) -> i32 {
    match e {
        userfaultfd::Error::CopyFailed(errno)
        | userfaultfd::Error::ZeropageFailed(errno)
        | userfaultfd::Error::SystemError(errno) => *errno as i32,
        userfaultfd::Error::PartiallyCopied(_) => libc::EAGAIN,
        _ => libc::EIO,
    }
}

fn kerr(op: &'static str, addr: usize, len: usize, errno: i32) -> KernelError {
    KernelError {
        op,
        addr,
        len,
        errno,
    }
}

impl RealEnv {
    pub fn new(live: Live, mode: FaultMode, cfg: &crate::RuntimeConfig) -> Self {
        Self {
            live: ForkCell::new(live),
            mode,
            zeros: vec![0u8; cfg.evict_folio_pages.max(1) * PAGE].into_boxed_slice(),
            counters: Counters::default(),
            store_side: StoreSide::new(cfg),
            gate: RwLock::new(()),
            staging: Mutex::new(Vec::new()),
        }
    }

    pub fn live(&self) -> &Live {
        self.live.get()
    }

    /// A forked child's own [`Live`] in place of its parent's; returns the
    /// parent's.
    ///
    /// # Safety
    /// As [`ForkCell::replace_in_child`].
    pub unsafe fn replace_live_in_child(&self, live: Live) -> Live {
        // SAFETY: the caller's guarantee.
        unsafe { self.live.replace_in_child(live) }
    }

    fn uffd(&self) -> &Uffd {
        &self.live().uffd
    }

    /// Holds the store gate (shared) for one store call (a fork takes it
    /// exclusively).
    pub(crate) fn gated(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.gate.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// `UFFDIO_COPY` of `src` to `dst`, write-protected from the start if
    /// `protect` (`UFFDIO_COPY_MODE_WP`), finishing a partial copy (EAGAIN
    /// with progress) and retrying a changing address space.
    fn copy(
        &self,
        src: &[u8],
        dst: usize,
        wake: bool,
        protect: bool,
        op: &'static str,
    ) -> Result<(), KernelError> {
        let mut done = 0;
        let mut again = 0;
        while done < src.len() {
            match self.copy_once(&src[done..], dst + done, wake, protect) {
                Ok(n) => done += n,
                Err((libc::EAGAIN, n)) if n > 0 => done += n,
                Err((libc::EAGAIN, _)) if again < 1000 => again += 1,
                // The run crosses a mapping boundary (a program's mlock or
                // madvise split the region): one fill must fit one mapping,
                // so go page by page.
                Err((libc::ENOENT, _)) if src.len() - done > PAGE => {
                    for off in (done..src.len()).step_by(PAGE) {
                        self.copy(&src[off..off + PAGE], dst + off, wake, protect, op)?;
                    }
                    return Ok(());
                }
                Err((errno, _)) => return Err(kerr(op, dst + done, src.len() - done, errno)),
            }
        }
        Ok(())
    }

    /// One `UFFDIO_COPY` ioctl, made here because the `userfaultfd` crate
    /// has no write-protected mode: the bytes copied, or the errno and the
    /// bytes copied before it.
    fn copy_once(
        &self,
        src: &[u8],
        dst: usize,
        wake: bool,
        protect: bool,
    ) -> Result<usize, (i32, usize)> {
        let mut mode = 0;
        if !wake {
            mode |= userfaultfd_sys::UFFDIO_COPY_MODE_DONTWAKE;
        }
        if protect {
            mode |= userfaultfd_sys::UFFDIO_COPY_MODE_WP;
        }
        let mut arg = userfaultfd_sys::uffdio_copy {
            dst: dst as u64,
            src: src.as_ptr() as u64,
            len: src.len() as u64,
            mode,
            copy: 0,
        };
        // SAFETY: `arg` is a valid uffdio_copy for the call; `src` is a live
        // buffer of `len` bytes; the destination lies in a registered region
        // whose pages there are in flight (owned by the calling operation),
        // so nothing else maps them.
        let r = unsafe {
            libc::ioctl(
                self.uffd().as_raw_fd(),
                userfaultfd_sys::UFFDIO_COPY as _,
                &mut arg,
            )
        };
        if r == 0 {
            return Ok(src.len());
        }
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        Err((errno, usize::try_from(arg.copy).unwrap_or(0)))
    }

    fn zeropage(&self, addr: usize, len: usize, wake: bool) -> Result<(), KernelError> {
        for again in 0.. {
            // SAFETY: the range lies in a registered region of ours.
            match unsafe { self.uffd().zeropage(addr as *mut libc::c_void, len, wake) } {
                Ok(_) => return Ok(()),
                Err(e) if errno_of(&e) == libc::EAGAIN && again < 1000 => {
                    // Part of it may be mapped now: go page by page, where
                    // EEXIST is our own progress.
                    if len > PAGE {
                        for a in (addr..addr + len).step_by(PAGE) {
                            match self.zeropage(a, PAGE, wake) {
                                Ok(()) => {}
                                Err(e) if e.is(libc::EEXIST) => {}
                                Err(e) => return Err(e),
                            }
                        }
                        return Ok(());
                    }
                }
                // Across a mapping boundary (see `copy`): page by page.
                Err(e) if errno_of(&e) == libc::ENOENT && len > PAGE => {
                    for a in (addr..addr + len).step_by(PAGE) {
                        self.zeropage(a, PAGE, wake)?;
                    }
                    return Ok(());
                }
                Err(e) => return Err(kerr("UFFDIO_ZEROPAGE", addr, len, errno_of(&e))),
            }
        }
        unreachable!()
    }
}

impl Env for RealEnv {
    type Buf = Vec<u8>;

    fn map_zeros(
        &self,
        addr: usize,
        pages: usize,
        write: bool,
        wake: bool,
    ) -> Result<(), KernelError> {
        if write {
            // The program is about to write: map zeroed pages of its own, as
            // the kernel's anonymous write fault does, rather than the zero
            // page and a copy-on-write fault (with its TLB flush) right after.
            let zeros = &self.zeros[..pages * PAGE];
            self.copy(zeros, addr, wake, false, "UFFDIO_COPY (zeros)")
        } else {
            self.zeropage(addr, pages * PAGE, wake)
        }
    }

    fn map_zeros_protected(&self, addr: usize) -> Result<(), KernelError> {
        self.copy(
            &self.zeros[..PAGE],
            addr,
            true,
            true,
            "UFFDIO_COPY (zeros, protected)",
        )
    }

    fn map(
        &self,
        addr: usize,
        buf: &Vec<u8>,
        wake: bool,
        protect: bool,
    ) -> Result<(), KernelError> {
        self.copy(&buf[..PAGE], addr, wake, protect, "UFFDIO_COPY")
    }

    fn wake(&self, addr: usize, len: usize) -> Result<(), KernelError> {
        self.uffd()
            .wake(addr as *mut libc::c_void, len)
            .map_err(|e| kerr("UFFDIO_WAKE", addr, len, errno_of(&e)))
    }

    fn protect(&self, addr: usize, len: usize) -> Result<(), KernelError> {
        self.uffd()
            .write_protect(addr as *mut libc::c_void, len)
            .map_err(|e| kerr("UFFDIO_WRITEPROTECT", addr, len, errno_of(&e)))
    }

    fn unprotect(&self, addr: usize, len: usize, wake: bool) -> Result<(), KernelError> {
        self.uffd()
            .remove_write_protection(addr as *mut libc::c_void, len, wake)
            .map_err(|e| kerr("UFFDIO_WRITEPROTECT (remove)", addr, len, errno_of(&e)))
    }

    fn discard(&self, addr: usize, len: usize) -> Result<(), KernelError> {
        // SAFETY: the range is a run being evicted: its contents are stored.
        unsafe { sys::madvise(addr, len, libc::MADV_DONTNEED) }.map_err(|e| {
            kerr(
                "MADV_DONTNEED",
                addr,
                len,
                e.raw_os_error().unwrap_or(libc::EIO),
            )
        })
    }

    fn discard_ranges(&self, ranges: &[(usize, usize)]) -> Vec<Result<(), KernelError>> {
        // SAFETY: every range is a run being evicted: its contents are
        // stored.
        let results = unsafe { common::discard::discard_each(ranges) };
        ranges
            .iter()
            .zip(results)
            .map(|(&(addr, len), r)| {
                r.map_err(|e| {
                    kerr(
                        "MADV_DONTNEED",
                        addr,
                        len,
                        e.raw_os_error().unwrap_or(libc::EIO),
                    )
                })
            })
            .collect()
    }

    fn written(
        &self,
        addr: usize,
        len: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> Result<(), KernelError> {
        match &self.live().pagemap {
            Some(p) => p.written(addr, addr + len, out).map_err(|e| {
                kerr(
                    "PAGEMAP_SCAN",
                    addr,
                    len,
                    e.raw_os_error().unwrap_or(libc::EIO),
                )
            }),
            None => Ok(()),
        }
    }

    fn still_protected(&self, addr: usize, len: usize) -> Result<bool, KernelError> {
        let clean = match &self.live().pagemap {
            Some(p) => p.all_protected(addr, addr + len).map_err(|e| {
                kerr(
                    "PAGEMAP_SCAN",
                    addr,
                    len,
                    e.raw_os_error().unwrap_or(libc::EIO),
                )
            })?,
            None => false,
        };
        Ok(clean)
    }

    fn evicting_clean(&self, addr: usize, pages: usize) {
        if let Some(rec) = &self.live().recorder {
            let pages = pages as u16;
            rec.push(trace::Event::Evict {
                addr: addr as u64,
                pages,
                zero: 0,
                disk: pages,
                compressed_bytes: 0,
            });
        }
    }

    fn store_run(&self, addr: usize, pages: usize) -> Result<Vec<Slot>, StoreError> {
        let _gate = self.gated();
        let own = &self.live().own;
        let slots = own
            .alloc_slots(pages)
            .map_err(|e| StoreError(e.to_string()))?;
        // A page the program discarded behind our back faults when it is
        // read, and the handler maps zeros (the kernel's answer) for this
        // thread only (the evictor); it may itself be waiting for a slot
        // lock (a swap-in of the same stripe). So the run is read with no
        // lock of the store held: `swap_out` compresses before it locks
        // any slot. Where the compressor reads pages in other threads
        // (`--parallel`), whose faults the handler would make wait for this
        // eviction, the run is copied out first, in this thread.
        // SAFETY: the run is mapped and write-protected (it is `Evicting`):
        // no thread writes it while it is read. A raw discard may still
        // replace a page with zeros (the kernel's doing): the read faults,
        // in this thread, and the store is refused below.
        let src = unsafe { std::slice::from_raw_parts(addr as *const u8, pages * PAGE) };
        let discards = self.counters.external_discards.load(Ordering::Acquire);
        // The copy's buffer, locked only where there is a copy to make.
        let mut staging;
        let run: Vec<&[u8]> = if own.reads_pages_in_caller() {
            src.chunks_exact(PAGE).collect()
        } else {
            staging = self.staging.lock().unwrap_or_else(PoisonError::into_inner);
            staging.resize(pages * PAGE, 0);
            staging.copy_from_slice(src);
            staging.chunks_exact(PAGE).collect()
        };
        let stored = self
            .store_side
            .store(own, &run, &slots)
            .map_err(|e| e.to_string());
        // A page discarded while it was read may have been stored half old
        // bytes, half zeros (a torn copy). The handler counts each such
        // fault before it maps the zeros, so any fault since the read began
        // shows here (another evictor's too: then this refusal is only
        // caution). Refused, the run stays resident, the discarded page
        // reading zeros, and a later pass evicts it whole.
        let torn = self.counters.external_discards.load(Ordering::Acquire) != discards;
        match stored {
            Ok(report) if !torn => {
                if let Some(rec) = &self.live().recorder {
                    record_evicted(rec, addr, &report);
                    // A sample of the run's pages, read while the run is
                    // still mapped and protected, as `swap_out` read it (a
                    // page discarded behind our back just now is sampled
                    // as the zeros its fault maps: a sample, not data).
                    if let Err(e) = rec.sample_run(addr as u64, &run, &report.page_sizes) {
                        eprintln!(
                            "uzswap: --record {}: page samples: {e}; recording stops, the program goes on",
                            rec.path().display()
                        );
                    }
                }
                Ok(slots)
            }
            result => {
                for &s in &slots {
                    let _ = own.free(s);
                }
                Err(StoreError(result.err().unwrap_or_else(|| {
                    "a page of the run was discarded while it was read".into()
                })))
            }
        }
    }

    fn load(
        &self,
        store: StoreId,
        slot: Slot,
        out: &mut Vec<u8>,
        neighbours: &[Slot],
        fault: Option<SwapinFault>,
        keep_clean: bool,
    ) -> Result<Loaded<Vec<u8>>, StoreError> {
        let _gate = self.gated();
        out.resize(PAGE, 0);
        if store != StoreId::OWN {
            // An ancestor's store: read, never changed (its pool and file
            // are the parent's too); no fault-around.
            let inherited = self
                .live()
                .inherited
                .get(store.0 as usize - 1)
                .ok_or_else(|| StoreError(format!("no store {}", store.0)))?;
            inherited
                .swap
                .read_frozen(slot, out)
                .map_err(|e| StoreError(e.to_string()))?;
            return Ok(Loaded::default());
        }
        let live = self.live();
        let c = &self.counters;
        let cx = LoadContext {
            own: &live.own,
            // A kept slot is evicted again only after `still_protected`
            // says so: without PAGEMAP_SCAN nothing is kept.
            can_keep_clean: live.pagemap.is_some(),
            kept_clean: c.kept_clean.load(Ordering::Relaxed),
            clean_written: c.clean_written.load(Ordering::Relaxed),
            evicted_pages: c.evicted_pages.load(Ordering::Relaxed),
            limit_in_force: &|configured| live.limit_in_force(configured),
            cost_ns: None,
        };
        let LoadOutcome { got, kept, folio } = self
            .store_side
            .load(slot, out, neighbours, fault, keep_clean, &cx)
            .map_err(|e| StoreError(e.to_string()))?;
        if folio {
            self.counters.add(Event::FolioSwapin, 1);
        }
        Ok(Loaded {
            kept: kept.contains(&slot),
            around: got
                .into_iter()
                .map(|(s, b)| (s, b.into_vec(), kept.contains(&s)))
                .collect(),
        })
    }

    fn free(&self, store: StoreId, slot: Slot) {
        if store == StoreId::OWN {
            let _gate = self.gated();
            let _ = self.live().own.free(slot);
        }
    }

    fn count(&self, event: Event, n: usize) {
        self.counters.add(event, n);
    }
}

/// The records of a run at `addr` stored for eviction: its `Evict`, then
/// its pages' `Sizes`, eight pages each (zswap's page-size marks are the
/// trace's).
fn record_evicted(rec: &trace::Recorder, addr: usize, report: &zswap::SwapOutReport) {
    rec.push_evicted(
        addr as u64,
        report.zero,
        report.disk,
        report.compressed_bytes,
        &report.page_sizes,
    );
}
