//! # swapfile — the swap device (mm/swapfile.c and mm/page_io.c's jobs)
//!
//! A [`SwapFile`] is a backing file cut into page-sized *slots* named by
//! their offset, the swap entry's offset in the kernel.
//!
//! * **Slots.** [`SwapFile::alloc`] hands out `n` slots, contiguous when it
//!   can (a folio's pages land together, as the kernel's cluster allocator
//!   arranges). [`SwapFile::free`] returns them.
//! * **Pages.** [`SwapFile::write_pages`] writes pages to their slots,
//!   sealed ([`seal`]): encrypted and authenticated with AES-256-GCM under
//!   a key that lives only in this process's memory (the default), or
//!   plain with a CRC32C. [`SwapFile::read_page`] reads a slot and checks
//!   it. A corrupt, changed or misplaced block is [`SwapError::Corrupt`],
//!   never wrong data, and a slot never written is
//!   [`SwapError::NotWritten`].
//! * **The file** is never reachable by name: `O_TMPFILE` with mode 0600
//!   (or, where the file system lacks it, a fresh 0600 file unlinked at
//!   once), so no other user can open it.
//! * **I/O** goes through [`PageIo`]: [`FileIo`] (pread, and one `pwritev`
//!   per run of contiguous writes) by default ([`IoBackend::Auto`]),
//!   [`UringIo`] (io_uring: a batch of writes is one submission) on
//!   request; [`FaultyIo`] injects EIO, ENOSPC and bit rot in tests.
//! * **The page cache** does not keep the file's pages (`cache.rs`): a
//!   written run goes to the device at once and leaves the cache once
//!   [`WRITTEN_LAG_BYTES`] more have been written, a page read leaves once
//!   read, as the kernel's swap bypasses it. A read-ahead window is one
//!   read ([`SwapFile::read_run`]), each page of it then checked
//!   ([`SwapFile::open_read`]).
//!
//! ## Invariants
//!
//! 1. A slot is allocated to at most one owner at a time. Its seal (tag or
//!    checksum) is valid only between a successful write and the slot's
//!    free or next write.
//! 2. A failed write leaves the slot's seal cleared, so the partly
//!    written block can never be read back as good data.
//! 3. Under encryption no nonce is used twice with one key, and a page
//!    opens only at the slot it was written to, from its latest write.
//!
//! ## Locking
//!
//! The allocator is one mutex. Seals are per-slot atomics. Writes and
//! reads of *one* slot are serialised by the caller (the swap layer's slot
//! lock); different slots may be written in parallel.

mod cache;
mod io;
mod seal;
mod uring;

pub use cache::WRITTEN_LAG_BYTES;
pub use io::{FaultPlan, FaultRates, FaultyIo, FileIo, InjectedFaults, MemIo, PageIo};
pub use seal::Protection;
pub use uring::UringIo;

/// Which I/O back-end a swap file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoBackend {
    /// pread/pwrite, contiguous writes as one `pwritev`: on a buffered
    /// file io_uring hands each write to a kernel worker thread, and a
    /// writeback-bound run (800 MiB of random bytes under 256M) took 1.4x
    /// the time and CPU with it.
    #[default]
    Auto,
    /// io_uring, or an error where it is unavailable.
    Uring,
    /// pread/pwrite.
    Pread,
}

impl std::str::FromStr for IoBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "io_uring" | "uring" => Ok(Self::Uring),
            "pread" => Ok(Self::Pread),
            _ => Err(format!(
                "I/O back-end {s:?}: expected auto, io_uring or pread"
            )),
        }
    }
}

use common::kept_buffers::KeptBuffers;
use common::sync::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes in a page (and a slot): [`common::PAGE_SIZE`], re-exported.
pub use common::PAGE_SIZE;

/// Errors of the swap device. Each names the slot it concerns.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    #[error("swap slot {slot}: I/O error: {source}")]
    Io { slot: u64, source: std::io::Error },
    #[error("swap slot {slot}: the block read is not the page written there (corrupt, changed or misplaced)")]
    Corrupt { slot: u64 },
    #[error("swap slot {0} holds no written page")]
    NotWritten(u64),
    #[error("swap slot {0} is outside the device or not allocated")]
    InvalidSlot(u64),
    #[error("swap device full: {wanted} slots wanted, {free} free")]
    NoSpace { wanted: usize, free: usize },
    #[error("page of {0} bytes; pages are 4096 bytes")]
    BadPage(usize),
    #[error("cannot create swap file: {0}")]
    Create(std::io::Error),
}

struct Slots {
    /// One bit per slot, set when allocated.
    used: Vec<u64>,
    /// Where the next search starts (next fit).
    cursor: usize,
    free: usize,
    /// Per slot, the forks that froze it: its page was on the file when a
    /// child was forked, and the child may still read it, so the slot is
    /// not given out again. Empty until the first fork.
    frozen: Vec<u16>,
    /// Slots freed by their owner while frozen (one bit each): free for
    /// real once thawed.
    freed_frozen: Vec<u64>,
}

impl Slots {
    fn is_frozen(&self, s: usize) -> bool {
        self.frozen.get(s).is_some_and(|&n| n > 0)
    }
    fn is_used(&self, s: usize) -> bool {
        self.used[s / 64] & (1 << (s % 64)) != 0
    }
    fn set(&mut self, s: usize, on: bool) {
        if on {
            self.used[s / 64] |= 1 << (s % 64);
        } else {
            self.used[s / 64] &= !(1 << (s % 64));
        }
    }
}

/// Slots the allocation cursor may run past twice the slots in use before
/// it starts again from the first slot.
const WANDER_SLOTS: usize = 4096;

