//! `uzswap bench faults` (root): the compatibility suite's `randpage`
//! program (random reads and writes of single words over a buffer) at
//! each budget, plain, under uzswap's variants of [`FAULT_VARIANTS`] and
//! under the kernel's zswap and zram in a memcg of the same limit,
//! interleaved, through the runs of `uzswap bench programs`
//! (`bench_runs.rs`). Its table adds the fault latency the program
//! measures itself and the CPU each page in and out costs over the plain
//! run.

use super::bench_output::{draw_elapsed, finish, ratio, runs_ok, secs};
use super::bench_runs::{
    create_work, Bench, PoolRule, ProgramResult, ProgramsArgs, System, Variant, WorkArgs,
};
use super::cases::{Scale, Sizes};
use super::proc::{self, User};
use super::summary::human_size;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Table};
use uzswap_bench::Progress;

/// `uzswap bench faults`: random page access beside the kernel.
#[derive(Args, Debug)]
pub struct FaultsArgs {
    /// The buffer the program accesses at random pages (its footprint).
    #[arg(long, value_parser = crate::run::size_arg, default_value = "512M")]
    pub size: usize,
    /// Budgets, as how many times the buffer is the limit (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    pub times: Vec<u64>,
    /// Compressor on both sides (the kernel's must be in /proc/crypto).
    #[arg(long, default_value = "lzo-rle")]
    pub compressor: String,
    /// zram's algorithm for the zram run; `none` leaves it out.
    #[arg(long, default_value = "lzo-rle")]
    pub zram: String,
    /// Runs of each system, interleaved; the median one is shown.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Also run the program linked statically (`randpage-static`), which
    /// uzswap pages from outside: the out-of-process path's cost beside
    /// the in-process one's.
    #[arg(long)]
    pub with_static: bool,
    #[command(flatten)]
    pub work: WorkArgs,
}

/// The uzswap runs of `bench faults`: the pool uncounted (a cgroup v1
/// memcg's rule, the kernel side's here) and counted (cgroup v2's),
/// eviction always in the reclaim thread (`--background-reclaim`; by
/// default a single thread's scattered victims are evicted in the
/// faulting thread), and the pool's share fixed at half the limit.
const FAULT_VARIANTS: [Variant; 4] = [
    Variant {
        label: "uzswap, pool uncounted",
        slug: "uzswap-uncounted",
        flags: &[],
        pool: PoolRule::Uncounted,
    },
    Variant {
        label: "uzswap, pool counted",
        slug: "uzswap-counted",
        flags: &[],
        pool: PoolRule::Counted,
    },
    Variant {
        label: "uzswap --background-reclaim, pool uncounted",
        slug: "uzswap-background",
        flags: &["--background-reclaim"],
        pool: PoolRule::Uncounted,
    },
    Variant {
        label: "uzswap --fixed-pool-split, pool counted",
        slug: "uzswap-counted-fixed",
        flags: &["--fixed-pool-split"],
        pool: PoolRule::Counted,
    },
];

