//! `uzswap run` and `uzswap stats`: unmodified programs on uzswap memory.

use crate::compat::human_size;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use launch::report::{self, ProcessReport};
use launch::settings::{format_size, parse_size, Settings, SmallObjects};
use launch::{Launch, Outcome};
use std::path::PathBuf;

pub fn size_arg(s: &str) -> Result<usize, String> {
    parse_size(s).ok_or_else(|| format!("{s:?} is not a size (e.g. 512M, 64K, 2G)"))
}

/// A slowdown in percent (`5%` or `5`), as a fraction (0.05).
pub fn percent_arg(s: &str) -> Result<f64, String> {
    let n: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage (e.g. 5%, 10%)"))?;
    if !(0.1..=1000.0).contains(&n) {
        return Err(format!("{s:?}: a slowdown from 0.1% to 1000%"));
    }
    Ok(n / 100.0)
}

/// Settings of a program's runtime, as flags: each sets the variable of
/// one row of `launch::settings`' table (`env::VARS` names the flag), with
/// that row's default; a test holds the two together.
#[derive(Args, Debug, Clone)]
pub struct RuntimeArgs {
    /// Memory limit of the paged memory (memory.high's role), counting
    /// resident pages and the compressed pool: 512M, 2G… Without it, the
    /// limit is found for a 5% slowdown (--max-slowdown 5%) under this
    /// machine's memory (512M with --per-process-limit). With
    /// --max-slowdown, the ceiling of the limit it finds
    #[arg(long, value_parser = size_arg)]
    pub limit: Option<usize>,
    /// Compressor: lz4, lzo, lzo-rle, zstd[:LEVEL], deflate[:LEVEL].
    #[arg(long, default_value = "lz4")]
    pub compressor: String,
    /// Compress each folio's batch with worker threads.
    #[arg(long)]
    pub parallel: bool,
    /// Folio size evicted at once: 4K, 64K or 2M.
    #[arg(long, default_value = "64K", value_parser = size_arg)]
    pub folio: usize,
    /// Allocations and anonymous mappings from this size up are paged.
    #[arg(long, default_value = "128K", value_parser = size_arg)]
    pub min_alloc: usize,
    /// zswap pool limit, percent of this machine's memory (the default
    /// pool limit is all of --limit but an eighth, and at most this).
    #[arg(long, default_value_t = 20)]
    pub max_pool_percent: u32,
    /// zswap pool limit in bytes (memory.zswap.max): 64M, 1G… Replaces
    /// the default (all of --limit but an eighth, at most
    /// --max-pool-percent of memory). The pool counts in --limit, its share
    /// following refaults under this cap.
    #[arg(long, value_parser = size_arg)]
    pub pool_limit: Option<usize>,
    /// Never write pages to the swap file (memory.zswap.writeback=0).
    #[arg(long)]
    pub no_writeback: bool,
    /// Folder the swap file is made in (an O_TMPFILE of mode 0600: never
    /// linked there). Default: the temp folder, or /var/tmp where the temp
    /// folder is in memory (a tmpfs /tmp: pages written back there would
    /// still take memory).
    #[arg(long)]
    pub swapfile_dir: Option<PathBuf>,
    /// Swap file size (sparse).
    #[arg(long, default_value = "4G", value_parser = size_arg)]
    pub swapfile_size: usize,
    /// Write pages to the swap file as they are (checksummed) instead of
    /// encrypted and authenticated with AES-256-GCM under a key that only
    /// this run's memory holds. The swap file is private either way (mode
    /// 0600, never linked in a folder); encryption also keeps the pages
    /// from whoever reads the disk. The in-memory pool is plain, as the
    /// kernel's.
    #[arg(long)]
    pub no_encrypt_swap: bool,
    /// Do not track writes (reclaim then takes pages in fault order, with
    /// refault activation only).
    #[arg(long)]
    pub no_track_writes: bool,
    /// Swap in one page per fault, even where faults stream (by default a
    /// swap-in fault right next to a recent one's pages brings the rest of its folio from
    /// the pool and the swap file, as the kernel's mTHP swap-in and VMA readahead do).
    #[arg(long)]
    pub no_folio_swapin: bool,
    /// Eviction unmaps the runs it has stored in groups of at least this
    /// many pages, with one process_madvise (one TLB flush, where each
    /// madvise flushes the TLB of every CPU the program runs on); a
    /// group's writers wait for the whole group. 1: one run at a time.
    /// Runs of half a folio or more that lie near one another (a
    /// stream's) stay in one group past this size.
    #[arg(long, default_value_t = 16, value_name = "PAGES",
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub unmap_group: u64,
    /// Probation for pages swapped in: reclaim takes a page that came back
    /// from the store before any other once this many pages have been
    /// evicted since, unless a fault or a tracked write showed it in use
    /// meanwhile. A program sweeping more memory than the limit over and
    /// over (a garbage collector's full passes, a hash table hit at
    /// random) then keeps what it has in memory instead of evicting each
    /// page just before its next turn. 0: a page swapped in is queued as a
    /// first touch is (fault order)
    #[arg(long, default_value_t = runtime::PROBATION_PAGES as u64, value_name = "PAGES",
          value_parser = clap::value_parser!(u64).range(0..=1 << 20))]
    pub probation: u64,
    /// Count resident pages only against --limit, not the compressed pool
    /// (cgroup v1's memcg, which does not charge zswap); the pool is then
    /// bounded by --max-pool-percent of RAM or --pool-limit alone.
    #[arg(long)]
    pub uncharged_pool: bool,
    /// Leave large PROT_NONE reservations (the JVM's and V8's heaps) to
    /// the kernel: only plain anonymous mappings and large allocations are
    /// paged.
    #[arg(long)]
    pub no_reservations: bool,
    /// Page small allocations from the first one: every malloc below
    /// --min-alloc comes from a heap (mimalloc) over one region, so the
    /// data of programs made of small objects (databases, caches,
    /// interpreters) is paged. By default this starts once the program's
    /// own allocator holds --small-objects-after bytes.
    #[arg(long, conflicts_with_all = ["no_small_objects", "small_objects_after"])]
    pub small_objects: bool,
    /// Leave every allocation below --min-alloc to the program's own
    /// allocator (glibc's, jemalloc…), unpaged, however many there are.
    #[arg(long, conflicts_with = "small_objects_after")]
    pub no_small_objects: bool,
    /// Small allocations are the program's own allocator's until it holds
    /// this many bytes of them; every later one is paged (as with
    /// --small-objects). A program made of small objects then stays
    /// within --limit plus about this much.
    #[arg(long, default_value = "4M", value_parser = size_arg)]
    pub small_objects_after: usize,
    /// Give each process of the run its own limit, instead of one limit
    /// for all of them together (as one memcg).
    #[arg(long)]
    pub per_process_limit: bool,
    /// With --fault-thread: handle user-mode faults only, with the syscall
    /// guard, even where kernel faults could be handled (root)
    #[arg(long)]
    pub user_mode_only: bool,
    /// Serve page faults in a handler thread (the faulting thread sleeps
    /// until served, as before) instead of in the faulting thread itself
    #[arg(long)]
    pub fault_thread: bool,
    /// Let the out-of-process pager (statically linked programs) run on any
    /// CPU at the normal priority; by default, with CAP_SYS_NICE (root), it
    /// runs on the CPU of a single-threaded program that faults often, as a
    /// SCHED_IDLE thread, so that serving a fault wakes no other CPU
    #[arg(long)]
    pub pager_any_cpu: bool,
    /// A fault over the limit evicts in the faulting thread itself, down to
    /// the low watermark, always (by default only while the victims are
    /// scattered pages of a program faulting in one thread at a time, and
    /// trials do not find the reclaim thread faster)
    #[arg(long, conflicts_with = "background_reclaim")]
    pub direct_reclaim: bool,
    /// Eviction always runs in the reclaim thread, never in the faulting
    /// thread (by default a single-threaded program's scattered victims
    /// are evicted in its faulting thread, no TLB-flush interrupts, unless
    /// trials of both find the reclaim thread 5% faster)
    #[arg(long)]
    pub background_reclaim: bool,
    /// Keep the pool's share of the limit fixed at its pool limit (half the
    /// limit by default), instead of following refaults
    #[arg(long)]
    pub fixed_pool_split: bool,
    /// Record what paging sees (faults, evictions, regions, the limit, and
    /// samples of evicted pages' contents) to this file, for `uzswap
    /// replay` (made afresh, mode 0600; every process of the run appends
    /// to it)
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