/// A swap device over a file.
pub struct SwapFile {
    io: Box<dyn PageIo>,
    nr_slots: usize,
    slots: Mutex<Slots>,
    seals: seal::Seals,
    /// One past the highest slot ever given out: the per-slot tables are
    /// resident up to here (zeroed lazily, never given back).
    high_water: AtomicUsize,
    /// The file lives in memory (tmpfs, ramfs).
    in_memory: bool,
    /// Buffers encrypted folios were sealed into, kept for the next write
    /// ([`KeptBuffers::for_folio_copies`]).
    sealed_copies: KeptBuffers,
}

/// Per-folio lists kept on the stack up to a default folio's 16 pages.
type FolioVec<T> = smallvec::SmallVec<[T; 16]>;

impl std::fmt::Debug for SwapFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwapFile")
            .field("nr_slots", &self.nr_slots)
            .field("free", &self.free_slots())
            .finish()
    }
}

impl SwapFile {
    /// A device of `nr_slots` slots on `io`, its pages encrypted.
    pub fn new(io: Box<dyn PageIo>, nr_slots: usize) -> Result<Self, SwapError> {
        Self::with_protection(io, nr_slots, Protection::Encrypted)
    }

    /// A device of `nr_slots` slots on `io`, its pages protected as said.
    pub fn with_protection(
        io: Box<dyn PageIo>,
        nr_slots: usize,
        protection: Protection,
    ) -> Result<Self, SwapError> {
        Ok(Self {
            in_memory: io.raw_fd().is_some_and(cache::in_memory),
            io,
            nr_slots,
            slots: Mutex::new(Slots {
                used: vec![0; nr_slots.div_ceil(64)],
                cursor: 0,
                free: nr_slots,
                frozen: Vec::new(),
                freed_frozen: Vec::new(),
            }),
            high_water: AtomicUsize::new(0),
            seals: seal::Seals::new(nr_slots, protection).map_err(SwapError::Create)?,
            sealed_copies: KeptBuffers::for_folio_copies(),
        })
    }

    /// A device of `nr_slots` slots in a new file in `dir` that no other
    /// user can open and that vanishes with the process, on `backend`, its
    /// pages protected as said.
    pub fn create_in(
        dir: &Path,
        nr_slots: usize,
        backend: IoBackend,
        protection: Protection,
    ) -> Result<Self, SwapError> {
        let file = io::anonymous_file(dir).map_err(SwapError::Create)?;
        let io: Box<dyn PageIo> = match backend {
            IoBackend::Pread => Box::new(FileIo::new(file)),
            IoBackend::Uring => Box::new(UringIo::new(file).map_err(SwapError::Create)?),
            IoBackend::Auto => Box::new(FileIo::new(file)),
        };
        Self::with_protection(io, nr_slots, protection)
    }

    /// How this device's pages are protected.
    pub fn protection(&self) -> Protection {
        self.seals.protection()
    }

