//! # compress — page compressors with one batch API (the kernel's crypto acomp)
//!
//! zswap compresses pages through a [`Compressor`]. Every compressor takes
//! a [`Batch`] of pages. One code path serves both kinds (zswap's unified
//! batch compress for sequential and batching compressors, docs/seeds.md):
//!
//! * **sequential** compressors ([`Sequential`]: lz4, zstd, deflate, lzo,
//!   lzo-rle)
//!   report `batch_size() == 1` and compress a batch one page at a time in
//!   the caller, like the kernel's software compressors;
//! * **batching** compressors ([`Parallel`]) report `batch_size() > 1` and
//!   compress a batch's pages in parallel. [`Compressor::submit`] returns at
//!   once with a [`Pending`] that the caller polls (the accelerator's async
//!   poll mode, docs/seeds.md). It is the accelerator case, run on worker
//!   threads.
//!
//! ## Errors (as zswap sees them)
//!
//! * [`CompressError::Incompressible`]: the output is not smaller than the
//!   page. zswap stores the page raw if writeback is allowed, else rejects it
//!   (`reject_compress_poor`).
//! * [`CompressError::Failed`]: the algorithm failed (`reject_compress_fail`).
//! * [`CompressError::Corrupt`] / [`CompressError::WrongLength`]: compressed
//!   data that does not decode to the expected page. It is never a panic and
//!   never a write outside the output buffer.
//! * [`CompressError::VerifyFailed`]: verify-after-compress found a mismatch.
//!
//! ## Invariants
//!
//! 1. After [`Compressor::run`] or a completed [`Pending`], every item of
//!    the batch has a result. `Ok(n)` means `output(i)` holds `n` valid
//!    bytes; for decompression `n` is the expected length.
//! 2. A [`Batch`] owns all its buffers, so a backend may move it to another
//!    thread or a device and back. Buffers are reused across batches.
//! 3. Whatever the backend, the bytes produced for a page are the ones its
//!    codec produces in the caller: parallelism changes when, not what.
//!
//! ## Adding a backend (e.g. a GPU)
//!
//! Implement [`Compressor`]: in `submit`, make a pair with
//! [`Pending::channel`], hand the batch and the [`Completer`] to the device,
//! and return the [`Pending`]. The device's completion path sets each
//! item's result ([`Batch::set_output`]) and calls [`Completer::complete`].
//! Callers do not change (see `tests/device_backend.rs`).

mod batch;
mod claim;
pub mod codec;
pub mod corpus;
pub mod figures;
mod lzo;
mod parallel;
mod sequential;

pub use batch::{Batch, Op};
pub use codec::{Codec, Deflate, Lz4, Zstd};
pub use lzo::Lzo1x;
pub use parallel::{Parallel, ParallelConfig};
pub use sequential::Sequential;

use std::fmt;
use std::str::FromStr;

/// Bytes in a page: [`common::PAGE_SIZE`], re-exported.
pub use common::PAGE_SIZE;
/// zswap's largest compression batch (`ZSWAP_MAX_BATCH_SIZE`).
pub const ZSWAP_MAX_BATCH_SIZE: usize = 8;
/// Size of each output buffer: two pages, as zswap allocates, so no
/// algorithm's worst case overruns it.
pub const DST_BUF_SIZE: usize = 2 * PAGE_SIZE;

/// Why a page could not be compressed or decompressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompressError {
    #[error("page does not compress: {0} bytes out")]
    Incompressible(usize),
    #[error("{algorithm} compression failed: {msg}")]
    Failed { algorithm: String, msg: String },
    #[error("corrupt {algorithm} data: {msg}")]
    Corrupt { algorithm: String, msg: String },
    #[error("decompressed {got} bytes, expected {expected}")]
    WrongLength { got: usize, expected: usize },
    #[error("verify after compress: output does not decompress to the input")]
    VerifyFailed,
    #[error("input of {0} bytes is larger than a page")]
    TooLarge(usize),
    #[error("item was not processed")]
    NotRun,
}

/// A compression algorithm and its level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Lz4,
    Zstd(i32),
    Deflate(i32),
    /// LZO1X, bitstream version 0 (the kernel's `lzo`).
    Lzo,
    /// LZO1X version 1 with zero-run encoding (the kernel's `lzo-rle`).
    LzoRle,
}

impl Algorithm {
    /// Every algorithm at its default level, for tests and benchmarks.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Lz4,
        Algorithm::Zstd(3),
        Algorithm::Deflate(6),
        Algorithm::Lzo,
        Algorithm::LzoRle,
    ];
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Algorithm::Lz4 => write!(f, "lz4"),
            Algorithm::Zstd(l) => write!(f, "zstd:{l}"),
            Algorithm::Deflate(l) => write!(f, "deflate:{l}"),
            Algorithm::Lzo => write!(f, "lzo"),
            Algorithm::LzoRle => write!(f, "lzo-rle"),
        }
    }
}

