//! `uzswap replay FILE`: a recorded trace (`uzswap run --record`) paged
//! again under policies and limits, without the program (the `lab` crate).

use crate::compat::human_size;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use lab::{Limit, Outcome, ProtocolConfig, Workload};
use launch::settings::parse_size;
use std::path::PathBuf;
use uzswap_bench::plot::Line;
use uzswap_bench::Progress;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace `uzswap run --record FILE` wrote
    pub trace: PathBuf,
    /// Replay at this limit (repeatable: 256M, 1G…); default: the limit the
    /// run had (as it moved), then a sweep over --sweep limits
    #[arg(long, value_parser = size_arg)]
    pub limit: Vec<usize>,
    /// Policies (repeatable): uzswap (the runtime's own protocol;
    /// uzswap:always, uzswap:bypass, uzswap:disk-only, uzswap:off with that
    /// swap-in readahead), lru, fifo, clock, opt (Belady's optimum);
    /// default: uzswap and the reference policies
    #[arg(long)]
    pub policy: Vec<String>,
    /// Compare compressors (repeatable, or comma-separated: lz4, zstd:3,
    /// deflate:6, lzo, lzo-rle): the run's own pages, sampled at eviction,
    /// compressed by each (ratio, speed), and the runtime's protocol
    /// replayed storing them with each (`uzswap/COMPRESSOR` rows)
    #[arg(long, value_delimiter = ',')]
    pub compressor: Vec<compress::Algorithm>,
    /// Without --limit: also replay at this many limits, evenly from a
    /// tenth of the pages the trace touched to all of them (the
    /// miss-ratio curve); 0 for none
    #[arg(long, default_value_t = 10)]
    pub sweep: usize,
    /// The pool does not count in the limit (`uzswap run --uncharged-pool`)
    #[arg(long)]
    pub uncharged_pool: bool,
    /// Leave out the recorded aging passes (write tracking's reprieves)
    #[arg(long)]
    pub no_aging: bool,
    /// The pool's share of the limit fixed at half (as `uzswap run
    /// --fixed-pool-split`)
    #[arg(long)]
    pub fixed_pool_split: bool,
    /// Write the first policy's counters at the first limit as `name
    /// value` lines, as `uzswap run --stats-out` does
    #[arg(long)]
    pub stats_out: Option<PathBuf>,
    /// Where the miss-ratio curve goes (PNG); default: next to the trace
    /// (none with --no-plot)
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Threads the replays run on; default: every CPU
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print each process's first N records (times from its first) and
    /// stop: what the trace holds
    #[arg(long, value_name = "N")]
    pub dump: Option<usize>,
}

fn size_arg(s: &str) -> Result<usize, String> {
    parse_size(s).ok_or_else(|| format!("{s:?} is not a size (e.g. 64M, 1G)"))
}

const PAGE: u64 = 4096;

