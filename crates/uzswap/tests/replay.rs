//! `uzswap run --record` and `uzswap replay`: a recorded run's trace holds
//! every fault and eviction the run counted, for each of its processes,
//! and replaying it through the runtime's protocol at the recorded limit
//! comes near the run's own swap-ins.

mod common;

use common::{compile_c, run_report, text, trace_counts, TraceCounts, UZSWAP};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use trace::Event;

#[test]
fn a_recorded_run_holds_what_the_run_counted_and_replays_near_it() {
    let dir = tempdir("record");
    let prog = compile_c("recordme", &dir);
    let plain = Command::new(&prog).output().unwrap();
    assert!(plain.status.success());
    let (trace_path, stats) = (dir.join("run.trace"), dir.join("run.stats"));
    // A file left readable by others: the trace holds samples of the
    // program's memory, so the run makes it the user's alone.
    std::fs::write(&trace_path, b"an old trace").unwrap();
    std::fs::set_permissions(&trace_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = Command::new(UZSWAP)
        .args(["run", "--limit", "8M", "--record"])
        .arg(&trace_path)
        .arg("--stats-out")
        .arg(&stats)
        .arg("--")
        .arg(&prog)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(
        text(&run.stdout),
        text(&plain.stdout),
        "output differs from a plain run"
    );
    let report = run_report(&stats);
    let counted = &report.total.runtime;
    assert!(
        counted.swapin_faults > 1000,
        "the limit must make the program swap"
    );

    let mode = std::fs::metadata(&trace_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the trace is readable by others");
    let procs = trace::read_file(&trace_path).unwrap();
    assert_eq!(procs.len(), 2, "the program and its forked child");
    let (parent, child) = (&procs[0], &procs[1]);
    assert_eq!(
        child.records[0].event,
        Event::Forked { parent: parent.pid },
        "a child's first record names its parent"
    );
    let TraceCounts {
        faults,
        evicted_pages: evicted,
        wp_faults: wp,
        lost,
        ..
    } = trace_counts(&procs);
    let wp_counted = counted.wp_faults + counted.clean_written;
    if lost == 0 {
        // Single-threaded processes: every fault counted is recorded (a
        // fault that found its page mapped meanwhile is recorded, an
        // access, but counted in no class). The reclaimer evicts until the
        // process is gone, and the report is taken before the last records
        // are written: at least every eviction it counts.
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
        // A write-protect fault that found its page being evicted is
        // recorded (an access) but counted in no class: it faults again.
        assert!(
            wp >= wp_counted,
            "{wp} write-protect faults recorded, {wp_counted} counted"
        );
    } else {
        // A queue that filled: what was dropped is counted as lost.
        assert!(faults + evicted + lost >= counted.faults + counted.evicted_pages);
    }

    // Page samples: real pages of the run, each with the length its
    // compressor (the default, lz4) gave it when it was stored.
    let samples: Vec<&trace::PageSample> = procs.iter().flat_map(|p| &p.samples).collect();
    assert!(!samples.is_empty(), "no page sampled");
    assert_eq!(parent.compressor.as_deref(), Some("lz4"));
    let lz4 = compress::new_compressor(compress::Algorithm::Lz4, &compress::Backend::Sequential);
    let mut dst = vec![0u8; 8192];
    for s in &samples {
        // A page that does not compress is stored whole.
        let len = lz4.compress_page(&s.data, &mut dst).unwrap_or(4096);
        assert_eq!(
            len,
            usize::from(s.compressed_len),
            "sample at {:#x}",
            s.addr
        );
    }

    let out = dir.join("replay.stats");
    let replay = Command::new(UZSWAP)
        .args(["--no-plot", "replay", "--sweep", "2", "--stats-out"])
        .arg(&out)
        .arg(&trace_path)
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    let table = text(&replay.stdout);
    for policy in ["uzswap", "lru", "fifo", "clock", "opt"] {
        assert!(table.contains(policy), "{policy} missing from\n{table}");
    }
    // The first row is the runtime's protocol at the recorded limit.
    let replayed: u64 = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("swapin_faults ")?.parse().ok())
        .expect("swapin_faults in the replay's stats");
    let run_swapins = counted.swapin_faults as f64;
    assert!(
        (replayed as f64 - run_swapins).abs() <= 0.25 * run_swapins,
        "replayed {replayed} swap-ins against the run's {run_swapins}"
    );

    // Compressors compared on those pages: a row each, and the protocol
    // replayed storing them (every page read back checked).
    let compared = Command::new(UZSWAP)
        .args(["--no-plot", "replay", "--sweep", "0", "--policy", "uzswap"])
        .args(["--compressor", "lz4,deflate:6"])
        .arg(&trace_path)
        .output()
        .unwrap();
    assert!(compared.status.success(), "{}", text(&compared.stderr));
    let table = text(&compared.stdout);
    for row in ["uzswap/lz4", "uzswap/deflate:6", "decompress"] {
        assert!(table.contains(row), "{row} missing from\n{table}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_refuses_what_is_not_a_trace() {
    let dir = tempdir("notrace");
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, b"not a trace at all, but long enough").unwrap();
    let out = Command::new(UZSWAP)
        .arg("replay")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("bad magic"),
        "{}",
        text(&out.stderr)
    );
    let out = Command::new(UZSWAP)
        .args(["replay", "--policy", "belady2"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("uzswap-replay-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
