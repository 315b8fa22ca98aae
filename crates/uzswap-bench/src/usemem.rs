//! `uzswap bench usemem` (processes; the threads variant is
//! [`usemem_threads`](crate::usemem_threads)).
//!
//! The seeds' usemem30 experiment, scaled to the machine: N processes each
//! map and write S bytes of realistic content (`uzswap-usemem`, optionally
//! reading it back), under a memory limit smaller than their footprint.
//! Under uzswap the processes run with the LD_PRELOAD library and share one
//! limit (as `uzswap run` has them); under the kernel ([`crate::kernel`])
//! they share a memcg. The table has the seeds' rows: total and average
//! throughput, elapsed, sys time, zswpout/zswpin, pswpout/pswpin, rejects,
//! pool size.

use crate::{BenchError, Progress};
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};
use launch::{format_size, Launch, Settings};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The workload: `procs` processes of `bytes_per_proc` each.
#[derive(Debug, Clone)]
pub struct Workload {
    pub procs: usize,
    pub bytes_per_proc: usize,
    pub read_back: bool,
    /// How long each process keeps its memory after writing (usemem -s).
    pub hold_ms: u64,
    /// The `uzswap-usemem` binary.
    pub worker: PathBuf,
}

impl Workload {
    /// The worker next to `exe` (cargo's `target/<profile>/`).
    pub fn find_worker(exe: &Path) -> Result<PathBuf, BenchError> {
        let w = exe.with_file_name("uzswap-usemem");
        if w.is_file() {
            Ok(w)
        } else {
            Err(BenchError::Params(format!(
                "{} not found: build it with `cargo build --release -p uzswap`",
                w.display()
            )))
        }
    }

    /// usemem's command line: one parent forks `procs` workers.
    fn args(&self) -> Vec<String> {
        let mut a = vec![
            "-n".to_string(),
            self.procs.to_string(),
            "--hold-ms".into(),
            self.hold_ms.to_string(),
        ];
        if self.read_back {
            a.push("--read-back".into());
        }
        a.push(self.bytes_per_proc.to_string());
        a
    }

    /// The command: a parent that forks every worker, as usemem does.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.worker);
        c.args(self.args());
        c
    }

    pub fn footprint(&self) -> usize {
        self.procs * self.bytes_per_proc
    }
}

/// Which system paged the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum System {
    Uzswap,
    KernelZswap,
    KernelZram,
}

impl std::fmt::Display for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            System::Uzswap => "uzswap",
            System::KernelZswap => "kernel zswap",
            System::KernelZram => "kernel zram",
        })
    }
}

/// One run of the workload.
#[derive(Debug, Clone)]
pub struct Measured {
    pub system: System,
    pub compressor: String,
    pub folio: String,
    pub procs: usize,
    /// Sum of the processes' write throughputs (usemem's "Total").
    pub total_kbs: f64,
    /// All bytes written over the longest write phase: the rate the
    /// processes sustained together (a process that ran alone while the
    /// others waited for a CPU cannot inflate it).
    pub aggregate_kbs: f64,
    pub elapsed: Duration,
    pub user: Duration,
    pub sys: Duration,
    pub zswpout: u64,
    pub zswpin: u64,
    pub pswpout: u64,
    pub pswpin: u64,
    pub rejects: u64,
    /// Largest compressed-pool size seen during the run.
    pub pool_peak_bytes: u64,
    /// Every page read back was the page written (or no read-back).
    pub verified: bool,
}

impl Measured {
    pub fn avg_kbs(&self) -> f64 {
        self.total_kbs / self.procs.max(1) as f64
    }

    pub fn label(&self) -> String {
        format!("{} {} {}", self.system, self.compressor, self.folio)
    }

    /// User + system CPU of the whole job: every thread of every process,
    /// uzswap's own threads included (timed from outside, `getrusage` of
    /// the waited-for children).
    pub fn cpu(&self) -> Duration {
        self.user + self.sys
    }

