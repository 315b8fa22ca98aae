//! The guard against real kernel accesses to a user-mode-only userfaultfd
//! region. A seccomp filter cannot be removed, so every scenario runs in a
//! child process of its own: this binary re-executes itself with
//! `GUARD_SCENARIO=name` and `GUARD_MODE=bare|guarded`.
//!
//! For each pair scenario the bare child must see `EFAULT` (the problem
//! exists on this kernel) and the guarded child must succeed with the right
//! bytes. Run as root, the suite then runs again as user `nobody` (a copy
//! of this binary in a 0755 directory, through `setpriv`).
//!
//! `cargo test -p guard --test kernel_faults [-- FILTER] [--policy always|code|array]`

mod common;

use common::{pattern, Harness, PAGE};
use guard::{nr, GuardConfig, IndirectPolicy};
use std::ffi::CString;
use std::io::{Error, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const REGION: usize = 64 << 20;
const MIB: usize = 1 << 20;

struct Ctx {
    h: &'static Harness,
    guarded: bool,
    dir: PathBuf,
}

type Res = Result<(), String>;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Bare: EFAULT; guarded: success.
    Pair,
    /// Only meaningful with the guard.
    GuardedOnly,
    /// Runs once, its own way.
    Single,
}

struct Scenario {
    name: &'static str,
    kind: Kind,
    run: fn(&Ctx) -> Res,
}

