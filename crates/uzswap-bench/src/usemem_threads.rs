//! `uzswap bench usemem-threads` (threads; the processes variant, the
//! seeds' own, is [`usemem`](crate::usemem)).
//!
//! usemem, as in the compress batching posts' "usemem30"
//! (docs/seeds.md): N threads each write S bytes of realistic pages into
//! memory limited to L, so most of it is swapped out through zswap;
//! optionally read back and verified. Here the memory is
//! a [`runtime::Region`] per thread of this process, under the runtime's
//! resident limit `limit_bytes`. The same workload as processes under
//! `uzswap run` is `uzswap bench usemem`, and under the kernel `uzswap
//! bench kernel-peer`.
//!
//! Each compressor runs twice: zswap storing folios page by page
//! (`store_batch` 1) and in batches of 8, on the chosen compressor backend;
//! on the parallel backend that is the seeds' "IAA sequential" vs "IAA
//! batching".

use crate::{BenchError, Progress};
use comfy_table::{presets::UTF8_FULL, Cell, CellAlignment, Table};
use compress::corpus::Corpus;
use compress::{Algorithm, Backend, ParallelConfig, PAGE_SIZE, ZSWAP_MAX_BATCH_SIZE};
use runtime::{Runtime, RuntimeConfig};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Parameters of the run.
#[derive(Debug, Clone)]
pub struct UsememThreadsParams {
    pub threads: usize,
    pub bytes_per_thread: usize,
    pub limit_bytes: usize,
    /// Pages evicted together as one folio (1 = 4K, 16 = 64K, 512 = 2M).
    pub folio_pages: usize,
    pub algorithms: Vec<Algorithm>,
    pub parallel: bool,
    pub read_back: bool,
}

impl Default for UsememThreadsParams {
    fn default() -> Self {
        Self {
            threads: 4,
            bytes_per_thread: 64 << 20,
            limit_bytes: 64 << 20,
            folio_pages: 16,
            algorithms: vec![Algorithm::Lz4, Algorithm::Deflate(6)],
            parallel: true,
            read_back: true,
        }
    }
}

/// One configuration's outcome.
#[derive(Debug, Clone)]
pub struct UsememThreadsRow {
    pub label: String,
    pub total_kbps: f64,
    pub avg_kbps: f64,
    pub elapsed: f64,
    pub sys_time: f64,
    pub swap: zswap::Stats,
    pub rt: runtime::RuntimeStats,
}

fn sys_seconds() -> f64 {
    common::rusage::usage(common::rusage::Who::Process)
        .sys
        .as_secs_f64()
}

/// Runs every configuration.
pub fn run(
    params: &UsememThreadsParams,
    progress: &Progress,
) -> Result<Vec<UsememThreadsRow>, BenchError> {
    if params.threads == 0 || params.bytes_per_thread < PAGE_SIZE || params.limit_bytes < PAGE_SIZE
    {
        return Err(BenchError::Params("threads >= 1, sizes >= one page".into()));
    }
    let corpus = Arc::new(Corpus::sample()?);
    let mut rows = Vec::new();
    for &algorithm in &params.algorithms {
        for store_batch in [1, ZSWAP_MAX_BATCH_SIZE] {
            let row = run_one(params, algorithm, store_batch, corpus.clone())?;
            progress.step(&row.label);
            rows.push(row);
        }
    }
    Ok(rows)
}

