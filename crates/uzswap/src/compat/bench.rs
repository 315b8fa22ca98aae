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

use super::cases::{Case, Ctx, Scale, Sizes};
use super::outputs::{failure, program_error, sha256};
use super::proc::{self, Job, Measured, User};
use super::summary::{csv_field, human_size};
use super::work::{locate_tools, make_dir, readable_by_all, Work};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Table};
use std::path::{Path, PathBuf};
use uzswap_bench::kernel::{KernelSwap, Machine, SwapCounts};
use uzswap_bench::plot::Bar;
use uzswap_bench::Progress;

#[derive(Args, Debug)]
pub struct ProgramsArgs {
    /// Programs (cases of `uzswap compat --list`), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "python-hash,numpy,sort,xz,sqlite,redis"
    )]
    pub only: Vec<String>,
    /// Compressor on both sides (the kernel's must be in /proc/crypto).
    #[arg(long, default_value = "lzo-rle")]
    pub compressor: String,
    /// Also run under zram with this algorithm as the kernel's swap device.
    #[arg(long)]
    pub zram: Option<String>,
    /// Leave out the kernel zswap run whose memcg is as large as the
    /// uzswap run's peak RSS (the same memory for both; by default it runs
    /// beside the one with the same limit).
    #[arg(long)]
    pub no_equal_memory: bool,
    /// Runs of each system, interleaved; the median one is shown.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// The compatibility suite's full sizes (default: its quick sizes).
    #[arg(long)]
    pub full: bool,
    /// A flag added to every `uzswap run` (repeatable), e.g.
    /// `--uzswap-flag=--no-track-writes`.
    #[arg(long, allow_hyphen_values = true)]
    pub uzswap_flag: Vec<String>,
    /// Folder to create the work folder `uzswap-programs-PID` in (default:
    /// $TMPDIR).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep the work folder (inputs, outputs, stdout/stderr of every run).
    #[arg(long)]
    pub keep: bool,
    /// Also write every run (not only the medians) as CSV to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The work folder's name part.
    #[arg(skip = "programs")]
    pub name: &'static str,
}

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
    /// Folder to create the work folder in (default: $TMPDIR).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep the work folder.
    #[arg(long)]
    pub keep: bool,
    /// Also write every run as CSV to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The uzswap runs of `bench faults`: the pool uncounted (a cgroup v1
/// memcg's rule, the kernel side's here) and counted (cgroup v2's),
/// eviction in the faulting thread (direct reclaim), and the handler
/// thread serving faults instead of the faulting thread.
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
        label: "uzswap --direct-reclaim, pool uncounted",
        slug: "uzswap-direct",
        flags: &["--direct-reclaim"],
        pool: PoolRule::Uncounted,
    },
    Variant {
        label: "uzswap --fault-thread, pool uncounted",
        slug: "uzswap-thread",
        flags: &["--fault-thread"],
        pool: PoolRule::Uncounted,
    },
];

