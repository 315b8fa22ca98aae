//! A resident limit shared by several processes (`uzswap run` and its
//! children), as one memcg is: a small file mapped by every runtime of the
//! run, with one slot per process holding its pid, its charged pages and
//! the time its threads have waited on uzswap (its stall). Reclaim
//! compares the sum of the live slots with the limit; each process then
//! evicts from its own pages. A process that dies without clearing its
//! slot is found by a liveness check (`kill(pid, 0)`) and swept.
//!
//! A header in front of the slots lets a controller that holds no slot
//! ([`LimitControl`]: `uzswap run --max-slowdown`) lower or raise the
//! limit of every process of the run at once (`memory.high` written by
//! Senpai), and read their total charge and stall; the stall of
//! processes that are gone is kept in the header, so the total only
//! grows.

use common::passed_fd::PassedFd;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Processes one shared limit can hold.
pub const SLOTS: usize = 512;

#[repr(C)]
struct Header {
    /// The limit in pages a controller set (0: none; each runtime's own
    /// limit stands).
    limit_pages: AtomicU64,
    /// Stall of the processes whose slots were cleared, ns.
    retired_stall_ns: AtomicU64,
    /// Age, ms, past which a controller has the runtimes evict resident
    /// pages before any pressure (0: none).
    cold_age_ms: AtomicU64,
    /// Background CPU time of the processes whose slots were cleared, ns.
    retired_background_ns: AtomicU64,
    /// One past the highest slot ever claimed: sums stop there. Charges
    /// are summed at every fault over the limit, and most runs hold a few
    /// processes of the [`SLOTS`].
    slot_bound: AtomicU64,
    _reserved: [AtomicU64; 3],
}

#[repr(C)]
struct Slot {
    pid: AtomicU32,
    _pad: u32,
    resident: AtomicU64,
    /// Time this process's threads waited on uzswap so far, ns.
    stall_ns: AtomicU64,
    /// Pages this process has swapped out now (pool or file).
    swapped: AtomicU64,
    /// Of those, pages on the swap file (a device read each to bring
    /// back, where a pool page is a decompression).
    on_file: AtomicU64,
    /// CPU time of this process's reclaimer so far, ns: work beside the
    /// program's threads, not a wait of theirs.
    background_ns: AtomicU64,
}

const SLOTS_OFFSET: usize = std::mem::size_of::<Header>();
const FILE_BYTES: usize = SLOTS_OFFSET + SLOTS * std::mem::size_of::<Slot>();

/// Views this process image holds. A forked child inherits its parent's
/// count (and forgets the parent's view); an exec starts again from 0.
static VIEWS_IN_THIS_IMAGE: AtomicUsize = AtomicUsize::new(0);

/// Opens the shared-limit file `path` for reading and writing, made with
/// mode 0600 if it is not there; never through a symbolic link, and only
/// a regular file of this user's.
pub fn open_limit_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_file() || meta.uid() != me {
        return Err(std::io::Error::other(format!(
            "{}: not a regular file of user {me}: refusing it as the shared-limit file",
            path.display()
        )));
    }
    Ok(file)
}

/// A shared limit file, mapped: its header and slots.
#[derive(Debug)]
struct Mapping {
    base: *mut u8,
}