impl RuntimeArgs {
    pub fn settings(&self) -> Result<Settings, String> {
        let defaults = Settings::default();
        let s = Settings {
            limit_bytes: self.limit.unwrap_or(defaults.limit_bytes),
            charge_pool: !self.uncharged_pool,
            reservations: !self.no_reservations,
            small_objects: match (self.small_objects, self.no_small_objects) {
                (true, _) => SmallObjects::On,
                (_, true) => SmallObjects::Off,
                _ => SmallObjects::After(self.small_objects_after),
            },
            compressor: self
                .compressor
                .parse()
                .map_err(|e| format!("--compressor: {e}"))?,
            parallel: self.parallel,
            folio_bytes: self.folio,
            min_alloc_bytes: self.min_alloc,
            max_pool_percent: self.max_pool_percent,
            pool_limit_bytes: self.pool_limit,
            writeback: !self.no_writeback,
            swapfile_dir: self.swapfile_dir.clone().unwrap_or(defaults.swapfile_dir),
            swapfile_bytes: self.swapfile_size,
            encrypt_swap: !self.no_encrypt_swap,
            track_writes: !self.no_track_writes,
            folio_swapin: !self.no_folio_swapin,
            unmap_group_pages: self.unmap_group as usize,
            probation_pages: self.probation as usize,
            shared_limit_file: None,
            user_mode_only: self.user_mode_only,
            fault_thread: self.fault_thread,
            pager_follows_faults: !self.pager_any_cpu,
            direct_reclaim: self.direct_reclaim,
            auto_direct_reclaim: !self.background_reclaim,
            fixed_pool_split: self.fixed_pool_split,
            record: match &self.record {
                Some(p) => Some(std::path::absolute(p).map_err(|e| format!("--record: {e}"))?),
                None => None,
            },
            inject_failure: None,
        };
        s.validate().map_err(|e| {
            format!(
                "{}={}: {}",
                launch::settings::env::flag_of(e.name).unwrap_or(e.name),
                e.value.trim_matches('"'),
                e.expected
            )
        })?;
        Ok(s)
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Find the limit from pressure: keep the time the program's threads
    /// wait on uzswap (swap-ins, write-protect faults, throttling) under
    /// this share of a plain run's time (5%, 10%), lowering the limit
    /// while they wait less and raising it when they wait more; --limit
    /// is then the ceiling. 5% when no --limit is given
    #[arg(long, value_parser = percent_arg)]
    pub max_slowdown: Option<f64>,
    /// Where the limit is found (--max-slowdown, or no --limit): draw the
    /// limit found, the run's charge and the stall share over time to
    /// this PNG file
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print nothing of uzswap's own (the program's exit code still passes).
    #[arg(long, short)]
    pub quiet: bool,
    /// Also write the run's counters (summed over its processes) to this
    /// file, one `name value` per line, for scripts.
    #[arg(long)]
    pub stats_out: Option<PathBuf>,
    /// The program and its arguments (after `--`). Before the program,
    /// every word that starts with `-` is a flag of `uzswap run`: a
    /// misspelled one is an error, never the program's name.
    #[arg(required = true, trailing_var_arg = true)]
    pub command: Vec<String>,
}