/// A bad algorithm name or level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown compressor {0:?}: expected lz4, lzo, lzo-rle, zstd[:1..=19] or deflate[:1..=12]")]
pub struct UnknownAlgorithm(pub String);

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    /// `lz4`, `lzo`, `zstd`, `zstd:N`, `deflate`, `deflate:N`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || UnknownAlgorithm(s.to_string());
        let (name, level) = match s.split_once(':') {
            Some((n, l)) => (n, Some(l.parse::<i32>().map_err(|_| bad())?)),
            None => (s, None),
        };
        match (name, level) {
            ("lz4", None) => Ok(Algorithm::Lz4),
            ("lzo", None) => Ok(Algorithm::Lzo),
            ("lzo-rle", None) => Ok(Algorithm::LzoRle),
            ("zstd", l) => match l.unwrap_or(3) {
                l @ 1..=19 => Ok(Algorithm::Zstd(l)),
                _ => Err(bad()),
            },
            ("deflate", l) => match l.unwrap_or(6) {
                l @ 1..=12 => Ok(Algorithm::Deflate(l)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

common::counters! {
    /// Counters a compressor keeps.
    pub struct CompressorStats;
    /// A compressor's live counters.
    pub(crate) struct CompressorCounters;
    /// Batches compressed or decompressed.
    batches: u64,
    /// Pages in those batches.
    pages: u64,
    /// Items compressed in the caller because the queue was full.
    fallback_queue_full: u64,
    /// Items taken back by the caller after the batch's deadline.
    fallback_deadline: u64,
    /// Items the caller compressed while waiting (`caller_helps`).
    caller_helped: u64,
    /// Compressed pages that did not decompress back to their input
    /// (`verify` on).
    verify_failures: u64,
}

/// The interface zswap uses (crypto acomp's role).
pub trait Compressor: Send + Sync + fmt::Debug {
    fn algorithm(&self) -> Algorithm;

    /// A name for tables, e.g. `lz4` or `lz4/parallel`.
    fn name(&self) -> String {
        self.algorithm().to_string()
    }

    /// Pages the backend compresses in parallel; 1 for sequential ones.
    fn batch_size(&self) -> usize;

    /// Whether [`Compressor::compress_batch`] reads the caller's pages
    /// only in the calling thread, before it returns. A caller whose pages
    /// may fault into a handler that serves only the caller's own thread
    /// (uzswap's evictor, on a page discarded behind its back) may pass
    /// them in place only then; otherwise it passes a copy.
    fn reads_pages_in_caller(&self) -> bool {
        false
    }

    /// Compresses one page in the calling thread.
    fn compress_page(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompressError>;

    /// Decompresses into `dst[..expected]`, which must come out exactly full.
    fn decompress_page(
        &self,
        src: &[u8],
        dst: &mut [u8],
        expected: usize,
    ) -> Result<usize, CompressError>;

    /// Processes every item of `batch` before returning.
    fn run(&self, batch: &mut Batch);

    /// Compresses `pages` as one batch into `batch` (reset first); item `i`
    /// of the result is page `i`.
    fn compress_batch(&self, pages: &[&[u8]], batch: &mut Batch) {
        batch.reset(Op::Compress);
        for p in pages {
            batch.push_page(p);
        }
        self.run(batch);
    }

    /// Decompresses `objects`, each to `expected` bytes, as one batch.
    fn decompress_batch(&self, objects: &[&[u8]], expected: usize, batch: &mut Batch) {
        batch.reset(Op::Decompress);
        for o in objects {
            batch.push_compressed(o, expected);
        }
        self.run(batch);
    }

    /// Starts processing `batch` and returns at once; the result comes
    /// from [`Pending::poll`] or [`Pending::wait`]. Sequential backends
    /// complete it before returning.
    fn submit(&self, mut batch: Batch) -> Pending {
        self.run(&mut batch);
        Pending::ready(batch)
    }

    fn stats(&self) -> CompressorStats;
}

/// How pages are spread over the hardware.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    Sequential,
    Parallel(ParallelConfig),
}

/// A compressor for `algorithm` on `backend`.
pub fn new_compressor(algorithm: Algorithm, backend: &Backend) -> Box<dyn Compressor> {
    fn boxed<C: Codec>(codec: C, backend: &Backend) -> Box<dyn Compressor> {
        match backend {
            Backend::Sequential => Box::new(Sequential::new(codec)),
            Backend::Parallel(cfg) => Box::new(Parallel::new(codec, cfg.clone())),
        }
    }
    match algorithm {
        Algorithm::Lz4 => boxed(Lz4, backend),
        Algorithm::Zstd(level) => boxed(Zstd { level }, backend),
        Algorithm::Deflate(level) => boxed(Deflate { level }, backend),
        Algorithm::Lzo => boxed(Lzo1x { rle: false }, backend),
        Algorithm::LzoRle => boxed(Lzo1x { rle: true }, backend),
    }
}

pub use parallel::{Completer, Pending};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_parse_and_print() {
        assert_eq!("lz4".parse(), Ok(Algorithm::Lz4));
        assert_eq!("zstd".parse(), Ok(Algorithm::Zstd(3)));
        assert_eq!("zstd:7".parse(), Ok(Algorithm::Zstd(7)));
        assert_eq!("deflate".parse(), Ok(Algorithm::Deflate(6)));
        assert_eq!("lzo".parse(), Ok(Algorithm::Lzo));
        assert_eq!("lzo-rle".parse(), Ok(Algorithm::LzoRle));
        for bad in ["", "lz5", "zstd:0", "zstd:x", "deflate:13", "lz4:1"] {
            assert!(bad.parse::<Algorithm>().is_err(), "{bad}");
        }
        for a in Algorithm::ALL {
            assert_eq!(a.to_string().parse(), Ok(a));
        }
    }
}
