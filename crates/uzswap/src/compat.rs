//! `uzswap compat`: real programs that uzswap's authors did not write, run
//! plain and then under `uzswap run` with a limit at least 4x below their
//! footprint; stdout and output files must match byte for byte.
//!
//! Each case (`cases.rs`) makes its input once (deterministically), then
//! for each user (the invoker, and `nobody` when run as root) runs the
//! plain command, the same command under `uzswap run --limit L
//! --stats-out F`, and compares. What each case is expected to do today is
//! in [`EXPECTATIONS`], the one table to edit when an issue is fixed.
//!
//! A paged run must show that it paged: more than twice the limit's pages
//! evicted, and more than the limit's swapped back in ([`paging_problem`]);
//! a case whose plain footprint is less than 4x its limit fails too (it
//! would not test paging far below the footprint).
//!
//! A paged run must also keep the peak RSS of its largest process within
//! [`peak_rss_bound`]: the runtime's own ceiling (the limit plus 16 MiB,
//! or a quarter of a limit under 64M, where faults are throttled, as
//! `memory.high` does) plus
//! [`PEAK_RSS_SLACK`] for what uzswap does not page (the interpreter, JIT
//! code and libraries of node and the JVM, the largest) and its own
//! tables; a run above it fails.

pub mod bench;
mod cases;
mod gen;
mod proc;

use cases::{Case, Ctx, Scale, CASES};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Color, Table};
use indicatif::{ProgressBar, ProgressStyle};
use proc::{Job, Measured, User};
use std::io::IsTerminal;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How far above the runtime's ceiling a paged run's peak RSS may go: the
/// program's memory uzswap does not page (text, JIT code, interpreter
/// state; node's and the JVM's reach 75 MB), uzswap's tables, and a system
/// call's pinned pages (4 MiB pieces for large file I/O under the guard).
/// One `read()` of a whole file pinning it all broke the bound
/// (python-hash as nobody: 144M under a 32M limit).
pub const PEAK_RSS_SLACK: u64 = 96 << 20;

/// The most a paged run's peak RSS may be under `limit`: the ceiling past
/// which the runtime throttles faults (the reclaim module's `ceiling`: the
/// limit plus a quarter of it, at most
/// [`runtime::THROTTLE_HEADROOM_BYTES`], one reclaim batch aside) plus
/// [`PEAK_RSS_SLACK`]. At most the limit plus a constant, 112 MiB.
pub fn peak_rss_bound(limit: u64) -> u64 {
    limit + throttle_headroom(limit) + PEAK_RSS_SLACK
}

/// What the runtime lets the charge pass `limit` by before it throttles
/// ([`runtime::throttle_headroom_bytes`]).
fn throttle_headroom(limit: u64) -> u64 {
    runtime::throttle_headroom_bytes(limit as usize) as u64
}

/// What a case does under uzswap today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Same output as the plain run, with pages paged: a failure fails the
    /// suite.
    Works,
    /// Fails today for this reason; still run and listed, and reported as
    /// "passes now" when it stops failing. (No case is known to fail
    /// today; the variant stays for the next one.)
    #[allow(dead_code)]
    KnownIssue(&'static str),
}

use Expected::{KnownIssue, Works};

/// A case's expectation as root (the runtime opens `/dev/userfaultfd`)
/// and as an unprivileged user (`userfaultfd(UFFD_USER_MODE_ONLY)`): the
/// two may differ.
pub struct Expectation {
    pub case: &'static str,
    pub root: Expected,
    pub unprivileged: Expected,
}

/// What each case does under uzswap today, as observed (quick and full
/// sizes alike). Flip an entry to `Works` when its issue is fixed.
#[rustfmt::skip]
pub const EXPECTATIONS: &[Expectation] = &[
    //            case               as root                 as an unprivileged user
    Expectation { case: "python-hash",    root: Works,                 unprivileged: Works },
    Expectation { case: "python-list",    root: Works,                 unprivileged: Works },
    Expectation { case: "numpy",          root: Works,                 unprivileged: Works },
    Expectation { case: "python-mp-fork", root: Works,                 unprivileged: Works },
    Expectation { case: "node-buffer",    root: Works,                 unprivileged: Works },
    Expectation { case: "java-nio",       root: Works,                 unprivileged: Works },
    Expectation { case: "node-heap",      root: Works,                 unprivileged: Works },
    Expectation { case: "java-heap",      root: Works,                 unprivileged: Works },
    Expectation { case: "sqlite",         root: Works,                 unprivileged: Works },
    Expectation { case: "sqlite-heap",    root: Works,                 unprivileged: Works },
    Expectation { case: "sort",           root: Works,                 unprivileged: Works },
    Expectation { case: "xz",             root: Works,                 unprivileged: Works },
    Expectation { case: "zstd",           root: Works,                 unprivileged: Works },
    Expectation { case: "gcc",            root: Works,                 unprivileged: Works },
    Expectation { case: "redis",          root: Works,                 unprivileged: Works },
    Expectation { case: "redis-heap",     root: Works,                 unprivileged: Works },
    Expectation { case: "usemem",         root: Works,                 unprivileged: Works },
    Expectation { case: "randpage",       root: Works,                 unprivileged: Works },
];