/// The flags of `uzswap run` as a Markdown table (flag, default, what it
/// does), from the same definitions clap parses: README.md carries it
/// between `<!-- run-flags:begin -->` and `<!-- run-flags:end -->`, and a
/// test keeps the two equal.
#[cfg(test)]
fn flags_table() -> String {
    use clap::Args as _;
    let cmd = RunArgs::augment_args(clap::Command::new("run"));
    let mut out = String::from("| flag | default | what it does |\n|---|---|---|\n");
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue; // the program and its arguments
        };
        if long == "help" {
            continue;
        }
        let takes_value = arg.get_action().takes_values();
        let flag = match (arg.get_short(), takes_value) {
            (Some(c), false) => format!("`-{c}`, `--{long}`"),
            (_, true) => format!(
                "`--{long} {}`",
                arg.get_value_names()
                    .and_then(|v| v.first())
                    .map_or_else(|| long.to_uppercase().replace('-', "_"), |v| v.to_string())
            ),
            (None, false) => format!("`--{long}`"),
        };
        let default = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| takes_value && !v.is_empty())
            .collect::<Vec<_>>()
            .join(",");
        let help = arg
            .get_help()
            .map(|h| {
                h.to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
            .replace('|', "\\|");
        out.push_str(&format!(
            "| {flag} | {} | {help} |\n",
            if default.is_empty() {
                "—".to_string()
            } else {
                format!("`{default}`")
            }
        ));
    }
    out
}

/// A counter of a process's report.
type Counter = fn(&ProcessReport) -> u64;

/// The rows users compare, in the kernel's names.
const SUMMARY: [(&str, Counter); 22] = [
    ("peak_rss_bytes", |r| r.program.peak_rss_bytes),
    ("charged_pages", |r| r.runtime.charged_pages),
    ("region_allocs", |r| r.program.region_allocs),
    ("region_bytes", |r| r.program.region_bytes),
    ("reservations", |r| r.program.reservations),
    ("small_heap_bytes", |r| r.program.small_heap_bytes),
    ("faults", |r| r.runtime.faults),
    ("zero_faults", |r| r.runtime.zero_faults),
    ("swapin_faults", |r| r.runtime.swapin_faults),
    ("evicted_pages", |r| r.runtime.evicted_pages),
    ("evicted_clean", |r| r.runtime.evicted_clean),
    ("throttled_faults", |r| r.runtime.throttled_faults),
    ("workingset_refault", |r| r.runtime.workingset_refault),
    ("zswpout", |r| r.swap.zswpout),
    ("zswpin", |r| r.swap.zswpin),
    ("written_back_pages", |r| r.swap.written_back_pages),
    ("pswpout", |r| r.swap.pswpout),
    ("pswpin", |r| r.swap.pswpin),
    ("reject_compress_poor", |r| r.swap.reject_compress_poor),
    ("pool_limit_hit", |r| r.swap.pool_limit_hit),
    ("pool_bypassed", |r| r.swap.pool_bypassed),
    ("pool_total_size", |r| r.swap.pool_total_size),
];

/// Processes shown in a column of their own in `uzswap run`'s table.
const MAX_COLUMNS: usize = 6;

