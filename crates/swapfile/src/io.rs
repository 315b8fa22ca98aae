//! Page I/O back-ends: pread/pwrite on a file, memory (tests), and a
//! wrapper that injects faults.

use crate::cache::CacheDrop;
use common::sync::Mutex;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// Positioned page reads and writes.
pub trait PageIo: Send + Sync {
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<()>;
    /// A read through plain `pread`, never a shared queue: the one read a
    /// forked child may make on a device inherited from its parent (an
    /// io_uring ring is the parent's; using it from the child would corrupt
    /// both).
    fn read_at_sync(&self, pos: u64, buf: &mut [u8]) -> io::Result<()> {
        self.read_at(pos, buf)
    }
    /// The file under the device, if any (for advisory locks).
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
    fn write_at(&self, pos: u64, buf: &[u8]) -> io::Result<()>;

    /// Reads as much of `buf` as the file holds at `pos`, in one request
    /// where the back-end can: the bytes read (a window read ahead may end
    /// past the file's end).
    fn read_upto(&self, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.read_at(pos, buf).map(|()| buf.len())
    }

    /// Several writes at once, one result each (io_uring submits them
    /// together; others write one by one).
    fn write_batch(&self, writes: &[(u64, &[u8])]) -> Vec<io::Result<()>> {
        writes
            .iter()
            .map(|&(pos, buf)| self.write_at(pos, buf))
            .collect()
    }

    /// The back-end's name, for reports.
    fn name(&self) -> &'static str {
        "pread/pwrite"
    }
}

/// pread/pwrite on a file, kept out of the page cache ([`crate::cache`]).
#[derive(Debug)]
pub struct FileIo {
    file: File,
    cache: CacheDrop,
}

impl FileIo {
    pub fn new(file: File) -> Self {
        let cache = CacheDrop::new(std::os::fd::AsRawFd::as_raw_fd(&file));
        Self { file, cache }
    }

    /// A new file in `dir` that no other user can open, reachable by no
    /// name: it lives as long as the handle.
    pub fn create_anonymous(dir: &Path) -> io::Result<Self> {
        Ok(Self::new(anonymous_file(dir)?))
    }
}

/// How [`anonymous_file`] makes the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Making {
    /// `O_TMPFILE`: an inode that is never linked in any folder.
    Tmpfile,
    /// A fresh name made with `O_EXCL`, unlinked at once.
    Named,
}

/// A new read-write file in `dir` that no other user can open: mode 0600
/// from its creation on, and never reachable by name where the file system
/// supports `O_TMPFILE` (tmpfs, ext4, xfs, btrfs…). Elsewhere the file gets
/// a fresh name with `O_EXCL` and mode 0600 and is unlinked at once: a
/// process of another user that opens the name in that moment is refused
/// by the mode. Either way the file lives as long as its handle.
pub(crate) fn anonymous_file(dir: &Path) -> io::Result<File> {
    match anonymous_file_by(dir, Making::Tmpfile) {
        Err(e) if tmpfile_unsupported(&e) => anonymous_file_by(dir, Making::Named),
        made => made,
    }
}

/// Errors of `open(O_TMPFILE)` that mean "not on this file system or
/// kernel", not "cannot create a file here".
fn tmpfile_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
    )
}

/// [`anonymous_file`] made one way, checked: a regular file of ours that
/// no one else can read or write.
pub(crate) fn anonymous_file_by(dir: &Path, making: Making) -> io::Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut options = OpenOptions::new();
    options.read(true).write(true).mode(0o600);
    let file = match making {
        Making::Tmpfile => options.custom_flags(libc::O_TMPFILE).open(dir)?,
        Making::Named => {
            static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.join(format!(".uzswap-swap-{}-{seq}", std::process::id()));
            let file = options
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            file
        }
    };
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_file() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(io::Error::other(format!(
            "swap file in {}: mode {:o}, owner {}: expected a regular file of user {me}, mode 0600",
            dir.display(),
            meta.mode() & 0o7777,
            meta.uid()
        )));
    }
    Ok(file)
}

