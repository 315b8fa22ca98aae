//! The sequential compressor: one page at a time in the caller, with a pool
//! of contexts so many threads can share one compressor (the per-cpu
//! `acomp_ctx` of zswap).

use crate::batch::{Batch, BatchItem, Op};
use crate::codec::{compress_page, decompress_exact, Codec};
use crate::{Algorithm, CompressError, Compressor, CompressorCounters, CompressorStats};
use common::sync::Mutex;
use std::sync::atomic::Ordering;

/// Contexts for whoever needs one; at most one per concurrent caller.
pub(crate) struct CtxPool<C: Codec> {
    free: Mutex<Vec<C::Ctx>>,
}

impl<C: Codec> std::fmt::Debug for CtxPool<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CtxPool")
            .field("cached", &self.free.lock().len())
            .finish()
    }
}

impl<C: Codec> CtxPool<C> {
    pub(crate) fn new() -> Self {
        Self {
            free: Mutex::new(Vec::new()),
        }
    }

    /// One page compressed in the caller's thread with a pooled context.
    pub(crate) fn compress_page(
        &self,
        codec: &C,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        self.with(codec, |ctx| compress_page(codec, ctx, src, dst))
    }

    /// One page decompressed in the caller's thread with a pooled context.
    pub(crate) fn decompress_page(
        &self,
        codec: &C,
        src: &[u8],
        dst: &mut [u8],
        expected: usize,
    ) -> Result<usize, CompressError> {
        self.with(codec, |ctx| {
            decompress_exact(codec, ctx, src, dst, expected)
        })
    }

    pub(crate) fn with<R>(&self, codec: &C, f: impl FnOnce(&mut C::Ctx) -> R) -> R {
        let cached = self.free.lock().pop();
        let mut ctx = cached.unwrap_or_else(|| codec.new_ctx());
        let r = f(&mut ctx);
        self.free.lock().push(ctx);
        r
    }
}

/// Runs one item with `ctx`: compress or decompress, with optional verify.
pub(crate) fn process_item<C: Codec>(
    codec: &C,
    ctx: &mut C::Ctx,
    op: Op,
    item: &mut BatchItem,
    verify: bool,
) {
    if item.result.is_some() {
        return; // rejected when it was pushed
    }
    let result = match op {
        Op::Compress => compress_page(codec, ctx, &item.src, &mut item.dst).and_then(|n| {
            if verify {
                verify_round_trip(codec, ctx, &item.dst[..n], &item.src)?;
            }
            Ok(n)
        }),
        Op::Decompress => decompress_exact(codec, ctx, &item.src, &mut item.dst, item.expected),
    };
    item.result = Some(result);
}

fn verify_round_trip<C: Codec>(
    codec: &C,
    ctx: &mut C::Ctx,
    compressed: &[u8],
    original: &[u8],
) -> Result<(), CompressError> {
    let mut check = vec![0u8; original.len()];
    match decompress_exact(codec, ctx, compressed, &mut check, original.len()) {
        Ok(_) if check == original => Ok(()),
        _ => Err(CompressError::VerifyFailed),
    }
}

/// A software compressor that works page by page (`batch_size() == 1`).
#[derive(Debug)]
pub struct Sequential<C: Codec> {
    codec: C,
    ctxs: CtxPool<C>,
    counters: CompressorCounters,
}

impl<C: Codec> Sequential<C> {
    pub fn new(codec: C) -> Self {
        Self {
            codec,
            ctxs: CtxPool::new(),
            counters: CompressorCounters::new(),
        }
    }

    /// Counts one batch of `pages` pages.
    fn count_batch(&self, pages: usize) {
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
        self.counters
            .pages
            .fetch_add(pages as u64, Ordering::Relaxed);
    }
}

impl<C: Codec> Compressor for Sequential<C> {
    fn algorithm(&self) -> Algorithm {
        self.codec.algorithm()
    }

    fn batch_size(&self) -> usize {
        1
    }

    /// Every page is read in [`Compressor::compress_batch`], in the
    /// calling thread.
    fn reads_pages_in_caller(&self) -> bool {
        true
    }

    fn compress_page(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
        self.ctxs.compress_page(&self.codec, src, dst)
    }

    fn decompress_page(
        &self,
        src: &[u8],
        dst: &mut [u8],
        expected: usize,
    ) -> Result<usize, CompressError> {
        self.ctxs.decompress_page(&self.codec, src, dst, expected)
    }

    /// Compresses each page where it lies, in the calling thread: the
    /// batch gets the outputs only, not a copy of every page (which
    /// [`Batch::push_page`] makes for backends that work elsewhere).
    fn compress_batch(&self, pages: &[&[u8]], batch: &mut Batch) {
        batch.reset(Op::Compress);
        self.ctxs.with(&self.codec, |ctx| {
            for page in pages {
                let item = batch.push_output_only(page.len());
                if item.result.is_none() {
                    item.result = Some(compress_page(&self.codec, ctx, page, &mut item.dst));
                }
            }
        });
        self.count_batch(pages.len());
    }

    fn run(&self, batch: &mut Batch) {
        let op = batch.op();
        let n = batch.len();
        self.ctxs.with(&self.codec, |ctx| {
            for item in batch.items_mut() {
                process_item(&self.codec, ctx, op, item, false);
            }
        });
        self.count_batch(n);
    }

    fn stats(&self) -> CompressorStats {
        self.counters.snapshot()
    }
}