fn errno_result(rc: isize) -> Result<usize, Error> {
    if rc < 0 {
        Err(Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Bare: `res` must be EFAULT. Guarded: `res` must succeed and pass `ok`.
fn expect<T>(ctx: &Ctx, what: &str, res: Result<T, Error>, ok: impl FnOnce(T) -> Res) -> Res {
    if ctx.guarded {
        let v = res.map_err(|e| format!("{what} with the guard: {e}"))?;
        ok(v).map_err(|e| format!("{what} with the guard: {e}"))
    } else {
        match res {
            Err(e) if e.raw_os_error() == Some(libc::EFAULT) => Ok(()),
            Err(e) => Err(format!(
                "{what} without the guard: expected EFAULT, got {e}"
            )),
            Ok(_) => Err(format!(
                "{what} without the guard: expected EFAULT, it succeeded"
            )),
        }
    }
}

fn same(got: &[u8], want: &[u8]) -> Res {
    if got == want {
        Ok(())
    } else {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        Err(format!(
            "bytes differ at {at} (lengths {} and {})",
            got.len(),
            want.len()
        ))
    }
}

fn file_with(ctx: &Ctx, name: &str, data: &[u8]) -> std::fs::File {
    let path = ctx.dir.join(name);
    std::fs::write(&path, data).unwrap();
    std::fs::File::open(&path).unwrap()
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two fds into the local array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh fds we own.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn socketpair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two fds into the local array.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: fresh fds we own.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn write_all(fd: &OwnedFd, data: &[u8]) {
    let mut f = std::fs::File::from(fd.try_clone().unwrap());
    f.write_all(data).unwrap();
}

fn read_exact(fd: &OwnedFd, n: usize) -> Vec<u8> {
    let mut f = std::fs::File::from(fd.try_clone().unwrap());
    let mut v = vec![0u8; n];
    f.read_exact(&mut v).unwrap();
    v
}

fn iov(addr: usize, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    }
}

// ---------------------------------------------------------------- scenarios

fn read_file(ctx: &Ctx) -> Res {
    let data = pattern(3 * PAGE + 100, 1);
    let f = file_with(ctx, "read", &data);
    let off = 5 * PAGE + 17; // never touched, crosses pages
                             // SAFETY: read into the mapped region.
    let rc = unsafe { libc::read(f.as_raw_fd(), ctx.h.ptr(off) as _, data.len()) };
    expect(ctx, "read", errno_result(rc), |n| {
        same(&ctx.h.read(off, n), &data)
    })
}

fn pread_file(ctx: &Ctx) -> Res {
    let data = pattern(2 * PAGE, 2);
    let f = file_with(ctx, "pread", &data);
    let off = 9 * PAGE;
    // SAFETY: as above.
    let rc = unsafe { libc::pread(f.as_raw_fd(), ctx.h.ptr(off) as _, PAGE, PAGE as i64) };
    expect(ctx, "pread", errno_result(rc), |n| {
        same(&ctx.h.read(off, n), &data[PAGE..])
    })
}

fn readv_file(ctx: &Ctx) -> Res {
    let data = pattern(3 * PAGE, 3);
    let f = file_with(ctx, "readv", &data);
    // Three buffers: inside a page, across two pages, a whole page; the
    // iovec array is on the stack.
    let v = [
        iov(ctx.h.addr(20 * PAGE + 8), 100),
        iov(ctx.h.addr(22 * PAGE - 50), PAGE),
        iov(ctx.h.addr(30 * PAGE), 3 * PAGE - 100 - PAGE),
    ];
    // SAFETY: the iovecs point into the region.
    let rc = unsafe { libc::readv(f.as_raw_fd(), v.as_ptr(), 3) };
    expect(ctx, "readv", errno_result(rc), |n| {
        let mut got = ctx.h.read(20 * PAGE + 8, 100);
        got.extend(ctx.h.read(22 * PAGE - 50, PAGE));
        got.extend(ctx.h.read(30 * PAGE, 3 * PAGE - 100 - PAGE));
        same(&got[..n], &data)
    })
}

fn preadv_file(ctx: &Ctx) -> Res {
    let data = pattern(2 * PAGE, 4);
    let f = file_with(ctx, "preadv", &data);
    let v = [
        iov(ctx.h.addr(40 * PAGE), 100),
        iov(ctx.h.addr(41 * PAGE), 200),
    ];
    // SAFETY: as above.
    let rc = unsafe { libc::preadv(f.as_raw_fd(), v.as_ptr(), 2, 10) };
    expect(ctx, "preadv", errno_result(rc), |_| {
        same(&ctx.h.read(40 * PAGE, 100), &data[10..110])?;
        same(&ctx.h.read(41 * PAGE, 200), &data[110..310])
    })
}

fn preadv2_file(ctx: &Ctx) -> Res {
    let data = pattern(PAGE, 5);
    let f = file_with(ctx, "preadv2", &data);
    let v = [iov(ctx.h.addr(44 * PAGE), PAGE)];
    // SAFETY: as above.
    let rc =
        unsafe { libc::syscall(libc::SYS_preadv2, f.as_raw_fd(), v.as_ptr(), 1, 0, 0, 0) } as isize;
    expect(ctx, "preadv2", errno_result(rc), |_| {
        same(&ctx.h.read(44 * PAGE, PAGE), &data)
    })
}

fn read_pipe(ctx: &Ctx) -> Res {
    let (r, w) = pipe();
    let data = pattern(5000, 6);
    write_all(&w, &data);
    let off = 50 * PAGE + 3;
    // SAFETY: as above.
    let rc = unsafe { libc::read(r.as_raw_fd(), ctx.h.ptr(off) as _, data.len()) };
    expect(ctx, "read from a pipe", errno_result(rc), |n| {
        same(&ctx.h.read(off, n), &data)
    })
}

fn readv_pipe(ctx: &Ctx) -> Res {
    let (r, w) = pipe();
    let data = pattern(3000, 7);
    write_all(&w, &data);
    let v = [
        iov(ctx.h.addr(55 * PAGE), 1000),
        iov(ctx.h.addr(57 * PAGE), 2000),
    ];
    // SAFETY: as above.
    let rc = unsafe { libc::readv(r.as_raw_fd(), v.as_ptr(), 2) };
    expect(ctx, "readv from a pipe", errno_result(rc), |_| {
        let mut got = ctx.h.read(55 * PAGE, 1000);
        got.extend(ctx.h.read(57 * PAGE, 2000));
        same(&got, &data)
    })
}

/// Fills `[off, off+len)` with a pattern, evicts it, returns the pattern.
fn evicted(ctx: &Ctx, off: usize, len: usize, seed: u8) -> Vec<u8> {
    let data = pattern(len, seed);
    ctx.h.fill(off, &data);
    let n = ctx.h.evict(off, len);
    assert!(n > 0);
    data
}

fn write_evicted(ctx: &Ctx) -> Res {
    let off = 60 * PAGE + 123;
    let data = evicted(ctx, off, 3 * PAGE, 8);
    let path = ctx.dir.join("write");
    let f = std::fs::File::create(&path).unwrap();
    // SAFETY: write from the region.
    let rc = unsafe { libc::write(f.as_raw_fd(), ctx.h.ptr(off) as _, data.len()) };
    expect(ctx, "write from evicted pages", errno_result(rc), |_| {
        same(&std::fs::read(&path).unwrap(), &data)
    })
}

fn pwrite_evicted(ctx: &Ctx) -> Res {
    let off = 66 * PAGE;
    let data = evicted(ctx, off, PAGE, 9);
    let path = ctx.dir.join("pwrite");
    let f = std::fs::File::create(&path).unwrap();
    // SAFETY: as above.
    let rc = unsafe { libc::pwrite(f.as_raw_fd(), ctx.h.ptr(off) as _, PAGE, 100) };
    expect(ctx, "pwrite from evicted pages", errno_result(rc), |_| {
        same(&std::fs::read(&path).unwrap()[100..], &data)
    })
}

fn writev_evicted(ctx: &Ctx) -> Res {
    let a = evicted(ctx, 70 * PAGE, 500, 10);
    let b = evicted(ctx, 72 * PAGE + 4000, 2 * PAGE, 11);
    let (r, w) = pipe();
    let v = [
        iov(ctx.h.addr(70 * PAGE), 500),
        iov(ctx.h.addr(72 * PAGE + 4000), 2 * PAGE),
    ];
    // SAFETY: as above.
    let rc = unsafe { libc::writev(w.as_raw_fd(), v.as_ptr(), 2) };
    expect(ctx, "writev from evicted pages", errno_result(rc), |n| {
        let got = read_exact(&r, n);
        same(&got, &[a, b].concat())
    })
}

fn msghdr(name: usize, iov: &[libc::iovec]) -> libc::msghdr {
    // SAFETY: msghdr is plain data.
    let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
    m.msg_name = name as *mut libc::c_void;
    m.msg_iov = iov.as_ptr() as *mut libc::iovec;
    m.msg_iovlen = iov.len();
    m
}

fn sendmsg_evicted(ctx: &Ctx) -> Res {
    let data = evicted(ctx, 80 * PAGE + 10, 2 * PAGE, 12);
    let (s0, s1) = socketpair();
    let v = [iov(ctx.h.addr(80 * PAGE + 10), 2 * PAGE)];
    let m = msghdr(0, &v);
    // SAFETY: the message points into the region.
    let rc = unsafe { libc::sendmsg(s0.as_raw_fd(), &m, 0) };
    expect(ctx, "sendmsg from evicted pages", errno_result(rc), |n| {
        same(&read_exact(&s1, n), &data)
    })
}

fn sendmsg_header_in_arena(ctx: &Ctx) -> Res {
    // The msghdr and its iovec array themselves live in an evicted arena page.
    let data = evicted(ctx, 84 * PAGE, 300, 13);
    let v = [iov(ctx.h.addr(84 * PAGE), 300)];
    let hdr_off = 86 * PAGE;
    let iov_off = 86 * PAGE + 512;
    // SAFETY: plain-data views written into the region.
    unsafe {
        std::ptr::write_unaligned(ctx.h.ptr(iov_off) as *mut libc::iovec, v[0]);
        let m = msghdr(
            0,
            std::slice::from_raw_parts(ctx.h.ptr(iov_off) as *const libc::iovec, 1),
        );
        std::ptr::write_unaligned(ctx.h.ptr(hdr_off) as *mut libc::msghdr, m);
    }
    ctx.h.evict(hdr_off, PAGE);
    let (s0, s1) = socketpair();
    // SAFETY: as above.
    let rc = unsafe { libc::sendmsg(s0.as_raw_fd(), ctx.h.ptr(hdr_off) as *const libc::msghdr, 0) };
    expect(
        ctx,
        "sendmsg with the msghdr in evicted memory",
        errno_result(rc),
        |n| same(&read_exact(&s1, n), &data),
    )
}

fn recv_socketpair(ctx: &Ctx) -> Res {
    let (s0, s1) = socketpair();
    let data = pattern(6000, 14);
    write_all(&s1, &data);
    let off = 90 * PAGE + 1;
    // SAFETY: recv into the region.
    let rc = unsafe {
        libc::recv(
            s0.as_raw_fd(),
            ctx.h.ptr(off) as _,
            data.len(),
            libc::MSG_WAITALL,
        )
    };
    expect(ctx, "recv", errno_result(rc), |n| {
        same(&ctx.h.read(off, n), &data)
    })
}

fn recvmsg_socketpair(ctx: &Ctx) -> Res {
    let (s0, s1) = socketpair();
    let data = pattern(1500, 15);
    write_all(&s1, &data);
    let v = [
        iov(ctx.h.addr(95 * PAGE), 700),
        iov(ctx.h.addr(97 * PAGE), 800),
    ];
    let mut m = msghdr(0, &v);
    // SAFETY: as above.
    let rc = unsafe { libc::recvmsg(s0.as_raw_fd(), &mut m, libc::MSG_WAITALL) };
    expect(ctx, "recvmsg", errno_result(rc), |_| {
        let mut got = ctx.h.read(95 * PAGE, 700);
        got.extend(ctx.h.read(97 * PAGE, 800));
        same(&got, &data)
    })
}

fn recvmmsg_sendmmsg(ctx: &Ctx) -> Res {
    let (s0, s1) = {
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two fds.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0);
        // SAFETY: fresh fds.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    };
    let a = evicted(ctx, 100 * PAGE, 200, 16);
    let b = evicted(ctx, 101 * PAGE, 300, 17);
    let va = [iov(ctx.h.addr(100 * PAGE), 200)];
    let vb = [iov(ctx.h.addr(101 * PAGE), 300)];
    // SAFETY: mmsghdr is plain data.
    let mut out: [libc::mmsghdr; 2] = unsafe { std::mem::zeroed() };
    out[0].msg_hdr = msghdr(0, &va);
    out[1].msg_hdr = msghdr(0, &vb);
    // SAFETY: as above.
    let rc = unsafe { libc::sendmmsg(s1.as_raw_fd(), out.as_mut_ptr(), 2, 0) } as isize;
    expect(ctx, "sendmmsg from evicted pages", errno_result(rc), |n| {
        if n == 2 {
            Ok(())
        } else {
            Err(format!("{n} messages"))
        }
    })?;
    if !ctx.guarded {
        return Ok(());
    }
    let ra = [iov(ctx.h.addr(103 * PAGE), 200)];
    let rb = [iov(ctx.h.addr(105 * PAGE), 300)];
    // SAFETY: as above.
    let mut inm: [libc::mmsghdr; 2] = unsafe { std::mem::zeroed() };
    inm[0].msg_hdr = msghdr(0, &ra);
    inm[1].msg_hdr = msghdr(0, &rb);
    // SAFETY: as above.
    let rc = unsafe { libc::recvmmsg(s0.as_raw_fd(), inm.as_mut_ptr(), 2, 0, std::ptr::null_mut()) }
        as isize;
    expect(ctx, "recvmmsg", errno_result(rc), |_| {
        same(&ctx.h.read(103 * PAGE, 200), &a)?;
        same(&ctx.h.read(105 * PAGE, 300), &b)
    })
}

fn getrandom(ctx: &Ctx) -> Res {
    let off = 110 * PAGE + 40;
    // SAFETY: getrandom into the region.
    let rc = unsafe { libc::getrandom(ctx.h.ptr(off) as _, 2 * PAGE, 0) };
    expect(ctx, "getrandom", errno_result(rc), |n| {
        let got = ctx.h.read(off, n);
        if n == 2 * PAGE && got.iter().filter(|&&b| b == 0).count() < n / 16 {
            Ok(())
        } else {
            Err(format!("{n} bytes, mostly zero?"))
        }
    })
}

fn o_direct_read(ctx: &Ctx) -> Res {
    let data = pattern(256 << 10, 18);
    let path = ctx.dir.join("direct");
    std::fs::write(&path, &data).unwrap();
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            eprintln!("O_DIRECT not supported on {}: skipped", ctx.dir.display());
            return Ok(());
        }
        Err(e) => return Err(format!("open O_DIRECT: {e}")),
    };
    let off = 128 * PAGE;
    // SAFETY: aligned read into the region.
    let rc = unsafe { libc::pread(f.as_raw_fd(), ctx.h.ptr(off) as _, 64 << 10, 64 << 10) };
    expect(ctx, "O_DIRECT read", errno_result(rc), |n| {
        same(&ctx.h.read(off, n), &data[64 << 10..128 << 10])
    })
}

fn stdio_8mib_blocks(ctx: &Ctx) -> Res {
    let data = pattern(16 * MIB, 19);
    let src = ctx.dir.join("stdio-in");
    std::fs::write(&src, &data).unwrap();
    let cpath = CString::new(src.to_str().unwrap()).unwrap();
    let rmode = CString::new("rb").unwrap();
    // SAFETY: libc stdio on a path and mode we own.
    let f = unsafe { libc::fopen(cpath.as_ptr(), rmode.as_ptr()) };
    assert!(!f.is_null());
    let off = 4 * MIB; // never touched
    let mut res = Ok(());
    for block in 0..2 {
        // SAFETY: fread into the region (8 MiB, within it).
        let n = unsafe { libc::fread(ctx.h.ptr(off + block * 8 * MIB) as _, 1, 8 * MIB, f) };
        let r = if n == 8 * MIB {
            Ok(n)
        } else {
            Err(Error::last_os_error())
        };
        res = expect(ctx, "fread of 8 MiB", r, |n| {
            same(
                &ctx.h.read(off + block * 8 * MIB, n),
                &data[block * 8 * MIB..(block + 1) * 8 * MIB],
            )
        });
        if res.is_err() || !ctx.guarded {
            break;
        }
    }
    // SAFETY: closes the stream.
    unsafe { libc::fclose(f) };
    res?;
    // fwrite of 8 MiB from evicted pages.
    let out_data = evicted(ctx, 24 * MIB, 8 * MIB, 20);
    let dst = ctx.dir.join("stdio-out");
    let cdst = CString::new(dst.to_str().unwrap()).unwrap();
    let wmode = CString::new("wb").unwrap();
    // SAFETY: as above.
    let f = unsafe { libc::fopen(cdst.as_ptr(), wmode.as_ptr()) };
    assert!(!f.is_null());
    // SAFETY: fwrite from the region.
    let n = unsafe { libc::fwrite(ctx.h.ptr(24 * MIB) as _, 1, 8 * MIB, f) };
    let err = Error::last_os_error();
    // SAFETY: closes the stream.
    unsafe { libc::fclose(f) };
    let r = if n == 8 * MIB { Ok(n) } else { Err(err) };
    expect(ctx, "fwrite of 8 MiB from evicted pages", r, |_| {
        same(&std::fs::read(&dst).unwrap(), &out_data)
    })
}

fn stat_fstat(ctx: &Ctx) -> Res {
    let data = pattern(12345, 21);
    let f = file_with(ctx, "stat", &data);
    let st_off = 140 * PAGE + 3000; // crosses a page
                                    // SAFETY: fstat into the region.
    let rc = unsafe { libc::fstat(f.as_raw_fd(), ctx.h.ptr(st_off) as *mut libc::stat) } as isize;
    expect(ctx, "fstat", errno_result(rc), |_| {
        // SAFETY: the kernel filled a struct stat there.
        let st = unsafe { std::ptr::read_unaligned(ctx.h.ptr(st_off) as *const libc::stat) };
        if st.st_size == 12345 {
            Ok(())
        } else {
            Err(format!("st_size {}", st.st_size))
        }
    })?;
    let p = CString::new(ctx.dir.join("stat").to_str().unwrap()).unwrap();
    let st2 = 142 * PAGE;
    // SAFETY: stat into the region.
    let rc = unsafe { libc::stat(p.as_ptr(), ctx.h.ptr(st2) as *mut libc::stat) } as isize;
    expect(ctx, "stat", errno_result(rc), |_| {
        // SAFETY: as above.
        let st = unsafe { std::ptr::read_unaligned(ctx.h.ptr(st2) as *const libc::stat) };
        if st.st_size == 12345 {
            Ok(())
        } else {
            Err(format!("st_size {}", st.st_size))
        }
    })?;
    // statx as well.
    let sx = 144 * PAGE;
    // SAFETY: statx into the region.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            p.as_ptr(),
            0,
            libc::STATX_SIZE,
            ctx.h.ptr(sx) as *mut libc::statx,
        )
    } as isize;
    expect(ctx, "statx", errno_result(rc), |_| {
        // SAFETY: as above.
        let st = unsafe { std::ptr::read_unaligned(ctx.h.ptr(sx) as *const libc::statx) };
        if st.stx_size == 12345 {
            Ok(())
        } else {
            Err(format!("stx_size {}", st.stx_size))
        }
    })
}

