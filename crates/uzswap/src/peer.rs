//! `uzswap bench usemem` (processes under `uzswap run`) and `uzswap bench
//! kernel-peer` (the same workload under the kernel's zswap and zram).

use crate::run::size_arg;
use clap::Args;
use runtime::launch;
use runtime::settings::{format_size, Settings};
use std::path::PathBuf;
use uzswap_bench::kernel::{self, KernelSwap};
use uzswap_bench::plot::Bar;
use uzswap_bench::usemem::{self, Measured, System, Workload};
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

fn check_verified(rows: &[Measured]) -> Result<(), BenchError> {
    match rows.iter().find(|m| !m.verified) {
        Some(m) => Err(BenchError::Params(format!(
            "{}: a page read back differed from the page written",
            m.label()
        ))),
        None => Ok(()),
    }
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
    let mut runs: Vec<Vec<Measured>> = Vec::new();
    for _ in 0..reps {
        for (i, m) in usemem::run(&params, &progress)?.into_iter().enumerate() {
            if runs.len() <= i {
                runs.push(Vec::new());
            }
            runs[i].push(m);
        }
    }
    progress.finish();
    let rows = medians(runs);
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
    check_verified(&rows)
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
}

/// The run with the median whole-job elapsed time of each configuration's
/// runs.
fn medians(runs: Vec<Vec<Measured>>) -> Vec<Measured> {
    runs.into_iter()
        .filter_map(|mut r| {
            r.sort_by_key(|m| m.elapsed);
            let verified = r.iter().all(|m| m.verified);
            let mut mid = r.get(r.len() / 2).cloned()?;
            mid.verified = verified;
            Some(mid)
        })
        .collect()
}

/// uzswap against kernel zswap (same compressor) and zram: the whole-job
/// ratios with their goals, then the seeds' write-phase ratio, labelled.
fn print_ratios(rows: &[Measured]) {
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    let line = |what: &str, u: &Measured, k: &Measured, elapsed_goal: &str| {
        println!(
            "  {what:<26} elapsed {:.2}x (goal {elapsed_goal}), CPU-s/GiB {:.2}x (goal <= 1.0x); write-phase Total {:.2}x (seeds' metric, not the goal)",
            ratio(u.elapsed.as_secs_f64(), k.elapsed.as_secs_f64()),
            ratio(u.cpu_per_gib(), k.cpu_per_gib()),
            ratio(u.total_kbs, k.total_kbs),
        );
    };
    println!("uzswap / kernel, whole job (lower is better):");
    for u in rows.iter().filter(|m| m.system == System::Uzswap) {
        if let Some(k) = rows
            .iter()
            .find(|k| k.system == System::KernelZswap && k.compressor == u.compressor)
        {
            line(&format!("{} vs zswap", u.compressor), u, k, "<= 0.67x");
        }
        for z in rows.iter().filter(|z| z.system == System::KernelZram) {
            line(
                &format!("{} vs zram {}", u.compressor, z.compressor),
                u,
                z,
                "<= 1.0x",
            );
        }
    }
}

enum PeerRun {
    Uzswap(Settings),
    Kernel(KernelSwap),
}

pub fn kernel_peer(a: &KernelPeerArgs) -> Result<(), BenchError> {
    let w = a.workload.workload()?;
    let library = library()?;
    let mut configs = Vec::new();
    for c in &a.compressors {
        // Side by side: uzswap, then the kernel, for each compressor.
        let settings = Settings {
            limit_bytes: a.workload.limit(),
            compressor: c.parse().map_err(|e| BenchError::Params(format!("{e}")))?,
            folio_bytes: a.folio,
            parallel: a.parallel,
            swapfile_bytes: (w.footprint() * 2).max(64 << 20),
            ..Settings::default()
        };
        settings
            .validate()
            .map_err(|e| BenchError::Params(e.to_string()))?;
        configs.push((format!("uzswap {c}"), PeerRun::Uzswap(settings)));
        configs.push((
            format!("kernel zswap {c}"),
            PeerRun::Kernel(KernelSwap::Zswap(c.clone())),
        ));
    }
    for z in a.zram.iter().filter(|z| *z != "none") {
        configs.push((
            format!("kernel zram {z}"),
            PeerRun::Kernel(KernelSwap::Zram(z.clone())),
        ));
    }
    let reps = a.workload.reps;
    let progress = Progress::new("bench kernel-peer", (configs.len() * reps) as u64);
    let mut runs: Vec<Vec<Measured>> = configs.iter().map(|_| Vec::new()).collect();
    for rep in 0..reps {
        for (i, (name, cfg)) in configs.iter().enumerate() {
            let m = match cfg {
                PeerRun::Uzswap(s) => usemem::run_uzswap(&w, s, &library)?,
                PeerRun::Kernel(k) => kernel::run_kernel(&w, k, a.workload.limit(), a.folio)?,
            };
            runs[i].push(m);
            progress.step(&format!("{name}, run {}", rep + 1));
        }
    }
    progress.finish();
    let rows = medians(runs);
    println!(
        "usemem{}: {}, {} folios; uzswap: one limit shared by the processes, kernel: one memcg; median of {reps} runs",
        a.workload.procs,
        a.workload.describe(),
        format_size(a.folio),
    );
    println!("{}", usemem::table(&rows, &[]));
    print_ratios(&rows);
    draw(
        a.workload.plot_path("kernel-peer.png"),
        "usemem: uzswap vs the kernel",
        &rows,
    );
    check_verified(&rows)
}