/// `uzswap bench faults`: the `randpage` program (random reads and writes
/// of single words over a buffer) plain, under uzswap (pool uncounted and
/// counted, faults served in-thread and by the handler thread) and under
/// the kernel's zswap and zram in a memcg of the same limit, at each
/// budget, interleaved. Elapsed and CPU from outside; fault latency
/// percentiles as the program measures them.
pub fn faults(a: &FaultsArgs) -> Result<bool, String> {
    if !proc::is_root() {
        return Err("bench faults needs root: the kernel side makes a memcg, turns swap on and sets zswap's parameters".into());
    }
    if a.reps == 0 || a.times.iter().any(|&t| t < 1) {
        return Err("--reps and every --times must be at least 1".into());
    }
    let case = super::select_cases(&["randpage".to_string()])?[0];
    let programs = ProgramsArgs {
        only: vec![],
        compressor: a.compressor.clone(),
        zram: (a.zram != "none").then(|| a.zram.clone()),
        no_equal_memory: true,
        reps: a.reps,
        full: true,
        uzswap_flag: vec![],
        work_dir: a.work_dir.clone(),
        keep: a.keep,
        out: None,
        name: "faults",
    };
    let mut systems = vec![System::Plain];
    systems.extend(FAULT_VARIANTS.iter().cloned().map(System::Uzswap));
    systems.push(System::KernelZswap);
    if let Some(z) = &programs.zram {
        systems.push(System::KernelZram(z.clone()));
    }
    let work = create_work(&programs)?;
    let me = User::Invoker(proc::invoker_name());
    let tools = locate_tools(&work, std::slice::from_ref(&me))?;
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
    };
    let mut results = Vec::new();
    let mut csv_rows = Vec::new();
    for &t in &a.times {
        let sizes = Sizes {
            size: a.size as u64,
            limit: (a.size as u64 / t).next_multiple_of(4096),
        };
        let (result, samples) = bench.program(case, Some(sizes));
        csv_rows.extend(samples);
        results.push(result);
        if proc::interrupted() {
            break;
        }
    }
    progress.finish();
    println!("{}", faults_table(&results));
    draw_faults(&results);
    let ok = finish(&work, a.out.as_deref(), &csv_rows, &results)?;
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
        "limit",
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
            t.add_row(vec![Cell::new(human_size(r.limit)), Cell::new(why)]);
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
                    "-".to_string()
                } else {
                    human_size(r.limit)
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

/// Where a program runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum System {
    Plain,
    Uzswap(Variant),
    KernelZswap,
    /// Kernel zswap in a memcg as large as the same rep's uzswap peak RSS.
    KernelZswapEqualMemory,
    KernelZram(String),
}

/// How `uzswap run` is run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Variant {
    label: &'static str,
    slug: &'static str,
    /// Flags besides the limit, the compressor and the case's own.
    flags: &'static [&'static str],
    pool: PoolRule,
}

/// Whether the uzswap run's limit counts its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PoolRule {
    /// As the kernel side's memcg does (not on cgroup v1).
    AsTheMemcg,
    Counted,
    Uncounted,
}

impl Variant {
    /// `uzswap run` as a user runs it (the pool counted as the memcg
    /// counts zswap's).
    const DEFAULT: Variant = Variant {
        label: "uzswap",
        slug: "uzswap",
        flags: &[],
        pool: PoolRule::AsTheMemcg,
    };

    fn uncharged(&self) -> bool {
        match self.pool {
            PoolRule::AsTheMemcg => uzswap_bench::kernel::memcg_v1(),
            PoolRule::Counted => false,
            PoolRule::Uncounted => true,
        }
    }
}

impl System {
    fn is_uzswap(&self) -> bool {
        matches!(self, System::Uzswap(_))
    }

    fn label(&self) -> String {
        match self {
            System::Plain => "plain (no limit)".into(),
            System::Uzswap(v) => v.label.into(),
            System::KernelZswap => "kernel zswap".into(),
            System::KernelZswapEqualMemory => "kernel zswap, memcg = uzswap's peak RSS".into(),
            System::KernelZram(a) => format!("kernel zram {a}"),
        }
    }

    /// A folder name for its runs.
    fn slug(&self) -> &'static str {
        match self {
            System::Plain => "plain",
            System::Uzswap(v) => v.slug,
            System::KernelZswap => "zswap",
            System::KernelZswapEqualMemory => "zswap-eqmem",
            System::KernelZram(_) => "zram",
        }
    }
}

/// One run of one program on one system.
#[derive(Debug, Clone)]
struct Sample {
    measured: Measured,
    /// The limit it ran under, bytes (0: none).
    limit: u64,
    /// Pages swapped out: zswap stores plus pages written to the swap
    /// file or device.
    swapped_out: u64,
    swapped_in: u64,
    /// uzswap and plain: peak RSS of the largest process (uzswap's pool
    /// lives in it); kernel: the memcg's peak charge, plus the pool's peak
    /// where the memcg does not charge it (v1, zram).
    peak_memory: u64,
    /// What went wrong (exit status, output differs), if anything.
    problem: Option<String>,
    /// The program's own fault-latency line, if it prints one
    /// (`randpage: faults N p50_us X p99_us Y` on stderr).
    latency: Option<Latency>,
}

/// Page-fault latency as the program measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Latency {
    faults: u64,
    p50_us: f64,
    p99_us: f64,
}