pub fn replay(a: &ReplayArgs) -> Result<(), String> {
    let started = std::time::Instant::now();
    let procs = trace::read_file(&a.trace).map_err(|e| e.to_string())?;
    if let Some(n) = a.dump {
        dump(&procs, n);
        return Ok(());
    }
    let w = Workload::from_trace(&procs);
    if w.accesses() == 0 {
        return Err(format!(
            "{}: no fault recorded (was the program paged? memory is paged once it nears the limit)",
            a.trace.display()
        ));
    }
    let mut names: Vec<String> = if a.policy.is_empty() {
        std::iter::once(lab::protocol::NAME)
            .chain(lab::policies::NAMES)
            .map(String::from)
            .collect()
    } else {
        a.policy.clone()
    };
    if !a.compressor.is_empty() {
        if w.samples.is_empty() {
            return Err(format!(
                "{}: no page samples to compare compressors on (nothing was stored in the pool, or the trace is from an older uzswap)",
                a.trace.display()
            ));
        }
        names = with_compressors(&names, &a.compressor);
    }
    lab::check_policies(&names).map_err(|e| e.to_string())?;
    let r = &w.recorded;
    let mut limits: Vec<Limit> = a
        .limit
        .iter()
        .map(|&b| Limit::Fixed(b as u64 / PAGE))
        .collect();
    let mut curve = Vec::new();
    if limits.is_empty() {
        if w.recorded_limits().next().is_some() {
            limits.push(Limit::Recorded);
        }
        curve = (1..=a.sweep)
            .map(|k| Limit::Fixed((w.pages * k / a.sweep).max(16) as u64))
            .collect();
        limits.extend(&curve);
    }
    eprintln!(
        "uzswap replay: {} process(es), {} accesses over {} pages ({}), {} limit(s) × {} policies",
        r.processes,
        w.accesses(),
        w.pages,
        human_size(w.pages as u64 * PAGE),
        limits.len(),
        names.len()
    );
    let cfg = ProtocolConfig {
        charge_pool: !a.uncharged_pool,
        aging: !a.no_aging,
        fixed_pool_split: a.fixed_pool_split,
        ..ProtocolConfig::default()
    };
    let progress = Progress::new("replay", (limits.len() * names.len()) as u64);
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let done = |o: Option<&Outcome>| match o {
        Some(o) => progress.step(&format!(
            "{} at {}: {} pages in, {} evicted",
            o.policy,
            o.limit.describe(),
            o.pages_in,
            o.evicted_pages
        )),
        None => progress.step("a replay failed"),
    };
    let outcomes =
        lab::sweep(&w, &names, &limits, &cfg, threads, &done).map_err(|e| e.to_string())?;
    progress.finish();
    println!("{}", recorded_table(&w));
    let compared = compare_compressors(&w, &a.compressor);
    if !compared.is_empty() {
        println!("{}", compressor_table(&w, &compared));
    }
    println!("{}", outcome_table(&w, &outcomes, &compared));
    if let Some(o) = outcomes
        .iter()
        .find(|o| o.limit == Limit::Recorded && o.policy == lab::protocol::NAME)
    {
        println!("{}", fidelity(&w, o));
    }
    if let Some(path) = &a.stats_out {
        std::fs::write(path, outcomes[0].stats_lines())
            .map_err(|e| format!("--stats-out {}: {e}", path.display()))?;
    }
    let plots = a.plot.is_some() || crate::plot_path("").is_some();
    if plots && !curve.is_empty() {
        let path = a
            .plot
            .clone()
            .unwrap_or_else(|| a.trace.with_extension("mrc.png"));
        match plot_curve(&path, &names, &outcomes) {
            Ok(()) => eprintln!("uzswap replay: miss-ratio curve in {}", path.display()),
            Err(e) => eprintln!("uzswap replay: no plot: {e}"),
        }
    }
    eprintln!(
        "uzswap replay: {} replays in {:.2}s",
        outcomes.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `names`, each protocol policy among them followed by its replay with
/// each compressor (`uzswap/zstd:3`).
fn with_compressors(names: &[String], compressors: &[compress::Algorithm]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| {
            let variants: Vec<String> = match n.starts_with(lab::protocol::NAME) && !n.contains('/')
            {
                true => compressors.iter().map(|c| format!("{n}/{c}")).collect(),
                false => Vec::new(),
            };
            std::iter::once(n.clone()).chain(variants)
        })
        .collect()
}

/// The compressors asked for, and the run's own, on its sampled pages
/// (none if none was asked for).
fn compare_compressors(
    w: &Workload,
    asked: &[compress::Algorithm],
) -> Vec<lab::compressors::CompressorRow> {
    if asked.is_empty() {
        return Vec::new();
    }
    let mut all = asked.to_vec();
    if let Some(own) = recorded_compressor(w) {
        if !all.contains(&own) {
            all.push(own);
        }
    }
    lab::compressors::compare(w, &all)
}

fn recorded_compressor(w: &Workload) -> Option<compress::Algorithm> {
    w.recorded_compressor.as_deref()?.parse().ok()
}

/// Compressors on the run's sampled pages.
fn compressor_table(w: &Workload, rows: &[lab::compressors::CompressorRow]) -> Table {
    let own = recorded_compressor(w);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "compressor",
        "pages\nsampled",
        "compressed\n/ page bytes",
        "over 90%\nof a page",
        "compress\nMB/s",
        "decompress\nMB/s",
    ]);
    for r in rows {
        let name = match Some(r.compressor) == own {
            true => format!("{} (the run's)", r.compressor),
            false => r.compressor.to_string(),
        };
        t.add_row([
            Cell::new(name),
            right(r.samples),
            right(format!("{:.3}", r.ratio)),
            right(r.incompressible),
            right(format!("{:.0}", r.compress_bytes_per_s / 1e6)),
            right(format!("{:.0}", r.decompress_bytes_per_s / 1e6)),
        ]);
    }
    t
}

/// What the compressor of `o` (a `uzswap/COMPRESSOR` replay) costs against
/// the run's, from `rows`.
fn compressor_cost(
    w: &Workload,
    o: &Outcome,
    rows: &[lab::compressors::CompressorRow],
) -> Option<lab::compressors::CompressorCost> {
    let used: compress::Algorithm = o.policy.split_once('/')?.1.parse().ok()?;
    let own = recorded_compressor(w)?;
    let row = |c| rows.iter().find(|r| r.compressor == c);
    Some(lab::compressors::cost(o, row(used)?, row(own)?))
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn mib(pages: u64) -> String {
    human_size(pages * PAGE)
}

/// What the recorded run did, from its own records.
fn recorded_table(w: &Workload) -> Table {
    let r = &w.recorded;
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["the recorded run", ""]);
    let limit = match (w.recorded_limits().min(), w.recorded_limits().last()) {
        (Some(lo), Some(last)) if lo != last => {
            format!("{} at the lowest, {} at the end", mib(lo), mib(last))
        }
        (_, Some(last)) => mib(last),
        _ => "none recorded".into(),
    };
    let rows = [
        (
            "time (first to last record)",
            format!("{:.2} s", r.span_ns as f64 / 1e9),
        ),
        ("limit in force", limit),
        ("first touches", r.first_touches.to_string()),
        (
            "swap-in faults",
            format!(
                "{} (mean {:.1} µs)",
                r.swapin_faults,
                r.swapin_cost_s() * 1e6
            ),
        ),
        (
            "write-protect faults",
            format!("{} (mean {:.1} µs)", r.wp_faults, r.wp_cost_s() * 1e6),
        ),
        (
            "evicted pages",
            format!(
                "{} ({} zero, {} to the file)",
                r.evicted_pages, r.zero_pages, r.file_pages
            ),
        ),
        ("compressed bytes stored", human_size(r.stored_bytes)),
        (
            "pages sampled",
            match &w.recorded_compressor {
                Some(c) => format!("{} (lengths by {c})", w.samples.len()),
                None => "none".into(),
            },
        ),
        ("aging passes", r.aging_passes.to_string()),
        ("records lost", r.lost.to_string()),
    ];
    for (k, v) in rows {
        t.add_row([Cell::new(k), right(v)]);
    }
    t
}

