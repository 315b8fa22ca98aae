//! What the `uzswap run` integration tests share: the binaries under test,
//! C test programs compiled on demand, and runs as user `nobody`.
// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const UZSWAP: &str = env!("CARGO_BIN_EXE_uzswap");
pub const PROGRAMS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs");

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The LD_PRELOAD library next to the `uzswap` binary.
pub fn library() -> PathBuf {
    let lib = Path::new(UZSWAP).with_file_name("libuzswap_preload.so");
    assert!(
        lib.is_file(),
        "{} is missing: build it with `cargo build --workspace` (scripts/test.sh does)",
        lib.display()
    );
    lib
}

/// Compiles `programs/NAME.c` into `dir/NAME`.
pub fn compile_c(name: &str, dir: &Path) -> PathBuf {
    compile_c_with(name, dir, &[])
}

/// Compiles `programs/NAME.c` into `dir/NAME`, linked with `libs` too
/// (`-l:libjemalloc.so.2`).
pub fn compile_c_with(name: &str, dir: &Path, libs: &[&str]) -> PathBuf {
    let bin = dir.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-O2", "-pthread", "-Wall", "-o"])
        .arg(&bin)
        .arg(format!("{PROGRAMS}/{name}.c"))
        .args(libs)
        .status()
        .unwrap_or_else(|e| panic!("{cc} (a C compiler, installed by scripts/setup.sh): {e}"));
    assert!(status.success(), "compiling {name}.c");
    bin
}

/// Copies of `uzswap` and its library in `dir`, which any user can read
/// and run (the build's may sit under /root), with `programs` (already in
/// `dir`) made runnable too and `dir` writable by all (swap file, stats,
/// sockets). Returns the copy of `uzswap`.
pub fn uzswap_for_any_user(dir: &Path, programs: &[&Path]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let uz = dir.join("uzswap");
    std::fs::copy(UZSWAP, &uz).unwrap();
    std::fs::copy(library(), dir.join("libuzswap_preload.so")).unwrap();
    for p in std::iter::once(uz.as_path()).chain(programs.iter().copied()) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    uz
}

/// `setpriv` and its arguments to run a program as user nobody.
pub const AS_NOBODY: [&str; 4] = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
];

/// `setpriv` running `program` as user nobody.
pub fn as_nobody(program: &Path) -> Command {
    let mut c = Command::new(AS_NOBODY[0]);
    c.args(&AS_NOBODY[1..]).arg(program);
    c
}

/// The counters `uzswap run --stats-out PATH` wrote, summed over the run's
/// processes; a missing or broken file fails the test with its text.
pub fn run_report(path: &std::path::Path) -> launch::report::RunReport {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    launch::report::RunReport::parse(&text)
        .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// The stdout lines of a program started with a piped stdout, and the pid
/// from its first line, `ready PID` (a program that holds its memory until
/// a line comes on stdin: `uzswap-memcheck --hold`, say).
pub fn ready_pid(
    child: &mut std::process::Child,
) -> (
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    u32,
) {
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout piped")).lines();
    let ready = lines.next().expect("a first line").expect("readable");
    let pid = ready
        .strip_prefix("ready ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("expected `ready PID`, got {ready:?}"));
    (lines, pid)
}

/// Sends the line a held program waits for, waits for it to end
/// successfully, and returns the rest of its stdout.
pub fn release_held(
    mut child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) -> Vec<String> {
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin piped")
        .write_all(b"\n")
        .unwrap();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}: {rest:?}");
    rest
}

/// What a trace (`uzswap run --record`) holds, over all its processes.
#[derive(Debug, Default)]
pub struct TraceCounts {
    pub faults: u64,
    pub evicted_pages: u64,
    pub wp_faults: u64,
    pub lost: u64,
    pub maps: u64,
}

pub fn trace_counts(procs: &[trace::ProcessTrace]) -> TraceCounts {
    let mut c = TraceCounts::default();
    for r in procs.iter().flat_map(|p| &p.records) {
        match r.event {
            trace::Event::Fault { .. } => c.faults += 1,
            trace::Event::Evict { pages, .. } => c.evicted_pages += u64::from(pages),
            trace::Event::WpFault { .. } => c.wp_faults += 1,
            trace::Event::Lost { count } => c.lost += u64::from(count),
            trace::Event::Map { .. } => c.maps += 1,
            _ => {}
        }
    }
    c
}