// SAFETY: the mapping is shared memory accessed only through atomics; the
// pointer stays valid until drop.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `path` (created with mode 0600 and sized if needed; never
    /// through a symbolic link, and only a regular file of this user's).
    fn open(path: &Path) -> std::io::Result<Self> {
        Self::map(open_limit_file(path)?.as_raw_fd())
    }

    /// Sizes the file open at `fd` (for reading and writing: the one
    /// opened by name, or the descriptor `uzswap run` passed down, which
    /// stays open for the process's children) to hold the slots, if it is
    /// smaller, and maps them.
    fn map(fd: std::os::fd::RawFd) -> std::io::Result<Self> {
        let len = common::passed_fd::stat(fd)
            .ok_or_else(std::io::Error::last_os_error)?
            .st_size;
        if (len.max(0) as usize) < FILE_BYTES {
            // SAFETY: ftruncate on an open descriptor; the result is checked.
            if unsafe { libc::ftruncate(fd, FILE_BYTES as libc::off_t) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        // SAFETY: a shared mapping of the file's first FILE_BYTES bytes,
        // which exist; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FILE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self {
            base: ptr as *mut u8,
        })
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with the header, is page-aligned and
        // lives as long as `self`; the header is only accessed through
        // atomics.
        unsafe { &*(self.base as *const Header) }
    }

    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < SLOTS);
        // SAFETY: `i < SLOTS` and the mapping holds the header and SLOTS
        // slots (8-byte aligned after the 64-byte header) for as long as
        // `self` lives; slots are only accessed through atomics.
        unsafe { &*(self.base.add(SLOTS_OFFSET) as *const Slot).add(i) }
    }

    fn live_slots(&self) -> impl Iterator<Item = &Slot> {
        (0..self.bound())
            .map(|i| self.slot(i))
            .filter(|s| s.pid.load(Ordering::Relaxed) != 0)
    }

    /// `field` summed over the live processes' slots.
    fn live_sum(&self, field: impl Fn(&Slot) -> &AtomicU64) -> u64 {
        self.live_slots()
            .map(|s| field(s).load(Ordering::Relaxed))
            .sum()
    }

    /// Pages every live process of the limit is charged.
    fn charge(&self) -> usize {
        self.live_sum(|s| &s.resident) as usize
    }

    /// Clears `slot` (held by `owner`), keeping its stall in the header.
    fn retire(&self, slot: &Slot, owner: u32) {
        slot.resident.store(0, Ordering::Release);
        slot.swapped.store(0, Ordering::Release);
        slot.on_file.store(0, Ordering::Release);
        if slot
            .pid
            .compare_exchange(owner, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            let stall = slot.stall_ns.swap(0, Ordering::AcqRel);
            self.header()
                .retired_stall_ns
                .fetch_add(stall, Ordering::AcqRel);
            let background = slot.background_ns.swap(0, Ordering::AcqRel);
            self.header()
                .retired_background_ns
                .fetch_add(background, Ordering::AcqRel);
        }
    }

    /// Clears the slots of processes that died without clearing them
    /// (except slot `keep`).
    /// Slots that may be live: those below the highest ever claimed.
    fn bound(&self) -> usize {
        (self.header().slot_bound.load(Ordering::Acquire) as usize).min(SLOTS)
    }

    fn sweep(&self, keep: usize) {
        for i in (0..self.bound()).filter(|&i| i != keep) {
            let slot = self.slot(i);
            let owner = slot.pid.load(Ordering::Acquire);
            if owner != 0 && !alive(owner) {
                self.retire(slot, owner);
            }
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `open`; no reference to it
        // outlives `self`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, FILE_BYTES) };
    }
}

/// This process's view of a shared limit file.
#[derive(Debug)]
pub struct SharedLimit {
    map: Mapping,
    mine: usize,
    pid: u32,
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 checks existence and permission, delivers nothing.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

impl SharedLimit {
    /// Maps `path` (created with mode 0600 and sized if needed; never
    /// through a symbolic link, and only a regular file of this user's)
    /// and claims a slot.
    ///
    /// A slot holding our own pid is taken over only while this process
    /// image has no view open: it was claimed by this pid before an exec (a
    /// forked child that exec'd). Otherwise it is another view of this
    /// image (two runtimes in one process) and stays its own.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Self::open_passed(path, None)
    }

    /// As [`SharedLimit::open`], through `passed` (the file `uzswap run`
    /// passed down as a descriptor) while that is still open on it: a
    /// process that changed user since the run started may not open
    /// `path`, which lies in the folder of the user who started it.
    pub fn open_passed(path: &Path, passed: Option<&PassedFd>) -> std::io::Result<Self> {
        let map = match passed.and_then(|p| p.current(false)) {
            Some(fd) => Mapping::map(fd)?,
            None => Mapping::open(path)?,
        };
        let pid = std::process::id();
        let mut shared = SharedLimit {
            map,
            mine: usize::MAX,
            pid,
        };
        for i in 0..SLOTS {
            let slot = shared.slot(i);
            let owner = slot.pid.load(Ordering::Acquire);
            // Free, a dead process's, or our own pid's: a slot this pid
            // claimed before an exec (a forked child that exec'd) is stale.
            let stale_own = owner == pid && VIEWS_IN_THIS_IMAGE.load(Ordering::Acquire) == 0;
            if (owner == 0 || stale_own || !alive(owner))
                && slot
                    .pid
                    .compare_exchange(owner, pid, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                slot.resident.store(0, Ordering::Release);
                slot.stall_ns.store(0, Ordering::Release);
                slot.swapped.store(0, Ordering::Release);
                slot.on_file.store(0, Ordering::Release);
                slot.background_ns.store(0, Ordering::Release);
                shared
                    .map
                    .header()
                    .slot_bound
                    .fetch_max(i as u64 + 1, Ordering::AcqRel);
                shared.mine = i;
                VIEWS_IN_THIS_IMAGE.fetch_add(1, Ordering::AcqRel);
                return Ok(shared);
            }
        }
        Err(std::io::Error::other(format!(
            "{}: all {SLOTS} process slots are taken",
            path.display()
        )))
    }

