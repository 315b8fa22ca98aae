//! PNG bar charts of benchmark results (plotters), drawn with a system
//! TrueType font: `$UZSWAP_FONT`, else DejaVu Sans or Liberation Sans where
//! distributions put them (`scripts/setup.sh` installs fonts-dejavu-core).

use crate::BenchError;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const FONT_PATHS: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

fn err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Plot(e.to_string())
}

/// Registers the font once; the error says how to get one.
fn font() -> Result<(), BenchError> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates: Vec<PathBuf> = std::env::var_os("UZSWAP_FONT")
            .map(PathBuf::from)
            .into_iter()
            .chain(FONT_PATHS.iter().map(PathBuf::from))
            .collect();
        let path = candidates.iter().find(|p| p.is_file()).ok_or_else(|| {
            format!(
                "no TrueType font found (looked at {}); install fonts-dejavu-core or set UZSWAP_FONT",
                FONT_PATHS.join(", ")
            )
        })?;
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{}: not a usable TrueType font", path.display()))
    })
    .clone()
    .map_err(BenchError::Plot)
}

/// One bar: its label, value, and colour group (bars of one group share a
/// colour; the legend is the group names in order of appearance).
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub group: String,
}

const COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

/// A line: its name and its points (x, value).
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Panels of lines over a shared time axis, one above the other, written
/// to `path` (PNG): each panel its title, its unit, and its lines.
pub fn timeline(
    path: &Path,
    title: &str,
    panels: &[(&str, &str, Vec<Line>)],
) -> Result<(), BenchError> {
    curves(path, title, "seconds", panels)
}

