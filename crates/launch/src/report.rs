//! A process's report: every counter of one preloaded program, typed.
//!
//! The preloaded program builds a [`ProcessReport`] from its live counters
//! and writes its text form — one `name value` line each, like
//! `/proc/vmstat` — on a Unix socket (`RUN_DIR/PID.sock`, read by
//! `uzswap stats PID`) and at exit (`STATS_DIR/PID.stats`, read by
//! `uzswap run`). Readers parse the text back into the same struct
//! ([`ProcessReport::parse`]); a counter missing from the text is an error
//! ([`ReportError`]), never a silent 0, and callers read fields
//! (`report.swap.zswpout`), never names.

use common::counters::MissingCounter;
use runtime::RuntimeStats;

common::counters! {
    /// What the preloaded program holds: its settings in force and its
    /// regions.
    pub struct ProgramStats;
    /// The preload library's live counters (`pid`, `limit_bytes`,
    /// `peak_rss_bytes` and `folio_bytes` are filled in when a report is
    /// made).
    pub struct ProgramCounters;
    /// The process.
    pid: u64,
    /// The limit in force (`--limit`).
    limit_bytes: u64,
    /// The process's peak resident set size so far (`ru_maxrss`): all of
    /// its memory, paged or not, uzswap's pool and tables included.
    peak_rss_bytes: u64,
    /// The folio size in force (`--folio`).
    folio_bytes: u64,
    /// Regions held now.
    regions: u64,
    /// Bytes of those regions.
    region_bytes: u64,
    /// Regions made since start (allocations, mappings and commits of
    /// reservations paged).
    region_allocs: u64,
    /// Regions released (freed, unmapped).
    regions_released: u64,
    /// Regions grown in place: `realloc` (no copy, no swap-in), and
    /// commits right behind a commit of a reservation.
    regions_grown: u64,
    /// `PROT_NONE` reservations served from the arena, whose committed
    /// parts are paged (the JVM's and V8's heaps).
    reservations: u64,
    /// Bytes of the small-object heap (`--small-objects`): the region
    /// mimalloc serves allocations below `--min-alloc` from.
    small_heap_bytes: u64,
}

/// Every counter of one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessReport {
    pub program: ProgramStats,
    /// The syscall guard's counters, where its handler is installed
    /// (user-mode-only userfaultfds); written with a `guard_` prefix.
    pub guard: Option<guard::Counters>,
    pub runtime: RuntimeStats,
    /// The swap store's, in the kernel's names.
    pub swap: zswap::Stats,
}

/// A report that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error("report line {line}: {text:?} is not `name number`")]
    Malformed { line: usize, text: String },
    #[error("report: {0}")]
    Missing(#[from] MissingCounter),
}

/// Prefix of the guard's counters in the text form.
const GUARD_PREFIX: &str = "guard_";

