//! Statically linked programs under `uzswap run`: paged from outside (the
//! `remote` crate), as root, and under the syscall guard (seccomp user
//! notification) by a user who may only open a user-mode-only
//! userfaultfd.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("uzswap-remote-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles `programs/NAME.c` with `-static` into `dir/NAME`.
fn compile_static(name: &str, dir: &Path) -> PathBuf {
    let bin = dir.join(name);
    let status = Command::new("cc")
        .args(["-O2", "-static", "-pthread", "-Wall", "-o"])
        .arg(&bin)
        .arg(format!("{PROGRAMS}/{name}.c"))
        .status()
        .expect("cc (installed by scripts/setup.sh, with libc6-dev's libc.a)");
    assert!(status.success(), "compiling {name}.c -static");
    bin
}

const STEPS: [&str; 7] = [
    "threads: ok",
    "signals: ok",
    "syscalls: ok",
    "fork: ok",
    "mappings: ok",
    "ok",
    "filled 32 MiB",
];

fn assert_all_steps(stdout: &str, stderr: &str) {
    for step in STEPS {
        assert!(
            stdout.lines().any(|l| l == step),
            "no {step:?} in:\n{stdout}\n{stderr}"
        );
    }
}

#[test]
fn the_test_program_is_static_and_uzswap_itself_is_not() {
    let dir = tempdir("elf");
    assert!(remote::is_static(&compile_static("staticcheck", &dir)).unwrap());
    assert!(!remote::is_static(Path::new(UZSWAP)).unwrap());
    assert!(!remote::is_static(Path::new("/bin/sh")).unwrap());
    std::fs::write(dir.join("script"), "#!/bin/sh\necho hi\n").unwrap();
    assert!(!remote::is_static(&dir.join("script")).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_static_program_is_paged_from_outside_and_reads_back_every_page() {
    let dir = tempdir("paged");
    let bin = compile_static("staticcheck", &dir);
    let plain = Command::new(&bin).args(["32", "4"]).output().unwrap();
    assert!(plain.status.success());
    // As this user, and as nobody where the test runs as root: nobody may
    // only open a user-mode-only userfaultfd, and is paged under the
    // syscall guard (every system call on an evicted buffer, the pipe's
    // write and read, fork, mremap, madvise, finds its pages mapped; a
    // user-mode-only userfaultfd alone would fail it with EFAULT).
    let uz = uzswap_for_any_user(&dir, &[&bin]);
    let mut users = vec![Command::new(UZSWAP)];
    if is_root() {
        users.push(as_nobody(&uz));
    }
    for (i, mut paged) in users.into_iter().enumerate() {
        let stats = dir.join(format!("stats{i}"));
        let out = paged
            .args(["run", "--limit", "8M", "--swapfile-dir"])
            .arg(&dir)
            .arg("--stats-out")
            .arg(&stats)
            .arg("--")
            .arg(&bin)
            .args(["32", "4"])
            .output()
            .unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{stdout}\n{stderr}");
        // Byte for byte the plain run's output (the sum of every word).
        assert_eq!(stdout, text(&plain.stdout), "{stderr}");
        assert_all_steps(&stdout, &stderr);
        assert!(!stderr.contains("runs unpaged"), "{stderr}");
        let r = run_report(&stats);
        assert!(r.total.swap.zswpout > 0, "nothing stored:\n{stderr}");
        assert!(
            r.total.runtime.evicted_pages > 2048,
            "{:?}",
            r.total.runtime
        );
        assert!(
            r.total.runtime.swapin_faults > 2048,
            "{:?}",
            r.total.runtime
        );
        // Its sequential reads of the buffer stream: folios come back whole.
        assert!(
            r.total.runtime.folio_swapins > 0 && r.total.runtime.around_pages > 0,
            "{:?}",
            r.total.runtime
        );
        if i == 1 {
            // Its system calls were held by the guard's filter.
            let traps = r.total.guard.map_or(0, |g| g.traps);
            assert!(traps > 0, "no guarded call:\n{stderr}");
        }
        // The peak RSS is not checked here: mappings are found by
        // polling, so what a program touches between two looks, or while
        // the pager is slowed by the machine's load, is not paged yet (the
        // compatibility suite checks peaks, with its slack).
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--record` of a static program: the out-of-process pager writes the
/// trace (its first record says so), every fault and evicted page it
/// counted is in it with page samples, and `uzswap replay` reads it.
#[test]
fn a_static_program_is_recorded_from_outside() {
    let dir = tempdir("record");
    let bin = compile_static("staticcheck", &dir);
    let plain = Command::new(&bin).args(["32", "4"]).output().unwrap();
    assert!(plain.status.success());
    let (trace_path, stats) = (dir.join("run.trace"), dir.join("run.stats"));
    let out = Command::new(UZSWAP)
        .args(["run", "--limit", "8M", "--swapfile-dir"])
        .arg(&dir)
        .arg("--record")
        .arg(&trace_path)
        .arg("--stats-out")
        .arg(&stats)
        .arg("--")
        .arg(&bin)
        .args(["32", "4"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, text(&plain.stdout), "{stderr}");
    let counted = run_report(&stats).total.runtime;
    assert!(counted.evicted_pages > 2048, "{counted:?}");
    let procs = trace::read_file(&trace_path).unwrap();
    assert_eq!(
        procs.len(),
        1,
        "the program (its forked child is the kernel's)"
    );
    let p = &procs[0];
    assert_eq!(p.records[0].event, trace::Event::PagedFromOutside);
    let TraceCounts {
        faults,
        evicted_pages: evicted,
        maps,
        ..
    } = trace_counts(&procs);
    assert!(maps > 0, "no region recorded");
    // Faults include the pages found populated when memory was
    // registered, recorded as first touches.
    assert!(
        faults >= counted.faults,
        "{faults} faults recorded, {} counted",
        counted.faults
    );
    assert!(
        evicted >= counted.evicted_pages,
        "{evicted} evicted pages recorded, {} counted",
        counted.evicted_pages
    );
    assert!(!p.samples.is_empty(), "no page sampled");
    let replay = Command::new(UZSWAP)
        .args(["--no-plot", "replay", "--sweep", "0", "--policy", "uzswap"])
        .arg(&trace_path)
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    assert!(
        text(&replay.stdout).contains("paged from outside"),
        "{}",
        text(&replay.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_static_program_that_exits_at_once_is_not_reported_unpaged() {
    let dir = tempdir("exitnow");
    let bin = compile_static("exitnow", &dir);
    for _ in 0..5 {
        let out = Command::new(UZSWAP)
            .args(["run", "-q", "--"])
            .arg(&bin)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("unpaged"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_static_program_that_execs_is_paged_in_its_new_image_too() {
    let dir = tempdir("exec");
    let wrap = compile_static("execwrap", &dir);
    let check = compile_static("staticcheck", &dir);
    // execwrap 8 staticcheck 32 4
    let args = |cmd: &mut Command| {
        cmd.arg(&wrap).arg("8").arg(&check).args(["32", "4"]);
    };
    let mut plain = Command::new("env");
    args(&mut plain);
    let plain = plain.output().unwrap();
    assert!(plain.status.success());
    // As root, and as nobody (under the syscall guard, which the new image
    // inherits) where the test runs as root.
    let uz = uzswap_for_any_user(&dir, &[&wrap, &check]);
    let mut users = vec![Command::new(UZSWAP)];
    if is_root() {
        users.push(as_nobody(&uz));
    }
    for (i, mut paged) in users.into_iter().enumerate() {
        let stats = dir.join(format!("stats{i}"));
        paged
            .args(["run", "--limit", "8M", "--swapfile-dir"])
            .arg(&dir)
            .arg("--stats-out")
            .arg(&stats)
            .arg("--");
        args(&mut paged);
        let out = paged.output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert_eq!(stdout, text(&plain.stdout), "{stderr}");
        assert!(stdout.starts_with("execwrap: ok\n"), "{stdout}");
        // The first image holds 8 MiB (2048 pages); the one it execs writes
        // 64 MiB and more under 8M: only the second can have evicted this
        // much.
        let r = run_report(&stats);
        assert!(
            r.total.runtime.evicted_pages > 8192,
            "{:?}\n{stderr}",
            r.total.runtime
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `statichold MIB` under `uzswap run -q FLAGS`, waits (at most
/// `secs`) until `uzswap stats --raw` of it shows `counter` over `over`,
/// then has it check every byte: it must print "ok".
fn hold_statically_until(
    tag: &str,
    flags: &[&str],
    mib: &str,
    secs: u64,
    over: u64,
    counter: fn(&launch::report::ProcessReport) -> u64,
) {
    use std::process::Stdio;
    let dir = tempdir(tag);
    let bin = compile_static("statichold", &dir);
    let mut run = Command::new(UZSWAP)
        .args(["run", "-q"])
        .args(flags)
        .arg("--")
        .arg(&bin)
        .arg(mib)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, pid) = ready_pid(&mut run);
    let mut last = String::new();
    let seen = wait_for(secs, || {
        let out = Command::new(UZSWAP)
            .args(["stats", "--raw", &pid.to_string()])
            .output()
            .unwrap();
        last = format!("{}{}", text(&out.stdout), text(&out.stderr));
        let n = launch::report::ProcessReport::parse(&text(&out.stdout)).map_or(0, |r| counter(&r));
        out.status.success() && n > over
    });
    assert!(seen, "uzswap stats {pid}: {last}");
    let rest = release_held(run, lines);
    assert_eq!(rest.last().map(String::as_str), Some("ok"), "{rest:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn uzswap_stats_reads_a_static_programs_live_counters() {
    if !is_root() {
        return; // run as root here; an unprivileged user is paged the same way
    }
    // Its counters as `uzswap stats` reads them, once they show the eviction.
    hold_statically_until("stats", &["--limit", "8M"], "32", 30, 4096, |r| {
        r.runtime.evicted_pages
    });
}

#[test]
fn a_static_programs_cold_pages_leave_before_pressure() {
    if !is_root() {
        return; // run as root here; an unprivileged user is paged the same way
    }
    // No limit: the controller's, far above the program, and its cold age.
    // The program waits untouched: its pages leave for their age (three
    // quarters of its 64 MiB: a pass goes on until no old page is left),
    // though nothing presses.
    hold_statically_until("cold", &["--max-slowdown", "10%"], "64", 60, 12_288, |r| {
        r.runtime.pgsteal_proactive
    });
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Waits (at most `secs`) for `cond`.
fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(secs) {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn attach_pages_a_running_python_and_detach_gives_every_page_back() {
    use std::process::Stdio;
    let hold = format!("{PROGRAMS}/hold.py");
    let plain = Command::new("python3")
        .arg(&hold)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let plain_hash = text(&plain.stdout).lines().last().unwrap().to_string();
    let mut py = Command::new("python3")
        .arg(&hold)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, pid) = ready_pid(&mut py);
    let held = rss_bytes(pid);
    assert!(held > 300 << 20, "python holds {held} bytes");
    let dir = tempdir("attach");
    let stats = dir.join("stats");
    let attach = Command::new(UZSWAP)
        .args(["attach", "--limit", "64M", "--stats-out"])
        .arg(&stats)
        .arg(pid.to_string())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if !is_root() {
        // No userfaultfd that handles kernel faults for this user: one
        // line says so, and python goes on untouched.
        let out = attach.wait_with_output().unwrap();
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("userfaultfd"),
            "{}",
            text(&out.stderr)
        );
    } else {
        assert!(
            wait_for(30, || rss_bytes(pid) < 160 << 20),
            "python's RSS stayed at {} under a 64M limit",
            rss_bytes(pid)
        );
        let detach = Command::new(UZSWAP)
            .args(["detach", &pid.to_string()])
            .output()
            .unwrap();
        assert!(detach.status.success(), "{}", text(&detach.stderr));
        let out = attach.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("pages given back"), "{stderr}");
        // Every page is back: python's RSS is what it held.
        assert!(
            rss_bytes(pid) > held - (held >> 3),
            "{} of {held} back",
            rss_bytes(pid)
        );
        let r = run_report(&stats);
        assert!(
            r.total.swap.zswpout > 0 && r.total.runtime.evicted_pages > 0,
            "{stderr}"
        );
    }
    let rest = release_held(py, lines);
    assert_eq!(rest.last(), Some(&plain_hash), "python's output changed");
    let _ = std::fs::remove_dir_all(&dir);
}