fn expected(case: &str, user: &User) -> Expected {
    EXPECTATIONS
        .iter()
        .find(|e| e.case == case)
        .map_or(Works, |e| {
            if user.is_root() {
                e.root
            } else {
                e.unprivileged
            }
        })
}

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
    /// Cases whose programs are not installed do not fail the run.
    #[arg(long)]
    pub allow_missing: bool,
    /// List the cases, their sizes and expectations; run nothing.
    #[arg(long)]
    pub list: bool,
}

/// Counters of a `uzswap run`, from its `--stats-out` file.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    evicted_pages: u64,
    /// Pages brought back: from the pool, the swap file or the zero map.
    swapped_in: u64,
    zswpout: u64,
    pswpout: u64,
}

/// How a case ended for one user, against its expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    PassesNow,
    KnownIssue,
    Failed,
    NotInstalled { allowed: bool },
}

impl Verdict {
    fn fails_suite(self) -> bool {
        matches!(
            self,
            Verdict::Failed | Verdict::NotInstalled { allowed: false }
        )
    }

    fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::PassesNow => "passes now",
            Verdict::KnownIssue => "known issue",
            Verdict::Failed => "FAILED",
            Verdict::NotInstalled { allowed: true } => "not installed (allowed)",
            Verdict::NotInstalled { allowed: false } => "NOT INSTALLED",
        }
    }
}

/// One line of the result table: a case as one user.
#[derive(Debug, Clone)]
struct Row {
    case: &'static str,
    user: String,
    limit: u64,
    expected: Expected,
    plain: Option<Measured>,
    paged: Option<Measured>,
    counters: Counters,
    /// Stdout and every output file equal (`None`: not compared).
    identical: Option<bool>,
    verdict: Verdict,
    /// What went wrong, if anything (observed).
    problem: String,
}

impl Row {
    fn new(case: &Case, user: &User, scale: Scale) -> Self {
        Row {
            case: case.name,
            user: user.name().to_string(),
            limit: case.sizes(scale).limit,
            expected: expected(case.name, user),
            plain: None,
            paged: None,
            counters: Counters::default(),
            identical: None,
            verdict: Verdict::Failed,
            problem: String::new(),
        }
    }

    /// Sets the verdict from the problem found (if any) and the expectation.
    fn judge(&mut self, problem: Option<String>) {
        self.verdict = match (problem.is_some(), self.expected) {
            (false, Works) => Verdict::Ok,
            (false, KnownIssue(_)) => Verdict::PassesNow,
            (true, Works) => Verdict::Failed,
            (true, KnownIssue(_)) => Verdict::KnownIssue,
        };
        self.problem = problem.unwrap_or_default();
    }

    /// A failure of the suite itself (setup, plain run): fails whatever the
    /// expectation.
    fn broken(&mut self, problem: String) {
        self.verdict = Verdict::Failed;
        self.problem = problem;
    }
}

/// The `uzswap` binary the cases run under, with the library beside it.
struct Tools {
    uzswap: PathBuf,
}

/// The folders of a run.
struct Work {
    root: PathBuf,
    keep: bool,
}

impl Work {
    fn inputs(&self, case: &str) -> PathBuf {
        self.root.join("inputs").join(case)
    }

    fn runs(&self, user: &User, case: &str) -> PathBuf {
        self.root.join("runs").join(user.name()).join(case)
    }

    /// Removes `path` (in the work folder) unless `--keep`.
    fn remove_unless_kept_at(&self, path: &Path) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(path);
        }
    }

    fn remove_unless_kept(&self) {
        self.remove_unless_kept_at(&self.root);
    }
}