fn open_path_in_arena(ctx: &Ctx) -> Res {
    let data = pattern(100, 22);
    std::fs::write(ctx.dir.join("opened"), &data).unwrap();
    let path = format!("{}\0", ctx.dir.join("opened").display());
    // The path straddles two pages, both evicted.
    let off = 151 * PAGE - 10;
    ctx.h.fill(off, path.as_bytes());
    ctx.h.evict(off, path.len());
    // SAFETY: the path lives in the region.
    let fd = unsafe {
        libc::open(
            ctx.h.ptr(off) as *const libc::c_char,
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    } as isize;
    expect(
        ctx,
        "open of a path in evicted memory",
        errno_result(fd),
        |fd| {
            // SAFETY: a new fd.
            let mut f = unsafe { std::fs::File::from_raw_fd(fd as i32) };
            let mut got = Vec::new();
            f.read_to_end(&mut got).unwrap();
            same(&got, &data)
        },
    )
}

/// argv strings (and the array) in evicted arena pages; `/bin/echo` started
/// with posix_spawn (a vfork-like child sharing this memory: a grandchild
/// of the test) prints them into a pipe.
fn posix_spawn_argv(ctx: &Ctx) -> Res {
    let words = ["/bin/echo", "hello", "from", "the", "arena"];
    let mut off = 160 * PAGE + 4000;
    let mut ptrs: Vec<*mut libc::c_char> = Vec::new();
    for w in words {
        let s = format!("{w}\0");
        ctx.h.fill(off, s.as_bytes());
        ptrs.push(ctx.h.ptr(off) as *mut libc::c_char);
        off += s.len() + 50;
    }
    ptrs.push(std::ptr::null_mut());
    ctx.h.evict(160 * PAGE, 2 * PAGE);
    let (r, w) = pipe();
    // SAFETY: posix_spawn with file actions on local objects.
    unsafe {
        let mut fa: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut fa);
        libc::posix_spawn_file_actions_adddup2(&mut fa, w.as_raw_fd(), 1);
        let mut pid = 0;
        let path = CString::new("/bin/echo").unwrap();
        let env: [*mut libc::c_char; 1] = [std::ptr::null_mut()];
        let rc = libc::posix_spawn(
            &mut pid,
            path.as_ptr(),
            &fa,
            std::ptr::null(),
            ptrs.as_ptr(),
            env.as_ptr(),
        );
        libc::posix_spawn_file_actions_destroy(&mut fa);
        drop(w);
        let res = if rc == 0 {
            Ok(pid)
        } else {
            Err(Error::from_raw_os_error(rc))
        };
        expect(ctx, "posix_spawn with argv in evicted memory", res, |pid| {
            let mut out = String::new();
            std::fs::File::from(r).read_to_string(&mut out).unwrap();
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            if out == "hello from the arena\n" {
                Ok(())
            } else {
                Err(format!("echo printed {out:?}"))
            }
        })
    }
}