impl Latency {
    /// The last `randpage: faults N p50_us X p99_us Y` line of `stderr`.
    fn parse(stderr: &str) -> Option<Latency> {
        let line = stderr
            .lines()
            .rev()
            .find(|l| l.starts_with("randpage: faults "))?;
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["randpage:", "faults", n, "p50_us", p50, "p99_us", p99] => Some(Latency {
                faults: n.parse().ok()?,
                p50_us: p50.parse().ok()?,
                p99_us: p99.parse().ok()?,
            }),
            _ => None,
        }
    }
}

/// A program's result on one system: the median run.
#[derive(Debug, Clone)]
struct SystemResult {
    system: System,
    median: Option<Sample>,
    /// Runs that went wrong, with the first problem.
    failed: usize,
    first_problem: Option<String>,
    runs: usize,
}

/// One program's results.
struct ProgramResult {
    case: &'static str,
    limit: u64,
    cells: Vec<SystemResult>,
    /// Why the program did not run at all.
    skipped: Option<String>,
}

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
    let work = create_work(a)?;
    let me = User::Invoker(proc::invoker_name());
    let tools = locate_tools(&work, std::slice::from_ref(&me))?;
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
    };
    let mut results = Vec::new();
    let mut csv_rows = Vec::new();
    for case in &cases {
        let (result, samples) = bench.program(case, None);
        csv_rows.extend(samples);
        results.push(result);
        if proc::interrupted() {
            progress.finish();
            work.remove_unless_kept();
            return Err("interrupted".into());
        }
    }
    progress.finish();
    println!("{}", table(&results));
    print_ratios(&results);
    draw(&results);
    finish(&work, a.out.as_deref(), &csv_rows, &results)
}

/// Writes every run as CSV to `out` (if asked), removes the work folder
/// unless kept; whether every uzswap run went right.
fn finish(
    work: &Work,
    out: Option<&Path>,
    csv_rows: &[CsvRow],
    results: &[ProgramResult],
) -> Result<bool, String> {
    if let Some(path) = out {
        std::fs::write(path, csv(csv_rows))
            .map_err(|e| format!("--out {}: {e}", path.display()))?;
    }
    if work.keep {
        println!("work folder kept: {}", work.root.display());
    }
    work.remove_unless_kept();
    Ok(results
        .iter()
        .flat_map(|r| &r.cells)
        .all(|c| c.failed == 0 || !c.system.is_uzswap()))
}

fn create_work(a: &ProgramsArgs) -> Result<Work, String> {
    let parent = a.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let root = parent.join(format!("uzswap-{}-{}", a.name, std::process::id()));
    if root.exists() {
        return Err(format!("{} exists already", root.display()));
    }
    make_dir(&root, 0o755)?;
    Ok(Work { root, keep: a.keep })
}

/// What every program's runs share.
struct Bench<'a> {
    args: &'a ProgramsArgs,
    scale: Scale,
    systems: &'a [System],
    work: &'a Work,
    user: &'a User,
    uzswap: &'a Path,
    progress: &'a Progress,
}