impl ProcessReport {
    /// `(name, value)` of every counter, in a stable order: the text form's
    /// lines.
    pub fn fields(&self) -> Vec<(String, u64)> {
        let named = |v: Vec<(&'static str, u64)>| v.into_iter().map(|(n, x)| (n.to_string(), x));
        let mut f: Vec<(String, u64)> = named(self.program.fields()).collect();
        if let Some(g) = &self.guard {
            f.extend(
                g.fields()
                    .into_iter()
                    .map(|(n, x)| (format!("{GUARD_PREFIX}{n}"), x)),
            );
        }
        f.extend(named(self.runtime.fields()));
        f.extend(named(self.swap.fields()));
        f
    }

    /// The text form.
    pub fn render(&self) -> String {
        render(&self.fields())
    }

    /// Reads [`ProcessReport::render`]'s form back. Every counter of every
    /// section must be there (the guard's section is optional as a whole).
    pub fn parse(text: &str) -> Result<Self, ReportError> {
        Self::from_fields(&parse(text)?)
    }

    /// Reads every section from `(name, value)` pairs.
    fn from_fields(fields: &[(String, u64)]) -> Result<Self, ReportError> {
        let get = |name: &str| common::name_value::get(fields, name);
        let guarded = |name: &str| get(&format!("{GUARD_PREFIX}{name}"));
        Ok(Self {
            program: ProgramStats::from_fields(get)?,
            guard: match guarded("traps") {
                Some(_) => Some(guard::Counters::from_fields(guarded)?),
                None => None,
            },
            runtime: RuntimeStats::from_fields(get)?,
            swap: zswap::Stats::from_fields(get)?,
        })
    }
}

common::counters! {
    /// How a whole run ended (`uzswap run --stats-out`'s first lines).
    pub struct RunStats;
    /// Unused: a run's figures are known at its end.
    pub struct RunCounters;
    /// Processes that used the runtime and wrote a report.
    processes: u64,
    /// The program's exit code (128 + signal if it was killed).
    exit_code: u64,
    /// Wall-clock time of the whole run, µs.
    elapsed_us: u64,
    /// User CPU time of the program and its children, µs.
    user_us: u64,
    /// System CPU time of the program and its children, µs.
    sys_us: u64,
    /// Peak resident set size of the largest process of the run, bytes
    /// (`ru_maxrss` of the waited-for children).
    max_rss_bytes: u64,
}

/// A whole run: how it ended, and its processes' counters summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunReport {
    pub run: RunStats,
    /// Every counter summed over the processes ([`ProcessReport::sum`]).
    pub total: ProcessReport,
}

impl RunReport {
    /// The text form: the run's lines, then the summed counters'.
    pub fn render(&self) -> String {
        let mut f: Vec<(String, u64)> = self
            .run
            .fields()
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        f.extend(self.total.fields());
        render(&f)
    }

    pub fn parse(text: &str) -> Result<Self, ReportError> {
        let fields = parse(text)?;
        Ok(Self {
            run: RunStats::from_fields(|name| common::name_value::get(&fields, name))?,
            total: ProcessReport::from_fields(&fields)?,
        })
    }
}

impl ProcessReport {
    /// Counters summed over `reports`. The pid is 0; the limit and folio
    /// are the largest of any process (they are settings, not counts); the
    /// guard's section is there if any process had one; a state (a
    /// `bool`) is true if it was in any process.
    pub fn sum<'a>(reports: impl IntoIterator<Item = &'a ProcessReport>) -> ProcessReport {
        let mut sums: Vec<(String, u64)> = ProcessReport::default().fields();
        let (mut limit, mut folio, mut guarded) = (0, 0, false);
        for r in reports {
            limit = limit.max(r.program.limit_bytes);
            folio = folio.max(r.program.folio_bytes);
            guarded |= r.guard.is_some();
            for (name, value) in r.fields() {
                match sums.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, sum)) => *sum += value,
                    None => sums.push((name, value)),
                }
            }
        }
        if !guarded {
            sums.retain(|(n, _)| !n.starts_with(GUARD_PREFIX));
        }
        let mut total = ProcessReport::from_fields(&sums)
            .expect("a sum of reports has every counter of a report");
        total.program.pid = 0;
        total.program.limit_bytes = limit;
        total.program.folio_bytes = folio;
        total
    }
}

/// The one-line meaning of a counter of the text form.
pub fn meaning(name: &str) -> Option<&'static str> {
    let find = |docs: &'static [(&'static str, &'static str)], name: &str| {
        docs.iter().find(|(n, _)| *n == name).map(|&(_, d)| d)
    };
    find(RunStats::DOCS, name)
        .or_else(|| find(ProgramStats::DOCS, name))
        .or_else(|| find(guard::Counters::DOCS, name.strip_prefix(GUARD_PREFIX)?))
        .or_else(|| find(RuntimeStats::DOCS, name))
        .or_else(|| find(zswap::Stats::DOCS, name))
}