/// execve straight from the process that owns the userfaultfd: its stdout
/// is checked by the parent (`execve_direct` expects the line).
fn execve_argv(ctx: &Ctx) -> Res {
    let words = ["/bin/echo", "exec", "from", "the", "arena"];
    let base = 170 * PAGE + 100;
    // The argv array itself in the arena too.
    let arr = 172 * PAGE;
    let mut off = base;
    for (i, w) in words.iter().enumerate() {
        let s = format!("{w}\0");
        ctx.h.fill(off, s.as_bytes());
        ctx.h
            .fill(arr + 8 * i, &(ctx.h.addr(off) as u64).to_ne_bytes());
        off += s.len() + 1000;
    }
    ctx.h.fill(arr + 8 * words.len(), &0u64.to_ne_bytes());
    ctx.h.evict(base, 3 * PAGE);
    let env: [*const libc::c_char; 1] = [std::ptr::null()];
    std::io::stdout().flush().unwrap();
    // SAFETY: execve with pointers into the region; on success this process
    // becomes /bin/echo.
    let rc = unsafe {
        libc::execve(
            ctx.h.ptr(base) as *const libc::c_char,
            ctx.h.ptr(arr) as *const *const libc::c_char,
            env.as_ptr(),
        )
    } as isize;
    expect(
        ctx,
        "execve with argv in evicted memory",
        errno_result(rc),
        |_| Err("execve returned".into()),
    )
}

fn poll_array(ctx: &Ctx) -> Res {
    let (r, w) = pipe();
    write_all(&w, b"x");
    let off = 180 * PAGE + 4092; // straddles
    let fds = [
        libc::pollfd {
            fd: r.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: w.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        },
    ];
    // SAFETY: pollfd is plain data.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(fds.as_ptr() as *const u8, 16) };
    ctx.h.fill(off, bytes);
    ctx.h.evict(off, 16);
    // SAFETY: poll on an array in the region.
    let rc = unsafe { libc::poll(ctx.h.ptr(off) as *mut libc::pollfd, 2, 1000) } as isize;
    expect(
        ctx,
        "poll with the array in evicted memory",
        errno_result(rc),
        |n| {
            // SAFETY: the kernel wrote the revents.
            let got: [libc::pollfd; 2] =
                unsafe { std::ptr::read_unaligned(ctx.h.ptr(off) as *const [libc::pollfd; 2]) };
            if n == 2 && got[0].revents & libc::POLLIN != 0 && got[1].revents & libc::POLLOUT != 0 {
                Ok(())
            } else {
                Err(format!("poll {n}"))
            }
        },
    )
}

fn futex_word(ctx: &Ctx) -> Res {
    // A word holding 5, evicted: FUTEX_WAIT for 0 reads it and says EAGAIN.
    let off = 190 * PAGE + 8;
    ctx.h.fill(off, &5u32.to_ne_bytes());
    ctx.h.evict(off, 4);
    let ts = libc::timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    // SAFETY: futex on a word of the region.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            ctx.h.ptr(off),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            0,
            &ts,
        )
    } as isize;
    let res = match errno_result(rc) {
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Ok(()),
    };
    expect(ctx, "futex wait on an evicted word", res, |_| Ok(()))?;
    if !ctx.guarded {
        return Ok(());
    }
    // A real wait and wake on a never-touched word.
    let woff = 192 * PAGE;
    let word = ctx.h.addr(woff);
    let waiter = std::thread::spawn(move || {
        let ts = libc::timespec {
            tv_sec: 5,
            tv_nsec: 0,
        };
        // SAFETY: as above.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word as *const u32,
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                0,
                &ts,
            )
        };
        (rc, Error::last_os_error().raw_os_error())
    });
    std::thread::sleep(Duration::from_millis(200));
    ctx.h.evict(woff, 4); // skipped if the waiter's pin is still held
    ctx.h.fill(woff, &1u32.to_ne_bytes());
    ctx.h.evict(woff, 4);
    // SAFETY: as above.
    let woke = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const u32,
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        )
    };
    let (rc, err) = waiter.join().unwrap();
    if woke < 0 {
        return Err(format!("futex wake: {}", Error::last_os_error()));
    }
    if rc == 0 || err == Some(libc::EAGAIN) {
        Ok(())
    } else {
        Err(format!("futex wait: rc {rc}, errno {err:?}"))
    }
}

fn nanosleep_timespec(ctx: &Ctx) -> Res {
    let off = 195 * PAGE;
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: timespec is plain data.
    let bytes: [u8; 16] = unsafe { std::mem::transmute(ts) };
    ctx.h.fill(off, &bytes);
    ctx.h.evict(off, 16);
    // SAFETY: the request in the region, the remainder pointer too.
    let rc = unsafe {
        libc::nanosleep(
            ctx.h.ptr(off) as *const libc::timespec,
            ctx.h.ptr(off + 16) as *mut libc::timespec,
        )
    } as isize;
    expect(
        ctx,
        "nanosleep with an evicted timespec",
        errno_result(rc),
        |_| Ok(()),
    )
}

fn read_into_write_protected_page(ctx: &Ctx) -> Res {
    let data = pattern(3000, 23);
    let f = file_with(ctx, "wp", &data);
    let off = 200 * PAGE;
    ctx.h.fill(off, &[1u8; PAGE]);
    assert_eq!(ctx.h.write_protect(off, PAGE), 1);
    // SAFETY: read into the region.
    let rc = unsafe { libc::read(f.as_raw_fd(), ctx.h.ptr(off + 500) as _, data.len()) };
    expect(
        ctx,
        "read into a write-protected page",
        errno_result(rc),
        |n| {
            same(&ctx.h.read(off + 500, n), &data)?;
            same(&ctx.h.read(off, 500), &[1u8; 500])
        },
    )
}

