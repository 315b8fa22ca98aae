//! What the runtime's integration tests share: a small configuration
//! that sends part of the data to the swap file, and compressible pages
//! stamped with their index and version.

use runtime::RuntimeConfig;

pub use ::common::PAGE_SIZE as PAGE;

pub fn config(limit_pages: usize) -> RuntimeConfig {
    let swap = zswap::Config {
        total_ram_bytes: 16 << 20,
        max_pool_percent: 10, // a 1.6 MiB pool: part of the data goes to the swap file
        swapfile_pages: 1 << 15,
        ..zswap::Config::default()
    };
    RuntimeConfig {
        swap,
        limit_bytes: limit_pages * PAGE,
        reclaim_batch: 32,
        evict_folio_pages: 16,
        ..RuntimeConfig::default()
    }
}

/// Page `i`'s bytes at version `v`: text-like, so it compresses.
pub fn fill(page: &mut [u8], i: usize, v: u64) {
    let words: [&[u8]; 6] = [
        b"swap ", b"page ", b"zswap ", b"folio ", b"entry ", b"memory ",
    ];
    let mut pos = 16;
    let mut k = i;
    while pos < page.len() {
        let w = words[k % words.len()];
        let n = w.len().min(page.len() - pos);
        page[pos..pos + n].copy_from_slice(&w[..n]);
        pos += n;
        k = k.wrapping_mul(31).wrapping_add(7);
    }
    page[..8].copy_from_slice(&(i as u64).to_le_bytes());
    page[8..16].copy_from_slice(&v.to_le_bytes());
}