    /// The I/O back-end in use.
    pub fn io_name(&self) -> &'static str {
        self.io.name()
    }

    pub fn nr_slots(&self) -> usize {
        self.nr_slots
    }

    pub fn free_slots(&self) -> usize {
        self.slots.lock().free
    }

    /// Slots in use: pages swapped out (or kept for a clean page).
    pub fn used_slots(&self) -> usize {
        self.nr_slots - self.free_slots()
    }

    /// Slots holding a page written to the file now (a page swapped out
    /// there, or a clean page's kept copy): what reading back all that is
    /// on the file would read. Lock-free.
    pub fn written_slots(&self) -> usize {
        self.seals.valid_slots()
    }

    /// Bytes of this device's own tables that are resident: per slot up
    /// to the highest ever given out, its seal (8 bytes of checksum, or 24
    /// of nonce and tag) and its allocation bit, page-rounded. What a limit charges besides the pool
    /// (`xz -9` or numpy writing gigabytes back hold tens of MiB here).
    /// Lock-free.
    pub fn table_bytes(&self) -> usize {
        let slots = self.high_water.load(Ordering::Relaxed);
        let bits = slots.div_ceil(8).next_multiple_of(PAGE_SIZE);
        self.seals.table_bytes(slots) + bits
    }

    /// Allocates `n` slots: one contiguous run if there is one, else any
    /// free slots. All or nothing.
    pub fn alloc(&self, n: usize) -> Result<Vec<u64>, SwapError> {
        let mut s = self.slots.lock();
        if n > s.free {
            return Err(SwapError::NoSpace {
                wanted: n,
                free: s.free,
            });
        }
        // Next fit, but within about twice the slots in use: a cursor
        // that wandered over the whole file would touch (make resident) the
        // whole checksum table and bitmap, 8 MiB for a 4 GiB file, while a
        // process keeps a few thousand slots.
        let in_use = self.nr_slots - s.free;
        if s.cursor > 2 * (in_use + n) + WANDER_SLOTS {
            s.cursor = 0;
        }
        let start = self.find_run(&s, n);
        let mut out = Vec::with_capacity(n);
        let mut i = start.unwrap_or(s.cursor);
        while out.len() < n {
            let slot = i % self.nr_slots;
            if !s.is_used(slot) {
                s.set(slot, true);
                out.push(slot as u64);
            }
            i += 1;
        }
        s.free -= n;
        s.cursor = i % self.nr_slots.max(1);
        if let Some(&top) = out.iter().max() {
            self.high_water
                .fetch_max(top as usize + 1, Ordering::Relaxed);
        }
        Ok(out)
    }

    /// First run of `n` free slots from the cursor on (wrapping), if any.
    fn find_run(&self, s: &Slots, n: usize) -> Option<usize> {
        let mut run = 0;
        for k in 0..self.nr_slots + n {
            let slot = (s.cursor + k) % self.nr_slots;
            if slot == 0 && k > 0 {
                run = 0; // runs do not wrap around the end
            }
            run = if s.is_used(slot) { 0 } else { run + 1 };
            if run == n {
                return Some(slot + 1 - n);
            }
        }
        None
    }

    /// Frees a slot (its contents become unreadable).
    pub fn free(&self, slot: u64) -> Result<(), SwapError> {
        let idx = self.index(slot)?;
        let mut s = self.slots.lock();
        if !s.is_used(idx) {
            return Err(SwapError::InvalidSlot(slot));
        }
        self.seals.clear(idx);
        if s.is_frozen(idx) {
            // A child may still read it: free it when thawed.
            s.freed_frozen[idx / 64] |= 1 << (idx % 64);
            return Ok(());
        }
        s.set(idx, false);
        s.free += 1;
        Ok(())
    }

    /// Freezes every slot whose page is on the file now (a child is being
    /// forked and may read them from its copy of this device): none of
    /// them is given out again until [`SwapFile::thaw`]. Returns them.
    pub fn freeze_written(&self) -> Vec<u64> {
        let mut s = self.slots.lock();
        if s.frozen.is_empty() {
            s.frozen = vec![0; self.nr_slots];
            s.freed_frozen = vec![0; self.nr_slots.div_ceil(64)];
        }
        let mut out = Vec::new();
        // Slots past the high-water mark were never given out.
        for i in 0..self.high_water.load(Ordering::Relaxed) {
            if self.seals.is_valid(i) {
                s.frozen[i] = s.frozen[i].saturating_add(1);
                out.push(i as u64);
            }
        }
        out
    }

    /// Undoes one [`SwapFile::freeze_written`]: slots freed meanwhile
    /// become free.
    pub fn thaw(&self, slots: &[u64]) {
        let mut s = self.slots.lock();
        for &slot in slots {
            let i = slot as usize;
            if i >= s.frozen.len() || s.frozen[i] == 0 {
                continue;
            }
            s.frozen[i] -= 1;
            if s.frozen[i] == 0 && s.freed_frozen[i / 64] & (1 << (i % 64)) != 0 {
                s.freed_frozen[i / 64] &= !(1 << (i % 64));
                s.set(i, false);
                s.free += 1;
            }
        }
    }

    /// Slots frozen now (for tests and stats).
    pub fn frozen_slots(&self) -> usize {
        self.slots.lock().frozen.iter().filter(|&&n| n > 0).count()
    }

    /// Whether the file lives in memory (tmpfs, ramfs): a read from it is
    /// a copy, not a device read. A device with no file (in a test) counts
    /// as a disk.
    pub fn in_memory(&self) -> bool {
        self.in_memory
    }

    /// Bytes of memory the file itself takes: on a file that lives in
    /// memory (tmpfs, ramfs), what its pages take there (its allocated
    /// blocks; without a descriptor to ask, the pages written on it); on a
    /// disk 0, the file being kept out of the page cache. Pages written
    /// back to a file in memory leave the process's memory and the limit,
    /// not the machine's: paging did not save them.
    pub fn memory_bytes(&self) -> u64 {
        if !self.in_memory {
            return 0;
        }
        let written = (self.written_slots() * PAGE_SIZE) as u64;
        let Some(fd) = self.raw_fd() else {
            return written;
        };
        // SAFETY: a zeroed stat is a valid buffer for fstat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a descriptor this device holds open, and a buffer of the
        // right type; the result is checked.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return written;
        }
        st.st_blocks as u64 * 512
    }

    /// The file under the device, for advisory locks; `None` in memory.
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.io.raw_fd()
    }

    fn index(&self, slot: u64) -> Result<usize, SwapError> {
        usize::try_from(slot)
            .ok()
            .filter(|&s| s < self.nr_slots)
            .ok_or(SwapError::InvalidSlot(slot))
    }

    fn check_allocated(&self, slot: u64) -> Result<usize, SwapError> {
        let idx = self.index(slot)?;
        if !self.slots.lock().is_used(idx) {
            return Err(SwapError::InvalidSlot(slot));
        }
        Ok(idx)
    }

    /// Writes `pages[i]` to `slots[i]`; one result per page. A page whose
    /// write failed holds nothing readable afterwards.
    pub fn write_pages_each(&self, slots: &[u64], pages: &[&[u8]]) -> Vec<Result<(), SwapError>> {
        let mut results = Vec::with_capacity(slots.len());
        self.write_with(slots, pages, |_, r| results.push(r));
        results
    }

    /// Writes `pages[i]` to `slots[i]`; the first error, if any. Pages whose
    /// writes succeeded are good either way.
    pub fn write_pages(&self, slots: &[u64], pages: &[&[u8]]) -> Result<(), SwapError> {
        let mut first = Ok(());
        self.write_with(slots, pages, |_, r| {
            if first.is_ok() {
                first = r;
            }
        });
        first
    }

    /// Writes `pages[i]` to `slots[i]` and calls `done(i, result)` once
    /// per page, in order. Stores call this at each eviction, in a faulting
    /// thread's signal handler: a folio's lists are on the stack and the
    /// encrypted copy's buffer is kept for the next call.
    fn write_with(
        &self,
        slots: &[u64],
        pages: &[&[u8]],
        mut done: impl FnMut(usize, Result<(), SwapError>),
    ) {
        let n = slots.len().min(pages.len());
        let mut results: FolioVec<Result<(), SwapError>> = FolioVec::with_capacity(n);
        // (page index, slot index, slot) of each page to write.
        let mut targets: FolioVec<(usize, usize, u64)> = FolioVec::new();
        for (i, (&slot, page)) in slots.iter().zip(pages).enumerate() {
            let checked = if page.len() != PAGE_SIZE {
                Err(SwapError::BadPage(page.len()))
            } else {
                self.check_allocated(slot)
            };
            match checked {
                Ok(idx) => {
                    self.seals.clear(idx);
                    targets.push((i, idx, slot));
                    results.push(Ok(()));
                }
                Err(e) => results.push(Err(e)),
            }
        }
        // Encrypted pages are sealed into one buffer; checksummed ones go
        // out as they are (their seal reads them, and the buffer stays
        // empty).
        let copies = self.seals.seals_a_copy();
        let bytes = if copies { targets.len() * PAGE_SIZE } else { 0 };
        let mut buffer = self.sealed_copies.take();
        if buffer.len() < bytes {
            buffer.resize(bytes, 0);
        }
        let sealed_copy = &mut buffer[..bytes];
        let mut out_pages = sealed_copy.chunks_mut(PAGE_SIZE);
        let seals: FolioVec<seal::Sealed> = targets
            .iter()
            .map(|&(i, _, slot)| {
                let out = out_pages.next().unwrap_or_default();
                self.seals.seal(slot, pages[i], out)
            })
            .collect();
        let writes: FolioVec<(u64, &[u8])> = targets
            .iter()
            .enumerate()
            .map(|(k, &(i, _, slot))| {
                let data = if copies {
                    &sealed_copy[k * PAGE_SIZE..(k + 1) * PAGE_SIZE]
                } else {
                    pages[i]
                };
                (slot * PAGE_SIZE as u64, data)
            })
            .collect();
        let written = self.io.write_batch(&writes);
        drop(writes);
        for ((&(i, idx, slot), sealed), r) in targets.iter().zip(seals).zip(written) {
            match r {
                Ok(()) => self.seals.commit(idx, sealed),
                Err(source) => results[i] = Err(SwapError::Io { slot, source }),
            }
        }
        self.sealed_copies.give(buffer);
        for (i, r) in results.into_iter().enumerate() {
            done(i, r);
        }
    }

    /// Reads slot `slot` into `page` and checks (and decrypts) it.
    pub fn read_page(&self, slot: u64, page: &mut [u8]) -> Result<(), SwapError> {
        self.read_page_with(slot, page, false)
    }

    /// [`SwapFile::read_page`] through plain `pread`: a forked child's read
    /// of the device it inherited (the parent's io_uring ring is not
    /// usable there).
    pub fn read_page_sync(&self, slot: u64, page: &mut [u8]) -> Result<(), SwapError> {
        self.read_page_with(slot, page, true)
    }

    fn read_page_with(&self, slot: u64, page: &mut [u8], sync: bool) -> Result<(), SwapError> {
        if page.len() != PAGE_SIZE {
            return Err(SwapError::BadPage(page.len()));
        }
        let (idx, word) = self.written_word(slot)?;
        let pos = slot * PAGE_SIZE as u64;
        let read = if sync {
            self.io.read_at_sync(pos, page)
        } else {
            self.io.read_at(pos, page)
        };
        read.map_err(|source| SwapError::Io { slot, source })?;
        self.seals
            .open(idx, slot, word, page)
            .map_err(|_| SwapError::Corrupt { slot })
    }

    /// Slot `slot`'s index and seal word, checked: allocated, and holding
    /// a page. Read before the page's bytes are checked against it.
    fn written_word(&self, slot: u64) -> Result<(usize, u64), SwapError> {
        let idx = self.check_allocated(slot)?;
        let word = self
            .seals
            .valid_word(idx)
            .map_err(|_| SwapError::NotWritten(slot))?;
        Ok((idx, word))
    }

    /// Reads the slots from `first` on into `raw` (whole pages) in one
    /// request, unchecked: a window read ahead, each of whose pages is
    /// then checked by [`SwapFile::open_read`]. Slots past the file's end
    /// are not read. Returns the pages read.
    pub fn read_run(&self, first: u64, raw: &mut [u8]) -> Result<usize, SwapError> {
        self.index(first)?;
        let pages = raw.len() / PAGE_SIZE;
        let raw = &mut raw[..pages * PAGE_SIZE];
        let read = self
            .io
            .read_upto(first * PAGE_SIZE as u64, raw)
            .map_err(|source| SwapError::Io {
                slot: first,
                source,
            })?;
        Ok(read / PAGE_SIZE)
    }

    /// Checks (and decrypts) into `page` the bytes `raw` that
    /// [`SwapFile::read_run`] read for slot `slot`: [`SwapError::NotWritten`]
    /// if the slot holds no page now, [`SwapError::Corrupt`] if the bytes
    /// are not its latest write (it was written again after the read).
    pub fn open_read(&self, slot: u64, raw: &[u8], page: &mut [u8]) -> Result<(), SwapError> {
        if page.len() != PAGE_SIZE || raw.len() != PAGE_SIZE {
            return Err(SwapError::BadPage(raw.len()));
        }
        let (idx, word) = self.written_word(slot)?;
        page.copy_from_slice(raw);
        self.seals
            .open(idx, slot, word, page)
            .map_err(|_| SwapError::Corrupt { slot })
    }

    /// Forgets the slot's page (it stays allocated): reads now fail with
    /// [`SwapError::NotWritten`].
    pub fn discard(&self, slot: u64) {
        if let Ok(i) = self.index(slot) {
            self.seals.clear(i);
        }
    }

    /// True if the slot holds a written page.
    pub fn is_written(&self, slot: u64) -> bool {
        self.index(slot).is_ok_and(|i| self.seals.is_valid(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_dev_shm_is_in_memory_and_one_on_a_disk_is_not() {
        let shm = Path::new("/dev/shm");
        let d = SwapFile::create_in(shm, 8, IoBackend::Pread, Protection::Checksum).unwrap();
        assert!(d.in_memory());
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        let d = SwapFile::create_in(&target, 8, IoBackend::Pread, Protection::Checksum).unwrap();
        assert!(!d.in_memory(), "{}", target.display());
        let d = SwapFile::new(Box::new(MemIo::default()), 8).unwrap();
        assert!(!d.in_memory(), "a device with no file counts as a disk");
    }

    #[test]
    fn frozen_slots_are_not_given_out_until_thawed() {
        let dev = SwapFile::new(Box::new(MemIo::default()), 4).unwrap();
        let slots = dev.alloc(2).unwrap();
        dev.write_pages(&slots[..1], &[&[7u8; PAGE_SIZE][..]])
            .unwrap();
        let frozen = dev.freeze_written();
        assert_eq!(frozen, vec![slots[0]], "only the written slot");
        dev.free(slots[0]).unwrap();
        dev.free(slots[1]).unwrap();
        assert_eq!(dev.free_slots(), 3, "the frozen slot stays taken");
        let all = dev.alloc(3).unwrap();
        assert!(!all.contains(&slots[0]), "{all:?}");
        assert!(dev.alloc(1).is_err());
        dev.thaw(&frozen);
        assert_eq!(dev.alloc(1).unwrap(), vec![slots[0]]);
        // Thawing a slot still in use keeps it in use.
        dev.write_pages(&[all[0]], &[&[1u8; PAGE_SIZE][..]])
            .unwrap();
        let f2 = dev.freeze_written();
        dev.thaw(&f2);
        assert_eq!(dev.free_slots(), 0);
    }
    /// Pages of `[addr, addr + len)` that are resident (`mincore(2)`).
    fn resident_pages(addr: usize, len: usize) -> usize {
        let first = addr & !(PAGE_SIZE - 1);
        let pages = (addr + len - first).div_ceil(PAGE_SIZE);
        let mut vec = vec![0u8; pages];
        // SAFETY: the range is (inside) a live allocation of ours, rounded
        // out to whole pages; `vec` has one byte per page.
        let rc = unsafe {
            libc::mincore(
                first as *mut libc::c_void,
                pages * PAGE_SIZE,
                vec.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|&&b| b & 1 != 0).count()
    }

    #[test]
    fn a_large_device_costs_memory_only_for_the_slots_it_writes() {
        // 16M slots: a 64 GiB file's 384 MiB of nonces and tags.
        let dev = SwapFile::new(Box::new(MemIo::default()), 1 << 24).unwrap();
        for (table, bytes) in dev.seals.tables() {
            assert!(bytes >= (1 << 24) * 8);
            assert!(
                resident_pages(table, bytes) < 16,
                "{} of {} pages of a seal table resident",
                resident_pages(table, bytes),
                bytes / PAGE_SIZE
            );
        }
        // Written slots still have their seals, and read back.
        let slots = dev.alloc(2).unwrap();
        dev.write_pages(&slots, &[&[3u8; PAGE_SIZE][..], &[4u8; PAGE_SIZE][..]])
            .unwrap();
        let mut back = vec![0u8; PAGE_SIZE];
        dev.read_page(slots[1], &mut back).unwrap();
        assert_eq!(back, vec![4u8; PAGE_SIZE]);
        assert!(dev.is_written(slots[0]));
        assert!(!dev.is_written(slots[1] + 1));
    }

    #[test]
    fn table_bytes_cover_the_slots_up_to_the_highest_given_out() {
        for (protection, seal_bytes) in
            [(Protection::Checksum, 8usize), (Protection::Encrypted, 24)]
        {
            let dev =
                SwapFile::with_protection(Box::new(MemIo::default()), 1 << 20, protection).unwrap();
            assert_eq!(dev.table_bytes(), 0, "nothing given out, nothing touched");
            let first = dev.alloc(1000).unwrap();
            // 8 or 24 KB of seals and 125 bytes of bits (1 page).
            assert_eq!(
                dev.table_bytes(),
                (1000 * seal_bytes).next_multiple_of(PAGE_SIZE) + PAGE_SIZE
            );
            let more = dev.alloc(9000).unwrap();
            let high = 1 + *first.iter().chain(&more).max().unwrap() as usize;
            assert_eq!(high, 10_000, "slots are given out from the start");
            let want = (high * seal_bytes).next_multiple_of(PAGE_SIZE)
                + (high / 8).next_multiple_of(PAGE_SIZE);
            assert_eq!(dev.table_bytes(), want);
            // Freed slots leave the tables as resident as they were.
            for s in more {
                dev.free(s).unwrap();
            }
            assert_eq!(dev.table_bytes(), want);
        }
    }

    #[test]
    fn slots_stay_near_the_start_when_few_are_in_use() {
        let dev = SwapFile::new(Box::new(MemIo::default()), 1 << 20).unwrap();
        let mut held = std::collections::VecDeque::new();
        let mut highest = 0;
        // A steady 1,000 slots in use, 200,000 allocations of 1 to 16.
        for i in 0..200_000usize {
            let got = dev.alloc(1 + i % 16).unwrap();
            highest = highest.max(*got.iter().max().unwrap());
            held.extend(got);
            while held.len() > 1000 {
                dev.free(held.pop_front().unwrap()).unwrap();
            }
        }
        assert!(
            highest < (2 * (1000 + 16) + WANDER_SLOTS + 16) as u64,
            "highest slot {highest}"
        );
        assert_eq!(dev.free_slots(), (1 << 20) - held.len());
    }

    use std::collections::HashMap;

    fn dev(n: usize) -> SwapFile {
        SwapFile::create_in(
            &std::env::temp_dir(),
            n,
            IoBackend::Auto,
            Protection::Encrypted,
        )
        .unwrap()
    }

    fn page(tag: u8) -> Vec<u8> {
        (0..PAGE_SIZE)
            .map(|i| (i as u8).wrapping_mul(7) ^ tag)
            .collect()
    }

    #[test]
    fn a_window_read_in_one_request_opens_only_each_slots_latest_page() {
        for protection in [Protection::Encrypted, Protection::Checksum] {
            let d = SwapFile::create_in(&std::env::temp_dir(), 64, IoBackend::Auto, protection)
                .unwrap();
            let slots = d.alloc(8).unwrap();
            let pages: Vec<Vec<u8>> = (0..8).map(page).collect();
            let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
            d.write_pages(&slots, &refs).unwrap();
            assert_eq!(d.written_slots(), 8);
            let mut raw = vec![0u8; 10 * PAGE_SIZE];
            // Two slots past the file's end: not read.
            assert_eq!(d.read_run(slots[0], &mut raw).unwrap(), 8);
            // Slot 3 written again and slot 5 freed after the read.
            d.write_pages(&[slots[3]], &[&page(99)]).unwrap();
            d.free(slots[5]).unwrap();
            assert_eq!(d.written_slots(), 7);
            let mut buf = vec![0u8; PAGE_SIZE];
            for (k, &slot) in slots.iter().enumerate() {
                let raw = &raw[k * PAGE_SIZE..(k + 1) * PAGE_SIZE];
                let opened = d.open_read(slot, raw, &mut buf);
                match k {
                    3 => assert!(
                        matches!(opened, Err(SwapError::Corrupt { .. })),
                        "{protection:?}: a stale page of slot 3 opened: {opened:?}"
                    ),
                    5 => assert!(
                        matches!(opened, Err(SwapError::InvalidSlot(_))),
                        "{protection:?}: freed slot 5: {opened:?}"
                    ),
                    _ => {
                        opened.unwrap();
                        assert_eq!(buf, pages[k], "{protection:?}: slot {k}");
                    }
                }
            }
            // Read again, slot 3 opens with its new page.
            d.read_run(slots[0], &mut raw).unwrap();
            d.open_read(slots[3], &raw[3 * PAGE_SIZE..4 * PAGE_SIZE], &mut buf)
                .unwrap();
            assert_eq!(buf, page(99));
        }
    }

    #[test]
    fn folios_get_contiguous_slots_and_pages_round_trip() {
        let d = dev(64);
        let a = d.alloc(8).unwrap();
        assert!(a.windows(2).all(|w| w[1] == w[0] + 1), "{a:?}");
        let pages: Vec<Vec<u8>> = (0..8).map(page).collect();
        let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        d.write_pages(&a, &refs).unwrap();
        let mut buf = vec![0; PAGE_SIZE];
        for (slot, p) in a.iter().zip(&pages) {
            d.read_page(*slot, &mut buf).unwrap();
            assert_eq!(&buf, p);
        }
        assert_eq!(d.free_slots(), 56);
    }

    #[test]
    fn allocation_is_all_or_nothing_and_slots_are_unique() {
        let d = dev(10);
        let a = d.alloc(6).unwrap();
        assert!(matches!(
            d.alloc(5),
            Err(SwapError::NoSpace { wanted: 5, free: 4 })
        ));
        d.free(a[1]).unwrap();
        d.free(a[3]).unwrap();
        let b = d.alloc(6).unwrap(); // fragmented: no run of 6, takes any
        let mut all: Vec<u64> = a
            .iter()
            .copied()
            .filter(|s| *s != a[1] && *s != a[3])
            .chain(b)
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 10);
        assert!(matches!(d.free(99), Err(SwapError::InvalidSlot(99))));
    }

    #[test]
    fn unwritten_freed_and_bad_slots_are_errors() {
        let d = dev(4);
        let s = d.alloc(1).unwrap()[0];
        let mut buf = vec![0; PAGE_SIZE];
        assert!(matches!(
            d.read_page(s, &mut buf),
            Err(SwapError::NotWritten(_))
        ));
        d.write_pages(&[s], &[&page(1)]).unwrap();
        d.free(s).unwrap();
        assert!(matches!(
            d.read_page(s, &mut buf),
            Err(SwapError::InvalidSlot(_))
        ));
        assert!(
            matches!(d.free(s), Err(SwapError::InvalidSlot(_))),
            "double free"
        );
        assert!(matches!(
            d.read_page(7, &mut buf),
            Err(SwapError::InvalidSlot(7))
        ));
        assert!(matches!(
            d.write_pages(&[s], &[&[0u8; 10]]),
            Err(SwapError::BadPage(10))
        ));
    }

    #[test]
    fn injected_faults_are_clear_errors_and_never_wrong_data() {
        let plan = FaultPlan::default();
        let io = FaultyIo::new(
            Box::new(FileIo::create_anonymous(&std::env::temp_dir()).unwrap()),
            plan.clone(),
        );
        let d = SwapFile::new(Box::new(io), 16).unwrap();
        let s = d.alloc(4).unwrap();
        let pages: Vec<Vec<u8>> = (0..4).map(page).collect();
        let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        d.write_pages(&s, &refs).unwrap();
        let mut buf = vec![0; PAGE_SIZE];

        plan.corrupt_reads_of(s[0]);
        assert!(matches!(
            d.read_page(s[0], &mut buf),
            Err(SwapError::Corrupt { .. })
        ));
        plan.fail_reads_of(s[1]);
        let err = d.read_page(s[1], &mut buf).unwrap_err();
        assert!(
            matches!(&err, SwapError::Io { source, .. } if source.raw_os_error() == Some(libc::EIO)),
            "{err}"
        );
        plan.fail_writes_after(0, libc::ENOSPC);
        let err = d.write_pages(&s[2..3], &[&page(9)]).unwrap_err();
        assert!(
            matches!(&err, SwapError::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC))
        );
        // The failed write left nothing readable behind, not the old page.
        assert!(matches!(
            d.read_page(s[2], &mut buf),
            Err(SwapError::NotWritten(_))
        ));
        plan.clear();
        d.read_page(s[3], &mut buf).unwrap();
        assert_eq!(buf, pages[3]);
        d.read_page(s[0], &mut buf).unwrap();
        assert_eq!(
            buf, pages[0],
            "faults are transient: the block itself is fine"
        );
    }

    #[test]
    fn io_uring_and_pread_back_ends_read_each_others_pages() {
        let file = io::anonymous_file(&std::env::temp_dir()).unwrap();
        let uring =
            UringIo::new(file.try_clone().unwrap()).expect("io_uring is enabled on this machine");
        let plain = FileIo::new(file);
        let pages: Vec<Vec<u8>> = (0..100).map(|t| page(t as u8)).collect();
        let writes: Vec<(u64, &[u8])> = pages
            .iter()
            .enumerate()
            .map(|(i, p)| ((i * PAGE_SIZE) as u64, &p[..]))
            .collect();
        assert!(
            uring.write_batch(&writes).iter().all(Result::is_ok),
            "a batch larger than the ring"
        );
        let mut buf = vec![0; PAGE_SIZE];
        for (i, p) in pages.iter().enumerate() {
            plain.read_at((i * PAGE_SIZE) as u64, &mut buf).unwrap();
            assert_eq!(&buf, p);
            uring.read_at((i * PAGE_SIZE) as u64, &mut buf).unwrap();
            assert_eq!(&buf, p);
        }
        // Reading past the end is a clear error from both.
        assert!(uring.read_at(1 << 30, &mut buf).is_err());
        assert!(plain.read_at(1 << 30, &mut buf).is_err());
        let d = SwapFile::create_in(
            &std::env::temp_dir(),
            8,
            IoBackend::Uring,
            Protection::Encrypted,
        )
        .unwrap();
        assert_eq!(d.io_name(), "io_uring");
        for backend in [IoBackend::Auto, IoBackend::Pread] {
            let d = SwapFile::create_in(&std::env::temp_dir(), 8, backend, Protection::Checksum)
                .unwrap();
            assert_eq!(d.io_name(), "pread/pwrite", "{backend:?}");
        }
    }

    /// Names of the entries of `dir`.
    fn entries(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// The inotify events `dir` saw while `f` ran: (mask, name).
    fn watched<T>(dir: &Path, f: impl FnOnce() -> T) -> (T, Vec<(u32, String)>) {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: inotify_init1 has no memory arguments; the result is
        // checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: `path` is a valid C string for the call.
        let wd = unsafe { libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_ALL_EVENTS) };
        assert!(
            wd >= 0,
            "inotify_add_watch: {}",
            std::io::Error::last_os_error()
        );
        let out = f();
        let mut buf = vec![0u8; 64 << 10];
        // SAFETY: reads at most buf.len() bytes into `buf`.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        let mut events = Vec::new();
        let mut at = 0;
        while n > 0 && at < n as usize {
            // SAFETY: the kernel wrote whole `inotify_event`s (with their
            // names) into `buf[..n]`; read_unaligned copies the header.
            let ev: libc::inotify_event = unsafe {
                std::ptr::read_unaligned(buf[at..].as_ptr() as *const libc::inotify_event)
            };
            let head = std::mem::size_of::<libc::inotify_event>();
            let name = &buf[at + head..at + head + ev.len as usize];
            let name = String::from_utf8_lossy(name)
                .trim_end_matches('\0')
                .to_string();
            events.push((ev.mask, name));
            at += head + ev.len as usize;
        }
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(fd) };
        (out, events)
    }

    #[test]
    fn the_swap_file_is_never_linked_and_only_its_owner_can_open_it() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("uzswap-swapmode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // O_TMPFILE (tmpfs and ext4 have it): no name ever appears.
        let (file, events) = watched(&dir, || io::anonymous_file(&dir).unwrap());
        let created: Vec<_> = events
            .iter()
            .filter(|(mask, _)| mask & libc::IN_CREATE != 0)
            .collect();
        assert!(created.is_empty(), "the swap file was linked: {created:?}");
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
        let meta = file.metadata().unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        // SAFETY: geteuid has no preconditions.
        assert_eq!(meta.uid(), unsafe { libc::geteuid() });
        // Where O_TMPFILE is missing: a 0600 file from its creation on,
        // gone from the folder once made.
        let (named, events) = watched(&dir, || {
            io::anonymous_file_by(&dir, io::Making::Named).unwrap()
        });
        assert!(
            events.iter().any(|(mask, _)| mask & libc::IN_CREATE != 0),
            "the named way links the file for a moment: {events:?}"
        );
        assert_eq!(named.metadata().unwrap().mode() & 0o777, 0o600);
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
        // A folder that is not there is a clear error, not a file elsewhere.
        assert!(io::anonymous_file(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Whether `needle` occurs in the first `bytes` of the file under `d`,
    /// read as an outsider holding the file would (its descriptor).
    fn file_shows(d: &SwapFile, bytes: usize, needle: &[u8]) -> bool {
        let fd = d.raw_fd().expect("a file");
        let mut raw = vec![0u8; bytes];
        // SAFETY: reads at most `bytes` into `raw`.
        let n = unsafe { libc::pread(fd, raw.as_mut_ptr() as *mut libc::c_void, bytes, 0) };
        assert_eq!(n as usize, bytes, "{}", std::io::Error::last_os_error());
        raw.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn an_encrypted_file_shows_no_page_and_a_checksummed_one_does() {
        let secret: Vec<u8> = b"uzswap-secret-0123456789"
            .iter()
            .copied()
            .cycle()
            .take(PAGE_SIZE)
            .collect();
        for protection in [Protection::Encrypted, Protection::Checksum] {
            let d = SwapFile::create_in(&std::env::temp_dir(), 16, IoBackend::Auto, protection)
                .unwrap();
            assert_eq!(d.protection(), protection);
            let slots = d.alloc(8).unwrap();
            let pages: Vec<&[u8]> = vec![&secret[..]; 8];
            d.write_pages(&slots, &pages).unwrap();
            let shows = file_shows(&d, 8 * PAGE_SIZE, b"uzswap-secret");
            assert_eq!(shows, protection == Protection::Checksum, "{protection:?}");
            let mut back = vec![0u8; PAGE_SIZE];
            for &s in &slots {
                d.read_page(s, &mut back).unwrap();
                assert_eq!(back, secret);
            }
        }
    }

    #[test]
    fn a_page_moved_to_another_slot_on_the_file_is_caught() {
        let d = dev(4);
        let s = d.alloc(2).unwrap();
        d.write_pages(&s, &[&page(1)[..], &page(2)[..]]).unwrap();
        // Someone with the file copies slot 0's block over slot 1's.
        let fd = d.raw_fd().unwrap();
        let mut block = vec![0u8; PAGE_SIZE];
        // SAFETY: reads and writes one page through our own descriptor.
        unsafe {
            libc::pread(
                fd,
                block.as_mut_ptr() as *mut libc::c_void,
                PAGE_SIZE,
                (s[0] * PAGE_SIZE as u64) as i64,
            );
            libc::pwrite(
                fd,
                block.as_ptr() as *const libc::c_void,
                PAGE_SIZE,
                (s[1] * PAGE_SIZE as u64) as i64,
            );
        }
        let mut back = vec![0u8; PAGE_SIZE];
        assert!(matches!(
            d.read_page(s[1], &mut back),
            Err(SwapError::Corrupt { .. })
        ));
        d.read_page(s[0], &mut back).unwrap();
        assert_eq!(back, page(1));
    }

    #[test]
    fn pwritev_batches_write_every_page_where_it_belongs() {
        let file = io::anonymous_file(&std::env::temp_dir()).unwrap();
        let plain = FileIo::new(file);
        // Runs of 1, 3 and 150 pages (more than one pwritev's 64), out of
        // order and with gaps, and one page written twice (the later wins).
        let mut at: Vec<usize> = vec![7, 0, 1, 2];
        at.extend(20..170);
        at.extend([5, 1]);
        let pages: Vec<Vec<u8>> = (0..at.len()).map(|t| page(t as u8)).collect();
        let writes: Vec<(u64, &[u8])> = at
            .iter()
            .zip(&pages)
            .map(|(&i, p)| ((i * PAGE_SIZE) as u64, &p[..]))
            .collect();
        let results = plain.write_batch(&writes);
        assert_eq!(results.len(), writes.len());
        assert!(results.iter().all(Result::is_ok));
        let mut buf = vec![0; PAGE_SIZE];
        for (k, &i) in at.iter().enumerate() {
            if i == 1 && k == 2 {
                continue; // rewritten by the last write
            }
            plain.read_at((i * PAGE_SIZE) as u64, &mut buf).unwrap();
            assert_eq!(buf, pages[k], "page {i} (write {k})");
        }
        // A file that cannot be written: one error per write, none lost.
        let path = std::env::temp_dir().join(format!("uzswap-ro-{}", std::process::id()));
        std::fs::write(&path, b"").unwrap();
        let read_only = FileIo::new(std::fs::File::open(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
        let results = read_only.write_batch(&writes);
        assert_eq!(results.len(), writes.len());
        assert!(results.iter().all(Result::is_err));
    }

    #[test]
    fn per_page_write_results_keep_the_good_pages() {
        let plan = FaultPlan::default();
        let io = FaultyIo::new(Box::new(MemIo::default()), plan.clone());
        let d = SwapFile::new(Box::new(io), 8).unwrap();
        let s = d.alloc(4).unwrap();
        let pages: Vec<Vec<u8>> = (0..4).map(page).collect();
        let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        plan.fail_writes_of(s[1]);
        let r = d.write_pages_each(&s, &refs);
        assert!(r[0].is_ok() && r[1].is_err() && r[2].is_ok() && r[3].is_ok());
        assert!(d.is_written(s[0]) && !d.is_written(s[1]) && d.is_written(s[3]));
        assert!(
            matches!(d.write_pages(&s, &refs), Err(SwapError::Io { slot, .. }) if slot == s[1])
        );
    }

    proptest::proptest! {
        #[test]
        fn slot_allocator_matches_a_model(ops in proptest::collection::vec((0usize..3, 1usize..9), 1..60)) {
            let d = SwapFile::new(Box::new(io::MemIo::default()), 32).unwrap();
            let mut owned: HashMap<u64, ()> = HashMap::new();
            for (op, n) in ops {
                if op == 0 && !owned.is_empty() {
                    let slot = *owned.keys().next().unwrap();
                    owned.remove(&slot);
                    d.free(slot).unwrap();
                } else {
                    match d.alloc(n) {
                        Ok(v) => for s in v { proptest::prop_assert!(owned.insert(s, ()).is_none()); },
                        Err(SwapError::NoSpace { free, .. }) => proptest::prop_assert!(free < n),
                        Err(e) => proptest::prop_assert!(false, "{}", e),
                    }
                }
                proptest::prop_assert_eq!(d.free_slots(), 32 - owned.len());
            }
        }
    }
}
