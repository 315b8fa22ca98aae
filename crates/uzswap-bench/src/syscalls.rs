//! `uzswap bench syscalls`: what the syscall guard costs a whole program.
//! `dd` from /dev/zero to /dev/null, run plain, under
//! `uzswap run` with kernel faults handled, and under `uzswap run
//! --user-mode-only` (the syscall guard, as for an unprivileged user),
//! interleaved, elapsed and CPU (user + system, every thread) timed from
//! outside. Two shapes: `bs=4k` (small buffers, no region: the guard must
//! not cost anything) and `bs=1M` (the buffer is a region: every `read`
//! and `write` pins it). With `--with-static`, the same copy by a
//! statically linked program (`ddstatic.c`) that first fills 64 MiB, under
//! `--limit 32M`: paged from outside, and with `--user-mode-only` under
//! the out-of-process syscall guard (each `read` and `write` held by the
//! seccomp filter until the pager has mapped and pinned its buffer).

use crate::progress::Progress;
use crate::{median, BenchError};
use comfy_table::Table;
use launch::{Launch, Settings};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How dd runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    KernelFaults,
    Guard,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Plain, Mode::KernelFaults, Mode::Guard];

    fn label(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::KernelFaults => "uzswap run (kernel faults)",
            Mode::Guard => "uzswap run --user-mode-only (guard)",
        }
    }
}

/// One dd shape: block size and count.
#[derive(Debug, Clone)]
pub struct Shape {
    pub bs: &'static str,
    pub count: u64,
    /// The static program instead of dd (compiled at this path).
    pub static_program: Option<PathBuf>,
}

/// The static copy program's source.
const DDSTATIC_C: &str = include_str!("ddstatic.c");
/// What it fills first, and the limit it runs under: the pager registers
/// its memory, so that the guard is in.
const STATIC_HELD_MIB: u64 = 64;
const STATIC_LIMIT: &str = "32M";

/// Compiles `ddstatic.c` with `cc -static` into `dir`.
pub fn build_static(dir: &Path) -> Result<PathBuf, BenchError> {
    std::fs::create_dir_all(dir).map_err(|e| BenchError::Params(e.to_string()))?;
    let (src, bin) = (dir.join("ddstatic.c"), dir.join("ddstatic"));
    std::fs::write(&src, DDSTATIC_C).map_err(|e| BenchError::Params(e.to_string()))?;
    let status = std::process::Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .map_err(|e| BenchError::Params(format!("cc: {e}")))?;
    if !status.success() {
        return Err(BenchError::Params(
            "cc -static ddstatic.c failed (libc6-dev's libc.a, installed by scripts/setup.sh)"
                .into(),
        ));
    }
    Ok(bin)
}

/// The static program's run: `uzswap run` of this binary (it pages the
/// program from outside), with `--user-mode-only` for the guard.
fn static_command(
    shape: &Shape,
    program: &Path,
    mode: Mode,
) -> Result<std::process::Command, BenchError> {
    let args = [
        shape.bs.to_string(),
        shape.count.to_string(),
        STATIC_HELD_MIB.to_string(),
    ];
    if mode == Mode::Plain {
        let mut c = std::process::Command::new(program);
        c.args(args);
        return Ok(c);
    }
    let exe = std::env::current_exe().map_err(|e| BenchError::Params(e.to_string()))?;
    let mut c = std::process::Command::new(exe);
    c.args(["run", "-q", "--limit", STATIC_LIMIT]);
    if mode == Mode::Guard {
        c.arg("--user-mode-only");
    }
    c.arg("--").arg(program).args(args);
    Ok(c)
}

/// Parameters of `uzswap bench syscalls`.
#[derive(Debug, Clone)]
pub struct SyscallsParams {
    pub shapes: Vec<Shape>,
    pub reps: usize,
    pub library: PathBuf,
}

/// Medians of one shape and mode.
#[derive(Debug, Clone)]
pub struct Row {
    pub bs: &'static str,
    pub count: u64,
    /// The static program's (else dd's).
    pub static_program: bool,
    pub mode: Mode,
    pub elapsed: f64,
    pub cpu: f64,
}

