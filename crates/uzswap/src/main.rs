//! `uzswap`: the command line of the uzswap workspace.
//!
//! With no arguments it runs the default job, with built-in parameters
//! (`default_job`): a short `bench usemem` (2 processes of 96 MiB under a
//! shared 96 MiB limit, lz4 and lzo-rle, 4K/64K/2M folios), then short runs
//! of the lockless `zs_free` experiment, the pool density report and the
//! comparison of swap-in readahead policies (the bypass for pooled pages
//! against mainline; docs/seeds.md).

mod attach;
mod compat;
mod peer;
mod replay;
mod run;

use clap::{Args, Parser, Subcommand};
use compress::corpus::Corpus;
use std::path::PathBuf;
use std::process::ExitCode;
use uzswap_bench::{
    compression, density, readahead, store, usemem_threads, zsfree, BenchError, Progress,
};

#[derive(Parser, Debug)]
#[command(
    name = "uzswap",
    version,
    about = "User-space zswap/zsmalloc: benchmarks and tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Folder where benchmarks draw their PNG charts.
    #[arg(long, global = true, default_value = "uzswap-plots")]
    plot_dir: PathBuf,
    /// Draw no charts.
    #[arg(long, global = true)]
    no_plot: bool,
}

/// Where charts go (`None`: none drawn); set once from the flags.
static PLOT_DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// Draws `bars` to `PLOT_DIR/name`, if charts are on; a failure is a
/// warning, not an error (the table is the result).
pub(crate) fn chart(name: &str, title: &str, unit: &str, bars: &[uzswap_bench::plot::Bar]) {
    chart_at(plot_path(name), title, unit, bars);
}

/// The path of chart `name`, if charts are on.
pub(crate) fn plot_path(name: &str) -> Option<PathBuf> {
    PLOT_DIR.get().cloned().flatten().map(|d| d.join(name))
}