/// A blocking pipe read whose (resident) buffer another thread
/// write-protects while the call waits: with the guard the page is pinned,
/// so the other thread leaves it alone.
fn blocking_read_page_protected_meanwhile(ctx: &Ctx) -> Res {
    let (r, w) = pipe();
    let off = 210 * PAGE;
    ctx.h.fill(off, &[7u8; PAGE]);
    let data = pattern(2000, 24);
    let h = ctx.h;
    let d2 = data.clone();
    let other = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let protected = h.write_protect(off, PAGE);
        write_all(&w, &d2);
        protected
    });
    // SAFETY: read into the region (blocks until the other thread writes).
    let rc = unsafe { libc::read(r.as_raw_fd(), ctx.h.ptr(off) as _, data.len()) };
    let res = errno_result(rc);
    let protected = other.join().unwrap();
    if ctx.guarded && protected != 0 {
        return Err("the pinned page was write-protected".into());
    }
    if !ctx.guarded && protected != 1 {
        return Err("the page was not write-protected".into());
    }
    expect(
        ctx,
        "blocking read into a page protected meanwhile",
        res,
        |n| same(&ctx.h.read(off, n), &data),
    )
}

fn getdents_getcwd_readlink(ctx: &Ctx) -> Res {
    std::fs::write(ctx.dir.join("entry"), b"").unwrap();
    let d = std::fs::File::open(&ctx.dir).unwrap();
    let off = 220 * PAGE;
    // SAFETY: getdents64 into the region.
    let rc = unsafe { libc::syscall(libc::SYS_getdents64, d.as_raw_fd(), ctx.h.ptr(off), 8192) }
        as isize;
    expect(ctx, "getdents64", errno_result(rc), |n| {
        let got = ctx.h.read(off, n);
        if got.windows(5).any(|w| w == b"entry") {
            Ok(())
        } else {
            Err("no entry".into())
        }
    })?;
    let c = 224 * PAGE;
    // SAFETY: getcwd into the region.
    let p = unsafe { libc::getcwd(ctx.h.ptr(c) as *mut libc::c_char, 4096) };
    let res = if p.is_null() {
        Err(Error::last_os_error())
    } else {
        Ok(())
    };
    expect(ctx, "getcwd", res, |_| Ok(()))?;
    let link = ctx.dir.join("link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("target-name", &link).unwrap();
    let lp = CString::new(link.to_str().unwrap()).unwrap();
    let l = 226 * PAGE;
    // SAFETY: readlink into the region.
    let rc = unsafe { libc::readlink(lp.as_ptr(), ctx.h.ptr(l) as *mut libc::c_char, 100) };
    expect(ctx, "readlink", errno_result(rc), |n| {
        same(&ctx.h.read(l, n), b"target-name")
    })
}

fn clock_and_uname(ctx: &Ctx) -> Res {
    let off = 230 * PAGE;
    // SAFETY: clock_gettime into the region (the vDSO does not need the
    // kernel to write: use the system call).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_MONOTONIC,
            ctx.h.ptr(off),
        )
    } as isize;
    expect(ctx, "clock_gettime (system call)", errno_result(rc), |_| {
        Ok(())
    })?;
    // SAFETY: uname into the region.
    let rc = unsafe { libc::uname(ctx.h.ptr(232 * PAGE) as *mut libc::utsname) } as isize;
    expect(ctx, "uname", errno_result(rc), |_| {
        if ctx.h.read(232 * PAGE, 5) == b"Linux" {
            Ok(())
        } else {
            Err("sysname".into())
        }
    })
}

fn ioctl_fionread_and_winsize(ctx: &Ctx) -> Res {
    let (r, w) = pipe();
    write_all(&w, b"abc");
    let off = 240 * PAGE;
    // SAFETY: FIONREAD writes an int into the region.
    let rc = unsafe { libc::ioctl(r.as_raw_fd(), libc::FIONREAD, ctx.h.ptr(off)) } as isize;
    expect(ctx, "ioctl(FIONREAD)", errno_result(rc), |_| {
        same(&ctx.h.read(off, 4), &3i32.to_ne_bytes())
    })
}

// ---- guard-only behaviour

/// The program blocks SIGSYS (pthread_sigmask, SIG_BLOCK of a full set):
/// the guard keeps it unblocked, so a trap afterwards does not kill it.
fn sigsys_stays_unblocked(ctx: &Ctx) -> Res {
    // SAFETY: signal-set manipulation on locals.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut old: libc::sigset_t = std::mem::zeroed();
        assert_eq!(libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old), 0);
        let mut now: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now);
        if libc::sigismember(&now, libc::SIGSYS) == 1 {
            return Err("SIGSYS is blocked".into());
        }
        if libc::sigismember(&now, libc::SIGINT) != 1 {
            return Err("SIGINT should be blocked".into());
        }
        // A trap while everything else is blocked.
        read_file(ctx)?;
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    let c = guard::counters();
    if c.sigmask_fixes == 0 {
        return Err("no sigmask fix counted".into());
    }
    Ok(())
}

static PROGRAM_SIGSYS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn program_sigsys(_: libc::c_int) {
    PROGRAM_SIGSYS.fetch_add(1, Ordering::SeqCst);
}

/// The program installs its own SIGSYS handler: it gets SIGSYS signals
/// that are not the guard's, and the guard keeps working.
fn program_sigsys_handler_is_chained(ctx: &Ctx) -> Res {
    // SAFETY: installing a handler through libc and signalling ourselves.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = program_sigsys as *const () as usize;
        libc::sigfillset(&mut act.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(libc::SIGSYS, &act, &mut old), 0);
        if !guard::handler_installed() {
            return Err("the guard's handler was replaced".into());
        }
        libc::raise(libc::SIGSYS);
        if PROGRAM_SIGSYS.load(Ordering::SeqCst) != 1 {
            return Err("the program's handler did not run".into());
        }
        let mut cur: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGSYS, std::ptr::null(), &mut cur);
        if cur.sa_sigaction != program_sigsys as *const () as usize {
            return Err("sigaction does not report the program's handler".into());
        }
    }
    read_file(ctx)?;
    let c = guard::counters();
    if c.chained != 1 || c.sigsys_actions == 0 {
        return Err(format!("counters {c:?}"));
    }
    Ok(())
}

/// A guarded call that touches no arena page is simply re-issued (here:
/// `rt_sigprocmask` emulation aside, a `writev` from the stack under the
/// FromCode policy traps and must still work).
fn untouched_by_arena(ctx: &Ctx) -> Res {
    let (r, w) = pipe();
    let a = b"plain ";
    let b = b"stack";
    let v = [
        iov(a.as_ptr() as usize, a.len()),
        iov(b.as_ptr() as usize, b.len()),
    ];
    let before = guard::counters().traps;
    // SAFETY: writev from local buffers.
    let rc = unsafe { libc::writev(w.as_raw_fd(), v.as_ptr(), 2) };
    if rc != 11 {
        return Err(format!("writev {rc}"));
    }
    same(&read_exact(&r, 11), b"plain stack")?;
    let _ = (ctx, before);
    Ok(())
}

/// Many iovecs (1024, the kernel's maximum) on distinct pages.
fn readv_1024_iovecs(ctx: &Ctx) -> Res {
    let data = pattern(1024 * 16, 25);
    let f = file_with(ctx, "many", &data);
    let base = 1024 * PAGE; // pages 1024..2048 of the region (4-8 MiB)
    let v: Vec<libc::iovec> = (0..1024)
        .map(|i| iov(ctx.h.addr(base + i * PAGE + i % 100), 16))
        .collect();
    // SAFETY: as above.
    let rc = unsafe { libc::readv(f.as_raw_fd(), v.as_ptr(), 1024) };
    expect(ctx, "readv of 1024 iovecs", errno_result(rc), |n| {
        if n != data.len() {
            return Err(format!("{n} bytes"));
        }
        for i in 0..1024 {
            same(
                &ctx.h.read(base + i * PAGE + i % 100, 16),
                &data[i * 16..i * 16 + 16],
            )?;
        }
        Ok(())
    })
}