/// Runs dd once; elapsed and user + system CPU of the whole process tree.
fn run_once(shape: &Shape, mode: Mode, library: &Path) -> Result<(f64, f64), BenchError> {
    let args = vec![
        "dd".to_string(),
        "if=/dev/zero".into(),
        "of=/dev/null".into(),
        format!("bs={}", shape.bs),
        format!("count={}", shape.count),
    ];
    let mut dir = None;
    let mut cmd = match (mode, &shape.static_program) {
        (_, Some(program)) => static_command(shape, program, mode)?,
        (Mode::Plain, None) => {
            let mut c = std::process::Command::new(&args[0]);
            c.args(&args[1..]);
            c
        }
        (Mode::KernelFaults | Mode::Guard, None) => {
            let settings = Settings {
                user_mode_only: mode == Mode::Guard,
                ..Settings::default()
            };
            let job = Launch {
                per_process_limit: true,
                max_slowdown: None,
                warn_thrash: false,
                settings,
                library: library.to_path_buf(),
                command: args,
            };
            let d = launch::new_stats_dir("uzswap-bench-syscalls")
                .map_err(|e| BenchError::Params(e.to_string()))?;
            let c = job
                .command(&d)
                .map_err(|e| BenchError::Params(e.to_string()))?;
            dir = Some(d);
            c
        }
    };
    let (u0, s0) = launch::children_cpu();
    let start = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| BenchError::Params(format!("dd: {e}")))?;
    let elapsed = start.elapsed();
    let (u1, s1) = launch::children_cpu();
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
    if !status.success() {
        return Err(BenchError::Params(format!(
            "dd ({}) failed: {status}",
            mode.label()
        )));
    }
    let cpu: Duration = (u1 - u0) + (s1 - s0);
    Ok((elapsed.as_secs_f64(), cpu.as_secs_f64()))
}

/// Every shape, `reps` rounds of the three modes interleaved; medians.
pub fn run(p: &SyscallsParams, progress: &Progress) -> Result<Vec<Row>, BenchError> {
    runtime::probe_userfaultfd(false, false)?;
    let mut rows = Vec::new();
    for shape in &p.shapes {
        let mut samples: Vec<(Vec<f64>, Vec<f64>)> = vec![(vec![], vec![]); Mode::ALL.len()];
        for _ in 0..p.reps {
            for (i, &mode) in Mode::ALL.iter().enumerate() {
                let (e, c) = run_once(shape, mode, &p.library)?;
                samples[i].0.push(e);
                samples[i].1.push(c);
                progress.step(&format!("bs={} {}", shape.bs, mode.label()));
            }
        }
        for (i, (e, c)) in samples.into_iter().enumerate() {
            rows.push(Row {
                bs: shape.bs,
                count: shape.count,
                static_program: shape.static_program.is_some(),
                mode: Mode::ALL[i],
                elapsed: median(e),
                cpu: median(c),
            });
        }
    }
    Ok(rows)
}

/// One line per shape and mode, with ratios to the plain run.
pub fn table(rows: &[Row]) -> Table {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL);
    t.set_header(vec![
        "dd",
        "run",
        "elapsed (s)",
        "CPU user+sys (s)",
        "elapsed / plain",
        "CPU / plain",
    ]);
    for r in rows {
        let plain = rows
            .iter()
            .find(|p| p.bs == r.bs && p.static_program == r.static_program && p.mode == Mode::Plain)
            .expect("every shape has a plain row");
        let what = if r.static_program {
            format!(
                "static, {STATIC_HELD_MIB} MiB held, --limit {STATIC_LIMIT}: bs={} count={}",
                r.bs, r.count
            )
        } else {
            format!("bs={} count={}", r.bs, r.count)
        };
        t.add_row(vec![
            what,
            r.mode.label().to_string(),
            format!("{:.3}", r.elapsed),
            format!("{:.3}", r.cpu),
            format!("{:.3}x", r.elapsed / plain.elapsed),
            format!("{:.3}x", r.cpu / plain.cpu),
        ]);
    }
    t
}
