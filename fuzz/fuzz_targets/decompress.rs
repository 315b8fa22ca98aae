//! Feeds arbitrary bytes to every backend's page decompression: it must
//! return an error or exactly one page, never panic or write out of bounds.
//!
//! `cargo +nightly fuzz run decompress` (from this folder). The CI runs the
//! proptest corruption test instead (crates/compress/tests/backends.rs).
#![no_main]

use compress::{new_compressor, Algorithm, Backend, PAGE_SIZE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for a in Algorithm::ALL {
        let c = new_compressor(a, &Backend::Sequential);
        let mut out = vec![0u8; PAGE_SIZE];
        if let Ok(n) = c.decompress_page(data, &mut out, PAGE_SIZE) {
            assert_eq!(n, PAGE_SIZE);
        }
    }
});
