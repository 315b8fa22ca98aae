//! Compressors compared on the run's own pages: every page sampled at
//! eviction (`trace::samples`) compressed and decompressed by each, in one
//! thread, as zswap's sequential back-end does it (`compress::figures`,
//! what `uzswap bench compress` measures on a corpus). What a pool of each
//! would hold comes from the protocol's replay of `uzswap/COMPRESSOR`;
//! this is the per-page view beside it: ratio and speed.

use crate::workload::{Workload, PAGE};
use compress::Algorithm;
use std::time::Duration;

/// Least time each compressor is timed for: passes over the samples are
/// repeated up to it.
const MIN_TIMED: Duration = Duration::from_millis(50);

/// One compressor on the samples.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressorRow {
    pub compressor: Algorithm,
    pub samples: usize,
    /// Compressed bytes over page bytes, all samples.
    pub ratio: f64,
    /// Samples compressed to more than [`INCOMPRESSIBLE`] of a page (zswap
    /// stores them whole, or writes them to the swap file).
    pub incompressible: usize,
    /// Page bytes a second, compressing and decompressing.
    pub compress_bytes_per_s: f64,
    pub decompress_bytes_per_s: f64,
}

impl CompressorRow {
    /// Seconds to compress one page, and to decompress one.
    pub fn compress_s_per_page(&self) -> f64 {
        PAGE as f64 / self.compress_bytes_per_s
    }

    pub fn decompress_s_per_page(&self) -> f64 {
        PAGE as f64 / self.decompress_bytes_per_s
    }
}

/// What a compressor changes in a replay's time, from its per-page costs
/// on the samples: `uzswap/COMPRESSOR` replays' pool loads are on the
/// program's fault path (each costs this compressor's decompression
/// instead of the recorded one's, which the run's measured swap-in cost
/// holds), its stores are the reclaimer's (beside the program: CPU, not
/// the program's time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompressorCost {
    /// Seconds added to (or taken from) the predicted time.
    pub fault_path_s: f64,
    /// CPU seconds compressing and decompressing over the replay.
    pub cpu_s: f64,
}

/// The cost of `used`'s compressor in replay `o`, against `recorded`'s
/// (the run's compressor, measured on the same samples).
pub fn cost(o: &crate::Outcome, used: &CompressorRow, recorded: &CompressorRow) -> CompressorCost {
    let loads = o.store.as_ref().map_or(0, |s| s.zswpin) as f64;
    CompressorCost {
        fault_path_s: loads * (used.decompress_s_per_page() - recorded.decompress_s_per_page()),
        cpu_s: o.zswpout as f64 * used.compress_s_per_page() + loads * used.decompress_s_per_page(),
    }
}

/// A page compressed to more than this share of itself saves too little
/// to keep compressed.
pub const INCOMPRESSIBLE: f64 = 0.9;

/// Each compressor of `algorithms` on the samples of `w` (none without
/// samples).
pub fn compare(w: &Workload, algorithms: &[Algorithm]) -> Vec<CompressorRow> {
    if w.samples.is_empty() {
        return Vec::new();
    }
    algorithms.iter().map(|&a| measure(w, a)).collect()
}

fn measure(w: &Workload, algorithm: Algorithm) -> CompressorRow {
    let pages: Vec<&[u8]> = w.samples.iter().map(|s| &s.data[..]).collect();
    let f = compress::figures::measure(algorithm, &pages, MIN_TIMED);
    let over = (INCOMPRESSIBLE * PAGE as f64) as usize;
    CompressorRow {
        compressor: algorithm,
        samples: pages.len(),
        ratio: f.stored_bytes() as f64 / (pages.len() * PAGE) as f64,
        incompressible: f
            .lengths
            .iter()
            .filter(|l| l.unwrap_or(PAGE) > over)
            .count(),
        compress_bytes_per_s: f.compress_bytes_per_s,
        decompress_bytes_per_s: f.decompress_bytes_per_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        compressor: Algorithm,
        compress_pages_per_s: f64,
        decompress_pages_per_s: f64,
    ) -> CompressorRow {
        CompressorRow {
            compressor,
            samples: 1,
            ratio: 0.5,
            incompressible: 0,
            compress_bytes_per_s: compress_pages_per_s * PAGE as f64,
            decompress_bytes_per_s: decompress_pages_per_s * PAGE as f64,
        }
    }

    #[test]
    fn a_slower_decompressor_costs_the_fault_path_per_pool_load_and_compression_is_cpu() {
        let mut o = crate::Outcome::new("uzswap/zstd:3".into(), crate::Limit::Recorded);
        o.zswpout = 2_000;
        o.store = Some(zswap::Stats {
            zswpin: 1_000,
            ..Default::default()
        });
        // The run's: 1 µs a page decompressed; the other 3 µs, and 10 µs a
        // page compressed.
        let recorded = row(Algorithm::Lz4, 1e6, 1e6);
        let used = row(Algorithm::Zstd(3), 1e5, 1e6 / 3.0);
        let c = cost(&o, &used, &recorded);
        assert!((c.fault_path_s - 1_000.0 * 2e-6).abs() < 1e-9, "{c:?}");
        assert!(
            (c.cpu_s - (2_000.0 * 1e-5 + 1_000.0 * 3e-6)).abs() < 1e-9,
            "{c:?}"
        );
        // The run's own compressor changes nothing on the fault path.
        assert_eq!(cost(&o, &recorded, &recorded).fault_path_s, 0.0);
    }
}
