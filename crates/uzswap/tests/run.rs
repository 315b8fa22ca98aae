//! `uzswap run`: real programs (C, Rust, Python) under a resident limit far
//! below their footprint, every byte they wrote checked by the programs
//! themselves; live stats; errors. Needs the LD_PRELOAD library built next
//! to the `uzswap` binary (`cargo build --workspace`, as scripts/test.sh
//! does).

use launch::report::{ProcessReport, RunReport};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const MEMCHECK: &str = env!("CARGO_BIN_EXE_uzswap-memcheck");

mod common;
use common::{
    as_nobody, compile_c, compile_c_with, library, run_report, text, uzswap_for_any_user,
    AS_NOBODY, PROGRAMS, UZSWAP,
};

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("uzswap-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `uzswap run ARGS -- CMD`, returns its output and counters.
/// (A run that wrote no counters gives all zeros, which the tests' checks
/// of `processes` and `exit_code` catch.)
fn run(args: &[&str], cmd: &[&str], name: &str) -> (Output, RunReport) {
    library();
    let stats = tempdir(name).join("stats");
    let out = Command::new(UZSWAP)
        .arg("run")
        .args(args)
        .arg("--stats-out")
        .arg(&stats)
        .arg("--")
        .args(cmd)
        .output()
        .expect("uzswap runs");
    let report = if stats.exists() {
        run_report(&stats)
    } else {
        RunReport::default()
    };
    (out, report)
}

/// Runs a copy of `bin` as user nobody under `uzswap run ARGS` (a copy of
/// uzswap too, in a fresh folder `name` nobody can write, given to the
/// program as its one argument); returns its output and counters.
fn run_as_nobody(bin: &std::path::Path, args: &[&str], name: &str) -> (Output, RunReport) {
    let nobody = tempdir(name);
    let prog = nobody.join(bin.file_name().unwrap());
    std::fs::copy(bin, &prog).unwrap();
    let uz = uzswap_for_any_user(&nobody, &[&prog]);
    let stats = nobody.join("stats");
    let out = as_nobody(&uz)
        .arg("run")
        .args(args)
        .arg("--swapfile-dir")
        .arg(&nobody)
        .arg("--stats-out")
        .arg(&stats)
        .arg("--")
        .arg(&prog)
        .arg(&nobody)
        .env("TMPDIR", &nobody)
        .output()
        .expect("setpriv (util-linux) runs");
    (out, run_report(&stats))
}

/// The program succeeded and said so.
fn assert_succeeded(out: &Output, ok_line: &str) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains(ok_line), "{}", text(&out.stdout));
}

/// The program succeeded, said so, and its memory really went through the
/// store: more pages evicted than the limit holds, and swapped back in.
fn assert_paged(out: &Output, f: &RunReport, ok_line: &str, limit_pages: u64) {
    assert_succeeded(out, ok_line);
    let (rt, swap) = (&f.total.runtime, &f.total.swap);
    assert!(f.run.processes >= 1, "{f:?}");
    assert!(rt.evicted_pages > 2 * limit_pages, "{f:?}");
    assert!(swap.swapped_in() > limit_pages, "{f:?}");
    assert_eq!(rt.evict_failures, 0, "{f:?}");
}

#[test]
fn c_program_reads_back_every_byte_through_every_allocation_path() {
    let bin = compile_c("pagecheck", &tempdir("c"));
    // 4 threads x 8 MiB plus 30 MiB of other allocations, 8 MiB resident.
    let (out, f) = run(&["--limit", "8M"], &[bin.to_str().unwrap(), "8", "4"], "c");
    assert_paged(&out, &f, "pagecheck: ok", 2048);
    // A partial munmap and mprotect(PROT_READ) each turned a region into
    // plain memory first (madvise(DONTNEED) is the runtime's discard).
    assert!(f.total.program.regions_released >= 1, "{f:?}");
    assert!(f.total.program.region_allocs >= 10, "{f:?}");
}

/// The ways a fault is served: in the faulting thread (the default), in
/// the faulting thread evicting for itself over the limit always
/// (`--direct-reclaim`) or never (`--background-reclaim`), and by the
/// handler thread (`--fault-thread`):
/// every byte reads back, and the pages went out and came back.
#[test]
fn every_fault_service_reads_back_every_byte() {
    let bin = compile_c("pagecheck", &tempdir("service"));
    for mode in [
        &[][..],
        &["--direct-reclaim"][..],
        &["--background-reclaim"][..],
        &["--fault-thread"][..],
    ] {
        let mut args = vec!["--limit", "8M"];
        args.extend_from_slice(mode);
        let (out, f) = run(&args, &[bin.to_str().unwrap(), "8", "4"], "service");
        assert_paged(&out, &f, "pagecheck: ok", 2048);
        // Faults served in-thread throttle themselves; the peak stays
        // near the limit either way.
        assert!(f.total.program.peak_rss_bytes < 64 << 20, "{mode:?} {f:?}");
    }
}

