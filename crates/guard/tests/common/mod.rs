//! A self-contained stand-in for the runtime: an arena with one region
//! registered with a user-mode-only userfaultfd (missing + write-protect), a
//! thread serving its faults from a backing store, eviction and
//! write-protection that skip pinned pages, and a `Pinner` that faults pages
//! in by touching them.

#![allow(dead_code)]

use guard::{PinToken, Pinner};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use userfaultfd::{Event, FaultKind, FeatureFlags, RegisterMode, Uffd, UffdBuilder};

pub use ::common::PAGE_SIZE as PAGE;
/// 1 TiB, aligned to 1 TiB.
pub const ARENA_SIZE: usize = 1 << 40;

pub struct Harness {
    /// The arena.
    pub lo: usize,
    pub hi: usize,
    /// The mapped, registered region: `[lo, lo + len)`.
    pub len: usize,
    uffd: Uffd,
    /// Pins per page.
    pins: Vec<AtomicU32>,
    /// Saved contents of evicted pages (the "compressed pool").
    saved: Box<[AtomicU8]>,
    has_saved: Vec<AtomicBool>,
    /// Decisions to pin, evict or write-protect a page are taken under this.
    lock: Mutex<()>,
    pub pin_calls: AtomicU64,
    pub faults: AtomicU64,
    pub wp_faults: AtomicU64,
    pub skipped_pinned: AtomicU64,
}

const UFFD_USER_MODE_ONLY: libc::c_int = 1;

/// A user-mode-only userfaultfd with write-protect fault reporting:
/// `/dev/userfaultfd` where allowed (root), else the system call, which
/// Linux 5.11+ allows any user with `UFFD_USER_MODE_ONLY`.
fn open_uffd() -> Uffd {
    match UffdBuilder::new()
        .close_on_exec(true)
        .non_blocking(false)
        .user_mode_only(true)
        .require_features(FeatureFlags::PAGEFAULT_FLAG_WP)
        .create()
    {
        Ok(u) => u,
        Err(userfaultfd::Error::OpenDevUserfaultfd(_)) => {
            // SAFETY: userfaultfd(2) takes flags only.
            let fd = unsafe {
                libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | UFFD_USER_MODE_ONLY)
            };
            assert!(fd >= 0, "userfaultfd: {}", std::io::Error::last_os_error());
            #[repr(C)]
            struct Api {
                api: u64,
                features: u64,
                ioctls: u64,
            }
            let mut api = Api {
                api: 0xaa,
                features: 1, // UFFD_FEATURE_PAGEFAULT_FLAG_WP
                ioctls: 0,
            };
            // SAFETY: UFFDIO_API reads and writes one uffdio_api.
            let rc = unsafe { libc::ioctl(fd as i32, 0xc018_aa3f, &mut api as *mut Api) };
            assert_eq!(rc, 0, "UFFDIO_API: {}", std::io::Error::last_os_error());
            // SAFETY: a new fd nothing else owns.
            unsafe { Uffd::from_raw_fd(fd as i32) }
        }
        Err(e) => panic!("userfaultfd: {e}"),
    }
}

