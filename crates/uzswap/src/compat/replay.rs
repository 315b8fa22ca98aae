//! `uzswap bench replay`: the design lab's fidelity and cost, on programs
//! of the compatibility suite. Each program runs under `uzswap run` at its
//! limit without and with `--record` (interleaved: the recording's
//! overhead), then its trace is replayed through the runtime's protocol at
//! the recorded limit (predicted swap-ins and evictions against the run's
//! own counters), and swept over limits under every policy (how long a
//! design takes to try).

use super::bench_runs::{create_work, WorkArgs};
use super::cases::{Case, Ctx, Scale};
use super::outputs::sha256;
use super::proc::{self, Job, User};
use super::summary::human_size;
use super::work::{make_dir, readable_by_all, Work};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use lab::{Limit, ProtocolConfig, Workload};
use std::path::Path;
use uzswap_bench::Progress;

#[derive(Args, Debug)]
pub struct ReplayBenchArgs {
    /// Programs (cases of `uzswap compat --list`), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "randpage,sort,python-list,sqlite,gcc"
    )]
    pub only: Vec<String>,
    /// Runs of each program without and with --record, interleaved.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// The compatibility suite's full sizes (default: its quick sizes).
    #[arg(long)]
    pub full: bool,
    /// Limits of the sweep (every policy at each).
    #[arg(long, default_value_t = 10)]
    pub sweep: usize,
    /// Runs and replays with the pool outside the limit (`uzswap run
    /// --uncharged-pool`): the swap file is then rarely used, and the
    /// replay, which has no file tier, follows evictions too.
    #[arg(long)]
    pub uncharged_pool: bool,
    /// Compressors compared on each recorded program's sampled pages, and
    /// replayed storing them at the recorded limit (comma-separated;
    /// `none` for none).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "lz4,lzo-rle,zstd:3,deflate:6",
        value_parser = compressor_or_none
    )]
    pub compressors: Vec<Option<compress::Algorithm>>,
    #[command(flatten)]
    pub work: WorkArgs,
}

fn compressor_or_none(s: &str) -> Result<Option<compress::Algorithm>, String> {
    match s {
        "none" => Ok(None),
        s => s
            .parse()
            .map(Some)
            .map_err(|e: compress::UnknownAlgorithm| e.to_string()),
    }
}

/// One program's results.
struct Fidelity {
    case: &'static str,
    limit: u64,
    /// Median elapsed without and with --record.
    plain_s: f64,
    recording_s: f64,
    trace_bytes: u64,
    /// The run's counters and the replay's, per recorded rep.
    runs: Vec<(u64, u64, u64, u64)>,
    /// Swap-ins and evictions of every run, recorded or not: how far the
    /// program's own runs differ from each other (a replay is one path).
    every_run: Vec<(u64, u64)>,
    /// Pages brought in at the recorded limit by the last rep's replay,
    /// under the runtime's protocol and under Belady's optimum.
    uzswap_pages_in: u64,
    opt_pages_in: u64,
    sweep_replays: usize,
    sweep_s: f64,
    /// Seed 002 on the recorded run: the protocol at the recorded limit
    /// under each readahead policy.
    readahead: Vec<lab::Outcome>,
    /// The program was paged from outside (statically linked): the replay
    /// is the in-process design, not the pager that ran.
    outside: bool,
    /// Compressors on the run's sampled pages, and the protocol at the
    /// recorded limit storing them with each.
    compressors: Vec<(lab::compressors::CompressorRow, lab::Outcome)>,
    problem: Option<String>,
}

/// What every program's runs share.
struct Bench<'a> {
    args: &'a ReplayBenchArgs,
    scale: Scale,
    work: &'a Work,
    me: &'a User,
    uzswap: &'a Path,
    progress: &'a Progress,
}

/// The readahead policies of seed 002, as replay policy names.
const READAHEAD: [&str; 3] = ["uzswap:always", "uzswap:bypass", "uzswap:disk-only"];

