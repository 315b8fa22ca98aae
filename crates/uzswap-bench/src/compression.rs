//! Compressor benchmarks on a page corpus (and zswap's compress batching:
//! batches of 8, sequential vs parallel; docs/seeds.md).
//!
//! * Per algorithm, one thread: compress and decompress throughput (GB/s of
//!   pages) and ratio, counting incompressible pages at a full page, as zswap
//!   stores them raw.
//! * Batching: the same pages pushed through zswap's store pattern (a batch
//!   of `ZSWAP_MAX_BATCH_SIZE` pages, submit, wait) on the sequential
//!   backend and on the parallel backend; the seed's target is ≥ 1.6x.

use crate::{median, BenchError, Progress};
use comfy_table::{presets::UTF8_FULL, Cell, CellAlignment, Table};
use compress::corpus::Corpus;
use compress::figures::bytes_per_s;
use compress::{
    new_compressor, Algorithm, Backend, Batch, Compressor, Op, ParallelConfig, PAGE_SIZE,
    ZSWAP_MAX_BATCH_SIZE,
};
use std::time::Duration;

/// Parameters of the run.
#[derive(Debug, Clone)]
pub struct CompressParams {
    pub algorithms: Vec<Algorithm>,
    /// Least time per measurement.
    pub min_time: Duration,
    /// Repetitions of each batching measurement (median reported).
    pub reps: usize,
    pub parallel: ParallelConfig,
}

impl Default for CompressParams {
    fn default() -> Self {
        Self {
            algorithms: Algorithm::ALL.to_vec(),
            min_time: Duration::from_millis(300),
            reps: 5,
            parallel: ParallelConfig::default(),
        }
    }
}

/// One algorithm's single-thread figures.
#[derive(Debug, Clone)]
pub struct CodecRow {
    pub algorithm: Algorithm,
    pub compress_gbps: f64,
    pub decompress_gbps: f64,
    pub ratio: f64,
    pub incompressible: f64,
}

/// Sequential vs parallel store throughput for one algorithm.
#[derive(Debug, Clone)]
pub struct BatchingRow {
    pub algorithm: Algorithm,
    pub sequential_gbps: f64,
    pub parallel_gbps: f64,
}

impl BatchingRow {
    pub fn speedup(&self) -> f64 {
        self.parallel_gbps / self.sequential_gbps
    }
}

/// Both tables.
#[derive(Debug, Clone)]
pub struct CompressReport {
    pub pages: usize,
    pub codecs: Vec<CodecRow>,
    pub batching: Vec<BatchingRow>,
    pub workers: usize,
}

/// Runs both measurements over `corpus`.
pub fn run(
    corpus: &Corpus,
    params: &CompressParams,
    progress: &Progress,
) -> Result<CompressReport, BenchError> {
    let pages: Vec<&[u8]> = corpus.pages().collect();
    if pages.is_empty() || params.reps == 0 {
        return Err(BenchError::Params(
            "need a non-empty corpus and reps >= 1".into(),
        ));
    }
    let mut codecs = Vec::new();
    let mut batching = Vec::new();
    for &a in &params.algorithms {
        codecs.push(measure_codec(a, &pages, params.min_time));
        progress.step(&format!("{a}: codec"));
        batching.push(measure_batching(a, &pages, params));
        progress.step(&format!("{a}: batching"));
    }
    Ok(CompressReport {
        pages: pages.len(),
        codecs,
        batching,
        workers: params.parallel.workers,
    })
}

fn measure_codec(a: Algorithm, pages: &[&[u8]], min_time: Duration) -> CodecRow {
    let f = compress::figures::measure(a, pages, min_time);
    CodecRow {
        algorithm: a,
        compress_gbps: f.compress_bytes_per_s / 1e9,
        decompress_gbps: f.decompress_bytes_per_s / 1e9,
        ratio: (pages.len() * PAGE_SIZE) as f64 / f.stored_bytes() as f64,
        incompressible: f.incompressible() as f64 / pages.len() as f64,
    }
}

/// zswap's store pattern: batches of 8 pages, each submitted and waited for.
fn store_pages(c: &dyn Compressor, pages: &[&[u8]], batch: &mut Option<Batch>) -> usize {
    for chunk in pages.chunks(ZSWAP_MAX_BATCH_SIZE) {
        let mut b = batch.take().unwrap_or_default();
        b.reset(Op::Compress);
        for p in chunk {
            b.push_page(p);
        }
        *batch = Some(c.submit(b).wait());
    }
    pages.len() * PAGE_SIZE
}

fn measure_batching(a: Algorithm, pages: &[&[u8]], params: &CompressParams) -> BatchingRow {
    let seq = new_compressor(a, &Backend::Sequential);
    let par = new_compressor(a, &Backend::Parallel(params.parallel.clone()));
    let (mut s, mut p) = (Vec::new(), Vec::new());
    let mut batch = None;
    for rep in 0..params.reps {
        // Alternate the order so drift affects both.
        let order: [&dyn Compressor; 2] = if rep % 2 == 0 {
            [&*seq, &*par]
        } else {
            [&*par, &*seq]
        };
        for c in order {
            let g = bytes_per_s(params.min_time, || store_pages(c, pages, &mut batch)) / 1e9;
            if std::ptr::addr_eq(c, &*seq) {
                s.push(g)
            } else {
                p.push(g)
            }
        }
    }
    BatchingRow {
        algorithm: a,
        sequential_gbps: median(s),
        parallel_gbps: median(p),
    }
}

impl CompressReport {
    /// Per-algorithm throughput and ratio.
    pub fn codec_table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL);
        t.set_header(vec![
            "compressor",
            "compress GB/s",
            "decompress GB/s",
            "ratio",
            "incompressible",
        ]);
        for r in &self.codecs {
            t.add_row(vec![
                Cell::new(r.algorithm),
                right(format!("{:.2}", r.compress_gbps)),
                right(format!("{:.2}", r.decompress_gbps)),
                right(format!("{:.2}", r.ratio)),
                right(format!("{:.1}%", r.incompressible * 100.0)),
            ]);
        }
        t
    }

    /// Batched (parallel) vs sequential store throughput, with the seed's target.
    pub fn batching_table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL);
        t.set_header(vec![
            "compressor",
            "sequential GB/s",
            &format!("batched ({} workers) GB/s", self.workers),
            "batching vs sequential",
            "seed 003/004 (IAA)",
        ]);
        for r in &self.batching {
            t.add_row(vec![
                Cell::new(r.algorithm),
                right(format!("{:.2}", r.sequential_gbps)),
                right(format!("{:.2}", r.parallel_gbps)),
                right(format!("{:+.0}%", (r.speedup() - 1.0) * 100.0)),
                Cell::new("+59% to +78%"),
            ]);
        }
        t
    }
}

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_run_measures_every_algorithm() {
        let corpus = Corpus::synthetic(4, 1);
        let params = CompressParams {
            min_time: Duration::from_millis(5),
            reps: 1,
            ..CompressParams::default()
        };
        let r = run(&corpus, &params, &Progress::hidden()).unwrap();
        assert_eq!(r.codecs.len(), Algorithm::ALL.len());
        for c in &r.codecs {
            assert!(c.compress_gbps > 0.0 && c.decompress_gbps > 0.0);
            // 1 of 5 classes is random: about a fifth incompressible.
            assert!((0.15..0.3).contains(&c.incompressible), "{c:?}");
            assert!(c.ratio > 1.5, "{c:?}");
        }
        assert!(r.batching.iter().all(|b| b.speedup() > 0.0));
        assert!(r.batching_table().to_string().contains("+59%"));
    }
}