/// Renders `(name, value)` pairs, one `name value` line each.
pub fn render(fields: &[(String, u64)]) -> String {
    let mut s = String::new();
    for (name, value) in fields {
        s.push_str(name);
        s.push(' ');
        s.push_str(&value.to_string());
        s.push('\n');
    }
    s
}

/// Reads [`render`]'s form back; a line that is not `name number` is an
/// error.
pub fn parse(text: &str) -> Result<Vec<(String, u64)>, ReportError> {
    common::name_value::parse(text).map_err(|e| ReportError::Malformed {
        line: e.line,
        text: e.text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ProcessReport {
        let mut r = ProcessReport::default();
        r.program.pid = 4242;
        r.runtime.evicted_pages = 7;
        r.runtime.kernel_faults = true;
        r.swap.zswpout = 12;
        r
    }

    #[test]
    fn reports_round_trip_with_and_without_the_guard() {
        let r = sample();
        assert_eq!(ProcessReport::parse(&r.render()), Ok(r));
        let g = ProcessReport {
            guard: Some(guard::Counters {
                traps: 3,
                ..Default::default()
            }),
            ..r
        };
        let text = g.render();
        assert!(text.contains("\nguard_traps 3\n"), "{text}");
        assert!(text.contains("\nzswpout 12\n"), "{text}");
        assert_eq!(ProcessReport::parse(&text), Ok(g));
    }

    #[test]
    fn runs_sum_their_processes_and_read_back() {
        let a = sample();
        let b = ProcessReport {
            guard: Some(guard::Counters {
                traps: 2,
                ..Default::default()
            }),
            ..sample()
        };
        let total = ProcessReport::sum([&a, &b]);
        assert_eq!(total.swap.zswpout, 24);
        assert_eq!(total.runtime.evicted_pages, 14);
        assert_eq!(total.guard.map(|g| g.traps), Some(2));
        assert_eq!(total.program.pid, 0);
        assert!(total.runtime.kernel_faults);
        let run = RunReport {
            run: RunStats {
                processes: 2,
                exit_code: 3,
                ..Default::default()
            },
            total,
        };
        assert_eq!(RunReport::parse(&run.render()), Ok(run));
        let none = ProcessReport::sum([]);
        assert_eq!(none.guard, None);
        assert_eq!(none.swap, zswap::Stats::default());
    }

    #[test]
    fn every_counter_has_a_meaning() {
        let g = ProcessReport {
            guard: Some(guard::Counters::default()),
            ..sample()
        };
        for (name, _) in g.fields() {
            let m = meaning(&name).unwrap_or_else(|| panic!("{name} has no meaning"));
            assert!(m.len() > 8, "{name}: {m:?}");
        }
    }

    #[test]
    fn a_missing_counter_is_an_error_not_a_zero() {
        let text = sample().render().replace("zswpout 12\n", "");
        let err = ProcessReport::parse(&text).unwrap_err();
        assert_eq!(
            err,
            ReportError::Missing(MissingCounter {
                section: "Stats",
                name: "zswpout"
            })
        );
        let err = ProcessReport::parse("pid x\n").unwrap_err();
        assert!(
            matches!(err, ReportError::Malformed { line: 1, .. }),
            "{err}"
        );
    }
}

/// What paging saves a process now, worked out from its report's gauges:
/// the memory a plain run would hold for the pages swapped out, less what
/// uzswap holds for them (the pool, the page-state tables, and a swap file
/// that lives in memory). Resident pages cost the same either way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Savings {
    /// The limit in force (`--limit`, or the controller's).
    pub limit_bytes: u64,
    /// Pages swapped out now, as plain memory (`swap_used_pages`).
    pub swapped_bytes: u64,
    /// What the pool holds them in (`pool_total_size`).
    pub pool_bytes: u64,
    /// The runtime's page-state tables (`table_bytes`).
    pub table_bytes: u64,
    /// What the swap file takes in memory where it lives there (tmpfs:
    /// `swapfile_memory_bytes`): pages written back there left the
    /// process, not the machine's memory.
    pub swapfile_memory_bytes: u64,
    /// `swapped_bytes - pool_bytes - table_bytes - swapfile_memory_bytes`:
    /// negative where the tables cost more than little paging saves.
    pub saved_bytes: i64,
    /// Plain bytes over pool bytes of the pages in the pool; none while
    /// the pool is empty.
    pub compression_ratio: Option<f64>,
}

impl Savings {
    pub fn of(r: &ProcessReport) -> Self {
        const PAGE: u64 = 4096;
        let swapped_bytes = r.swap.swap_used_pages * PAGE;
        let pool_bytes = r.swap.pool_total_size;
        let table_bytes = r.runtime.table_bytes;
        let swapfile_memory_bytes = r.swap.swapfile_memory_bytes;
        let compression_ratio = (pool_bytes > 0 && r.swap.stored_pages > 0)
            .then(|| (r.swap.stored_pages * PAGE) as f64 / pool_bytes as f64);
        Self {
            limit_bytes: r.runtime.limit_pages * PAGE,
            swapped_bytes,
            pool_bytes,
            table_bytes,
            swapfile_memory_bytes,
            saved_bytes: swapped_bytes as i64
                - pool_bytes as i64
                - table_bytes as i64
                - swapfile_memory_bytes as i64,
            compression_ratio,
        }
    }
}

/// The share of `wall` that `stall_ns` is: how long threads waited on
/// uzswap over the time they ran (each waiting thread counts).
pub fn stall_share(stall_ns: u64, wall: std::time::Duration) -> f64 {
    stall_ns as f64 / wall.as_nanos().max(1) as f64
}

#[cfg(test)]
mod savings_tests {
    use super::*;

    #[test]
    fn savings_are_what_is_swapped_out_less_the_pool_and_tables() {
        let mut r = ProcessReport::default();
        r.runtime.limit_pages = 1000;
        r.runtime.table_bytes = 100 << 10;
        r.swap.swap_used_pages = 2560; // 10 MiB
        r.swap.stored_pages = 2048; // 8 MiB in the pool...
        r.swap.pool_total_size = 2 << 20; // ...held in 2 MiB
        let s = Savings::of(&r);
        assert_eq!(s.limit_bytes, 1000 * 4096);
        assert_eq!(s.swapped_bytes, 10 << 20);
        assert_eq!(s.saved_bytes, (10 << 20) - (2 << 20) - (100 << 10));
        assert_eq!(s.compression_ratio, Some(4.0));
        // Nothing swapped out: the tables are a cost, the ratio unknown.
        let idle = Savings::of(&ProcessReport {
            runtime: RuntimeStats {
                table_bytes: 4096,
                ..RuntimeStats::default()
            },
            ..ProcessReport::default()
        });
        assert_eq!(idle.saved_bytes, -4096);
        assert_eq!(idle.compression_ratio, None);
    }

    #[test]
    fn pages_on_a_swap_file_in_memory_are_not_saved() {
        let mut r = ProcessReport::default();
        r.swap.swap_used_pages = 2560; // 10 MiB swapped out...
        r.swap.stored_pages = 512; // ...2 MiB of it in the pool...
        r.swap.pool_total_size = 1 << 20; // ...held in 1 MiB
        let on_disk = Savings::of(&r);
        assert_eq!(on_disk.saved_bytes, 9 << 20);
        // The other 8 MiB were written back to a file on tmpfs.
        r.swap.swapfile_memory_bytes = 8 << 20;
        let s = Savings::of(&r);
        assert_eq!(s.swapfile_memory_bytes, 8 << 20);
        assert_eq!(s.saved_bytes, 1 << 20, "only what the pool saved");
    }

    #[test]
    fn the_stall_share_is_wait_over_wall_time() {
        let share = stall_share(250_000_000, std::time::Duration::from_secs(5));
        assert!((share - 0.05).abs() < 1e-12);
        assert_eq!(stall_share(1, std::time::Duration::ZERO), 1.0);
    }
}
