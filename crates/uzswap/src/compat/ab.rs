//! `uzswap bench ab`: two builds of uzswap side by side on the
//! compatibility suite's programs. A design change is judged by the
//! programs users run, not by a microbenchmark: this runs `uzswap compat`
//! of another build (`--baseline`, an older commit's or a patched tree's
//! `uzswap`) and of this one, interleaved (ABBA: the baseline first in odd
//! rounds, second in even ones, so that neither always runs on a warmer
//! machine), each round the same cases at the same limits, and reports
//! each program's median elapsed and CPU time under either build and the
//! speed-up between them.
//!
//! Each build runs its own compatibility suite, so each checks its own
//! outputs against plain runs byte for byte: a run whose output differed,
//! or that failed, is left out of its medians and counted in its row.
//! The two builds must name the cases alike (`uzswap compat --list`).

use super::bench_runs::{create_work, WorkArgs};
use super::summary::csv_field;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Table};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use uzswap_bench::plot::Bar;
use uzswap_bench::Progress;

/// `uzswap bench ab`: this build against another on real programs.
#[derive(Args, Debug)]
pub struct AbArgs {
    /// The other build's `uzswap` (with its LD_PRELOAD library beside it,
    /// as `cargo build --release --workspace` leaves them in
    /// target/release).
    #[arg(long)]
    pub baseline: PathBuf,
    /// Cases of `uzswap compat --list` (comma-separated). The default: the
    /// small-object programs.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "python-list,sqlite,sort,xz,zstd,redis"
    )]
    pub only: Vec<String>,
    /// Users to run as (passed to `uzswap compat --users`; default: its
    /// own, root and nobody as root).
    #[arg(long)]
    pub users: Option<String>,
    /// Rounds; each runs both builds once.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Full sizes (default: the quick ones).
    #[arg(long)]
    pub full: bool,
    /// Folder for the suites' swap files (passed to `uzswap compat
    /// --swapfile-dir` where the baseline has that flag; otherwise the
    /// work folder holds them). `/dev/shm` compares the paging itself,
    /// not the disk's reads.
    #[arg(long)]
    pub swapfile_dir: Option<PathBuf>,
    /// The bench's work folder (each suite's CSV and output; the suites'
    /// own work folders go beside it) and its CSV of every run of both
    /// builds.
    #[command(flatten)]
    pub work: WorkArgs,
}

/// Which build a run was of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Baseline,
    ThisBuild,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Baseline => "baseline",
            Side::ThisBuild => "this build",
        }
    }
}

/// One program's paged run, as a suite's CSV gives it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct AbRun {
    pub side: Side,
    pub round: usize,
    pub program: String,
    pub user: String,
    pub elapsed_s: f64,
    pub cpu_s: f64,
    pub plain_elapsed_s: f64,
    /// Ran, paged, and printed what the plain run printed.
    pub ok: bool,
}

/// One program's row: the medians of the runs that went right.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct AbRow {
    pub program: String,
    pub user: String,
    /// Median elapsed and CPU time, s, of the baseline's good runs.
    pub baseline: Option<(f64, f64)>,
    /// The same for this build.
    pub this_build: Option<(f64, f64)>,
    /// Median plain elapsed time over both builds' runs, s.
    pub plain_s: Option<f64>,
    /// Good runs and all runs, baseline then this build.
    pub runs: [(usize, usize); 2],
}

impl AbRow {
    /// Baseline elapsed over this build's: above 1, this build is faster.
    pub fn speedup(&self) -> Option<f64> {
        match (self.baseline, self.this_build) {
            (Some((b, _)), Some((t, _))) if t > 0.0 => Some(b / t),
            _ => None,
        }
    }
}

/// Splits one CSV line as `summary::csv_field` writes fields: a field with
/// a comma, a quote or a newline is quoted, its quotes doubled.
pub(super) fn csv_split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let field = fields.last_mut().expect("never empty");
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => field.push(c),
        }
    }
    fields
}

