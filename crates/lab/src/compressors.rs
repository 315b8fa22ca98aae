//! Compressors compared on the run's own pages: every page sampled at
//! eviction (`trace::samples`) compressed and decompressed by each, in one
//! thread, as zswap's sequential back-end does it. What a pool of each
//! would hold comes from the protocol's replay of `uzswap/COMPRESSOR`;
//! this is the per-page view beside it: ratio and speed.

use crate::workload::{Workload, PAGE};
use compress::{Algorithm, Backend};
use std::time::{Duration, Instant};

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
    let c = compress::new_compressor(algorithm, &Backend::Sequential);
    let mut objects: Vec<Vec<u8>> = Vec::with_capacity(w.samples.len());
    let mut dst = vec![0u8; 2 * PAGE];
    let (mut incompressible, mut bytes) = (0, 0usize);
    for s in &w.samples {
        let n = c.compress_page(&s.data, &mut dst).unwrap_or(PAGE);
        let n = n.min(PAGE);
        bytes += n;
        incompressible += usize::from(n as f64 > INCOMPRESSIBLE * PAGE as f64);
        objects.push(dst[..n].to_vec());
    }
    let compress_s = timed(|| {
        for s in &w.samples {
            let _ = c.compress_page(&s.data, &mut dst);
        }
    });
    // Pages kept whole are copied back, not decompressed: left out.
    let compressed: Vec<&[u8]> = objects
        .iter()
        .filter(|o| o.len() < PAGE)
        .map(|o| &o[..])
        .collect();
    let mut page = vec![0u8; PAGE];
    let decompress_s = timed(|| {
        for o in &compressed {
            let _ = c.decompress_page(o, &mut page, PAGE);
        }
    });
    let page_bytes = (w.samples.len() * PAGE) as f64;
    CompressorRow {
        compressor: algorithm,
        samples: w.samples.len(),
        ratio: bytes as f64 / page_bytes,
        incompressible,
        compress_bytes_per_s: page_bytes / compress_s,
        decompress_bytes_per_s: (compressed.len() * PAGE) as f64 / decompress_s,
    }
}

/// Seconds one call of `pass` takes, over at least [`MIN_TIMED`].
fn timed(mut pass: impl FnMut()) -> f64 {
    let started = Instant::now();
    let mut passes = 0u32;
    while passes == 0 || started.elapsed() < MIN_TIMED {
        pass();
        passes += 1;
    }
    started.elapsed().as_secs_f64() / f64::from(passes)
}