/// Panels of lines over a shared x axis named `x_desc` (from 0), one above
/// the other, written to `path` (PNG): each panel its title, its unit, and
/// its lines.
pub fn curves(
    path: &Path,
    title: &str,
    x_desc: &str,
    panels: &[(&str, &str, Vec<Line>)],
) -> Result<(), BenchError> {
    let end = panels
        .iter()
        .flat_map(|(_, _, lines)| lines.iter())
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    if panels.is_empty() || end <= 0.0 {
        return Err(err("nothing to plot"));
    }
    font()?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    }
    let root = BitMapBackend::new(path, (1000, 60 + 320 * panels.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(err)?;
    for (area, (name, unit, lines)) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let top = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(*name, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..end, 0.0..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(*unit)
            .y_label_formatter(&|v| pretty(*v))
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        for (k, line) in lines.iter().enumerate() {
            let c = COLORS[k % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(line.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// A horizontal bar chart written to `path` (PNG), with each value printed
/// at its bar's end.
pub fn bars(path: &Path, title: &str, unit: &str, bars: &[Bar]) -> Result<(), BenchError> {
    if bars.is_empty() {
        return Err(err("nothing to plot"));
    }
    font()?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    }
    let mut groups: Vec<&str> = Vec::new();
    for b in bars {
        if !groups.contains(&b.group.as_str()) {
            groups.push(&b.group);
        }
    }
    let color = |g: &str| COLORS[groups.iter().position(|x| *x == g).unwrap_or(0) % COLORS.len()];
    let height = 120 + 42 * bars.len() as u32;
    let root = BitMapBackend::new(path, (1200, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    // Room on the right for the legend, beside the longest bar.
    let max = bars.iter().map(|b| b.value).fold(0.0, f64::max).max(1e-9) * 2.0;
    let n = bars.len();
    // Room on the left for the longest label (about 8 px a character).
    let longest = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(0);
    let label_area = (longest as u32 * 8 + 24).clamp(260, 600);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(label_area)
        .build_cartesian_2d(0.0..max, (0..n - 1).into_segmented())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if *i < n => bars[n - 1 - *i].label.clone(),
            _ => String::new(),
        })
        .x_label_formatter(&|v| pretty(*v))
        .x_desc(unit)
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    for (k, g) in groups.iter().enumerate() {
        let c = color(g);
        chart
            .draw_series(
                bars.iter()
                    .enumerate()
                    .filter(|(_, b)| b.group == *g)
                    .map(|(i, b)| {
                        let row = n - 1 - i;
                        let mut r = Rectangle::new(
                            [
                                (0.0, SegmentValue::Exact(row)),
                                (b.value, SegmentValue::Exact(row + 1)),
                            ],
                            c.filled(),
                        );
                        r.set_margin(6, 6, 0, 0);
                        r
                    }),
            )
            .map_err(err)?
            .label(g.to_string())
            .legend(move |(x, y)| {
                Rectangle::new(
                    [(x, y - 6), (x + 14, y + 6)],
                    COLORS[k % COLORS.len()].filled(),
                )
            });
    }
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let row = n - 1 - i;
            Text::new(
                format!(" {}", pretty(b.value)),
                (b.value, SegmentValue::CenterOf(row)),
                ("sans-serif", 14),
            )
        }))
        .map_err(err)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn pretty(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png_or_names_the_missing_font() {
        let path = std::env::temp_dir().join(format!("uzswap-plot-{}.png", std::process::id()));
        let data = [
            Bar {
                label: "uzswap lzo-rle".into(),
                value: 812_000.0,
                group: "uzswap".into(),
            },
            Bar {
                label: "kernel zswap lzo-rle".into(),
                value: 533_000.0,
                group: "kernel".into(),
            },
        ];
        match bars(&path, "usemem", "KB/s", &data) {
            Ok(()) => {
                let png = std::fs::read(&path).unwrap();
                assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
                assert!(png.len() > 2000, "an image with content");
                if std::env::var_os("UZSWAP_KEEP_PLOT").is_none() {
                    let _ = std::fs::remove_file(&path);
                }
            }
            Err(BenchError::Plot(msg)) => {
                assert!(msg.contains("fonts-dejavu-core"), "{msg}");
                assert!(FONT_PATHS.iter().all(|p| !Path::new(p).is_file()));
            }
            Err(e) => panic!("{e}"),
        }
        assert!(bars(&path, "empty", "KB/s", &[]).is_err());
    }
}

/// Charts of the other experiments' reports.
pub mod charts {
    use super::Bar;
    use crate::compression::CompressReport;
    use crate::readahead::ReadaheadRow;
    use crate::store::StoreRow;
    use crate::zsfree::ZsFreeReport;

    fn bar(label: String, value: f64, group: &str) -> Bar {
        Bar {
            label,
            value,
            group: group.to_string(),
        }
    }

    /// Free-phase time per thread count, Base and Patched (ms).
    pub fn zsfree(r: &ZsFreeReport) -> Vec<Bar> {
        r.rows
            .iter()
            .flat_map(|row| {
                [
                    bar(
                        format!("{} threads, Base", row.threads),
                        row.base.as_secs_f64() * 1e3,
                        "Base (pool lock)",
                    ),
                    bar(
                        format!("{} threads, Patched", row.threads),
                        row.patched.as_secs_f64() * 1e3,
                        "Patched (seed 001)",
                    ),
                ]
            })
            .collect()
    }

    /// Store-pattern GB/s per compressor, sequential and batched.
    pub fn compress(r: &CompressReport) -> Vec<Bar> {
        r.batching
            .iter()
            .flat_map(|row| {
                [
                    bar(
                        format!("{} sequential", row.algorithm),
                        row.sequential_gbps,
                        "sequential",
                    ),
                    bar(
                        format!("{} batched", row.algorithm),
                        row.parallel_gbps,
                        "batched",
                    ),
                ]
            })
            .collect()
    }

    /// zswap store GB/s per compressor and backend, per page and batched.
    pub fn store(rows: &[StoreRow]) -> Vec<Bar> {
        rows.iter()
            .flat_map(|row| {
                [
                    bar(
                        format!("{} {} per page", row.algorithm, row.backend),
                        row.per_page_gbps,
                        "per page",
                    ),
                    bar(
                        format!("{} {} batched", row.algorithm, row.backend),
                        row.batched_gbps,
                        "batched (8)",
                    ),
                ]
            })
            .collect()
    }

    /// Pages read from zswap per readahead policy.
    pub fn readahead(rows: &[ReadaheadRow]) -> Vec<Bar> {
        rows.iter()
            .map(|r| bar(r.label.to_string(), r.stats.zswpin as f64, r.label))
            .collect()
    }
}