/// The paged runs in a suite's `--out` CSV (`uzswap compat`'s columns,
/// found by name).
pub(super) fn parse_suite_csv(text: &str, side: Side, round: usize) -> Result<Vec<AbRun>, String> {
    let mut lines = text.lines();
    let header = csv_split(lines.next().ok_or("an empty CSV")?);
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or(format!("no column {name} in the suite's CSV"))
    };
    let (program, user, elapsed, cpu, plain, identical, verdict) = (
        col("program")?,
        col("user")?,
        col("uzswap_elapsed_s")?,
        col("uzswap_cpu_s")?,
        col("plain_elapsed_s")?,
        col("identical")?,
        col("verdict")?,
    );
    let mut runs = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f = csv_split(line);
        let field = |i: usize| f.get(i).map_or("", String::as_str);
        let secs = |i: usize| field(i).parse::<f64>().unwrap_or(f64::NAN);
        let (elapsed_s, cpu_s) = (secs(elapsed), secs(cpu));
        runs.push(AbRun {
            side,
            round,
            program: field(program).to_string(),
            user: field(user).to_string(),
            elapsed_s,
            cpu_s,
            plain_elapsed_s: secs(plain),
            ok: field(identical) == "yes" && field(verdict) == "ok" && elapsed_s.is_finite(),
        });
    }
    Ok(runs)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Medians per program and user, in the order the runs first name them.
pub(super) fn summarize(runs: &[AbRun]) -> Vec<AbRow> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in runs {
        let key = (r.program.clone(), r.user.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(program, user)| {
            let mine: Vec<&AbRun> = runs
                .iter()
                .filter(|r| r.program == program && r.user == user)
                .collect();
            let side = |s: Side| {
                let all: Vec<&&AbRun> = mine.iter().filter(|r| r.side == s).collect();
                let good: Vec<&&AbRun> = all.iter().copied().filter(|r| r.ok).collect();
                let medians = median(good.iter().map(|r| r.elapsed_s).collect())
                    .zip(median(good.iter().map(|r| r.cpu_s).collect()));
                (medians, (good.len(), all.len()))
            };
            let (baseline, b_runs) = side(Side::Baseline);
            let (this_build, t_runs) = side(Side::ThisBuild);
            AbRow {
                plain_s: median(mine.iter().map(|r| r.plain_elapsed_s).collect()),
                program,
                user,
                baseline,
                this_build,
                runs: [b_runs, t_runs],
            }
        })
        .collect()
}

/// The table of `rows`.
pub(super) fn table(rows: &[AbRow]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "program",
        "user",
        "baseline: elapsed (CPU)",
        "this build: elapsed (CPU)",
        "speed-up (elapsed)",
        "plain",
        "good runs (baseline, this)",
    ]);
    let time =
        |m: Option<(f64, f64)>| m.map_or("-".to_string(), |(e, c)| format!("{e:.2}s ({c:.2}s)"));
    for r in rows {
        t.add_row(vec![
            Cell::new(&r.program),
            Cell::new(&r.user),
            Cell::new(time(r.baseline)),
            Cell::new(time(r.this_build)),
            Cell::new(r.speedup().map_or("-".into(), |s| format!("{s:.2}x"))),
            Cell::new(r.plain_s.map_or("-".into(), |p| format!("{p:.2}s"))),
            Cell::new(format!(
                "{}/{}, {}/{}",
                r.runs[0].0, r.runs[0].1, r.runs[1].0, r.runs[1].1
            )),
        ]);
    }
    t
}

/// Whether `uzswap` at `bin` has `compat --swapfile-dir` (older builds
/// put the swap files in the work folder).
fn has_swapfile_dir(bin: &Path) -> bool {
    Command::new(bin)
        .args(["compat", "--help"])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--swapfile-dir"))
}

/// One build under test: its `uzswap` and the `compat` arguments each of
/// its suite runs takes but `--out` (its flags asked of it once).
struct Build {
    side: Side,
    bin: PathBuf,
    args: Vec<String>,
}

impl Build {
    fn new(a: &AbArgs, side: Side, bin: PathBuf, parent: &Path) -> Self {
        let args = suite_args(a, &bin, parent);
        Self { side, bin, args }
    }
}

