//! Page contents sampled from evicted runs, so that a replay can compare
//! compressors on the program's own pages (`uzswap replay --compressor`).
//!
//! The evictor (a runtime thread, never a signal handler) offers every
//! run it stored; one page in `stride` of those the pool took (not zero
//! pages, not pages sent to the swap file) is copied with its compressed
//! length under the run's compressor. The stride starts at
//! [`FIRST_STRIDE`] and doubles after every [`SAMPLES_PER_STRIDE`]
//! samples, so that a long run's samples span all of it in a number that
//! grows with the logarithm of its evictions (4096 samples, 16 MiB before
//! compression, cover about 1.9M evicted pages). Samples are written as
//! their own chunks ([`PAGES_MAGIC`]) every [`SAMPLES_PER_CHUNK`]: the
//! program holds at most that many (256 KiB).
//!
//! A pages chunk: a 24-byte header — magic `UZPAGES1`, the writer's pid
//! and sample count, the payload's length — and a zstd frame of: the
//! compressor's name (16 bytes, zero-padded), then per sample its address
//! (8 bytes), its compressed length (2), 6 zero bytes and the page.

use crate::record::{SIZE_NONE, SIZE_ON_FILE, SIZE_ZERO};

/// Magic word opening a chunk of page samples.
pub(crate) const PAGES_MAGIC: u64 = u64::from_le_bytes(*b"UZPAGES1");

/// Bytes of a page (a sampled page's, and the step between the pages of
/// an evicted run).
pub const SAMPLE_PAGE: usize = 4096;

/// Bytes of the compressor's name at the head of a pages chunk's payload.
const NAME_BYTES: usize = 16;

/// Bytes of a sample's head: address, length, padding.
const SAMPLE_HEAD: usize = 16;

/// Pages stored in the pool per sample, at first.
pub(crate) const FIRST_STRIDE: u64 = 32;

/// Samples taken at one stride before it doubles.
pub(crate) const SAMPLES_PER_STRIDE: u64 = 1024;

/// Samples a pages chunk holds (and the program at most, between two).
pub(crate) const SAMPLES_PER_CHUNK: usize = 64;

/// One sampled page: where it was, its compressed length under the run's
/// compressor, and its bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct PageSample {
    pub addr: u64,
    pub compressed_len: u16,
    pub data: Box<[u8]>,
}

impl std::fmt::Debug for PageSample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageSample")
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("compressed_len", &self.compressed_len)
            .finish_non_exhaustive()
    }
}

/// The sampler of one process: which pages to take, and those taken but
/// not yet written.
pub(crate) struct Sampler {
    compressor: String,
    /// Pool pages offered so far.
    offered: u64,
    /// Samples taken so far.
    taken: u64,
    /// The next pool page to take (an `offered` count).
    next: u64,
    stride: u64,
    /// Taken and not yet written: heads and pages back to back.
    pending: Vec<u8>,
    pending_count: usize,
}

impl Sampler {
    pub(crate) fn new(compressor: &str) -> Sampler {
        Sampler {
            compressor: compressor.to_owned(),
            offered: 0,
            taken: 0,
            next: 0,
            stride: FIRST_STRIDE,
            pending: Vec::new(),
            pending_count: 0,
        }
    }

    /// Offers a stored run: its pages and each one's compressed length
    /// ([`SIZE_ZERO`], [`SIZE_ON_FILE`] or a length). Returns whether a
    /// chunk's worth is pending.
    pub(crate) fn offer(&mut self, addr: u64, pages: &[&[u8]], sizes: &[u16]) -> bool {
        for (i, (page, &len)) in pages.iter().zip(sizes).enumerate() {
            if matches!(len, SIZE_ZERO | SIZE_ON_FILE | SIZE_NONE) || page.len() != SAMPLE_PAGE {
                continue;
            }
            self.offered += 1;
            if self.offered <= self.next {
                continue;
            }
            self.take(addr + (i * SAMPLE_PAGE) as u64, len, page);
        }
        self.pending_count >= SAMPLES_PER_CHUNK
    }

    fn take(&mut self, addr: u64, len: u16, page: &[u8]) {
        if self.pending.capacity() == 0 {
            self.pending
                .reserve_exact(SAMPLES_PER_CHUNK * (SAMPLE_HEAD + SAMPLE_PAGE));
        }
        self.pending.extend_from_slice(&addr.to_le_bytes());
        self.pending.extend_from_slice(&len.to_le_bytes());
        self.pending.extend_from_slice(&[0; SAMPLE_HEAD - 10]);
        self.pending.extend_from_slice(page);
        self.pending_count += 1;
        self.taken += 1;
        if self.taken.is_multiple_of(SAMPLES_PER_STRIDE) {
            self.stride *= 2;
        }
        self.next = self.offered + self.stride - 1;
    }

