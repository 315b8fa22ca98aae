//! `uzswap bench malloc`: what the LD_PRELOAD library's allocation hooks
//! cost a program that allocates small blocks at a high rate.
//! `mallocloop.c` frees and allocates blocks of 16 to 215 bytes through a
//! ring of 64 and times that loop itself (nanoseconds a `free` and
//! `malloc`), after holding some MiB of 64-byte blocks: none (the
//! small-object heap waits, and the hooks count what glibc holds) or past
//! the heap's 4 MiB threshold (every later block is the paged heap's,
//! mimalloc's). Run plain and under `uzswap run` with its defaults,
//! `--no-small-objects` and `--small-objects`, interleaved; medians. No
//! limit is passed and nothing is evicted: the cost is the hooks' and
//! the allocator's. Every run's check sum must match the plain run's.

use crate::progress::Progress;
use crate::{median, BenchError};
use comfy_table::Table;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// How the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Defaults,
    NoSmallObjects,
    SmallObjects,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Plain,
        Mode::Defaults,
        Mode::NoSmallObjects,
        Mode::SmallObjects,
    ];

    fn label(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Defaults => "uzswap run",
            Mode::NoSmallObjects => "uzswap run --no-small-objects",
            Mode::SmallObjects => "uzswap run --small-objects",
        }
    }

    fn flag(self) -> Option<&'static str> {
        match self {
            Mode::Plain | Mode::Defaults => None,
            Mode::NoSmallObjects => Some("--no-small-objects"),
            Mode::SmallObjects => Some("--small-objects"),
        }
    }
}

/// The loop program's source.
const MALLOCLOOP_C: &str = include_str!("mallocloop.c");

/// Compiles `mallocloop.c` with `cc -O2` into `dir`.
pub fn build(dir: &Path) -> Result<PathBuf, BenchError> {
    let err = |e: std::io::Error| BenchError::Params(e.to_string());
    std::fs::create_dir_all(dir).map_err(err)?;
    let (src, bin) = (dir.join("mallocloop.c"), dir.join("mallocloop"));
    std::fs::write(&src, MALLOCLOOP_C).map_err(err)?;
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .map_err(|e| BenchError::Params(format!("cc: {e}")))?;
    if !status.success() {
        return Err(BenchError::Params("cc mallocloop.c failed".into()));
    }
    Ok(bin)
}

/// Parameters of `uzswap bench malloc`.
#[derive(Debug, Clone)]
pub struct MallocParams {
    /// MiB of 64-byte blocks held before the loop, one shape each.
    pub held_mib: Vec<u64>,
    /// `free` and `malloc` pairs the loop makes.
    pub pairs: u64,
    pub reps: usize,
    /// The compiled `mallocloop`.
    pub program: PathBuf,
}

/// Medians of one shape and mode.
#[derive(Debug, Clone)]
pub struct Row {
    pub held_mib: u64,
    pub mode: Mode,
    /// Nanoseconds a `free` and `malloc`, as the program timed its loop.
    pub ns_per_pair: f64,
    /// The whole run's, from outside (start-up included).
    pub elapsed: f64,
}

/// What one run printed: its loop's time per pair and its check sum.
fn parse(stdout: &str) -> Option<(f64, String)> {
    let mut words = stdout.split_whitespace();
    (words.next()? == "ns_per_pair").then_some(())?;
    let ns = words.next()?.parse().ok()?;
    (words.next()? == "check").then_some(())?;
    Some((ns, words.next()?.to_string()))
}

fn run_once(p: &MallocParams, held: u64, mode: Mode) -> Result<(f64, f64, String), BenchError> {
    let args = [held.to_string(), p.pairs.to_string()];
    let mut cmd = if mode == Mode::Plain {
        Command::new(&p.program)
    } else {
        let exe = std::env::current_exe().map_err(|e| BenchError::Params(e.to_string()))?;
        let mut c = Command::new(exe);
        c.args(["run", "-q"]);
        c.args(mode.flag());
        c.arg("--").arg(&p.program);
        c
    };
    cmd.args(args);
    let start = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| BenchError::Params(format!("mallocloop: {e}")))?;
    let elapsed = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    match (out.status.success(), parse(&stdout)) {
        (true, Some((ns, check))) => Ok((ns, elapsed, check)),
        _ => Err(BenchError::Params(format!(
            "mallocloop ({}) failed: {}: {stdout}{}",
            mode.label(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))),
    }
}

/// Every shape, `reps` rounds of the modes interleaved; medians. A run
/// whose check sum differs from the plain run's is an error.
pub fn run(p: &MallocParams, progress: &Progress) -> Result<Vec<Row>, BenchError> {
    let mut rows = Vec::new();
    for &held in &p.held_mib {
        let mut samples: Vec<(Vec<f64>, Vec<f64>)> = vec![(vec![], vec![]); Mode::ALL.len()];
        let mut plain_check = None;
        for _ in 0..p.reps {
            for (i, &mode) in Mode::ALL.iter().enumerate() {
                let (ns, elapsed, check) = run_once(p, held, mode)?;
                let want = plain_check.get_or_insert_with(|| check.clone());
                if *want != check {
                    return Err(BenchError::Params(format!(
                        "mallocloop ({}) printed check {check}, plain {want}",
                        mode.label()
                    )));
                }
                samples[i].0.push(ns);
                samples[i].1.push(elapsed);
                progress.step(&format!("{held} MiB held, {}", mode.label()));
            }
        }
        for (i, (ns, elapsed)) in samples.into_iter().enumerate() {
            rows.push(Row {
                held_mib: held,
                mode: Mode::ALL[i],
                ns_per_pair: median(ns),
                elapsed: median(elapsed),
            });
        }
    }
    Ok(rows)
}

/// One line per shape and mode, with the loop's cost over plain.
pub fn table(rows: &[Row]) -> Table {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL);
    t.set_header(vec![
        "held before the loop",
        "run",
        "ns per free + malloc",
        "over plain",
        "elapsed (s)",
    ]);
    for r in rows {
        let plain = rows
            .iter()
            .find(|p| p.held_mib == r.held_mib && p.mode == Mode::Plain)
            .expect("every shape has a plain row");
        t.add_row(vec![
            format!("{} MiB of 64-byte blocks", r.held_mib),
            r.mode.label().to_string(),
            format!("{:.1}", r.ns_per_pair),
            format!("{:+.1} ns", r.ns_per_pair - plain.ns_per_pair),
            format!("{:.3}", r.elapsed),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_line_gives_its_time_and_check() {
        assert_eq!(
            parse("ns_per_pair 16.25 check 417\n"),
            Some((16.25, "417".to_string()))
        );
        assert_eq!(parse("ns_per_pair x check 1"), None);
        assert_eq!(parse("check 1 ns_per_pair 2"), None);
        assert_eq!(parse(""), None);
    }
}