/// What every case of a run shares.
struct Suite {
    users: Vec<User>,
    scale: Scale,
    work: Work,
    tools: Tools,
    allow_missing: bool,
    progress: Progress,
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

/// Whether user `nobody` can reach `path`: every folder above it
/// searchable by others, the file itself readable (and `exec`utable).
fn reachable_by_others(path: &Path, exec: bool) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let need = if exec { 0o005 } else { 0o004 };
    let need = if meta.is_dir() { 0o001 } else { need };
    meta.permissions().mode() & need == need
        && path.ancestors().skip(1).all(|dir| {
            dir.as_os_str().is_empty()
                || std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
        })
}

fn set_mode(path: &Path, mode: u32) -> Result<(), String> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

fn make_dir(path: &Path, mode: u32) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    set_mode(path, mode)
}

/// Makes every file in `dir` readable (and its folders searchable) by
/// every user, whatever the umask was.
fn readable_by_all(dir: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mode = meta.permissions().mode() & 0o7777;
        if meta.is_dir() {
            set_mode(&path, mode | 0o555)?;
            readable_by_all(&path)?;
        } else {
            let exec = if mode & 0o100 != 0 { 0o111 } else { 0 };
            set_mode(&path, mode | 0o444 | exec)?;
        }
    }
    Ok(())
}

fn create_work(a: &CompatArgs, users: &[User]) -> Result<Work, String> {
    let parent = a.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let root = parent.join(format!("uzswap-compat-{}", std::process::id()));
    if root.exists() {
        return Err(format!("{} exists already", root.display()));
    }
    make_dir(&root, 0o755)?;
    let root = root
        .canonicalize()
        .map_err(|e| format!("{}: {e}", root.display()))?;
    if users.contains(&User::Nobody) && !reachable_by_others(&root, false) {
        let _ = std::fs::remove_dir(&root);
        return Err(format!(
            "user nobody cannot reach the work folder {}: choose another with --work-dir (or TMPDIR)",
            root.display()
        ));
    }
    Ok(Work { root, keep: a.keep })
}

/// The running `uzswap` and its library; both copied into the work folder
/// when `nobody` is among the users and cannot read them where they are (a
/// target folder under /root), or when the library is not beside the
/// binary (`$UZSWAP_PRELOAD`, which the cases' clean environment drops).
fn locate_tools(work: &Work, users: &[User]) -> Result<Tools, String> {
    let exe = std::env::current_exe().map_err(|e| format!("locating uzswap: {e}"))?;
    let library = launch::find_library(&exe).map_err(|e| e.to_string())?;
    let beside = library.parent() == exe.parent();
    let reachable = reachable_by_others(&exe, true) && reachable_by_others(&library, false);
    if beside && (reachable || !users.contains(&User::Nobody)) {
        return Ok(Tools { uzswap: exe });
    }
    let bin = work.root.join("bin");
    make_dir(&bin, 0o755)?;
    let uzswap = bin.join("uzswap");
    for (from, to) in [(&exe, &uzswap), (&library, &bin.join(launch::run::LIBRARY))] {
        std::fs::copy(from, to)
            .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
        set_mode(to, 0o755)?;
    }
    Ok(Tools { uzswap })
}

impl Suite {
    /// Sets up `case` once and runs it as every user.
    fn run_case(&self, case: &'static Case) -> Vec<Row> {
        let mut rows: Vec<Row> = self
            .users
            .iter()
            .map(|u| Row::new(case, u, self.scale))
            .collect();
        let missing = case.missing();
        if !missing.is_empty() {
            let problem = format!("not installed: {}", missing.join(", "));
            let allowed = self.allow_missing;
            self.end_all(&mut rows, |row| {
                row.verdict = Verdict::NotInstalled { allowed };
                row.problem = problem.clone();
            });
            return rows;
        }
        let input = self.work.inputs(case.name);
        let ctx = Ctx {
            input: &input,
            size: case.sizes(self.scale).size,
        };
        self.progress
            .phase(&format!("{}: making its input", case.name));
        let made = make_dir(&input, 0o755)
            .and_then(|()| (case.setup)(&ctx))
            .and_then(|()| readable_by_all(&input));
        if let Err(e) = made {
            self.end_all(&mut rows, |row| row.broken(format!("setup failed: {e}")));
            return rows;
        }
        for (user, row) in self.users.iter().zip(&mut rows) {
            if proc::interrupted() {
                break;
            }
            let dir = self.work.runs(user, case.name);
            let runner = CaseRun {
                case,
                ctx: &ctx,
                user,
                dir: &dir,
                scale: self.scale,
                tools: &self.tools,
                progress: &self.progress,
            };
            runner.run(row);
            self.progress.done(&done_line(row));
            self.work.remove_unless_kept_at(&dir);
        }
        self.work.remove_unless_kept_at(&input);
        rows
    }