pub fn run(a: &ReplayBenchArgs) -> Result<bool, String> {
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let cases = super::select_cases(&a.only)?;
    let scale = if a.full { Scale::Full } else { Scale::Quick };
    let work = create_work(&a.work, "replay")?;
    let me = User::Invoker(proc::invoker_name());
    let uzswap = super::work::locate_tools(&work, std::slice::from_ref(&me))?.uzswap;
    proc::end_commands_on_interrupt();
    println!(
        "uzswap bench replay ({}, pool {}): {} programs, {} runs each without and with --record; work folder {}",
        if a.full { "full sizes" } else { "quick sizes" },
        if a.uncharged_pool { "outside the limit" } else { "counted in the limit" },
        cases.len(),
        a.reps,
        work.root.display()
    );
    let progress = Progress::new("bench replay", (cases.len() * (2 * a.reps + 1)) as u64);
    let bench = Bench {
        args: a,
        scale,
        work: &work,
        me: &me,
        uzswap: &uzswap,
        progress: &progress,
    };
    let mut results = Vec::new();
    for case in cases {
        results.push(bench.program(case));
        if proc::interrupted() {
            break;
        }
    }
    progress.finish();
    work.remove_unless_kept();
    if proc::interrupted() {
        return Err("interrupted".into());
    }
    println!("{}", table(&results));
    println!("{}", readahead_table(&results));
    if a.compressors.iter().any(Option::is_some) {
        println!("{}", compressor_table(&results));
    }
    Ok(results.iter().all(|r| r.problem.is_none()))
}

impl Bench<'_> {
    fn program(&self, case: &'static Case) -> Fidelity {
        let sizes = case.sizes(self.scale);
        let mut f = Fidelity {
            case: case.name,
            limit: sizes.limit,
            plain_s: 0.0,
            recording_s: 0.0,
            trace_bytes: 0,
            runs: Vec::new(),
            every_run: Vec::new(),
            uzswap_pages_in: 0,
            opt_pages_in: 0,
            sweep_replays: 0,
            sweep_s: 0.0,
            readahead: Vec::new(),
            outside: false,
            compressors: Vec::new(),
            problem: None,
        };
        if let Err(e) = self.measure(case, &mut f) {
            f.problem = Some(e);
        }
        f
    }
    fn measure(&self, case: &'static Case, f: &mut Fidelity) -> Result<(), String> {
        let (a, scale, work, me, progress) =
            (self.args, self.scale, self.work, self.me, self.progress);
        let missing = case.missing();
        if !missing.is_empty() {
            return Err(format!("not installed: {}", missing.join(", ")));
        }
        let sizes = case.sizes(scale);
        let input = work.inputs(case.name);
        let ctx = Ctx {
            input: &input,
            size: sizes.size,
        };
        make_dir(&input, 0o755)
            .and_then(|()| (case.setup)(&ctx))
            .and_then(|()| readable_by_all(&input))?;
        let command = (case.command)(&ctx);
        let dir = work.runs(me, case.name);
        let (mut plain, mut recording) = (Vec::new(), Vec::new());
        let mut reference: Option<String> = None;
        let mut last_trace = None;
        for rep in 0..a.reps {
            // Alternate which goes first: drift in the machine falls on both.
            let order = if rep % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for record in order {
                let run_dir =
                    dir.join(format!("{}-{rep}", if record { "record" } else { "plain" }));
                let one = self.one_run(case, &command, sizes.limit, record, &run_dir)?;
                progress.step(&format!(
                    "{} {} run {}: {:.1}s",
                    case.name,
                    if record { "with --record" } else { "without" },
                    rep + 1,
                    one.elapsed
                ));
                match &reference {
                    None => reference = Some(one.digest.clone()),
                    Some(d) if *d != one.digest => {
                        return Err(format!(
                            "outputs differ between runs ({})",
                            run_dir.display()
                        ))
                    }
                    Some(_) => {}
                }
                f.every_run.push((one.swapins, one.evicted));
                if record {
                    recording.push(one.elapsed);
                    let trace = run_dir.join("run.trace");
                    f.trace_bytes = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
                    let w =
                        Workload::from_trace(&trace::read_file(&trace).map_err(|e| e.to_string())?);
                    let o = lab::replay_one(&w, lab::protocol::NAME, Limit::Recorded, &config(a))
                        .map_err(|e| e.to_string())?;
                    f.runs
                        .push((one.swapins, o.swapin_faults, one.evicted, o.evicted_pages));
                    f.uzswap_pages_in = o.pages_in;
                    f.outside = w.recorded.paged_from_outside > 0;
                    last_trace = Some(w);
                } else {
                    plain.push(one.elapsed);
                }
            }
        }
        f.plain_s = median(&mut plain);
        f.recording_s = median(&mut recording);
        let w = last_trace.ok_or("no recorded run")?;
        f.opt_pages_in = lab::replay_one(&w, "opt", Limit::Recorded, &config(a))
            .map_err(|e| e.to_string())?
            .pages_in;
        let names: Vec<String> = std::iter::once(lab::protocol::NAME)
            .chain(lab::policies::NAMES)
            .map(String::from)
            .collect();
        let limits: Vec<Limit> = (1..=a.sweep)
            .map(|k| Limit::Fixed((w.pages * k / a.sweep).max(16) as u64))
            .collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let started = std::time::Instant::now();
        let outcomes = lab::sweep(&w, &names, &limits, &config(a), threads, &|_| {})
            .map_err(|e| e.to_string())?;
        f.sweep_s = started.elapsed().as_secs_f64();
        f.sweep_replays = outcomes.len();
        let names: Vec<String> = READAHEAD.iter().map(|s| s.to_string()).collect();
        f.readahead = lab::sweep(&w, &names, &[Limit::Recorded], &config(a), threads, &|_| {})
            .map_err(|e| e.to_string())?;
        let compressors: Vec<compress::Algorithm> =
            a.compressors.iter().flatten().copied().collect();
        f.compressors = compare_compressors(&w, &compressors, &config(a), threads)?;
        progress.step(&format!(
            "{}: sweep of {} replays",
            case.name,
            outcomes.len()
        ));
        work.remove_unless_kept_at(&dir);
        work.remove_unless_kept_at(&input);
        Ok(())
    }
}

