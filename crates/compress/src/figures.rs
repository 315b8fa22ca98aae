//! A compressor's single-thread figures on a set of pages: each page's
//! compressed length, and compression and decompression throughput, as
//! zswap's sequential back-end would see them (`uzswap bench compress` on
//! a corpus, the design lab on a program's own pages).

use crate::{new_compressor, Algorithm, Backend, DST_BUF_SIZE, PAGE_SIZE};
use std::time::{Duration, Instant};

/// One algorithm on a set of pages.
#[derive(Debug, Clone, PartialEq)]
pub struct CodecFigures {
    pub algorithm: Algorithm,
    /// Each page's compressed length; `None`: it did not compress (zswap
    /// stores such a page whole).
    pub lengths: Vec<Option<usize>>,
    /// Page bytes a second, compressing every page.
    pub compress_bytes_per_s: f64,
    /// Page bytes a second, decompressing the pages that compressed.
    pub decompress_bytes_per_s: f64,
}

impl CodecFigures {
    /// Bytes stored for all the pages, one that did not compress counted
    /// whole.
    pub fn stored_bytes(&self) -> usize {
        self.lengths.iter().map(|l| l.unwrap_or(PAGE_SIZE)).sum()
    }

    /// Pages that did not compress.
    pub fn incompressible(&self) -> usize {
        self.lengths.iter().filter(|l| l.is_none()).count()
    }
}

/// Compresses each of `pages` once for its length, then times compressing
/// them all and decompressing those that compressed, each over at least
/// `min_time`, in this thread.
pub fn measure(algorithm: Algorithm, pages: &[&[u8]], min_time: Duration) -> CodecFigures {
    let c = new_compressor(algorithm, &Backend::Sequential);
    let mut dst = vec![0u8; DST_BUF_SIZE];
    let mut lengths = Vec::with_capacity(pages.len());
    let mut compressed: Vec<Vec<u8>> = Vec::new();
    for p in pages {
        let n = c.compress_page(p, &mut dst).ok();
        if let Some(n) = n {
            compressed.push(dst[..n].to_vec());
        }
        lengths.push(n);
    }
    let compress_bytes_per_s = bytes_per_s(min_time, || {
        for p in pages {
            let _ = c.compress_page(p, &mut dst);
        }
        pages.len() * PAGE_SIZE
    });
    let mut out = vec![0u8; PAGE_SIZE];
    let decompress_bytes_per_s = bytes_per_s(min_time, || {
        for z in &compressed {
            c.decompress_page(z, &mut out, PAGE_SIZE)
                .expect("own output decompresses");
        }
        compressed.len() * PAGE_SIZE
    });
    CodecFigures {
        algorithm,
        lengths,
        compress_bytes_per_s,
        decompress_bytes_per_s,
    }
}

/// Runs `pass` (which returns the bytes it processed) until `min_time`
/// has passed and at least one pass ran; bytes a second.
pub fn bytes_per_s(min_time: Duration, mut pass: impl FnMut() -> usize) -> f64 {
    let start = Instant::now();
    let (mut bytes, mut passes) = (0usize, 0u32);
    while passes == 0 || start.elapsed() < min_time {
        bytes += pass();
        passes += 1;
    }
    bytes as f64 / start.elapsed().as_secs_f64()
}
