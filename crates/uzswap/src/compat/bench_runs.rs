//! The runs of `uzswap bench programs` and `uzswap bench faults`: the
//! systems a program runs on (plain, `uzswap run` and its variants, the
//! kernel's zswap and zram in a memcg), one run of a program on one
//! system with what it measured, and the median of each system's runs.
//!
//! [`ProgramsArgs`] are `uzswap bench programs`' flags and what every run
//! reads of them; `bench faults` fills them in from its own. The
//! `randpage` program of `bench faults` also prints its fault latency,
//! which every run reads from its stderr ([`Latency`]): it lives here,
//! with the sample it is part of, so that `faults.rs` and `bench.rs` both
//! sit on this module and it on neither.

use super::cases::{Case, Ctx, Scale, Sizes};
use super::outputs::{failure, program_error, sha256};
use super::proc::{self, Job, Measured, User};
use super::work::{make_dir, readable_by_all, Work};
use clap::Args;
use std::path::{Path, PathBuf};
use uzswap_bench::kernel::{KernelSwap, Machine, SwapCounts};
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
    #[command(flatten)]
    pub work: WorkArgs,
    /// The work folder's name part.
    #[arg(skip = "programs")]
    pub name: &'static str,
}

/// Where a benchmark of programs keeps its work, and what it leaves.
#[derive(Args, Debug, Clone, Default)]
pub struct WorkArgs {
    /// Folder to create the work folder `uzswap-NAME-PID` in (default:
    /// $TMPDIR).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep the work folder (inputs, outputs, stdout/stderr of every run).
    #[arg(long)]
    pub keep: bool,
    /// Also write every run (not only the medians) as CSV to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Where a program runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum System {
    Plain,
    Uzswap(Variant),
    KernelZswap,
    /// Kernel zswap in a memcg as large as the same rep's uzswap peak RSS.
    KernelZswapEqualMemory,
    /// Kernel zswap in a memcg of this many percent of the same rep's
    /// plain peak memory (a fixed limit of a sweep).
    KernelZswapShare(u32),
    KernelZram(String),
}

/// How `uzswap run` is run: [`Variant::DEFAULT`] for `bench programs`,
/// the variants of `faults.rs` for `bench faults`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Variant {
    pub(super) label: &'static str,
    pub(super) slug: &'static str,
    /// Flags besides the limit, the compressor and the case's own.
    pub(super) flags: &'static [&'static str],
    pub(super) pool: PoolRule,
}

/// Whether the uzswap run's limit counts its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PoolRule {
    /// As the kernel side's memcg does (not on cgroup v1).
    AsTheMemcg,
    Counted,
    Uncounted,
}

impl Variant {
    /// `uzswap run` as a user runs it (the pool counted as the memcg
    /// counts zswap's).
    pub(super) const DEFAULT: Variant = Variant {
        label: "uzswap",
        slug: "uzswap",
        flags: &[],
        pool: PoolRule::AsTheMemcg,
    };

    pub(super) fn uncharged(&self) -> bool {
        match self.pool {
            PoolRule::AsTheMemcg => uzswap_bench::kernel::memcg_v1(),
            PoolRule::Counted => false,
            PoolRule::Uncounted => true,
        }
    }
}

impl System {
    pub(super) fn is_uzswap(&self) -> bool {
        matches!(self, System::Uzswap(_))
    }

    pub(super) fn label(&self) -> String {
        match self {
            System::Plain => "plain (no limit)".into(),
            System::Uzswap(v) => v.label.into(),
            System::KernelZswap => "kernel zswap".into(),
            System::KernelZswapEqualMemory => "kernel zswap, memcg = uzswap's peak RSS".into(),
            System::KernelZswapShare(p) => format!("kernel zswap, memcg = {p}% of plain peak"),
            System::KernelZram(a) => format!("kernel zram {a}"),
        }
    }

