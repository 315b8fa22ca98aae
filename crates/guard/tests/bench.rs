//! What the guard costs. Skipped unless asked:
//!
//! `cargo test --release -p guard --test bench -- --ignored [--reps 7] [--mib 1024]`
//!
//! 1. `dd`-like copies in 4 KiB blocks (buffers outside the arena), with
//!    and without the filter, each run in a fresh child process (a filter
//!    cannot be removed), interleaved, median of the reps, in CPU time (the
//!    machine may be shared): bare, a 1-instruction filter (seccomp's own
//!    entry cost), a 2-instruction filter that the seccomp cache cannot skip,
//!    and the guard;
//!    `/dev/zero` → `/dev/null`, a pipe → `/dev/null` (a writer thread), a
//!    cached file → `/dev/null`.
//! 2. The cost of one trap: `read(/dev/zero, 8 bytes)` into a resident
//!    arena page (the bare child makes the same call untrapped), and a
//!    `writev` from the stack, trapped under the default `FromCode` policy.

mod common;

use common::{Harness, PAGE};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Instant;

fn child(work: &str, mode: &str, mib: usize) -> f64 {
    let h = Harness::setup(16 << 20);
    match mode {
        "guarded" => {
            guard::install(h.lo..h.hi, h).expect("install");
        }
        "always" => {
            let config = guard::GuardConfig {
                indirect: guard::IndirectPolicy::Always,
                ..Default::default()
            };
            guard::install_with(h.lo..h.hi, h, config).expect("install");
        }
        "trivial" => {
            // A one-instruction filter (RET_ALLOW): seccomp's own cost.
            let prog = [guard::filter::SockFilter {
                code: 0x06,
                jt: 0,
                jf: 0,
                k: guard::filter::RET_ALLOW,
            }];
            guard::filter::install(&prog).expect("install");
        }
        "argload" => {
            // Loads an argument, so the seccomp cache cannot skip it: the
            // cost of running any filter.
            let f = |code, k| guard::filter::SockFilter {
                code,
                jt: 0,
                jf: 0,
                k,
            };
            let prog = [f(0x20, 20), f(0x06, guard::filter::RET_ALLOW)];
            guard::filter::install(&prog).expect("install");
        }
        _ => {}
    }
    let traps_before = guard::counters().traps;
    // CPU time of the process (all threads): the machine may be shared, and
    // wall time then mostly measures waiting for a CPU.
    let cpu = || ::common::rusage::cpu_time(::common::rusage::Who::Process).as_secs_f64();
    let cpu0 = cpu();
    let blocks = mib * 256;
    let mut buf = vec![0u8; 4096];
    let null = File::options().write(true).open("/dev/null").unwrap();
    let t = Instant::now();
    match work {
        "zero" => {
            let zero = File::open("/dev/zero").unwrap();
            for _ in 0..blocks {
                // SAFETY: read/write of a local buffer.
                unsafe {
                    libc::read(zero.as_raw_fd(), buf.as_mut_ptr() as _, 4096);
                    libc::write(null.as_raw_fd(), buf.as_ptr() as _, 4096);
                }
            }
        }
        "pipe" => {
            let mut fds = [0; 2];
            // SAFETY: pipe writes two fds.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            let w = fds[1];
            let writer = std::thread::spawn(move || {
                let src = vec![7u8; 4096];
                for _ in 0..blocks {
                    // SAFETY: write of a local buffer.
                    unsafe { libc::write(w, src.as_ptr() as _, 4096) };
                }
                // SAFETY: closes our end.
                unsafe { libc::close(w) };
            });
            loop {
                // SAFETY: read/write of a local buffer.
                let n = unsafe { libc::read(fds[0], buf.as_mut_ptr() as _, 4096) };
                if n <= 0 {
                    break;
                }
                // SAFETY: as above.
                unsafe { libc::write(null.as_raw_fd(), buf.as_ptr() as _, n as usize) };
            }
            writer.join().unwrap();
        }
        "file" => {
            let path = std::env::var("GUARD_BENCH_FILE").unwrap();
            let f = File::open(path).unwrap();
            let file_blocks = (f.metadata().unwrap().len() / 4096) as usize;
            for i in 0..blocks {
                let off = (i % file_blocks) * 4096;
                // SAFETY: as above.
                unsafe {
                    libc::pread(f.as_raw_fd(), buf.as_mut_ptr() as _, 4096, off as i64);
                    libc::write(null.as_raw_fd(), buf.as_ptr() as _, 4096);
                }
            }
        }
        "trap-read" => {
            // Resident arena page; the bare child reads it untrapped.
            h.fill(0, &[1u8; PAGE]);
            let zero = File::open("/dev/zero").unwrap();
            let n = 200_000;
            let c0 = cpu();
            for _ in 0..n {
                // SAFETY: 8 bytes into the region.
                let rc = unsafe { libc::read(zero.as_raw_fd(), h.ptr(64) as _, 8) };
                assert_eq!(rc, 8);
            }
            return (cpu() - c0) / n as f64;
        }
        "trap-writev" => {
            let a = [1u8; 64];
            let v = [libc::iovec {
                iov_base: a.as_ptr() as *mut _,
                iov_len: 64,
            }];
            let n = 200_000;
            let c0 = cpu();
            for _ in 0..n {
                // SAFETY: writev of a local buffer.
                unsafe { libc::writev(null.as_raw_fd(), v.as_ptr(), 1) };
            }
            return (cpu() - c0) / n as f64;
        }
        "micro" => {
            // ns per getppid (no rule: cached ALLOW) and per 0-byte write
            // (runs the filter).
            let n = 2_000_000;
            let c0 = cpu();
            for _ in 0..n {
                // SAFETY: no arguments.
                unsafe { libc::getppid() };
            }
            let c1 = cpu();
            for _ in 0..n {
                // SAFETY: writes nothing.
                unsafe { libc::write(null.as_raw_fd(), buf.as_ptr() as _, 0) };
            }
            let c2 = cpu();
            let (a, b) = ((c1 - c0) * 1e9 / n as f64, (c2 - c1) * 1e9 / n as f64);
            println!("getppid {a:.0} ns, write(0) {b:.0} ns");
            return 0.0;
        }
        w => panic!("unknown workload {w}"),
    }
    let _wall = t.elapsed().as_secs_f64();
    let s = cpu() - cpu0;
    // (Thread creation's rt_sigprocmask calls trap with the signal
    // protection; the copies themselves must not.)
    let traps = guard::counters().traps - traps_before;
    assert!(
        traps <= 4,
        "buffers outside the arena must not trap ({traps} traps)"
    );
    s
}

