//! Flags and output of `uzswap bench usemem` (processes under `uzswap
//! run`) and `uzswap bench kernel-peer` (the same workload under the
//! kernel's zswap and zram). The experiments are `uzswap_bench::peer`'s.

use crate::run::size_arg;
use clap::Args;
use launch::format_size;
use std::path::PathBuf;
use uzswap_bench::peer::{self, KernelPeerParams};
use uzswap_bench::plot::Bar;
use uzswap_bench::usemem::{self, Measured, Workload};
use uzswap_bench::{BenchError, Progress};

/// The workload, as flags.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Processes, each mapping and writing its own memory (default: one
    /// per CPU, so that no process runs alone while others wait).
    #[arg(long, default_value_t = default_procs())]
    pub procs: usize,
    /// Bytes each process writes.
    #[arg(long, default_value = "512M", value_parser = size_arg)]
    pub size: usize,
    /// Memory limit all processes share (memcg memory.high's role);
    /// default: half the footprint.
    #[arg(long, value_parser = size_arg)]
    pub limit: Option<usize>,
    /// Skip reading the memory back and checking every page.
    #[arg(long)]
    pub no_read_back: bool,
    /// Milliseconds each process keeps its memory after writing.
    #[arg(long, default_value_t = 0)]
    pub hold_ms: u64,
    /// Where to draw the throughput chart (PNG); default: in --plot-dir.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Runs of each configuration, interleaved; the run with the median
    /// throughput is shown.
    #[arg(long, default_value_t = 1)]
    pub reps: usize,
}

fn default_procs() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from)
}

impl WorkloadArgs {
    fn limit(&self) -> usize {
        self.limit.unwrap_or(self.procs * self.size / 2)
    }

    fn workload(&self) -> Result<Workload, BenchError> {
        if self.procs == 0 || self.size < 4096 || self.reps == 0 {
            return Err(BenchError::Params(
                "--procs >= 1, --reps >= 1 and --size >= 4K".into(),
            ));
        }
        let exe = std::env::current_exe().map_err(|e| BenchError::Params(e.to_string()))?;
        Ok(Workload {
            procs: self.procs,
            bytes_per_proc: self.size,
            read_back: !self.no_read_back,
            hold_ms: self.hold_ms,
            worker: Workload::find_worker(&exe)?,
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} processes x {}, limit {} shared{}",
            self.procs,
            format_size(self.size),
            format_size(self.limit()),
            if self.no_read_back {
                ""
            } else {
                ", every page read back and checked"
            }
        )
    }

    fn plot_path(&self, default: &str) -> Option<PathBuf> {
        self.plot.clone().or_else(|| crate::plot_path(default))
    }
}

#[derive(Args, Debug)]
pub struct UsememArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Compressors, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "lz4,lzo-rle")]
    pub compressors: Vec<String>,
    /// Folio sizes evicted at once, comma-separated: 4K, 64K, 2M.
    #[arg(long, value_delimiter = ',', default_value = "4K,64K,2M", value_parser = size_arg)]
    pub folios: Vec<usize>,
    /// Compress each folio's batch with worker threads.
    #[arg(long)]
    pub parallel: bool,
}

fn library() -> Result<PathBuf, BenchError> {
    let exe = std::env::current_exe().map_err(|e| BenchError::Params(e.to_string()))?;
    launch::find_library(&exe).map_err(|e| BenchError::Params(e.to_string()))
}

fn bar(m: &Measured) -> Bar {
    Bar {
        label: m.label(),
        value: m.elapsed.as_secs_f64(),
        group: m.system.to_string(),
    }
}

fn draw(path: Option<PathBuf>, title: &str, rows: &[Measured]) {
    let bars: Vec<Bar> = rows.iter().map(bar).collect();
    let unit = "whole-job elapsed time, s (write, read-back and exit; lower is better)";
    crate::chart_at(path, title, unit, &bars);
}