    /// A folder name for its runs.
    pub(super) fn slug(&self) -> &'static str {
        match self {
            System::Plain => "plain",
            System::Uzswap(v) => v.slug,
            System::KernelZswap => "zswap",
            System::KernelZswapEqualMemory => "zswap-eqmem",
            System::KernelZswapShare(_) => "zswap-share",
            System::KernelZram(_) => "zram",
        }
    }
}

/// One run of one program on one system.
#[derive(Debug, Clone)]
pub(super) struct Sample {
    pub(super) measured: Measured,
    /// The limit it ran under, bytes (0: none).
    pub(super) limit: u64,
    /// Pages swapped out: zswap stores plus pages written to the swap
    /// file or device.
    pub(super) swapped_out: u64,
    pub(super) swapped_in: u64,
    /// uzswap and plain: peak RSS of the largest process (uzswap's pool
    /// lives in it); kernel: the memcg's peak charge, plus the pool's peak
    /// where the memcg does not charge it (v1, zram).
    pub(super) peak_memory: u64,
    /// What went wrong (exit status, output differs), if anything.
    pub(super) problem: Option<String>,
    /// The program's own fault-latency line, if it prints one
    /// (`randpage: faults N p50_us X p99_us Y` on stderr).
    pub(super) latency: Option<Latency>,
}

/// Page-fault latency as the program measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Latency {
    pub(super) faults: u64,
    pub(super) p50_us: f64,
    pub(super) p99_us: f64,
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
pub(super) struct SystemResult {
    pub(super) system: System,
    pub(super) median: Option<Sample>,
    /// Runs that went wrong, with the first problem.
    pub(super) failed: usize,
    pub(super) first_problem: Option<String>,
    pub(super) runs: usize,
}

/// One program's results.
pub(super) struct ProgramResult {
    pub(super) case: &'static str,
    pub(super) limit: u64,
    pub(super) cells: Vec<SystemResult>,
    /// Why the program did not run at all.
    pub(super) skipped: Option<String>,
}

/// The work folder `uzswap-NAME-PID` of a benchmark named `name`.
pub(super) fn create_work(w: &WorkArgs, name: &str) -> Result<Work, String> {
    let parent = w.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let root = parent.join(format!("uzswap-{name}-{}", std::process::id()));
    if root.exists() {
        return Err(format!("{} exists already", root.display()));
    }
    make_dir(&root, 0o755)?;
    Ok(Work { root, keep: w.keep })
}

/// Where a bench's uzswap run makes its swap file: its scratch folder,
/// or /var/tmp where that lives in memory (a work folder in /dev/shm)
/// ([`launch::rundir::on_a_disk`]), where the kernel's runs have theirs.
/// Beside the kernel's swap on a disk, a file in memory would make
/// uzswap's reads memory copies, and the pages written there would escape
/// the memory the benches measure (process RSS and the kernel's pool).
pub(super) fn swapfile_dir(scratch: &Path) -> PathBuf {
    launch::rundir::on_a_disk(scratch.to_path_buf())
}

/// What every program's runs share.
pub(super) struct Bench<'a> {
    pub(super) args: &'a ProgramsArgs,
    pub(super) scale: Scale,
    pub(super) systems: &'a [System],
    pub(super) work: &'a Work,
    pub(super) user: &'a User,
    pub(super) uzswap: &'a Path,
    pub(super) progress: &'a Progress,
    /// Sample each run's memory this often (`MemoryTrace`), if at all.
    pub(super) sample_every: Option<std::time::Duration>,
}