pub(crate) fn chart_at(
    path: Option<PathBuf>,
    title: &str,
    unit: &str,
    bars: &[uzswap_bench::plot::Bar],
) {
    let Some(path) = path else {
        return;
    };
    match uzswap_bench::plot::bars(&path, title, unit, bars) {
        Ok(()) => println!("chart: {}\n", path.display()),
        Err(e) => eprintln!("uzswap: no chart: {e}"),
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a program with its large allocations paged through uzswap:
    /// `uzswap run --limit 512M -- CMD ARGS…`
    Run(run::RunArgs),
    /// Page a running process from outside, until it exits or Ctrl-C
    /// (or `uzswap detach PID`), which gives every page back:
    /// `uzswap attach --limit 128M PID`
    Attach(attach::AttachArgs),
    /// End `uzswap attach PID`: every page goes back, the process runs on.
    Detach {
        /// The attached process's id.
        pid: u32,
    },
    /// Page a trace recorded by `uzswap run --record FILE` again, without
    /// the program, under the runtime's own protocol and reference
    /// policies (LRU, FIFO, CLOCK, Belady's optimum), at the recorded limit
    /// and a sweep of others: `uzswap replay FILE`
    Replay(replay::ReplayArgs),
    /// Live counters of a program running under `uzswap run`.
    Stats {
        /// Its process id.
        pid: u32,
        /// `name value` lines instead of a table.
        #[arg(long)]
        raw: bool,
    },
    /// Run one of the seeds' experiments.
    #[command(subcommand)]
    Bench(Bench),
    /// Page corpora: capture real processes' memory.
    #[command(subcommand)]
    Corpus(CorpusCmd),
    /// Self-checking soak of the runtime: versioned pages checked at every
    /// read while evictions, aging, compaction and injected swap-file
    /// faults (EIO, ENOSPC, flipped bits) run; every compressor and folio
    /// size. Fails on any mismatch.
    Soak(SoakArgs),
    /// Compatibility suite: real programs (python3, numpy, node, java,
    /// sqlite3, sort, xz, zstd, gcc, redis, usemem) run plain and under
    /// `uzswap run` with a limit 4x below their footprint, outputs compared
    /// byte for byte; as root also as user nobody.
    Compat(compat::CompatArgs),
}

#[derive(Args, Debug)]
struct SoakArgs {
    /// How long in all, in minutes (split over compressors x folio sizes).
    #[arg(long, default_value_t = 2.0)]
    minutes: f64,
    /// Writer threads.
    #[arg(long, default_value_t = 3)]
    threads: usize,
    /// Seed of the page contents, the accesses and the injected faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Subcommand, Debug)]
enum CorpusCmd {
    /// Add a process's resident anonymous pages to a corpus file.
    Capture(CaptureArgs),
    /// List a corpus file's groups.
    Show {
        /// The corpus file.
        file: PathBuf,
    },
}

#[derive(Args, Debug)]
struct CaptureArgs {
    /// Process to read (needs ptrace access: same user or root).
    #[arg(long)]
    pid: u32,
    /// Most pages to take, spread evenly over the process's memory.
    #[arg(long, default_value_t = 256)]
    pages: usize,
    /// Group label; default `anon:<command name>`.
    #[arg(long)]
    label: Option<String>,
    /// Corpus file to create, or to extend if it exists.
    #[arg(long, short)]
    out: PathBuf,
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// Concurrent zs_free, pool lock vs class lock only (class index in the
    /// handle).
    Zsfree(ZsFreeArgs),
    /// Bytes per object the pool costs: filled, fragmented, compacted.
    Density(DensityArgs),
    /// Compressors on a page corpus: GB/s, ratio, batched vs sequential.
    Compress(CompressArgs),
    /// zswap store throughput, batched (8 pages a compress call) vs page at
    /// a time.
    #[command(alias = "batching")]
    Store(StoreArgs),
    /// Swap-in readahead policies on a fault trace (mainline, no readahead
    /// for pooled pages, disk-only with fault-around).
    Readahead(ReadaheadArgs),
    /// The design lab's fidelity: programs of the compatibility suite run
    /// without and with `--record` (its overhead), their traces replayed
    /// at the recorded limit (predicted against the run's counters) and
    /// swept over limits under every policy.
    Replay(compat::replay::ReplayBenchArgs),
    /// usemem: processes under `uzswap run` writing more memory than the
    /// limit, per compressor and folio size (usemem30 of the compress
    /// batching posts, scaled down).
    Usemem(peer::UsememArgs),
    /// usemem under uzswap and under the kernel's zswap and zram, side by
    /// side (root).
    KernelPeer(peer::KernelPeerArgs),
    /// usemem with threads of this process on runtime regions (no
    /// LD_PRELOAD): per-page vs batched store.
    UsememThreads(UsememThreadsArgs),
    /// What the syscall guard costs a whole program: dd plain, with kernel
    /// faults handled, and with the guard (--user-mode-only), interleaved.
    Syscalls(SyscallsArgs),
    /// What the allocation hooks cost: a loop of small frees and mallocs,
    /// plain and under `uzswap run` (defaults, --no-small-objects,
    /// --small-objects), with few and with many small blocks held,
    /// interleaved.
    Malloc(MallocArgs),
    /// Real programs (python, numpy, sort, xz, sqlite, redis) plain, under
    /// uzswap and under kernel zswap in a memcg of the same limit and
    /// compressor, interleaved (root).
    Programs(compat::bench::ProgramsArgs),
    /// Random page access over a buffer 2x and 4x the limit: elapsed, CPU
    /// and fault latency (p50, p99) under uzswap (pool counted and not,
    /// faults served in-thread and by the handler thread) beside kernel
    /// zswap and zram in a memcg of the same limit, interleaved (root)
    Faults(compat::faults::FaultsArgs),
    /// Memory saved against slowdown: programs with a hot set (a python
    /// service, redis) and of the compatibility suite, plain, under `uzswap
    /// run` with no limit and --max-slowdown 10%, and under kernel zswap at
    /// a sweep of fixed memcg limits (the best one: the oracle);
    /// interleaved (root for the kernel's runs)
    Savings(compat::savings::SavingsArgs),
    /// Two builds of uzswap side by side on the compatibility suite's
    /// programs: this one and `--baseline` (another commit's `uzswap`),
    /// interleaved; median elapsed and CPU time under each and the
    /// speed-up, every output checked against plain by each build's suite
    Ab(compat::ab::AbArgs),
}

#[derive(Args, Debug)]
struct SyscallsArgs {
    /// Blocks dd copies with bs=4k (small buffers: no region).
    #[arg(long, default_value_t = 2_000_000)]
    count_4k: u64,
    /// Blocks dd copies with bs=1M (the buffer is a region).
    #[arg(long, default_value_t = 40_000)]
    count_1m: u64,
    /// Rounds of the three runs (medians are reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Also a statically linked copy program (paged from outside; its
    /// guard is the out-of-process one): bs=4k, this many blocks.
    #[arg(long)]
    with_static: Option<u64>,
}

#[derive(Args, Debug)]
struct MallocArgs {
    /// MiB of 64-byte blocks held before the loop, one shape each (0: the
    /// small-object heap waits; past 4: it has started).
    #[arg(long, value_delimiter = ',', default_value = "0,16")]
    held_mib: Vec<u64>,
    /// `free` and `malloc` pairs of the loop.
    #[arg(long, default_value_t = 20_000_000)]
    pairs: u64,
    /// Rounds of the four runs (medians are reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
}

#[derive(Args, Debug)]
struct UsememThreadsArgs {
    /// Writer threads.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// MiB each thread writes.
    #[arg(long, default_value_t = 64)]
    mib_per_thread: usize,
    /// Resident limit (memory.high), MiB.
    #[arg(long, default_value_t = 64)]
    limit_mib: usize,
    /// Pages evicted as one folio: 1 (4K), 16 (64K) or 512 (2M).
    #[arg(long, default_value_t = 16)]
    folio_pages: usize,
    /// Compressors, comma-separated; each runs per-page and batched.
    #[arg(long, value_delimiter = ',', default_value = "lz4,deflate:6")]
    compressors: Vec<compress::Algorithm>,
    /// Use the sequential compressor backend instead of the parallel one.
    #[arg(long)]
    sequential: bool,
    /// Skip reading the memory back and checking it.
    #[arg(long)]
    no_read_back: bool,
}

#[derive(Args, Debug)]
struct StoreArgs {
    /// Compressors, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "lz4,zstd:3,deflate:6,lzo,lzo-rle"
    )]
    compressors: Vec<compress::Algorithm>,
    /// Pages per folio (16 = 64K folios, 512 = PMD folios).
    #[arg(long, default_value_t = 16)]
    folio_pages: usize,
    /// Pages swapped out per measurement.
    #[arg(long, default_value_t = 16384)]
    pages: usize,
    /// Repetitions per variant (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
}