/// The table `uzswap run` prints at the end: one column per process that
/// used the runtime (the first few; the rest summed), and the total.
pub fn outcome_table(o: &Outcome) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    // At most a few processes get a column; the total covers them all.
    let shown = &o.processes[..o.processes.len().min(MAX_COLUMNS)];
    let hidden = o.processes.len() - shown.len();
    let mut header = vec!["counter".to_string()];
    header.extend(shown.iter().map(|p| format!("pid {}", p.program.pid)));
    if hidden > 0 {
        header.push(format!("{hidden} more"));
    }
    if o.processes.len() > 1 {
        header.push(format!("total ({} processes)", o.processes.len()));
    }
    t.set_header(header);
    for (name, counter) in SUMMARY {
        let mut row = vec![name.to_string()];
        row.extend(shown.iter().map(|p| counter(p).to_string()));
        if hidden > 0 {
            let rest: u64 = o.processes[MAX_COLUMNS..].iter().map(counter).sum();
            row.push(rest.to_string());
        }
        if o.processes.len() > 1 {
            row.push(o.total(counter).to_string());
        }
        t.add_row(row);
    }
    t
}

/// The slowdown `uzswap run` keeps without a --limit.
pub const DEFAULT_MAX_SLOWDOWN: f64 = 0.05;

impl RunArgs {
    /// The slowdown the limit is found for: --max-slowdown, or without
    /// --limit the default (not with --per-process-limit, whose limits a
    /// controller cannot move).
    pub fn max_slowdown(&self) -> Option<f64> {
        self.runtime.max_slowdown(self.max_slowdown)
    }

    /// The settings of the run's runtimes ([`RuntimeArgs::settings_for`]).
    pub fn settings(&self) -> Result<Settings, String> {
        self.runtime.settings_for(self.max_slowdown)
    }
}

impl RuntimeArgs {
    /// The slowdown the limit is found for: `asked` (--max-slowdown), or
    /// without --limit the default (not with --per-process-limit, whose
    /// limits a controller cannot move).
    pub fn max_slowdown(&self, asked: Option<f64>) -> Option<f64> {
        asked.or_else(|| {
            (self.limit.is_none() && !self.per_process_limit).then_some(DEFAULT_MAX_SLOWDOWN)
        })
    }

    /// The settings, where the limit is found for `asked` or the default
    /// slowdown and no --limit is given with this machine's memory as the
    /// ceiling.
    pub fn settings_for(&self, asked: Option<f64>) -> Result<Settings, String> {
        let mut s = self.settings()?;
        if self.max_slowdown(asked).is_some() && self.limit.is_none() {
            s.limit_bytes = launch::settings::machine_ram_bytes();
        }
        Ok(s)
    }
}

