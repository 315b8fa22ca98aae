//! Reporting the buffers of one call: [`Emit`], its primitive kinds
//! (a range, a string, a registered or unknown pointer), and the structures
//! it walks through the program's memory (iovec arrays, `msghdr` and
//! `mmsghdr`, `argv`/`envp` arrays, socket addresses, file handles,
//! `futex_waitv` arrays, self-sized structures, sigset arguments).
//!
//! An array or structure is reported as a `Range` *before* it is read
//! through [`UserMem`], so the caller can pin it and fault it in first.
//! Pointers that are zero are not reported, nor are empty ranges.

use super::sizes::{FUTEX_WAITV, IOVEC, MMSGHDR, MSGHDR, SIGMASK};
use super::{Access, Buffer, UserMem, MAX_ARGV, MAX_ARG_STRLEN, MAX_RW_COUNT, UIO_MAXIOV};

/// `base + off` as an address (wrapping: a bogus pointer must not panic).
pub(crate) fn at(base: u64, off: u64) -> usize {
    base.wrapping_add(off) as usize
}

/// An `int` length argument: negative values fail with `EINVAL`.
pub(crate) fn int_len(v: u64) -> u64 {
    (v as u32 as i32).max(0) as u64
}

/// `FUTEX2_SIZE_*` in the low two bits of the flags: 1, 2, 4 or 8 bytes.
pub(crate) fn futex2_size(flags: u64) -> u64 {
    1 << (flags & 3)
}

/// Reports the buffers of one call to the caller's `f`.
pub(crate) struct Emit<'a> {
    pub(crate) mem: &'a dyn UserMem,
    pub(crate) f: &'a mut dyn FnMut(Buffer),
    /// Whether the description is only partial (`Coverage::Partial`).
    pub(crate) partial: bool,
    /// The call's pointer arguments (bit `i`: argument `i`), as the trap
    /// rule compares them with the arena.
    pub(crate) pointers: u8,
}