/// Each compressor on the samples of `w`, beside the protocol replayed at
/// the recorded limit storing them with it (none without samples).
fn compare_compressors(
    w: &Workload,
    compressors: &[compress::Algorithm],
    cfg: &ProtocolConfig,
    threads: usize,
) -> Result<Vec<(lab::compressors::CompressorRow, lab::Outcome)>, String> {
    let rows = lab::compressors::compare(w, compressors);
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = compressors
        .iter()
        .map(|c| format!("{}/{c}", lab::protocol::NAME))
        .collect();
    let outcomes = lab::sweep(w, &names, &[Limit::Recorded], cfg, threads, &|_| {})
        .map_err(|e| e.to_string())?;
    Ok(rows.into_iter().zip(outcomes).collect())
}

/// The runs' settings as the replay follows them.
fn config(a: &ReplayBenchArgs) -> ProtocolConfig {
    ProtocolConfig {
        charge_pool: !a.uncharged_pool,
        ..ProtocolConfig::default()
    }
}

struct OneRun {
    elapsed: f64,
    digest: String,
    swapins: u64,
    evicted: u64,
}

impl Bench<'_> {
    /// One run of `case` under `uzswap run` at `limit`, recorded if `record`,
    /// in `dir`.
    fn one_run(
        &self,
        case: &Case,
        command: &[String],
        limit: u64,
        record: bool,
        dir: &Path,
    ) -> Result<OneRun, String> {
        let (a, me, uzswap, scale) = (self.args, self.me, self.uzswap, self.scale);
        let cwd = dir.join("cwd");
        let scratch = dir.join("scratch");
        make_dir(&cwd, 0o755)?;
        make_dir(&scratch, 0o755)?;
        let stats = dir.join("uzswap.stats");
        let mut argv = vec![
            uzswap.display().to_string(),
            "run".into(),
            "--limit".into(),
            limit.to_string(),
            "--swapfile-dir".into(),
            scratch.display().to_string(),
            "--stats-out".into(),
            stats.display().to_string(),
        ];
        if record {
            argv.extend([
                "--record".into(),
                dir.join("run.trace").display().to_string(),
            ]);
        }
        if a.uncharged_pool {
            argv.push("--uncharged-pool".into());
        }
        argv.extend(case.flags.iter().map(|f| f.to_string()));
        argv.push("--".into());
        argv.extend_from_slice(command);
        let job = Job {
            argv,
            cwd: cwd.clone(),
            scratch,
            stdout: dir.join("stdout"),
            stderr: dir.join("stderr"),
            timeout: scale.timeout(),
        };
        let m = proc::run(me, &job)?;
        if m.code != 0 || m.timed_out {
            let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
            return Err(super::outputs::failure(
                m.code,
                &super::outputs::program_error(&stderr),
            ));
        }
        let mut digest = sha256(&dir.join("stdout"))?;
        for out in case.outputs {
            digest.push_str(&sha256(&cwd.join(out))?);
        }
        let text =
            std::fs::read_to_string(&stats).map_err(|e| format!("{}: {e}", stats.display()))?;
        let report = launch::report::RunReport::parse(&text).map_err(|e| e.to_string())?;
        Ok(OneRun {
            elapsed: m.elapsed.as_secs_f64(),
            digest,
            swapins: report.total.runtime.swapin_faults,
            evicted: report.total.runtime.evicted_pages,
        })
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn percent(replayed: u64, run: u64) -> f64 {
    match run {
        0 if replayed == 0 => 0.0,
        0 => 100.0,
        n => (replayed as f64 - n as f64) * 100.0 / n as f64,
    }
}

/// How far apart the runs' counts lie: (largest − smallest) over the
/// smallest, percent (0 for fewer than two runs).
fn spread(counts: impl Iterator<Item = u64>) -> f64 {
    let (lo, hi) = counts.fold((u64::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
    if hi <= lo {
        return 0.0;
    }
    (hi - lo) as f64 * 100.0 / lo.max(1) as f64
}

fn table(results: &[Fidelity]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "program",
        "limit",
        "elapsed\n(median)",
        "with --record",
        "trace",
        "swap-ins\nrun → replay",
        "worst\nerror",
        "runs'\nspread",
        "evicted\nrun → replay",
        "worst\nerror",
        "runs'\nspread",
        "pages in\nuzswap / opt",
        "sweep",
    ]);
    for r in results {
        if let Some(p) = &r.problem {
            t.add_row([
                Cell::new(r.case),
                Cell::new(human_size(r.limit)),
                Cell::new(p),
            ]);
            continue;
        }
        let worst = |f: fn(&(u64, u64, u64, u64)) -> f64| {
            r.runs
                .iter()
                .map(f)
                .fold(0.0f64, |m, e| if e.abs() > m.abs() { e } else { m })
        };
        let last = r.runs.last().copied().unwrap_or_default();
        let name = match r.outside {
            // Another pager ran: the errors compare two designs.
            true => format!("{} (paged from outside)", r.case),
            false => r.case.to_string(),
        };
        t.add_row([
            Cell::new(name),
            Cell::new(human_size(r.limit)),
            right(format!("{:.2} s", r.plain_s)),
            right(format!(
                "{:.2} s ({:+.0}%)",
                r.recording_s,
                (r.recording_s / r.plain_s.max(1e-9) - 1.0) * 100.0
            )),
            right(human_size(r.trace_bytes)),
            right(format!("{} → {}", last.0, last.1)),
            right(format!("{:+.1}%", worst(|x| percent(x.1, x.0)))),
            right(format!("{:.0}%", spread(r.every_run.iter().map(|x| x.0)))),
            right(format!("{} → {}", last.2, last.3)),
            right(format!("{:+.1}%", worst(|x| percent(x.3, x.2)))),
            right(format!("{:.0}%", spread(r.every_run.iter().map(|x| x.1)))),
            right(format!("{} / {}", r.uzswap_pages_in, r.opt_pages_in)),
            right(format!("{} replays, {:.2} s", r.sweep_replays, r.sweep_s)),
        ]);
    }
    t
}

/// Seed 002's comparison, on each recorded program at its limit.
fn readahead_table(results: &[Fidelity]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "program",
        "readahead",
        "swap-in\nfaults",
        "pages in",
        "read from\nthe file",
        "read ahead\n(used)",
        "evicted",
    ]);
    for r in results.iter().filter(|r| r.problem.is_none()) {
        for o in &r.readahead {
            let (ra, hit) = o
                .store
                .as_ref()
                .map_or((0, 0), |s| (s.swap_ra, s.swap_ra_hit));
            t.add_row([
                Cell::new(r.case),
                Cell::new(o.policy.trim_start_matches("uzswap:")),
                right(o.swapin_faults),
                right(o.pages_in),
                right(o.file_reads),
                right(format!("{ra} ({hit})")),
                right(o.evicted_pages),
            ]);
        }
    }
    t
}

