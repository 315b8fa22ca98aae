//! `uzswap bench savings` (root): memory saved against slowdown. Each
//! program runs plain, under `uzswap run` with no limit (its default: the
//! limit found for a small slowdown) and with `--max-slowdown 10%`, and
//! under the kernel's zswap in a v1 memcg at a sweep of fixed limits, a
//! share of the same rep's plain peak each: the best of those is the
//! oracle a controller can only approach (it knows the run in advance).
//! Runs are interleaved, `--reps` times; each system's median run by
//! elapsed time stands for it.
//!
//! Memory is measured the same way for every system, from outside: every
//! 100 ms, the resident set sizes of the run's process group summed, plus,
//! for the kernel, its zswap pool (outside the processes, and outside a
//! v1 memcg's charge). uzswap's pool and tables live in the processes, so
//! their RSS holds them. The table gives the peak and the time average of
//! those samples; page cache is in neither side's.

use super::bench_output::{finish, ratio, runs_ok, secs};
use super::bench_runs::{
    create_work, Bench, PoolRule, ProgramResult, ProgramsArgs, Sample, System, Variant, WorkArgs,
};
use super::cases::{Case, Scale, Sizes, CASES, SAVINGS_CASES};
use super::proc::{self, User};
use super::summary::human_size;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Table};
use std::time::Duration;
use uzswap_bench::plot::Bar;
use uzswap_bench::Progress;

/// `uzswap bench savings`: memory saved and slowdown, beside the kernel's
/// best fixed limit.
#[derive(Args, Debug)]
pub struct SavingsArgs {
    /// Programs: `python-service`, `go-service`, `redis-hot`, or cases of `uzswap compat
    /// --list` (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "python-service,redis-hot,sqlite,sort,xz"
    )]
    pub only: Vec<String>,
    /// The kernel's fixed limits, in percent of the plain run's peak
    /// memory (comma-separated); `none` leaves the kernel out.
    #[arg(long, value_delimiter = ',', default_value = "90,75,60,45,30")]
    pub kernel_shares: Vec<String>,
    /// Compressor on both sides (the kernel's must be in /proc/crypto).
    #[arg(long, default_value = "lzo-rle")]
    pub compressor: String,
    /// Runs of each system, interleaved; the median one is shown.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Full sizes (default: quick ones, a few seconds a run).
    #[arg(long)]
    pub full: bool,
    /// A flag added to every `uzswap run` (repeatable).
    #[arg(long, allow_hyphen_values = true)]
    pub uzswap_flag: Vec<String>,
    #[command(flatten)]
    pub work: WorkArgs,
}

/// How often each run's memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The slowdowns the oracle is picked for: the smallest memory whose
/// elapsed time is within each of plain's.
const ORACLE_SLOWDOWNS: [u32; 2] = [5, 10];

/// The uzswap runs: as a user runs it (no limit, no flags but the case's
/// own), and with a looser target.
const SAVINGS_VARIANTS: [Variant; 2] = [
    Variant {
        label: "uzswap run (no limit)",
        slug: "uzswap-default",
        flags: &[],
        pool: PoolRule::Counted,
    },
    Variant {
        label: "uzswap run --max-slowdown 10%",
        slug: "uzswap-10",
        flags: &["--max-slowdown", "10%"],
        pool: PoolRule::Counted,
    },
];

fn select(only: &[String]) -> Result<Vec<&'static Case>, String> {
    only.iter()
        .map(|name| {
            SAVINGS_CASES
                .iter()
                .chain(CASES)
                .find(|c| c.name == name.as_str())
                .ok_or_else(|| {
                    let names: Vec<&str> =
                        SAVINGS_CASES.iter().chain(CASES).map(|c| c.name).collect();
                    format!(
                        "--only: no program {name:?} (programs: {})",
                        names.join(", ")
                    )
                })
        })
        .collect()
}

fn kernel_shares(a: &SavingsArgs) -> Result<Vec<u32>, String> {
    if a.kernel_shares.iter().any(|s| s == "none") {
        return Ok(Vec::new());
    }
    a.kernel_shares
        .iter()
        .map(|s| match s.trim().trim_end_matches('%').parse::<u32>() {
            Ok(p) if (1..=100).contains(&p) => Ok(p),
            _ => Err(format!(
                "--kernel-shares: {s:?} is not a percentage from 1 to 100"
            )),
        })
        .collect()
}