/// What `seccomp_data.instruction_pointer` holds: a filter of our own
/// answers EPERM for getppid called from right after the trampoline's
/// `syscall`, ENOENT otherwise.
fn instruction_pointer_is_after_syscall(_: &Ctx) -> Res {
    let ret = guard::trampoline::syscall_return_address() as u64;
    #[rustfmt::skip]
    let prog = [
        // ld nr; jeq getppid else allow
        f(0x20, 0, 0, 0), f(0x15, 0, 6, nr::GETPPID as u32),
        // ld ip lo; jeq ret_lo else enoent; ld ip hi; jeq ret_hi else enoent
        f(0x20, 0, 0, 8), f(0x15, 0, 3, ret as u32),
        f(0x20, 0, 0, 12), f(0x15, 0, 1, (ret >> 32) as u32),
        f(0x06, 0, 0, 0x0005_0000 | libc::EPERM as u32),
        f(0x06, 0, 0, 0x0005_0000 | libc::ENOENT as u32),
        f(0x06, 0, 0, 0x7fff_0000),
    ];
    fn f(code: u16, jt: u8, jf: u8, k: u32) -> guard::filter::SockFilter {
        guard::filter::SockFilter { code, jt, jf, k }
    }
    guard::filter::install(&prog).map_err(|e| e.to_string())?;
    // SAFETY: getppid through the trampoline and through libc.
    let via_trampoline = unsafe { guard::trampoline::syscall6(nr::GETPPID, [0; 6]) };
    // SAFETY: as above.
    let via_libc = unsafe { libc::syscall(libc::SYS_getppid) };
    let err = Error::last_os_error().raw_os_error();
    if via_trampoline != -(libc::EPERM as isize) {
        return Err(format!("through the trampoline: {via_trampoline}"));
    }
    if via_libc != -1 || err != Some(libc::ENOENT) {
        return Err(format!("through libc: {via_libc} {err:?}"));
    }
    Ok(())
}

/// With `ArrayInArena`, an iovec array in the arena traps; one on the stack
/// pointing into the arena does not (the documented limit).
fn array_in_arena_policy(ctx: &Ctx) -> Res {
    let data = pattern(PAGE, 26);
    let f = file_with(ctx, "arr", &data);
    let arr = 250 * PAGE;
    let buf = 252 * PAGE;
    ctx.h.fill(arr, &(ctx.h.addr(buf) as u64).to_ne_bytes());
    ctx.h.fill(arr + 8, &(PAGE as u64).to_ne_bytes());
    ctx.h.evict(arr, 16);
    // SAFETY: readv with the array in the region.
    let rc = unsafe { libc::readv(f.as_raw_fd(), ctx.h.ptr(arr) as *const libc::iovec, 1) };
    expect(
        ctx,
        "readv with the iovec array in the arena",
        errno_result(rc),
        |_| same(&ctx.h.read(buf, PAGE), &data),
    )?;
    if ctx.guarded {
        let v = [iov(ctx.h.addr(254 * PAGE), 100)];
        // SAFETY: as above.
        let rc = unsafe { libc::preadv(f.as_raw_fd(), v.as_ptr(), 1, 0) };
        if rc != -1 || Error::last_os_error().raw_os_error() != Some(libc::EFAULT) {
            return Err(format!(
                "a stack iovec array should not be covered with ArrayInArena: {rc}"
            ));
        }
    }
    Ok(())
}

fn errno_preserved(ctx: &Ctx) -> Res {
    let data = pattern(100, 27);
    let f = file_with(ctx, "errno", &data);
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() = 4242 };
    // SAFETY: read into the region (trapped, succeeds).
    let rc = unsafe { libc::read(f.as_raw_fd(), ctx.h.ptr(300 * PAGE) as _, 100) };
    // SAFETY: as above.
    let e = unsafe { *libc::__errno_location() };
    if rc != 100 || e != 4242 {
        return Err(format!("rc {rc}, errno {e} (4242 expected)"));
    }
    // A failing trapped call sets errno from the result.
    // SAFETY: read from a bad fd into the region.
    let rc = unsafe { libc::read(-1, ctx.h.ptr(301 * PAGE) as _, 10) };
    let e = Error::last_os_error().raw_os_error();
    if rc != -1 || e != Some(libc::EBADF) {
        return Err(format!("bad fd: rc {rc}, errno {e:?}"));
    }
    Ok(())
}

static ZERO_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
static NESTED_AT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static NESTED_OK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn on_usr1(_: libc::c_int) {
    // A trapped call from a signal handler that interrupted the guard's
    // re-issued (blocking) call: a nested trap.
    let at = NESTED_AT.fetch_add(PAGE, Ordering::SeqCst);
    // SAFETY: 8 bytes from /dev/zero into a never-touched arena page.
    let rc = unsafe { libc::read(ZERO_FD.load(Ordering::SeqCst), at as *mut libc::c_void, 8) };
    if rc == 8 {
        NESTED_OK.fetch_add(1, Ordering::SeqCst);
    }
}

/// A blocking trapped read interrupted by a signal: EINTR without
/// SA_RESTART, restarted with it; the handler's own trapped call is served.
fn restart_semantics(ctx: &Ctx) -> Res {
    let zero = std::fs::File::open("/dev/zero").unwrap();
    ZERO_FD.store(zero.as_raw_fd(), Ordering::SeqCst);
    NESTED_AT.store(ctx.h.addr(400 * PAGE), Ordering::SeqCst);
    // SAFETY: gettid has no arguments.
    let tid = unsafe { libc::gettid() };
    for (restart, round) in [(false, 0), (true, 1)] {
        // SAFETY: installs a handler for SIGUSR1.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_usr1 as *const () as usize;
            act.sa_flags = if restart { libc::SA_RESTART } else { 0 };
            assert_eq!(
                libc::sigaction(libc::SIGUSR1, &act, std::ptr::null_mut()),
                0
            );
        }
        let (r, w) = pipe();
        let data = pattern(500, 28 + round);
        let d2 = data.clone();
        let other = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            // SAFETY: signals the main thread.
            unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGUSR1) };
            std::thread::sleep(Duration::from_millis(200));
            write_all(&w, &d2);
        });
        let off = (310 + 2 * round as usize) * PAGE;
        // SAFETY: blocking read into the region.
        let rc = unsafe { libc::read(r.as_raw_fd(), ctx.h.ptr(off) as _, data.len()) };
        let err = Error::last_os_error().raw_os_error();
        if restart {
            if rc != data.len() as isize {
                return Err(format!("with SA_RESTART: rc {rc}, errno {err:?}"));
            }
            same(&ctx.h.read(off, data.len()), &data)?;
        } else if rc != -1 || err != Some(libc::EINTR) {
            return Err(format!(
                "without SA_RESTART: rc {rc}, errno {err:?} (EINTR expected)"
            ));
        }
        other.join().unwrap();
    }
    if NESTED_OK.load(Ordering::SeqCst) != 2 {
        return Err(format!(
            "nested traps served: {}",
            NESTED_OK.load(Ordering::SeqCst)
        ));
    }
    Ok(())
}