    /// GiB swapped out: pages stored compressed (`zswpout`) plus pages
    /// written to the swap device (`pswpout`: zram's, or uncompressed).
    pub fn gib_swapped_out(&self) -> f64 {
        ((self.zswpout + self.pswpout) * common::PAGE_SIZE as u64) as f64 / (1u64 << 30) as f64
    }

    /// CPU seconds per GiB swapped out (0 when nothing was).
    pub fn cpu_per_gib(&self) -> f64 {
        let gib = self.gib_swapped_out();
        if gib > 0.0 {
            self.cpu().as_secs_f64() / gib
        } else {
            0.0
        }
    }
}

/// What the worker processes reported, and what they cost.
pub(crate) struct WorkerRun {
    pub total_kbs: f64,
    pub aggregate_kbs: f64,
    pub elapsed: Duration,
    pub user: Duration,
    pub sys: Duration,
    pub verified: bool,
}

/// The processes descending from `pid` (from `/proc/PID/task/*/children`).
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// Runs the workload's command (a parent that forks the workers), calls
/// `tick` with the pids of its processes about every 50 ms until it has
/// exited, and parses the workers' `usemem` lines (`procs` of them).
/// Elapsed time and CPU are the whole job's, measured from outside.
pub(crate) fn run_workers(
    mut command: Command,
    procs: usize,
    mut tick: impl FnMut(&[u32]),
) -> Result<WorkerRun, BenchError> {
    let (user0, sys0) = launch::children_cpu();
    let start = Instant::now();
    command.stdout(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| BenchError::Params(format!("starting the workload: {e}")))?;
    // Read the output as it comes: a pipe nobody drains would block the
    // workers once full.
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        if let Some(o) = stdout.as_mut() {
            let _ = o.read_to_string(&mut out);
        }
        out
    });
    let status = loop {
        if let Some(s) = child
            .try_wait()
            .map_err(|e| BenchError::Params(e.to_string()))?
        {
            break s;
        }
        let mut pids = vec![child.id()];
        pids.extend(descendants(child.id()));
        tick(&pids);
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = start.elapsed();
    let (user1, sys1) = launch::children_cpu();
    let out = reader.join().unwrap_or_default();
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("usemem ")).collect();
    if lines.len() != procs {
        use std::os::unix::process::ExitStatusExt;
        let hint = if status.signal() == Some(libc::SIGKILL) || !status.success() {
            " (a worker killed: under the kernel most likely by the memcg's OOM killer, see \
             dmesg; the limit is too tight for this footprint, try a larger --limit)"
        } else {
            ""
        };
        return Err(BenchError::Params(format!(
            "{} of {procs} workers reported; the workload exited with {status}{hint} (output: {out:?})",
            lines.len()
        )));
    }
    let mut total_kbs = 0.0;
    let mut bytes = 0u64;
    let mut longest_us = 0u64;
    let mut verified = status.success();
    for line in lines {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or("")
                .to_string()
        };
        total_kbs += field("kbs").parse::<f64>().unwrap_or(0.0);
        bytes += field("bytes").parse::<u64>().unwrap_or(0);
        longest_us = longest_us.max(field("write_us").parse::<u64>().unwrap_or(0));
        verified &= field("verified") != "no";
    }
    Ok(WorkerRun {
        total_kbs,
        aggregate_kbs: (bytes as f64 / 1024.0) / (longest_us.max(1) as f64 / 1e6),
        elapsed,
        user: user1.saturating_sub(user0),
        sys: sys1.saturating_sub(sys0),
        verified,
    })
}