/// A CSV line: program, system, rep, and the sample.
type CsvRow = (&'static str, String, usize, Sample);

impl Bench<'_> {
    /// Makes `case`'s input and runs it on every system `reps` times,
    /// interleaved, at `sizes` (default: the case's at the scale).
    fn program(&self, case: &'static Case, sizes: Option<Sizes>) -> (ProgramResult, Vec<CsvRow>) {
        let sizes = sizes.unwrap_or(case.sizes(self.scale));
        let limit = sizes.limit;
        let mut result = ProgramResult {
            case: case.name,
            limit,
            cells: Vec::new(),
            skipped: None,
        };
        let missing = case.missing();
        if !missing.is_empty() {
            result.skipped = Some(format!("not installed: {}", missing.join(", ")));
            return (result, Vec::new());
        }
        let input = self.work.inputs(case.name);
        let ctx = Ctx {
            input: &input,
            size: sizes.size,
        };
        let made = make_dir(&input, 0o755)
            .and_then(|()| (case.setup)(&ctx))
            .and_then(|()| readable_by_all(&input));
        if let Err(e) = made {
            result.skipped = Some(format!("setup failed: {e}"));
            return (result, Vec::new());
        }
        let command = (case.command)(&ctx);
        let dir = self.work.runs(self.user, case.name);
        let mut samples: Vec<Vec<Sample>> = self.systems.iter().map(|_| Vec::new()).collect();
        let mut csv_rows = Vec::new();
        let mut reference: Option<PathBuf> = None;
        'reps: for rep in 0..self.args.reps {
            let mut uzswap_peak = None;
            for (i, system) in self.systems.iter().enumerate() {
                if proc::interrupted() {
                    break 'reps;
                }
                let run_dir = dir.join(format!("{}-{rep}", system.slug()));
                let run = match system {
                    // As much memory as uzswap's run of this rep took.
                    System::KernelZswapEqualMemory => uzswap_peak
                        .map(|peak: u64| peak.next_multiple_of(4096))
                        .ok_or_else(|| "no uzswap run of this rep to match".to_string())
                        .and_then(|l| {
                            self.one_run(case, &command, system, l, &run_dir, reference.as_deref())
                        }),
                    _ => self.one_run(
                        case,
                        &command,
                        system,
                        limit,
                        &run_dir,
                        reference.as_deref(),
                    ),
                };
                let sample = run.unwrap_or_else(|e| Sample {
                    measured: Measured::default(),
                    limit: 0,
                    swapped_out: 0,
                    swapped_in: 0,
                    peak_memory: 0,
                    problem: Some(e),
                    latency: None,
                });
                if *system == System::Uzswap(Variant::DEFAULT) && sample.problem.is_none() {
                    uzswap_peak = Some(sample.peak_memory);
                }
                if *system == System::Plain && reference.is_none() && sample.problem.is_none() {
                    reference = Some(run_dir.clone());
                } else if reference.as_deref() != Some(run_dir.as_path()) {
                    self.work.remove_unless_kept_at(&run_dir);
                }
                self.progress.step(&format!(
                    "{} on {}, run {}: {}",
                    case.name,
                    system.label(),
                    rep + 1,
                    sample
                        .problem
                        .as_deref()
                        .unwrap_or(&format!("{:.1}s", sample.measured.elapsed.as_secs_f64()))
                ));
                csv_rows.push((case.name, system.label(), rep, sample.clone()));
                samples[i].push(sample);
            }
        }
        result.cells = self
            .systems
            .iter()
            .zip(samples)
            .map(|(system, runs)| system_result(system.clone(), runs))
            .collect();
        self.work.remove_unless_kept_at(&dir);
        self.work.remove_unless_kept_at(&input);
        (result, csv_rows)
    }

    /// One run in `dir` (`cwd/`, stdout, stderr, the uzswap stats), its
    /// outputs compared with those of the run in `reference`.
    fn one_run(
        &self,
        case: &Case,
        command: &[String],
        system: &System,
        limit: u64,
        dir: &Path,
        reference: Option<&Path>,
    ) -> Result<Sample, String> {
        let cwd = dir.join("cwd");
        let scratch = dir.join("scratch");
        make_dir(&cwd, 0o755)?;
        make_dir(&scratch, 0o755)?;
        let stats = dir.join("uzswap.stats");
        let job = |argv: Vec<String>| Job {
            argv,
            cwd: cwd.clone(),
            scratch: scratch.clone(),
            stdout: dir.join("stdout"),
            stderr: dir.join("stderr"),
            timeout: self.scale.timeout(),
        };
        let mut sample = match system {
            System::Plain => {
                let m = proc::run(self.user, &job(command.to_vec()))?;
                Sample {
                    limit: 0,
                    peak_memory: m.max_rss,
                    measured: m,
                    swapped_out: 0,
                    swapped_in: 0,
                    problem: None,
                    latency: None,
                }
            }
            System::Uzswap(variant) => {
                let mut argv = vec![
                    self.uzswap.display().to_string(),
                    "run".into(),
                    "--limit".into(),
                    limit.to_string(),
                    "--compressor".into(),
                    self.args.compressor.clone(),
                    "--swapfile-dir".into(),
                    scratch.display().to_string(),
                    "--stats-out".into(),
                    stats.display().to_string(),
                ];
                if variant.uncharged() {
                    // The kernel's v1 memcg does not charge its pool.
                    argv.push("--uncharged-pool".into());
                }
                // The case's own flags first (`--small-objects` for the
                // `-heap` cases), as `uzswap compat` runs it.
                argv.extend(case.flags.iter().map(|f| f.to_string()));
                argv.extend(variant.flags.iter().map(|f| f.to_string()));
                argv.extend(self.args.uzswap_flag.iter().cloned());
                argv.push("--".into());
                argv.extend_from_slice(command);
                let m = proc::run(self.user, &job(argv))?;
                let text = std::fs::read_to_string(&stats).unwrap_or_default();
                let swap = launch::report::RunReport::parse(&text)
                    .map(|r| r.total.swap)
                    .unwrap_or_default();
                Sample {
                    limit,
                    peak_memory: m.max_rss,
                    measured: m,
                    swapped_out: swap.zswpout + swap.pswpout,
                    swapped_in: swap.zswpin + swap.pswpin,
                    problem: None,
                    latency: None,
                }
            }
            System::KernelZswap | System::KernelZswapEqualMemory | System::KernelZram(_) => {
                let swap = match system {
                    System::KernelZram(a) => KernelSwap::Zram(a.clone()),
                    _ => KernelSwap::Zswap(self.args.compressor.clone()),
                };
                // Room for everything the program touches, twice over.
                let swap_bytes = (8 * limit as usize).max(1 << 30);
                let machine = Machine::prepare(&swap, limit as usize, None, swap_bytes)
                    .map_err(|e| e.to_string())?;
                let before = SwapCounts::now().map_err(|e| e.to_string())?;
                let (m, pool_peak) =
                    while_sampling_pool(|| proc::run(self.user, &job(machine.enter_argv(command))));
                let m = m?;
                let counts = SwapCounts::now().map_err(|e| e.to_string())?.since(before);
                let pool_peak = match system {
                    System::KernelZram(_) => Machine::zram_mem_used_max(),
                    _ => pool_peak,
                };
                // The memcg does not charge zswap's pool (v1): add it, so
                // that the column compares with uzswap's RSS, which holds
                // its pool.
                let peak = if uzswap_bench::kernel::memcg_v1()
                    || matches!(system, System::KernelZram(_))
                {
                    machine.memcg_peak_bytes() + pool_peak
                } else {
                    machine.memcg_peak_bytes()
                };
                drop(machine);
                Sample {
                    measured: m,
                    limit,
                    swapped_out: counts.zswpout + counts.pswpout,
                    swapped_in: counts.zswpin + counts.pswpin,
                    peak_memory: peak,
                    problem: None,
                    latency: None,
                }
            }
        };
        sample.problem = problem(case, &sample.measured, dir, reference);
        sample.latency =
            Latency::parse(&std::fs::read_to_string(dir.join("stderr")).unwrap_or_default());
        Ok(sample)
    }
}