/// `guarded_syscall`, as a library hook would call it (no trap), and the
/// counting of calls the table does not know.
fn guarded_syscall_from_a_hook(ctx: &Ctx) -> Res {
    let data = pattern(3 * PAGE, 30);
    let f = file_with(ctx, "hook", &data);
    let off = 320 * PAGE + 5;
    let traps = guard::counters().traps;
    // SAFETY: a read into the region, pinned by the guard first.
    let rc = unsafe {
        guard::guarded_syscall(
            nr::READ,
            [
                f.as_raw_fd() as u64,
                ctx.h.addr(off) as u64,
                data.len() as u64,
                0,
                0,
                0,
            ],
        )
    };
    if rc != data.len() as isize {
        return Err(format!("guarded_syscall read: {rc}"));
    }
    same(&ctx.h.read(off, data.len()), &data)?;
    if guard::counters().traps != traps {
        return Err("guarded_syscall trapped".into());
    }
    // io_uring_enter is not described: counted by number.
    // SAFETY: a bad fd; nothing happens.
    let rc = unsafe { guard::guarded_syscall(nr::IO_URING_ENTER, [u64::MAX, 0, 0, 0, 0, 0]) };
    if rc != -(libc::EBADF as isize) {
        return Err(format!("io_uring_enter: {rc}"));
    }
    let c = guard::counters();
    if c.unknown_syscalls == 0 || !guard::unknown_numbers().contains(&nr::IO_URING_ENTER) {
        return Err(format!("unknown call not counted: {c:?}"));
    }
    Ok(())
}

/// Threads moving data through arena buffers with system calls only
/// (pread into the arena, pwrite out of it) while another thread keeps
/// evicting and write-protecting every unpinned page.
fn stress_threads(ctx: &Ctx) -> Res {
    let data = pattern(64 * PAGE, 31);
    std::fs::write(ctx.dir.join("stress-in"), &data).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let h = ctx.h;
    let evictor = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut rounds = 0u64;
            let pages = 3 * 64;
            while !stop.load(Ordering::Relaxed) {
                // Page by page: evict one, write-protect another (made
                // resident by a read first).
                let i = (rounds as usize * 7) % pages;
                let j = (rounds as usize * 13 + 5) % pages;
                h.evict((500 + i) * PAGE, PAGE);
                let _ = h.read((500 + j) * PAGE, 1);
                h.write_protect((500 + j) * PAGE, PAGE);
                rounds += 1;
            }
            rounds
        })
    };
    let workers: Vec<_> = (0..3)
        .map(|t| {
            let dir = ctx.dir.clone();
            let data = data.clone();
            std::thread::spawn(move || -> Res {
                let input = std::fs::File::open(dir.join("stress-in")).unwrap();
                let out_path = dir.join(format!("stress-out-{t}"));
                let out = std::fs::File::create(&out_path).unwrap();
                let base = (500 + 64 * t) * PAGE;
                for i in 0..1500usize {
                    let len = 1 + (i * 7919) % (8 * PAGE);
                    let src = (i * 104_729) % (data.len() - len);
                    let at = base + (i * 31) % (64 * PAGE - len);
                    // SAFETY: pread into and pwrite out of the region.
                    let n =
                        unsafe { libc::pread(input.as_raw_fd(), h.ptr(at) as _, len, src as i64) };
                    if n != len as isize {
                        return Err(format!("pread {n}: {}", Error::last_os_error()));
                    }
                    // SAFETY: as above.
                    let n = unsafe { libc::pwrite(out.as_raw_fd(), h.ptr(at) as _, len, 0) };
                    if n != len as isize {
                        return Err(format!("pwrite {n}: {}", Error::last_os_error()));
                    }
                    let got = std::fs::read(&out_path).unwrap();
                    same(&got[..len], &data[src..src + len])?;
                }
                Ok(())
            })
        })
        .collect();
    let mut res = Ok(());
    for w in workers {
        if let Err(e) = w.join().unwrap() {
            res = Err(e);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = evictor.join().unwrap();
    eprintln!("evictor rounds: {rounds}");
    res
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "read_file",
        kind: Kind::Pair,
        run: read_file,
    },
    Scenario {
        name: "pread_file",
        kind: Kind::Pair,
        run: pread_file,
    },
    Scenario {
        name: "readv_file",
        kind: Kind::Pair,
        run: readv_file,
    },
    Scenario {
        name: "preadv_file",
        kind: Kind::Pair,
        run: preadv_file,
    },
    Scenario {
        name: "preadv2_file",
        kind: Kind::Pair,
        run: preadv2_file,
    },
    Scenario {
        name: "read_pipe",
        kind: Kind::Pair,
        run: read_pipe,
    },
    Scenario {
        name: "readv_pipe",
        kind: Kind::Pair,
        run: readv_pipe,
    },
    Scenario {
        name: "write_evicted",
        kind: Kind::Pair,
        run: write_evicted,
    },
    Scenario {
        name: "pwrite_evicted",
        kind: Kind::Pair,
        run: pwrite_evicted,
    },
    Scenario {
        name: "writev_evicted",
        kind: Kind::Pair,
        run: writev_evicted,
    },
    Scenario {
        name: "sendmsg_evicted",
        kind: Kind::Pair,
        run: sendmsg_evicted,
    },
    Scenario {
        name: "sendmsg_header_in_arena",
        kind: Kind::Pair,
        run: sendmsg_header_in_arena,
    },
    Scenario {
        name: "recv_socketpair",
        kind: Kind::Pair,
        run: recv_socketpair,
    },
    Scenario {
        name: "recvmsg_socketpair",
        kind: Kind::Pair,
        run: recvmsg_socketpair,
    },
    Scenario {
        name: "recvmmsg_sendmmsg",
        kind: Kind::Pair,
        run: recvmmsg_sendmmsg,
    },
    Scenario {
        name: "getrandom",
        kind: Kind::Pair,
        run: getrandom,
    },
    Scenario {
        name: "o_direct_read",
        kind: Kind::Pair,
        run: o_direct_read,
    },
    Scenario {
        name: "stdio_8mib_blocks",
        kind: Kind::Pair,
        run: stdio_8mib_blocks,
    },
    Scenario {
        name: "stat_fstat",
        kind: Kind::Pair,
        run: stat_fstat,
    },
    Scenario {
        name: "open_path_in_arena",
        kind: Kind::Pair,
        run: open_path_in_arena,
    },
    Scenario {
        name: "posix_spawn_argv",
        kind: Kind::Pair,
        run: posix_spawn_argv,
    },
    Scenario {
        name: "execve_argv",
        kind: Kind::Pair,
        run: execve_argv,
    },
    Scenario {
        name: "poll_array",
        kind: Kind::Pair,
        run: poll_array,
    },
    Scenario {
        name: "futex_word",
        kind: Kind::Pair,
        run: futex_word,
    },
    Scenario {
        name: "nanosleep_timespec",
        kind: Kind::Pair,
        run: nanosleep_timespec,
    },
    Scenario {
        name: "read_into_write_protected_page",
        kind: Kind::Pair,
        run: read_into_write_protected_page,
    },
    Scenario {
        name: "blocking_read_page_protected_meanwhile",
        kind: Kind::Pair,
        run: blocking_read_page_protected_meanwhile,
    },
    Scenario {
        name: "getdents_getcwd_readlink",
        kind: Kind::Pair,
        run: getdents_getcwd_readlink,
    },
    Scenario {
        name: "clock_and_uname",
        kind: Kind::Pair,
        run: clock_and_uname,
    },
    Scenario {
        name: "ioctl_fionread",
        kind: Kind::Pair,
        run: ioctl_fionread_and_winsize,
    },
    Scenario {
        name: "readv_1024_iovecs",
        kind: Kind::Pair,
        run: readv_1024_iovecs,
    },
    Scenario {
        name: "sigsys_stays_unblocked",
        kind: Kind::GuardedOnly,
        run: sigsys_stays_unblocked,
    },
    Scenario {
        name: "program_sigsys_handler_is_chained",
        kind: Kind::GuardedOnly,
        run: program_sigsys_handler_is_chained,
    },
    Scenario {
        name: "untouched_by_arena",
        kind: Kind::GuardedOnly,
        run: untouched_by_arena,
    },
    Scenario {
        name: "errno_preserved",
        kind: Kind::GuardedOnly,
        run: errno_preserved,
    },
    Scenario {
        name: "restart_semantics",
        kind: Kind::GuardedOnly,
        run: restart_semantics,
    },
    Scenario {
        name: "guarded_syscall_from_a_hook",
        kind: Kind::GuardedOnly,
        run: guarded_syscall_from_a_hook,
    },
    Scenario {
        name: "stress_threads",
        kind: Kind::GuardedOnly,
        run: stress_threads,
    },
    Scenario {
        name: "instruction_pointer_is_after_syscall",
        kind: Kind::Single,
        run: instruction_pointer_is_after_syscall,
    },
    Scenario {
        name: "array_in_arena_policy",
        kind: Kind::Pair,
        run: array_in_arena_policy,
    },
];

