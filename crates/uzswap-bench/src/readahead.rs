//! Swap-in readahead for zswap (the bypass for pooled pages against
//! mainline and fault-around, docs/seeds.md), on a fault trace.
//!
//! A process of `pages` virtual pages runs with at most `resident` of them
//! in memory. Its accesses are runs of sequential pages starting at random
//! places, with a hot subset touched more often. An access to a non-resident
//! page faults it in through [`Swap::swap_in_around`]; when over its limit
//! the process evicts its oldest pages, 8 at a time (reclaim batches: they
//! get neighbouring swap slots). The zswap pool is small enough that the
//! shrinker writes part of the data to the swap file, so faults hit both.
//! Each readahead policy replays the same trace; every page read back is
//! checked against what was written.

use crate::{BenchError, Progress};
use comfy_table::{presets::UTF8_FULL, Cell, CellAlignment, Table};
use compress::corpus::Corpus;
use compress::PAGE_SIZE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, VecDeque};
use std::time::Instant;
use zswap::{Config, Readahead, Stats, Swap};

/// Parameters of the run.
#[derive(Debug, Clone)]
pub struct ReadaheadParams {
    pub pages: usize,
    pub resident: usize,
    pub accesses: usize,
    /// Pool limit as a share of the process's size (percent).
    pub pool_percent: u32,
    pub page_cluster: u32,
    pub seed: u64,
}

impl Default for ReadaheadParams {
    fn default() -> Self {
        Self {
            pages: 16384,
            resident: 6144,
            accesses: 200_000,
            pool_percent: 15,
            page_cluster: 3,
            seed: 42,
        }
    }
}

/// One policy's outcome.
#[derive(Debug, Clone)]
pub struct ReadaheadRow {
    pub label: &'static str,
    pub stats: Stats,
    pub faults: u64,
    pub seconds: f64,
}

impl ReadaheadRow {
    pub fn hit_percent(&self) -> f64 {
        if self.stats.swap_ra == 0 {
            0.0
        } else {
            self.stats.swap_ra_hit as f64 * 100.0 / self.stats.swap_ra as f64
        }
    }
}

/// The policies compared, in the seed's order.
pub const POLICIES: [(&str, Readahead, bool); 3] = [
    ("always (mainline)", Readahead::Always, false),
    ("bypass zswap (seed 002)", Readahead::BypassZswap, false),
    ("disk-only + fault-around", Readahead::DiskOnly, true),
];

/// Replays the trace under each policy.
pub fn run(params: &ReadaheadParams, progress: &Progress) -> Result<Vec<ReadaheadRow>, BenchError> {
    if params.resident == 0 || params.resident >= params.pages {
        return Err(BenchError::Params("resident must be in 1..pages".into()));
    }
    let corpus = Corpus::sample()?;
    let contents: Vec<&[u8]> = corpus
        .pages()
        .filter(|p| p.iter().any(|&b| b != 0))
        .collect();
    let trace = make_trace(params);
    let mut rows = Vec::new();
    for (label, readahead, fault_around) in POLICIES {
        let cfg = Config {
            readahead,
            page_cluster: params.page_cluster,
            // The policies compared at the seed's fixed cluster size.
            adaptive_readahead: false,
            total_ram_bytes: params.pages * PAGE_SIZE,
            max_pool_percent: params.pool_percent,
            swap_cache_pages: 512,
            swapfile_pages: params.pages * 2,
            ..Config::default()
        };
        let swap = Swap::new(cfg)?;
        let start = Instant::now();
        let faults = replay(&swap, &trace, &contents, params, fault_around)?;
        rows.push(ReadaheadRow {
            label,
            stats: swap.stats(),
            faults,
            seconds: start.elapsed().as_secs_f64(),
        });
        progress.step(label);
    }
    Ok(rows)
}

fn make_trace(p: &ReadaheadParams) -> Vec<usize> {
    let mut rng = SmallRng::seed_from_u64(p.seed);
    let hot = p.pages / 5;
    let mut trace = Vec::with_capacity(p.accesses);
    while trace.len() < p.accesses {
        let start = if rng.gen_bool(0.6) {
            rng.gen_range(0..hot)
        } else {
            rng.gen_range(0..p.pages)
        };
        let run = rng.gen_range(1..=16);
        trace.extend((start..(start + run).min(p.pages)).take(p.accesses - trace.len()));
    }
    trace
}

/// Page `i`'s bytes: a corpus page stamped with `i`.
fn content(i: usize, contents: &[&[u8]]) -> Vec<u8> {
    let mut page = contents[i % contents.len()].to_vec();
    page[..8].copy_from_slice(&(i as u64).to_le_bytes());
    page
}