/// Compressors on each recorded program's own pages: per page (ratio,
/// speed, on the samples) and as a pool (the protocol replayed at the
/// recorded limit, storing the samples with each).
fn compressor_table(results: &[Fidelity]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "program",
        "compressor",
        "pages\nsampled",
        "compressed\n/ page bytes",
        "compress\nMB/s",
        "decompress\nMB/s",
        "replayed: bytes\nstored",
        "pool\npeak",
        "swap-in\nfaults",
        "read from\nthe file",
    ]);
    for r in results.iter().filter(|r| r.problem.is_none()) {
        for (row, o) in &r.compressors {
            t.add_row([
                Cell::new(r.case),
                Cell::new(row.compressor.to_string()),
                right(row.samples),
                right(format!("{:.3}", row.ratio)),
                right(format!("{:.0}", row.compress_bytes_per_s / 1e6)),
                right(format!("{:.0}", row.decompress_bytes_per_s / 1e6)),
                right(human_size(o.stored_bytes)),
                right(human_size(o.pool_peak_pages * 4096)),
                right(o.swapin_faults),
                right(o.file_reads),
            ]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_range_over_the_smallest_run() {
        assert_eq!(
            spread([777, 1200, 1180].into_iter()),
            (1200.0 - 777.0) * 100.0 / 777.0
        );
        assert_eq!(spread([5, 5, 5].into_iter()), 0.0);
        assert_eq!(spread([42].into_iter()), 0.0);
        assert_eq!(spread(std::iter::empty()), 0.0);
        assert_eq!(spread([0, 10].into_iter()), 1000.0);
    }
}