/// Where eviction runs follows what it evicts: a program that touches
/// random pages from one thread has its scattered victims evicted in its
/// faulting thread, by default at least in the trials' windows on that
/// side (which side the trials then choose depends on the machine's
/// interrupts: `direct.rs`), always with `--direct-reclaim`, never with
/// `--background-reclaim`; every byte reads back each way. Evicting in
/// the program's only thread, it write-protects nothing
/// (`evicted_sole_writer`).
#[test]
fn scattered_victims_of_one_thread_are_evicted_in_the_faulting_thread() {
    let bin = compile_c("errnocheck", &tempdir("site"));
    for (mode, in_thread, direct_at_end) in [
        (&[][..], true, None),
        (&["--direct-reclaim"][..], true, Some(true)),
        (&["--background-reclaim"][..], false, Some(false)),
    ] {
        let mut args = vec!["--limit", "8M"];
        args.extend_from_slice(mode);
        let (out, f) = run(&args, &[bin.to_str().unwrap(), "16", "1", "60000"], "site");
        assert_paged(&out, &f, "errnocheck: ok", 2048);
        if let Some(direct) = direct_at_end {
            assert_eq!(f.total.runtime.direct_reclaim, direct, "{mode:?} {f:?}");
        }
        assert_eq!(
            f.total.runtime.evicted_sole_writer > 0,
            in_thread,
            "{mode:?} {f:?}"
        );
    }
}

/// A page fault leaves the program's errno as it was: four threads set
/// errno to a sentinel around each access to random pages of memory
/// eight times the limit. Served in-thread, a fault runs in a signal handler whose
/// system calls (futex waits, `UFFDIO_COPY` retries) set errno; without
/// putting it back, this failed within a few hundred accesses per thread
/// (and `sort` took an EAGAIN for a failed `strcoll`). Four threads never
/// evict without protection, and their direct reclaims ask whether they
/// could at most once per thread every 20 ms (`sole.rs`).
#[test]
fn a_fault_leaves_errno_as_it_was() {
    let bin = compile_c("errnocheck", &tempdir("errno"));
    for mode in [&[][..], &["--direct-reclaim"][..]] {
        let mut args = vec!["--limit", "8M"];
        args.extend_from_slice(mode);
        let (out, f) = run(&args, &[bin.to_str().unwrap(), "16", "4", "60000"], "errno");
        assert_paged(&out, &f, "errnocheck: ok", 2048);
        // Four threads: eviction in a faulting thread still protects.
        assert_eq!(f.total.runtime.evicted_sole_writer, 0, "{mode:?} {f:?}");
        // After a no, the check waits 20 ms: each thread asks at most
        // once a window (they may race past the same one), however many
        // direct reclaims the faults make.
        let checks = f.total.runtime.sole_writer_checks;
        let windows = f.run.elapsed_us / 20_000 + 2;
        assert!(
            checks <= 4 * windows,
            "{checks} checks in {} ms: {mode:?} {f:?}",
            f.run.elapsed_us / 1000
        );
    }
}

/// `--max-slowdown` finds a limit without being given one: a program that
/// keeps 1 MiB of its 96 MiB hot waits on uzswap for next to nothing
/// while its cold pages go, so the controller lowers the limit under what
/// it holds, until its resident set is under half of what it wrote (the
/// program watches its own RSS, with a 60 s bound) and every byte reads
/// back.
#[test]
fn max_slowdown_finds_a_limit_under_a_cold_working_set() {
    let bin = compile_c("coldset", &tempdir("coldset"));
    let (out, f) = run(
        &["--max-slowdown", "10%"],
        &[bin.to_str().unwrap(), "96", "60"],
        "coldset",
    );
    assert_succeeded(&out, "coldset: ok");
    assert!(
        text(&out.stderr).contains("uzswap: limit found:"),
        "{}",
        text(&out.stderr)
    );
    let rt = &f.total.runtime;
    assert!(rt.evicted_pages > 96 * 256 / 2, "{f:?}");
    assert_eq!(rt.evict_failures, 0, "{f:?}");
}

/// Without --limit, `uzswap run` finds the limit itself (for a 5%
/// slowdown): the same cold working set of 64 MiB goes under half of it
/// with no flag at all.
#[test]
fn without_a_limit_uzswap_run_finds_one() {
    let bin = compile_c("coldset", &tempdir("coldset-default"));
    let (out, f) = run(&[], &[bin.to_str().unwrap(), "64", "60"], "coldset-default");
    assert_succeeded(&out, "coldset: ok");
    let err = text(&out.stderr);
    assert!(
        err.contains("with the limit found for a 5% slowdown"),
        "{err}"
    );
    assert!(err.contains("uzswap: limit found:"), "{err}");
    assert!(err.contains("uzswap: at exit:"), "{err}");
    assert!(f.total.runtime.evicted_pages > 64 * 256 / 2, "{f:?}");
}