/// The `uzswap compat` command line of a build's suite runs, but `--out`.
fn suite_args(a: &AbArgs, bin: &Path, parent: &Path) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "compat".into(),
        if a.full { "--full" } else { "--quick" }.into(),
        "--only".into(),
        a.only.join(","),
        "--no-plot".into(),
        "--work-dir".into(),
        parent.display().to_string(),
    ];
    if let Some(u) = &a.users {
        args.extend(["--users".into(), u.clone()]);
    }
    if let Some(d) = &a.swapfile_dir {
        if has_swapfile_dir(bin) {
            args.extend(["--swapfile-dir".into(), d.display().to_string()]);
        }
    }
    args
}

/// Runs one build's suite for `round` (its CSV and output in `work`);
/// its paged runs.
fn run_suite(build: &Build, work: &Path, round: usize) -> Result<Vec<AbRun>, String> {
    let (side, bin) = (build.side, &build.bin);
    let slug = match side {
        Side::Baseline => "baseline",
        Side::ThisBuild => "this",
    };
    let csv = work.join(format!("{slug}-{round}.csv"));
    let log = work.join(format!("{slug}-{round}.log"));
    let log_file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err_file = log_file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let status = Command::new(bin)
        .args(&build.args)
        .arg("--out")
        .arg(&csv)
        .stdout(log_file)
        .stderr(err_file)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    // Exit 1: some case failed (its rows say which); 2 or a signal: the
    // suite itself could not run.
    if !matches!(status.code(), Some(0 | 1)) {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "{} compat ({}) ended with {status}: {}",
            bin.display(),
            side.label(),
            tail.join(" / ")
        ));
    }
    let text = std::fs::read_to_string(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
    parse_suite_csv(&text, side, round)
}