fn outcome_table(
    w: &Workload,
    outcomes: &[Outcome],
    compared: &[lab::compressors::CompressorRow],
) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec![
        "limit",
        "policy",
        "pages in\n(opt bounds it)",
        "swap-in\nfaults",
        "evicted",
        "written back\n/ read from file",
        "first\ntouches",
        "wp\nfaults",
        "pool\npeak",
        "predicted\ntime",
        "replay",
    ];
    if !compared.is_empty() {
        header.push("compression\nCPU");
    }
    t.set_header(header);
    for o in outcomes {
        let cost = compressor_cost(w, o, compared);
        let file = match o.store {
            Some(_) => format!("{} / {}", o.written_back, o.file_reads),
            None => "-".into(),
        };
        let predicted = o.predicted_s(&w.recorded) + cost.map_or(0.0, |c| c.fault_path_s);
        let mut row = vec![
            Cell::new(o.limit.describe()),
            Cell::new(&o.policy),
            right(o.pages_in),
            right(o.swapin_faults),
            right(o.evicted_pages),
            right(file),
            right(o.first_touches),
            right(o.wp_faults),
            right(mib(o.pool_peak_pages)),
            right(format!("{predicted:.2} s")),
            right(format!("{:.2} s", o.seconds)),
        ];
        if !compared.is_empty() {
            row.push(right(
                cost.map_or("-".into(), |c| format!("{:.2} s", c.cpu_s)),
            ));
        }
        t.add_row(row);
    }
    t
}

/// The runtime's replay at the recorded limit against the run itself.
fn fidelity(w: &Workload, o: &Outcome) -> String {
    let r = &w.recorded;
    let off = |replayed: u64, recorded: u64| match recorded {
        0 => "n/a".to_string(),
        n => format!("{:+.1}%", (replayed as f64 - n as f64) * 100.0 / n as f64),
    };
    let outside = match r.paged_from_outside {
        0 => "",
        _ => "; the run was paged from outside (a statically linked program), whose pager is not the runtime replayed here: the replay is what uzswap's in-process design would do, not a prediction of that run",
    };
    format!(
        "fidelity (uzswap replayed at the recorded limit against the run): swap-ins {} vs {} ({}), evicted pages {} vs {} ({}){outside}",
        o.swapin_faults,
        r.swapin_faults,
        off(o.swapin_faults, r.swapin_faults),
        o.evicted_pages,
        r.evicted_pages,
        off(o.evicted_pages, r.evicted_pages),
    )
}

fn plot_curve(
    path: &std::path::Path,
    names: &[String],
    outcomes: &[Outcome],
) -> Result<(), String> {
    let lines = |value: fn(&Outcome) -> u64| -> Vec<Line> {
        names
            .iter()
            .map(|n| Line {
                name: n.clone(),
                points: outcomes
                    .iter()
                    .filter(|o| &o.policy == n)
                    .filter_map(|o| match o.limit {
                        Limit::Fixed(p) => {
                            Some(((p * PAGE) as f64 / (1 << 20) as f64, value(o) as f64))
                        }
                        Limit::Recorded => None,
                    })
                    .collect(),
            })
            .collect()
    };
    uzswap_bench::plot::curves(
        path,
        "pages brought back by limit (miss-ratio curves)",
        "limit, MiB",
        &[
            ("pages in (opt bounds it)", "pages", lines(|o| o.pages_in)),
            ("swap-in faults", "faults", lines(|o| o.swapin_faults)),
        ],
    )
    .map_err(|e| e.to_string())
}

/// Each process's first `n` records, one a line.
fn dump(procs: &[trace::ProcessTrace], n: usize) {
    for p in procs {
        println!("process {} ({} records)", p.pid, p.records.len());
        let t0 = p
            .records
            .iter()
            .map(|r| r.time_ns)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(0);
        for r in p.records.iter().take(n) {
            let at = r.time_ns.saturating_sub(t0) as f64 / 1e6;
            println!("  {at:10.3} ms  {:?}", r.event);
        }
    }
}