fn run_one(
    p: &UsememThreadsParams,
    algorithm: Algorithm,
    store_batch: usize,
    corpus: Arc<Corpus>,
) -> Result<UsememThreadsRow, BenchError> {
    let total = p.threads * p.bytes_per_thread;
    let backend = if p.parallel {
        Backend::Parallel(ParallelConfig::default())
    } else {
        Backend::Sequential
    };
    let swap = zswap::Config {
        compressor: algorithm,
        compressor_backend: backend,
        store_batch,
        total_ram_bytes: p.limit_bytes * 4,
        max_pool_percent: 100,
        swapfile_pages: total / PAGE_SIZE + 4096,
        ..zswap::Config::default()
    };
    let cfg = RuntimeConfig {
        swap,
        limit_bytes: p.limit_bytes,
        reclaim_batch: 64,
        evict_folio_pages: p.folio_pages,
        ..RuntimeConfig::default()
    };
    let rt = Runtime::new(cfg)?;
    let regions: Vec<_> = (0..p.threads)
        .map(|_| rt.alloc(p.bytes_per_thread))
        .collect::<Result<_, _>>()?;
    let barrier = Arc::new(Barrier::new(p.threads));
    let sys0 = sys_seconds();
    let start = Instant::now();
    let per_thread: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = regions
            .iter()
            .enumerate()
            .map(|(t, region)| {
                let (barrier, corpus) = (barrier.clone(), corpus.clone());
                s.spawn(move || -> Result<f64, BenchError> {
                    let pages: Vec<&[u8]> = corpus.pages().collect();
                    // SAFETY: each thread uses only its own region.
                    let mem = unsafe { region.as_mut_slice() };
                    barrier.wait();
                    let t0 = Instant::now();
                    for (i, page) in mem.chunks_exact_mut(PAGE_SIZE).enumerate() {
                        page.copy_from_slice(pages[(i * 7 + t) % pages.len()]);
                        page[..8].copy_from_slice(&((t << 32 | i) as u64).to_le_bytes());
                    }
                    let secs = t0.elapsed().as_secs_f64();
                    if p.read_back {
                        verify(mem, &pages, t)?;
                    }
                    Ok(mem.len() as f64 / 1024.0 / secs)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("usemem thread panicked"))
            .collect::<Result<_, _>>()
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let sys_time = sys_seconds() - sys0;
    let label = format!(
        "{algorithm} {}",
        if store_batch == 1 {
            "per-page"
        } else {
            "batched"
        }
    );
    let total_kbps: f64 = per_thread.iter().sum();
    Ok(UsememThreadsRow {
        label,
        total_kbps,
        avg_kbps: total_kbps / p.threads as f64,
        elapsed,
        sys_time,
        swap: rt.swap_stats(),
        rt: rt.stats(),
    })
}

fn verify(mem: &[u8], pages: &[&[u8]], t: usize) -> Result<(), BenchError> {
    for (i, page) in mem.chunks_exact(PAGE_SIZE).enumerate() {
        let src = pages[(i * 7 + t) % pages.len()];
        let stamp = ((t << 32 | i) as u64).to_le_bytes();
        if page[..8] != stamp || page[8..] != src[8..] {
            return Err(BenchError::Params(format!(
                "thread {t} page {i} read back wrong"
            )));
        }
    }
    Ok(())
}

/// A table row: its name and how to print it for one configuration.
type Metric = (&'static str, fn(&UsememThreadsRow) -> String);

/// The seeds' usemem30 table: one column per configuration.
pub fn table(rows: &[UsememThreadsRow]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL);
    let mut header = vec!["usemem".to_string()];
    header.extend(rows.iter().map(|r| r.label.clone()));
    t.set_header(header);
    let metrics: [Metric; 12] = [
        ("Total throughput (KB/s)", |r| {
            format!("{:.0}", r.total_kbps)
        }),
        ("Average throughput (KB/s)", |r| {
            format!("{:.0}", r.avg_kbps)
        }),
        ("elapsed time (sec)", |r| format!("{:.2}", r.elapsed)),
        ("sys time (sec)", |r| format!("{:.2}", r.sys_time)),
        ("zswpout", |r| r.swap.zswpout.to_string()),
        ("zswpin", |r| r.swap.zswpin.to_string()),
        ("pswpout", |r| r.swap.pswpout.to_string()),
        ("pswpin", |r| r.swap.pswpin.to_string()),
        ("rejects", |r| {
            (r.swap.reject_compress_poor + r.swap.reject_compress_fail + r.swap.reject_alloc_fail)
                .to_string()
        }),
        ("pool_limit_hit", |r| r.swap.pool_limit_hit.to_string()),
        ("pool_total_size (MiB)", |r| {
            format!("{:.1}", r.swap.pool_total_size as f64 / f64::from(1 << 20))
        }),
        ("evicted pages", |r| r.rt.evicted_pages.to_string()),
    ];
    for (name, f) in metrics {
        let mut cells = vec![Cell::new(name)];
        cells.extend(
            rows.iter()
                .map(|r| Cell::new(f(r)).set_alignment(CellAlignment::Right)),
        );
        t.add_row(cells);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_usemem_pages_out_and_verifies() {
        let p = UsememThreadsParams {
            threads: 2,
            bytes_per_thread: 4 << 20,
            limit_bytes: 2 << 20,
            algorithms: vec![Algorithm::Lz4],
            ..UsememThreadsParams::default()
        };
        let rows = run(&p, &Progress::hidden()).unwrap();
        assert_eq!(rows.len(), 2);
        // 8 MiB written under a 2 MiB limit, every page verified by run():
        // pages were evicted through zswap and faulted back in.
        for r in &rows {
            assert!(r.swap.zswpout > 0 && r.rt.evicted_pages > 0, "{r:?}");
            assert!(r.rt.swapin_faults > 0 && r.swap.zswpin > 0, "{r:?}");
            assert!(
                r.rt.resident_pages <= 512 + 128 + 64 + 16,
                "resident stays bounded: {r:?}"
            );
        }
        assert!(table(&rows).to_string().contains("Total throughput"));
    }
}
