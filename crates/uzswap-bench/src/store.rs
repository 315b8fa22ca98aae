//! zswap store throughput, batched vs page-at-a-time (zswap's compress
//! batching in stores of 8 pages, docs/seeds.md).
//!
//! Folios of corpus pages are swapped out into a fresh store with room for
//! all of them, then freed. *Per-page* stores each page through its own
//! compress call (`store_batch = 1`, mainline before compress batching);
//! *batched* hands the compressor 8 pages at a time
//! (`ZSWAP_MAX_BATCH_SIZE`). On the parallel backend that is the posts'
//! "IAA sequential" vs "IAA batching".

use crate::{median, BenchError, Progress};
use comfy_table::{presets::UTF8_FULL, Cell, CellAlignment, Table};
use compress::corpus::Corpus;
use compress::{Algorithm, Backend, ParallelConfig, PAGE_SIZE, ZSWAP_MAX_BATCH_SIZE};
use std::time::Instant;
use zswap::{Config, Swap};

/// Parameters of the run.
#[derive(Debug, Clone)]
pub struct StoreParams {
    pub algorithms: Vec<Algorithm>,
    /// Pages per folio (16 = 64 KiB folios, 512 = PMD folios).
    pub folio_pages: usize,
    /// Pages swapped out per measurement.
    pub pages: usize,
    pub reps: usize,
}

impl Default for StoreParams {
    fn default() -> Self {
        Self {
            algorithms: Algorithm::ALL.to_vec(),
            folio_pages: 16,
            pages: 16384,
            reps: 5,
        }
    }
}

/// One compressor on one backend.
#[derive(Debug, Clone)]
pub struct StoreRow {
    pub algorithm: Algorithm,
    pub backend: &'static str,
    pub per_page_gbps: f64,
    pub batched_gbps: f64,
}

/// Swaps out `pages` pages in folios; returns GB/s of pages stored.
fn swap_out_rate(cfg: &Config, pages: &[&[u8]], folio: usize) -> Result<f64, BenchError> {
    let swap = Swap::new(cfg.clone())?;
    let start = Instant::now();
    let mut all = Vec::with_capacity(pages.len());
    for chunk in pages.chunks(folio) {
        let slots = swap.alloc_slots(chunk.len())?;
        swap.swap_out(chunk, &slots)?;
        all.extend(slots);
    }
    let t = start.elapsed();
    if swap.stats().pswpout > 0 {
        return Err(BenchError::Params(
            "pool too small: pages went to disk".into(),
        ));
    }
    for s in all {
        swap.free(s)?;
    }
    Ok((pages.len() * PAGE_SIZE) as f64 / t.as_secs_f64() / 1e9)
}

/// Runs every algorithm on both backends.
pub fn run(
    corpus: &Corpus,
    params: &StoreParams,
    progress: &Progress,
) -> Result<Vec<StoreRow>, BenchError> {
    let base: Vec<&[u8]> = corpus.pages().collect();
    if base.is_empty() || params.reps == 0 || params.folio_pages == 0 {
        return Err(BenchError::Params(
            "need a corpus, reps >= 1 and folio_pages >= 1".into(),
        ));
    }
    let pages: Vec<&[u8]> = base.iter().cycle().take(params.pages).copied().collect();
    let backends = [
        ("sequential", Backend::Sequential),
        ("parallel", Backend::Parallel(ParallelConfig::default())),
    ];
    let mut rows = Vec::new();
    for &algorithm in &params.algorithms {
        for (name, backend) in &backends {
            let cfg = |store_batch| Config {
                compressor: algorithm,
                compressor_backend: backend.clone(),
                store_batch,
                shrinker_enabled: false,
                total_ram_bytes: params.pages * PAGE_SIZE * 2,
                max_pool_percent: 100,
                swapfile_pages: params.pages + 1024,
                ..Config::default()
            };
            let (mut one, mut eight) = (Vec::new(), Vec::new());
            for rep in 0..params.reps {
                let order = if rep % 2 == 0 {
                    [1, ZSWAP_MAX_BATCH_SIZE]
                } else {
                    [ZSWAP_MAX_BATCH_SIZE, 1]
                };
                for b in order {
                    let r = swap_out_rate(&cfg(b), &pages, params.folio_pages)?;
                    if b == 1 {
                        one.push(r)
                    } else {
                        eight.push(r)
                    }
                }
            }
            rows.push(StoreRow {
                algorithm,
                backend: name,
                per_page_gbps: median(one),
                batched_gbps: median(eight),
            });
            progress.step(&format!("{algorithm} {name}"));
        }
    }
    Ok(rows)
}

/// The table, with the seeds' figures.
pub fn table(rows: &[StoreRow], folio_pages: usize) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL);
    t.set_header(vec![
        "compressor".to_string(),
        "backend".into(),
        "per-page GB/s".into(),
        format!("batched ({ZSWAP_MAX_BATCH_SIZE}) GB/s"),
        "batched vs per-page".into(),
        format!("seed ({}K folios)", folio_pages * 4),
    ]);
    for r in rows {
        let seed = match r.backend {
            "parallel" => "IAA: +59% to +78%",
            _ => "zstd: +0.3% to +0.8%",
        };
        t.add_row(vec![
            Cell::new(r.algorithm),
            Cell::new(r.backend),
            Cell::new(format!("{:.3}", r.per_page_gbps)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.3}", r.batched_gbps)).set_alignment(CellAlignment::Right),
            Cell::new(format!(
                "{:+.0}%",
                (r.batched_gbps / r.per_page_gbps - 1.0) * 100.0
            ))
            .set_alignment(CellAlignment::Right),
            Cell::new(seed),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_store_run_measures_both_paths() {
        let p = StoreParams {
            algorithms: vec![Algorithm::Lz4],
            pages: 256,
            reps: 1,
            folio_pages: 16,
        };
        let rows = run(&Corpus::synthetic(8, 1), &p, &Progress::hidden()).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows
            .iter()
            .all(|r| r.per_page_gbps > 0.0 && r.batched_gbps > 0.0));
        assert!(table(&rows, 16).to_string().contains("IAA"));
    }
}
