//! A program's memory stays its own under `uzswap run`: the swap file is
//! never linked in a folder and holds no plaintext, run folders that
//! another user made (or links) are refused, the live stats of a process
//! are found (and trusted) by its own user's folder, root included.
//! Needs the LD_PRELOAD library next to the `uzswap` binary.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod common;
use common::{as_nobody, library, ready_pid, release_held, text, uzswap_for_any_user, UZSWAP};

const MEMCHECK: &str = env!("CARGO_BIN_EXE_uzswap-memcheck");

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("uzswap-privacy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The marker the program's pages hold (the secret an outsider must not
/// read from the swap file).
const MARKER: &str = "uzswap-private-marker-7f3a9";

/// A python program that fills 48 MiB with [`MARKER`], prints `ready PID`
/// and waits for a line on stdin, then checks its data and exits.
const HOLDER: &str = r#"
import os, sys
m = b"uzswap-private-marker-7f3a9|"
n = (48 << 20) // len(m)
buf = bytearray(m * n)
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
ok = bytes(buf[:len(m) * 1000]) == m * 1000 and buf.count(m) == n
print("ok" if ok else "BAD", flush=True)
"#;

/// Starts [`HOLDER`] under `uzswap run ARGS` (writeback forced by a tiny
/// pool) with its swap file in `dir`; returns the child, its stdout lines
/// and the program's pid once it is ready.
fn start_holder(
    dir: &Path,
    args: &[&str],
) -> (
    Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    u32,
) {
    library();
    let mut child = Command::new(UZSWAP)
        .args([
            "run",
            "-q",
            "--limit",
            "8M",
            "--pool-limit",
            "1M",
            "--swapfile-dir",
        ])
        .arg(dir)
        .args(args)
        .args(["--", "python3", "-c", HOLDER])
        .env("TMPDIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, pid) = ready_pid(&mut child);
    (child, lines, pid)
}

/// Lets the holder finish; asserts it read its data back intact.
fn finish_holder(child: Child, lines: std::io::Lines<BufReader<std::process::ChildStdout>>) {
    assert_eq!(release_held(child, lines), vec!["ok".to_string()]);
}

/// The contents of the files process `pid` holds open whose path lies in
/// `dir` (its swap file: unlinked, so only `/proc/PID/fd` reaches it), as
/// an outsider who got hold of a descriptor would read them.
fn open_files_in(pid: u32, dir: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        if target.starts_with(dir) {
            out.push(std::fs::read(e.path()).unwrap());
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Inotify events (mask, name) in `dir` from `fd`, read without waiting.
fn drain_events(fd: i32) -> Vec<(u32, String)> {
    let mut buf = vec![0u8; 64 << 10];
    let mut events = Vec::new();
    loop {
        // SAFETY: reads at most buf.len() bytes into `buf`.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n <= 0 {
            return events;
        }
        let mut at = 0;
        while at < n as usize {
            // SAFETY: the kernel wrote whole events into `buf[..n]`.
            let ev: libc::inotify_event = unsafe {
                std::ptr::read_unaligned(buf[at..].as_ptr() as *const libc::inotify_event)
            };
            let head = std::mem::size_of::<libc::inotify_event>();
            let name = String::from_utf8_lossy(&buf[at + head..at + head + ev.len as usize])
                .trim_end_matches('\0')
                .to_string();
            events.push((ev.mask, name));
            at += head + ev.len as usize;
        }
    }
}

fn watch(dir: &Path) -> i32 {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: no memory arguments; checked.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    assert!(fd >= 0);
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    let wd =
        unsafe { libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_CREATE | libc::IN_MOVED_TO) };
    assert!(wd >= 0, "{}", std::io::Error::last_os_error());
    fd
}

#[test]
fn the_swap_file_is_never_linked_and_shows_no_plaintext_while_a_run_writes_back() {
    for (name, args, encrypted) in [
        ("enc", &[][..], true),
        ("plain", &["--no-encrypt-swap"][..], false),
    ] {
        let dir = scratch(&format!("swap-{name}"));
        let fd = watch(&dir);
        let (child, lines, pid) = start_holder(&dir, args);
        let files = open_files_in(pid, &dir);
        let events = drain_events(fd);
        // SAFETY: our inotify descriptor, closed once.
        unsafe { libc::close(fd) };
        finish_holder(child, lines);
        // Only a run folder may appear (in TMPDIR, `dir`, where there is no
        // /dev/shm): no swap file.
        let linked: Vec<_> = events
            .iter()
            .filter(|(_, n)| !n.starts_with("uzswap-"))
            .collect();
        assert!(
            linked.is_empty(),
            "{name}: names linked in the swap folder: {linked:?}"
        );
        assert_eq!(
            files.len(),
            1,
            "{name}: one swap file open in {}",
            dir.display()
        );
        let file = &files[0];
        let written = file
            .chunks(4096)
            .filter(|p| p.iter().any(|&b| b != 0))
            .count();
        assert!(
            written > 1000,
            "{name}: only {written} pages on the swap file: writeback was not forced"
        );
        assert_eq!(
            contains(file, MARKER.as_bytes()),
            !encrypted,
            "{name}: the program's data {} in the swap file",
            if encrypted { "shows" } else { "does not show" }
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `uzswap run -- true` with its run folder at `dir/uzswap-UID`: the name
/// it takes by default in a shared folder (`/dev/shm`, `/tmp`), here in a
/// scratch folder of this test's, where nothing else runs.
fn run_with_folder_in(dir: &Path) -> std::process::Output {
    library();
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    Command::new(UZSWAP)
        .args(["run", "-q", "--", "true"])
        .env("UZSWAP_RUN_DIR", dir.join(format!("uzswap-{uid}")))
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap()
}

/// `uzswap run` with its run folder in `dir` is refused (exit 125) with
/// `why` on stderr.
fn assert_refused(dir: &Path, why: &str) {
    let out = run_with_folder_in(dir);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains(why), "{err}");
}

#[test]
fn a_run_folder_another_user_made_or_a_link_is_refused() {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let dir = scratch("rundir");
    let theirs = dir.join(format!("uzswap-{uid}"));
    // A link planted where the run folder goes (to a folder the planter
    // would like our files in).
    let elsewhere = scratch("rundir-elsewhere");
    std::os::unix::fs::symlink(&elsewhere, &theirs).unwrap();
    assert_refused(&dir, "symbolic link");
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing went through the link"
    );
    std::fs::remove_file(&theirs).unwrap();
    // Our own folder: used, and left 0700.
    let out = run_with_folder_in(&dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&theirs).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    if is_root() {
        // A folder another user made first: refused, named.
        std::fs::remove_dir_all(&theirs).unwrap();
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        assert_refused(&dir, "belongs to user 65534");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&elsewhere).unwrap();
}

#[test]
fn live_stats_of_another_users_process_are_found_by_root_and_refused_to_others() {
    let dir = scratch("stats-other");
    let memcheck = dir.join("uzswap-memcheck");
    std::fs::copy(MEMCHECK, &memcheck).unwrap();
    let uz = uzswap_for_any_user(&dir, &[&memcheck]);
    // As nobody where we are root (the process of another user), else as
    // ourselves: either way with a run folder of its own, which our
    // environment does not name.
    let mut cmd = if is_root() {
        as_nobody(&uz)
    } else {
        Command::new(&uz)
    };
    let mut child = cmd
        .args(["run", "-q", "--limit", "4M", "--swapfile-dir"])
        .arg(&dir)
        .arg("--")
        .arg(&memcheck)
        .args(["--mib", "4", "--threads", "2", "--hold"])
        .env("TMPDIR", &dir)
        .env("UZSWAP_RUN_DIR", dir.join("run"))
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, pid) = ready_pid(&mut child);
    let out = Command::new(UZSWAP)
        .args(["stats", &pid.to_string(), "--raw"])
        .env_remove("TMPDIR")
        .env_remove("UZSWAP_RUN_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = launch::report::ProcessReport::parse(&text(&out.stdout)).unwrap();
    assert_eq!(report.program.pid, u64::from(pid));
    assert!(report.runtime.evicted_pages > 0, "{report:?}");
    if is_root() {
        // The same process seen by a third user, who may not read it.
        let third = Command::new("setpriv")
            .args(["--reuid=65533", "--regid=65533", "--clear-groups"])
            .arg(&uz)
            .args(["stats", &pid.to_string()])
            .output()
            .unwrap();
        assert!(!third.status.success());
        assert!(
            text(&third.stderr).contains(&pid.to_string()),
            "{}",
            text(&third.stderr)
        );
    }
    let rest = release_held(child, lines);
    assert!(
        rest.iter().any(|l| l.contains("uzswap-memcheck: ok")),
        "{rest:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