    /// Ends every user's row of a case that cannot run, with `end`.
    fn end_all(&self, rows: &mut [Row], end: impl Fn(&mut Row)) {
        for row in rows {
            end(row);
            self.progress.done(&done_line(row));
        }
    }
}

/// One case as one user, in folder `dir`: `plain/` and `uzswap/` (the
/// commands' folders), `scratch/` (HOME, TMPDIR, the swap file), and the
/// runs' stdout, stderr and counters.
struct CaseRun<'a> {
    case: &'static Case,
    ctx: &'a Ctx<'a>,
    user: &'a User,
    dir: &'a Path,
    scale: Scale,
    tools: &'a Tools,
    progress: &'a Progress,
}

impl CaseRun<'_> {
    fn run(&self, row: &mut Row) {
        if let Err(e) = self.make_dirs() {
            row.broken(e);
            return;
        }
        let command = (self.case.command)(self.ctx);
        self.progress
            .phase(&format!("{} as {}: plain run", self.case.name, row.user));
        let plain = match self.plain_runs(&command) {
            Ok(m) => m,
            Err(e) => {
                row.broken(e);
                return;
            }
        };
        row.plain = Some(plain.clone());
        self.progress.phase(&format!(
            "{} as {}: under uzswap run --limit {}",
            self.case.name,
            row.user,
            human_size(row.limit)
        ));
        let paged = match self.paged_run(&command, row.limit) {
            Ok(m) => m,
            Err(e) => {
                row.broken(e);
                return;
            }
        };
        row.counters = self.counters();
        let difference = self.difference("plain", "uzswap");
        row.identical = Some(difference.is_none());
        let problem = self.problem(&plain, &paged, difference, row.counters, row.limit);
        row.paged = Some(paged);
        row.judge(problem);
    }

    /// What is wrong with the paged run, the first of: it timed out, it
    /// ended otherwise than the plain run, its outputs differ, the case's
    /// footprint is not 4x its limit, too little was paged
    /// ([`paging_problem`]), it peaked above [`peak_rss_bound`].
    fn problem(
        &self,
        plain: &Measured,
        paged: &Measured,
        difference: Option<String>,
        counters: Counters,
        limit: u64,
    ) -> Option<String> {
        if paged.timed_out {
            return Some(format!(
                "timed out after {}s",
                self.scale.timeout().as_secs()
            ));
        }
        if paged.code != plain.code {
            let stderr =
                std::fs::read_to_string(self.dir.join("uzswap.stderr")).unwrap_or_default();
            return Some(failure(paged.code, &program_error(&stderr)));
        }
        if difference.is_some() {
            return difference;
        }
        if plain.max_rss < 4 * limit {
            return Some(format!(
                "the footprint ({}) is less than 4x the limit ({}): the case does not page far below its footprint; tune its sizes",
                human_size(plain.max_rss),
                human_size(limit)
            ));
        }
        paging_problem(counters, limit).or_else(|| peak_over_bound(paged.max_rss, limit))
    }

    fn make_dirs(&self) -> Result<(), String> {
        let nobody = *self.user == User::Nobody;
        if nobody {
            // The user's folder: anyone may create in it (a temp folder).
            if let Some(parent) = self.dir.parent() {
                make_dir(parent, 0o1777)?;
            }
        }
        for d in [
            self.dir.to_path_buf(),
            self.sub("plain"),
            self.sub("plain2"),
            self.sub("uzswap"),
            self.sub("scratch"),
        ] {
            make_dir(&d, 0o755)?;
            if nobody {
                std::os::unix::fs::chown(&d, Some(proc::NOBODY), Some(proc::NOBODY))
                    .map_err(|e| format!("chown nobody {}: {e}", d.display()))?;
            }
        }
        Ok(())
    }

    fn sub(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn job(&self, name: &str, argv: Vec<String>) -> Job {
        Job {
            argv,
            cwd: self.sub(name),
            scratch: self.sub("scratch"),
            stdout: self.dir.join(format!("{name}.stdout")),
            stderr: self.dir.join(format!("{name}.stderr")),
            timeout: self.scale.timeout(),
        }
    }

    /// The plain run (twice where the case asks, to prove determinism).
    fn plain_runs(&self, command: &[String]) -> Result<Measured, String> {
        let names: &[&str] = if self.case.check_plain_twice {
            &["plain", "plain2"]
        } else {
            &["plain"]
        };
        let mut first = None;
        for name in names {
            let m = proc::run(self.user, &self.job(name, command.to_vec()))?;
            if m.timed_out || m.code != 0 {
                let stderr = std::fs::read_to_string(self.dir.join(format!("{name}.stderr")))
                    .unwrap_or_default();
                let why = if m.timed_out {
                    "timed out".to_string()
                } else {
                    failure(m.code, &plain_error(&stderr))
                };
                return Err(format!("plain run failed: {why}"));
            }
            first.get_or_insert(m);
        }
        if let Some(d) = names
            .get(1)
            .and_then(|second| self.difference("plain", second))
        {
            return Err(format!("two plain runs differ ({d}): not a usable case"));
        }
        first.ok_or_else(|| "no plain run".to_string())
    }

    fn paged_run(&self, command: &[String], limit: u64) -> Result<Measured, String> {
        let mut argv = vec![
            self.tools.uzswap.display().to_string(),
            "run".to_string(),
            "--limit".to_string(),
            limit.to_string(),
            "--swapfile-dir".to_string(),
            self.sub("scratch").display().to_string(),
            "--stats-out".to_string(),
            self.dir.join("uzswap.stats").display().to_string(),
        ];
        argv.extend(self.case.flags.iter().map(|f| f.to_string()));
        argv.push("--".to_string());
        argv.extend_from_slice(command);
        proc::run(self.user, &self.job("uzswap", argv))
    }

    fn counters(&self) -> Counters {
        // No file (uzswap refused to start) or a broken one: nothing was
        // paged that this run can show.
        let text = std::fs::read_to_string(self.dir.join("uzswap.stats")).unwrap_or_default();
        let total = launch::report::RunReport::parse(&text)
            .map(|r| r.total)
            .unwrap_or_default();
        Counters {
            evicted_pages: total.runtime.evicted_pages,
            swapped_in: total.swap.swapped_in(),
            zswpout: total.swap.zswpout,
            pswpout: total.swap.pswpout,
        }
    }

    /// How run `b` differs from run `a` (stdout, then each output file),
    /// or `None` when they are identical.
    fn difference(&self, a: &str, b: &str) -> Option<String> {
        let read = |name: String| std::fs::read(self.dir.join(name)).ok();
        let (out_a, out_b) = (read(format!("{a}.stdout")), read(format!("{b}.stdout")));
        if out_a != out_b {
            let line = first_different_line(&out_a.unwrap_or_default(), &out_b.unwrap_or_default());
            return Some(format!("stdout differs at line {line}"));
        }
        for file in self.case.outputs {
            match (
                sha256(&self.sub(a).join(file)),
                sha256(&self.sub(b).join(file)),
            ) {
                (Ok(x), Ok(y)) if x == y => {}
                (Ok(_), Ok(_)) => return Some(format!("{file} differs (sha256)")),
                (Err(e), _) | (_, Err(e)) => return Some(e),
            }
        }
        None
    }
}