/// `uzswap bench faults`: the `randpage` program (random reads and writes
/// of single words over a buffer) plain, under uzswap (pool uncounted and
/// counted, its share adaptive or fixed at half the limit, eviction where
/// it chooses or always by the reclaim thread) and under
/// the kernel's zswap and zram in a memcg of the same limit, at each
/// budget, interleaved. Elapsed and CPU from outside; fault latency
/// percentiles as the program measures them.
pub fn run(a: &FaultsArgs) -> Result<bool, String> {
    if !proc::is_root() {
        return Err("bench faults needs root: the kernel side makes a memcg, turns swap on and sets zswap's parameters".into());
    }
    if a.reps == 0 || a.times.iter().any(|&t| t < 1) {
        return Err("--reps and every --times must be at least 1".into());
    }
    let mut names = vec!["randpage".to_string()];
    if a.with_static {
        names.push("randpage-static".to_string());
    }
    let cases = super::select_cases(&names)?;
    let programs = ProgramsArgs {
        only: vec![],
        compressor: a.compressor.clone(),
        zram: (a.zram != "none").then(|| a.zram.clone()),
        no_equal_memory: true,
        reps: a.reps,
        full: true,
        uzswap_flag: vec![],
        work: WorkArgs {
            out: None,
            ..a.work.clone()
        },
        name: "faults",
    };
    let mut systems = vec![System::Plain];
    systems.extend(FAULT_VARIANTS.iter().cloned().map(System::Uzswap));
    systems.push(System::KernelZswap);
    if let Some(z) = &programs.zram {
        systems.push(System::KernelZram(z.clone()));
    }
    let work = create_work(&programs.work, programs.name)?;
    let me = User::Invoker(proc::invoker_name());
    let tools = super::work::locate_tools(&work, std::slice::from_ref(&me))?;
    proc::end_commands_on_interrupt();
    println!(
        "uzswap bench faults: random page access over {}, limits of 1/{} of it; {} runs each of {}; compressor {}",
        human_size(a.size as u64),
        a.times.iter().map(u64::to_string).collect::<Vec<_>>().join(", 1/"),
        a.reps,
        systems.iter().map(System::label).collect::<Vec<_>>().join(", "),
        a.compressor,
    );
    println!("{}", uzswap_bench::kernel::limit_rule());
    let progress = Progress::new(
        "bench faults",
        (a.times.len() * systems.len() * a.reps) as u64,
    );
    let bench = Bench {
        args: &programs,
        scale: Scale::Full,
        systems: &systems,
        work: &work,
        user: &me,
        uzswap: &tools.uzswap,
        progress: &progress,
        sample_every: None,
    };
    let (results, csv_rows) = bench.programs(a.times.iter().flat_map(|&t| {
        let sizes = Sizes {
            size: a.size as u64,
            limit: (a.size as u64 / t).next_multiple_of(4096),
        };
        cases.iter().map(move |&case| (case, Some(sizes)))
    }));
    println!("{}", faults_table(&results));
    draw_faults(&results);
    let ok = finish(&work, a.work.out.as_deref(), &csv_rows, &results)?;
    if proc::interrupted() {
        return Err("interrupted".into());
    }
    Ok(ok)
}

/// `bench faults`' table: per budget and system, the medians, and the
/// costs per page against the plain run.
fn faults_table(results: &[ProgramResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "program, limit",
        "system",
        "elapsed\n(median)",
        "CPU\nuser+sys",
        "elapsed vs\nkernel zswap",
        "CPU vs\nkernel zswap",
        "swap-ins\n(pages)",
        "fault latency\np50 / p99, µs",
        "CPU over plain\nper page in+out, µs",
        "peak memory",
        "runs ok",
    ]);
    for r in results {
        if let Some(why) = &r.skipped {
            t.add_row(vec![
                Cell::new(format!("{}, {}", r.case, human_size(r.limit))),
                Cell::new(why),
            ]);
            continue;
        }
        let get = |f: &dyn Fn(&System) -> bool| {
            r.cells
                .iter()
                .find(|c| f(&c.system))
                .and_then(|c| c.median.as_ref())
        };
        let plain = get(&|s| *s == System::Plain);
        let kernel = get(&|s| *s == System::KernelZswap);
        for c in &r.cells {
            let mut row = vec![
                Cell::new(if c.system == System::Plain {
                    r.case.to_string()
                } else {
                    format!("{}, {}", r.case, human_size(r.limit))
                }),
                Cell::new(c.system.label()),
            ];
            match &c.median {
                Some(s) => {
                    let (e, cpu) = (secs(s.measured.elapsed), secs(s.measured.cpu));
                    let pages = s.swapped_in + s.swapped_out;
                    let per_page = match plain {
                        Some(p) if pages > 0 => {
                            format!("{:.1}", (cpu - secs(p.measured.cpu)) * 1e6 / pages as f64)
                        }
                        _ => "-".into(),
                    };
                    row.extend([
                        Cell::new(format!("{e:.2}s")),
                        Cell::new(format!("{cpu:.2}s")),
                        Cell::new(ratio(Some(e), kernel.map(|k| secs(k.measured.elapsed)))),
                        Cell::new(ratio(Some(cpu), kernel.map(|k| secs(k.measured.cpu)))),
                        Cell::new(s.swapped_in.to_string()),
                        Cell::new(match s.latency {
                            Some(l) if c.system != System::Plain => {
                                format!("{:.1} / {:.1}", l.p50_us, l.p99_us)
                            }
                            _ => "-".into(),
                        }),
                        Cell::new(per_page),
                        Cell::new(human_size(s.peak_memory)),
                    ]);
                }
                None => row.extend((0..8).map(|_| Cell::new("-"))),
            }
            row.push(runs_ok(c));
            t.add_row(row);
        }
    }
    t
}

fn draw_faults(results: &[ProgramResult]) {
    draw_elapsed(
        results,
        "faults.png",
        "random page access: uzswap and the kernel at the same limit",
        |r| human_size(r.limit),
    );
}
