//! `uzswap compat`: real programs that uzswap's authors did not write, run
//! plain and then under `uzswap run` with a limit at least 4x below their
//! footprint; stdout and output files must match byte for byte.
//!
//! Each case (`cases.rs`) makes its input once (deterministically), then
//! for each user (the invoker, and `nobody` when run as root) runs the
//! plain command, the same command under `uzswap run --limit L
//! --stats-out F`, and compares. What each case is expected to do today is
//! in [`EXPECTATIONS`](expectations::EXPECTATIONS), the one table to edit
//! when a case's known failure is fixed.
//!
//! A paged run must show that it paged: more than twice the limit's pages
//! evicted, and more than the limit's swapped back in
//! ([`paging_problem`](check::paging_problem)); a case whose plain
//! footprint is less than 4x its limit fails too (it would not test paging
//! far below the footprint).
//!
//! A paged run must also keep the peak RSS of its largest process within
//! [`peak_rss_bound`](check::peak_rss_bound): the runtime's own ceiling
//! (the limit plus 16 MiB, or a quarter of a limit under 64M, where faults
//! are throttled, as `memory.high` does) plus
//! [`PEAK_RSS_SLACK`](check::PEAK_RSS_SLACK) for what uzswap does not page
//! (the interpreter, JIT code and libraries of node and the JVM, the
//! largest) and its own tables; a run above it fails.
//!
//! ## Files
//!
//! * This file: the flags, the choice of cases and users, and the run
//!   from start to summary.
//! * `cases.rs`: the programs (what each needs, its input, command line,
//!   sizes and output files); `gen.rs` the deterministic inputs.
//! * `expectations.rs`: what each case is expected to do, as root and as
//!   an unprivileged user.
//! * `work.rs`: the work folder and the `uzswap` binary, reachable by
//!   `nobody`.
//! * `runner.rs`: a case's runs as each user; `proc.rs` one command as the
//!   invoker or as `nobody` (through `setpriv`), measured from outside.
//! * `outputs.rs`: two runs' outputs compared, and the error line of a
//!   failed run's stderr.
//! * `check.rs`: the paging and peak-RSS evidence, and the verdicts.
//! * `progress.rs` and `summary.rs`: what the user sees while it runs and
//!   after (tables, summary, CSV).
//! * `uzswap bench programs` (`bench.rs`) and `uzswap bench faults`
//!   (`faults.rs`) run the same cases beside the kernel's zswap, through
//!   `bench_runs.rs` (the systems and their runs) and `bench_output.rs`
//!   (CSV, chart, result).
//! * `uzswap bench savings` (`savings.rs`) runs them, and the services of
//!   `cases.rs`' `SAVINGS_CASES`, without a limit, each run's memory
//!   sampled from outside, beside the kernel's zswap at a sweep of fixed
//!   limits.
//! * `uzswap bench ab` (`ab.rs`) runs this suite under two builds of
//!   uzswap in turn (another build's `uzswap compat` and this one's) and
//!   sets their times side by side: a design change judged on the
//!   programs.

pub mod ab;
pub mod bench;
mod bench_output;
mod bench_runs;
mod cases;
mod check;
mod expectations;
pub mod faults;
mod gen;
mod outputs;
mod proc;
mod progress;
pub mod replay;
mod runner;
pub mod savings;
mod summary;
mod work;

use cases::{Case, Scale, CASES};
use clap::Args;
use proc::User;
use progress::Progress;
use runner::Suite;
use std::path::PathBuf;
pub(crate) use summary::human_size;
use summary::{csv, list_table, print_summary, result_table};
use work::{create_work, locate_tools};