fn write_csv(path: &Path, runs: &[AbRun]) -> Result<(), String> {
    let mut out = String::from("build,round,program,user,elapsed_s,cpu_s,plain_elapsed_s,ok\n");
    for r in runs {
        let fields = [
            r.side.label().to_string(),
            r.round.to_string(),
            r.program.clone(),
            r.user.clone(),
            format!("{:.3}", r.elapsed_s),
            format!("{:.3}", r.cpu_s),
            format!("{:.3}", r.plain_elapsed_s),
            r.ok.to_string(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("--out {}: {e}", path.display()))
}

/// `uzswap bench ab`; whether every run of both builds went right.
pub fn run(a: &AbArgs) -> Result<bool, String> {
    if a.reps == 0 || a.only.is_empty() {
        return Err("--reps and --only need at least one".into());
    }
    let baseline = std::fs::canonicalize(&a.baseline)
        .map_err(|e| format!("--baseline {}: {e}", a.baseline.display()))?;
    let this_build =
        std::env::current_exe().map_err(|e| format!("cannot find this uzswap: {e}"))?;
    let parent = a.work.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let folder = create_work(&a.work, "ab")?;
    let work = folder.root.clone();
    println!(
        "uzswap bench ab: {} under {} (baseline) and {} (this build), {} rounds, interleaved",
        a.only.join(", "),
        baseline.display(),
        this_build.display(),
        a.reps
    );
    let baseline = Build::new(a, Side::Baseline, baseline, &parent);
    let this_build = Build::new(a, Side::ThisBuild, this_build, &parent);
    let progress = Progress::new("bench ab", (a.reps * 2) as u64);
    let mut runs = Vec::new();
    let mut result = Ok(());
    'rounds: for round in 1..=a.reps {
        let order = if round % 2 == 1 {
            [&baseline, &this_build]
        } else {
            [&this_build, &baseline]
        };
        for build in order {
            let side = build.side;
            match run_suite(build, &work, round) {
                Ok(r) => {
                    let ok = r.iter().filter(|r| r.ok).count();
                    progress.step(&format!(
                        "round {round}, {}: {ok} of {} runs ok",
                        side.label(),
                        r.len()
                    ));
                    runs.extend(r);
                }
                Err(e) => {
                    result = Err(e);
                    break 'rounds;
                }
            }
        }
    }
    progress.finish();
    if let Err(e) = result {
        println!("work folder kept: {}", work.display());
        return Err(e);
    }
    let rows = summarize(&runs);
    println!("{}", table(&rows));
    println!(
        "speed-up: the baseline's median elapsed time over this build's (above 1: this build is faster)"
    );
    draw(&rows);
    if let Some(out) = &a.work.out {
        write_csv(out, &runs)?;
    }
    if folder.keep {
        println!("work folder kept: {}", work.display());
    }
    folder.remove_unless_kept();
    Ok(runs.iter().all(|r| r.ok))
}

/// A bar per program and build: its median elapsed time.
fn draw(rows: &[AbRow]) {
    let bars: Vec<Bar> = rows
        .iter()
        .flat_map(|r| {
            [
                (Side::Baseline, r.baseline),
                (Side::ThisBuild, r.this_build),
            ]
            .into_iter()
            .filter_map(move |(side, m)| {
                Some(Bar {
                    label: format!("{} {} {}", r.program, r.user, side.label()),
                    value: m?.0,
                    group: side.label().to_string(),
                })
            })
        })
        .collect();
    crate::chart(
        "ab.png",
        "uzswap compat programs: baseline against this build",
        "whole-job elapsed time, s (median; lower is better)",
        &bars,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "program,user,expected,limit_bytes,plain_max_rss_bytes,uzswap_max_rss_bytes,evicted_pages,swapped_in_pages,zswpout,pswpout,plain_elapsed_s,uzswap_elapsed_s,plain_cpu_s,uzswap_cpu_s,identical,verdict,problem";

    #[test]
    fn csv_fields_split_as_they_are_written() {
        let fields = ["plain", "a,b", "say \"x\"", ""];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        assert_eq!(csv_split(&line.join(",")), fields);
        assert_eq!(csv_split("a,,b"), ["a", "", "b"]);
    }

    #[test]
    fn a_suite_csv_gives_its_paged_runs_and_which_went_right() {
        let text = format!(
            "{HEADER}\n\
             xz,root,works,9437184,1,1,1,1,1,1,0.150,6.900,0.149,8.731,yes,ok,\n\
             xz,nobody,works,9437184,1,1,1,1,1,1,0.150,7.000,0.149,8.800,no,FAILED,\"output differs, byte 3\"\n"
        );
        let runs = parse_suite_csv(&text, Side::ThisBuild, 2).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].program, "xz");
        assert_eq!(runs[0].round, 2);
        assert!((runs[0].elapsed_s - 6.9).abs() < 1e-9);
        assert!((runs[0].cpu_s - 8.731).abs() < 1e-9);
        assert!(runs[0].ok);
        assert!(!runs[1].ok, "an output that differed is not a good run");
        assert!(parse_suite_csv("program,user\nxz,root\n", Side::Baseline, 1).is_err());
    }

    fn run(side: Side, program: &str, elapsed_s: f64, ok: bool) -> AbRun {
        AbRun {
            side,
            round: 1,
            program: program.into(),
            user: "root".into(),
            elapsed_s,
            cpu_s: elapsed_s * 2.0,
            plain_elapsed_s: 0.5,
            ok,
        }
    }

    #[test]
    fn rows_take_medians_of_good_runs_and_the_speedup_between_builds() {
        use Side::*;
        let runs = vec![
            run(Baseline, "sqlite", 20.0, true),
            run(ThisBuild, "sqlite", 10.0, true),
            run(Baseline, "sqlite", 22.0, true),
            run(ThisBuild, "sqlite", 9.0, true),
            run(Baseline, "sqlite", 21.0, true),
            run(ThisBuild, "sqlite", 1.0, false),
            run(ThisBuild, "sort", 4.0, true),
        ];
        let rows = summarize(&runs);
        assert_eq!(rows.len(), 2);
        let sqlite = &rows[0];
        assert_eq!(sqlite.program, "sqlite");
        assert_eq!(sqlite.baseline, Some((21.0, 42.0)));
        assert_eq!(
            sqlite.this_build,
            Some((9.5, 19.0)),
            "the failed run is left out"
        );
        assert_eq!(sqlite.runs, [(3, 3), (2, 3)]);
        assert!((sqlite.speedup().unwrap() - 21.0 / 9.5).abs() < 1e-9);
        assert_eq!(rows[1].speedup(), None, "no baseline run: no ratio");
        let text = table(&rows).to_string();
        assert!(text.contains("2.21x"), "{text}");
    }
}