impl Emit<'_> {
    pub(crate) fn range(&mut self, addr: u64, len: u64, access: Access) {
        if addr != 0 && len != 0 {
            (self.f)(Buffer::Range {
                addr: addr as usize,
                len: len as usize,
                access,
            })
        }
    }

    pub(crate) fn registered(&mut self, addr: u64, len: u64, access: Access) {
        if addr != 0 && len != 0 {
            self.partial = true;
            (self.f)(Buffer::Registered {
                addr: addr as usize,
                len: len as usize,
                access,
            })
        }
    }

    pub(crate) fn cstr(&mut self, addr: u64, max: usize) {
        if addr != 0 {
            (self.f)(Buffer::CStr {
                addr: addr as usize,
                max,
            })
        }
    }

    pub(crate) fn unknown(&mut self, addr: u64) {
        if addr != 0 {
            (self.f)(Buffer::Unknown {
                addr: addr as usize,
            })
        }
    }

    /// Every pointer argument of a call the table cannot describe, as
    /// unknown.
    pub(crate) fn unknown_args(&mut self, a: &[u64; 6]) {
        for (i, &v) in a.iter().enumerate() {
            if self.pointers & (1 << i) != 0 {
                self.unknown(v)
            }
        }
        self.partial = true;
    }

    /// `struct iovec { void *base; size_t len; }[cnt]`: the array, then each
    /// buffer. More than `UIO_MAXIOV` entries fail with `EINVAL`.
    pub(crate) fn iovec(&mut self, iov: u64, cnt: u64, access: Access) {
        if iov == 0 || cnt == 0 || cnt > UIO_MAXIOV {
            return;
        }
        self.range(iov, cnt * IOVEC, Access::KernelReads);
        let mut total: u64 = 0;
        for i in 0..cnt {
            let (Some(base), Some(len)) = (
                self.mem.read_u64(at(iov, i * IOVEC)),
                self.mem.read_u64(at(iov, i * IOVEC + 8)),
            ) else {
                return;
            };
            let len = len.min(MAX_RW_COUNT - total);
            total += len;
            self.range(base, len, access);
            if total >= MAX_RW_COUNT {
                return;
            }
        }
    }

    /// `struct msghdr` (56 bytes): name @0, namelen @8, iov @16, iovlen @24,
    /// control @32, controllen @40, flags @48. `recvmsg` writes namelen,
    /// controllen and flags back.
    pub(crate) fn msghdr(&mut self, msg: u64, recv: bool) {
        if msg == 0 {
            return;
        }
        let access = if recv {
            Access::KernelWrites
        } else {
            Access::KernelReads
        };
        self.range(
            msg,
            MSGHDR,
            if recv {
                Access::KernelReadsWrites
            } else {
                Access::KernelReads
            },
        );
        self.msghdr_contents(msg as usize, access);
    }

    fn msghdr_contents(&mut self, msg: usize, access: Access) {
        let mem = self.mem;
        let (Some(name), Some(namelen), Some(iov), Some(iovlen), Some(control), Some(controllen)) = (
            mem.read_u64(msg),
            mem.read_u32(msg.wrapping_add(8)),
            mem.read_u64(msg.wrapping_add(16)),
            mem.read_u64(msg.wrapping_add(24)),
            mem.read_u64(msg.wrapping_add(32)),
            mem.read_u64(msg.wrapping_add(40)),
        ) else {
            return;
        };
        self.range(name, namelen as u64, access);
        self.iovec(iov, iovlen, access);
        self.range(control, controllen.min(MAX_RW_COUNT), access);
    }

    /// `struct mmsghdr { struct msghdr; unsigned msg_len; }[vlen]` (64 bytes
    /// each); the kernel writes `msg_len` (and, receiving, the msghdr fields).
    pub(crate) fn mmsghdr(&mut self, vec: u64, vlen: u64, recv: bool) {
        let vlen = (vlen as u32 as u64).min(UIO_MAXIOV);
        if vec == 0 || vlen == 0 {
            return;
        }
        self.range(vec, vlen * MMSGHDR, Access::KernelReadsWrites);
        let access = if recv {
            Access::KernelWrites
        } else {
            Access::KernelReads
        };
        for i in 0..vlen {
            self.msghdr_contents(at(vec, i * MMSGHDR), access);
        }
    }

    /// A `NULL`-terminated array of string pointers (`argv`, `envp`),
    /// reported a page at a time before it is read.
    pub(crate) fn str_array(&mut self, arr: u64) {
        if arr == 0 {
            return;
        }
        let mut at = arr as usize;
        let mut n = 0usize;
        loop {
            let page_end = (at | (common::PAGE_SIZE - 1)).wrapping_add(1);
            if page_end <= at {
                return;
            }
            self.range(at as u64, (page_end - at) as u64, Access::KernelReads);
            while at + 8 <= page_end {
                if !self.str_array_entry(at, n) {
                    return;
                }
                at += 8;
                n += 1;
            }
            if at < page_end {
                // A pointer straddles the page boundary: report the next page
                // before reading it.
                self.range(page_end as u64, 8, Access::KernelReads);
                if !self.str_array_entry(at, n) {
                    return;
                }
                at += 8;
                n += 1;
            }
        }
    }

    /// Entry `n` of a string array, its pointer at `at` (already
    /// reported): reports its string; false at the array's end (a null
    /// pointer, [`MAX_ARGV`] entries, or a pointer that cannot be read).
    fn str_array_entry(&mut self, at: usize, n: usize) -> bool {
        let Some(p) = self.mem.read_u64(at) else {
            return false;
        };
        if p == 0 || n >= MAX_ARGV {
            return false;
        }
        self.cstr(p, MAX_ARG_STRLEN);
        true
    }

    /// `(struct sockaddr *addr, socklen_t *addrlen)` the kernel fills.
    pub(crate) fn sockaddr_out(&mut self, addr: u64, lenp: u64) {
        if addr == 0 {
            return;
        }
        self.range(lenp, 4, Access::KernelReadsWrites);
        if lenp == 0 {
            return;
        }
        match self.mem.read_u32(lenp as usize) {
            Some(len) => self.range(addr, (len as i32).max(0) as u64, Access::KernelWrites),
            None => self.unknown(addr),
        }
    }

    /// `struct file_handle { u32 handle_bytes; i32 type; u8 f_handle[]; }`.
    pub(crate) fn file_handle(&mut self, h: u64, access: Access) {
        self.range(h, 8, Access::KernelReadsWrites);
        if h != 0 {
            let n = self.mem.read_u32(h as usize).unwrap_or(0).min(128) as u64;
            self.range(h, 8 + n, access)
        }
    }

    /// `struct futex_waitv { u64 val; u64 uaddr; u32 flags; u32 reserved; }`.
    pub(crate) fn futex_waitv(&mut self, w: u64, n: u64) {
        if w == 0 || n == 0 {
            return;
        }
        self.range(w, n * FUTEX_WAITV, Access::KernelReads);
        for i in 0..n {
            let (Some(uaddr), Some(flags)) = (
                self.mem.read_u64(at(w, i * FUTEX_WAITV + 8)),
                self.mem.read_u32(at(w, i * FUTEX_WAITV + 16)),
            ) else {
                return;
            };
            self.range(uaddr, futex2_size(flags as u64), Access::KernelReads)
        }
    }

    /// An extensible structure at `p` whose size is the `u32` at offset
    /// `size_at` in it (0 there means the first version, `ver0` bytes),
    /// at most a page. Its header, holding the size, is reported first by
    /// the table.
    pub(crate) fn self_sized(&mut self, p: u64, size_at: u64, ver0: u64, access: Access) {
        if p != 0 {
            let size = self.mem.read_u32(at(p, size_at)).unwrap_or(0);
            let size = if size == 0 { ver0 } else { size as u64 };
            self.range(p, size.min(4096), access)
        }
    }

    /// `struct { const sigset_t *ss; size_t ss_len; }` (`pselect6`'s sixth
    /// argument, `io_pgetevents`'): the structure, then the set.
    pub(crate) fn sigmask(&mut self, p: u64) {
        if p != 0 {
            self.range(p, SIGMASK, Access::KernelReads);
            if let (Some(ss), Some(len)) =
                (self.mem.read_u64(at(p, 0)), self.mem.read_u64(at(p, 8)))
            {
                self.range(ss, len.min(8), Access::KernelReads)
            }
        }
    }
}