impl PageIo for FileIo {
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, pos)?;
        self.cache.after_read(pos, buf.len());
        Ok(())
    }
    fn read_upto(&self, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], pos + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.cache.after_read(pos, done);
        Ok(done)
    }
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(std::os::fd::AsRawFd::as_raw_fd(&self.file))
    }
    fn write_at(&self, pos: u64, buf: &[u8]) -> io::Result<()> {
        self.file.write_all_at(buf, pos)?;
        self.cache.after_write(pos, buf.len());
        Ok(())
    }

    /// Writes that follow each other in the file go out as one `pwritev`
    /// (a writeback batch's slots are mostly one run): one system call
    /// for the run, where io_uring on a buffered file hands every write to
    /// a kernel worker thread. A run whose `pwritev` fails or falls short
    /// is written again write by write, so that each gets its own result.
    fn write_batch(&self, writes: &[(u64, &[u8])]) -> Vec<io::Result<()>> {
        let mut results = Vec::with_capacity(writes.len());
        for run in contiguous_runs(writes) {
            let wanted: usize = run.iter().map(|(_, b)| b.len()).sum();
            if run.len() > 1 && matches!(self.pwritev(run), Ok(n) if n == wanted) {
                self.cache.after_write(run[0].0, wanted);
                results.extend(run.iter().map(|_| Ok(())));
            } else {
                results.extend(run.iter().map(|&(pos, buf)| self.write_at(pos, buf)));
            }
        }
        results
    }
}

/// Most buffers in one `pwritev` (Linux's `IOV_MAX` is 1024).
const WRITEV_MAX: usize = 64;

/// Splits `writes` into runs of at most [`WRITEV_MAX`] writes, each
/// starting where the one before it ends.
fn contiguous_runs<'a, 'b>(
    writes: &'a [(u64, &'b [u8])],
) -> impl Iterator<Item = &'a [(u64, &'b [u8])]> {
    let mut rest = writes;
    std::iter::from_fn(move || {
        let (&(first, buf), _) = rest.split_first()?;
        let mut end = first + buf.len() as u64;
        let mut n = 1;
        while n < rest.len().min(WRITEV_MAX) && rest[n].0 == end {
            end += rest[n].1.len() as u64;
            n += 1;
        }
        let (run, tail) = rest.split_at(n);
        rest = tail;
        Some(run)
    })
}