#[derive(Args, Debug)]
struct ReadaheadArgs {
    /// The process's size, in pages.
    #[arg(long, default_value_t = 16384)]
    pages: usize,
    /// Pages it may keep resident.
    #[arg(long, default_value_t = 6144)]
    resident: usize,
    /// Page accesses in the trace.
    #[arg(long, default_value_t = 200_000)]
    accesses: usize,
    /// zswap pool limit, in percent of the process's size.
    #[arg(long, default_value_t = 15)]
    pool_percent: u32,
    /// vm.page-cluster.
    #[arg(long, default_value_t = 3)]
    page_cluster: u32,
}

#[derive(Args, Debug)]
struct CompressArgs {
    /// Corpus file (default: the built-in sample plus synthetic classes).
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// Compressors, comma-separated (lz4, lzo, lzo-rle, zstd[:N], deflate[:N]).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "lz4,zstd:3,deflate:6,lzo,lzo-rle"
    )]
    compressors: Vec<compress::Algorithm>,
    /// Worker threads of the batching backend.
    #[arg(long)]
    workers: Option<usize>,
    /// Milliseconds per measurement.
    #[arg(long, default_value_t = 300)]
    ms: u64,
    /// Repetitions of each batching measurement (median reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
}

#[derive(Args, Debug)]
struct ZsFreeArgs {
    /// MiB of compressed objects each thread stores before freeing.
    #[arg(long, default_value_t = 256)]
    mib_per_thread: usize,
    /// Thread counts to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Repetitions per variant (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Keep freed pages resident: time the allocator's locks without the
    /// cost of giving memory back to the OS.
    #[arg(long)]
    keep_resident: bool,
}

