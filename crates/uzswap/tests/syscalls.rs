//! System calls on paged memory (issue 11): `read`/`pread`/`readv`/`preadv`
//! into never-touched and evicted buffers from files and pipes,
//! `write`/`pwrite`/`writev`/`sendmsg` from evicted buffers (the `msghdr`
//! and iovecs in paged memory too), `recv` over a socketpair, `getrandom`,
//! `stat` into paged memory, a path string in paged memory, `fread`/`fwrite`
//! of 8 MiB blocks (glibc's own I/O paths), an `O_DIRECT` read, and a
//! blocking `poll`/`read` whose buffer is pushed out while the call waits,
//! and (kernel faults handled only) an io_uring read.
//! Every byte is checked by the program. Run with kernel faults handled
//! (root), with the syscall guard (root, `--user-mode-only`) and as an
//! unprivileged user.

use launch::report::ProcessReport;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Writes, rewrites and checks every byte on several threads.
const MEMCHECK: &str = env!("CARGO_BIN_EXE_uzswap-memcheck");

mod common;
use common::{as_nobody, compile_c, run_report, text, uzswap_for_any_user, UZSWAP};

/// A folder of its own, writable by anyone, on the root file system
/// (tmpfs has no O_DIRECT).
fn workdir(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let base = if Path::new("/var/tmp").is_dir() {
        PathBuf::from("/var/tmp")
    } else {
        std::env::temp_dir()
    };
    let d = base.join(format!("uzswap-syscalls-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// `uzswap run -q --user-mode-only --limit 16M --stats-out DIR/stats --
/// BIN ARGS`: the syscall guard as root.
fn guarded_16m(dir: &Path, bin: &Path, args: &[&std::ffi::OsStr]) -> Output {
    Command::new(UZSWAP)
        .args([
            "run",
            "-q",
            "--user-mode-only",
            "--limit",
            "16M",
            "--stats-out",
        ])
        .arg(dir.join("stats"))
        .arg("--")
        .arg(bin)
        .args(args)
        .output()
        .unwrap()
}

fn stats(dir: &Path) -> ProcessReport {
    run_report(&dir.join("stats")).total
}

fn assert_ok(out: &Output, f: &ProcessReport, mode: &str) {
    assert!(
        out.status.success() && text(&out.stdout).contains("syscheck: ok"),
        "{mode}: exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    // The buffers were really paged: far more evicted than the limit holds.
    assert!(f.runtime.evicted_pages > 8192, "{mode}: {f:?}");
}

/// The system calls of `syscheck` on paged buffers, in every fault mode:
/// faults served in the faulting thread (the default) and user-mode-only
/// faults with a handler thread, both under the syscall guard, and the
/// handler thread with kernel faults handled (root's `--fault-thread`).
#[test]
fn syscalls_on_paged_memory_with_kernel_faults_handled_and_with_the_guard() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for (mode, extra, kernel_faults) in [
        ("in-thread + guard", &[][..], false),
        ("kernel faults", &["--fault-thread"][..], root),
        (
            "user mode + guard",
            &["--fault-thread", "--user-mode-only"][..],
            false,
        ),
    ] {
        let dir = workdir(mode.split(' ').next().unwrap_or("mode"));
        let bin = compile_c("syscheck", &dir);
        let out = Command::new(UZSWAP)
            .args(["run", "-q", "--limit", "16M", "--stats-out"])
            .arg(dir.join("stats"))
            .args(extra)
            .arg("--")
            .arg(&bin)
            .arg(&dir)
            .arg("64")
            // io_uring buffers: covered with kernel faults handled only.
            .args(kernel_faults.then_some("--io-uring"))
            .output()
            .unwrap();
        let f = stats(&dir);
        assert_ok(&out, &f, mode);
        assert_eq!(f.runtime.kernel_faults, kernel_faults, "{mode}: {f:?}");
        if !kernel_faults {
            assert!(f.guard.is_some_and(|g| g.traps > 0), "{mode}: {f:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// One `write`, `read` and `pread` of 96 MiB between a regular file and
/// paged buffers under `--limit 16M` with the syscall guard: the guard
/// issues them 4 MiB at a time, each piece's pages pinned only for its own
/// call, so the process stays near the limit (it peaked at 108 MB when one
/// call pinned a whole buffer) and every byte is right, the short count of
/// a read past the end included.
#[test]
fn large_file_io_under_the_guard_stays_near_the_limit() {
    let dir = workdir("bigio");
    let bin = compile_c("bigio", &dir);
    let out = guarded_16m(&dir, &bin, &[dir.as_os_str(), "96".as_ref()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("bigio: ok"), "{stdout}");
    let f = stats(&dir);
    // write, read, pread, the short pread, writev, readv and preadv.
    assert!(f.guard.is_some_and(|g| g.piecewise_io >= 7), "{f:?}");
    assert!(f.runtime.evicted_pages > 3 * (96 << 8), "{f:?}");
    // 16 MiB of limit, a 4 MiB piece, the program, the library and the
    // pool's own pages: a constant well under the 96 MiB one call pinned.
    assert!(f.program.peak_rss_bytes < 48 << 20, "{f:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under the guard, a pool far smaller than the pages evicted refuses
/// them (its limit hit), so eviction writes runs straight from the region
/// to the swap file with one `pwritev` each, a call the guard traps. The
/// runtime holds those pages in flight while it writes them: pinning them
/// for its own call waited for itself (a hang, with io_uring replaced by
/// `pwritev`). Bounded by `timeout`, so a hang fails instead of stalling.
#[test]
fn eviction_straight_to_the_swap_file_under_the_guard() {
    let dir = workdir("direct-disk");
    let out = Command::new("timeout")
        .args(["120", UZSWAP, "run", "-q", "--user-mode-only"])
        .args(["--limit", "8M", "--pool-limit", "1M", "--stats-out"])
        .arg(dir.join("stats"))
        .args(["--", MEMCHECK, "--mib", "48", "--threads", "2"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("uzswap-memcheck: ok"),
        "exit {:?} (124: timed out)\n{stdout}\n{stderr}",
        out.status
    );
    let f = stats(&dir);
    assert!(f.guard.is_some_and(|g| g.traps > 0), "{f:?}");
    // Pages went to the file without passing through the pool.
    assert!(f.swap.pool_limit_hit > 0, "{f:?}");
    assert!(f.swap.pswpout > f.swap.written_back_pages, "{f:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn syscalls_on_paged_memory_as_an_unprivileged_user() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return; // the test above ran unprivileged already
    }
    let dir = workdir("nobody");
    let bin = compile_c("syscheck", &dir);
    let uz = uzswap_for_any_user(&dir, &[&bin]);
    let out = as_nobody(&uz)
        .args(["run", "-q", "--limit", "16M", "--swapfile-dir"])
        .arg(&dir)
        .arg("--stats-out")
        .arg(dir.join("stats"))
        .arg("--")
        .arg(&bin)
        .arg(&dir)
        .arg("64")
        .env("TMPDIR", &dir)
        .output()
        .expect("setpriv (util-linux) runs");
    let f = stats(&dir);
    assert_ok(&out, &f, "nobody");
    assert!(!f.runtime.kernel_faults, "{f:?}");
    assert!(f.guard.is_some_and(|g| g.traps > 0), "{f:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The guard goes in with the first region: a program with none has no
/// seccomp filter (no cost on its system calls). A program whose threads
/// block every signal before its first region still gets the guard (SIGSYS
/// is kept out of blocked sets until then), and its read into evicted
/// memory is right; so is the read of a thread that blocks every signal
/// once the guard is in. Run by a shell with small objects on, the program
/// inherits the shell's filter (the guard goes in at load) and must live
/// through the same (it died of SIGSYS: so did redis-server's jemalloc
/// background threads).
#[test]
fn the_guard_goes_in_with_the_first_region_even_when_threads_block_signals() {
    let dir = workdir("sigblock");
    let bin = compile_c("sigblock", &dir);
    let input = dir.join("input");
    let bytes: Vec<u8> = (0..4usize << 20).map(|i| (i * 13) as u8).collect();
    std::fs::write(&input, bytes).unwrap();

    // No region: no filter.
    let out = Command::new(UZSWAP)
        .args(["run", "-q", "--user-mode-only", "--", "sh", "-c"])
        .arg("grep Seccomp: /proc/$$/status")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Seccomp:\t0"),
        "{}",
        text(&out.stdout)
    );

    let out = guarded_16m(&dir, &bin, &[input.as_os_str()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("sigblock: ok"), "{stdout}");
    assert!(stdout.contains("before: Seccomp:\t0"), "{stdout}");
    assert!(stdout.contains("after: Seccomp:\t2"), "{stdout}");
    let f = stats(&dir);
    assert!(f.runtime.evicted_pages > 4096, "{f:?}");
    // The read went through the guard's fast path (the C library's `read`).
    assert!(f.guard.is_some_and(|g| g.guarded_calls > 0), "{f:?}");

    // Exec'd by a guarded shell: the filter is there from the start.
    let out = Command::new(UZSWAP)
        .args([
            "run",
            "-q",
            "--user-mode-only",
            "--small-objects",
            "--limit",
            "16M",
        ])
        .args(["--", "sh", "-c", "\"$0\" \"$1\""])
        .arg(&bin)
        .arg(&input)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("before: Seccomp:\t2"), "{stdout}");
    assert!(stdout.contains("sigblock: ok"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