#[derive(Args, Debug)]
pub struct CompatArgs {
    /// Sizes that fit CI (the default): the whole suite, both users, in
    /// about ten minutes on 2 cores.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Full sizes: hundreds of MiB to GiBs per program.
    #[arg(long)]
    pub full: bool,
    /// Run only these cases (comma-separated names; `--list` shows them).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Users to run as, comma-separated: `root,nobody` (the default as
    /// root); any other user runs as itself only.
    #[arg(long, value_delimiter = ',')]
    pub users: Vec<String>,
    /// Keep the work folder (inputs, outputs, stdout/stderr of every run).
    #[arg(long)]
    pub keep: bool,
    /// Folder to create the work folder `uzswap-compat-PID` in (default:
    /// $TMPDIR); `nobody` must be able to reach it.
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Also write the results as CSV lines (with a header) to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder for the paged runs' swap files (default: each run's scratch
    /// folder in the work folder, on its disk). `/dev/shm` puts them in
    /// memory: outputs are checked the same, and the times are those of a
    /// swap device as fast as memory; `nobody` must be able to write it.
    #[arg(long)]
    pub swapfile_dir: Option<PathBuf>,
    /// Cases whose programs are not installed do not fail the run.
    #[arg(long)]
    pub allow_missing: bool,
    /// List the cases, their sizes and expectations; run nothing.
    #[arg(long)]
    pub list: bool,
}

/// Runs the suite; `Ok(false)` when a case expected to work did not (or a
/// program is missing without `--allow-missing`).
pub fn run(a: &CompatArgs) -> Result<bool, String> {
    let scale = if a.full { Scale::Full } else { Scale::Quick };
    let cases = select_cases(&a.only)?;
    let users = resolve_users(&a.users)?;
    if a.list {
        println!("{}", list_table(&cases, &users, scale));
        return Ok(true);
    }
    let work = create_work(a, &users)?;
    let tools = locate_tools(&work, &users)?;
    let users_count = users.len();
    proc::end_commands_on_interrupt();
    println!(
        "uzswap compat ({}): {} cases as {}, work folder {}",
        if scale == Scale::Full {
            "full"
        } else {
            "quick"
        },
        cases.len(),
        users
            .iter()
            .map(User::name)
            .collect::<Vec<_>>()
            .join(" and "),
        work.root.display()
    );
    let suite = Suite {
        users,
        scale,
        work,
        tools,
        allow_missing: a.allow_missing,
        swapfile_dir: a.swapfile_dir.clone(),
        progress: Progress::new((cases.len() * users_count) as u64),
    };
    let mut rows = Vec::new();
    for case in &cases {
        rows.extend(suite.run_case(case));
        if proc::interrupted() {
            suite.progress.finish();
            suite.work.remove_unless_kept();
            return Err("interrupted".into());
        }
    }
    let (progress, work) = (suite.progress, suite.work);
    progress.finish();
    println!("{}", result_table(&rows));
    print_summary(&rows);
    if !suite.users.contains(&User::Nobody) {
        println!(
            "skipped: every case as user nobody ({})",
            if proc::is_root() {
                "--users leaves it out"
            } else {
                "it needs root, for setpriv"
            }
        );
    }
    if let Some(path) = &a.out {
        std::fs::write(path, csv(&rows)).map_err(|e| format!("--out {}: {e}", path.display()))?;
    }
    if work.keep {
        println!("work folder kept: {}", work.root.display());
    }
    work.remove_unless_kept();
    Ok(!rows.iter().any(|r| r.verdict.fails_suite()))
}

fn select_cases(only: &[String]) -> Result<Vec<&'static Case>, String> {
    if only.is_empty() {
        return Ok(CASES.iter().collect());
    }
    only.iter()
        .map(|name| {
            CASES
                .iter()
                .find(|c| c.name == name.as_str())
                .ok_or_else(|| {
                    let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
                    format!("--only: no case {name:?} (cases: {})", names.join(", "))
                })
        })
        .collect()
}

fn resolve_users(names: &[String]) -> Result<Vec<User>, String> {
    let me = proc::invoker_name();
    let root = proc::is_root();
    if names.is_empty() {
        let mut users = vec![User::Invoker(me)];
        if root {
            users.push(User::Nobody);
        }
        return Ok(users);
    }
    let mut users = Vec::new();
    for name in names {
        let user = match name.as_str() {
            "nobody" if root => User::Nobody,
            "nobody" => return Err("--users nobody: running as nobody needs root (setpriv)".into()),
            n if n == me => User::Invoker(me.clone()),
            n => return Err(format!("--users {n}: only {me} and, as root, nobody")),
        };
        if !users.contains(&user) {
            users.push(user);
        }
    }
    Ok(users)
}