// ---------------------------------------------------------------- runner

fn policy_from(s: &str) -> IndirectPolicy {
    match s {
        "always" => IndirectPolicy::Always,
        "array" => IndirectPolicy::ArrayInArena,
        _ => GuardConfig::default().indirect,
    }
}

fn child(name: &str) -> ! {
    let sc = SCENARIOS.iter().find(|s| s.name == name).expect("scenario");
    let guarded = std::env::var("GUARD_MODE").as_deref() == Ok("guarded");
    let dir = PathBuf::from(std::env::var("GUARD_DIR").unwrap());
    let h = Harness::setup(REGION);
    let mut policy = std::env::var("GUARD_POLICY").unwrap_or_default();
    if sc.name == "array_in_arena_policy" {
        policy = "array".into();
    }
    if guarded && sc.kind != Kind::Single {
        let config = GuardConfig {
            indirect: policy_from(&policy),
            ..GuardConfig::default()
        };
        let info = guard::install_with(h.lo..h.hi, h, config).unwrap_or_else(|e| {
            eprintln!("install: {e}");
            std::process::exit(3)
        });
        eprintln!(
            "filter: {} instructions, policy {:?}",
            info.filter_len,
            policy_from(&policy)
        );
    }
    let t = Instant::now();
    let res = (sc.run)(&Ctx { h, guarded, dir });
    let c = guard::counters();
    eprintln!(
        "{:.1} ms; traps {} guarded {} pins {} pinned {} KiB unknown {} overflows {} faults {} wp-faults {} skipped-pinned {} still-pinned {}",
        t.elapsed().as_secs_f64() * 1e3,
        c.traps,
        c.guarded_calls,
        c.pin_calls,
        c.pinned_bytes >> 10,
        c.unknown_syscalls,
        c.pin_overflows,
        h.faults.load(Ordering::Relaxed),
        h.wp_faults.load(Ordering::Relaxed),
        h.skipped_pinned.load(Ordering::Relaxed),
        h.pinned_pages(),
    );
    match res {
        Ok(()) => {
            println!("SCENARIO-OK");
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("FAILED: {e}");
            std::process::exit(1)
        }
    }
}

struct Outcome {
    ok: bool,
    detail: String,
}

fn spawn(
    exe: &std::path::Path,
    name: &str,
    mode: &str,
    dir: &std::path::Path,
    policy: &str,
) -> Outcome {
    let out = Command::new(exe)
        .env("GUARD_SCENARIO", name)
        .env("GUARD_MODE", mode)
        .env("GUARD_DIR", dir)
        .env("GUARD_POLICY", policy)
        .stdin(Stdio::null())
        .output()
        .expect("spawn");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ok = if name == "execve_argv" && mode == "guarded" {
        // The child became /bin/echo.
        out.status.success() && stdout == "exec from the arena\n"
    } else {
        out.status.success() && stdout.contains("SCENARIO-OK")
    };
    Outcome {
        ok,
        detail: format!("{mode}: {} {}{}", out.status, stdout.trim(), stderr.trim()),
    }
}

fn workdir(tag: &str) -> PathBuf {
    // On the root file system (O_DIRECT), not tmpfs.
    let base = if std::path::Path::new("/var/tmp").is_dir() {
        "/var/tmp"
    } else {
        "/tmp"
    };
    let d = PathBuf::from(base).join(format!("guard-test-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn main() {
    if let Ok(name) = std::env::var("GUARD_SCENARIO") {
        child(&name);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut filters = Vec::new();
    let mut policy = "code".to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--policy" => policy = it.next().cloned().unwrap_or_default(),
            "--list" => {
                for s in SCENARIOS {
                    println!("{}: test", s.name);
                }
                return;
            }
            a if a.starts_with("--") => {} // libtest flags (--nocapture, ...)
            a => filters.push(a.to_string()),
        }
    }
    let exe = std::env::current_exe().unwrap();
    let nobody = std::env::var("GUARD_AS_NOBODY").is_ok();
    let dir = workdir(if nobody { "nobody" } else { "root" });
    let mut failed = Vec::new();
    let mut ran = 0;
    for sc in SCENARIOS {
        if !filters.is_empty() && !filters.iter().any(|f| sc.name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        let modes: &[&str] = match sc.kind {
            Kind::Pair => &["bare", "guarded"],
            Kind::GuardedOnly => &["guarded"],
            Kind::Single => &["single"],
        };
        let mut ok = true;
        let mut details = Vec::new();
        for mode in modes {
            let o = spawn(&exe, sc.name, mode, &dir, &policy);
            ok &= o.ok;
            details.push(o.detail);
        }
        println!(
            "test {} ({policy}) ... {}",
            sc.name,
            if ok { "ok" } else { "FAILED" }
        );
        if !ok || std::env::var("GUARD_VERBOSE").is_ok() {
            for d in &details {
                println!("    {}", d.replace('\n', "\n    "));
            }
        }
        if !ok {
            failed.push(sc.name);
        }
    }
    // As root: everything again as user nobody.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut nobody_ok = true;
    if root && !nobody && (filters.is_empty() || filters.iter().any(|f| f == "nobody")) {
        nobody_ok = run_as_nobody(&exe, &policy);
        if !nobody_ok {
            failed.push("as_nobody");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "\ntest result: {}. {} passed; {} failed{}",
        if failed.is_empty() { "ok" } else { "FAILED" },
        ran - failed.iter().filter(|&&f| f != "as_nobody").count(),
        failed.len(),
        if root && !nobody {
            if nobody_ok {
                " (and all again as nobody: ok)"
            } else {
                ""
            }
        } else {
            ""
        }
    );
    if !failed.is_empty() {
        println!("failed: {failed:?}");
        std::process::exit(1);
    }
}

/// Copies this binary into a 0755 directory and runs the suite as nobody.
fn run_as_nobody(exe: &std::path::Path, policy: &str) -> bool {
    if Command::new("setpriv").arg("--version").output().is_err() {
        println!("test as_nobody ... skipped (no setpriv)");
        return true;
    }
    let d = PathBuf::from("/tmp").join(format!("guard-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let copy = d.join("kernel_faults");
    std::fs::copy(exe, &copy).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&copy)
        .args(["--policy", policy])
        .env("GUARD_AS_NOBODY", "1")
        .current_dir("/")
        .output()
        .expect("setpriv");
    let _ = std::fs::remove_dir_all(&d);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ok = out.status.success();
    println!("test as_nobody ... {}", if ok { "ok" } else { "FAILED" });
    for line in stdout
        .lines()
        .filter(|l| !ok || l.starts_with("test result"))
    {
        println!("    nobody: {line}");
    }
    if !ok {
        println!(
            "    nobody stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ok
}