pub fn run(a: &RunArgs) -> Result<i32, String> {
    let settings = a.settings()?;
    let exe = std::env::current_exe().map_err(|e| format!("locating uzswap: {e}"))?;
    let library = launch::find_library(&exe).map_err(|e| e.to_string())?;
    let job = Launch {
        settings: settings.clone(),
        library,
        command: a.command.clone(),
        per_process_limit: a.runtime.per_process_limit,
        max_slowdown: a.max_slowdown(),
        warn_thrash: !a.quiet,
    };
    if a.plot.is_some() && job.max_slowdown.is_none() {
        return Err("--plot draws the limit found: give --max-slowdown (or no --limit)".into());
    }
    if let Some(path) = &settings.record {
        // Made afresh, readable by the user alone (it holds samples of
        // the program's memory): every process of the run appends its
        // chunks.
        make_record_file(path)?;
    }
    if !a.quiet {
        let limit = match job.max_slowdown {
            Some(s) => format!(
                "the limit found for a {}% slowdown (ceiling {})",
                s * 100.0,
                human_size(settings.limit_bytes as u64)
            ),
            None => format!("a {} limit", format_size(settings.limit_bytes)),
        };
        let mode = if launch::outside::is_static_command(&a.command) {
            "statically linked: paged from outside (uzswap's own thread serves its faults)"
                .to_string()
        } else {
            format!(
                "{} folios, {} (`uzswap stats PID` reads live counters)",
                format_size(settings.folio_bytes),
                settings
                    .probe_fault_mode()
                    .map_err(|e| e.to_string())?
                    .describe()
            )
        };
        eprintln!(
            "uzswap: running {:?} with {limit}, {}, {mode}",
            a.command.join(" "),
            settings.compressor,
        );
    }
    // Ctrl-C is the program's: uzswap ignores it (once the child has
    // started, with the default disposition) and stays to report.
    let old = std::cell::Cell::new(None);
    let outcome = job
        .run(|pid| {
            // SAFETY: changing this process's SIGINT disposition.
            old.set(Some(unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) }));
            if !a.quiet {
                eprintln!("uzswap: pid {pid}");
            }
        })
        .map_err(|e| e.to_string())?;
    if let Some(h) = old.get() {
        // SAFETY: restoring the previous disposition.
        unsafe { libc::signal(libc::SIGINT, h) };
    }
    if let Some(path) = &a.stats_out {
        std::fs::write(path, outcome.report().render())
            .map_err(|e| format!("--stats-out {}: {e}", path.display()))?;
    }
    if let (Some(path), false) = (&settings.record, a.quiet) {
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "uzswap: recorded {} to {} (`uzswap replay {}` replays it)",
            human_size(bytes),
            path.display(),
            path.display()
        );
    }
    if !a.quiet {
        eprintln!(
            "\nuzswap: {:?} exited with {} after {:.2}s (user {:.2}s, sys {:.2}s)",
            a.command.join(" "),
            outcome.exit_code(),
            outcome.elapsed.as_secs_f64(),
            outcome.user.as_secs_f64(),
            outcome.sys.as_secs_f64()
        );
        if !outcome.processes.is_empty() {
            eprintln!(
                "uzswap: peak RSS {} (the largest process, all its memory), limit {}",
                human_size(outcome.max_rss_bytes()),
                human_size(settings.limit_bytes as u64),
            );
        }
        if let (Some(samples), Some(path)) = (&outcome.control, &a.plot) {
            match plot_control(path, samples, job.max_slowdown.unwrap_or_default()) {
                Ok(()) => eprintln!("uzswap: drew {}", path.display()),
                Err(e) => eprintln!("uzswap: --plot {}: {e}", path.display()),
            }
        }
        if let Some(samples) = &outcome.control {
            let s = launch::control::summarize(samples);
            eprintln!(
                "uzswap: limit found: {} at the end, {} at the lowest; cold age {:.2} s at the shortest; charge {} on average; threads waited on uzswap {:.1}% of the time ({} ticks of {} ms)",
                human_size(s.end_limit_bytes as u64),
                human_size(s.min_limit_bytes as u64),
                f64::from(s.min_cold_age_ms) / 1000.0,
                human_size(s.mean_charge_bytes as u64),
                100.0 * s.stall_share,
                samples.len(),
                launch::control::TICK.as_millis(),
            );
        }
        for why in &outcome.unreadable {
            eprintln!("uzswap: a process's report could not be read: {why}");
        }
        for note in &outcome.notes {
            eprintln!("{note}");
        }
        if outcome.processes.is_empty() {
            if launch::outside::is_static_command(&a.command) {
                eprintln!("uzswap: nothing was paged");
            } else {
                eprintln!("uzswap: no process made an allocation of {} or more (or none exited normally): nothing was paged", format_size(settings.min_alloc_bytes));
            }
        } else {
            eprintln!("{}", outcome_table(&outcome));
            let total = outcome.report().total;
            let s = report::Savings::of(&total);
            let share = report::stall_share(total.runtime.stall_ns, outcome.elapsed);
            eprintln!(
                "uzswap: at exit: {} swapped out, in a {} pool ({}) and {} of tables{}: {} saved; threads waited on uzswap {:.1}% of the run",
                human_size(s.swapped_bytes),
                human_size(s.pool_bytes),
                s.compression_ratio.map(|x| format!("{x:.2}x compression")).unwrap_or_else(|| "empty".into()),
                human_size(s.table_bytes),
                swapfile_in_memory(&s),
                signed_size(s.saved_bytes),
                100.0 * share,
            );
            if let Some(hint) = limit_hint(share, outcome.control.is_some(), settings.limit_bytes) {
                eprintln!("{hint}");
            }
        }
    }
    Ok(outcome.exit_code())
}

/// What a swap file in memory holds, for the savings lines: pages written
/// back there still take the machine's memory, so they are not saved.
fn swapfile_in_memory(s: &report::Savings) -> String {
    match s.swapfile_memory_bytes {
        0 => String::new(),
        b => format!(
            ", and {} on a swap file in memory (tmpfs: --swapfile-dir on a disk saves it)",
            human_size(b)
        ),
    }
}

/// What to say after a run under a fixed `--limit` of `limit_bytes` whose
/// threads waited `share` of it on uzswap (`None`: nothing): past
/// [`launch::thrash::SHARE`], the share the watch tells of while the run
/// goes on, the program ran at half its speed or less. A limit found by
/// the controller is not the user's guess: it says nothing then.
fn limit_hint(share: f64, controlled: bool, limit_bytes: usize) -> Option<String> {
    (!controlled && share > launch::thrash::SHARE).then(|| {
        format!(
            "uzswap: the program waited on paging {:.0}% of the run: --limit {} is well under the memory it keeps using. Without --limit (or with --max-slowdown PCT) uzswap finds the lowest limit for the slowdown you allow",
            100.0 * share,
            human_size(limit_bytes as u64),
        )
    })
}