fn replay(
    swap: &Swap,
    trace: &[usize],
    contents: &[&[u8]],
    p: &ReadaheadParams,
    fault_around: bool,
) -> Result<u64, BenchError> {
    let mut resident: VecDeque<usize> = VecDeque::new();
    let mut is_resident = vec![false; p.pages];
    let mut slot_of: HashMap<usize, u64> = HashMap::new();
    let mut page_of: HashMap<u64, usize> = HashMap::new();
    let mut faults = 0u64;
    let mut buf = vec![0u8; PAGE_SIZE];
    let cluster = 1usize << p.page_cluster;
    for &v in trace {
        if is_resident[v] {
            continue;
        }
        if let Some(slot) = slot_of.remove(&v) {
            faults += 1;
            page_of.remove(&slot);
            let neighbours: Vec<u64> = if fault_around {
                let lo = v.saturating_sub(cluster);
                (lo..(v + cluster).min(p.pages))
                    .filter_map(|n| slot_of.get(&n).copied())
                    .collect()
            } else {
                Vec::new()
            };
            let mut around = Vec::new();
            swap.swap_in_around(slot, &mut buf, &neighbours, &mut around)?;
            check(&buf, v, contents)?;
            for (s, data) in around {
                let n = page_of.remove(&s).expect("handed-over slot is one of ours");
                slot_of.remove(&n);
                check(&data, n, contents)?;
                is_resident[n] = true;
                resident.push_back(n);
            }
        }
        is_resident[v] = true;
        resident.push_back(v);
        while resident.len() > p.resident {
            let victims: Vec<usize> = resident.drain(..8.min(resident.len())).collect();
            let pages: Vec<Vec<u8>> = victims.iter().map(|&n| content(n, contents)).collect();
            let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
            let slots = swap.alloc_slots(victims.len())?;
            swap.swap_out(&refs, &slots)?;
            for (&n, &s) in victims.iter().zip(&slots) {
                is_resident[n] = false;
                slot_of.insert(n, s);
                page_of.insert(s, n);
            }
        }
    }
    Ok(faults)
}

fn check(page: &[u8], i: usize, contents: &[&[u8]]) -> Result<(), BenchError> {
    if page != content(i, contents).as_slice() {
        return Err(BenchError::Params(format!(
            "page {i} read back wrong: the swap store is broken"
        )));
    }
    Ok(())
}

/// One row of the table: a metric, how to read it, the seed's figure.
struct Metric {
    name: &'static str,
    value: fn(&ReadaheadRow) -> f64,
    decimals: usize,
    seed: &'static str,
}

fn mib(pages: u64) -> f64 {
    pages as f64 * PAGE_SIZE as f64 / f64::from(1 << 20)
}

const METRICS: [Metric; 8] = [
    Metric {
        name: "elapsed (s)",
        value: |r| r.seconds,
        decimals: 2,
        seed: "build time -15.6%",
    },
    Metric {
        name: "faults",
        value: |r| r.faults as f64,
        decimals: 0,
        seed: "",
    },
    Metric {
        name: "zswap-in (MiB)",
        value: |r| mib(r.stats.zswpin),
        decimals: 1,
        seed: "-33%",
    },
    Metric {
        name: "zswap-out (MiB)",
        value: |r| mib(r.stats.zswpout),
        decimals: 1,
        seed: "-20%",
    },
    Metric {
        name: "swap-in from disk (MiB)",
        value: |r| mib(r.stats.pswpin),
        decimals: 1,
        seed: "",
    },
    Metric {
        name: "swap readahead (pages)",
        value: |r| r.stats.swap_ra as f64,
        decimals: 0,
        seed: "-93%",
    },
    Metric {
        name: "swap_ra hit (%)",
        value: ReadaheadRow::hit_percent,
        decimals: 1,
        seed: "+18pp",
    },
    Metric {
        name: "written back (pages)",
        value: |r| r.stats.written_back_pages as f64,
        decimals: 0,
        seed: "",
    },
];

/// The table in the readahead-bypass post's format (docs/seeds.md), with
/// the change against mainline.
pub fn table(rows: &[ReadaheadRow]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL);
    let mut header = vec!["metric".to_string()];
    header.extend(rows.iter().map(|r| r.label.to_string()));
    header.push("seed 002 (bypass vs mm-new, 768M)".into());
    t.set_header(header);
    for m in METRICS {
        let mut cells = vec![Cell::new(m.name)];
        let base = (m.value)(&rows[0]);
        for (i, r) in rows.iter().enumerate() {
            let v = (m.value)(r);
            let mut s = format!("{v:.*}", m.decimals);
            if i > 0 && m.name.ends_with("(%)") {
                s += &format!(" ({:+.1}pp)", v - base);
            } else if i > 0 && base > 0.0 {
                s += &format!(" ({:+.0}%)", (v / base - 1.0) * 100.0);
            }
            cells.push(Cell::new(s).set_alignment(CellAlignment::Right));
        }
        cells.push(Cell::new(m.seed));
        t.add_row(cells);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bypass_reads_less_from_zswap_on_a_small_trace() {
        let p = ReadaheadParams {
            pages: 2048,
            resident: 768,
            accesses: 20_000,
            ..ReadaheadParams::default()
        };
        let rows = run(&p, &Progress::hidden()).unwrap();
        let (always, bypass) = (&rows[0], &rows[1]);
        assert!(always.faults > 1000, "the trace thrashes: {always:?}");
        assert!(
            bypass.stats.swap_ra < always.stats.swap_ra,
            "{always:?} vs {bypass:?}"
        );
        assert!(bypass.stats.zswpin < always.stats.zswpin);
        assert!(
            always.stats.pswpin > 0 && always.stats.written_back_pages > 0,
            "faults hit both zswap and disk"
        );
        assert!(table(&rows).to_string().contains("zswap-in"));
    }
}
