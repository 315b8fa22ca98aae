//! `uzswap bench programs` (root): real programs of the compatibility
//! suite, each run plain, under `uzswap run --limit L --compressor C`, and
//! under the kernel's zswap (compressor C, a swap file behind it) in a
//! memcg limited to the same L; optionally under zram too. The runs are
//! interleaved (plain, uzswap, kernel, plain, …) `--reps` times; the run
//! with the median elapsed time stands for each system. Elapsed and CPU are
//! the whole process tree's, measured from outside (`wait4`), so uzswap's
//! own threads are counted. Every run's output is compared with the first
//! plain run's.
//!
//! The limit means different things on the two sides, and the table shows
//! what each used: the memcg charges everything (the interpreter, libraries,
//! page cache) while `uzswap run` limits the memory it pages (regions and
//! its pool). On a cgroup v1 machine the memcg does not charge zswap's
//! pool, so uzswap runs with `--uncharged-pool` for the same rule. The
//! peak-memory column gives uzswap's peak RSS (its pool included) and the
//! kernel's memcg peak plus its pool's peak where the memcg does not
//! charge it.
//!
//! `uzswap bench faults` (`faults.rs`) runs a program the same way; both
//! run through `bench_runs.rs` and end through `bench_output.rs`.

pub use super::bench_runs::ProgramsArgs;

use super::bench_output::{draw_elapsed, finish, ratio, runs_ok, secs};
use super::bench_runs::{create_work, Bench, ProgramResult, System, SystemResult, Variant};
use super::cases::Scale;
use super::proc::{self, User};
use super::summary::human_size;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Table};
use uzswap_bench::Progress;

pub fn run(a: &ProgramsArgs) -> Result<bool, String> {
    if !proc::is_root() {
        return Err(
            "bench programs needs root: the kernel side makes a memcg, turns swap on and sets zswap's parameters"
                .into(),
        );
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let cases = super::select_cases(&a.only)?;
    let scale = if a.full { Scale::Full } else { Scale::Quick };
    let mut systems = vec![
        System::Plain,
        System::Uzswap(Variant::DEFAULT),
        System::KernelZswap,
    ];
    if !a.no_equal_memory {
        systems.push(System::KernelZswapEqualMemory);
    }
    if let Some(z) = &a.zram {
        systems.push(System::KernelZram(z.clone()));
    }
    let work = create_work(&a.work, a.name)?;
    let me = User::Invoker(proc::invoker_name());
    let tools = super::work::locate_tools(&work, std::slice::from_ref(&me))?;
    proc::end_commands_on_interrupt();
    println!(
        "uzswap bench programs ({}): {} programs, {} runs each of {}; compressor {}; work folder {}",
        if a.full { "full sizes" } else { "quick sizes" },
        cases.len(),
        a.reps,
        systems
            .iter()
            .map(System::label)
            .collect::<Vec<_>>()
            .join(", "),
        a.compressor,
        work.root.display()
    );
    println!("{}", uzswap_bench::kernel::limit_rule());
    let progress = Progress::new(
        "bench programs",
        (cases.len() * systems.len() * a.reps) as u64,
    );
    let bench = Bench {
        args: a,
        scale,
        systems: &systems,
        work: &work,
        user: &me,
        uzswap: &tools.uzswap,
        progress: &progress,
        sample_every: None,
    };
    let (results, csv_rows) = bench.programs(cases.iter().map(|&case| (case, None)));
    if proc::interrupted() {
        work.remove_unless_kept();
        return Err("interrupted".into());
    }
    println!("{}", table(&results));
    print_ratios(&results);
    draw(&results);
    finish(&work, a.work.out.as_deref(), &csv_rows, &results)
}

fn table(results: &[ProgramResult]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "program",
        "limit",
        "system",
        "elapsed\n(median)",
        "CPU\nuser+sys",
        "elapsed\nvs plain",
        "elapsed\nvs kernel zswap",
        "CPU\nvs kernel zswap",
        "swapped\nout / in (pages)",
        "peak memory\n(RSS with the pool;\nkernel: memcg + pool)",
        "runs ok",
    ]);
    for r in results {
        if let Some(why) = &r.skipped {
            t.add_row(vec![
                Cell::new(r.case),
                Cell::new(human_size(r.limit)),
                Cell::new(why),
            ]);
            continue;
        }
        let get = |s: &System| {
            r.cells
                .iter()
                .find(|c| &c.system == s)
                .and_then(|c| c.median.as_ref())
        };
        let plain = get(&System::Plain).map(|s| secs(s.measured.elapsed));
        let kernel = get(&System::KernelZswap);
        let k_elapsed = kernel.map(|s| secs(s.measured.elapsed));
        let k_cpu = kernel.map(|s| secs(s.measured.cpu));
        for c in &r.cells {
            let limit = match (&c.system, &c.median) {
                (System::Plain, _) => "-".to_string(),
                (_, Some(s)) if s.limit > 0 => human_size(s.limit),
                _ => human_size(r.limit),
            };
            let mut row = vec![
                Cell::new(r.case),
                Cell::new(limit),
                Cell::new(c.system.label()),
            ];
            match &c.median {
                Some(s) => {
                    let e = secs(s.measured.elapsed);
                    let cpu = secs(s.measured.cpu);
                    row.extend([
                        Cell::new(format!("{e:.2}s")),
                        Cell::new(format!("{cpu:.2}s")),
                        Cell::new(ratio(Some(e), plain)),
                        Cell::new(ratio(Some(e), k_elapsed)),
                        Cell::new(ratio(Some(cpu), k_cpu)),
                        Cell::new(format!("{} / {}", s.swapped_out, s.swapped_in)),
                        Cell::new(human_size(s.peak_memory)),
                    ]);
                }
                None => row.extend((0..7).map(|_| Cell::new("-"))),
            }
            row.push(runs_ok(c));
            t.add_row(row);
        }
    }
    t
}

/// uzswap over kernel zswap per program (same limit, and same memory),
/// and the goal.
fn print_ratios(results: &[ProgramResult]) {
    println!("uzswap / kernel zswap, same program and compressor (goal: no program above 1.0x):");
    for r in results {
        let cell = |s: System| r.cells.iter().find(|c| c.system == s);
        let Some(u) = cell(System::Uzswap(Variant::DEFAULT)).and_then(|c| c.median.as_ref()) else {
            continue;
        };
        let against = |k: Option<&SystemResult>| match k.map(|c| c.median.as_ref()) {
            Some(Some(k)) => format!(
                "elapsed {}, CPU {}",
                ratio(
                    Some(secs(u.measured.elapsed)),
                    Some(secs(k.measured.elapsed))
                ),
                ratio(Some(secs(u.measured.cpu)), Some(secs(k.measured.cpu))),
            ),
            Some(None) => "no kernel run finished".to_string(),
            // Left out (`--no-equal-memory`).
            None => "not run".to_string(),
        };
        println!(
            "  {:<12} same limit: {}; same memory: {}",
            r.case,
            against(cell(System::KernelZswap)),
            against(cell(System::KernelZswapEqualMemory)),
        );
    }
}

fn draw(results: &[ProgramResult]) {
    draw_elapsed(
        results,
        "programs.png",
        "real programs: plain, uzswap, kernel",
        |r| r.case.to_string(),
    );
}