pub fn run(a: &SavingsArgs) -> Result<bool, String> {
    let shares = kernel_shares(a)?;
    if !shares.is_empty() && !proc::is_root() {
        return Err("bench savings needs root for the kernel's runs (a memcg, swap, zswap's parameters); `--kernel-shares none` runs without them".into());
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let cases = select(&a.only)?;
    let scale = if a.full { Scale::Full } else { Scale::Quick };
    let programs = ProgramsArgs {
        only: vec![],
        compressor: a.compressor.clone(),
        zram: None,
        no_equal_memory: true,
        reps: a.reps,
        full: a.full,
        uzswap_flag: a.uzswap_flag.clone(),
        work: WorkArgs {
            out: None,
            ..a.work.clone()
        },
        name: "savings",
    };
    let mut systems = vec![System::Plain];
    systems.extend(SAVINGS_VARIANTS.iter().cloned().map(System::Uzswap));
    systems.extend(shares.iter().map(|&p| System::KernelZswapShare(p)));
    let work = create_work(&programs.work, programs.name)?;
    let me = User::Invoker(proc::invoker_name());
    let tools = super::work::locate_tools(&work, std::slice::from_ref(&me))?;
    proc::end_commands_on_interrupt();
    println!(
        "uzswap bench savings ({}): {} programs, {} runs each of {}; compressor {}; memory sampled every {} ms",
        if a.full { "full sizes" } else { "quick sizes" },
        cases.len(),
        a.reps,
        systems.iter().map(System::label).collect::<Vec<_>>().join(", "),
        a.compressor,
        SAMPLE_EVERY.as_millis(),
    );
    let progress = Progress::new(
        "bench savings",
        (cases.len() * systems.len() * a.reps) as u64,
    );
    let bench = Bench {
        args: &programs,
        scale,
        systems: &systems,
        work: &work,
        user: &me,
        uzswap: &tools.uzswap,
        progress: &progress,
        sample_every: Some(SAMPLE_EVERY),
    };
    // No limit: the uzswap runs find theirs, the kernel's are a share of
    // the plain peak.
    let (results, csv_rows) = bench.programs(cases.iter().map(|&case| {
        let size = case.sizes(scale).size;
        (case, Some(Sizes { size, limit: 0 }))
    }));
    println!("{}", runs_table(&results));
    println!("{}", summary_table(&results));
    draw(&results);
    let ok = finish(&work, a.work.out.as_deref(), &csv_rows, &results)?;
    if proc::interrupted() {
        return Err("interrupted".into());
    }
    Ok(ok)
}

/// The median run of `system` in `r`.
fn median<'a>(r: &'a ProgramResult, system: &System) -> Option<&'a Sample> {
    r.cells
        .iter()
        .find(|c| &c.system == system)
        .and_then(|c| c.median.as_ref())
}

/// The kernel's best fixed limit for a slowdown of `pct`: of the sweep's
/// runs within `1 + pct/100` of plain's elapsed time, the one with the
/// least memory over time.
fn oracle(r: &ProgramResult, pct: u32) -> Option<(&System, &Sample)> {
    let plain = secs(median(r, &System::Plain)?.measured.elapsed);
    r.cells
        .iter()
        .filter(|c| matches!(c.system, System::KernelZswapShare(_)))
        .filter_map(|c| Some((&c.system, c.median.as_ref()?)))
        .filter(|(_, s)| secs(s.measured.elapsed) <= plain * (1.0 + f64::from(pct) / 100.0))
        .min_by_key(|(_, s)| s.measured.memory.mean)
}