/// A new thread reads the locale data (`__ctype_init`) before it unblocks
/// signals, and glibc frees its TLS vector after blocking them at exit: a
/// fault there, served in-thread, would be a SIGBUS the thread cannot
/// take. `sort` of 1M numbers under C.UTF-8 with two threads, every small
/// object paged and an 8M limit, started by a shell, died so in 3 of 3
/// runs; it must sort.
#[test]
fn threads_started_under_a_loaded_locale_take_no_fault_with_signals_blocked() {
    let dir = tempdir("locale");
    let charmap = Command::new("locale")
        .arg("charmap")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("locale runs");
    assert_eq!(
        text(&charmap.stdout).trim(),
        "UTF-8",
        "the C.UTF-8 locale is needed (glibc's locales)"
    );
    let input = dir.join("nums.txt");
    let numbers: String = (0..1_000_000u64)
        .map(|i| format!("{}\n", i.wrapping_mul(2_654_435_761) % 10_000_000))
        .collect();
    std::fs::write(&input, &numbers).unwrap();
    let mut want: Vec<u64> = numbers.lines().map(|l| l.parse().unwrap()).collect();
    want.sort_unstable();
    let output = dir.join("sorted.txt");
    let script = format!(
        "LC_ALL=C.UTF-8 sort --parallel=2 -n {} > {}",
        input.display(),
        output.display()
    );
    let (out, f) = run(
        &["--limit", "8M", "--small-objects"],
        &["sh", "-c", &script],
        "locale",
    );
    assert!(
        out.status.success(),
        "exit {:?}\nstderr: {}",
        out.status,
        text(&out.stderr)
    );
    let got: Vec<u64> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(got == want, "sort's output differs from the plain sort");
    assert!(f.total.runtime.evicted_pages > 0, "{f:?}");
}

/// `realloc` grows a region where it is: a buffer doubled from 128 KiB to
/// 64 MiB under an 8M limit never moves (nothing else is carved behind
/// it), so no page is copied or brought back in to move it, and every
/// byte written before each growth reads back.
#[test]
fn realloc_grows_a_region_in_place() {
    let bin = compile_c("reallocgrow", &tempdir("realloc"));
    let (out, f) = run(
        &["--limit", "8M"],
        &[bin.to_str().unwrap(), "64"],
        "realloc",
    );
    assert_paged(&out, &f, "reallocgrow: ok (64 MiB, moved 0 times)", 2048);
    // 128K doubled nine times to 64M.
    assert!(f.total.program.regions_grown >= 9, "{f:?}");
    assert_eq!(f.total.program.region_allocs, 1, "{f:?}");
}

#[test]
fn rust_threads_race_eviction_with_every_folio_size() {
    for (folio, compressor) in [("4K", "lz4"), ("64K", "zstd"), ("2M", "lzo-rle")] {
        let (out, f) = run(
            &[
                "--limit",
                "8M",
                "--folio",
                folio,
                "--compressor",
                compressor,
            ],
            &[MEMCHECK, "--mib", "8", "--threads", "4"],
            &format!("rust-{folio}"),
        );
        assert_paged(&out, &f, "uzswap-memcheck: ok", 2048);
        assert_eq!(
            f.total.program.folio_bytes,
            launch::parse_size(folio).unwrap() as u64
        );
    }
}

#[test]
fn python_script_reads_back_every_byte() {
    let (out, f) = run(
        &["--limit", "8M"],
        &["python3", &format!("{PROGRAMS}/pagecheck.py"), "24"],
        "python",
    );
    assert_paged(&out, &f, "pagecheck.py: ok", 2048);
}

