//! What the suite reports: a line per case and user as it finishes, the
//! result table, the summary line, the `--list` table, and the CSV of
//! `--out`.

use super::cases::{Case, Scale};
use super::check::{Row, Verdict};
use super::expectations::expected;
use super::expectations::Expected::{KnownIssue, Works};
use super::proc::{Measured, User};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Color, Table};
use std::time::Duration;

fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

pub(super) fn done_line(row: &Row) -> String {
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

pub(super) fn result_table(rows: &[Row]) -> Table {
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

pub(super) fn print_summary(rows: &[Row]) {
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

pub(super) fn list_table(cases: &[&Case], users: &[User], scale: Scale) -> Table {
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
pub(super) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(super) fn csv(rows: &[Row]) -> String {
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
    fn csv_fields_and_sizes() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(human_size(512 << 10), "512K");
        assert_eq!(human_size(96 << 20), "96M");
        assert_eq!(human_size(3 << 29), "1.5G");
    }
}