/// Runs `f` while a thread samples the size of the kernel's zswap pool
/// every 10 ms; returns `f`'s result and the largest size seen.
fn while_sampling_pool<T>(f: impl FnOnce() -> T) -> (T, u64) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = 0;
            while !done.load(Ordering::Acquire) {
                peak = peak.max(uzswap_bench::kernel::zswap_pool_bytes());
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            peak.max(uzswap_bench::kernel::zswap_pool_bytes())
        });
        let out = f();
        done.store(true, Ordering::Release);
        (out, sampler.join().unwrap_or(0))
    })
}

/// What is wrong with a run: it timed out, failed, or its outputs differ
/// from the reference run's.
fn problem(case: &Case, m: &Measured, dir: &Path, reference: Option<&Path>) -> Option<String> {
    if m.timed_out {
        return Some("timed out".into());
    }
    if m.code != 0 {
        let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
        return Some(failure(m.code, &program_error(&stderr)));
    }
    let reference = reference?;
    let read = |d: &Path| std::fs::read(d.join("stdout")).ok();
    if read(reference) != read(dir) {
        return Some("stdout differs from the plain run's".into());
    }
    for file in case.outputs {
        let a = sha256(&reference.join("cwd").join(file));
        let b = sha256(&dir.join("cwd").join(file));
        match (a, b) {
            (Ok(x), Ok(y)) if x == y => {}
            (Ok(_), Ok(_)) => return Some(format!("{file} differs from the plain run's")),
            (Err(e), _) | (_, Err(e)) => return Some(e),
        }
    }
    None
}

