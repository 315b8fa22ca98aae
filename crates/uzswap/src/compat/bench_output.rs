//! How `uzswap bench programs` and `uzswap bench faults` end: every run
//! as CSV, a chart of the median elapsed times, the work folder removed
//! unless kept, and whether every uzswap run went right; and the cells
//! both tables share.

use super::bench_runs::{CsvRow, ProgramResult, SystemResult};
use super::summary::csv_field;
use super::work::Work;
use comfy_table::Cell;
use std::path::Path;
use uzswap_bench::plot::Bar;

/// Writes every run as CSV to `out` (if asked), removes the work folder
/// unless kept; whether every uzswap run went right.
pub(super) fn finish(
    work: &Work,
    out: Option<&Path>,
    csv_rows: &[CsvRow],
    results: &[ProgramResult],
) -> Result<bool, String> {
    if let Some(path) = out {
        std::fs::write(path, csv(csv_rows))
            .map_err(|e| format!("--out {}: {e}", path.display()))?;
    }
    if work.keep {
        println!("work folder kept: {}", work.root.display());
    }
    work.remove_unless_kept();
    Ok(results
        .iter()
        .flat_map(|r| &r.cells)
        .all(|c| c.failed == 0 || !c.system.is_uzswap()))
}

pub(super) fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// `a / b`, or `-` when `b` is missing.
pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// The runs of `c` that went right, and the first problem of the others.
pub(super) fn runs_ok(c: &SystemResult) -> Cell {
    let ok = format!("{}/{}", c.runs - c.failed, c.runs);
    Cell::new(match &c.first_problem {
        Some(p) => format!("{ok}: {p}"),
        None => ok,
    })
}

/// A bar per program result and system: its median elapsed time, labelled
/// by `label` of the result and the system.
pub(super) fn draw_elapsed(
    results: &[ProgramResult],
    file: &str,
    title: &str,
    label: impl Fn(&ProgramResult) -> String,
) {
    let bars: Vec<Bar> = results
        .iter()
        .flat_map(|r| {
            let name = label(r);
            r.cells.iter().filter_map(move |c| {
                Some(Bar {
                    label: format!("{name} {}", c.system.slug()),
                    value: secs(c.median.as_ref()?.measured.elapsed),
                    group: c.system.label(),
                })
            })
        })
        .collect();
    crate::chart_at(
        crate::plot_path(file),
        title,
        "whole-job elapsed time, s (median; lower is better)",
        &bars,
    );
}

fn csv(rows: &[CsvRow]) -> String {
    let mut out = String::from(
        "program,system,rep,code,elapsed_s,cpu_s,max_rss_bytes,peak_memory_bytes,sampled_peak_bytes,sampled_mean_bytes,swapped_out_pages,swapped_in_pages,problem\n",
    );
    for (case, system, rep, s) in rows {
        let fields = [
            case.to_string(),
            system.clone(),
            rep.to_string(),
            s.measured.code.to_string(),
            format!("{:.3}", secs(s.measured.elapsed)),
            format!("{:.3}", secs(s.measured.cpu)),
            s.measured.max_rss.to_string(),
            s.peak_memory.to_string(),
            s.measured.memory.peak.to_string(),
            s.measured.memory.mean.to_string(),
            s.swapped_out.to_string(),
            s.swapped_in.to_string(),
            s.problem.clone().unwrap_or_default(),
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
    fn ratios_need_both_sides() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), "1.50x");
        assert_eq!(ratio(Some(3.0), None), "-");
        assert_eq!(ratio(Some(3.0), Some(0.0)), "-");
    }
}