#[derive(Args, Debug)]
struct DensityArgs {
    /// MiB of compressed objects to store.
    #[arg(long, default_value_t = 256)]
    mib: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let _ = PLOT_DIR.set((!cli.no_plot).then(|| cli.plot_dir.clone()));
    let result = match cli.command {
        Some(Command::Run(a)) => {
            return match run::run(&a) {
                Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
                Err(e) => {
                    eprintln!("uzswap: {e}");
                    ExitCode::from(125)
                }
            }
        }
        Some(Command::Attach(a)) => {
            return match attach::attach(&a) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("uzswap: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Detach { pid }) => {
            return match attach::detach(pid) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("uzswap: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Stats { pid, raw }) => {
            return match run::stats(pid, raw) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("uzswap: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Replay(a)) => {
            return match replay::replay(&a) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("uzswap replay: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Compat(a)) => {
            return match compat::run(&a) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("uzswap compat: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Bench(Bench::Programs(a))) => {
            return match compat::bench::run(&a) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("uzswap bench programs: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Bench(Bench::Faults(a))) => {
            return match compat::faults::run(&a) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("uzswap bench faults: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Bench(Bench::Replay(a))) => {
            return match compat::replay::run(&a) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("uzswap bench replay: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Bench(Bench::Ab(a))) => {
            return match compat::ab::run(&a) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("uzswap bench ab: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Bench(Bench::Savings(a))) => {
            return match compat::savings::run(&a) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("uzswap bench savings: {e}");
                    ExitCode::from(2)
                }
            }
        }
        None => default_job(),
        Some(Command::Bench(Bench::Zsfree(a))) => bench_zsfree(&a),
        Some(Command::Bench(Bench::Density(a))) => bench_density(&a),
        Some(Command::Bench(Bench::Compress(a))) => bench_compress(&a),
        Some(Command::Bench(Bench::Store(a))) => bench_store(&a),
        Some(Command::Bench(Bench::Readahead(a))) => bench_readahead(&a),
        Some(Command::Bench(Bench::Syscalls(a))) => bench_syscalls(&a),
        Some(Command::Bench(Bench::Malloc(a))) => bench_malloc(&a),
        Some(Command::Bench(Bench::Usemem(a))) => peer::usemem(&a),
        Some(Command::Bench(Bench::KernelPeer(a))) => peer::kernel_peer(&a),
        Some(Command::Bench(Bench::UsememThreads(a))) => bench_usemem_threads(&a),
        Some(Command::Corpus(CorpusCmd::Capture(a))) => corpus_capture(&a),
        Some(Command::Corpus(CorpusCmd::Show { file })) => corpus_show(&file),
        Some(Command::Soak(a)) => soak(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("uzswap: {e}");
            ExitCode::FAILURE
        }
    }
}

fn soak(a: &SoakArgs) -> Result<(), BenchError> {
    if a.minutes.is_nan() || a.minutes <= 0.0 {
        return Err(BenchError::Params(format!(
            "--minutes {}: more than 0",
            a.minutes
        )));
    }
    let params = uzswap_bench::soak::SoakParams {
        duration: std::time::Duration::from_secs_f64(a.minutes * 60.0),
        threads: a.threads,
        seed: a.seed,
        ..uzswap_bench::soak::SoakParams::default()
    };
    let rounds = (params.compressors.len() * params.folios.len()) as u64;
    println!(
        "uzswap soak: {:.1} min, {} writer threads x {} pages under a {}-page limit, {} rounds",
        a.minutes, params.threads, params.pages_per_thread, params.limit_pages, rounds
    );
    let progress = Progress::new("soak", rounds);
    let report = uzswap_bench::soak::soak(&params, &progress)?;
    progress.finish();
    println!("{}", report.table());
    println!(
        "pages verified: {}  faults injected: {}  mismatches: {}",
        report.pages_verified(),
        report.faults_injected(),
        report.mismatches()
    );
    for r in report.rounds.iter().filter(|r| r.mismatches > 0) {
        for m in &r.first_mismatches {
            eprintln!(
                "uzswap soak: MISMATCH ({} {}K): {m}",
                r.compressor,
                r.folio_pages * 4
            );
        }
    }
    if report.mismatches() > 0 {
        return Err(BenchError::Params(format!(
            "{} pages read back differently from what was written",
            report.mismatches()
        )));
    }
    Ok(())
}

fn default_job() -> Result<(), BenchError> {
    println!("uzswap default job: a short usemem run under uzswap, and short runs of the seed-001 zs_free");
    println!("experiment, pool density and seed 002's readahead comparison (see `uzswap --help` for every");
    println!(
        "benchmark and its flags; `sudo uzswap bench kernel-peer` compares with the kernel)\n"
    );
    peer::usemem(&peer::UsememArgs {
        workload: peer::WorkloadArgs {
            procs: 2,
            size: 96 << 20,
            limit: Some(96 << 20),
            no_read_back: false,
            hold_ms: 0,
            plot: None,
            reps: 1,
        },
        compressors: vec!["lz4".into(), "lzo-rle".into()],
        folios: vec![4 << 10, 64 << 10, 2 << 20],
        parallel: false,
    })?;
    println!();
    bench_zsfree(&ZsFreeArgs {
        mib_per_thread: 64,
        threads: vec![1, 2, 4],
        reps: 15,
        keep_resident: false,
    })?;
    bench_density(&DensityArgs { mib: 64 })?;
    println!();
    bench_readahead(&ReadaheadArgs {
        pages: 8192,
        resident: 3072,
        accesses: 60_000,
        pool_percent: 15,
        page_cluster: 3,
    })
}

fn bench_zsfree(a: &ZsFreeArgs) -> Result<(), BenchError> {
    let params = zsfree::ZsFreeParams {
        bytes_per_thread: a.mib_per_thread << 20,
        threads: a.threads.clone(),
        reps: a.reps,
        keep_resident: a.keep_resident,
    };
    let progress = Progress::new(
        "bench zsfree",
        (params.threads.len() * params.reps * 2) as u64,
    );
    let report = zsfree::run(&params, &progress)?;
    progress.finish();
    println!(
        "zs_free of {} MiB per thread, all threads freeing at once; median of {} reps; {} CPUs",
        a.mib_per_thread,
        a.reps,
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!("Base = pool read lock + release under class lock; Patched = seed 001 (class lock only, release after)");
    if a.keep_resident {
        println!("freed pages kept resident (no MADV_DONTNEED while timing)");
    }
    println!("{}\n", report.table());
    chart(
        "zsfree.png",
        "seed 001: zs_free, all threads freeing at once",
        "free phase, ms (lower is better)",
        &uzswap_bench::plot::charts::zsfree(&report),
    );
    Ok(())
}

fn bench_density(a: &DensityArgs) -> Result<(), BenchError> {
    let progress = Progress::new("bench density", 3);
    let rows = density::run(&density::DensityParams { bytes: a.mib << 20 }, &progress)?;
    progress.finish();
    println!("pool density, {} MiB of typical compressed objects", a.mib);
    println!("{}", density::table(&rows));
    Ok(())
}

fn bench_compress(a: &CompressArgs) -> Result<(), BenchError> {
    let corpus = match &a.corpus {
        Some(path) => Corpus::load(path)?,
        None => Corpus::sample()?,
    };
    let mut params = compression::CompressParams {
        algorithms: a.compressors.clone(),
        min_time: std::time::Duration::from_millis(a.ms),
        reps: a.reps,
        ..compression::CompressParams::default()
    };
    if let Some(w) = a.workers {
        params.parallel.workers = w;
    }
    let progress = Progress::new("bench compress", (params.algorithms.len() * 2) as u64);
    let report = compression::run(&corpus, &params, &progress)?;
    progress.finish();
    let groups: Vec<String> = corpus
        .groups
        .iter()
        .map(|g| format!("{} ({})", g.label, g.len()))
        .collect();
    println!("corpus: {} pages: {}", report.pages, groups.join(", "));
    println!("one thread; incompressible pages count as 4096 B (stored raw)");
    println!("{}\n", report.codec_table());
    println!(
        "zswap store pattern: batches of {} pages, submit + wait",
        compress::ZSWAP_MAX_BATCH_SIZE
    );
    println!("{}", report.batching_table());
    chart(
        "compress.png",
        "seeds 003/004: zswap's store pattern, sequential vs batched",
        "GB/s",
        &uzswap_bench::plot::charts::compress(&report),
    );
    Ok(())
}

fn corpus_capture(a: &CaptureArgs) -> Result<(), BenchError> {
    let label = a.label.clone().unwrap_or_else(|| {
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", a.pid)).unwrap_or_default();
        format!("anon:{}", comm.trim())
    });
    let group = Corpus::capture(a.pid, a.pages, &label)?;
    let mut corpus = if a.out.exists() {
        Corpus::load(&a.out)?
    } else {
        Corpus::default()
    };
    eprintln!(
        "captured {} pages of process {} as {:?}",
        group.len(),
        a.pid,
        group.label
    );
    corpus.groups.push(group);
    corpus.save(&a.out)?;
    corpus_show(&a.out)
}

fn corpus_show(file: &std::path::Path) -> Result<(), BenchError> {
    let corpus = Corpus::load(file)?;
    println!("{}: {} pages", file.display(), corpus.page_count());
    for g in &corpus.groups {
        println!("  {:<24} {:>6} pages", g.label, g.len());
    }
    Ok(())
}

fn bench_store(a: &StoreArgs) -> Result<(), BenchError> {
    let params = store::StoreParams {
        algorithms: a.compressors.clone(),
        folio_pages: a.folio_pages,
        pages: a.pages,
        reps: a.reps,
    };
    let progress = Progress::new("bench store", (params.algorithms.len() * 2) as u64);
    let rows = store::run(&Corpus::sample()?, &params, &progress)?;
    progress.finish();
    println!(
        "zswap store of {} pages in {} KiB folios (median of {} reps, variants interleaved)",
        a.pages,
        a.folio_pages * 4,
        a.reps
    );
    println!("{}", store::table(&rows, a.folio_pages));
    chart(
        "store.png",
        "seeds 000/003/004: zswap store, per page vs batched",
        "GB/s",
        &uzswap_bench::plot::charts::store(&rows),
    );
    Ok(())
}

fn bench_malloc(a: &MallocArgs) -> Result<(), BenchError> {
    use uzswap_bench::malloc::{self, MallocParams};
    let work = std::env::temp_dir().join(format!("uzswap-bench-malloc-{}", std::process::id()));
    let program = malloc::build(&work);
    let params = program.map(|program| MallocParams {
        held_mib: a.held_mib.clone(),
        pairs: a.pairs.max(1),
        reps: a.reps.max(1),
        program,
    });
    let rows = params.and_then(|params| {
        let progress = Progress::new(
            "bench malloc",
            (params.held_mib.len() * params.reps * malloc::Mode::ALL.len()) as u64,
        );
        let rows = malloc::run(&params, &progress)?;
        progress.finish();
        Ok(rows)
    });
    let _ = std::fs::remove_dir_all(&work);
    let rows = rows?;
    println!(
        "mallocloop: {} frees and mallocs of 16 to 215 bytes through a ring of 64, timed by the program; median of {} interleaved rounds",
        a.pairs,
        a.reps.max(1)
    );
    println!("{}", malloc::table(&rows));
    Ok(())
}

fn bench_syscalls(a: &SyscallsArgs) -> Result<(), BenchError> {
    use uzswap_bench::syscalls::{self, Shape, SyscallsParams};
    let exe = std::env::current_exe().map_err(|e| BenchError::Params(e.to_string()))?;
    let mut params = SyscallsParams {
        shapes: vec![
            Shape {
                bs: "4k",
                count: a.count_4k,
                static_program: None,
            },
            Shape {
                bs: "1M",
                count: a.count_1m,
                static_program: None,
            },
        ],
        reps: a.reps.max(1),
        library: launch::find_library(&exe).map_err(|e| BenchError::Params(e.to_string()))?,
    };
    let work = std::env::temp_dir().join(format!("uzswap-bench-syscalls-{}", std::process::id()));
    if let Some(count) = a.with_static {
        params.shapes.push(Shape {
            bs: "4k",
            count,
            static_program: Some(syscalls::build_static(&work)?),
        });
    }
    let progress = Progress::new(
        "bench syscalls",
        (params.shapes.len() * params.reps * syscalls::Mode::ALL.len()) as u64,
    );
    let rows = syscalls::run(&params, &progress);
    let _ = std::fs::remove_dir_all(&work);
    let rows = rows?;
    progress.finish();
    println!(
        "dd if=/dev/zero of=/dev/null, median of {} interleaved rounds; CPU = user + system of every thread, from outside",
        params.reps
    );
    println!("{}", syscalls::table(&rows));
    Ok(())
}

fn bench_readahead(a: &ReadaheadArgs) -> Result<(), BenchError> {
    let params = readahead::ReadaheadParams {
        pages: a.pages,
        resident: a.resident,
        accesses: a.accesses,
        pool_percent: a.pool_percent,
        page_cluster: a.page_cluster,
        ..readahead::ReadaheadParams::default()
    };
    let progress = Progress::new("bench readahead", readahead::POLICIES.len() as u64);
    let rows = readahead::run(&params, &progress)?;
    progress.finish();
    println!(
        "fault trace: {} pages, {} resident, {} accesses, zswap pool {}% of the process, page-cluster {}",
        a.pages, a.resident, a.accesses, a.pool_percent, a.page_cluster
    );
    println!("{}", readahead::table(&rows));
    chart(
        "readahead.png",
        "seed 002: pages read from zswap per readahead policy",
        "zswpin (lower is better)",
        &uzswap_bench::plot::charts::readahead(&rows),
    );
    Ok(())
}

fn bench_usemem_threads(a: &UsememThreadsArgs) -> Result<(), BenchError> {
    let params = usemem_threads::UsememThreadsParams {
        threads: a.threads,
        bytes_per_thread: a.mib_per_thread << 20,
        limit_bytes: a.limit_mib << 20,
        folio_pages: a.folio_pages,
        algorithms: a.compressors.clone(),
        parallel: !a.sequential,
        read_back: !a.no_read_back,
    };
    let progress = Progress::new("bench usemem-threads", (params.algorithms.len() * 2) as u64);
    let rows = usemem_threads::run(&params, &progress)?;
    progress.finish();
    println!(
        "usemem{}: {} MiB each, limit {} MiB, {} KiB folios, {} compressor backend{}",
        a.threads,
        a.mib_per_thread,
        a.limit_mib,
        a.folio_pages * 4,
        if a.sequential {
            "sequential"
        } else {
            "parallel"
        },
        if a.no_read_back {
            ""
        } else {
            ", every page read back and checked"
        }
    );
    println!("{}", usemem_threads::table(&rows));
    Ok(())
}
