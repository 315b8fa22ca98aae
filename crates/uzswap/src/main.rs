//! `uzswap`: the command line of the uzswap workspace.
//!
//! With no arguments it runs the default job: a short seed-001 `zs_free`
//! experiment and the density report, with built-in parameters.

use clap::{Args, Parser, Subcommand};
use std::process::ExitCode;
use uzswap_bench::{density, zsfree, BenchError, Progress};

#[derive(Parser, Debug)]
#[command(
    name = "uzswap",
    version,
    about = "User-space zswap/zsmalloc: benchmarks and tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one of the seeds' experiments.
    #[command(subcommand)]
    Bench(Bench),
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// Seed 001: concurrent zs_free, pool lock vs class lock only.
    Zsfree(ZsFreeArgs),
    /// Bytes per object the pool costs: filled, fragmented, compacted.
    Density(DensityArgs),
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
    let result = match cli.command {
        None => default_job(),
        Some(Command::Bench(Bench::Zsfree(a))) => bench_zsfree(&a),
        Some(Command::Bench(Bench::Density(a))) => bench_density(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("uzswap: {e}");
            ExitCode::FAILURE
        }
    }
}

fn default_job() -> Result<(), BenchError> {
    println!(
        "uzswap default job: short seed-001 zs_free run and pool density (see `uzswap --help`)\n"
    );
    bench_zsfree(&ZsFreeArgs {
        mib_per_thread: 64,
        threads: vec![1, 2, 4],
        reps: 3,
        keep_resident: false,
    })?;
    bench_density(&DensityArgs { mib: 64 })
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