/// sha256 of a file, through coreutils' `sha256sum`.
fn sha256(path: &Path) -> Result<String, String> {
    if !path.is_file() {
        return Err(format!(
            "{} missing",
            path.file_name().map_or(path, Path::new).display()
        ));
    }
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run sha256sum: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "sha256sum {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

fn first_different_line(a: &[u8], b: &[u8]) -> usize {
    let mut la = a.split(|&c| c == b'\n');
    let mut lb = b.split(|&c| c == b'\n');
    let mut n = 1;
    while la.next() == lb.next() {
        n += 1;
    }
    n
}

/// Words that mark the line of a program's stderr that says what went
/// wrong (matched case-insensitively).
const ERROR_MARKS: [&str; 8] = [
    "error",
    "exception",
    "bad address",
    "efault",
    "killed",
    "signal",
    "failed",
    "segmentation",
];

/// The line of `lines` that says what went wrong: the first with an error
/// word (later ones tend to be consequences: "confused by earlier
/// errors"), else the last non-empty one.
fn error_line<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let lines: Vec<&str> = lines.map(str::trim).filter(|l| !l.is_empty()).collect();
    let marked = lines.iter().find(|l| {
        let lower = l.to_lowercase();
        ERROR_MARKS.iter().any(|m| lower.contains(m))
    });
    marked.or(lines.last()).unwrap_or(&"").to_string()
}

/// What went wrong, from a plain run's stderr.
fn plain_error(stderr: &str) -> String {
    error_line(stderr.lines())
}