pub fn usemem(a: &UsememArgs) -> Result<(), BenchError> {
    let params = usemem::UsememParams {
        workload: a.workload.workload()?,
        limit_bytes: a.workload.limit(),
        compressors: a.compressors.clone(),
        folios: a.folios.clone(),
        parallel: a.parallel,
        library: library()?,
    };
    let reps = a.workload.reps;
    let progress = Progress::new(
        "bench usemem",
        (params.compressors.len() * params.folios.len() * reps) as u64,
    );
    let rows = peer::usemem(&params, reps, &progress)?;
    progress.finish();
    println!(
        "usemem{} under uzswap: {}",
        a.workload.procs,
        a.workload.describe(),
    );
    println!("{}", usemem::table(&rows, &[]));
    draw(
        a.workload.plot_path("usemem.png"),
        "usemem under uzswap",
        &rows,
    );
    peer::check_verified(&rows)
}

#[derive(Args, Debug)]
pub struct KernelPeerArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Compressors, each run under uzswap and under kernel zswap (the
    /// kernel's must be in /proc/crypto).
    #[arg(long, value_delimiter = ',', default_value = "lzo-rle,lzo,deflate")]
    pub compressors: Vec<String>,
    /// zram algorithms to run as a kernel swap device too ("none": skip).
    #[arg(long, value_delimiter = ',', default_value = "lzo-rle")]
    pub zram: Vec<String>,
    /// Folio size, for uzswap's eviction and the kernel's mTHP setting.
    #[arg(long, default_value = "64K", value_parser = size_arg)]
    pub folio: usize,
    /// Compress each folio's batch with worker threads (uzswap).
    #[arg(long)]
    pub parallel: bool,
    /// uzswap's pool limit (as `uzswap run --pool-limit`); a small one
    /// forces writeback to the swap file.
    #[arg(long, value_parser = size_arg)]
    pub pool_limit: Option<usize>,
    /// Also run uzswap with an unencrypted swap file (`uzswap run
    /// --no-encrypt-swap`) and print what encryption costs.
    #[arg(long)]
    pub plain_swap_too: bool,
}

/// uzswap against kernel zswap (same compressor) and zram: the whole-job
/// ratios with their goals, then the seeds' write-phase ratio, labelled.
fn print_ratios(rows: &[Measured]) {
    println!("uzswap / kernel, whole job (lower is better):");
    for r in peer::ratios(rows) {
        println!(
            "  {:<26} elapsed {:.2}x (goal {}), CPU-s/GiB {:.2}x (goal <= 1.0x); write-phase Total {:.2}x (seeds' metric, not the goal)",
            r.what, r.elapsed, r.elapsed_goal, r.cpu_per_gib, r.write_phase_total,
        );
    }
}

pub fn kernel_peer(a: &KernelPeerArgs) -> Result<(), BenchError> {
    let params = KernelPeerParams {
        workload: a.workload.workload()?,
        limit_bytes: a.workload.limit(),
        compressors: a.compressors.clone(),
        zram: a.zram.iter().filter(|z| *z != "none").cloned().collect(),
        folio_bytes: a.folio,
        parallel: a.parallel,
        pool_limit_bytes: a.pool_limit,
        plain_swap_too: a.plain_swap_too,
        library: library()?,
        reps: a.workload.reps,
    };
    let progress = Progress::new("bench kernel-peer", params.runs() as u64);
    let rows = peer::kernel_peer(&params, &progress)?;
    progress.finish();
    println!(
        "usemem{}: {}, {} folios; uzswap: one limit shared by the processes, kernel: one memcg; median of {} runs",
        a.workload.procs,
        a.workload.describe(),
        format_size(a.folio),
        params.reps,
    );
    println!("{}", uzswap_bench::kernel::limit_rule());
    println!("{}", usemem::table(&rows, &[]));
    print_ratios(&rows);
    for (c, cpu, elapsed, written) in peer::encryption_costs(&rows) {
        println!(
            "  swap-file encryption, {c}: whole-job CPU {cpu:.3}x and elapsed {elapsed:.3}x of the plain swap file's ({written} pages written to the file; goal: CPU <= 1.05x)"
        );
    }
    draw(
        a.workload.plot_path("kernel-peer.png"),
        "usemem: uzswap vs the kernel",
        &rows,
    );
    peer::check_verified(&rows)
}