impl Harness {
    /// Reserves a 1 TiB arena at 16 TiB or above (with a PROT_NONE page
    /// below it), maps and
    /// registers its first `len` bytes, and starts the fault server.
    pub fn setup(len: usize) -> &'static Harness {
        // Where no program's own mappings go (the top-down mmap area starts
        // within ~1 TiB of 128 TiB, PIE executables and their heap near
        // 85 TiB, the legacy bottom-up layout at 42 TiB): the filter
        // survives execve, and a new program's buffers in the old arena
        // range would trap there, with no handler. The first free 1 TiB
        // slot from 16 TiB, with a PROT_NONE page below it.
        let mut lo = 0;
        for slot in 16..40usize {
            let want = slot * ARENA_SIZE - PAGE;
            // SAFETY: reserves address space that is free (NOREPLACE).
            let p = unsafe {
                libc::mmap(
                    want as *mut libc::c_void,
                    ARENA_SIZE + PAGE,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE
                        | libc::MAP_ANONYMOUS
                        | libc::MAP_NORESERVE
                        | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            if p as usize == want {
                lo = want + PAGE;
                break;
            }
        }
        assert_ne!(lo, 0, "no free arena slot");
        // SAFETY: remaps part of our own reservation read-write.
        let p = unsafe {
            libc::mmap(
                lo as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        assert_eq!(p as usize, lo);
        let uffd = open_uffd();
        uffd.register_with_mode(
            lo as *mut libc::c_void,
            len,
            RegisterMode::MISSING | RegisterMode::WRITE_PROTECT,
        )
        .expect("UFFDIO_REGISTER");
        let pages = len / PAGE;
        let h: &'static Harness = Box::leak(Box::new(Harness {
            lo,
            hi: lo + ARENA_SIZE,
            len,
            uffd,
            pins: (0..pages).map(|_| AtomicU32::new(0)).collect(),
            saved: (0..len).map(|_| AtomicU8::new(0)).collect(),
            has_saved: (0..pages).map(|_| AtomicBool::new(false)).collect(),
            lock: Mutex::new(()),
            pin_calls: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            wp_faults: AtomicU64::new(0),
            skipped_pinned: AtomicU64::new(0),
        }));
        // Wait until the server runs: a thread being created has every
        // signal blocked until glibc's start_thread restores its mask, and a
        // guard trap in that window would kill the process.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("uffd-server".into())
            .spawn(move || {
                tx.send(()).unwrap();
                h.serve()
            })
            .unwrap();
        rx.recv().unwrap();
        h
    }