/// What went wrong, from `uzswap run`'s stderr: the program's own lines
/// (before uzswap's closing "exited with" report, without uzswap's opening
/// lines), or uzswap's error when it failed itself.
fn program_error(stderr: &str) -> String {
    let end = stderr
        .lines()
        .position(|l| l.starts_with("uzswap: \"") && l.contains("\" exited with "))
        .unwrap_or(usize::MAX);
    error_line(
        stderr
            .lines()
            .take(end)
            .filter(|l| !l.starts_with("uzswap: running ") && !l.starts_with("uzswap: pid ")),
    )
}

/// "exit 1: OSError: [Errno 14] Bad address", shortened to fit a cell.
fn failure(code: i32, message: &str) -> String {
    let what = proc::describe_code(code);
    if message.is_empty() {
        return what;
    }
    const MAX: usize = 90;
    let message = match message.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &message[..i]),
        None => message.to_string(),
    };
    format!("{what}: {message}")
}

/// Progress: a bar on a terminal, lines otherwise (CI logs).
struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(total: u64) -> Self {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new(total);
        if let Ok(style) =
            ProgressStyle::with_template("compat [{bar:20}] {pos}/{len} {elapsed} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(500));
        Progress { bar: Some(bar) }
    }

    /// What is running now.
    fn phase(&self, what: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(what.to_string()),
            None => eprintln!("compat: {what}"),
        }
    }

    /// One case finished for one user.
    fn done(&self, line: &str) {
        match &self.bar {
            Some(bar) => {
                bar.println(format!("compat: {line}"));
                bar.inc(1);
            }
            None => eprintln!("compat: {line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

fn done_line(row: &Row) -> String {
    let mut line = format!("{} as {}: {}", row.case, row.user, row.verdict.label());
    if let (Some(p), Some(u)) = (&row.plain, &row.paged) {
        line.push_str(&format!(
            " (plain {}, uzswap {}, {} pages evicted, {} swapped in; peak RSS {} plain, {} paged)",
            seconds(p.elapsed),
            seconds(u.elapsed),
            row.counters.evicted_pages,
            row.counters.swapped_in,
            human_size(p.max_rss),
            human_size(u.max_rss)
        ));
    }
    if !row.problem.is_empty() {
        line.push_str(&format!(": {}", row.problem));
    }
    line
}

/// Bytes as "512K", "97M", "1.5G".
pub(crate) fn human_size(bytes: u64) -> String {
    const K: f64 = 1024.0;
    let b = bytes as f64;
    if b >= K * K * K {
        format!("{:.1}G", b / (K * K * K))
    } else if b >= K * K {
        format!("{:.0}M", b / (K * K))
    } else {
        format!("{:.0}K", b / K)
    }
}

/// Peak RSS with its multiple of the limit: "412M (6.4x)".
fn rss_vs_limit(m: Option<&Measured>, limit: u64) -> String {
    m.map_or("-".into(), |m| {
        format!(
            "{} ({:.1}x)",
            human_size(m.max_rss),
            m.max_rss as f64 / limit.max(1) as f64
        )
    })
}

fn status_cell(row: &Row) -> Cell {
    let text = match (row.verdict, row.expected) {
        (Verdict::KnownIssue, KnownIssue(why)) => {
            format!("known issue: {why}\nobserved: {}", row.problem)
        }
        (Verdict::PassesNow, KnownIssue(why)) => format!("passes now (known issue was: {why})"),
        (Verdict::Ok, _) => "ok".to_string(),
        (v, _) => format!("{}: {}", v.label(), row.problem),
    };
    let color = match row.verdict {
        Verdict::Ok | Verdict::PassesNow => Color::Green,
        Verdict::KnownIssue | Verdict::NotInstalled { allowed: true } => Color::Yellow,
        Verdict::Failed | Verdict::NotInstalled { allowed: false } => Color::Red,
    };
    Cell::new(text).fg(color)
}

/// The problem of a run that paged too little to show that the limit held
/// and that the memory came back through the store: it must evict more
/// than twice the limit's pages and swap back in more than the limit's.
fn paging_problem(c: Counters, limit: u64) -> Option<String> {
    let limit_pages = limit / common::PAGE_SIZE as u64;
    if c.evicted_pages <= 2 * limit_pages {
        return Some(format!(
            "{} pages evicted: not more than twice the limit's {limit_pages} (the limit was not enforced throughout)",
            c.evicted_pages
        ));
    }
    (c.swapped_in <= limit_pages).then(|| {
        format!(
            "{} pages swapped in: not more than the limit's {limit_pages} (the program's memory did not come back through the store)",
            c.swapped_in
        )
    })
}

/// The problem of a peak RSS above [`peak_rss_bound`].
fn peak_over_bound(peak: u64, limit: u64) -> Option<String> {
    let bound = peak_rss_bound(limit);
    (peak > bound).then(|| {
        format!(
            "peak RSS {} is above {} (the limit {}, {} of throttling headroom, {} unpaged)",
            human_size(peak),
            human_size(bound),
            human_size(limit),
            human_size(throttle_headroom(limit)),
            human_size(PEAK_RSS_SLACK)
        )
    })
}

fn result_table(rows: &[Row]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "program",
        "user",
        "limit",
        "footprint\n(plain peak RSS)",
        "pages evicted /\nswapped in",
        "uzswap\npeak RSS",
        "elapsed\nuzswap / plain",
        "identical",
        "status",
    ]);
    for r in rows {
        let time = match (&r.plain, &r.paged) {
            (Some(p), Some(u)) => format!(
                "{} / {} = {:.1}x",
                seconds(u.elapsed),
                seconds(p.elapsed),
                u.elapsed.as_secs_f64() / p.elapsed.as_secs_f64().max(0.001)
            ),
            (Some(p), None) => format!("- / {}", seconds(p.elapsed)),
            _ => "-".into(),
        };
        t.add_row(vec![
            Cell::new(r.case),
            Cell::new(&r.user),
            Cell::new(human_size(r.limit)),
            Cell::new(rss_vs_limit(r.plain.as_ref(), r.limit)),
            Cell::new(if r.paged.is_some() {
                format!("{} /\n{}", r.counters.evicted_pages, r.counters.swapped_in)
            } else {
                "-".into()
            }),
            Cell::new(rss_vs_limit(r.paged.as_ref(), r.limit)),
            Cell::new(time),
            Cell::new(match r.identical {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }),
            status_cell(r),
        ]);
    }
    t
}

fn print_summary(rows: &[Row]) {
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let missing = rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::NotInstalled { .. }))
        .count();
    println!(
        "{} ok, {} known issue(s), {} passing now, {} failed, {} not installed",
        count(Verdict::Ok),
        count(Verdict::KnownIssue),
        count(Verdict::PassesNow),
        count(Verdict::Failed),
        missing
    );
    for r in rows.iter().filter(|r| r.verdict.fails_suite()) {
        println!("  failed: {} as {}: {}", r.case, r.user, r.problem);
    }
}

