//! Another process's memory, read without stopping it:
//! `process_vm_readv`, and the present bits of `/proc/PID/pagemap`.

use std::io;
use std::os::unix::fs::FileExt;

/// Reads `buf.len()` bytes at `addr` in process `pid`. A short read (a
/// range unmapped meanwhile) is an error.
pub fn read(pid: i32, addr: usize, buf: &mut [u8]) -> io::Result<()> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: one local iovec over `buf`, which we own mutably; the remote
    // one is only an address in the other process.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    whole(n, buf.len())
}

/// Writes `buf` at `addr` in process `pid`.
pub fn write(pid: i32, addr: usize, buf: &[u8]) -> io::Result<()> {
    let local = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: one local iovec over `buf`, only read by the call; the remote
    // one is only an address in the other process.
    let n = unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
    whole(n, buf.len())
}

/// A `process_vm_readv`/`writev` result: all `len` bytes moved, or the
/// error (a short transfer: the range was unmapped meanwhile).
fn whole(n: isize, len: usize) -> io::Result<()> {
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "range unmapped meanwhile",
        ));
    }
    Ok(())
}

/// Bit 63 of a pagemap entry: the page is present in memory.
const PM_PRESENT: u64 = 1 << 63;
/// Bit 62: the page is in the kernel's swap.
const PM_SWAP: u64 = 1 << 62;

/// A process's `/proc/PID/pagemap`, open.
pub struct Pagemap(std::fs::File);

impl Pagemap {
    pub fn open(pid: i32) -> io::Result<Self> {
        std::fs::File::open(format!("/proc/{pid}/pagemap")).map(Pagemap)
    }

    /// Whether the memory this pagemap was opened on still has users: a
    /// process that ran `execve` has another now, and the old pagemap
    /// reads nothing.
    pub fn alive(&self) -> bool {
        let mut entry = [0u8; 8];
        matches!(self.0.read_at(&mut entry, 0), Ok(8))
    }

    /// For each page of `[start, start + pages * PAGE_SIZE)`: whether it
    /// holds data (present, or in the kernel's swap).
    pub fn populated(&self, start: usize, pages: usize) -> io::Result<Vec<bool>> {
        let mut raw = vec![0u8; pages * 8];
        self.0
            .read_exact_at(&mut raw, (start / common::PAGE_SIZE * 8) as u64)?;
        Ok(raw
            .chunks_exact(8)
            .map(|e| {
                u64::from_le_bytes(e.try_into().unwrap_or_default()) & (PM_PRESENT | PM_SWAP) != 0
            })
            .collect())
    }
}

/// A process's peak resident set (`VmHWM`) and its resident anonymous
/// memory now (`RssAnon`), bytes.
pub fn rss_bytes(pid: i32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    Some((field("VmHWM:")?, field("RssAnon:")?))
}
