//! Running the suite's cases: a case's input made once, then for each
//! user the plain run (twice where the case asks), the same command under
//! `uzswap run --limit`, the counters it wrote, the comparison of their
//! outputs and the verdict.

use super::cases::{Case, Ctx, Scale};
use super::check::{paging_problem, peak_over_bound, Counters, Row, Verdict};
use super::outputs::{failure, first_different_line, plain_error, program_error, sha256};
use super::proc::{self, Job, Measured, User};
use super::progress::Progress;
use super::summary::{done_line, human_size};
use super::work::{make_dir, readable_by_all, Tools, Work};
use std::path::{Path, PathBuf};

/// What every case of a run shares.
pub(super) struct Suite {
    pub(super) users: Vec<User>,
    pub(super) scale: Scale,
    pub(super) work: Work,
    pub(super) tools: Tools,
    pub(super) allow_missing: bool,
    /// Where the paged runs' swap files go, if not their scratch folders.
    pub(super) swapfile_dir: Option<PathBuf>,
    pub(super) progress: Progress,
}

impl Suite {
    /// Sets up `case` once and runs it as every user.
    pub(super) fn run_case(&self, case: &'static Case) -> Vec<Row> {
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
                swapfile_dir: self.swapfile_dir.as_deref(),
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
    swapfile_dir: Option<&'a Path>,
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
    /// ([`paging_problem`]), it peaked above
    /// [`peak_rss_bound`](super::check::peak_rss_bound).
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
            self.swapfile_dir
                .map_or_else(|| self.sub("scratch"), Path::to_path_buf)
                .display()
                .to_string(),
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