    /// The pending samples as one chunk (none if nothing is pending); the
    /// pending list is emptied.
    pub(crate) fn take_chunk(&mut self, pid: u32) -> std::io::Result<Option<Vec<u8>>> {
        if self.pending_count == 0 {
            return Ok(None);
        }
        let mut raw = Vec::with_capacity(NAME_BYTES + self.pending.len());
        let mut name = [0u8; NAME_BYTES];
        let n = self.compressor.len().min(NAME_BYTES);
        name[..n].copy_from_slice(&self.compressor.as_bytes()[..n]);
        raw.extend_from_slice(&name);
        raw.extend_from_slice(&self.pending);
        let chunk = crate::recorder::frame(PAGES_MAGIC, pid, self.pending_count, &raw)?;
        self.pending.clear();
        self.pending_count = 0;
        Ok(Some(chunk))
    }
}

/// The compressor's name and the samples of a pages chunk's payload
/// (decompressed); `None` if its length does not match `count` samples.
pub(crate) fn decode_payload(raw: &[u8], count: usize) -> Option<(String, Vec<PageSample>)> {
    let body = raw.get(NAME_BYTES..)?;
    if body.len() != count.checked_mul(SAMPLE_HEAD + SAMPLE_PAGE)? {
        return None;
    }
    let name = &raw[..NAME_BYTES];
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_BYTES);
    let compressor = String::from_utf8_lossy(&name[..end]).into_owned();
    let samples = body
        .chunks_exact(SAMPLE_HEAD + SAMPLE_PAGE)
        .map(|s| PageSample {
            addr: u64::from_le_bytes(s[..8].try_into().expect("8 bytes")),
            compressed_len: u16::from_le_bytes(s[8..10].try_into().expect("2 bytes")),
            data: s[SAMPLE_HEAD..].into(),
        })
        .collect();
    Some((compressor, samples))
}

/// The payload bytes announced for `count` samples (for decompression's
/// capacity).
pub(crate) fn payload_bytes(count: usize) -> usize {
    count
        .saturating_mul(SAMPLE_HEAD + SAMPLE_PAGE)
        .saturating_add(NAME_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fill: u8, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| vec![fill.wrapping_add(i as u8); SAMPLE_PAGE])
            .collect()
    }

    #[test]
    fn one_pool_page_in_a_stride_is_taken_and_the_stride_doubles() {
        let mut s = Sampler::new("lz4");
        let pages = run(1, 8);
        let refs: Vec<&[u8]> = pages.iter().map(|p| &p[..]).collect();
        // Zero pages and pages on the file are never offered.
        let mut sizes = [100u16; 8];
        sizes[0] = SIZE_ZERO;
        sizes[1] = SIZE_ON_FILE;
        let mut offered_pool = 0u64;
        for k in 0..(SAMPLES_PER_STRIDE * FIRST_STRIDE / 6 + 40) {
            s.offer(k << 20, &refs, &sizes);
            offered_pool += 6;
            if s.pending_count >= SAMPLES_PER_CHUNK {
                s.take_chunk(1).unwrap();
            }
        }
        assert_eq!(s.offered, offered_pool);
        // The first pool page, then one in FIRST_STRIDE up to
        // SAMPLES_PER_STRIDE samples, then one in twice that.
        let at_first = SAMPLES_PER_STRIDE;
        let rest = (offered_pool - 1 - (at_first - 1) * FIRST_STRIDE) / (2 * FIRST_STRIDE);
        assert_eq!(s.taken, at_first + rest);
        assert_eq!(s.stride, 2 * FIRST_STRIDE);
    }

    #[test]
    fn a_chunk_decodes_to_its_samples() {
        let mut s = Sampler::new("zstd:3");
        let pages = run(7, 3);
        let refs: Vec<&[u8]> = pages.iter().map(|p| &p[..]).collect();
        s.stride = 1;
        s.offer(0x1000, &refs, &[10, 20, 30]);
        let chunk = s.take_chunk(9).unwrap().unwrap();
        assert!(s.take_chunk(9).unwrap().is_none());
        let count = (u64::from_le_bytes(chunk[8..16].try_into().unwrap()) >> 32) as usize;
        assert_eq!(count, 3);
        let raw = zstd::bulk::decompress(&chunk[24..], payload_bytes(count)).unwrap();
        let (name, samples) = decode_payload(&raw, count).unwrap();
        assert_eq!(name, "zstd:3");
        let got: Vec<(u64, u16, u8)> = samples
            .iter()
            .map(|p| (p.addr, p.compressed_len, p.data[0]))
            .collect();
        assert_eq!(got, [(0x1000, 10, 7), (0x2000, 20, 8), (0x3000, 30, 9)]);
        assert!(decode_payload(&raw, count + 1).is_none());
    }
}