    fn slot(&self, i: usize) -> &Slot {
        self.map.slot(i)
    }

    /// Records this process's charged pages.
    pub fn publish(&self, charged: usize) {
        self.slot(self.mine)
            .resident
            .store(charged as u64, Ordering::Relaxed);
    }

    /// Resident pages of every process of the limit.
    pub fn total(&self) -> usize {
        self.map.charge()
    }

    /// Adds `ns` to this process's stall. Lock-free: faulting threads call
    /// it from their signal handlers.
    pub fn add_stall(&self, ns: u64) {
        self.slot(self.mine)
            .stall_ns
            .fetch_add(ns, Ordering::Relaxed);
    }

    /// Records the pages this process has swapped out and how many of
    /// them are on the swap file (what bringing everything back would cost
    /// it), and the CPU time its reclaimer has used so far, ns.
    pub fn publish_reclaim(&self, swapped: usize, on_file: usize, background_ns: u64) {
        let slot = self.slot(self.mine);
        slot.swapped.store(swapped as u64, Ordering::Relaxed);
        slot.on_file.store(on_file as u64, Ordering::Relaxed);
        slot.background_ns.store(background_ns, Ordering::Relaxed);
    }

    /// The limit a controller set, in pages, if any.
    pub fn controlled_limit(&self) -> Option<usize> {
        match self.map.header().limit_pages.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n as usize),
        }
    }

    /// The age, ms, past which a controller set resident pages to leave
    /// before any pressure, if it did.
    pub fn cold_age_ms(&self) -> Option<u32> {
        match self.map.header().cold_age_ms.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n.min(u64::from(u32::MAX)) as u32),
        }
    }

    /// Clears the slots of processes that died without clearing them.
    pub fn sweep(&self) {
        self.map.sweep(self.mine);
    }

    /// Gives the slot up (at exit: this process's pages no longer count;
    /// its stall stays in the run's total).
    pub fn leave(&self) {
        self.map.retire(self.slot(self.mine), self.pid);
    }
}

