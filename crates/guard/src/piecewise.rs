//! Large file I/O under the guard, a piece at a time. One `read()` of a
//! whole file into a fresh buffer (python's, node's `readFileSync`, java's
//! `FileChannel.read`) would pin all of it for the call, far past the
//! limit; the kernel's own copy brings a buffer in page by page. So a
//! trapped `read`, `write`, `pread64`, `pwrite64`, `readv`, `writev`,
//! `preadv`, `pwritev`, `preadv2` or `pwritev2` of more than [`IO_PIECE`]
//! bytes that touches the arena, on a **regular file**, is issued as a
//! series of calls of at most [`IO_PIECE`] bytes each, with only that
//! piece's pages pinned.
//!
//! Regular files only: on a pipe or socket a second piece could block
//! where one call would have returned, or split a datagram. The result is
//! the sum of the pieces; a short piece ends it, and a failed one returns
//! what came before it (as a short read or write would), or its error if
//! it was the first. Anything this module does not take on (a vector it
//! cannot read, `preadv2` flags, a length the kernel would refuse) goes to
//! the ordinary path whole, where the kernel gives its own answer.

use crate::counters::{self, bump};
use crate::nr;
use crate::pins::{with_pinned, with_pinned_ranges};
use crate::proc_mem::ProcMem;
use crate::state::State;
use crate::syscalls::{UserMem, IOVEC, MAX_RW_COUNT, UIO_MAXIOV};
use crate::trampoline::syscall6;

/// Bytes of one piece.
pub(crate) const IO_PIECE: usize = 4 << 20;

/// Most buffers in one piece of a vectored call (its `iovec` array lives
/// on the handler's stack: 1 KiB).
const PIECE_IOVS: usize = 64;

/// A large file read or write of the arena in pieces; `None`: not such a
/// call, issue it whole.
///
/// # Safety
/// As for `guarded_syscall`.
pub(crate) unsafe fn file_io(st: &State, nr: i64, args: &[u64; 6]) -> Option<isize> {
    match nr {
        // SAFETY: forwarded from the caller.
        nr::READ | nr::WRITE | nr::PREAD64 | nr::PWRITE64 => unsafe { flat(st, nr, args) },
        nr::READV | nr::WRITEV | nr::PREADV | nr::PWRITEV | nr::PREADV2 | nr::PWRITEV2 => {
            // SAFETY: forwarded from the caller.
            unsafe { vectored(st, nr, args) }
        }
        _ => None,
    }
}

/// `read`, `write`, `pread64`, `pwrite64`: `(fd, buf, len[, pos])`.
///
/// # Safety
/// As for `guarded_syscall`.
unsafe fn flat(st: &State, nr: i64, args: &[u64; 6]) -> Option<isize> {
    let kernel_writes = matches!(nr, nr::READ | nr::PREAD64);
    let positioned = matches!(nr, nr::PREAD64 | nr::PWRITE64);
    let (buf, len) = (args[1] as usize, args[2] as usize);
    if len <= IO_PIECE || !touches_arena(st, buf, len) || !is_regular_file(args[0]) {
        return None;
    }
    bump(&counters::LIVE.piecewise_io);
    let mut done = 0usize;
    while done < len {
        let n = IO_PIECE.min(len - done);
        let mut piece = *args;
        piece[1] = (buf + done) as u64;
        piece[2] = n as u64;
        if positioned {
            piece[3] = args[3].wrapping_add(done as u64);
        }
        // SAFETY: the program's call on a part of its own buffer.
        let ret = with_pinned(st, buf + done, n, kernel_writes, || unsafe {
            syscall6(nr, piece)
        });
        if let Some(last) = settle(ret, n, &mut done) {
            return Some(last);
        }
    }
    Some(done as isize)
}

/// Adds piece result `ret` of `asked` bytes to `done`; `Some(result)`
/// where the call ends here (an error, or a short piece).
fn settle(ret: isize, asked: usize, done: &mut usize) -> Option<isize> {
    if ret < 0 {
        return Some(if *done > 0 { *done as isize } else { ret });
    }
    *done += ret as usize;
    ((ret as usize) < asked).then_some(*done as isize)
}

/// One buffer of a vectored call.
#[derive(Clone, Copy)]
struct Iov {
    base: usize,
    len: usize,
}

/// The program's `iovec` array, read entry by entry (it is pinned while
/// the call runs).
struct IovArray<'m> {
    mem: &'m ProcMem,
    addr: usize,
    cnt: usize,
}

impl IovArray<'_> {
    fn get(&self, i: usize) -> Option<Iov> {
        let at = self.addr.checked_add(i * IOVEC as usize)?;
        Some(Iov {
            base: self.mem.read_u64(at)? as usize,
            len: self.mem.read_u64(at + 8)? as usize,
        })
    }

    /// Total bytes (what the kernel would move, capped at `MAX_RW_COUNT`)
    /// and whether any buffer touches the arena; `None` where an entry
    /// cannot be read or the lengths overflow (the kernel's `EINVAL`).
    fn survey(&self, st: &State) -> Option<(usize, bool)> {
        let mut total = 0usize;
        let mut touches = false;
        for i in 0..self.cnt {
            let v = self.get(i)?;
            total = total
                .checked_add(v.len)
                .filter(|&t| t <= isize::MAX as usize)?;
            touches |= v.len > 0 && touches_arena(st, v.base, v.len);
        }
        Some((total.min(MAX_RW_COUNT as usize), touches))
    }
}

