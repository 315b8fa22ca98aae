//! Per-page codecs: the algorithms, each with its per-context state (the
//! kernel's per-cpu `acomp_ctx`). A [`Codec`] is driven by a
//! [`crate::Sequential`] or [`crate::Parallel`] compressor, never directly
//! by zswap.

use crate::{Algorithm, CompressError, PAGE_SIZE};
use std::fmt;

/// One compression algorithm, usable from many threads, with a context per
/// thread of work.
pub trait Codec: Send + Sync + fmt::Debug + 'static {
    /// Scratch state one compression or decompression needs.
    type Ctx: Send;

    fn algorithm(&self) -> Algorithm;

    fn new_ctx(&self) -> Self::Ctx;

    /// Compresses `src` into `dst`, returning the compressed length. `dst`
    /// is at least [`crate::DST_BUF_SIZE`] bytes.
    fn compress(
        &self,
        ctx: &mut Self::Ctx,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError>;

    /// Decompresses `src` into `dst`, returning the decompressed length.
    /// Corrupt input gives [`CompressError::Corrupt`], never a panic.
    fn decompress(
        &self,
        ctx: &mut Self::Ctx,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError>;
}

fn failed(algorithm: Algorithm, msg: impl fmt::Display) -> CompressError {
    CompressError::Failed {
        algorithm: algorithm.to_string(),
        msg: msg.to_string(),
    }
}

fn corrupt(algorithm: Algorithm, msg: impl fmt::Display) -> CompressError {
    CompressError::Corrupt {
        algorithm: algorithm.to_string(),
        msg: msg.to_string(),
    }
}

/// LZ4 block format: compressed by lz4_flex into the context's hash table
/// (no allocation per page), decompressed by liblz4's bounds-checked
/// `LZ4_decompress_safe` (corrupt input is an error), whose wide copies
/// of short-offset matches are 1.3-3x lz4_flex's checked decoder here.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lz4;

impl Codec for Lz4 {
    type Ctx = lz4_flex::block::CompressTable;
    fn algorithm(&self) -> Algorithm {
        Algorithm::Lz4
    }
    fn new_ctx(&self) -> lz4_flex::block::CompressTable {
        lz4_flex::block::CompressTable::small()
    }
    fn compress(
        &self,
        table: &mut lz4_flex::block::CompressTable,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        lz4_flex::block::compress_into_with_table(src, dst, table)
            .map_err(|e| failed(Algorithm::Lz4, e))
    }
    fn decompress(
        &self,
        _: &mut lz4_flex::block::CompressTable,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        let capacity = i32::try_from(dst.len()).map_err(|e| corrupt(Algorithm::Lz4, e))?;
        lz4::block::decompress_to_buffer(src, Some(capacity), dst)
            .map_err(|e| corrupt(Algorithm::Lz4, e))
    }
}

/// Zstandard at a level (the kernel's zswap uses level 3 by default).
#[derive(Debug, Clone, Copy)]
pub struct Zstd {
    pub level: i32,
}

/// A zstd compression and decompression context.
pub struct ZstdCtx {
    c: zstd::bulk::Compressor<'static>,
    d: zstd::bulk::Decompressor<'static>,
}

impl Codec for Zstd {
    type Ctx = Option<ZstdCtx>;
    fn algorithm(&self) -> Algorithm {
        Algorithm::Zstd(self.level)
    }
    fn new_ctx(&self) -> Option<ZstdCtx> {
        // Context creation only fails on allocation failure; report it per
        // call instead of panicking here.
        Some(ZstdCtx {
            c: zstd::bulk::Compressor::new(self.level).ok()?,
            d: zstd::bulk::Decompressor::new().ok()?,
        })
    }
    fn compress(
        &self,
        ctx: &mut Option<ZstdCtx>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        let ctx = ctx
            .as_mut()
            .ok_or_else(|| failed(self.algorithm(), "no zstd context"))?;
        ctx.c
            .compress_to_buffer(src, dst)
            .map_err(|e| failed(self.algorithm(), e))
    }
    fn decompress(
        &self,
        ctx: &mut Option<ZstdCtx>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        let ctx = ctx
            .as_mut()
            .ok_or_else(|| failed(self.algorithm(), "no zstd context"))?;
        ctx.d
            .decompress_to_buffer(src, dst)
            .map_err(|e| corrupt(self.algorithm(), e))
    }
}

/// Raw DEFLATE (libdeflate) at a level 1..=12.
#[derive(Debug, Clone, Copy)]
pub struct Deflate {
    pub level: i32,
}

/// A libdeflate compressor and decompressor.
pub struct DeflateCtx {
    c: Option<libdeflater::Compressor>,
    d: libdeflater::Decompressor,
}

impl Codec for Deflate {
    type Ctx = DeflateCtx;
    fn algorithm(&self) -> Algorithm {
        Algorithm::Deflate(self.level)
    }
    fn new_ctx(&self) -> DeflateCtx {
        let c = libdeflater::CompressionLvl::new(self.level)
            .ok()
            .map(libdeflater::Compressor::new);
        DeflateCtx {
            c,
            d: libdeflater::Decompressor::new(),
        }
    }
    fn compress(
        &self,
        ctx: &mut DeflateCtx,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        let c = ctx
            .c
            .as_mut()
            .ok_or_else(|| failed(self.algorithm(), "level outside 1..=12"))?;
        c.deflate_compress(src, dst)
            .map_err(|e| failed(self.algorithm(), e))
    }
    fn decompress(
        &self,
        ctx: &mut DeflateCtx,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        ctx.d
            .deflate_decompress(src, dst)
            .map_err(|e| corrupt(self.algorithm(), e))
    }
}

/// Compresses one page with the kernel's rule: output that is not smaller
/// than a page is [`CompressError::Incompressible`].
pub(crate) fn compress_page<C: Codec>(
    codec: &C,
    ctx: &mut C::Ctx,
    src: &[u8],
    dst: &mut [u8],
) -> Result<usize, CompressError> {
    let n = codec.compress(ctx, src, dst)?;
    if n >= src.len().min(PAGE_SIZE) {
        return Err(CompressError::Incompressible(n));
    }
    Ok(n)
}

/// Decompresses and checks the length is the one the caller expects.
pub(crate) fn decompress_exact<C: Codec>(
    codec: &C,
    ctx: &mut C::Ctx,
    src: &[u8],
    dst: &mut [u8],
    expected: usize,
) -> Result<usize, CompressError> {
    let room = dst.len();
    let out = dst.get_mut(..expected).ok_or(CompressError::WrongLength {
        got: room,
        expected,
    })?;
    let n = codec.decompress(ctx, src, out)?;
    if n != expected {
        return Err(CompressError::WrongLength { got: n, expected });
    }
    Ok(n)
}