impl Drop for SharedLimit {
    fn drop(&mut self) {
        self.leave();
        VIEWS_IN_THIS_IMAGE.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A controller's view of a shared limit file: it holds no slot, sets the
/// limit of every process of the run, and reads their charge and stall.
#[derive(Debug)]
pub struct LimitControl {
    map: Mapping,
}

impl LimitControl {
    /// Maps `path` (created if needed, as [`SharedLimit::open`] does).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            map: Mapping::open(path)?,
        })
    }

    /// Sets the limit of every process of the run, in pages (0: each
    /// runtime's own limit).
    pub fn set_limit(&self, pages: usize) {
        self.map
            .header()
            .limit_pages
            .store(pages as u64, Ordering::Relaxed);
    }

    /// Has every process of the run evict its resident pages untouched
    /// for `ms` (as far as it can tell) before any pressure; 0: none.
    pub fn set_cold_age_ms(&self, ms: u32) {
        self.map
            .header()
            .cold_age_ms
            .store(u64::from(ms), Ordering::Relaxed);
    }

    /// Pages the processes of the run are charged now.
    pub fn charge(&self) -> usize {
        self.map.charge()
    }

    /// Pages the processes of the run have swapped out now.
    pub fn swapped(&self) -> usize {
        self.map.live_sum(|s| &s.swapped) as usize
    }

    /// Of [`LimitControl::swapped`], the pages on the processes' swap
    /// files.
    pub fn on_file(&self) -> usize {
        self.map.live_sum(|s| &s.on_file) as usize
    }

    /// Time the threads of the run's processes, live or gone, have waited
    /// on uzswap so far, ns.
    pub fn stall_ns(&self) -> u64 {
        self.total(|s| &s.stall_ns, |h| &h.retired_stall_ns)
    }

    /// CPU time the reclaimers of the run's processes, live or gone, have
    /// used so far, ns.
    pub fn background_ns(&self) -> u64 {
        self.total(|s| &s.background_ns, |h| &h.retired_background_ns)
    }

    /// A total over the live slots' `field` and what the slots cleared
    /// left in the header's `retired` (dead processes swept first).
    fn total(
        &self,
        field: impl Fn(&Slot) -> &AtomicU64,
        retired: impl Fn(&Header) -> &AtomicU64,
    ) -> u64 {
        self.map.sweep(usize::MAX);
        self.map.live_sum(field) + retired(self.map.header()).load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests count views of this image: one at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Slot `i`, as a process that claimed it and died would have left it
    /// (no such pid).
    fn claimed_by_the_dead(view: &SharedLimit, i: usize) -> &Slot {
        let slot = view.slot(i);
        slot.pid.store(u32::MAX - 1, Ordering::Relaxed);
        view.map
            .header()
            .slot_bound
            .fetch_max(i as u64 + 1, Ordering::AcqRel);
        slot
    }

    #[test]
    fn sums_stop_past_the_highest_slot_ever_claimed() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("uzswap-bound-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let a = SharedLimit::open(&path).unwrap();
        let b = SharedLimit::open(&path).unwrap();
        assert_eq!(a.map.bound(), 2);
        a.publish(10);
        b.publish(5);
        // Past the bound nothing is read: no process ever claimed slot 40,
        // whatever it holds.
        b.slot(40).pid.store(std::process::id(), Ordering::Relaxed);
        b.slot(40).resident.store(1_000_000, Ordering::Relaxed);
        assert_eq!(a.total(), 15);
        // A slot given up keeps the bound; the next claim takes it again.
        let b_slot = b.mine;
        drop(b);
        let c = SharedLimit::open(&path).unwrap();
        assert_eq!(c.mine, b_slot);
        assert_eq!(c.map.bound(), 2);
        c.publish(7);
        assert_eq!(a.total(), 17);
        drop((a, c));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn processes_add_up_and_dead_ones_are_swept() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("uzswap-shared-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let a = SharedLimit::open(&path).unwrap();
        a.publish(100);
        // A second view in this process stands for another process.
        let b = SharedLimit::open(&path).unwrap();
        assert_ne!(a.mine, b.mine);
        b.publish(50);
        assert_eq!(a.total(), 150);
        assert_eq!(b.total(), 150);
        b.leave();
        assert_eq!(a.total(), 100);
        // A slot of a dead process: found and cleared.
        let dead = claimed_by_the_dead(&b, 7);
        dead.resident.store(1000, Ordering::Relaxed);
        assert_eq!(a.total(), 1100);
        a.sweep();
        assert_eq!(a.total(), 100);
        drop(a);
        drop(b);
        let c = SharedLimit::open(&path).unwrap();
        assert_eq!(c.total(), 0);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_controller_sets_the_limit_and_reads_charge_and_stall() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("uzswap-control-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let control = LimitControl::open(&path).unwrap();
        let a = SharedLimit::open(&path).unwrap();
        let b = SharedLimit::open(&path).unwrap();
        assert_eq!(a.controlled_limit(), None);
        control.set_limit(4096);
        assert_eq!(a.controlled_limit(), Some(4096));
        assert_eq!(b.controlled_limit(), Some(4096));
        assert_eq!(a.cold_age_ms(), None);
        control.set_cold_age_ms(1500);
        assert_eq!(b.cold_age_ms(), Some(1500));
        control.set_cold_age_ms(0);
        assert_eq!(b.cold_age_ms(), None);
        a.publish(100);
        b.publish(20);
        a.publish_reclaim(7, 2, 40);
        b.publish_reclaim(3, 3, 60);
        assert_eq!(control.charge(), 120);
        assert_eq!(control.swapped(), 10);
        assert_eq!(control.on_file(), 5);
        a.add_stall(1_000);
        b.add_stall(500);
        b.add_stall(500);
        assert_eq!(control.stall_ns(), 2_000);
        assert_eq!(control.background_ns(), 100);
        // A process that leaves keeps its stall and its reclaimer's time
        // in the totals.
        drop(b);
        assert_eq!(control.charge(), 100);
        assert_eq!(control.stall_ns(), 2_000);
        assert_eq!(control.background_ns(), 100);
        // So does one that died without leaving.
        let dead = claimed_by_the_dead(&a, 9);
        dead.stall_ns.store(300, Ordering::Relaxed);
        assert_eq!(control.stall_ns(), 2_300);
        assert_eq!(control.stall_ns(), 2_300);
        control.set_limit(0);
        assert_eq!(a.controlled_limit(), None);
        drop(a);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_slot_left_by_this_pid_before_an_exec_is_taken_over() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("uzswap-shared-exec-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let before_exec = SharedLimit::open(&path).unwrap();
        before_exec.publish(300);
        // The exec'd image never drops the old view, and starts with no
        // view open.
        let stale_slot = before_exec.mine;
        std::mem::forget(before_exec);
        VIEWS_IN_THIS_IMAGE.fetch_sub(1, Ordering::AcqRel);
        let after_exec = SharedLimit::open(&path).unwrap();
        assert_eq!(after_exec.mine, stale_slot);
        assert_eq!(after_exec.total(), 0, "the stale 300 pages no longer count");
        after_exec.publish(20);
        assert_eq!(after_exec.total(), 20);
        drop(after_exec);
        let _ = std::fs::remove_file(&path);
    }
}
