//! `uzswap bench ab`: two builds on the compatibility suite, end to end.

mod common;
use common::{library, text, UZSWAP};
use std::process::Command;

/// This build against itself on `randpage` (quick sizes, one round): both
/// builds' suites run, page and match plain, and the table sets their
/// medians side by side with the speed-up between them.
#[test]
fn a_build_against_itself_runs_both_suites_and_compares_them() {
    library();
    let dir = std::env::temp_dir().join(format!("uzswap-ab-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("runs.csv");
    let mut cmd = Command::new(UZSWAP);
    cmd.args(["--no-plot", "bench", "ab", "--baseline", UZSWAP])
        .args(["--only", "randpage", "--reps", "1"])
        .arg("--work-dir")
        .arg(&dir)
        .arg("--swapfile-dir")
        .arg(&dir)
        .arg("--out")
        .arg(&csv);
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // As root the suite would also run as nobody: one user is enough.
        cmd.args(["--users", "root"]);
    }
    let out = cmd.output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let row = stdout
        .lines()
        .find(|l| l.starts_with('│') && l.contains("randpage"))
        .unwrap_or_else(|| panic!("no randpage row in\n{stdout}"));
    assert!(row.contains("1/1, 1/1"), "both runs went right: {row}");
    let ratio: f64 = row
        .split('┆')
        .nth(4)
        .and_then(|c| c.trim().strip_suffix('x'))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no speed-up in {row}"));
    // The same build twice: a ratio far from 1 would mean the two sides
    // were not timed alike.
    assert!((0.25..4.0).contains(&ratio), "{row}");
    let runs = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = runs.lines().collect();
    assert_eq!(lines.len(), 3, "a header and one run per build:\n{runs}");
    assert!(lines[1].starts_with("baseline,1,randpage,"), "{runs}");
    assert!(lines[2].starts_with("this build,1,randpage,"), "{runs}");
    assert!(lines[1..].iter().all(|l| l.ends_with(",true")), "{runs}");
    assert!(
        !dir.read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("uzswap-ab-")),
        "the bench's folder is removed unless kept"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