impl FileIo {
    /// One `pwritev` of `run` (contiguous, at most [`WRITEV_MAX`] buffers)
    /// at its first position; the bytes written.
    fn pwritev(&self, run: &[(u64, &[u8])]) -> io::Result<usize> {
        let iov: Vec<libc::iovec> = run
            .iter()
            .map(|(_, b)| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: `iov` describes `run`'s buffers, borrowed for the call;
        // pwritev only reads them.
        let n = unsafe {
            libc::pwritev(
                std::os::fd::AsRawFd::as_raw_fd(&self.file),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                run[0].0 as libc::off_t,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// Pages in memory (tests that need no file).
#[derive(Debug, Default)]
pub struct MemIo {
    data: Mutex<Vec<u8>>,
}

impl PageIo for MemIo {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<()> {
        let data = self.data.lock();
        let src = data
            .get(pos as usize..pos as usize + buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn write_at(&self, pos: u64, buf: &[u8]) -> io::Result<()> {
        let mut data = self.data.lock();
        let end = pos as usize + buf.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[pos as usize..end].copy_from_slice(buf);
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Faults {
    fail_reads: HashSet<u64>,
    corrupt_reads: HashSet<u64>,
    fail_writes: HashSet<u64>,
    /// After this many more successful writes, every write fails with errno.
    writes_left: Option<(usize, i32)>,
    /// Transient faults at random, and the generator's state.
    random: Option<(FaultRates, u64)>,
    injected: InjectedFaults,
}

/// Chances of transient faults, per million I/Os: each I/O draws anew, so
/// trying again can succeed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultRates {
    /// A read fails with EIO.
    pub read_eio: u32,
    /// A read returns one flipped bit (the checksum catches it).
    pub read_flip: u32,
    /// A write fails with EIO.
    pub write_eio: u32,
    /// A write fails with ENOSPC.
    pub write_enospc: u32,
}

/// Faults injected so far, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InjectedFaults {
    pub read_eio: u64,
    pub read_flip: u64,
    pub write_eio: u64,
    pub write_enospc: u64,
}

impl InjectedFaults {
    pub fn total(&self) -> u64 {
        self.read_eio + self.read_flip + self.write_eio + self.write_enospc
    }
}

impl Faults {
    /// Draws whether a fault of chance `per_million` happens now.
    fn draw(&mut self, pick: impl Fn(&FaultRates) -> u32) -> bool {
        let Some((rates, state)) = self.random.as_mut() else {
            return false;
        };
        // xorshift64*: plenty for fault injection.
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
        (r % 1_000_000) < u64::from(pick(rates))
    }
}

/// Which I/O fails, shared between a test and its [`FaultyIo`].
#[derive(Debug, Clone, Default)]
pub struct FaultPlan(Arc<Mutex<Faults>>);

impl FaultPlan {
    /// Reads of slot `slot` fail with EIO.
    pub fn fail_reads_of(&self, slot: u64) {
        self.0.lock().fail_reads.insert(slot);
    }
    /// Reads of slot `slot` return flipped bits.
    pub fn corrupt_reads_of(&self, slot: u64) {
        self.0.lock().corrupt_reads.insert(slot);
    }
    /// Writes to slot `slot` fail with EIO.
    pub fn fail_writes_of(&self, slot: u64) {
        self.0.lock().fail_writes.insert(slot);
    }
    /// After `n` more good writes, writes fail with `errno` (e.g. ENOSPC).
    pub fn fail_writes_after(&self, n: usize, errno: i32) {
        self.0.lock().writes_left = Some((n, errno));
    }
    /// Transient faults at random from now on, at `rates` (seeded: the
    /// same seed injects the same sequence).
    pub fn random(&self, rates: FaultRates, seed: u64) {
        self.0.lock().random = Some((rates, seed | 1));
    }
    /// The faults injected so far.
    pub fn injected(&self) -> InjectedFaults {
        self.0.lock().injected
    }
    /// No more faults.
    pub fn clear(&self) {
        *self.0.lock() = Faults::default();
    }
}

/// Wraps a [`PageIo`] and fails or corrupts I/O as its [`FaultPlan`] says.
pub struct FaultyIo {
    inner: Box<dyn PageIo>,
    plan: FaultPlan,
}

impl FaultyIo {
    pub fn new(inner: Box<dyn PageIo>, plan: FaultPlan) -> Self {
        Self { inner, plan }
    }
}

const PAGE: u64 = crate::PAGE_SIZE as u64;

impl PageIo for FaultyIo {
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<()> {
        let slot = pos / PAGE;
        let (fail, corrupt) = {
            let mut f = self.plan.0.lock();
            let eio = f.draw(|r| r.read_eio);
            let flip = !eio && f.draw(|r| r.read_flip);
            f.injected.read_eio += u64::from(eio);
            f.injected.read_flip += u64::from(flip);
            (
                eio || f.fail_reads.contains(&slot),
                flip || f.corrupt_reads.contains(&slot),
            )
        };
        if fail {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.inner.read_at(pos, buf)?;
        if corrupt {
            buf[buf.len() / 2] ^= 0x10;
        }
        Ok(())
    }

    fn write_at(&self, pos: u64, buf: &[u8]) -> io::Result<()> {
        let slot = pos / PAGE;
        {
            let mut f = self.plan.0.lock();
            if f.draw(|r| r.write_eio) {
                f.injected.write_eio += 1;
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            if f.draw(|r| r.write_enospc) {
                f.injected.write_enospc += 1;
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            if f.fail_writes.contains(&slot) {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            if let Some((left, errno)) = f.writes_left.as_mut() {
                if *left == 0 {
                    return Err(io::Error::from_raw_os_error(*errno));
                }
                *left -= 1;
            }
        }
        self.inner.write_at(pos, buf)
    }

    fn name(&self) -> &'static str {
        "faulty"
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.inner.raw_fd()
    }
}