fn list_table(cases: &[&Case], users: &[User], scale: Scale) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec!["program".to_string(), "input".into(), "limit".into()];
    header.extend(users.iter().map(|u| format!("as {}", u.name())));
    header.push("what it runs".into());
    t.set_header(header);
    for c in cases {
        let s = c.sizes(scale);
        let mut row = vec![
            c.name.to_string(),
            c.describe_size(scale),
            human_size(s.limit),
        ];
        row.extend(users.iter().map(|u| match expected(c.name, u) {
            Works => "works".to_string(),
            KnownIssue(why) => format!("known issue: {why}"),
        }));
        row.push(c.about.to_string());
        t.add_row(row);
    }
    t
}

/// A CSV field, quoted when it needs to be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "program,user,expected,limit_bytes,plain_max_rss_bytes,uzswap_max_rss_bytes,evicted_pages,swapped_in_pages,zswpout,pswpout,\
         plain_elapsed_s,uzswap_elapsed_s,plain_cpu_s,uzswap_cpu_s,identical,verdict,problem\n",
    );
    let secs = |m: Option<&Measured>, f: fn(&Measured) -> Duration| {
        m.map_or(String::new(), |m| format!("{:.3}", f(m).as_secs_f64()))
    };
    for r in rows {
        let fields = [
            r.case.to_string(),
            r.user.clone(),
            match r.expected {
                Works => "works".to_string(),
                KnownIssue(why) => format!("known issue: {why}"),
            },
            r.limit.to_string(),
            r.plain
                .as_ref()
                .map_or(String::new(), |m| m.max_rss.to_string()),
            r.paged
                .as_ref()
                .map_or(String::new(), |m| m.max_rss.to_string()),
            r.counters.evicted_pages.to_string(),
            r.counters.swapped_in.to_string(),
            r.counters.zswpout.to_string(),
            r.counters.pswpout.to_string(),
            secs(r.plain.as_ref(), |m| m.elapsed),
            secs(r.paged.as_ref(), |m| m.elapsed),
            secs(r.plain.as_ref(), |m| m.cpu),
            secs(r.paged.as_ref(), |m| m.cpu),
            r.identical
                .map_or(String::new(), |b| if b { "yes" } else { "no" }.to_string()),
            r.verdict.label().to_string(),
            r.problem.clone(),
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

    #[test]
    fn every_case_has_one_expectation() {
        for c in CASES {
            assert_eq!(
                EXPECTATIONS.iter().filter(|e| e.case == c.name).count(),
                1,
                "{}",
                c.name
            );
        }
        for e in EXPECTATIONS {
            assert!(CASES.iter().any(|c| c.name == e.case), "{}", e.case);
        }
    }

    #[test]
    fn the_program_error_is_found_in_uzswap_run_output() {
        let stderr = "uzswap: running \"python3 x.py\" with a 32M limit\nuzswap: pid 12\n\
                      Traceback (most recent call last):\nOSError: [Errno 14] Bad address\n\n\
                      uzswap: \"python3 x.py\" exited with 1 after 0.04s\n┌──┐\n";
        assert_eq!(program_error(stderr), "OSError: [Errno 14] Bad address");
        let gcc =
            "cc1: error: gen.c: Bad address\n(null):0: confused by earlier errors, bailing out\n";
        assert_eq!(plain_error(gcc), "cc1: error: gen.c: Bad address");
        assert_eq!(plain_error("first\nlast\n\n"), "last");
        assert_eq!(
            program_error("uzswap: cannot run x: No such file\n"),
            "uzswap: cannot run x: No such file"
        );
        assert_eq!(failure(139, ""), "killed by SIGSEGV");
        assert_eq!(failure(1, "boom"), "exit 1: boom");
    }

    #[test]
    fn a_peak_past_the_limit_and_slack_is_a_problem() {
        let limit = 32 << 20;
        assert_eq!(peak_rss_bound(limit), (40 << 20) + PEAK_RSS_SLACK);
        // The limit plus a constant, however large the limit.
        assert_eq!(peak_rss_bound(512 << 20), (512 + 16 + 96) << 20);
        assert_eq!(peak_over_bound(peak_rss_bound(limit), limit), None);
        assert_eq!(peak_over_bound(limit / 2, limit), None);
        let p = peak_over_bound(peak_rss_bound(limit) + 1, limit).unwrap();
        assert!(p.contains("peak RSS") && p.contains("32M"), "{p}");
        // python-hash as nobody before the guard's piecewise I/O.
        assert!(peak_over_bound(144 << 20, limit).is_some());
    }

    #[test]
    fn too_little_paging_is_a_problem() {
        let limit = 32 << 20; // 8192 pages
        let c = |evicted, swapped_in| Counters {
            evicted_pages: evicted,
            swapped_in,
            ..Counters::default()
        };
        assert_eq!(paging_problem(c(16_385, 8_193), limit), None);
        // One eviction, or a limit not enforced throughout.
        assert!(paging_problem(c(1, 10_000), limit)
            .unwrap()
            .contains("evicted"));
        assert!(paging_problem(c(16_384, 10_000), limit).is_some());
        // Evicted but never read back.
        let p = paging_problem(c(50_000, 8_192), limit).unwrap();
        assert!(p.contains("swapped in"), "{p}");
    }

    #[test]
    fn verdicts_follow_the_expectation() {
        let case = &CASES[0];
        let mut row = Row::new(case, &User::Nobody, Scale::Quick);
        row.expected = Works;
        row.judge(None);
        assert_eq!(row.verdict, Verdict::Ok);
        row.judge(Some("stdout differs at line 1".into()));
        assert!(row.verdict.fails_suite());
        row.expected = KnownIssue("x");
        row.judge(Some("exit 1".into()));
        assert_eq!(row.verdict, Verdict::KnownIssue);
        assert!(!row.verdict.fails_suite());
        row.judge(None);
        assert_eq!(row.verdict, Verdict::PassesNow);
        row.broken("plain run failed".into());
        assert!(row.verdict.fails_suite());
    }

    #[test]
    fn helpers() {
        assert_eq!(first_different_line(b"a\nb\nc", b"a\nb\nd"), 3);
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
        assert!(reachable_by_others(Path::new("/usr/bin/env"), true));
        assert_eq!(human_size(512 << 10), "512K");
        assert_eq!(human_size(96 << 20), "96M");
        assert_eq!(human_size(3 << 29), "1.5G");
    }
}
