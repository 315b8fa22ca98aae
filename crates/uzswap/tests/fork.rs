//! Programs that fork under `uzswap run`: children are paged by runtimes of
//! their own, see their parent's memory exactly as it was at the fork, and
//! writes on either side stay invisible to the other. Every program checks
//! every byte itself and exits non-zero on a difference; each run is
//! bounded in time (a hang fails the test).

use launch::report::RunReport;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{as_nobody, compile_c, run_report, text, uzswap_for_any_user, PROGRAMS, UZSWAP};

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("uzswap-fork-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `uzswap run ARGS --stats-out FILE -- CMD`, killed (with its process
/// group) if it runs longer than `limit`. Returns the output and the
/// counters.
fn run(args: &[&str], cmd: &[&str], limit: Duration) -> (Output, RunReport) {
    let dir = tempdir("out");
    let name = cmd.join("_").replace('/', "_");
    let stats = dir.join(format!("{name}.stats"));
    // Output to files, read at the end: a pipe nobody drains would block
    // the program once full.
    let (out_path, err_path) = (
        dir.join(format!("{name}.out")),
        dir.join(format!("{name}.err")),
    );
    let mut child = Command::new(UZSWAP)
        .arg("run")
        .args(args)
        .arg("--stats-out")
        .arg(&stats)
        .arg("--")
        .args(cmd)
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .expect("uzswap runs");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: signalling the process group we made.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "{cmd:?} still ran after {limit:?}: stderr {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    };
    // A run that wrote no counters gives all zeros, which the checks of
    // `processes` catch.
    let report = if stats.exists() {
        run_report(&stats)
    } else {
        RunReport::default()
    };
    (out, report)
}

fn assert_ok(out: &Output, line: &str) {
    assert!(
        out.status.success() && text(&out.stdout).contains(line),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn forked_workers_allocate_write_and_verify_after_the_fork() {
    let dir = tempdir("workers");
    let bin = compile_c("forkworkers", &dir);
    for workers in ["1", "2", "4"] {
        // Each worker writes 32 MiB twice under a 16 MiB limit for all.
        let (out, f) = run(
            &["--limit", "16M"],
            &[bin.to_str().unwrap(), workers, "32", "2"],
            Duration::from_secs(120),
        );
        assert_ok(&out, "forkworkers: ok");
        let n: u64 = workers.parse().unwrap();
        // The parent (no allocation of its own) and each worker report.
        assert!(f.run.processes >= n, "{workers} workers: {f:?}");
        assert!(
            f.total.runtime.evicted_pages > 4096,
            "{workers} workers: {f:?}"
        );
    }
}

#[test]
fn children_see_the_parent_as_it_was_at_the_fork() {
    let dir = tempdir("snapshot");
    let bin = compile_c("forkcheck", &dir);
    // 64 MiB in the parent, 8 times the limit: at the fork most of it is in
    // the pool or on the swap file; two children checksum all of it while
    // the parent rewrites it, then write to it themselves.
    let (out, f) = run(
        &["--limit", "8M"],
        &[bin.to_str().unwrap(), "64", "2"],
        Duration::from_secs(180),
    );
    assert_ok(&out, "parent: ok");
    assert_eq!(
        text(&out.stdout).matches(": ok").count(),
        3,
        "{}",
        text(&out.stdout)
    );
    assert_eq!(f.run.processes, 3, "parent and both children report: {f:?}");
    assert!(
        f.total.runtime.unshared_pages > 0,
        "children wrote inherited pages: {f:?}"
    );
}

#[test]
fn children_see_pages_their_parent_wrote_to_the_swap_file() {
    let dir = tempdir("ondisk");
    let bin = compile_c("forkcheck", &dir);
    // A pool of 1% of memory: most of the parent's pages are on the swap
    // file at the fork (frozen for the children).
    let (out, f) = run(
        &["--limit", "8M", "--pool-limit", "4M"],
        &[bin.to_str().unwrap(), "96", "2"],
        Duration::from_secs(180),
    );
    assert_ok(&out, "parent: ok");
    assert!(
        f.total.swap.pswpout > 0,
        "pages went to the swap file: {f:?}"
    );
}

#[test]
fn python_multiprocessing_fork_workers_read_the_parents_array() {
    let script = format!("{PROGRAMS}/mpfork.py");
    let (out, f) = run(
        &["--limit", "64M"],
        &["python3", &script, "512"],
        Duration::from_secs(300),
    );
    assert_ok(&out, "ok ");
    assert!(f.run.processes >= 5, "the parent and 4 workers: {f:?}");
}

#[test]
fn forking_200_times_from_4_threads_mid_eviction_never_hangs() {
    let dir = tempdir("storm");
    let bin = compile_c("forkstorm", &dir);
    // Four buffers of 4 MiB under 8M: twice the limit, so evictions are
    // in flight at every fork.
    let (out, f) = run(
        &["--limit", "8M"],
        &[bin.to_str().unwrap(), "200", "4", "4"],
        Duration::from_secs(400),
    );
    assert_ok(&out, "forkstorm: ok");
    assert!(f.total.runtime.evicted_pages > 0, "{f:?}");
}

#[test]
fn vfork_posix_spawn_system_and_fork_exec_keep_working() {
    let dir = tempdir("spawn");
    let bin = compile_c("spawncheck", &dir);
    let (out, _) = run(
        &["--limit", "16M"],
        &[bin.to_str().unwrap(), "64"],
        Duration::from_secs(120),
    );
    assert_ok(&out, "spawncheck: ok");
}

#[test]
fn forked_children_work_unprivileged_too() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Already unprivileged: the other tests ran as such.
        let (out, _) = run(
            &["--limit", "8M"],
            &[
                compile_c("forkcheck", &tempdir("nonroot"))
                    .to_str()
                    .unwrap(),
                "48",
                "2",
            ],
            Duration::from_secs(180),
        );
        assert_ok(&out, "parent: ok");
        return;
    }
    // Copies nobody can read, and a folder it can write.
    let dir = tempdir("nobody");
    let bin = compile_c("forkcheck", &dir);
    let uz = uzswap_for_any_user(&dir, &[&bin]);
    let out = as_nobody(&uz)
        .args(["run", "-q", "--limit", "8M", "--swapfile-dir"])
        .arg(&dir)
        .arg("--")
        .arg(&bin)
        .args(["48", "2"])
        .env("TMPDIR", &dir)
        .output()
        .expect("setpriv (util-linux) runs");
    assert_ok(&out, "parent: ok");
}
