//! The evidence a paged run must show besides identical outputs (that
//! it paged far below its footprint, and that its peak RSS stayed within
//! the runtime's ceiling plus what uzswap does not page), and the verdict
//! of a case as one user against its expectation.

use super::cases::{Case, Scale};
use super::expectations::Expected::{KnownIssue, Works};
use super::expectations::{expected, Expected};
use super::proc::{Measured, User};
use super::summary::human_size;

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

/// The problem of a run that paged too little to show that the limit held
/// and that the memory came back through the store: it must evict more
/// than twice the limit's pages and swap back in more than the limit's.
pub(super) fn paging_problem(c: Counters, limit: u64) -> Option<String> {
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
pub(super) fn peak_over_bound(peak: u64, limit: u64) -> Option<String> {
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

/// Counters of a `uzswap run`, from its `--stats-out` file.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counters {
    pub(super) evicted_pages: u64,
    /// Pages brought back: from the pool, the swap file or the zero map.
    pub(super) swapped_in: u64,
    pub(super) zswpout: u64,
    pub(super) pswpout: u64,
}

/// How a case ended for one user, against its expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Ok,
    PassesNow,
    KnownIssue,
    Failed,
    NotInstalled { allowed: bool },
}

impl Verdict {
    pub(super) fn fails_suite(self) -> bool {
        matches!(
            self,
            Verdict::Failed | Verdict::NotInstalled { allowed: false }
        )
    }

    pub(super) fn label(self) -> &'static str {
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
pub(super) struct Row {
    pub(super) case: &'static str,
    pub(super) user: String,
    pub(super) limit: u64,
    pub(super) expected: Expected,
    pub(super) plain: Option<Measured>,
    pub(super) paged: Option<Measured>,
    pub(super) counters: Counters,
    /// Stdout and every output file equal (`None`: not compared).
    pub(super) identical: Option<bool>,
    pub(super) verdict: Verdict,
    /// What went wrong, if anything (observed).
    pub(super) problem: String,
}

impl Row {
    pub(super) fn new(case: &Case, user: &User, scale: Scale) -> Self {
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
    pub(super) fn judge(&mut self, problem: Option<String>) {
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
    pub(super) fn broken(&mut self, problem: String) {
        self.verdict = Verdict::Failed;
        self.problem = problem;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::cases::CASES;

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
}