/// Draws a controlled run's ticks: limit and charge (MiB), and the stall
/// share (%) beside the target.
fn plot_control(
    path: &std::path::Path,
    samples: &[launch::control::Sample],
    slowdown: f64,
) -> Result<(), String> {
    use uzswap_bench::plot::{timeline, Line};
    let mib = |pages: usize| pages as f64 * 4096.0 / (1 << 20) as f64;
    let line = |name: &str, f: &dyn Fn(&launch::control::Sample) -> f64| Line {
        name: name.into(),
        points: samples.iter().map(|s| (s.at.as_secs_f64(), f(s))).collect(),
    };
    let target = 100.0 * slowdown / (1.0 + slowdown);
    let panels = [
        (
            "memory",
            "MiB",
            vec![
                line("limit found", &|s| mib(s.limit_pages)),
                line("charge (resident + pool)", &|s| mib(s.charge_pages)),
            ],
        ),
        (
            "time waiting on uzswap",
            "% of wall time",
            vec![
                line("stall share", &|s| 100.0 * s.stall_share),
                line("target", &|_| target),
            ],
        ),
        (
            "cold age: resident pages untouched this long leave before pressure (0: none leave now)",
            "seconds",
            vec![line("cold age", &|s| f64::from(s.cold_age_ms) / 1000.0)],
        ),
    ];
    timeline(
        path,
        &format!("uzswap run --max-slowdown {}%", slowdown * 100.0),
        &panels,
    )
    .map_err(|e| e.to_string())
}

pub fn stats(pid: u32, raw: bool) -> Result<(), String> {
    let report = launch::live_stats(pid)?;
    if raw {
        print!("{}", report.render());
        return Ok(());
    }
    let mut now = Table::new();
    now.load_preset(UTF8_FULL_CONDENSED);
    now.set_header(vec!["now", "value"]);
    for (name, value) in savings_rows(&report, process_age(pid)) {
        now.add_row(vec![name.to_string(), value]);
    }
    println!("{now}");
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["counter", "value", "meaning"]);
    for (name, value) in report.fields() {
        let meaning = report::meaning(&name).unwrap_or_default();
        t.add_row(vec![name, value.to_string(), meaning.to_string()]);
    }
    println!("{t}");
    Ok(())
}

/// `bytes` with its sign: "-4K", "120M".
fn signed_size(bytes: i64) -> String {
    let size = human_size(bytes.unsigned_abs());
    if bytes < 0 {
        format!("-{size}")
    } else {
        size
    }
}

/// What a process's report says paging gives it now, as rows for a
/// person: the limit in force, the stall share over `age` (how long the
/// process has run, if known), memory saved and the compression ratio.
fn savings_rows(
    r: &ProcessReport,
    age: Option<std::time::Duration>,
) -> Vec<(&'static str, String)> {
    let s = report::Savings::of(r);
    let share = match age {
        Some(age) => format!(
            "{:.1}% ({:.2}s of waiting over {:.1}s run)",
            100.0 * report::stall_share(r.runtime.stall_ns, age),
            r.runtime.stall_ns as f64 / 1e9,
            age.as_secs_f64()
        ),
        None => format!("{:.2}s of waiting", r.runtime.stall_ns as f64 / 1e9),
    };
    vec![
        ("limit in force", human_size(s.limit_bytes)),
        ("resident", human_size(r.runtime.resident_pages * 4096)),
        ("stall share", share),
        (
            "memory saved",
            format!(
                "{} ({} swapped out, held in a {} pool and {} of tables{})",
                signed_size(s.saved_bytes),
                human_size(s.swapped_bytes),
                human_size(s.pool_bytes),
                human_size(s.table_bytes),
                swapfile_in_memory(&s),
            ),
        ),
        (
            "compression ratio",
            s.compression_ratio
                .map(|x| format!("{x:.2}x"))
                .unwrap_or_else(|| "- (pool empty)".into()),
        ),
        (
            "resident, untouched for",
            format!(
                "1s+: {}, 10s+: {}, 60s+: {} (no fault or tracked write since)",
                human_size(r.runtime.cold_1s_bytes),
                human_size(r.runtime.cold_10s_bytes),
                human_size(r.runtime.cold_60s_bytes)
            ),
        ),
    ]
}

/// How long process `pid` has run: its start time in `/proc/PID/stat`
/// against `/proc/uptime`.
fn process_age(pid: u32) -> Option<std::time::Duration> {
    let ticks = common::proc_stat::read(pid)?.start_ticks as f64;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| std::time::Duration::from_secs_f64((uptime - ticks / hz as f64).max(0.0)))
}

