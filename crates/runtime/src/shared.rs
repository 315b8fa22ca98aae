//! A resident limit shared by several processes (`uzswap run` and its
//! children), as one memcg is: a small file mapped by every runtime of the
//! run, with one slot per process holding its pid and its resident pages.
//! Reclaim compares the sum of the live slots with the limit; each process
//! then evicts from its own pages. A process that dies without clearing
//! its slot is found by a liveness check (`kill(pid, 0)`) and swept.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Processes one shared limit can hold.
pub const SLOTS: usize = 512;

#[repr(C)]
struct Slot {
    pid: AtomicU32,
    _pad: u32,
    resident: AtomicU64,
}

const FILE_BYTES: usize = SLOTS * std::mem::size_of::<Slot>();

/// Views this process image holds. A forked child inherits its parent's
/// count (and forgets the parent's view); an exec starts again from 0.
static VIEWS_IN_THIS_IMAGE: AtomicUsize = AtomicUsize::new(0);

/// This process's view of a shared limit file.
#[derive(Debug)]
pub struct SharedLimit {
    base: *mut Slot,
    mine: usize,
    pid: u32,
}

// SAFETY: the mapping is shared memory accessed only through atomics; the
// pointer stays valid until drop.
unsafe impl Send for SharedLimit {}
// SAFETY: as above.
unsafe impl Sync for SharedLimit {}

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
        let pid = std::process::id();
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
        if (meta.len() as usize) < FILE_BYTES {
            file.set_len(FILE_BYTES as u64)?;
        }
        // SAFETY: a shared mapping of the file's first FILE_BYTES bytes,
        // which exist; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FILE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let mut shared = SharedLimit {
            base: ptr as *mut Slot,
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
        debug_assert!(i < SLOTS);
        // SAFETY: `i < SLOTS` and the mapping holds SLOTS slots for as long
        // as `self` lives; slots are only accessed through atomics.
        unsafe { &*self.base.add(i) }
    }

    /// Records this process's resident pages.
    pub fn publish(&self, pages: usize) {
        self.slot(self.mine)
            .resident
            .store(pages as u64, Ordering::Relaxed);
    }

    /// Resident pages of every process of the limit.
    pub fn total(&self) -> usize {
        (0..SLOTS)
            .map(|i| self.slot(i))
            .filter(|s| s.pid.load(Ordering::Relaxed) != 0)
            .map(|s| s.resident.load(Ordering::Relaxed) as usize)
            .sum()
    }

    /// Clears the slots of processes that died without clearing them.
    pub fn sweep(&self) {
        for i in (0..SLOTS).filter(|&i| i != self.mine) {
            let slot = self.slot(i);
            let owner = slot.pid.load(Ordering::Acquire);
            if owner != 0 && !alive(owner) {
                slot.resident.store(0, Ordering::Release);
                let _ = slot
                    .pid
                    .compare_exchange(owner, 0, Ordering::AcqRel, Ordering::Relaxed);
            }
        }
    }

    /// Gives the slot up (at exit: this process's pages no longer count).
    pub fn leave(&self) {
        let slot = self.slot(self.mine);
        slot.resident.store(0, Ordering::Release);
        let _ = slot
            .pid
            .compare_exchange(self.pid, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
}

impl Drop for SharedLimit {
    fn drop(&mut self) {
        self.leave();
        VIEWS_IN_THIS_IMAGE.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: unmapping the mapping made in `open`; no reference to it
        // outlives `self`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, FILE_BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests count views of this image: one at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
        let dead = b.slot(7);
        dead.pid.store(u32::MAX - 1, Ordering::Relaxed); // no such pid
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