/// Every system's median run of every program.
fn runs_table(results: &[ProgramResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "program",
        "system",
        "elapsed\n(median)",
        "elapsed\nvs plain",
        "CPU\nuser+sys",
        "memory, peak\n(sampled)",
        "peak\nvs plain",
        "memory,\ntime average",
        "average\nvs plain",
        "swapped\nout / in (pages)",
        "runs ok",
    ]);
    for r in results {
        if let Some(why) = &r.skipped {
            t.add_row(vec![Cell::new(r.case), Cell::new(why)]);
            continue;
        }
        let plain = median(r, &System::Plain);
        for c in &r.cells {
            let mut row = vec![Cell::new(r.case), Cell::new(c.system.label())];
            match &c.median {
                Some(s) => {
                    let m = &s.measured;
                    let of_plain = |f: &dyn Fn(&Sample) -> f64| ratio(Some(f(s)), plain.map(f));
                    row.extend([
                        Cell::new(format!("{:.2}s", secs(m.elapsed))),
                        Cell::new(of_plain(&|x| secs(x.measured.elapsed))),
                        Cell::new(format!("{:.2}s", secs(m.cpu))),
                        Cell::new(human_size(m.memory.peak)),
                        Cell::new(of_plain(&|x| x.measured.memory.peak as f64)),
                        Cell::new(human_size(m.memory.mean)),
                        Cell::new(of_plain(&|x| x.measured.memory.mean as f64)),
                        Cell::new(format!("{} / {}", s.swapped_out, s.swapped_in)),
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

/// Per program: slowdown, peak and average memory of each uzswap run and
/// of the kernel's oracle for each slowdown, all over plain.
fn summary_table(results: &[ProgramResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "program",
        "plain\nelapsed, peak",
        "system",
        "elapsed\nvs plain",
        "peak\nvs plain",
        "average\nvs plain",
    ]);
    for r in results {
        let Some(plain) = median(r, &System::Plain) else {
            continue;
        };
        let p = &plain.measured;
        let mut rows: Vec<(String, Option<&Sample>)> = SAVINGS_VARIANTS
            .iter()
            .map(|v| (v.label.to_string(), median(r, &System::Uzswap(v.clone()))))
            .collect();
        let swept = r
            .cells
            .iter()
            .any(|c| matches!(c.system, System::KernelZswapShare(_)));
        for pct in ORACLE_SLOWDOWNS.into_iter().filter(|_| swept) {
            let best = oracle(r, pct);
            let label = match best {
                Some((System::KernelZswapShare(share), _)) => {
                    format!("kernel zswap, best fixed limit within {pct}% ({share}% of plain peak)")
                }
                _ => format!("kernel zswap, best fixed limit within {pct}% (none)"),
            };
            rows.push((label, best.map(|(_, s)| s)));
        }
        for (label, s) in rows {
            let mut row = vec![
                Cell::new(r.case),
                Cell::new(format!(
                    "{:.2}s, {}",
                    secs(p.elapsed),
                    human_size(p.memory.peak)
                )),
                Cell::new(label),
            ];
            match s {
                Some(s) => {
                    let m = &s.measured;
                    row.extend([
                        Cell::new(ratio(Some(secs(m.elapsed)), Some(secs(p.elapsed)))),
                        Cell::new(ratio(
                            Some(m.memory.peak as f64),
                            Some(p.memory.peak as f64),
                        )),
                        Cell::new(ratio(
                            Some(m.memory.mean as f64),
                            Some(p.memory.mean as f64),
                        )),
                    ]);
                }
                None => row.extend((0..3).map(|_| Cell::new("-"))),
            }
            t.add_row(row);
        }
    }
    t
}

/// Time-averaged memory over plain's, per program and system.
fn draw(results: &[ProgramResult]) {
    let bars: Vec<Bar> = results
        .iter()
        .flat_map(|r| {
            let plain = median(r, &System::Plain).map(|s| s.measured.memory.mean as f64);
            r.cells.iter().filter_map(move |c| {
                let s = c.median.as_ref()?;
                Some(Bar {
                    label: format!("{} {}", r.case, c.system.label()),
                    value: s.measured.memory.mean as f64 / plain.filter(|&p| p > 0.0)?,
                    group: c.system.label(),
                })
            })
        })
        .collect();
    crate::chart_at(
        crate::plot_path("savings.png"),
        "memory over time against plain (uzswap and the kernel's fixed limits)",
        "time-averaged memory / plain's (lower saves more)",
        &bars,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::bench_runs::SystemResult;
    use crate::compat::proc::{Measured, MemoryTrace};

    fn cell(system: System, secs: u64, mean: u64) -> SystemResult {
        SystemResult {
            system,
            median: Some(Sample {
                measured: Measured {
                    elapsed: Duration::from_secs(secs),
                    memory: MemoryTrace {
                        peak: mean,
                        mean,
                        samples: 1,
                    },
                    ..Measured::default()
                },
                limit: 0,
                swapped_out: 0,
                swapped_in: 0,
                peak_memory: 0,
                problem: None,
                latency: None,
            }),
            failed: 0,
            first_problem: None,
            runs: 1,
        }
    }

    #[test]
    fn the_oracle_is_the_least_memory_within_the_slowdown() {
        let r = ProgramResult {
            case: "p",
            limit: 0,
            cells: vec![
                cell(System::Plain, 100, 1000),
                cell(System::KernelZswapShare(90), 102, 900),
                cell(System::KernelZswapShare(60), 108, 600),
                cell(System::KernelZswapShare(30), 300, 300),
            ],
            skipped: None,
        };
        let pick = |pct| oracle(&r, pct).map(|(s, _)| s.clone());
        assert_eq!(pick(5), Some(System::KernelZswapShare(90)));
        assert_eq!(pick(10), Some(System::KernelZswapShare(60)));
        assert_eq!(pick(1), None);
    }

    #[test]
    fn programs_and_shares_are_checked() {
        assert!(select(&["python-service".into(), "sort".into()]).is_ok());
        match select(&["nope".into()]) {
            Err(e) => assert!(e.contains("redis-hot"), "{e}"),
            Ok(_) => panic!("an unknown program was accepted"),
        }
        let mut a = <SavingsArgs as clap::FromArgMatches>::from_arg_matches(
            &<SavingsArgs as clap::Args>::augment_args(clap::Command::new("t"))
                .get_matches_from(["t"]),
        )
        .unwrap();
        assert_eq!(kernel_shares(&a), Ok(vec![90, 75, 60, 45, 30]));
        a.kernel_shares = vec!["none".into()];
        assert_eq!(kernel_shares(&a), Ok(vec![]));
        a.kernel_shares = vec!["0".into()];
        assert!(kernel_shares(&a).is_err());
    }
}