/// Makes `--record`'s file `path` empty (creating it) with mode 0600,
/// whatever mode it had: it will hold samples of the program's memory.
pub(crate) fn make_record_file(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|file| file.set_permissions(std::fs::Permissions::from_mode(0o600)))
        .map_err(|e| format!("--record {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn a_process_age_is_read_from_proc() {
        let age = process_age(std::process::id()).expect("this process's age");
        assert!(age < std::time::Duration::from_secs(24 * 3600), "{age:?}");
        assert_eq!(process_age(u32::MAX), None);
    }

    #[test]
    fn a_fixed_limit_the_program_thrashed_under_gets_a_hint() {
        let hint = limit_hint(0.73, false, 9 << 20).expect("73% waited: a hint");
        assert!(
            hint.contains("73%") && hint.contains("--limit 9M"),
            "{hint}"
        );
        assert!(hint.contains("--max-slowdown"), "{hint}");
        assert_eq!(limit_hint(0.3, false, 9 << 20), None, "a bearable limit");
        assert_eq!(
            limit_hint(0.9, true, 9 << 20),
            None,
            "a limit found, not guessed"
        );
    }

    #[test]
    fn savings_rows_show_a_negative_saving_and_an_empty_pool() {
        let mut r = ProcessReport::default();
        r.runtime.table_bytes = 8192;
        r.runtime.stall_ns = 500_000_000;
        let rows = savings_rows(&r, Some(std::time::Duration::from_secs(10)));
        let row = |n: &str| rows.iter().find(|(k, _)| *k == n).unwrap().1.clone();
        assert!(row("memory saved").starts_with("-8K "), "{rows:?}");
        assert!(row("stall share").starts_with("5.0% "), "{rows:?}");
        assert!(row("compression ratio").starts_with("- "), "{rows:?}");
        r.swap.swapfile_memory_bytes = 2 << 20;
        let rows = savings_rows(&r, None);
        let row = |n: &str| rows.iter().find(|(k, _)| *k == n).unwrap().1.clone();
        assert!(
            row("memory saved").starts_with("-2M ")
                && row("memory saved").contains("2M on a swap file in memory"),
            "{rows:?}"
        );
        r.swap.swapfile_memory_bytes = 0;
        r.runtime.cold_1s_bytes = 3 << 20;
        let rows = savings_rows(&r, None);
        let row = |n: &str| rows.iter().find(|(k, _)| *k == n).unwrap().1.clone();
        assert!(
            row("resident, untouched for").starts_with("1s+: 3M,"),
            "{rows:?}"
        );
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        runtime: RuntimeArgs,
    }

    /// Every variable's flag is a flag of `uzswap run`: an error about a
    /// variable names a flag the user can find.
    #[test]
    fn percentages_read_as_people_write_them() {
        assert_eq!(percent_arg("5%"), Ok(0.05));
        assert_eq!(percent_arg(" 10 "), Ok(0.10));
        assert!(percent_arg("0%").is_err());
        assert!(percent_arg("five").is_err());
    }

    #[test]
    fn every_variable_with_a_flag_has_it_in_uzswap_run() {
        let cmd = Cli::command();
        let flags: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        for v in launch::settings::env::VARS {
            if let Some(flag) = v.flag {
                assert!(
                    flags.iter().any(|f| f == flag),
                    "{}: {flag} is not a flag",
                    v.name
                );
            }
        }
    }

    /// The variables a program gets from `uzswap run FLAGS`: the settings
    /// the flags make, with the shared limit file `uzswap run` adds.
    fn program_vars(flags: &[&str]) -> Result<Vec<(String, String)>, String> {
        use clap::Parser;
        let argv = std::iter::once("uzswap").chain(flags.iter().copied());
        let args = Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .runtime;
        let job = Launch {
            settings: args.settings()?,
            library: "/nonexistent/libuzswap_preload.so".into(),
            command: vec!["true".into()],
            per_process_limit: args.per_process_limit,
            max_slowdown: None,
            warn_thrash: false,
        };
        let cmd = job
            .command(std::path::Path::new("/nonexistent/stats"))
            .map_err(|e| e.to_string())?;
        let mut vars: Vec<(String, String)> = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
            .filter(|(k, _)| k.starts_with("UZSWAP_") && k != launch::settings::env::STATS_DIR)
            .collect();
        vars.sort();
        Ok(vars)
    }

    /// `uzswap run`'s flags and the settings table cannot drift: every
    /// row with a flag has that flag, with the row's default where the
    /// flag has one; the flag (with the row's example, if it takes a
    /// value) changes the row's variable and no other; and every flag of
    /// the runtime's changes exactly one row's variable.
    #[test]
    fn the_flags_are_the_settings_tables() {
        use launch::settings::env::VARS;
        let cmd = Cli::command();
        let defaults = Settings::default().to_vars();
        let plain = program_vars(&[]).unwrap();
        let changed = |flags: &[&str]| -> Vec<String> {
            let vars = program_vars(flags).unwrap_or_else(|e| panic!("{flags:?}: {e}"));
            let mut names: Vec<String> = plain
                .iter()
                .chain(&vars)
                .filter(|kv| !plain.contains(kv) || !vars.contains(kv))
                .map(|(k, _)| k.clone())
                .collect();
            names.sort();
            names.dedup();
            names
        };
        for v in VARS {
            let Some(flag) = v.flag else { continue };
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == flag.strip_prefix("--"))
                .unwrap_or_else(|| panic!("{}: {flag} is not a flag of uzswap run", v.name));
            let takes_value = arg.get_action().takes_values();
            if takes_value {
                if let [clap_default] = arg.get_default_values() {
                    let row_default = defaults.iter().find(|(n, _)| *n == v.name);
                    assert_eq!(
                        row_default.map(|(_, d)| d.as_str()),
                        clap_default.to_str(),
                        "{flag}'s default is not {}'s",
                        v.name
                    );
                }
            }
            let flags: Vec<&str> = if takes_value {
                vec![flag, v.example]
            } else {
                vec![flag]
            };
            assert_eq!(changed(&flags), [v.name], "{flags:?}");
            let vars = program_vars(&flags).unwrap();
            if let Some((_, value)) = vars.iter().find(|(k, _)| k == v.name) {
                assert_eq!(value, v.example, "{flags:?}");
            }
        }
        for arg in cmd.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            let flag = format!("--{long}");
            if long == "help" || VARS.iter().any(|v| v.flag == Some(flag.as_str())) {
                continue;
            }
            assert!(
                !arg.get_action().takes_values(),
                "{flag} takes a value but is no setting's flag"
            );
            let names = changed(&[flag.as_str()]);
            assert!(
                names.len() == 1 && VARS.iter().any(|v| v.name == names[0]),
                "{flag} changes {names:?}, not one setting"
            );
        }
    }

    /// A bad flag value is refused with the flag's name, the value and
    /// what it must be.
    #[test]
    fn bad_flag_values_name_the_flag() {
        use clap::Parser;
        let err = |flags: &[&str]| {
            let argv = std::iter::once("uzswap").chain(flags.iter().copied());
            Cli::try_parse_from(argv)
                .unwrap()
                .runtime
                .settings()
                .unwrap_err()
        };
        assert_eq!(err(&["--limit", "10"]), "--limit=10: at least 64K");
        assert_eq!(
            err(&["--pool-limit", "1K"]),
            "--pool-limit=1K: at least 64K"
        );
        assert_eq!(
            err(&["--swapfile-size", "60K"]),
            "--swapfile-size=60K: at least 64K"
        );
        assert_eq!(err(&["--min-alloc", "1K"]), "--min-alloc=1K: at least 4K");
        assert_eq!(
            err(&["--folio", "12K"]),
            "--folio=12K: a power-of-two number of pages, 4K to 2M"
        );
        assert_eq!(
            err(&["--max-pool-percent", "101"]),
            "--max-pool-percent=101: a percentage, 1 to 100"
        );
        assert!(err(&["--compressor", "brotli"]).starts_with("--compressor: "));
        let refused = |flags: &[&str]| {
            let argv = std::iter::once("uzswap").chain(flags.iter().copied());
            Cli::try_parse_from(argv).is_err()
        };
        assert!(refused(&["--unmap-group", "0"]));
        assert!(refused(&["--unmap-group", "4097"]));
        assert!(refused(&["--limit", "lots"]));
    }

    /// `uzswap run` with no flags runs with the settings' defaults.
    #[test]
    fn no_flags_give_the_default_settings() {
        use clap::Parser;
        let s = Cli::parse_from(["uzswap"]).runtime.settings().unwrap();
        assert_eq!(s, Settings::default());
    }

    /// README.md's table of `uzswap run` flags is the one clap parses.
    #[test]
    fn the_readme_flags_table_is_the_parsers() {
        let readme = include_str!("../../../README.md");
        let (begin, end) = ("<!-- run-flags:begin -->\n", "<!-- run-flags:end -->");
        let from = readme
            .find(begin)
            .expect("README.md has the run-flags markers")
            + begin.len();
        let to = readme[from..].find(end).expect("and the end marker") + from;
        let want = flags_table();
        assert!(
            readme[from..to] == want,
            "README.md's flags table is stale; put this between the markers:\n{want}"
        );
    }

    /// A misspelled flag is clap's error (with its suggestion), not the
    /// program; the program's own flags pass, after `--` or after its name.
    #[test]
    fn flags_before_the_program_are_flags() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: RunArgs,
        }
        let err = Run::try_parse_from(["uzswap", "--limt", "64M", "--", "true"])
            .err()
            .expect("a misspelled flag is refused");
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
        assert!(err.to_string().contains("--limit"), "{err}");
        for argv in [
            &["uzswap", "--limit", "64M", "--", "ls", "-l", "--all"][..],
            &["uzswap", "--limit", "64M", "ls", "-l", "--all"][..],
        ] {
            let r = Run::try_parse_from(argv).unwrap().run;
            assert_eq!(r.command, ["ls", "-l", "--all"], "{argv:?}");
            assert_eq!(r.runtime.limit, Some(64 << 20));
        }
    }

    #[test]
    fn small_object_flags_choose_the_mode() {
        use clap::Parser;
        let mode = |args: &[&str]| {
            let argv = std::iter::once("uzswap").chain(args.iter().copied());
            Cli::try_parse_from(argv).map(|c| c.runtime.settings().unwrap().small_objects)
        };
        assert_eq!(mode(&["--small-objects"]).unwrap(), SmallObjects::On);
        assert_eq!(mode(&["--no-small-objects"]).unwrap(), SmallObjects::Off);
        assert_eq!(
            mode(&["--small-objects-after", "64M"]).unwrap(),
            SmallObjects::After(64 << 20)
        );
        assert!(mode(&["--small-objects", "--no-small-objects"]).is_err());
        assert!(mode(&["--no-small-objects", "--small-objects-after", "1M"]).is_err());
    }
}