/// A CSV line: program, system, rep, and the sample.
pub(super) type CsvRow = (&'static str, String, usize, Sample);

impl Bench<'_> {
    /// Runs each `(case, sizes)` of `runs` ([`Bench::program`]), in order,
    /// until done or interrupted; their results, and every run's CSV row.
    pub(super) fn programs(
        &self,
        runs: impl IntoIterator<Item = (&'static Case, Option<Sizes>)>,
    ) -> (Vec<ProgramResult>, Vec<CsvRow>) {
        let mut results = Vec::new();
        let mut csv_rows = Vec::new();
        for (case, sizes) in runs {
            let (result, samples) = self.program(case, sizes);
            csv_rows.extend(samples);
            results.push(result);
            if proc::interrupted() {
                break;
            }
        }
        self.progress.finish();
        (results, csv_rows)
    }

    /// Makes `case`'s input and runs it on every system `reps` times,
    /// interleaved, at `sizes` (default: the case's at the scale).
    pub(super) fn program(
        &self,
        case: &'static Case,
        sizes: Option<Sizes>,
    ) -> (ProgramResult, Vec<CsvRow>) {
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
            let mut plain_peak = None;
            for (i, system) in self.systems.iter().enumerate() {
                if proc::interrupted() {
                    break 'reps;
                }
                let run_dir = dir.join(format!("{}-{i}-{rep}", system.slug()));
                let run = match system {
                    System::KernelZswapShare(p) => plain_peak
                        .map(|peak: u64| (peak * u64::from(*p) / 100).next_multiple_of(4096))
                        .ok_or_else(|| "no plain run of this rep to size the memcg by".to_string())
                        .and_then(|l| {
                            self.one_run(case, &command, system, l, &run_dir, reference.as_deref())
                        }),
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
                if *system == System::Plain && sample.problem.is_none() {
                    plain_peak = Some(match sample.measured.memory.peak {
                        0 => sample.peak_memory,
                        sampled => sampled,
                    });
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
        let sampling = |extra: fn() -> u64| {
            self.sample_every
                .map(|every| proc::Sampling { every, extra })
        };
        let mut sample = match system {
            System::Plain => {
                let m = proc::run_sampled(self.user, &job(command.to_vec()), sampling(|| 0))?;
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
                let mut argv = vec![self.uzswap.display().to_string(), "run".into()];
                // No limit: `uzswap run`'s own default.
                if limit > 0 {
                    argv.extend(["--limit".into(), limit.to_string()]);
                }
                argv.extend([
                    "--compressor".into(),
                    self.args.compressor.clone(),
                    "--swapfile-dir".into(),
                    swapfile_dir(&scratch).display().to_string(),
                    "--stats-out".into(),
                    stats.display().to_string(),
                ]);
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
                let m = proc::run_sampled(self.user, &job(argv), sampling(|| 0))?;
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
            System::KernelZswap
            | System::KernelZswapEqualMemory
            | System::KernelZswapShare(_)
            | System::KernelZram(_) => {
                let swap = match system {
                    System::KernelZram(a) => KernelSwap::Zram(a.clone()),
                    _ => KernelSwap::Zswap(self.args.compressor.clone()),
                };
                // Room for everything the program touches, twice over.
                let swap_bytes = (8 * limit as usize).max(1 << 30);
                let machine = Machine::prepare(&swap, limit as usize, None, swap_bytes)
                    .map_err(|e| e.to_string())?;
                let before = SwapCounts::now().map_err(|e| e.to_string())?;
                // The pool is outside the memcg's processes (and, on v1,
                // outside its charge): sampled with them.
                let extra: fn() -> u64 = match system {
                    System::KernelZram(_) => Machine::zram_mem_used,
                    _ => uzswap_bench::kernel::zswap_pool_bytes,
                };
                let (m, pool_peak) = while_sampling_pool(|| {
                    proc::run_sampled(
                        self.user,
                        &job(machine.enter_argv(command)),
                        sampling(extra),
                    )
                });
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bench_keeps_uzswaps_swap_file_out_of_memory_as_the_kernels() {
        let var_tmp = Path::new(launch::rundir::VAR_TMP);
        if !var_tmp.is_dir() || common::memfs::path_in_memory(var_tmp) {
            // No folder on a disk to go to: the scratch folder stays.
            assert_eq!(swapfile_dir(Path::new("/dev/shm")), Path::new("/dev/shm"));
            return;
        }
        assert_eq!(swapfile_dir(Path::new("/dev/shm")), var_tmp);
        // A scratch folder on a disk stays.
        let on_disk = var_tmp.join("uzswap-bench-scratch");
        assert_eq!(swapfile_dir(&on_disk), on_disk);
    }

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
}