/// `--limit` bounds the memory, not only the resident pages: random bytes
/// do not compress, so a pool kept beside a resident limit would grow to
/// the program's size. The pool counts in the limit; past it, pages are
/// written back. Peak RSS stays within the interpreter's own memory, the
/// limit plus its 25% throttling headroom, and 16 MiB (swap cache, the
/// runtime's buffers and threads).
#[test]
fn the_limit_bounds_peak_rss_whatever_the_data_compresses_to() {
    let (limit, mib) = (16u64 << 20, 96);
    let (out, f) = run(
        &["--limit", "16M"],
        &[
            "python3",
            &format!("{PROGRAMS}/incompressible.py"),
            &mib.to_string(),
        ],
        "incompressible",
    );
    assert_paged(&out, &f, "incompressible.py: ok", limit / 4096);
    let stdout = text(&out.stdout);
    let baseline: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("baseline_rss_bytes "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no baseline line: {stdout}"));
    let peak = f.run.max_rss_bytes;
    let bound = baseline + limit * 5 / 4 + (16 << 20);
    assert!(
        peak <= bound,
        "peak RSS {peak} over {bound} (baseline {baseline}, limit {limit}): {f:?}"
    );
    assert!(
        peak < baseline + (mib << 20) / 2,
        "peak RSS {peak} near the data's size: nothing bounded it"
    );
    assert!(
        f.total.swap.written_back_pages + f.total.swap.pswpout > (mib << 20) / 4096 / 2,
        "most pages must be on disk: {f:?}"
    );
}

#[test]
fn parallel_compressor_and_no_writeback_keep_every_byte() {
    let (out, f) = run(
        // 6 MiB under 4M: without writeback, resident pages and the
        // compressed pool must fit the limit together (18 MiB did not).
        // 40 rounds (0.3 s): with the default 3 (30-60 ms, a tick or two
        // of the reclaimer) the evictions ranged from 1,344 to 6,272 pages
        // run to run, around the 2,048 `assert_paged` asks for; with 40,
        // 19,200 at the least in 15 runs.
        &["--limit", "4M", "--parallel", "--no-writeback"],
        &[MEMCHECK, "--mib", "2", "--threads", "3", "--rounds", "40"],
        "parallel",
    );
    assert_paged(&out, &f, "uzswap-memcheck: ok", 1024);
    assert_eq!(f.total.swap.pswpout, 0, "writeback off: nothing on disk");
}

#[test]
fn live_stats_are_readable_while_the_program_runs() {
    library();
    let mut child = Command::new(UZSWAP)
        .args(["run", "-q", "--limit", "4M", "--", MEMCHECK])
        .args(["--mib", "4", "--threads", "2", "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, pid) = common::ready_pid(&mut child);
    let out = Command::new(UZSWAP)
        .args(["stats", &pid.to_string(), "--raw"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let f = ProcessReport::parse(&text(&out.stdout)).unwrap();
    assert_eq!(f.program.pid, u64::from(pid));
    assert_eq!(f.program.limit_bytes, 4 << 20);
    assert!(f.program.regions >= 8, "{f:?}");
    assert!(f.runtime.evicted_pages > 0, "{f:?}");
    // The table form too.
    let table = Command::new(UZSWAP)
        .args(["stats", &pid.to_string()])
        .output()
        .unwrap();
    assert!(text(&table.stdout).contains("zswpout"));
    let rest = common::release_held(child, lines);
    assert!(
        rest.iter().any(|l| l.contains("uzswap-memcheck: ok")),
        "{rest:?}"
    );
    // Gone: a clear error.
    let gone = Command::new(UZSWAP)
        .args(["stats", &pid.to_string()])
        .output()
        .unwrap();
    assert!(!gone.status.success());
    assert!(text(&gone.stderr).contains(&pid.to_string()));
}

#[test]
fn works_without_root() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // Copies readable by any user, the library next to the binary.
    let dir = tempdir("nonroot");
    let memcheck = dir.join("uzswap-memcheck");
    std::fs::copy(MEMCHECK, &memcheck).unwrap();
    let uz = uzswap_for_any_user(&dir, &[&memcheck]);
    let mut cmd = if root {
        // Drop to nobody: the runtime must get by with UFFD_USER_MODE_ONLY.
        as_nobody(&uz)
    } else {
        Command::new(&uz)
    };
    let out = cmd
        .args(["run", "--limit", "4M", "--swapfile-dir"])
        .arg(&dir)
        .arg("--")
        .arg(&memcheck)
        .args(["--mib", "4", "--threads", "2"])
        .env("TMPDIR", &dir)
        .output()
        .expect("setpriv (util-linux) runs");
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("uzswap-memcheck: ok"));
    assert!(
        text(&out.stderr).contains("zswpout"),
        "{}",
        text(&out.stderr)
    );
}

/// A program `uzswap run` started as root that changes user (as a server
/// started as root runs as its own user) can no longer open the run's
/// files, in root's private run folder: it keeps the run's shared limit
/// through the descriptor the run passed down, and its counters reach the
/// run's report through the folder passed for that. The swap folder the
/// run names is root's alone: the program makes its swap file where its
/// user may, and the run says so. (Not root: the same run without the
/// change of user.)
#[test]
fn a_program_that_changes_user_keeps_the_runs_limit_and_reports() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let dir = tempdir("setuid");
    let memcheck = dir.join("uzswap-memcheck");
    std::fs::copy(MEMCHECK, &memcheck).unwrap();
    let uz = uzswap_for_any_user(&dir, &[&memcheck]);
    let stats = dir.join("stats");
    let swap_dir = dir.join("swap");
    std::fs::create_dir_all(&swap_dir).unwrap();
    std::fs::set_permissions(&swap_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut cmd = Command::new(&uz);
    cmd.args(["run", "--limit", "4M", "--swapfile-dir"])
        .arg(&swap_dir)
        .arg("--stats-out")
        .arg(&stats)
        .arg("--");
    if root {
        cmd.args(AS_NOBODY);
    }
    let out = cmd
        .arg(&memcheck)
        .args(["--mib", "8", "--threads", "2"])
        .env("TMPDIR", &dir)
        .output()
        .expect("uzswap runs");
    let f = run_report(&stats);
    assert_paged(&out, &f, "uzswap-memcheck: ok", 1024);
    assert_eq!(f.run.processes, 1, "{f:?}");
    let moved = format!(
        "may not make its swap file in {} (a folder of the user who started the run)",
        swap_dir.display()
    );
    assert_eq!(
        text(&out.stderr).contains(&moved),
        root,
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exit_codes_pass_through_and_bad_settings_are_named() {
    let (out, f) = run(&[], &["sh", "-c", "exit 3"], "exit");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(f.run.exit_code, 3);
    for (args, needle) in [
        (vec!["--limit", "1K"], "--limit"),
        (vec!["--limit", "lots"], "--limit"),
        (vec!["--folio", "12K"], "--folio"),
        (vec!["--compressor", "brotli"], "brotli"),
    ] {
        let out = Command::new(UZSWAP)
            .arg("run")
            .args(&args)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} must be refused");
        assert!(text(&out.stderr).contains(needle), "{}", text(&out.stderr));
    }
    let out = Command::new(UZSWAP)
        .args(["run", "--", "/nonexistent/program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(text(&out.stderr).contains("/nonexistent/program"));
    // The library used directly with a bad variable stops with its name.
    let out = Command::new("sh")
        .args(["-c", "exit 0"])
        .env("LD_PRELOAD", library())
        .env("UZSWAP_LIMIT", "lots")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("UZSWAP_LIMIT"),
        "{}",
        text(&out.stderr)
    );
}

/// Runs `uzswap run ARGS -- CMD` with `env` added, failing the test if it
/// is not over within `limit` (the program must never hang).
fn run_bounded(
    args: &[&str],
    cmd: &[&str],
    env: &[(&str, &str)],
    limit: std::time::Duration,
) -> Output {
    use std::os::unix::process::CommandExt;
    library();
    // A process group of its own: on a timeout the program goes too.
    let mut child = Command::new(UZSWAP)
        .arg("run")
        .args(args)
        .arg("--")
        .args(cmd)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("uzswap runs");
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            // SAFETY: signalling the process group we made.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let out = child.wait_with_output().unwrap();
            panic!(
                "{cmd:?} {env:?} still ran after {limit:?}\nstderr: {}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_failing_runtime_thread_ends_the_program_at_once() {
    for (inject, needle) in [
        ("reclaim-panic", "injected panic in the reclaimer"),
        ("fault-panic", "injected panic in the fault handler"),
        ("runtime-fault", "a runtime thread faulted on region page"),
    ] {
        let out = run_bounded(
            &["--limit", "4M"],
            &[MEMCHECK, "--mib", "16", "--threads", "2"],
            &[("UZSWAP_INJECT_FAILURE", inject)],
            std::time::Duration::from_secs(60),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(71), "{inject}: {err}");
        assert!(
            err.contains("uzswap: fatal:") && err.contains(needle),
            "{inject}: {err}"
        );
    }
}

#[test]
fn the_processes_of_a_run_share_its_limit() {
    let script = format!("{MEMCHECK} --mib 4 --threads 2 & {MEMCHECK} --mib 4 --threads 2 & wait");
    let (out, f) = run(&["--limit", "4M"], &["sh", "-c", &script], "shared");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches("uzswap-memcheck: ok").count(), 2);
    assert_eq!(f.run.processes, 2, "{f:?}");
    // 16 MiB written in all against 4 MiB for both: pages went out.
    assert!(f.total.runtime.evicted_pages > 2 * 1024, "{f:?}");
}

/// Issue 10's stale-address reproduction under `uzswap run`: a 1 MiB block
/// mapped where a 7 MiB one was, then 65 MiB written and read back twice
/// under a 16M limit. It must end, and every byte must be right.
#[test]
fn a_block_mapped_where_a_bigger_one_was_reads_back_every_byte() {
    let bin = compile_c("stalecheck", &tempdir("stale"));
    let stats = tempdir("stale").join("stats");
    let out = run_bounded(
        &["--limit", "16M", "--stats-out", stats.to_str().unwrap()],
        &[bin.to_str().unwrap()],
        &[],
        std::time::Duration::from_secs(120),
    );
    assert_succeeded(&out, "stalecheck: ok");
    let f = run_report(&stats).total.runtime;
    assert!(f.evicted_pages > 2 * 4096, "{f:?}");
    assert_eq!(f.evict_failures, 0, "{f:?}");
}

/// A heap made as the JVM's and V8's are (a `PROT_NONE` reservation,
/// committed by `mmap(MAP_FIXED)` and by `mprotect` step by step) is
/// paged, and decommit, `mprotect`, `MADV_DONTNEED`, `munmap` of a part
/// and a `read(2)` into it keep the kernel's meaning (the program checks
/// every byte). As root, then as nobody (`UFFD_USER_MODE_ONLY`).
#[test]
fn reservations_committed_by_map_fixed_and_mprotect_are_paged() {
    let dir = tempdir("reserve");
    let bin = compile_c("reservecheck", &dir);
    let (out, f) = run(
        &["--limit", "8M"],
        &[bin.to_str().unwrap(), dir.to_str().unwrap()],
        "reserve",
    );
    assert_paged(&out, &f, "reservecheck: ok", 2048);
    let program = &f.total.program;
    assert_eq!(program.reservations, 1, "{f:?}");
    // The MAP_FIXED commit, its recommit, the mprotect commit (one region
    // grown by each step, split by the changes later).
    assert!(program.region_allocs >= 3, "{f:?}");
    assert!(program.regions_grown >= 90, "{f:?}");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let (out, f) = run_as_nobody(&bin, &["--limit", "8M"], "reserve-nobody");
    assert_paged(&out, &f, "reservecheck: ok", 2048);
    assert_eq!(f.total.program.reservations, 1, "{f:?}");
}

/// `--small-objects --limit 8M` with the kernel's faults handled (as root)
/// and under the syscall guard (`--user-mode-only`; as any user).
fn small_objects_under_8m() -> Vec<&'static [&'static str]> {
    let guarded: &[&str] = &["--small-objects", "--limit", "8M", "--user-mode-only"];
    let kernel: &[&str] = &["--small-objects", "--limit", "8M"];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        vec![kernel, guarded]
    } else {
        vec![guarded]
    }
}

/// `--small-objects`: a program of small objects only (malloc, calloc,
/// posix_memalign, realloc within and past `--min-alloc`, a fork whose
/// child checks and reallocates, `read(2)` into small buffers) is paged,
/// and every byte reads back; as root, and under the syscall guard.
#[test]
fn small_objects_are_paged_and_read_back() {
    let dir = tempdir("smallobj");
    let bin = compile_c("smallobj", &dir);
    for args in small_objects_under_8m() {
        let (out, f) = run(args, &[bin.to_str().unwrap()], "smallobj");
        assert_paged(&out, &f, "smallobj: ok", 2048);
        assert!(
            f.total.program.small_heap_bytes >= 64 << 20,
            "{args:?} {f:?}"
        );
        assert!(f.run.processes >= 2, "{f:?}");
    }
}

/// Eight threads of small objects (about 48 MiB in all, 58 MB of RSS
/// plain), freed and made again across threads: with `--small-objects`
/// none of it goes to glibc's per-thread arenas, so all of it is paged
/// under 8M and reads back, with the kernel's faults and under the guard.
#[test]
fn small_objects_of_many_threads_are_paged_not_left_in_glibc_arenas() {
    let dir = tempdir("smallthreads");
    let bin = compile_c("smallthreads", &dir);
    for args in small_objects_under_8m() {
        let (out, f) = run(args, &[bin.to_str().unwrap()], "smallthreads");
        assert_paged(&out, &f, "smallthreads: ok", 2048);
        assert!(f.total.program.small_heap_bytes > 0, "{args:?} {f:?}");
        assert!(f.total.program.peak_rss_bytes < 40 << 20, "{args:?} {f:?}");
    }
}

/// By default (no `--small-objects`) small objects are the program's
/// allocator's until it holds `--small-objects-after` bytes of them, and
/// paged from then on: smallthreads (about 48 MiB of small objects across
/// 8 threads, freed across threads) stays near the limit plus the
/// threshold, linked with glibc's malloc and with jemalloc, with the
/// kernel's faults and under the guard. `--no-small-objects` leaves them
/// all to the allocator, unpaged (the old behaviour).
#[test]
fn small_objects_are_paged_once_the_programs_allocator_holds_the_threshold() {
    let dir = tempdir("smallafter");
    let glibc = compile_c("smallthreads", &dir);
    let jemalloc_dir = dir.join("jemalloc");
    std::fs::create_dir_all(&jemalloc_dir).unwrap();
    let jemalloc = compile_c_with("smallthreads", &jemalloc_dir, &["-l:libjemalloc.so.2"]);
    let modes: &[&[&str]] = &[
        &["--limit", "8M", "--small-objects-after", "8M"],
        &[
            "--limit",
            "8M",
            "--small-objects-after",
            "8M",
            "--user-mode-only",
        ],
    ];
    for bin in [&glibc, &jemalloc] {
        for args in modes {
            let (out, f) = run(args, &[bin.to_str().unwrap()], "smallafter");
            assert_paged(&out, &f, "smallthreads: ok", 2048);
            let p = &f.total.program;
            assert!(p.small_heap_bytes > 0, "{bin:?} {args:?} {f:?}");
            // 8M held by the allocator, 8M paged, the program and runtime
            // (peaks of 36-42 MiB with faults served in-thread, 8 threads
            // each overshooting the throttling ceiling by what it maps
            // before it throttles itself); far under the 58 MB of the
            // objects left unpaged.
            assert!(p.peak_rss_bytes < 48 << 20, "{bin:?} {args:?} {f:?}");
        }
        let (out, f) = run(
            &["--limit", "8M", "--no-small-objects"],
            &[bin.to_str().unwrap()],
            "smallafter-off",
        );
        assert!(text(&out.stdout).contains("smallthreads: ok"), "{out:?}");
        // smallthreads makes no large allocation: nothing is paged.
        assert_eq!(f.total.program.small_heap_bytes, 0, "{bin:?} {f:?}");
        assert_eq!(f.total.swap.zswpout, 0, "{bin:?} {f:?}");
    }
}

/// A `vfork` child that takes the allocator past the threshold does not
/// start the small-object heap (it would start a runtime in the child,
/// whose threads die with it, and leave the parent's faults unserved):
/// the parent starts it at its own next count, and its small objects and
/// a 16 MiB buffer are paged and read back under 4M. A second `vfork`
/// child allocates from the started heap (no owner check on that path),
/// reads the parent's evicted objects and frees its blocks; the parent's
/// objects read back unchanged.
#[test]
fn a_vfork_child_past_the_threshold_leaves_the_small_heap_to_its_parent() {
    let dir = tempdir("vforkheap");
    let bin = compile_c("vforkheap", &dir);
    let (out, f) = run(
        &["--limit", "4M", "--small-objects-after", "1M"],
        &[bin.to_str().unwrap()],
        "vforkheap",
    );
    assert_paged(&out, &f, "vforkheap: ok", 1024);
    assert!(f.total.program.small_heap_bytes > 0, "{f:?}");
}

/// `madvise(MADV_DONTNEED)` and `MADV_FREE` of parts of a buffer, and of a
/// block of the small-object heap in a forked child (as redis's BGSAVE
/// child does): the parts read zero, the rest keeps its bytes, and the
/// regions stay paged. Each such call used to turn the whole region into
/// plain memory, bringing every page of it back in: the child peaked at
/// 64 MB (57 MB plain) under an 8M limit.
#[test]
fn discarded_parts_read_zero_and_their_regions_stay_paged() {
    let dir = tempdir("dismiss");
    let bin = compile_c("dismiss", &dir);
    for args in small_objects_under_8m() {
        let (out, f) = run(args, &[bin.to_str().unwrap()], "dismiss");
        assert_paged(&out, &f, "dismiss: ok", 2048);
        assert_eq!(f.total.program.regions_released, 0, "{args:?} {f:?}");
        let child_peak_kib: u64 = text(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("dismiss: child peak "))
            .and_then(|l| l.trim_end_matches(" KiB").parse().ok())
            .expect("the child reports its peak RSS");
        assert!(
            child_peak_kib < 40 << 10,
            "child peak {child_peak_kib} KiB, {args:?}"
        );
    }
}

/// Children started with `vfork`+`execve`, `posix_spawn` and `system()`
/// whose path, `argv`, `envp` and file-action paths are small heap objects
/// evicted to the pool: each child gets its strings intact, and no pin is
/// left behind. Under the syscall guard (as root with `--user-mode-only`,
/// and as nobody) the vfork child's system calls pin through its parent's
/// runtime and its `execve` strings are copied out of the arena; as root
/// the kernel faults them in.
#[test]
fn spawned_children_get_argv_and_env_from_evicted_heap_pages() {
    let dir = tempdir("spawnheap");
    let bin = compile_c("spawnheap", &dir);
    let check = |out: &Output, f: &RunReport, guarded: bool| {
        assert!(
            text(&out.stdout).contains("spawnheap: ok, 12 of 12 string pages evicted"),
            "exit {:?}\nstdout: {}\nstderr: {}",
            out.status,
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(f.total.program.small_heap_bytes > 0, "{f:?}");
        assert_eq!(f.total.runtime.pinned_pages, 0, "{f:?}");
        if guarded {
            let g = f.total.guard.as_ref().expect("guard counters");
            // vfork+execve, posix_spawn, system(): three vfork children.
            assert_eq!(g.exec_copies, 3, "{f:?}");
            assert_eq!(g.exec_scratch_leaked, 0, "{f:?}");
        }
    };
    let dir_arg = dir.to_str().unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let (out, f) = run(
            &["--small-objects", "--limit", "8M"],
            &[bin.to_str().unwrap(), dir_arg],
            "spawnheap",
        );
        check(&out, &f, false);
    }
    let (out, f) = run(
        &["--small-objects", "--limit", "8M", "--user-mode-only"],
        &[bin.to_str().unwrap(), dir_arg],
        "spawnheap-guard",
    );
    check(&out, &f, true);
    if root {
        let (out, f) = run_as_nobody(
            &bin,
            &["--small-objects", "--limit", "8M"],
            "spawnheap-nobody",
        );
        check(&out, &f, true);
    }
}

/// A program linked with jemalloc: `malloc` and friends come to uzswap's
/// hooks and so does jemalloc's extended API (`mallocx`, `rallocx`,
/// `xallocx`, `sallocx`, `dallocx`, `sdallocx`, `nallocx`), mixed both ways
/// on small and large blocks (jemalloc's `sdallocx` of a region pointer
/// crashed before); 64 MiB of large `mallocx` blocks are paged under 8M and
/// read back. With and without `--small-objects`. The small blocks that are
/// not uzswap's are jemalloc's, as in a plain run (they were glibc's, and
/// redis peaked 13% above its plain run): jemalloc counts 1000 small
/// `malloc`s without `--small-objects`, none with it.
#[test]
fn jemalloc_programs_mix_both_apis_on_every_block() {
    let dir = tempdir("jemcheck");
    let bin = compile_c_with("jemcheck", &dir, &["-l:libjemalloc.so.2"]);
    let plain = Command::new(&bin)
        .arg("1")
        .output()
        .expect("plain jemcheck");
    let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
    assert!(small_bytes(&plain) >= 100_000, "{plain}");
    for small_objects in [false, true] {
        let mut args = vec!["--limit", "8M"];
        if small_objects {
            args.push("--small-objects");
        }
        let (out, f) = run(&args, &[bin.to_str().unwrap(), "64"], "jemcheck");
        assert_paged(&out, &f, "jemcheck: ok", 2048);
        assert!(
            f.total.program.region_allocs >= 256,
            "{small_objects} {f:?}"
        );
        let jemalloc_bytes = small_bytes(&String::from_utf8_lossy(&out.stdout));
        if small_objects {
            assert!(jemalloc_bytes < 10_000, "{out:?}");
        } else {
            assert!(jemalloc_bytes >= 100_000, "{out:?}");
        }
    }
}

/// Programs linked with tcmalloc or mimalloc (and plain glibc): the
/// standard calls mixed on small and large blocks, realloc across the
/// threshold both ways, the aligned calls, `malloc_usable_size`; 64 MiB of
/// large blocks paged under 8M. Their small blocks stay their allocator's
/// (its own ownership test says so), none with `--small-objects`. Both
/// define `__libc_malloc` too: the hooks once sent small blocks there and
/// measured them with glibc's `malloc_usable_size` (0 under mimalloc, a
/// hang under tcmalloc).
#[test]
fn tcmalloc_and_mimalloc_programs_keep_their_small_blocks() {
    for (variant, libs) in [
        ("glibc", &[][..]),
        (
            "tcmalloc",
            &["-DTCMALLOC", "-l:libtcmalloc_minimal.so.4"][..],
        ),
        ("mimalloc", &["-DMIMALLOC", "-l:libmimalloc.so.2"][..]),
    ] {
        let dir = tempdir(&format!("allocmix-{variant}"));
        let bin = compile_c_with("allocmix", &dir, libs);
        let plain = Command::new(&bin)
            .arg("1")
            .output()
            .expect("plain allocmix");
        let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
        assert!(plain.contains("allocmix: ok"), "{variant}: {plain}");
        let owned_plain = owned_line(&plain);
        for small_objects in [false, true] {
            let mut args = vec!["--limit", "8M"];
            if small_objects {
                args.push("--small-objects");
            }
            let (out, f) = run(&args, &[bin.to_str().unwrap(), "64"], "allocmix");
            assert_paged(&out, &f, "allocmix: ok", 2048);
            let owned = owned_line(&String::from_utf8_lossy(&out.stdout));
            let want = match (variant, small_objects) {
                ("glibc", _) => "-",
                (_, false) => owned_plain.as_str(),
                (_, true) => "0 of 1000",
            };
            assert_eq!(owned, want, "{variant} small_objects={small_objects}");
        }
        if variant != "glibc" {
            assert_eq!(owned_plain, "1000 of 1000", "{variant}");
        }
    }
}

/// allocmix's "owned …" line, after the prefix.
fn owned_line(out: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix("allocmix: owned "))
        .unwrap_or_else(|| panic!("no owned line in {out}"))
        .to_string()
}

/// jemcheck's "small bytes N" line.
fn small_bytes(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix("jemcheck: small bytes "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no small bytes line in {out}"))
}