/// The median (by elapsed time) of the runs that went right.
fn system_result(system: System, runs: Vec<Sample>) -> SystemResult {
    let total = runs.len();
    let first_problem = runs.iter().find_map(|s| s.problem.clone());
    let mut good: Vec<Sample> = runs.into_iter().filter(|s| s.problem.is_none()).collect();
    good.sort_by_key(|s| s.measured.elapsed);
    let failed = total - good.len();
    SystemResult {
        system,
        median: good.get(good.len() / 2).cloned(),
        failed,
        first_problem,
        runs: total,
    }
}

fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// `a / b`, or `-` when `b` is missing.
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
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

/// The runs of `c` that went right, and the first problem of the others.
fn runs_ok(c: &SystemResult) -> Cell {
    let ok = format!("{}/{}", c.runs - c.failed, c.runs);
    Cell::new(match &c.first_problem {
        Some(p) => format!("{ok}: {p}"),
        None => ok,
    })
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

/// A bar per program result and system: its median elapsed time, labelled
/// by `label` of the result and the system.
fn draw_elapsed(
    results: &[ProgramResult],
    file: &str,
    title: &str,
    label: impl Fn(&ProgramResult) -> String,
) {
    let bars: Vec<Bar> = results
        .iter()
        .flat_map(|r| {
            let name = label(r);
            r.cells.iter().filter_map(move |c| {
                Some(Bar {
                    label: format!("{name} {}", c.system.slug()),
                    value: secs(c.median.as_ref()?.measured.elapsed),
                    group: c.system.label(),
                })
            })
        })
        .collect();
    crate::chart_at(
        crate::plot_path(file),
        title,
        "whole-job elapsed time, s (median; lower is better)",
        &bars,
    );
}

fn csv(rows: &[CsvRow]) -> String {
    let mut out = String::from(
        "program,system,rep,code,elapsed_s,cpu_s,max_rss_bytes,peak_memory_bytes,swapped_out_pages,swapped_in_pages,problem\n",
    );
    for (case, system, rep, s) in rows {
        let fields = [
            case.to_string(),
            system.clone(),
            rep.to_string(),
            s.measured.code.to_string(),
            format!("{:.3}", secs(s.measured.elapsed)),
            format!("{:.3}", secs(s.measured.cpu)),
            s.measured.max_rss.to_string(),
            s.peak_memory.to_string(),
            s.swapped_out.to_string(),
            s.swapped_in.to_string(),
            s.problem.clone().unwrap_or_default(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample(ms: u64, problem: Option<&str>) -> Sample {
        Sample {
            measured: Measured {
                elapsed: Duration::from_millis(ms),
                ..Measured::default()
            },
            limit: 0,
            swapped_out: 0,
            swapped_in: 0,
            peak_memory: 0,
            problem: problem.map(String::from),
            latency: None,
        }
    }

    #[test]
    fn the_median_is_of_the_runs_that_went_right() {
        let c = system_result(
            System::Uzswap(Variant::DEFAULT),
            vec![
                sample(300, None),
                sample(100, Some("exit 1")),
                sample(500, None),
                sample(200, None),
            ],
        );
        assert_eq!(c.runs, 4);
        assert_eq!(c.failed, 1);
        assert_eq!(c.first_problem.as_deref(), Some("exit 1"));
        assert_eq!(
            c.median.unwrap().measured.elapsed,
            Duration::from_millis(300)
        );
        let none = system_result(System::KernelZswap, vec![sample(1, Some("timed out"))]);
        assert!(none.median.is_none());
        assert_eq!(none.failed, 1);
    }

    #[test]
    fn ratios_need_both_sides() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), "1.50x");
        assert_eq!(ratio(Some(3.0), None), "-");
        assert_eq!(ratio(Some(3.0), Some(0.0)), "-");
    }
}