    fn serve(&self) {
        let mut page = vec![0u8; PAGE];
        loop {
            let ev = match self.uffd.read_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => continue,
                Err(e) => panic!("uffd read: {e}"),
            };
            let Event::Pagefault { kind, addr, .. } = ev else {
                continue;
            };
            let at = addr as usize & !(PAGE - 1);
            match kind {
                FaultKind::Missing => {
                    self.faults.fetch_add(1, Ordering::Relaxed);
                    let i = (at - self.lo) / PAGE;
                    if self.has_saved[i].load(Ordering::Acquire) {
                        for (k, b) in page.iter_mut().enumerate() {
                            *b = self.saved[i * PAGE + k].load(Ordering::Relaxed);
                        }
                    } else {
                        page.fill(0);
                    }
                    // SAFETY: copies our buffer into the registered page.
                    match unsafe {
                        self.uffd
                            .copy(page.as_ptr() as _, at as *mut libc::c_void, PAGE, true)
                    } {
                        Ok(_) => {}
                        Err(userfaultfd::Error::CopyFailed(e)) if e as i32 == libc::EEXIST => {
                            let _ = self.uffd.wake(at as *mut libc::c_void, PAGE);
                        }
                        Err(e) => panic!("UFFDIO_COPY: {e}"),
                    }
                }
                FaultKind::WriteProtected => {
                    self.wp_faults.fetch_add(1, Ordering::Relaxed);
                    self.uffd
                        .remove_write_protection(at as *mut libc::c_void, PAGE, true)
                        .expect("UFFDIO_WRITEPROTECT");
                }
                #[allow(unreachable_patterns)]
                _ => {}
            }
        }
    }

    /// Address of byte `off` of the region.
    pub fn addr(&self, off: usize) -> usize {
        assert!(off < self.len);
        self.lo + off
    }

    pub fn ptr(&self, off: usize) -> *mut u8 {
        self.addr(off) as *mut u8
    }

    /// Writes `data` at `off` from user space (faults pages in).
    pub fn fill(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len);
        // SAFETY: inside the mapped region; user-mode faults are served.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr(off), data.len()) };
    }

    /// Reads `len` bytes at `off` from user space.
    pub fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.len);
        let mut out = vec![0u8; len];
        // SAFETY: as in `fill`.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr(off), out.as_mut_ptr(), len) };
        out
    }

    /// "Evicts" the pages of `[off, off+len)`: saves their contents to the
    /// backing store and drops them (`MADV_DONTNEED`). Pinned pages are
    /// skipped. Returns how many were evicted.
    pub fn evict(&self, off: usize, len: usize) -> usize {
        let first = off / PAGE;
        let last = (off + len).div_ceil(PAGE);
        let mut n = 0;
        for i in first..last {
            let _g = self.lock.lock().unwrap();
            if self.pins[i].load(Ordering::Acquire) > 0 {
                self.skipped_pinned.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let contents = self.read(i * PAGE, PAGE);
            for (k, b) in contents.iter().enumerate() {
                self.saved[i * PAGE + k].store(*b, Ordering::Relaxed);
            }
            self.has_saved[i].store(true, Ordering::Release);
            // SAFETY: drops our own pages; they come back from `saved`.
            let rc = unsafe {
                libc::madvise(
                    self.ptr(i * PAGE) as *mut libc::c_void,
                    PAGE,
                    libc::MADV_DONTNEED,
                )
            };
            assert_eq!(rc, 0);
            n += 1;
        }
        n
    }

    /// Write-protects the (resident) pages of `[off, off+len)`, skipping
    /// pinned ones (as the runtime's ager and evictor do). Returns how many
    /// were protected.
    pub fn write_protect(&self, off: usize, len: usize) -> usize {
        let first = off / PAGE;
        let last = (off + len).div_ceil(PAGE);
        let mut n = 0;
        for i in first..last {
            let _g = self.lock.lock().unwrap();
            if self.pins[i].load(Ordering::Acquire) > 0 {
                self.skipped_pinned.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.uffd
                .write_protect(self.ptr(i * PAGE) as *mut libc::c_void, PAGE)
                .expect("UFFDIO_WRITEPROTECT");
            n += 1;
        }
        n
    }

    pub fn pinned_pages(&self) -> usize {
        self.pins
            .iter()
            .filter(|p| p.load(Ordering::Relaxed) > 0)
            .count()
    }

    pub fn uffd_fd(&self) -> i32 {
        self.uffd.as_raw_fd()
    }
}

impl Pinner for Harness {
    fn pin(&self, addr: usize, len: usize, write: bool) -> PinToken {
        self.pin_calls.fetch_add(1, Ordering::Relaxed);
        // Only pages of the live region.
        let a = addr.max(self.lo);
        let b = (addr + len).min(self.lo + self.len);
        if a >= b {
            return PinToken::default();
        }
        let (first, last) = ((a - self.lo) / PAGE, (b - self.lo).div_ceil(PAGE));
        {
            let _g = self.lock.lock().unwrap();
            for i in first..last {
                self.pins[i].fetch_add(1, Ordering::AcqRel);
            }
        }
        // Fault in, outside the lock (the server does not take it). A write
        // touch is a compare-exchange of the byte with itself, tried until it
        // succeeds: a real write (an unused `fetch_or(0)` may become a load
        // and vanish) that changes nothing, even with other threads writing.
        for i in first..last {
            let p = self.lo + i * PAGE;
            if write {
                // SAFETY: a mapped page of the region; atomic access.
                let byte = unsafe { &*(p as *const AtomicU8) };
                loop {
                    let v = byte.load(Ordering::Relaxed);
                    if byte
                        .compare_exchange(v, v, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        break;
                    }
                }
            } else {
                // SAFETY: as above.
                unsafe { std::ptr::read_volatile(p as *const u8) };
            }
        }
        PinToken {
            addr: self.lo + first * PAGE,
            len: (last - first) * PAGE,
        }
    }

    fn unpin(&self, token: PinToken) {
        if token.len == 0 {
            return;
        }
        let first = (token.addr - self.lo) / PAGE;
        let last = first + token.len / PAGE;
        let _g = self.lock.lock().unwrap();
        for i in first..last {
            let prev = self.pins[i].fetch_sub(1, Ordering::AcqRel);
            assert!(prev > 0, "unpin of an unpinned page");
        }
    }
}

/// A pattern that differs per byte and per call.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8 ^ seed)
        .collect()
}