fn run(exe: &std::path::Path, work: &str, mode: &str, mib: usize, file: &std::path::Path) -> f64 {
    let out = Command::new(exe)
        .env("GUARD_BENCH", work)
        .env("GUARD_MODE", mode)
        .env("GUARD_MIB", mib.to_string())
        .env("GUARD_BENCH_FILE", file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{work} {mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    if let Ok(work) = std::env::var("GUARD_BENCH") {
        let mode = std::env::var("GUARD_MODE").unwrap();
        let mib = std::env::var("GUARD_MIB").unwrap().parse().unwrap();
        let v = child(&work, &mode, mib);
        if work != "micro" {
            println!("{v}");
        }
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    if !args
        .iter()
        .any(|a| a == "--ignored" || a == "--include-ignored" || a == "--bench")
    {
        println!("test bench ... ignored (run with -- --ignored, preferably --release)");
        return;
    }
    let opt = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let reps = opt("--reps", 9);
    let mib = opt("--mib", 1024);
    let exe = std::env::current_exe().unwrap();
    // A 256 MiB file, read once so it is cached.
    let file = std::path::PathBuf::from(format!("/var/tmp/guard-bench-{}", std::process::id()));
    {
        let mut f = File::create(&file).unwrap();
        let block = vec![3u8; 1 << 20];
        for _ in 0..256 {
            f.write_all(&block).unwrap();
        }
    }
    let _ = std::fs::read(&file);
    println!(
        "dd-like copies of {mib} MiB in 4 KiB blocks, {reps} reps, median of the children's CPU time \
         (user+sys); interleaved:\n  bare; a 1-instruction RET_ALLOW filter (the seccomp cache skips it: \
         seccomp's entry cost);\n  a 2-instruction filter loading an argument (runs for every call); the guard"
    );
    println!(
        "{:<26} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11}",
        "workload MB/s (CPU)", "bare", "1-insn", "2-insn", "guard", "guard/bare", "guard/2-insn"
    );
    for work in ["zero", "pipe", "file"] {
        let modes = ["bare", "trivial", "argload", "guarded"];
        let mut t: [Vec<f64>; 4] = Default::default();
        for rep in 0..reps {
            for k in 0..4 {
                let m = (rep + k) % 4;
                t[m].push(run(&exe, work, modes[m], mib, &file));
            }
        }
        let [b, z, a, g] = [
            median(&mut t[0]),
            median(&mut t[1]),
            median(&mut t[2]),
            median(&mut t[3]),
        ];
        let mbps = |s: f64| mib as f64 * 1.048_576 / s;
        let name = match work {
            "zero" => "/dev/zero -> /dev/null",
            "pipe" => "pipe -> /dev/null",
            _ => "cached file -> /dev/null",
        };
        println!(
            "{name:<26} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>+10.1}% {:>+10.1}%",
            mbps(b),
            mbps(z),
            mbps(a),
            mbps(g),
            (g / b - 1.0) * 100.0,
            (g / a - 1.0) * 100.0
        );
    }
    for work in ["trap-read", "trap-writev"] {
        let (mut bare, mut guarded) = (Vec::new(), Vec::new());
        for _ in 0..reps.min(5) {
            bare.push(run(&exe, work, "bare", mib, &file));
            guarded.push(run(&exe, work, "guarded", mib, &file));
        }
        let (b, g) = (median(&mut bare), median(&mut guarded));
        let what = if work == "trap-read" {
            "read(8 B) into an arena page"
        } else {
            "writev from the stack (FromCode)"
        };
        println!(
            "{what:<36} bare {:>6.2} us, trapped {:>6.2} us: {:>5.2} us per trap",
            b * 1e6,
            g * 1e6,
            (g - b) * 1e6
        );
    }
    let _ = std::fs::remove_file(&file);
}