/// Runs the workload under uzswap: the processes with the library, sharing
/// `settings.limit_bytes` as `uzswap run` has them do.
pub fn run_uzswap(
    w: &Workload,
    settings: &Settings,
    library: &Path,
) -> Result<Measured, BenchError> {
    runtime::probe_userfaultfd(false, false)?;
    let job = Launch {
        per_process_limit: false,
        max_slowdown: None,
        warn_thrash: false,
        settings: settings.clone(),
        library: library.to_path_buf(),
        command: std::iter::once(w.worker.display().to_string())
            .chain(w.args())
            .collect(),
    };
    let dir =
        launch::new_stats_dir("uzswap-usemem").map_err(|e| BenchError::Params(e.to_string()))?;
    let command = job
        .command(&dir)
        .map_err(|e| BenchError::Params(e.to_string()))?;
    let mut pool_peak = 0u64;
    let run = run_workers(command, w.procs, |pids| {
        let pool: u64 = pids
            .iter()
            .filter_map(|&pid| launch::live_stats(pid).ok())
            .map(|r| r.swap.pool_total_size)
            .sum();
        pool_peak = pool_peak.max(pool);
    })?;
    let (procs, unreadable) = launch::read_stats_dir(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(why) = unreadable.first() {
        return Err(BenchError::Params(format!("a worker's report: {why}")));
    }
    let total =
        |counter: fn(&zswap::Stats) -> u64| procs.iter().map(|p| counter(&p.swap)).sum::<u64>();
    // The workers, and the parent if it paged anything itself.
    if procs.len() < w.procs {
        return Err(BenchError::Params(format!(
            "{} of {} workers reported uzswap counters",
            procs.len(),
            w.procs
        )));
    }
    let pool_end = total(|s| s.pool_total_size);
    Ok(Measured {
        system: System::Uzswap,
        compressor: settings.compressor.to_string(),
        folio: format_size(settings.folio_bytes),
        procs: w.procs,
        total_kbs: run.total_kbs,
        aggregate_kbs: run.aggregate_kbs,
        elapsed: run.elapsed,
        user: run.user,
        sys: run.sys,
        zswpout: total(|s| s.zswpout),
        zswpin: total(|s| s.zswpin),
        pswpout: total(|s| s.pswpout),
        pswpin: total(|s| s.pswpin),
        rejects: total(|s| s.reject_compress_poor)
            + total(|s| s.reject_compress_fail)
            + total(|s| s.reject_alloc_fail)
            + total(|s| s.reject_reclaim_fail),
        pool_peak_bytes: pool_peak.max(pool_end),
        verified: run.verified,
    })
}

/// Parameters of `uzswap bench usemem`.
#[derive(Debug, Clone)]
pub struct UsememParams {
    pub workload: Workload,
    /// The limit all processes share.
    pub limit_bytes: usize,
    pub compressors: Vec<String>,
    pub folios: Vec<usize>,
    pub parallel: bool,
    pub library: PathBuf,
}

/// Every compressor x folio combination under uzswap.
pub fn run(p: &UsememParams, progress: &Progress) -> Result<Vec<Measured>, BenchError> {
    let mut rows = Vec::new();
    for c in &p.compressors {
        for &folio in &p.folios {
            let settings = Settings {
                limit_bytes: p.limit_bytes,
                compressor: c.parse().map_err(|e| BenchError::Params(format!("{e}")))?,
                folio_bytes: folio,
                parallel: p.parallel,
                swapfile_bytes: (p.workload.footprint() * 2).max(64 << 20),
                ..Settings::default()
            };
            settings
                .validate()
                .map_err(|e| BenchError::Params(e.to_string()))?;
            rows.push(run_uzswap(&p.workload, &settings, &p.library)?);
            progress.step(&format!("{c} {}", format_size(folio)));
        }
    }
    Ok(rows)
}

fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// How a table row reads its value off a run.
type Metric = Box<dyn Fn(&Measured) -> String>;

/// The seeds' usemem30 table: one column per run, one row per metric;
/// `extra` adds columns (e.g. ratios) as `(header, cells)`, one cell per
/// metric row.
pub fn table(rows: &[Measured], extra: &[(String, Vec<String>)]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec![String::new()];
    header.extend(rows.iter().map(Measured::label));
    header.extend(extra.iter().map(|(h, _)| h.clone()));
    t.set_header(header);
    // The headline first: what users feel, the whole job timed from
    // outside. The seeds' throughput rows count the write phase only.
    let metrics: Vec<(&str, Metric)> = vec![
        (
            "elapsed, whole job (s)",
            Box::new(|m| format!("{:.2}", m.elapsed.as_secs_f64())),
        ),
        (
            "CPU user+sys, whole job (s)",
            Box::new(|m| format!("{:.2}", m.cpu().as_secs_f64())),
        ),
        (
            "CPU-s per GiB swapped out",
            Box::new(|m| format!("{:.2}", m.cpu_per_gib())),
        ),
        (
            "user time (s)",
            Box::new(|m| format!("{:.2}", m.user.as_secs_f64())),
        ),
        (
            "sys time (s)",
            Box::new(|m| format!("{:.2}", m.sys.as_secs_f64())),
        ),
        (
            "write phase: Total throughput (KB/s, seeds')",
            Box::new(|m| thousands(m.total_kbs as u64)),
        ),
        (
            "write phase: Avg throughput (KB/s)",
            Box::new(|m| thousands(m.avg_kbs() as u64)),
        ),
        (
            "write phase: Aggregate throughput (KB/s)",
            Box::new(|m| thousands(m.aggregate_kbs as u64)),
        ),
        ("zswpout", Box::new(|m| thousands(m.zswpout))),
        ("zswpin", Box::new(|m| thousands(m.zswpin))),
        ("pswpout", Box::new(|m| thousands(m.pswpout))),
        ("pswpin", Box::new(|m| thousands(m.pswpin))),
        ("rejects", Box::new(|m| thousands(m.rejects))),
        (
            "pool size peak (KB)",
            Box::new(|m| thousands(m.pool_peak_bytes / 1024)),
        ),
        (
            "every page verified",
            Box::new(|m| if m.verified { "yes" } else { "NO" }.into()),
        ),
    ];
    for (i, (name, f)) in metrics.iter().enumerate() {
        let mut row = vec![name.to_string()];
        row.extend(rows.iter().map(f));
        row.extend(
            extra
                .iter()
                .map(|(_, cells)| cells.get(i).cloned().unwrap_or_default()),
        );
        t.add_row(row);
    }
    for col in t.column_iter_mut().skip(1) {
        col.set_cell_alignment(CellAlignment::Right);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kbs: f64) -> Measured {
        Measured {
            system: System::Uzswap,
            compressor: "lz4".into(),
            folio: "64K".into(),
            procs: 4,
            total_kbs: kbs,
            aggregate_kbs: kbs / 2.0,
            elapsed: Duration::from_millis(1500),
            user: Duration::ZERO,
            sys: Duration::from_millis(250),
            zswpout: 1_234_567,
            zswpin: 0,
            pswpout: 0,
            pswpin: 0,
            rejects: 0,
            pool_peak_bytes: 10 << 20,
            verified: true,
        }
    }

    #[test]
    fn table_has_the_seed_rows_and_extra_columns() {
        let t = table(
            &[m(4000.0), m(2000.0)],
            &[("ratio".into(), vec!["2.00x".into()])],
        )
        .to_string();
        for row in [
            "elapsed, whole job (s)",
            "CPU-s per GiB swapped out",
            "write phase: Total throughput (KB/s, seeds')",
            "write phase: Avg throughput (KB/s)",
            "zswpout",
            "pswpin",
        ] {
            assert!(t.contains(row), "{t}");
        }
        assert!(t.contains("4,000") && t.contains("1,000") && t.contains("1,234,567"));
        assert!(t.contains("2.00x") && t.contains("uzswap lz4 64K"));
        let one = m(1.0);
        let gib = 1_234_567.0 * 4096.0 / (1u64 << 30) as f64;
        assert!((one.gib_swapped_out() - gib).abs() < 1e-9);
        assert!((one.cpu_per_gib() - 0.25 / gib).abs() < 1e-9);
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }
}