/// `readv`, `writev`, `preadv`, `pwritev`, `preadv2`, `pwritev2`:
/// `(fd, iov, cnt[, pos_l, pos_h[, flags]])`. On x86-64 the position is
/// `pos_l` alone; `preadv2`'s position -1 is the file's own, like `readv`.
/// `preadv2`/`pwritev2` with flags go whole (`RWF_APPEND`, `RWF_NOWAIT`:
/// pieces would change what they mean).
///
/// # Safety
/// As for `guarded_syscall`.
unsafe fn vectored(st: &State, nr: i64, args: &[u64; 6]) -> Option<isize> {
    let kernel_writes = matches!(nr, nr::READV | nr::PREADV | nr::PREADV2);
    let positioned = match nr {
        nr::READV | nr::WRITEV => false,
        nr::PREADV | nr::PWRITEV => true,
        _ if args[5] != 0 => return None,
        _ => args[3] != u64::MAX,
    };
    let (addr, cnt) = (args[1] as usize, args[2] as usize);
    // The file first: one `fstat`, cheaper than reading the vector, and
    // most vectored calls are on sockets and pipes (a server's replies).
    if addr == 0 || cnt == 0 || cnt as u64 > UIO_MAXIOV || !is_regular_file(args[0]) {
        return None;
    }
    let mem = ProcMem::new();
    let array = IovArray {
        mem: &mem,
        addr,
        cnt,
    };
    // The array stays pinned (read only) for the whole call.
    with_pinned(st, addr, cnt * IOVEC as usize, false, || {
        let (total, touches) = array.survey(st)?;
        if total <= IO_PIECE || !touches {
            return None;
        }
        bump(&counters::LIVE.piecewise_io);
        // SAFETY: forwarded from the caller.
        Some(unsafe { vectored_pieces(st, nr, args, &array, total, kernel_writes, positioned) })
    })
}

/// Issues the vectored call `nr` over `array`'s buffers, `total` bytes,
/// in pieces of at most [`IO_PIECE`] bytes and [`PIECE_IOVS`] buffers.
///
/// # Safety
/// As for `guarded_syscall`.
unsafe fn vectored_pieces(
    st: &State,
    nr: i64,
    args: &[u64; 6],
    array: &IovArray<'_>,
    total: usize,
    kernel_writes: bool,
    positioned: bool,
) -> isize {
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; PIECE_IOVS];
    let mut ranges = [(0usize, 0usize); PIECE_IOVS];
    // Where the next piece starts: entry `i`, `off` bytes into it.
    let (mut i, mut off) = (0usize, 0usize);
    let mut done = 0usize;
    while done < total {
        let budget = IO_PIECE.min(total - done);
        let mut n = 0usize;
        let mut bytes = 0usize;
        while bytes < budget && n < PIECE_IOVS && i < array.cnt {
            let Some(v) = array.get(i) else {
                // Read a moment ago, pinned since: cannot fail. Should it,
                // end the call as a failed piece would.
                return if done > 0 {
                    done as isize
                } else {
                    -(libc::EFAULT as isize)
                };
            };
            let take = v.len.saturating_sub(off).min(budget - bytes);
            if take > 0 {
                iov[n] = libc::iovec {
                    iov_base: (v.base + off) as *mut libc::c_void,
                    iov_len: take,
                };
                ranges[n] = (v.base + off, take);
                n += 1;
                bytes += take;
            }
            off += take;
            if off >= v.len {
                i += 1;
                off = 0;
            }
        }
        if n == 0 {
            break;
        }
        let mut piece = *args;
        piece[1] = iov.as_ptr() as u64;
        piece[2] = n as u64;
        if positioned {
            piece[3] = args[3].wrapping_add(done as u64);
        }
        // SAFETY: the program's call on parts of its own buffers, described
        // by our `iov`, which outlives the call.
        let ret = with_pinned_ranges(st, &ranges[..n], kernel_writes, || unsafe {
            syscall6(nr, piece)
        });
        if let Some(last) = settle(ret, bytes, &mut done) {
            return last;
        }
    }
    done as isize
}

fn touches_arena(st: &State, buf: usize, len: usize) -> bool {
    buf < st.hi && buf.saturating_add(len) > st.lo
}

/// Whether `fd` is open on a regular file (`fstat`, straight to the kernel).
fn is_regular_file(fd: u64) -> bool {
    // SAFETY: all-zero is a valid `stat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes `st`, ours, and nothing else.
    let rc = unsafe {
        syscall6(
            nr::FSTAT,
            [fd, &mut st as *mut libc::stat as u64, 0, 0, 0, 0],
        )
    };
    rc == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG
}
